"""Elementwise ops: arithmetic, unary math, comparisons, where, clamp.

Each primitive: forward on raw arrays, one VJP rule per input, and its JVP (or its kind; see _primitive).
Each public op is registered once with the names PyTorch gives it (see _registry).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ._primitive import _EMPTY, KEEP_DTYPE, PrimNode, apply, broadcast_error, defprim
from ._registry import graph, method, register
from ._util import check_tensor, promote, scalar_or_tensor
from ._views import apply_inplace

# ----- primitives ----------------------------------------------------------------------------

add_p = defprim("add", "AddBackward0", lambda xp, a, b: a + b,
                vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: g), jvp="linear", promote="standard")

sub_p = defprim("sub", "SubBackward0", lambda xp, a, b: a - b,
                vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g), jvp="linear", promote="standard")

mul_p = defprim("mul", "MulBackward0", lambda xp, a, b: a * b,
                vjp=(lambda xp, g, out, a, b: g * b, lambda xp, g, out, a, b: g * a), jvp="multilinear",
                saves=(0, 1), promote="standard")

# d(a/b)/db = -(a/b)/b, divided twice rather than by b*b, which under- or overflows (PyTorch's order).
div_p = defprim("div", "DivBackward0", lambda xp, a, b: xp.div(a, b),
                vjp=(lambda xp, g, out, a, b: g / b, lambda xp, g, out, a, b: -g * ((a / b) / b)),
                jvp="elementwise", saves=(0, 1), promote="float")


def _not_differentiable(name):
    def rule(xp, g, out, a, b):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return rule


floor_divide_p = defprim("floor_divide", "NotImplemented", lambda xp, a, b: xp.floor_divide(a, b),
                         vjp=(_not_differentiable("floor_divide"),) * 2, jvp="elementwise", promote="standard")

remainder_p = defprim("remainder", "RemainderBackward0", lambda xp, a, b: xp.remainder(a, b),
                      vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g * xp.floor_divide(a, b)),
                      jvp="elementwise", saves=(0, 1), promote="standard")

neg_p = defprim("neg", "NegBackward0", lambda xp, a: -a, vjp=lambda xp, g, out, a: -g, jvp="linear")


def _pow_scalar_grad(xp, g, out, a, p):
    # d/da a**p = p * a**(p-1); p == 0 is special-cased so 0 * 0**-1 never makes a NaN.
    if p == 0:
        return xp.zeros_like(g)
    return g * (xp.pow(a, p - 1) * p)


pow_scalar_p = defprim("pow", "PowBackward0", lambda xp, a, p: xp.pow(a, p),
                       vjp=(_pow_scalar_grad, None), jvp="elementwise", saves=(0,), promote="standard")


# The special points are masked with where(), as PyTorch's formulas do, so that the mask is differentiated
# too (a where() inside the power, e.g. a ** (where(b == 0, 1, b) - 1), has the wrong derivative at b == 0).
def _pow_exponent_grad(xp, g, out, a, b):
    # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0.
    return g * xp.where((a == 0) & (b >= 0), 0.0, out * xp.log(a))


def _pow_base_grad(xp, g, out, a, b):
    # d/da a**b = b * a**(b-1), taken as 0 where b == 0 (no 0 * inf at a == 0), as PyTorch.
    return xp.where(b == 0, 0.0, g * (b * xp.pow(a, b - 1)))


pow_tensor_p = defprim("pow", "PowBackward1", lambda xp, a, b: xp.pow(a, b),
                       vjp=(_pow_base_grad, _pow_exponent_grad), jvp="elementwise", saves=(0, 1), saves_out=True,
                       promote="standard")


def _rpow_grad(xp, g, out, base, b):
    if base == 0:
        return g * xp.where(b >= 0, 0.0, out * -math.inf)
    return g * (out * math.log(base))


rpow_p = defprim("pow", "PowBackward2", lambda xp, base, b: xp.pow(base, b),
                 vjp=(None, _rpow_grad), jvp="elementwise", saves=(1,), saves_out=True, promote="standard")

abs_p = defprim("abs", "AbsBackward0", lambda xp, a: xp.abs(a),
                vjp=lambda xp, g, out, a: g * xp.sign(a), jvp="elementwise", saves=(0,))


def _zero_grad(xp, g, out, a):
    return xp.zeros_like(g)


sign_p = defprim("sign", "SignBackward0", lambda xp, a: xp.sign(a), vjp=_zero_grad, jvp="elementwise")
round_p = defprim("round", "RoundBackward0", lambda xp, a: xp.round(a), vjp=_zero_grad, jvp="elementwise")

exp_p = defprim("exp", "ExpBackward0", lambda xp, a: xp.exp(a),
                vjp=lambda xp, g, out, a: g * out, jvp="elementwise", saves_out=True, promote="float")

log_p = defprim("log", "LogBackward0", lambda xp, a: xp.log(a),
                vjp=lambda xp, g, out, a: g / a, jvp="elementwise", saves=(0,), promote="float")

sqrt_p = defprim("sqrt", "SqrtBackward0", lambda xp, a: xp.sqrt(a),
                 vjp=lambda xp, g, out, a: g / (out * 2), jvp="elementwise", saves_out=True, promote="float")

sin_p = defprim("sin", "SinBackward0", lambda xp, a: xp.sin(a),
                vjp=lambda xp, g, out, a: g * xp.cos(a), jvp="elementwise", saves=(0,), promote="float")

cos_p = defprim("cos", "CosBackward0", lambda xp, a: xp.cos(a),
                vjp=lambda xp, g, out, a: -g * xp.sin(a), jvp="elementwise", saves=(0,), promote="float")

tanh_p = defprim("tanh", "TanhBackward0", lambda xp, a: xp.tanh(a),
                 vjp=lambda xp, g, out, a: g * (1 - out * out), jvp="elementwise", saves_out=True, promote="float")

sigmoid_p = defprim("sigmoid", "SigmoidBackward0", lambda xp, a: xp.sigmoid(a),
                    vjp=lambda xp, g, out, a: g * (out * (1 - out)), jvp="elementwise", saves_out=True,
                    promote="float")

# where(out <= 0, 0, g), not g * (out > 0): the gradient passes at nan, as PyTorch's.
relu_p = defprim("relu", "ReluBackward0", lambda xp, a: xp.relu(a),
                 vjp=lambda xp, g, out, a: xp.where(out <= 0, 0.0, g), jvp="elementwise", saves_out=True)


def _clamp_grad(xp, g, out, a, lo, hi):
    if lo is None:
        return g * (a <= hi)
    if hi is None:
        return g * (a >= lo)
    return g * ((a >= lo) & (a <= hi))


# Scalar bounds are inputs (not params) so that the declared promotion sees them: clamp(int_tensor, 0.5).
clamp_p = defprim("clamp", "ClampBackward1", lambda xp, a, lo, hi: xp.clamp(a, lo, hi),
                  vjp=(_clamp_grad, None, None), jvp="elementwise", saves=(0,), promote="standard")


def _max_grad(xp, g, a, b):
    # The gradient of maximum(a, b) for a: none where a < b, half where they tie, all of it otherwise,
    # so a NaN operand (no comparison holds) receives the gradient, as in PyTorch.
    return xp.where(a < b, 0.0, xp.where(a == b, g * 0.5, g))


maximum_p = defprim("maximum", "MaximumBackward0", lambda xp, a, b: xp.maximum(a, b),
                    vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, a, b),
                         lambda xp, g, out, a, b: _max_grad(xp, g, b, a)),
                    jvp="elementwise", saves=(0, 1), promote="standard")

minimum_p = defprim("minimum", "MinimumBackward0", lambda xp, a, b: xp.minimum(a, b),
                    vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, b, a),
                         lambda xp, g, out, a, b: _max_grad(xp, g, a, b)),
                    jvp="elementwise", saves=(0, 1), promote="standard")


def _clamp_t(xp, a, lo, hi):
    if lo is not None:
        a = xp.maximum(a, lo)
    return a if hi is None else xp.minimum(a, hi)


def _clamp_t_self(xp, g, out, a, lo, hi):
    # PyTorch's clamp with tensor bounds: ties go to self; min > max gives max.
    mask = a == a
    if lo is not None:
        mask = mask & (a >= lo)
    if hi is not None:
        mask = mask & (a <= hi)
    return g * mask


def _clamp_t_lo(xp, g, out, a, lo, hi):
    return g * ((a < lo) & (lo < hi)) if hi is not None else g * (a < lo)


def _clamp_t_hi(xp, g, out, a, lo, hi):
    return g * ((a > hi) | (hi < lo)) if lo is not None else g * (a > hi)


clamp_tensor_p = defprim("clamp", "ClampBackward0", _clamp_t, vjp=(_clamp_t_self, _clamp_t_lo, _clamp_t_hi),
                         jvp="elementwise", saves=(0, 1, 2), promote="standard")

where_p = defprim("where", "WhereBackward0", lambda xp, a, b, cond: xp.where(cond, a, b),
                  vjp=(lambda xp, g, out, a, b, cond: xp.where(cond, g, 0.0),
                       lambda xp, g, out, a, b, cond: xp.where(cond, 0.0, g)),
                  jvp="linear", promote="standard")

# ----- public functions ------------------------------------------------------------------------


def _binary(prim, a, b, op):
    return apply(prim, (a, scalar_or_tensor(b, op)))


def _scaled(other, alpha, op):
    """``alpha * other`` for add/sub's ``alpha=`` (a Python scalar stays one)."""
    if alpha == 1:
        return other
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise TypeError(f"{op}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    if isinstance(other, Tensor) and other._data.dtype.kind != "f" and isinstance(alpha, float):
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating point number.")
    return other * alpha


@register(method=True)
def add(input, other, *, alpha=1):
    check_tensor(input, "add")
    other = scalar_or_tensor(other, "add")
    return apply(add_p, (input, _scaled(other, alpha, "add")))


def _is_bool(x):
    return type(x) is bool or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def check_sub(a, b):
    """PyTorch refuses ``-`` when either operand is bool (a Python bool too)."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _check_not_bool(np_dtype, kernel):
    if np_dtype is not None and np_dtype.kind == "b":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


@register(method=True, aliases=("subtract",))
def sub(input, other, *, alpha=1):
    check_tensor(input, "sub")
    other = scalar_or_tensor(other, "sub")
    check_sub(input, other)
    return apply(sub_p, (input, _scaled(other, alpha, "sub")))


@register(method=True, aliases=("multiply",))
def mul(input, other):
    check_tensor(input, "mul")
    return _binary(mul_p, input, other, "mul")


def _no_bool(a, b, op):
    if promote(a, scalar_or_tensor(b, op)) is D.bool:
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'Bool\'')


@register(method=True, graph=True)
def floor_divide(input, other):
    check_tensor(input, "floor_divide")
    _no_bool(input, other, "div_floor")
    return _binary(floor_divide_p, input, other, "floor_divide")


@register(method=True, graph=True)
def remainder(input, other):
    check_tensor(input, "remainder")
    _no_bool(input, other, "remainder")
    return _binary(remainder_p, input, other, "remainder")


@register(method=True, aliases=("divide", "true_divide"), graph=True)
def div(input, other, *, rounding_mode=None):
    check_tensor(input, "div")
    other = scalar_or_tensor(other, "div")
    if rounding_mode is not None:
        raise NotImplementedError("ember: div(rounding_mode=...) is not supported yet")
    return apply(div_p, (input, other))


@register(method=True, aliases=("negative",))
def neg(input):
    check_tensor(input, "neg")
    if input._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return apply(neg_p, (input,))


@register(method=True, graph=True)
def pow(input, exponent):
    """``input ** exponent`` for tensor or scalar ``input`` and ``exponent``."""
    if not isinstance(input, Tensor):
        exponent = check_tensor(exponent, "pow", "exponent", 2)
        base = scalar_or_tensor(input, "pow", "self")
        _check_not_bool(promote(base, exponent).np, "pow")
        return apply(rpow_p, (base, exponent))
    exponent = scalar_or_tensor(exponent, "pow", "exponent")
    if isinstance(exponent, Tensor):
        _check_not_bool(promote(input, exponent).np, "pow")
        return apply(pow_tensor_p, (input, exponent))
    return apply(pow_scalar_p, (input, exponent))


_BOOL_UNSUPPORTED = {"abs": "abs_cpu", "round": "round_vml_cpu"}


def _unary(prim, name, needs_float=True, aliases=(), inplace_fn=False):
    """A unary op: ``ember.<name>``, ``Tensor.<name>`` and the in-place ``Tensor.<name>_`` (also
    ``ember.<name>_`` where PyTorch has it)."""
    def fn(input):
        if type(input) is Tensor and input._data.dtype.kind == "f":   # the common case, first
            return apply(prim, (input,), _EMPTY, None, KEEP_DTYPE)
        check_tensor(input, name)
        if input._data.dtype.kind == "b" and not needs_float:
            if name == "relu":
                raise RuntimeError("Boolean inputs not supported for relu")
            if name == "sign":   # sign of a bool tensor is itself (NumPy has no bool sign loop)
                return make(input._data.copy())
            _check_not_bool(input._data.dtype, _BOOL_UNSUPPORTED[name])
        return apply(prim, (input,))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``, differentiable to any order."

    def inplace(self):
        return apply_inplace(prim, self, ())
    inplace.__name__ = inplace.__qualname__ = name + "_"
    register(fn, method=True, aliases=aliases, graph=True)
    register(inplace, module=inplace_fn, method=True)
    return fn


exp = _unary(exp_p, "exp", inplace_fn=True)
log = _unary(log_p, "log", inplace_fn=True)
sqrt = _unary(sqrt_p, "sqrt", inplace_fn=True)
sin = _unary(sin_p, "sin", inplace_fn=True)
cos = _unary(cos_p, "cos", inplace_fn=True)
tanh = _unary(tanh_p, "tanh", inplace_fn=True)
sigmoid = _unary(sigmoid_p, "sigmoid", inplace_fn=True)
relu = _unary(relu_p, "relu", needs_float=False, inplace_fn=True)
abs = _unary(abs_p, "abs", needs_float=False, aliases=("absolute",), inplace_fn=True)
sign = _unary(sign_p, "sign", needs_float=False)
round = _unary(round_p, "round", needs_float=False, inplace_fn=True)
register(lambda self: apply_inplace(neg_p, self, ()), name="neg_", method=True)


def _clamp_args(input, min, max, op):
    check_tensor(input, op)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    tensor_bounds = isinstance(min, Tensor) or isinstance(max, Tensor)
    min, max = (scalar_or_tensor(b, op) if b is not None else None for b in (min, max))
    if not tensor_bounds:
        kernel = "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu" if min is None else \
            "clamp_scalar_cpu"
        _check_not_bool(promote(*(x for x in (input, min, max) if x is not None)).np, kernel)
    return (clamp_tensor_p if tensor_bounds else clamp_p), (input, min, max)


@register(method=True, aliases=("clip",), graph=True)
def clamp(input, min=None, max=None):
    prim, args = _clamp_args(input, min, max, "clamp")
    return apply(prim, args)


@register(method=True)
def clamp_min(input, min):
    return clamp(input, min=min)


@register(method=True)
def clamp_max(input, max):
    return clamp(input, max=max)


@register(method=True, graph=True)
def maximum(input, other):
    check_tensor(input, "maximum")
    check_tensor(other, "maximum", "other", 2)
    return apply(maximum_p, (input, other))


@register(method=True, graph=True)
def minimum(input, other):
    check_tensor(input, "minimum")
    check_tensor(other, "minimum", "other", 2)
    return apply(minimum_p, (input, other))


@register
def where(condition, input=None, other=None):
    """``where(cond, x, y)``: x where cond holds, else y. ``where(cond)`` gives nonzero indices."""
    check_tensor(condition, "where", "condition")
    if input is None and other is None:
        return tuple(make(i) for i in np.nonzero(condition._data))
    if condition._data.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype}")
    input = scalar_or_tensor(input, "where", "input")
    other = scalar_or_tensor(other, "where", "other")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("where(): at least one of 'input' and 'other' must be a Tensor")
    return apply(where_p, (input, other), {"cond": condition._data})


method("where", lambda self, condition, other: where(condition, self, other))


@graph("where")
def _graph_where(cond, a, b):
    # rules pass raw boolean masks (saved params) as well as tensors
    return where(cond if isinstance(cond, Tensor) else make(cond), a, b)


# ----- comparisons and logic (not differentiable) ----------------------------------------------

def _compare(ufunc, name):
    def fn(input, other):
        other = scalar_or_tensor(other, name)
        b = other._data if isinstance(other, Tensor) else other
        try:
            return make(np.asarray(ufunc(input._data, b)))
        except ValueError:
            err = broadcast_error((input._data.shape, other._data.shape))
            raise (err or RuntimeError(f"{name}(): bad operands")) from None
    fn.__name__ = fn.__qualname__ = name
    return register(fn, method=True)


eq = _compare(np.equal, "eq")
ne = _compare(np.not_equal, "ne")
lt = _compare(np.less, "lt")
le = _compare(np.less_equal, "le")
gt = _compare(np.greater, "gt")
ge = _compare(np.greater_equal, "ge")


def _logical(ufunc, name):
    def fn(input, other):
        other = scalar_or_tensor(other, name)
        if input._data.dtype.kind == "f" or (isinstance(other, Tensor) and other._data.dtype.kind == "f") \
                or type(other) is float:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Float'")
        b = other._data if isinstance(other, Tensor) else other
        return make(np.asarray(ufunc(input._data, b)))
    fn.__name__ = fn.__qualname__ = name
    return register(fn, method=True)


bitwise_and = _logical(np.bitwise_and, "bitwise_and")
bitwise_or = _logical(np.bitwise_or, "bitwise_or")
bitwise_xor = _logical(np.bitwise_xor, "bitwise_xor")


@register(method=True)
def bitwise_not(input):
    if input._data.dtype.kind == "f":
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return make(np.asarray(np.invert(input._data)))


@register(method=True)
def logical_not(input):
    return make(np.asarray(np.logical_not(input._data)))


@register(method=True, graph=True)
def isnan(input):
    return make(np.asarray(np.isnan(input._data)))


@register(method=True)
def isinf(input):
    return make(np.asarray(np.isinf(input._data)))


@register(method=True)
def isfinite(input):
    return make(np.asarray(np.isfinite(input._data)))


@register(method=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


@register(method=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return make(np.asarray(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@register(method=True)
def equal(input, other) -> bool:
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


# ----- in-place variants ---------------------------------------------------------------------

def _inplace_binary(prim, name, check=None):
    def fn(self, other, *, alpha=1):
        other = scalar_or_tensor(other, name)
        if check is not None:
            check(self, other)
        return apply_inplace(prim, self, (_scaled(other, alpha, name),))
    fn.__name__ = fn.__qualname__ = name
    return register(fn, module=False, method=True)


iadd = _inplace_binary(add_p, "add_")
isub = _inplace_binary(sub_p, "sub_", check_sub)
imul = _inplace_binary(mul_p, "mul_")


@register(name="div_", module=False, method=True)
def idiv(self, other):
    return apply_inplace(div_p, self, (scalar_or_tensor(other, "div_"),))


@register(name="pow_", module=False, method=True)
def ipow(self, exponent):
    exponent = scalar_or_tensor(exponent, "pow_")
    return apply_inplace(pow_tensor_p if isinstance(exponent, Tensor) else pow_scalar_p, self, (exponent,))


@register(name="clamp_", method=True)
def iclamp(self, min=None, max=None):
    prim, args = _clamp_args(self, min, max, "clamp_")
    return apply_inplace(prim, self, args[1:])


register(lambda self, min: iclamp(self, min=min), name="clamp_min_", method=True)
register(lambda self, max: iclamp(self, max=max), name="clamp_max_", method=True)


# ----- operators --------------------------------------------------------------------------------

def _operator(fn, prim=None):
    """A binary operator method: NotImplemented for operand types it does not know, so Python can
    try the other side. With ``prim``, float tensors with a float/int scalar or a same-dtype tensor
    take a fast path: no promotion and no bool checks are needed there."""
    def op(self, other):
        if prim is not None and self._data.dtype.kind == "f":
            to = type(other)
            if to is float or to is int or (to is Tensor and other._data.dtype == self._data.dtype):
                return apply(prim, (self, other), _EMPTY, None, KEEP_DTYPE)
        try:
            return fn(self, other)
        except TypeError:
            if isinstance(other, (Tensor, bool, int, float)):
                raise
            return NotImplemented
    return op


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
        return apply(prim, (other, self), _EMPTY, node)
    return fn


def _rtruediv(self, other):
    try:
        other = scalar_or_tensor(other, "div")
    except TypeError:
        return NotImplemented
    # PyTorch computes ``2 / x`` as ``x.reciprocal() * 2``, hence its grad_fn name.
    return apply(div_p, (other, self), _EMPTY, node_class("MulBackward0", PrimNode))


for _name, _fn in {
        "__add__": _operator(add, add_p), "__radd__": _operator(add, add_p), "__iadd__": iadd,
        "__sub__": _operator(sub, sub_p), "__rsub__": _reflected(sub_p, "RsubBackward1", check_sub),
        "__isub__": isub,
        "__mul__": _operator(mul, mul_p), "__rmul__": _operator(mul, mul_p), "__imul__": imul,
        "__truediv__": _operator(div, div_p), "__rtruediv__": _rtruediv, "__itruediv__": idiv,
        "__pow__": _operator(pow), "__rpow__": lambda self, other: pow(other, self), "__ipow__": ipow,
        "__floordiv__": _operator(floor_divide),
        "__rfloordiv__": _reflected(floor_divide_p, "NotImplemented", lambda o, s: _no_bool(s, o, "div_floor")),
        "__mod__": _operator(remainder),
        "__rmod__": _reflected(remainder_p, "RemainderBackward0", lambda o, s: _no_bool(s, o, "remainder")),
        "__neg__": neg, "__abs__": abs, "__pos__": lambda self: self,
        "__eq__": _operator(eq), "__ne__": _operator(ne), "__lt__": _operator(lt),
        "__le__": _operator(le), "__gt__": _operator(gt), "__ge__": _operator(ge),
        "__and__": _operator(bitwise_and), "__or__": _operator(bitwise_or),
        "__xor__": _operator(bitwise_xor), "__invert__": bitwise_not,
        "__rand__": _operator(bitwise_and), "__ror__": _operator(bitwise_or)}.items():
    method(_name, _fn)
