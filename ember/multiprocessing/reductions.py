"""How tensors and storages cross process boundaries: by shared memory, not by value.

``init_reductions()`` registers reducers with multiprocessing's ``ForkingPickler`` (what its queues, pipes,
pools and the spawn start method pickle with). A cpu tensor is moved to shared memory (``share_memory_()``, a
no-op when it is there already) and travels as its storage's memory-file descriptor plus its layout; the
receiver maps the same memory, so writes on either side are seen by both, as with PyTorch's "file_descriptor"
strategy. The sender must be alive when the receiver unpickles (its descriptor is handed over by multiprocessing's
``DupFd``). Tensors of a device without shared memory travel by value. Plain ``pickle`` is unaffected.
"""
from __future__ import annotations

import multiprocessing.context as _context
import multiprocessing.reduction as _reduction
import weakref

from .._device import cpu_backend
from .._storage import TypedStorage, UntypedStorage, shared_memory_of
from .._tensor import Tensor, _rebuild
from ..nn.parameter import Parameter, _rebuild_parameter

try:   # loaded now, not in a forked child while a queue's feeder thread pickles (as PyTorch does)
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:  # pragma: no cover
    pass

__all__ = ["init_reductions", "reduce_tensor", "reduce_storage", "rebuild_tensor", "rebuild_storage"]

_NON_LEAF = ("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
             "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
             "before serializing (e.g., putting it on the queue).")


class _Inherited:
    """A descriptor a spawned child inherits under its own number (already passed for another tensor)."""

    def __init__(self, fd: int):
        self.fd = fd

    def detach(self) -> int:
        return self.fd


_PASSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # the process being started -> fds passed


def _fd_for_receiver(fd: int):
    """What carries ``fd`` to the receiver: multiprocessing's ``DupFd`` (a spawned child inherits it; another
    process gets it over a socket), once per descriptor for a child being started (it refuses a repeated one)."""
    popen = _context.get_spawning_popen()
    if popen is not None:
        passed = _PASSED.setdefault(popen, set())
        if fd in passed:
            return _Inherited(fd)
        passed.add(fd)
    return _reduction.DupFd(fd)


def rebuild_tensor(cls: type, fd_holder, layout: tuple, requires_grad: bool) -> Tensor:
    """The receiving side of ``reduce_tensor``: a tensor (or Parameter) over the sender's shared memory."""
    data = cpu_backend().shared.from_handle(fd_holder.detach(), layout)
    if cls is Parameter:
        return _rebuild_parameter(_rebuild(data, False), requires_grad)
    return _rebuild(data, requires_grad)


def reduce_tensor(t: Tensor):
    """Moves ``t`` to shared memory and returns how the receiver rebuilds it there."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(_NON_LEAF)
    t.share_memory_()
    shm = shared_memory_of(t.untyped_storage()._root)
    if shm is None or not shm.is_shared(t.untyped_storage()._root):
        return t.__reduce_ex__(4)   # a device without shared memory: by value
    fd, layout = shm.handle(t._data)
    return rebuild_tensor, (type(t), _fd_for_receiver(fd), layout, t.requires_grad)


def rebuild_storage(cls: type, fd_holder, layout: tuple):
    """The receiving side of ``reduce_storage``."""
    root = cpu_backend().shared.attach(fd_holder.detach(), *layout[0])
    untyped = UntypedStorage._of(root)
    return untyped if cls is UntypedStorage else cls(untyped, layout[1])


def reduce_storage(storage):
    """Moves a storage to shared memory and returns how the receiver maps it."""
    untyped = storage.untyped().share_memory_()
    shm = shared_memory_of(untyped._root)
    if shm is None:
        raise RuntimeError(f"ember: a storage on device {untyped.device} cannot be sent to another process")
    fd, layout = shm.handle(untyped._root)
    dtype = storage.dtype if isinstance(storage, TypedStorage) else None
    return rebuild_storage, (type(storage), _fd_for_receiver(fd), (layout[0], dtype))


def init_reductions() -> None:
    """Registers the reducers with multiprocessing's ForkingPickler (done when ember.multiprocessing loads)."""
    _reduction.register(Tensor, reduce_tensor)
    _reduction.register(Parameter, reduce_tensor)
    _reduction.register(UntypedStorage, reduce_storage)
    _reduction.register(TypedStorage, reduce_storage)
