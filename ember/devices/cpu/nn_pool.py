"""NumPy kernels of pooling (part of the raw namespace ``ember.devices.cpu.namespace``): reading and scattering at
flat spatial indices (max pooling and its gradients), the windows' maxima as PyTorch finds them (max, adaptive and
fractional max pooling), and separable linear pooling (average pooling: one matrix per spatial dim).

Indices of max pooling are flat indices into the input's spatial dims (PyTorch's). ``max_pool_indices``,
``adaptive_max_indices``, ``fractional_max_indices``, ``avg_pool_matrices``, ``avg_pool_integer`` and
``adaptive_avg_matrices`` are not differentiable: the public functions call them on the input's data before
(or instead of) recording a primitive.
"""
from __future__ import annotations

import math as _math

import numpy as np

from .nn_conv import _chunk_size, _chunks, _padded
from .reduced import BF16, BF16_ONLY, F32, all_in_float32

__all__ = ["pool_gather", "pool_scatter", "pool_backward", "avg_pool_backward", "dim_matrices",
           # not differentiable (see above)
           "max_pool_indices", "adaptive_max_indices", "fractional_max_indices", "avg_pool_matrices",
           "avg_pool_integer", "adaptive_avg_matrices"]


def pool_gather(x, indices, sd, unique=False):
    """``x`` (..., *S) read at flat spatial ``indices`` (..., *L); ``sd``: the number of spatial dims."""
    if x.size == 0 or indices.size == 0:
        return np.zeros(indices.shape, dtype=x.dtype)
    lead = _math.prod(x.shape[:x.ndim - sd])
    S = _math.prod(x.shape[x.ndim - sd:])
    L = indices.size // lead
    # one flat take (take_along_axis indexes with two broadcast arrays: slower)
    rows = np.add(indices.reshape(lead, L), np.arange(0, lead * S, S, dtype=np.int64).reshape(lead, 1))
    return x.reshape(-1).take(rows).reshape(indices.shape)


def pool_scatter(g, indices, shape, sd, unique=False):
    """Zeros of ``shape`` (..., *S) with ``g`` (..., *L) added at flat spatial ``indices`` (``unique``: no
    index repeats within a row, e.g. max pooling with non-overlapping windows: a plain assignment)."""
    S = _math.prod(shape[len(shape) - sd:])
    lead = _math.prod(shape[:len(shape) - sd])
    if g.size == 0 or S == 0:
        return np.zeros(shape, dtype=g.dtype)
    rows = (np.arange(lead).reshape(lead, 1) * S + indices.reshape(lead, -1)).ravel()
    if unique:
        out = np.zeros(lead * S, dtype=g.dtype)
        out[rows] = g.ravel()
        return out.reshape(shape)
    out = np.bincount(rows, weights=g.ravel(), minlength=lead * S)
    return out.astype(g.dtype, copy=False).reshape(shape)


def pool_backward(g, x, indices, sd, unique=False):
    """Max pooling's input gradient: ``g`` scattered into zeros of ``x``'s shape (``x`` is there for its shape,
    as PyTorch's backward takes the input: a second derivative is connected to it)."""
    return pool_scatter(g, indices, x.shape, sd, unique)


def avg_pool_backward(g, x, mats):
    """Average pooling's input gradient: the transposed matrices applied to ``g`` (``x``: see pool_backward)."""
    return dim_matrices(g, tuple(a.T for a in mats))


def dim_matrices(x, mats, low=None):
    """``x`` (N, C, *S) with matrix ``mats[i]`` (L_i, S_i) applied along spatial dim i: separable linear
    pooling (average pooling, adaptive average pooling) and interpolation as one small GEMM per dim.

    ``low``: how PyTorch's kernel computes a bfloat16 ``x`` (ignored for other dtypes). Averaging matrices:
    each window summed in float32 and divided by its count, ``"once"`` by the product of the per-dim counts
    (avg_pool) or ``"each"`` by one count per dim in turn (adaptive_avg_pool), then rounded once; ``"steps"``
    (adaptive_avg_pool3d): the sum and each division in bfloat16, every step rounded. Interpolation,
    ``("interp", kind, scales, align_corners)``: ``_interpolate_bf16``."""
    if low is not None and x.dtype == BF16:
        if low == "steps":
            return _window_means_steps(x, mats)
        if isinstance(low, tuple):
            return _interpolate_bf16(x, tuple(m.shape[0] for m in mats), *low[1:])
        return _window_means(x, mats, low == "once")
    return _dim_matrices(x, mats)


