"""NumPy kernels of the 'sorting' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Two kinds of code live here:
  * ``gather_along`` / ``scatter_along_zeros``: the differentiable pair the sorting primitives are built on
    (values picked along a dim at given indices, and their gradient scattered back, repeated indices
    accumulating), and ``median_all``; ``ember.ops.sorting`` registers their graph twins under the same names.
  * the index computations the public ops reach through ``xp`` (not differentiable: their graph twins in
    ``ember.ops.sorting`` run them on the tensors' data): PyTorch's orders, including the order it leaves tied
    elements in, and the searches, counts and unique values. PyTorch's CPU kernels are C++ standard-library
    algorithms (``std::sort``, ``std::nth_element``, ``std::partial_sort`` of libstdc++) and a quickselect of
    its own; for slices whose values tie, the exact algorithm decides which index comes first, so those
    slices are run through a line-by-line Python model of the algorithm (``ember.devices.ties``, shared with
    the array-API devices). Slices without ties take NumPy's stable sort, which gives the same answer there.
"""
from __future__ import annotations

import numpy as np

from ..ties import mode_row, quickselect_row, sort_row_unstable, topk_row
from .reduced import BF16, F32

__all__ = ["gather_along", "scatter_along_zeros", "median_all",
           # not differentiable: the indices, counts and values the public functions compute through xp
           "sort_indices", "topk_indices", "kthvalue_indices", "median_indices", "mode_indices", "quantile_positions",
           "unique_values", "unique_slices", "unique_runs", "nonzero_indices", "nonzero_count", "bin_counts",
           "histc_counts", "binary_search"]


# ----- the differentiable pair --------------------------------------------------------------------

def _along_index(indices: np.ndarray, dim: int) -> tuple:
    """An index tuple selecting ``x[..., indices[...], ...]`` along ``dim`` (take_along_axis as fancy indexing)."""
    grids = list(np.ix_(*[np.arange(s) for s in indices.shape]))
    grids[dim] = indices
    return tuple(grids)


def gather_along(x, indices, dim, keepdim=True):
    """``x`` taken at ``indices`` (same ndim as ``x``) along ``dim``; without keepdim the (size-1) dim is dropped.
    A 0-d ``x`` is its own only element."""
    if x.ndim == 0:
        return x.copy()
    r = np.take_along_axis(x, indices, dim)
    return r if keepdim else np.squeeze(r, dim)


def scatter_along_zeros(g, indices, dim, keepdim, shape):
    """Zeros of ``shape`` with ``g`` added at ``indices`` along ``dim`` (repeated indices accumulate)."""
    if len(shape) == 0:
        return np.array(g, copy=True).reshape(())
    if not keepdim:
        g = np.expand_dims(g, dim)
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, _along_index(indices, dim), np.broadcast_to(g, indices.shape))
    return out


def median_all(x, ignore_nan=False):
    """The lower median of all elements (NaN if one is NaN, unless ``ignore_nan``; NaN for no elements, which
    PyTorch casts to the smallest integer, or True, for integral and bool inputs)."""
    flat = x.reshape(-1)
    if x.dtype.kind in "fV":
        nan = np.isnan(flat)
        if ignore_nan:
            flat = flat[~nan]
        elif nan.any():
            return np.array(np.nan, dtype=x.dtype)
        if flat.size == 0:
            return np.array(np.nan, dtype=x.dtype)
    elif flat.size == 0:
        return np.array(True if x.dtype.kind == "b" else np.iinfo(x.dtype).min, dtype=x.dtype)
    k = (flat.size - 1) // 2
    return np.asarray(np.partition(flat, k)[k])


# ----- orders -------------------------------------------------------------------------------------

def _orderable(a: np.ndarray) -> np.ndarray:
    """``a`` with bfloat16 widened to float32 (exactly, keeping the order): ml_dtypes' bfloat16 sorts and
    partitions do not put NaN last."""
    return a.astype(F32) if a.dtype is BF16 else a


