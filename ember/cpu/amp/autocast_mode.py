"""torch.cpu.amp.autocast: ``torch.amp.autocast('cpu', ...)`` under its deprecated name."""
from __future__ import annotations

import warnings

from ...amp import autocast_mode

__all__ = ["autocast"]


class autocast(autocast_mode.autocast):
    """See ``torch.autocast``. Deprecated (FutureWarning): use ``torch.amp.autocast('cpu', ...)``."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        if dtype is None:   # PyTorch's default argument is torch.bfloat16 (resolved here: see amp.autocast_mode)
            dtype = autocast_mode._resolve("bfloat16")
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

