"""Sorting and searching: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile, nanquantile,
unique, unique_consecutive, nonzero, argwhere, count_nonzero, bincount, histc, searchsorted, bucketize.

Every differentiable value these ops return is its input picked at indices along a dim: one primitive,
``gather_p`` (forward ``xp.gather_along``, VJP ``xp.scatter_along_zeros``, linear JVP), recorded under the
node name PyTorch gives each op (``SortBackward0``, ``TopkBackward0``, ...). The indices themselves are
computed on raw arrays by the device's kernels (``xp.sort_indices``, ``xp.topk_indices``, ...), in PyTorch's
order: NaN sorts above every number, and where values tie, the index PyTorch's C++ algorithm reports (see
``ember/devices/ties.py``), so gradients reach the same elements. This file holds the declarations, the
argument checks and the Tensor-level glue.

PyTorch's default ``sort(stable=False)``, ``topk``, ``kthvalue`` and ``mode`` leave tied elements in an order
that depends on the algorithm; ember reproduces it by running the slices that hold ties through a Python model
of that algorithm, as long as they hold at most ``EXACT_TIES_LIMIT`` elements in all (about 0.5 s of work). Past
that, they get the stable order (``stable=True``'s), which may differ from PyTorch's among tied elements
(values are the same; indices, and so which tied element a gradient reaches, may not be).
"""
from __future__ import annotations

from ..autograd import _batching
from . import _batch_public as _bp
from .reduction import _rows_jvp, _rows_vjp

import math
import numbers

from .. import _dtype as D
from ..devices import NAMESPACES
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, apply, apply_saving, defprim
from ._registry import graph, graph_raw, invalid_arguments, register
from .._util import F8_CHARS, check_bool, check_tensor, dtype_word, holds, normalize_dims, refuse_shell, return_type, scalar_or_tensor
from .creation import linspace, ones, zeros
from .shape import cat
from ._schema import schema
from .._dtype import bfloat16 as D_bfloat16, bool as D_bool, int64 as D_int64

EXACT_TIES_LIMIT = 1 << 16   # elements with ties per call ordered by the model of PyTorch's C++ algorithm

# ----- primitives ----------------------------------------------------------------------------------

gather_p = defprim(
    "gather_along",
    lambda xp, a, indices, dim, keepdim: xp.gather_along(a, indices, dim, keepdim),
    node="SortBackward0",
    vjp=lambda xp, g, out, a, indices, dim, keepdim: xp.scatter_along_zeros(g, indices, dim, keepdim, a.shape),
    jvp="linear")

scatter_p = defprim(
    "scatter_along_zeros",
    lambda xp, g, indices, dim, keepdim, shape: xp.scatter_along_zeros(g, indices, dim, keepdim, shape),
    node="ScatterAddBackward0",
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
    return defprim(name, forward, node=node_name, vjp=lambda xp, g, out, a: _evenly(xp, g, a, out),
                   jvp=lambda xp, t, out, a: xp.sum(_evenly(xp, t, a, out)), saves=(0,), saves_out=True)


median_all_p = _median_all_prim("median", "MedianBackward0", lambda xp, a: xp.median_all(a, False))
nanmedian_all_p = _median_all_prim("nanmedian", "NanmedianBackward0", lambda xp, a: xp.median_all(a, True))
graph("median_all", lambda x, ignore_nan=False: apply(nanmedian_all_p if ignore_nan else median_all_p, (x,)))
# the device's index computations the public functions call (not differentiable)
graph_raw("sort_indices", "topk_indices", "kthvalue_indices", "median_indices", "mode_indices", "quantile_positions",
          "unique_values", "unique_slices", "unique_runs", "nonzero_indices", "nonzero_count", "bin_counts",
          "histc_counts", "binary_search")

# quantile's result is reshaped last, in place, in PyTorch: its node is that squeeze's.
quantile_out_p = defprim("quantile", lambda xp, a, shape: xp.reshape(a, shape),
                         node="SqueezeBackward4",
                         vjp=lambda xp, g, out, a, shape: xp.reshape(g, a.shape), jvp="linear")


def _no_derivative(name: str, node_name: str, error: type, message: str, aten: str, why: str = ""):
    """A node for outputs PyTorch records but cannot differentiate (unique, bincount with weights): backward
    raises ``error(message)``, forward mode PyTorch's NotImplementedError naming the ATen op ``aten``."""
    def vjp(xp, g, out, a, value):
        raise error(message)

    def jvp(xp, t, out, a, value):
        raise NotImplementedError(f"Trying to use forward AD with {aten} that does not support it{why}.")
    return defprim(name, lambda xp, a, value: value, node=node_name, vjp=vjp, jvp=jvp, complex="own")


_NOT_YET = " because it has not been implemented yet"
unique_p = _no_derivative("unique", "Unique2Backward0", NotImplementedError,
                          "the derivative for '_unique2' is not implemented.", "_unique2", _NOT_YET)
unique_dim_p = _no_derivative("unique", "UniqueDimBackward0", NotImplementedError,
                              "the derivative for 'unique_dim' is not implemented.", "unique_dim", _NOT_YET)
unique_consecutive_p = _no_derivative("unique_consecutive", "UniqueConsecutiveBackward0", NotImplementedError,
                                      "the derivative for 'unique_consecutive' is not implemented.",
                                      "unique_consecutive", _NOT_YET)
bincount_p = _no_derivative("bincount", "NotImplemented", RuntimeError,
                            "derivative for aten::bincount is not implemented", "aten::bincount")

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


def _xp(t: Tensor):
    """The raw namespace of a tensor's device."""
    return NAMESPACES[type(t._data)]


def _int_arg(value, op: str, arg: str, pos: int | None = None) -> int:
    if isinstance(value, Tensor) and value._data.size == 1 and value._data.dtype.kind in "iu":
        return int(value._data.reshape(()))   # an integer tensor of one element is an int to PyTorch
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):   # NumPy's ints too, not its bool
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


