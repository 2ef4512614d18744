"""DataParallel and data_parallel as PyTorch runs them on a machine without GPUs: the module itself, called in
this process (ember has only the CPU)."""
from __future__ import annotations

from typing import Any

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Holds ``module`` (state dict keys ``module.<name>``, as PyTorch's) and calls it: with no GPU,
    PyTorch's DataParallel replicates nothing (``device_ids == []``)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list = []
        self.dim = dim
        self.output_device = None
        self.src_device_obj = None

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                  module_kwargs: Any = None) -> Any:
    """``module(*inputs, **module_kwargs)``: what PyTorch's data_parallel does with no GPU."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
