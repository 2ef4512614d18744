"""Shared memory for cpu storages (``Tensor.share_memory_()``, tensors sent between processes).

A shared storage is a NumPy array over a ``_Segment``: an mmap (MAP_SHARED) of an anonymous memory file
(``memfd_create``; elsewhere an unlinked temporary file) whose descriptor stays open while the segment lives, so
it can be handed to another process (multiprocessing's ``DupFd``: inherited by a spawned child, or passed over a
Unix socket). Every process that maps the file writes the same bytes: PyTorch's "file_descriptor" strategy.
Each segment has a key (creating pid, serial number) that travels with its descriptor, so a process maps one
segment once however often it receives it, and tensors received separately that share a storage share it here too.
"""
from __future__ import annotations

import itertools
import mmap
import os
import tempfile
import threading
import weakref

import numpy as np

from .shape import data_ptr, storage_root

_serial = itertools.count()
_lock = threading.Lock()
_ATTACHED: dict = {}   # key -> weakref to the root array of a segment this process mapped


class _Segment(mmap.mmap):
    """A shared mapping that knows its memory file's descriptor and its key."""

    fd: int
    key: tuple
    nbytes: int


def _new_file(nbytes: int) -> int:
    """A descriptor of a fresh memory file of ``nbytes`` (at least 1: mmap refuses empty files)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC)
    else:
        fd, path = tempfile.mkstemp(prefix="ember-shared-")
        os.unlink(path)   # the file lives as long as a descriptor or a mapping of it
    os.ftruncate(fd, max(nbytes, 1))
    return fd


def _map(fd: int, nbytes: int, key: tuple) -> _Segment:
    seg = _Segment(fd, max(nbytes, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    seg.fd, seg.key, seg.nbytes = fd, key, nbytes
    weakref.finalize(seg, os.close, fd)   # the descriptor goes with the last view of the mapping
    return seg


def _root_over(seg: _Segment, dtype, size: int) -> np.ndarray:
    """The storage array of a segment: ``size`` elements of ``dtype`` in one row (tensors view it by byte offset
    and strides, so the row keeps the memory order of the storage it copies)."""
    return np.ndarray((size,), dtype=dtype, buffer=seg)


def _remember(root) -> np.ndarray:
    _ATTACHED[root.base.key] = weakref.ref(root, lambda _r, k=root.base.key: _ATTACHED.pop(k, None))
    return root


def is_shared(root) -> bool:
    """Whether the storage ``root`` lives in shared memory."""
    return isinstance(root.base, _Segment)


def share_root(root) -> np.ndarray:
    """``root`` (a storage: a C- or Fortran-contiguous array) itself if it is shared, else a copy of its bytes in
    a new shared segment, as one row of its dtype in its memory order."""
    if is_shared(root):
        return root
    seg = _map(_new_file(root.nbytes), root.nbytes, (os.getpid(), next(_serial)))
    new = _root_over(seg, root.dtype, root.size)
    np.copyto(new, root.ravel(order="K"))
    with _lock:
        return _remember(new)


def view_like(x, new_root) -> np.ndarray:
    """``x``'s layout (shape, strides, byte offset in its storage) over the storage ``new_root``."""
    return view_at(new_root, x.dtype, x.shape, x.strides, data_ptr(x) - data_ptr(storage_root(x)))


def view_at(root, dtype, shape, strides, offset: int) -> np.ndarray:
    """The array of ``dtype``, ``shape`` and ``strides`` (bytes) at byte ``offset`` of the storage ``root``."""
    return np.ndarray(shape, dtype=dtype, buffer=root, offset=offset, strides=strides)


def handle(x) -> tuple:
    """(descriptor, layout) of the array ``x`` on a shared storage: what another process needs to map the storage
    (``attach``) and view it as ``x`` (``view_at``). The descriptor stays this process's: the sender wraps it for
    passing (multiprocessing's ``DupFd``); the layout pickles."""
    root = storage_root(x)
    seg = root.base
    storage = (seg.key, seg.nbytes, root.dtype, root.size)
    return seg.fd, (storage, (x.dtype, x.shape, x.strides, data_ptr(x) - data_ptr(root)))


def from_handle(fd: int, layout: tuple):
    """The array that ``handle`` described, over this process's mapping of the storage received as ``fd``."""
    storage, view = layout
    return view_at(attach(fd, *storage), *view)


def attach(fd: int, key: tuple, nbytes: int, dtype, size: int) -> np.ndarray:
    """The storage of a segment received as the descriptor ``fd`` (which the segment then keeps); mapped once per
    process: a segment already mapped here is reused (and a second descriptor of it closed)."""
    with _lock:
        ref = _ATTACHED.get(key)
        root = ref() if ref is not None else None
        if root is not None:
            # a descriptor of its own (passed over a socket) goes; the spawn start method hands a child the very
            # descriptor number the segment already keeps, once per tensor that names it: that one stays
            if fd != root.base.fd:
                os.close(fd)
            return root
        return _remember(_root_over(_map(fd, nbytes, key), dtype, size))
