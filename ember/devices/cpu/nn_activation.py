"""NumPy kernels of torch.nn.functional's activations and softmax family (part of the raw 'cpu' namespace).

Every name in ``__all__`` is also in ``graph_ns`` (registered in ``ember/ops/nn_activation.py``). float16
inputs compute in float32 and round once, as PyTorch's CPU kernels do (its "opmath" type).
"""
from __future__ import annotations

import math

import numpy as np

from .reduced import BF16 as _BF16, BF16_ONLY, F32 as _F32, REDUCED as _REDUCED, all_in_float32, round_half_away

from .libm import fma64
from .elementwise import _c_or_rounded, _rounded_once, erf as _erf, sigmoid as _sig, zero_where

# exp, expm1, log1p and tanh of float32 as PyTorch's activation kernels compute them: the C library's expf ... on
# short tensors (its scalar path), correctly rounded otherwise (its SLEEF and MKL kernels nearly are; NumPy's
# float32 ones are an ulp off in 5-40% of inputs): see elementwise._c_or_rounded
_exp = _c_or_rounded(np.exp, "expf")
_expm1 = _c_or_rounded(np.expm1, "expm1f")
_log1p = _c_or_rounded(np.log1p, "log1pf")
_tanh = _c_or_rounded(np.tanh, "tanhf")
_exp_cr = _rounded_once(np.exp, quiet=True)   # log_sigmoid: SLEEF on every length in PyTorch
_log1p_cr = _rounded_once(np.log1p, quiet=True)

__all__: list = ["softmax", "log_softmax", "leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardtanh",
                 "hardsigmoid", "hardswish", "hardshrink", "softshrink", "log_sigmoid", "threshold", "glu",
                 "prelu", "rrelu_with_noise", "threshold_backward", "hardtanh_backward", "leaky_relu_backward",
                 "hardshrink_backward", "softshrink_backward", "rrelu_with_noise_backward", "hardsigmoid_backward",
                 "hardswish_backward", "prelu_backward_self", "prelu_backward_weight", "elu_backward",
                 "softplus_backward", "log_sigmoid_backward", "gelu_backward", "index_bounds", "one_hot",
                 "embedding_renorm_", "embedding_bag", "bag_ids", "embedding_bag_argmax", "embedding_freq_backward",
                 "row_ids", "index_count_inverse", "bag_count_inverse"]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_KAPPA = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_ONE_SIXTH = float(np.float32(1.0 / 6.0))   # PyTorch's hardsigmoid_backward multiplies by a float constant


def _f32(kernel):
    """float16 computes in float32 and rounds once at the end; floating-point warnings stay silent."""
    def fn(x, *args, **kwargs):
        with np.errstate(all="ignore"):
            if x.dtype in _REDUCED:
                return kernel(x.astype(_F32), *args, **kwargs).astype(x.dtype)
            return np.asarray(kernel(x, *args, **kwargs), dtype=x.dtype)
    fn.__name__, fn.__doc__ = kernel.__name__, kernel.__doc__
    return fn


def _t(x, v):
    return x.dtype.type(v)


def _axis(x, dim):
    return dim % x.ndim if x.ndim else None


@_f32
def _softmax(x, dim):
    if x.size == 0:
        return x.copy()
    ax = _axis(x, dim)
    e = np.exp(x - x.max(axis=ax, keepdims=True))   # (the methods: np.max's and np.sum's reductions, less Python)
    return e / e.sum(axis=ax, keepdims=True)


@_f32
def _log_softmax(x, dim):
    if x.size == 0:
        return x.copy()
    ax = _axis(x, dim)
    s = x - x.max(axis=ax, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=ax, keepdims=True))


