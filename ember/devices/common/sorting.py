"""The 'sorting' family's index computations (orders, searches, unique values, counts) in array-API standard
operations, with the CPU's (PyTorch's) answers: the contract of each is its namesake in ember/devices/cpu/sorting.py.

The orders start from the standard's stable ``argsort`` with NaN made explicit (the standard leaves where NaN sorts
to the library; PyTorch puts it above every number). Slices whose values tie, where PyTorch's C++ algorithm decides
which index comes first, run through the same Python models as on the CPU (``ember.devices.ties``): their values
are read element by element (``float(row[i])``), so only those slices, at most ``limit`` elements in all, leave
the device.
"""
from __future__ import annotations

import math

from ..ties import mode_row, quickselect_row, sort_row_unstable, topk_row


def kernels(k) -> dict:
    xp = k.xp
    i64 = xp.int64

    # ----- helpers ---------------------------------------------------------------------------------------------
    def _rows(a, dim: int):
        """``a`` with ``dim`` moved last and the other dims flattened: (rows, their shape)."""
        moved = xp.moveaxis(a, dim, -1)
        lead = tuple(moved.shape[:-1])
        return xp.reshape(moved, (math.prod(lead), moved.shape[-1])), lead

    def _unrows(r, lead: tuple, dim: int):
        """Rows (as ``_rows`` made them, of any length) back to ``dim``."""
        return xp.moveaxis(xp.reshape(r, lead + (r.shape[-1],)), -1, dim)

    def _ordered(a):   # the standard orders no bools: False < True as 0 < 1
        return xp.astype(a, xp.uint8) if a.dtype == xp.bool else a

    def _order(r, descending: bool = False):
        """The indices of PyTorch's stable sort of each row: NaN above every number, ties in index order."""
        r = _ordered(r)
        if not k.is_float(r):
            return xp.argsort(r, axis=-1, descending=descending, stable=True)
        nan = xp.isnan(r)
        filled = xp.where(nan, xp.asarray(math.inf, dtype=r.dtype), r)
        idx = xp.argsort(filled, axis=-1, descending=descending, stable=True)
        # then NaN after the numbers (before them descending), each group keeping its order
        key = xp.take_along_axis(xp.astype(nan if not descending else ~nan, xp.int8), idx, axis=-1)
        return xp.take_along_axis(idx, xp.argsort(key, axis=-1, stable=True), axis=-1)

    def _same(x, y):
        """Equal, NaN equal to NaN."""
        eq = x == y
        return eq | (xp.isnan(x) & xp.isnan(y)) if k.is_float(x) else eq

    def _has_ties(sv):
        """Per row of sorted values: whether two of them are equal (NaNs count as equal)."""
        if sv.shape[-1] < 2:
            return xp.zeros((sv.shape[0],), dtype=xp.bool)
        return xp.any(_same(sv[:, :-1], sv[:, 1:]), axis=-1)

    def _values(row) -> list:
        """A 1-d array's elements as Python numbers (for the models of PyTorch's C++ algorithms)."""
        conv = float if k.is_float(row) else bool if row.dtype == xp.bool else int
        return [conv(row[i]) for i in range(row.shape[0])]

    def _redo(idx, r, rows, fn, limit: int):
        """``idx`` with the rows ``rows`` marks replaced by ``fn(values of the row)`` (a list of indices), if they
        hold at most ``limit`` elements in all (PyTorch's order among ties; past it, the stable order stays)."""
        at = xp.nonzero(rows)[0]
        todo = [int(at[j]) for j in range(at.shape[0])]
        if not todo or r.shape[-1] * len(todo) > limit:
            return idx
        new = {i: xp.asarray(fn(_values(r[i, :])), dtype=i64) for i in todo}
        return xp.stack([new[i] if i in new else idx[i, :] for i in range(idx.shape[0])])

    def _zeros_index():
        return xp.zeros((), dtype=i64)

    # ----- orders -----------------------------------------------------------------------------------------------
    def sort_indices(a, dim: int, descending: bool, stable: bool, limit: int):
        if a.ndim == 0:
            return _zeros_index()
        r, lead = _rows(a, dim)
        idx = _order(r, descending)
        if not stable and 16 < r.shape[-1]:   # std::sort is an insertion sort (stable) up to 16 elements
            ties = _has_ties(xp.take_along_axis(_ordered(r), idx, axis=-1))
            idx = _redo(idx, r, ties, lambda v: sort_row_unstable(v, descending), limit)
        return _unrows(idx, lead, dim)

    def topk_indices(a, k: int, dim: int, largest: bool, sorted_: bool, limit: int):
        if a.ndim == 0:
            return _zeros_index()
        r, lead = _rows(a, dim)
        n = r.shape[-1]
        order = _order(r, largest)
        idx = order[:, :k]
        if k:
            # partial_sort (k * 64 <= n) returns the stable order unless values tie; nth_element orders the
            # unsorted head its own way, and sorts the first k - 1 only.
            if k * 64 <= n or sorted_:
                redo = _has_ties(xp.take_along_axis(_ordered(r), order, axis=-1))
            else:
                redo = xp.ones((r.shape[0],), dtype=xp.bool)
            idx = _redo(idx, r, redo, lambda v: topk_row(v, k, largest, sorted_), limit)
        return _unrows(idx, lead, dim)

    def kthvalue_indices(a, k: int, dim: int, limit: int):
        if a.ndim == 0:
            return _zeros_index()
        r, lead = _rows(a, dim)
        order = _order(r)
        idx = order[:, k - 1:k]
        if r.shape[-1] > 1:
            # the k-th value tied with another: PyTorch's quickselect decides which index it reports
            sv = xp.take_along_axis(r, order, axis=-1)
            redo = xp.sum(xp.astype(_same(sv, sv[:, k - 1:k]), i64), axis=-1) > 1
            idx = _redo(idx, r, redo, lambda v: [quickselect_row(v, k - 1)], limit)
        return _unrows(idx, lead, dim)

    def median_indices(a, dim: int, ignore_nan: bool):
        if a.ndim == 0:
            return _zeros_index()
        r, lead = _rows(a, dim)
        n = r.shape[-1]
        order = _order(r)
        floating = k.is_float(r)
        nans = xp.isnan(r) if floating else None
        if floating and ignore_nan:
            count = xp.sum(xp.astype(~nans, i64), axis=-1, keepdims=True)
        else:
            count = xp.full((r.shape[0], 1), n, dtype=i64)
        pos = xp.maximum(count - 1, xp.asarray(0, dtype=i64)) // 2
        idx = xp.take_along_axis(order, pos, axis=-1)
        if floating and not ignore_nan:   # median() reports a slice's first NaN
            first = xp.argmax(xp.astype(nans, xp.int8), axis=-1, keepdims=True)
            idx = xp.where(xp.any(nans, axis=-1, keepdims=True), xp.astype(first, i64), idx)
        return _unrows(idx, lead, dim)

    def _mode_stable(values: list) -> list:
        # past the limit: the answer of a stable sort (the last occurrence of the smallest most frequent value;
        # each NaN is a value of its own, so an all-NaN slice reports its last element)
        counts: dict = {}
        for v in values:
            if v == v:
                counts[v] = counts.get(v, 0) + 1
        if not counts:
            return [len(values) - 1]
        best = max(counts.values())
        m = min(v for v, c in counts.items() if c == best)
        return [max(i for i, v in enumerate(values) if v == m)]

    def mode_indices(a, dim: int, limit: int):
        if a.ndim == 0:
            return _zeros_index()
        r, lead = _rows(a, dim)
        n = r.shape[-1]
        # No tie and no NaN: every value is as frequent as the others, and the smallest one wins.
        idx = xp.astype(xp.argmin(_ordered(r), axis=-1, keepdims=True), i64) if n else \
            xp.zeros((r.shape[0], 1), dtype=i64)
        redo = _has_ties(xp.take_along_axis(_ordered(r), _order(r), axis=-1))
        if k.is_float(r):
            redo = redo | xp.any(xp.isnan(r), axis=-1)
        out = _redo(idx, r, redo, lambda v: [mode_row(v)[1]], limit)
        if out is idx:   # nothing to redo, or more than ``limit`` elements: the stable order's answer
            out = _redo(idx, r, redo, _mode_stable, math.inf)
        return _unrows(out, lead, dim)

    def quantile_positions(ranks, interpolation: str):
        rk = ranks
        if interpolation == "lower":
            rk = xp.floor(rk)
        elif interpolation == "higher":
            rk = xp.ceil(rk)
        elif interpolation == "nearest":
            rk = xp.round(rk)   # half to even, as PyTorch's round
        below = xp.astype(rk, i64)
        if interpolation == "linear":
            return below, xp.astype(xp.ceil(rk), i64), xp.astype(below, ranks.dtype)
        if interpolation == "midpoint":
            return below, xp.astype(xp.ceil(rk), i64), xp.full(tuple(rk.shape), 0.5, dtype=ranks.dtype)
        return below, None, None

    # ----- unique values ----------------------------------------------------------------------------------------
    def _groups(new, m: int):
        """For sorted (or consecutive) elements where ``new`` marks the first of each group of equal ones: each
        element's group and the groups' sizes (int64)."""
        group = xp.cumulative_sum(xp.astype(new, i64)) - 1
        starts = xp.astype(xp.nonzero(new)[0], i64)
        counts = xp.diff(starts, append=xp.asarray([m], dtype=i64))
        return group, starts, counts

    def _empty_result(a):
        e = xp.zeros((0,), dtype=i64)
        return xp.asarray(a, copy=True), e, xp.zeros((0,), dtype=i64)

    def unique_values(a):
        flat = xp.reshape(a, (-1,))
        m = flat.shape[0]
        if m == 0:
            return _empty_result(flat)
        order = _order(flat[None, :])[0, :]
        sv = xp.take(flat, order)
        new = xp.concat([xp.ones((1,), dtype=xp.bool), sv[1:] != sv[:-1]])   # NaN != NaN: each its own value
        group, _, counts = _groups(new, m)
        inverse = xp.take(group, xp.argsort(order, stable=True))   # group[order] scattered back: order's inverse
        return sv[new], xp.reshape(inverse, tuple(a.shape)), counts

    def unique_slices(a, dim: int):
        m = a.shape[dim]
        if m == 0:
            return _empty_result(a)
        r = xp.reshape(xp.moveaxis(a, dim, 0), (m, math.prod(a.shape) // m))
        # lexicographic order of the slices: stable sorts by each column, the last first
        order = xp.arange(m, dtype=i64)
        for c in range(r.shape[1] - 1, -1, -1):
            col = xp.take(r[:, c], order)
            order = xp.take(order, _order(col[None, :])[0, :])
        sr = xp.take(r, order, axis=0)
        new = xp.concat([xp.ones((1,), dtype=xp.bool), xp.any(sr[1:, :] != sr[:-1, :], axis=1)])
        group, starts, counts = _groups(new, m)
        inverse = xp.take(group, xp.argsort(order, stable=True))
        return xp.take(a, xp.take(order, starts), axis=dim), inverse, counts

    def unique_runs(a, dim):
        if dim is None:
            flat, shape = xp.reshape(a, (-1,)), tuple(a.shape)
        else:
            m = a.shape[dim]
            flat = xp.reshape(xp.moveaxis(a, dim, 0), (m, math.prod(a.shape) // m if m else 0))
            shape = (m,)
        m = flat.shape[0]
        if m == 0:
            vals, e, counts = _empty_result(flat if dim is None else a)
            return vals, xp.reshape(e, shape), counts
        diff = flat[1:, ...] != flat[:-1, ...]
        new = xp.concat([xp.ones((1,), dtype=xp.bool), diff if diff.ndim == 1 else xp.any(diff, axis=1)])
        group, starts, counts = _groups(new, m)
        vals = flat[new] if dim is None else xp.take(a, starts, axis=dim)
        return vals, xp.reshape(group, shape), counts

    # ----- counts -----------------------------------------------------------------------------------------------
    def bin_counts(x, weights, minlength: int):
        x = xp.astype(x, i64)
        m = max(int(xp.max(x)) + 1 if x.shape[0] else 0, minlength)
        if weights is None:
            return k.scatter_add_flat(m, x, xp.ones(tuple(x.shape), dtype=i64), i64)
        out = weights.dtype if k.is_float(weights) else xp.float64
        if k.kind(weights) == "c":   # PyTorch sums the real parts (float64)
            weights = xp.real(weights)
        return xp.astype(k.scatter_add_flat(m, x, xp.astype(weights, xp.float64), xp.float64), out)

    def histc_counts(x, bins: int, lo: float, hi: float):
        flat = xp.reshape(x, (-1,))
        v = flat[(flat >= lo) & (flat <= hi)]
        # PyTorch's bin: (x - min) * bins / (max - min), computed in the input's dtype; max falls in the last bin
        lo_, hi_ = xp.asarray(lo, dtype=x.dtype), xp.asarray(hi, dtype=x.dtype)
        pos = (v - lo_) * xp.asarray(bins, dtype=x.dtype) / (hi_ - lo_)
        if not bool(xp.all(xp.isfinite(pos))):   # a range near the dtype's limit overflows (PyTorch's bins are
            # then undefined): the bins in double, halved so that even float64's own range cannot overflow
            pos = (xp.astype(v, xp.float64) / 2 - lo / 2) / (hi / 2 - lo / 2) * bins
        pos = xp.minimum(xp.astype(xp.floor(pos), i64), xp.asarray(bins - 1, dtype=i64))
        return xp.astype(k.scatter_add_flat(bins, pos, xp.ones(tuple(pos.shape), dtype=i64), i64), x.dtype)

    # ----- searching --------------------------------------------------------------------------------------------
    def binary_search(bounds, values, right: bool, sorter, out_int32: bool):
        """PyTorch's searchsorted: the comparisons of its C++ loop, step by step for all values at once (a NaN
        bound is below every value; a NaN value goes past every bound)."""
        n = bounds.shape[-1]
        shape = tuple(values.shape)
        start = xp.zeros(shape, dtype=i64)
        end = xp.full(shape, n, dtype=i64)
        top = xp.asarray(n - 1, dtype=i64)

        def at(pos):   # the bound the search looks at
            if bounds.ndim == 1:
                flat = xp.reshape(pos, (-1,))
                return xp.reshape(xp.take(bounds, flat if sorter is None else xp.take(sorter, flat)), shape)
            pos = pos if sorter is None else xp.take_along_axis(sorter, pos, axis=-1)
            return xp.take_along_axis(bounds, pos, axis=-1)

        while True:
            active = start < end
            if not bool(xp.any(active)):
                break
            mid = (start + end) // 2
            mv, v = k.promote(at(xp.minimum(mid, top)), values)
            go_right = ~(mv > v) if right else ~(mv >= v)
            start = xp.where(active & go_right, mid + 1, start)
            end = xp.where(active & ~go_right, mid, end)
        return xp.astype(start, xp.int32 if out_int32 else i64)

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "i64")
            and callable(f)}