def _values(input: Tensor, idx, d: int, keepdim: bool, node: str, reduced: bool = True) -> tuple:
    """``(values, indices)``: ``input`` picked at the raw indices ``idx`` along ``d`` (recorded under PyTorch's node
    name), and the indices tensor returned, which the node saves (PyTorch's node saves its indices output: a
    change to them in place is an error at backward); ``reduced``: a reduction along ``d`` (``idx`` keeps ``d``,
    of size 1, dropped unless ``keepdim``)."""
    indices = make(idx if not reduced or idx.ndim == 0 or keepdim else _xp(input).squeeze(idx, d))
    values = apply_saving(gather_p, (input,), {"indices": idx, "dim": d, "keepdim": keepdim}, _NODES[node],
                          (indices,))
    return values, indices


# ----- sort, argsort, msort ------------------------------------------------------------------------

def _sort_indices(input: Tensor, d: int, descending: bool, stable: bool):
    return _xp(input).sort_indices(input._data, d, descending, stable, EXACT_TIES_LIMIT)


def _sort_args(input, dim, descending, stable, op):
    check_tensor(input, op)
    d = _dim(input, dim, op)
    if input._data.dtype.kind == "c":
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    descending = check_bool(descending, op, "descending")
    stable = False if stable is None or stable is _NOT_GIVEN else check_bool(stable, op, "stable")
    return d, descending, stable


def _positional_form(input: Tensor, dim: int = _NOT_GIVEN, descending: bool = False, *, axis: int = _NOT_GIVEN):
    return dim, descending, _NOT_GIVEN, axis


def _stable_form(input: Tensor, *, stable: bool, dim: int = _NOT_GIVEN, descending: bool = False,
                 axis: int = _NOT_GIVEN):
    return dim, descending, stable, axis


def _both_forms(input: Tensor, dim: int = _NOT_GIVEN, descending: bool = False, *, stable: bool = _NOT_GIVEN,
                axis: int = _NOT_GIVEN):
    """The parameters of both overloads (the signature sort/argsort show; never called)."""


def _two_overloads(f):
    """sort/argsort take PyTorch's two overloads, ``(input, dim=-1, descending=False)`` and ``(input, *, stable,
    dim=-1, descending=False)`` (with ``stable`` every other argument is a keyword: ``sort(x, 1, stable=True)``
    is PyTorch's TypeError). ``f`` binds its arguments to one of them in its own frame; as a wrapper (of
    ``_both_forms``, its signature), such a binding error is the registry's to word as PyTorch's
    (ops/_registry.py, ``_is_binding_error``)."""
    f.__wrapped__ = _both_forms
    return f


@register(method=True)
@_two_overloads
def sort(input: Tensor, *args, **kwargs) -> SortResult:
    """Sorted values along ``dim`` and their indices (NaN sorts above every number)."""
    dim, descending, stable, axis = _stable_form(input, *args, **kwargs) if "stable" in kwargs else \
        _positional_form(input, *args, **kwargs)
    # sort(stable=...) given at all is PyTorch's other overload, whose node is SortBackward1
    node = "SortBackward0" if stable is _NOT_GIVEN else "SortBackward1"
    dim = _alias(dim, axis, -1, "sort", "dim", "axis")
    d, descending, stable = _sort_args(input, dim, descending, stable, "sort")
    idx = _sort_indices(input, d, descending, stable)
    return SortResult(*_values(input, idx, d, True, node, reduced=False))


