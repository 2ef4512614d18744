"""ember.special: special functions (torch.special); every function is registered in its family file."""
from __future__ import annotations

from .ops._registry import SUBMODULES as _SUBMODULES

globals().update(_SUBMODULES["special"])
