"""The window functions (torch.*_window and torch.signal.windows) against PyTorch for a sweep of sizes and options.

Values are PyTorch's to the last bit where they need no transcendental function (bartlett, kaiser's Cephes i0, every
float16 window); windows through cos/sin/exp/sqrt inherit those kernels' last bit, which on float32 is the correctly
rounded value while PyTorch's SIMD kernels are within an ulp or two of it: those compare within a few ulp."""
import itertools

import numpy as np
import pytest
import torch

import ember

SIZES = (0, 1, 2, 5, 16)
DTYPES = ("float16", "float32", "float64")
TOP = [("hann_window", {}), ("hamming_window", {}), ("hamming_window", {"alpha": 0.6, "beta": 0.3}),
       ("blackman_window", {}), ("bartlett_window", {}), ("kaiser_window", {}), ("kaiser_window", {"beta": 5.5})]
SIGNAL = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
          ("gaussian", {}), ("gaussian", {"std": 0.7}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
          ("general_hamming", {}), ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
          ("kaiser", {}), ("kaiser", {"beta": 3.0}), ("nuttall", {})]
EXACT = {"bartlett_window", "kaiser_window", "bartlett"}


def _compare(got, ref, exact: bool):
    g, r = got.detach().numpy(), ref.detach().numpy()
    assert g.dtype == r.dtype and g.shape == r.shape
    assert got.requires_grad == ref.requires_grad
    assert (got.grad_fn is None) == (ref.grad_fn is None)
    if exact or r.dtype == np.float16:
        np.testing.assert_array_equal(g, r)
    else:
        tiny = np.finfo(r.dtype).eps
        np.testing.assert_allclose(g, r, rtol=8 * tiny, atol=4 * tiny)


@pytest.mark.parametrize("name,extra", TOP, ids=[f"{n}{sorted(e.items())}" for n, e in TOP])
def test_top_level_windows_equal_torch(name, extra):
    for n, periodic, dt, rg in itertools.product(SIZES, (True, False), DTYPES, (False, True)):
        ref = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt), requires_grad=rg, **extra)
        got = getattr(ember, name)(n, periodic, dtype=getattr(ember, dt), requires_grad=rg, **extra)
        _compare(got, ref, name in EXACT)
    _compare(getattr(ember, name)(5), getattr(torch, name)(5), name in EXACT)   # defaults: periodic, float32


@pytest.mark.parametrize("name,extra", SIGNAL, ids=[f"{n}{sorted(e.items())}" for n, e in SIGNAL])
def test_signal_windows_equal_torch(name, extra):
    for n, sym, dt, rg in itertools.product(SIZES, (True, False), ("float32", "float64"), (False, True)):
        ref = getattr(torch.signal.windows, name)(n, sym=sym, dtype=getattr(torch, dt), requires_grad=rg, **extra)
        got = getattr(ember.signal.windows, name)(n, sym=sym, dtype=getattr(ember, dt), requires_grad=rg, **extra)
        _compare(got, ref, name in EXACT)


def test_window_names_match_torch():
    assert ember.signal.windows.__all__ == torch.signal.windows.__all__


def test_window_gradients_flow_as_in_torch():
    for lib in (torch, ember):
        w = lib.signal.windows.gaussian(5, std=0.8, requires_grad=True, dtype=lib.float64)
        w.sum().backward()   # the leaf is linspace's output: no error, a scalar loss
    assert type(ember.signal.windows.kaiser(5, requires_grad=True).grad_fn).__name__ == \
        type(torch.signal.windows.kaiser(5, requires_grad=True).grad_fn).__name__


# the type only where PyTorch's message prints C++ TensorOptions or its overload list
@pytest.mark.parametrize("call", [lambda m: m.hann_window(4, dtype=m.int64), lambda m: m.hamming_window(4, "yes")])
def test_window_error_types_match_torch(call):
    with pytest.raises(Exception) as ref:
        call(torch)
    with pytest.raises(type(ref.value)):
        call(ember)


@pytest.mark.parametrize("call", [
    lambda m: m.hann_window(-1), lambda m: m.kaiser_window(3.0), lambda m: m.signal.windows.hann(-1),
    lambda m: m.signal.windows.hann(4, dtype=m.float16), lambda m: m.signal.windows.gaussian(4, std=0.0),
    lambda m: m.signal.windows.exponential(4, center=1.0), lambda m: m.signal.windows.kaiser(4, beta=-1.0),
    lambda m: m.signal.windows.general_cosine(4, a=[]), lambda m: m.signal.windows.general_cosine(4, a=3),
    *(lambda m, f=f: getattr(m, f)(4, dtype=m.complex64) for f in ("hann_window", "kaiser_window")),
    lambda m: m.signal.windows.hann(4, dtype=m.complex128),
])
def test_window_errors_match_torch(call):
    with pytest.raises(Exception) as ref:
        call(torch)
    with pytest.raises(type(ref.value)) as got:
        call(ember)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("n", [0, 1])
def test_complex_windows_of_length_0_and_1_as_torch(n):
    got, ref = ember.hann_window(n, dtype=ember.complex64), torch.hann_window(n, dtype=torch.complex64)
    assert str(got.dtype) == str(ref.dtype) and got.tolist() == ref.tolist()


def test_constants():
    for n in ("pi", "e", "inf", "nan", "newaxis"):
        a, b = getattr(ember, n), getattr(torch, n)
        assert a is b or a == b or (a != a and b != b), n
