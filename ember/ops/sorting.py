"""Sorting and searching: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile, nanquantile,
unique, unique_consecutive, nonzero, argwhere, count_nonzero, bincount, histc, searchsorted, bucketize.

Every differentiable value these ops return is its input picked at indices along a dim: one primitive,
``gather_p`` (forward ``xp.gather_along``, VJP ``xp.scatter_along_zeros``, linear JVP), recorded under the
node name PyTorch gives each op (``SortBackward0``, ``TopkBackward0``, ...). The indices themselves are
computed on raw arrays, in PyTorch's order: NaN sorts above every number, and where values tie, the index
PyTorch's C++ algorithm reports (see ``ember/devices/cpu/sorting.py``), so gradients reach the same elements.

PyTorch's default ``sort(stable=False)``, ``topk``, ``kthvalue`` and ``mode`` leave tied elements in an order
that depends on the algorithm; ember reproduces it by running the slices that hold ties through a Python model
of that algorithm, as long as they hold at most ``EXACT_TIES_LIMIT`` elements in all (about 0.5 s of work). Past
that, they get the stable order (``stable=True``'s), which may differ from PyTorch's among tied elements
(values are the same; indices, and so which tied element a gradient reaches, may not be).
"""
from __future__ import annotations


import numpy as np

from ..devices.cpu.sorting import (_binary_search, _has_ties, _mode_row, _quickselect_row, _slices_where,
                              _sort_row_unstable, _stable_argsort, _topk_row)
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, apply, defprim
from ._registry import graph, register
from .._util import check_bool, check_tensor, dtype_word, normalize_dims, return_type

EXACT_TIES_LIMIT = 1 << 16   # elements with ties per call ordered by the model of PyTorch's C++ algorithm

# ----- primitives ----------------------------------------------------------------------------------

gather_p = defprim(
    "gather_along", "SortBackward0",
    lambda xp, a, indices, dim, keepdim: xp.gather_along(a, indices, dim, keepdim),
    vjp=lambda xp, g, out, a, indices, dim, keepdim: xp.scatter_along_zeros(g, indices, dim, keepdim, a.shape),
    jvp="linear")

scatter_p = defprim(
    "scatter_along_zeros", "ScatterAddBackward0",
    lambda xp, g, indices, dim, keepdim, shape: xp.scatter_along_zeros(g, indices, dim, keepdim, shape),
    vjp=lambda xp, g, out, a, indices, dim, keepdim, shape: xp.gather_along(g, indices, dim, keepdim),
    jvp="linear")

graph("gather_along", lambda x, indices, dim, keepdim=True: apply(
    gather_p, (x,), {"indices": indices, "dim": dim, "keepdim": keepdim}))
graph("scatter_along_zeros", lambda g, indices, dim, keepdim, shape: apply(
    scatter_p, (g,), {"indices": indices, "dim": dim, "keepdim": keepdim, "shape": shape}))


def _evenly(xp, g, a, out):
    # median()/nanmedian() of all elements: PyTorch shares the gradient evenly among the elements equal to
    # the result (all NaN elements when the result is NaN).
    mask = xp.isnan(a) if bool(xp.isnan(out)) else a == out
    return g * mask / xp.sum(mask)


def _median_all_prim(name, node_name, forward):
    return defprim(name, node_name, forward, vjp=lambda xp, g, out, a: _evenly(xp, g, a, out),
                   jvp=lambda xp, t, out, a: xp.sum(_evenly(xp, t, a, out)), saves=(0,), saves_out=True)


median_all_p = _median_all_prim("median", "MedianBackward0", lambda xp, a: xp.median_all(a, False))
nanmedian_all_p = _median_all_prim("nanmedian", "NanmedianBackward0", lambda xp, a: xp.median_all(a, True))
graph("median_all", lambda x, ignore_nan=False: apply(nanmedian_all_p if ignore_nan else median_all_p, (x,)))

# quantile's result is reshaped last, in place, in PyTorch: its node is that squeeze's.
quantile_out_p = defprim("quantile", "SqueezeBackward4", lambda xp, a, shape: xp.reshape(a, shape),
                         vjp=lambda xp, g, out, a, shape: xp.reshape(g, a.shape), jvp="linear")


