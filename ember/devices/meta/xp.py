"""An array-API namespace whose arrays have a shape and a dtype and no data: the library of device 'meta'.

Every function computes only its result's shape and dtype, so the common kernels (``ember/devices/common``), which
are written against the array API standard, propagate shapes for free. Dtypes are NumPy dtype objects (ember's
dtype vocabulary) and are resolved by NumPy's own rules on zero-size stand-ins: ``add(int32, float32)``,
``sum(bool)``, ``int / int`` give the dtypes the cpu device gives. What needs values (``nonzero``, ``unique_*``,
boolean masks, converting to a Python number or to host data) raises PyTorch's errors for meta tensors.
"""
from __future__ import annotations

import builtins
import math
import operator
import types

import numpy as np

__array_api_version__ = "2023.12"

_NO_DATA = "Cannot copy out of meta tensor; no data!"
_NO_ITEM = "Tensor.item() cannot be called on meta tensors"
_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "complex64", "complex128")
try:   # bfloat16 where the optional ml_dtypes gives NumPy one (a meta tensor holds only its dtype)
    import ml_dtypes as _ml   # noqa: F401  (registers the name "bfloat16" with NumPy)
    _DTYPE_NAMES += ("bfloat16",)
except ImportError:
    pass
for _n in _DTYPE_NAMES:
    globals()[_n] = np.dtype(_n)
e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None


def _no_meta_kernel(op: str) -> NotImplementedError:
    """PyTorch's error for an op whose result's shape depends on values."""
    return NotImplementedError(f"aten::{op}: attempted to run this operator with Meta tensors, but there was no fake "
                               "impl or Meta kernel registered.")


def _nonzero_error() -> NotImplementedError:
    return NotImplementedError("The register_meta function for torch.nonzero() raises unimplemented by default, as a "
                               "correct data-independent implementation does not exist.")


class MetaArray:
    """An array's shape and dtype, without its elements."""

    __slots__ = ("shape", "dtype", "truth")
    device = "meta"

    def __init__(self, shape, dtype, truth: bool | None = None):
        self.shape = tuple(builtins.int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.truth = truth   # what a check of values finds (see __bool__): None for "no answer"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def T(self) -> MetaArray:
        return MetaArray(self.shape[::-1], self.dtype)

    @property
    def mT(self) -> MetaArray:
        return matrix_transpose(self)

    def __array_namespace__(self, api_version=None):
        return _SELF

    def to_device(self, device, stream=None) -> MetaArray:
        return self

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    # ----- no values -----------------------------------------------------------------------------------------
    def __bool__(self) -> bool:
        # A check of values passes on 'meta', as PyTorch's meta kernels skip such checks: ``if xp.any(bad):
        # raise`` finds no bad value (``any`` is False) and ``if not xp.all(ok): raise`` finds all ok (``all`` is
        # True); a NaN path taken only ``if xp.any(nan)`` is not taken. Any other truth value (one a result's shape
        # would depend on, as ``x[mask]`` for a 0-d mask) has no answer and raises, as do numbers out of a meta
        # array and bool()/item() of a meta tensor.
        if self.truth is None:
            raise RuntimeError(_NO_ITEM)
        return self.truth

    def __float__(self):
        raise RuntimeError(_NO_ITEM)

    __int__ = __index__ = __complex__ = __float__

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(_NO_DATA)

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        return self.shape[0]

    __hash__ = None

    # ----- indexing: the standard's (basic indices, or one integer array per axis) ---------------------------
    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        if builtins.any(isinstance(i, MetaArray) for i in index):
            return _advanced(self, index)
        return MetaArray(_basic_shape(self.shape, index), self.dtype)

    def __setitem__(self, index, value):
        self[index]   # the checks of the read; there is nothing to write


def _specified(index: tuple) -> int:
    return builtins.sum(1 for i in index if i is not None and i is not Ellipsis)


def _ellipsis_at(index: tuple):
    # (identity tests: ``in`` and ``index`` would compare meta arrays elementwise)
    return next((k for k, i in enumerate(index) if i is Ellipsis), None)


def _basic_shape(shape: tuple, index: tuple) -> tuple:
    """The shape of ``a[index]`` for ints, slices, None and one Ellipsis (NumPy's meaning)."""
    specified = _specified(index)
    if specified > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {specified} were "
                         "indexed")
    at = _ellipsis_at(index)
    if at is not None:
        index = index[:at] + (slice(None),) * (len(shape) - specified) + index[at + 1:]
    else:
        index = index + (slice(None),) * (len(shape) - specified)
    out, d = [], 0
    for i in index:
        if i is None:
            out.append(1)
            continue
        n = shape[d]
        d += 1
        if isinstance(i, slice):
            out.append(len(range(n)[i]))
        else:
            i = operator.index(i)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {d - 1} with size {n}")
    return tuple(out)


