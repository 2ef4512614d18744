"""Reductions and scans: sum, nansum, mean, nanmean, prod, std, var, std_mean, var_mean, norm,
linalg.vector_norm, linalg.matrix_norm, logsumexp, max, min, amax, amin, aminmax, argmax, argmin, cumsum,
cumprod, cummax, cummin, logcumsumexp, diff, all, any, dist, cdist (and sum_to_size).

Rules read the reduced input's shape from the input itself (``a.shape``, saved or not), so the
primitives' parameters are only what the user chose: the dims and keepdim. The derivative formulas are
PyTorch's (tools/autograd/derivatives.yaml, FunctionsManual.cpp), including its conventions at ties, zeros
and NaNs.
"""
from __future__ import annotations

import functools
import math
import warnings

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor, make, wrap_dim
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, apply, apply_saving, batch_rule, broadcast_error, defprim, graph_ns
from ._registry import SUBMODULES, graph, register
from ..autograd import _batching
from . import _batch_public as _bp
from ..autograd._primitive import PRIMITIVES as _PRIMS
from ._schema import method_variant, schema
from .elementwise import _made, div_scalar_p, is_int, is_real, mul_scalar_p
from .._util import check_tensor, dtype_word, normalize_dims, reduced_shape, refuse_shell, return_type, scalar_or_tensor

_INF = math.inf


# ----- helpers shared by the rules ---------------------------------------------------------------

def _unreduce(xp, t, a, dims, keepdim):
    """A reduced result (or gradient) reshaped to keep the reduced dims (size 1), broadcastable against ``a``."""
    return t if keepdim else xp.reshape(t, reduced_shape(a.shape, dims))


def _expand_back(xp, g, a, dims, keepdim):
    # A gradient of the reduced shape broadcast back to the input's shape.
    return xp.expand(_unreduce(xp, g, a, dims, keepdim), a.shape)


def _count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _safe_div(xp, num, den):
    # num / den, and 0 where den == 0 (the gradient of a norm at the origin is taken as 0). The inner where
    # keeps the unused branch finite, so the second derivative has no 0 * inf either.
    return xp.where(den == 0, 0.0, num / xp.where(den == 0, 1.0, den))


def _narrow(xp, a, dim, start, stop):
    return xp.getitem(a, (slice(None),) * dim + (slice(start, stop),))


def _rev_cumsum(xp, g, dim):
    # sum_{j >= k} g_j: the adjoint of cumsum.
    return xp.reverse_dim(xp.cumsum(xp.reverse_dim(g, dim), dim), dim)


# ----- sum, nansum, mean ---------------------------------------------------------------------------

sum_p = defprim("sum", lambda xp, a, dims, keepdim: xp.sum(a, dims, keepdim),
                node="SumBackward1",
                vjp=lambda xp, g, out, a, dims, keepdim: _expand_back(xp, g, a, dims, keepdim), jvp="linear")

mean_p = defprim("mean", lambda xp, a, dims, keepdim: xp.mean(a, dims, keepdim),
                 node="MeanBackward1",
                 vjp=lambda xp, g, out, a, dims, keepdim: _expand_back(xp, g, a, dims, keepdim) / _count(a.shape, dims),
                 jvp="linear")

# nansum: NaNs count as zero, and get a zero gradient.
nansum_p = defprim(
    "nansum", lambda xp, a, dims, keepdim: xp.nansum(a, dims, keepdim),
    vjp=lambda xp, g, out, a, dims, keepdim: xp.where(xp.isnan(a), 0.0, _expand_back(xp, g, a, dims, keepdim)),
    jvp=lambda xp, t, out, a, dims, keepdim: xp.sum(xp.where(xp.isnan(a), 0.0, t), dims, keepdim),
    saves=(0,))


# ----- prod ----------------------------------------------------------------------------------------

def _prod_others(xp, a, dim):
    """prod_{i != k} a_i along ``dim`` for every k, exact with zeros: the exclusive cumulative products from
    the left times those from the right (PyTorch's prod_safe_zeros_backward)."""
    n = a.shape[dim]
    if n == 1:
        return xp.ones_like(a)
    ones = xp.ones_like(_narrow(xp, a, dim, 0, 1))
    left = xp.cumprod(xp.cat([ones, _narrow(xp, a, dim, 0, n - 1)], dim), dim)
    right = xp.reverse_dim(xp.cumprod(xp.cat([ones, xp.reverse_dim(_narrow(xp, a, dim, 1, n), dim)], dim), dim), dim)
    return left * right


def _prod_vjp(xp, g, out, a, dim, keepdim):
    if a.ndim == 0:
        return g
    if dim is None:   # the product of every element: the rule along one flattened dim
        flat = _prod_vjp(xp, xp.reshape(g, (1,)), xp.reshape(out, (1,)), xp.reshape(a, (-1,)), 0, True)
        return xp.reshape(flat, a.shape)
    if not keepdim:
        g, out = xp.unsqueeze(g, dim), xp.unsqueeze(out, dim)
    if not bool(xp.any(a == 0)):
        return g * (out / a)
    return g * _prod_others(xp, a, dim)


def _prod_jvp(xp, t, out, a, dim, keepdim):
    # PyTorch's: (prod_backward(ones, a, out) * t).sum(dim, keepdim)
    if a.ndim == 0:
        return t
    w = _prod_vjp(xp, xp.ones_like(out), out, a, dim, keepdim)
    return xp.sum(w * t, tuple(range(a.ndim)) if dim is None else (dim,), keepdim and dim is not None)


prod_p = defprim("prod", lambda xp, a, dim, keepdim: xp.prod(a, dim, keepdim),
                 node="ProdBackward1", vjp=_prod_vjp, jvp=_prod_jvp, saves=(0,), saves_out=True, complex=True)


# ----- std, var ------------------------------------------------------------------------------------

def _var_grad(xp, g, a, dims, keepdim, correction, every):
    # PyTorch's var_backward: (2 / (N - correction)) * grad * (a - mean(a)). With no dim given (``every``: dim
    # None, or a 0-d input) and N - correction <= 0, PyTorch takes grad * where(a == mean, nan, inf) instead
    # (FunctionsManual.cpp): inf * 0 is nan, inf * c is inf, whatever the sign of a - mean.
    # (With dim=() PyTorch takes N = 1, the size of no dims, while the forward reduces over every dim: a wrong
    # gradient, 2 / (1 - correction) * grad * (a - mean). ember keeps the true derivative, N = numel.)
    dof = _count(a.shape, dims) - correction
    gu = _unreduce(xp, g, a, dims, keepdim)
    if every and dof <= 0:
        return gu * xp.where(a == xp.mean(a, dims, True), math.nan, _INF)
    scale = 2.0 / dof if dof != 0 else _INF
    return (scale * gu) * (a - xp.mean(a, dims, True))


def _std_vjp(xp, g, out, a, dims, keepdim, correction, every):
    # std_backward: var_backward(grad / (2 * std)), with 0 where std == 0 (a constant input)
    return _var_grad(xp, _safe_div(xp, g, 2 * out), a, dims, keepdim, correction, every)


def _var_jvp(xp, t, out, a, dims, keepdim, correction, every):
    return xp.sum(_var_grad(xp, 1.0, a, dims, True, correction, every) * t, dims, keepdim)


def _var_jvp_complex(xp, t, out, a, dims, keepdim, correction, every):
    # var of a complex input is real: the real part of conj(d var / d conj(a)) t (PyTorch's var_jvp)
    w = _var_grad(xp, 1.0, a, dims, True, correction, every)
    return xp.sum(xp.real(xp.conj(w) * t), dims, keepdim)


def _std_jvp(var_jvp):
    def rule(xp, t, out, a, dims, keepdim, correction, every):
        return _safe_div(xp, var_jvp(xp, t, out, a, dims, keepdim, correction, every), 2 * out)
    return rule


def _var_vjp(xp, g, out, a, dims, keepdim, correction, every):
    return _var_grad(xp, g, a, dims, keepdim, correction, every)


# ``every``: no dim was given (or the input is 0-d), which only changes the gradient when N - correction <= 0.
# Complex inputs (real results): the same VJPs, as PyTorch's (grad * (a - mean), no conjugate), real tangents.
std_p = defprim("std",
                lambda xp, a, dims, keepdim, correction, every: xp.std(a, dims, correction, keepdim),
                vjp=_std_vjp, jvp=_std_jvp(_var_jvp), saves=(0,), saves_out=True,
                complex=(_std_vjp, _std_jvp(_var_jvp_complex)))

var_p = defprim("var",
                lambda xp, a, dims, keepdim, correction, every: xp.var(a, dims, correction, keepdim),
                vjp=_var_vjp, jvp=_var_jvp, saves=(0,), complex=(_var_vjp, _var_jvp_complex))


# ----- norms ---------------------------------------------------------------------------------------

def _norm_grad(xp, g, x, ord, norm, dims, split_ties=True, sign=None):
    """PyTorch's norm_backward: d||x||_ord / dx times ``g``; ``g`` and ``norm`` keep the reduced dims.
    ``split_ties=False`` is cdist's inf-norm convention (every maximal entry gets the whole gradient).
    ``sign``: ``xp.sgn`` for a complex ``x`` (PyTorch's formulas with sgn(x) = x / |x|), else ``xp.sign``."""
    if ord == 0:
        return None
    sign = xp.sign if sign is None else sign
    if ord == 1:
        return sign(x) * g
    if ord == 2:
        return g * _safe_div(xp, x, norm)
    if ord in (_INF, -_INF):
        ax = xp.abs(x)
        mask = (ax == norm) | xp.isnan(ax)
        if not split_ties:
            return sign(x) * (g * mask)
        return sign(x) * ((g / xp.sum(mask, dims, True)) * mask)
    if ord < 1:
        scaled = sign(x) * xp.where(x == 0, 0.0, xp.pow(xp.abs(x), ord - 1))
        return scaled * g * xp.pow(norm, 1 - ord)
    if ord < 2:
        return sign(x) * xp.pow(xp.abs(x), ord - 1) * _safe_div(xp, g, xp.pow(norm, ord - 1))
    return x * xp.pow(xp.abs(x), ord - 2) * _safe_div(xp, g, xp.pow(norm, ord - 1))


