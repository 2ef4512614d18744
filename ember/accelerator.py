"""torch.accelerator: the device-generic accelerator API, as a PyTorch build without an accelerator answers it.

ember computes on the CPU only, so ``is_available()`` is False, ``device_count()`` 0 and
``current_accelerator()`` None (scripts then choose ``torch.device("cpu")``); everything that needs an
accelerator raises PyTorch's RuntimeError.
"""
from __future__ import annotations

import warnings
from typing import Any

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
           "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
           "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _unavailable(*args: Any, **kwargs: Any):
    raise RuntimeError(_NONE)


def is_available() -> bool:
    """False: ember has no accelerator."""
    return False


def device_count() -> int:
    """0: ember has no accelerator."""
    return 0


def current_accelerator(check_available: bool = False) -> None:
    """None: no accelerator (PyTorch's answer in a CPU-only build)."""
    return None


def current_device_index() -> int:
    """Raises: there is no accelerator device."""
    return _unavailable()


def current_device_idx() -> int:
    """Deprecated alias of :func:`current_device_index`."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device: Any, /) -> None:
    """Raises: there is no accelerator device."""
    _unavailable()


def set_device_idx(device: Any, /) -> None:
    """Deprecated alias of :func:`set_device_index`."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def get_device_capability(device: Any = None, /) -> dict:
    """Raises: there is no accelerator device (a CPU device is refused as not an accelerator)."""
    if device is not None and str(getattr(device, "type", device)).split(":")[0] == "cpu":
        raise RuntimeError("Accelerator expected")
    return _unavailable()


class device_index:
    """Context manager selecting an accelerator device; ``device_index(None)`` does nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device

    def __enter__(self) -> None:
        if self.idx is not None:
            _unavailable()

    def __exit__(self, *exc: Any) -> None:
        return None


class Graph:
    """Accelerator graph capture: needs an accelerator."""

    def __init__(self, keep_graph: bool = False, *, pool: Any = None, capture_error_mode: str = "default") -> None:
        _unavailable()


def _device_query(name: str, doc: str):
    def query(device_index: Any = None, /) -> Any:
        return _unavailable()
    query.__name__ = query.__qualname__ = name
    query.__doc__ = doc + " Raises: there is no accelerator device."
    return query


current_stream = _device_query("current_stream", "The current stream of the device.")
synchronize = _device_query("synchronize", "Wait for the device's work to finish.")
get_memory_info = _device_query("get_memory_info", "Free and total memory of the device.")
memory_allocated = _device_query("memory_allocated", "Memory held by tensors on the device.")
max_memory_allocated = _device_query("max_memory_allocated", "Peak memory held by tensors on the device.")
memory_reserved = _device_query("memory_reserved", "Memory held by the device's caching allocator.")
max_memory_reserved = _device_query("max_memory_reserved", "Peak memory held by the caching allocator.")
memory_stats = _device_query("memory_stats", "The caching allocator's statistics.")
reset_accumulated_memory_stats = _device_query("reset_accumulated_memory_stats",
                                               "Reset the allocator's accumulated statistics.")
reset_peak_memory_stats = _device_query("reset_peak_memory_stats", "Reset the allocator's peak statistics.")


def empty_cache() -> None:
    """Raises: there is no accelerator device."""
    _unavailable()


def empty_host_cache() -> None:
    """Raises: there is no accelerator device."""
    _unavailable()


def set_stream(stream: Any) -> None:
    """Raises: there is no accelerator device."""
    _unavailable()