def _advanced(a: MetaArray, index: tuple) -> MetaArray:
    """``a[index]`` with integer arrays among the indices (NumPy's placement of the broadcast dims)."""
    if builtins.any(isinstance(i, MetaArray) and i.dtype == bool for i in index):
        raise _nonzero_error()   # a boolean mask: the result's length is its number of True values
    at = _ellipsis_at(index)
    if at is not None:
        index = index[:at] + (slice(None),) * (a.ndim - _specified(index)) + index[at + 1:]
    index = index + (slice(None),) * (a.ndim - builtins.sum(1 for i in index if i is not None))
    adv = [k for k, i in enumerate(index) if isinstance(i, MetaArray) or isinstance(i, builtins.int)]
    bshape = broadcast_shapes(*[i.shape if isinstance(i, MetaArray) else () for i in (index[k] for k in adv)])
    out, d = [], 0
    placed = False
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    if not contiguous:
        out.extend(bshape)
        placed = True
    for k, i in enumerate(index):
        if i is None:
            out.append(1)
            continue
        n = a.shape[d]
        d += 1
        if k in adv:
            if not placed:
                out.extend(bshape)
                placed = True
        else:
            out.append(len(range(n)[i]))
    return MetaArray(out, a.dtype)


_SELF = None   # this module, set at the end


# ----- dtypes ------------------------------------------------------------------------------------------------
class _Info:
    def dtypes(self, *, device=None, kind=None) -> dict:
        return {n: np.dtype(n) for n in _DTYPE_NAMES}

    def default_dtypes(self, *, device=None) -> dict:
        return {"real floating": float64, "complex floating": complex128, "integral": int64, "indexing": int64}

    def devices(self) -> list:
        return ["meta"]

    def default_device(self) -> str:
        return "meta"

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": False}


def __array_namespace_info__() -> _Info:
    return _Info()


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f",
          "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind) -> bool:
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        return np.dtype(dtype).kind in _KINDS[kind]
    return np.dtype(dtype) == np.dtype(kind)


def _stand_in(x):
    """A zero-size NumPy array of ``x``'s dtype (or ``x`` itself, a Python scalar): NumPy resolves dtypes on it."""
    return np.empty(0, x.dtype) if isinstance(x, MetaArray) else x


def result_type(*xs):
    return np.result_type(*(_stand_in(x) for x in xs))


def can_cast(from_, to) -> bool:
    return np.can_cast(from_.dtype if isinstance(from_, MetaArray) else from_, to)


finfo, iinfo = np.finfo, np.iinfo


# ----- creation ------------------------------------------------------------------------------------------------
def _shape(shape) -> tuple:
    return (shape,) if isinstance(shape, builtins.int) else tuple(shape)


def asarray(obj, *, dtype=None, device=None, copy=None) -> MetaArray:
    """``obj`` as a meta array: a meta array keeps its shape, host data (scalars, lists, NumPy arrays) gives its
    shape and dtype and is dropped."""
    if isinstance(obj, MetaArray):
        return obj if dtype is None and not copy else MetaArray(obj.shape, obj.dtype if dtype is None else dtype)
    host = np.asarray(obj)   # a Python number (int64, float64, bool), a list or a NumPy array: its values dropped
    return MetaArray(host.shape, host.dtype if dtype is None else dtype)


def from_dlpack(x, *, device=None, copy=None) -> MetaArray:
    """The shape and dtype of ``x`` (any array): moving data onto 'meta' keeps nothing else."""
    return MetaArray(x.shape, x.dtype)


