"""Tensor.grad_dtype (PyTorch 2.13): a leaf's allowed .grad dtype; the engine casts incoming gradients to it."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn):
    """fn(m) on torch and ember: the same result (repr of dtypes/values) or the same exception type and message."""
    out = []
    for m in (torch, ember):
        try:
            out.append(("ok", fn(m)))
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    assert out[0] == out[1]


def _leaf(m, dtype="float32"):
    return m.tensor([1.0, -2.0, 3.0], dtype=getattr(m, dtype), requires_grad=True)


def _dt(t):
    return None if t is None else str(t).replace("torch.", "")


def test_default_is_the_tensors_dtype():
    _both(lambda m: [_dt(_leaf(m).grad_dtype), _dt(_leaf(m, "float64").grad_dtype),
                     _dt(m.arange(3).grad_dtype), _dt(m.zeros(2).grad_dtype)])


@pytest.mark.parametrize("want", ["float64", "float16", None])
def test_backward_casts_accumulated_gradients(want):
    def f(m):
        x = _leaf(m)
        x.grad_dtype = None if want is None else getattr(m, want)
        for _ in range(2):
            (x * x / 3).sum().backward()
        return _dt(x.grad_dtype), _dt(x.grad.dtype), x.grad.tolist()
    _both(f)


def test_autograd_grad_returns_the_grad_dtype():
    def f(m):
        x = _leaf(m)
        x.grad_dtype = m.float64
        g, = m.autograd.grad((x * m.tensor(1 / 3, dtype=m.float64)).sum(), x)
        return _dt(g.dtype), g.tolist()
    _both(f)


def test_assigning_grad_follows_grad_dtype():
    def f(m):
        x = _leaf(m)
        x.grad_dtype = m.float64
        x.grad = m.ones(3, dtype=m.float64)
        y = _leaf(m)
        y.grad_dtype = None
        y.grad = m.ones(3, dtype=m.float16)
        return _dt(x.grad.dtype), _dt(y.grad.dtype)
    _both(f)


@pytest.mark.parametrize("case", ["wrong_grad", "not_dtype", "non_leaf_get", "non_leaf_set", "existing_grad"])
def test_errors(case):
    def f(m):
        x = _leaf(m)
        if case == "wrong_grad":
            x.grad_dtype = m.float64
            x.grad = m.ones(3)
        elif case == "not_dtype":
            x.grad_dtype = "float64"
        elif case == "non_leaf_get":
            return (x * 2).grad_dtype
        elif case == "non_leaf_set":
            (x * 2).grad_dtype = m.float64
        else:
            x.grad_dtype = m.float16
            (x * 2).sum().backward()
            x.grad_dtype = m.float32
    _both(f)


def test_a_leaf_without_grad_may_set_it():
    def f(m):
        w = m.zeros(2)
        w.grad_dtype = m.float64
        return _dt(w.grad_dtype)
    _both(f)


def test_values_unchanged_without_grad_dtype():
    x = _leaf(ember)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([2.0, -4.0, 6.0], dtype=np.float32))
