"""Checkpoints in PyTorch's own file format: ``ember.save`` and ``ember.load``.

The format (what ``torch.save`` has written since 1.6) is a zip archive of uncompressed records under
one folder ``<archive>/``: ``data.pkl`` (a protocol-2 pickle of the object, in which every tensor is a
call to ``torch._utils._rebuild_tensor_v2`` on a *storage* given by a persistent id
``('storage', torch.FloatStorage, key, 'cpu', numel)``), the raw bytes of each storage in
``data/<key>`` (64-byte aligned), and ``version``, ``byteorder``, ``.format_version``,
``.storage_alignment``, ``.data/serialization_id``. Tensors viewing one storage are saved with one
record and load back sharing memory, as in PyTorch.

ember has no Storage objects: a tensor's storage is the NumPy memory block its array views (the
array at the end of its ``.base`` chain), so views made by ember's view ops share one storage.

Saving uses Python's own pickler (``_Pickler``) with PyTorch's names: ember's classes and functions are
written under PyTorch's modules (``ember.nn.modules.linear.Linear`` as ``torch.nn.modules.linear
Linear``), so torch builds its own objects from ember's files; loading maps ``torch.<path>`` back to
``ember.<path>``.

``load(weights_only=True)`` (the default) never runs code from the file: ``data.pkl`` is read by
``_unpickler.WeightsUnpickler``, which builds only tensors, Parameters, containers and plain values
(PyTorch's allow-list) and the globals given to ``add_safe_globals``, and every size and offset is
checked against the bytes really present before anything is allocated. A failure raises before
``load`` returns, so nothing half-loaded escapes. ``weights_only=False`` is Python's unpickler, as in
PyTorch: the caller's explicit trust in the file, since it runs what the file names.

Limits (checked from the zip directory, before a record is read): records are stored or deflated (as
PyTorch's reader, anything else is refused); the archive's ``version`` record must be a version PyTorch
reads (1 to 10); a deflated record may not declare more than deflate's own 1032x bound; and a deflated
``data.pkl`` may inflate to at most ``MAX_PICKLE_BYTES`` (256 MiB; a state dict's pickle is a few MB at
most), so a small file cannot make ``load`` allocate gigabytes before it fails. Raise the module
attribute ``ember.serialization.MAX_PICKLE_BYTES`` to load a larger one.
"""
from __future__ import annotations

import os
import pickle
import struct
import sys
import types
import warnings
from collections import OrderedDict
from typing import Any, BinaryIO, Callable, Union

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor, make
from ._options import (_CUDA_MESSAGE, _FOREIGN_STORAGES, _STORAGE_NAME, LoadEndianness,  # noqa: F401
                       SourceChangeWarning, StorageType, _config, check_module_version_greater_or_equal,
                       default_restore_location, get_crc32_options, get_default_load_endianness,
                       get_default_mmap_options, location_tag, mkdtemp, set_crc32_options,
                       set_default_load_endianness, set_default_mmap_options, validate_cuda_device)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "skip_data", "LoadEndianness", "get_default_load_endianness",
           "set_default_load_endianness", "get_crc32_options", "set_crc32_options", "get_default_mmap_options",
           "set_default_mmap_options", "SourceChangeWarning", "StorageType", "mkdtemp",
           "check_module_version_greater_or_equal", "location_tag", "default_restore_location",
           "validate_cuda_device"]

# The most bytes a compressed data.pkl may inflate to (see the module docstring).
MAX_PICKLE_BYTES = 256 << 20
# The versions of PyTorch's zip format its reader accepts (caffe2 inline_container's kMin/kMax).
_MIN_VERSION, _MAX_VERSION = 1, 10
# Deflate cannot inflate more than about 1032 bytes per compressed byte: a record declaring more is forged.
_DEFLATE_MAX_RATIO = 1032


class PicklingError(pickle.PicklingError, TypeError):
    """What ``save`` raises for an object it cannot write: a ``pickle.PicklingError`` as in PyTorch (code
    catches that), and a ``TypeError`` as ember's earlier releases raised."""

# Classes and functions the user marked safe for ``load`` (PyTorch's torch.serialization allow-list):
# each item is the object itself or ``(object, "its.full.name")``.
_marked_safe_globals: set = set()


def add_safe_globals(safe_globals: list) -> None:
    """Mark classes/functions as safe for ``load``: a checkpoint may then name them (by
    ``{__module__}.{__qualname__}``, or the name given as ``(obj, "full.name")``), call them, create
    instances and set their state. Only these exact objects; modules such as ``os`` stay blocked."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals.union(set(safe_globals))


def get_safe_globals() -> list:
    """The user's allow-list, as ``add_safe_globals`` received it."""
    return list(_marked_safe_globals)


def clear_safe_globals() -> None:
    """Empty the user's allow-list."""
    global _marked_safe_globals
    _marked_safe_globals = set()


def _remove_safe_globals(items: list) -> None:
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals - set(items)


class safe_globals:
    """Context manager: ``add_safe_globals(items)`` inside the block, removed again on exit."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb) -> None:
        _remove_safe_globals(self.safe_globals)


_skip_data_state = {"on": False}


class skip_data:
    """Context manager: ``save`` writes every storage's bytes as zeros (the records keep their sizes, to be
    filled in later) and ``load`` leaves the loaded storages zero instead of reading them (PyTorch's
    prototype of the same name). ``materialize_fake_tensors`` is accepted; ember has no fake tensors."""

    def __init__(self, materialize_fake_tensors: bool = False) -> None:
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self) -> None:
        self._old = _skip_data_state["on"]
        _skip_data_state["on"] = True

    def __exit__(self, type, value, tb) -> None:
        _skip_data_state["on"] = self._old


def _user_allowed_globals() -> dict[str, Any]:
    """Full name -> object for the user's allow-list (looked up at each load, so later additions count)."""
    out: dict[str, Any] = {}
    for f in _marked_safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got "
                                 f"tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(f[1])}")
            f, name = f
            out[name] = f
        else:
            out[f"{f.__module__}.{f.__qualname__}"] = f
            torch_module = _torch_module_of(f, f.__qualname__)
            if torch_module is not None:       # ember's class or function, named in files by PyTorch's module
                out[f"{torch_module}.{f.__qualname__}"] = f
                for c_module, (home, prefix) in _C_FUNCTIONS.items():   # and by PyTorch's C builtin of it
                    if torch_module == _ember_to_torch(home):
                        out[f"{c_module}.{prefix}{f.__qualname__}"] = f
    return out

FileLike = Union[str, os.PathLike, BinaryIO]

_FOREIGN_DTYPES = ("complex32", "chalf", "uint16",
                   "uint32", "uint64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                   "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
                   "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
                   *(f"int{i}" for i in range(1, 8)), *(f"uint{i}" for i in range(1, 8)))


