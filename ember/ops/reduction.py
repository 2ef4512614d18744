"""Reductions: sum, mean, std, norm, max, min (and sum_to, the one place broadcasting is undone)."""
from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, make
from ._primitive import apply, defprim
from ._util import check_tensor, normalize_dims, reduced_shape


def _expand_back(xp, g, kshape, shape):
    # A reduced gradient of shape ``kshape`` (reduced dims kept as 1) broadcast back to ``shape``.
    return xp.expand(xp.reshape(g, kshape), shape)


sum_p = defprim("sum", "SumBackward1",
                lambda xp, a, dims, keepdim, kshape, shape: xp.sum(a, dims, keepdim),
                vjp=lambda xp, g, out, a, dims, keepdim, kshape, shape: _expand_back(xp, g, kshape, shape),
                jvp=lambda xp, t, out, a, dims, keepdim, kshape, shape: xp.sum(t, dims, keepdim))

mean_p = defprim("mean", "MeanBackward1",
                 lambda xp, a, dims, keepdim, kshape, shape, n: xp.mean(a, dims, keepdim),
                 vjp=lambda xp, g, out, a, dims, keepdim, kshape, shape, n: _expand_back(xp, g, kshape, shape) / n,
                 jvp=lambda xp, t, out, a, dims, keepdim, kshape, shape, n: xp.mean(t, dims, keepdim))

sum_to_p = defprim("sum_to", "SumToSizeBackward0", lambda xp, a, shape, ishape: xp.sum_to(a, shape),
                   vjp=lambda xp, g, out, a, shape, ishape: xp.expand(g, ishape),
                   jvp=lambda xp, t, out, a, shape, ishape: xp.sum_to(t, shape))


def _std_forward(xp, a, dims, keepdim, kshape, shape, n, correction):
    return xp.std(a, dims, correction, keepdim)


def _std_vjp(xp, g, out, a, dims, keepdim, kshape, shape, n, correction):
    centered = a - xp.mean(a, dims, True)
    # a constant input has std 0: PyTorch takes the gradient there as 0
    return centered * _safe_div(xp, xp.reshape(g, kshape), xp.reshape(out, kshape) * (n - correction))


def _std_jvp(xp, t, out, a, dims, keepdim, kshape, shape, n, correction):
    centered = a - xp.mean(a, dims, True)
    return xp.sum(centered * t, dims, keepdim) / (out * (n - correction))


std_p = defprim("std", "StdBackward0", _std_forward, vjp=_std_vjp, jvp=_std_jvp, saves=(0,), saves_out=True)


def _safe_div(xp, num, den):
    # num / den, and 0 where den == 0 (the gradient of a norm at the origin is taken as 0).
    return xp.where(den == 0, 0.0, num / xp.where(den == 0, 1.0, den))


norm_p = defprim("norm", "LinalgVectorNormBackward0",
                 lambda xp, a, dims, keepdim, kshape: xp.vector_norm(a, 2, dims, keepdim),
                 vjp=lambda xp, g, out, a, dims, keepdim, kshape:
                     a * _safe_div(xp, xp.reshape(g, kshape), xp.reshape(out, kshape)),
                 jvp=lambda xp, t, out, a, dims, keepdim, kshape: _safe_div(xp, xp.sum(a * t, dims, keepdim), out),
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
                    vjp=lambda xp, g, out, a: _evenly_distribute(xp, g, a, out),
                    jvp=lambda xp, t, out, a: xp.sum(_evenly_distribute(xp, t, a, out)),
                    saves=(0,), saves_out=True)


def _even_share(xp, g, a, out, dims, kshape):
    # amax/amin: ties share the gradient evenly, as in PyTorch (a NaN maximum gives NaN gradients, as there).
    # (g * mask first: on Tensors a bool mask divided by its count would be float32, whatever g is.)
    mask = a == xp.reshape(out, kshape)
    return xp.reshape(g, kshape) * mask / xp.sum(mask, dims, True)


def _amax_rules(name, node_name, forward):
    return defprim(name, node_name, forward,
                   vjp=lambda xp, g, out, a, dims, keepdim, kshape: _even_share(xp, g, a, out, dims, kshape),
                   jvp=lambda xp, t, out, a, dims, keepdim, kshape: xp.sum(
                       t * (a == xp.reshape(out, kshape)) / xp.sum(a == xp.reshape(out, kshape), dims, True),
                       dims, keepdim),
                   saves=(0,), saves_out=True)


amax_p = _amax_rules("amax", "AmaxBackward0", lambda xp, a, dims, keepdim, kshape: xp.amax(a, dims, keepdim))
amin_p = _amax_rules("amin", "AminBackward0", lambda xp, a, dims, keepdim, kshape: xp.amin(a, dims, keepdim))

take_along_dim_p = defprim(
    "take_along_dim", "TakeAlongDimBackward0",
    lambda xp, a, indices, dim, shape: xp.take_along_dim(a, indices, dim),
    vjp=lambda xp, g, out, a, indices, dim, shape: xp.put_along_dim_zeros(g, indices, dim, shape),
    jvp=lambda xp, t, out, a, indices, dim, shape: xp.take_along_dim(t, indices, dim))

put_along_dim_zeros_p = defprim(
    "put_along_dim_zeros", "ScatterBackward0",
    lambda xp, g, indices, dim, shape: xp.put_along_dim_zeros(g, indices, dim, shape),
    vjp=lambda xp, g, out, a, indices, dim, shape: xp.take_along_dim(g, indices, dim),
    jvp=lambda xp, t, out, a, indices, dim, shape: xp.put_along_dim_zeros(t, indices, dim, shape))