def _stable_argsort(a: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """Indices of PyTorch's stable sort along ``dim``: NaN is larger than every number, ties keep their order."""
    if not descending:
        return np.argsort(a, axis=dim, kind="stable")
    # Descending and stable: sort the reversed slice ascending (ties then come in reverse index order),
    # and reverse the result back.
    n = a.shape[dim]
    idx = np.argsort(np.flip(a, dim), axis=dim, kind="stable")
    return (n - 1) - np.flip(idx, dim)


def _has_ties(sorted_vals: np.ndarray, dim: int) -> np.ndarray:
    """Per slice (dim kept, size 1): whether two values of the slice are equal (NaNs count as equal)."""
    if sorted_vals.shape[dim] < 2:
        return np.zeros(sorted_vals.shape[:dim] + (1,) + sorted_vals.shape[dim + 1:], dtype=bool)
    lo = np.take(sorted_vals, np.arange(sorted_vals.shape[dim] - 1), axis=dim)
    hi = np.take(sorted_vals, np.arange(1, sorted_vals.shape[dim]), axis=dim)
    same = lo == hi
    if sorted_vals.dtype.kind in "fV":
        same |= np.isnan(lo) & np.isnan(hi)
    return np.any(same, axis=dim, keepdims=True)


def _slices_where(mask: np.ndarray, dim: int):
    """The index tuples (with ``slice(None)`` at ``dim``) of the slices ``mask`` (dim kept, size 1) selects."""
    for pos in zip(*np.nonzero(mask)):
        pos = list(pos)
        pos[dim] = slice(None)
        yield tuple(pos)


# ----- searching ----------------------------------------------------------------------------------

def _binary_search(bounds: np.ndarray, values: np.ndarray, right: bool, sorter) -> np.ndarray:
    """PyTorch's searchsorted along the last dim of ``bounds`` (one 1-d row for all values, or rows matching
    ``values``' leading dims): the comparisons of its C++ loop, so NaN bounds and values land where PyTorch
    puts them (a NaN bound is below every value; a NaN value goes past every bound)."""
    n = bounds.shape[-1]
    start = np.zeros(values.shape, dtype=np.int64)
    end = np.full(values.shape, n, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        while True:
            active = start < end
            if not active.any():
                break
            pos = np.minimum((start + end) >> 1, n - 1)
            if bounds.ndim == 1:
                mv = bounds[pos if sorter is None else sorter[pos]]
            else:
                pos_b = pos if sorter is None else np.take_along_axis(sorter, pos, -1)
                mv = np.take_along_axis(bounds, pos_b, -1)
            go_right = ~(mv > values) if right else ~(mv >= values)
            mid = (start + end) >> 1
            start = np.where(active & go_right, mid + 1, start)
            end = np.where(active & ~go_right, mid, end)
    return start


# ----- the public ops' index computations (not differentiable) --------------------------------------------
# ``limit``: the most elements (over all slices with ties) run through the Python models (ties.py); past it, slices
# keep the stable order (see ember/ops/sorting.py, EXACT_TIES_LIMIT).

def _exact(n: int, redo: np.ndarray, limit: int) -> bool:
    """Whether the slices ``redo`` marks (each of length ``n``) hold at most ``limit`` elements in all."""
    return n * int(np.count_nonzero(redo)) <= limit


def sort_indices(a, dim: int, descending: bool, stable: bool, limit: int):
    """The indices of PyTorch's ``sort`` along ``dim``: NaN above every number; without ``stable``, std::sort's
    order among tied elements beyond 16 elements (insertion sort, stable, below)."""
    a = _orderable(a)
    if a.ndim == 0:
        return np.zeros((), dtype=np.int64)
    idx = _stable_argsort(a, dim, descending)
    n = a.shape[dim]
    if not stable and 16 < n:
        ties = _has_ties(np.take_along_axis(a, idx, dim), dim)
        if _exact(n, ties, limit):
            for sl in _slices_where(ties, dim):
                idx[sl] = sort_row_unstable(a[sl].tolist(), descending)
    return idx


def topk_indices(a, k: int, dim: int, largest: bool, sorted_: bool, limit: int):
    """The indices of PyTorch's CPU ``topk`` along ``dim`` (k kept along it)."""
    a = _orderable(a)
    if a.ndim == 0:
        return np.zeros((), np.int64)
    n = a.shape[dim]
    idx = np.take(_stable_argsort(a, dim, largest), np.arange(k), axis=dim)
    if k:
        # partial_sort (k * 64 <= n) returns the stable order unless values tie; nth_element orders the
        # unsorted head its own way, and sorts the first k - 1 only.
        if k * 64 <= n or sorted_:
            redo = _has_ties(np.sort(a, axis=dim), dim)
        else:
            redo = np.ones(a.shape[:dim] + (1,) + a.shape[dim + 1:], dtype=bool)
        if _exact(n, redo, limit):
            for sl in _slices_where(redo, dim):
                idx[sl] = topk_row(a[sl].tolist(), k, largest, sorted_)
    return idx


def kthvalue_indices(a, k: int, dim: int, limit: int):
    """The index ``kthvalue`` reports for the k-th smallest value (k from 1) along ``dim`` (kept, size 1)."""
    a = _orderable(a)
    if a.ndim == 0:
        return np.zeros((), np.int64)
    n = a.shape[dim]
    order = _stable_argsort(a, dim, False)
    idx = np.take(order, [k - 1], axis=dim)
    if n > 1:
        # the k-th value tied with another: PyTorch's quickselect decides which index it reports
        sv = np.take_along_axis(a, order, dim)
        kth = np.take(sv, [k - 1], axis=dim)
        same = (sv == kth) | (np.isnan(sv) & np.isnan(kth)) if a.dtype.kind in "fV" else sv == kth
        redo = np.sum(same, axis=dim, keepdims=True) > 1
        for sl in _slices_where(redo if _exact(n, redo, limit) else redo[:0], dim):
            pos = list(sl)
            pos[dim] = slice(0, 1)
            idx[tuple(pos)] = quickselect_row(a[sl].tolist(), k - 1)
    return idx


def median_indices(a, dim: int, ignore_nan: bool):
    """The index of the lower median along ``dim`` (kept, size 1): PyTorch's nth_element with ties broken by
    index, i.e. the position in the stable sort (NaN last); median() reports a slice's first NaN, nanmedian()
    the lower median of the numbers."""
    a = _orderable(a)
    if a.ndim == 0:
        return np.zeros((), np.int64)
    order = _stable_argsort(a, dim, False)
    n = a.shape[dim]
    if a.dtype.kind in "fV":
        nans = np.isnan(a)
        count = np.sum(~nans, axis=dim, keepdims=True) if ignore_nan else np.full(nans.shape[:dim] + (1,) +
                                                                                  nans.shape[dim + 1:], n)
    else:
        count = np.full(a.shape[:dim] + (1,) + a.shape[dim + 1:], n)
    pos = np.maximum(count - 1, 0) // 2
    idx = np.take_along_axis(order, pos, dim)
    if a.dtype.kind in "fV" and not ignore_nan:
        has_nan = np.any(nans, axis=dim, keepdims=True)
        idx = np.where(has_nan, np.argmax(nans, axis=dim, keepdims=True), idx)
    return idx


def _mode_stable(row: np.ndarray) -> int:
    # long slices: the answer of a stable sort (the last occurrence of the smallest most frequent value)
    vals, counts = np.unique(row, return_counts=True, equal_nan=False)
    v = vals[int(np.argmax(counts))]
    return int(np.flatnonzero((row == v) | ((row != row) & (v != v)))[-1])


def mode_indices(a, dim: int, limit: int):
    """The index ``mode`` reports along ``dim`` (kept, size 1): of the most frequent value (the smallest of
    equally frequent ones), where PyTorch's std::sort leaves it."""
    a = _orderable(a)
    if a.ndim == 0:
        return np.zeros((), np.int64)
    n = a.shape[dim]
    # No tie and no NaN: every value is as frequent as the others, and the smallest one wins.
    idx = np.argmin(a, axis=dim, keepdims=True) if n else np.zeros(a.shape[:dim] + (1,) + a.shape[dim + 1:], np.int64)
    redo = _has_ties(np.sort(a, axis=dim), dim)
    if a.dtype.kind in "fV":
        redo |= np.any(np.isnan(a), axis=dim, keepdims=True)
    exact = _exact(n, redo, limit)
    for sl in _slices_where(redo, dim):
        row = a[sl]
        pos = list(sl)
        pos[dim] = slice(0, 1)
        idx[tuple(pos)] = mode_row(row.tolist())[1] if exact else _mode_stable(row)
    return idx


def quantile_positions(ranks, interpolation: str):
    """For quantile's ranks (fractional positions in the sorted rows): the int64 positions below and above
    (None unless the interpolation reads two) and the base of the weight: the lower position in the ranks'
    dtype (``linear``: the weight is ranks minus it) or 0.5 (``midpoint``), else None."""
    rk = ranks
    if interpolation == "lower":
        rk = np.floor(rk)
    elif interpolation == "higher":
        rk = np.ceil(rk)
    elif interpolation == "nearest":
        rk = np.round(rk)   # half to even, as PyTorch's round
    below = rk.astype(np.int64)
    if interpolation == "linear":
        return below, np.ceil(rk).astype(np.int64), below.astype(ranks.dtype)
    if interpolation == "midpoint":
        return below, np.ceil(rk).astype(np.int64), np.full(rk.shape, 0.5, ranks.dtype)
    return below, None, None


# ----- unique values, nonzero, counts ---------------------------------------------------------------------

def unique_values(a):
    """The sorted distinct values of all elements, the inverse indices (``a``'s shape) and the counts
    (NaN != NaN: each NaN is its own value, as in PyTorch)."""
    flat = a.reshape(-1)
    if flat.size == 0:
        e = np.zeros(0, np.int64)
        return flat.copy(), e, e
    order = np.argsort(flat, kind="stable")
    sv = flat[order]
    new = np.empty(sv.size, dtype=bool)
    new[0] = True
    new[1:] = sv[1:] != sv[:-1]
    group = np.cumsum(new) - 1
    inverse = np.empty(flat.size, np.int64)
    inverse[order] = group
    counts = np.bincount(group).astype(np.int64)
    return sv[new], inverse.reshape(a.shape), counts


def unique_slices(a, dim: int):
    """The sorted distinct slices along ``dim``, the inverse indices and the counts (int64, 1-d)."""
    if a.shape[dim] == 0:
        e = np.zeros(0, np.int64)
        return a.copy(), e, e.copy()
    vals, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    return vals, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def unique_runs(a, dim):
    """Each run of equal consecutive elements (``dim`` None: of the flattened ``a``) or slices along ``dim``
    collapsed to one: (values, inverse indices, counts)."""
    if dim is None:
        flat, shape = a.reshape(-1), a.shape
    else:
        flat, shape = np.moveaxis(a, dim, 0).reshape(a.shape[dim], -1), (a.shape[dim],)
    m = flat.shape[0]
    new = np.ones(m, dtype=bool)
    if m > 1:
        diff = flat[1:] != flat[:-1]
        new[1:] = diff if diff.ndim == 1 else np.any(diff, axis=1)
    group = np.cumsum(new) - 1 if m else np.zeros(0, np.int64)
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, m)).astype(np.int64)
    vals = flat[new] if dim is None else np.take(a, starts, axis=dim)
    return np.ascontiguousarray(vals), group.astype(np.int64).reshape(shape), counts