# ======================================================================================================
# save
# ======================================================================================================
class _StorageTable:
    """The storages of the tensors being saved, keyed "0", "1", ... in order of first use."""

    def __init__(self):
        self.by_root: dict[int, tuple[str, Any, D.dtype]] = {}   # id(root array) -> (key, root, dtype)
        self.records: list[tuple[str, np.ndarray]] = []          # (key, flat uint8 bytes)

    def locate(self, a: np.ndarray) -> tuple[str, D.dtype, int, int, tuple, tuple]:
        """(key, dtype, storage numel, storage offset, size, stride) of an array, in elements."""
        dt = D._FROM_NP[a.dtype]
        isz = a.itemsize
        root = _root_of(a)
        layout = _layout_in(a, root)
        if layout is None:
            # Not expressible as (offset, strides) into its memory block (negative strides, an odd block):
            # saved as a copy of its own, like a tensor that shares nothing.
            root = np.ascontiguousarray(a)
            layout = _layout_in(root, root)
        offset, stride = layout
        entry = self.by_root.get(id(root))
        if entry is None:
            key = str(len(self.records))
            entry = self.by_root[id(root)] = (key, root, dt)
            self.records.append((key, _flat_bytes(root)))
        elif entry[2] is not dt:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different "
                               "types")
        return entry[0], dt, root.nbytes // isz, offset, tuple(a.shape), stride


def _root_of(a: np.ndarray) -> np.ndarray:
    """The array at the end of ``a``'s chain of bases: the memory block ``a`` views (its storage)."""
    root, obj = a, a.base
    while obj is not None:
        if isinstance(obj, np.ndarray):
            root = obj
        obj = getattr(obj, "base", None)
    return root


def _layout_in(a: np.ndarray, root: np.ndarray) -> tuple[int, tuple] | None:
    """``a``'s (offset, strides) in elements within ``root``'s memory, or None when it has none."""
    isz = a.itemsize
    if a.size == 0:                 # an empty tensor gets an empty storage of its own
        return (0, _contiguous_strides(a.shape)) if a is root else None
    if root.nbytes % isz or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    lo = root.__array_interface__["data"][0]
    ptr = a.__array_interface__["data"][0]
    if (ptr - lo) % isz or ptr < lo:
        return None
    strides = []
    end = ptr + isz
    for n, s in zip(a.shape, a.strides):
        if n == 1:
            strides.append(None)            # any stride: filled in below as PyTorch would have it
            continue
        if s < 0 or s % isz:
            return None
        strides.append(s // isz)
        end += (n - 1) * s
    if end > lo + root.nbytes:
        return None
    contiguous = _contiguous_strides(a.shape)
    return (ptr - lo) // isz, tuple(c if s is None else s for s, c in zip(strides, contiguous))


def _contiguous_strides(shape: tuple) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _flat_bytes(root: np.ndarray) -> np.ndarray:
    """A contiguous block as a flat uint8 view in memory order (no copy)."""
    return root.ravel(order="K").view(np.uint8)


class _TorchName:
    """A global of PyTorch's that a checkpoint names (``torch._utils._rebuild_tensor_v2``,
    ``torch.FloatStorage``): the pickler writes its name; nothing of torch is imported."""

    __slots__ = ("module", "name")
    _cache: dict = {}

    def __new__(cls, module: str, name: str):
        key = (module, name)
        obj = cls._cache.get(key)
        if obj is None:
            obj = cls._cache[key] = object.__new__(cls)
            obj.module, obj.name = module, name
        return obj

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args, **kwargs):   # pickle wants the function of a reduce to be callable
        raise TypeError(f"{self!r} stands for PyTorch's global in a checkpoint; it is not called in ember")


class _StorageRef:
    """One use of a storage by a tensor being saved: written as its persistent id."""

    __slots__ = ("pid",)

    def __init__(self, pid: tuple):
        self.pid = pid


def _ember_to_torch(module: str) -> str | None:
    """``ember.nn.modules.linear`` -> ``torch.nn.modules.linear`` (None for a module outside ember)."""
    if module == "ember" or module.startswith("ember."):
        return "torch" + module[5:]
    return None


def _torch_to_ember(module: str) -> str | None:
    if module == "torch" or module.startswith("torch."):
        return "ember" + module[5:]
    return None


# Where PyTorch keeps the functions ember defines in its own private files (ember.ops.*, ember._tensor, ...):
# a function is written under the first of these public modules that holds it (F.relu as torch.nn.functional).
_PUBLIC_HOMES = ("ember.nn.functional", "ember.special", "ember.linalg", "ember.fft", "ember")


# PyTorch's C builtins, as its pickles name them: module -> (ember's public module, prefix of PyTorch's name)
# (torch._C._nn gelu is F.gelu, torch._C._special special_expit is special.expit, ...)
_C_FUNCTIONS = {"torch._C._nn": ("ember.nn.functional", ""), "torch._C._special": ("ember.special", "special_"),
                "torch._C._linalg": ("ember.linalg", "linalg_"), "torch._C._fft": ("ember.fft", "fft_")}


def _torch_module_of(obj, qualname: str) -> str | None:
    """The module of PyTorch's under which a pickle names ``obj`` (an object of ember's), or None."""
    module = getattr(obj, "__module__", None) or ""
    if _ember_to_torch(module) is None:
        return None
    if (module.startswith("ember.ops") or any(p.startswith("_") for p in module.split("."))) and "." not in qualname:
        for home in _PUBLIC_HOMES:
            m = sys.modules.get(home)
            if m is not None and getattr(m, qualname, None) is obj:
                return _ember_to_torch(home)
    return _ember_to_torch(module)


