"""ember.distributed: what a single-process script touches of torch.distributed.

ember runs in one process. ``is_available()`` is False (process groups are not built yet; issue 22 builds them), so
scripts that guard their distributed code (``if dist.is_available() and dist.is_initialized()``, nanoGPT's
``ddp = int(os.environ.get('RANK', -1)) != -1``) run unchanged. The functions that need a process group raise
PyTorch's error for a program that never called ``init_process_group``.
"""
from __future__ import annotations

from enum import Enum
from typing import Any

__all__ = ["is_available", "is_initialized", "init_process_group", "destroy_process_group", "get_rank",
           "get_world_size", "get_backend", "barrier", "all_reduce", "broadcast", "all_gather", "reduce",
           "is_torchelastic_launched", "is_nccl_available", "is_gloo_available", "is_mpi_available", "ReduceOp"]

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call init_process_group.")


def is_available() -> bool:
    """False: ember has no process groups (single-process only, for now)."""
    return False


def is_initialized() -> bool:
    """Whether the default process group is initialised: never, in ember."""
    return False


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False


class ReduceOp:
    """The reduction of a collective (``dist.ReduceOp.SUM``), as PyTorch names them; scripts name them in calls
    that need a process group."""

    class RedOpType(Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9


for _op in ReduceOp.RedOpType:
    if _op.name != "UNUSED":
        setattr(ReduceOp, _op.name, _op)


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchrun (PyTorch's test: TORCHELASTIC_RUN_ID is set)."""
    import os
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Refused: ember runs in one process (``is_available()`` is False)."""
    raise RuntimeError("ember.distributed.init_process_group: process groups are not built in ember (it runs in one "
                       "process; torch.distributed.is_available() is False). Run the script without torchrun / "
                       "RANK and WORLD_SIZE set.")


def _default_group(group: Any = None) -> None:
    raise ValueError(_NOT_INITIALIZED)


def destroy_process_group(group: Any = None) -> None:
    """PyTorch's error: there is no process group to destroy."""
    raise AssertionError("Process group cannot be None")


def get_rank(group: Any = None) -> int:
    _default_group(group)


def get_world_size(group: Any = None) -> int:
    _default_group(group)


def get_backend(group: Any = None) -> str:
    _default_group(group)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> None:
    _default_group(group)


def all_reduce(tensor: Any, op: Any = None, group: Any = None, async_op: bool = False) -> None:
    _default_group(group)


def broadcast(tensor: Any, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> None:
    _default_group(group)


def all_gather(tensor_list: Any, tensor: Any, group: Any = None, async_op: bool = False) -> None:
    _default_group(group)


def reduce(tensor: Any, dst: int | None = None, op: Any = None, group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> None:
    _default_group(group)
