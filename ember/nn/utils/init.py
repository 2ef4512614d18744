"""torch.nn.utils.skip_init: build a module without spending random numbers on its initial values."""
from __future__ import annotations

from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any):
    """Instantiate ``module_cls(*args, **kwargs)`` with its parameters left uninitialised (their values are
    unspecified: fill them yourself). As PyTorch: built on the 'meta' device, where nothing is drawn (the random
    stream is untouched) or allocated, then given memory on ``device`` with ``to_empty``."""
    import inspect

    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
