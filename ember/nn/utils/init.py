"""torch.nn.utils.skip_init: build a module without spending random numbers on its initial values."""
from __future__ import annotations

from typing import Any

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any):
    """Instantiate ``module_cls(*args, **kwargs)`` with its parameters left uninitialised (their values are
    unspecified: fill them yourself). PyTorch builds on the 'meta' device and allocates with ``to_empty``;
    ember has no meta device, so it builds normally and then rewinds the global generator, so that (as in
    PyTorch) the random stream is untouched: later draws equal PyTorch's."""
    import inspect

    from ...ops import random as _random
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    state = _random.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        _random.set_rng_state(state)
