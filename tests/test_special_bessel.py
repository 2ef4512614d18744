"""torch.special's Bessel family equals PyTorch's CPU values bit for bit (float32 and float64, every branch of
Math.h's formulas, the special points), and differentiates exactly where PyTorch does."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "bessel_j0", "bessel_j1",
         "bessel_y0", "bessel_y1", "spherical_bessel_j0", "airy_ai"]
NONDIFF = NAMES[4:]


def _inputs():
    rng = np.random.default_rng(18)
    return np.concatenate([rng.uniform(-1, 1, 400), rng.uniform(-10, 10, 800), rng.uniform(-120, 120, 400),
                           [0.0, -0.0, 1e-6, -1e-6, 1e-30, 0.5, -0.5, 2.0, 2.09, -2.09, 5.0, -5.0, 8.0, -8.0,
                            8.3203353, 103.9, 1e3, -1e3, 1e10, 700.0, 710.0, -710.0, np.inf, -np.inf, np.nan]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_values_are_pytorchs_bit_for_bit(name, dtype):
    x = _inputs().astype(dtype)
    got = getattr(ember.special, name)(ember.tensor(x)).numpy()
    want = getattr(torch.special, name)(torch.tensor(x)).numpy()
    assert got.dtype == want.dtype
    same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same][:5], got[~same][:5], want[~same][:5]))


@pytest.mark.parametrize("name", NAMES)
def test_integer_and_bool_inputs_compute_in_the_default_float_dtype(name):
    for v in ([1, 2, 7], [True, False]):
        got = getattr(ember.special, name)(ember.tensor(v))
        want = getattr(torch.special, name)(torch.tensor(v))
        assert str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", NONDIFF)
def test_no_derivative_where_pytorch_has_none(name):
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    y = getattr(ember.special, name)(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


@pytest.mark.parametrize("name", NONDIFF)
def test_float16_has_no_kernel(name):
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Half\''):
        getattr(ember.special, name)(ember.tensor([1.0], dtype=ember.float16))


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_gradients_and_nodes_are_pytorchs(name):
    v = [0.0, 1e-9, -1.5, 3.0, 9.0, -20.0]
    xe = ember.tensor(v, dtype=ember.float64, requires_grad=True)
    xt = torch.tensor(v, dtype=torch.float64, requires_grad=True)
    ye, yt = getattr(ember.special, name)(xe), getattr(torch.special, name)(xt)
    assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__
    ge, = ember.autograd.grad(ye.sum(), xe)
    gt, = torch.autograd.grad(yt.sum(), xt)
    np.testing.assert_array_equal(ge.numpy(), gt.numpy())


def test_float16_i0_family_computes_in_float32():
    # PyTorch's calc_i0/i1/i1e(Half) compute in float and round once; i0e's scalar loop (a tensor's tail
    # elements) computes in Half arithmetic, its vector loop in float: ember computes all in float
    x = [0.3, -2.5, 9.0, 30.0]
    for name in ["i0", "i0e", "i1", "i1e"]:
        got = getattr(ember.special, name)(ember.tensor(x, dtype=ember.float16)).numpy()
        want = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float16)).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=2e-3, atol=0)
        if name != "i0e":
            np.testing.assert_array_equal(got, want)
