"""ember.utils: utilities built on autograd (``torch.utils``): activation checkpointing, hooks, data loading (each imported on first use)."""
import importlib

__all__ = ["checkpoint", "data", "hooks"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
