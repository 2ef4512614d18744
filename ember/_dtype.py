"""dtypes and PyTorch's type-promotion rules, on top of NumPy dtypes."""
from __future__ import annotations

import builtins as _b

import numpy as np

try:   # optional: NumPy has no bfloat16; ml_dtypes (JAX's) gives NumPy arrays of it
    import ml_dtypes as _ml
except ImportError:   # pragma: no cover - exercised by monkeypatching in tests/test_bfloat16.py
    _ml = None

__all__ = ["dtype", "float16", "float32", "float64", "half", "float", "double", "bfloat16",
           "complex64", "complex128", "cfloat", "cdouble", "complex32", "chalf",
           "int8", "int16", "int32", "int64", "uint8", "short", "int", "long", "bool",
           "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
           "uint16", "uint32", "uint64",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]

# Category order used by promotion: a higher category always wins (bool < integer < floating < complex).
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type. Prints as PyTorch does (``torch.float32``) so scripts print the same."""

    __slots__ = ("_name", "np", "is_floating_point", "is_signed", "itemsize", "_cat")
    __module__ = "ember"   # torch.dtype's module: type(torch.float32) prints <class 'torch.dtype'>; pickles name
    # a dtype ember.float32 (the root exports every dtype)

    def __init__(self, name: str, np_dtype, cat: int):
        self._name = name
        self.np = np_dtype if isinstance(np_dtype, _Missing) else np.dtype(np_dtype)
        self._cat = cat
        self.is_floating_point = cat == _FLOAT
        self.is_signed = cat >= _FLOAT or np.issubdtype(self.np, np.signedinteger)
        self.itemsize = self.np.itemsize

    @property
    def is_complex(self) -> bool:
        return self._cat == _COMPLEX

    def to_real(self) -> "dtype":
        """The real dtype of a complex one (complex64 -> float32); a real dtype itself."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype of a floating one (float64 -> complex128); a complex dtype itself."""
        if self._cat == _COMPLEX:
            return self
        try:
            return _TO_COMPLEX[self]
        except KeyError:
            raise RuntimeError(f"to_complex is only supported for floating point types, got {self}") from None

    def __repr__(self) -> str:
        return "torch." + self._name

    def __reduce__(self):
        return self._name


class _Missing:
    """The NumPy dtype of a reduced-precision float (bfloat16) when ml_dtypes is not installed: the ember dtype
    exists (programs name it), but NumPy turning this into a dtype, as every array creation and cast does,
    raises the RuntimeError below."""

    __slots__ = ("name", "itemsize")

    def __init__(self, name: str, itemsize: int):
        self.name, self.itemsize = name, itemsize

    @property
    def dtype(self):
        raise RuntimeError(f"ember: torch.{self.name} tensors need the ml_dtypes package (NumPy has no "
                           f"{self.name}): pip install ml_dtypes")


def _reduced(name: str, itemsize: int = 2):
    """ml_dtypes' NumPy dtype ``name``, or a _Missing stand-in without ml_dtypes."""
    return np.dtype(getattr(_ml, name)) if _ml is not None else _Missing(name, itemsize)


# PyTorch's names of each dtype in its messages: the scalar-type word ("Float"), the C type ("float").
_WORDS = {"float16": ("Half", "c10::Half"), "float32": ("Float", "float"), "float64": ("Double", "double"),
          "uint8": ("Byte", "unsigned char"), "int8": ("Char", "signed char"), "int16": ("Short", "short int"),
          "int32": ("Int", "int"), "int64": ("Long", "long int"), "bool": ("Bool", "bool"),
          "complex64": ("ComplexFloat", "c10::complex<float>"),
          "complex128": ("ComplexDouble", "c10::complex<double>"),
          "bfloat16": ("BFloat16", "c10::BFloat16")}


def _np_name(np_dtype) -> str:
    return np_dtype.name if isinstance(np_dtype, _Missing) else np.dtype(np_dtype).name


def type_word(np_dtype) -> str:
    """PyTorch's scalar-type word for a dtype in messages: ``Float``, ``Long``, ``Bool``."""
    return _WORDS[_np_name(np_dtype)][0]