@register(method=True)
@_two_overloads
def argsort(input: Tensor, *args, **kwargs) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    dim, descending, stable, axis = _stable_form(input, *args, **kwargs) if "stable" in kwargs else \
        _positional_form(input, *args, **kwargs)
    dim = _alias(dim, axis, -1, "argsort", "dim", "axis")
    d, descending, stable = _sort_args(input, dim, descending, stable, "argsort")
    return make(_sort_indices(input, d, descending, stable))


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
    refuse_shell(input, "topk_cpu", "HILQ")
    k = _int_arg(k, "topk", "k", 2)
    d = _dim(input, _alias(dim, axis, -1, "topk", "dim", "axis"), "topk", 3)
    largest = check_bool(largest, "topk", "largest")
    sorted_ = check_bool(sorted, "topk", "sorted")
    a = input._data
    n = a.shape[d] if a.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if a.dtype.kind in "bc":
        raise RuntimeError(f"{' topk' if a.dtype.kind == 'c' else 'topk'} does not support "
                           f"{'complex' if a.dtype.kind == 'c' else 'bool'} dtypes on CPU")
    idx = _xp(input).topk_indices(a, k, d, largest, sorted_, EXACT_TIES_LIMIT)
    return TopkResult(*_values(input, idx, d, True, "TopkBackward0", reduced=False))


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
    if a.ndim:   # PyTorch copies a 0-d input before looking at its dtype
        _refuse_dtype(input, "kthvalue_cpu", "bc")
    idx = _xp(input).kthvalue_indices(a, k, d, EXACT_TIES_LIMIT)
    return KthvalueResult(*_values(input, idx, d, keepdim, "KthvalueBackward0"))


# ----- median, nanmedian, mode ---------------------------------------------------------------------

def _median_dim(input, dim, keepdim, op, ignore_nan):
    if dim is _NOT_GIVEN:
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
    d = _dim(input, dim, op)
    keepdim = check_bool(False if keepdim is _NOT_GIVEN else keepdim, op, "keepdim")
    _nonempty_dim(input, d, "median")   # nanmedian's kernel is median's: PyTorch names median
    _refuse_dtype(input, "median_out", "bc")
    idx = _xp(input).median_indices(input._data, d, ignore_nan)
    node = "NanmedianBackward1" if ignore_nan else "MedianBackward1"
    result = NanmedianResult if ignore_nan else MedianResult
    return result(*_values(input, idx, d, keepdim, node))


def _median(input, dim, keepdim, axis, keepdims, op: str, all_p, nan: bool):
    check_tensor(input, op)
    dim = _alias(dim, axis, _NOT_GIVEN, op, "dim", "axis")
    keepdim = _alias(keepdim, keepdims, _NOT_GIVEN, op, "keepdim", "keepdims")
    if dim is _NOT_GIVEN and keepdim is _NOT_GIVEN:   # median() of all elements; median(x, None) is an error
        if input._data.size:
            _refuse_dtype(input, "median_cpu", "bc")
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
    if input._data.ndim and input._data.size:   # PyTorch's kernel is not reached for 0-d or empty inputs
        _refuse_dtype(input, "mode_cpu", "c")
    idx = _xp(input).mode_indices(input._data, d, EXACT_TIES_LIMIT)
    return ModeResult(*_values(input, idx, d, keepdim, "ModeBackward0"))


# ----- quantile, nanquantile -----------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    from .elementwise import where
    check_tensor(input, op)
    if isinstance(q, Tensor):
        q_t = q
    else:
        try:
            qs = scalar_or_tensor(q, op, "q")   # NumPy's scalars as Python's
        except TypeError:
            qs = None
        if not isinstance(qs, (bool, int, float)):
            raise TypeError(f"{op}(): argument 'q' must be Tensor or float, not {type(q).__name__}")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q, q_t = float(q), None
    keepdim = check_bool(keepdim, op, "keepdim")
    if not isinstance(interpolation, str):
        raise TypeError(f"{op}(): argument 'interpolation' must be str, not {type(interpolation).__name__}")
    a = input._data
    xp = _xp(input)
    if a.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q_t is not None and q_t._data.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if dtype_word(a.dtype) not in ("Float", "Double"):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q_t is not None and q_t._data.dtype != a.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if q_t is not None and not holds(lambda q: xp.all((q >= 0) & (q <= 1)), q_t._data):
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
    nans = xp.isnan(rows._data)

    # ranks (in the input's dtype, as PyTorch computes them) of shape R + (Q,)
    qv = q_t.reshape(-1) if q_t is not None else make(xp.backend.full((1,), q, a.dtype))
    if ignore_nan:
        last = xp.sum(~nans, -1, True) - 1
        ranks = qv * make(xp.cast(last, a.dtype))
        ranks = where(make(ranks._data < 0), 0.0, ranks)
    else:
        has_nan = xp.any(nans, -1, True)
        ranks = qv * float(n - 1)
        ranks = where(make(has_nan), float(n - 1), ranks)
    below, above, base = xp.quantile_positions(ranks._data, interpolation)
    result = apply(gather_p, (srt,), {"indices": below, "dim": srt._data.ndim - 1, "keepdim": True})
    if above is not None:   # linear, midpoint
        vb, va = result, apply(gather_p, (srt,), {"indices": above, "dim": srt._data.ndim - 1, "keepdim": True})
        w = ranks - make(base) if interpolation == "linear" else make(base)
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