def nonzero_indices(x):
    """The (n, ndim) int64 indices of the nonzero elements (a 0-d input: (0 or 1, 0))."""
    if x.ndim == 0:
        return np.zeros((int(bool(x != 0)), 0), np.int64)
    return np.stack(np.nonzero(x), axis=1).astype(np.int64)


def nonzero_count(x, dims: tuple):
    """The number of nonzero elements over ``dims`` (int64; all of them for a 0-d input)."""
    return np.asarray(np.count_nonzero(x, axis=dims if x.ndim else None)).astype(np.int64)


def bin_counts(x, weights, minlength: int):
    """How often each value of the 1-d non-negative integer ``x`` occurs (int64), or the sums of ``weights``
    (summed in float64, returned in weights' floating dtype or float64)."""
    if weights is None:
        return np.bincount(x, minlength=minlength).astype(np.int64)
    out_dtype = weights.dtype if weights.dtype.kind == "f" else np.dtype(np.float64)   # (bfloat16: float64)
    if weights.dtype.kind == "c":   # PyTorch sums the real parts (float64)
        weights = weights.real
    return np.bincount(x, weights=weights.astype(np.float64), minlength=minlength).astype(out_dtype)


def histc_counts(x, bins: int, lo: float, hi: float):
    """A histogram of ``bins`` equal bins over the finite range [lo, hi] (lo < hi), in ``x``'s dtype."""
    flat = x.reshape(-1)
    with np.errstate(all="ignore"):
        keep = (flat >= lo) & (flat <= hi)
        v = flat[keep]
        # PyTorch's bin: (x - min) * bins / (max - min), computed in the input's dtype; max falls in the last bin
        t = x.dtype.type
        pos = (v - t(lo)) * t(bins) / (t(hi) - t(lo))
        if not np.isfinite(pos).all():   # a range near the dtype's limit overflows (PyTorch's bins are then
            # undefined): the bins in double, halved so that even float64's own range cannot overflow
            pos = (v.astype(np.float64) / 2 - lo / 2) / (hi / 2 - lo / 2) * bins
        pos = pos.astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return np.bincount(pos, minlength=bins).astype(x.dtype)


def binary_search(bounds, values, right: bool, sorter, out_int32: bool):
    """PyTorch's searchsorted (see ``_binary_search``), as int32 or int64."""
    return _binary_search(bounds, values, right, sorter).astype(np.int32 if out_int32 else np.int64)
