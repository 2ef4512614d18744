"""ember.autograd: the engine, grad modes, graph nodes and custom Functions.

``functional``, ``gradcheck`` and ``explain`` are built on the ops (a layer above this package): they are loaded
on first use, by name, so that the ops can import the autograd machinery without an import cycle.
"""
import importlib

from . import anomaly_mode, forward_ad, grad_mode, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "grad_mode", "graph", "forward_ad", "functional", "Variable",
           "gradcheck", "gradgradcheck", "GradcheckError",
           "detect_anomaly", "set_detect_anomaly", "anomaly_mode", "explain"]

# name -> (module, attribute or None for the module itself)
# As in PyTorch, the name ``gradcheck`` is the function, not the module: ember/__init__.py resolves it when ember
# is imported, so that a later ``import ember.autograd.gradcheck`` finds the module loaded and leaves the name alone.
_LAZY = {"functional": ("functional", None), "explain": ("_explain", "explain"),
         "gradcheck": ("gradcheck", "gradcheck"), "gradgradcheck": ("gradcheck", "gradgradcheck"),
         "GradcheckError": ("gradcheck", "GradcheckError"), "profiler": ("profiler", None),
         "profiler_util": ("profiler_util", None)}


def __getattr__(name: str):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")
    module = importlib.import_module("." + spec[0], __name__)
    value = module if spec[1] is None else getattr(module, spec[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