def _record_nondiff(prim, input: Tensor, value) -> Tensor:
    """The raw ``value`` as an op's output: recorded (with a node that cannot be differentiated) if PyTorch
    records it (when the input requires grad or carries a forward-mode tangent, whose rules then raise)."""
    if (input.requires_grad or input._fw_grad is not None) and value.dtype.kind in "fV":
        return apply(prim, (input,), {"value": value})
    return make(value)


def _unique_dim_args(input, dim, op, word):
    a = input._data
    if isinstance(dim, (bool, list, tuple)) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    _refuse_dtype(input, "unique_dim", "c")
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
    if dim is None:
        _refuse_dtype(input, "unique", "c")
        refuse_shell(input, "unique", F8_CHARS)
        vals, inverse, counts = _xp(input).unique_values(input._data)
        return _pack(_record_nondiff(unique_p, input, vals), inverse, counts, return_inverse, return_counts)
    d = _unique_dim_args(input, dim, "unique_dim", "unique")
    vals, inverse, counts = _xp(input).unique_slices(input._data, d)
    return _pack(_record_nondiff(unique_dim_p, input, vals), inverse, counts, return_inverse, return_counts)


@register(method=True)
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """``input`` with each run of equal consecutive values (or slices along ``dim``) collapsed to one."""
    check_tensor(input, "unique_consecutive")
    return_inverse = check_bool(return_inverse, "unique_consecutive", "return_inverse")
    return_counts = check_bool(return_counts, "unique_consecutive", "return_counts")
    if dim is None:
        _refuse_dtype(input, "unique", "c")
    d = None if dim is None else _unique_dim_args(input, dim, "unique_consecutive", "unique")
    vals, inverse, counts = _xp(input).unique_runs(input._data, d)
    return _pack(_record_nondiff(unique_consecutive_p, input, vals), inverse, counts, return_inverse, return_counts)


# ----- nonzero, argwhere, count_nonzero --------------------------------------------------------------

@register(method=True)
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-d tensor per dim."""
    check_tensor(input, "nonzero")
    as_tuple = check_bool(as_tuple, "nonzero", "as_tuple")
    refuse_shell(input, "nonzero_count_cpu")
    if as_tuple:
        return tuple(make(i) for i in _xp(input).nonzero_tuple(input._data))
    return make(_xp(input).nonzero_indices(input._data))


@register(method=True)
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: the (n, ndim) indices of the nonzero elements."""
    check_tensor(input, "argwhere")
    return nonzero(input)


@register(method=True)
def count_nonzero(input: Tensor, dim=_NOT_GIVEN, *, axis=_NOT_GIVEN) -> Tensor:
    """The number of nonzero elements, over all dims or over ``dim`` (an int or a tuple of ints)."""
    check_tensor(input, "count_nonzero")
    refuse_shell(input, "nonzero_count_cpu")
    dim = _alias(dim, axis, None, "count_nonzero", "dim", "axis")
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    dims = normalize_dims(dim, input._data.ndim, "count_nonzero")
    return make(_xp(input).nonzero_count(input._data, dims))


# ----- bincount, histc -----------------------------------------------------------------------------

@register(method=True)
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in the 1-d ``input`` (summing ``weights`` if given)."""
    check_tensor(input, "bincount")
    refuse_shell(input, "bincount_cpu")
    if weights is not None:
        check_tensor(weights, "bincount", "weights", 2)
    minlength = _int_arg(minlength, "bincount", "minlength")
    a = input._data
    xp = _xp(input)
    _refuse_dtype(input, "bincount_cpu", "bfcV")
    if a.ndim != 1 or (a.size and int(xp.amin(a)) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights._data.ndim != 1 or weights._data.shape[0] != a.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        return make(xp.bin_counts(a, None, minlength))
    return _record_nondiff(bincount_p, weights, xp.bin_counts(a, weights._data, minlength))


def _range_word(v: float) -> str:
    """A bound as PyTorch prints it in histc's range error."""
    return "-nan" if v != v else ("inf" if v == math.inf else ("-inf" if v == -math.inf else f"{v:g}"))


