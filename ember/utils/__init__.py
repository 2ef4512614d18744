"""ember.utils: utilities built on autograd (``torch.utils``): activation checkpointing."""
from . import checkpoint

__all__ = ["checkpoint"]