def c_type_name(np_dtype) -> str:
    """The C type PyTorch names in some messages: ``float``, ``long int``."""
    return _WORDS[_np_name(np_dtype)][1]


# The names PyTorch's checked scalar conversion gives in "value cannot be converted to type ... without overflow".
_CHECKED_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double", "uint8": "uint8_t",
                  "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t", "bfloat16": "c10::BFloat16"}


# bits, eps, max, smallest normal, decimal precision: NumPy's finfo for NumPy's floats, PyTorch's for bfloat16
# (kept here so that torch.finfo(torch.bfloat16) works without ml_dtypes)
_FINFO = {n: (f.bits, _b.float(f.eps), _b.float(f.max), _b.float(f.tiny), f.precision)
          for n, f in (("float16", np.finfo(np.float16)), ("float32", np.finfo(np.float32)),
                       ("float64", np.finfo(np.float64)))}
_FINFO["bfloat16"] = (16, 2.0 ** -7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126, 2)
_FLOAT_MAX = {np.dtype(t): _FINFO[np.dtype(t).name][2] for t in (np.float16, np.float32, np.float64)}
if _ml is not None:
    _FLOAT_MAX[np.dtype(_ml.bfloat16)] = _FINFO["bfloat16"][2]


def is_reduced_float(np_dtype) -> bool:
    """Whether a NumPy dtype is one of ml_dtypes' floats (bfloat16): NumPy gives them kind 'V', not 'f'."""
    return np_dtype.kind == "V" and np_dtype.name in _FINFO


def checked_scalar(value, np_dtype):
    """PyTorch's checked conversion of a Python number to a tensor's dtype (fill_, full, masked_fill, index_fill,
    linspace, clamp): a RuntimeError, not a silent inf or a wrapped value, when a finite value is beyond a
    floating dtype's range, or nan, inf or a value out of range meets an integral dtype (unsigned types take
    negative integers down to -max: they come back wrapped, as NumPy refuses them). bool takes anything; inf and
    nan stay themselves in a float. Returns the value to fill with."""
    fmax = _FLOAT_MAX.get(np_dtype)
    if fmax is not None and (type(value) is _b.float or type(value) is _b.int and -(1 << 63) <= value < 1 << 64) \
            and -fmax <= value <= fmax:
        return value   # the common case (clamp(0.0, 1.0) of a float tensor), without the general checks below
    if type(value) is _b.int and not -(1 << 63) <= value < 1 << 64:   # PyTorch's Scalar holds 64 bits at most
        raise OverflowError("int too big to convert" if value > 0 else "can't convert negative int to unsigned")
    dt = np.dtype(np_dtype)
    kind = dt.kind
    if isinstance(value, (_b.complex, np.complexfloating)) and kind not in "cb":
        if value.imag != 0:   # c10's overflow check counts a nonzero imaginary part as an overflow
            raise RuntimeError(f"value cannot be converted to type {_CHECKED_NAMES.get(dt.name, dt.name)} without "
                               "overflow")
        value = value.real
    if kind == "b" or isinstance(value, (_b.bool, np.bool_)) or not isinstance(value, (_b.int, _b.float, np.number)):
        return value
    if kind in "fV":
        v = _b.float(value)
        big = _b.abs(v) > _FINFO[dt.name][2] if _b.abs(v) != _b.float("inf") else dt.name in _NO_INF
        if v == v and (big or (dt.name == "float8_e8m0fnu" and v < 2.0 ** -127)):   # e8m0's lowest is 2**-127
            raise RuntimeError(f"value cannot be converted to type {_CHECKED_NAMES[dt.name]} without overflow")
    elif kind in "iu":
        info = np.iinfo(dt)
        v = value if isinstance(value, (_b.int, np.integer)) else _b.float(value)
        if not (-info.max if kind == "u" and not isinstance(v, _b.float) else info.min) <= v <= info.max:   # nan too
            raise RuntimeError(f"value cannot be converted to type {_CHECKED_NAMES[dt.name]} without overflow")
        if v < 0 and kind == "u":
            return _b.int(v) + _b.int(info.max) + 1
    return value


