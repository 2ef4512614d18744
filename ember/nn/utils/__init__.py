"""torch.nn.utils: gradient clipping and parameter/vector conversion (``rnn`` and others load on first use)."""
from __future__ import annotations

import importlib

from . import clip_grad, convert_parameters
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]


def __getattr__(name: str):
    # submodules built elsewhere (rnn, parametrize, ...) are reachable as attributes once they exist
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module 'ember.nn.utils' has no attribute '{name}'") from None
