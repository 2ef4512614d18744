"""ember.amp (torch.amp): automatic mixed precision: ``autocast`` regions and ``GradScaler``."""
from __future__ import annotations

from . import autocast_mode, grad_scaler  # noqa: F401  (torch.amp.autocast_mode, torch.amp.grad_scaler)
from .autocast_mode import _enter_autocast, _exit_autocast, autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

_enter_autocast, _exit_autocast  # noqa: B018  (torch.amp exports them too)
