"""NumPy kernels of the 'shape' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Kernels that view (``slice_dim``, ``select_dim``, ``diagonal``, ``unfold``) return writeable NumPy views of
their input, so that a view op's forward shares memory and can be replayed on its base; the others
(``flip``, ``roll``, ``rot90``, ...) return new memory, as PyTorch does. Every name here has a
differentiable twin in ``graph_ns`` (registered by ``ember/ops/shape.py``).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided
from .reduced import BF16

__all__ = ["slice_dim", "slice_scatter_zeros", "select_dim", "select_scatter_zeros", "diagonal",
           "diag_scatter_zeros", "flip", "roll", "rot90", "tril", "triu", "repeat", "trace", "unfold",
           "unfold_backward", "gather_rows", "scatter_rows_zeros", "split_backward", "repeat_index",
           "channels_last_copy", "as_strided", "as_strided_backward"]


def _as_strided(x, shape, strides, **kw):
    """NumPy's as_strided; ml_dtypes' float8_e5m2 (kind 'f', one byte) goes through a uint8 view, as NumPy's array
    interface cannot name it ('<f1')."""
    if x.dtype.kind == "f" and x.dtype.itemsize == 1:
        return _np_as_strided(x.view(np.uint8), shape, strides, **kw).view(x.dtype)
    return _np_as_strided(x, shape, strides, **kw)


def _along(dim: int, ix) -> tuple:
    return (slice(None),) * dim + (ix,)


def slice_dim(x, dim, start, stop, step=1):
    """``x`` narrowed to ``start:stop:step`` along ``dim`` (a view)."""
    return x[_along(dim, slice(start, stop, step))]


def slice_scatter_zeros(g, dim, start, stop, step, shape):
    """Zeros of ``shape`` holding ``g`` at ``start:stop:step`` along ``dim``."""
    out = np.zeros(shape, dtype=g.dtype)
    out[_along(dim, slice(start, stop, step))] = g
    return out


def select_dim(x, dim, index):
    """``x`` at ``index`` along ``dim`` (a view, 0-d included: the Ellipsis keeps NumPy from copying)."""
    return x[_along(dim, index) + (Ellipsis,)]


def select_scatter_zeros(g, dim, index, shape):
    out = np.zeros(shape, dtype=g.dtype)
    out[_along(dim, index) + (Ellipsis,)] = g
    return out


def _diag_geometry(shape, strides, offset, dim1, dim2):
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length, start = max(0, min(n1, n2 - offset)), offset * strides[dim2]
    else:
        length, start = max(0, min(n1 + offset, n2)), -offset * strides[dim1]
    rest = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    return (tuple(shape[i] for i in rest) + (length,), tuple(strides[i] for i in rest) +
            (strides[dim1] + strides[dim2],), start)


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of ``x`` over ``dim1``/``dim2`` (negative dims count from the end) as the last dim: a
    writeable view (NumPy's is read-only)."""
    dim1, dim2 = dim1 % x.ndim, dim2 % x.ndim   # (as_strided reads outside x with an unwrapped dim)
    shape, strides, _ = _diag_geometry(x.shape, x.strides, offset, dim1, dim2)
    if shape[-1] == 0 or x.size == 0:
        return np.zeros(shape, dtype=x.dtype)   # nothing to share
    # start at the diagonal's first element (a basic slice: still a view of x), then walk x's strides
    first = x[_along(dim1, slice(max(0, -offset), None))][_along(dim2, slice(max(0, offset), None))]
    return _as_strided(first, shape=shape, strides=strides)


def diag_scatter_zeros(g, offset, dim1, dim2, shape):
    """Zeros of ``shape`` with ``g``'s last dim on the diagonal ``offset`` of dims ``dim1``/``dim2``."""
    out = np.zeros(shape, dtype=g.dtype)
    if out.size:
        diagonal(out, offset, dim1, dim2)[...] = g
    return out


def flip(x, dims):
    return np.flip(x, dims).copy() if dims else x.copy()


def roll(x, shifts, dims):
    if dims is None or dims == ():
        return np.roll(x, shifts)
    return np.roll(x, shifts, dims)


def rot90(x, k, dims):
    return np.ascontiguousarray(np.rot90(x, k, dims))


def tril(x, diagonal=0):
    return np.tril(x, diagonal)


def triu(x, diagonal=0):
    return np.triu(x, diagonal)


def repeat(x, sizes):
    return np.tile(x, sizes)


