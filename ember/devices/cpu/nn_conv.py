"""NumPy kernels of the convolution / pooling family (part of the raw namespace ``ember.devices.cpu.namespace``).

Everything is N-d generic over the spatial dims (1, 2 or 3). A convolution is a GEMM over an im2col copy of
a strided window view of the padded input, taken a chunk of samples at a time; its input gradient (= the
transposed convolution) is a GEMM followed by a col2im that loops over the kernel offsets (prod(kernel)
slice additions, never over pixels); its weight gradient is a GEMM summed over the chunks. Stride 1 (the
common case) uses "wide" columns, see _wide.

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


# Memory: the column matrices are built and consumed a chunk of samples at a time (_CHUNK_BYTES of columns
# at most, one sample at least): a whole-batch im2col copy is prod(kernel) times the input, and fresh pages
# cost more than the arithmetic here (each is faulted in and zeroed by the OS: about a quarter of a small
# CNN's training step, see bench/NOTES.md), besides falling out of the cache before the GEMM reads them.
_CHUNK_BYTES = 1 << 21


def _chunk_size(N: int, per_sample: int) -> int:
    """Samples per chunk: about _CHUNK_BYTES of ``per_sample`` bytes, at least one."""
    return max(1, min(N, _CHUNK_BYTES // max(per_sample, 1)))


def _chunks(N: int, per_sample: int):
    """Sample ranges [n0, n1) covering range(N), each holding about _CHUNK_BYTES of ``per_sample`` bytes.
    The kernels allocate each chunk's buffers once and reuse them: a fresh allocation per chunk can be
    handed back to the OS between chunks and faulted in again."""
    step = _chunk_size(N, per_sample)
    return [(n0, min(N, n0 + step)) for n0 in range(0, N, step)]


def _cols(x, kernel, stride, pads, dilation, out_size):
    """im2col: (N, C*prod(K), prod(L)), one contiguous copy of the windows, sample by sample, so that the
    convolution's GEMM gives (N, O, L), its output layout, with no transposed copy before or after."""
    N, C = x.shape[:2]
    d = len(kernel)
    win = _windows(_padded(x, pads), kernel, stride, dilation, out_size)
    perm = (0, 1) + tuple(range(2 + d, 2 + 2 * d)) + tuple(range(2, 2 + d))
    return win.transpose(perm).reshape(N, C * _math.prod(kernel), _math.prod(out_size))


# Stride 1 runs on "wide" columns: output position l sits at the flat index of its window's origin in the
# padded input (row pitch = the padded width, not the output's), so a kernel offset is one flat shift. A
# window copy or a col2im addition is then one contiguous run per (sample, channel) instead of one short run
# per output row (NumPy's per-row overhead dominated those), at the price of (padded width - output width)
# unused columns per row in the GEMMs. In the gradients the unused columns hold zeros, which add nothing as
# long as what multiplies them is finite (checked: a non-finite weight or input takes the compact path).

def _wide(grid, out_size):
    """(flat strides of ``grid`` in elements, the wide length T covering every output position)."""
    ps = tuple(_math.prod(grid[i + 1:]) for i in range(len(grid)))
    return ps, sum((L - 1) * p for L, p in zip(out_size, ps)) + 1


def _wide_ok(stride, grid, out_size, kernel, dilation):
    return all(s == 1 for s in stride) and all(P >= L + dl * (k - 1) for P, L, k, dl in
                                               zip(grid, out_size, kernel, dilation))


class _Chunked:
    """The samples [n0, n1) of ``x`` (N, C, *S), padded by ``pads`` and contiguous, one chunk after another
    in the same buffer (its border zeros written once)."""

    def __init__(self, x, pads, step):
        self.x, self.pads = x, pads
        self.inner = (slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))
        self.padded = any(lo or hi for lo, hi in pads)
        if self.padded:
            self.buf = np.zeros((step,) + x.shape[1:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)),
                                dtype=x.dtype)

    def __call__(self, n0, n1):
        if not self.padded:
            return np.ascontiguousarray(self.x[n0:n1])
        b = self.buf[:n1 - n0]
        b[self.inner] = self.x[n0:n1]
        return b


