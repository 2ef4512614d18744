"""The raw arrays of a device made from an array-API library, as ember's core sees them.

ember's core speaks NumPy *dtype objects* as its dtype vocabulary (``t._data.dtype.kind``, ``D._FROM_NP[...]``),
and reads ``shape``/``ndim``/``size``/``astype``/``item`` off raw arrays. A library that follows the Python array
API standard has none of that metadata in NumPy's terms, so each registered device gets a subclass of
``DeviceArray``: one library array (``.a``) plus that metadata. Every computation is the library's: operators
forward to the library, and NumPy refuses to touch a DeviceArray (any NumPy call on it is a kernel that is not
device-neutral, or tensors of two devices mixed in one op, and raises).

A DeviceArray is the unit of storage: an in-place write (``store``: ``backend.copyto``, ``set_index``, ``a += x``,
``a[i] = x``) rebinds ``.a`` rather than writing into the library's memory, so libraries with immutable arrays
work. Views are views all the same, as PyTorch's: the namespace's view kernels link their result to its root array
(``_view``, see views.py), and ``store`` writes a view's new values back into its root and rebuilds the root's
other live views, so a write through ``x[1:]`` reaches ``x`` and every other view of it. A view reports NumPy's
strides and flags (contiguity, read-only after ``expand``); any other array is fresh and C-contiguous.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .views import c_strides, write_back


class NotDeviceNeutral(RuntimeError):
    """NumPy was called on a device array: the calling kernel is not device-neutral yet."""


class _Flags:
    __slots__ = ()
    writeable = True
    c_contiguous = True   # the standard has no strides: every array counts as contiguous
    f_contiguous = False


_FLAGS = _Flags()


class DeviceArray:
    """One array of an array-API library, with NumPy dtype metadata (see the module docstring)."""

    # ``_view``: None, or the View that makes this array a view of another (views.py); ``_views``: None, or (on a
    # root) its live views (a WeakValueDictionary by id)
    __slots__ = ("a", "_view", "_views", "__weakref__")
    # set by each device's subclass (made by ``make_array_type``)
    xp = None
    device_type = ""
    _to_np: dict = {}     # library dtype -> NumPy dtype
    _to_lib: dict = {}    # NumPy dtype -> library dtype
    _kit = None           # the device's Kit (indexing with NumPy's meaning)
    kit_type = None       # a subclass of Kit for a device whose kernels need other helpers ('meta'); None: Kit
    cpu_scalars = False   # whether 0-d host (cpu) arrays may join this device's ops (PyTorch allows them on 'meta')

    @classmethod
    def mixed(cls, found: str, expected: str) -> RuntimeError:
        """PyTorch's error for an operand on device ``found`` in an op on device ``expected``."""
        return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                            f"{found} and {expected}!")

    def mixed_on_host(self) -> RuntimeError:
        """The error for this array in an op that runs on the cpu."""
        return self.mixed("cpu", self.device_type)

    def __init__(self, a):
        self.a = a
        self._view = None
        self._views = None

    def store(self, a, written=None) -> None:
        """An in-place write: ``a`` (a library array of this array's shape and dtype) becomes this array's value,
        and reaches the root and the other views of its memory (``written``: where only part of it was written, a
        bool library array of its shape)."""
        self.a = a
        if self._view is not None or self._views is not None:
            write_back(self, written)

    def written_at(self, index):
        """Which elements ``self[index] = ...`` writes (None for a root: only a view needs to know, see views.py)."""
        if self._view is None:
            return None
        return self._kit.scatter_set(self.xp.zeros(self.a.shape, dtype=self.xp.bool),
                                     lambda lin: self._kit.index(lin, _unwrap_index(self, index)), True)

    # ----- metadata ----------------------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._to_np[self.a.dtype]

    @property
    def shape(self) -> tuple:
        return tuple(self.a.shape)

    @property
    def ndim(self) -> int:
        return self.a.ndim

    @property
    def size(self) -> int:
        return math.prod(self.a.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        """Strides in bytes: a view's are NumPy's for it (views.py); any other array is C-contiguous (the standard
        exposes no strides)."""
        v = self._view
        isz = self.dtype.itemsize
        return tuple(s * isz for s in (c_strides(self.shape) if v is None else v.strides))

    @property
    def flags(self):
        """NumPy's ``writeable``, ``c_contiguous`` and ``f_contiguous``: a view's own, else a fresh array's."""
        v = self._view
        return _FLAGS if v is None else v

    @property
    def T(self):
        return type(self)(self.xp.permute_dims(self.a, tuple(range(self.a.ndim - 1, -1, -1))))

    # ----- conversions -------------------------------------------------------------------------------------
    def astype(self, dtype, copy: bool = True):
        return type(self)(self.xp.astype(self.a, self._kit.lib(dtype), copy=copy))

    def copy(self):
        return type(self)(self.xp.asarray(self.a, copy=True))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return type(self)(self.xp.reshape(self.a, shape))

    def host(self) -> np.ndarray:
        """A NumPy copy on the host, through DLPack where the library offers it, else its ``__array__``."""
        a = self.a
        try:
            return np.from_dlpack(a).copy()
        except (TypeError, AttributeError, RuntimeError, BufferError, ValueError):
            return np.array(a, copy=True)

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.host().item()

    def tolist(self):
        return self.host().tolist()

    def __bool__(self) -> bool:
        return bool(self.a)

    def __float__(self) -> float:
        return float(self.a)

    def __int__(self) -> int:
        return int(self.a)

    def __index__(self) -> int:
        return operator.index(self.a)

    def __len__(self) -> int:
        if self.a.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.a.shape[0]

    def __iter__(self):
        return (type(self)(self.a[i, ...]) for i in range(len(self)))

    def __repr__(self) -> str:
        return f"{self.device_type}:{self.host()!r}"

    # ----- NumPy must not compute on device data ----------------------------------------------------------
    def _numpy_refused(self, what: str, operands) -> Exception:
        if any(isinstance(o, (np.ndarray, np.generic)) for o in operands):
            return self.mixed_on_host()
        return NotDeviceNeutral(f"ember: NumPy's {what} was called on a '{self.device_type}' device array (a "
                                "kernel that is not device-neutral yet)")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise self._numpy_refused(f"{ufunc.__name__}", inputs)

    def __array_function__(self, func, types, args, kwargs):
        flat = [x for a in args for x in (a if isinstance(a, (list, tuple)) else (a,))]
        raise self._numpy_refused(f"{func.__name__}", flat)

    def __array__(self, dtype=None, copy=None):
        raise self._numpy_refused("asarray", ())

    __hash__ = None


def _other(self, o):
    """The library operand for ``o``: a DeviceArray of the same device, or a Python scalar."""
    t = type(o)
    if t is type(self):
        return o.a
    if t in (int, float, bool, complex):
        return o
    if isinstance(o, (np.ndarray, np.generic)):
        if self.cpu_scalars and o.ndim == 0:
            return self.xp.asarray(o.item(), dtype=self._to_lib[o.dtype])
        raise self.mixed("cpu", self.device_type)
    if isinstance(o, DeviceArray):
        raise self.mixed(o.device_type, self.device_type)
    return o


# NumPy's (and PyTorch's) bool arithmetic: + is or, * is and (the standard has no bool arithmetic)
_BOOL_OPS = {operator.add: operator.or_, operator.mul: operator.and_}


def _binary(op):
    bool_op = _BOOL_OPS.get(op, op)

    true_div = op is operator.truediv

    def fwd(self, o):
        a, o = self._kit.promote(self.a, _other(self, o))
        if true_div and not self.xp.isdtype(a.dtype, ("real floating", "complex floating")):   # NumPy: int/int is float64
            a = self.xp.astype(a, self.xp.float64)
            o = self.xp.astype(o, self.xp.float64) if hasattr(o, "dtype") else o
        if a.dtype == self.xp.bool and getattr(o, "dtype", None) == self.xp.bool:
            return type(self)(bool_op(a, o))
        return type(self)(op(a, o))

    def rev(self, o):
        a, o = self._kit.promote(self.a, _other(self, o))
        if true_div and not self.xp.isdtype(a.dtype, ("real floating", "complex floating")):
            a = self.xp.astype(a, self.xp.float64)
            o = self.xp.astype(o, self.xp.float64) if hasattr(o, "dtype") else o
        if not hasattr(o, "dtype"):
            o = self.xp.asarray(o, dtype=a.dtype)
        if a.dtype == self.xp.bool:
            return type(self)(bool_op(o, a))
        return type(self)(op(o, a))
    return fwd, rev


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    _f, _r = _binary(_op)
    setattr(DeviceArray, f"__{_name}__", _f)
    setattr(DeviceArray, f"__r{_name}__", _r)
def _inplace(op):
    def iop(self, o):
        # NumPy's ``a += x``: the result cast back to a's dtype, into a's storage (rebound: see the module docstring)
        r = getattr(self, f"__{op}__")(o)
        self.store(self.xp.astype(r.a, self.a.dtype))
        return self
    return iop


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift"):
    setattr(DeviceArray, f"__i{_name}__", _inplace(_name))
for _name in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(DeviceArray, f"__{_name}__", _binary(getattr(operator, _name))[0])
for _name in ("neg", "pos", "abs", "invert"):
    setattr(DeviceArray, f"__{_name}__", (lambda op: lambda self: type(self)(op(self.a)))(getattr(operator, _name)))


def _unwrap_index(self, index):
    if isinstance(index, tuple):
        return type(index)(_unwrap_index(self, i) for i in index)
    if isinstance(index, DeviceArray):
        return _other(self, index)
    if isinstance(index, (np.ndarray, np.generic)):
        raise self.mixed("cpu", self.device_type)
    return index


def _getitem(self, index):
    # NumPy's meaning (which ember's raw indices have): the kit turns it into the standard's indexing
    return type(self)(self._kit.index(self.a, _unwrap_index(self, index)))


def _setitem(self, index, value):
    # the storage is the DeviceArray: write into a copy and rebind (see the module docstring)
    value = _other(self, value)
    self.store(self._kit.scatter_set(self.a, lambda lin: self._kit.index(lin, _unwrap_index(self, index)), value),
               self.written_at(index))


DeviceArray.__getitem__ = _getitem
DeviceArray.__setitem__ = _setitem


def make_array_type(device_type: str, xp, base: type = DeviceArray) -> type:
    """A subclass of ``base`` (DeviceArray or a subclass of it) for the device ``device_type`` of the array-API
    namespace ``xp``."""
    from .kit import Kit
    info = xp.__array_namespace_info__()
    to_lib = {np.dtype(name): d for name, d in info.dtypes().items()}
    to_np = {d: n for n, d in to_lib.items()}
    return type(f"{device_type.capitalize()}Array", (base,),
                {"__slots__": (), "xp": xp, "device_type": device_type, "_to_np": to_np, "_to_lib": to_lib,
                 "_kit": (base.kit_type or Kit)(xp, device_type, to_lib, to_np)})