float16 = half = dtype("float16", np.float16, _FLOAT)
float32 = float = dtype("float32", np.float32, _FLOAT)
float64 = double = dtype("float64", np.float64, _FLOAT)
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = short = dtype("int16", np.int16, _INT)
int32 = int = dtype("int32", np.int32, _INT)
int64 = long = dtype("int64", np.int64, _INT)
bool = dtype("bool", np.bool_, _BOOL)
bfloat16 = dtype("bfloat16", _reduced("bfloat16"), _FLOAT)
complex64 = cfloat = dtype("complex64", np.complex64, _COMPLEX)
complex128 = cdouble = dtype("complex128", np.complex128, _COMPLEX)


class _NoArrays(dtype):
    """A dtype ember names but has no arrays of: NumPy has no complex half, so complex32 exists for promotion and
    for code that names it, and anything that would make, cast to or compute in it (which asks for its ``np``)
    raises NotImplementedError rather than silently using complex64."""

    __slots__ = ()

    def __init__(self, name: str, cat: int, itemsize: int):
        self._name, self._cat, self.itemsize = name, cat, itemsize
        self.is_floating_point, self.is_signed = False, True

    @property
    def np(self):
        raise NotImplementedError(f"ember has no {self._name} tensors (NumPy has no complex half-precision type); "
                                  "use torch.complex64")


complex32 = chalf = _NoArrays("complex32", _COMPLEX, 4)


# ----- float8 and the unsigned "shell" dtypes (issue 18) -----------------------------------------------------
# PyTorch's CPU kernels for these are few (creation, casts, copies, views, indexing, eq/ne, mul; see
# ember/autograd/_primitive.py SHELL_OPS); every other op refuses them, and no promotion involves them:
# float8 promotes with nothing, uint16/32/64 only with floating types. float8 needs ml_dtypes, as bfloat16.
_FLOAT8_NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
float8_e4m3fn = dtype("float8_e4m3fn", _reduced("float8_e4m3fn", 1), _FLOAT)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", _reduced("float8_e4m3fnuz", 1), _FLOAT)
float8_e5m2 = dtype("float8_e5m2", _reduced("float8_e5m2", 1), _FLOAT)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", _reduced("float8_e5m2fnuz", 1), _FLOAT)
float8_e8m0fnu = dtype("float8_e8m0fnu", _reduced("float8_e8m0fnu", 1), _FLOAT)
float8_e8m0fnu.is_signed = False   # exponent bits only: no sign, no zero
uint16 = dtype("uint16", np.uint16, _INT)
uint32 = dtype("uint32", np.uint32, _INT)
uint64 = dtype("uint64", np.uint64, _INT)
FLOAT8 = frozenset((float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu))
UINT_SHELL = frozenset((uint16, uint32, uint64))
_SHELLS = FLOAT8 | UINT_SHELL
for _n in _FLOAT8_NAMES:
    _w = "Float8_" + _n[7:]
    _WORDS[_n] = (_w, "c10::" + _w)
    _CHECKED_NAMES[_n] = "c10::" + _w
for _n, _bits in (("uint16", 16), ("uint32", 32), ("uint64", 64)):
    _WORDS[_n] = (f"UInt{_bits}", f"uint{_bits}_t")
    _CHECKED_NAMES[_n] = f"uint{_bits}_t"
# torch.finfo's numbers (bits, eps, max, smallest normal, decimal precision); e8m0's min is its smallest value
_FINFO.update({"float8_e4m3fn": (8, 0.125, 448.0, 2.0 ** -6, 0), "float8_e4m3fnuz": (8, 0.125, 240.0, 2.0 ** -7, 0),
               "float8_e5m2": (8, 0.25, 57344.0, 2.0 ** -14, 0), "float8_e5m2fnuz": (8, 0.125, 57344.0, 2.0 ** -15, 0),
               "float8_e8m0fnu": (8, 1.0, 2.0 ** 127, 2.0 ** -127, 0)})
