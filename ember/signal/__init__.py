"""torch.signal: the ``windows`` module."""
from . import windows  # noqa: F401