def _interp_taps(kind: str, S: int, L: int, scale, align_corners: bool):
    """PyTorch's (UpSampleKernel.cpp) taps of one dim for a bfloat16 input: (L, T) source indices and weights,
    the weights computed in float32 and stored in bfloat16 (linear: lambda1 rounded, lambda0 = 1 - lambda1
    rounded; cubic: the four coefficients of A = -0.75 rounded)."""
    f32 = np.float32
    rb = lambda v: np.asarray(v, f32).astype(BF16).astype(f32)   # noqa: E731
    dst = np.arange(L).astype(f32)
    if align_corners:
        sc = f32(S - 1) / f32(L - 1) if L > 1 else f32(0)
        src = (sc * dst).astype(f32)
    else:
        sc = f32(1.0 / scale) if scale is not None and scale > 0 else f32(S) / f32(L)
        src = (sc * (dst + f32(0.5)) - f32(0.5)).astype(f32)
    if kind == "linear":
        if L == S:   # a dim of unchanged size is copied
            return np.stack([np.arange(L)] * 2, 1), np.stack([np.ones(L, f32), np.zeros(L, f32)], 1)
        src = np.maximum(src, f32(0))
        i0 = np.minimum(np.floor(src).astype(np.int64), S - 1)
        lam1 = rb(np.minimum(np.maximum(src - i0.astype(f32), f32(0)), f32(1)))
        return np.stack([i0, i0 + (i0 < S - 1)], 1), np.stack([rb(f32(1) - lam1), lam1], 1)
    i = np.minimum(np.floor(src).astype(np.int64), S - 1)
    t = np.minimum(np.maximum(src - i.astype(f32), f32(0)), f32(1)).astype(f32)
    A = f32(-0.75)

    def cc1(v):
        return (((A + f32(2)) * v - (A + f32(3))) * v * v + f32(1)).astype(f32)

    def cc2(v):
        return (((A * v - f32(5) * A) * v + f32(8) * A) * v - f32(4) * A).astype(f32)
    t2 = (f32(1) - t).astype(f32)
    coeffs = (cc2((t + f32(1)).astype(f32)), cc1(t), cc1(t2), cc2((t2 + f32(1)).astype(f32)))
    return np.stack([np.clip(i - 1 + k, 0, S - 1) for k in range(4)], 1), np.stack([rb(c) for c in coeffs], 1)


def _interpolate_bf16(x, out_size, kind, scales, align_corners):
    """bfloat16 linear/cubic interpolation as PyTorch's generic N-d kernel: the taps of every dim (bfloat16
    weights), nested with the last dim innermost, each product and sum in float32, rounded once."""
    d = len(out_size)
    first = x.ndim - d
    taps = [_interp_taps(kind, x.shape[first + k], out_size[k], None if scales is None else scales[k],
                         align_corners) for k in range(d)]

    def nest(k, xs):
        idx, w = taps[k]
        acc = None
        for j in range(idx.shape[1]):
            t = np.take(xs, idx[:, j], axis=first + k)
            if k + 1 < d:
                t = nest(k + 1, t)
            term = (t * w[:, j].reshape((-1,) + (1,) * (d - 1 - k))).astype(np.float32)
            acc = term if acc is None else (acc + term).astype(np.float32)
        return acc
    return np.ascontiguousarray(nest(0, x.astype(np.float32)).astype(BF16))


@all_in_float32(dtypes=BF16_ONLY)   # (NumPy's matmul of bfloat16 gives float32): float32 sums, rounded once
def _dim_matrices(x, mats):
    first = x.ndim - len(mats)   # the matrices act on the last len(mats) dims (batched or not)
    for i, a in enumerate(mats):
        x = np.moveaxis(np.matmul(np.moveaxis(x, first + i, -1), a.T.astype(x.dtype, copy=False)), -1, first + i)
    return np.ascontiguousarray(x)


