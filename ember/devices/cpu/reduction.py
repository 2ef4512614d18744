"""NumPy kernels of the 'reduction' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Every name in ``__all__`` is also in ``graph_ns`` (registered in ``ember/ops/reduction.py``), so the
derivative rules that call it run in both namespaces. Helpers starting with ``_`` are used by the public
functions only (the forward of an op that also returns indices).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .reduced import BF16 as _BF16, F16 as _F16, F32 as _F32, REDUCED as _REDUCED, in_float32

_F16_ONLY = frozenset((_F16,))

__all__: list = ["nansum", "prod", "cumsum", "cumprod", "logcumsumexp", "logsumexp", "reverse_dim", "gather_dim",
                 "scatter_add_zeros", "vector_norm", "any", "all", "argmax", "argmin", "cum_extremum_indices",
                 "segment_reduce", "segment_reduce_backward"]


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


# PyTorch's CPU scans (cpu_cum_base_kernel) carry the running value in acc_type<T, /*is_cuda=*/false>: double
# for float32, complex<double> for complex64 (float16/bfloat16: float, by _f32), each output rounded once
_SCAN_ACC = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}


def _scan_acc(kernel):
    def fn(x, dim):
        acc = _SCAN_ACC.get(x.dtype)
        return kernel(x, dim) if acc is None else kernel(x.astype(acc), dim).astype(x.dtype)
    fn.__name__, fn.__doc__ = kernel.__name__, kernel.__doc__
    return fn


@_scan_acc
@_f32
def cumsum(x, dim):
    return np.cumsum(x, axis=dim) if x.ndim else x.copy()


@_scan_acc
@_f32
def cumprod(x, dim):
    return np.cumprod(x, axis=dim) if x.ndim else x.copy()


@_scan_acc
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
    if x.dtype.kind == "c":   # the moduli as the namespace's abs computes them (hypot, as PyTorch's)
        return vector_norm(np.hypot(x.real, x.imag), ord, dim, keepdim)
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


# ----- segment_reduce: reductions over consecutive segments of one axis ----------------------------------------
# Written once against an array-API namespace ``xp`` (NumPy here; the common kernels pass theirs). ``lengths``:
# int64 of shape data.shape[:axis] + (S,); segments are taken in order along ``axis``. Every segment is reduced
# left to right from ``initial``, as PyTorch's CPU kernel (one value at a time, in the data's dtype).

_SEG_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}


def _seg_layout(xp, data, lengths, axis):
    """data as (B, N, T), lengths as (B, S), the exclusive offsets (B, S) and the longest segment."""
    shape = tuple(data.shape)
    b = 1
    for s in shape[:axis]:
        b *= s
    t = 1
    for s in shape[axis + 1:]:
        t *= s
    n = shape[axis]
    lens = xp.reshape(lengths, (b, lengths.shape[-1]))
    starts = xp.cumulative_sum(lens, axis=1, include_initial=True)[:, :-1]
    longest = int(xp.max(lens)) if lens.shape[0] * lens.shape[1] else 0
    return xp.reshape(data, (b, n, t)), lens, starts, longest


def _seg_take(xp, d3, pos):
    """d3 (B, N, T) at positions ``pos`` (B, K) of axis 1 (clipped into range): (B, K, T)."""
    b, n, t = d3.shape
    pos = xp.clip(pos, 0, builtins.max(n - 1, 0))
    flat = pos + xp.reshape(xp.arange(b, dtype=pos.dtype) * n, (b, 1))
    return xp.reshape(xp.take(xp.reshape(d3, (b * n, t)), xp.reshape(flat, (-1,)), axis=0), (b, pos.shape[1], t))


def _segment_reduce(xp, data, lengths, reduce, axis, initial):
    d3, lens, starts, longest = _seg_layout(xp, data, lengths, axis)
    b, n, t = d3.shape
    s = lens.shape[1]
    init = _SEG_IDENTITY[reduce] if initial is None else initial
    acc = xp.full((b, s, t), init, dtype=data.dtype)
    if n:
        op = {"sum": lambda x, y: x + y, "mean": lambda x, y: x + y, "prod": lambda x, y: x * y,
              "max": xp.maximum, "min": xp.minimum}[reduce]
        for k in range(longest):
            valid = xp.reshape(k < lens, (b, s, 1))
            acc = xp.where(valid, op(acc, _seg_take(xp, d3, starts + k)), acc)
    if reduce == "mean":
        cnt = xp.reshape(lens, (b, s, 1))
        nan = xp.full((b, s, t), math.nan, dtype=data.dtype)
        acc = xp.where(cnt > 0, acc / xp.astype(xp.where(cnt > 0, cnt, 1), data.dtype), acc if initial is not None
                       else nan)
    return xp.reshape(acc, tuple(data.shape[:axis]) + (s,) + tuple(data.shape[axis + 1:]))


def _segment_reduce_backward(xp, g, out, data, lengths, reduce, axis, initial):
    d3, lens, starts, longest = _seg_layout(xp, data, lengths, axis)
    b, n, t = d3.shape
    s = lens.shape[1]
    if n == 0:
        return xp.zeros(tuple(data.shape), dtype=data.dtype)
    g3 = xp.reshape(g, (b, s, t))
    o3 = xp.reshape(out, (b, s, t))
    # the segment of each position (S past the last one: unsafe lengths that cover less than the axis)
    ends = starts + lens
    pos = xp.reshape(xp.arange(n, dtype=lens.dtype), (1, n, 1))
    seg = xp.sum(xp.astype(xp.reshape(ends, (b, 1, s)) <= pos, lens.dtype), axis=2)   # (B, N)
    inside = xp.reshape(seg < s, (b, n, 1))
    seg = xp.clip(seg, 0, s - 1) if s else seg

    def per_pos(a3):   # a per-segment (B, S, T) value at each position: (B, N, T)
        return _seg_take(xp, a3, seg)
    ge = per_pos(g3)
    zero = xp.zeros((b, n, t), dtype=data.dtype)
    if reduce == "sum":
        r = ge
    elif reduce == "mean":
        cnt = xp.astype(xp.reshape(lens, (b, s, 1)), data.dtype)
        r = ge / per_pos(xp.broadcast_to(xp.where(cnt > 0, cnt, xp.ones_like(cnt)), (b, s, t)))
    elif reduce in ("max", "min"):
        hit = d3 == per_pos(o3)
        ties = xp.zeros((b, s, t), dtype=data.dtype)
        for k in range(longest):   # the number of positions of each segment at its extremum
            at = starts + k
            ties = ties + xp.where(xp.reshape(k < lens, (b, s, 1)) & (_seg_take(xp, d3, at) == o3),
                                   xp.ones_like(ties), xp.zeros_like(ties))
        r = xp.where(hit, ge / per_pos(xp.where(ties > 0, ties, xp.ones_like(ties))), zero)
    else:   # prod: grad * out / x, and where x is 0 or NaN the product of the others (initial first), in order
        r = (ge * per_pos(o3)) / d3
        odd = (d3 == 0) | xp.isnan(d3)
        if bool(xp.any(odd)):
            lens_e = xp.reshape(_seg_take(xp, xp.reshape(xp.astype(lens, data.dtype), (b, s, 1)), seg), (b, n, 1))
            start_e = _seg_take(xp, xp.reshape(xp.astype(starts, data.dtype), (b, s, 1)), seg)
            excl = xp.full((b, n, t), 1.0 if initial is None else initial, dtype=data.dtype)
            pos2 = xp.reshape(xp.arange(n, dtype=lens.dtype), (1, n))
            st = xp.astype(xp.reshape(start_e, (b, n)), lens.dtype)
            for k in range(longest):
                other = st + k
                use = xp.reshape((k < xp.astype(xp.reshape(lens_e, (b, n)), lens.dtype)) & (other != pos2),
                                 (b, n, 1))
                excl = xp.where(use, excl * _seg_take(xp, d3, other), excl)
            r = xp.where(odd, ge * excl, r)
    r = xp.where(inside, r, zero)
    return xp.reshape(r, tuple(data.shape))


def segment_reduce(data, lengths, reduce: str, axis: int, initial):
    """PyTorch's segment_reduce of ``data`` along ``axis`` over segments of ``lengths`` (int64, shape
    data.shape[:axis] + (S,)): sum, mean, prod, max or min, each segment reduced in order from ``initial`` (or the
    reduction's identity; an empty segment's mean is NaN without ``initial``). Not differentiable."""
    with np.errstate(all="ignore"):
        return _segment_reduce(np, data, lengths, reduce, axis, initial)


def segment_reduce_backward(g, out, data, lengths, reduce: str, axis: int, initial):
    """The gradient of segment_reduce for ``data`` (PyTorch's _segment_reduce_backward): sum passes ``g`` to every
    position, mean divides it by the segment's length, max/min share it evenly among the positions at the
    extremum, prod gives ``g * out / x`` (where x is 0 or NaN, ``g`` times the product of the others)."""
    with np.errstate(all="ignore"):
        return _segment_reduce_backward(np, g, out, data, lengths, reduce, axis, initial)