def _no_derivative(name: str, node_name: str, error: type, message: str):
    """A node for outputs PyTorch records but cannot differentiate (unique, bincount with weights)."""
    def rule(xp, g, out, a, value):
        raise error(message)
    return defprim(name, node_name, lambda xp, a, value: value, vjp=rule, jvp=rule)


unique_p = _no_derivative("unique", "Unique2Backward0", NotImplementedError,
                          "the derivative for '_unique2' is not implemented.")
unique_dim_p = _no_derivative("unique", "UniqueDimBackward0", NotImplementedError,
                              "the derivative for 'unique_dim' is not implemented.")
unique_consecutive_p = _no_derivative("unique_consecutive", "UniqueConsecutiveBackward0", NotImplementedError,
                                      "the derivative for 'unique_consecutive' is not implemented.")
bincount_p = _no_derivative("bincount", "NotImplemented", RuntimeError,
                            "derivative for aten::bincount is not implemented")

_NODES = {n: node_class(n, PrimNode) for n in (
    "SortBackward0", "SortBackward1", "TopkBackward0", "KthvalueBackward0", "MedianBackward1", "NanmedianBackward1",
    "ModeBackward0")}


# ----- result types --------------------------------------------------------------------------------

_return_type = return_type


SortResult = _return_type("sort")
TopkResult = _return_type("topk")
KthvalueResult = _return_type("kthvalue")
MedianResult = _return_type("median")
NanmedianResult = _return_type("nanmedian")
ModeResult = _return_type("mode")


# ----- argument checks -----------------------------------------------------------------------------

_NOT_GIVEN = object()   # an argument left out (PyTorch tells some overloads apart by it)


def _dim(input: Tensor, dim, op: str, pos: int = 2) -> int:
    """One ``dim`` wrapped to a non-negative axis (0 for a 0-d input, which accepts 0 and -1)."""
    if dim is None or isinstance(dim, (list, tuple)):
        raise TypeError(f"{op}(): argument 'dim' (position {pos}) must be int, not {type(dim).__name__}")
    dims = normalize_dims(dim, input._data.ndim, op)
    return dims[0] if dims else 0


def _alias(value, alias, default, op: str, name: str, alias_name: str):
    """PyTorch's NumPy-style keyword aliases (``axis`` for ``dim``, ``keepdims`` for ``keepdim``)."""
    if alias is _NOT_GIVEN:
        return default if value is _NOT_GIVEN else value
    if value is not _NOT_GIVEN:
        raise TypeError(f"{op}() got multiple values for argument '{name}' (also given as '{alias_name}')")
    return alias


def _int_arg(value, op: str, arg: str, pos: int | None = None) -> int:
    if isinstance(value, Tensor) and value._data.size == 1 and value._data.dtype.kind in "iu":
        return int(value._data.reshape(()))   # an integer tensor of one element is an int to PyTorch
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{op}(): argument '{arg}'{where} must be int, not {type(value).__name__}")
    return int(value)


def _refuse_dtype(input: Tensor, kernel: str, kinds: str) -> None:
    """PyTorch's NotImplementedError for a dtype its kernel is not compiled for."""
    if input._data.dtype.kind in kinds:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_word(input._data.dtype)}'")


def _nonempty_dim(input: Tensor, d: int, op: str) -> None:
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _values(input: Tensor, idx: np.ndarray, d: int, keepdim: bool, node: str) -> Tensor:
    """``input`` picked at ``idx`` along ``d`` (recorded under PyTorch's node name), and the indices."""
    return apply(gather_p, (input,), {"indices": idx, "dim": d, "keepdim": keepdim}, _NODES[node])


def _reduced_indices(idx: np.ndarray, d: int, keepdim: bool, ndim: int) -> Tensor:
    if ndim == 0:
        return make(np.zeros((), dtype=np.int64))
    return make(idx if keepdim else np.squeeze(idx, d))


def _exact(n: int, redo: np.ndarray) -> bool:
    """Whether the slices ``redo`` marks (each of length ``n``) are few enough to run through the Python model of
    PyTorch's algorithm (at most ``EXACT_TIES_LIMIT`` elements in all); if not, they keep the stable order."""
    return n * int(np.count_nonzero(redo)) <= EXACT_TIES_LIMIT