_NO_INF = frozenset(("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"))   # no infinity
if _ml is not None:
    for _n in _FLOAT8_NAMES[:-1]:   # (e8m0's range has no negative half: the general check below)
        _FLOAT_MAX[np.dtype(getattr(_ml, _n))] = _FINFO[_n][2]


def _shell_promotion(a: dtype, b: dtype) -> dtype | None:
    """PyTorch's refusals to promote float8 (with anything else) and uint16/32/64 (with anything but a real
    floating type); None where the ordinary rules apply."""
    if a in FLOAT8 or b in FLOAT8:
        kind = "Float8 Types"
    elif (a in UINT_SHELL and b._cat != _FLOAT) or (b in UINT_SHELL and a._cat != _FLOAT):
        kind = "uint16, uint32, uint64 types"
    else:
        return None
    raise RuntimeError(f"Promotion for {kind} is not supported, attempted to promote {_WORDS[a._name][0]} and "
                       f"{_WORDS[b._name][0]}")


_ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool, bfloat16, complex64,
        complex128, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32,
        uint64)
_FROM_NP = {d.np: d for d in _ALL if not isinstance(d.np, _Missing)}
_TO_REAL = {complex64: float32, complex128: float64, complex32: float16}
_TO_COMPLEX = {float32: complex64, float64: complex128, float16: complex32}

_default_float = float32


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype for a NumPy dtype; TypeError for ones ember has no counterpart of."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.") from None


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d
    _result_cache.clear()


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promote_types: the higher category wins; within one category the wider type."""
    for i, d in enumerate((a, b)):
        if not isinstance(d, dtype):
            raise TypeError(f"promote_types(): argument 'type{i + 1}' (position {i + 1}) must be torch.dtype, not "
                            f"{type(d).__name__}")
    if a is b:
        return a
    if a in _SHELLS or b in _SHELLS:
        _shell_promotion(a, b)
    if a._cat == _COMPLEX or b._cat == _COMPLEX:
        if complex32 in (a, b):
            return _complex32_promotion(a, b)
        # the wider of the two real widths, complex: float64 with complex64 is complex128
        return _TO_COMPLEX[_FROM_NP[np.promote_types(a.to_real().np, b.to_real().np)]] \
            if a._cat >= _FLOAT and b._cat >= _FLOAT else (a if a._cat == _COMPLEX else b)
    if a._cat != b._cat:
        return a if a._cat > b._cat else b
    if a.itemsize == 2 == b.itemsize and a._cat == _FLOAT:
        return float32   # float16 with bfloat16: neither holds the other, as in PyTorch
    if isinstance(a.np, _Missing) or isinstance(b.np, _Missing):   # bfloat16 without ml_dtypes
        return a if a.itemsize > b.itemsize else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _complex32_promotion(a: dtype, b: dtype) -> dtype:
    other = b if a is complex32 else a
    if other._cat < _FLOAT or other is float16 or other is complex32:
        return complex32
    return promote_types(complex64, other)


builtins_bool, builtins_int, builtins_float = _b.bool, _b.int, _b.float


def _scalar_dtype(x) -> dtype:
    if isinstance(x, builtins_bool):
        return bool
    if isinstance(x, builtins_int):
        return int64
    if isinstance(x, builtins_complex):
        return default_complex()
    return _default_float


builtins_complex = _b.complex


def default_complex() -> dtype:
    """The complex dtype of the default float dtype: a Python complex's dtype (complex64 by default)."""
    return _TO_COMPLEX[_default_float]



_result_cache: dict = {}


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # A lower priority class (0-d tensors, then Python scalars) only changes the result when it
    # brings a higher category, exactly as c10's combine_categories.
    if higher is None:
        return lower
    if lower is None or higher._cat == _COMPLEX:
        return higher
    if lower._cat == _COMPLEX:   # a float keeps its width: float64 + 1j is complex128
        return higher.to_complex() if higher._cat == _FLOAT else lower
    if higher._cat == _FLOAT:
        return higher
    if higher._cat == _BOOL or lower._cat == _FLOAT:
        return promote_types(higher, lower)
    return higher