def _softmax_bf16(x, dim, log: bool):
    """bfloat16 softmax/log_softmax as PyTorch's CPU kernels round it: in float32, with the values its kernels
    keep in bfloat16 rounded there (over the last dim: log_softmax's sum and its log; over another dim: softmax's
    exponentials)."""
    ax = _axis(x, dim)
    w = x.astype(_F32)
    with np.errstate(all="ignore"):
        d = w - np.max(w, axis=ax, keepdims=True)
        e = np.exp(d.astype(np.float64)).astype(_F32)
        s = np.sum(e, axis=ax, keepdims=True, dtype=_F32)
        last = ax is None or ax == x.ndim - 1
        if not log:
            return (e / s if last else e.astype(x.dtype).astype(_F32) / s).astype(x.dtype)
        if last:
            s = s.astype(x.dtype).astype(_F32)
        ls = np.log(s.astype(np.float64)).astype(_F32)
        return (d - (ls.astype(x.dtype).astype(_F32) if last else ls)).astype(x.dtype)


def softmax(x, dim):
    """exp(x - max) / sum(exp(x - max)) over ``dim``. A row of -inf (or one holding +inf) gives nan, as
    PyTorch's."""
    if x.dtype is _BF16 and x.size:
        return _softmax_bf16(x, dim, False)
    return _softmax(x, dim)


def log_softmax(x, dim):
    """x - max - log(sum(exp(x - max))) over ``dim``: finite for inputs of any magnitude."""
    if x.dtype is _BF16 and x.size:
        return _softmax_bf16(x, dim, True)
    return _log_softmax(x, dim)


@_f32
def leaky_relu(x, negative_slope):
    return np.where(x > 0, x, x * _t(x, negative_slope))


@_f32
def elu(x, alpha, scale, input_scale):
    neg = _expm1(x * _t(x, input_scale)) * _t(x, alpha * scale)
    return np.where(x > 0, x * _t(x, scale), neg)


@_f32
def gelu(x, approximate):
    if approximate == "tanh":
        inner = _t(x, _KAPPA) * (x + _t(x, 0.044715) * (x * x * x))   # PyTorch's order
        return _t(x, 0.5) * x * (1 + _tanh(inner))
    t = x * _t(x, _SQRT1_2)
    e = _erf(t)
    e += 1   # (in place: the same roundings as 0.5 * x * (1 + e), without two temporaries of x's size)
    h = np.multiply(_t(x, 0.5), x, out=t) if type(t) is np.ndarray else _t(x, 0.5) * x   # (erf's input is spent)
    h *= e
    return h


def _sigmoid(x):
    return 1 / (1 + _exp(-x))


@_f32
def silu(x):
    return x / (1 + _exp(-x))   # PyTorch's form (not x * sigmoid(x): that rounds once more)


@_f32
def mish(x):
    return x * _tanh(_log1p(_exp(x)))   # PyTorch's form (exp overflowing to inf gives x)


@_f32
def softplus(x, beta, threshold):
    """log1p(exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's kernel)."""
    bx = x * _t(x, beta)
    return np.where(bx > threshold, x, _log1p(_exp(bx)) / _t(x, beta))


@_f32
def hardtanh(x, min_val, max_val):
    # x second: NumPy's maximum/minimum keep their second operand on a tie, PyTorch's hardtanh keeps x (-0.0 stays)
    return np.minimum(_t(x, max_val), np.maximum(_t(x, min_val), x))


@_f32
def hardsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


@_f32
def hardswish(x):
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6   # PyTorch's order: (x * clamp) / 6


@_f32
def hardshrink(x, lambd):
    return np.where((x >= -lambd) & (x <= lambd), _t(x, 0), x)


@_f32
def softshrink(x, lambd):
    lam = _t(x, lambd)
    return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, _t(x, 0)))


@_f32
def log_sigmoid(x):
    """-softplus(-x) = min(x, 0) - log1p(exp(-|x|)): finite for inputs of any magnitude."""
    return np.minimum(x, 0) - _log1p_cr(_exp_cr(-np.abs(x)))


def threshold(x, threshold, value):
    with np.errstate(all="ignore"):
        return np.where(x <= threshold, np.asarray(value).astype(x.dtype), x)


