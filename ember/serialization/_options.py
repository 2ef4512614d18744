"""torch.serialization's settings and small helpers: load endianness, CRC32 and mmap options, location tags,
StorageType, SourceChangeWarning, mkdtemp, check_module_version_greater_or_equal."""
from __future__ import annotations

import mmap as _mmap
import warnings
from contextlib import contextmanager
from enum import Enum
from typing import Any

__all__ = ["LoadEndianness", "get_default_load_endianness", "set_default_load_endianness", "get_crc32_options",
           "set_crc32_options", "get_default_mmap_options", "set_default_mmap_options", "SourceChangeWarning",
           "mkdtemp", "check_module_version_greater_or_equal", "location_tag", "default_restore_location",
           "validate_cuda_device", "StorageType"]

_CUDA_MESSAGE = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
                 "If you are running on a CPU-only machine, please use torch.load with "
                 "map_location=torch.device('cpu') to map your storages to the CPU.")


# ember dtype name -> PyTorch's typed-storage class (the storage type in a persistent id).
_STORAGE_NAME = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
                 "uint8": "ByteStorage", "bool": "BoolStorage", "bfloat16": "BFloat16Storage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
# Storage classes PyTorch has for dtypes ember lacks: named in the error instead of "unknown global".
_FOREIGN_STORAGES = {"QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                     "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}


class LoadEndianness(Enum):
    NATIVE = 1
    LITTLE = 2
    BIG = 3


# torch.utils.serialization.config's load/save settings that ember honours
_config: dict[str, Any] = {"endianness": None, "mmap_flags": _mmap.MAP_PRIVATE, "compute_crc32": True}


def get_default_load_endianness() -> LoadEndianness | None:
    """The byte order ``load`` assumes for a checkpoint without a ``byteorder`` record (None: native)."""
    return _config["endianness"]


def set_default_load_endianness(endianness: LoadEndianness | None) -> None:
    """Set the byte order ``load`` assumes for a checkpoint without a ``byteorder`` record."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _config["endianness"] = endianness


def get_crc32_options() -> bool:
    """Whether ``save`` computes each record's CRC32 (the flag ``set_crc32_options`` set)."""
    return _config["compute_crc32"]


def set_crc32_options(compute_crc32: bool) -> None:
    """Record the flag. ember's zip writer (Python's zipfile) always writes a correct CRC32, which every reader
    accepts, so ``False`` changes nothing in the file."""
    _config["compute_crc32"] = compute_crc32


def get_default_mmap_options() -> int | None:
    """The mmap flags ``load(mmap=True)`` maps files with: ``mmap.MAP_PRIVATE`` (copy-on-write) by default."""
    return _config["mmap_flags"]


class set_default_mmap_options:
    """Function or context manager: ``load(mmap=True)`` maps with ``mmap.MAP_PRIVATE`` (writes to a tensor stay in
    memory) or ``mmap.MAP_SHARED`` (writes go to the file)."""

    def __init__(self, flags: int) -> None:
        if flags != _mmap.MAP_PRIVATE and flags != _mmap.MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, "
                             f"expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _config["mmap_flags"]
        _config["mmap_flags"] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _config["mmap_flags"] = self.prev


class SourceChangeWarning(Warning):
    pass


@contextmanager
def mkdtemp():
    """A temporary directory, removed on exit."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed: bool = True) -> bool:
    """Whether ``module.__version__`` is at least ``req_version_tuple`` (PyTorch's helper, same messages)."""
    try:
        version_strs = module.__version__.split(".")
        module_version = tuple(type(req_field)(version_strs[idx]) for idx, req_field in enumerate(req_version_tuple))
        requirement_is_met = module_version >= req_version_tuple
    except Exception as e:
        message = (f"'{module.__name__}' module version string is malformed '{module.__version__}' and cannot be "
                   f"compared with tuple {str(req_version_tuple)}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        warnings.warn(message + ", but continuing assuming that requirement is met", stacklevel=2)
        requirement_is_met = True
    return requirement_is_met


def _typename(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__


def location_tag(storage) -> str:
    """The location tag a storage (or tensor) is saved with: ``'cpu'``, ember's only storage location."""
    dev = getattr(storage, "device", None)     # a tensor, or a storage load hands to map_location
    if dev is not None and hasattr(dev, "type"):
        return str(dev)
    raise RuntimeError("don't know how to determine data location of " + _typename(storage))


def validate_cuda_device(location) -> int:
    """PyTorch's check of a CUDA location: ember has no CUDA, so it raises PyTorch's CPU-only error."""
    raise RuntimeError(_CUDA_MESSAGE)


def default_restore_location(storage, location: str):
    """The storage itself for a ``'cpu'`` location; PyTorch's errors for CUDA and unknown locations."""
    location = str(location)
    if location == "cpu":
        return storage
    if location.startswith("cuda"):
        validate_cuda_device(location)
    raise RuntimeError("don't know how to restore data location of " + _typename(storage) + " (tagged with "
                       + location + ")")


class StorageType:
    """A legacy storage class named in a checkpoint (``torch.FloatStorage``), with its dtype."""


    def __init__(self, name: str) -> None:
        from .. import _dtype as D
        by_storage = {v: k for k, v in _STORAGE_NAME.items()}
        if name in by_storage:
            self._dtype = getattr(D, by_storage[name])
        elif name in _FOREIGN_STORAGES:
            raise KeyError(f"ember has no dtype torch.{_FOREIGN_STORAGES[name]} for {name}")
        else:
            raise KeyError(f"pickle storage type \"{name}\" is not recognized")

    @property
    def dtype(self):
        return self._dtype

    def __str__(self) -> str:
        return f"StorageType(dtype={self.dtype})"
