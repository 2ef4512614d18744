"""NumPy kernels of the convolution / pooling family (part of the raw namespace ``_numpy_ns``).

Everything is N-d generic over the spatial dims (1, 2 or 3). A convolution is one GEMM per group over an
im2col copy of a strided window view of the padded input; its input gradient (= the transposed
convolution) is one GEMM followed by a col2im that loops over the kernel offsets (prod(kernel) strided
slice additions, never over pixels); its weight gradient is one GEMM.

Conventions: ``pads`` is a tuple of (lo, hi) pairs, one per spatial dim; ``size`` the spatial size of a
transposed convolution's (cropped) output; indices of max pooling are flat indices into the input's
spatial dims (PyTorch's).
"""
from __future__ import annotations

import math as _math

import numpy as np
from numpy.lib.stride_tricks import as_strided as _as_strided


def _padded(x, pads, value=0):
    """``x`` (N, C, *S) with ``pads`` added around its spatial dims (a new array only when needed)."""
    if not any(lo or hi for lo, hi in pads):
        return x
    shape = x.shape[:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    out = np.full(shape, value, dtype=x.dtype) if value else np.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))] = x
    return out


def _windows(xp_, kernel, stride, dilation, out_size):
    """The read-only view (N, C, *L, *K) of the windows of the padded input ``xp_``."""
    st = xp_.strides
    d = len(kernel)
    shape = xp_.shape[:2] + tuple(out_size) + tuple(kernel)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(d)) + tuple(st[2 + i] * dilation[i]
                                                                           for i in range(d))
    return _as_strided(xp_, shape, strides, writeable=False)


def _out_size(padded, kernel, stride, dilation):
    return tuple((p - dl * (k - 1) - 1) // s + 1 for p, k, s, dl in zip(padded, kernel, stride, dilation))


def _cols(x, kernel, stride, pads, dilation, groups, out_size):
    """im2col: (G, Cg*prod(K), N*prod(L)), one contiguous copy of the windows."""
    N, C = x.shape[:2]
    d = len(kernel)
    win = _windows(_padded(x, pads), kernel, stride, dilation, out_size)
    perm = (1,) + tuple(range(2 + d, 2 + 2 * d)) + (0,) + tuple(range(2, 2 + d))
    return win.transpose(perm).reshape(groups, (C // groups) * _math.prod(kernel), N * _math.prod(out_size))


def _gemm(a, b):
    """Per-group products (G, m, k) @ (G, k, n) as 2-d BLAS calls (NumPy's stacked matmul may fall back to
    a slow loop for transposed operands)."""
    if a.shape[0] == 1:
        return np.matmul(a[0], b[0])[None]
    return np.stack([np.matmul(a[i], b[i]) for i in range(a.shape[0])])


def conv_nd(x, w, b, stride, pads, dilation, groups):
    """The convolution of ``x`` (N, C, *S) with ``w`` (O, C/groups, *K), plus ``b`` (O,) or None."""
    N = x.shape[0]
    O = w.shape[0]
    kernel = w.shape[2:]
    d = len(kernel)
    out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)], kernel, stride, dilation)
    cols = _cols(x, kernel, stride, pads, dilation, groups, out_size)
    out = _gemm(w.reshape(groups, O // groups, -1), cols)              # (G, Og, N*L): the GEMM
    out = out.reshape((O, N) + out_size).swapaxes(0, 1)
    if b is not None:
        out = out + b.reshape((1, O) + (1,) * d)
    return np.ascontiguousarray(out)


def _col2im(cols, kernel, stride, dilation, full, lo, size):
    """Sum the columns (C, *K, N, *L) into a zero buffer (C, N, *full), one strided slice per kernel
    offset; crop the window [lo, lo + size) of each spatial dim; return (N, C, *size)."""
    C = cols.shape[0]
    d = len(kernel)
    N = cols.shape[1 + d]
    out_size = cols.shape[2 + d:]
    buf = np.zeros((C, N) + tuple(full), dtype=cols.dtype)
    lead = (slice(None), slice(None))
    for k in np.ndindex(*kernel):
        sl = tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1, stride[i])
                   for i in range(d))
        buf[lead + sl] += cols[(slice(None),) + k]
    buf = buf[lead + tuple(slice(l, l + s) for l, s in zip(lo, size))]
    return np.ascontiguousarray(buf.swapaxes(0, 1))


def conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size):
    """The transposed convolution (the input gradient of ``conv_nd``): ``x`` (N, O, *L), ``w``
    (O, C/groups, *K), output (N, C, *size), plus ``b`` (C,) or None."""
    N, O = x.shape[:2]
    out_size = x.shape[2:]
    Cg = w.shape[1]
    kernel = w.shape[2:]
    d = len(kernel)
    Og = O // groups
    gm = x.reshape((N, groups, Og, _math.prod(out_size))).transpose(1, 2, 0, 3).reshape(groups, Og, -1)
    wm = w.reshape(groups, Og, -1).transpose(0, 2, 1)                     # (G, Cg*K, Og)
    cols = _gemm(wm, gm).reshape((groups * Cg,) + tuple(kernel) + (N,) + tuple(out_size))
    full = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
    out = _col2im(cols, kernel, stride, dilation, full, [lo for lo, _ in pads], size)
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * d)
    return out


def conv_weight_nd(x, gy, wshape, stride, pads, dilation, groups):
    """The weight gradient of ``conv_nd``: ``x`` (N, C, *S) against the output gradient ``gy`` (N, O, *L)."""
    N, O = gy.shape[:2]
    out_size = gy.shape[2:]
    kernel = tuple(wshape[2:])
    cols = _cols(x, kernel, stride, pads, dilation, groups, out_size)      # (G, Cg*K, N*L)
    gm = gy.reshape((N, groups, O // groups, _math.prod(out_size))).transpose(1, 2, 0, 3).reshape(
        groups, O // groups, -1)
    return _gemm(gm, cols.transpose(0, 2, 1)).reshape(wshape)


# ----- pooling ------------------------------------------------------------------------------------------

def pool_gather(x, indices, sd, unique=False):
    """``x`` (..., *S) read at flat spatial ``indices`` (..., *L); ``sd``: the number of spatial dims."""
    if x.size == 0 or indices.size == 0:
        return np.zeros(indices.shape, dtype=x.dtype)
    lead = _math.prod(x.shape[:x.ndim - sd])
    flat = x.reshape(lead, -1)
    return np.take_along_axis(flat, indices.reshape(lead, -1), 1).reshape(indices.shape)


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


def dim_matrices(x, mats):
    """``x`` (N, C, *S) with matrix ``mats[i]`` (L_i, S_i) applied along spatial dim i: separable linear
    pooling (average pooling, adaptive average pooling) as one small GEMM per dim."""
    first = x.ndim - len(mats)   # the matrices act on the last len(mats) dims (batched or not)
    for i, a in enumerate(mats):
        x = np.moveaxis(np.matmul(np.moveaxis(x, first + i, -1), a.T.astype(x.dtype, copy=False)), -1, first + i)
    return np.ascontiguousarray(x)


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
        if v.dtype.kind == "f":
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
    return -np.inf if dtype.kind == "f" else (np.iinfo(dtype).min if dtype.kind in "iu" else False)


def _max_pool_indices(x, kernel, stride, pads, dilation, out_size):
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


def _adaptive_max_indices(x, out_size):
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


# ----- padding --------------------------------------------------------------------------------------------

def _pad_slices(shape, pads):
    """(source, destination) slices of the last len(pads) dims for a constant pad by (lo, hi) pairs, which
    may be negative (cropping)."""
    src, dst = [], []
    for s, (lo, hi) in zip(shape[len(shape) - len(pads):], pads):
        a, b = max(-lo, 0), s - max(-hi, 0)
        src.append(slice(a, max(a, b)))
        dst.append(slice(max(lo, 0), max(lo, 0) + max(b - a, 0)))
    return (Ellipsis,) + tuple(src), (Ellipsis,) + tuple(dst)


def constant_pad(x, pads, value):
    """``x`` padded with ``value`` by (lo, hi) pairs over its last len(pads) dims (negative: cropped)."""
    lead = x.ndim - len(pads)
    shape = x.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[lead:], pads))
    out = np.full(shape, value, dtype=x.dtype)
    src, dst = _pad_slices(x.shape, pads)
    out[dst] = x[src]
    return out


def constant_pad_backward(g, pads, shape):
    """The gradient of ``constant_pad``: the unpadded part of ``g`` in zeros of the input's ``shape``."""
    out = np.zeros(shape, dtype=g.dtype)
    src, dst = _pad_slices(shape, pads)
    out[src] = g[dst]
    return out


def pad_gather(x, idx):
    """``x`` read at index vector ``idx[i]`` along each of its last len(idx) dims (reflect, replicate and
    circular padding are such index maps)."""
    lead = x.ndim - len(idx)
    for i, ix in enumerate(idx):
        x = np.take(x, ix, axis=lead + i)
    return x


