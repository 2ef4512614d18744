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

Loading never runs code from the file: ``data.pkl`` is read by ``ember._unpickler``, which builds
only tensors, Parameters, containers and plain values (PyTorch's ``weights_only=True``), and every
size and offset is checked against the bytes really present before anything is allocated. A
failure raises before ``load`` returns, so nothing half-loaded escapes.

Limits (checked from the zip directory, before a record is read): records are stored or deflated (as
PyTorch's reader, anything else is refused); the archive's ``version`` record must be a version PyTorch
reads (1 to 10); a deflated record may not declare more than deflate's own 1032x bound; and a deflated
``data.pkl`` may inflate to at most ``MAX_PICKLE_BYTES`` (256 MiB; a state dict's pickle is a few MB at
most), so a small file cannot make ``load`` allocate gigabytes before it fails. Raise the module
attribute ``ember.serialization.MAX_PICKLE_BYTES`` to load a larger one.
"""
from __future__ import annotations

import os
import struct
import sys
import warnings
from collections import Counter, OrderedDict
from typing import Any, BinaryIO, Callable, Union

import numpy as np

from .. import _dtype as D
from .._tensor import Size, Tensor, make

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]

# The most bytes a compressed data.pkl may inflate to (see the module docstring).
MAX_PICKLE_BYTES = 256 << 20
# The versions of PyTorch's zip format its reader accepts (caffe2 inline_container's kMin/kMax).
_MIN_VERSION, _MAX_VERSION = 1, 10
# Deflate cannot inflate more than about 1032 bytes per compressed byte: a record declaring more is forged.
_DEFLATE_MAX_RATIO = 1032


class PicklingError(__import__("pickle").PicklingError, TypeError):
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
    return out

FileLike = Union[str, os.PathLike, BinaryIO]

# ember dtype name -> PyTorch's typed-storage class (the storage type in a persistent id).
_STORAGE_NAME = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                 "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
                 "uint8": "ByteStorage", "bool": "BoolStorage", "bfloat16": "BFloat16Storage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
# Storage classes PyTorch has for dtypes ember lacks: named in the error instead of "unknown global".
_FOREIGN_STORAGES = {"QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                     "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_FOREIGN_DTYPES = ("complex32", "chalf", "uint16",
                   "uint32", "uint64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                   "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
                   "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
                   *(f"int{i}" for i in range(1, 8)), *(f"uint{i}" for i in range(1, 8)))

_CUDA_MESSAGE = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. "
                 "If you are running on a CPU-only machine, please use torch.load with "
                 "map_location=torch.device('cpu') to map your storages to the CPU.")


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


# Pickle opcodes (protocol 2), written by hand: the output names PyTorch's globals, which the standard
# pickler would insist on importing.
_PROTO, _STOP, _MARK = b"\x80", b".", b"("
_NONE, _TRUE, _FALSE = b"N", b"\x88", b"\x89"
_EMPTY_DICT, _EMPTY_LIST, _EMPTY_TUPLE = b"}", b"]", b")"
_SETITEMS, _APPENDS, _TUPLE, _REDUCE, _BUILD, _BINPERSID = b"u", b"e", b"t", b"R", b"b", b"Q"
_TUPLE_N = {1: b"\x85", 2: b"\x86", 3: b"\x87"}
_BATCH = 1000          # items per SETITEMS/APPENDS, as pickle batches them


class _Pickler:
    """Writes ``data.pkl`` for an object made of tensors, containers and plain values."""

    def __init__(self, storages: _StorageTable):
        self.out = bytearray()
        self.memo: dict[int, int] = {}
        self.keep: list = []              # objects whose id() is memoised stay alive while pickling
        self.busy: set[int] = set()       # tuples being written (a tuple cannot contain itself)
        self.storages = storages

    def dump(self, obj) -> bytes:
        self.out += _PROTO + b"\x02"
        self.save(obj, "")
        self.out += _STOP
        return bytes(self.out)

    # ----- primitives
    def _global(self, module: str, name: str) -> None:
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    def _put(self, obj) -> None:
        i = self.memo[id(obj)] = len(self.memo)
        self.keep.append(obj)
        self.out += b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i)

    def _get(self, obj) -> bool:
        i = self.memo.get(id(obj))
        if i is None:
            return False
        self.out += b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i)
        return True

    def _int(self, x: int) -> None:
        if 0 <= x < 256:
            self.out += b"K" + bytes([x])
        elif 0 <= x < 65536:
            self.out += b"M" + struct.pack("<H", x)
        elif -2**31 <= x < 2**31:
            self.out += b"J" + struct.pack("<i", x)
        else:
            n = (x.bit_length() + 8) // 8          # two's complement, room for the sign bit
            raw = x.to_bytes(n, "little", signed=True)
            self.out += (b"\x8a" + bytes([n]) if n < 256 else b"\x8b" + struct.pack("<i", n)) + raw

    def _str(self, s: str) -> None:
        raw = s.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(raw)) + raw

    def _tuple_of(self, items: list, path: str) -> None:
        if len(items) in _TUPLE_N:
            for i, x in enumerate(items):
                self.save(x, f"{path}[{i}]")
            self.out += _TUPLE_N[len(items)]
        elif not items:
            self.out += _EMPTY_TUPLE
        else:
            self.out += _MARK
            for i, x in enumerate(items):
                self.save(x, f"{path}[{i}]")
            self.out += _TUPLE

    def _reduce(self, module: str, name: str, args: list, path: str) -> None:
        self._global(module, name)
        self._tuple_of(args, path)
        self.out += _REDUCE

    def _items(self, pairs, path: str) -> None:
        pairs = list(pairs)
        for start in range(0, len(pairs), _BATCH):
            self.out += _MARK
            for k, v in pairs[start:start + _BATCH]:
                self.save(k, f"{path}[key {k!r}]")
                self.save(v, f"{path}[{k!r}]")
            self.out += _SETITEMS

    # ----- objects
    def save(self, obj, path: str) -> None:
        from .._device import device
        from ..nn.parameter import Parameter

        if obj is None:
            self.out += _NONE
        elif obj is True or obj is False or isinstance(obj, np.bool_):
            self.out += _TRUE if obj else _FALSE
        elif isinstance(obj, (int, np.integer)):
            self._int(int(obj))
        elif isinstance(obj, (float, np.floating)):
            self.out += b"G" + struct.pack(">d", float(obj))
        elif isinstance(obj, complex):
            self._reduce("builtins", "complex", [obj.real, obj.imag], path)
        elif isinstance(obj, str):
            self._str(obj)
        elif isinstance(obj, bytes):
            # protocol 2's spelling of bytes, which torch's weights_only reader allows
            self._reduce("_codecs", "encode", [obj.decode("latin1"), "latin1"], path)
        elif self._get(obj):
            return
        elif isinstance(obj, D.dtype):
            self._global("torch", obj._name)
        elif isinstance(obj, device):
            self._reduce("torch", "device", [obj.type] if obj.index is None else [obj.type, obj.index], path)
        elif isinstance(obj, Parameter):
            state = _attributes(obj)
            self._global("torch._utils", "_rebuild_parameter_with_state" if state else "_rebuild_parameter")
            self.out += _MARK
            self._tensor(obj, path, False)           # the Parameter's .data, which does not require grad
            self.out += _TRUE if obj.requires_grad else _FALSE
            self._reduce("collections", "OrderedDict", [], path)
            if state:
                self.save(state, path + ".__dict__")
            self.out += _TUPLE + _REDUCE
            self._put(obj)
        elif isinstance(obj, Tensor):
            state = _attributes(obj)
            if state:       # PyTorch's form for a tensor carrying Python attributes
                self._global("torch._tensor", "_rebuild_from_type_v2")
                self.out += _MARK
                self._global("torch._utils", "_rebuild_tensor_v2")
                self._global("torch", "Tensor")
                self._tensor(obj, path, args_only=True)
                self.save(state, path + ".__dict__")
                self.out += _TUPLE + _REDUCE
            else:
                self._tensor(obj, path)      # a non-leaf loads as a leaf that requires grad, as in PyTorch
            self._put(obj)
        elif isinstance(obj, Size):
            self._reduce("torch", "Size", [tuple(obj)], path)
        elif type(obj) in (OrderedDict, Counter):
            self._reduce("collections", type(obj).__name__, [], path)
            self._put(obj)
            self._items(obj.items(), path)
            if vars(obj):           # a state dict's _metadata: PyTorch pickles it as BUILD state
                self._items_state(obj, path)
        elif type(obj) is dict:
            self.out += _EMPTY_DICT
            self._put(obj)
            self._items(obj.items(), path)
        elif type(obj) is list:
            self.out += _EMPTY_LIST
            self._put(obj)
            for start in range(0, len(obj), _BATCH):
                self.out += _MARK
                for i, x in enumerate(obj[start:start + _BATCH], start):
                    self.save(x, f"{path}[{i}]")
                self.out += _APPENDS
        elif type(obj) is tuple:
            if id(obj) in self.busy:
                raise ValueError(f"ember.save: the tuple at {path or 'the top'} contains itself; it cannot be "
                                 "saved")
            self.busy.add(id(obj))
            self._tuple_of(list(obj), path)
            self.busy.discard(id(obj))
            self._put(obj)
        elif type(obj) is set:
            self._reduce("builtins", "set", [list(obj)], path)
            self._put(obj)
        elif self._user_object(obj, path):
            pass
        else:
            where = f" at {path}" if path else ""
            raise PicklingError(
                f"ember.save: cannot save an object of type {type(obj).__module__}.{type(obj).__qualname__}"
                f"{where}. ember writes only what torch.load(weights_only=True) reads back: tensors, Parameters, "
                "dict, OrderedDict, list, tuple, set, str, bytes, int, float, complex, bool, None, torch.Size, "
                "dtypes and devices, and instances of classes allowed with "
                "ember.serialization.add_safe_globals.")

    def _user_object(self, obj, path: str) -> bool:
        """An instance of a class the user allowed (``add_safe_globals``), written as pickle's protocol 2
        writes plain objects: ``cls.__new__(cls, *args)`` (NEWOBJ), then its state (BUILD). False when the
        class is not allowed or pickles itself some other way."""
        import copyreg
        cls = type(obj)
        names = [k for k, v in _user_allowed_globals().items() if v is cls]
        if not names:
            return False
        rv = obj.__reduce_ex__(2)
        if not (isinstance(rv, tuple) and 2 <= len(rv) <= 5 and rv[0] is copyreg.__newobj__
                and rv[1] and rv[1][0] is cls and all(x is None for x in rv[3:5])):
            return False
        module, _, name = names[0].rpartition(".")
        self._global(module, name)
        self._tuple_of(list(rv[1][1:]), path)
        self.out += b"\x81"                      # NEWOBJ
        self._put(obj)
        state = rv[2] if len(rv) > 2 else None
        if state is not None:
            self.save(state, path + ".__dict__")
            self.out += _BUILD
        return True

    def _items_state(self, obj, path: str) -> None:
        state = vars(obj)
        self.out += _EMPTY_DICT
        self._items(state.items(), path + ".__dict__")
        self.out += _BUILD

    def _tensor(self, t: Tensor, path: str, requires_grad: bool | None = None, args_only: bool = False) -> None:
        """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())`` (or only the
        tuple of its arguments)."""
        a = t._data
        if isinstance(a, np.generic):          # a 0-d result kept as a NumPy scalar
            a = np.asarray(a)
        if not isinstance(a, np.ndarray):
            raise TypeError(f"ember.save: the tensor at {path or 'the top'} is on device '{t.device}'; only cpu "
                            "tensors can be saved so far")
        key, dt, numel, offset, size, stride = self.storages.locate(a)
        if not args_only:
            self._global("torch._utils", "_rebuild_tensor_v2")
        self.out += _MARK
        # the persistent id: ('storage', torch.<Type>Storage, key, 'cpu', numel)
        self.out += _MARK
        self._str("storage")
        self._global("torch", _STORAGE_NAME[dt._name])
        self._str(key)
        self._str("cpu")
        self._int(numel)
        self.out += _TUPLE + _BINPERSID
        self._int(offset)
        self._tuple_of(list(size), path)
        self._tuple_of(list(stride), path)
        self.out += _TRUE if (t.requires_grad if requires_grad is None else requires_grad) else _FALSE
        self._reduce("collections", "OrderedDict", [], path)   # backward hooks: never saved
        self.out += _TUPLE if args_only else _TUPLE + _REDUCE


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

    ``torch.load(f, weights_only=True)`` reads the file back: tensors of every ember dtype (views of
    one tensor are stored once and load sharing memory), Parameters, dicts, OrderedDicts (with a
    state dict's ``_metadata``), lists, tuples, sets, strings, bytes, numbers, ``None``, ``Size``,
    dtypes. A view saves its whole memory block, as PyTorch saves a view's whole storage (``clone()``
    it first to save only its elements). Other objects raise ``TypeError`` before anything is
    written, since ``weights_only`` loading could not read them back. The pickle is always written
    in protocol 2 (``torch.save``'s default, the one ``weights_only`` reads); ``pickle_protocol``
    above 2 is accepted and changes nothing, since the pickle holds only small metadata.
    """
    import pickle

    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save: pickle_module is not supported: ember writes the pickle itself, with only "
                         "what torch.load(weights_only=True) reads")
    if not isinstance(pickle_protocol, int) or isinstance(pickle_protocol, bool) or not 2 <= pickle_protocol <= 5:
        raise ValueError(f"ember.save: pickle_protocol must be 2 to 5, got {pickle_protocol!r}")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ember.save writes only PyTorch's zip format (torch.save's default since 1.6); "
                                  "the legacy format (_use_new_zipfile_serialization=False) is not built")
    storages = _StorageTable()
    data_pkl = _Pickler(storages).dump(obj)       # any unsupported object raises here, before f is touched
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

    __slots__ = ("raw", "dtype", "key", "location")

    def __init__(self, raw: np.ndarray, dtype: D.dtype, key: str, location: str):
        self.raw, self.dtype, self.key, self.location = raw, dtype, key, location

    @property
    def device(self):
        from .._device import cpu
        return cpu

    def cpu(self) -> _Storage:
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
        return make(np.empty(size, dtype=dtype.np))
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
    return make(arr)


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

    if func not in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter) \
            or new_type not in (_TENSOR_CLASS, _PARAMETER_CLASS) or type(args) is not tuple:
        raise UnpicklingError(f"_rebuild_from_type_v2 only rebuilds tensors and Parameters, got {func!r}, "
                              f"{new_type!r}")
    t = func(*args)
    if new_type is _PARAMETER_CLASS and not isinstance(t, Parameter):
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


