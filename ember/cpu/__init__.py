"""ember.cpu (torch.cpu): the CPU device's module: ``torch.cpu.amp`` and PyTorch's trivial device queries (its
streams, events and ``get_capabilities`` are not built)."""
from __future__ import annotations

from . import amp  # noqa: F401  (torch.cpu.amp)


def is_available() -> bool:
    """The CPU is always available."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """No-op: CPU ops run synchronously."""


def set_device(device) -> None:
    """No-op, as in PyTorch (it exists for device-agnostic code)."""
