"""A stand-in for CuPy, so that the 'cuda' code path runs on a machine without a GPU.

THIS IS NOT A GPU TEST. It is NumPy underneath; it checks ember's plumbing (device strings, moves, errors, reprs,
torch.cuda's API, modules, optimizers, checkpoints), not CuPy's kernels. tests/test_cuda.py is the real thing.

It implements the CuPy calls ember makes, with CuPy's manners where they catch bugs:
- its arrays are their own type (``ndarray``, holding a NumPy array), and NumPy refuses them: implicit conversion
  raises CuPy's TypeError (use ``.get()`` or ``asnumpy``), and mixing one with a NumPy array raises;
- only ``asarray``/``array`` take host data (a host-to-device copy, counted in ``COPIES``);
- the namespace spells functions as NumPy 1 and CuPy 13 do: the array-API-only names (``concat``,
  ``permute_dims``, ``astype``, ``__array_namespace_info__``, ...) are absent, creation functions refuse
  ``device=``, ``sort`` has no ``descending=`` (ember/devices/cuda/xp.py adapts them);
- ``cuda``: ``runtime.getDeviceCount``/``getDeviceProperties``/``memGetInfo``, ``Device``, ``Stream``, ``Event``,
  ``get_elapsed_time``, ``set_allocator``; ``get_default_memory_pool`` counts the bytes of live arrays.
Install it with ``install()`` (it becomes ``sys.modules['cupy']``) and remove it with ``uninstall()``.
"""
from __future__ import annotations

import sys
import time
import types
import weakref

import numpy as np

__name__ = "cupy"   # noqa: A001  (what ember reads as the library's name)

# NumPy 2's array-API names that CuPy 13 lacks: absent here, so ember's adapter supplies them
_HIDDEN = {"concat", "permute_dims", "pow", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh",
           "bitwise_left_shift", "bitwise_right_shift", "bitwise_invert", "astype", "isdtype",
           "__array_namespace_info__", "cumulative_sum", "cumulative_prod", "matrix_transpose", "unique_values",
           "unique_counts", "unique_inverse", "unique_all", "vecdot", "bool"}
_CREATION = {"zeros", "ones", "empty", "full", "eye", "arange", "linspace", "zeros_like", "ones_like", "empty_like",
             "full_like"}
COPIES = {"h2d": 0, "d2h": 0}
DEVICE_COUNT = 1
_live: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()   # id -> live array
_allocator = [None]


class ndarray:
    """A device array (a NumPy array inside)."""

    __slots__ = ("_a", "__weakref__")
    __array_ufunc__ = None   # NumPy's operators and ufuncs refuse it (np.ndarray + ndarray raises TypeError)

    def __init__(self, a: np.ndarray):
        self._a = a
        if a.base is None:   # it owns memory: an allocation
            _live[id(self)] = self
            if _allocator[0] is not None:
                _allocator[0](a.nbytes)

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct "
                        "a NumPy array explicitly.")

    def __array_function__(self, func, types_, args, kwargs):
        return NotImplemented

    def __dlpack_device__(self):
        return (2, 0)   # kDLCUDA

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("cupy_standin: no DLPack (its arrays stand for GPU memory)")

    def get(self) -> np.ndarray:
        COPIES["d2h"] += 1
        return self._a.copy()

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(np.swapaxes(self._a, -1, -2)))
    real = property(lambda self: _wrap(self._a.real))
    imag = property(lambda self: _wrap(self._a.imag))
    device = property(lambda self: cuda.Device(0))

    def __getattr__(self, name):
        if name.startswith("__"):   # (no __array_namespace__: as CuPy 13's arrays)
            raise AttributeError(name)
        attr = getattr(self._a, name)
        return _wrapped(attr) if callable(attr) else attr

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __bool__(self):
        return bool(self._a)

    def __index__(self):
        return self._a.__index__()

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(r) for r in self._a)

    def __repr__(self):
        return f"standin_cupy.{self._a!r}"

    def __getitem__(self, index):
        return _wrap(self._a[_unwrap(index)])

    def __setitem__(self, index, value):
        self._a[_unwrap(index)] = _unwrap(value)

    __hash__ = None