# ----- sort, argsort, msort ------------------------------------------------------------------------

def _sort_indices(a: np.ndarray, d: int, descending: bool, stable: bool) -> np.ndarray:
    if a.ndim == 0:
        return np.zeros((), dtype=np.int64)
    idx = _stable_argsort(a, d, descending)
    n = a.shape[d]
    if not stable and 16 < n:
        # std::sort leaves ties in its own order beyond 16 elements (insertion sort, stable, below)
        ties = _has_ties(np.take_along_axis(a, idx, d), d)
        if _exact(n, ties):
            for sl in _slices_where(ties, d):
                idx[sl] = _sort_row_unstable(a[sl], descending)
    return idx


def _sort_args(input, dim, descending, stable, op):
    check_tensor(input, op)
    d = _dim(input, dim, op)
    descending = check_bool(descending, op, "descending")
    stable = False if stable is None or stable is _NOT_GIVEN else check_bool(stable, op, "stable")
    return d, descending, stable


@register(method=True)
def sort(input: Tensor, dim: int = _NOT_GIVEN, descending: bool = False, stable: bool | None = _NOT_GIVEN, *,
         axis: int = _NOT_GIVEN) -> SortResult:
    """Sorted values along ``dim`` and their indices (NaN sorts above every number)."""
    # sort(stable=...) given at all is PyTorch's other overload, whose node is SortBackward1
    node = "SortBackward0" if stable is _NOT_GIVEN else "SortBackward1"
    dim = _alias(dim, axis, -1, "sort", "dim", "axis")
    d, descending, stable = _sort_args(input, dim, descending, stable, "sort")
    idx = _sort_indices(input._data, d, descending, stable)
    values = _values(input, idx, d, True, node)
    return SortResult(values, make(idx))


@register(method=True)
def argsort(input: Tensor, dim: int = _NOT_GIVEN, descending: bool = False, stable: bool = False, *,
            axis: int = _NOT_GIVEN) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    dim = _alias(dim, axis, -1, "argsort", "dim", "axis")
    d, descending, stable = _sort_args(input, dim, descending, stable, "argsort")
    return make(_sort_indices(input._data, d, descending, stable))