def _norm_tangent(xp, t, x, ord, norm, dims, keepdim, cx=False):
    """PyTorch's norm_jvp: the tangent of ||x||_ord for the tangent ``t`` of x (``norm`` as returned).
    ``cx``: x is complex, where PyTorch's products u * t are real(u * conj(t)) and sign is sgn."""
    if ord == 0:
        return None
    if cx:
        sign = xp.sgn

        def dot(u, t):
            return xp.real(u * xp.conj(t))
    else:
        sign = xp.sign

        def dot(u, t):
            return u * t
    if ord == 1:
        return xp.sum(dot(sign(x), t), dims, keepdim)
    if ord == 2:
        return _safe_div(xp, xp.sum(dot(x, t), dims, keepdim), norm)
    if ord in (_INF, -_INF):
        nk = _unreduce(xp, norm, x, dims, keepdim)
        mask = (xp.abs(x) == nk) | (xp.isnan(x) & xp.isnan(nk))
        return xp.sum(dot(sign(x), t) * mask / xp.sum(mask, dims, True), dims, keepdim)
    if ord < 1:
        s = xp.sum(xp.where(x == 0, 0.0, xp.pow(xp.abs(x), ord - 1)) * dot(sign(x), t), dims, keepdim)
        return s * xp.pow(norm, 1 - ord)
    if ord < 2:
        s = xp.sum(xp.pow(xp.abs(x), ord - 1) * dot(sign(x), t), dims, keepdim)
    else:
        s = xp.sum(xp.pow(xp.abs(x), ord - 2) * dot(x, t), dims, keepdim)
    return _safe_div(xp, s, xp.pow(norm, ord - 1))


def _vector_norm_vjp(cx):
    def rule(xp, g, out, a, ord, dims, keepdim):
        return _norm_grad(xp, _unreduce(xp, g, a, dims, keepdim), a, ord, _unreduce(xp, out, a, dims, keepdim), dims,
                          sign=xp.sgn if cx else None)
    return rule


def _vector_norm_jvp(cx):
    def rule(xp, t, out, a, ord, dims, keepdim):
        return _norm_tangent(xp, t, a, ord, out, dims, keepdim, cx)
    return rule


# complex inputs (real results): PyTorch's norm_backward / norm_jvp with sgn
norm_p = defprim("vector_norm",
                 lambda xp, a, ord, dims, keepdim: xp.vector_norm(a, ord, dims, keepdim),
                 node="LinalgVectorNormBackward0", vjp=_vector_norm_vjp(False), jvp=_vector_norm_jvp(False),
                 saves=(0,), saves_out=True, complex=(_vector_norm_vjp(True), _vector_norm_jvp(True)))


def _all_dims(x):
    return tuple(range(x.ndim))


def _dist_vjp(sign, cx=False):
    def rule(xp, g, out, a, b, p):
        d = a - b
        r = _norm_grad(xp, g, d, p, out, _all_dims(d), sign=xp.sgn if cx else None)
        return r if r is None or sign > 0 else -r
    return rule


def _dist_jvp(sign, cx=False):
    def rule(xp, t, out, a, b, p):
        d = a - b
        r = _norm_tangent(xp, t if sign > 0 else -t, d, p, out, _all_dims(d), False, cx)
        return r
    return rule


def _dist_forward(xp, a, b, p):
    d = a - b
    return xp.vector_norm(d, p, _all_dims(d))


dist_p = defprim("dist", _dist_forward,
                 vjp=(_dist_vjp(1), _dist_vjp(-1)), jvp=(_dist_jvp(1), _dist_jvp(-1)), saves=(0, 1), saves_out=True,
                 promote="standard",
                 complex=((_dist_vjp(1, True), _dist_vjp(-1, True)), (_dist_jvp(1, True), _dist_jvp(-1, True))))


def _cdist_diff(xp, x1, x2):
    return xp.unsqueeze(x1, -2) - xp.unsqueeze(x2, -3)    # (..., P, R, M)


def _cdist_grads(xp, g, out, x1, x2, p):
    d = _cdist_diff(xp, x1, x2)
    last = (d.ndim - 1,)
    return _norm_grad(xp, xp.unsqueeze(g, -1), d, p, xp.unsqueeze(out, -1), last, split_ties=False)


def _cdist_vjp1(xp, g, out, x1, x2, p):
    G = _cdist_grads(xp, g, out, x1, x2, p)
    return None if G is None else xp.sum(G, -2)


def _cdist_vjp2(xp, g, out, x1, x2, p):
    G = _cdist_grads(xp, g, out, x1, x2, p)
    return None if G is None else -xp.sum(G, -3)


def _cdist_jvp(which):
    def rule(xp, t, out, x1, x2, p):
        d = _cdist_diff(xp, x1, x2)
        td = xp.unsqueeze(t, -2) if which == 0 else -xp.unsqueeze(t, -3)
        return _norm_tangent(xp, td, d, p, out, (d.ndim - 1,), False)
    return rule


def _cdist_forward(xp, x1, x2, p):
    d = _cdist_diff(xp, x1, x2)
    return xp.vector_norm(d, p, (d.ndim - 1,))


cdist_p = defprim("cdist", _cdist_forward,
                  vjp=(_cdist_vjp1, _cdist_vjp2), jvp=(_cdist_jvp(0), _cdist_jvp(1)), saves=(0, 1), saves_out=True,
                  batch=True)


# ----- logsumexp, scans ----------------------------------------------------------------------------

logsumexp_p = defprim(
    "logsumexp", lambda xp, a, dims, keepdim: xp.logsumexp(a, dims, keepdim),
    vjp=lambda xp, g, out, a, dims, keepdim:
        _unreduce(xp, g, a, dims, keepdim) * xp.exp(a - _unreduce(xp, out, a, dims, keepdim)),
    jvp=lambda xp, t, out, a, dims, keepdim:
        xp.sum(t * xp.exp(a - _unreduce(xp, out, a, dims, keepdim)), dims, keepdim),
    saves=(0,), saves_out=True, promote="float", complex=True)

cumsum_p = defprim("cumsum", lambda xp, a, dim: xp.cumsum(a, dim),
                   vjp=lambda xp, g, out, a, dim: _rev_cumsum(xp, g, dim) if a.ndim else g, jvp="linear")


def _cumprod_vjp(xp, g, out, a, dim):
    if a.ndim == 0 or a.shape[dim] <= 1:
        return g
    if not bool(xp.any(a == 0)):
        return _rev_cumsum(xp, out * g, dim) / a
    # A zero in the input (PyTorch's cumprod_backward handles it too): d out_j / d a_k is the product of
    # a_i over i <= j, i != k, for j >= k. All k at once: the cumprod of n copies of the row, copy k with
    # a_k replaced by 1. O(n^2), exact with any number of zeros, and differentiable again.
    row = xp.unsqueeze(xp.transpose(a, dim, -1), -2)              # (..., 1, n)
    gr = xp.unsqueeze(xp.transpose(g, dim, -1), -2)               # (..., 1, n)
    j = xp.cumsum(xp.ones_like(row), -1)                          # 1..n along the last dim
    k = xp.transpose(j, -1, -2)                                   # 1..n along the copies
    excl = xp.cumprod(xp.where(j == k, 1.0, row), -1)             # (..., n, n)
    terms = xp.where(j >= k, gr * excl, 0.0)
    return xp.transpose(xp.sum(terms, -1), -1, dim)


def _cumprod_jvp(xp, t, out, a, dim):
    if a.ndim == 0 or a.shape[dim] <= 1:
        return t
    if not bool(xp.any(a == 0)):
        return xp.cumsum(t / a, dim) * out
    row = xp.unsqueeze(xp.transpose(a, dim, -1), -2)
    tr = xp.transpose(xp.unsqueeze(xp.transpose(t, dim, -1), -2), -1, -2)   # t_k along the copies
    j = xp.cumsum(xp.ones_like(row), -1)
    k = xp.transpose(j, -1, -2)
    excl = xp.cumprod(xp.where(j == k, 1.0, row), -1)
    terms = xp.where(j >= k, tr * excl, 0.0)                      # [k, j]: t_k d out_j / d a_k
    return xp.transpose(xp.sum(terms, -2), -1, dim)


cumprod_p = defprim("cumprod", lambda xp, a, dim: xp.cumprod(a, dim),
                    vjp=_cumprod_vjp, jvp=_cumprod_jvp, saves=(0,), saves_out=True, complex=True)


def _log_parts(xp, g):
    """log(g) where g > 0 and log(-g) where g < 0, else the lowest finite value (not -inf: -inf - -inf would
    make NaNs in the next derivative, which the where() of that derivative then hides)."""
    lowest = -65504.0 if "16" in str(g.dtype) else -3.0e38
    log_abs = xp.log(xp.abs(g))
    return xp.where(g > 0, log_abs, lowest), xp.where(g < 0, log_abs, lowest)


