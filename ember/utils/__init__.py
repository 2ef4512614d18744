"""ember.utils: utilities built on autograd (``torch.utils``): activation checkpointing, hooks, data loading, TensorBoard
logging, pytrees (``_pytree``); each imported on first use (tensorboard needs the optional ``tensorboard`` package)."""
import importlib

__all__ = ["checkpoint", "data", "dlpack", "hooks"]


def __getattr__(name: str):
    # not in __all__: a star-import must not need tensorboard (optional) nor the private _pytree
    if name in __all__ or name in ("tensorboard", "_pytree"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
