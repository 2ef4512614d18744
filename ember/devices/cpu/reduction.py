"""NumPy kernels of the 'reduction' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Every name in ``__all__`` is also in ``graph_ns`` (registered in ``ember/ops/reduction.py``), so the
derivative rules that call it run in both namespaces. Helpers starting with ``_`` are used by the public
functions only (the forward of an op that also returns indices).
"""
from __future__ import annotations

import builtins

import numpy as np

from .reduced import BF16 as _BF16, F16 as _F16, F32 as _F32, REDUCED as _REDUCED, in_float32

_F16_ONLY = frozenset((_F16,))

__all__: list = ["nansum", "prod", "cumsum", "cumprod", "logcumsumexp", "logsumexp", "reverse_dim", "gather_dim",
                 "scatter_add_zeros", "vector_norm", "any", "all", "argmax", "argmin", "cum_extremum_indices"]


# float16 and bfloat16 accumulate in float32 and round once at the end, as PyTorch's CPU kernels
_f32 = in_float32


def _empty_over(x, dim) -> bool:
    return builtins.any(x.shape[d] == 0 for d in dim)


def nansum(x, dim, keepdim=False):
    if x.dtype in _REDUCED and x.size:
        return _cascade_nansum(x, dim, keepdim)
    return _nansum(x, dim, keepdim)


@_f32
def _nansum(x, dim, keepdim=False):
    return np.nansum(x, axis=dim, keepdims=keepdim)


def _cascade_nansum(x, dim, keepdim):
    """float16/bfloat16 ``nansum`` as PyTorch's cascade_sum (SumKernel.cpp) stores it: TensorIterator runs its 2-d
    inner loop once per index of the outer dims, and each call adds float32 row sums into the output, each sum
    rounded to the output's dtype first (``BFloat16 += float``) and the addition rounded again. The loop's dims:
    the reduced dims innermost, then the kept ones, each by increasing stride, size-1 dims dropped, neighbours
    that are contiguous merged; a row is its innermost reduced dims (the first loop dim, or the second when the
    first is kept). (Row sums here are NumPy's float32 sums; PyTorch's parallel split of large reductions is not
    modelled.)"""
    low = x.dtype
    nd = x.ndim
    red = set(range(nd)) if dim is None else {d % nd for d in ((dim,) if isinstance(dim, int) else dim)}
    xs = np.where(np.isnan(x), 0, x).astype(_F32)
    order = sorted((d for d in range(nd) if x.shape[d] != 1), key=lambda d: (d not in red, abs(x.strides[d]), -d))
    groups: list = []   # merged loop dims, innermost first: lists of dims
    for d in order:
        g = groups[-1] if groups else None
        if g is not None and (g[-1] in red) == (d in red) and \
                abs(x.strides[d]) == abs(x.strides[g[-1]]) * x.shape[g[-1]]:
            g.append(d)
        else:
            groups.append([d])
    row = next((g for g in groups[:2] if g[0] in red), [])
    sums = np.sum(xs, axis=tuple(row), keepdims=True, dtype=_F32)
    # the other reduced dims, in the order the loops visit them (outermost slowest)
    steps = [d for g in groups if g is not row and g[0] in red for d in g][::-1]
    if not steps:
        out = sums.astype(low)
    else:
        kept = [d for d in range(nd) if d not in steps]
        seq = np.transpose(sums, steps + kept).reshape((-1,) + tuple(sums.shape[d] for d in kept))
        out = np.zeros(seq.shape[1:], low)
        for part in seq:
            out = (out.astype(_F32) + part.astype(low).astype(_F32)).astype(low)
    full = tuple(1 if d in red else x.shape[d] for d in range(nd))
    out = out.reshape(full)
    return out if keepdim else out.reshape(tuple(x.shape[d] for d in range(nd) if d not in red))


@in_float32(dtypes=_F16_ONLY)   # (bfloat16: NumPy's loop rounds every partial product, as PyTorch's kernel)
def prod(x, dim=None, keepdim=False):
    """The product over ``dim`` (an int, or None for all elements)."""
    return np.prod(x, axis=dim, keepdims=keepdim)


@_f32
def cumsum(x, dim):
    return np.cumsum(x, axis=dim) if x.ndim else x.copy()


@_f32
def cumprod(x, dim):
    return np.cumprod(x, axis=dim) if x.ndim else x.copy()


@_f32
def logcumsumexp(x, dim):
    # logaddexp(a, b) = max + log1p(exp(-|a - b|)): stable, and -inf + -inf stays -inf.
    if x.dtype.kind == "c":
        return _logcumsumexp_complex(x, dim)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.logaddexp.accumulate(x, axis=dim) if x.ndim else x.copy()


def _logaddexp_complex(x, y):
    """PyTorch's _log_add_exp_helper for complex values (its CPU scan's step): the larger real part is taken
    out, NaNs are infectious, and equal infinite real parts are special cases."""
    xnan, ynan = np.isnan(x), np.isnan(y)
    lt = x.real < y.real
    lo = np.where(ynan, y, np.where(xnan, x, np.where(lt, x, y)))
    hi = np.where(ynan, y, np.where(xnan, x, np.where(lt, y, x)))
    with np.errstate(all="ignore"):
        r = np.log1p(np.exp(lo - hi)) + hi
        same_inf = ~np.isfinite(lo.real) & (lo.real == hi.real)
        if same_inf.any():
            r = np.where(same_inf, np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi))), r)
    return np.where(np.isnan(lo), x.dtype.type(complex(np.nan, np.nan)), r)


