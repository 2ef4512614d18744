"""ember.fft: discrete Fourier transforms (torch.fft); every function is registered in ember/ops/fft.py."""
from __future__ import annotations

from .ops._registry import SUBMODULES as _SUBMODULES

globals().update(_SUBMODULES["fft"])
