"""ember.cuda: no CUDA backend yet (a CuPy backend is a later issue). What a CPU-only PyTorch does is
mirrored: seeding and cache calls are harmless no-ops, queries of a device raise its AssertionError."""
from __future__ import annotations

from .._device import no_cuda


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def manual_seed(seed: int) -> None:
    """No-op without CUDA, as in PyTorch (which defers it until CUDA starts)."""


def manual_seed_all(seed: int) -> None:
    """No-op without CUDA, as in PyTorch."""


def seed() -> None:
    """No-op without CUDA, as in PyTorch."""


def seed_all() -> None:
    """No-op without CUDA, as in PyTorch."""


def empty_cache() -> None:
    """No-op: there is no CUDA cache."""


def set_rng_state(new_state, device="cuda") -> None:
    """No-op without CUDA, as in PyTorch (which defers it until CUDA starts)."""


def set_rng_state_all(new_states) -> None:
    """No-op without CUDA, as in PyTorch."""


def get_rng_state_all() -> list:
    return []


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def _needs_cuda(*args, **kwargs):
    raise no_cuda()


# Queries of a device: PyTorch without CUDA raises AssertionError("Torch not compiled with CUDA enabled").
synchronize = get_rng_state = initial_seed = current_device = get_device_name = _needs_cuda
get_device_capability = get_device_properties = current_stream = mem_get_info = ipc_collect = _needs_cuda
set_device = _needs_cuda
