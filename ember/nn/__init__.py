"""ember.nn: ``Parameter`` and ``functional`` so far (modules, losses and optimisers are a later issue)."""
from . import functional
from .parameter import Parameter

__all__ = ["Parameter", "functional"]
