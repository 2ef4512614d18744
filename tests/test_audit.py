"""The silent wrong answers found by the audit of the foundation (issue 5, part 0), each against PyTorch.

Every case is run under real torch and under ember (``parity.same``): values, gradients and dtypes
must agree, and NumPy must not print RuntimeWarnings where PyTorch prints nothing.
"""
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")


def grad_of(lib, f, values, dtype=None):
    x = lib.tensor(values, dtype=dtype or lib.float32, requires_grad=True)
    y = f(x)
    y.sum().backward()
    return y.detach(), x.grad


def no_runtime_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return fn()


# ----- sigmoid: a stable form ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_tail(dtype):
    same(lambda lib: grad_of(lib, lib.sigmoid, [-100.0, -20.0, -15.0, -1.0, 0.0, 15.0, 20.0, 100.0],
                             getattr(lib, dtype)), rtol=1e-6, atol=0)


def test_sigmoid_float16_tail():
    same(lambda lib: lib.sigmoid(lib.tensor([-10.0, -20.0, 5.0], dtype=lib.float16)), rtol=1e-3, atol=0)


def test_neg_log_sigmoid_tail():
    same(lambda lib: no_runtime_warnings(lambda: grad_of(lib, lambda z: -lib.log(lib.sigmoid(z)), [-20.0, -5.0])),
         rtol=1e-6, atol=0)


# ----- std / norm: wide accumulation, degrees of freedom ------------------------------------------

@pytest.mark.parametrize("values", [[1e20, -1e20], [1e-25, -1e-25], [3e38, -3e38, 1.0]])
def test_std_accumulates_in_double(values):
    same(lambda lib: no_runtime_warnings(lambda: grad_of(lib, lambda x: x.std(), values)), rtol=1e-6, atol=0)


def test_float16_std_and_norm_do_not_overflow():
    same(lambda lib: grad_of(lib, lambda x: x.std(), [300.0, -300.0], lib.float16), rtol=1e-3)
    same(lambda lib: grad_of(lib, lambda x: x.norm(), [300.0, 0.0], lib.float16), rtol=1e-3)


def test_std_degrees_of_freedom():
    def f(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = (lib.ones(0).std(), lib.tensor([1.0, 2.0]).std(correction=3), lib.ones(2, 0).std(1))
        msgs = [str(x.message) for x in w]
        assert all(m.startswith("std(): degrees of freedom is <= 0.") for m in msgs), msgs
        return r, len(msgs)
    same(f)


def test_mean_of_empty_is_silent_nan():
    same(lambda lib: no_runtime_warnings(lambda: (lib.ones(0).mean(), lib.ones(0, 3).mean(0))))


# ----- division: no squaring of the divisor -------------------------------------------------------

@pytest.mark.parametrize("a,b", [(1e-23, 1e-23), (3e20, 1e20), (1.0, 1e-30), (2.0, 0.0)])
def test_div_gradient_does_not_square_the_divisor(a, b):
    def f(lib):
        x = lib.tensor([a], requires_grad=True)
        y = lib.tensor([b], requires_grad=True)
        no_runtime_warnings(lambda: (x / y).sum().backward())
        return x.grad, y.grad
    same(f, rtol=1e-6, atol=0)


# ----- gradients at NaN ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,f", [
    ("relu", lambda lib, x: lib.relu(x)),
    ("abs", lambda lib, x: lib.abs(x)),
    ("sign", lambda lib, x: lib.sign(x)),
    ("max", lambda lib, x: x.max()),
    ("min", lambda lib, x: x.min()),
    ("amax", lambda lib, x: x.amax()),
    ("max_dim", lambda lib, x: x.max(0).values),
    ("sqrt_pow", lambda lib, x: x ** 0.5),
    ("rsqrt_pow", lambda lib, x: x ** -0.5),
    ("square_pow", lambda lib, x: x ** 2),
    ("recip_pow", lambda lib, x: x ** -1),
])
def test_gradients_at_nan_and_signed_zeros(name, f):
    vals = [nan, 1.0, -1.0, 0.0, -0.0, 2.0, -inf, inf]
    same(lambda lib: no_runtime_warnings(lambda: grad_of(lib, lambda x: f(lib, x), vals)))


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_route_the_gradient_to_nan(op):
    def f(lib):
        a = lib.tensor([nan, 1.0, 2.0, nan, 3.0], requires_grad=True)
        b = lib.tensor([1.0, nan, 2.0, nan, 1.0], requires_grad=True)
        getattr(lib, op)(a, b).sum().backward()
        return a.grad, b.grad
    same(f)


