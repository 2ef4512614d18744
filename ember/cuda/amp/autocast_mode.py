"""torch.cuda.amp.autocast, custom_fwd, custom_bwd: the ``torch.amp`` forms for 'cuda' under their deprecated
names (FutureWarning)."""
from __future__ import annotations

import functools
import warnings

from ... import _dtype
from ...amp import autocast_mode

__all__ = ["autocast", "custom_fwd", "custom_bwd"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`torch.cuda.amp.{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning,
                  stacklevel=3)


class autocast(autocast_mode.autocast):
    """See ``torch.autocast``. Deprecated: use ``torch.amp.autocast('cuda', ...)``."""

    def __init__(self, enabled: bool = True, dtype=_dtype.float16, cache_enabled: bool = True):
        _deprecated("autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Deprecated: use ``torch.amp.custom_fwd(args..., device_type='cuda')``."""
    _deprecated("custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """Deprecated: use ``torch.amp.custom_bwd(args..., device_type='cuda')``."""
    _deprecated("custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)