@register(method=True)
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    check_tensor(input, "histc")
    bins = _int_arg(bins, "histc", "bins")
    for name, v in (("min", min), ("max", max)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):   # NumPy's numbers too, not its bool
            raise TypeError(f"histc(): argument '{name}' must be Number, not {type(v).__name__}")
    a = input._data
    xp = _xp(input)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    _refuse_dtype(input, "aminmax_cpu" if lo == hi and a.size else "histogram_cpu", "c")
    _refuse_dtype(input, "histogram_cpu", "biu")
    if lo == hi and a.size:
        lo, hi = float(xp.amin(a)), float(xp.amax(a))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_range_word(lo)}, {_range_word(hi)}] is not finite")
    return make(xp.histc_counts(a, bins, lo, hi))


# ----- searchsorted, bucketize ---------------------------------------------------------------------

def _values_arg(values, op: str) -> None:
    """Refuse values to search for that are neither a tensor nor a number."""
    if isinstance(values, Tensor):
        return
    try:
        v = scalar_or_tensor(values, op, "input")   # NumPy's scalars as Python's
    except TypeError:
        v = None
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{op}(): argument 'input' (position 2) must be Tensor or Number, not "
                        f"{type(values).__name__}")


def _raw_values(values, bounds: Tensor):
    """The raw values to search for: a tensor's data, or a number as a 0-d array on the boundaries' device."""
    return values._data if isinstance(values, Tensor) else _xp(bounds).backend.asarray(values)


def _search(op, bounds: Tensor, values, v, right: bool, sorter, out_int32: bool) -> Tensor:
    b = bounds._data
    if b.dtype.kind == "c" or v.dtype.kind == "c":   # PyTorch's kernel runs on the result type of the two
        word = dtype_word(D.result_type(bounds, values).np)
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{word}'")
    if b.dtype.kind == "b" or v.dtype.kind == "b":
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    return make(_xp(bounds).binary_search(b, v, right, sorter, out_int32))


@register()
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value of ``input`` would be inserted in the innermost dim of ``sorted_sequence``."""
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    _values_arg(input, "searchsorted")
    v = _raw_values(input, sorted_sequence)
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
        if dtype_word(srt.dtype) != "Long":
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{dtype_word(srt.dtype)}")
        if srt.shape != b.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(b.shape)}and got sorter tensor {list(srt.shape)}")
        if not _xp(sorter).in_range(srt, 0, b.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    return _search("searchsorted", sorted_sequence, input, v, right, srt, out_int32)


@register()
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of 1-d ``boundaries`` each value of ``input`` falls in."""
    _values_arg(input, "bucketize")
    check_tensor(boundaries, "bucketize", "boundaries", 2)
    v = _raw_values(input, boundaries)
    out_int32 = check_bool(out_int32, "bucketize", "out_int32")
    right = check_bool(right, "bucketize", "right")
    b = boundaries._data
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return _search("bucketize", boundaries, input, v, right, None, out_int32)



# ----- histogram, histogramdd (PyTorch's Histogram.cpp: linspace edges, then each value's bin by binary search, the
# last bin closed; values outside the edges and NaN skipped; not differentiable) ---------------------------------

_HistogramResult = return_type("histogram", ("hist", "bin_edges"))
_HistogramddResult = return_type("histogramdd", ("hist", "bin_edges"))


def _outer_edges(x: Tensor, n: int, range) -> list:
    """(leftmost, rightmost) per dimension: ``range``, else the data's min and max (0, 1 for no data); a
    single point widened by 0.5 each way."""
    if range is not None:
        range = [float(v) for v in range]
        if len(range) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                               f"elements, but got {len(range)}")
        pairs = [(range[2 * d], range[2 * d + 1]) for d in builtins_range(n)]
    elif x.numel():
        pairs = list(zip(x.amin(0).tolist(), x.amax(0).tolist()))
    else:
        pairs = [(0.0, 1.0)] * n
    out = []
    for d, (lo, hi) in enumerate(pairs):
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_num(lo)}, {_num(hi)}] is not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_num(lo)} max {_num(hi)} "
                               f"for dimension {d}")
        out.append((lo - 0.5, hi + 0.5) if lo == hi else (lo, hi))
    return out


_CNAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
           "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _cname(np_dtype) -> str:
    """The C++ type name PyTorch's histogram messages print for a dtype."""
    return _CNAMES.get(str(np_dtype), str(np_dtype))


def _num(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    return str(int(v)) if v == int(v) else repr(v)


builtins_range = range


def _histogramdd(input: Tensor, bins, range, weight, density: bool):
    """(hist, [edges per dimension]) of the points ``input`` (..., N)."""
    # bfloat16: PyTorch's kernel takes it, but not the min/max of the data (select_outer_bin_edges)
    data_range = range is None and not (bins and isinstance(bins, (list, tuple)) and isinstance(bins[0], Tensor)) \
        and input.numel() > 0
    if input._data.dtype.kind != "f" and not (input.dtype is D_bfloat16 and not data_range):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{dtype_word(input._data.dtype)}'")
    n = input._data.shape[-1]
    x = input.detach().reshape(-1, n)
    if isinstance(bins, int):
        bins = [bins] * n
    bins = list(bins)
    if bins and isinstance(bins[0], Tensor):
        if len(bins) != n:
            raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional "
                               f"histogram but got {len(bins)}")
        for d, e in enumerate(bins):
            if e._data.dtype != input._data.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                                   f"but got input with dtype {_cname(input._data.dtype)} and bins for "
                                   f"dimension {d} with dtype {_cname(e._data.dtype)}")
        edges = [e.detach().reshape(-1) for e in bins]
    else:
        outer = _outer_edges(x, n, range)
        edges = [linspace(lo, hi, int(c) + 1, dtype=input.dtype, device=input.device)
                 for (lo, hi), c in zip(outer, bins)]
        for d, c in enumerate(bins):
            if c <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {c} for dimension {d}")
    counts = [e.numel() - 1 for e in edges]
    if weight is not None:
        if weight._data.dtype != input._data.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({_cname(input._data.dtype)}), "
                               f"and weight({_cname(weight._data.dtype)})")
        w = weight.detach().reshape(-1)
    else:
        w = ones(x.shape[0], dtype=input.dtype, device=input.device)
    flat = zeros(x.shape[0], dtype=D_int64, device=input.device)
    keep = ones(x.shape[0], dtype=D_bool, device=input.device)
    for d, (e, c) in enumerate(zip(edges, counts)):
        xd = x[:, d]
        keep = keep & (xd >= e[0]) & (xd <= e[-1])   # NaN fails both
        pos = (searchsorted(e, xd, right=True) - 1).clamp(0, max(c - 1, 0))   # the last edge: the last bin
        flat = flat * c + pos
    hist = zeros(math.prod(counts), dtype=input.dtype, device=input.device)
    hist = hist.index_add_(0, flat[keep], w[keep]).reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * n
            shape[d] = -1
            hist = hist / e.diff().reshape(shape)
    return hist, edges


@register(method=True)
def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False,
              out=None):
    """(hist, bin_edges): counts (or summed weights) of ``input``'s values in ``bins`` equal bins over ``range``
    (default: the values' min and max), or between the edges of a 1-d tensor ``bins``."""
    check_tensor(input, "histogram")
    if not isinstance(bins, (int, Tensor)) or isinstance(bins, bool):
        raise invalid_arguments("histogram", (input, bins), {})
    if out is not None:
        raise NotImplementedError("ember: histogram(out=...) is not supported yet")
    if isinstance(bins, Tensor):
        bins = [bins]
    hist, edges = _histogramdd(input.reshape(-1, 1), bins, range, None if weight is None else weight.reshape(-1, 1),
                               density)
    return _HistogramResult(hist, edges[0])


@register(module=True)
def histogramdd(input: Tensor, bins=10, *, range=None, weight: Tensor | None = None, density: bool = False):
    """(hist, bin_edges): the N-dimensional histogram of the points ``input`` (..., N); ``bins`` an int, N ints
    or N tensors of edges."""
    check_tensor(input, "histogramdd")
    if isinstance(bins, bool) or not (isinstance(bins, int) or isinstance(bins, (list, tuple)) and all(
            isinstance(b, (int, Tensor)) and not isinstance(b, bool) for b in bins)):
        raise invalid_arguments("histogramdd", (input, bins), {})
    if input._data.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    hist, edges = _histogramdd(input, bins, range, weight, density)
    return _HistogramddResult(hist, tuple(edges))


@register(method=True)
@schema("nonzero_static(Tensor input, *, int size, int fill_value)")
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows: cut, or padded with rows of ``fill_value``."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    nz = nonzero(input)
    n = nz.shape[0]
    if n >= size:
        return nz[:size].clone()
    return cat((nz, nz.new_full((size - n, nz.shape[1]), fill_value)))


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.batching(_bp.along_rule, gather_p, scatter_p)   # (indices from an unbatched tensor)
_batching.batching(_batching.shape_rule("shape"), quantile_out_p)


