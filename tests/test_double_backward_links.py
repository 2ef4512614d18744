"""What a second derivative is connected to, op by op, against torch.

PyTorch's backward formulas of some ops take the input itself (``max_pool2d_with_indices_backward(grad, self,
...)``, ``avg_pool2d_backward(grad, self, ...)``), so a first derivative taken with ``create_graph=True`` is
connected to the input even where it does not depend on it: the second derivative with respect to the input is
then zeros, where an unconnected one would be "appears to not have been used in the graph" (or "does not require
grad"); likewise the bias gradient of a convolution or normalisation, which PyTorch computes in one op
with the input and weight gradients, is connected to the input and weight (with None second derivatives). For
every op-database sample, with every input requiring grad and upstream gradients that do not: each
first derivative's requires_grad, and which inputs its second derivative reaches (None or a tensor, with
allow_unused=True), must be torch's."""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(__file__))
from op_db import OP_DB  # noqa: E402

# Known differences, by op name: (reason, sample-id prefixes or None for every sample)
KNOWN = {
    # empty or degenerate inputs, where PyTorch's kernels take shortcuts
    "cumprod": ("empty input", ("6:",)), "cumprod_": ("empty input", ("6:",)),
    "cummax": ("empty input", ("6:", "7:")), "logcumsumexp": ("empty input", ("6:", "7:")),
    "linalg_det": ("1x1 input", ("2:",)), "nn.functional.conv1d": ("empty batch", ("7:",)),
    "cat": ("an empty input's constant gradient", ("3:", "6:")), "repeat": ("zero repeats", ("5:",)),
    "matrix_power": ("n=0: PyTorch returns a constant zero gradient, ember None", ("0:",)),
    "as_strided": ("empty output: PyTorch's as_strided_backward returns constant zeros", ("6:",)),
    # conv on views of the inputs (conv_tbc permutes them): the bias gradient comes out of conv's double-backward
    # link node, whose edges reach the (viewed) input and weight, so it requires grad (with None second derivatives)
    # where PyTorch's ConvTbcBackward0 gives a constant one
    "conv_tbc": ("the bias gradient keeps the link node's graph", None),
    "F_conv_tbc": ("the bias gradient keeps the link node's graph", None),
    # PyTorch has no double backward for its fused attention kernel
    "nn_scaled_dot_product_attention": ("torch raises", None), "nn_multi_head_attention_forward": ("torch raises", None),
}


def _links(m, op, sample, upstream_requires_grad):
    """Per input: '-' (no first derivative), 'c' (a constant one), else one letter per input for its second
    derivative: N (None) or T (a tensor); or the error."""
    xs = [m.tensor(np.array(a)).requires_grad_() for a in sample.args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = op.op(m, *xs, **sample.kwargs)
    outs = [o for o in (res if isinstance(res, tuple) else (res,)) if isinstance(o, m.Tensor) and o.requires_grad
            and o.dtype in (m.float32, m.float64)]
    if not outs:
        return None
    gos = [m.ones(o.shape, dtype=o.dtype, requires_grad=upstream_requires_grad) for o in outs]
    first = m.autograd.grad(outs, xs, gos, create_graph=True, allow_unused=True)
    sig = []
    for g in first:
        if g is None or not g.requires_grad:
            sig.append("-" if g is None else "c")
            continue
        second = m.autograd.grad(g.sum(), xs, allow_unused=True, retain_graph=True)
        sig.append("".join("N" if s is None else "T" for s in second))
    return " ".join(sig)


def _cases():
    out = []
    for op in OP_DB:
        if op.supports_gradgrad:
            out.append(pytest.param(op, id=op.name))
    return out


@pytest.mark.parametrize("upstream_requires_grad", [False, True])
@pytest.mark.parametrize("op", _cases())
def test_second_derivative_links(op, upstream_requires_grad):
    """(With an upstream gradient that requires grad, a first derivative that is a constant, zeros_like(grad) in
    PyTorch's formulas for fill_, zero_, copy_, must not be connected to it either.)"""
    reason, which = KNOWN.get(op.name, (None, None))
    for s in op.sample_inputs():
        if reason and (which is None or s.desc.startswith(which)):
            continue
        try:
            t = _links(torch, op, s, upstream_requires_grad)
        except Exception:  # noqa: BLE001 - torch refuses the sample: the forward tests cover it
            continue
        e = _links(ember, op, s, upstream_requires_grad)
        assert e == t, f"sample {s.desc}: torch {t}, ember {e} (per input: -/c = no/constant first derivative; " \
                       f"else N/T per input for the second)"


def test_avg_pool2d_second_derivative_of_a_linear_op():
    """The fuzzer's case: avg_pool2d on float64[2, 1, 2], kernel (1, 2), stride 2; the first derivative does not
    depend on the input, the second is zeros (not 'appears to not have been used in the graph')."""
    def fn(m):
        v = m.tensor(np.arange(4.0).reshape(2, 1, 2), requires_grad=True)
        y = m.nn.functional.avg_pool2d(v, kernel_size=(1, 2), stride=2)
        (g,) = m.autograd.grad(y.sum(), v, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), v)
        return g.detach().numpy(), type(g.grad_fn).__name__, gg.numpy()
    t, e = fn(torch), fn(ember)
    np.testing.assert_array_equal(e[0], t[0])
    np.testing.assert_array_equal(e[2], t[2])
    assert e[1] == t[1] == "AvgPool2DBackwardBackward0"


