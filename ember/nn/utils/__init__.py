"""torch.nn.utils: gradient clipping, parameter/vector conversion, weight and spectral norm, BatchNorm fusion,
``skip_init`` (``rnn``, ``parametrize``, ``parametrizations`` and others load on first use)."""
from __future__ import annotations

import importlib

from . import clip_grad, convert_parameters
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
# Light files, imported now so that the functions (not the same-named submodules) are the attributes, as in PyTorch.
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init", "remove_spectral_norm", "spectral_norm",
           "remove_weight_norm", "weight_norm", "parametrize", "parametrizations"]


def __getattr__(name: str):
    # submodules built elsewhere (rnn, parametrize, ...) are reachable as attributes once they exist
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module 'ember.nn.utils' has no attribute '{name}'") from None
