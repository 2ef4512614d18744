"""Reductions: sum, mean, std, norm, max, min, amax, amin, argmax, argmin (and sum_to_size).

Rules read the reduced input's shape from the input itself (``a.shape``, saved or not), so the
primitives' parameters are only what the user chose: the dims and keepdim.
"""
from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ._primitive import PrimNode, apply, defprim
from ._registry import graph, register
from ._util import check_tensor, dtype_word, normalize_dims, reduced_shape


def _expand_back(xp, g, a, dims, keepdim):
    # A gradient of the reduced shape broadcast back to the input's shape.
    if not keepdim:
        g = xp.reshape(g, reduced_shape(a.shape, dims))
    return xp.expand(g, a.shape)


def _count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


sum_p = defprim("sum", "SumBackward1", lambda xp, a, dims, keepdim: xp.sum(a, dims, keepdim),
                vjp=lambda xp, g, out, a, dims, keepdim: _expand_back(xp, g, a, dims, keepdim), jvp="linear")

mean_p = defprim("mean", "MeanBackward1", lambda xp, a, dims, keepdim: xp.mean(a, dims, keepdim),
                 vjp=lambda xp, g, out, a, dims, keepdim: _expand_back(xp, g, a, dims, keepdim) / _count(a.shape, dims),
                 jvp="linear")

sum_to_p = defprim("sum_to", "SumToSizeBackward0", lambda xp, a, shape: xp.sum_to(a, shape),
                   vjp=lambda xp, g, out, a, shape: xp.expand(g, a.shape), jvp="linear")


def _std_vjp(xp, g, out, a, dims, keepdim, correction):
    centered = a - xp.mean(a, dims, True)
    n = _count(a.shape, dims)
    if not keepdim:
        g, out = xp.reshape(g, reduced_shape(a.shape, dims)), xp.reshape(out, reduced_shape(a.shape, dims))
    # a constant input has std 0: PyTorch takes the gradient there as 0
    return centered * _safe_div(xp, g, out * (n - correction))


def _std_jvp(xp, t, out, a, dims, keepdim, correction):
    centered = a - xp.mean(a, dims, True)
    return xp.sum(centered * t, dims, keepdim) / (out * (_count(a.shape, dims) - correction))


std_p = defprim("std", "StdBackward0", lambda xp, a, dims, keepdim, correction: xp.std(a, dims, correction, keepdim),
                vjp=_std_vjp, jvp=_std_jvp, saves=(0,), saves_out=True)


def _safe_div(xp, num, den):
    # num / den, and 0 where den == 0 (the gradient of a norm at the origin is taken as 0).
    return xp.where(den == 0, 0.0, num / xp.where(den == 0, 1.0, den))


def _norm_vjp(xp, g, out, a, dims, keepdim):
    if not keepdim:
        g, out = xp.reshape(g, reduced_shape(a.shape, dims)), xp.reshape(out, reduced_shape(a.shape, dims))
    return a * _safe_div(xp, g, out)


norm_p = defprim("norm", "LinalgVectorNormBackward0", lambda xp, a, dims, keepdim: xp.vector_norm(a, 2, dims, keepdim),
                 vjp=_norm_vjp,
                 jvp=lambda xp, t, out, a, dims, keepdim: _safe_div(xp, xp.sum(a * t, dims, keepdim), out),
                 saves=(0,), saves_out=True)


def _evenly_distribute(xp, g, a, out):
    # max()/min() over everything: ties share the gradient evenly; a NaN maximum is every NaN element's.
    mask = xp.isnan(a) if bool(xp.isnan(out)) else a == out
    return g * mask / xp.sum(mask)


max_all_p = defprim("max", "MaxBackward1", lambda xp, a: xp.amax(a),
                    vjp=lambda xp, g, out, a: _evenly_distribute(xp, g, a, out),
                    jvp=lambda xp, t, out, a: xp.sum(_evenly_distribute(xp, t, a, out)),
                    saves=(0,), saves_out=True)
min_all_p = defprim("min", "MinBackward1", lambda xp, a: xp.amin(a),
                    vjp=max_all_p.vjps, jvp=max_all_p.jvps, saves=(0,), saves_out=True)


