"""``torch.multiprocessing``: Python's ``multiprocessing`` whose pickling sends tensors through shared memory.

Everything of the standard module is here under its own name (``Process``, ``Queue``, ``SimpleQueue``, ``Pool``,
``get_context``, ``set_start_method``, ...), plus PyTorch's ``spawn``/``start_processes`` and sharing strategies.
Loading this package registers the tensor and storage reducers (``reductions.py``): a tensor put on a queue or
passed to a spawned process moves to shared memory and the receiver maps the same memory. ``Tensor.share_memory_()``
and ``nn.Module.share_memory()`` move tensors there beforehand, so processes training one model in place (Hogwild)
see each other's updates.
"""
from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, SpawnContext,  # noqa: F401
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"] + list(multiprocessing.__all__)

# file_descriptor: a storage travels as its memory file's descriptor (Linux). file_system (PyTorch: by file name)
# is accepted; ember passes descriptors under both names.
if sys.platform in ("darwin", "win32"):
    _all_sharing_strategies = {"file_system"}
    _sharing_strategy = "file_system"
else:
    _all_sharing_strategies = {"file_descriptor", "file_system"}
    _sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Sets how cpu tensors are shared (one of ``get_all_sharing_strategies()``)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The current strategy for sharing cpu tensors."""
    return _sharing_strategy


def get_all_sharing_strategies() -> set:
    """The strategies this system supports."""
    return _all_sharing_strategies


init_reductions()