def test_sign_of_nan_is_zero():
    same(lambda lib: lib.sign(lib.tensor([nan, -0.0, 0.0, -2.0, inf])))


# ----- second derivative of a ** b where b == 0 -------------------------------------------------------

@pytest.mark.parametrize("which", [0, 1])
def test_pow_second_derivative_at_zero_exponent(which):
    def f(lib):
        x1 = lib.tensor([[2.0, 0.37, 0.0]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([[0.74, 0.0, 0.0]], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([[0.3, -1.2, 0.5]], dtype=lib.float64)
        v = lib.tensor([[0.7, 0.9, 1.1]], dtype=lib.float64)
        g = lib.autograd.grad((x1 ** b * w).sum(), [x1, b], create_graph=True)
        return lib.autograd.grad((g[which] * v).sum(), [x1, b], allow_unused=True)
    same(f, rtol=1e-12, atol=1e-12)


def test_rpow_zero_base_second_derivative():
    def f(lib):
        b = lib.tensor([0.0, 1.5, -1.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad((0.0 ** b).sum(), b, create_graph=True)
        return g, lib.autograd.grad(g.sum(), b, allow_unused=True)
    same(f)


# ----- views under no_grad --------------------------------------------------------------------------

def test_view_made_under_no_grad_requires_grad():
    def f(lib):
        x = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            v, w = x[:2], x.view(3)
        with lib.set_grad_enabled(False):
            u = x.t()
        y = v * 2
        return (v.requires_grad, w.requires_grad, u.requires_grad, v.is_leaf, v.grad_fn is None,
                y.requires_grad, x.detach()[:1].requires_grad)
    same(f)


def test_view_made_under_no_grad_has_no_history():
    def f(lib):
        x = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            v = x[:2]
        (v * 2).sum().backward()
        return x.grad is None, v.grad is None
    same(f)


# ----- concurrent backward into one leaf --------------------------------------------------------------

def test_concurrent_backward_loses_no_update():
    for _ in range(5):
        x = ember.ones(100_000, requires_grad=True)
        y = (x * 2).sum()

        def run():
            for _ in range(4):
                y.backward(retain_graph=True)
        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(100_000, 64.0, np.float32))


# ----- NumPy's RuntimeWarnings stay silent --------------------------------------------------------------

_WARNING_CASES = """
import ember as torch
torch.exp(torch.tensor([1000.0]))
torch.tensor([60000.0], dtype=torch.float16) * 2
torch.tensor([60000.0], dtype=torch.float16) + 60000
torch.log(torch.tensor([0.0, -1.0]))
torch.tensor([0.0]) / 0
torch.sqrt(torch.tensor([-1.0]))
torch.tensor([0.0]) ** -1.0
torch.sigmoid(torch.tensor([-1000.0]))
torch.ones(0).mean()
x = torch.tensor([0.0, 1e30], requires_grad=True)
(torch.log(x) * x * x).sum().backward()
"""


def test_no_numpy_runtime_warnings():
    # A fresh interpreter with the default warning filters, as a user's script has them (pytest replaces
    # the filters around each test, which would hide how ember behaves).
    r = subprocess.run([sys.executable, "-c", _WARNING_CASES], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