_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
               _rebuild_parameter_with_state, _rebuild_from_type_v2, _size, _device_ctor)


def _allowed_globals():
    """The globals a checkpoint may name, and what each stands for in ember."""
    from ._unpickler import BASIC_GLOBALS

    allowed: dict[str, Any] = dict(BASIC_GLOBALS)
    for f in _REBUILDERS[:6]:
        allowed[f"torch._utils.{f.__name__}"] = f
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
    """``map_location`` as a function (storage, location tag) -> storage; ember has only the cpu."""
    from .._device import device

    def on_cpu(storage: _Storage, location: str) -> _Storage:
        loc = str(location)
        if loc.startswith("cuda"):
            raise RuntimeError(_CUDA_MESSAGE)
        if loc != "cpu":
            raise RuntimeError(f"ember.load: storage '{storage.key}' was saved on device '{loc}', and ember has "
                               "only the 'cpu' device: pass map_location='cpu'")
        return storage

    def target(d) -> str:
        d = d if isinstance(d, str) else str(d)
        if device(d).type != "cpu":
            raise RuntimeError(f"ember.load: map_location={d!r}: ember has only the 'cpu' device")
        return "cpu"

    if map_location is None:
        return on_cpu
    if isinstance(map_location, dict):
        return lambda storage, location: on_cpu(storage, str(map_location.get(location, location)))
    if isinstance(map_location, str) or type(map_location).__name__ == "device":
        target(map_location)
        return lambda storage, location: storage
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
            return np.memmap(self.mmap_path, dtype=np.uint8, mode="c", offset=start, shape=(info.file_size,))
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


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load an object saved by ``torch.save`` (zip format) or ``ember.save``, never running code from it.

    The pickle is read by ember's weights-only unpickler, always: it builds tensors, Parameters,
    dicts, OrderedDicts, lists, tuples, sets, strings, bytes, numbers, ``None``, ``Size`` and dtypes,
    and raises ``pickle.UnpicklingError`` for anything else. ``weights_only=False`` is accepted with a
    warning and changes nothing (ember has no unsafe path). ``map_location``: ``None``, ``'cpu'``, a
    cpu device, a dict of location tags, or ``fn(storage, location)`` returning the storage or None;
    storages saved on another device need it, as on a CPU-only PyTorch. ``mmap=True`` (with a path)
    maps the storages from the file copy-on-write instead of reading them. Tensors that shared a
    storage when saved share memory again; Parameters keep ``requires_grad``. PyTorch's legacy
    (pre-1.6, non-zip) format and TorchScript archives are refused with a ``RuntimeError``; dtypes
    ember lacks (complex32, float8, qint8, ...) raise a ``RuntimeError`` naming them.
    """
    import io
    import pickle

    if pickle_module is not None and (weights_only is True or pickle_module is not pickle):
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified (ember.load "
                           "always uses its own weights-only unpickler)")
    unknown = set(pickle_load_args) - {"encoding"}
    if unknown:
        raise TypeError(f"ember.load: unexpected keyword arguments {sorted(unknown)} (only encoding= is "
                        "understood)")
    encoding = pickle_load_args.get("encoding", "utf-8")
    if weights_only is False:
        warnings.warn("ember.load(weights_only=False): ember always loads with its weights-only unpickler and "
                      "never runs code from a file; objects other than tensors, containers and plain values "
                      "still raise UnpicklingError", UserWarning, stacklevel=2)
    rule = _location_rule(map_location)

    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            return _load_from(fh, rule, path if mmap else None, encoding)
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
    return _load_from(fh, rule, None, encoding)


def _load_from(fh, rule, mmap_path: str | None, encoding: str):
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
    byteorder = sys.byteorder
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
        raw = archive.read(f"data/{key}", expected=numel * stype.dtype.itemsize)
        if byteorder != sys.byteorder and stype.dtype.itemsize > 1:
            raw.view(stype.dtype.np).byteswap(inplace=True)
        st = rule(_Storage(raw, stype.dtype, key, location), location)
        loaded[key] = st
        return st

    allowed, callables = _allowed()
    data = bytes(archive.read("data.pkl"))
    try:
        return WeightsUnpickler(data, allowed, callables, persistent_load, encoding,
                                user=_user_allowed_globals()).load()
    except UnpicklingError as e:
        raise UnpicklingError(
            f"Weights only load failed. ember.load reads only tensors, containers and plain values from a "
            f"checkpoint and never runs code from it; this file holds something else, or is corrupt.\n\n"
            f"WeightsUnpickler error: {e}") from None