def _median_last(xp, a, ignore_nan):
    # each row's median() by the kernel of median() itself: its values exactly, and faster than median(dim)'s
    # indices (which model PyTorch's choice among ties, not needed here)
    rows = xp.reshape(a, (-1, a.shape[-1]))
    out = xp.stack([xp.median_all(rows[k], ignore_nan) for k in range(rows.shape[0])], 0) if rows.shape[0] else \
        xp.reshape(rows[:, :0], (0,))
    return xp.reshape(out, tuple(a.shape[:-1]))


# median()/nanmedian() of each row (the last dim) with median()'s gradient (ties share evenly): vmap's form of
# median_all_p on the flattened examples (median(dim) would give one index's gradient)
median_rows_p = defprim("median_rows", _median_last, node="MedianBackward0", vjp=_rows_vjp, jvp=_rows_jvp,
                        saves=(0,), saves_out=True)


_batching.batching(_batching.rows_rule(median_rows_p, ignore_nan=False), median_all_p)
_batching.batching(_batching.rows_rule(median_rows_p, ignore_nan=True), nanmedian_all_p)
_batching.batching("leading", median_rows_p)

# ops along one dim whose wrappers compute their indices from the values: the op on the physical input, the dim
# shifted (median/nanmedian without a dim are median_all_p's, above)
_bp.public_rule(sort, _bp.dim_rule(sort, _both_forms))
_bp.public_rule(argsort, _bp.dim_rule(argsort, _both_forms))
for _fn in (topk, kthvalue, mode):
    _bp.public_rule(_fn, _bp.dim_rule(_fn))
for _fn in (median, nanmedian):
    _bp.public_rule(_fn, _bp.dim_rule(_fn, default_dim=None))
_batching.by_name("fallback", "unique", "unique_consecutive",
                  why="its output's size depends on the values (PyTorch refuses it under vmap; so do the public ops)")
_batching.by_name("fallback", "bincount", why="its output's size depends on the values (PyTorch runs it once per "
                  "example, as ember's public op does)")


def _searchsorted_rule(orig, args, kwargs, level):
    """Unbatched 1-d boundaries: the op on the physical values. Batched boundaries (or sorter): the physical
    boundaries (B, ..., n) searched with the values of each example, as rows when the example's boundaries are
    1-d."""
    bound = _bp.bind(searchsorted, args, kwargs)
    if bound is None or not isinstance(bound.get("sorted_sequence"), Tensor):
        return _bp.own(orig, args, kwargs, level)
    seq, values, sorter = bound["sorted_sequence"], bound.get("input"), bound.get("sorter")
    rest = {k: v for k, v in bound.items() if k not in ("sorted_sequence", "input", "sorter")}
    if not isinstance(values, (Tensor, int, float)) or isinstance(values, bool) or not seq._data.ndim or \
            (sorter is not None and not isinstance(sorter, Tensor)):
        return _bp.own(orig, args, kwargs, level)   # its own error
    size = _bp.batch_size(level)
    if not _bp.is_batched(seq, level) and not _bp.is_batched(sorter, level):
        if seq._data.ndim == 1:
            return _bp.wrap_out(searchsorted(seq, _bp.front(values, level), sorter=sorter, **rest), level)
        values = _bp.front(values, level)   # N-d boundaries: their leading dims match the values' (checked there)
        out = searchsorted(seq.expand(size, *seq._data.shape), values, sorter=None if sorter is None else
                           sorter.expand(size, *sorter._data.shape), **rest)
        return _bp.wrap_out(out, level)
    ps = _bp.front(seq, level)
    psort = None if sorter is None else _bp.front(sorter, level)
    if seq._data.ndim == 1:
        if isinstance(values, Tensor):
            shape = tuple(values._data.shape)
            pv = _batching.rows(_bp.front(values, level), size)
        else:
            shape, pv = (), values
        if not isinstance(pv, Tensor):
            from .creation import full
            pv = full((size, 1), pv, dtype=D.result_type(seq, pv))   # a number compares as PyTorch's promotes it
        out = searchsorted(ps, pv, sorter=psort, **rest)
        return _bp.wrap_out(out.reshape((size,) + shape), level)
    if not isinstance(values, Tensor):
        return _bp.own(orig, args, kwargs, level)   # its own error (N-d boundaries need a tensor of values)
    return _bp.wrap_out(searchsorted(ps, _bp.front(values, level), sorter=psort, **rest), level)