def _logcumsumexp_vjp(xp, g, out, a, dim):
    if a.ndim == 0:
        return g
    # grad_k = sum_{j >= k} g_j exp(a_k - out_j), in TensorFlow's stable form, as PyTorch: the positive and
    # negative parts of g are carried as logarithms through a reversed logcumsumexp.
    pos, neg = _log_parts(xp, g)

    def rev(x):
        return xp.reverse_dim(xp.logcumsumexp(xp.reverse_dim(x, dim), dim), dim)
    return xp.exp(rev(pos - out) + a) - xp.exp(rev(neg - out) + a)


def _logcumsumexp_jvp(xp, t, out, a, dim):
    if a.ndim == 0:
        return t
    # tangent_j = sum_{k <= j} t_k exp(a_k - out_j), stable in the same way (PyTorch's form, cumsum(t * w) /
    # cumsum(w) with w = exp(a - max), is 0/0 where exp underflows).
    pos, neg = _log_parts(xp, t)
    return xp.exp(xp.logcumsumexp(pos + a, dim) - out) - xp.exp(xp.logcumsumexp(neg + a, dim) - out)


def _logcumsumexp_vjp_complex(xp, g, out, a, dim):
    # PyTorch's logcumsumexp_backward for complex values: no split into positive and negative parts needed,
    # conj(exp(a_k) * sum_{j >= k} conj(g_j) exp(-out_j)) through log(conj(g)) and a reversed logcumsumexp
    if a.ndim == 0:
        return g
    rev = xp.reverse_dim(xp.logcumsumexp(xp.reverse_dim(xp.log(xp.conj(g)) - out, dim), dim), dim)
    return xp.conj(xp.exp(rev + a))


def _logcumsumexp_jvp_complex(xp, t, out, a, dim):
    # PyTorch's logcumsumexp_jvp for complex values: cumsum(t * w) / (cumsum(w) + 1e-13), w = exp(a) (no maximum
    # taken out: its max() has no complex version)
    if a.ndim == 0:
        return t
    w = xp.exp(a)
    return xp.cumsum(w * t, dim) / (xp.cumsum(w, dim) + 1e-13)


logcumsumexp_p = defprim("logcumsumexp", lambda xp, a, dim: xp.logcumsumexp(a, dim),
                         vjp=_logcumsumexp_vjp, jvp=_logcumsumexp_jvp, saves=(0,), saves_out=True,
                         complex=(_logcumsumexp_vjp_complex, _logcumsumexp_jvp_complex))

flip_p = defprim("reverse_dim", lambda xp, a, dim: xp.reverse_dim(a, dim),
                 node="FlipBackward0", vjp=lambda xp, g, out, a, dim: xp.reverse_dim(g, dim), jvp="linear")


# ----- selections: max/min along a dim, cummax/cummin ---------------------------------------------

def _evenly_distribute(xp, g, a, out):
    # max()/min() over everything: ties share the gradient evenly; a NaN maximum is every NaN element's.
    mask = xp.isnan(a) if bool(xp.isnan(out)) else a == out
    return g * mask / xp.sum(mask)


max_all_p = defprim("max", lambda xp, a: xp.amax(a),
                    node="MaxBackward1", vjp=lambda xp, g, out, a: _evenly_distribute(xp, g, a, out),
                    jvp=lambda xp, t, out, a: xp.sum(_evenly_distribute(xp, t, a, out)),
                    saves=(0,), saves_out=True)
min_all_p = defprim("min", lambda xp, a: xp.amin(a),
                    node="MinBackward1", vjp=max_all_p.vjps, jvp=max_all_p.jvps, saves=(0,), saves_out=True)


def _even_share(xp, g, a, out, dims, keepdim):
    # amax/amin: ties share the gradient evenly, as in PyTorch (a NaN maximum gives NaN gradients, as there).
    # (g * mask first: on Tensors a bool mask divided by its count would be float32, whatever g is.)
    g, out = _unreduce(xp, g, a, dims, keepdim), _unreduce(xp, out, a, dims, keepdim)
    mask = a == out
    return g * mask / xp.sum(mask, dims, True)


def _even_share_jvp(xp, t, out, a, dims, keepdim):
    mask = a == _unreduce(xp, out, a, dims, keepdim)
    return xp.sum(t * mask, dims, keepdim) / xp.sum(mask, dims, keepdim)


def _amax_prim(name, node_name, forward):
    return defprim(name, forward,
                   node=node_name, vjp=lambda xp, g, out, a, dims, keepdim: _even_share(xp, g, a, out, dims, keepdim),
                   jvp=_even_share_jvp, saves=(0,), saves_out=True)


amax_p = _amax_prim("amax", "AmaxBackward0", lambda xp, a, dims, keepdim: xp.amax(a, dims, keepdim))
amin_p = _amax_prim("amin", "AminBackward0", lambda xp, a, dims, keepdim: xp.amin(a, dims, keepdim))

put_along_dim_zeros_p = defprim(
    "put_along_dim_zeros",
    lambda xp, g, indices, dim, shape: xp.put_along_dim_zeros(g, indices, dim, shape),
    node="ScatterBackward0",
    vjp=lambda xp, g, out, a, indices, dim, shape: xp.take_along_dim(g, indices, dim), jvp="linear")


def _select_along(xp, a, indices, dim, keepdim):
    r = xp.take_along_dim(a, indices, dim)
    return r if keepdim else xp.squeeze(r, dim)


# values of max(dim)/min(dim): gathered at the arg-extremum indices, scattered back in backward.
select_along_p = defprim(
    "max", _select_along,
    vjp=lambda xp, g, out, a, indices, dim, keepdim:
        xp.put_along_dim_zeros(g if keepdim else xp.unsqueeze(g, dim), indices, dim, a.shape),
    jvp="linear")

# cummax/cummin values: the input gathered at the running arg-extremum (indices repeat, so backward adds).
gather_p = defprim("gather", lambda xp, a, indices, dim: xp.gather_dim(a, indices, dim),
                   vjp=lambda xp, g, out, a, indices, dim: xp.scatter_add_zeros(g, indices, dim, a.shape),
                   jvp="linear")
scatter_add_zeros_p = defprim(
    "scatter_add",
    lambda xp, g, indices, dim, shape: xp.scatter_add_zeros(g, indices, dim, shape),
    vjp=lambda xp, g, out, a, indices, dim, shape: xp.gather_dim(g, indices, dim), jvp="linear")

# (take_along_dim is gather_dim: the backward of max(dim)'s backward)
graph("take_along_dim", lambda x, indices, dim: apply(gather_p, (x,), {"indices": indices, "dim": dim}))
graph("put_along_dim_zeros", lambda g, indices, dim, shape: apply(
    put_along_dim_zeros_p, (g,), {"indices": indices, "dim": dim, "shape": shape}))
graph("gather_dim", lambda x, indices, dim: apply(gather_p, (x,), {"indices": indices, "dim": dim}))
graph("scatter_add_zeros", lambda g, indices, dim, shape: apply(
    scatter_add_zeros_p, (g,), {"indices": indices, "dim": dim, "shape": shape}))
graph("reverse_dim", lambda x, dim: apply(flip_p, (x,), {"dim": dim}))


# ----- argument checking ---------------------------------------------------------------------------

def _np_aliases(fn):
    """PyTorch's NumPy-style keyword aliases: ``axis=`` for ``dim=``, ``keepdims=`` for ``keepdim=``."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
            if alias in kwargs:
                if name in kwargs or (name == "dim" and len(args) > 1):
                    raise TypeError(f"{fn.__name__}() got multiple values for argument '{name}'")
                kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    m = getattr(fn, "_ember_method", None)    # a schema's checks numbered for Tensor methods: wrapped too
    return method_variant(wrapper, _np_aliases(m)) if m is not None and m._ember_function is fn else wrapper


def _reduce_args(input, dim, keepdim, op, check_dtype=None):
    """The dims to reduce, normalized (the callers' schemas checked the types). ``check_dtype()`` (ops that
    refuse some dtypes: mean, std, var, norms) runs before an out-of-range dim is reported, as PyTorch checks
    the dtype first (after the dims' type)."""
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None   # PyTorch: an empty dim list reduces over every dim
    if check_dtype is None:
        return normalize_dims(dim, input._data.ndim, op)
    try:
        return normalize_dims(dim, input._data.ndim, op)
    except IndexError:
        check_dtype()
        raise


_NO_DIM = object()   # the default dim of max/min/prod: a dim of None given explicitly is PyTorch's TypeError


def _cast(input, dtype):
    from .shape import to_dtype
    return input if dtype is None else to_dtype(input, dtype)


def _refuse_complex(input, kernel):
    """PyTorch's NotImplementedError for a kernel not compiled for complex dtypes."""
    if input._data.dtype.kind == "c":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_word(input._data.dtype)}'")


def _is_float(x) -> bool:
    """A floating point or complex tensor (what PyTorch's 'floating point or complex' checks accept)."""
    return x.dtype.is_floating_point or x.dtype.is_complex


def _need_float(input, op, msg=None):
    if not _is_float(input):
        raise RuntimeError(msg or f"{op}(): expected input to have floating point or complex dtype but got "
                                  f"{dtype_word(input._data.dtype)}")


_INT64 = D.int64.np


def _integral_to_int64(input):
    """Sums and products of integral and bool tensors are int64 (PyTorch's promotion for reductions)."""
    return _INT64 if input._data.dtype.kind in "iub" and input._data.dtype != _INT64 else None


# ----- public functions: sum, nansum, mean, nanmean, prod -------------------------------------------

_SUM0 = node_class("SumBackward0", PrimNode)
_MEAN0 = node_class("MeanBackward0", PrimNode)
_PROD0 = node_class("ProdBackward0", PrimNode)
_MAX0 = node_class("MaxBackward0", PrimNode)
_MIN0 = node_class("MinBackward0", PrimNode)
_CUMMIN = node_class("CumminBackward0", PrimNode)
_CUMMAX = node_class("CummaxBackward0", PrimNode)
_STD_MEAN = node_class("StdMeanBackward0", PrimNode)
_VAR_MEAN = node_class("VarMeanBackward0", PrimNode)
_AMINMAX = node_class("AminmaxBackward0", PrimNode)


