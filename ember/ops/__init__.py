"""The op table: every primitive with its forward, VJP and JVP, grouped by family.

Importing this package also attaches the ops to ``Tensor`` as methods and operators, and fills
``graph_ns``, the differentiable twin of the raw array namespace that derivative rules run on.
"""
from __future__ import annotations

from .. import _numpy_ns
from .._tensor import Tensor
from . import elementwise as E
from . import indexing as I
from . import linalg as L
from . import reduction as R
from . import shape as S
from ._methods import bind_methods
from . import _primitive as P
from ._primitive import Primitive, apply, graph_ns
from .._creation import zeros_like, ones_like


def _where(cond, a, b):
    if not isinstance(cond, Tensor):
        from .._tensor import make
        cond = make(cond)
    return E.where(cond, a, b)


def _base_shape(x, steps):
    return x._data.shape


def _prim_fn(prim, *names):
    def fn(x, *args):
        return apply(prim, (x,), dict(zip(names, args)))
    return fn


_GRAPH = {
    "exp": E.exp, "log": E.log, "sqrt": E.sqrt, "sin": E.sin, "cos": E.cos, "tanh": E.tanh, "abs": E.abs,
    "sign": E.sign, "sigmoid": E.sigmoid, "relu": E.relu, "round": E.round, "pow": E.pow, "div": E.div, "floor_divide": E.floor_divide, "remainder": E.remainder,
    "maximum": E.maximum, "minimum": E.minimum, "clamp": E.clamp, "where": _where,
    "matmul": L.matmul, "zeros_like": zeros_like, "ones_like": ones_like,
    "isnan": E.isnan, "std": lambda x, dim, correction, keepdim=False: R.std(x, dim, correction=correction, keepdim=keepdim),
    "var": lambda x, dim, correction, keepdim=False: R.std(x, dim, correction=correction, keepdim=keepdim) ** 2,
    "vector_norm": lambda x, ord, dim, keepdim=False: R.norm(x, ord, dim, keepdim),
    "sum": lambda x, dim=None, keepdim=False: R.sum(x, dim, keepdim),
    "mean": lambda x, dim=None, keepdim=False: R.mean(x, dim, keepdim),
    "amax": lambda x, dim=None, keepdim=False: R.amax(x, () if dim is None else dim, keepdim),
    "amin": lambda x, dim=None, keepdim=False: R.amin(x, () if dim is None else dim, keepdim),
    "sum_to": lambda x, shape: R.sum_to_size(x, shape),
    "expand": lambda x, shape: S.expand(x, shape),
    "reshape": lambda x, shape: S.reshape(x, shape),
    "permute": lambda x, dims: S.permute(x, dims),
    "transpose": S.transpose, "unsqueeze": S.unsqueeze, "squeeze": S.squeeze,
    "getitem": lambda x, index: apply(I.getitem_p, (x,), {"index": index, "shape": x._data.shape}),
    "index_put_zeros": _prim_fn(I.index_put_zeros_p, "index", "shape"),
    "fill_index": _prim_fn(I.fill_index_p, "index", "value"),
    "take_along_dim": lambda x, indices, dim: apply(R.take_along_dim_p, (x,),
                                                    {"indices": indices, "dim": dim, "shape": x._data.shape}),
    "put_along_dim_zeros": _prim_fn(R.put_along_dim_zeros_p, "indices", "dim", "shape"),
    "cast": _prim_fn(S.cast_p, "dtype"),
    "cat": lambda xs, dim: S.cat(xs, dim), "stack": lambda xs, dim: S.stack(xs, dim),
    "view_replay": lambda x, steps: apply(P.view_replay_p, (x,), {"steps": steps, "shape": _base_shape(x, steps)}),
    "view_scatter_zeros": _prim_fn(P.view_scatter_zeros_p, "steps", "shape"),
}
for _name, _fn in _GRAPH.items():
    setattr(graph_ns, _name, _fn)

bind_methods()

__all__ = ["Primitive", "apply", "graph_ns", "raw_names", "graph_names"]


def raw_names() -> set:
    return {n for n in vars(_numpy_ns) if not n.startswith("_") and n not in ("np", "annotations")}


def graph_names() -> set:
    return set(vars(graph_ns))
