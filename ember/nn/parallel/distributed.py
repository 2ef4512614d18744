"""DistributedDataParallel: importable; constructing one needs a default process group, which ember does not have
yet (issue 22), so it raises PyTorch's error for a program that never called init_process_group."""
from __future__ import annotations

from typing import Any

from ...distributed import _NOT_INITIALIZED
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Raises PyTorch's ValueError: there is no default process group (``ember.distributed.is_available()`` is
    False)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: Any = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, delay_all_reduce_named_params:
                 Any = None, param_to_hook_all_reduce: Any = None, mixed_precision: Any = None,
                 device_mesh: Any = None, skip_all_reduce_unused_params: bool = False) -> None:
        super().__init__()
        raise ValueError(_NOT_INITIALIZED)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:      # never reached: __init__ raises
        raise RuntimeError("DistributedDataParallel has no process group")
