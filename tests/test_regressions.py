"""Regressions found in review, each compared with real PyTorch."""
import warnings

import numpy as np
import pytest

import ember
from parity import raises_same, same

torch = pytest.importorskip("torch")


def test_create_graph_leaf_grads_own_their_memory():
    def f(lib):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        v = lib.ones(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a + b).backward(v, create_graph=True)
            a.grad.add_(1)
            c = lib.ones(3, requires_grad=True)
            c.sum().backward(create_graph=True)
            c.sum().backward()
            g = c.grad.detach().clone()
            c.grad.zero_()
        return a.grad, b.grad, v, g, c.grad
    same(f)


def test_hook_may_not_change_the_gradient_shape():
    def f(lib):
        a = lib.ones(3, requires_grad=True)
        a.register_hook(lambda g: lib.ones(2))
        a.sum().backward()
    raises_same(f)


def test_sum_over_an_empty_dim_list_reduces_everything():
    same(lambda lib: (lib.ones(2, 3).sum(dim=[]), lib.ones(2, 3).mean(dim=())))


def test_inplace_keeps_the_forward_tangent_of_self():
    import torch.autograd.forward_ad as tfa
    import ember.autograd.forward_ad as efa
    out = []
    for lib, fa in ((torch, tfa), (ember, efa)):
        p = lib.ones(2, requires_grad=True)
        with fa.dual_level():
            y = fa.make_dual(p, lib.ones(2)) * 1
            y.mul_(3)
            out.append(fa.unpack_dual(y).tangent.tolist())
    assert out[0] == out[1]


def test_inplace_on_a_view_made_under_no_grad_raises():
    def f(lib):
        a = lib.ones(3, requires_grad=True)
        x = a * 1
        with lib.no_grad():
            v = x[:2]
        v.mul_(3)
        x.sum().backward()
        return a.grad
    raises_same(f)


def test_results_made_in_inference_mode_are_inference_tensors():
    def f(lib):
        x = lib.ones(2)
        with lib.inference_mode():
            y, z, w, s = x * 2, lib.ones(2), x[0:1], x.sum()
            x.add_(1)
            v = x.view(2)
        return [t.is_inference() for t in (y, z, w, s, x, v)]
    same(f)

    def saved(lib):
        with lib.inference_mode():
            y = lib.ones(2) * 2
        (y * lib.ones(2, requires_grad=True)).sum().backward()
    raises_same(saved, msg="Inference tensors cannot be saved for backward")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_zero_where_is_exact(dtype):
    # the bitwise gradient mask of clamp/relu/threshold: inf, NaN and -0.0 of g kept where kept, +0.0 elsewhere
    import numpy as np
    from ember.devices.cpu.elementwise import zero_where
    g = np.array([1.5, -np.inf, np.nan, -0.0, 2.0, np.inf, np.nan, -3.0], dtype=dtype)
    drop = np.array([False, False, False, False, True, True, True, True])
    r = zero_where(drop, g)
    ref = np.where(drop, 0.0, g).astype(dtype)
    assert r.dtype == g.dtype
    assert np.array_equal(r.view(f"u{g.itemsize}"), ref.view(f"u{g.itemsize}"))   # bit for bit, signs of zero too
    assert np.array_equal(zero_where(drop[::2], g[::2]), ref[::2], equal_nan=True)   # strided


def test_clamp_and_relu_gradients_at_nan_and_inf():
    def f(lib):
        x = lib.tensor([float("nan"), -1.0, 0.0, 2.0, float("inf")], requires_grad=True)
        g = lib.tensor([1.0, float("inf"), 2.0, float("nan"), -0.0])
        (gc,) = lib.autograd.grad(x.clamp(min=0), x, g)
        (gr,) = lib.autograd.grad(lib.relu(x), x, g)
        (gh,) = lib.autograd.grad(lib.nn.functional.hardtanh(x), x, g)
        return gc, gr, gh
    same(f)


@pytest.mark.parametrize("case", ["unique", "unique_dim", "unique_consecutive", "bincount"])
def test_forward_ad_through_ops_without_derivatives_raises_as_torch(case):
    """unique, unique_consecutive and bincount(weights=) have no forward derivative: a tangent must raise
    PyTorch's NotImplementedError, not vanish (it once did: their node was made only for requires_grad)."""
    import torch
    import torch.autograd.forward_ad as tfw
    import ember.autograd.forward_ad as efw

    def run(lib, fw):
        x = lib.tensor([1.0, 2.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(x, lib.ones(3))
            f = {"unique": lambda: lib.unique(d), "unique_dim": lambda: lib.unique(d, dim=0),
                 "unique_consecutive": lambda: lib.unique_consecutive(d),
                 "bincount": lambda: lib.bincount(lib.tensor([0, 1, 1]), weights=d)}[case]
            with pytest.raises(NotImplementedError) as info:
                f()
        return str(info.value).splitlines()[0]
    assert run(ember, efw) == run(torch, tfw)


def test_normal_with_shapes_that_do_not_broadcast_raises_as_torch():
    """normal(mean, std) with non-broadcasting shapes: PyTorch's RuntimeError, not NumPy's ValueError wording."""
    raises_same(lambda m: m.normal(m.zeros(2), m.ones(3)), exact_msg=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_over_a_range_near_the_dtypes_limit_counts_every_value(dtype):
    """max - min overflows the dtype (PyTorch's bins are then undefined behaviour in C++): ember bins in double,
    halved, rather than raising NumPy's ValueError from bincount; each value in its bin, the maximum in the last."""
    big = float(ember.finfo(getattr(ember, dtype)).max) / 2
    x = ember.tensor([-big, 0.0, 1.0, big], dtype=getattr(ember, dtype))
    assert ember.histc(x, bins=4, min=-big, max=big).tolist() == [1.0, 0.0, 2.0, 1.0]


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(0, keepdim=np.bool_(True)), lambda m, x: x.amax(0, keepdim=np.bool_(True)),
    lambda m, x: x.mean(0, keepdim=np.bool_(True)), lambda m, x: m.cumsum(x, m.tensor(0.0))])
def test_a_numpy_bool_or_a_float_tensor_for_a_bool_or_int_argument_is_torchs_type_error(call):
    """PyTorch's parser refuses numpy.bool_ for a bool and a float tensor for an int (ember raised NumPy's words)."""
    raises_same(lambda m: call(m, m.arange(6.0).reshape(2, 3)), exact_msg=True)


@pytest.mark.parametrize("call", [
    lambda m, x: m.cumsum(x, m.tensor(0)), lambda m, x: x.sum(m.tensor(1)), lambda m, x: x.select(m.tensor(0), 1),
    lambda m, x: x.sum((m.tensor(0),))])
def test_a_0d_integer_tensor_is_an_int_dim(call):
    same(lambda m: call(m, m.arange(6.0).reshape(2, 3)))