def trace(x):
    if x.dtype == BF16:   # NumPy's bfloat16 sum rounds every step; PyTorch's sums in float32, rounded once
        return np.asarray(np.trace(x, dtype=np.float32), dtype=x.dtype)
    r = np.trace(x)
    return np.asarray(r, dtype=x.dtype if x.dtype.kind in "fcV" else np.int64)


def unfold(x, dimension, size, step):
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim (a view)."""
    nd = x.ndim
    if nd == 0:
        return x.reshape(1)[...] if size else np.zeros((0,), x.dtype)
    n = (x.shape[dimension] - size) // step + 1
    shape = x.shape[:dimension] + (n,) + x.shape[dimension + 1:] + (size,)
    strides = x.strides[:dimension] + (x.strides[dimension] * step,) + x.strides[dimension + 1:] + \
        (x.strides[dimension],)
    return _as_strided(x, shape=shape, strides=strides)


def unfold_backward(g, shape, dimension, size, step):
    """The gradient of ``unfold``: each window's gradient added back where the window came from."""
    out = np.zeros(shape, dtype=g.dtype)
    if len(shape) == 0:
        out[...] = g.reshape(())[...] if g.size else 0
        return out
    n = g.shape[dimension]
    for k in range(size):   # window position k of every window at once: a strided slice of the input
        sl = slice(k, k + step * (n - 1) + 1, step)
        out[_along(dimension, sl)] += g[..., k]
    return out


def gather_rows(x, dim, index):
    """``x``'s entries ``index`` (1-d, int64) along ``dim`` (a copy: index_select)."""
    return np.take(x, index, axis=dim)


def scatter_rows_zeros(g, dim, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index`` along ``dim`` (repeated indices accumulate)."""
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, _along(dim, index), g)
    return out


def split_backward(grads, dim, bounds, shape, dtype):
    """The gradient of split/chunk (pieces ``bounds[i]:bounds[i + 1]`` along ``dim``) or of unbind (``bounds``
    None: piece i at index i) from the pieces' gradients (None: zero)."""
    out = np.zeros(shape, dtype=dtype)
    for i, g in enumerate(grads):
        if g is not None:
            out[_along(dim, slice(bounds[i], bounds[i + 1]) if bounds is not None else i)] = g
    return out


def repeat_index(counts):
    """``0, 1, ...`` each repeated ``counts[i]`` times (int64): repeat_interleave's index. Not differentiable."""
    return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)


def channels_last_copy(a):
    """A copy of ``a`` (rank 4 or 5) with the same values and shape, laid out channels-last in memory: dim 1
    varies fastest, as PyTorch strides its channels-last tensors (NumPy keeps that order through elementwise ops).
    Not differentiable."""
    perm = (0,) + tuple(range(2, a.ndim)) + (1,)
    return np.ascontiguousarray(a.transpose(perm)).transpose(np.argsort(perm))


# ----- as_strided: PyTorch's view of the storage (strides and offsets in elements, counted from the storage) ---------

class _Interface:
    """An ``__array_interface__`` holding the storage alive: what NumPy's own as_strided builds its views from."""

    def __init__(self, interface: dict, base):
        self.__array_interface__ = interface
        self.base = base


def storage_root(x):
    """The array that owns ``x``'s memory (PyTorch's storage): the end of its chain of NumPy bases."""
    r = x
    while True:
        b = r.base
        if isinstance(b, np.ndarray):
            r = b
        elif isinstance(b, _Interface) or (b is not None and isinstance(getattr(b, "base", None), np.ndarray)
                                           and hasattr(b, "__array_interface__")):
            r = b.base    # a view made by as_strided (NumPy's or ours) names the array it was made from
        else:
            return r


def data_ptr(x) -> int:
    return x.__array_interface__["data"][0]


def storage_offset(x) -> int:
    """Where ``x``'s first element sits in its storage, in elements of ``x``'s dtype."""
    return (data_ptr(x) - data_ptr(storage_root(x))) // x.itemsize


def _positions(size, stride, offset):
    """The storage positions (int64, of shape ``size``) of a strided layout."""
    pos = np.full(tuple(size), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        pos += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(size) - d - 1))
    return pos


def _own_layout(x, stride, offset) -> bool:
    """Whether ``x``'s memory is laid out as ``stride``/``offset`` say (dims of one element do not count)."""
    isz = x.itemsize
    return all(n <= 1 or xs == s * isz for n, xs, s in zip(x.shape, x.strides, stride)) and \
        storage_offset(x) == offset