# values of max(dim)/min(dim): gathered at the arg-extremum indices, scattered back in backward.
select_along_p = defprim(
    "max", "MaxBackward0",
    lambda xp, a, indices, dim, kshape, oshape, shape: xp.reshape(xp.take_along_dim(a, indices, dim), oshape),
    vjp=lambda xp, g, out, a, indices, dim, kshape, oshape, shape:
        xp.put_along_dim_zeros(xp.reshape(g, kshape), indices, dim, shape),
    jvp=lambda xp, t, out, a, indices, dim, kshape, oshape, shape:
        xp.reshape(xp.take_along_dim(t, indices, dim), oshape))


# ----- public functions ------------------------------------------------------------------------

def _reduce_args(input, dim, keepdim, op):
    check_tensor(input, op)
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None   # PyTorch: an empty dim list reduces over every dim
    shape = input._data.shape
    dims = normalize_dims(dim, input._data.ndim, op) if input._data.ndim else ()
    return shape, dims, reduced_shape(shape, dims)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    shape, dims, kshape = _reduce_args(input, dim, keepdim, "sum")
    if dtype is not None:
        input = input.to(dtype)
    node = sum_p.node_cls if dim is not None else _SUM0
    return apply(sum_p, (input,), {"dims": dims, "keepdim": keepdim, "kshape": kshape, "shape": shape}, node)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    shape, dims, kshape = _reduce_args(input, dim, keepdim, "mean")
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {_dtype_word(input)}")
    n = int(np.prod([shape[d] for d in dims])) if shape else 1
    node = mean_p.node_cls if dim is not None else _MEAN0
    return apply(mean_p, (input,),
                 {"dims": dims, "keepdim": keepdim, "kshape": kshape, "shape": shape, "n": n}, node)


def _dtype_word(t):
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char",
            "uint8": "Byte"}.get(t._data.dtype.name, t._data.dtype.name)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):   # std(x, False): the legacy positional ``unbiased``
        dim, unbiased = None, dim
    shape, dims, kshape = _reduce_args(input, dim, keepdim, "std")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    n = int(np.prod([shape[d] for d in dims])) if shape else 1
    if n - correction <= 0:
        warnings.warn("std(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=2)
    return apply(std_p, (input,), {"dims": dims, "keepdim": keepdim, "kshape": kshape, "shape": shape, "n": n,
                                   "correction": correction})


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    if p not in ("fro", 2, 2.0, None):
        raise NotImplementedError(f"ember: norm(p={p!r}) is not supported yet; only the 2-norm is")
    shape, dims, kshape = _reduce_args(input, dim, keepdim, "norm")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype_word(input)}")
    return apply(norm_p, (input,), {"dims": dims, "keepdim": keepdim, "kshape": kshape})


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
    shape, dims, kshape = _reduce_args(input, dim, keepdim, op)
    d = dims[0] if dims else 0
    if input._data.ndim and shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    data = input._data if input._data.ndim else input._data.reshape(1)
    idx = np.expand_dims(np_arg(data, axis=d), d)
    oshape = kshape if keepdim else tuple(s for i, s in enumerate(shape) if i != d)
    node = _MAX0 if op == "max" else _MIN0
    if not input._data.ndim:   # a 0-d input is gathered as shape (1,)
        from .shape import reshape
        input = reshape(input, 1)
    values = apply(select_along_p, (input,), {"indices": idx, "dim": d, "kshape": kshape or (1,),
                                              "oshape": oshape, "shape": shape or (1,)}, node)
    indices = make(idx.reshape(oshape))
    return (MaxResult if op == "max" else MinResult)(values, indices)


def max(input, dim=None, keepdim=False, *, other=None):
    return _extremum(input, dim, keepdim, other, "max", np.argmax)


def min(input, dim=None, keepdim=False, *, other=None):
    return _extremum(input, dim, keepdim, other, "min", np.argmin)


def _amax(prim, op, input, dim, keepdim):
    shape, dims, kshape = _reduce_args(input, dim if dim != () else None, keepdim, op)
    if input._data.size == 0 and any(shape[d] == 0 for d in dims):
        raise IndexError(f"{op}(): Expected reduction dim {dims[0]} to have non-zero size.")
    return apply(prim, (input,), {"dims": dims, "keepdim": keepdim, "kshape": kshape})


def amax(input, dim=(), keepdim=False):
    """Maximum over ``dim`` (all dims by default); ties share the gradient evenly."""
    return _amax(amax_p, "amax", input, dim, keepdim)


def amin(input, dim=(), keepdim=False):
    return _amax(amin_p, "amin", input, dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    if dim is None:
        return make(np.asarray(np.argmax(input._data)))
    return max(input, dim, keepdim).indices


def argmin(input, dim=None, keepdim=False):
    if dim is None:
        return make(np.asarray(np.argmin(input._data)))
    return min(input, dim, keepdim).indices


def sum_to_size(input, *size):
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    return apply(sum_to_p, (input,), {"shape": shape, "ishape": input._data.shape})


from ..autograd.graph import node_class as _node_class  # noqa: E402
from ._primitive import PrimNode as _PrimNode  # noqa: E402

_SUM0 = _node_class("SumBackward0", _PrimNode)
_MEAN0 = _node_class("MeanBackward0", _PrimNode)
_MAX0 = _node_class("MaxBackward0", _PrimNode)
_MIN0 = _node_class("MinBackward0", _PrimNode)