@_f32
def glu(x, dim):
    a, b = np.split(x, 2, axis=dim)
    return a * _sigmoid(b)


def prelu(x, weight):
    with np.errstate(all="ignore"):
        if x.dtype in _REDUCED:
            return np.where(x > 0, x, x.astype(_F32) * weight.astype(_F32)).astype(x.dtype)
        return np.where(x > 0, x, x * weight)


def rrelu_with_noise(x, noise, lower, upper, training):
    """x where x > 0, else x * noise in training (the slopes drawn), x * (lower + upper) / 2 in eval."""
    with np.errstate(all="ignore"):
        if not training and x.dtype is _BF16:   # PyTorch's leaky_relu with the mean slope as a float32 number
            return np.where(x > 0, x, (x.astype(_F32) * _F32.type((lower + upper) / 2)).astype(_BF16))
        n = noise.astype(x.dtype, copy=False) if training else x.dtype.type((lower + upper) / 2)
        return np.where(x > 0, x, x * n)


# ----- first derivatives of the piecewise-linear activations ---------------------------------------------------
# Plain backward runs them on raw arrays; under create_graph ember's namespace gives each its own node
# (ThresholdBackwardBackward0, ...), so that the gradient has a graph as PyTorch's does. Linear in ``g``;
# a NaN input lets the gradient through, as PyTorch's kernels.

def threshold_backward(g, x, threshold):
    return zero_where(x <= threshold, g)


def hardtanh_backward(g, x, min_val, max_val):
    return zero_where((x <= min_val) | (x >= max_val), g)


def leaky_relu_backward(g, x, negative_slope):
    return np.where(x > 0, g, g * negative_slope)


def hardshrink_backward(g, x, lambd):
    return zero_where((x >= -lambd) & (x <= lambd), g)


softshrink_backward = hardshrink_backward


def rrelu_with_noise_backward(g, x, noise, lower, upper, training):
    return np.where(x > 0, g, g * (noise if training else (lower + upper) / 2))


def hardsigmoid_backward(g, x):
    return np.where((x > -3.0) & (x < 3.0), g * _ONE_SIXTH, 0.0)


def hardswish_backward(g, x):
    # PyTorch's kinks: 0 at x = -3, 1 at x = 3
    return np.where(x <= -3.0, 0.0, np.where(x < 3.0, g * (x / 3.0 + 0.5), g))


def prelu_backward_self(g, x, w):
    return np.where(x > 0, g, g * w)


def prelu_backward_weight(g, x, w):
    return np.where(x > 0, 0.0, g * x)


# ----- first derivatives of elu, softplus, logsigmoid: g * f'(x) (their own nodes under create_graph) ------------

def elu_backward(g, x, alpha, scale, input_scale):
    # the exponent masked so that exp never overflows on the positive side (0 * inf = nan there)
    neg = np.exp(np.where(x < 0, x, 0.0) * input_scale) * (alpha * scale * input_scale)
    return np.where(x > 0, g * scale, g * neg)


def softplus_backward(g, x, beta, threshold):
    bx = x * beta
    return np.where(bx > threshold, g, g * _sig(np.where(bx < threshold, bx, threshold)))


def log_sigmoid_backward(g, x):
    return g * _sig(-x)


@all_in_float32(dtypes=BF16_ONLY)   # PyTorch's bfloat16 kernel computes in float and rounds once
def gelu_backward(g, x, approximate):
    if approximate == "tanh":
        x2 = x * x
        t = np.tanh((x + x2 * x * 0.044715) * _KAPPA)
        return g * ((t + 1) * 0.5 + x * (1 - t * t) * ((x2 * (3 * 0.044715) + 1) * (0.5 * _KAPPA)))
    # g * (cdf + x * pdf), cdf = (erf(x / sqrt(2)) + 1) * 0.5, pdf = exp(x * x * -0.5) / sqrt(2 pi): the same
    # operations in the same order, in place where the operand is a temporary
    t = x * _SQRT1_2
    cdf = _erf(t)
    cdf += 1
    cdf *= 0.5
    if type(t) is np.ndarray and t.dtype == x.dtype:   # erf's input is spent: pdf is computed in its place
        pdf = np.multiply(x, x, out=t)
        pdf *= -0.5
        np.exp(pdf, out=pdf)
    else:   # (a 0-d x gives NumPy scalars here)
        pdf = x * x
        pdf *= -0.5
        pdf = np.exp(pdf)
    pdf *= _INV_SQRT_2PI
    pdf *= x
    cdf += pdf
    return g * cdf


