"""The op table: every primitive with its forward, VJP and JVP, grouped by family.

Importing this package registers every family's ops (see ``_registry``); from the registry come the
Tensor methods and operators and ``graph_ns``, the differentiable twin of the raw array namespace that
derivative rules run on. ``ember/__init__.py`` exports ``EXPORTS``.
"""
from __future__ import annotations

from ..devices.cpu import namespace as _cpu_ns
from .creation import ones_like, zeros_like
from . import random as _random  # noqa: F401  (registers the in-place samplers: uniform_, normal_, ...)
from . import utility as _utility  # noqa: F401  (Tensor.lstsq, ...: PyTorch's removal errors)
from .._tensor import Tensor
from . import elementwise as E
from . import indexing as I
from . import linalg as L
from . import reduction as R
from . import shape as S
from . import sorting as O
from . import nn_activation as NA
from . import nn_pad as NP
from . import nn_conv as NC
from . import nn_pool as NPo
from . import nn_resample as NRs
from . import nn_grid as NG
from . import nn_loss as NL
from . import nn_norm as NN
from . import nn_aten as _nn_aten  # noqa: F401  (torch.kl_div, torch.embedding, ...: ATen's spellings)
from . import complex as CX
from . import strided as St
from . import fft as FT
from ..autograd import _primitive
from ..autograd._primitive import Primitive, apply, graph_ns
from ..autograd import _views
from ._registry import EXPORTS, GRAPH, METHODS, graph

graph("zeros_like", zeros_like)
graph("ones_like", ones_like)
graph("view_replay", lambda x, steps: apply(_views.view_replay_p, (x,), {"steps": steps}))
graph("view_scatter_zeros", lambda g, steps, shape: apply(_views.view_scatter_zeros_p, (g,),
                                                          {"steps": steps, "shape": shape}))
graph("view_scatter_add", lambda g, steps, shape: apply(_views.view_scatter_add_p, (g,),
                                                        {"steps": steps, "shape": shape}))


for _name, _fn in METHODS.items():
    setattr(Tensor, _name, _fn)
for _name, _fn in GRAPH.items():
    setattr(graph_ns, _name, _fn)

from ..autograd import _batching   # noqa: E402
from ._registry import SUBMODULES   # noqa: E402
_batching.PUBLIC_TABLES[:] = [EXPORTS, METHODS, *SUBMODULES.values(),
                              {n: getattr(_random, n) for n in _batching.RANDOM if hasattr(_random, n)}]

FAMILIES = (E, R, S, I, *L.MODULES, O, NA, NL, NN, NC, NPo, NP, NRs, NG, CX, St, FT)
# The op table's primitives: every one declared by the families (the random fills make theirs on first use).
DECLARED = tuple(_primitive.PRIMITIVES)

__all__ = ["Primitive", "apply", "graph_ns", "raw_names", "graph_names", "EXPORTS", "METHODS", "FAMILIES"]


def raw_names() -> set:
    return {n for n in vars(_cpu_ns) if not n.startswith("_") and n not in ("np", "annotations", "backend")}


def graph_names() -> set:
    return set(vars(graph_ns))