def _window_means_steps(x, mats):
    """PyTorch's adaptive_avg_pool3d kernel in bfloat16: the window summed in its own dtype (d, h, w order, each
    addition rounded), then divided by each dim's count in turn, rounded each time."""
    d = len(mats)
    first = x.ndim - d
    starts, counts = [], []
    for a in mats:
        inside = np.asarray(a) != 0
        starts.append(np.argmax(inside, axis=1))
        counts.append(inside.sum(axis=1))
    f32 = x.astype(np.float32)
    s = np.zeros(x.shape[:first] + tuple(len(c) for c in counts), np.float32)
    for offs in np.ndindex(*(int(c.max()) for c in counts)):
        ix, ok = [], True
        for i, (o, st, c) in enumerate(zip(offs, starts, counts)):
            shp = [1] * d
            shp[i] = len(c)
            ix.append(np.minimum(st + o, x.shape[first + i] - 1).reshape(shp))
            ok = ok & (o < c).reshape(shp)
        v = f32[(Ellipsis,) + tuple(ix)]
        s = np.where(ok, (s + v).astype(BF16).astype(np.float32), s)
    for i, c in enumerate(counts):
        shp = [1] * d
        shp[i] = len(c)
        s = (s / c.reshape(shp).astype(np.float32)).astype(BF16).astype(np.float32)
    return s.astype(BF16)


def _window_means(x, mats, once: bool):
    first = x.ndim - len(mats)
    s = x.astype(np.float64)   # exact window sums of bfloat16 values, as PyTorch's float32 ones in practice
    counts = []
    for i, a in enumerate(mats):
        a = np.asarray(a, np.float64)
        top = a.max(axis=1)
        counts.append(np.where(top > 0, np.rint(1.0 / np.where(top > 0, top, 1.0)), 1.0).astype(np.float32))
        s = np.moveaxis(np.matmul(np.moveaxis(s, first + i, -1), (a != 0).T.astype(np.float64)), -1, first + i)
    s = s.astype(np.float32)
    d = len(mats)
    shaped = [c.reshape((-1,) + (1,) * (d - 1 - i)) for i, c in enumerate(counts)]
    if once:
        div = shaped[0]
        for c in shaped[1:]:
            div = div * c
        s = s / div
    else:
        for c in shaped:
            s = s / c
    return np.ascontiguousarray(s.astype(BF16))


def _running_argmax(views, lowest, count, full=False):
    """PyTorch's max-pool scan: over the window offsets in order, take a value when it is greater than the
    maximum so far or NaN (so ties keep the first maximum, NaN the last NaN). ``views`` yields the values at
    each offset; returns the winning offset's number (-1 where nothing beat ``lowest``). ``full``: every
    offset of every window is inside the input (no padding), so the first offset starts the scan; ``count``:
    the number of offsets."""
    best = None
    kbest = None
    kt = np.int16 if count < 32766 else np.int32
    for k, v in enumerate(views):
        if best is None:
            if full:
                best = v.copy()
                kbest = np.ones(v.shape, dtype=kt)
                continue
            best = np.full(v.shape, lowest, dtype=v.dtype)
            kbest = np.zeros(v.shape, dtype=kt)
        take = v > best
        if v.dtype.kind in "fV":
            take |= v != v   # NaN
        best = np.maximum(best, v)   # NaN propagates: a NaN maximum stays, as in the scan
        # offsets only grow, so "the latest taker" is a running maximum of k + 1 where taken (0: none yet)
        kbest = np.maximum(kbest, take.view(np.int8) * kt(k + 1))
    return kbest - 1


def _flat(per_dim, size):
    """Flat spatial index from per-dim positions (each broadcastable over the output's spatial dims)."""
    out = 0
    for i, p in enumerate(per_dim):
        out = out + p * _math.prod(size[i + 1:])
    return np.asarray(out, dtype=np.int64)


def _lowest(dtype):
    return -np.inf if dtype.kind in "fV" else (np.iinfo(dtype).min if dtype.kind in "iu" else False)