def _even_share(xp, g, a, out, dims, keepdim):
    # amax/amin: ties share the gradient evenly, as in PyTorch (a NaN maximum gives NaN gradients, as there).
    # (g * mask first: on Tensors a bool mask divided by its count would be float32, whatever g is.)
    if not keepdim:
        g, out = xp.reshape(g, reduced_shape(a.shape, dims)), xp.reshape(out, reduced_shape(a.shape, dims))
    mask = a == out
    return g * mask / xp.sum(mask, dims, True)


def _even_share_jvp(xp, t, out, a, dims, keepdim):
    mask = a == (out if keepdim else xp.reshape(out, reduced_shape(a.shape, dims)))
    return xp.sum(t * mask, dims, keepdim) / xp.sum(mask, dims, keepdim)


def _amax_prim(name, node_name, forward):
    return defprim(name, node_name, forward,
                   vjp=lambda xp, g, out, a, dims, keepdim: _even_share(xp, g, a, out, dims, keepdim),
                   jvp=_even_share_jvp, saves=(0,), saves_out=True)


amax_p = _amax_prim("amax", "AmaxBackward0", lambda xp, a, dims, keepdim: xp.amax(a, dims, keepdim))
amin_p = _amax_prim("amin", "AminBackward0", lambda xp, a, dims, keepdim: xp.amin(a, dims, keepdim))

take_along_dim_p = defprim(
    "take_along_dim", "TakeAlongDimBackward0", lambda xp, a, indices, dim: xp.take_along_dim(a, indices, dim),
    vjp=lambda xp, g, out, a, indices, dim: xp.put_along_dim_zeros(g, indices, dim, a.shape), jvp="linear")

put_along_dim_zeros_p = defprim(
    "put_along_dim_zeros", "ScatterBackward0",
    lambda xp, g, indices, dim, shape: xp.put_along_dim_zeros(g, indices, dim, shape),
    vjp=lambda xp, g, out, a, indices, dim, shape: xp.take_along_dim(g, indices, dim), jvp="linear")


def _select_along(xp, a, indices, dim, keepdim):
    r = xp.take_along_dim(a, indices, dim)
    return r if keepdim else xp.squeeze(r, dim)


# values of max(dim)/min(dim): gathered at the arg-extremum indices, scattered back in backward.
select_along_p = defprim(
    "max", "MaxBackward0", _select_along,
    vjp=lambda xp, g, out, a, indices, dim, keepdim:
        xp.put_along_dim_zeros(g if keepdim else xp.unsqueeze(g, dim), indices, dim, a.shape),
    jvp="linear")

graph("take_along_dim", lambda x, indices, dim: apply(take_along_dim_p, (x,), {"indices": indices, "dim": dim}))
graph("put_along_dim_zeros", lambda g, indices, dim, shape: apply(
    put_along_dim_zeros_p, (g,), {"indices": indices, "dim": dim, "shape": shape}))


# ----- public functions ------------------------------------------------------------------------

def _reduce_args(input, dim, keepdim, op):
    check_tensor(input, op)
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None   # PyTorch: an empty dim list reduces over every dim
    return normalize_dims(dim, input._data.ndim, op) if input._data.ndim else ()


_SUM0 = node_class("SumBackward0", PrimNode)
_MEAN0 = node_class("MeanBackward0", PrimNode)
_MAX0 = node_class("MaxBackward0", PrimNode)
_MIN0 = node_class("MinBackward0", PrimNode)


@register(method=True)
def sum(input, dim=None, keepdim=False, *, dtype=None):
    dims = _reduce_args(input, dim, keepdim, "sum")
    if dtype is not None:
        input = input.to(dtype)
    node = sum_p.node_cls if dim is not None else _SUM0
    return apply(sum_p, (input,), {"dims": dims, "keepdim": keepdim}, node)


@register(method=True)
def mean(input, dim=None, keepdim=False, *, dtype=None):
    dims = _reduce_args(input, dim, keepdim, "mean")
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {dtype_word(input._data.dtype)}")
    node = mean_p.node_cls if dim is not None else _MEAN0
    return apply(mean_p, (input,), {"dims": dims, "keepdim": keepdim}, node)


graph("sum", lambda x, dim=None, keepdim=False: sum(x, dim, keepdim))
graph("mean", lambda x, dim=None, keepdim=False: mean(x, dim, keepdim))