def zeros(shape, *, dtype=None, device=None) -> MetaArray:
    return MetaArray(_shape(shape), float64 if dtype is None else dtype)


ones = empty = zeros


def full(shape, fill_value, *, dtype=None, device=None) -> MetaArray:
    return MetaArray(_shape(shape), asarray(fill_value).dtype if dtype is None else dtype)


def zeros_like(x, *, dtype=None, device=None) -> MetaArray:
    return MetaArray(x.shape, x.dtype if dtype is None else dtype)


ones_like = empty_like = zeros_like


def full_like(x, fill_value, *, dtype=None, device=None) -> MetaArray:
    return zeros_like(x, dtype=dtype)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> MetaArray:
    if stop is None:
        start, stop = 0, start
    n = builtins.max(0, math.ceil((stop - start) / step))
    if dtype is None:
        dtype = int64 if builtins.all(isinstance(v, builtins.int) for v in (start, stop, step)) else float64
    return MetaArray((n,), dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> MetaArray:
    return MetaArray((num,), float64 if dtype is None else dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> MetaArray:
    return MetaArray((n_rows, n_rows if n_cols is None else n_cols), float64 if dtype is None else dtype)


def tril(x, /, *, k=0) -> MetaArray:
    return MetaArray(x.shape, x.dtype)


triu = tril


def meshgrid(*arrays, indexing="xy") -> list:
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(shape) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    return [MetaArray(shape, a.dtype) for a in arrays]


def astype(x, dtype, /, *, copy=True, device=None) -> MetaArray:
    return MetaArray(x.shape, dtype)


# ----- elementwise: broadcast the shapes, NumPy's ufunc resolves the dtype -------------------------------------
def broadcast_shapes(*shapes) -> tuple:
    return tuple(np.broadcast_shapes(*shapes))


def _elementwise(ufunc, name: str):
    def fn(*args, **kwargs):
        shape = broadcast_shapes(*(a.shape for a in args if isinstance(a, MetaArray)))
        return MetaArray(shape, ufunc(*(_stand_in(a) for a in args)).dtype)
    fn.__name__ = fn.__qualname__ = name
    return fn


_UFUNCS = {
    "abs": np.absolute, "acos": np.arccos, "acosh": np.arccosh, "add": np.add, "asin": np.arcsin,
    "asinh": np.arcsinh, "atan": np.arctan, "atan2": np.arctan2, "atanh": np.arctanh, "bitwise_and": np.bitwise_and,
    "bitwise_left_shift": np.left_shift, "bitwise_invert": np.invert, "bitwise_or": np.bitwise_or,
    "bitwise_right_shift": np.right_shift, "bitwise_xor": np.bitwise_xor, "ceil": np.ceil, "conj": np.conj,
    "copysign": np.copysign, "cos": np.cos, "cosh": np.cosh, "divide": np.divide, "equal": np.equal, "exp": np.exp,
    "expm1": np.expm1, "floor": np.floor, "floor_divide": np.floor_divide, "greater": np.greater,
    "greater_equal": np.greater_equal, "hypot": np.hypot, "imag": np.imag, "isfinite": np.isfinite,
    "isinf": np.isinf, "isnan": np.isnan, "less": np.less, "less_equal": np.less_equal, "log": np.log,
    "log1p": np.log1p, "log2": np.log2, "log10": np.log10, "logaddexp": np.logaddexp,
    "logical_and": np.logical_and, "logical_not": np.logical_not, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "maximum": np.maximum, "minimum": np.minimum, "multiply": np.multiply,
    "negative": np.negative, "nextafter": np.nextafter, "not_equal": np.not_equal, "positive": np.positive,
    "pow": np.power, "real": np.real, "reciprocal": np.reciprocal, "remainder": np.remainder, "round": np.round,
    "sign": np.sign, "signbit": np.signbit, "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt, "square": np.square,
    "subtract": np.subtract, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
}
for _n, _u in _UFUNCS.items():
    globals()[_n] = _elementwise(_u, _n)


def clip(x, /, min=None, max=None) -> MetaArray:  # noqa: A002
    return MetaArray(broadcast_shapes(*(v.shape for v in (x, min, max) if isinstance(v, MetaArray))), x.dtype)


def where(condition, x1, x2, /) -> MetaArray:
    shape = broadcast_shapes(*(v.shape for v in (condition, x1, x2) if isinstance(v, MetaArray)))
    return MetaArray(shape, result_type(x1, x2))


# The operators, as NumPy's (Python scalars are weak: float32 + 2.5 stays float32).
for _name, _fn in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                   ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow"), ("and", "bitwise_and"),
                   ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "bitwise_left_shift"),
                   ("rshift", "bitwise_right_shift")):
    _f = globals()[_fn]
    setattr(MetaArray, f"__{_name}__", (lambda f: lambda self, o: f(self, o))(_f))
    setattr(MetaArray, f"__r{_name}__", (lambda f: lambda self, o: f(o, self))(_f))
    setattr(MetaArray, f"__i{_name}__", (lambda f: lambda self, o: astype(f(self, o), self.dtype))(_f))
