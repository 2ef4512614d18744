"""NumPy kernels of the 'indexing' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Indices here are NumPy indices (tuples of ints, slices, arrays, or a ``SplitIndex``) built and checked by
``ember/ops/_index.py`` and ``ember/ops/indexing.py``: the kernels never see a PyTorch index or a bad one.
Each name is also in ``graph_ns`` (registered in ``ember/ops/indexing.py``).
"""
from __future__ import annotations

import numpy as np

from ..index import view_of as _view_of

__all__: list = ["index_put_add", "scatter_reduce", "nonzero_tuple", "mask_count", "in_range", "grid_index"]


def index_put_add(x, index, v):
    """A copy of ``x`` with ``v`` added at ``index`` (repeated indices accumulate)."""
    out = np.array(x, copy=True)
    view, index = _view_of(out, index)
    np.add.at(view, index, v)
    return out


def _identity(reduce: str, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind in "fV":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def scatter_reduce(x, src, index, reduce, include_self):
    """``x`` with ``src`` reduced into it at ``index`` (``scatter_reduce``/``index_reduce``; ``index``
    addresses one position of ``x`` per element of ``src``). Without ``include_self`` the positions
    written to start from the reduction's identity instead of ``x``'s value."""
    out = np.array(x, copy=True)
    view, ix = _view_of(out, index)
    if not include_self:
        view[ix] = _identity(reduce, out.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        _UFUNCS[reduce].at(view, ix, src)
    if reduce == "mean":
        count = np.zeros(out.shape, np.int64)
        cview, _ = _view_of(count, index)
        np.add.at(cview, ix, 1)
        if include_self:
            count += 1
        else:
            count[count == 0] = 1
        if out.dtype.kind in "fcV":
            out = (out / count).astype(out.dtype, copy=False)
        else:
            out = np.floor_divide(out, count).astype(out.dtype, copy=False)
    return out


def mask_count(mask) -> int:
    """The number of True values of a bool array, as a Python int. Not differentiable."""
    return int(np.count_nonzero(mask))


def in_range(idx, lo: int, hi: int) -> bool:
    """Whether every value of an integer array lies in ``[lo, hi)`` (an empty array does). Not differentiable."""
    return not idx.size or bool(lo <= idx.min() and idx.max() < hi)


def nonzero_tuple(x):
    """The indices of the nonzero elements, one int64 array per dim (a 0-d input counts as 1-d, as in PyTorch's
    ``nonzero(as_tuple=True)``). Not differentiable."""
    if x.ndim == 0:
        return (np.zeros(int(x != 0), np.int64),)
    return tuple(i.astype(np.int64, copy=False) for i in np.nonzero(x))


def grid_index(idx, dim: int) -> tuple:
    """The index addressing ``x[i_0, ..., idx[i], ..., i_n]`` for every position ``i`` of ``idx`` along ``dim``
    (gather's and scatter's): ``idx`` itself at ``dim``, open ranges elsewhere. Not differentiable."""
    grids = list(np.ogrid[tuple(slice(0, n) for n in idx.shape)])
    grids[dim] = idx
    return tuple(grids)