def as_strided(x, size, stride, offset, in_stride, in_offset):
    """The elements at storage positions ``offset + sum(i_k * stride_k)``, where ``x``'s own elements sit at
    ``in_offset + sum(j_k * in_stride_k)``. A view of ``x``'s storage where ``x`` is laid out so (a tensor's own
    array); otherwise (a gradient, or a stand-in the views' machinery replays on) a copy made from ``x``'s values:
    each position holds the mean of the elements of ``x`` there (they are equal where ``x`` is memory), 0 where ``x``
    has none."""
    size, stride = tuple(size), tuple(stride)
    isz = x.itemsize
    root = storage_root(x)
    # (a stand-in may own less memory than the storage the layout reads: then it is no view)
    if x.size and _own_layout(x, in_stride, in_offset) and \
            (0 in size or _min_storage(size, stride, offset) * isz <= root.nbytes):
        ptr = data_ptr(root) + offset * isz
        writeable = root.flags.writeable and all(n <= 1 or s != 0 for n, s in zip(size, stride))
        iface = {"data": (ptr, not writeable), "shape": size, "strides": tuple(s * isz for s in stride),
                 "typestr": x.dtype.str, "descr": x.dtype.descr, "version": 3}
        v = np.asarray(_Interface(iface, root))
        return v if v.dtype == x.dtype else v.view(x.dtype)   # bfloat16's array interface says only 'V2'
    if 0 in size:
        return np.zeros(size, dtype=x.dtype)
    if x.size == 0:
        return np.zeros(size, dtype=x.dtype)
    pos_in = _positions(x.shape, in_stride, in_offset).reshape(-1)
    pos_out = _positions(size, stride, offset)
    n = int(max(pos_in.max(), pos_out.max())) + 1
    count = np.bincount(pos_in, minlength=n)
    if count.max() <= 1:   # x's elements never share a position: place them
        store = np.zeros(n, dtype=x.dtype)
        store[pos_in] = x.reshape(-1)
    else:
        total = np.zeros(n, dtype=x.dtype)
        np.add.at(total, pos_in, x.reshape(-1))
        store = (total / np.maximum(count, 1)).astype(x.dtype) if x.dtype.kind == "f" else \
            (total // np.maximum(count, 1)).astype(x.dtype)
    return store[pos_out]


def dense(x) -> bool:
    """Whether ``x``'s elements fill its memory without gaps or repeats (PyTorch's non-overlapping and dense)."""
    step = x.itemsize
    for s, n in sorted((s, n) for s, n in zip(x.strides, x.shape) if n != 1):
        if s != step:
            return False
        step *= n
    return True


def _maybe_overlapping(size, stride) -> bool:
    """PyTorch's _maybe_overlapping_memory: whether a layout (no dims of size 0 or 1) may repeat a position."""
    max_index = 0
    for s, n in sorted(zip(stride, size)):
        if s <= max_index:
            return True
        max_index += s * (n - 1)
    return False


def _min_storage(size, stride, offset) -> int:
    return offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))


def as_strided_backward(g, in_size, in_stride, in_offset, size, stride, offset):
    """The gradient of ``as_strided`` (PyTorch's as_strided_backward): ``g`` scattered into a zero storage by the
    output's layout (repeated positions add), divided by how often the input's layout repeats each position, and
    read back by the input's layout."""
    in_size = tuple(in_size)
    if 0 in in_size or 0 in tuple(size):
        return np.zeros(in_size, dtype=g.dtype)
    out_size, out_stride = [], []
    for i in reversed(range(len(size))):   # dims of one element squeezed, dims of stride 0 summed (as PyTorch)
        if size[i] == 1:
            g = g.reshape(g.shape[:i] + g.shape[i + 1:])
        elif stride[i] == 0:
            g = g.sum(axis=i)
        else:
            out_size.insert(0, size[i])
            out_stride.insert(0, stride[i])
    inp = [(n, s) for n, s in zip(in_size, in_stride) if n != 1]
    inp_size, inp_stride = [n for n, _ in inp], [s for _, s in inp]
    shared = min(in_offset, offset)
    in_eff, out_eff = in_offset - shared, offset - shared
    n = max(_min_storage(inp_size, inp_stride, in_eff), _min_storage(out_size, out_stride, out_eff))
    store = np.zeros(n, dtype=g.dtype)
    pos_out = _positions(out_size, out_stride, out_eff).reshape(-1)
    if _maybe_overlapping(out_size, out_stride):
        np.add.at(store, pos_out, g.reshape(-1))
    else:
        store[pos_out] = g.reshape(-1)
    pos_in = _positions(in_size, in_stride, in_eff)
    if _maybe_overlapping(inp_size, inp_stride):
        count = np.bincount(pos_in.reshape(-1), minlength=n).astype(g.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            store = store / count
    return store[pos_in]
