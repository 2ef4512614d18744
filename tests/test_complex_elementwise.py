"""Complex numbers through the elementwise family, creation and sampling, beyond tests/test_complex_sweep.py:
refusals with PyTorch's exception types and messages, Python complex scalars, complex64 values against torch,
complex32 refused, and complex samplers giving torch's numbers for the same seed."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402


def _outcome(m, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(m)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
    if isinstance(r, (torch.Tensor, ember.Tensor)):
        return str(r.dtype), np.asarray(r.detach().numpy()).tolist()
    return r


def _z(m, dt="complex128"):
    return m.tensor([1 + 1j, -2 + 0.5j], dtype=getattr(m, dt))


def _f(m):
    return m.tensor([1.0, -2.0])


# each: the same call on torch and on ember must give the same exception type and message, or equal results
SAME = {
    "lt": lambda m: m.lt(_z(m), _z(m)), "gt_scalar": lambda m: _f(m) > 1j, "ge_": lambda m: _z(m).ge_(0),
    "where_gt": lambda m: m.where(_z(m) > 0, _z(m), 0),
    "maximum": lambda m: m.maximum(_f(m), _z(m)), "fmin": lambda m: m.fmin(_z(m), _z(m)),
    "clamp": lambda m: m.clamp(_z(m), 0, 1), "clamp_min_t": lambda m: m.clamp_min(_z(m), _z(m)),
    "clamp_max_f": lambda m: m.clamp(_f(m), max=_z(m)), "clamp_f_1j": lambda m: m.clamp(_f(m), 1j),
    "relu": lambda m: m.relu(_z(m)), "sign": lambda m: m.sign(_z(m)), "floor": lambda m: m.floor(_z(m)),
    "round": lambda m: m.round(_z(m)), "frac": lambda m: m.frac(_z(m)), "trunc_": lambda m: _z(m).trunc_(),
    "deg2rad": lambda m: m.deg2rad(_z(m)), "erf": lambda m: m.erf(_z(m, "complex64")),
    "lgamma": lambda m: m.lgamma(_z(m)), "polygamma1": lambda m: m.polygamma(1, _z(m)),
    "logit": lambda m: m.logit(_z(m)), "mvlgamma": lambda m: m.mvlgamma(_z(m), 2),
    "special_ndtri": lambda m: m.special.ndtri(_z(m)), "special_i1e": lambda m: m.special.i1e(_z(m)),
    "bessel_j0": lambda m: m.special.bessel_j0(_z(m)), "airy_ai": lambda m: m.special.airy_ai(_z(m)),
    "chebyshev_t": lambda m: m.special.chebyshev_polynomial_t(_z(m), 2),
    "zeta": lambda m: m.special.zeta(_z(m), 2.0), "xlogy_scalar": lambda m: m.xlogy(_f(m), 1j),
    "atan2": lambda m: m.atan2(_z(m), _z(m)), "hypot": lambda m: m.hypot(_z(m), _z(m)),
    "copysign": lambda m: m.copysign(_z(m), 1.0), "heaviside": lambda m: m.heaviside(_f(m), _z(m)),
    "remainder_scalar": lambda m: m.remainder(_f(m), 1j), "fmod": lambda m: m.fmod(_z(m), 2),
    "floordiv": lambda m: _z(m) // 2, "div_trunc": lambda m: m.div(_z(m), _z(m), rounding_mode="trunc"),
    "bitwise_and": lambda m: _z(m) & 1, "invert": lambda m: ~_z(m), "lshift": lambda m: _z(m) << 1,
    "gcd": lambda m: m.gcd(_z(m), _z(m)), "isin": lambda m: m.isin(_z(m, "complex64"), _f(m).double()),
    "isposinf": lambda m: m.isposinf(_z(m)), "signbit": lambda m: m.signbit(_z(m)),
    "abs_": lambda m: _z(m).abs_(),
    # Python complex scalars and complex alpha/value/weight
    "iadd_1j": lambda m: _f(m).__iadd__(1j), "mul__z": lambda m: _f(m).mul_(_z(m)),
    "x*1j": lambda m: _f(m) * 1j, "1j-x": lambda m: 1j - _f(m), "x/(1+2j)": lambda m: _f(m) / (1 + 2j),
    "add_alpha_1j": lambda m: m.add(_f(m), _f(m), alpha=1j), "add_int_alpha_1j": lambda m: m.add(
        m.tensor([1]), m.tensor([2]), alpha=1j), "sub_alpha_z": lambda m: m.sub(_z(m), _z(m), alpha=2j),
    "addcmul_value": lambda m: m.addcmul(_f(m), _f(m), _f(m), value=1j),
    "addcmul_z": lambda m: m.addcmul(_z(m), _f(m).double(), _f(m).double(), value=1j),
    "lerp_weight": lambda m: m.lerp(_z(m), _z(m) * 2, 0.3 + 0.1j), "lerp_real_1j": lambda m: m.lerp(_f(m), _f(m), 1j),
    "float_power": lambda m: m.float_power(_z(m, "complex64"), 2),
    "float_power_1j": lambda m: m.float_power(_f(m), 1j), "float_power_": lambda m: _f(m).double().float_power_(1j),
    # results
    "sgn_int": lambda m: m.sgn(m.tensor([3, -2, 0])), "angle_int": lambda m: m.angle(m.tensor([3, -2, 0])),
    "abs_int": lambda m: m.abs(m.tensor([3, -2])),
    "isnan": lambda m: m.isnan(m.tensor([complex(math.nan, 0), complex(0, math.nan), 1j])),
    "isinf": lambda m: m.isinf(m.tensor([complex(math.inf, 0), complex(0, -math.inf), 1j])),
    "isfinite": lambda m: m.isfinite(m.tensor([complex(math.inf, 0), complex(0, math.nan), 1j])),
    "isreal": lambda m: m.isreal(m.tensor([1 + 0j, 1j, complex(math.nan, 0)])),
    "isclose": lambda m: m.isclose(m.tensor([1 + 1j, 1 + 1.0001j]), m.tensor([1 + 1j, 1 + 1j])),
    "allclose": lambda m: m.allclose(m.tensor([1 + 1j]), m.tensor([1 + 1.0000001j])),
    "equal": lambda m: m.equal(_z(m), _z(m)), "eq_scalar": lambda m: m.eq(_z(m), 1 + 1j),
    "nan_to_num": lambda m: m.nan_to_num(m.tensor([complex(math.nan, math.inf), complex(-math.inf, 1)])),
    "nan_to_num_args": lambda m: m.nan_to_num(m.tensor([complex(math.nan, math.inf)]), 1.0, 2.0, -3.0),
    "nan_to_num_grad": lambda m: m.nan_to_num(_z(m).requires_grad_()),
    "logaddexp": lambda m: m.logaddexp(m.tensor([0.3 + 2j, complex(math.inf, 1), complex(-math.inf, 1)]),
                                       m.tensor([5 + 0j, complex(math.inf, 2), complex(-math.inf, 3)])),
    # creation and sampling
    "tensor_complex128": lambda m: m.tensor([0.1 + 0.2j], dtype=m.complex128),
    "full_real_1j": lambda m: m.full((2,), 1j), "fill_real_1j": lambda m: m.zeros(2).fill_(1j),
    "arange_complex": lambda m: m.arange(3, dtype=m.cfloat), "arange_1j": lambda m: m.arange(0, 2j),
    "linspace": lambda m: m.linspace(-3.3 + 2j, 1.7 - 0.2j, 33),
    "linspace128": lambda m: m.linspace(0.1, 1 + 1j, 4, dtype=m.complex128),
    "logspace": lambda m: m.logspace(0, 1 + 1j, 7), "logspace128": lambda m: m.logspace(0, 1, 3, dtype=m.cdouble),
    "linspace_real_1j": lambda m: m.linspace(0, 1j, 3, dtype=m.float32),
    "randn": lambda m: (m.manual_seed(0), m.randn(20, dtype=m.cfloat))[1],
    "randn128": lambda m: (m.manual_seed(1), m.randn(2, 3, dtype=m.cdouble))[1],
    "rand": lambda m: (m.manual_seed(2), m.rand(5, dtype=m.cfloat))[1],
    "normal_": lambda m: (m.manual_seed(3), m.zeros(17, dtype=m.cdouble).normal_(1, 2))[1],
    "uniform_": lambda m: (m.manual_seed(4), m.zeros(3, dtype=m.cfloat).uniform_(-1, 2))[1],
    "normal_tensor": lambda m: (m.manual_seed(5), m.normal(m.zeros(3, dtype=m.cfloat), 2.0))[1],
    "randint": lambda m: m.randint(3, (2,), dtype=m.cfloat), "randperm": lambda m: m.randperm(3, dtype=m.cdouble),
    "bernoulli_": lambda m: m.zeros(2, dtype=m.cfloat).bernoulli_(), "random_": lambda m: m.zeros(2, dtype=m.cfloat).random_(),
    "geometric_": lambda m: m.zeros(2, dtype=m.cfloat).geometric_(0.5),
    "cauchy_": lambda m: m.zeros(2, dtype=m.cfloat).cauchy_(),
}


@pytest.mark.parametrize("name", sorted(SAME))
def test_same_as_torch(name):
    t, e = _outcome(torch, SAME[name]), _outcome(ember, SAME[name])
    if isinstance(t, tuple) and isinstance(t[1], list):
        assert isinstance(e, tuple) and e[0] == t[0], (e, t)
        np.testing.assert_allclose(np.asarray(e[1], dtype=complex), np.asarray(t[1], dtype=complex), rtol=1e-7,
                                   atol=0, equal_nan=True)
    else:
        assert e == t


# complex32: torch makes these; NumPy has no complex half, so ember refuses instead of using complex64 silently
@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(2, dtype=m.complex32), lambda m: m.ones(2).to(m.complex32),
    lambda m: m.ones(2).half() * 1j, lambda m: m.tensor([1j], dtype=m.chalf),
    lambda m: m.randn(2, dtype=m.complex32)], ids=["zeros", "to", "half*1j", "tensor", "randn"])
def test_complex32_refused(fn):
    assert str(fn(torch).dtype) == "torch.complex32"
    with pytest.raises(NotImplementedError, match="ember has no complex32"):
        fn(ember)


def test_complex32_dtype_still_named():
    assert ember.result_type(ember.ones(1).half(), 1j) is ember.complex32
    assert str(ember.chalf) == "torch.complex32" and ember.complex32.is_complex


# complex64 computes in complex64 as PyTorch's kernels: values within float32 rounding of torch's
_C64 = np.array([0.3 + 0.4j, -1.2 + 0.7j, 2.5 - 1.5j, -0.1 - 0.2j, 0.9 + 0.05j], dtype=np.complex64)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin", "acos",
                                "atan", "asinh", "acosh", "atanh", "reciprocal", "rsqrt", "sigmoid", "log1p",
                                "expm1", "log2", "log10", "exp2", "sgn", "abs", "square", "neg"])
def test_complex64_values(op):
    t = getattr(torch, op)(torch.tensor(_C64)).numpy()
    e = getattr(ember, op)(ember.tensor(_C64)).numpy()
    assert e.dtype == t.dtype
    np.testing.assert_allclose(e, t, rtol=4e-7, atol=1e-7)


def test_complex_grad_through_lerp_and_logaddexp():
    for m in (torch, ember):
        a = m.tensor([0.3 + 2j, -1 - 1j], dtype=m.complex128, requires_grad=True)
        b = m.tensor([1 + 0.5j, 0.2 - 0.3j], dtype=m.complex128, requires_grad=True)
        y = (m.logaddexp(a, b) * m.lerp(a, b, 0.3 + 0.1j)).abs().sum()
        ga, gb = m.autograd.grad(y, (a, b))
        if m is torch:
            want = ga.numpy(), gb.numpy()
    np.testing.assert_allclose(ga.numpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), want[1], rtol=1e-12)


def test_inplace_sgn_saves_original_self():
    """sgn_ on a complex tensor: its backward reads self from before the write (PyTorch saves a copy)."""
    outs = []
    for m in (torch, ember):
        x = m.tensor([1 + 2j, 3 - 1j], dtype=m.complex128, requires_grad=True)
        y = (x * 1).sgn_()
        (g,) = m.autograd.grad((y * m.tensor([0.5 + 1j, -1j], dtype=m.complex128)).real.sum(), x)
        outs.append(g.numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-12)


def test_array_api_twins():
    """The complex paths of the array-API kernels equal the cpu ones."""
    strict = pytest.importorskip("array_api_strict")
    ember.devices.register("strict", strict)
    a = np.array([0.3 + 2j, -1 - 1j, complex(math.inf, 1), 5 + 0j, complex(math.nan, 1), complex(-math.inf, 1)])
    b = np.array([5 + 0j, 0.3 + 2j, complex(math.inf, 2), complex(-math.inf, 1), 1j, complex(-math.inf, 3)])
    z = np.array([complex(math.nan, math.inf), complex(-math.inf, 1), 1 + 2j, complex(math.nan, 0)])
    res = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dev in ("cpu", "strict"):
            def t(v):
                return ember.tensor(v).to(dev)
            res[dev] = [ember.logaddexp(t(a), t(b)), ember.nan_to_num(t(z)), ember.isreal(t(z)),
                        ember.lerp(t(a), t(b), 0.3 + 0.1j), ember.lerp(t(a), t(b), t(a * 0.1))]
    for x, y in zip(res["cpu"], res["strict"]):
        np.testing.assert_array_equal(x.numpy(), y.to("cpu").numpy())


def test_abs_bit_for_bit_as_torch():
    """|z| as PyTorch's: hypot of the parts (NumPy's complex abs loops are 1 ulp off in a third of complex64
    elements: |1+1.1j| is 1.4866069555 there, 1.4866068363 correctly rounded and in PyTorch); the complex norm
    uses the same moduli. complex128 agrees in all but a small share of elements (1 ulp)."""
    rng = np.random.default_rng(0)
    z = ((rng.standard_normal(5000) + 1j * rng.standard_normal(5000)) * rng.choice([1e-3, 1.0, 1e3], 5000))
    z64 = z.astype(np.complex64)
    want = torch.abs(torch.from_numpy(z64)).numpy()
    assert np.array_equal(ember.abs(ember.from_numpy(z64)).numpy(), want)
    assert ember.tensor([1 + 1.1j]).abs().item() == torch.tensor([1 + 1.1j]).abs().item()
    n_e = ember.linalg.vector_norm(ember.from_numpy(z64.reshape(50, 100)), ord=float("inf"), dim=1).numpy()
    assert np.array_equal(n_e, torch.linalg.vector_norm(torch.from_numpy(z64.reshape(50, 100)), ord=float("inf"),
                                                        dim=1).numpy())
    got = ember.abs(ember.from_numpy(z)).numpy()
    assert np.mean(got != torch.abs(torch.from_numpy(z)).numpy()) < 0.02