@register(method=True)
def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dim."""
    check_tensor(input, "msort")
    return sort(input, 0).values


# ----- topk, kthvalue ------------------------------------------------------------------------------

@register(method=True)
def topk(input: Tensor, k: int, dim: int = _NOT_GIVEN, largest: bool = True, sorted: bool = True, *,
         axis: int = _NOT_GIVEN) -> TopkResult:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    check_tensor(input, "topk")
    k = _int_arg(k, "topk", "k", 2)
    d = _dim(input, _alias(dim, axis, -1, "topk", "dim", "axis"), "topk", 3)
    largest = check_bool(largest, "topk", "largest")
    sorted_ = check_bool(sorted, "topk", "sorted")
    a = input._data
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if a.dtype.kind == "b":
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if a.ndim == 0:
        return TopkResult(_values(input, np.zeros((), np.int64), 0, True, "TopkBackward0"),
                          make(np.zeros((), np.int64)))
    idx = np.take(_stable_argsort(a, d, largest), np.arange(k), axis=d)
    if k:
        # partial_sort (k * 64 <= n) returns the stable order unless values tie; nth_element orders the
        # unsorted head its own way, and sorts the first k - 1 only.
        if k * 64 <= n or sorted_:
            redo = _has_ties(np.sort(a, axis=d), d)
        else:
            redo = np.ones(a.shape[:d] + (1,) + a.shape[d + 1:], dtype=bool)
        if _exact(n, redo):
            for sl in _slices_where(redo, d):
                idx[sl] = _topk_row(a[sl], k, largest, sorted_)
    return TopkResult(_values(input, idx, d, True, "TopkBackward0"), make(idx))


@register(method=True)
def kthvalue(input: Tensor, k: int, dim: int = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *, axis: int = _NOT_GIVEN,
             keepdims: bool = _NOT_GIVEN) -> KthvalueResult:
    """The ``k``-th smallest value along ``dim`` (k counts from 1) and its index."""
    check_tensor(input, "kthvalue")
    k = _int_arg(k, "kthvalue", "k", 2)
    d = _dim(input, _alias(dim, axis, -1, "kthvalue", "dim", "axis"), "kthvalue", 3)
    keepdim = check_bool(_alias(keepdim, keepdims, False, "kthvalue", "keepdim", "keepdims"), "kthvalue", "keepdim")
    a = input._data
    _nonempty_dim(input, d, "kthvalue")
    n = a.shape[d] if a.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if a.ndim == 0:   # PyTorch copies a 0-d input before looking at its dtype
        idx = np.zeros((), np.int64)
    else:
        _refuse_dtype(input, "kthvalue_cpu", "b")
        order = _stable_argsort(a, d, False)
        idx = np.take(order, [k - 1], axis=d)
        if n > 1:
            # the k-th value tied with another: PyTorch's quickselect decides which index it reports
            sv = np.take_along_axis(a, order, d)
            kth = np.take(sv, [k - 1], axis=d)
            same = (sv == kth) | (np.isnan(sv) & np.isnan(kth)) if a.dtype.kind == "f" else sv == kth
            redo = np.sum(same, axis=d, keepdims=True) > 1
            for sl in _slices_where(redo if _exact(n, redo) else redo[:0], d):
                pos = list(sl)
                pos[d] = slice(0, 1)
                idx[tuple(pos)] = _quickselect_row(a[sl], k - 1)
    return KthvalueResult(_values(input, idx, d, keepdim, "KthvalueBackward0"),
                          _reduced_indices(idx, d, keepdim, a.ndim))


# ----- median, nanmedian, mode ---------------------------------------------------------------------

def _median_dim(input, dim, keepdim, op, ignore_nan):
    if dim is _NOT_GIVEN:
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
    d = _dim(input, dim, op)
    keepdim = check_bool(False if keepdim is _NOT_GIVEN else keepdim, op, "keepdim")
    _nonempty_dim(input, d, "median")   # nanmedian's kernel is median's: PyTorch names median
    _refuse_dtype(input, "median_out", "b")
    a = input._data
    if a.ndim == 0:
        idx = np.zeros((), np.int64)
    else:
        # PyTorch: nth_element with ties broken by index, i.e. the position in the stable sort (NaN last);
        # median() returns a slice's first NaN, nanmedian() the lower median of the numbers.
        order = _stable_argsort(a, d, False)
        n = a.shape[d]
        if a.dtype.kind == "f":
            nans = np.isnan(a)
            count = np.sum(~nans, axis=d, keepdims=True) if ignore_nan else np.full(nans.shape[:d] + (1,) +
                                                                                     nans.shape[d + 1:], n)
        else:
            count = np.full(a.shape[:d] + (1,) + a.shape[d + 1:], n)
        pos = np.maximum(count - 1, 0) // 2
        idx = np.take_along_axis(order, pos, d)
        if a.dtype.kind == "f" and not ignore_nan:
            has_nan = np.any(nans, axis=d, keepdims=True)
            idx = np.where(has_nan, np.argmax(nans, axis=d, keepdims=True), idx)
    node = "NanmedianBackward1" if ignore_nan else "MedianBackward1"
    result = NanmedianResult if ignore_nan else MedianResult
    return result(_values(input, idx, d, keepdim, node), _reduced_indices(idx, d, keepdim, a.ndim))


def _median(input, dim, keepdim, axis, keepdims, op: str, all_p, nan: bool):
    check_tensor(input, op)
    dim = _alias(dim, axis, _NOT_GIVEN, op, "dim", "axis")
    keepdim = _alias(keepdim, keepdims, _NOT_GIVEN, op, "keepdim", "keepdims")
    if dim is _NOT_GIVEN and keepdim is _NOT_GIVEN:   # median() of all elements; median(x, None) is an error
        if input._data.size:
            _refuse_dtype(input, "median_cpu", "b")
        return apply(all_p, (input,))
    return _median_dim(input, dim, keepdim, op, nan)


@register(method=True)
def median(input: Tensor, dim: int = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *, axis: int = _NOT_GIVEN,
           keepdims: bool = _NOT_GIVEN):
    """The lower median of all elements, or along ``dim`` with its index (NaN if the slice holds one)."""
    return _median(input, dim, keepdim, axis, keepdims, "median", median_all_p, False)


@register(method=True)
def nanmedian(input: Tensor, dim: int = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *, axis: int = _NOT_GIVEN,
              keepdims: bool = _NOT_GIVEN):
    """``median`` ignoring NaN (NaN only where a slice has nothing else)."""
    return _median(input, dim, keepdim, axis, keepdims, "nanmedian", nanmedian_all_p, True)


@register(method=True)
def mode(input: Tensor, dim: int = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *, axis: int = _NOT_GIVEN,
         keepdims: bool = _NOT_GIVEN) -> ModeResult:
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and an index of it."""
    check_tensor(input, "mode")
    d = _dim(input, _alias(dim, axis, -1, "mode", "dim", "axis"), "mode")
    keepdim = check_bool(_alias(keepdim, keepdims, False, "mode", "keepdim", "keepdims"), "mode", "keepdim")
    _nonempty_dim(input, d, "mode")
    a = input._data
    if a.ndim == 0:
        idx = np.zeros((), np.int64)
    else:
        n = a.shape[d]
        # No tie and no NaN: every value is as frequent as the others, and the smallest one wins.
        idx = np.argmin(a, axis=d, keepdims=True) if n else np.zeros(a.shape[:d] + (1,) + a.shape[d + 1:], np.int64)
        redo = _has_ties(np.sort(a, axis=d), d)
        if a.dtype.kind == "f":
            redo |= np.any(np.isnan(a), axis=d, keepdims=True)
        exact = _exact(n, redo)
        for sl in _slices_where(redo, d):
            row = a[sl]
            pos = list(sl)
            pos[d] = slice(0, 1)
            idx[tuple(pos)] = _mode_row(row)[1] if exact else _mode_stable(row)
    return ModeResult(_values(input, idx, d, keepdim, "ModeBackward0"), _reduced_indices(idx, d, keepdim, a.ndim))