def _lookup(module: str, qualname: str):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class _Pickler(pickle._Pickler):
    """Python's own pickler (protocol 2, as torch.save writes) with PyTorch's names for ember's objects:
    a tensor is ``torch._utils._rebuild_tensor_v2`` on a storage written as a persistent id, a Parameter
    ``torch._utils._rebuild_parameter``, a dtype ``torch.float32``, and a class or function of ember's
    (``ember.nn.modules.linear.Linear``) is written under PyTorch's module (``torch.nn.modules.linear
    Linear``), where torch finds its own class; ember's loader maps the name back. Everything else
    (user classes, NumPy arrays, optimizers' defaultdicts) pickles as pickle pickles it.

    It is the pure-Python pickler (``pickle._Pickler``) because only there can ``save_global`` be replaced: the C
    pickler writes a class under its own ``__module__`` and checks that the name imports back to it."""

    def __init__(self, file, storages: _StorageTable):
        super().__init__(file, protocol=2)
        self.storages = storages

    dispatch = pickle._Pickler.dispatch.copy()   # functions go through save_global below, as classes do

    def persistent_id(self, obj):
        return obj.pid if type(obj) is _StorageRef else None

    def reducer_override(self, obj):
        from .._device import device
        from ..nn.parameter import Parameter

        t = type(obj)
        if t is _TorchName or isinstance(obj, D.dtype):
            return "torch"            # any string: save_global below writes the name
        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                state = _attributes(obj)
                data = _PlainTensor(obj)
                if state:
                    return (_TorchName("torch._utils", "_rebuild_parameter_with_state"),
                            (data, obj.requires_grad, OrderedDict(), state))
                return (_TorchName("torch._utils", "_rebuild_parameter"), (data, obj.requires_grad, OrderedDict()))
            if obj.device.type == "meta":        # no data: its dtype, size and strides, as torch.save writes it
                return (_TorchName("torch._utils", "_rebuild_meta_tensor_no_storage"),
                        (obj.dtype, tuple(obj.shape), tuple(obj.stride()), obj.requires_grad))
            args = self._tensor_args(obj, obj.requires_grad)
            state = _attributes(obj)
            if state:       # PyTorch's form for a tensor carrying Python attributes
                return (_TorchName("torch._tensor", "_rebuild_from_type_v2"),
                        (_TorchName("torch._utils", "_rebuild_tensor_v2"), _TorchName("torch", "Tensor"), args,
                         state))
            return (_TorchName("torch._utils", "_rebuild_tensor_v2"), args)
        if t is _PlainTensor:
            return (_TorchName("torch._utils", "_rebuild_tensor_v2"), self._tensor_args(obj.t, False))
        if t is Size:
            return (_TorchName("torch", "Size"), (tuple(obj),))
        if t is device:
            return (_TorchName("torch", "device"), (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented

    def save(self, obj, save_persistent_id=True):
        # NumPy scalars are written as Python numbers, as ember always did (torch.load(weights_only=True) reads
        # them); NumPy arrays pickle as NumPy pickles them.
        if isinstance(obj, np.generic) and isinstance(obj, (np.integer, np.floating, np.bool_)):
            obj = int(obj) if isinstance(obj, np.integer) else float(obj) if isinstance(obj, np.floating) \
                else bool(obj)
        super().save(obj, save_persistent_id)

    def save_global(self, obj, name=None):
        if type(obj) is _TorchName:
            module, qualname = obj.module, obj.name
        elif isinstance(obj, D.dtype):
            module, qualname = "torch", obj._name
        else:
            qualname = name or getattr(obj, "__qualname__", None)
            module = _torch_module_of(obj, qualname or "")
            if module is None or qualname is None:
                return super().save_global(obj, name)
            try:
                found = _lookup(_torch_to_ember(module), qualname)
            except (ImportError, AttributeError):
                found = None
            if found is not obj:
                raise pickle.PicklingError(f"Can't pickle {obj!r}: it's not found as {obj.__module__}.{qualname}")
        self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + qualname.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch[types.FunctionType] = save_global

    def _tensor_args(self, t: Tensor, requires_grad: bool) -> tuple:
        """``(storage, offset, size, stride, requires_grad, OrderedDict())`` for ``_rebuild_tensor_v2``."""
        a = t._data
        if isinstance(a, np.generic):          # a 0-d result kept as a NumPy scalar
            a = np.asarray(a)
        location = "cpu"
        if not isinstance(a, np.ndarray) and t.device.type == "cuda":
            # its values through a host copy, tagged with its device as PyTorch tags it (views of one cuda tensor
            # are saved as separate storages)
            a, location = t.detach().cpu()._data, str(t.device)
        if not isinstance(a, np.ndarray):
            raise TypeError(f"ember.save: a tensor is on device '{t.device}'; only cpu and cuda tensors can be saved")
        key, dt, numel, offset, size, stride = self.storages.locate(a)
        pid = ("storage", _TorchName("torch", _STORAGE_NAME[dt._name]), key, location, numel)
        return (_StorageRef(pid), offset, size, stride, requires_grad, OrderedDict())   # hooks: never saved


class _PlainTensor:
    """A Parameter's data, pickled as a plain tensor that does not require grad."""

    __slots__ = ("t",)

    def __init__(self, t: Tensor):
        self.t = t


def _attributes(t: Tensor) -> dict:
    """The Python attributes a user set on a tensor (``t.note = ...``), which PyTorch saves with it;
    ember's own instance attributes start with an underscore and stay behind."""
    d = getattr(t, "__dict__", None)
    return {k: v for k, v in d.items() if not k.startswith("_")} if d else {}


class _CountingWriter:
    """A write-only stream that knows its position: zipfile then writes data descriptors (as PyTorch's
    writer does) and we can align each record's data to 64 bytes."""

    def __init__(self, f):
        self.f = f
        self.n = 0

    def write(self, b) -> int:
        self.f.write(b)
        n = memoryview(b).nbytes
        self.n += n
        return n

    def tell(self) -> int:
        return self.n

    def flush(self) -> None:
        if hasattr(self.f, "flush"):
            self.f.flush()


_ALIGN = 64


def _write_archive(f, archive: str, records: list[tuple[str, Any]]) -> None:
    import hashlib
    import zipfile

    w = _CountingWriter(f)
    with zipfile.ZipFile(w, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        crcs = hashlib.sha1()
        for name, data in records:
            full = f"{archive}/{name}"
            size = memoryview(data).nbytes
            zip64 = size * 1.05 > zipfile.ZIP64_LIMIT      # zipfile's own rule for a zip64 local header
            header = 30 + len(full.encode("utf-8")) + 4 + (20 if zip64 else 0)
            pad = -(w.tell() + header) % _ALIGN
            info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad     # PyTorch's padding field
            info.external_attr = 0o600 << 16
            zf.writestr(info, data)
            crcs.update(f"{name}:{info.CRC}:{size};".encode())
        # PyTorch writes a random id; ember's comes from the content, so one object saves to one file
        sid = f"{int(crcs.hexdigest(), 16) % 10 ** 40:040d}"
        info = zipfile.ZipInfo(f"{archive}/.data/serialization_id", date_time=(1980, 1, 1, 0, 0, 0))
        info.extra = b"FB" + struct.pack("<H", 0)
        zf.writestr(info, sid)
    w.flush()


def _archive_name(f) -> str:
    # PyTorch names the folder after the file (model.pt -> model/) and "archive" for a buffer
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fsdecode(f)))[0]
        if stem and stem.isascii() and stem.isprintable() and "/" not in stem and "\\" not in stem:
            return stem
    return "archive"


def save(obj: object, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` to ``f`` (a path or a writable binary file) in PyTorch's checkpoint format.

    Pickles what ``torch.save`` pickles: tensors (as storages: views of one tensor are stored once and
    load sharing memory), Parameters, containers, whole ``nn.Module``s, optimizers, NumPy arrays and any
    picklable Python object. ember's classes and functions are written under PyTorch's names
    (``torch.nn.modules.linear Linear``), so ``torch.load`` builds its own classes from ember's file.
    ``torch.load(f, weights_only=True)`` reads back tensors, containers and plain values (and the classes
    given to ``add_safe_globals``). A view saves its whole memory block, as PyTorch saves a view's whole
    storage (``clone()`` it first to save only its elements). An object that cannot be pickled raises
    ``pickle.PicklingError`` (or pickle's ``TypeError``) before ``f`` is touched. The pickle is always
    written in protocol 2 (``torch.save``'s default, the one ``weights_only`` reads); ``pickle_protocol``
    above 2 is accepted and changes nothing.
    """
    import io

    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save: pickle_module is not supported: ember pickles with Python's pickle, "
                         "naming PyTorch's globals")
    if not isinstance(pickle_protocol, int) or isinstance(pickle_protocol, bool) or not 2 <= pickle_protocol <= 5:
        raise ValueError(f"ember.save: pickle_protocol must be 2 to 5, got {pickle_protocol!r}")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only PyTorch's zip format (torch.save's default since 1.6); "
                                  "the legacy format (_use_new_zipfile_serialization=False) is not built")
    storages = _StorageTable()
    buf = io.BytesIO()
    try:
        _Pickler(buf, storages).dump(obj)          # anything unpicklable raises here, before f is touched
    except pickle.PicklingError as e:
        raise PicklingError(str(e)) from None
    data_pkl = buf.getvalue()
    if _skip_data_state["on"]:
        storages.records = [(key, np.zeros(data.nbytes, np.uint8)) for key, data in storages.records]
    records: list[tuple[str, Any]] = [("data.pkl", data_pkl), (".format_version", b"1"),
                                      (".storage_alignment", str(_ALIGN).encode())]
    if not _disable_byteorder_record:
        records.append(("byteorder", sys.byteorder.encode()))
    records += [(f"data/{key}", data) for key, data in storages.records]
    records.append(("version", b"3\n"))
    archive = _archive_name(f)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write_archive(fh, archive, records)
    elif hasattr(f, "write"):
        _write_archive(f, archive, records)
    else:
        raise AttributeError(f"ember.save: f must be a path or a writable binary file, got {type(f).__name__}")


# ======================================================================================================
# load
# ======================================================================================================
class _StorageType:
    """A storage class named in a pickle (``torch.FloatStorage``): the dtype its records hold."""

    __slots__ = ("name", "dtype", "torch_dtype")

    def __init__(self, name: str, dtype: D.dtype | None, torch_dtype: str):
        self.name, self.dtype, self.torch_dtype = name, dtype, torch_dtype

    def __repr__(self) -> str:
        return f"<class 'torch.{self.name}'>"


class _MissingDtype:
    """A PyTorch dtype ember does not have, named in a pickle."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage:
    """A loaded storage: the record's bytes (``raw``, uint8) and its dtype. ``map_location`` callables
    receive it and may return it."""

    __slots__ = ("raw", "dtype", "key", "location", "target")

    def __init__(self, raw: np.ndarray, dtype: D.dtype, key: str, location: str):
        self.raw, self.dtype, self.key, self.location = raw, dtype, key, location
        self.target = "cpu"   # the device its tensors are placed on (map_location's answer; 'cuda' with a GPU)

    @property
    def device(self):
        from .._device import cpu
        return cpu

    def cpu(self) -> _Storage:
        self.target = "cpu"
        return self

    def cuda(self, device=None) -> _Storage:
        """PyTorch's ``map_location=lambda storage, loc: storage.cuda()``: its tensors restore onto the GPU."""
        from .._device import check_device
        check_device("cuda" if device is None else device)   # a CPU-only PyTorch's error without a GPU
        self.target = "cuda"
        return self

    def nbytes(self) -> int:
        return self.raw.nbytes

    def size(self) -> int:
        return self.raw.nbytes // self.dtype.itemsize

    def __repr__(self) -> str:
        return f"<ember storage '{self.key}': {self.size()} x {self.dtype}, from '{self.location}'>"


def _as_int(x, what: str) -> int:
    if type(x) is not int:
        raise RuntimeError(f"ember.load: {what} must be an int, got {type(x).__name__}: the file is corrupt")
    return x


def _tensor_from_storage(storage, storage_offset, size, stride, dtype: D.dtype | None = None) -> Tensor:
    """A tensor viewing ``storage`` as PyTorch's ``set_(storage, offset, size, stride)``, checked first."""
    from pickle import UnpicklingError

    if not isinstance(storage, _Storage):
        raise UnpicklingError(f"a tensor must be rebuilt from a storage, got {type(storage).__name__}")
    dtype = storage.dtype if dtype is None else dtype
    offset = _as_int(storage_offset, "a storage offset")
    if stride is None and type(size) in (tuple, list, Size):   # PyTorch's set_: no stride means contiguous
        stride = _contiguous_strides(tuple(size)) if all(type(n) is int for n in size) else ()
    # PyTorch's set_ takes ints in a tuple, list or Size; anything else is its "invalid combination" TypeError
    for what, v in (("size", size), ("stride", stride)):
        if type(v) not in (tuple, list, Size) or not all(type(n) is int for n in v):
            inner = f" of [{', '.join(sorted({type(n).__name__ for n in v}))}]" if type(v) in (tuple, list) else ""
            e = TypeError(f"set_() received an invalid combination of arguments: {what} must be a tuple of ints, "
                          f"got {type(v).__name__}{inner} (ember.load: the file is corrupt)")
            e.pytorch_type = True    # the unpickler passes it on as PyTorch does, not as an UnpicklingError
            raise e
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"ember.load: mismatch in length of strides and shape ({list(size)} vs {list(stride)}): "
                           "the file is corrupt")
    if offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"ember.load: negative size, stride or offset (size {list(size)}, stride {list(stride)}, "
                           f"offset {offset}): the file is corrupt")
    isz = dtype.itemsize
    available = storage.raw.nbytes // isz
    numel = 1
    for n in size:
        numel *= n
    if numel == 0:
        return _placed(make(np.empty(size, dtype=dtype.np)), storage)
    needed = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > available:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {isz} requiring a storage size of {needed * isz} are out of bounds for "
                           f"storage of size {available * isz} (ember.load: the file is corrupt)")
    try:
        arr = np.ndarray(size, dtype=dtype.np, buffer=storage.raw, offset=offset * isz,
                         strides=tuple(s * isz for s in stride))
    except ValueError as e:      # more elements than NumPy can index (a stride-0 bomb)
        raise RuntimeError(f"ember.load: cannot build a tensor of size {list(size)}: {e}") from None
    return _placed(make(arr), storage)


def _placed(t: Tensor, storage: _Storage) -> Tensor:
    """``t`` (viewing the storage's host bytes) moved onto the storage's target device ('cuda': a copy there)."""
    return t if storage.target == "cpu" else t.to(storage.target)


def _set_state(t: Tensor, state) -> Tensor:
    """Plain Python attributes a tensor carried (PyTorch's ``_set_obj_state``), never ember's own."""
    from pickle import UnpicklingError

    if state is None or state == {}:
        return t
    if isinstance(state, tuple) and len(state) == 2 and not state[1]:
        state = state[0]
    if not isinstance(state, dict):
        raise UnpicklingError(f"a tensor's state must be a dict, got {type(state).__name__}")
    for k, v in state.items():
        # a plain attribute only: never one of ember's own (slots, properties, methods, class defaults)
        if type(k) is not str or k.startswith("__") or hasattr(type(t), k):
            raise UnpicklingError(f"ember.load refuses to set the tensor attribute {k!r} from a file")
        t.__dict__[k] = v
    return t


def _check_requires_grad(t: Tensor, requires_grad) -> Tensor:
    from pickle import UnpicklingError

    if type(requires_grad) is not bool:
        raise UnpicklingError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    if requires_grad:
        t.requires_grad_(True)        # PyTorch's error for an integer tensor
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_from_storage(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = _tensor_from_storage(storage, storage_offset, size, stride)
    if metadata and any(metadata.values() if isinstance(metadata, dict) else (True,)):
        raise RuntimeError(f"ember.load: tensor metadata {metadata!r} (conjugate/negative views) is not supported")
    return _check_requires_grad(t, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    from pickle import UnpicklingError

    if isinstance(dtype, _MissingDtype):
        raise RuntimeError(f"ember.load: the file holds a tensor of dtype torch.{dtype.name}, which ember does not "
                           f"have (ember's dtypes: {', '.join(sorted(_STORAGE_NAME))})")
    if not isinstance(dtype, D.dtype):
        raise UnpicklingError(f"_rebuild_tensor_v3 expects a dtype, got {type(dtype).__name__}")
    if isinstance(storage, _Storage) and storage.raw.nbytes % dtype.itemsize:
        raise RuntimeError(f"ember.load: storage '{storage.key}' of {storage.raw.nbytes} bytes does not hold whole "
                           f"{dtype} elements: the file is corrupt")
    t = _tensor_from_storage(storage, storage_offset, size, stride, dtype)
    if metadata and any(metadata.values() if isinstance(metadata, dict) else (True,)):
        raise RuntimeError(f"ember.load: tensor metadata {metadata!r} (conjugate/negative views) is not supported")
    return _check_requires_grad(t, requires_grad)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from pickle import UnpicklingError
    from ..nn.parameter import Parameter

    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise UnpicklingError("_rebuild_parameter expects (tensor, bool, hooks)")
    p = Parameter(data, requires_grad)
    return p


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


_TENSOR_CLASS = object.__new__(type("TensorClass", (), {"__repr__": lambda s: "<class 'torch.Tensor'>"}))
_PARAMETER_CLASS = object.__new__(type("ParameterClass", (), {
    "__repr__": lambda s: "<class 'torch.nn.parameter.Parameter'>"}))


def _rebuild_from_type_v2(func, new_type, args, state):
    from pickle import UnpicklingError
    from ..nn.parameter import Parameter

    # the class markers (weights_only) or the classes themselves (weights_only=False)
    if func not in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter) \
            or not any(new_type is c for c in (_TENSOR_CLASS, _PARAMETER_CLASS, Tensor, Parameter)) \
            or type(args) is not tuple:
        raise UnpicklingError(f"_rebuild_from_type_v2 only rebuilds tensors and Parameters, got {func!r}, "
                              f"{new_type!r}")
    t = func(*args)
    if (new_type is _PARAMETER_CLASS or new_type is Parameter) and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    return _set_state(t, state)


def _size(*args):
    from pickle import UnpicklingError

    if len(args) > 1 or (args and (type(args[0]) not in (tuple, list)
                                   or not all(type(n) is int for n in args[0]))):
        raise UnpicklingError("torch.Size is allowed only on a tuple of ints")
    return Size(*args)


def _device_ctor(*args):
    from pickle import UnpicklingError
    from .._device import device

    if not 1 <= len(args) <= 2 or type(args[0]) is not str or (len(args) == 2 and type(args[1]) is not int):
        raise UnpicklingError("torch.device is allowed only as device(str) or device(str, int)")
    return device(*args)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A tensor on the 'meta' device (shape, strides and dtype, no data), as torch.save writes one."""
    from pickle import UnpicklingError
    from ..ops.strided import empty_strided

    if not isinstance(dtype, D.dtype):
        raise UnpicklingError(f"_rebuild_meta_tensor_no_storage expects a dtype, got {type(dtype).__name__}")
    for what, v in (("size", size), ("stride", stride)):
        if type(v) not in (tuple, list, Size) or not all(type(n) is int and n >= 0 for n in v):
            raise UnpicklingError(f"_rebuild_meta_tensor_no_storage: {what} must be a tuple of ints >= 0")
    return _check_requires_grad(empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta"), requires_grad)


class _Unsupported:
    """A global of PyTorch's weights-only allow-list for something ember does not have (quantized, sparse,
    nested tensors, wrapper subclasses): allowed by name, as in PyTorch, so the error says what is missing."""

    __slots__ = ("name", "what")

    def __init__(self, name: str, what: str):
        self.name, self.what = name, what

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"ember.load: the file holds {self.what} ({self.name}), which ember does not support")

    def __repr__(self) -> str:
        return self.name


_UNSUPPORTED = {"_rebuild_qtensor": "a quantized tensor", "_rebuild_sparse_tensor": "a sparse tensor",
                "_rebuild_nested_tensor": "a nested tensor", "_rebuild_wrapper_subclass": "a tensor subclass",
                "_rebuild_device_tensor_from_numpy": "a tensor of a device without storage",
                "_rebuild_device_tensor_from_cpu_tensor": "a tensor of a device without storage"}

_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
               _rebuild_parameter_with_state, _rebuild_from_type_v2, _rebuild_meta_tensor_no_storage, _size,
               _device_ctor)


def _allowed_globals():
    """The globals a checkpoint may name, and what each stands for in ember."""
    from ._unpickler import BASIC_GLOBALS

    allowed: dict[str, Any] = dict(BASIC_GLOBALS)
    for f in _REBUILDERS[:7]:
        allowed[f"torch._utils.{f.__name__}"] = f
    for name, what in _UNSUPPORTED.items():
        allowed[f"torch._utils.{name}"] = _Unsupported(f"torch._utils.{name}", what)
    allowed["torch.serialization._get_layout"] = _Unsupported("torch.serialization._get_layout",
                                                              "a tensor of a sparse layout")
    for q in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
              "per_channel_affine_float_qparams"):
        allowed[f"torch.{q}"] = _MissingDtype(q)       # a quantization scheme: only an argument of _rebuild_qtensor
    allowed["torch._tensor._rebuild_from_type_v2"] = _rebuild_from_type_v2
    allowed["torch.Size"] = _size
    allowed["torch.device"] = _device_ctor
    allowed["torch.Tensor"] = _TENSOR_CLASS
    allowed["torch.nn.parameter.Parameter"] = _PARAMETER_CLASS
    for d in D._ALL:
        allowed[f"torch.{d._name}"] = d
    for alias in ("half", "float", "double", "short", "int", "long"):
        allowed[f"torch.{alias}"] = getattr(D, alias)
    for name in _FOREIGN_DTYPES:
        allowed[f"torch.{name}"] = _MissingDtype(name)
    for prefix in ("torch", "torch.cuda"):
        for dname, sname in _STORAGE_NAME.items():
            allowed[f"{prefix}.{sname}"] = _StorageType(sname, getattr(D, dname), dname)
        for sname, tname in _FOREIGN_STORAGES.items():
            allowed[f"{prefix}.{sname}"] = _StorageType(sname, None, tname)
    for name in ("torch.UntypedStorage", "torch.storage.UntypedStorage"):
        allowed[name] = _StorageType("UntypedStorage", D.uint8, "uint8")
    callables = {v for v in allowed.values() if callable(v) and not isinstance(v, (D.dtype, type))}
    return allowed, callables


_ALLOWED_CACHE: list = []


def _allowed() -> tuple[dict, set]:
    if not _ALLOWED_CACHE:
        _ALLOWED_CACHE.append(_allowed_globals())
    return _ALLOWED_CACHE[0]


def _location_rule(map_location) -> Callable[[_Storage, str], _Storage]:
    """``map_location`` as a function (storage, location tag) -> storage; 'cuda' locations restore onto the GPU
    where CuPy sees one (PyTorch's CPU-only error otherwise)."""
    from .._device import device
    from ..cuda import is_available as _has_cuda

    def placed(storage: _Storage, where: str) -> _Storage:
        storage.target = where
        return storage

    def on_cpu(storage: _Storage, location: str) -> _Storage:
        loc = str(location)
        if loc.startswith("cuda"):
            if not _has_cuda():
                raise RuntimeError(_CUDA_MESSAGE)
            return placed(storage, "cuda")
        if loc != "cpu":
            raise RuntimeError(f"ember.load: storage '{storage.key}' was saved on device '{loc}', and ember has "
                               "only the 'cpu' device: pass map_location='cpu'")
        return storage

    def target(d) -> str:
        d = d if isinstance(d, str) else str(d)
        kind = device(d).type
        if kind == "cuda" and _has_cuda():
            return "cuda"
        if kind != "cpu":
            raise RuntimeError(f"ember.load: map_location={d!r}: ember has only the 'cpu' device")
        return "cpu"

    if map_location is None:
        return on_cpu
    if isinstance(map_location, dict):
        return lambda storage, location: on_cpu(storage, str(map_location.get(location, location)))
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        where = target(map_location)
        return lambda storage, location: placed(storage, where)
    if callable(map_location):
        def by_call(storage, location):
            out = map_location(storage, location)
            if out is None:
                return on_cpu(storage, location)
            if not isinstance(out, _Storage):
                raise TypeError(f"ember.load: map_location returned {type(out).__name__}; it must return the "
                                "storage it was given (ember has only the cpu) or None")
            return out
        return by_call
    raise TypeError(f"ember.load: map_location must be None, a str, a device, a dict or a callable, got "
                    f"{type(map_location).__name__}")


class _Archive:
    """The records of a PyTorch zip checkpoint, read with every size checked against the file."""

    def __init__(self, fh, mmap_path: str | None):
        import zipfile

        self.fh = fh
        self.mmap_path = mmap_path
        fh.seek(0, 2)
        self.length = fh.tell()
        fh.seek(0)
        try:
            self.zf = zipfile.ZipFile(fh)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error) as e:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding central directory "
                               f"(ember.load: the file is truncated or not a zip archive: {e})") from None
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: the archive is empty")
        self.prefix = infos[0].filename.split("/")[0]
        if "/" not in infos[0].filename:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: file in archive is not in a "
                               "subdirectory: " + infos[0].filename)
        self.records: dict[str, Any] = {}
        for info in infos:
            if info.filename.startswith(self.prefix + "/"):
                name = info.filename[len(self.prefix) + 1:]
                if name in self.records:
                    raise RuntimeError(f"ember.load: the archive holds record '{name}' twice: the file is tampered")
                self.records[name] = info

    def info(self, name: str):
        info = self.records.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found "
                               "(ember.load: the file is truncated or not a PyTorch checkpoint)")
        import zipfile
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):   # PyTorch's reader (miniz) too
            raise RuntimeError(f"PytorchStreamReader failed retrieving file meta-data for {name}: unsupported "
                               f"method (compression method {info.compress_type}; a checkpoint's records are stored "
                               "or deflated). The checkpoint file is corrupted or was modified after saving.")
        stored = info.compress_type == zipfile.ZIP_STORED
        if (stored and info.compress_size != info.file_size) or info.header_offset + info.compress_size > self.length \
                or (not stored and info.file_size > _DEFLATE_MAX_RATIO * info.compress_size + 1024):
            raise RuntimeError(f"ember.load: record '{name}' declares {info.file_size} bytes, which the "
                               f"{self.length}-byte file cannot hold: the file is truncated or tampered")
        if name == "data.pkl" and not stored and info.file_size > MAX_PICKLE_BYTES:
            raise RuntimeError(f"ember.load: the compressed record 'data.pkl' would inflate to {info.file_size} bytes, "
                               f"beyond ember.serialization.MAX_PICKLE_BYTES ({MAX_PICKLE_BYTES}); refused before "
                               "inflating it (a decompression bomb, or raise MAX_PICKLE_BYTES if you trust the file)")
        return info

    def check_version(self) -> None:
        """Refuse a format version PyTorch's reader refuses, with its messages (``.data/version`` first)."""
        import re

        name = ".data/version" if ".data/version" in self.records else "version"
        text = bytes(self.read(name)).decode("latin1")
        m = re.match(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text)    # C's stoll: leading blanks, sign, digits
        version = int(m.group()) if m else None
        if version is None or not -2 ** 63 <= version < 2 ** 63:
            raise RuntimeError(f"Couldn't parse the version {text} as Long Long.")
        if version < _MIN_VERSION:
            raise RuntimeError(f"Attempted to read a PyTorch file with version {version}, but the minimum supported "
                               f"version for reading is {_MIN_VERSION}. Your PyTorch script module file is too old. "
                               "Please regenerate it with latest version of PyTorch to mitigate this issue.")
        if version > _MAX_VERSION:
            raise RuntimeError(f"Attempted to read a PyTorch file with version {version}, but the maximum supported "
                               f"version for reading is {_MAX_VERSION}. The version of your PyTorch installation "
                               "may be too old, please upgrade PyTorch to latest version to mitigate this issue.")

    def read(self, name: str, expected: int | None = None) -> np.ndarray:
        """The record's bytes as a writable uint8 array (CRC checked), or a private memory map of them."""
        import zipfile
        import zlib

        info = self.info(name)
        if expected is not None and info.file_size != expected:
            raise RuntimeError(f"ember.load: record '{name}' holds {info.file_size} bytes but the pickle declares a "
                               f"storage of {expected} bytes: the file is corrupt")
        if self.mmap_path is not None and info.compress_type == zipfile.ZIP_STORED and info.file_size:
            start = self._data_offset(info)
            import mmap
            mode = "r+" if _config["mmap_flags"] == mmap.MAP_SHARED else "c"     # set_default_mmap_options
            return np.memmap(self.mmap_path, dtype=np.uint8, mode=mode, offset=start, shape=(info.file_size,))
        out = np.empty(info.file_size, dtype=np.uint8)
        view = memoryview(out)
        try:
            with self.zf.open(info) as src:
                pos, chunk = 0, 1 << 24
                while pos < info.file_size:
                    got = src.read(min(chunk, info.file_size - pos))
                    if not got:
                        raise EOFError("record ended early")
                    view[pos:pos + len(got)] = got
                    pos += len(got)
                if src.read(1):             # also completes the CRC check
                    raise zipfile.BadZipFile("record longer than declared")
        except (zipfile.BadZipFile, EOFError, OSError, zlib.error, ValueError, struct.error) as e:
            raise RuntimeError(f"ember.load: record '{name}' is unreadable ({e}): the file is truncated or "
                               "corrupt") from None
        return out

    def _data_offset(self, info) -> int:
        self.fh.seek(info.header_offset)
        head = self.fh.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise RuntimeError(f"ember.load: bad local header for record '{info.filename}': the file is corrupt")
        n, m = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + n + m
        if start + info.file_size > self.length:
            raise RuntimeError(f"ember.load: record '{info.filename}' runs past the end of the file")
        return start


# How PyTorch's legacy format begins: PROTO 2, then its magic number 0x1950a86a20f9469cfc6c as LONG1.
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a" + bytes.fromhex("6cfc9c46f9206aa85019")


UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)


def _get_wo_message(message: str) -> str:
    """PyTorch's text around a weights-only unpickler error (torch.serialization.load's _get_wo_message)."""
    import re

    has_unsafe_global = re.search(r"GLOBAL (\S+) was not an allowed global by default.", message) is not None
    has_blocklist = re.search(r"whose module (\S+) is blocked", message) is not None
    has_import = re.search(r"(\S+) must be (\S+) to load", message) is not None
    if has_unsafe_global:
        updated = ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                   "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                   f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                   "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message)
    else:
        if has_import:
            return f"Weights only load failed. {message}\n {UNSAFE_MESSAGE}\n"
        updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not has_blocklist:
            updated += ("Please file an issue with the following so that we can make "
                        "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
        updated += "\n\n" + message
    return updated + _DOCS_MESSAGE


def _weights_only_choice(weights_only: bool | None, pickle_module: Any) -> bool:
    """``weights_only`` after PyTorch's defaults and its two environment variables."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    true_values = ["1", "y", "yes", "true"]
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force:
        weights_only = True
    elif force_no and not_set:   # it overrides only a call that did not choose
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        weights_only = False
    return weights_only


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load an object saved by ``torch.save`` (zip format) or ``ember.save``.

    ``weights_only=True`` (the default, as in PyTorch): the pickle is read by ember's own interpreter of
    pickle opcodes, which never imports or calls anything the file names beyond an allow-list (PyTorch's:
    tensors, Parameters, containers, plain values, dtypes, ``Size``) and the globals given to
    ``add_safe_globals`` / ``safe_globals``; anything else raises ``pickle.UnpicklingError`` with
    PyTorch's text naming the global to allow, before anything is called.

    ``weights_only=False`` (or a ``pickle_module``, or ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` when the
    call does not choose): Python's unpickler, as PyTorch's, which RUNS whatever code the file names:
    use it only for files you trust. PyTorch's names resolve to ember's objects (``torch.nn.modules.linear
    Linear`` is ``ember.nn.modules.linear.Linear``), so whole modules and optimizers saved by torch load.
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces ``weights_only=True``.

    ``map_location``: ``None``, ``'cpu'``, a cpu device, a dict of location tags, or
    ``fn(storage, location)`` returning the storage or None; storages saved on another device need it,
    as on a CPU-only PyTorch. ``mmap=True`` (with a path) maps the storages from the file copy-on-write
    (``set_default_mmap_options``) instead of reading them. Tensors that shared a storage when saved
    share memory again. PyTorch's legacy (pre-1.6, non-zip) format and TorchScript archives are refused
    with a ``RuntimeError``; dtypes ember lacks (complex32, float8, qint8, ...) raise a ``RuntimeError``.
    """
    import io

    weights_only = _weights_only_choice(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    elif pickle_module is None:
        pickle_module = pickle
    if pickle_load_args != {} and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    if weights_only:
        unknown = set(pickle_load_args) - {"encoding"}
        if unknown:
            raise TypeError(f"ember.load: unexpected keyword arguments {sorted(unknown)} with weights_only=True "
                            "(only encoding= is understood)")
    pickle_load_args.setdefault("encoding", "utf-8")
    rule = _location_rule(map_location)
    how = (weights_only, pickle_module, pickle_load_args)

    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            return _load_from(fh, rule, path if mmap else None, how)
    if not hasattr(f, "read"):
        raise AttributeError(f"ember.load: f must be a path or a readable binary file, got {type(f).__name__}")
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    try:
        start = f.tell()
        f.seek(start)
        fh = f
    except (AttributeError, OSError, io.UnsupportedOperation):
        fh = io.BytesIO(f.read())
        start = 0
    if start:
        fh = io.BytesIO(fh.read())
    return _load_from(fh, rule, None, how)


def _load_from(fh, rule, mmap_path: str | None, how: tuple):
    from pickle import UnpicklingError

    from ._unpickler import WeightsUnpickler

    head = fh.read(512)
    fh.seek(0)
    if not head:
        raise EOFError("Ran out of input (ember.load: the file is empty)")
    if head[:4] != b"PK\x03\x04":
        if head.startswith(_LEGACY_MAGIC) or head[257:262] == b"ustar":
            raise RuntimeError("ember.load: this file is in PyTorch's legacy format (torch.save before 1.6, or "
                               "_use_new_zipfile_serialization=False), which ember does not read. Re-save it "
                               "with a recent torch.save (the zip format).")
        raise UnpicklingError(f"ember.load: not a PyTorch checkpoint (not a zip archive; it starts with {head[:8]!r}). "
                              f"invalid load key, {head[:1].decode('latin1')!r}.")
    archive = _Archive(fh, mmap_path)
    if "constants.pkl" in archive.records:
        raise RuntimeError("ember.load: this is a TorchScript archive (torch.jit.save), which ember cannot load; "
                           "save the model's state_dict() with torch.save instead")
    if "version" not in archive.records and ".data/version" not in archive.records:
        archive.info("version")     # raises PyTorch's "failed locating file version"
    archive.check_version()
    # no byteorder record: the default load endianness (PyTorch's fallback), native unless set
    byteorder = {LoadEndianness.LITTLE: "little", LoadEndianness.BIG: "big"}.get(get_default_load_endianness(),
                                                                               sys.byteorder)
    if "byteorder" in archive.records:
        byteorder = bytes(archive.read("byteorder")).decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise ValueError("Unknown endianness type: " + byteorder)

    loaded: dict[str, _Storage] = {}

    def persistent_load(pid):
        if type(pid) is not tuple or len(pid) != 5:
            raise UnpicklingError(f"persistent_load id must be a 5-tuple ('storage', type, key, location, numel), "
                                  f"got {type(pid).__name__}")
        typename, stype, key, location, numel = pid
        typename = typename.decode("ascii") if isinstance(typename, bytes) else typename
        if typename != "storage":
            raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {typename!r}")
        if not isinstance(stype, _StorageType):
            raise UnpicklingError(f"a storage type must be a torch storage class, got {stype!r}")
        if stype.dtype is None:
            raise RuntimeError(f"ember.load: the file holds a tensor of dtype torch.{stype.torch_dtype} (storage "
                               f"type torch.{stype.name}), which ember does not have (ember's dtypes: "
                               f"{', '.join(sorted(_STORAGE_NAME))})")
        if type(key) is not str or type(location) is not str:
            raise UnpicklingError("a storage key and location must be str")
        numel = _as_int(numel, "a storage size")
        if numel < 0:
            raise RuntimeError(f"ember.load: storage '{key}' declares {numel} elements: the file is corrupt")
        if key in loaded:
            st = loaded[key]
            if st.dtype is not stype.dtype:
                raise RuntimeError(f"ember.load: storage '{key}' is declared as both {st.dtype} and {stype.dtype}: "
                                   "the file is corrupt")
            return st
        if _skip_data_state["on"]:
            raw = np.zeros(numel * stype.dtype.itemsize, np.uint8)
        else:
            raw = archive.read(f"data/{key}", expected=numel * stype.dtype.itemsize)
        if byteorder != sys.byteorder and stype.dtype.itemsize > 1:
            raw.view(stype.dtype.np).byteswap(inplace=True)
        st = rule(_Storage(raw, stype.dtype, key, location), location)
        loaded[key] = st
        return st

    weights_only, pickle_module, pickle_load_args = how
    data = bytes(archive.read("data.pkl"))
    if not weights_only:
        return _full_unpickler(pickle_module, data, persistent_load, pickle_load_args).load()
    allowed, callables = _allowed()
    try:
        return WeightsUnpickler(data, allowed, callables, persistent_load, pickle_load_args["encoding"],
                                user=_user_allowed_globals()).load()
    except UnpicklingError as e:
        raise UnpicklingError(_get_wo_message(str(e))) from None


def _full_unpickler(pickle_module: Any, data: bytes, persistent_load: Callable, pickle_load_args: dict):
    """``pickle_module.Unpickler`` over ``data.pkl`` (``weights_only=False``: it runs what the file names),
    with PyTorch's globals resolved to ember's: tensors, storages and dtypes to ember's rebuilders, and
    ``torch.<path> <name>`` to ``ember.<path>.<name>``."""
    import io

    allowed, _ = _allowed()

    class Unpickler(pickle_module.Unpickler):
        def find_class(self, module: str, name: str):
            if _torch_to_ember(module) is None:
                return super().find_class(module, name)
            if module in _C_FUNCTIONS:
                home, prefix = _C_FUNCTIONS[module]
                return super().find_class(home, name[len(prefix):] if name.startswith(prefix) else name)
            if module == "torch._C" and name in ("_VariableFunctionsClass", "_VariableFunctions"):
                from ..ops import public                   # getattr(it, "relu"): torch.relu
                return public
            if module == "torch._C" and name in ("TensorBase", "_TensorBase"):
                return Tensor                              # getattr(it, "add"): Tensor.add
            found = allowed.get(f"{module}.{name}")
            if found is _TENSOR_CLASS or found is _PARAMETER_CLASS:     # the classes themselves here
                found = None
            if found is not None:
                return found
            try:
                return super().find_class(_torch_to_ember(module), name)
            except (ImportError, AttributeError) as e:
                raise type(e)(f"{e} (the checkpoint names {module}.{name}, which ember looks up as "
                              f"{_torch_to_ember(module)}.{name})") from None

        def persistent_load(self, pid):
            return persistent_load(pid)

    return Unpickler(io.BytesIO(data), **pickle_load_args)


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals a checkpoint's pickle names that ``load(weights_only=True)`` would refuse (neither allowed by
    default nor given to ``add_safe_globals``), read statically from the pickle without running it, as PyTorch's."""
    from ._unpickler import globals_in_pickle

    safe = set(_allowed()[0]) | set(_user_allowed_globals())
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = _checkpoint_pickle(fh)
    else:
        data = _checkpoint_pickle(f)
    return list(globals_in_pickle(data) - safe)


def _checkpoint_pickle(fh) -> bytes:
    import io

    start = fh.tell()
    head = fh.read(4)
    fh.seek(start)
    if head != b"PK\x03\x04":
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    if start:
        fh = io.BytesIO(fh.read())
    archive = _Archive(fh, None)
    if "constants.pkl" in archive.records:
        raise ValueError("Expected input to be a checkpoint returned by torch.save but got a torchscript checkpoint")
    return bytes(archive.read("data.pkl"))