def index_bounds(x):
    """(min, max) of an integer array as Python ints, or None when it is empty. Not differentiable."""
    return None if x.size == 0 else (int(x.min()), int(x.max()))


def one_hot(x, num_classes):
    """int64 one-hot rows of the integer array ``x`` (a new last dim of ``num_classes``). Not differentiable."""
    return (x[..., None] == np.arange(num_classes)).astype(np.int64)


def embedding_renorm_(w, idx, max_norm, norm_type):
    """PyTorch's embedding_renorm_: each row of ``w`` indexed by ``idx`` whose ``norm_type``-norm exceeds
    ``max_norm`` is scaled by max_norm / (norm + 1e-7), in place. Not differentiable."""
    rows = np.unique(idx)
    if w.dtype in _REDUCED:
        # float16/bfloat16: PyTorch's row.norm() is in the row's dtype (float32 sums, rounded), the scale a double
        # that row *= scale rounds to the row's dtype before its float32 product (rounded)
        with np.errstate(all="ignore"):
            norms = np.linalg.norm(w[rows].astype(np.float32), ord=norm_type, axis=1).astype(w.dtype)
            norms = norms.astype(np.float64)
            scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype).astype(np.float32)
            w[rows] = (w[rows].astype(np.float32) * scale[:, None]).astype(w.dtype)
        return
    with np.errstate(all="ignore"):
        # complex rows: the norm of their moduli, as PyTorch's row.norm(p)
        norms = np.linalg.norm(np.abs(w[rows]).astype(np.float64), ord=norm_type, axis=1)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        w[rows] = (w[rows] * scale[:, None]).astype(w.dtype)


def bag_ids(n, offsets, include_last_offset):
    """The bag of each of ``n`` indices, from the start ``offsets`` of the bags (int64). Not differentiable."""
    offs = offsets[:-1] if include_last_offset else offsets
    return np.searchsorted(offs, np.arange(n), side="right").astype(np.int64) - 1


def embedding_bag(w, psw, inv_count, indices, bags, nbags, mode, keep, fast=False):
    """Per bag: the sum (weighted by ``psw``), mean or max of the rows ``w[indices]`` kept by ``keep`` (padding left
    out); empty bags give 0. ``inv_count``: 1 / (number of rows kept) per bag, for the mean. ``fast``: no
    padding_idx, where PyTorch's bfloat16 sums are FBGEMM's (rounded to bfloat16 half away from zero)."""
    rows = w[indices[keep]]
    b = bags[keep]
    if w.dtype in _REDUCED and mode != "max":
        # PyTorch's float16/bfloat16 kernel: a float32 buffer (products with the weights in float32), rounded
        # once; the mean divides that rounded sum by the count
        rows = rows.astype(np.float32)
        if psw is not None:
            rows = rows * psw[keep][:, None].astype(np.float32)
        out = np.zeros((nbags, w.shape[1]), dtype=np.float32)
        np.add.at(out, b, rows)
        out = round_half_away(out) if fast and w.dtype is _BF16 else out.astype(w.dtype)
        if mode == "mean":
            count = np.maximum(np.bincount(b, minlength=nbags)[:nbags], 1).astype(np.float32)
            out = (out.astype(np.float32) / count[:, None]).astype(w.dtype)
        return out
    if psw is not None:
        rows = rows * psw[keep][:, None]
    if mode == "max":
        out = np.full((nbags, w.shape[1]), -np.inf, dtype=w.dtype)
        np.maximum.at(out, b, rows)
        return np.where(np.isneginf(out), w.dtype.type(0), out)
    out = np.zeros((nbags, w.shape[1]), dtype=w.dtype)
    np.add.at(out, b, rows)
    return out * inv_count[:, None] if mode == "mean" else out