def _tiles_offset_major(x, kernel, out_size, out):
    """The windows of ``x`` (B, C, H, W), contiguous, tiled exactly by ``kernel`` (stride = kernel, no padding or
    dilation, H = L0*k0, W = L1*k1), written offset-major into ``out`` (k0*k1, B*C*L0*L1): what np.stack of the
    strided window views writes, in two passes with long loops instead of one short run per output row: the
    width offsets apart (one strided pass each), then each window row of L1 elements moved as one item."""
    (k0, k1), L1 = kernel, out_size[1]
    M = x.size // (k0 * k1)   # elements per offset
    cols = np.empty((k1, M * k0), dtype=x.dtype)
    np.copyto(cols, x.reshape(-1, k1).T)
    item = np.dtype((np.void, L1 * x.itemsize))   # one window row: raw bytes, copied as they are
    np.copyto(out.reshape(k0, k1, M).view(item).reshape(k0, k1, M // L1),
              cols.view(item).reshape(k1, M // L1, k0).transpose(2, 0, 1))
    return out


def _first_max_indices(views, kernel, stride, dilation, out_size, size, x=None):
    """The scan of _running_argmax when no window holds a NaN or padding, in fewer passes: the windows'
    maximum, then the number of leading offsets (in window order) below it, i.e. the first offset equal to
    it (ties: the first maximum). None when a window holds a NaN (PyTorch's scan then picks the last NaN:
    the caller runs the scan)."""
    K = len(views)
    shape = views[0].shape
    N = shape[0]
    kbest = np.empty(shape, dtype=np.uint8 if K < 256 else np.int64)
    per = K * views[0][:1].size * views[0].itemsize
    wbuf = np.empty((K, _chunk_size(N, per)) + shape[1:], dtype=views[0].dtype)
    for n0, n1 in _chunks(N, per):
        # this chunk's window values offset-major and contiguous: every pass below then runs over long rows
        # (strided views of small pooled maps loop over short rows, one per output row: slower)
        if x is not None:   # exact tiling (see _tiles_offset_major)
            w = wbuf[:, :n1 - n0]
            _tiles_offset_major(x[n0:n1], kernel, out_size, w.reshape(K, -1))
        else:
            w = np.stack([v[n0:n1] for v in views], out=wbuf[:, :n1 - n0])
        m = np.maximum(w[0], w[-1])
        for v in w[1:-1]:
            np.maximum(m, v, out=m)
        if m.dtype.kind in "fV" and np.isnan(m).any():
            return None
        below = np.ones(m.shape, dtype=np.uint8)     # every offset so far is below the maximum
        kb = kbest[n0:n1]
        kb[...] = 0
        for v in w[:-1]:
            below &= (v != m).view(np.uint8)
            kb += below
    d = len(kernel)
    pitch = [_math.prod(size[i + 1:]) for i in range(d)]   # flat strides of the input's spatial dims
    origin = 0
    for i in range(d):
        shp = [1] * d
        shp[i] = out_size[i]
        origin = origin + (np.arange(out_size[i], dtype=np.int64) * (stride[i] * pitch[i])).reshape(shp)
    offs = np.array([sum(k[i] * dilation[i] * pitch[i] for i in range(d)) for k in np.ndindex(*kernel)],
                    dtype=np.int64)
    idx = offs.take(kbest)
    idx += origin
    return idx


def max_pool_indices(x, kernel, stride, pads, dilation, out_size):
    """Flat spatial indices (N, C, *L) of each window's maximum, PyTorch's way (see _running_argmax): one
    vectorised step per kernel offset, never a loop over pixels."""
    d = len(kernel)
    low = _lowest(x.dtype)
    xp_ = _padded(x, pads, low)
    size = x.shape[2:]
    starts = []
    for i in range(d):
        shp = [1] * d
        shp[i] = out_size[i]
        starts.append((np.arange(out_size[i]) * stride[i] - pads[i][0]).reshape(shp))
    lead = (slice(None), slice(None))
    views = (xp_[lead + tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1,
                                    stride[i]) for i in range(d))] for k in np.ndindex(*kernel))
    full = not any(lo or hi for lo, hi in pads)
    if full:
        tiled = (d == 2 and tuple(stride) == tuple(kernel) and all(dl == 1 for dl in dilation)
                 and all(S == L * k for S, L, k in zip(size, out_size, kernel)) and x.flags.c_contiguous and x.size)
        idx = _first_max_indices(list(views), kernel, stride, dilation, out_size, size, x if tiled else None)
        if idx is not None:
            return idx
        views = (xp_[lead + tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1,
                                        stride[i]) for i in range(d))] for k in np.ndindex(*kernel))
    kbest = _running_argmax(views, low, _math.prod(kernel), full)
    # the winning offset as per-dim positions; where nothing won (all lowest), PyTorch's index is the
    # window's first in-bounds position
    offsets = np.array(list(np.ndindex(*kernel)), dtype=np.int64).reshape(-1, d)   # offset number -> (k_0..)
    pos = []
    for i in range(d):
        st = starts[i]
        if full:   # every window has a winner
            pos.append(st + np.take(offsets[:, i] * dilation[i], kbest))
            continue
        first = np.where(st < 0, st + dilation[i] * -(st // dilation[i]), st)
        ki = np.take(offsets[:, i], np.maximum(kbest, 0))
        pos.append(np.where(kbest < 0, first, st + ki * dilation[i]))
    return _flat(pos, size)


def _adaptive_bounds(S: int, L: int):
    """PyTorch's adaptive windows along one dim: start = floor(i*S/L), end = ceil((i+1)*S/L)."""
    i = np.arange(L)
    return (i * S) // L, -((-(i + 1) * S) // L)


def adaptive_max_indices(x, out_size):
    """Flat spatial indices (N, C, *L) of each adaptive window's maximum, PyTorch's way (_running_argmax)."""
    d = len(out_size)
    size = x.shape[2:]
    per_dim = []
    for S, L in zip(size, out_size):
        start, end = _adaptive_bounds(S, L)
        kmax = int((end - start).max()) if L else 1
        # window positions, the last one repeated where a window is shorter (a repeat never wins a tie)
        per_dim.append(np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1))
    shapes = [[L if j == i else 1 for j in range(d)] for i, L in enumerate(out_size)]
    ks = [p.shape[1] for p in per_dim]

    def views():
        for k in np.ndindex(*ks):
            pos = [p[:, k[i]].reshape(shp) for i, (p, shp) in enumerate(zip(per_dim, shapes))]
            yield x[(slice(None), slice(None)) + tuple(np.broadcast_arrays(*pos))]
    kbest = np.maximum(_running_argmax(views(), _lowest(x.dtype), _math.prod(ks)), 0)   # nothing won: the first position
    offsets = np.array(list(np.ndindex(*ks)), dtype=np.int64).reshape(-1, d)
    pos = []
    for i in range(d):
        lsel = np.arange(out_size[i]).reshape(shapes[i])
        pos.append(per_dim[i][lsel, np.take(offsets[:, i], kbest)])
    idx = _flat(pos, size)
    return idx


# ----- fractional max pooling ------------------------------------------------------------------------------------

def _fractional_starts(u, S: int, L: int, k: int):
    """Window starts (P, L) along one dim of size ``S`` for pool size ``k``, from one sample per plane ``u``
    (P,): ATen's generate_intervals, computed in the samples' dtype (float32 samples round as float32):
    start_i = int((i + u) * alpha) - int(u * alpha) with alpha = (S - k) / (L - 1); the last is S - k."""
    out = np.empty((u.shape[0], L), dtype=np.int64)
    if L == 0:
        return out
    if L > 1:
        dt = u.dtype.type
        alpha = dt(S - k) / dt(L - 1)
        i = np.arange(L - 1, dtype=u.dtype)
        # C++'s static_cast<int> truncates toward zero (np.trunc, then the cast)
        out[:, :-1] = (np.trunc((i[None, :] + u[:, None]) * alpha).astype(np.int64)
                       - np.trunc(u * alpha).astype(np.int64)[:, None])
    out[:, -1] = S - k
    return out


def fractional_max_indices(x, kernel, out_size, samples, order):
    """Flat spatial indices (N, C, *L) of each fractional window's maximum in ``x`` (N, C, *S).

    ``samples`` (>= N, C, d): one uniform sample per plane and dim; ``order[i]`` is the sample that drives
    spatial dim i (ATen's 2-d kernel reads sample 0 for the width, 1 for the height; 3-d: 0, 1, 2 for T, H,
    W). The scan is ATen's: a value wins when it is greater than the maximum so far or NaN (ties keep the
    first, NaN the last NaN); a window of -inf keeps its first position. One vectorised step per kernel
    offset, never a loop over pixels."""
    N, C = x.shape[:2]
    d = len(kernel)
    size = x.shape[2:]
    P = N * C
    if P == 0:   # an empty batch: no windows (reshape(0, -1) is ambiguous)
        return np.zeros((N, C) + tuple(out_size), np.int64)
    u = np.asarray(samples)[:N].reshape(P, d)
    starts = []
    for i in range(d):
        st = _fractional_starts(u[:, order[i]], size[i], out_size[i], kernel[i])
        shp = [P] + [1] * d
        shp[1 + i] = out_size[i]
        starts.append(st.reshape(shp))
    flat = x.reshape(P, -1)
    strides = [_math.prod(size[i + 1:]) for i in range(d)]
    first = sum(s * m for s, m in zip(starts, strides))
    first = np.broadcast_to(first, (P,) + tuple(out_size)).reshape(P, -1)
    best_idx = first.copy()
    if flat.shape[1] == 0 or first.shape[1] == 0:
        return best_idx.reshape((N, C) + tuple(out_size))
    best = np.full(first.shape, -np.inf, dtype=x.dtype)
    for off in np.ndindex(*kernel):
        idx = first + sum(o * m for o, m in zip(off, strides))
        v = np.take_along_axis(flat, idx, 1)
        take = (v > best) | (v != v)
        best = np.where(take, v, best)
        best_idx = np.where(take, idx, best_idx)
    return best_idx.reshape((N, C) + tuple(out_size))


# ----- average pooling's matrices -------------------------------------------------------------------------------

def _pool_matrix(S, L, k, s, p, count_include_pad, dtype, divide=True):
    """The (L, S) averaging matrix of one spatial dim: ones over each window's part inside the input, divided
    by PyTorch's per-dim count (not divided: a summing matrix; ``divide`` None: the counts)."""
    start = np.arange(L) * s - p
    end = np.minimum(start + k, S + p)
    count = end - start
    lo, hi = np.maximum(start, 0), np.minimum(end, S)
    if not count_include_pad:
        count = hi - lo
    pos = np.arange(S)
    inside = (pos >= lo[:, None]) & (pos < hi[:, None])
    if divide is None:
        return np.maximum(count, 1)
    if not divide:
        return inside.astype(dtype)
    return inside / np.maximum(count, 1)[:, None].astype(dtype)


def avg_pool_matrices(x, size, out_size, kernel, stride, pad, count_include_pad, divisor_override):
    """avg_pool's (L, S) matrices, one per spatial dim of ``size`` (for dim_matrices), in ``x``'s float dtype:
    each window's mean over PyTorch's count, or its sum over ``divisor_override``."""
    dt = x.dtype if x.dtype.kind == "f" else F32 if x.dtype is BF16 else np.float64
    mats = [_pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=divisor_override is None)
            for S, L, k, s, p in zip(size, out_size, kernel, stride, pad)]
    if divisor_override is not None:   # sums over the windows, divided by the override
        mats[0] = mats[0] / divisor_override
    return tuple(m.astype(dt) for m in mats)


