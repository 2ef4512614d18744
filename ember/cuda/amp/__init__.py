"""ember.cuda.amp (torch.cuda.amp): PyTorch's deprecated CUDA forms of autocast, GradScaler, custom_fwd/custom_bwd.
ember has no CUDA, so autocast and GradScaler warn and disable themselves, as on a CPU-only PyTorch."""
from __future__ import annotations

from .autocast_mode import autocast, custom_bwd, custom_fwd
from .common import amp_definitely_not_available
from .grad_scaler import GradScaler

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]