def _cols_rows(xp_, kernel, dilation, ps, T, buf):
    """The wide columns of the contiguous padded chunk ``xp_`` (B, C, *grid) as one matrix (C*prod(K), B*T),
    each sample's T columns side by side, written into the first B*T columns of ``buf`` (C*prod(K), >= B*T),
    so that a convolution over the chunk is a single GEMM."""
    B, C = xp_.shape[:2]
    it = xp_.itemsize
    view = _as_strided(xp_, (B, C) + tuple(kernel) + (T,),
                       xp_.strides[:2] + tuple(dl * p * it for dl, p in zip(dilation, ps)) + (it,), writeable=False)
    cols = buf[:, :B * T]
    d = len(kernel)
    np.copyto(cols.reshape((C,) + tuple(kernel) + (B, T)),
              view.transpose((1,) + tuple(range(2, 2 + d)) + (0, 2 + d)))
    return cols


def _rows_view(a, B, T, ps, out_size, writeable=False):
    """The (R, B, *L) output positions of the wide rows ``a`` (R, >= B*T), B samples of T columns each."""
    it = a.itemsize
    return _as_strided(a, (a.shape[0], B) + tuple(out_size), (a.strides[0], T * it) + tuple(p * it for p in ps),
                       writeable=writeable)


def _group_mm(w, m, groups, transpose_w=False, out=None):
    """w (O, Cg*K) [transposed: (Cg*K, O) per group] times m (rows, n) split into groups of rows: one GEMM
    per group, the results stacked back as rows."""
    O = w.shape[0]
    if groups == 1:
        wm = w.reshape(O, -1)
        return np.matmul(wm.T if transpose_w else wm, m, out=out)
    wm = w.reshape(groups, O // groups, -1)
    a = wm.transpose(0, 2, 1) if transpose_w else wm
    res = np.matmul(a, m.reshape(groups, m.shape[0] // groups, m.shape[1]),
                    out=None if out is None else out.reshape(groups, a.shape[1], out.shape[1]))
    return res.reshape(groups * a.shape[1], m.shape[1])


def _stacked(w, cols, groups, transpose_w=False):
    """The per-sample, per-group GEMM (the strided convolutions): w (O, Cg*K) [transposed: (Cg*K, O) per
    group] times cols (N, C*K, L) [(N, O, L)]: NumPy hands each 2-d product to BLAS; the result (N, rows, L)
    is the output's layout, no transposed copy."""
    N, _, L = cols.shape
    O = w.shape[0]
    if groups == 1:
        wm = w.reshape(O, -1)
        return np.matmul(wm.T if transpose_w else wm, cols)
    wm = w.reshape(groups, O // groups, -1)
    a = wm.transpose(0, 2, 1) if transpose_w else wm
    res = np.matmul(a, cols.reshape(N, groups, cols.shape[1] // groups, L))
    return res.reshape(N, res.shape[1] * res.shape[2], L)


def conv_nd(x, w, b, stride, pads, dilation, groups):
    """The convolution of ``x`` (N, C, *S) with ``w`` (O, C/groups, *K), plus ``b`` (O,) or None."""
    N, C = x.shape[:2]
    O = w.shape[0]
    kernel = tuple(w.shape[2:])
    K = _math.prod(kernel)
    grid = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    out_size = _out_size(grid, kernel, stride, dilation)
    out = np.empty((N, O) + out_size, dtype=np.result_type(x, w))
    if _wide_ok(stride, grid, out_size, kernel, dilation):
        ps, T = _wide(grid, out_size)
        step = _chunk_size(N, C * K * T * x.itemsize)
        chunk = _Chunked(x, pads, step)
        cbuf = np.empty((C * K, step * T), dtype=x.dtype)
        obuf = np.empty((O, step * T), dtype=out.dtype)
        for n0, n1 in _chunks(N, C * K * T * x.itemsize):
            B = n1 - n0
            cols = _cols_rows(chunk(n0, n1), kernel, dilation, ps, T, cbuf)
            res = _group_mm(w, cols, groups, out=obuf[:, :B * T])        # the chunk's one GEMM: (O, B*T)
            res = _rows_view(res, B, T, ps, out_size).swapaxes(0, 1)
            if b is None:
                out[n0:n1] = res
            else:   # the bias added while the output is copied out of the wide rows
                np.add(res, b.reshape((O,) + (1,) * len(kernel)), out=out[n0:n1])
        return out
    flat = out.reshape(N, O, _math.prod(out_size))
    for n0, n1 in _chunks(N, C * K * flat.shape[2] * x.itemsize):
        flat[n0:n1] = _stacked(w, _cols(x[n0:n1], kernel, stride, pads, dilation, out_size), groups)
    if b is not None:
        out += b.reshape((O,) + (1,) * len(kernel))
    return out


def _col2im_nc(out, cols, stride, dilation, lo):
    """Add the columns (N, C, *K, *L) into ``out`` (N, C, *size), window origins at ``-lo``: one strided
    slice addition per kernel offset (never a loop over pixels), each clipped to the rows it reaches
    inside ``size``, so neither a padded buffer nor a cropping copy is needed."""
    d = out.ndim - 2
    size = out.shape[2:]
    kernel = cols.shape[2:2 + d]
    out_size = cols.shape[2 + d:]
    lead = (slice(None), slice(None))
    for k in np.ndindex(*kernel):
        src, dst = [], []
        for i in range(d):
            off = k[i] * dilation[i] - lo[i]          # where column 0 of this offset lands
            l0 = max(0, -(off // stride[i]))
            l1 = min(out_size[i], (size[i] - 1 - off) // stride[i] + 1)
            if l1 <= l0:
                break
            src.append(slice(l0, l1))
            dst.append(slice(off + l0 * stride[i], off + (l1 - 1) * stride[i] + 1, stride[i]))
        else:
            out[lead + tuple(dst)] += cols[lead + k + tuple(src)]


def conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size):
    """The transposed convolution (the input gradient of ``conv_nd``): ``x`` (N, O, *L), ``w``
    (O, C/groups, *K), output (N, C, *size), plus ``b`` (C,) or None."""
    N, O = x.shape[:2]
    out_size = tuple(x.shape[2:])
    kernel = tuple(w.shape[2:])
    K = _math.prod(kernel)
    C = groups * w.shape[1]
    size = tuple(size)
    grid = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
    out = np.zeros((N, C) + size, dtype=np.result_type(x, w))
    if _wide_ok(stride, grid, out_size, kernel, dilation) and np.isfinite(w).all():
        ps, T = _wide(grid, out_size)
        P = _math.prod(grid)
        offs = [sum(ki * dl * p for ki, dl, p in zip(k, dilation, ps)) for k in np.ndindex(*kernel)]
        padded = any(lo or hi for lo, hi in pads)
        crop = (slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
        step = _chunk_size(N, C * K * T * out.itemsize)
        gbuf = np.zeros((O, step * T), dtype=x.dtype)     # zeros between the positions, never written
        cbuf = np.empty((C * K, step * T), dtype=out.dtype)
        pbuf = np.empty((step, C, P), dtype=out.dtype) if padded else None
        for n0, n1 in _chunks(N, C * K * T * out.itemsize):
            B = n1 - n0
            g = gbuf[:, :B * T]
            _rows_view(g, B, T, ps, out_size, writeable=True)[...] = x[n0:n1].swapaxes(0, 1)
            cols = _group_mm(w, g, groups, transpose_w=True, out=cbuf[:, :B * T])   # (C*K, B*T): one GEMM
            cols = cols.reshape(C, K, B, T)
            if padded:
                buf = pbuf[:B]
                buf[...] = 0
            else:
                buf = out[n0:n1].reshape(B, C, P)
            for j, off in enumerate(offs):   # one shifted addition per kernel offset, contiguous runs of T
                buf[:, :, off:off + T] += cols[:, j].swapaxes(0, 1)
            if padded:
                out[n0:n1] = buf.reshape((B, C) + grid)[crop]
    else:
        L = _math.prod(out_size)
        for n0, n1 in _chunks(N, C * K * L * out.itemsize):
            cols = _stacked(w, x[n0:n1].reshape(n1 - n0, O, L), groups, transpose_w=True)
            _col2im_nc(out[n0:n1], cols.reshape((n1 - n0, C) + kernel + out_size), stride, dilation,
                       [lo for lo, _ in pads])
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(kernel))
    return out


def conv_weight_nd(x, gy, wshape, stride, pads, dilation, groups):
    """The weight gradient of ``conv_nd``: ``x`` (N, C, *S) against the output gradient ``gy`` (N, O, *L):
    one GEMM per chunk of samples (stride 1; else per sample), summed over the chunks."""
    N, O = gy.shape[:2]
    C = x.shape[1]
    out_size = tuple(gy.shape[2:])
    kernel = tuple(wshape[2:])
    K = _math.prod(kernel)
    grid = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    dtype = np.result_type(x, gy)
    if _wide_ok(stride, grid, out_size, kernel, dilation):
        ps, T = _wide(grid, out_size)
        step = _chunk_size(N, C * K * T * dtype.itemsize)
        chunk = _Chunked(x, pads, step)
        cbuf = np.empty((C * K, step * T), dtype=x.dtype)
        gbuf = np.zeros((O, step * T), dtype=gy.dtype)    # zeros between the positions, never written
        dw = np.zeros((groups, O // groups, (C // groups) * K), dtype=dtype)
        for n0, n1 in _chunks(N, C * K * T * dtype.itemsize):
            B = n1 - n0
            cols = _cols_rows(chunk(n0, n1), kernel, dilation, ps, T, cbuf)
            g = gbuf[:, :B * T]
            _rows_view(g, B, T, ps, out_size, writeable=True)[...] = gy[n0:n1].swapaxes(0, 1)
            dw += np.matmul(g.reshape(groups, O // groups, B * T),
                            cols.reshape(groups, (C // groups) * K, B * T).swapaxes(1, 2))
        # the unused wide columns hold zeros in g; against a non-finite input there they give NaN: redo
        # those the compact way
        if np.isfinite(dw).all() or np.isfinite(x).all():
            return dw.reshape(wshape)
    dw = np.zeros((groups, O // groups, (C // groups) * K), dtype=dtype)
    T = _math.prod(out_size)
    for n0, n1 in _chunks(N, C * K * T * dtype.itemsize):
        B = n1 - n0
        cols = _cols(x[n0:n1], kernel, stride, pads, dilation, out_size)
        g = gy[n0:n1].reshape(B, O, T)
        dw += np.matmul(g.reshape(B, groups, O // groups, T),
                        cols.reshape(B, groups, (C // groups) * K, T).transpose(0, 1, 3, 2)).sum(0)
    return dw.reshape(wshape)


# ----- F.fold's col2im (layout (C, *K, N, *L)) -------------------------------------------------------

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


# ----- pooling ------------------------------------------------------------------------------------------

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


def grad_link(g, a, b, node):
    """``g`` itself (see ember.ops.nn_conv.grad_link_p: under create_graph it is connected to ``a`` and ``b``)."""
    return g


def grad_link_zero(g, a, b, node):
    """``g`` itself (see ember.ops.nn_conv.grad_link_zero_p)."""
    return g


def pool_backward(g, x, indices, sd, unique=False):
    """Max pooling's input gradient: ``g`` scattered into zeros of ``x``'s shape (``x`` is there for its shape,
    as PyTorch's backward takes the input: a second derivative is connected to it)."""
    return pool_scatter(g, indices, x.shape, sd, unique)


def avg_pool_backward(g, x, mats):
    """Average pooling's input gradient: the transposed matrices applied to ``g`` (``x``: see pool_backward)."""
    return dim_matrices(g, tuple(a.T for a in mats))


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


def _first_max_indices(views, kernel, stride, dilation, out_size, size):
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
        w = np.stack([v[n0:n1] for v in views], out=wbuf[:, :n1 - n0])
        m = np.maximum(w[0], w[-1])
        for v in w[1:-1]:
            np.maximum(m, v, out=m)
        if m.dtype.kind == "f" and np.isnan(m).any():
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
    if full:
        idx = _first_max_indices(list(views), kernel, stride, dilation, out_size, size)
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


def pad_backward(g, x, idx):
    """Reflection/replication padding's input gradient (``x``: see pool_backward)."""
    return pad_gather_backward(g, idx, x.shape)


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
