"""The layers of ember.nn, one family per file (as torch.nn.modules)."""
from .module import Module

__all__ = ["Module"]
