"""torch.backends.cudnn: settable flags (``deterministic``, ``benchmark``, ``enabled``, ``allow_tf32``)
with PyTorch's defaults; cuDNN is never available in ember."""
from __future__ import annotations

enabled: bool = True
benchmark: bool = False
benchmark_limit: int = 10
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    return False


def version() -> None:
    """PyTorch returns None when cuDNN is not available."""
    return None
