"""NumPy kernels of convolution (part of the raw namespace ``ember.devices.cpu.namespace``); the window helpers
here (padding, strided window views, chunking, col2im) serve pooling and unfold/fold too (nn_pool.py, nn_pad.py).

Everything is N-d generic over the spatial dims (1, 2 or 3). A convolution is a GEMM over an im2col copy of
a strided window view of the padded input, taken a chunk of samples at a time; its input gradient (= the
transposed convolution) is a GEMM followed by a col2im that loops over the kernel offsets (prod(kernel)
slice additions, never over pixels); its weight gradient is a GEMM summed over the chunks. Stride 1 (the
common case) uses "wide" columns, see _wide.

Conventions: ``pads`` is a tuple of (lo, hi) pairs, one per spatial dim; ``size`` the spatial size of a
transposed convolution's (cropped) output.
"""
from __future__ import annotations

import functools as _functools
import math as _math

import numpy as np

from numpy.lib.stride_tricks import as_strided as _as_strided

from .reduced import BF16_ONLY, all_in_float32

__all__ = ["conv_nd", "conv_transpose_nd", "conv_weight_nd", "grad_link", "grad_link_zero"]


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


@_functools.lru_cache(maxsize=256)
def _offsets(kernel, dilation, ps):
    """The flat shift of each kernel offset (in np.ndindex order) on a grid of flat strides ``ps``."""
    return tuple(sum(ki * dl * p for ki, dl, p in zip(k, dilation, ps)) for k in np.ndindex(*kernel))


def _wide_ok(stride, grid, out_size, kernel, dilation):
    return all(s == 1 for s in stride) and all(P >= L + dl * (k - 1) for P, L, k, dl in
                                               zip(grid, out_size, kernel, dilation))


def _copy_rows(dst, src):
    """``dst[...] = src`` (same shape and dtype), each row along the last axis moved as one raw item when that
    axis is contiguous in both: NumPy's copy then loops over rows, not elements (small spatial maps have rows
    of 4 to 8 elements: 2 to 4 times as fast). The bytes are the same as an element-wise copy's."""
    n = dst.shape[-1] if dst.ndim else 0
    if (n > 1 and dst.dtype == src.dtype and dst.shape == src.shape and dst.strides[-1] == dst.itemsize
            and src.strides[-1] == src.itemsize and dst.size):
        item = np.dtype((np.void, n * dst.itemsize))
        np.copyto(dst.view(item)[..., 0], src.view(item)[..., 0])
    else:
        np.copyto(dst, src)


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
        _copy_rows(b[self.inner], self.x[n0:n1])
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
    _copy_rows(cols.reshape((C,) + tuple(kernel) + (B, T)),
               view.transpose((1,) + tuple(range(2, 2 + d)) + (0, 2 + d)))
    return cols


# Sample-minor wide columns (stride 1, the input gradient): the same wide columns, each chunk's B*T of them
# ordered position-major, sample-minor (column t*B + n, not n*T + t), and the padded result laid out
# (C, prod(grid), B). A kernel offset is then one shift of a whole (position, sample) slab: each col2im
# addition is one contiguous run of T*B elements per channel (per (sample, channel) before), which is what
# NumPy runs fast. The GEMM has the same shape and each column the same dot product; only the columns' order
# differs, and OpenBLAS's result for a column does not depend on its place when the column count is a
# multiple of its kernels' tile widths (checked: 16 float32, 8 float64, on thousands of random shapes; one
# column of a partial tile can round differently), hence _MINOR_COLS. The weight gradient sums over the
# columns: it keeps the sample-major order (another order would round differently). The forward keeps it too:
# with _copy_rows its copies are cheaper than the transposing ones of sample-minor columns.
_MINOR_COLS = 64


def _minor_ok(B, T):
    return (B * T) % _MINOR_COLS == 0


def _copy_by_samples(dst, src, nb):
    """``dst[...] = src``, ``nb`` samples (axis 0) at a time. For a transposing copy into sample-minor columns
    (``dst``'s axis 0 of stride one element): the source rows of a block stay in the L1 cache while their
    elements are spread out (a whole-batch copy misses it: 4 times as slow on (64, 32, 4, 4))."""
    for i in range(0, dst.shape[0], nb):
        np.copyto(dst[i:i + nb], src[i:i + nb])


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


@all_in_float32(dtypes=BF16_ONLY)   # NumPy's matmul of bfloat16 is float32: PyTorch's sums, rounded once
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
            if b is not None:   # the bias added over whole rows (the unused columns too), then copied out
                res += b.reshape(O, 1)
            res = _rows_view(res, B, T, ps, out_size).swapaxes(0, 1)
            _copy_rows(out[n0:n1], res)
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


