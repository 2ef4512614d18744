"""PyTorch's CPU order among tied elements, on plain Python lists: line-by-line models of the C++ algorithms its
sort, topk, kthvalue and mode kernels run (``std::sort``, ``std::nth_element``, ``std::partial_sort`` of libstdc++, and
a quickselect of its own). For a slice whose values tie, the exact algorithm decides which index comes first, so
every device runs such slices (few, small) through these models on the host: ``ember.devices.cpu.sorting`` and
``ember.devices.common.sorting`` pass each slice's values as a list (``row.tolist()``, or element by element).

The row functions take the slice's values (Python numbers) and return indices into it.
"""
from __future__ import annotations

# ----- libstdc++'s algorithms, on a list of (value, index) pairs, comparing values with ``less`` ------------
# Written after GCC's bits/stl_algo.h and bits/stl_heap.h (the same steps, the same element moves), so
# that tied elements end up where PyTorch's C++ leaves them.

_THRESHOLD = 16


def _lg(n: int) -> int:
    return n.bit_length() - 1


def _insertion_sort(v, first, last, less):
    if first == last:
        return
    for i in range(first + 1, last):
        if less(v[i][0], v[first][0]):
            val = v[i]
            v[first + 1:i + 1] = v[first:i]
            v[first] = val
        else:
            _unguarded_linear_insert(v, i, less)


def _unguarded_linear_insert(v, last, less):
    val = v[last]
    nxt = last - 1
    while less(val[0], v[nxt][0]):
        v[last] = v[nxt]
        last = nxt
        nxt -= 1
    v[last] = val