@pytest.mark.parametrize("call", [
    lambda F, x: F.max_pool2d(x, 2), lambda F, x: F.adaptive_avg_pool2d(x, 1), lambda F, x: F.adaptive_avg_pool2d(x, 2),
    lambda F, x: F.adaptive_max_pool2d(x, 1), lambda F, x: F.avg_pool2d(x, 2), lambda F, x: F.lp_pool2d(x, 1, 2),
    lambda F, x: F.pad(x[0], (1, 1), mode="reflect"), lambda F, x: F.pad(x[0], (1, 1), mode="replicate"),
    lambda F, x: F.interpolate(x, size=2, mode="area"),
    lambda F, x: F.interpolate(x, size=3, mode="bilinear"),
])
def test_pooling_saves_its_input(call):
    """The input is saved, as PyTorch saves it: changing it in place before backward is PyTorch's error."""
    def fn(m):
        x = m.ones(1, 1, 4, 4, requires_grad=True)
        h = x * 1
        y = call(m.nn.functional, h)
        h.add_(1)
        try:
            y.sum().backward()
        except RuntimeError as err:
            return type(err).__name__, "modified by an inplace operation" in str(err)
        return "ok", type(y.grad_fn).__name__
    assert fn(ember) == fn(torch)


@pytest.mark.parametrize("make,wshape,bshape", [
    (lambda m, x, w, b: m.nn.functional.conv1d(x, w, b), (4, 3, 2), (4,)),
    (lambda m, x, w, b: m.nn.functional.conv_transpose1d(x, w, b), (3, 4, 2), (4,)),
    (lambda m, x, w, b: m.nn.functional.layer_norm(x, (5,), w, b), (5,), (5,)),
    (lambda m, x, w, b: m.nn.functional.batch_norm(x, None, None, w, b, training=True), (3,), (3,)),
    (lambda m, x, w, b: m.nn.functional.batch_norm(x, m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64),
                                                   w, b), (3,), (3,)),
    (lambda m, x, w, b: m.nn.functional.group_norm(x, 1, w, b), (3,), (3,)),
])
def test_bias_gradient_links(make, wshape, bshape):
    """grad(bias_grad.sum(), (x, w)): None with allow_unused (connected, no derivative), PyTorch's error without;
    group norm's is a constant (PyTorch's composite double backward)."""
    def fn(m):
        x = m.tensor(np.linspace(-1, 1, 30).reshape(2, 3, 5), requires_grad=True)
        w = m.tensor(np.linspace(0.5, 1.5, int(np.prod(wshape))).reshape(wshape), requires_grad=True)
        b = m.tensor(np.linspace(-0.5, 0.5, int(np.prod(bshape))).reshape(bshape), requires_grad=True)
        out = make(m, x, w, b)
        gb = m.autograd.grad(out.sum(), b, create_graph=True)[0]
        if not gb.requires_grad:
            return "constant"
        r = m.autograd.grad(gb.sum(), (x, w), allow_unused=True, retain_graph=True)
        try:
            m.autograd.grad(gb.sum(), (x, w))
            raised = None
        except RuntimeError as e:
            raised = "appears to not have been used in the graph" in str(e)
        return type(gb.grad_fn).__name__, r, raised
    assert fn(ember) == fn(torch)
