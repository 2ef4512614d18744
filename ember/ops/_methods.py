"""Attach the ops to Tensor as methods and operators (each op stays declared once, in its family)."""
from __future__ import annotations

from .. import _dtype as D
from .._device import check_device
from .._tensor import Tensor
from ..autograd.graph import node_class
from . import elementwise as E
from . import indexing as I
from . import linalg as L
from . import reduction as R
from . import shape as S
from ._primitive import PrimNode, apply, refresh_view
from ._util import compute_dtype, scalar_or_tensor


def _reflected(prim, node_name, check=None):
    """``other OP self`` for a scalar ``other``; ``check(other, self)`` raises for bad dtypes."""
    node = node_class(node_name, PrimNode)

    def fn(self, other):
        try:
            other = scalar_or_tensor(other, prim.name)
        except TypeError:
            return NotImplemented
        if check is not None:
            check(other, self)
        return apply(prim, (other, self), {}, node, compute_dtype(other, self))
    return fn


def _operator(fn, prim=None):
    """A binary operator method: NotImplemented for operand types it does not know, so Python can
    try the other side. With ``prim``, float tensors with a float/int scalar or a same-dtype tensor
    take a fast path: no promotion and no bool checks are needed there."""
    def op(self, other):
        if prim is not None and self._data.dtype.kind == "f":
            to = type(other)
            if to is float or to is int or (to is Tensor and other._data.dtype == self._data.dtype):
                return apply(prim, (self, other))
        try:
            return fn(self, other)
        except TypeError:
            if isinstance(other, (Tensor, bool, int, float)):
                raise
            return NotImplemented
    return op


def _rtruediv(self, other):
    try:
        other = scalar_or_tensor(other, "div")
    except TypeError:
        return NotImplemented
    # PyTorch computes ``2 / x`` as ``x.reciprocal() * 2``, hence its grad_fn name.
    return apply(E.div_p, (other, self), {}, node_class("MulBackward0", PrimNode), E._true_div_dtype(other, self))