def avg_pool_integer(x, size, out_size, kernel, stride, pad, count_include_pad, divisor_override):
    """avg_pool of an integer ``x``: exact integer sums over exact counts, truncated as PyTorch's integer
    division (no gradient)."""
    dt = np.float64
    d = len(kernel)
    sums = [_pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=False)
            for S, L, k, s, p in zip(size, out_size, kernel, stride, pad)]
    div = divisor_override
    if div is None:
        div = 1
        for i, (S, L, k, s, p) in enumerate(zip(size, out_size, kernel, stride, pad)):
            shp = [1] * d
            shp[i] = L
            div = div * _pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=None).reshape(shp)
    return np.trunc(dim_matrices(x.astype(np.float64), tuple(sums)) / div).astype(x.dtype)


def adaptive_avg_matrices(x, out_size):
    """adaptive_avg_pool's (L, S) matrices, one per spatial dim (the last len(out_size) of ``x``), in its dtype."""
    dt = x.dtype if x.dtype.kind == "f" else F32 if x.dtype is BF16 else np.float64
    mats = []
    for S, L in zip(x.shape[x.ndim - len(out_size):], out_size):
        start, end = _adaptive_bounds(S, L)
        pos = np.arange(S)
        inside = (pos >= start[:, None]) & (pos < end[:, None])
        mats.append((inside / (end - start)[:, None]).astype(dt))
    return tuple(mats)