def _logcumsumexp_complex(x, dim):
    if x.ndim == 0:
        return x.copy()
    xm = np.moveaxis(x, dim, -1)
    out = np.empty(xm.shape, x.dtype)
    acc = np.full(xm.shape[:-1], -np.inf, x.dtype)   # PyTorch's scan starts from -inf
    for i in range(xm.shape[-1]):
        acc = _logaddexp_complex(xm[..., i], acc)
        out[..., i] = acc
    return np.moveaxis(out, -1, dim)


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, stable: the maximum is taken out first (0 where it is infinite, so
    that all -inf gives -inf and an inf gives inf rather than nan). Over an empty dim: -inf. bfloat16 rounds
    where PyTorch's composite (amax, sub, exp, sum, log, add) rounds: x - max, the sum, its log, the result."""
    if x.dtype is _BF16 and x.size and not _empty_over(x, dim):
        low = x.dtype
        m = np.max(x, axis=dim, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            m = np.where(np.isinf(m), 0, m).astype(low)
            d = (x - m).astype(_F32)   # (bfloat16 arithmetic: rounded)
            s = np.sum(np.exp(d.astype(np.float64)).astype(_F32), axis=dim, keepdims=True, dtype=_F32).astype(low)
            r = np.log(s.astype(_F32)).astype(low) + m
        return r if keepdim else np.squeeze(r, axis=dim)
    return _logsumexp(x, dim, keepdim)


@_f32
def _logsumexp(x, dim, keepdim=False):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if x.size == 0 or _empty_over(x, dim):
            return np.log(np.sum(np.exp(x), axis=dim, keepdims=keepdim))
        # complex: the maximum real part is taken out (PyTorch's)
        m = np.max(x.real if x.dtype.kind == "c" else x, axis=dim, keepdims=True)
        m = np.where(np.isinf(m), 0, m).astype(m.dtype, copy=False)
        r = np.log(np.sum(np.exp(x - m), axis=dim, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, axis=dim)


def reverse_dim(x, dim):
    return np.flip(x, dim) if x.ndim else x


def gather_dim(x, indices, dim):
    """``x`` gathered along ``dim`` at ``indices`` (same number of dims as ``x``)."""
    return np.take_along_axis(x, indices, dim) if x.ndim else x.copy()


def scatter_add_zeros(g, indices, dim, shape):
    """Zeros of ``shape`` with ``g`` added along ``dim`` at ``indices`` (repeated indices accumulate)."""
    out = np.zeros(shape, dtype=g.dtype)
    if out.ndim == 0:
        out[...] = g
        return out
    idx = list(np.indices(indices.shape, sparse=True))
    idx[dim] = indices
    np.add.at(out, tuple(idx), g)
    return out


def vector_norm(x, ord, dim, keepdim=False):
    """The ``ord``-norm over ``dim``; float16 accumulates in float32, as PyTorch's CPU kernel. A complex input's
    norm is its moduli's (a real result)."""
    if x.dtype.kind == "c":
        return vector_norm(np.abs(x), ord, dim, keepdim)
    w = x.astype(_F32) if x.dtype in _REDUCED else x
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if ord == 2:
            r = np.sqrt(np.sum(w * w, axis=dim, keepdims=keepdim))
        elif ord == 1:
            r = np.sum(np.abs(w), axis=dim, keepdims=keepdim)
        elif ord == 0:
            r = np.sum(w != 0, axis=dim, keepdims=keepdim).astype(w.dtype)
        elif ord == np.inf:
            r = np.max(np.abs(w), axis=dim, keepdims=keepdim)
        elif ord == -np.inf:
            r = np.min(np.abs(w), axis=dim, keepdims=keepdim)
        else:
            r = np.sum(np.abs(w) ** ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(r).astype(x.dtype, copy=False)


def cum_extremum_indices(x, dim, largest):
    """The indices of cummax (``largest``) / cummin along ``dim``: PyTorch's conventions, an equal value moves
    the index forward, a NaN is the extremum from where it appears (a later NaN moves the index again)."""
    if x.ndim == 0:
        return np.zeros((), dtype=np.int64)
    xm = np.moveaxis(x, dim, -1)
    idx = np.zeros(xm.shape, dtype=np.int64)
    if xm.shape[-1] and xm.size:
        best = xm[..., 0].copy()
        cur = np.zeros(best.shape, dtype=np.int64)
        floating = x.dtype.kind in "fV"
        for i in range(1, xm.shape[-1]):
            v = xm[..., i]
            take = (v >= best) if largest else (v <= best)
            if floating:
                take = np.isnan(v) | (take & ~np.isnan(best))
            best = np.where(take, v, best)
            cur = np.where(take, i, cur)
            idx[..., i] = cur
    return np.moveaxis(idx, -1, dim)


def any(x, dim=None, keepdim=False):  # noqa: A001 (torch.any's name)
    return np.any(x, axis=dim, keepdims=keepdim)


def all(x, dim=None, keepdim=False):  # noqa: A001 (torch.all's name)
    return np.all(x, axis=dim, keepdims=keepdim)


def argmax(x, dim=None, keepdim=False):
    """The index of the first maximum over ``dim`` (of the flattened input for None), int64."""
    return np.argmax(x, axis=dim, keepdims=keepdim)


def argmin(x, dim=None, keepdim=False):
    """The index of the first minimum over ``dim`` (of the flattened input for None), int64."""
    return np.argmin(x, axis=dim, keepdims=keepdim)