for _name, _fn in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                   ("eq", "equal"), ("ne", "not_equal")):
    setattr(MetaArray, f"__{_name}__", (lambda f: lambda self, o: f(self, o))(globals()[_fn]))
for _name, _fn in (("neg", "negative"), ("pos", "positive"), ("abs", "abs"), ("invert", "bitwise_invert")):
    setattr(MetaArray, f"__{_name}__", (lambda f: lambda self: f(self))(globals()[_fn]))


# ----- reductions ----------------------------------------------------------------------------------------------
def _axes(x, axis) -> tuple:
    if axis is None:
        return tuple(range(x.ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    for a in axes:
        if not -builtins.max(x.ndim, 1) <= a < builtins.max(x.ndim, 1):
            raise np.exceptions.AxisError(a, x.ndim)
    return tuple(a % builtins.max(x.ndim, 1) for a in axes)


def _reduced(x, axis, keepdims: bool, dtype) -> MetaArray:
    axes = _axes(x, axis)
    if keepdims:
        shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    else:
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    return MetaArray(shape, dtype)


def _reduction(np_fn, name: str, fixed=None):
    def fn(x, /, *, axis=None, keepdims=False, dtype=None, correction=0.0):
        # (a one-element stand-in: an empty one would warn "Mean of empty slice")
        dt = fixed if fixed is not None else np_fn(np.zeros((1,), x.dtype), **({"dtype": dtype} if dtype else {})).dtype
        return _reduced(x, axis, keepdims, dt)
    fn.__name__ = fn.__qualname__ = name
    return fn


sum = _reduction(np.sum, "sum")  # noqa: A001
prod = _reduction(np.prod, "prod")
mean = _reduction(np.mean, "mean")
std = _reduction(np.std, "std")
var = _reduction(np.var, "var")
_any, _all = _reduction(None, "any", bool), _reduction(None, "all", bool)


def any(x, /, *, axis=None, keepdims=False) -> MetaArray:  # noqa: A001
    r = _any(x, axis=axis, keepdims=keepdims)
    r.truth = False   # no value found (see MetaArray.__bool__)
    return r


def all(x, /, *, axis=None, keepdims=False) -> MetaArray:  # noqa: A001
    r = _all(x, axis=axis, keepdims=keepdims)
    r.truth = True
    return r


def max(x, /, *, axis=None, keepdims=False) -> MetaArray:  # noqa: A001
    return _reduced(x, axis, keepdims, x.dtype)


min = max  # noqa: A001


def argmax(x, /, *, axis=None, keepdims=False) -> MetaArray:
    if axis is None and keepdims:
        return MetaArray((1,) * x.ndim, int64)
    return _reduced(x, axis, keepdims, int64)


argmin = argmax


def count_nonzero(x, /, *, axis=None, keepdims=False) -> MetaArray:
    return _reduced(x, axis, keepdims, int64)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> MetaArray:
    shape = list(x.shape)
    if include_initial:
        shape[axis if axis is not None else 0] += 1
    return MetaArray(shape, np.cumsum(np.zeros((1,), x.dtype), **({"dtype": dtype} if dtype else {})).dtype)


cumulative_prod = cumulative_sum


# ----- shapes ----------------------------------------------------------------------------------------------------
def reshape(x, /, shape, *, copy=None) -> MetaArray:
    shape = list(_shape(shape))
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        shape[shape.index(-1)] = x.size // known if known else 0
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {tuple(shape)}")
    return MetaArray(shape, x.dtype)


def broadcast_to(x, /, shape) -> MetaArray:
    shape = _shape(shape)
    if broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast an array of shape {x.shape} to {shape}")
    return MetaArray(shape, x.dtype)


def broadcast_arrays(*arrays) -> list:
    shape = broadcast_shapes(*(a.shape for a in arrays))
    return [MetaArray(shape, a.dtype) for a in arrays]


def expand_dims(x, /, *, axis=0) -> MetaArray:
    shape = list(x.shape)
    shape.insert(axis % (x.ndim + 1), 1)
    return MetaArray(shape, x.dtype)


def squeeze(x, /, axis) -> MetaArray:
    axes = _axes(x, axis)
    if builtins.any(x.shape[a] != 1 for a in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return MetaArray([n for d, n in enumerate(x.shape) if d not in axes], x.dtype)


def permute_dims(x, /, axes) -> MetaArray:
    return MetaArray([x.shape[a] for a in axes], x.dtype)


def moveaxis(x, source, destination, /) -> MetaArray:
    src = [s % x.ndim for s in (source if isinstance(source, tuple) else (source,))]
    dst = [d % x.ndim for d in (destination if isinstance(destination, tuple) else (destination,))]
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def swapaxes(x, axis1, axis2, /) -> MetaArray:
    order = list(range(x.ndim))
    order[axis1], order[axis2] = order[axis2], order[axis1]
    return permute_dims(x, order)


def matrix_transpose(x, /) -> MetaArray:
    return swapaxes(x, -1, -2)


def concat(arrays, /, *, axis=0) -> MetaArray:
    dt = result_type(*arrays)
    if axis is None:
        return MetaArray((builtins.sum(a.size for a in arrays),), dt)
    first = arrays[0].shape
    axis %= len(first)
    for a in arrays[1:]:
        if len(a.shape) != len(first) or builtins.any(m != n for d, (m, n) in enumerate(zip(a.shape, first))
                                                      if d != axis):
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")
    shape = list(first)
    shape[axis] = builtins.sum(a.shape[axis] for a in arrays)
    return MetaArray(shape, dt)


def stack(arrays, /, *, axis=0) -> MetaArray:
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def unstack(x, /, *, axis=0) -> tuple:
    one = squeeze(swapaxes(x, 0, axis)[0:1], 0) if x.ndim > 1 else MetaArray((), x.dtype)
    return tuple(one for _ in range(x.shape[axis]))


def flip(x, /, *, axis=None) -> MetaArray:
    return MetaArray(x.shape, x.dtype)


def roll(x, /, shift, *, axis=None) -> MetaArray:
    return MetaArray(x.shape, x.dtype)


def tile(x, repetitions, /) -> MetaArray:
    reps = (1,) * (x.ndim - len(repetitions)) + tuple(repetitions)
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    return MetaArray([n * r for n, r in zip(shape, reps)], x.dtype)


def repeat(x, repeats, /, *, axis=None) -> MetaArray:
    if isinstance(repeats, MetaArray):
        raise _no_meta_kernel("repeat_interleave.Tensor")   # the output length is the sum of the repeats
    if axis is None:
        return MetaArray((x.size * repeats,), x.dtype)
    shape = list(x.shape)
    shape[axis] *= repeats
    return MetaArray(shape, x.dtype)


def take(x, indices, /, *, axis=None) -> MetaArray:
    if axis is None:
        return MetaArray(indices.shape, x.dtype)
    axis %= x.ndim
    return MetaArray(x.shape[:axis] + indices.shape + x.shape[axis + 1:], x.dtype)


def take_along_axis(x, indices, /, *, axis=-1) -> MetaArray:
    return MetaArray(indices.shape, x.dtype)


def sort(x, /, *, axis=-1, descending=False, stable=True) -> MetaArray:
    return MetaArray(x.shape, x.dtype)


def argsort(x, /, *, axis=-1, descending=False, stable=True) -> MetaArray:
    return MetaArray(x.shape, int64)


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> MetaArray:
    return MetaArray(x2.shape if isinstance(x2, MetaArray) else (), int64)


# ----- what needs values ---------------------------------------------------------------------------------------
def nonzero(x, /):
    raise _nonzero_error()


def _unique(*a, **k):
    raise _no_meta_kernel("_unique2")


unique_values = unique_counts = unique_inverse = unique_all = _unique


# ----- products --------------------------------------------------------------------------------------------------
def matmul(x1, x2, /) -> MetaArray:
    a, b = x1.shape, x2.shape
    if not a or not b:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a1, b1 = len(a) == 1, len(b) == 1
    a, b = ((1,) + a if a1 else a), (b + (1,) if b1 else b)
    if a[-1] != b[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {b[-2]} is "
                         f"different from {a[-1]})")
    shape = broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    if b1:
        shape = shape[:-1]
    if a1:
        shape = shape[:-2] + shape[-1:] if not b1 else shape[:-1]
    return MetaArray(shape, result_type(x1, x2))


MetaArray.__matmul__ = lambda self, o: matmul(self, o)
MetaArray.__rmatmul__ = lambda self, o: matmul(o, self)


def tensordot(x1, x2, /, *, axes=2) -> MetaArray:
    if isinstance(axes, builtins.int):
        a1, a2 = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        a1, a2 = [a % x1.ndim for a in axes[0]], [a % x2.ndim for a in axes[1]]
    shape = [n for d, n in enumerate(x1.shape) if d not in a1] + [n for d, n in enumerate(x2.shape) if d not in a2]
    return MetaArray(shape, result_type(x1, x2))


def vecdot(x1, x2, /, *, axis=-1) -> MetaArray:
    shape = broadcast_shapes(x1.shape, x2.shape)
    return MetaArray(shape[:axis % len(shape)] + shape[axis % len(shape) + 1:], result_type(x1, x2))


def _cross(x1, x2, /, *, axis=-1) -> MetaArray:
    return MetaArray(broadcast_shapes(x1.shape, x2.shape), result_type(x1, x2))


def _same(a, /, *args, **kwargs) -> MetaArray:
    return MetaArray(a.shape, a.dtype)


def _batch(a, /, *args, **kwargs) -> MetaArray:
    return MetaArray(a.shape[:-2], a.dtype)


def _slogdet(a, /):
    return _batch(a), _batch(a)


def _solve(a, b, /) -> MetaArray:
    return MetaArray(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], result_type(a, b))


def _qr(a, /, *, mode="reduced"):
    m, n = a.shape[-2:]
    k = m if mode == "complete" else builtins.min(m, n)
    return MetaArray(a.shape[:-2] + (m, k), a.dtype), MetaArray(a.shape[:-2] + (k, n), a.dtype)


def _eigh(a, /):
    return MetaArray(a.shape[:-1], a.dtype), MetaArray(a.shape, a.dtype)


def _svdvals(a, /) -> MetaArray:
    return MetaArray(a.shape[:-2] + (builtins.min(a.shape[-2:]),), a.dtype)


def _svd(a, /, *, full_matrices=True):
    m, n = a.shape[-2:]
    k = builtins.min(m, n)
    b = a.shape[:-2]
    return (MetaArray(b + (m, m if full_matrices else k), a.dtype), _svdvals(a),
            MetaArray(b + (n if full_matrices else k, n), a.dtype))


def _pinv(a, /, *, rtol=None) -> MetaArray:
    return MetaArray(a.shape[:-2] + a.shape[-2:][::-1], a.dtype)


# the linalg extension: shapes of the decompositions and solvers
linalg = types.SimpleNamespace(cross=_cross, matmul=matmul, tensordot=tensordot, vecdot=vecdot,
                               matrix_transpose=matrix_transpose, inv=_same, cholesky=_same, det=_batch,
                               slogdet=_slogdet, solve=_solve, qr=_qr, eigh=_eigh, svd=_svd, svdvals=_svdvals,
                               pinv=_pinv)

_SELF = __import__(__name__, fromlist=["_"])