def _final_insertion_sort(v, first, last, less):
    if last - first > _THRESHOLD:
        _insertion_sort(v, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(v, i, less)
    else:
        _insertion_sort(v, first, last, less)


def _move_median_to_first(v, result, a, b, c, less):
    va, vb, vc = v[a][0], v[b][0], v[c][0]
    if less(va, vb):
        if less(vb, vc):
            m = b
        elif less(va, vc):
            m = c
        else:
            m = a
    elif less(va, vc):
        m = a
    elif less(vb, vc):
        m = c
    else:
        m = b
    v[result], v[m] = v[m], v[result]


def _unguarded_partition(v, first, last, pivot, less):
    pv = v[pivot][0]
    while True:
        while less(v[first][0], pv):
            first += 1
        last -= 1
        while less(pv, v[last][0]):
            last -= 1
        if not first < last:
            return first
        v[first], v[last] = v[last], v[first]
        first += 1


def _partition_pivot(v, first, last, less):
    mid = first + (last - first) // 2
    _move_median_to_first(v, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(v, first + 1, last, first, less)


def _push_heap(v, first, hole, top, value, less):
    parent = (hole - 1) // 2
    while hole > top and less(v[first + parent][0], value[0]):
        v[first + hole] = v[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole] = value


def _adjust_heap(v, first, hole, length, value, less):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(v[first + child][0], v[first + child - 1][0]):
            child -= 1
        v[first + hole] = v[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole] = v[first + child - 1]
        hole = child - 1
    _push_heap(v, first, hole, top, value, less)


def _make_heap(v, first, last, less):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, first, parent, length, v[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(v, first, last, result, less):
    value = v[result]
    v[result] = v[first]
    _adjust_heap(v, first, 0, last - first, value, less)


def _heap_select(v, first, middle, last, less):
    _make_heap(v, first, middle, less)
    for i in range(middle, last):
        if less(v[i][0], v[first][0]):
            _pop_heap(v, first, middle, i, less)


def _sort_heap(v, first, last, less):
    while last - first > 1:
        last -= 1
        _pop_heap(v, first, last, last, less)


def _introsort_loop(v, first, last, depth, less):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_select(v, first, last, last, less)
            _sort_heap(v, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(v, first, last, less)
        _introsort_loop(v, cut, last, depth, less)
        last = cut


def std_sort(v: list, less) -> None:
    """``std::sort(v.begin(), v.end(), comp)`` of libstdc++, in place."""
    if len(v) > 1:
        _introsort_loop(v, 0, len(v), 2 * _lg(len(v)), less)
        _final_insertion_sort(v, 0, len(v), less)


def std_nth_element(v: list, nth: int, less) -> None:
    """``std::nth_element`` of libstdc++ (introselect), in place."""
    first, last = 0, len(v)
    if first == last or nth == last:
        return
    depth = 2 * _lg(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(v, first, nth + 1, last, less)
            v[first], v[nth] = v[nth], v[first]
            return
        depth -= 1
        cut = _partition_pivot(v, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, first, last, less)


def std_partial_sort(v: list, middle: int, less) -> None:
    """``std::partial_sort(v.begin(), v.begin() + middle, v.end(), comp)`` of libstdc++, in place."""
    _heap_select(v, 0, middle, len(v), less)
    _sort_heap(v, 0, middle, less)


def _nan(x) -> bool:
    return x != x


def _less_nan_last(a, b) -> bool:     # PyTorch's ascending order: NaN above everything
    return (not _nan(a) and _nan(b)) or a < b


def _greater_nan_first(a, b) -> bool:  # PyTorch's descending order: NaN first
    return (_nan(a) and not _nan(b)) or a > b


def _plain_less(a, b) -> bool:         # mode's comparator (NaN compares false both ways)
    return a < b


def _pairs(values: list) -> list:
    return list(zip(values, range(len(values))))


def sort_row_unstable(values: list, descending: bool) -> list:
    """PyTorch's ``sort(stable=False)`` of one slice (std::sort of libstdc++): its index order."""
    v = _pairs(values)
    std_sort(v, _greater_nan_first if descending else _less_nan_last)
    return [i for _, i in v]


def topk_row(values: list, k: int, largest: bool, sorted_: bool) -> list:
    """PyTorch's CPU topk of one slice (partial_sort when k * 64 <= n, else nth_element + sort): indices."""
    v = _pairs(values)
    less = _greater_nan_first if largest else _less_nan_last
    n = len(v)
    if k * 64 <= n:
        std_partial_sort(v, k, less)
    else:
        std_nth_element(v, k - 1, less)
        if sorted_:
            head = v[:k - 1]
            std_sort(head, less)
            v[:k - 1] = head
    return [i for _, i in v[:k]]


def quickselect_row(values: list, k: int) -> int:
    """The index kthvalue reports: PyTorch's own quickselect (Sedgewick's partition, median of three)."""
    vals = list(values)
    idx = list(range(len(vals)))

    def gt(x, y):   # "greater, or NaN": NaN sorts as the largest value
        return (_nan(x) and not _nan(y)) or x > y

    def swap(i, j):
        vals[i], vals[j] = vals[j], vals[i]
        idx[i], idx[j] = idx[j], idx[i]

    lo, hi = 0, len(vals) - 1
    while True:
        if hi <= lo:
            break
        if hi == lo + 1:
            if gt(vals[lo], vals[hi]):
                swap(lo, hi)
            break
        p = (lo + hi) >> 1
        swap(p, lo + 1)
        if gt(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if gt(vals[lo], vals[hi]):
            swap(lo, hi)
        if gt(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j = lo + 1, hi
        piv = vals[lo]
        while True:
            i += 1
            while gt(piv, vals[i]):
                i += 1
            j -= 1
            while gt(vals[j], piv):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


def mode_row(values: list):
    """PyTorch's CPU mode of one slice: std::sort by value, the first longest run; its last element's index."""
    v = _pairs(values)
    std_sort(v, _plain_less)
    best_val, best_idx, best = v[0][0], v[0][1], 0
    run = 0
    for i in range(len(v)):
        run += 1
        if i == len(v) - 1 or v[i][0] != v[i + 1][0]:
            if run > best:
                best_val, best_idx, best = v[i][0], v[i][1], run
            run = 0
    return best_val, best_idx
