"""The layers of ember.nn, one family per file as PyTorch's torch.nn.modules (``ember.nn.modules.rnn.LSTM`` is
``ember.nn.LSTM``). The files and the layers load on first use, so ``import ember`` stays fast."""
import importlib

from .module import Module

__all__ = ["Module"]

# PyTorch's files of torch.nn.modules: ``ember.nn.modules.<file>`` is an attribute once ember is imported.
_FILES = ("activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
          "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding",
          "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling", "utils")


def __getattr__(name: str):
    if name in _FILES:
        return importlib.import_module(f".{name}", __name__)
    from .. import _LAZY
    if name in _LAZY:
        from .. import __getattr__ as nn_getattr
        return nn_getattr(name)
    raise AttributeError(f"module 'ember.nn.modules' has no attribute '{name}'")


def __dir__():
    from .. import _LAZY
    return sorted(set(globals()) | set(_FILES) | set(_LAZY))