def result_type_of(dims: tuple) -> dtype:
    """Result dtype for operands described as (dtype, priority) with priority 0 = tensor with dims,
    1 = 0-d tensor, 2 = Python scalar."""
    try:
        return _result_cache[dims]
    except KeyError:
        pass
    res = [None, None, None]
    for d, prio in dims:
        res[prio] = d if res[prio] is None else promote_types(res[prio], d)
    out = _combine(res[0], _combine(res[1], res[2]))
    _result_cache[dims] = out
    return out


def result_type(*operands) -> dtype:
    """torch.result_type for tensors and Python scalars."""
    key = []
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            key.append((d, 0 if x.ndim else 1))
        elif isinstance(x, (builtins_bool, builtins_int, builtins_float, builtins_complex)):
            key.append((_scalar_dtype(x), 2))
        else:
            raise TypeError(f"result_type(): expected Tensors or Numbers, got "
                            f"({', '.join(type(o).__name__ for o in operands)})")
    return result_type_of(tuple(key))


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's casting rule for in-place ops and ``out=``: no float to integral, nothing but bool to bool."""
    for i, d in enumerate((from_, to)):
        if not isinstance(d, dtype):
            raise TypeError(f"can_cast(): argument '{('from_', 'to')[i]}' (position {i + 1}) must be torch.dtype, "
                            f"not {type(d).__name__}")
    return from_._cat <= to._cat or (from_._cat == _INT and to._cat == _INT)


class finfo:
    """Machine limits of a floating dtype, as ``torch.finfo``."""

    def __init__(self, type: dtype | None = None):
        type = _default_float if type is None else type
        if isinstance(type, dtype) and type._cat == _COMPLEX:
            type = type.to_real()   # a complex dtype's limits are its parts'
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        self.bits, self.eps, self.max, tiny, precision = _FINFO[type._name]
        self.min = tiny if type is float8_e8m0fnu else -self.max   # e8m0 has no sign
        self.tiny = self.smallest_normal = tiny
        self.resolution = 10.0 ** -precision
        self.dtype = type._name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype, as ``torch.iinfo``."""

    def __init__(self, type: dtype):
        if not isinstance(type, dtype) or type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        i = np.iinfo(type.np) if type is not bool else None
        self.bits = 8 if i is None else i.bits
        self.max = 1 if i is None else builtins_int(i.max)
        self.min = 0 if i is None else builtins_int(i.min)
        self.dtype = type._name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class layout:
    """A tensor's memory layout (``torch.layout``): every ember tensor is ``strided``; the sparse and
    MKL-DNN layouts exist so that code naming them gets a clear refusal."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name          # the module-level constant, as pickle finds it


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")


def check_layout(value, op: str) -> None:
    """A ``layout=`` argument: None or ``strided``; PyTorch's TypeError for anything that is no layout."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not {type(value).__name__}")
    raise NotImplementedError(f"ember: {op}(layout={value!r}) is not supported: ember's tensors are all "
                              "torch.strided")


class memory_format:
    """A memory layout request (``torch.preserve_format``, ...); ember's tensors are always strided."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return "torch." + self._name


memory_format_type = memory_format     # for functions whose memory_format argument hides the class
preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
_CL_ORDER = {"channels_last": (1, 3, 2, 0), "channels_last_3d": (1, 4, 3, 2, 0)}   # fastest-varying dim first


def _is_contiguous_as(input, fmt) -> bool:
    """``Tensor.is_contiguous(memory_format=fmt)``: for channels-last, PyTorch's test on the strides (dims of
    size 1 are skipped); the default formats mean C order."""
    a = input._data
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return a.flags.c_contiguous
    if not isinstance(fmt, memory_format):
        raise TypeError(f"is_contiguous(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    order = _CL_ORDER[fmt._name]
    if a.ndim != len(order):
        return False
    expected = 1
    for d in order:
        n = a.shape[d]
        if n != 1:
            if a.strides[d] != expected * a.itemsize:
                return False
            expected *= n
    return True
