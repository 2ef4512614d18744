"""Storages: the memory a tensor views (``Tensor.untyped_storage()``, ``Tensor.storage()``).

ember's tensors hold arrays; the array that owns a tensor's memory (its device's ``storage_root``: the end of a
NumPy view's chain of bases, a DeviceArray view's root) is its storage. Two tensors share a storage when their
roots are one array, so ``x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()`` for views, as in
PyTorch. A storage here is a handle on that root: sizes, pointers, bytes and sharing flags.
"""
from __future__ import annotations

import gc
import sys
import warnings
import weakref

from . import _dtype as D
from ._device import backend_of, cpu_backend, device_of, has_data
from ._tensor import Tensor

# roots that share_memory_() marked on a device without shared memory (its backend has no ``shared``): id -> ref
_SHARED: dict = {}


def shared_memory_of(root):
    """The shared-memory functions of the device of the storage ``root`` (devices/cpu/shared.py), or None."""
    be = backend_of(root)
    return getattr(be, "shared", None) if has_data(be) else None


def _is_shared(root) -> bool:
    shm = shared_memory_of(root)
    if shm is not None:
        return shm.is_shared(root)
    ref = _SHARED.get(id(root))
    return ref is not None and ref() is root


# sys.getrefcount of a storage that one array holds (a tensor's own array or a view's base), seen from
# _move_tensors: that holder, the callers' two names for it and getrefcount's argument
_ONE_HOLDER = 4


def _move_tensors(root, new_root, shm, first=None) -> None:
    """Every live tensor on the storage ``root`` now views the same elements of ``new_root`` (its copy), as all of
    a PyTorch storage's tensors follow it. ``first``: a tensor known to view it. Other tensors are looked for
    (a scan of the garbage collector's objects) only when something besides ``first`` holds the storage."""
    movers = [first] if first is not None else []
    if first is None or sys.getrefcount(root) > _ONE_HOLDER:
        be = backend_of(root)
        # (type(), not isinstance: some objects' __class__ is a property with effects, e.g. deprecation warnings)
        found = [o for o in gc.get_objects() if issubclass(type(o), Tensor) and o is not first]
        movers += [o for o in found if isinstance(getattr(o, "_data", None), be.array_types)
                   and be.storage_root(o._data) is root]
    for t in movers:
        t._data = shm.view_like(t._data, new_root)


def _share(root, first=None):
    """The storage ``root`` in shared memory (its tensors follow it there); marked where the device has none."""
    if not has_data(backend_of(root)):
        raise RuntimeError("_share_fd_: only available on CPU")   # PyTorch's, for 'meta'
    shm = shared_memory_of(root)
    if shm is None:
        _SHARED[id(root)] = weakref.ref(root, lambda _r, k=id(root): _SHARED.pop(k, None))
        return root
    if shm.is_shared(root):
        return root
    new_root = shm.share_root(root)
    _move_tensors(root, new_root, shm, first)
    return new_root


class UntypedStorage:
    """A tensor's memory as bytes (``torch.UntypedStorage``): ``Tensor.untyped_storage()`` returns one."""

    __slots__ = ("_root",)

    def __init__(self, size: int = 0, *, device=None):
        """``UntypedStorage(n)``: ``n`` new bytes (zeros) on the cpu."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise TypeError(f"UntypedStorage(): expected a non-negative int size, got {size!r}")
        if device not in (None, "cpu") and getattr(device, "type", None) != "cpu":
            raise RuntimeError("ember: UntypedStorage(size) makes cpu storages only")
        self._root = cpu_backend().zeros((size,), D.uint8.np)

    @classmethod
    def _of(cls, root) -> UntypedStorage:
        """The storage whose memory is the array ``root`` (a device's storage_root)."""
        s = object.__new__(cls)
        s._root = root
        return s

    @property
    def _backend(self):
        return backend_of(self._root)

    @property
    def device(self):
        return device_of(self._root)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def nbytes(self) -> int:
        return self._backend.storage_nbytes(self._root) if has_data(self._backend) else \
            self._root.size * self._root.dtype.itemsize

    def size(self) -> int:
        """The size in bytes (an untyped storage's element is a byte)."""
        return self.nbytes()

    __len__ = size

    @staticmethod
    def element_size() -> int:
        return 1

    def data_ptr(self) -> int:
        be = self._backend
        return be.data_ptr(self._root) if has_data(be) else 0

    def untyped(self) -> UntypedStorage:
        return self

    def is_shared(self) -> bool:
        return _is_shared(self._root)

    def share_memory_(self) -> UntypedStorage:
        """Moves the bytes to shared memory, which other processes map (``ember.multiprocessing``); the tensors
        viewing them move with them."""
        self._root = _share(self._root)
        return self

    @staticmethod
    def is_pinned(device=None) -> bool:
        return False

    @staticmethod
    def is_sparse() -> bool:
        return False

    def get_device(self) -> int:
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    def _bytes(self):
        return self._backend.storage_bytes(self._root)

    def tolist(self) -> list:
        return [int(b) for b in self._bytes().tolist()]

    def __getitem__(self, i):
        if isinstance(i, slice):
            raise NotImplementedError("ember: slicing a storage is not supported")
        n = self.nbytes()
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return int(self._bytes()[i])

    def __iter__(self):
        return iter(self.tolist())

    def __eq__(self, other) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        body = "\n".join(f" {b}" for b in self.tolist()) if has_data(self._backend) else " ..."
        return f"{body}\n[torch.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]"

    __str__ = __repr__


_TYPED_WARNING = ("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()")


def warn_typed_storage(stacklevel: int = 3) -> None:
    """PyTorch's (once-per-process in PyTorch: ember leaves that to the warnings filter) deprecation warning."""
    warnings.warn(_TYPED_WARNING, UserWarning, stacklevel=stacklevel)


class TypedStorage:
    """A storage viewed as elements of one dtype (``torch.TypedStorage``, deprecated in PyTorch)."""

    __slots__ = ("_untyped_storage", "dtype")
    is_sparse = False

    def __init__(self, untyped: UntypedStorage, dtype: D.dtype):
        self._untyped_storage = untyped
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped_storage.device

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    __len__ = size

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def share_memory_(self) -> TypedStorage:
        self._untyped_storage.share_memory_()
        return self

    @staticmethod
    def is_pinned(device=None) -> bool:
        return False

    def get_device(self) -> int:
        return self._untyped_storage.get_device()

    def _values(self):
        return self._untyped_storage._bytes().view(self.dtype.np)

    def tolist(self) -> list:
        return self._values().tolist()

    def __getitem__(self, i):
        return self._values()[i].item()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size {self.size()}]"

    __str__ = __repr__


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage (``torch.is_storage``)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))