def _mode_stable(row: np.ndarray) -> int:
    # long slices: the answer of a stable sort (the last occurrence of the smallest most frequent value)
    vals, counts = np.unique(row, return_counts=True, equal_nan=False)
    v = vals[int(np.argmax(counts))]
    return int(np.flatnonzero((row == v) | ((row != row) & (v != v)))[-1])


# ----- quantile, nanquantile -----------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    from .elementwise import where
    check_tensor(input, op)
    if isinstance(q, Tensor):
        q_t = q
    elif isinstance(q, (bool, int, float, np.integer, np.floating, np.bool_)):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q, q_t = float(q), None
    else:
        raise TypeError(f"{op}(): argument 'q' must be Tensor or float, not {type(q).__name__}")
    keepdim = check_bool(keepdim, op, "keepdim")
    if not isinstance(interpolation, str):
        raise TypeError(f"{op}(): argument 'interpolation' must be str, not {type(interpolation).__name__}")
    a = input._data
    if a.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q_t is not None and q_t._data.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if a.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q_t is not None and q_t._data.dtype != a.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if q_t is not None:
        with np.errstate(invalid="ignore"):
            if not np.all((q_t._data >= 0) & (q_t._data <= 1)):
                raise RuntimeError("quantile() q values must be in the range [0, 1]")
    d = None if dim is None else _dim(input, dim, op, 3)

    # The reduced elements along the last dim: rows of shape R + (n,).
    if d is None or a.ndim == 0:
        rows = input.reshape(-1) if a.ndim != 1 else input
        kept = (1,) * a.ndim if keepdim else ()
    else:
        perm = tuple(i for i in range(a.ndim) if i != d) + (d,)
        rows = input.permute(perm) if d != a.ndim - 1 else input
        kept = a.shape[:d] + (1,) + a.shape[d + 1:] if keepdim else a.shape[:d] + a.shape[d + 1:]
    n = rows._data.shape[-1]
    srt = sort(rows, -1).values
    nans = np.isnan(rows._data)

    # ranks (in the input's dtype, as PyTorch computes them) of shape R + (Q,)
    qv = q_t.reshape(-1) if q_t is not None else make(np.array([q], dtype=a.dtype))
    if ignore_nan:
        last = np.sum(~nans, axis=-1, keepdims=True) - 1
        ranks = qv * make(last.astype(a.dtype))
        ranks = where(make(ranks._data < 0), 0.0, ranks)
    else:
        has_nan = np.any(nans, axis=-1, keepdims=True)
        ranks = qv * float(n - 1)
        ranks = where(make(has_nan), float(n - 1), ranks)
    rk = ranks._data
    if interpolation == "lower":
        rk = np.floor(rk)
    elif interpolation == "higher":
        rk = np.ceil(rk)
    elif interpolation == "nearest":
        rk = np.round(rk)   # half to even, as PyTorch's round
    below = rk.astype(np.int64)
    result = apply(gather_p, (srt,), {"indices": below, "dim": srt._data.ndim - 1, "keepdim": True})
    if interpolation in ("linear", "midpoint"):
        above = np.ceil(rk).astype(np.int64)
        vb, va = result, apply(gather_p, (srt,), {"indices": above, "dim": srt._data.ndim - 1, "keepdim": True})
        w = ranks - make(below.astype(a.dtype)) if interpolation == "linear" else make(np.full(rk.shape, 0.5, a.dtype))
        # PyTorch's lerp: from the nearer end, so that weight 0 gives start and weight 1 gives end exactly
        result = where(make(w._data < 0.5), vb + w * (va - vb), va - (va - vb) * (1 - w))
    if q_t is None or q_t._data.ndim == 0:
        return apply(quantile_out_p, (result,), {"shape": kept})
    r = result._data.ndim
    result = result.permute((r - 1,) + tuple(range(r - 1))) if r > 1 else result
    return apply(quantile_out_p, (result,), {"shape": (q_t._data.size,) + kept})