@register(method=True)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):   # std(x, False): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    dims = _reduce_args(input, dim, keepdim, "std")
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if _count(input._data.shape, dims) - correction <= 0:
        warnings.warn("std(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=2)
    return apply(std_p, (input,), {"dims": dims, "keepdim": keepdim, "correction": correction})


graph("std", lambda x, dim, correction, keepdim=False: std(x, dim, correction=correction, keepdim=keepdim))
graph("var", lambda x, dim, correction, keepdim=False: std(x, dim, correction=correction, keepdim=keepdim) ** 2)


@register(method=True)
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p not in ("fro", 2, 2.0, None):
        raise NotImplementedError(f"ember: norm(p={p!r}) is not supported yet; only the 2-norm is")
    dims = _reduce_args(input, dim, keepdim, "norm")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {dtype_word(input._data.dtype)}")
    return apply(norm_p, (input,), {"dims": dims, "keepdim": keepdim})


graph("vector_norm", lambda x, ord, dim, keepdim=False: norm(x, ord, dim, keepdim))


def _return_type(name):
    base = namedtuple(name, ["values", "indices"])

    def __repr__(self):
        return f"torch.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__})


MaxResult = _return_type("max")
MinResult = _return_type("min")


def _extremum(input, dim, keepdim, other, op, np_arg):
    from .elementwise import maximum, minimum
    check_tensor(input, op)
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        return (maximum if op == "max" else minimum)(input, other)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               f"Specify the reduction dim with the 'dim' argument.")
        return apply(max_all_p if op == "max" else min_all_p, (input,))
    dims = _reduce_args(input, dim, keepdim, op)
    d = dims[0] if dims else 0
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if not input._data.ndim:   # a 0-d input is gathered as shape (1,), its result is 0-d with or without keepdim
        from .shape import reshape
        input, keepdim = reshape(input, 1), False
    idx = np.expand_dims(np_arg(input._data, axis=d), d)
    node = _MAX0 if op == "max" else _MIN0
    values = apply(select_along_p, (input,), {"indices": idx, "dim": d, "keepdim": keepdim}, node)
    indices = make(idx if keepdim else idx.reshape(values._data.shape))
    return (MaxResult if op == "max" else MinResult)(values, indices)


@register(method=True)
def max(input, dim=None, keepdim=False, *, other=None):
    return _extremum(input, dim, keepdim, other, "max", np.argmax)


@register(method=True)
def min(input, dim=None, keepdim=False, *, other=None):
    return _extremum(input, dim, keepdim, other, "min", np.argmin)


def _amax(prim, op, input, dim, keepdim):
    dims = _reduce_args(input, dim if dim != () else None, keepdim, op)
    shape = input._data.shape
    if input._data.size == 0 and any(shape[d] == 0 for d in dims):
        raise IndexError(f"{op}(): Expected reduction dim {dims[0]} to have non-zero size.")
    return apply(prim, (input,), {"dims": dims, "keepdim": keepdim})


@register(method=True)
def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax(amax_p, "amax", input, dim, keepdim)


@register(method=True)
def amin(input, dim=(), keepdim=False):
    return _amax(amin_p, "amin", input, dim, keepdim)


graph("amax", lambda x, dim=None, keepdim=False: amax(x, () if dim is None else dim, keepdim))
graph("amin", lambda x, dim=None, keepdim=False: amin(x, () if dim is None else dim, keepdim))


@register(method=True)
def argmax(input, dim=None, keepdim=False):
    if dim is None:
        return make(np.asarray(np.argmax(input._data)))
    return max(input, dim, keepdim).indices


@register(method=True)
def argmin(input, dim=None, keepdim=False):
    if dim is None:
        return make(np.asarray(np.argmin(input._data)))
    return min(input, dim, keepdim).indices


@register(module=False, method=True)
def sum_to_size(input, *size):
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    return apply(sum_to_p, (input,), {"shape": shape})


graph("sum_to", lambda x, shape: sum_to_size(x, shape))


@register(name="any", method=True)
def any_(input, dim=None, keepdim=False):
    return make(np.asarray(np.any(input._data, axis=dim, keepdims=keepdim)))


@register(name="all", method=True)
def all_(input, dim=None, keepdim=False):
    return make(np.asarray(np.all(input._data, axis=dim, keepdims=keepdim)))