@register(method=True)
@_np_aliases
@schema("sum(Tensor input, int[1]? dim, bool keepdim, *, ScalarType? dtype)")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over ``dim`` (all dims by default); integral and bool inputs sum to int64."""
    dims = _reduce_args(input, dim, keepdim, "sum")
    input = _cast(input, dtype)
    node = sum_p.node_cls if dim is not None else _SUM0
    return apply(sum_p, (input,), {"dims": dims, "keepdim": keepdim}, node, dtype=_integral_to_int64(input))


def _nansum_complex(input, dtype):
    if input._data.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None and dtype.is_complex:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{dtype_word(dtype.np)}'")


@register(method=True, graph=True)
@_np_aliases
@schema("nansum(Tensor input, int[1]? dim, bool keepdim, *, ScalarType? dtype)")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over ``dim`` with NaNs counted as zero."""
    dims = _reduce_args(input, dim, keepdim, "nansum")
    _nansum_complex(input, dtype)
    input = _cast(input, dtype)
    return apply(nansum_p, (input,), {"dims": dims, "keepdim": keepdim}, dtype=_integral_to_int64(input))


@register(method=True)
@_np_aliases
@schema("mean(Tensor input, int[1]? dim, bool keepdim, *, ScalarType? dtype)")
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over ``dim`` (all dims by default); the input must be floating (or ``dtype`` given)."""
    def check():
        if not _is_float(input if dtype is None else _Dt(dtype)):
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point "
                               f"or complex dtype. Got: {dtype_word((input.dtype if dtype is None else dtype).np)}")
    dims = _reduce_args(input, dim, keepdim, "mean", check)
    check()
    input = _cast(input, dtype)
    node = mean_p.node_cls if dim is not None else _MEAN0
    return apply(mean_p, (input,), {"dims": dims, "keepdim": keepdim}, node)


@register(method=True)
@_np_aliases
@schema("nanmean(Tensor input, int[1]? dim, bool keepdim, *, ScalarType? dtype)")
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over ``dim`` of the non-NaN elements (PyTorch's composite: nansum / count, so DivBackward0)."""
    if input._data.dtype.kind == "c":
        _nansum_complex(input, dtype)
    _need_float(_cast(input, dtype), "nanmean")
    total = nansum(input, dim, keepdim, dtype=dtype)
    count = sum(input == input, dim, keepdim)
    return total / count


@register(method=True, graph=True)
@_np_aliases
@schema("prod(Tensor input, int dim, bool keepdim, *, ScalarType? dtype)")
def prod(input: Tensor, dim=_NO_DIM, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product over one ``dim`` (all elements by default); exact gradients with zeros, as PyTorch's."""
    dim = None if dim is _NO_DIM else dim
    node = prod_p.node_cls if dim is not None else _PROD0
    if dim is not None:   # a 0-d input has no dim to reduce (0 and -1 name it)
        dim = wrap_dim(dim, input._data.ndim, "prod")
        dim = dim if input._data.ndim else None
    input = _cast(input, dtype)
    return apply(prod_p, (input,), {"dim": dim, "keepdim": keepdim and dim is not None}, node,
                 dtype=_integral_to_int64(input))


# ----- std, var, std_mean, var_mean ---------------------------------------------------------------

def _std_args(input, dim, unbiased, keepdim, correction, op):
    if isinstance(dim, bool):   # std(x, False): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    if unbiased is not None:
        unbiased = bool(unbiased)   # numpy.bool_ too (the schema's bool)
    if correction is not None:
        if unbiased is not None:
            raise RuntimeError(f"{op}: Cannot pass both correction and unbiased arguments")
        correction = scalar_or_tensor(correction, op, "correction")
        if isinstance(correction, Tensor) or isinstance(correction, bool):
            raise TypeError(f"{op}(): argument 'correction' must be Number, not {type(correction).__name__}")
    def check():
        if not _is_float(input):
            raise RuntimeError(f"{op if op.endswith('_mean') else 'std and var'} only support floating point and "
                               "complex dtypes")
    every = dim is None or input._data.ndim == 0   # PyTorch's var_backward: "no dim" (not dim=())
    dims = _reduce_args(input, dim, keepdim, op, check)
    check()
    if correction is None:
        correction = 0 if unbiased is False else 1
    if _count(input._data.shape, dims) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return {"dims": dims, "keepdim": keepdim, "correction": correction, "every": every}


@register(method=True)
@_np_aliases
@schema("std(Tensor input, dim, bool? unbiased, bool keepdim, *, correction)")   # dim: the legacy unbiased too
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Standard deviation over ``dim``; ``correction`` (default 1) or the legacy ``unbiased``."""
    return apply(std_p, (input,), _std_args(input, dim, unbiased, keepdim, correction, "std"))


@register(method=True)
@_np_aliases
@schema("var(Tensor input, dim, bool? unbiased, bool keepdim, *, correction)")   # dim: the legacy unbiased too
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Variance over ``dim``; ``correction`` (default 1) or the legacy ``unbiased``."""
    return apply(var_p, (input,), _std_args(input, dim, unbiased, keepdim, correction, "var"))


@register
@_np_aliases
@schema("std_mean(Tensor input, dim, bool? unbiased, bool keepdim, *, correction)")   # dim: the legacy unbiased too
def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> tuple:
    """``(std, mean)`` over ``dim``."""
    params = _std_args(input, dim, unbiased, keepdim, correction, "std_mean")
    mp = {"dims": params["dims"], "keepdim": keepdim}
    return apply(std_p, (input,), params, _STD_MEAN), apply(mean_p, (input,), mp, _STD_MEAN)


@register
@_np_aliases
@schema("var_mean(Tensor input, dim, bool? unbiased, bool keepdim, *, correction)")   # dim: the legacy unbiased too
def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> tuple:
    """``(var, mean)`` over ``dim``."""
    params = _std_args(input, dim, unbiased, keepdim, correction, "var_mean")
    mp = {"dims": params["dims"], "keepdim": keepdim}
    return apply(var_p, (input,), params, _VAR_MEAN), apply(mean_p, (input,), mp, _VAR_MEAN)


graph("std", lambda x, dim, correction, keepdim=False: std(x, dim, correction=correction, keepdim=keepdim))
graph("var", lambda x, dim, correction, keepdim=False: var(x, dim, correction=correction, keepdim=keepdim))


# ----- norms ---------------------------------------------------------------------------------------

def _check_ord(ord, op="linalg_vector_norm"):
    if not is_real(ord):
        raise TypeError(f"{op}(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    return float(ord)


@register(name="vector_norm", module=False, submodule="linalg", graph=True)
@schema("linalg_vector_norm(Tensor x, ord, int[1]? dim, bool keepdim, *, ScalarType? dtype)")   # ord: no bool
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default): 0, 1, 2, inf, -inf or any float."""
    ord = _check_ord(ord)
    word = dtype_word(x._data.dtype)

    def check():
        if not _is_float(x):
            raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {word}")
    dims = _reduce_args(x, dim, keepdim, "linalg.vector_norm", check)
    check()
    if dtype is not None:
        _norm_dtype_kind(x, dtype, "linalg.vector_norm")
        if not _is_float(_Dt(dtype)) or D.promote_types(x.dtype, dtype) != dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({word}) should be convertible without "
                               f"narrowing to the specified dtype ({dtype_word(dtype.np)})")
        x = _cast(x, dtype)
    if ord < 0 or ord == _INF:
        shape = x._data.shape
        name = "inf" if ord == _INF else "-inf" if ord == -_INF else f"{ord:g}"
        if dim is None and x._data.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because the "
                               "operation does not have an identity")
        for d in dims:
            if shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {d}because "
                                   "this dimension is empty and the operation does not have an identity")
    ord = int(ord) if abs(ord) < _INF and ord == int(ord) else ord
    return apply(norm_p, (x,), {"ord": ord, "dims": dims, "keepdim": keepdim})


class _Dt:
    """A dtype standing in for a tensor in ``_is_float``."""

    def __init__(self, dtype):
        self.dtype = dtype


def _norm_dtype_kind(x, dtype, op):
    """PyTorch: a norm's ``dtype`` is complex for complex inputs, real for real ones."""
    if dtype.is_complex != x.dtype.is_complex:
        kind = "complex" if x.dtype.is_complex else "real"
        raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got {dtype_word(dtype.np)}")


def _svdvals(A):
    fn = SUBMODULES["linalg"].get("svdvals")
    if fn is None:
        raise NotImplementedError("ember: matrix norms 'nuc', 2 and -2 need linalg.svdvals, which ember does not "
                                  "have yet")
    return fn(A)


@register(name="matrix_norm", module=False, submodule="linalg")
@schema("linalg_matrix_norm(Tensor A, ord, dim, bool keepdim, *, ScalarType? dtype)")
def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """The matrix norm of ``A`` over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    op = "linalg.matrix_norm"
    if not (is_real(ord) or isinstance(ord, str)):   # a Scalar or str (PyTorch's two overloads)
        raise TypeError(f"linalg_matrix_norm(): argument 'ord' must be Number or str, not {type(ord).__name__}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not _is_float(A):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{dtype_word(A._data.dtype)}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dim)) if isinstance(dim, (tuple, list)) else dim}")
    d0, d1 = (wrap_dim(d, A._data.ndim, op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        _norm_dtype_kind(A, dtype, op)
    A = _cast(A, dtype)
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim)
        if ord != "nuc":
            raise RuntimeError(f"{op}: Order {ord} not supported.")
    elif isinstance(ord, bool) or not isinstance(ord, (int, float)) or ord not in (1, -1, 2, -2, _INF, -_INF):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        if A._data.dtype.itemsize < 4:   # PyTorch checks before its SVD (which autocast would run in float32)
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {dtype_word(A._data.dtype)}")
        # the singular values of the matrices moved to the last two dims
        from .shape import permute, unsqueeze
        perm = [i for i in range(A._data.ndim) if i not in (d0, d1)] + [d0, d1]
        s = _svdvals(permute(A, perm))
        if s._data.shape[-1] == 0 and ord != "nuc":
            if ord == -2:   # PyTorch's amin over the singular values' dim, named as it calls it
                raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
            r = _empty_max(s, -1)
        else:
            r = sum(s, -1) if ord == "nuc" else amax(s, -1) if ord == 2 else amin(s, -1)
        if keepdim:   # as PyTorch: two trailing size-1 dims, permuted back into place
            r = permute(unsqueeze(unsqueeze(r, -1), -1), [perm.index(i) for i in range(A._data.ndim)])
        return r
    # 1 / -1: the max / min over columns of the column sums; inf / -inf: the same over rows
    inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
    if not keepdim and inner < outer:
        outer -= 1
    s = vector_norm(A, 1, inner, keepdim)
    if s._data.shape[outer] == 0 and ord > 0:
        return _empty_max(s, outer, keepdim)
    return (amax if ord > 0 else amin)(s, outer, keepdim)


def _empty_max(s: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    """matrix_norm's max over an empty dim of non-negative values: PyTorch's kernel gives zeros (its identity)
    that do not require grad."""
    shape = list(s._data.shape)
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    return make(NAMESPACES[type(s._data)].backend.zeros(tuple(shape), s._data.dtype))


@register(method=True)
@schema("norm(Tensor input, p, dim, keepdim, dtype)")   # the rest: checked by the norm it calls
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: a vector norm (p a number, or 'fro' over at most two dims) or the nuclear norm."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        dim = (dim,)
    if p is None:
        p = "fro"
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc" or p == "fro":
            if dim is None:
                dim = tuple(range(input._data.ndim))
            return matrix_norm(input, p, dim, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


@register(method=True)
@schema("dist(Tensor input, Tensor other, p)")   # p: a Scalar, but no bool
def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast)."""
    if not is_real(p):
        raise TypeError(f"dist(): argument 'p' (position 3) must be Number, not {type(p).__name__}")
    for x in (input, other):
        if not _is_float(x):
            raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                               f"{dtype_word(x._data.dtype)} instead.")
    p = float(p)
    return apply(dist_p, (input, other), {"p": int(p) if abs(p) < _INF and p == int(p) else p})


