"""NumPy kernels of the 'shape' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Kernels that view (``slice_dim``, ``select_dim``, ``diagonal``, ``unfold``) return writeable NumPy views of
their input, so that a view op's forward shares memory and can be replayed on its base; the others
(``flip``, ``roll``, ``rot90``, ...) return new memory, as PyTorch does. Every name here has a
differentiable twin in ``graph_ns`` (registered by ``ember/ops/shape.py``).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided as _as_strided

__all__ = ["slice_dim", "slice_scatter_zeros", "select_dim", "select_scatter_zeros", "diagonal",
           "diag_scatter_zeros", "flip", "roll", "rot90", "tril", "triu", "repeat", "trace", "unfold",
           "unfold_backward", "gather_rows", "scatter_rows_zeros", "split_backward", "repeat_index",
           "channels_last_copy"]


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
    """The diagonal of ``x`` over ``dim1``/``dim2`` as the last dim: a writeable view (NumPy's is read-only)."""
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
    r = np.trace(x)
    return np.asarray(r, dtype=x.dtype if x.dtype.kind in "fV" else np.int64)


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
