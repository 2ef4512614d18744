"""Ops over empty dimensions (an empty inner/contracted dimension, no keys, no channels), against torch:
values, shapes, dtypes and gradients, or torch's exact error when torch refuses."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from parity import same

torch = pytest.importorskip("torch")

_R = np.random.default_rng(0)


def _a(*shape):
    return _R.standard_normal(shape)


# (name, op(m, *tensors), input arrays): every input requires grad; outputs and gradients are compared
CASES = [
    ("linear3d", lambda m, v, w: m.nn.functional.linear(v, w), [_a(1, 4, 0), _a(2, 0)]),
    ("linear3d_bias", lambda m, v, w, b: m.nn.functional.linear(v, w, b), [_a(1, 4, 0), _a(2, 0), _a(2)]),
    ("linear4d", lambda m, v, w: m.nn.functional.linear(v, w), [_a(2, 1, 4, 0), _a(2, 0)]),
    ("linear2d", lambda m, v, w: m.nn.functional.linear(v, w), [_a(4, 0), _a(2, 0)]),
    ("linear1d_bias", lambda m, v, w, b: m.nn.functional.linear(v, w, b), [_a(0), _a(2, 0), _a(2)]),
    ("linear_batch0", lambda m, v, w, b: m.nn.functional.linear(v, w, b), [_a(3, 0, 4), _a(2, 4), _a(2)]),
    ("linear_out0", lambda m, v, w: m.nn.functional.linear(v, w), [_a(2, 3, 4), _a(0, 4)]),
    ("bilinear", lambda m, a, b, w: m.nn.functional.bilinear(a, b, w), [_a(3, 0), _a(3, 2), _a(4, 0, 2)]),
    ("matmul3d", lambda m, a, b: a @ b, [_a(2, 3, 0), _a(0, 4)]),
    ("matmul1d", lambda m, a, b: a @ b, [_a(0), _a(0)]),
    ("matmul3d1d", lambda m, a, b: a @ b, [_a(2, 3, 0), _a(0)]),
    ("matmul_bcast", lambda m, a, b: a @ b, [_a(2, 1, 3, 0), _a(4, 0, 5)]),
    ("bmm", lambda m, a, b: m.bmm(a, b), [_a(2, 3, 0), _a(2, 0, 4)]),
    ("addmm", lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2), [_a(4), _a(3, 0), _a(0, 4)]),
    ("baddbmm", lambda m, c, a, b: m.baddbmm(c, a, b), [_a(2, 3, 4), _a(2, 3, 0), _a(2, 0, 4)]),
    ("addbmm", lambda m, c, a, b: m.addbmm(c, a, b), [_a(3, 4), _a(0, 3, 2), _a(0, 2, 4)]),
    ("einsum", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), [_a(2, 3, 0), _a(2, 0, 4)]),
    ("tensordot", lambda m, a, b: m.tensordot(a, b, dims=2), [_a(3, 0, 2), _a(0, 2, 4)]),
    ("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [_a(3, 0), _a(0, 4), _a(4, 2)]),
    ("sdpa_no_keys", lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
     [_a(2, 3, 4), _a(2, 0, 4), _a(2, 0, 5)]),
    ("sdpa_no_features", lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v),
     [_a(2, 3, 0), _a(2, 4, 0), _a(2, 4, 5)]),
    ("logsumexp", lambda m, a: a.logsumexp(1), [_a(3, 0)]),
    ("prod", lambda m, a: a.prod(1), [_a(3, 0)]),
    ("softmax", lambda m, a: a.softmax(1), [_a(3, 0)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,op,arrays", CASES, ids=[c[0] for c in CASES])
def test_empty_inner_dims(name, op, arrays, dtype):
    def fn(m):
        xs = [m.tensor(a, dtype=getattr(m, dtype), requires_grad=True) for a in arrays]
        out = op(m, *xs)
        grads = m.autograd.grad(out, xs, m.ones_like(out), allow_unused=True)
        return out, tuple(m.zeros(()) if g is None else g for g in grads)
    same(fn, exact_msg=True)


def test_reshape_infer_of_empty():
    """reshape(-1, 0) of 0 elements is ambiguous: torch's own message (not 'invalid for input of size 0')."""
    same(lambda m: m.zeros(3, 0).reshape(-1, 0), exact_msg=True)
    same(lambda m: m.zeros(3, 0).view(2, -1, 0), exact_msg=True)
    same(lambda m: m.zeros(6).reshape(-1, 0), exact_msg=True)
    same(lambda m: m.zeros(3, 0).reshape(-1), exact_msg=True)