@register
@schema("cdist(Tensor x1, Tensor x2, float p, compute_mode)")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` (..., P, M) and of ``x2`` (..., R, M)."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x._data.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x._data.ndim}D")
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {dtype_word(x._data.dtype)}")
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1._data.shape[-1]} "
                           f"X2: {x2._data.shape[-1]}")
    if x1._data.dtype != x2._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_word(x1._data.dtype)} but found "
                           f"{dtype_word(x2._data.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    b1, b2 = x1._data.shape[:-2], x2._data.shape[:-2]
    err = broadcast_error((b1, b2))
    if err is not None:
        raise err
    p = float(p)
    if x1._data.dtype is D.bfloat16.np:
        # PyTorch's cdist kernel has no bfloat16; it is reached after the shape checks, and not at all for an
        # empty result, no columns, or p=2 by matrix products (more than 25 rows unless compute_mode says)
        r1, r2 = x1._data.shape[-2], x2._data.shape[-2]
        mode = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1}.get(compute_mode, 2)
        by_mm = p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
        if not (r1 == 0 or r2 == 0 or 0 in b1 + b2 or x1._data.shape[-1] == 0 or by_mm):
            raise NotImplementedError("\"cdist\" not implemented for 'BFloat16'")
    return apply(cdist_p, (x1, x2), {"p": int(p) if p < _INF and p == int(p) else p})


# ----- logsumexp, max/min, amax/amin, aminmax, argmax/argmin -----------------------------------------

@register(method=True, graph=True)
@_np_aliases
@schema("logsumexp(Tensor input, int[1] dim, bool keepdim)")
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input))) over ``dim``, computed stably; integral inputs give the default float dtype."""
    dims = _reduce_args(input, dim, keepdim, "logsumexp")
    shape = input._data.shape
    if isinstance(dim, (list, tuple)) and not dim and not keepdim and shape and input._data.size:
        # PyTorch 2.13 reduces dim=() over every dim into a 0-d output, then fails to fit it to the keepdim shape
        raise RuntimeError(f"logsumexp(): output with shape [] doesn't match the broadcast shape "
                           f"[{', '.join('1' * len(shape))}]")
    return apply(logsumexp_p, (input,), {"dims": dims, "keepdim": keepdim})


_return_type = return_type


MaxResult = _return_type("max")
MinResult = _return_type("min")
CummaxResult = _return_type("cummax")
CumminResult = _return_type("cummin")
AminmaxResult = _return_type("aminmax", ("min", "max"))


def _extremum(input, dim, keepdim, other, op):
    from .elementwise import maximum, minimum
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' must be int, not NoneType")
    dim = None if dim is _NO_DIM else dim
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        return (maximum if op == "max" else minimum)(input, other)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               f"Specify the reduction dim with the 'dim' argument.")
        _refuse_complex(input, f"{op}_all")
        return apply(max_all_p if op == "max" else min_all_p, (input,))
    if not is_int(dim):   # an int, or a Tensor (the other= overload): not declared in the schema
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{op}(): does not support complex input")
    if not input._data.ndim:   # a 0-d input is gathered as shape (1,), its result is 0-d with or without keepdim
        from .shape import reshape
        input, keepdim = reshape(input, 1), False
    xp = NAMESPACES[type(input._data)]
    idx = (xp.argmax if op == "max" else xp.argmin)(input._data, d, True)
    node = _MAX0 if op == "max" else _MIN0
    # the node saves the indices returned (as PyTorch's): a change to them in place is an error at backward
    indices = make(idx if keepdim else xp.squeeze(idx, d))
    values = apply_saving(select_along_p, (input,), {"indices": idx, "dim": d, "keepdim": keepdim}, node, (indices,))
    return (MaxResult if op == "max" else MinResult)(values, indices)


@register(method=True)
@_np_aliases
@schema("max(Tensor input, dim, bool keepdim, *, other)")   # dim: an int, or the other tensor
def max(input: Tensor, dim=_NO_DIM, keepdim: bool = False, *, other=None):
    """The maximum of all elements, or ``(values, indices)`` along ``dim``, or ``maximum(input, other)``."""
    return _extremum(input, dim, keepdim, other, "max")


@register(method=True)
@_np_aliases
@schema("min(Tensor input, dim, bool keepdim, *, other)")   # dim: an int, or the other tensor
def min(input: Tensor, dim=_NO_DIM, keepdim: bool = False, *, other=None):
    """The minimum of all elements, or ``(values, indices)`` along ``dim``, or ``minimum(input, other)``."""
    return _extremum(input, dim, keepdim, other, "min")


def _amax(prim, op, input, dim, keepdim, node=None):
    every = dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)
    dims = _reduce_args(input, None if every else dim, keepdim, op)
    shape = input._data.shape
    if input._data.size == 0:
        if every:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        for d in dims:
            if shape[d] == 0:
                raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    _refuse_complex(input, f"{op[1:]}_values_cpu")
    return apply(prim, (input,), {"dims": dims, "keepdim": keepdim}, node)


@register(method=True)
@_np_aliases
@schema("amax(Tensor input, int[1]? dim, bool keepdim)")
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Maximum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax(amax_p, "amax", input, dim, keepdim)


@register(method=True)
@_np_aliases
@schema("amin(Tensor input, int[1]? dim, bool keepdim)")
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Minimum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax(amin_p, "amin", input, dim, keepdim)


graph("amax", lambda x, dim=None, keepdim=False: amax(x, () if dim is None else dim, keepdim))
graph("amin", lambda x, dim=None, keepdim=False: amin(x, () if dim is None else dim, keepdim))


@register(method=True)
@schema("aminmax(Tensor input, *, int? dim, bool keepdim)")
def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``(min, max)`` over ``dim`` (an int; all elements by default); ties share the gradient evenly."""
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        dims = tuple(range(input._data.ndim))
    else:
        d = wrap_dim(dim, input._data.ndim, "aminmax")
        if input._data.ndim and input._data.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        dims = (d,) if input._data.ndim else ()
    _refuse_complex(input, "aminmax_cpu")
    params = {"dims": dims, "keepdim": keepdim}
    return AminmaxResult(apply(amin_p, (input,), params, _AMINMAX), apply(amax_p, (input,), params, _AMINMAX))


def _arg(input, dim, keepdim, op):
    refuse_shell(input, op + "_cpu")
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{op}(): does not support complex input")
    if input._data.dtype.kind == "b":
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if input._data.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
    xp = NAMESPACES[type(input._data)]
    kernel = getattr(xp, op)
    if dim is None:
        if input._data.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        return _made(kernel(input._data, None, keepdim))
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if not input._data.ndim:
        return make(NAMESPACES[type(input._data)].backend.zeros((), dtype=_INT64))
    return _made(kernel(input._data, d, keepdim))


@register(method=True, graph=True)
@_np_aliases
@schema("argmax(Tensor input, int? dim, bool keepdim)")
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the maximum (of the flattened input by default); the first one on ties."""
    return _arg(input, dim, keepdim, "argmax")


@register(method=True, graph=True)
@_np_aliases
@schema("argmin(Tensor input, int? dim, bool keepdim)")
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the minimum (of the flattened input by default); the first one on ties."""
    return _arg(input, dim, keepdim, "argmin")


# ----- scans: cumsum, cumprod, cummax, cummin, logcumsumexp, diff ------------------------------------

@register(method=True, graph=True)
@_np_aliases
@schema("cumsum(Tensor input, int dim, *, ScalarType? dtype)")
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative sum along ``dim``; integral and bool inputs give int64."""
    d = wrap_dim(dim, input._data.ndim, "cumsum")
    input = _cast(input, dtype)
    return apply(cumsum_p, (input,), {"dim": d}, dtype=_integral_to_int64(input))


@register(method=True, graph=True)
@_np_aliases
@schema("cumprod(Tensor input, int dim, *, ScalarType? dtype)")
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim``; exact gradients with zeros, as PyTorch's."""
    d = wrap_dim(dim, input._data.ndim, "cumprod")
    input = _cast(input, dtype)
    return apply(cumprod_p, (input,), {"dim": d}, dtype=_integral_to_int64(input))


def _cum_inplace(prim, op):
    def fn(self: Tensor, dim: int, *, dtype=None) -> Tensor:
        from ..autograd._views import apply_inplace
        d = wrap_dim(dim, self._data.ndim, op)
        if dtype is not None and dtype is not self.dtype:
            raise RuntimeError(f"{op}: dtype {dtype} does not match the tensor's dtype {self.dtype}")
        return apply_inplace(prim, self, (), {"dim": d})
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"In-place {op[:-1]} along ``dim``."
    return schema(f"{op}(Tensor input, int dim, *, ScalarType? dtype)")(fn)


register(_cum_inplace(cumsum_p, "cumsum_"), name="cumsum_", module=False, method=True)
register(_cum_inplace(cumprod_p, "cumprod_"), name="cumprod_", module=False, method=True)


def _cum_extremum(input, dim, op, largest, result, node):
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.ndim and input._data.size:   # PyTorch's kernel is not reached for 0-d or empty inputs
        _refuse_complex(input, f"{op}_cpu")
    idx = NAMESPACES[type(input._data)].cum_extremum_indices(input._data, d, largest)
    indices = make(idx)
    values = apply_saving(gather_p, (input,), {"indices": idx, "dim": d}, node, (indices,))
    return result(values, indices)


@register(method=True)
@_np_aliases
@schema("cummax(Tensor input, int dim)")
def cummax(input: Tensor, dim: int):
    """``(values, indices)`` of the running maximum along ``dim`` (an equal value moves the index on)."""
    return _cum_extremum(input, dim, "cummax", True, CummaxResult, _CUMMAX)


@register(method=True)
@_np_aliases
@schema("cummin(Tensor input, int dim)")
def cummin(input: Tensor, dim: int):
    """``(values, indices)`` of the running minimum along ``dim`` (an equal value moves the index on)."""
    return _cum_extremum(input, dim, "cummin", False, CumminResult, _CUMMIN)


# not differentiable: graph_ns's twin of the kernel is the indices of the public op
graph("cum_extremum_indices", lambda x, dim, largest: (cummax if largest else cummin)(x, dim)[1])


@register(method=True, graph=True)
@_np_aliases
@schema("logcumsumexp(Tensor input, int dim)")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, computed stably."""
    d = wrap_dim(dim, input._data.ndim, "logcumsumexp")
    if not _is_float(input):
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{dtype_word(input._data.dtype)}'")
    return apply(logcumsumexp_p, (input,), {"dim": d})


@register(method=True)
@schema("diff(Tensor input, int n, int dim, Tensor? prepend, Tensor? append)")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (after concatenating ``prepend`` and ``append``)."""
    from .shape import cat
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input._data.ndim, "diff")
    parts = []
    for name, t in (("prepend", prepend), (None, input), ("append", append)):
        if t is None:
            continue
        if name is not None:
            if t._data.ndim != input._data.ndim:
                raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        parts.append(t)
    x = parts[0] if len(parts) == 1 else cat(parts, d)
    for _ in range(n):
        size = x._data.shape[d]
        if size == 0:
            break
        hi = x[(slice(None),) * d + (slice(1, None),)]
        lo = x[(slice(None),) * d + (slice(None, size - 1),)]
        x = (hi ^ lo) if x._data.dtype.kind == "b" else hi - lo
    return x



def _sl(x: Tensor, d: int, start=None, stop=None) -> Tensor:
    return x[(slice(None),) * d + (slice(start, stop),)]


@register()
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Central differences of ``input`` along each of ``dim`` (default: every dimension), one-sided ones of order
    ``edge_order`` at the ends; ``spacing`` a number, one per dimension, or coordinate tensors. PyTorch's formulas
    (ReduceOps.cpp) term for term."""
    from .shape import cat
    check_tensor(input, "gradient")
    ndim = input._data.ndim
    dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if isinstance(spacing, (list, tuple)):
        spacing = list(spacing)
        if dim is None and len(spacing) != ndim:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {ndim}', since dim argument was not given, but got a list of "
                               f"length {len(spacing)}")
        if dim is not None and len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
    else:
        spacing = [spacing] * len(dims)
    if input._data.dtype == D.uint8.np:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = normalize_dims(dims, ndim, "gradient")
    for d in (dims if dim is not None else range(ndim)):
        if input._data.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    out = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor):   # coordinates: non-uniform spacing
            if h._data.ndim != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but "
                                   f"got an element with {h._data.ndim} dimensions!")
            shape = [1] * ndim
            shape[d] = -1
            dx = h.diff(1, 0)
            dx1, dx2 = dx[:-1], dx[1:]
            a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            center = a * _sl(input, d, 0, -2) + b * _sl(input, d, 1, -1) + c * _sl(input, d, 2)
            if edge_order == 1:
                prepend = (_sl(input, d, 1, 2) - _sl(input, d, 0, 1)) / dx[0]
                append = (_sl(input, d, -1) - _sl(input, d, -2, -1)) / dx[-1]
            else:
                a = -(2.0 * dx[0] + dx[1]) / (dx[0] * (dx[0] + dx[1]))
                b = (dx[0] + dx[1]) / (dx[0] * dx[1])
                c = (-dx[0]) / (dx[1] * (dx[0] + dx[1]))
                prepend = a * _sl(input, d, 0, 1) + b * _sl(input, d, 1, 2) + c * _sl(input, d, 2, 3)
                a = dx[-1] / (dx[-2] * (dx[-1] + dx[-2]))
                b = -(dx[-1] + dx[-2]) / (dx[-1] * dx[-2])
                c = (2 * dx[-1] + dx[-2]) / (dx[-1] * (dx[-1] + dx[-2]))
                append = a * _sl(input, d, -3, -2) + b * _sl(input, d, -2, -1) + c * _sl(input, d, -1)
        else:   # Tensor-Scalar products and quotients, as ATen's C++ writes them (MulBackward1, DivBackward1)
            def div(t, s):
                return apply(div_scalar_p, (t, s))

            def mul(s, t):
                return apply(mul_scalar_p, (t, s))
            center = div(div(_sl(input, d, 2) - _sl(input, d, 0, -2), h), 2)
            if edge_order == 1:
                prepend = div(_sl(input, d, 1, 2) - _sl(input, d, 0, 1), h)
                append = div(_sl(input, d, -1) - _sl(input, d, -2, -1), h)
            else:
                prepend = div(mul(-1.5, _sl(input, d, 0, 1)) + mul(2, _sl(input, d, 1, 2))
                              - mul(0.5, _sl(input, d, 2, 3)), h)
                append = div(mul(0.5, _sl(input, d, -3, -2)) - mul(2, _sl(input, d, -2, -1))
                             + mul(1.5, _sl(input, d, -1)), h)
        out.append(cat((prepend, center, append), d))
    return tuple(out)


# ----- all, any ------------------------------------------------------------------------------------

def _logical_reduce(input, dim, keepdim, op):
    if isinstance(dim, (list, tuple)) and not dim:   # PyTorch: all/any over no dims (x != 0), unlike sum
        dims = ()
    else:
        dims = _reduce_args(input, dim, keepdim, op)
    xp = NAMESPACES[type(input._data)]
    r = getattr(xp, op)(input._data, dims, keepdim)
    if input._data.dtype == D.uint8.np:
        r = xp.cast(r, D.uint8.np)
    return _made(r)


@register(name="any", method=True, graph="any")
@_np_aliases
@schema("any(Tensor input, int[1]? dim, bool keepdim)")
def any_(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element over ``dim`` is nonzero (bool; uint8 for a uint8 input)."""
    return _logical_reduce(input, dim, keepdim, "any")


@register(name="all", method=True, graph="all")
@_np_aliases
@schema("all(Tensor input, int[1]? dim, bool keepdim)")
def all_(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element over ``dim`` is nonzero (bool; uint8 for a uint8 input)."""
    return _logical_reduce(input, dim, keepdim, "all")


# ----- sum_to_size ---------------------------------------------------------------------------------

@register(module=False, method=True)
def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum ``input`` down to ``size`` (which must expand to the input's shape)."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    have = input._data.shape
    lead = len(have) - len(shape)
    if lead < 0 or not all(s == 1 or s == h for s, h in zip(shape, have[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    if not shape:
        return sum(input)
    if shape == have:
        return input
    # PyTorch's at::sum_to: a keepdim sum (int64 for integral inputs), viewed without the leading dims
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and have[lead + i] != 1)
    r = sum(input, dims, True) if dims else input
    return r.view(shape) if lead else r


graph("sum", lambda x, dim=None, keepdim=False: sum(x, dim, keepdim))
graph("mean", lambda x, dim=None, keepdim=False: mean(x, dim, keepdim))
graph("sum_to", lambda x, shape: sum_to_size(x, shape))


# ----- autograd.grad(is_grads_batched=True): batched rules -------------------------------------------
# (primitives whose rules batch as written declare batch=True)

def _expand_back_batched(xp, g, a, dims, keepdim):
    lead = (g.shape[0],)
    t = g if keepdim else xp.reshape(g, lead + reduced_shape(a.shape, dims))
    return xp.expand(t, lead + tuple(a.shape))


def _bd(dim: int) -> int:   # an axis of the unbatched rule, in the batched gradient
    return dim + 1 if dim >= 0 else dim


batch_rule(sum_p, lambda xp, g, out, a, dims, keepdim: _expand_back_batched(xp, g, a, dims, keepdim))
batch_rule(mean_p, lambda xp, g, out, a, dims, keepdim: _expand_back_batched(xp, g, a, dims, keepdim)
           / _count(a.shape, dims))
batch_rule(logsumexp_p, lambda xp, g, out, a, dims, keepdim: (
    g if keepdim else xp.reshape(g, (g.shape[0],) + reduced_shape(a.shape, dims)))
    * xp.exp(a - _unreduce(xp, out, a, dims, keepdim)))
batch_rule(cumsum_p, lambda xp, g, out, a, dim: _rev_cumsum(xp, g, _bd(dim)) if a.ndim else g)
batch_rule(flip_p, lambda xp, g, out, a, dim: xp.reverse_dim(g, _bd(dim)))


# torch.special.logsumexp: an alias of logsumexp
register(logsumexp, module=False, submodule="special", submodule_name="logsumexp")
# ----- issue 18: integration and covariance (PyTorch's composites: aten/src/ATen/native/Integration.cpp and
# Correlation.cpp, step for step, so the values, dtypes and graph are PyTorch's) ------------------------------------

def _x_along(y: Tensor, x: Tensor, dim: int, op: str) -> Tensor:
    """The differences of the sample points ``x`` along ``dim``, shaped to broadcast against y's (PyTorch does not
    broadcast ``x`` to ``y`` first: NumPy broadcasts ``dx`` and ``dy`` after the differences)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    n = x.shape[dim]
    k = n - 1 if n else 0   # PyTorch's slices [1:] and [:-1], clamped on an empty dim
    return x.narrow(dim, 1 if n else 0, k) - x.narrow(dim, 0, k)


def _pairs(y: Tensor, dim: int) -> Tensor:
    n = y.shape[dim]
    k = n - 1 if n else 0
    return y.narrow(dim, 0, k) + y.narrow(dim, 1 if n else 0, k)


_NO_X = object()   # trapezoid's x left out (an x of None given explicitly is PyTorch's TypeError)


_OVERLOADS = {"trapz": " * (Tensor y, *, float dx = 1, int dim = -1)\n * (Tensor y, Tensor x, *, int dim = -1)\n"}
_XDX = " * (Tensor y, Tensor x, *, int dim = -1)\n * (Tensor y, *, Number dx = 1, int dim = -1)\n"


def _integration_args(op: str, y, x, dx, dim):
    """The checks of trapezoid/trapz/cumulative_trapezoid (PyTorch's two overloads: ``(y, x, *, dim)`` and
    ``(y, *, dx, dim)``); the wrapped dim."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{op}(): argument 'y' (position 1) must be Tensor, not {type(y).__name__}")
    if x is not _NO_X and (not isinstance(x, Tensor) or dx is not None):
        got = ", ".join(type(v).__name__ for v in (y, x))
        raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        + _OVERLOADS.get(op, _XDX))
    x = None if x is _NO_X else x
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    op = "trapezoid" if op == "trapz" else op   # trapz runs PyTorch's trapezoid: its messages name that
    dim = wrap_dim(dim, y.ndim)
    if y.dtype is D.bool or (isinstance(x, Tensor) and x.dtype is D.bool):
        raise RuntimeError(f"{op}: received a bool input for `x` or `y`, but bool is not supported" if x is not None
                           else f"{op}: received a bool input for `y`, but bool is not supported")
    if dx is not None and (isinstance(dx, (bool, complex)) or not isinstance(dx, (int, float))):
        if isinstance(dx, Tensor) or isinstance(dx, (bool, complex)):
            raise RuntimeError(f"{op}: Currently, we only support dx as a real number.")
        raise TypeError(f"{op}(): argument 'dx' must be Number, not {type(dx).__name__}")
    return dim


def _trapezoid(op: str, y, x, dx, dim) -> Tensor:
    dim = _integration_args(op, y, x, dx, dim)
    if y.shape[dim] == 0:   # no samples: 0, as NumPy
        from .creation import zeros
        return zeros(tuple(s for i, s in enumerate(y.shape) if i != dim), dtype=y.dtype, device=y.device)
    # C++ multiplies and divides by Scalars here: MulBackward1 / DivBackward1 (apply(mul_scalar_p, ...))
    if isinstance(x, Tensor):
        return apply(div_scalar_p, ((_pairs(y, dim) * _x_along(y, x, dim, "trapezoid")).sum(dim), 2.0))
    step = float(1 if dx is None else dx)
    ends = apply(mul_scalar_p, (y.select(dim, 0) + y.select(dim, -1), 0.5))
    return apply(mul_scalar_p, (y.sum(dim) - ends, step))


@register()
def trapezoid(y: Tensor, x: Tensor = _NO_X, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: over the sample points ``x``, or at a constant spacing ``dx`` (1)."""
    return _trapezoid("trapezoid", y, x, dx, dim)


@register()
def trapz(y: Tensor, x: Tensor = _NO_X, *, dx=None, dim: int = -1) -> Tensor:
    """The older name of ``trapezoid``."""
    return _trapezoid("trapz", y, x, dx, dim)


@register()
def cumulative_trapezoid(y: Tensor, x: Tensor = _NO_X, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim`` (one element fewer than ``y`` there)."""
    dim = _integration_args("cumulative_trapezoid", y, x, dx, dim)
    if isinstance(x, Tensor):
        return apply(div_scalar_p, ((_pairs(y, dim) * _x_along(y, x, dim, "cumulative_trapezoid")).cumsum(dim), 2.0))
    step = float(1 if dx is None else dx)
    return apply(mul_scalar_p, (_pairs(y, dim), step / 2.0)).cumsum(dim)


@register(method=True)
@schema("cov(Tensor input, *, int correction, Tensor? fweights, Tensor? aweights)")
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in its columns)."""
    from .creation import tensor as _scalar
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.view(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
        if w.ndim > 1:
            raise RuntimeError("cov(): expected fweights to have one or fewer dimensions but got fweights with "
                               f"{w.ndim} dimensions")
        if w.dtype.is_floating_point or w.dtype is D.bool:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights with "
                               f"{dtype_word(w.dtype)} dtype")
        if w.numel() != n:
            raise RuntimeError("cov(): expected fweights to have the same numel as there are observations in the "
                               f"input but got {w.numel()} != {n}")
        if n and not bool(w.min().ge(0)):
            raise RuntimeError("cov(): fweights cannot be negative")
    if aweights is not None:
        aw = aweights
        if aw.ndim > 1:
            raise RuntimeError("cov(): expected aweights to have one or fewer dimensions but got aweights with "
                               f"{aw.ndim} dimensions")
        if not aw.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{dtype_word(aw.dtype)} dtype")
        if aw.numel() != n:
            raise RuntimeError("cov(): expected aweights to have the same numel as there are observations in the "
                               f"input but got {aw.numel()} != {n}")
        if n and not bool(aw.min().ge(0)):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aw if w is None else w * aw
    w_sum = w.sum() if w is not None else _scalar(n, dtype=D.int64, device=input.device)
    if w is not None and not bool(w_sum.ne(0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is None:
        norm = _scalar(n - correction, dtype=D.int64, device=input.device)
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and n == 1 and correction == 1:
        norm = _scalar(0, dtype=D.int64, device=input.device)
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm.le(0)):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    if n == 1 and (fweights is None) != (aweights is None):
        x = x * 0   # PyTorch's corner case: the weighted mean of one observation is the observation
        if not _is_float(x):
            x = x.float()
    else:
        x = x - avg.unsqueeze(1)
    c = x.mm((x * w if w is not None else x).t().conj())   # (conj: a real tensor itself)
    return c.true_divide(norm).squeeze()


@register(method=True)
@schema("corrcoef(Tensor input)")
def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in ``input``'s rows, clipped to [-1, 1] as NumPy."""
    if input.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c   # nan for a zero, inf or nan variance, 1 otherwise
    d = c.diagonal()
    d = (d.real if d.dtype.is_complex else d).sqrt()
    c = c / d.view(-1, 1)
    c = c / d.view(1, -1)
    if c.dtype.is_complex:   # PyTorch clips the real and imaginary parts
        from .complex import complex as make_complex
        return make_complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


# ----- hash_tensor ------------------------------------------------------------------------------------------

@register(method=True)
def hash_tensor(input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """PyTorch's hash of a tensor (``mode=0``, its only mode): the elements widened to 64 bits (floating ones to
    float64, integral and bool ones to int64), their bits read as uint64 and reduced by xor over ``dim`` (every
    dim by default). Made of the device's cast, bit view and xor kernels (no gradient)."""
    from .shape import cat
    check_tensor(input, "hash_tensor")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    _refuse_complex(input, "xor_sum_cpu")
    refuse_shell(input, "xor_sum_cpu")
    shape = input._data.shape
    dims = normalize_dims(dim, len(shape), "hash_tensor")
    if (dim is None or dim == () or dim == []) and input._data.size == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    wide = D.float64 if input.dtype.is_floating_point else D.int64
    bits = input.detach().to(wide).view(D.uint64)
    kept = [d for d in range(len(shape)) if d not in dims]
    n = 1
    for d in dims:
        n *= shape[d]
    t = bits.permute(kept + list(dims)).reshape(tuple(shape[d] for d in kept) + (n,))
    while t.shape[-1] > 1:   # xor the halves together (an odd last element carried along)
        n = t.shape[-1]
        h = n // 2
        head = t[..., :h] ^ t[..., h:2 * h]
        t = cat([head, t[..., 2 * h:]], -1) if n % 2 else head
    out = t[..., 0]
    return out.reshape(reduced_shape(shape, dims)) if keepdim and dims else out


# ----- segment_reduce (a prototype op of PyTorch's): reductions over consecutive segments of one axis ----------

_SEGMENT_REDUCTIONS = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max", "min": "min",
                       "amin": "min"}


def _segment_backward_no_derivative(xp, gg, out, *args, **params):
    raise RuntimeError("derivative for aten::_segment_reduce_backward is not implemented")


def _segment_lengths(lengths, offsets):
    """The segments' lengths, from ``lengths`` or from the ``offsets`` between their bounds (raw int64 arrays)."""
    return lengths if lengths is not None else offsets[..., 1:] - offsets[..., :-1]


# lengths/offsets: the raw int64 arrays given (the other None), kept as PyTorch's node keeps them
segment_reduce_p = defprim(
    "segment_reduce", lambda xp, data, reduce, lengths, offsets, axis, unsafe, initial: xp.segment_reduce(
        data, _segment_lengths(lengths, offsets), _SEGMENT_REDUCTIONS[reduce], axis % data.ndim, initial),
    vjp=lambda xp, g, out, data, reduce, lengths, offsets, axis, unsafe, initial: xp.segment_reduce_backward(
        g, out, data, _segment_lengths(lengths, offsets), _SEGMENT_REDUCTIONS[reduce], axis % data.ndim, initial),
    saves=(0,), saves_out=True, saved_names=("data",))
# PyTorch's _segment_reduce_backward has no derivative: under create_graph, a node whose backward raises
segment_reduce_backward_p = defprim(
    "segment_reduce_backward", lambda xp, g, out, data, lengths, reduce, axis, initial: xp.segment_reduce_backward(
        g, out, data, lengths, reduce, axis, initial),
    node="NotImplemented", vjp=(_segment_backward_no_derivative, None, _segment_backward_no_derivative),
    saves=(0, 1, 2), scalar_args=(1,))   # out: read, not differentiated
graph("segment_reduce", lambda data, lengths, reduce, axis, initial: apply(
    segment_reduce_p, (data,), {"reduce": reduce, "lengths": lengths, "offsets": None, "axis": axis, "unsafe": False,
                                "initial": initial}))
graph("segment_reduce_backward", lambda g, out, data, lengths, reduce, axis, initial: apply(
    segment_reduce_backward_p, (g, out, data), {"lengths": lengths, "reduce": reduce, "axis": axis,
                                                "initial": initial}))


@register()
@schema("segment_reduce(Tensor data, str reduce, *, Tensor? lengths, Tensor? indices, Tensor? offsets, int axis, "
        "bool unsafe, Scalar? initial)")
def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None, indices: Tensor | None = None,
                   offsets: Tensor | None = None, axis: int = 0, unsafe: bool = False, initial=None) -> Tensor:
    """Reduce ``data`` along ``axis`` over consecutive segments given by ``lengths`` (or by ``offsets``, their
    boundaries): ``sum``, ``mean``, ``prod``, ``max``/``amax``, ``min``/``amin``, each segment from ``initial``
    (default: the reduction's identity; an empty segment's mean is NaN). Gradients of first order
    (SegmentReduceBackward0), as PyTorch."""
    x = data._data
    wrap_dim(axis, x.ndim)   # PyTorch's order of checks (its node keeps axis as given)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    seg = offsets if offsets is not None else lengths
    if seg._data.dtype.kind not in "iu":
        kernel = "_segment_reduce_offsets_cpu_kernel1" if offsets is not None else "_segment_reduce_lengths_cpu_kernel1"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_word(seg._data.dtype)}'")
    if x.ndim < seg._data.ndim:
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{dtype_word(x.dtype)}'")
    xp = NAMESPACES[type(x)]
    s = xp.cast(seg._data, D.int64.np)
    lens = s[..., 1:] - s[..., :-1] if offsets is not None else s
    if offsets is None and not unsafe:
        if lens.size and int(xp.amin(lens)) < 0:
            raise RuntimeError("lengths contains negative value!")
        if not bool(xp.all(xp.sum(lens, -1) == x.shape[axis % x.ndim])):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
    init = None if initial is None else (float(initial) if not isinstance(initial, complex) else initial)
    given = (None, s) if offsets is not None else (s, None)
    # PyTorch's node saves the lengths (offsets): changed in place, backward refuses them
    return apply_saving(segment_reduce_p, (data,), {"reduce": reduce, "lengths": given[0],
                                                    "offsets": given[1], "axis": axis, "unsafe": bool(unsafe),
                                                    "initial": init}, None, (seg,))


# ----- vmap -------------------------------------------------------------------------------------------------


def _zero_d(rule, key: str):
    """``rule`` for a one-tensor op over the dims ``key`` whose 0-d example gives a 0-d result (a reduction, a
    cumulative op): a 0-d example is batched as (batch, 1) and the op runs over that dim 1, then it is dropped.
    (Batched as (batch,), its dims would be () and the op's forward-mode rule, which reads () as every dim, would
    reduce the tangents over the batch.)"""
    def wrapped(call, args, bdims, params, size):
        x, bd = args[0], bdims[0]
        if bd is None or x._data.ndim != 1:
            return rule(call, args, bdims, params, size)
        new = dict(params)
        if key in params:
            v = params[key]
            new[key] = 0 if isinstance(v, int) and not isinstance(v, bool) else (0,)
        out, obd = rule(call, [x.unsqueeze(-1)] + list(args[1:]), bdims, new, size)
        return (out.squeeze(-1) if out._data.ndim == 2 else out), obd
    return wrapped


_batching.by_name(_zero_d(_batching.dims_rule("dims"), "dims"), "sum", "mean", "nansum", "std", "var",
                  "vector_norm", "logsumexp", "amax", "amin")
_batching.by_name(_zero_d(_batching.dims_rule("dim"), "dim"), "cumsum", "cumprod", "logcumsumexp")
_batching.by_name(_batching.dims_rule("dim"), "reverse_dim")
_batching.batching(_batching.flatten_rule("dim"), prod_p)
_batching.by_name("leading", "cdist")


def _dist_rule(call, args, bdims, params, size):
    """dist of each example: the norm of its difference over every dim (the examples flattened, reduced along 1)."""
    a, b = _batching.elementwise(lambda new, p: new, args, bdims, params, size)[0]   # (padded to one rank)
    return graph_ns.vector_norm(_batching.rows((a - b), size), params["p"], (1,)), 0


_batching.batching(_dist_rule, dist_p)


def _share_last(xp, a, out):
    """max()/min()/median()'s gradient share of each element of the last dim (``out``: each row's result): its
    ties evenly (all NaNs for a NaN result)."""
    o = xp.reshape(out, tuple(out.shape) + (1,))
    mask = xp.where(xp.isnan(o), xp.isnan(a), a == o)
    return mask, xp.sum(mask, (a.ndim - 1,), True)


def _rows_vjp(xp, g, out, a, **params):
    mask, n = _share_last(xp, a, out)
    return xp.reshape(g, tuple(g.shape) + (1,)) * mask / n


def _rows_jvp(xp, t, out, a, **params):
    mask, n = _share_last(xp, a, out)
    return xp.sum(t * mask / n, (a.ndim - 1,), False)


# max()/min() of each row (the last dim) with max()'s gradient (ties share evenly, a NaN result's NaNs): vmap's form
# of max_all_p/min_all_p on the flattened examples (max(dim) would give one index's gradient, as PyTorch's rule)
extremum_rows_p = defprim("extremum_rows", lambda xp, a, largest: (xp.amax if largest else xp.amin)(a, (a.ndim - 1,),
                                                                                                     False),
                          node="MaxBackward1", vjp=_rows_vjp, jvp=_rows_jvp, saves=(0,), saves_out=True)


_batching.batching(_batching.rows_rule(extremum_rows_p, largest=True), max_all_p)
_batching.batching(_batching.rows_rule(extremum_rows_p, largest=False), min_all_p)
_batching.batching("leading", extremum_rows_p)
# max(dim)/min(dim), cummax/cummin: their wrappers compute the indices from the values; the op on the physical
# input with the dim shifted (max(x), max(x, other): the primitives of the overload batch)
for _fn in (max, min):
    _bp.public_rule(_fn, _bp.dim_rule(_fn, default_dim=None))
for _fn in (cummax, cummin):
    _bp.public_rule(_fn, _bp.dim_rule(_fn, default_dim=None))
_batching.by_name("fallback", "segment_reduce", "segment_reduce_backward", why="an index array in its parameters")
# (indices from an unbatched tensor: expanded over the batch; the public ops compute theirs batched, above)
_batching.batching(_bp.along_rule, gather_p, put_along_dim_zeros_p, select_along_p, scatter_add_zeros_p)
# reductions whose wrappers compute from the values (not differentiable): over the shifted dims
for _fn in (any_, all_, argmax, argmin):
    _bp.public_rule(_fn, _bp.reduce_rule(_fn))
