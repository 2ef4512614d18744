"""nn.functional cases a review found wrong, against torch on the same programs."""
import importlib

import pytest

from parity import raises_same, same


def F(lib):
    return importlib.import_module(lib.__name__ + ".nn.functional")


def test_hardswish_at_its_kinks():
    def f(lib):
        x = lib.tensor([-3.0, -1.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(F(lib).hardswish(x).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(f)


def test_group_norm_batch_size_check():
    same(lambda lib: F(lib).group_norm(lib.arange(24.0).reshape(1, 6, 2, 2), 1))
    raises_same(lambda lib: F(lib).group_norm(lib.ones(1, 6), 6), msg="Expected more than 1 value per channel")


def test_conv_transpose_output_padding_past_the_stride():
    def f(lib):
        x = lib.arange(4.0).reshape(1, 1, 4).requires_grad_()
        w = lib.tensor([[[1.0, 2.0]]], requires_grad=True)
        y = F(lib).conv_transpose1d(x, w, stride=1, dilation=2, output_padding=1)
        y.sum().backward()
        return y, x.grad, w.grad
    same(f)


def test_pdist_p0_gradient_is_zeros():
    def f(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 5.0], [0.0, 1.0]], requires_grad=True)
        F(lib).pdist(x, p=0).sum().backward()
        return x.grad
    same(f)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_refuses_running_stats_that_require_grad(training):
    def f(lib):
        F(lib).batch_norm(lib.ones(4, 3), lib.zeros(3, requires_grad=True), lib.ones(3), training=training)
    raises_same(f, msg="is not differentiable with respect to argument 'running_mean'")


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("scale_factor", [1.001, 2.0001, 0.7, 3.3])
def test_interpolate_nearest_uses_the_scale_factor_as_pytorch(dims, scale_factor):
    def f(lib):
        x = lib.arange(float(5 ** dims)).reshape((1, 1) + (5,) * dims)
        return F(lib).interpolate(x, scale_factor=scale_factor, mode="nearest")
    same(f)


@pytest.mark.parametrize("mode", ["linear", "nearest-exact"])
def test_interpolate_keeps_an_unchanged_dim(mode):
    def f(lib):
        x = lib.arange(5.0).reshape(1, 1, 5).requires_grad_()
        y = F(lib).interpolate(x, scale_factor=1.001, mode=mode)
        y.sum().backward()
        return y, x.grad
    same(f)


def test_numpy_scalar_on_the_left_of_an_operator():
    import numpy as np

    def f(lib):
        t = lib.tensor([1.0, 2.0], requires_grad=True)
        y = np.float64(0.5) * t + np.float32(2.0)
        y.sum().backward()
        m = lib.tensor([0.5, 1.0])
        loss = F(lib).gaussian_nll_loss(m, lib.tensor([0.0, 1.5]), np.float64(0.7))
        return y, t.grad, type(y).__name__, loss
    same(f)