def _unwrap(v):
    t = type(v)
    if t is ndarray:
        return v._a
    if t is np.ndarray:
        raise TypeError(f"Unsupported type {t}")
    if t in (tuple, list):
        return t(_unwrap(i) for i in v)
    return v


def _wrap(r):
    if type(r) is np.ndarray:
        return ndarray(r)
    if isinstance(r, np.generic):   # CuPy's reductions give 0-d arrays, never NumPy scalars
        return ndarray(np.asarray(r))
    if isinstance(r, tuple):   # NumPy's named results (QRResult, SVDResult, ...): CuPy's are plain tuples
        return tuple(_wrap(i) for i in r)
    if type(r) is list:
        return [_wrap(i) for i in r]
    return r


def _wrapped(fn):
    def f(*args, **kwargs):
        return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    f.__name__ = getattr(fn, "__name__", "f")
    return f


def _binary(name):
    def op(self, other):
        r = getattr(self._a, name)(_unwrap(other))
        return NotImplemented if r is NotImplemented else _wrap(r)
    return op


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
           "rshift"):
    setattr(ndarray, f"__{_n}__", _binary(f"__{_n}__"))
    setattr(ndarray, f"__r{_n}__", _binary(f"__r{_n}__"))
    setattr(ndarray, f"__i{_n}__", _binary(f"__i{_n}__"))
for _n in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(ndarray, f"__{_n}__", _binary(f"__{_n}__"))
for _n in ("neg", "pos", "abs", "invert"):
    setattr(ndarray, f"__{_n}__", (lambda n: lambda self: _wrap(getattr(self._a, n)()))(f"__{_n}__"))


# ----- the namespace --------------------------------------------------------------------------------------------

def asarray(a, dtype=None, order=None, *, blocking=False):
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == dtype else _wrap(a._a.astype(dtype))
    if isinstance(a, np.ndarray):
        COPIES["h2d"] += 1
        return ndarray(np.array(a, dtype=dtype, order=order or "K", copy=True))
    return ndarray(np.array(_unwrap(a), dtype=dtype, order=order or "K", copy=True))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if type(obj) is ndarray:
        return ndarray(np.array(obj._a, dtype=dtype, copy=True, order=order, ndmin=ndmin))
    if isinstance(obj, np.ndarray):
        COPIES["h2d"] += 1
        return ndarray(np.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin))
    return ndarray(np.array(_unwrap(obj), dtype=dtype, copy=True, order=order, ndmin=ndmin))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if type(a) is ndarray:
        return a.get()
    return np.asarray(a)


def from_dlpack(x, *args, **kwargs):
    if type(x) is ndarray:
        return x
    raise BufferError("cupy_standin: from_dlpack of host memory is refused, as CuPy refuses CPU tensors")


def _no_device(fn):
    def f(*args, **kwargs):
        if "device" in kwargs:
            raise TypeError(f"{fn.__name__}() got an unexpected keyword argument 'device'")
        return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    f.__name__ = fn.__name__
    return f


def sort(a, axis=-1, kind=None):
    return _wrap(np.sort(_unwrap(a), axis=axis, kind="stable"))


def argsort(a, axis=-1, kind=None):
    return _wrap(np.argsort(_unwrap(a), axis=axis, kind="stable"))


def clip(a, a_min=None, a_max=None, out=None):
    return _wrap(np.clip(_unwrap(a), _unwrap(a_min), _unwrap(a_max)))


# CuPy's linalg: NumPy 1's functions (no svdvals, cross, matrix_norm, vector_norm, ... of the standard)
linalg = types.SimpleNamespace(**{n: _wrapped(getattr(np.linalg, n)) for n in (
    "cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_power", "matrix_rank", "norm", "pinv", "qr",
    "slogdet", "solve", "svd", "tensorinv", "tensorsolve")})
fft = types.SimpleNamespace(**{n: _wrapped(getattr(np.fft, n)) for n in (
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft",
    "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift")})
