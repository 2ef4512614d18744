"""ember.autograd: the engine, grad modes, graph nodes and custom Functions."""
from . import anomaly_mode, forward_ad, functional, grad_mode, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from ._explain import explain
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .variable import Variable
# As in PyTorch, the name ``gradcheck`` is the function; the module stays in sys.modules.
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "grad_mode", "graph", "forward_ad", "functional", "Variable",
           "gradcheck", "gradgradcheck", "GradcheckError",
           "detect_anomaly", "set_detect_anomaly", "anomaly_mode", "explain"]
