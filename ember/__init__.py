"""ember: PyTorch's autograd, rebuilt in readable Python on NumPy.

``import ember as torch`` runs autograd-centric PyTorch code unchanged.
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _malloc
_malloc.tune()   # glibc heap thresholds for array-heavy backward passes (see ember/_malloc.py)
from . import _dtype
from ._device import device
from . import autograd
from . import ops
from .ops.public import *  # noqa: F401,F403  (dtypes, Tensor, grad modes, creation, random, every op)
from .ops.foreach import *  # noqa: F401,F403  (torch._foreach_*: loops over the per-tensor ops)
from .ops.random import _sample_dirichlet, _standard_gamma  # noqa: F401  (torch's samplers for distributions)
from .ops.elementwise import _dirichlet_grad, _standard_gamma_grad  # noqa: F401
autograd.gradcheck   # noqa: B018  (loads torch.autograd.gradcheck, the function: see ember/autograd/__init__.py)
from .autograd import forward_ad
from . import backends, cuda, fft, linalg, nn, special
from .nn._aten_rnn import *  # noqa: F401,F403  (torch.rnn_tanh, torch.lstm_cell, ...: the layers' recurrences)
from . import signal  # noqa: E402  (torch.signal.windows, on the public ops)

# PyTorch's constants (torch.pi is math.pi, ...) and NumPy-style ``x[:, torch.newaxis]``.
import math as _math  # noqa: E402
pi, e, inf, nan, newaxis = _math.pi, _math.e, _math.inf, _math.nan, None
from . import optim  # noqa: E402  (torch.optim; its optimizers load on first use)
from . import utils  # noqa: E402  (torch.utils.checkpoint; built on autograd)
from . import distributed  # noqa: E402,F401  (torch.distributed: importable in one process; is_available() False)
from .serialization import load, save  # noqa: E402  (PyTorch's checkpoint format; zipfile/pickle load lazily)
from .serialization._safetensors import load_safetensors, save_safetensors  # noqa: E402  (lazily)
from . import distributions  # noqa: E402,F401  (torch.distributions; each module loads on first use)
from . import amp, cpu  # noqa: E402  (torch.amp: autocast and GradScaler; torch.cpu and torch.cpu.amp)
from . import accelerator  # noqa: E402,F401  (torch.accelerator, as a build without an accelerator answers)
from .cuda import amp as _cuda_amp  # noqa: E402,F401  (loads torch.cuda.amp)
from .amp import GradScaler, autocast  # noqa: E402
del compile   # noqa: F821  (ember.compile is ember.compiler's, loaded on first use: see __getattr__)
from .amp.autocast_mode import (  # noqa: E402,F401  (torch's autocast state functions)
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_cpu_dtype,
    get_autocast_dtype, get_autocast_gpu_dtype, get_autocast_ipu_dtype, get_autocast_xla_dtype,
    is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled, is_autocast_ipu_enabled,
    is_autocast_xla_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype, set_autocast_ipu_dtype,
    set_autocast_ipu_enabled, set_autocast_xla_dtype, set_autocast_xla_enabled)


# as PyTorch's: a program that does not use them does not import them (torch.func: vmap, grad, vjp, jvp, jacrev,
# jacfwd, hessian, functional_call); torch.multiprocessing (PyTorch loads it with torch) on first use too
_ON_FIRST_USE = ("profiler", "onnx", "testing", "func", "multiprocessing", "compiler", "_dynamo")


def __getattr__(name: str):
    """``torch.profiler``, ``torch.onnx``, ``torch.testing``, ``torch.func``, ``torch.multiprocessing`` and
    ``torch.futures`` loaded on first use; ``torch.vmap``
    is ``torch.func.vmap``."""
    if name in _ON_FIRST_USE:
        import importlib
        return importlib.import_module("." + name, __name__)
    if name == "vmap":
        from .func import vmap
        return vmap
    if name == "compile":   # torch.compile: ember.compiler's (ops/utility's argument checks, then the tracer)
        from .compiler import compile
        return compile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ON_FIRST_USE += ("futures",)   # torch.futures (DDP communication hooks, collectives' get_future())