@all_in_float32(dtypes=BF16_ONLY)   # NumPy's matmul of bfloat16 is float32: PyTorch's sums, rounded once
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
    out = np.empty((N, C) + size, dtype=np.result_type(x, w))
    if _wide_ok(stride, grid, out_size, kernel, dilation) and np.isfinite(w).all():
        ps, T = _wide(grid, out_size)
        P = _math.prod(grid)
        offs = _offsets(kernel, tuple(dilation), ps)
        padded = any(lo or hi for lo, hi in pads)
        crop = (slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
        step = _chunk_size(N, C * K * T * out.itemsize)
        # g's unused columns hold zeros (written when the layout changes, the positions never): sample-major
        # ones are the same for any chunk size, sample-minor ones move with it
        gbuf = np.empty((O, step * T), dtype=x.dtype)
        cbuf = np.empty((C * K, step * T), dtype=out.dtype)
        pbuf = np.empty((step, C, P), dtype=out.dtype) if padded else None
        mbuf = np.empty(C * P * step, dtype=out.dtype)
        zeroed = None
        for n0, n1 in _chunks(N, C * K * T * out.itemsize):
            B = n1 - n0
            g = gbuf[:, :B * T]
            if _minor_ok(B, T):
                if zeroed != B:
                    gbuf[...] = 0
                    zeroed = B
                it = g.itemsize
                _copy_by_samples(_as_strided(g, (B, O) + tuple(out_size), (it, g.strides[0]) +
                                             tuple(p * B * it for p in ps), writeable=True), x[n0:n1], 16)
                cols = _group_mm(w, g, groups, transpose_w=True, out=cbuf[:, :B * T])   # (C*K, T*B): one GEMM
                cols = cols.reshape(C, K, T * B)
                mb = mbuf[:C * P * B].reshape(C, P * B)
                mb[...] = 0
                for j, off in enumerate(offs):   # one shifted addition per kernel offset: one run of T*B
                    mb[:, off * B:(off + T) * B] += cols[:, j]
                mres = mb.reshape((C,) + grid + (B,))
                if padded:
                    mres = mres[(slice(None),) + crop[2:] + (slice(None),)]
                np.copyto(out[n0:n1], np.moveaxis(mres, -1, 0))
                continue
            if zeroed != "major":
                gbuf[...] = 0
                zeroed = "major"
            _copy_rows(_rows_view(g, B, T, ps, out_size, writeable=True), x[n0:n1].swapaxes(0, 1))
            cols = _group_mm(w, g, groups, transpose_w=True, out=cbuf[:, :B * T])   # (C*K, B*T): one GEMM
            cols = cols.reshape(C, K, B, T)
            if padded:
                buf = pbuf[:B]
                buf[...] = 0
            else:
                buf = out[n0:n1].reshape(B, C, P)
                buf[...] = 0
            for j, off in enumerate(offs):   # one shifted addition per kernel offset, contiguous runs of T
                buf[:, :, off:off + T] += cols[:, j].swapaxes(0, 1)
            if padded:
                out[n0:n1] = buf.reshape((B, C) + grid)[crop]
    else:
        out[...] = 0
        L = _math.prod(out_size)
        for n0, n1 in _chunks(N, C * K * L * out.itemsize):
            cols = _stacked(w, x[n0:n1].reshape(n1 - n0, O, L), groups, transpose_w=True)
            _col2im_nc(out[n0:n1], cols.reshape((n1 - n0, C) + kernel + out_size), stride, dilation,
                       [lo for lo, _ in pads])
    if b is not None:
        out += b.reshape((-1,) + (1,) * len(kernel))
    return out


@all_in_float32(dtypes=BF16_ONLY)   # NumPy's matmul of bfloat16 is float32: PyTorch's sums, rounded once
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
        # The GEMM as (C*K, columns) x (columns, O), transposed back: OpenBLAS's float32 result is the same bits
        # in either orientation when both dims are multiples of 16 (checked on thousands of random shapes, any
        # column count), and this one runs faster (it packs the long operands without transposing them).
        swap = dtype == np.float32 and (O // groups) % 16 == 0 and ((C // groups) * K) % 16 == 0
        for n0, n1 in _chunks(N, C * K * T * dtype.itemsize):
            B = n1 - n0
            cols = _cols_rows(chunk(n0, n1), kernel, dilation, ps, T, cbuf)
            g = gbuf[:, :B * T]
            _copy_rows(_rows_view(g, B, T, ps, out_size, writeable=True), gy[n0:n1].swapaxes(0, 1))
            gg = g.reshape(groups, O // groups, B * T)
            cc = cols.reshape(groups, (C // groups) * K, B * T)
            if swap:   # the same products as the product below, 1.4x as fast at the demo's 16->32 conv
                dw += np.matmul(cc, gg.swapaxes(1, 2)).swapaxes(1, 2)
            else:
                dw += np.matmul(gg, cc.swapaxes(1, 2))
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


def grad_link(g, a, b, node):
    """``g`` itself (see ember.ops.nn_conv.grad_link_p: under create_graph it is connected to ``a`` and ``b``)."""
    return g


def grad_link_zero(g, a, b, node):
    """``g`` itself (see ember.ops.nn_conv.grad_link_zero_p)."""
    return g