@register(method=True)
def quantile(input: Tensor, q, dim: int | None = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *,
             interpolation: str = "linear", axis: int | None = _NOT_GIVEN,
             keepdims: bool = _NOT_GIVEN) -> Tensor:
    """The ``q``-quantiles (float or 0-d/1-d tensor) of all elements or along ``dim``."""
    dim = _alias(dim, axis, None, "quantile", "dim", "axis")
    keepdim = _alias(keepdim, keepdims, False, "quantile", "keepdim", "keepdims")
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@register(method=True)
def nanquantile(input: Tensor, q, dim: int | None = _NOT_GIVEN, keepdim: bool = _NOT_GIVEN, *,
                interpolation: str = "linear", axis: int | None = _NOT_GIVEN,
                keepdims: bool = _NOT_GIVEN) -> Tensor:
    """``quantile`` ignoring NaN."""
    dim = _alias(dim, axis, None, "nanquantile", "dim", "axis")
    keepdim = _alias(keepdim, keepdims, False, "nanquantile", "keepdim", "keepdims")
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ----- unique, unique_consecutive ----------------------------------------------------------------------

def _record_nondiff(prim, input: Tensor, value: np.ndarray) -> Tensor:
    """``value`` as an op's output: recorded (with a node that cannot be differentiated) if PyTorch records it."""
    if input.requires_grad and value.dtype.kind == "f":
        return apply(prim, (input,), {"value": value})
    return make(value)


def _unique_flat(a: np.ndarray):
    flat = a.reshape(-1)
    if flat.size == 0:
        e = np.zeros(0, np.int64)
        return flat.copy(), e, e
    order = np.argsort(flat, kind="stable")
    sv = flat[order]
    new = np.empty(sv.size, dtype=bool)
    new[0] = True
    new[1:] = sv[1:] != sv[:-1]   # NaN != NaN: each NaN is its own value, as in PyTorch
    group = np.cumsum(new) - 1
    inverse = np.empty(flat.size, np.int64)
    inverse[order] = group
    counts = np.bincount(group).astype(np.int64)
    return sv[new], inverse.reshape(a.shape), counts