random = types.SimpleNamespace(seed=lambda seed=None: np.random.seed(seed))


class _Pool:
    def used_bytes(self) -> int:
        return sum(a._a.nbytes for a in list(_live.values()))

    def total_bytes(self) -> int:
        return self.used_bytes()

    def free_all_blocks(self) -> None:
        pass

    def malloc(self, size: int):
        return types.SimpleNamespace(ptr=0, size=size)


_POOL = _Pool()


def get_default_memory_pool() -> _Pool:
    return _POOL


class _CUDARuntimeError(RuntimeError):
    pass


def _properties(i: int) -> dict:
    if not 0 <= i < DEVICE_COUNT:
        raise _CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"Stand-in GPU (NumPy)", "totalGlobalMem": 80 * 2 ** 30, "major": 9, "minor": 0,
            "multiProcessorCount": 132}


class _Device:
    _current = [0]

    def __init__(self, device=None):
        self.id = self._current[0] if device is None else int(device)

    def use(self):
        _properties(self.id)
        self._current[0] = self.id

    def synchronize(self):
        pass

    def __enter__(self):
        self._prev = self._current[0]
        self.use()
        return self

    def __exit__(self, *exc):
        self._current[0] = self._prev


class _Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = id(self)

    def synchronize(self):
        pass

    def query(self) -> bool:
        return True

    def use(self):
        _stream[0] = self
        return self

    def __enter__(self):
        self._prev = _stream[0]
        _stream[0] = self
        return self

    def __exit__(self, *exc):
        _stream[0] = self._prev


_stream = [_Stream(null=True)]


class _Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing = disable_timing
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self) -> bool:
        return True


def _elapsed(start: _Event, end: _Event) -> float:
    if start.disable_timing or end.disable_timing:
        raise _CUDARuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    return (end.t - start.t) * 1000.0


def _set_allocator(fn=None):
    # the stand-in tells the allocator of each new array's bytes (CuPy calls it for each allocation)
    _allocator[0] = None if fn is None else (lambda n: fn(n))


cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(getDeviceCount=lambda: DEVICE_COUNT, getDeviceProperties=_properties,
                                  memGetInfo=lambda: (70 * 2 ** 30, 80 * 2 ** 30), CUDARuntimeError=_CUDARuntimeError),
    Device=_Device, Stream=_Stream, Event=_Event, get_elapsed_time=_elapsed, set_allocator=_set_allocator,
    get_current_stream=lambda: _stream[0])

_OWN = {"ndarray", "asarray", "array", "asnumpy", "from_dlpack", "sort", "argsort", "clip", "linalg", "fft", "random",
        "get_default_memory_pool", "cuda", "COPIES"}


def __getattr__(name: str):
    if name in _HIDDEN or name.startswith("__"):
        raise AttributeError(name)
    attr = getattr(np, name)
    if isinstance(attr, (type, np.dtype, float, int)) or not callable(attr):
        return attr   # dtypes, scalar types, constants
    return _no_device(attr) if name in _CREATION else _wrapped(attr)


def __dir__():
    return sorted(_OWN | {n for n in dir(np) if not n.startswith("_") and n not in _HIDDEN
                          and n not in ("linalg", "random", "ndarray", "fft", "ma", "char", "rec", "testing", "lib",
                                        "polynomial", "ctypeslib", "emath", "strings", "typing", "exceptions",
                                        "dtypes", "f2py", "matlib")})


def install():
    """Make this module ``cupy`` for ember (``sys.modules``), with a fresh 'cuda' device."""
    import ember.devices.cuda  # noqa: F401
    from ember import devices
    sys.modules["cupy"] = sys.modules[__spec__.name]
    devices.uninstall("cuda")
    devices.cuda.reset()


def uninstall():
    """Take it out again: 'cuda' is what it was (a CPU-only PyTorch's, on this machine)."""
    import ember.devices.cuda  # noqa: F401
    from ember import devices
    if sys.modules.get("cupy") is sys.modules[__spec__.name]:
        del sys.modules["cupy"]
    _allocator[0] = None
    devices.uninstall("cuda")
    devices.cuda.reset()
