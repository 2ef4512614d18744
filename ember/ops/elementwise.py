"""Elementwise ops: arithmetic, unary math, comparisons, where, clamp.

Each primitive: forward on raw arrays, then one VJP and one JVP rule per input (see _primitive).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, make
from ._primitive import _EMPTY, apply, apply_inplace, broadcast_error, defprim
from ._util import check_tensor, compute_dtype, float_dtype, promote, scalar_or_tensor

# ----- primitives ----------------------------------------------------------------------------

add_p = defprim("add", "AddBackward0", lambda xp, a, b: a + b,
              vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: g),
              jvp=(lambda xp, t, out, a, b: t, lambda xp, t, out, a, b: t))

sub_p = defprim("sub", "SubBackward0", lambda xp, a, b: a - b,
              vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g),
              jvp=(lambda xp, t, out, a, b: t, lambda xp, t, out, a, b: -t))

mul_p = defprim("mul", "MulBackward0", lambda xp, a, b: a * b,
              vjp=(lambda xp, g, out, a, b: g * b, lambda xp, g, out, a, b: g * a),
              jvp=(lambda xp, t, out, a, b: t * b, lambda xp, t, out, a, b: a * t),
              saves=(0, 1))

# d(a/b)/db = -(a/b)/b, divided twice rather than by b*b, which under- or overflows (PyTorch's order).
div_p = defprim("div", "DivBackward0", lambda xp, a, b: xp.div(a, b),
              vjp=(lambda xp, g, out, a, b: g / b, lambda xp, g, out, a, b: -g * ((a / b) / b)),
              jvp=(lambda xp, t, out, a, b: t / b, lambda xp, t, out, a, b: -t * ((a / b) / b)),
              saves=(0, 1))

def _not_differentiable(name):
    def rule(xp, g, out, a, b):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return rule


floor_divide_p = defprim("floor_divide", "NotImplemented", lambda xp, a, b: xp.floor_divide(a, b),
                         vjp=(_not_differentiable("floor_divide"),) * 2, jvp=(_not_differentiable("floor_divide"),) * 2)

remainder_p = defprim("remainder", "RemainderBackward0", lambda xp, a, b: xp.remainder(a, b),
                      vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g * xp.floor_divide(a, b)),
                      jvp=(lambda xp, t, out, a, b: t, lambda xp, t, out, a, b: -t * xp.floor_divide(a, b)),
                      saves=(0, 1))

neg_p = defprim("neg", "NegBackward0", lambda xp, a: -a,
              vjp=lambda xp, g, out, a: -g, jvp=lambda xp, t, out, a: -t)


def _pow_scalar_grad(xp, g, a, p):
    # d/da a**p = p * a**(p-1); p == 0 is special-cased so 0 * 0**-1 never makes a NaN.
    if p == 0:
        return xp.zeros_like(g)
    return g * (xp.pow(a, p - 1) * p)


pow_scalar_p = defprim("pow", "PowBackward0", lambda xp, a, p: xp.pow(a, p),
                     vjp=lambda xp, g, out, a, p: _pow_scalar_grad(xp, g, a, p),
                     jvp=lambda xp, t, out, a, p: _pow_scalar_grad(xp, t, a, p),
                     saves=(0,))


# The special points are masked with where(), as PyTorch's formulas do, so that the mask is differentiated
# too (a where() inside the power, e.g. a ** (where(b == 0, 1, b) - 1), has the wrong derivative at b == 0).
def _pow_exponent_grad(xp, g, out, a, b):
    # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0.
    return g * xp.where((a == 0) & (b >= 0), 0.0, out * xp.log(a))


def _pow_base_grad(xp, g, out, a, b):
    # d/da a**b = b * a**(b-1), taken as 0 where b == 0 (no 0 * inf at a == 0), as PyTorch.
    return xp.where(b == 0, 0.0, g * (b * xp.pow(a, b - 1)))


pow_tensor_p = defprim("pow", "PowBackward1", lambda xp, a, b: xp.pow(a, b),
                     vjp=(_pow_base_grad, _pow_exponent_grad), jvp=(_pow_base_grad, _pow_exponent_grad),
                     saves=(0, 1), saves_out=True)


def _rpow_grad(xp, g, out, base, b):
    if base == 0:
        return g * xp.where(b >= 0, 0.0, out * -math.inf)
    return g * (out * math.log(base))


rpow_p = defprim("pow", "PowBackward2", lambda xp, base, b: xp.pow(base, b),
               vjp=(None, _rpow_grad), jvp=(None, _rpow_grad), saves=(0, 1), saves_out=True)

abs_p = defprim("abs", "AbsBackward0", lambda xp, a: xp.abs(a),
               vjp=lambda xp, g, out, a: g * xp.sign(a), jvp=lambda xp, t, out, a: t * xp.sign(a),
               saves=(0,))


def _zero_grad(xp, g, out, a):
    return xp.zeros_like(g)


sign_p = defprim("sign", "SignBackward0", lambda xp, a: xp.sign(a), vjp=_zero_grad, jvp=_zero_grad)
round_p = defprim("round", "RoundBackward0", lambda xp, a: xp.round(a), vjp=_zero_grad, jvp=_zero_grad)

exp_p = defprim("exp", "ExpBackward0", lambda xp, a: xp.exp(a),
              vjp=lambda xp, g, out, a: g * out, jvp=lambda xp, t, out, a: t * out, saves_out=True)

log_p = defprim("log", "LogBackward0", lambda xp, a: xp.log(a),
              vjp=lambda xp, g, out, a: g / a, jvp=lambda xp, t, out, a: t / a, saves=(0,))

sqrt_p = defprim("sqrt", "SqrtBackward0", lambda xp, a: xp.sqrt(a),
               vjp=lambda xp, g, out, a: g / (out * 2), jvp=lambda xp, t, out, a: t / (out * 2),
               saves_out=True)

sin_p = defprim("sin", "SinBackward0", lambda xp, a: xp.sin(a),
              vjp=lambda xp, g, out, a: g * xp.cos(a), jvp=lambda xp, t, out, a: t * xp.cos(a), saves=(0,))

cos_p = defprim("cos", "CosBackward0", lambda xp, a: xp.cos(a),
              vjp=lambda xp, g, out, a: -g * xp.sin(a), jvp=lambda xp, t, out, a: -t * xp.sin(a),
              saves=(0,))

tanh_p = defprim("tanh", "TanhBackward0", lambda xp, a: xp.tanh(a),
               vjp=lambda xp, g, out, a: g * (1 - out * out), jvp=lambda xp, t, out, a: t * (1 - out * out),
               saves_out=True)

sigmoid_p = defprim("sigmoid", "SigmoidBackward0", lambda xp, a: xp.sigmoid(a),
                  vjp=lambda xp, g, out, a: g * (out * (1 - out)),
                  jvp=lambda xp, t, out, a: t * (out * (1 - out)), saves_out=True)

relu_p = defprim("relu", "ReluBackward0", lambda xp, a: xp.relu(a),
               # where(out <= 0, 0, g), not g * (out > 0): the gradient passes at nan, as PyTorch's
               vjp=lambda xp, g, out, a: xp.where(out <= 0, 0.0, g), jvp=lambda xp, t, out, a: xp.where(out <= 0, 0.0, t),
               saves_out=True)


def _clamp_mask(a, lo, hi):
    if lo is None:
        return a <= hi
    if hi is None:
        return a >= lo
    return (a >= lo) & (a <= hi)


clamp_p = defprim("clamp", "ClampBackward1", lambda xp, a, min, max: xp.clamp(a, min, max),
                vjp=lambda xp, g, out, a, min, max: g * _clamp_mask(a, min, max),
                jvp=lambda xp, t, out, a, min, max: t * _clamp_mask(a, min, max), saves=(0,))


def _max_grad(xp, g, a, b):
    # The gradient of maximum(a, b) for a: none where a < b, half where they tie, all of it otherwise,
    # so a NaN operand (no comparison holds) receives the gradient, as in PyTorch.
    return xp.where(a < b, 0.0, xp.where(a == b, g * 0.5, g))


maximum_p = defprim("maximum", "MaximumBackward0", lambda xp, a, b: xp.maximum(a, b),
                  vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, a, b), lambda xp, g, out, a, b: _max_grad(xp, g, b, a)),
                  jvp=(lambda xp, t, out, a, b: _max_grad(xp, t, a, b), lambda xp, t, out, a, b: _max_grad(xp, t, b, a)),
                  saves=(0, 1))

minimum_p = defprim("minimum", "MinimumBackward0", lambda xp, a, b: xp.minimum(a, b),
                  vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, b, a), lambda xp, g, out, a, b: _max_grad(xp, g, a, b)),
                  jvp=(lambda xp, t, out, a, b: _max_grad(xp, t, b, a), lambda xp, t, out, a, b: _max_grad(xp, t, a, b)),
                  saves=(0, 1))


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
                         jvp=(_clamp_t_self, _clamp_t_lo, _clamp_t_hi), saves=(0, 1, 2))

where_p = defprim("where", "WhereBackward0", lambda xp, a, b, cond: xp.where(cond, a, b),
                 vjp=(lambda xp, g, out, a, b, cond: xp.where(cond, g, 0.0),
                      lambda xp, g, out, a, b, cond: xp.where(cond, 0.0, g)),
                 jvp=(lambda xp, t, out, a, b, cond: xp.where(cond, t, 0.0),
                      lambda xp, t, out, a, b, cond: xp.where(cond, 0.0, t)))

# ----- public functions ------------------------------------------------------------------------

_SCALAR_TYPES = (bool, int, float)


def _binary(prim, a, b, op, node=None):
    b = scalar_or_tensor(b, op)
    return apply(prim, (a, b), _EMPTY, node, compute_dtype(a, b))


def _check_alpha(alpha, op):
    if alpha != 1:
        raise NotImplementedError(f"ember: {op}(..., alpha=) is not supported yet; multiply the operand instead")


def add(input, other, *, alpha=1):
    check_tensor(input, "add")
    _check_alpha(alpha, "add")
    return _binary(add_p, input, other, "add")


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


def sub(input, other, *, alpha=1):
    check_tensor(input, "sub")
    _check_alpha(alpha, "sub")
    check_sub(input, other)
    return _binary(sub_p, input, other, "sub")


def mul(input, other):
    check_tensor(input, "mul")
    return _binary(mul_p, input, other, "mul")


def _no_bool(a, b, op):
    if promote(a, scalar_or_tensor(b, op)) is D.bool:
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'Bool\'')


def floor_divide(input, other):
    check_tensor(input, "floor_divide")
    _no_bool(input, other, "div_floor")
    return _binary(floor_divide_p, input, other, "floor_divide")


def remainder(input, other):
    check_tensor(input, "remainder")
    _no_bool(input, other, "remainder")
    return _binary(remainder_p, input, other, "remainder")


def _true_div_dtype(a, b):
    # True division of integers computes in the default float dtype.
    d = promote(a, b)
    return d.np if d.is_floating_point else D._default_float.np


def div(input, other, *, rounding_mode=None):
    check_tensor(input, "div")
    other = scalar_or_tensor(other, "div")
    if rounding_mode is not None:
        raise NotImplementedError("ember: div(rounding_mode=...) is not supported yet")
    return apply(div_p, (input, other), _EMPTY, None, _true_div_dtype(input, other))


def neg(input):
    check_tensor(input, "neg")
    if input._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return apply(neg_p, (input,))


def pow(input, exponent):
    """``input ** exponent`` for tensor or scalar ``input`` and ``exponent``."""
    if not isinstance(input, Tensor):
        exponent = check_tensor(exponent, "pow", "exponent", 2)
        base = scalar_or_tensor(input, "pow", "self")
        _check_not_bool(promote(base, exponent).np, "pow")
        return apply(rpow_p, (base, exponent), _EMPTY, None, promote(base, exponent).np)
    exponent = scalar_or_tensor(exponent, "pow", "exponent")
    if isinstance(exponent, Tensor):
        _check_not_bool(promote(input, exponent).np, "pow")
        return apply(pow_tensor_p, (input, exponent), _EMPTY, None, compute_dtype(input, exponent))
    return apply(pow_scalar_p, (input,), {"p": exponent}, None, compute_dtype(input, exponent))


_BOOL_UNSUPPORTED = {"abs": "abs_cpu", "round": "round_vml_cpu"}


def _unary(prim, name, needs_float=True):
    def fn(input):
        if type(input) is Tensor and input._data.dtype.kind == "f":   # the common case, first
            return apply(prim, (input,))
        check_tensor(input, name)
        if input._data.dtype.kind == "b" and not needs_float:
            if name == "relu":
                raise RuntimeError("Boolean inputs not supported for relu")
            if name == "sign":   # sign of a bool tensor is itself (NumPy has no bool sign loop)
                return make(input._data.copy())
            _check_not_bool(input._data.dtype, _BOOL_UNSUPPORTED[name])
        return apply(prim, (input,), _EMPTY, None, float_dtype(input) if needs_float else None)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``, differentiable to any order."
    return fn


exp = _unary(exp_p, "exp")
log = _unary(log_p, "log")
sqrt = _unary(sqrt_p, "sqrt")
sin = _unary(sin_p, "sin")
cos = _unary(cos_p, "cos")
tanh = _unary(tanh_p, "tanh")
sigmoid = _unary(sigmoid_p, "sigmoid")
relu = _unary(relu_p, "relu", needs_float=False)
abs = _unary(abs_p, "abs", needs_float=False)
sign = _unary(sign_p, "sign", needs_float=False)
round = _unary(round_p, "round", needs_float=False)


def _check_clamp_bool(input, dt, min, max):
    kernel = "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu" if min is None else "clamp_scalar_cpu"
    _check_not_bool(dt if dt is not None else input._data.dtype, kernel)


def clamp(input, min=None, max=None):
    check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        min, max = (scalar_or_tensor(b, "clamp") if b is not None else None for b in (min, max))
        return apply(clamp_tensor_p, (input, min, max), _EMPTY, None,
                     promote(*(x for x in (input, min, max) if x is not None)).np)
    dt = compute_dtype(input, min if min is not None else max)
    _check_clamp_bool(input, dt, min, max)
    return apply(clamp_p, (input,), {"min": min, "max": max}, None, dt)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def maximum(input, other):
    check_tensor(input, "maximum")
    check_tensor(other, "maximum", "other", 2)
    return apply(maximum_p, (input, other), _EMPTY, None, compute_dtype(input, other))


def minimum(input, other):
    check_tensor(input, "minimum")
    check_tensor(other, "minimum", "other", 2)
    return apply(minimum_p, (input, other), _EMPTY, None, compute_dtype(input, other))


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
    return apply(where_p, (input, other), {"cond": condition._data}, None, promote(input, other).np)


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
    return fn


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
    return fn


bitwise_and = _logical(np.bitwise_and, "bitwise_and")
bitwise_or = _logical(np.bitwise_or, "bitwise_or")
bitwise_xor = _logical(np.bitwise_xor, "bitwise_xor")


def bitwise_not(input):
    if input._data.dtype.kind == "f":
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return make(np.asarray(np.invert(input._data)))


def logical_not(input):
    return make(np.asarray(np.logical_not(input._data)))


def isnan(input):
    return make(np.asarray(np.isnan(input._data)))


def isinf(input):
    return make(np.asarray(np.isinf(input._data)))


def isfinite(input):
    return make(np.asarray(np.isfinite(input._data)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return make(np.asarray(np.isclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def equal(input, other) -> bool:
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


# ----- in-place variants ---------------------------------------------------------------------

def _inplace_binary(prim, name):
    def fn(self, other, **kw):
        if kw.get("alpha", 1) != 1:
            raise NotImplementedError(f"ember: {name}(..., alpha=) is not supported yet")
        other = scalar_or_tensor(other, name)
        if prim is sub_p:
            check_sub(self, other)
        return apply_inplace(prim, self, (other,), _EMPTY, None, compute_dtype(self, other))
    fn.__name__ = fn.__qualname__ = name
    return fn


iadd = _inplace_binary(add_p, "add_")
isub = _inplace_binary(sub_p, "sub_")
imul = _inplace_binary(mul_p, "mul_")


def idiv(self, other):
    other = scalar_or_tensor(other, "div_")
    return apply_inplace(div_p, self, (other,), _EMPTY, None, _true_div_dtype(self, other))


def ipow(self, exponent):
    exponent = scalar_or_tensor(exponent, "pow_")
    if isinstance(exponent, Tensor):
        return apply_inplace(pow_tensor_p, self, (exponent,), _EMPTY, None, compute_dtype(self, exponent))
    return apply_inplace(pow_scalar_p, self, (), {"p": exponent}, None, compute_dtype(self, exponent))


def iclamp(self, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        raise NotImplementedError("ember: clamp_ with tensor bounds is not supported yet")
    dt = compute_dtype(self, min if min is not None else max)
    _check_clamp_bool(self, dt, min, max)
    return apply_inplace(clamp_p, self, (), {"min": min, "max": max}, None, dt)


def _unary_inplace(prim, name):
    def fn(self):
        return apply_inplace(prim, self, (), _EMPTY)
    fn.__name__ = fn.__qualname__ = name
    return fn


_INPLACE_UNARY = {name: _unary_inplace(p, name) for name, p in (
    ("exp_", exp_p), ("log_", log_p), ("sqrt_", sqrt_p), ("sin_", sin_p), ("cos_", cos_p), ("tanh_", tanh_p),
    ("sigmoid_", sigmoid_p), ("relu_", relu_p), ("abs_", abs_p), ("neg_", neg_p), ("sign_", sign_p),
    ("round_", round_p))}