def _bucketize_rule(orig, args, kwargs, level):
    """Unbatched boundaries: the op on the physical values; batched ones: searchsorted of each example's values
    in its boundaries (bucketize's ``right`` is searchsorted's)."""
    bound = _bp.bind(bucketize, args, kwargs)
    if bound is None or not isinstance(bound.get("boundaries"), Tensor) or bound["boundaries"]._data.ndim != 1 or \
            not isinstance(bound.get("input"), (Tensor, int, float)) or isinstance(bound.get("input"), bool):
        return _bp.own(orig, args, kwargs, level)   # its own error
    values, boundaries = bound["input"], bound["boundaries"]
    rest = {k: v for k, v in bound.items() if k not in ("input", "boundaries")}
    if not _bp.is_batched(boundaries, level):
        return _bp.wrap_out(bucketize(_bp.front(values, level), boundaries, **rest), level)
    return _searchsorted_rule(searchsorted, (boundaries, values), rest, level)


_bp.public_rule(searchsorted, _searchsorted_rule)
_bp.public_rule(bucketize, _bucketize_rule)

_DYNAMIC = ("vmap: We do not support batching operators that can output dynamic shape. Attempted to vmap over "
            "aten::{op}. Please file an issue at https://github.com/pytorch/pytorch/issues if you need this feature.")


def _dynamic_rule(fn, aten):
    """PyTorch's refusal for ops whose output's size depends on each example's values (``aten(bound)``: the ATen
    op it names)."""
    def rule(orig, args, kwargs, level):
        bound = _bp.bind(fn, args, kwargs)
        if bound is None:
            return _bp.own(orig, args, kwargs, level)
        x = bound.get(next(iter(_bp.signature(fn).parameters)))
        if _bp.is_batched(x, level):
            raise RuntimeError(_DYNAMIC.format(op=aten(bound)))
        return _bp.own(orig, args, kwargs, level)
    return rule


_bp.public_rule(unique, _dynamic_rule(unique, lambda b: "_unique2" if b.get("dim") is None else "unique_dim"))
_bp.public_rule(unique_consecutive, _dynamic_rule(unique_consecutive, lambda b: "unique_consecutive"))
_bp.public_rule(nonzero, _dynamic_rule(nonzero, lambda b: "nonzero"))
# (argwhere and nonzero_static call nonzero, histogram and histogramdd read the data's range as numbers: each
# example apart, as PyTorch's fallback; their sizes are fixed, or stacked when equal)
for _fn in (argwhere, nonzero_static, histogram, histogramdd):
    _bp.public_rule(_fn, lambda orig, args, kwargs, level, _f=_fn: _bp.per_example(_f, args, kwargs, level))


def _quantile_rule(fn):
    """quantile/nanquantile of the physical input: along the shifted dim, or along dim 1 of the flattened
    examples without one; a vector of q puts its dim first, before the batch dim, which then moves to the front."""
    def rule(orig, args, kwargs, level):
        bound = _bp.bind(fn, args, kwargs)
        if bound is None or not _bp.is_batched(bound.get("input"), level) or _bp.is_batched(bound.get("q"), level):
            return _bp.own(orig, args, kwargs, level)
        x, q = bound["input"], bound["q"]
        dim = bound.get("dim", bound.get("axis"))
        keepdim = bound.get("keepdim", bound.get("keepdims", False))
        if (dim is not None and type(dim) is not int) or not isinstance(keepdim, bool):
            return _bp.own(orig, args, kwargs, level)
        nd = x._data.ndim
        size = _bp.batch_size(level)
        px = _bp.front(x, level)
        rest = {"interpolation": bound.get("interpolation", "linear")}
        if dim is None or nd == 0:
            d = _bp.as_dim(dim, nd) if dim is not None else 0
            if d is None:
                return _bp.own(orig, args, kwargs, level)
            out = fn(_batching.rows(px, size), q, 1, False, **rest)
            kept = (1,) * nd if keepdim else ()
        else:
            d = _bp.as_dim(dim, nd)
            if d is None:
                return _bp.own(orig, args, kwargs, level)
            out = fn(px, q, d + 1, keepdim, **rest)
            kept = None
        vector = isinstance(q, Tensor) and q._data.ndim == 1
        if vector:
            out = out.movedim(1, 0)
        if kept is not None:
            out = out.reshape((size,) + ((q._data.shape[0],) if vector else ()) + kept)
        return _bp.wrap_out(out, level)
    return rule


for _fn in (quantile, nanquantile):
    _bp.public_rule(_fn, _quantile_rule(_fn))
_bp.public_rule(count_nonzero, _bp.reduce_rule(count_nonzero))