def _unique_dim_args(input, dim, op, word):
    a = input._data
    if isinstance(dim, (bool, list, tuple)) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    if a.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(input, dim, op)
    if a.size == 0 and any(s == 0 for i, s in enumerate(a.shape) if i != d):
        raise RuntimeError(f"There are 0 sized dimensions, and they aren't selected, so {word} cannot be applied")
    return d


def _pack(out, inverse, counts, return_inverse, return_counts):
    res = (out,) + ((make(inverse),) if return_inverse else ()) + ((make(counts),) if return_counts else ())
    return res if len(res) > 1 else res[0]


@register(method=True)
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None):
    """The distinct values (or slices along ``dim``), sorted; optionally the inverse indices and counts."""
    check_tensor(input, "unique")
    check_bool(sorted, "unique", "sorted")
    return_inverse = check_bool(return_inverse, "unique", "return_inverse")
    return_counts = check_bool(return_counts, "unique", "return_counts")
    a = input._data
    if dim is None:
        vals, inverse, counts = _unique_flat(a)
        return _pack(_record_nondiff(unique_p, input, vals), inverse, counts, return_inverse, return_counts)
    d = _unique_dim_args(input, dim, "unique_dim", "unique")
    if a.shape[d] == 0:
        vals, inverse, counts = a.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    else:
        vals, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
    return _pack(_record_nondiff(unique_dim_p, input, vals), inverse.reshape(-1).astype(np.int64),
                 counts.astype(np.int64), return_inverse, return_counts)


@register(method=True)
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """``input`` with each run of equal consecutive values (or slices along ``dim``) collapsed to one."""
    check_tensor(input, "unique_consecutive")
    return_inverse = check_bool(return_inverse, "unique_consecutive", "return_inverse")
    return_counts = check_bool(return_counts, "unique_consecutive", "return_counts")
    a = input._data
    if dim is None:
        flat, shape = a.reshape(-1), a.shape
        d = 0
    else:
        d = _unique_dim_args(input, dim, "unique_consecutive", "unique")
        flat, shape = np.moveaxis(a, d, 0).reshape(a.shape[d], -1), (a.shape[d],)
    m = flat.shape[0]
    new = np.ones(m, dtype=bool)
    if m > 1:
        diff = flat[1:] != flat[:-1]
        new[1:] = diff if diff.ndim == 1 else np.any(diff, axis=1)
    group = np.cumsum(new) - 1 if m else np.zeros(0, np.int64)
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, m)).astype(np.int64)
    if dim is None:
        vals = flat[new]
    else:
        vals = np.take(a, starts, axis=d)
    return _pack(_record_nondiff(unique_consecutive_p, input, np.ascontiguousarray(vals)),
                 group.astype(np.int64).reshape(shape), counts, return_inverse, return_counts)


# ----- nonzero, argwhere, count_nonzero --------------------------------------------------------------

@register(method=True)
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-d tensor per dim."""
    check_tensor(input, "nonzero")
    as_tuple = check_bool(as_tuple, "nonzero", "as_tuple")
    a = input._data
    if a.ndim == 0:
        hit = bool(a != 0)
        if as_tuple:
            return (make(np.zeros(int(hit), np.int64)),)
        return make(np.zeros((int(hit), 0), np.int64))
    idx = np.nonzero(a)
    if as_tuple:
        return tuple(make(i.astype(np.int64)) for i in idx)
    return make(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


@register(method=True)
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the (n, ndim) indices of the nonzero elements."""
    check_tensor(input, "argwhere")
    return nonzero(input)


@register(method=True)
def count_nonzero(input: Tensor, dim=_NOT_GIVEN, *, axis=_NOT_GIVEN) -> Tensor:
    """The number of nonzero elements, over all dims or over ``dim`` (an int or a tuple of ints)."""
    check_tensor(input, "count_nonzero")
    dim = _alias(dim, axis, None, "count_nonzero", "dim", "axis")
    a = input._data
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    dims = normalize_dims(dim, a.ndim, "count_nonzero")
    return make(np.asarray(np.count_nonzero(a, axis=dims if a.ndim else None)).astype(np.int64))


# ----- bincount, histc -----------------------------------------------------------------------------

