"""The layers of ember.nn, one family per file (as torch.nn.modules); ``ember.nn.modules.Linear`` etc. load
on first use, like ``ember.nn.Linear``."""
from .module import Module

__all__ = ["Module"]


def __getattr__(name: str):
    from .. import _LAZY
    if name in _LAZY:
        from .. import __getattr__ as nn_getattr
        return nn_getattr(name)
    raise AttributeError(f"module 'ember.nn.modules' has no attribute '{name}'")