def pad_gather_backward(g, idx, shape):
    """The gradient of ``pad_gather``: each dim's index map transposed, one vectorised slab addition per
    position outside the identity run (the padding), the interior copied in one go."""
    lead = len(shape) - len(idx)
    for i in range(len(idx) - 1, -1, -1):
        ix = np.asarray(idx[i])
        ax = lead + i
        S = shape[ax]
        out = np.zeros(g.shape[:ax] + (S,) + g.shape[ax + 1:], dtype=g.dtype)
        # the interior: the longest run where ix[j] = ix[j0] + (j - j0)
        run = np.flatnonzero(np.diff(ix) != 1)
        starts = np.concatenate(([0], run + 1))
        ends = np.concatenate((run + 1, [len(ix)]))
        k = int(np.argmax(ends - starts)) if len(ix) else 0
        j0, j1 = (int(starts[k]), int(ends[k])) if len(ix) else (0, 0)
        pre = (slice(None),) * ax
        if j1 > j0:
            out[pre + (slice(int(ix[j0]), int(ix[j0]) + j1 - j0),)] += g[pre + (slice(j0, j1),)]
        for j in list(range(j0)) + list(range(j1, len(ix))):
            out[pre + (int(ix[j]),)] += g[pre + (j,)]
        g = out
    return g


# ----- unfold / fold (im2col / col2im), pixel and channel shuffles ----------------------------------------

def im2col(x, kernel, dilation, pads, stride):
    """F.unfold: (N, C, *S) -> (N, C*prod(kernel), L) columns of the sliding blocks ((C, *S): unbatched)."""
    if x.ndim == len(kernel) + 1:
        return im2col(x[None], kernel, dilation, pads, stride)[0]
    N, C = x.shape[:2]
    d = len(kernel)
    out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)], kernel, stride, dilation)
    win = _windows(_padded(x, pads), kernel, stride, dilation, out_size)
    perm = (0, 1) + tuple(range(2 + d, 2 + 2 * d)) + tuple(range(2, 2 + d))
    return win.transpose(perm).reshape(N, C * _math.prod(kernel), _math.prod(out_size))


def col2im(cols, size, kernel, dilation, pads, stride):
    """F.fold: (N, C*prod(kernel), L) -> (N, C, *size), overlapping blocks summed ((C*K, L): unbatched)."""
    if cols.ndim == 2:
        return col2im(cols[None], size, kernel, dilation, pads, stride)[0]
    N, CK = cols.shape[:2]
    d = len(kernel)
    C = CK // _math.prod(kernel)
    out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(size, pads)], kernel, stride, dilation)
    c = cols.reshape((N, C) + tuple(kernel) + tuple(out_size))
    c = c.transpose((1,) + tuple(range(2, 2 + d)) + (0,) + tuple(range(2 + d, 2 + 2 * d)))   # (C, *K, N, *L)
    full = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
    return _col2im(c, kernel, stride, dilation, full, [lo for lo, _ in pads], size)


def pixel_shuffle(x, r):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    *lead, C, H, W = x.shape
    c = C // (r * r)
    y = x.reshape(tuple(lead) + (c, r, r, H, W))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return y.reshape(tuple(lead) + (c, H * r, W * r))


def pixel_unshuffle(x, r):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    *lead, C, H, W = x.shape
    h, w = H // r, W // r
    y = x.reshape(tuple(lead) + (C, h, r, w, r))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return y.reshape(tuple(lead) + (C * r * r, h, w))


def channel_shuffle(x, groups):
    """(N, C, *) with the channels regrouped: (groups, C/groups) transposed."""
    N, C = x.shape[:2]
    rest = x.shape[2:]
    return x.reshape((N, groups, C // groups) + rest).swapaxes(1, 2).reshape(x.shape)


# ----- affine_grid, grid_sample ------------------------------------------------------------------------------

def _base_grid(size, align_corners, dtype):
    """(*spatial, d+1): the normalised coordinates (x, y[, z], 1) of every output location, x fastest."""
    axes = []
    for s in size[2:][::-1]:   # x (width) first
        if s <= 1:
            v = np.zeros(max(s, 0), dtype=dtype)
        else:
            v = np.linspace(-1, 1, s, dtype=dtype)
            if not align_corners:
                v = v * dtype.type((s - 1) / s)
        axes.append(v)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")          # spatial order (D, H, W)
    coords = [m for m in mesh[::-1]]                         # x, y, z
    return np.stack(coords + [np.ones_like(mesh[0])], axis=-1)


def affine_grid(theta, size, align_corners):
    """(N, *spatial, d) sampling grid: the base grid transformed by each theta (N, d, d+1)."""
    base = _base_grid(size, align_corners, theta.dtype).reshape(-1, theta.shape[2])
    out = np.matmul(base, theta.swapaxes(1, 2))             # (N, S, d)
    return out.reshape((theta.shape[0],) + tuple(size[2:]) + (theta.shape[1],))


def affine_grid_backward(g, size, align_corners):
    """The gradient of ``affine_grid`` with respect to theta: (N, d, d+1)."""
    d = g.shape[-1]
    base = _base_grid(size, align_corners, g.dtype).reshape(-1, d + 1)
    return np.matmul(g.reshape(g.shape[0], -1, d).swapaxes(1, 2), base)
