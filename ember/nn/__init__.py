"""ember.nn: only ``Parameter`` so far (modules, losses and optimisers are a later issue)."""
from .parameter import Parameter

__all__ = ["Parameter"]
