"""Tensor.fill_diagonal_ and the fill value's conversion (fill_, fill_diagonal_) against torch: values, errors,
autograd through the in-place op (CopySlices on a view), forward mode, views and leaves."""
from __future__ import annotations

import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape,args", [
    ((3, 3), (5.0,)), ((2, 5), (1, True)), ((7, 3), (5.0, True)), ((7, 3), (5.0,)), ((5, 2), (1,)),
    ((8, 3), (7, True)), ((4, 3), (1, True)), ((4, 4, 4, 4), (3,)), ((0, 0), (1,)), ((3, 0), (1,)),
    ((3,), (1,)), ((2, 3, 3), (1,)), ((3, 3, 3), (1,)), ((3, 3), (1, 1)), ((3, 3), ("a",)),
])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool", "float16"])
def test_fill_diagonal_values_and_errors(shape, args, dtype):
    def fn(m):
        x = m.arange(int(m.tensor(shape).prod()) if shape else 1).reshape(shape).to(getattr(m, dtype))
        r = x.fill_diagonal_(*args)
        return r is x, x
    same(fn, exact_msg=True)


@pytest.mark.parametrize("value", [2.5, -1, 256, 200, 1e6, 70000, 65519.0, 2 ** 40, 2 ** 63, 2 ** 64, 2 ** 70,
                                   float("nan"), float("inf"), -1.5, -255, -256, 255.5, True])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16", "float32", "float64", "bool"])
def test_fill_value_conversion(value, dtype):
    """PyTorch's checked conversion of the fill value (an unsigned dtype wraps a negative int); no NumPy error."""
    same(lambda m: m.zeros(2, dtype=getattr(m, dtype)).fill_(value), exact_msg=True)
    same(lambda m: m.zeros(2, 2, dtype=getattr(m, dtype)).fill_diagonal_(value), exact_msg=True)


def test_fill_diagonal_autograd():
    def fn(m):
        x = m.arange(21.0).reshape(7, 3).requires_grad_()
        y = x * 1
        y.fill_diagonal_(5.0, wrap=True)
        y.backward(m.arange(21.0).reshape(7, 3))
        name = type(y.grad_fn).__name__
        g2 = m.arange(9.0).reshape(3, 3).requires_grad_()
        (gg,) = m.autograd.grad((g2 * 2).fill_diagonal_(0.0).pow(2).sum(), g2, create_graph=True)
        return x.grad, name, gg, gg.requires_grad
    same(fn)


def test_fill_diagonal_leaf_view_no_grad_and_forward_mode():
    same(lambda m: m.ones(3, 3, requires_grad=True).fill_diagonal_(1.0), exact_msg=True)

    def through_views(m):
        z = m.zeros(4, 4)
        z[:, 1:].fill_diagonal_(1)
        w = m.zeros(4, 4)
        w.t().fill_diagonal_(2)
        with m.no_grad():
            x = m.zeros(3, 3, requires_grad=True)
            x.fill_diagonal_(2.0)
        return z, w, x.detach(), x.requires_grad
    same(through_views)

    def tangent(m):
        fw = m.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(m.ones(3, 3), m.ones(3, 3)) * 1
            d.fill_diagonal_(2.0)
            return fw.unpack_dual(d).tangent
    same(tangent)


def test_inplace_on_an_empty_view_records_copyslices():
    """A view of an empty region is a view (PyTorch's): writing through it rebases the base (CopySlices)."""
    def fn(m):
        x = m.zeros(3, 3, requires_grad=True)
        y = x * 1
        y[:0].add_(1.0)
        e = (m.zeros(0, 0, requires_grad=True) * 1)
        e.fill_diagonal_(1.0)
        y.sum().backward()
        return type(y.grad_fn).__name__, y._version, type(e.grad_fn).__name__, x.grad
    same(fn)