def embedding_bag_argmax(w, indices, bags, nbags, keep):
    """For mode='max': (bag, column, weight row) of each maximum, the first position in its bag winning ties, as
    PyTorch's max_indices. Not differentiable."""
    n = indices.shape[0]
    rows = w[indices]
    out = np.full((nbags, w.shape[1]), -np.inf, dtype=w.dtype)
    np.maximum.at(out, bags[keep], rows[keep])
    hit = keep[:, None] & (rows == out[bags])
    first = np.full(out.shape, n, dtype=np.int64)
    np.minimum.at(first, bags, np.where(hit, np.arange(n)[:, None], n))
    bag, col = np.nonzero(first < n)
    return bag, col, indices[first[bag, col]]


def embedding_freq_backward(g, inv, indices, padding_idx, num_weights):
    """embedding(scale_grad_by_freq=True)'s weight gradient as PyTorch's CPU kernel makes it: position by
    position, ``grad_weight[k] += inv[i] * g[i]`` as one fused multiply-add in float32/float64
    (float16: product and sum each rounded). Positions of one index are taken in order, one occurrence rank at a
    time, so the loop runs over the largest count, not over positions."""
    d = g.shape[-1]
    g2 = g.reshape(-1, d)
    idx = indices.reshape(-1)
    inv = inv.reshape(-1)
    if padding_idx >= 0:
        keep = idx != padding_idx
        g2, idx, inv = g2[keep], idx[keep], inv[keep]
    out = np.zeros((num_weights, d), dtype=g.dtype)
    if idx.size == 0:
        return out
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    starts = np.flatnonzero(np.r_[True, sidx[1:] != sidx[:-1]])
    rank = np.empty(idx.size, dtype=np.int64)
    rank[order] = np.arange(idx.size) - np.repeat(starts, np.diff(np.r_[starts, idx.size]))
    for r in range(int(rank.max()) + 1):
        sel = rank == r
        k, gi, a = idx[sel], g2[sel], inv[sel][:, None]
        if g.dtype == np.float64:
            out[k] = fma64(a, gi, out[k])
        elif g.dtype == np.float32:   # the product is exact in float64, so one rounding as a fused add
            out[k] = (out[k].astype(np.float64) + a.astype(np.float64) * gi.astype(np.float64)).astype(np.float32)
        else:   # float16: product and sum each rounded to float16 (PyTorch's half kernel is not fused)
            out[k] = out[k] + a.astype(g.dtype) * gi
    return out


def row_ids(x):
    """The row of each element of the 2-d ``x``, flattened (the bags of a 2-d embedding_bag input; int64). Not
    differentiable."""
    return np.repeat(np.arange(x.shape[0], dtype=np.int64), x.shape[1])


def index_count_inverse(idx, n: int, dtype):
    """At each position of ``idx`` (integers in [0, n)), 1 / how often its index occurs in ``idx``, in ``dtype``
    (embedding's scale_grad_by_freq). Not differentiable."""
    counts = np.bincount(idx.ravel(), minlength=n)
    return (1.0 / counts[idx]).astype(dtype)


def bag_count_inverse(bags, keep, nbags: int, dtype):
    """Per bag, 1 / the number of its indices that ``keep`` keeps (1 for an empty bag), in ``dtype`` (embedding_bag's
    mean). Not differentiable."""
    counts = np.bincount(bags[keep], minlength=nbags)[:nbags]
    return (1.0 / np.maximum(counts, 1)).astype(dtype)
