"""torch.nn.attention: choosing the kernel of ``scaled_dot_product_attention``.

ember has one kernel, the math path.  ``sdpa_kernel`` sets the same switches as PyTorch's (also read by
``ember.backends.cuda.*_sdp_enabled``), and ``scaled_dot_product_attention`` behaves as PyTorch's CPU dispatch
does: on the CPU PyTorch has a flash kernel and the math kernel, so with neither enabled it raises "No viable
backend ...", and with only flash enabled it refuses (warning why, then "No available kernel") the inputs its CPU
flash kernel does not take; everything else is computed, by ember's math kernel.  The flash-attention
implementation registry (FA3/FA4) is PyTorch's: the two built-in entries need CUDA kernels and fail to activate
here.  ``flex_attention`` is not built.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from ...backends import cuda as _cuda
from ...backends.cuda import SDPAParams, SDPBackend, can_use_efficient_attention, can_use_flash_attention

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

WARN_FOR_UNFUSED_KERNELS = False

# SDPBackend member name -> the switch in _cuda._sdp (PyTorch's order)
_SWITCHES = {"CUDNN_ATTENTION": "cudnn", "FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "mem_efficient",
             "MATH": "math", "OVERRIDEABLE": "overrideable"}


def _enabled_backends(with_priority: bool = False) -> list[SDPBackend]:
    """The backends switched on, in PyTorch's listing order (or in priority order)."""
    on = [SDPBackend[name] for name, switch in _SWITCHES.items() if _cuda._sdp[switch]]
    if with_priority:
        on.sort(key=lambda b: _cuda._sdp_priority.index(int(b)))
    return on


def _set_backends(backends: list[SDPBackend], set_priority: bool = False) -> None:
    for name, switch in _SWITCHES.items():
        _cuda._sdp[switch] = SDPBackend[name] in backends
    if set_priority:
        order = [int(b) for b in backends]
        order += [b for b in _cuda._sdp_priority if b not in order]
        _cuda._sdp_priority[:] = order


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False) -> Iterator[dict]:
    """Within the block, only ``backends`` may run ``scaled_dot_product_attention`` (with ``set_priority``,
    tried in the order given); the previous switches come back on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    backends = list(dict.fromkeys([backends] if isinstance(backends, SDPBackend) else backends))
    previous = _enabled_backends(with_priority=set_priority)
    try:
        _set_backends(backends, set_priority)
        yield {}
    finally:
        _set_backends(previous, set_priority)


# ----- the flash-attention implementation registry ----------------------------------------------------------

logger = logging.getLogger(__name__)

_FLASH_ATTENTION_IMPLS: dict[str, Callable[..., Any]] = {}
_FLASH_ATTENTION_ACTIVE: tuple[str, Any] | None = None


def register_flash_attention_impl(impl: str, *, register_fn: Callable[..., Any]) -> None:
    """Make ``impl`` activatable: ``register_fn()`` installs it and returns a handle with ``remove()`` (or None)."""
    _FLASH_ATTENTION_IMPLS[impl] = register_fn


def activate_flash_attention_impl(impl: str) -> None:
    """Restore the default, then install the registered implementation ``impl``."""
    global _FLASH_ATTENTION_ACTIVE
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _FLASH_ATTENTION_IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. "
                         f"Available implementations: {list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _FLASH_ATTENTION_ACTIVE = (impl, handle)


def list_flash_attention_impls() -> list[str]:
    """The registered implementation names, sorted."""
    return sorted(_FLASH_ATTENTION_IMPLS)


def current_flash_attention_impl() -> str | None:
    """The active implementation's name, or None for the default."""
    return None if _FLASH_ATTENTION_ACTIVE is None else _FLASH_ATTENTION_ACTIVE[0]


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Remove the active implementation (logging a warning when none is active)."""
    global _FLASH_ATTENTION_ACTIVE
    if _FLASH_ATTENTION_ACTIVE is not None:
        _FLASH_ATTENTION_ACTIVE[1].remove()
    elif _raise_warn:
        logger.warning("Trying to restore default FA2 impl when no custom impl was activated")
    _FLASH_ATTENTION_ACTIVE = None


def _cuda_impl(name: str, module_path: str) -> Callable[..., Any]:
    """PyTorch's built-in FA3/FA4 entries: they import the kernels' package (failing as PyTorch's when it is
    missing), then need CUDA, which ember has not."""
    def register_fn(module_path: str = module_path) -> Any:
        importlib.import_module(module_path)
        raise RuntimeError(f"{name} flash attention registers CUDA kernels; ember has no CUDA backend")
    register_fn.__name__ = f"register_flash_attention_{name.lower()}"
    return register_fn


register_flash_attention_impl("FA3", register_fn=_cuda_impl("FA3", "flash_attn_interface"))
register_flash_attention_impl("FA4", register_fn=_cuda_impl("FA4", "flash_attn.cute.interface"))

SDPBackend.__module__ = __name__
