"""ember.distributed: torch.distributed's process groups and collectives, on MPI (mpi4py).

Importing it starts nothing: mpi4py (and MPI) load when ``init_process_group`` makes a group, and without mpi4py
``is_available()`` is False while the single-process parts of a script run. Every backend name ("gloo", "mpi",
"nccl") runs on MPI. Launch with ``python -m ember.distributed.run --nproc-per-node N script.py`` (torchrun's
arguments) or ``mpiexec -n N python script.py``; under an MPI launcher the environment variables torchrun sets
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE) are filled in from MPI's when missing, so scripts that read them
before ``init_process_group`` (nanoGPT: ``int(os.environ.get('RANK', -1))``) see their rank.
"""
from __future__ import annotations

import os as _os

__all__ = ["Backend", "BuiltinCommHookType", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
           "FileStore", "GradBucket", "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup",
           "QueueEmptyError", "ReduceOp", "Store", "TCPStore", "Work", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv",
           "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "gather_object", "get_backend",
           "get_default_backend_for_device", "get_global_rank", "get_group_rank", "get_process_group_ranks",
           "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
           "is_backend_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "is_ucc_available", "is_xccl_available", "isend", "monitored_barrier",
           "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list",
           "send"]

from ._errors import _NOT_INITIALIZED  # noqa: E402  (PyTorch's message; ember.nn.parallel's DDP raises it too)
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024   # DistributedDataParallel's first gradient bucket (PyTorch's 1 MiB)
_LAZY = set(__all__) | {"default_pg_timeout"}


def __getattr__(name: str):
    """The API from distributed_c10d, loaded on first use (``import ember`` does not pay for it)."""
    if name in ("optim", "algorithms"):   # torch.distributed.optim (ZeroRedundancyOptimizer), .algorithms (DDP's
        # communication hooks): subpackages loaded on first use
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        from . import distributed_c10d
        value = distributed_c10d.GroupMember if name == "group" else getattr(distributed_c10d, name)
        if name != "default_pg_timeout":
            globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Open MPI's, MPICH's (hydra) and PMIx's names for the rank, the world size, the local rank and local size.
_MPI_ENV = {"RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"),
            "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
            "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
            "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")}


def _fill_env_from_mpi() -> None:
    """Under an MPI launcher, torchrun's variables from MPI's where the launcher did not set them."""
    if _os.environ.get("EMBER_DIST_LAUNCHED") or not any(k in _os.environ for k in _MPI_ENV["WORLD_SIZE"]):
        return
    for var, names in _MPI_ENV.items():
        for n in names:
            if n in _os.environ and var not in _os.environ:
                _os.environ[var] = _os.environ[n]
                break


_fill_env_from_mpi()