@register(method=True)
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in the 1-d ``input`` (summing ``weights`` if given)."""
    check_tensor(input, "bincount")
    if weights is not None:
        check_tensor(weights, "bincount", "weights", 2)
    minlength = _int_arg(minlength, "bincount", "minlength")
    a = input._data
    _refuse_dtype(input, "bincount_cpu", "bfc")
    if a.ndim != 1 or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights._data.ndim != 1 or weights._data.shape[0] != a.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        return make(np.bincount(a, minlength=minlength).astype(np.int64))
    w = weights._data
    out_dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    r = np.bincount(a, weights=w.astype(np.float64), minlength=minlength).astype(out_dtype)
    return _record_nondiff(bincount_p, weights, r)


@register(method=True)
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    check_tensor(input, "histc")
    bins = _int_arg(bins, "histc", "bins")
    for name, v in (("min", min), ("max", max)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"histc(): argument '{name}' must be Number, not {type(v).__name__}")
    a = input._data
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    _refuse_dtype(input, "histogram_cpu", "biu")
    if lo == hi and a.size:
        lo, hi = float(np.min(a)), float(np.max(a))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        def fmt(v):
            return "-nan" if v != v else ("inf" if v == np.inf else ("-inf" if v == -np.inf else f"{v:g}"))
        raise RuntimeError(f"torch.histc: range of [{fmt(lo)}, {fmt(hi)}] is not finite")
    flat = a.reshape(-1)
    with np.errstate(all="ignore"):
        keep = (flat >= lo) & (flat <= hi)
        x = flat[keep]
        # PyTorch's bin: (x - min) * bins / (max - min), computed in the input's dtype; max falls in the last bin
        t = a.dtype.type
        pos = (x - t(lo)) * t(bins) / (t(hi) - t(lo))
        if not np.isfinite(pos).all():   # a range near the dtype's limit overflows (PyTorch's bins are then
            pos = (x.astype(np.float64) - lo) * bins / (hi - lo)   # undefined): the bins in double instead
        pos = pos.astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return make(np.bincount(pos, minlength=bins).astype(a.dtype))


# ----- searchsorted, bucketize ---------------------------------------------------------------------

def _values_arg(values, op: str):
    if isinstance(values, Tensor):
        return values._data, False
    if isinstance(values, (bool, int, float, np.generic)):
        return np.asarray(values), True
    raise TypeError(f"{op}(): argument 'input' (position 2) must be Tensor or Number, not {type(values).__name__}")


def _search(op, bounds: np.ndarray, v: np.ndarray, right: bool, sorter, out_int32: bool) -> Tensor:
    if bounds.dtype.kind == "b" or v.dtype.kind == "b":
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    r = _binary_search(bounds, v, right, sorter)
    return make(r.astype(np.int32 if out_int32 else np.int64))


@register()
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value of ``input`` would be inserted in the innermost dim of ``sorted_sequence``."""
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    v, _ = _values_arg(input, "searchsorted")
    out_int32 = check_bool(out_int32, "searchsorted", "out_int32")
    right = check_bool(right, "searchsorted", "right")
    if side is not None:
        if not isinstance(side, str):
            raise TypeError(f"searchsorted(): argument 'side' must be str, not {type(side).__name__}")
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    b = sorted_sequence._data
    if b.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if b.ndim > 1 and (v.ndim != b.ndim or v.shape[:-1] != b.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(b.shape)} and input value tensor {list(v.shape)}")
    srt = None
    if sorter is not None:
        check_tensor(sorter, "searchsorted", "sorter")
        srt = sorter._data
        if srt.dtype != np.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{dtype_word(srt.dtype)}")
        if srt.shape != b.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(b.shape)}and got sorter tensor {list(srt.shape)}")
        if srt.size and (srt.min() < 0 or srt.max() >= b.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    return _search("searchsorted", b, v, right, srt, out_int32)


@register()
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of 1-d ``boundaries`` each value of ``input`` falls in."""
    v, _ = _values_arg(input, "bucketize")
    check_tensor(boundaries, "bucketize", "boundaries", 2)
    out_int32 = check_bool(out_int32, "bucketize", "out_int32")
    right = check_bool(right, "bucketize", "right")
    b = boundaries._data
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return _search("bucketize", b, v, right, None, out_int32)