def _rpow(self, other):
    return E.pow(other, self)


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``; ``copy=``."""
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif a is not None and not isinstance(a, bool):
            device = a
    if device is not None:
        check_device(device)
    if dtype is None:
        return S.clone(self) if copy else self
    return S.to_dtype(self, dtype, copy)


def _caster(dtype):
    def fn(self, memory_format=None):
        return S.to_dtype(self, dtype)
    return fn


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "int64": "LongTensor",
               "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}


def type_(self, dtype=None):
    if dtype is None:
        return "torch." + _TYPE_NAMES[self._data.dtype.name]
    return S.to_dtype(self, dtype)


def _any(self, dim=None, keepdim=False):
    from .._tensor import make
    import numpy as np
    return make(np.asarray(np.any(self._data, axis=dim, keepdims=keepdim)))


def _all(self, dim=None, keepdim=False):
    from .._tensor import make
    import numpy as np
    return make(np.asarray(np.all(self._data, axis=dim, keepdims=keepdim)))


def _view_as(self, other):
    return S.view(self, other._data.shape)


def _reshape_as(self, other):
    return S.reshape(self, other._data.shape)


def _new_tensor_like(fn):
    def method(self, *size, dtype=None, requires_grad=False, device=None):
        return fn(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)
    return method


def bind_methods() -> None:
    from .. import _creation as C
    T = Tensor
    methods = {
        # arithmetic
        "add": E.add, "sub": E.sub, "subtract": E.sub, "mul": E.mul, "multiply": E.mul, "div": E.div,
        "divide": E.div, "true_divide": E.div, "pow": E.pow, "neg": E.neg, "negative": E.neg,
        "abs": E.abs, "absolute": E.abs, "sign": E.sign, "exp": E.exp, "log": E.log, "sqrt": E.sqrt,
        "sin": E.sin, "cos": E.cos, "tanh": E.tanh, "sigmoid": E.sigmoid, "relu": E.relu, "round": E.round,
        "clamp": E.clamp, "clip": E.clamp, "clamp_min": E.clamp_min, "clamp_max": E.clamp_max,
        "maximum": E.maximum, "minimum": E.minimum,
        "eq": E.eq, "ne": E.ne, "lt": E.lt, "le": E.le, "gt": E.gt, "ge": E.ge,
        "isnan": E.isnan, "isinf": E.isinf, "isfinite": E.isfinite, "allclose": E.allclose,
        "isclose": E.isclose, "equal": E.equal, "logical_not": E.logical_not,
        "bitwise_and": E.bitwise_and, "bitwise_or": E.bitwise_or, "bitwise_not": E.bitwise_not,
        "where": lambda self, condition, other: E.where(condition, self, other),
        # in place
        "add_": E.iadd, "sub_": E.isub, "mul_": E.imul, "div_": E.idiv, "pow_": E.ipow, "clamp_": E.iclamp,
        "zero_": I.zero_, "fill_": I.fill_, "copy_": I.copy_, **E._INPLACE_UNARY,
        # linear algebra
        "matmul": L.matmul, "mm": L.mm, "mv": L.mv, "dot": L.dot, "bmm": L.bmm, "outer": L.outer,
        # reductions
        "sum": R.sum, "mean": R.mean, "std": R.std, "norm": R.norm, "max": R.max, "min": R.min,
        "amax": R.amax, "amin": R.amin, "argmax": R.argmax, "argmin": R.argmin, "sum_to_size": R.sum_to_size,
        "any": _any, "all": _all,
        # shape
        "reshape": S.reshape, "view": S.view, "view_as": _view_as, "reshape_as": _reshape_as,
        "flatten": S.flatten, "squeeze": S.squeeze, "unsqueeze": S.unsqueeze, "permute": S.permute,
        "transpose": S.transpose, "t": S.t, "expand": S.expand, "expand_as": S.expand_as,
        "clone": S.clone, "contiguous": S.contiguous,
        # dtype
        "to": to, "type": type_, "float": _caster(D.float32), "double": _caster(D.float64),
        "half": _caster(D.float16), "long": _caster(D.int64), "int": _caster(D.int32),
        "bool": _caster(D.bool), "short": _caster(D.int16),
        "new_zeros": _new_tensor_like(C.zeros), "new_ones": _new_tensor_like(C.ones),
        "new_empty": _new_tensor_like(C.empty),
        # operators
        "__add__": _operator(E.add, E.add_p), "__radd__": _operator(E.add, E.add_p), "__iadd__": E.iadd,
        "__sub__": _operator(E.sub, E.sub_p), "__rsub__": _reflected(E.sub_p, "RsubBackward1", E.check_sub), "__isub__": E.isub,
        "__mul__": _operator(E.mul, E.mul_p), "__rmul__": _operator(E.mul, E.mul_p), "__imul__": E.imul,
        "__truediv__": _operator(E.div, E.div_p), "__rtruediv__": _rtruediv, "__itruediv__": E.idiv,
        "__pow__": _operator(E.pow), "__rpow__": _rpow, "__ipow__": E.ipow,
        "__floordiv__": _operator(E.floor_divide), "__rfloordiv__": _reflected(
            E.floor_divide_p, "NotImplemented", lambda o, s: E._no_bool(s, o, "div_floor")),
        "__mod__": _operator(E.remainder), "__rmod__": _reflected(
            E.remainder_p, "RemainderBackward0", lambda o, s: E._no_bool(s, o, "remainder")),
        "floor_divide": E.floor_divide, "remainder": E.remainder,
        "__matmul__": _operator(L.matmul), "__rmatmul__": L._rmatmul,
        "__neg__": E.neg, "__abs__": E.abs, "__pos__": lambda self: self,
        "__eq__": _operator(E.eq), "__ne__": _operator(E.ne), "__lt__": _operator(E.lt),
        "__le__": _operator(E.le), "__gt__": _operator(E.gt), "__ge__": _operator(E.ge),
        "__and__": _operator(E.bitwise_and), "__or__": _operator(E.bitwise_or),
        "__xor__": _operator(E.bitwise_xor), "__invert__": E.bitwise_not,
        "__rand__": _operator(E.bitwise_and), "__ror__": _operator(E.bitwise_or),
        "__getitem__": I.getitem, "__setitem__": I.setitem,
    }
    for name, fn in methods.items():
        setattr(T, name, fn)
    T._refresh_history = refresh_view
    T.T = property(S._T)
    T.mT = property(S._mT)
    T.H = property(S._T)
    T.mH = property(S._mT)
