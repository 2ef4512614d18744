"""ember.autograd: the engine, grad modes, graph nodes and custom Functions."""
from . import functional, grad_mode, graph
from .engine import backward, grad
from .function import Function, FunctionCtx
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "grad_mode", "graph", "functional"]