@pytest.mark.parametrize("call", [
    lambda m, R: m.nn.functional.conv2d(R(2, 4, 5, 5), R(3, 2, 2, 2), groups=2),
    lambda m, R: m.nn.functional.conv2d(R(2, 3, 5, 5), R(0, 3, 2, 2)),
    lambda m, R: m.nn.functional.conv1d(R(2, 3, 5), R(0, 3, 2)),
    lambda m, R: m.nn.functional.conv2d(R(2, 1, 5, 5), R(1, 1, 2, 2), groups=2),
    lambda m, R: m.nn.functional.conv1d(R(2, 3, 5), R(4, 3, 0)),
    lambda m, R: m.nn.functional.conv2d(R(2, 3, 5, 5), R(4, 3, 0, 2), padding=1),
    lambda m, R: m.nn.functional.conv3d(R(2, 3, 5, 5, 5), R(4, 3, 0, 1, 1)),
    lambda m, R: m.nn.functional.conv_transpose1d(R(2, 3, 5), R(3, 2, 0)),
    lambda m, R: m.nn.functional.conv_transpose2d(R(2, 3, 5, 5), R(3, 0, 2, 2)),
    lambda m, R: m.nn.functional.conv_transpose1d(R(2, 3, 5), R(3, 0, 2)),
    lambda m, R: m.nn.functional.conv_transpose2d(R(2, 4, 5, 5), R(4, 0, 2, 2), groups=2),
    lambda m, R: m.nn.functional.conv_transpose3d(R(2, 3, 5, 5, 5), R(3, 0, 2, 2, 2)),
    lambda m, R: m.nn.functional.conv_transpose3d(R(2, 3, 5, 5, 5), R(3, 2, 0, 2, 2)),
    lambda m, R: m.nn.functional.conv_transpose2d(R(2, 3, 5, 5), R(3, 2, 2, 2), groups=2),
    lambda m, R: m.nn.functional.conv_transpose2d(R(2, 0, 5, 5), R(0, 3, 2, 2)),
    # an empty spatial dim: only an empty batch or channel dim is computed
    lambda m, R: m.nn.functional.conv1d(R(2, 3, 0), R(4, 3, 1), padding=1),
    lambda m, R: m.nn.functional.conv2d(R(3, 0, 4), R(4, 3, 1, 1), padding=1),
    lambda m, R: m.nn.functional.conv_transpose1d(R(2, 3, 0), R(3, 4, 1)),
    lambda m, R: m.nn.functional.conv3d(R(2, 3, 0, 2, 2), R(4, 3, 1, 1, 1), padding=1),
    lambda m, R: m.nn.functional.conv2d(R(0, 3, 0, 4), R(4, 3, 1, 1), padding=1),
    lambda m, R: m.nn.functional.conv2d(R(2, 3, 0, 4), R(4, 3, 1, 1), padding="same"),
])
def test_conv_empty_weight_errors(call):
    """Empty kernels and weights without output channels: torch's (float64 CPU kernel's) messages, no NumPy
    reshape error."""
    same(lambda m: call(m, lambda *s: m.randn(*s, dtype=m.float64)), exact_msg=True)


@pytest.mark.parametrize("ord", [2, -2, "nuc", "fro", 1, -1, float("inf"), -float("inf")])
@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 3, 0)])
@pytest.mark.parametrize("kw", [{}, {"keepdim": True}, {"dim": (0, -1)}])
def test_matrix_norm_of_empty(ord, shape, kw):
    """A max over an empty dim gives PyTorch's zeros (which do not require grad); a min raises amin's error."""
    def fn(m):
        r = m.linalg.matrix_norm(m.ones(shape, requires_grad=True), ord, **kw)
        return r, r.requires_grad
    same(fn, exact_msg=True)


@pytest.mark.parametrize("op", ["median", "nanmedian", "mode", "kthvalue"])
def test_dim_reductions_over_empty_dim(op):
    same(lambda m: getattr(m.zeros(3, 0), op)(*((1, 1) if op == "kthvalue" else (1,))), exact_msg=True)
