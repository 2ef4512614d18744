"""ember.cpu.amp (torch.cpu.amp): PyTorch's deprecated CPU forms of autocast and GradScaler."""
from __future__ import annotations

from .autocast_mode import autocast
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler"]
