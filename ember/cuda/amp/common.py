"""torch.cuda.amp.common."""
from __future__ import annotations

__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available() -> bool:
    """True: ember has no CUDA (nor torch_xla)."""
    return True
