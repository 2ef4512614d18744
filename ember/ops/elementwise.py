"""Elementwise ops: arithmetic, unary math, special functions, comparisons, logic, where, clamp.

Each primitive: forward on raw arrays, one VJP rule per input, and its JVP (or its kind; see _primitive).
Each public op is registered once with the names PyTorch gives it (see _registry). Derivative formulas
follow PyTorch's tools/autograd/derivatives.yaml, including its conventions at kinks, ties and NaNs.
"""
from __future__ import annotations

import cmath
import math
import operator

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ..autograd._primitive import (
    _EMPTY,
    KEEP_DTYPE,
    _state,
    KEEP_NUMBERS,
    PrimNode,
    apply,
    apply_saving,
    broadcast_error,
    defprim,
    fast_operator,
    fast_unary,
    reordered)
from ._registry import graph, graph_raw, method, register
from ..autograd import _batching
from ..autograd._primitive import PRIMITIVES as _PRIMITIVES
_FIRST_PRIM = len(_PRIMITIVES)   # (vmap: every primitive this family declares is elementwise; see the end)
from ._schema import schema
from .._util import (F8_CHARS, SHELL_CHARS, bf16_in_float32, check_tensor, compute_dtype, promote, refuse_shell,
                     return_type, scalar_or_tensor, shell_chars)
from ..autograd._views import apply_inplace


# ----- numbers at the API boundary: Python's, or an array library's scalars (np.float32(2.0)) ---------------

def is_array_scalar(x) -> bool:
    """Whether ``x`` is an array library's scalar (``np.float32(2.0)``, ``np.bool_(True)``): it has ``.item()``
    but, unlike arrays and Tensors, no length."""
    return hasattr(x, "item") and not hasattr(x, "__len__")


def scalar_value(x):
    """``x`` as the Python number it holds when it is an array library's scalar; anything else as it is."""
    return x.item() if is_array_scalar(x) else x


def is_int(x) -> bool:
    """Whether ``x`` is an integer, Python's or an array library's (``np.int64(3)``), and no bool."""
    v = scalar_value(x)
    return isinstance(v, int) and not isinstance(v, bool)


def is_real(x) -> bool:
    """Whether ``x`` is an int or a float, Python's or an array library's (``np.float32(0.5)``), and no bool."""
    v = scalar_value(x)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)

# ----- primitives: arithmetic ------------------------------------------------------------------------

# float16 * or / a Python number: PyTorch's CPU kernels keep the number as it was given (a wrapped number),
# compute in float32 and round once (``xp.half_number_op``); NumPy would round the number to float16 first. (Its add
# and sub do round the number to float16 first, as NumPy.) A float beside a float32/float64 array goes in as the
# device's cached 0-d array (``xp.weak_number``). Under create_graph ``a`` is a Tensor: its dtype is never _F16,
# and graph_ns's weak_number gives the number back. bfloat16 (_BF16) is computed as float16.
_F16 = D.float16.np
_BF16 = D.bfloat16.np


def _scalar_kernel(op, half: bool = False):
    """The forward kernel of ``a OP b`` (also the rules' ``g * b``: under create_graph ``g`` is a Tensor and takes
    the plain path); ``half``: float16 OP a Python number as PyTorch's kernels (above)."""
    def kernel(xp, a, b):
        tb = type(b)
        if tb is float:
            if half and (a.dtype is _F16 or a.dtype is _BF16):
                return xp.half_number_op(op, a, b)
            return op(a, xp.weak_number(a, b))
        if tb is int and (a.dtype is _F16 or a.dtype is _BF16):
            if half:
                return xp.half_number_op(op, a, b)
            if a.dtype is _BF16 and not -2 ** 63 <= b < 2 ** 63:   # ml_dtypes takes no int beyond int64
                return op(a, xp.weak_number(a, float(b)))
        return op(a, b)
    return kernel


graph("weak_number", lambda a, b: b)
graph("half_number_op", lambda op, a, s: op(a, s))
graph("simd_positions", lambda shape, *xs: None)   # bfloat16 (raw arrays only)

_mul = _scalar_kernel(operator.mul, half=True)
_add = _scalar_kernel(operator.add)
_sub = _scalar_kernel(operator.sub)


def _div(xp, a, b):
    if (type(b) is float or type(b) is int) and (a.dtype is _F16 or a.dtype is _BF16):
        return xp.half_number_op(operator.truediv, a, b)
    return xp.div(a, b)


def _div_grad(xp, g, out, a, b):
    if (type(b) is float or type(b) is int) and (g.dtype is _F16 or g.dtype is _BF16):
        return xp.half_number_op(operator.truediv, g, b)
    return g / b


add_p = defprim("add", _add,
                vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: g), jvp="linear", promote="standard",
                batch=True, complex=True)

sub_p = defprim("sub", _sub,
                vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g), jvp="linear", promote="standard",
                batch=True, complex=True)

# add/sub with alpha != 1 on floating and complex tensors: ``a + alpha*b`` rounded once (PyTorch's CPU kernel is a
# fused multiply-add; xp.add_alpha), one AddBackward0/SubBackward0 node that keeps alpha (grad_fn._saved_alpha).
# The gradient of b is ``g * alpha`` in its dtype, and the forward-mode tangent ``t_a + t_b * alpha``: PyTorch's
# formulas, rounded as there.
graph("add_alpha", lambda a, b, alpha: apply(add_alpha_p, (a, b), {"alpha": alpha}))
add_alpha_p = defprim("add_alpha", lambda xp, a, b, alpha: xp.add_alpha(a, b, alpha), node="AddBackward0",
                      vjp=(lambda xp, g, out, a, b, alpha: g, lambda xp, g, out, a, b, alpha: _mul(xp, g, alpha)),
                      jvp=(lambda xp, t, out, a, b, alpha: t, lambda xp, t, out, a, b, alpha: _mul(xp, t, alpha)),
                      promote="standard", batch=True, complex=True)
sub_alpha_p = defprim("sub_alpha", lambda xp, a, b, alpha: xp.add_alpha(a, b, -alpha), node="SubBackward0",
                      vjp=(lambda xp, g, out, a, b, alpha: g, lambda xp, g, out, a, b, alpha: _mul(xp, -g, alpha)),
                      jvp=(lambda xp, t, out, a, b, alpha: t, lambda xp, t, out, a, b, alpha: -_mul(xp, t, alpha)),
                      promote="standard", batch=True, complex=True)

mul_p = defprim("mul", _mul,
                vjp=(lambda xp, g, out, a, b: _mul(xp, g, b), lambda xp, g, out, a, b: _mul(xp, g, a)),
                jvp="multilinear", saves={0: (1,), 1: (0,)}, promote="standard", batch=True, complex=True)

# d(a/b)/db = -(a/b)/b, divided twice rather than by b*b, which under- or overflows (PyTorch's order).
div_p = defprim("div", _div,
                vjp=(_div_grad, lambda xp, g, out, a, b: -g * ((a / b) / b)),
                jvp="elementwise", saves={0: (1,), 1: (0, 1)}, promote="float", batch=True, complex=True)
KEEP_NUMBERS.update((mul_p, div_p))   # bfloat16 * a number: the number in float32 (half_number_op)


def _not_differentiable(name):
    def rule(xp, g, out, *args, **params):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    return rule


def _zero(xp, g, out, *args, **params):
    return xp.zeros_like(g)


floor_divide_p = defprim("floor_divide", lambda xp, a, b: xp.floor_divide(a, b),
                         node="NotImplemented",
                         vjp=(_not_differentiable("floor_divide"),) * 2, jvp="elementwise", promote="standard")

# div(rounding_mode='trunc'/'floor'): piecewise constant, PyTorch's gradient is zero.
div_mode_p = defprim("div", lambda xp, a, b, mode: xp.div_rounded(a, b, mode),
                     node="DivBackward2", vjp=(_zero, _zero), jvp="elementwise", promote="standard", batch=True)

# remainder(a, b) = a - floor(a / b) * b and fmod(a, b) = a - trunc(a / b) * b: the quotient is piecewise
# constant, so d/db is minus the rounded quotient (written with div_rounded, whose own derivative is zero,
# so second derivatives work).
remainder_p = defprim("remainder", lambda xp, a, b: xp.remainder(a, b),
                      node="RemainderBackward1",
                      vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g * xp.div_rounded(a, b, "floor")),
                      jvp="elementwise", saves={0: (1,), 1: (1,)}, promote="standard", batch=True)
remainder_scalar_p = defprim("remainder", lambda xp, a, b: xp.remainder(a, b),
                             vjp=(lambda xp, g, out, a, b: g, None), jvp="elementwise", promote="standard",
                             scalar_args=(1,), batch=True)
rremainder_p = defprim("remainder", lambda xp, a, b: xp.remainder(a, b),
                       node="NotImplemented",
                       vjp=(None, _not_differentiable("remainder")), jvp="elementwise", promote="standard")
fmod_p = defprim("fmod", lambda xp, a, b: xp.fmod(a, b),
                 node="FmodBackward1",
                 vjp=(lambda xp, g, out, a, b: g, lambda xp, g, out, a, b: -g * xp.div_rounded(a, b, "trunc")),
                 jvp="elementwise", saves={0: (1,), 1: (1,)}, promote="standard", batch=True)
fmod_scalar_p = defprim("fmod", lambda xp, a, b: xp.fmod(a, b),
                        vjp=(lambda xp, g, out, a, b: g, None), jvp="elementwise", promote="standard",
                        scalar_args=(1,), batch=True)

neg_p = defprim("neg", lambda xp, a: -a, vjp=lambda xp, g, out, a: -g, jvp="linear", batch=True)


def _pow_scalar_grad(xp, g, out, a, p):
    # d/da a**p = p * a**(p-1); p == 0 is special-cased so 0 * 0**-1 never makes a NaN.
    if p == 0:
        return xp.zeros_like(g)
    return g * (xp.pow(a, p - 1) * p)


pow_scalar_p = defprim("pow", lambda xp, a, p: xp.pow(a, p),
                       vjp=(_pow_scalar_grad, None), jvp="elementwise", saves=(0,), promote="standard",
                       scalar_args=(1,), saved_names=("self", "exponent"), batch=True, complex=True)


# The special points are masked with where(), as PyTorch's formulas do, so that the mask is differentiated
# too (a where() inside the power, e.g. a ** (where(b == 0, 1, b) - 1), has the wrong derivative at b == 0).
def _pow_exponent_grad(xp, g, out, a, b):
    # d/db a**b = a**b * log(a); PyTorch defines it as 0 where a == 0 and b >= 0 (a complex b: real and >= 0).
    return g * xp.where((a == 0) & _nonneg_exponent(xp, b), 0.0, out * xp.log(a))


def _nonneg_exponent(xp, b):
    """PyTorch's condition of a zero gradient at base 0: b >= 0 (a complex b: real and >= 0)."""
    return (xp.real(b) >= 0) & (xp.imag(b) == 0) if complex_values(b) else b >= 0


def _pow_base_grad(xp, g, out, a, b):
    # d/da a**b = b * a**(b-1), taken as 0 where b == 0 (no 0 * inf at a == 0), as PyTorch.
    return xp.where(b == 0, 0.0, g * (b * xp.pow(a, b - 1)))


pow_tensor_p = defprim("pow", lambda xp, a, b: xp.pow(a, b),
                       node="PowBackward1",
                       vjp=(_pow_base_grad, _pow_exponent_grad), jvp="elementwise", saves=(0, 1), saves_out=True,
                       promote="standard", saved_names=("self", "exponent"), batch=True, complex=True)


def _rpow_grad(xp, g, out, base, b):
    if base == 0:
        return g * xp.where(_nonneg_exponent(xp, b), 0.0, out * -math.inf)
    return g * (out * (cmath.log(base) if type(base) is complex else math.log(base)))


rpow_p = defprim("pow", lambda xp, base, b: xp.pow(base, b),
                 node="PowBackward2",
                 vjp=(None, _rpow_grad), jvp="elementwise", saves=(1,), saves_out=True, promote="standard",
                 scalar_args=(0,), saved_names=("self", "exponent"), batch=True, complex=True)

# ----- primitives: unary ---------------------------------------------------------------------------------

def _sgn_rule(xp, v, out, a):
    # d(z/|z|) applied to v (the VJP and the JVP have this one form): (v - sgn real(conj(sgn) v)) / |z|, 0 at z = 0
    r = xp.abs(a)
    return xp.where(r == 0, 0.0, (v - out * xp.real(xp.conj(out) * v)) / r)


abs_p = defprim("abs", lambda xp, a: xp.abs(a),
                vjp=lambda xp, g, out, a: g * xp.sign(a), jvp="elementwise", saves=(0,), batch=True,
                # complex: PyTorch's g * sgn(z), and the tangent real(conj(t) sgn(z))
                complex=(lambda xp, g, out, a: g * xp.sgn(a), lambda xp, t, out, a: xp.real(xp.conj(t) * xp.sgn(a))))


def _unary_prim(name, node, forward, rule, saves=(0,), saves_out=False, promote="float", complex=False):
    return defprim(name, forward, node=node, vjp=rule, jvp="elementwise", saves=saves, saves_out=saves_out,
                   promote=promote, batch=True, complex=complex)


sign_p = _unary_prim("sign", "SignBackward0", lambda xp, a: xp.sign(a), _zero, (), promote=None)
# saves self and the result as PyTorch's SgnBackward0 does (sgn_ of a complex tensor keeps a copy of self)
sgn_p = _unary_prim("sgn", "SgnBackward0", lambda xp, a: xp.sgn(a), _zero, (0,), True, promote=None,
                    complex=((_sgn_rule,), (_sgn_rule,), (0,), True))
round_p = _unary_prim("round", "RoundBackward0", lambda xp, a: xp.round(a), _zero, (), promote=None)
round_decimals_p = _unary_prim("round", "RoundBackward1", lambda xp, a, decimals: xp.round_decimals(a, decimals),
                               _zero, (), promote=None)
floor_p = _unary_prim("floor", "FloorBackward0", lambda xp, a: xp.floor(a), _zero, (), promote=None)
ceil_p = _unary_prim("ceil", "CeilBackward0", lambda xp, a: xp.ceil(a), _zero, (), promote=None)
trunc_p = _unary_prim("trunc", "TruncBackward0", lambda xp, a: xp.trunc(a), _zero, (), promote=None)
frac_p = defprim("frac", lambda xp, a: xp.frac(a), vjp=lambda xp, g, out, a: g, jvp="elementwise", batch=True)

exp_p = _unary_prim("exp", "ExpBackward0", lambda xp, a: xp.exp(a), lambda xp, g, out, a: g * out, (), True, complex=True)
exp2_p = _unary_prim("exp2", "Exp2Backward0", lambda xp, a: xp.exp2(a), lambda xp, g, out, a: g * (out * _LN2),
                     (), True, complex=True)
expm1_p = _unary_prim("expm1", "Expm1Backward0", lambda xp, a: xp.expm1(a), lambda xp, g, out, a: g * (out + 1),
                      (), True, complex=True)
log_p = _unary_prim("log", "LogBackward0", lambda xp, a: xp.log(a), lambda xp, g, out, a: g / a, complex=True)
log2_p = _unary_prim("log2", "Log2Backward0", lambda xp, a: xp.log2(a), lambda xp, g, out, a: g / (a * _LN2), complex=True)
log10_p = _unary_prim("log10", "Log10Backward0", lambda xp, a: xp.log10(a), lambda xp, g, out, a: g / (a * _LN10), complex=True)
log1p_p = _unary_prim("log1p", "Log1PBackward0", lambda xp, a: xp.log1p(a), lambda xp, g, out, a: g / (a + 1), complex=True)
sqrt_p = _unary_prim("sqrt", "SqrtBackward0", lambda xp, a: xp.sqrt(a), lambda xp, g, out, a: g / (out * 2), (), True, complex=True)
rsqrt_p = _unary_prim("rsqrt", "RsqrtBackward0", lambda xp, a: xp.rsqrt(a),
                      lambda xp, g, out, a: g * (out * out * out * -0.5), (), True, complex=True)
reciprocal_p = _unary_prim("reciprocal", "ReciprocalBackward0", lambda xp, a: xp.reciprocal(a),
                           lambda xp, g, out, a: -g * (out * out), (), True, complex=True)

sin_p = _unary_prim("sin", "SinBackward0", lambda xp, a: xp.sin(a), lambda xp, g, out, a: g * xp.cos(a), complex=True)
cos_p = _unary_prim("cos", "CosBackward0", lambda xp, a: xp.cos(a), lambda xp, g, out, a: -g * xp.sin(a), complex=True)
tan_p = _unary_prim("tan", "TanBackward0", lambda xp, a: xp.tan(a), lambda xp, g, out, a: g * (1 + out * out),
                    (), True, complex=True)
asin_p = _unary_prim("asin", "AsinBackward0", lambda xp, a: xp.asin(a),
                     lambda xp, g, out, a: g * xp.rsqrt(1 - a * a), complex=True)
acos_p = _unary_prim("acos", "AcosBackward0", lambda xp, a: xp.acos(a),
                     lambda xp, g, out, a: g * -xp.rsqrt(1 - a * a), complex=True)
atan_p = _unary_prim("atan", "AtanBackward0", lambda xp, a: xp.atan(a), lambda xp, g, out, a: g / (a * a + 1), complex=True)
sinh_p = _unary_prim("sinh", "SinhBackward0", lambda xp, a: xp.sinh(a), lambda xp, g, out, a: g * xp.cosh(a), complex=True)
cosh_p = _unary_prim("cosh", "CoshBackward0", lambda xp, a: xp.cosh(a), lambda xp, g, out, a: g * xp.sinh(a), complex=True)
tanh_p = _unary_prim("tanh", "TanhBackward0", lambda xp, a: xp.tanh(a),
                     lambda xp, g, out, a: xp.tanh_backward(g, out), (), True, complex=True)
asinh_p = _unary_prim("asinh", "AsinhBackward0", lambda xp, a: xp.asinh(a),
                      lambda xp, g, out, a: g * xp.rsqrt(a * a + 1), complex=True)
acosh_p = _unary_prim("acosh", "AcoshBackward0", lambda xp, a: xp.acosh(a),
                      lambda xp, g, out, a: g * xp.rsqrt(a * a - 1), complex=True)
atanh_p = _unary_prim("atanh", "AtanhBackward0", lambda xp, a: xp.atanh(a), lambda xp, g, out, a: g / (1 - a * a), complex=True)
sigmoid_p = _unary_prim("sigmoid", "SigmoidBackward0", lambda xp, a: xp.sigmoid(a),
                        lambda xp, g, out, a: xp.sigmoid_backward(g, out), (), True, complex=True)

# PyTorch's tanh_backward(g, out) = g (1 - out^2) and sigmoid_backward(g, out) = g (1 - out) out are kernels of
# their own (their rounding: tanh's 1 - out^2 is one fused multiply-add), and nodes of their own under
# create_graph (TanhBackwardBackward0, SigmoidBackwardBackward0); derivatives as in derivatives.yaml.
tanh_backward_p = defprim(
    "tanh_backward", lambda xp, g, out: xp.tanh_backward(g, out),
    vjp=(lambda xp, gg, r, g, out: xp.tanh_backward(gg, out), lambda xp, gg, r, g, out: gg * (out * -2 * g)),
    jvp="elementwise", saves={0: (1,), 1: (0, 1)}, saved_names=("grad_output", "output"), batch=True, complex=True)
sigmoid_backward_p = defprim(
    "sigmoid_backward", lambda xp, g, out: xp.sigmoid_backward(g, out),
    vjp=(lambda xp, gg, r, g, out: xp.sigmoid_backward(gg, out), lambda xp, gg, r, g, out: gg * g * (out * -2 + 1)),
    jvp="elementwise", saves={0: (1,), 1: (0, 1)}, saved_names=("grad_output", "output"), batch=True, complex=True)
graph("tanh_backward", lambda g, out: apply(tanh_backward_p, (g, out)))
graph("sigmoid_backward", lambda g, out: apply(sigmoid_backward_p, (g, out)))

erf_p = _unary_prim("erf", "ErfBackward0", lambda xp, a: xp.erf(a),
                    lambda xp, g, out, a: g * (xp.exp(-(a * a)) * _TWO_OVER_SQRT_PI))
erfc_p = _unary_prim("erfc", "ErfcBackward0", lambda xp, a: xp.erfc(a),
                     lambda xp, g, out, a: g * (xp.exp(-(a * a)) * -_TWO_OVER_SQRT_PI))
# PyTorch saves self and recomputes erfinv(self) in the rule (so modifying the output is harmless).
erfinv_p = _unary_prim("erfinv", "ErfinvBackward0", lambda xp, a: xp.erfinv(a),
                       lambda xp, g, out, a: g * (xp.exp(xp.erfinv(a) ** 2) * _HALF_SQRT_PI))
lgamma_p = _unary_prim("lgamma", "LgammaBackward0", lambda xp, a: xp.lgamma(a),
                       lambda xp, g, out, a: g * xp.digamma(a))
digamma_p = _unary_prim("digamma", "DigammaBackward0", lambda xp, a: xp.digamma(a),
                        lambda xp, g, out, a: g * xp.polygamma(1, a))
polygamma_p = _unary_prim("polygamma", "PolygammaBackward0", lambda xp, a, n: xp.polygamma(n, a),
                          lambda xp, g, out, a, n: g * xp.polygamma(n + 1, a))


def _sinc_grad(xp, g, out, a):
    # (cos(pi x) pi x - sin(pi x)) / (pi x^2), taken as 0 at x == 0 (PyTorch's masked_fill).
    pa = a * math.pi
    d = (pa * xp.cos(pa) - xp.sin(pa)) / (pa * a)
    return g * xp.where(a == 0, 0.0, d)


sinc_p = _unary_prim("sinc", "SincBackward0", lambda xp, a: xp.sinc(a), _sinc_grad, complex=True)


def _logit_grad(xp, g, out, a, eps):
    d = g / (a * (1 - a))
    if eps is None:   # outside [0, 1] the gradient is nan
        return xp.where((a < 0) | (a > 1), math.nan, d)
    return xp.where((a < eps) | (a > 1 - eps), 0.0, d)


logit_p = _unary_prim("logit", "LogitBackward0", lambda xp, a, eps: xp.logit(a, eps), _logit_grad)
deg2rad_p = _unary_prim("deg2rad", "Deg2RadBackward0", lambda xp, a: xp.deg2rad(a),
                        lambda xp, g, out, a: g * (math.pi / 180), ())
rad2deg_p = _unary_prim("rad2deg", "Rad2DegBackward0", lambda xp, a: xp.rad2deg(a),
                        lambda xp, g, out, a: g * (180 / math.pi), ())
nan_to_num_p = _unary_prim("nan_to_num", "NanToNumBackward0",
                           lambda xp, a, nan, posinf, neginf: xp.nan_to_num(a, nan, posinf, neginf),
                           lambda xp, g, out, a, nan, posinf, neginf: xp.where(xp.isfinite(a), g, 0.0),
                           promote=None, complex=True)   # complex: nan_to_num_ only (the check in nan_to_num)

# PyTorch's threshold_backward(g, result, 0): where(out <= 0, 0, g), not g * (out > 0), so the gradient passes
# at nan; under create_graph it is a node of its own (ThresholdBackwardBackward0, in ops/nn_activation.py), so
# that the gradient has a graph, as PyTorch's.
relu_p = defprim("relu", lambda xp, a: xp.relu(a),
                 vjp=lambda xp, g, out, a: xp.threshold_backward(g, out, 0), jvp="elementwise", saves_out=True,
                 batch=True)

# ----- primitives: binary math ---------------------------------------------------------------------------


def _atan2_grad(which):
    def rule(xp, g, out, a, b):
        r = g / (a * a + b * b)
        return r * b if which == 0 else r * -a
    return rule


atan2_p = defprim("atan2", lambda xp, a, b: xp.atan2(a, b), vjp=(_atan2_grad(0), _atan2_grad(1)),
                  jvp="elementwise", saves=(0, 1), promote="float", batch=True)
hypot_p = defprim("hypot", lambda xp, a, b: xp.hypot(a, b),
                  vjp=(lambda xp, g, out, a, b: g * (a / out), lambda xp, g, out, a, b: g * (b / out)),
                  jvp="elementwise", saves={0: (0,), 1: (1,)}, saves_out=True, promote="standard", batch=True)
logaddexp_p = defprim("logaddexp", lambda xp, a, b: xp.logaddexp(a, b),
                      vjp=(lambda xp, g, out, a, b: g / (xp.exp(b - a) + 1),
                           lambda xp, g, out, a, b: g / (xp.exp(a - b) + 1)),
                      jvp="elementwise", saves=(0, 1), promote="standard", batch=True, complex=True)
logaddexp2_p = defprim("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b),
                       vjp=(lambda xp, g, out, a, b: g / (xp.exp2(b - a) + 1),
                            lambda xp, g, out, a, b: g / (xp.exp2(a - b) + 1)),
                       jvp="elementwise", saves=(0, 1), promote="standard", batch=True)


def _xlogy_self(xp, g, out, a, b):
    # PyTorch's xlogy(grad, other), 0 at self == 0 where other <= 0 (the derivative along x = 0: PyTorch's note
    # "Gradient formula for xlogy at x = 0, y <= 0"); at self == 0 with other > 0 it is grad * log(other)
    if isinstance(b, (int, float)):   # a scalar other: log(b) in double precision, as PyTorch's wrapped number
        lb = math.log(b) if b > 0 else -math.inf if b == 0 else math.nan
        d = g * lb if b != b else xp.where(g == 0, g * 0.0, g * lb)   # xlogy(0, y) = 0 unless y is nan
        return d if b > 0 else xp.where(a == 0, g * 0.0, d)
    return xp.where((a == 0) & (b <= 0), g * 0.0, xp.xlogy(g, b))


def _xlogy_other(xp, g, out, a, b):
    return g * (a / b)


xlogy_p = defprim("xlogy", lambda xp, a, b: xp.xlogy(a, b), vjp=(_xlogy_self, _xlogy_other),
                  jvp="elementwise", saves=(0, 1), promote="float", batch=True)
xlogy_rscalar_p = defprim("xlogy", lambda xp, a, b: xp.xlogy(a, b), node="XlogyBackward1",
                                                                                      vjp=(None, _xlogy_other),
                          jvp="elementwise", saves=(1,), promote="float", scalar_args=(0,), batch=True)
xlogy_scalar_p = defprim("xlogy", lambda xp, a, b: xp.xlogy(a, b), node="XlogyBackward2",
                                                                                     vjp=(_xlogy_self, None),
                         jvp="elementwise", saves=(0,), promote="float", scalar_args=(1,), batch=True)


def _copysign_self(xp, g, out, a, b):
    return g * xp.where(a == 0, 0.0, out / a)


copysign_p = defprim("copysign", lambda xp, a, b: xp.copysign(a, b),
                     vjp=(_copysign_self, _zero), jvp="elementwise", saves=(0,), saves_out=True, promote="float",
                     batch=True)
copysign_scalar_p = defprim("copysign", bf16_in_float32(lambda xp, a, b: xp.copysign(a, b)),
                            node="CopysignBackward1",
                            vjp=(_copysign_self, None), jvp="elementwise", saves=(0,), saves_out=True,
                            promote="float", scalar_args=(1,), batch=True)
heaviside_p = defprim("heaviside", lambda xp, a, b: xp.heaviside(a, b),
                      node="NotImplemented", vjp=(_not_differentiable("heaviside"),) * 2, jvp="elementwise")


def _clamp_grad(xp, g, out, a, lo, hi):
    # PyTorch: where(lo <= a <= hi, g, 0), so a NaN input gets no gradient
    if lo is None:
        return xp.zero_where(~(a <= hi), g)
    if hi is None:
        return xp.zero_where(~(a >= lo), g)
    return xp.zero_where(~((a >= lo) & (a <= hi)), g)


# Scalar bounds are inputs (not params) so that the declared promotion sees them: clamp(int_tensor, 0.5).
clamp_p = defprim("clamp", lambda xp, a, lo, hi: xp.clamp(a, lo, hi),
                  node="ClampBackward1",
                  vjp=(_clamp_grad, None, None), jvp="elementwise", saves=(0,), promote="standard",
                  scalar_args=(1, 2), saved_names=("self", "min", "max"), batch=True)

# PyTorch clamps at eps in place under no_grad after a clone (cosine_similarity's norms, gaussian_nll_loss's var): the
# gradient flows through the unclamped value (the clone's node), while the forward-mode tangent is the clamp's (zero
# below lo, read from the clamped tensor's tangent). One primitive does both, so that the tangent is computed on the
# graph: a clamp made under no_grad would compute it off the graph, and reverse over forward would miss how it
# depends on the inputs.
clamp_unrecorded_p = defprim("clamp_unrecorded", lambda xp, a, lo: xp.clamp(a, lo, None),
                             node="CloneBackward0", vjp=(lambda xp, g, out, a, lo: g, None),
                             jvp=(lambda xp, t, out, a, lo: xp.zero_where(~(a >= lo), t), None),
                             promote="standard", scalar_args=(1,), batch=True)


def _max_grad(xp, g, a, b):
    # The gradient of maximum(a, b) for a: none where a < b, half where they tie, all of it otherwise,
    # so a NaN operand (no comparison holds) receives the gradient, as in PyTorch.
    return xp.where(a < b, 0.0, xp.where(a == b, g * 0.5, g))


maximum_p = defprim("maximum", lambda xp, a, b: xp.maximum(a, b),
                    vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, a, b),
                         lambda xp, g, out, a, b: _max_grad(xp, g, b, a)),
                    jvp="elementwise", saves=(0, 1), promote="standard", batch=True)

minimum_p = defprim("minimum", lambda xp, a, b: xp.minimum(a, b),
                    vjp=(lambda xp, g, out, a, b: _max_grad(xp, g, b, a),
                         lambda xp, g, out, a, b: _max_grad(xp, g, a, b)),
                    jvp="elementwise", saves=(0, 1), promote="standard", batch=True)


def _fmax_mask(xp, a, b, ge):
    # fmax/fmin: self gets the gradient where it wins or where other is nan (PyTorch's formula).
    return ((a >= b) if ge else (a <= b)) | xp.isnan(b)


fmax_p = defprim("fmax", lambda xp, a, b: xp.fmax(a, b),
                 vjp=(lambda xp, g, out, a, b: xp.where(_fmax_mask(xp, a, b, True), g, 0.0),
                      lambda xp, g, out, a, b: xp.where(_fmax_mask(xp, a, b, True), 0.0, g)),
                 jvp="elementwise", saves=(0, 1), promote="standard", batch=True)
fmin_p = defprim("fmin", lambda xp, a, b: xp.fmin(a, b),
                 vjp=(lambda xp, g, out, a, b: xp.where(_fmax_mask(xp, a, b, False), g, 0.0),
                      lambda xp, g, out, a, b: xp.where(_fmax_mask(xp, a, b, False), 0.0, g)),
                 jvp="elementwise", saves=(0, 1), promote="standard", batch=True)


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
    return xp.where(mask, g, 0.0)


def _clamp_t_lo(xp, g, out, a, lo, hi):
    return xp.where((a < lo) & (lo < hi), g, 0.0) if hi is not None else xp.where(a < lo, g, 0.0)


def _clamp_t_hi(xp, g, out, a, lo, hi):
    return xp.where((a > hi) | (hi < lo), g, 0.0) if lo is not None else xp.where(a > hi, g, 0.0)


clamp_tensor_p = defprim("clamp", _clamp_t, vjp=(_clamp_t_self, _clamp_t_lo, _clamp_t_hi),
                         jvp="elementwise", saves=(0, 1, 2), promote="standard",
                         saved_names=("self", "min", "max"), batch=True)

where_p = defprim("where", lambda xp, a, b, cond: xp.where(cond, a, b),
                  vjp=(lambda xp, g, out, a, b, cond: xp.where(cond, g, 0.0),
                       lambda xp, g, out, a, b, cond: xp.where(cond, 0.0, g)),
                  jvp="linear", promote="standard", batch=True, complex=True)


def _lerp_weight_grad(xp, g, out, a, b, w):
    return g * (b - a)


lerp_p = defprim("lerp", lambda xp, a, b, w: xp.lerp(a, b, w),
                 vjp=(lambda xp, g, out, a, b, w: g * (1 - w), lambda xp, g, out, a, b, w: g * w, None),
                 jvp="elementwise", scalar_args=(2,), saved_names=("self", "end", "weight"), batch=True, complex=True)
lerp_tensor_p = defprim("lerp", lambda xp, a, b, w: xp.lerp(a, b, w),
                        node="LerpBackward1",
                        vjp=(lambda xp, g, out, a, b, w: g * (1 - w), lambda xp, g, out, a, b, w: g * w,
                             _lerp_weight_grad),
                        # PyTorch's node keeps weight whichever gradient is needed
                        jvp="elementwise", saves={0: (2,), 1: (2,), 2: (0, 1, 2)},
                        saved_names=("self", "end", "weight"), batch=True, complex=True)

addcmul_p = defprim("addcmul", bf16_in_float32(lambda xp, a, t1, t2, value: a + (t1 * t2) * value),
                    vjp=(lambda xp, g, out, a, t1, t2, value: g,
                         lambda xp, g, out, a, t1, t2, value: g * (t2 * value),
                         lambda xp, g, out, a, t1, t2, value: g * (t1 * value)),
                    jvp="elementwise", saves={1: (2,), 2: (1,)}, promote="standard",
                    saved_names=("self", "tensor1", "tensor2"), batch=True, complex=True)
addcdiv_p = defprim("addcdiv", bf16_in_float32(lambda xp, a, t1, t2, value: a + (t1 / t2) * value),
                    vjp=(lambda xp, g, out, a, t1, t2, value: g,
                         lambda xp, g, out, a, t1, t2, value: g * (value / t2),
                         lambda xp, g, out, a, t1, t2, value: -g * ((t1 * value) / (t2 * t2))),
                    # PyTorch's node keeps tensor2 whichever gradient is needed
                    jvp="elementwise", saves={1: (2,), 2: (0, 1, 2)}, promote="standard",
                    saved_names=("self", "tensor1", "tensor2"), batch=True, complex=True)

# ----- argument checks ------------------------------------------------------------------------------------

_BOOL_UNSUPPORTED = {"abs": "abs_cpu", "round": "round_vml_cpu", "floor": "floor_vml_cpu", "ceil": "ceil_vml_cpu",
                     "trunc": "trunc_vml_cpu", "frac": "frac_cpu"}


def _not_implemented(kernel, np_dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{D.type_word(np_dtype)}'")


def _check_not_bool(np_dtype, kernel):
    if np_dtype is not None and np_dtype.kind == "b":
        raise _not_implemented(kernel, np_dtype)


def complex_values(a) -> bool:
    """Whether a rule's argument (a raw array or a Tensor) holds complex values."""
    d = a.dtype
    return d.is_complex if isinstance(d, D.dtype) else d.kind == "c"


def _cx_operand(x) -> bool:
    """Whether a tensor or Python number operand is complex."""
    return type(x) is complex or (isinstance(x, Tensor) and x._data.dtype.kind == "c")


def _no_complex(kernel: str, *xs) -> None:
    """PyTorch's refusal of complex operands by an op without a complex kernel: '"lt_cpu" not implemented for
    'ComplexFloat'', the word naming the operands' common dtype."""
    for x in xs:   # a loop, not any(): this runs on every call of its ops
        if type(x) is complex or (isinstance(x, Tensor) and x._data.dtype.kind == "c"):
            raise _not_implemented(kernel, _result_np(*xs))


def _complex_to_real(v: complex, np_dtype):
    """PyTorch's checked conversion of a complex Python scalar to a real dtype: its real part, or a RuntimeError
    where the imaginary part is not zero."""
    return D.checked_scalar(v, np_dtype)


def _refuse_complex(exc, message: str, *xs) -> None:
    """PyTorch's own message for an op that refuses complex operands (``clamp is not supported ...``)."""
    for x in xs:
        if type(x) is complex or (isinstance(x, Tensor) and x._data.dtype.kind == "c"):
            raise exc(message)


_INT_RANGE = {d.np: (D.iinfo(d).min, D.iinfo(d).max) for d in (D.uint8, D.int8, D.int16, D.int32, D.int64, D.uint16,
                                                            D.uint32, D.uint64)}


def _fit_int(s: int, like, op: str, wrap: bool = True) -> int:
    """A Python int operand against tensor ``like``, as PyTorch converts it: beyond 64 bits is an
    OverflowError; an integer tensor's arithmetic wraps it to the tensor's width (``int32 + 2**40``), and
    ops that convert it exactly (``wrap=False``: clamp, where, pow) refuse it."""
    if -0x80000000 <= s < 0x80000000 and like._data.dtype.itemsize >= 4:
        return s
    if not -(1 << 63) <= s < (1 << 64):
        raise OverflowError("int too big to convert")
    dt = like._data.dtype
    if dt.kind == "b" and s >= 1 << 63:
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote Bool "
                           "and UInt64")
    if dt.kind not in "iu":
        return s
    lo, hi = _INT_RANGE[dt]
    if lo <= s <= hi:
        return s
    if not wrap:
        raise RuntimeError(f"value cannot be converted to type {D.c_type_name(dt)} without overflow")
    bits = dt.itemsize * 8
    s &= (1 << bits) - 1
    return s - (1 << bits) if dt.kind == "i" and s >= 1 << (bits - 1) else s


def _operand(x, op: str, like=None, arg: str = "other", wrap: bool = True):
    """A tensor, or a Python number (NumPy scalars become Python numbers), fitted to ``like``'s dtype."""
    x = scalar_or_tensor(x, op, arg)
    if type(x) is int and like is not None:
        return _fit_int(x, like, op, wrap)
    return x


def _binary_args(input, other, op: str, scalar_input: bool = False):
    """(input, other) of a binary op: input a Tensor (or, with ``scalar_input``, a Number beside a Tensor)."""
    if not isinstance(input, Tensor):
        if scalar_input and isinstance(other, Tensor):
            return _operand(input, op, other, "input"), other
        check_tensor(input, op)
    return input, _operand(other, op, input)


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


def _result_np(*xs):
    return promote(*(x for x in xs if x is not None)).np


def _no_bool(a, b, kernel):
    """The integer-style ops (floor division, remainder, fmod): no bool kernel, and no complex one."""
    d = _result_np(a, b)
    if d.kind in "bc":
        raise _not_implemented(kernel, d)


def _no_int(a, b, kernel):
    d = _result_np(a, b)
    if d.kind in "iub":
        raise _not_implemented(kernel, d)


def _checked_alpha(other, alpha, op, input=None):
    """add/sub's ``alpha=`` checked as PyTorch's alpha_check (on the result dtype); None for 1."""
    alpha = scalar_value(alpha)
    if not isinstance(alpha, (bool, int, float, complex)):
        raise TypeError(f"{op}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    result = promote(*(x for x in (input, other) if x is not None))
    if type(alpha) is bool and result.np.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if alpha == 1:
        return None
    if isinstance(other, Tensor) and isinstance(alpha, (float, complex)) and \
            (promote(input, other) if input is not None else other.dtype)._cat < D._FLOAT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if type(alpha) is complex and not result.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    if result.np.kind == "b":
        return bool(alpha)   # a Boolean result: alpha taken as a truth value, as PyTorch's kernel (b & alpha)
    return alpha


def _scaled(other, alpha, op, input=None):
    """``alpha * other`` for add/sub's ``alpha=`` (a Python scalar stays one)."""
    if alpha == 1 and type(alpha) is not bool:
        return other
    alpha = _checked_alpha(other, alpha, op, input)
    return other if alpha is None else other * alpha


def _fused_alpha(input, other, alpha, op):
    """The checked ``alpha`` when ``input + alpha*other`` takes the fused primitive (a floating or complex result
    of a tensor ``input``), else None (alpha 1: the plain op; integers and bools: exact as two ops)."""
    if alpha == 1 and type(alpha) is not bool:
        return None
    if not isinstance(input, Tensor):
        return None
    ta = type(alpha)
    if (ta is float or ta is int) and isinstance(other, Tensor) and input._data.dtype is other._data.dtype \
            and input._data.dtype.kind == "f":
        return alpha   # the common case (two floating tensors of one dtype, a real alpha): nothing to check
    d = _result_np(input, other)
    if d.kind not in "fc" and d != _BF16:   # (float8: the two ops' refusal, as before)
        return None
    return _checked_alpha(other, alpha, op, input)


def _check_value(value, op: str, arg: str = "value"):
    value = scalar_value(value)
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{op}(): argument '{arg}' must be Number, not {type(value).__name__}")
    return value


# ----- public functions: arithmetic ----------------------------------------------------------------------

@register(method=True)
def add(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input + alpha * other``."""
    input, other = _binary_args(input, other, "add", scalar_input=True)
    if alpha == 1 and type(alpha) is not bool:
        return apply(add_p, (input, other))
    a = _fused_alpha(input, other, alpha, "add")
    if a is not None:
        return apply(add_alpha_p, (input, other), {"alpha": a})
    return apply(add_p, (input, _scaled(other, alpha, "add", input)))


@register(method=True, aliases=("subtract",))
def sub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``input - alpha * other``."""
    input, other = _binary_args(input, other, "sub")
    check_sub(input, other)
    if alpha == 1 and type(alpha) is not bool:
        return apply(sub_p, (input, other))
    a = _fused_alpha(input, other, alpha, "sub")
    if a is not None:
        return apply(sub_alpha_p, (input, other), {"alpha": a})
    return apply(sub_p, (input, _scaled(other, alpha, "sub", input)))


# other - self for a Scalar other: PyTorch's RsubBackward1, whose only edge is self's
# at::add/mul/div(Tensor, Scalar) as PyTorch's C++ composites call them (cross_entropy's label smoothing,
# the normalisations' eps, ...): AddBackward1 / MulBackward1 / DivBackward1, whose node has no edge for the
# scalar (Python's ``x + eps`` records AddBackward0 with two).
add_scalar_p = defprim("add_scalar", lambda xp, a, s: a + s, node="AddBackward1",
                                                                             vjp=(lambda xp, g, out, a, s: g, None),
                       jvp="elementwise", promote="standard", scalar_args=(1,), saved_names=("self", "other"), complex=True)
mul_scalar_p = defprim("mul_scalar", _mul,
                       node="MulBackward1",
                       vjp=(lambda xp, g, out, a, s: _mul(xp, g, s), None), jvp="elementwise", promote="standard",
                       scalar_args=(1,), saved_names=("self", "other"), complex=True)
div_scalar_p = defprim("div_scalar", _div,
                       node="DivBackward1",
                       vjp=(_div_grad, None), jvp="elementwise", promote="float", scalar_args=(1,),
                       saved_names=("self", "other"), complex=True)
KEEP_NUMBERS.update((mul_scalar_p, div_scalar_p))
rsub_scalar_p = defprim("rsub", lambda xp, s, a: s - a,
                        node="RsubBackward1",
                        vjp=(None, lambda xp, g, out, s, a: -g), jvp="linear", promote="standard", scalar_args=(0,),
                        batch=True, complex=True)


# rsub(input, other) of two tensors: sub/sub_alpha on (other, input), whose RsubBackward0 lists input's edge first
_rsub_p = reordered(sub_p, (1, 0), "RsubBackward0")
_rsub_alpha_p = reordered(sub_alpha_p, (1, 0), "RsubBackward0")


@register(method=True)
def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    input, other = _binary_args(input, other, "rsub")
    check_sub(input, other)
    if isinstance(other, Tensor):
        a = _fused_alpha(other, input, alpha, "rsub")
        if a is not None:
            return apply(_rsub_alpha_p, (other, input), {"alpha": a})
        return apply(_rsub_p, (other, _scaled(input, alpha, "rsub", other)))
    return apply(rsub_scalar_p, (other, _scaled(input, alpha, "rsub", other)))


@register(method=True, aliases=("multiply",))
def mul(input: Tensor, other) -> Tensor:
    """``input * other``."""
    input, other = _binary_args(input, other, "mul", scalar_input=True)
    return apply(mul_p, (input, other))


@register(method=True, graph=True)
def floor_divide(input: Tensor, other) -> Tensor:
    """``input // other``: division rounded toward -inf (not differentiable, as in PyTorch)."""
    input, other = _binary_args(input, other, "floor_divide")
    _no_bool(input, other, "div_floor_cpu")
    return apply(floor_divide_p, (input, other))


@register(method=True, graph=True)
def remainder(input: Tensor, other) -> Tensor:
    """Python's ``%``: the remainder has the sign of the divisor."""
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        input = _operand(input, "remainder", other, "input")
        _no_bool(input, other, "remainder_cpu")
        return apply(rremainder_p, (input, other))
    input, other = _binary_args(input, other, "remainder")
    _no_bool(input, other, "remainder_cpu")
    return apply(remainder_p if isinstance(other, Tensor) else remainder_scalar_p, (input, other))


@register(method=True, graph=True)
def fmod(input: Tensor, other) -> Tensor:
    """C's ``fmod``: the remainder has the sign of the dividend."""
    input, other = _binary_args(input, other, "fmod")
    _no_bool(input, other, "fmod_cpu")
    return apply(fmod_p if isinstance(other, Tensor) else fmod_scalar_p, (input, other))


_ROUNDING_MODES = (None, "trunc", "floor")


@register(method=True, aliases=("divide",), graph=True)
def div(input: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    """True division, or rounded toward zero (``rounding_mode='trunc'``) or -inf (``'floor'``)."""
    input, other = _binary_args(input, other, "div")
    if rounding_mode is None:
        return apply(div_p, (input, other))
    if rounding_mode not in _ROUNDING_MODES:
        if not isinstance(rounding_mode, str):
            raise TypeError(f"div(): argument 'rounding_mode' must be str, not {type(rounding_mode).__name__}")
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    _no_bool(input, other, f"div_{rounding_mode}_cpu")
    return apply(div_mode_p, (input, other), {"mode": rounding_mode})


@register(method=True)
def true_divide(input: Tensor, other) -> Tensor:
    """``input / other`` (an alias of div)."""
    input, other = _binary_args(input, other, "true_divide")
    return apply(div_p, (input, other))


@graph("div_rounded")
def _graph_div_rounded(a, b, mode):
    return apply(div_mode_p, (a, b), {"mode": mode})


@register(method=True, aliases=("negative",))
@schema("neg(Tensor input)")
def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return apply(neg_p, (input,))


@register(method=True, graph=True)
def pow(input, exponent) -> Tensor:
    """``input ** exponent`` for tensor or scalar ``input`` and ``exponent``."""
    if not isinstance(input, Tensor):
        exponent = check_tensor(exponent, "pow", "exponent", 2)
        base = _operand(input, "pow", exponent, "self", wrap=False)
        _check_not_bool(promote(base, exponent).np, "pow")
        return apply(rpow_p, (base, exponent))
    exponent = _operand(exponent, "pow", input, "exponent", wrap=False)
    if isinstance(exponent, Tensor):
        _check_not_bool(promote(input, exponent).np, "pow")
        return apply(pow_tensor_p, (input, exponent))
    return apply(pow_scalar_p, (input, exponent))


def _float_power_dtype(*xs) -> D.dtype:
    """float_power computes in double precision: complex128 when either operand is complex, else float64."""
    return D.complex128 if any(_cx_operand(x) for x in xs) else D.float64


def _float_power_scalar(v, op: str, arg: str, d: D.dtype):
    v = scalar_value(v)
    if type(v) is not complex:
        v = _check_value(v, op, arg)
    return complex(v) if d.is_complex else float(v)


@register(method=True)
def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` computed in double precision (a float64 result; complex128 for complex operands)."""
    if not isinstance(input, Tensor):
        check_tensor(exponent, "float_power", "exponent", 2)
        d = _float_power_dtype(scalar_value(input), exponent)
        return pow(_float_power_scalar(input, "float_power", "self", d), exponent.to(d))
    exponent = _operand(exponent, "float_power", None, "exponent")
    d = _float_power_dtype(input, exponent)
    if isinstance(exponent, Tensor):
        return pow(input.to(d), exponent.to(d))
    return pow(input.to(d), _float_power_scalar(exponent, "float_power", "exponent", d))


@register(name="float_power_", module=False, method=True)
def ifloat_power(self: Tensor, exponent) -> Tensor:
    exponent = _operand(exponent, "float_power_", None, "exponent")
    d = _float_power_dtype(self, exponent)
    if self._data.dtype != d.np:
        raise RuntimeError(f"the base given to float_power_ has dtype {D.type_word(self._data.dtype)} but the "
                           f"operation's result requires dtype {D.type_word(d.np)}")
    if isinstance(exponent, Tensor):
        return apply_inplace(pow_tensor_p, self, (exponent.to(d),))
    return apply_inplace(pow_scalar_p, self, (_float_power_scalar(exponent, "float_power_", "exponent", d),))


@register(method=True)
@schema("square(Tensor input)")
def square(input: Tensor) -> Tensor:
    """``input ** 2`` (PowBackward0, as PyTorch)."""
    return apply(pow_scalar_p, (input, 2))


@register(name="square_", method=True)
@schema("square_(Tensor input)")
def square_(self):
    return apply_inplace(pow_scalar_p, self, (2,))


# ----- unary ops -----------------------------------------------------------------------------------------

# Module-level in-place functions PyTorch has (torch.exp_, ...); every op has the Tensor method.
_MODULE_INPLACE = {"neg_", "abs_", "reciprocal_", "sqrt_", "rsqrt_", "square_", "exp_", "exp2_", "expm1_", "log_",
                   "log2_", "log10_", "log1p_", "sin_", "cos_", "tan_", "asin_", "acos_", "atan_", "sinh_", "cosh_",
                   "tanh_", "asinh_", "acosh_", "atanh_", "arcsin_", "arccos_", "arctan_", "arcsinh_", "arccosh_",
                   "arctanh_", "sigmoid_", "logit_", "erf_", "erfc_", "sinc_", "floor_", "ceil_", "round_", "trunc_",
                   "fix_", "frac_", "nan_to_num_", "deg2rad_", "rad2deg_", "relu_", "negative_", "xlogy_", "gcd_",
                   "lcm_"}


def _register_inplace(fn, name, aliases=()):
    for n in (name,) + tuple(aliases):
        register(fn, name=n + "_", module=n + "_" in _MODULE_INPLACE, method=True)


def _no_inplace_derivative(name):
    # PyTorch declares no derivative for these in-place ops: their node raises at backward.
    node = node_class(name.capitalize() + "Backward1", PrimNode)

    class NotImplementedNode(node):
        __slots__ = ()

        def apply(self, grads, create_graph, needed):
            raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not implemented.")
    NotImplementedNode.__name__ = NotImplementedNode.__qualname__ = node.__name__
    return NotImplementedNode


_NO_INPLACE_DERIVATIVE = {n: _no_inplace_derivative(n) for n in ("asinh", "acosh", "atanh")}


_CLAMP_CX = (NotImplementedError, "clamp is not supported for complex types")
# PyTorch's refusal of a complex input where it differs from apply's ('"name" not implemented for ...'): the name
# of its kernel, or (exception type, message).
_CX_REFUSED = {"erf": "erf_vml_cpu", "erfc": "erfc_vml_cpu", "erfinv": "erfinv_vml_cpu", "lgamma": "lgamma_vml_cpu",
               "i0": "i0_vml_cpu", "frac": "frac_cpu", "round": "round_vml_cpu", "relu": _CLAMP_CX,
               "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                             "Please use torch.sgn instead."),
               **{n: (NotImplementedError, f"{n} is not supported for complex inputs") for n in ("floor", "ceil", "trunc")},
               **{n: (RuntimeError, f"{n} is not supported for complex tensors.") for n in ("deg2rad", "rad2deg")}}
# in-place forms PyTorch refuses on complex tensors although the op takes them
_CX_INPLACE_REFUSED = {"abs": "In-place abs is not supported for complex tensors."}


def _cx_refusal(refusal, t: Tensor) -> Exception:
    if isinstance(refusal, str):
        return _not_implemented(refusal, t._data.dtype)
    return refusal[0](refusal[1])


def _unary(prim, name, same_dtype=False, aliases=(), special=(), register_as=True):
    """A unary op: ``ember.<name>``, ``Tensor.<name>``, the in-place ``Tensor.<name>_`` (and ``ember.<name>_``
    where PyTorch has it), ``ember.special.<s>`` for each name in ``special``. Float ops compute integral
    inputs in the default float dtype; ``same_dtype`` ops keep the input's dtype."""
    if prim.is_view:
        raise ValueError(f"_unary: {prim.name} is a view op; fast_unary does not handle views")
    cx_refusal, cx_inplace = _CX_REFUSED.get(name), _CX_INPLACE_REFUSED.get(name)

    @schema(f"{name}(Tensor input)")
    def checked(input: Tensor) -> Tensor:   # all but the common case (fast_unary's)
        kind = input._data.dtype.kind
        if kind == "b" and same_dtype:
            if name == "relu":
                raise RuntimeError("Boolean inputs not supported for relu")
            if name in ("sign", "sgn"):   # sign of a bool tensor is itself (NumPy has no bool sign loop)
                return make(NAMESPACES[type(input._data)].clone(input._data))
            _check_not_bool(input._data.dtype, _BOOL_UNSUPPORTED[name])
        if kind in "iu" and name == "frac":
            raise _not_implemented("frac_cpu", input._data.dtype)
        if kind == "c" and cx_refusal is not None:
            raise _cx_refusal(cx_refusal, input)
        return apply(prim, (input,))
    fn = fast_unary(prim, checked)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``, differentiable to any order."

    inplace_node = _NO_INPLACE_DERIVATIVE.get(name)

    def inplace(self: Tensor) -> Tensor:
        if self._data.dtype.kind not in "fV":
            fn(self)   # the dtype errors of the out-of-place op come first
            if cx_inplace is not None and self._data.dtype.kind == "c":
                raise RuntimeError(cx_inplace)
        return apply_inplace(prim, self, (), _EMPTY, inplace_node)
    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace = schema(f"{name}_(Tensor input)")(inplace)
    if register_as is None:   # the caller registers a wrapper (round with decimals=)
        return fn
    register(fn, method=True, aliases=aliases, graph=True)
    for s in special:
        register(fn, module=False, submodule="special", submodule_name=s)
    _register_inplace(inplace, name, aliases)
    return fn


exp = _unary(exp_p, "exp")
exp2 = _unary(exp2_p, "exp2", special=("exp2",))
expm1 = _unary(expm1_p, "expm1", special=("expm1",))
log = _unary(log_p, "log")
log2 = _unary(log2_p, "log2")
log10 = _unary(log10_p, "log10")
log1p = _unary(log1p_p, "log1p", special=("log1p",))
sqrt = _unary(sqrt_p, "sqrt")
rsqrt = _unary(rsqrt_p, "rsqrt")
reciprocal = _unary(reciprocal_p, "reciprocal")
sin = _unary(sin_p, "sin")
cos = _unary(cos_p, "cos")
tan = _unary(tan_p, "tan")
asin = _unary(asin_p, "asin", aliases=("arcsin",))
acos = _unary(acos_p, "acos", aliases=("arccos",))
atan = _unary(atan_p, "atan", aliases=("arctan",))
sinh = _unary(sinh_p, "sinh")
cosh = _unary(cosh_p, "cosh")
tanh = _unary(tanh_p, "tanh")
asinh = _unary(asinh_p, "asinh", aliases=("arcsinh",))
acosh = _unary(acosh_p, "acosh", aliases=("arccosh",))
atanh = _unary(atanh_p, "atanh", aliases=("arctanh",))
sigmoid = _unary(sigmoid_p, "sigmoid", special=("expit",))
erf = _unary(erf_p, "erf", special=("erf",))
erfc = _unary(erfc_p, "erfc", special=("erfc",))
erfinv = _unary(erfinv_p, "erfinv", special=("erfinv",))
lgamma = _unary(lgamma_p, "lgamma", special=("gammaln",))
digamma = _unary(digamma_p, "digamma", special=("digamma", "psi"))
sinc = _unary(sinc_p, "sinc", special=("sinc",))
deg2rad = _unary(deg2rad_p, "deg2rad")
rad2deg = _unary(rad2deg_p, "rad2deg")
relu = _unary(relu_p, "relu", same_dtype=True)
abs = _unary(abs_p, "abs", same_dtype=True, aliases=("absolute",))
sign = _unary(sign_p, "sign", same_dtype=True)
sgn = _unary(sgn_p, "sgn", same_dtype=True)
floor = _unary(floor_p, "floor", same_dtype=True)
ceil = _unary(ceil_p, "ceil", same_dtype=True)
trunc = _unary(trunc_p, "trunc", same_dtype=True, aliases=("fix",))
frac = _unary(frac_p, "frac", same_dtype=True)
_round0 = _unary(round_p, "round", same_dtype=True, register_as=None)


@schema("neg_(Tensor input)")
def neg_(self):
    return apply_inplace(neg_p, self, ())


_register_inplace(neg_, "neg", ("negative",))


@schema("round(Tensor input, *, int decimals)")
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even; with ``decimals``, to that many decimal places (RoundBackward1)."""
    if decimals == 0:
        return _round0(input)
    if input._data.dtype.kind not in "fV":
        raise _not_implemented("round_cpu", input._data.dtype)
    return apply(round_decimals_p, (input,), {"decimals": decimals})


@schema("round_(Tensor input, *, int decimals)")
def iround(self: Tensor, *, decimals: int = 0) -> Tensor:
    round(self, decimals=decimals)   # the dtype errors
    if decimals == 0:
        return apply_inplace(round_p, self, ())
    return apply_inplace(round_decimals_p, self, (), {"decimals": decimals})


register(round, method=True, graph=True)
@register(module=False, submodule="special", submodule_name="round")
@schema("round(Tensor input, *, int decimals)")
def special_round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """torch.special.round: round() that always records RoundBackward1 (the decimals overload)."""
    if input._data.dtype.kind not in "fV":
        return round(input, decimals=decimals)
    return apply(round_decimals_p, (input,), {"decimals": decimals})
_register_inplace(iround, "round")
graph("zero_where", lambda drop, g: where(drop, 0.0, g))
graph("round_decimals", lambda a, decimals: apply(round_decimals_p, (a,), {"decimals": decimals}))


def _eps(eps):
    return None if eps is None else float(scalar_value(eps))


@register(method=True, graph=True)
@schema("logit(Tensor input, float? eps)")
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    _no_complex("logit_cpu", input)
    return apply(logit_p, (input,), {"eps": _eps(eps)})


register(logit, module=False, submodule="special", submodule_name="logit")


@register(name="logit_", method=True)
def ilogit(self: Tensor, eps: float | None = None) -> Tensor:
    logit(self, eps)
    return apply_inplace(logit_p, self, (), {"eps": _eps(eps)})


def _check_n(n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


@register(graph=True)
@schema("polygamma(int n, Tensor input)")
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of the digamma function."""
    n = _check_n(n)
    _no_complex(("digamma", "trigamma")[n] if n < 2 else "polygamma", input)
    return apply(polygamma_p, (input,), {"n": n})


register(polygamma, module=False, submodule="special", submodule_name="polygamma")
method("polygamma", lambda self, n: polygamma(n, self))


@method("polygamma_")
def ipolygamma(self: Tensor, n: int) -> Tensor:
    polygamma(n, self)
    return apply_inplace(polygamma_p, self, (), {"n": int(n)}, _POLYGAMMA_INPLACE_NODE)


_POLYGAMMA_INPLACE_NODE = node_class("PolygammaBackward1", PrimNode)


def _num_or_none(v, op, arg):
    """A ``float?`` argument (PyTorch's word for what it refuses: float)."""
    if v is None:
        return None
    v = scalar_value(v)
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{op.rstrip('_')}(): argument '{arg}' must be float, not {type(v).__name__}")
    return float(v)


@register(method=True, graph=True)
@schema("nan_to_num(Tensor input, Scalar? nan, Scalar? posinf, Scalar? neginf)")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the dtype's extremes)."""
    params = {"nan": _num_or_none(nan, "nan_to_num", "nan") or 0.0,
              "posinf": _num_or_none(posinf, "nan_to_num", "posinf"),
              "neginf": _num_or_none(neginf, "nan_to_num", "neginf")}
    _nan_to_num_complex_grad(input)
    return apply(nan_to_num_p, (input,), params)


def _nan_to_num_complex_grad(input: Tensor) -> None:
    # PyTorch declares no backward for complex nan_to_num (its forward mode works; nan_to_num_ has a backward)
    if input._requires_grad and input._data.dtype.kind == "c" and _state.enabled:
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs with complex dtype.")


@register(name="nan_to_num_", method=True)
@schema("nan_to_num_(Tensor input, Scalar? nan, Scalar? posinf, Scalar? neginf)")
def inan_to_num(self: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    params = {"nan": _num_or_none(nan, "nan_to_num_", "nan") or 0.0,
              "posinf": _num_or_none(posinf, "nan_to_num_", "posinf"),
              "neginf": _num_or_none(neginf, "nan_to_num_", "neginf")}
    return apply_inplace(nan_to_num_p, self, (), params)   # complex too: PyTorch refuses only nan_to_num's


# ----- binary math ------------------------------------------------------------------------------------------

@register(method=True, aliases=("arctan2",), graph=True)
@schema("atan2(Tensor input, Tensor other)")
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi]."""
    _no_complex("atan2_cpu", input, other)
    return apply(atan2_p, (input, other))


@register(method=True, graph=True)
@schema("hypot(Tensor input, Tensor other)")
def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow."""
    _no_int(input, other, "hypot_cpu")
    _no_complex("hypot_cpu", input, other)
    return apply(hypot_p, (input, other))


@register(method=True, graph=True)
@schema("logaddexp(Tensor input, Tensor other)")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow."""
    _no_int(input, other, "logaddexp_cpu")
    return apply(logaddexp_p, (input, other))


@register(method=True, graph=True)
@schema("logaddexp2(Tensor input, Tensor other)")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow."""
    _no_int(input, other, "logaddexp2_cpu")
    _no_complex("logaddexp2_cpu", input, other)
    return apply(logaddexp2_p, (input, other))


@register(method=True, graph=True)
def xlogy(input, other) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is nan)."""
    if not isinstance(input, Tensor):
        check_tensor(other, "xlogy", "other", 2)
        input = _operand(input, "xlogy", None, "self")
        _no_complex("xlogy_cpu", input, other)
        return apply(xlogy_rscalar_p, (input, other))
    input, other = _binary_args(input, other, "xlogy")
    _no_complex("xlogy_cpu", input, other)
    return apply(xlogy_p if isinstance(other, Tensor) else xlogy_scalar_p, (input, other))


register(xlogy, module=False, submodule="special", submodule_name="xlogy")


@register(method=True, graph=True)
def copysign(input: Tensor, other) -> Tensor:
    """``|input|`` with the sign of ``other``."""
    input, other = _binary_args(input, other, "copysign")
    _no_complex("copysign_cpu", input, other)
    return apply(copysign_p if isinstance(other, Tensor) else copysign_scalar_p, (input, other))


@register(method=True, graph=True)
@schema("heaviside(Tensor input, Tensor values)")
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0 (not differentiable)."""
    _refuse_complex(RuntimeError, "heaviside is not yet implemented for complex tensors.", input, values)
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return apply(heaviside_p, (input, values))


@register(method=True, graph=True)
@schema("maximum(Tensor input, Tensor other)")
def maximum(input: Tensor, other: Tensor) -> Tensor:
    _refuse_complex(RuntimeError, "maximum not implemented for complex tensors.", input, other)
    """The elementwise maximum (nan if either is nan); ties share the gradient."""
    return apply(maximum_p, (input, other))


@register(method=True, graph=True)
@schema("minimum(Tensor input, Tensor other)")
def minimum(input: Tensor, other: Tensor) -> Tensor:
    _refuse_complex(RuntimeError, "minimum not implemented for complex tensors.", input, other)
    """The elementwise minimum (nan if either is nan); ties share the gradient."""
    return apply(minimum_p, (input, other))


@register(method=True, graph=True)
@schema("fmax(Tensor input, Tensor other)")
def fmax(input: Tensor, other: Tensor) -> Tensor:
    _refuse_complex(RuntimeError, "fmax not implemented for complex tensors.", input, other)
    """The elementwise maximum, ignoring a nan operand."""
    return apply(fmax_p, (input, other))


@register(method=True, graph=True)
@schema("fmin(Tensor input, Tensor other)")
def fmin(input: Tensor, other: Tensor) -> Tensor:
    _refuse_complex(RuntimeError, "fmin not implemented for complex tensors.", input, other)
    """The elementwise minimum, ignoring a nan operand."""
    return apply(fmin_p, (input, other))


def _lerp_args(input, end, weight, op):
    if not isinstance(weight, Tensor):
        weight = scalar_value(weight)
        if type(weight) is complex and input._data.dtype.kind != "c":
            weight = _complex_to_real(weight, input._data.dtype)   # PyTorch's checked conversion
        elif type(weight) is not complex:
            weight = _check_value(weight, op, "weight")
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t._data.dtype != input._data.dtype:
            raise RuntimeError(f"expected dtype {D.c_type_name(input._data.dtype)} for `{name}` but got dtype "
                               f"{D.c_type_name(t._data.dtype)}")
    if input._data.dtype.kind not in "fcV":
        raise _not_implemented("lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar",
                               input._data.dtype)
    return (lerp_tensor_p if isinstance(weight, Tensor) else lerp_p), (input, end, weight)


@register(method=True, graph=True)
@schema("lerp(Tensor input, Tensor end, weight)")
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)`` (scalar or tensor weight)."""
    prim, args = _lerp_args(input, end, weight, "lerp")
    return apply(prim, args)


@register(name="lerp_", module=False, method=True)
@schema("lerp_(Tensor input, Tensor end, weight)")
def ilerp(self: Tensor, end: Tensor, weight) -> Tensor:
    prim, args = _lerp_args(self, end, weight, "lerp_")
    return apply_inplace(prim, self, args[1:])


def _addc_args(input, tensor1, tensor2, value, op):
    value = scalar_value(value)
    if op.startswith("addcdiv") and tensor1._data.dtype.kind in "iub" and tensor2._data.dtype.kind in "iub":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future  release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    d = promote(input, tensor1, tensor2).np
    if d.kind == "b":
        raise _not_implemented(op.rstrip("_") + "_cpu_out", d)
    if type(value) is complex and d.kind != "c":
        value = _complex_to_real(value, d)   # PyTorch's checked conversion to the result type
    if d.kind in "iu" and isinstance(value, float):
        value = int(value)   # PyTorch converts the value to the integral result type (truncation)
    return (input, tensor1, tensor2), {"value": value}


@register(method=True)
@schema("addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value)")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    args, params = _addc_args(input, tensor1, tensor2, value, "addcmul")
    return apply(addcmul_p, args, params)


@register(method=True)
@schema("addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value)")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    args, params = _addc_args(input, tensor1, tensor2, value, "addcdiv")
    return apply(addcdiv_p, args, params)


@register(name="addcmul_", module=False, method=True)
@schema("addcmul_(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value)")
def iaddcmul(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    args, params = _addc_args(self, tensor1, tensor2, value, "addcmul_")
    return apply_inplace(addcmul_p, self, args[1:], params)


@register(name="addcdiv_", module=False, method=True)
@schema("addcdiv_(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value)")
def iaddcdiv(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    args, params = _addc_args(self, tensor1, tensor2, value, "addcdiv_")
    return apply_inplace(addcdiv_p, self, args[1:], params)


# ----- clamp --------------------------------------------------------------------------------------------

_CLAMP_NODES = {("min", False): node_class("ClampMinBackward0", PrimNode),
                ("max", False): node_class("ClampMaxBackward0", PrimNode),
                ("min", True): node_class("ClampMinBackward1", PrimNode),
                ("max", True): node_class("ClampMaxBackward1", PrimNode)}


def _clamp_complex(input, min, max, op, tensor_bounds):
    """PyTorch's refusals of complex operands in the clamp family (each of its paths says it differently); a
    complex scalar bound with a zero imaginary part of a float tensor's clamp is its real part."""
    plain = op.rstrip("_") == "clamp"
    if tensor_bounds and not (plain and _cx_operand(input)):
        kernel = "clamp_cpu" if min is not None and max is not None else "minimum_cpu" if min is None else \
            "maximum_cpu"
        raise _not_implemented(kernel, _result_np(input, min, max))
    if plain and not tensor_bounds and input._data.dtype.kind == "f":
        if any(type(b) is complex and b.imag != 0 for b in (min, max)):
            raise RuntimeError("value cannot be converted to type double without overflow")
        return [b.real if type(b) is complex else b for b in (min, max)]
    raise NotImplementedError(_CLAMP_CX[1])


def _clamp_args(input, min, max, op):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    tensor_bounds = isinstance(min, Tensor) or isinstance(max, Tensor)
    if not tensor_bounds:   # PyTorch's kernel lookup comes before its check of the bounds
        refuse_shell(input, f"{op}_scalar_cpu" if max is None or min is None else "clamp_scalar_cpu")
    min, max = (_operand(b, op, input, arg, wrap=False) if b is not None else None
                for b, arg in ((min, "min"), (max, "max")))
    if _cx_operand(input) or _cx_operand(min) or _cx_operand(max):
        min, max = _clamp_complex(input, min, max, op, tensor_bounds)
    if not tensor_bounds:
        if input._data.dtype.kind in "fV":
            for b in (min, max):
                D.checked_scalar(b, input._data.dtype)   # clamp(max=1e40) of float32: PyTorch's RuntimeError
        kernel = "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu" if min is None else \
            "clamp_scalar_cpu"
        _check_not_bool(promote(*(x for x in (input, min, max) if x is not None)).np, kernel)
    return (clamp_tensor_p if tensor_bounds else clamp_p), (input, min, max)


@register(method=True, aliases=("clip",), graph=True)
@schema("clamp(Tensor input, min, max)")
def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """``input`` limited to ``[min, max]`` (scalar or tensor bounds; either may be None)."""
    prim, args = _clamp_args(input, min, max, "clamp")
    return apply(prim, args)


@register(method=True)
@schema("clamp_min(Tensor input, min)")
def clamp_min(input: Tensor, min) -> Tensor:
    """``max(input, min)``."""
    if min is None:
        raise TypeError("clamp_min(): argument 'min' must be Number or Tensor, not NoneType")
    prim, args = _clamp_args(input, min, None, "clamp_min")
    return apply(prim, args, _EMPTY, _CLAMP_NODES["min", prim is clamp_tensor_p])


@register(method=True)
@schema("clamp_max(Tensor input, max)")
def clamp_max(input: Tensor, max) -> Tensor:
    """``min(input, max)``."""
    if max is None:
        raise TypeError("clamp_max(): argument 'max' must be Number or Tensor, not NoneType")
    prim, args = _clamp_args(input, None, max, "clamp_max")
    return apply(prim, args, _EMPTY, _CLAMP_NODES["max", prim is clamp_tensor_p])


@register(name="clamp_", method=True, aliases=("clip_",))
@schema("clamp_(Tensor input, min, max)")
def iclamp(self: Tensor, min=None, max=None) -> Tensor:
    prim, args = _clamp_args(self, min, max, "clamp_")
    return apply_inplace(prim, self, args[1:])


@register(name="clamp_min_", method=True)
@schema("clamp_min_(Tensor input, min)")
def iclamp_min(self: Tensor, min) -> Tensor:
    prim, args = _clamp_args(self, min, None, "clamp_min_")
    return apply_inplace(prim, self, args[1:], _EMPTY, _CLAMP_NODES["min", prim is clamp_tensor_p])


@register(name="clamp_max_", method=True)
@schema("clamp_max_(Tensor input, max)")
def iclamp_max(self: Tensor, max) -> Tensor:
    prim, args = _clamp_args(self, None, max, "clamp_max_")
    return apply_inplace(prim, self, args[1:], _EMPTY, _CLAMP_NODES["max", prim is clamp_tensor_p])


# ----- where --------------------------------------------------------------------------------------------

_WHERE_UNSET = object()     # where(cond) alone (the nonzero form) vs an explicit where(cond, None)
_WHERE_FORMS = ("where() received an invalid combination of arguments - got ({}), but expected one of:\n"
                " * (Tensor condition)\n"
                " * (Tensor condition, Tensor input, Tensor other, *, Tensor out = None)\n"
                " * (Tensor condition, Number self, Tensor other)\n"
                " * (Tensor condition, Tensor input, Number other)\n"
                " * (Tensor condition, Number self, Number other)\n")


@register
@schema("where(Tensor condition, input, other)")
def where(condition: Tensor, input=_WHERE_UNSET, other=_WHERE_UNSET):
    """``where(cond, x, y)``: x where cond holds, else y (tensors or scalars). ``where(cond)`` gives the
    indices of the nonzero elements."""
    xp = NAMESPACES[type(condition._data)]
    if input is _WHERE_UNSET or other is _WHERE_UNSET or input is None or other is None:
        if input is _WHERE_UNSET and other is _WHERE_UNSET:
            return tuple(make(i) for i in xp.nonzero_tuple(condition._data))
        got = ["Tensor"] + [type(v).__name__ if k is None else f"{k}={type(v).__name__}"
                            for k, v in ((None, input), ("other" if input is _WHERE_UNSET else None, other))
                            if v is not _WHERE_UNSET]
        raise TypeError(_WHERE_FORMS.format(", ".join(got)))
    if condition._data.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{D.type_word(condition._data.dtype)}")
    input = scalar_or_tensor(input, "where", "input")
    other = scalar_or_tensor(other, "where", "other")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        d = promote(input, other).np   # both scalars: PyTorch's scalar result type (where(c, 1, 0) is int64)
        return _made(xp.where(condition._data, d.type(input), d.type(other)))
    if type(input) is int:
        input = _fit_int(input, other, "where", wrap=False)
    if type(other) is int:
        other = _fit_int(other, input, "where", wrap=False)
    shapes = [condition._data.shape] + [x._data.shape for x in (input, other) if isinstance(x, Tensor)]
    if any(broadcast_error((a, b)) for i, a in enumerate(shapes) for b in shapes[i + 1:]):   # pairwise is enough
        shapes = [list(s) for s in shapes]
        raise RuntimeError(f"where(): the shapes of condition, input and other do not broadcast: "
                           f"{', '.join(map(str, shapes))}") from None
    return apply_saving(where_p, (input, other), {"cond": condition._data}, None, (condition,))


method("where", lambda self, condition, other: where(condition, self, other))


@graph("where")
def _graph_where(cond, a, b):
    # rules pass raw boolean masks (saved params) as well as tensors
    return where(cond if isinstance(cond, Tensor) else make(cond), a, b)


# ----- comparisons and logic (not differentiable) ----------------------------------------------------------
# The kernels come from the namespace of the tensors' device (``xp.eq``, ``xp.logical_and``, ...), never from
# NumPy directly; each public op is also graph_ns's twin of its kernel.

def _made(r) -> Tensor:
    """A tensor of a kernel's result, on its device (NumPy gives 0-d results as NumPy scalars)."""
    be = NAMESPACES[type(r)].backend
    return make(r if type(r) in be.array_types else be.asarray(r))


def _raw_pair(input, other, op, scalar_other=True):
    """The raw operands of a non-differentiable binary op, cast to PyTorch's common dtype."""
    if scalar_other:   # the caller's schema checked input (and other where it must be a Tensor)
        other = _operand(other, op, input)
    d = compute_dtype(input, other)
    a = input._data
    b = other._data if isinstance(other, Tensor) else other
    if d is not None:
        xp = NAMESPACES[type(a)]
        a = xp.cast(a, d)
        if isinstance(other, Tensor):
            b = xp.cast(b, d)
        elif type(b) is int and d is _BF16 and not -2 ** 63 <= b < 2 ** 63:   # ml_dtypes takes no such int
            b = xp.weak_number(a, float(b))
    if isinstance(other, Tensor):
        err = broadcast_error((a.shape, b.shape))
        if err is not None:
            raise err
    return a, b


def _compare(name, aliases=()):
    ordered = name not in ("eq", "ne")   # complex numbers have no order: PyTorch has no complex kernel

    def fn(input: Tensor, other) -> Tensor:
        a, b = _raw_pair(input, other, name)
        if ordered and a.dtype.char in SHELL_CHARS:   # float8, uint16/32/64: PyTorch compares them for equality only
            refuse_shell(input if isinstance(input, Tensor) and input._data.dtype.char in SHELL_CHARS else other,
                         name + "_cpu")
        if ordered and a.dtype.kind == "c":   # a complex operand makes both complex here
            raise _not_implemented(name + "_cpu", a.dtype)
        xp = NAMESPACES[type(a)]
        return _made(getattr(xp, name)(a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` comparison: a bool tensor (not differentiable)."
    fn = schema(f"{name}(Tensor input, other)")(fn)

    def inplace(self: Tensor, other) -> Tensor:
        r = fn(self, other)
        _write_inplace(self, r, name + "_")
        return self
    inplace.__name__ = inplace.__qualname__ = name + "_"
    register(fn, method=True, aliases=aliases, graph=True)
    for n in (name,) + aliases:
        register(inplace, name=n + "_", module=False, method=True)
    return fn


def _write_inplace(self: Tensor, r: Tensor, op: str) -> None:
    """Write a non-differentiable result into ``self`` (its history ends: PyTorch's zero gradient, complex=True)."""
    from ..autograd._views import check_inplace
    check_inplace(self, self._requires_grad)
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(r._data.shape)}")
    NAMESPACES[type(self._data)].backend.copyto(self._data, r._data)
    self._vc[0] += 1


eq = _compare("eq")
ne = _compare("ne", ("not_equal",))
lt = _compare("lt", ("less",))
le = _compare("le", ("less_equal",))
gt = _compare("gt", ("greater",))
ge = _compare("ge", ("greater_equal",))


def _bitwise(name, kernel, shift=False, integers=False):
    """An elementwise op of integer (and bool, unless ``shift`` or ``integers``) tensors; ``integers`` ops (gcd,
    lcm) take tensors only."""
    def fn(input, other) -> Tensor:
        if integers:
            check_tensor(input, name)
            check_tensor(other, name, "other", 2)
        if not isinstance(input, Tensor) and isinstance(other, Tensor):   # scalar << tensor
            input = _operand(input, name, other, "self")
        else:
            check_tensor(input, name)
            other = _operand(other, name, input)
        d = promote(input, other).np
        if d.kind in "fcV" or ((shift or integers) and d.kind == "b") or (shift or integers) and d.char in "HILQ":
            raise _not_implemented(kernel, d)   # (uint16/32/64: PyTorch has their and, or, xor only)
        t = input if isinstance(input, Tensor) else other
        xp = NAMESPACES[type(t._data)]
        # a scalar operand becomes a 0-d array of the common dtype on the tensor's device (NumPy would
        # refuse a Python int beyond the dtype's range)
        a, b = (xp.cast(x._data, d) if isinstance(x, Tensor) else
                xp.cast(xp.backend.asarray(x), d) for x in (input, other))
        err = broadcast_error((a.shape, b.shape))
        if err is not None:
            raise err
        return _made(getattr(xp, name)(a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of integer or bool tensors."

    def inplace(self: Tensor, other) -> Tensor:
        r = fn(self, other)
        if r.dtype is not self.dtype and D.promote_types(r.dtype, self.dtype) is not self.dtype:
            raise RuntimeError(f"result type {D.type_word(r._data.dtype)} can't be cast to the desired output type "
                               f"{D.type_word(self._data.dtype)}")
        _write_inplace(self, r, name + "_")
        return self
    inplace.__name__ = inplace.__qualname__ = name + "_"
    register(fn, method=True, graph=True)
    register(inplace, name=name + "_", module=name + "_" in _MODULE_INPLACE, method=True)
    return fn


bitwise_and = _bitwise("bitwise_and", "bitwise_and_cpu")
bitwise_or = _bitwise("bitwise_or", "bitwise_or_cpu")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor_cpu")


bitwise_left_shift = _bitwise("bitwise_left_shift", "lshift_cpu", shift=True)
bitwise_right_shift = _bitwise("bitwise_right_shift", "rshift_cpu", shift=True)
# PyTorch's calc_gcd (Euclid on the absolute values) and lcm = |a / gcd * b| (0 where gcd is 0); not differentiable
gcd = _bitwise("gcd", "gcd_cpu", integers=True)
lcm = _bitwise("lcm", "lcm_cpu", integers=True)


@register(method=True, graph=True)
@schema("bitwise_not(Tensor input)")
def bitwise_not(input: Tensor) -> Tensor:
    """``~input`` of an integer or bool tensor."""
    if input._data.dtype.kind in "fcV" or input._data.dtype.char in SHELL_CHARS:
        raise _not_implemented("bitwise_not_cpu", input._data.dtype)
    xp = NAMESPACES[type(input._data)]
    return _made(xp.bitwise_not(input._data))


@register(name="bitwise_not_", module=False, method=True)
def ibitwise_not(self: Tensor) -> Tensor:
    _write_inplace(self, bitwise_not(self), "bitwise_not_")
    return self


def _logical(name):
    def fn(input: Tensor, other: Tensor) -> Tensor:
        a, b = _raw_pair(input, other, name, scalar_other=False)
        xp = NAMESPACES[type(a)]
        return _made(getattr(xp, name)(a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (nonzero is true): a bool tensor."
    fn = schema(f"{name}(Tensor input, Tensor other)")(fn)

    def inplace(self: Tensor, other: Tensor) -> Tensor:
        _write_inplace(self, fn(self, other), name + "_")
        return self
    inplace.__name__ = inplace.__qualname__ = name + "_"
    register(fn, method=True, graph=True)
    register(inplace, name=name + "_", module=False, method=True)
    return fn


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


@register(method=True, graph=True)
@schema("logical_not(Tensor input)")
def logical_not(input: Tensor) -> Tensor:
    """``input == 0``: a bool tensor."""
    xp = NAMESPACES[type(input._data)]
    return _made(xp.logical_not(input._data))


@register(name="logical_not_", module=False, method=True)
def ilogical_not(self: Tensor) -> Tensor:
    _write_inplace(self, logical_not(self), "logical_not_")
    return self


_PREDICATE_CX = {"isposinf": (RuntimeError, "isposinf does not support complex inputs."),
                 "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
                 "signbit": (NotImplementedError, "signbit is not implemented for complex tensors.")}


# the float8 dtypes (their NumPy character codes) PyTorch has no isinf/isfinite kernel for
_PREDICATE_F8 = {"isinf": shell_chars(D.FLOAT8 - {D.float8_e5m2}),
                 "isfinite": shell_chars(D.FLOAT8 - {D.float8_e5m2, D.float8_e8m0fnu})}


def _predicate(name):
    cx = _PREDICATE_CX.get(name)
    shell = _PREDICATE_F8.get(name)

    def fn(input: Tensor) -> Tensor:
        if cx is not None:
            _refuse_complex(*cx, input)
        if shell is not None:
            refuse_shell(input, name, shell)
        xp = NAMESPACES[type(input._data)]
        return _made(getattr(xp, name)(input._data))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}``: a bool tensor."
    return register(schema(f"{name}(Tensor input)")(fn), method=True, graph=True)


isnan = _predicate("isnan")
isinf = _predicate("isinf")
isfinite = _predicate("isfinite")
isposinf = _predicate("isposinf")
isneginf = _predicate("isneginf")
isreal = _predicate("isreal")
signbit = _predicate("signbit")


def _close_args(input, other, rtol, atol, equal_nan, op):
    rtol, atol = float(scalar_value(rtol)), float(scalar_value(atol))
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"{D.type_word(input._data.dtype)} did not match {D.type_word(other._data.dtype)}")
    err = broadcast_error((input._data.shape, other._data.shape))
    if err is not None:
        raise err
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    return rtol, atol


def _isclose(input, other, rtol, atol, equal_nan, op):
    """(the device's namespace, the raw isclose result)."""
    rtol, atol = _close_args(input, other, rtol, atol, equal_nan, op)
    xp = NAMESPACES[type(input._data)]
    return xp, xp.isclose(input._data, other._data, rtol, atol, bool(equal_nan))


@register(method=True, graph=True)
@schema("isclose(Tensor input, Tensor other, float rtol, float atol, bool equal_nan)")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|``, elementwise: a bool tensor."""
    return _made(_isclose(input, other, rtol, atol, equal_nan, "isclose")[1])


@register(method=True)
@schema("allclose(Tensor input, Tensor other, float rtol, float atol, bool equal_nan)")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``isclose(input, other, ...)`` holds."""
    refuse_shell(input, "mul_cpu_reduced_float", F8_CHARS)
    xp, r = _isclose(input, other, rtol, atol, equal_nan, "allclose")
    return bool(xp.all(r).item())   # item(): a tensor without data ('meta') has no answer and raises


@register(method=True)
@schema("equal(Tensor input, Tensor other)")
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape and elements."""
    refuse_shell(input, "equal_notnan_cpu", F8_CHARS)
    if input._data.shape != other._data.shape:
        return False
    xp = NAMESPACES[type(input._data)]
    return bool(xp.all(xp.eq(input._data, other._data)).item())


# ----- in-place variants ---------------------------------------------------------------------------------

def _inplace_binary(prim, name, check=None, fused=None):
    def fn(self: Tensor, other, *, alpha=1) -> Tensor:
        other = _operand(other, name, self)
        if check is not None:
            check(self, other)
        a = None if fused is None or (alpha == 1 and type(alpha) is not bool) else \
            _fused_alpha(self, other, alpha, name)
        if a is not None:
            return apply_inplace(fused, self, (other,), {"alpha": a})
        return apply_inplace(prim, self, (_scaled(other, alpha, name, self),))
    fn.__name__ = fn.__qualname__ = name
    return register(schema(f"{name}(Tensor input, other, *, alpha)")(fn), module=False, method=True)


iadd = _inplace_binary(add_p, "add_", fused=add_alpha_p)
isub = _inplace_binary(sub_p, "sub_", check_sub, fused=sub_alpha_p)
register(isub, name="subtract_", module=False, method=True)


@register(name="mul_", module=False, method=True, aliases=("multiply_",))
@schema("mul_(Tensor input, other)")
def imul(self: Tensor, other) -> Tensor:
    return apply_inplace(mul_p, self, (_operand(other, "mul_", self),))


@register(name="div_", module=False, method=True, aliases=("divide_",))
@schema("div_(Tensor input, other, *, rounding_mode)")
def idiv(self: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    other = _operand(other, "div_", self)
    if rounding_mode is None:
        return apply_inplace(div_p, self, (other,))
    div(self, other, rounding_mode=rounding_mode)   # the argument errors
    return apply_inplace(div_mode_p, self, (other,), {"mode": rounding_mode})


@register(name="true_divide_", module=False, method=True)
@schema("true_divide_(Tensor input, other)")
def itrue_divide(self: Tensor, other) -> Tensor:
    return apply_inplace(div_p, self, (_operand(other, "true_divide_", self),))


@register(name="floor_divide_", module=False, method=True)
def ifloor_divide(self: Tensor, other) -> Tensor:
    other = _operand(other, "floor_divide_", self)
    _no_bool(self, other, "div_floor_cpu")
    return apply_inplace(floor_divide_p, self, (other,))


@register(name="remainder_", module=False, method=True)
def iremainder(self: Tensor, other) -> Tensor:
    other = _operand(other, "remainder_", self)
    _no_bool(self, other, "remainder_cpu")
    return apply_inplace(remainder_p if isinstance(other, Tensor) else remainder_scalar_p, self, (other,))


@register(name="fmod_", module=False, method=True)
def ifmod(self: Tensor, other) -> Tensor:
    other = _operand(other, "fmod_", self)
    _no_bool(self, other, "fmod_cpu")
    return apply_inplace(fmod_p if isinstance(other, Tensor) else fmod_scalar_p, self, (other,))


@register(name="pow_", module=False, method=True)
def ipow(self: Tensor, exponent) -> Tensor:
    exponent = _operand(exponent, "pow_", self, "exponent", wrap=False)
    return apply_inplace(pow_tensor_p if isinstance(exponent, Tensor) else pow_scalar_p, self, (exponent,))


def _inplace_of(fn, name, prim_of):
    """In-place variant of a binary op ``fn`` (its argument checks), writing through ``prim_of(other)``."""
    def inplace(self: Tensor, other) -> Tensor:
        fn(self, other)   # the argument and dtype errors of the out-of-place op
        other = _operand(other, name, self)
        return apply_inplace(prim_of(other), self, (other,))
    inplace.__name__ = inplace.__qualname__ = name
    return register(inplace, name=name, module=name in _MODULE_INPLACE, method=True)


register(_inplace_of(atan2, "atan2_", lambda o: atan2_p), name="arctan2_", module=False, method=True)
_inplace_of(hypot, "hypot_", lambda o: hypot_p)
_inplace_of(xlogy, "xlogy_", lambda o: xlogy_p if isinstance(o, Tensor) else xlogy_scalar_p)
_inplace_of(copysign, "copysign_", lambda o: copysign_p if isinstance(o, Tensor) else copysign_scalar_p)
_inplace_of(heaviside, "heaviside_", lambda o: heaviside_p)



# ----- positive, ldexp, nextafter, frexp (PyTorch's derivatives.yaml formulas) ---------------------------------

@register(method=True)
def positive(input: Tensor) -> Tensor:
    """``input`` itself (unary plus); bool tensors refuse it, as PyTorch."""
    check_tensor(input, "positive")
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# The rules get the inputs as given (an integer exponent too): ``b * 1.0`` is a float exponent on every device.
ldexp_p = defprim("ldexp", lambda xp, a, b: a * xp.pow(2.0, b),
                  vjp=(lambda xp, g, out, a, b: g * xp.pow(2.0, b * 1.0),
                       lambda xp, g, out, a, b: g * out * math.log(2.0)),   # M_LN2
                  jvp="elementwise", saves={1: (0,)}, saves_out=True, promote="float", batch=True,
                  complex=True)   # PyTorch's ldexp is mul(input, pow(2, other)): holomorphic in both


@register(method=True)
@schema("ldexp(Tensor input, Tensor other)")
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` (integral inputs give the default float dtype)."""
    return apply(ldexp_p, (input, other))


@register(method=True)
@schema("ldexp_(Tensor input, Tensor other)")
def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    if input._data.dtype.kind in "iub":   # PyTorch's wording for an integral self
        raise RuntimeError(f"ldexp can't be cast to the desired output type {D.type_word(input._data.dtype)}")
    return apply_inplace(ldexp_p, input, (other,))


nextafter_p = defprim("nextafter", lambda xp, a, b: xp.nextafter(a, b),
                      vjp=(lambda xp, g, out, a, b: xp.where(a != b, g, 0.0),
                           lambda xp, g, out, a, b: xp.zeros_like(g)),
                      jvp="elementwise", saves={0: (0,), 1: (0,)}, promote="standard", batch=True)


@register(method=True, graph=True)
@schema("nextafter(Tensor input, Tensor other)")
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``; its gradient passes to ``input`` where they
    differ (PyTorch's formula), none to ``other``."""
    _no_int(input, other, "nextafter_cpu")
    return apply(nextafter_p, (input, other))


@register(method=True)
@schema("nextafter_(Tensor input, Tensor other)")
def nextafter_(input: Tensor, other: Tensor) -> Tensor:
    _no_int(input, other, "nextafter_cpu")
    return apply_inplace(nextafter_p, input, (other,))


graph_raw("frexp")
frexp_p = defprim("frexp", lambda xp, a: xp.frexp(a)[0],
                  vjp=lambda xp, g, out, a: g / xp.exp2(xp.frexp(a)[1] * 1.0),   # grad / exponent.exp2()
                  jvp="elementwise", saves=(0,), batch=True)
_frexp_type = return_type("frexp", ("mantissa", "exponent"))


@register(method=True)
@schema("frexp(Tensor input)")
def frexp(input: Tensor):
    """(mantissa, exponent) with ``input = mantissa * 2**exponent``, ``0.5 <= |mantissa| < 1``; exponent int32."""
    if input._data.dtype.kind not in "fV":   # (bfloat16 is NumPy kind 'V')
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    exponent = make(NAMESPACES[type(input._data)].frexp(input._data)[1])
    return _frexp_type(apply(frexp_p, (input,)), exponent)


# ----- operators --------------------------------------------------------------------------------------------


def _operator(fn, prim=None):
    """A binary operator method: NotImplemented for operand types it does not know, so Python can
    try the other side. With ``prim``, float tensors with a float/int scalar or a same-dtype tensor
    take a fast path: no promotion and no bool checks are needed there."""
    if prim is not None and prim.is_view:
        raise ValueError(f"_operator: {prim.name} is a view op; fast_operator does not handle views")

    def op(self, other):
        if not (isinstance(other, (Tensor, bool, int, float, complex)) or is_array_scalar(other)):
            return NotImplemented
        return fn(self, other)
    return op if prim is None else fast_operator(prim, op)


def _reflected(prim, node_name, check=None):
    """``other OP self`` for a scalar ``other``; ``check(other, self)`` raises for bad dtypes."""
    node = node_class(node_name, PrimNode)

    def fn(self, other):
        if not (isinstance(other, (Tensor, bool, int, float, complex)) or is_array_scalar(other)):
            return NotImplemented
        other = _operand(other, prim.name, self)
        if check is not None:
            check(other, self)
        return apply(prim, (other, self), _EMPTY, node)
    return fn


_MUL_NODE = node_class("MulBackward0", PrimNode)


def _rtruediv(self, other):
    # PyTorch computes ``2 / x`` as ``x.reciprocal() * 2``: MulBackward0 over ReciprocalBackward0, and
    # neither node saves x (modifying x in place afterwards is harmless, as there).
    if not (isinstance(other, (Tensor, bool, int, float, complex)) or is_array_scalar(other)):
        return NotImplemented
    other = _operand(other, "div", self)
    r = reciprocal(self)
    return apply(mul_p, (r, other))


def _roperator(fn):
    """``other OP self`` through ``fn(other, self)`` (NotImplemented for unknown operand types)."""
    def op(self, other):
        if not (isinstance(other, (Tensor, bool, int, float, complex)) or is_array_scalar(other)):
            return NotImplemented
        return fn(other, self)
    return op


def _ioperator(fn):
    """An in-place operator (``+=``): NotImplemented for unknown operand types, as PyTorch's (Python then
    tries ``__add__`` and the other operand, and raises its TypeError)."""
    def op(self, other):
        if not (isinstance(other, (Tensor, bool, int, float, complex)) or is_array_scalar(other)):
            return NotImplemented
        return fn(self, other)
    return op


def _invert(self):
    if self._data.dtype.kind in "fcV":   # PyTorch checks this in Python, before the kernel
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


_rsub_number = _reflected(rsub_scalar_p, "RsubBackward1", check_sub)


def _rsub_operator(self, other):
    """``other - self``: torch.rsub's RsubBackward0 (an edge for each) when ``other`` is a tensor (the scalar
    primitive would give it no edge, so no gradient), else RsubBackward1."""
    return rsub(self, other) if isinstance(other, Tensor) else _rsub_number(self, other)


def _bitwise_inplace(name):
    return lambda self, other: getattr(self, name + "_")(other)


for _name, _fn in {
        "__add__": _operator(add, add_p), "__radd__": _operator(add, add_p), "__iadd__": _ioperator(iadd),
        "__sub__": _operator(sub, sub_p), "__rsub__": _rsub_operator,
        "__isub__": _ioperator(isub),
        "__mul__": _operator(mul, mul_p), "__rmul__": _operator(mul, mul_p), "__imul__": _ioperator(imul),
        "__truediv__": _operator(div, div_p), "__rtruediv__": _rtruediv, "__itruediv__": _ioperator(idiv),
        "__pow__": _operator(pow), "__rpow__": _roperator(pow), "__ipow__": _ioperator(ipow),
        "__floordiv__": _operator(floor_divide), "__ifloordiv__": _ioperator(ifloor_divide),
        "__rfloordiv__": _reflected(floor_divide_p, "NotImplemented",
                                    lambda o, s: _no_bool(s, o, "div_floor_cpu")),
        "__mod__": _operator(remainder), "__rmod__": _roperator(remainder), "__imod__": _ioperator(iremainder),
        "__neg__": neg, "__abs__": abs, "__pos__": lambda self: self,
        "__eq__": _operator(eq), "__ne__": _operator(ne), "__lt__": _operator(lt),
        "__le__": _operator(le), "__gt__": _operator(gt), "__ge__": _operator(ge),
        "__and__": _operator(bitwise_and), "__or__": _operator(bitwise_or), "__xor__": _operator(bitwise_xor),
        "__rand__": _operator(bitwise_and), "__ror__": _operator(bitwise_or), "__rxor__": _operator(bitwise_xor),
        "__iand__": _ioperator(_bitwise_inplace("bitwise_and")), "__ior__": _ioperator(_bitwise_inplace("bitwise_or")),
        "__ixor__": _ioperator(_bitwise_inplace("bitwise_xor")),
        "__lshift__": _operator(bitwise_left_shift), "__rshift__": _operator(bitwise_right_shift),
        "__rlshift__": _roperator(bitwise_left_shift), "__rrshift__": _roperator(bitwise_right_shift),
        "__ilshift__": _ioperator(_bitwise_inplace("bitwise_left_shift")),
        "__irshift__": _ioperator(_bitwise_inplace("bitwise_right_shift")),
        "__invert__": _invert}.items():
    method(_name, _fn)

# ----- torch.special: the Bessel family (kernels: devices/cpu/bessel.py) ---------------------------------------------

def _tiny_safe(xp, a):
    """PyTorch's i1/i1e backward: |x| <= eps is replaced by eps (and its gradient by the limit 1/2 there)."""
    eps = 2.220446049250313e-16 if "64" in str(a.dtype) else 1.1920928955078125e-07
    big = xp.abs(a) > eps
    return big, xp.where(big, a, eps)


def _i1_grad(xp, g, out, a):
    big, s = _tiny_safe(xp, a)
    return g * xp.where(big, xp.i0(s) - out * xp.reciprocal(s), 0.5)


def _i1e_grad(xp, g, out, a):
    big, s = _tiny_safe(xp, a)
    return g * xp.where(big, xp.i0e(s) - out * (xp.sgn(s) + xp.reciprocal(s)), 0.5)


i0_p = _unary_prim("i0", "I0Backward0", lambda xp, a: xp.i0(a), lambda xp, g, out, a: g * xp.i1(a))
i0e_p = _unary_prim("i0e", "SpecialI0EBackward0", lambda xp, a: xp.i0e(a),
                    lambda xp, g, out, a: g * (xp.i1e(a) - xp.sgn(a) * out), saves_out=True)
i1_p = _unary_prim("i1", "SpecialI1Backward0", lambda xp, a: xp.i1(a), _i1_grad, saves_out=True)
i1e_p = _unary_prim("i1e", "SpecialI1EBackward0", lambda xp, a: xp.i1e(a), _i1e_grad, saves_out=True)

_MODULE_INPLACE.add("i0_")
i0 = _unary(i0_p, "i0", special=("i0",))


def _special_unary(prim, name):
    """``ember.special.<name>`` (no ``ember.<name>`` or method, as in PyTorch); graph twin for the rules."""
    @schema(f"special_{name}(Tensor input)")
    def fn(input: Tensor) -> Tensor:
        _no_complex(name + "_cpu", input)
        return apply(prim, (input,))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}, differentiable to any order."
    register(fn, module=False, submodule="special", graph=True)
    return fn


i0e, i1, i1e = (_special_unary(p, n) for p, n in ((i0e_p, "i0e"), (i1_p, "i1"), (i1e_p, "i1e")))


def _special_nondiff(name, arg="input"):
    """``ember.special.<name>``: PyTorch declares no derivative, so the result never requires grad; integer and
    bool inputs compute in the default float dtype; float16 has no kernel (as in PyTorch)."""
    def compute(t: Tensor) -> Tensor:
        d = t._data
        _no_complex(f"{name}_cpu", t)
        if d.dtype.kind not in "fV":
            d = d.astype(D._default_float.np)
        elif d.dtype == D.float16.np or d.dtype is D.bfloat16.np:
            raise _not_implemented(f"{name}_cpu", d.dtype)
        return _made(getattr(NAMESPACES[type(d)], name)(d))

    if arg == "x":   # airy_ai and spherical_bessel_j0 name their argument x
        def fn(x: Tensor) -> Tensor:
            return compute(x)
    else:
        def fn(input: Tensor) -> Tensor:
            return compute(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name} (PyTorch's Cephes-based formula; not differentiable, as in PyTorch)."
    fn = schema(f"special_{name}(Tensor {arg})")(fn)
    register(fn, module=False, submodule="special", graph=True)
    return fn


modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0, \
    scaled_modified_bessel_k1, bessel_j0, bessel_j1, bessel_y0, bessel_y1 = (
        _special_nondiff(n) for n in ("modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                                      "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                      "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"))
spherical_bessel_j0 = _special_nondiff("spherical_bessel_j0", "x")
airy_ai = _special_nondiff("airy_ai", "x")

# ----- torch.special, part B: ndtr, ndtri, log_ndtr, erfcx, entr, xlog1py, multigammaln ---------------------------
# PyTorch's formulas (aten/src/ATen/native/Math.h, UnaryOps.cpp) and derivatives (tools/autograd/derivatives.yaml).

_SQRT1_2 = math.sqrt(0.5)
_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _log_ndtr(xp, a):
    """PyTorch's calc_log_ndtr: log(erfcx(-t) / 2) - t^2 below -1, log1p(-erfc(t) / 2) above (t = x / sqrt 2)."""
    t = a * _SQRT1_2
    return xp.where(a < -1.0, xp.log(xp.erfcx(-t) / 2) - t * t, xp.log1p(-xp.erfc(t) / 2))


def _entr(xp, a):
    """-x log x; 0 at 0, -inf below 0 (nan stays nan)."""
    r = -a * xp.log(xp.where(a > 0, a, 1.0))
    return xp.where(a < 0, -math.inf, xp.where(a == 0, 0.0 * a, r))


erfcx_p = _unary_prim("special_erfcx", "SpecialErfcxBackward0", lambda xp, a: xp.erfcx(a),
                      lambda xp, g, out, a: (2.0 * a * out - _TWO_OVER_SQRT_PI) * g, (0,), True)
ndtri_p = _unary_prim("special_ndtri", "SpecialNdtriBackward0", lambda xp, a: xp.ndtri(a),
                      lambda xp, g, out, a: g * (_SQRT_2PI * xp.exp(out * out / 2)), (), True)
log_ndtr_p = _unary_prim("special_log_ndtr", "SpecialLogNdtrBackward0", _log_ndtr,
                         lambda xp, g, out, a: g / _SQRT_2PI * xp.exp(-(out + a * a / 2)), (0,), True)
def _entr_fwd(xp, a):
    """bfloat16: PyTorch's entr_kernel computes -x * std::log(x) in c10::BFloat16, whose log rounds to bfloat16
    (c10/util/BFloat16-math.h) before the product rounds again."""
    if a.dtype is not _BF16:
        return _entr(xp, a)
    a32 = xp.cast(a, D.float32.np)
    r = xp.cast(-a * xp.cast(xp.log(xp.where(a32 > 0, a32, 1.0)), _BF16), D.float32.np)
    return xp.cast(xp.where(a32 < 0, -math.inf, xp.where(a32 == 0, 0.0 * a32, r)), _BF16)


entr_p = _unary_prim("special_entr", "SpecialEntrBackward0", _entr_fwd,
                     lambda xp, g, out, a: g * (-(1 + xp.log(a))))


def _xlog1py_self(xp, g, out, a, b):
    if isinstance(b, (int, float)):   # a scalar other: log1p(b) in double precision
        lb = math.log1p(b) if b > -1 else -math.inf if b == -1 else math.nan
        return g * math.nan if b != b else xp.where((a == 0) & (b <= -1), g * 0.0, g * lb)
    return xp.where((a == 0) & (b <= -1), g * 0.0, xp.xlog1py(g, b))


def _xlog1py_other(xp, g, out, a, b):
    return g * a / (b + 1)


def _xlog1py_fwd(xp, a, b):   # (bfloat16: the kernel rounds its log1p, as PyTorch's)
    return xp.xlog1py(a, b)
xlog1py_p = defprim("special_xlog1py", _xlog1py_fwd, node="SpecialXlog1PyBackward0",
                    vjp=(_xlog1py_self, _xlog1py_other), jvp="elementwise", saves=(0, 1), promote="float", batch=True)
xlog1py_rscalar_p = defprim("special_xlog1py", _xlog1py_fwd, node="SpecialXlog1PyBackward1",
                            vjp=(None, _xlog1py_other), jvp="elementwise", saves=(1,), promote="float",
                            scalar_args=(0,), batch=True)
xlog1py_scalar_p = defprim("special_xlog1py", _xlog1py_fwd, node="SpecialXlog1PyBackward2",
                           vjp=(_xlog1py_self, None), jvp="elementwise", saves=(0,), promote="float",
                           scalar_args=(1,), batch=True)


def _mvlgamma(xp, a, p):
    """sum_j lgamma(x - j / 2) + p (p - 1) / 4 log(pi), summed in PyTorch's order (j from p - 1 down to 0)."""
    if a.dtype is _BF16:   # PyTorch's composite of bfloat16 ops: each argument and lgamma rounded, the sum in
        f32 = D.float32.np   # float32 rounded, plus the constant rounded to bfloat16
        r = None
        for j in range(p - 1, -1, -1):
            t = xp.cast(xp.lgamma(a + xp.weak_number(a, -j * 0.5)), f32)
            r = t if r is None else r + t
        return xp.cast(r, _BF16) + xp.weak_number(a, p * (p - 1) * math.log(math.pi) * 0.25)
    r = xp.lgamma(a - (p - 1) * 0.5)
    for j in range(p - 2, -1, -1):
        r = r + xp.lgamma(a - j * 0.5)
    return r + p * (p - 1) * math.log(math.pi) * 0.25


def _mvlgamma_rule(xp, g, out, a, p):
    d = xp.digamma(a - (p - 1) * 0.5)
    for j in range(p - 2, -1, -1):
        d = d + xp.digamma(a - j * 0.5)
    return g * d


mvlgamma_p = _unary_prim("mvlgamma", "MvlgammaBackward0", _mvlgamma, _mvlgamma_rule)


def _no_half(t: Tensor, kernel: str) -> None:
    if t._data.dtype.kind in "fV" and t._data.dtype.itemsize < 4:   # PyTorch's CPU kernel has no float16
        raise _not_implemented(kernel, t._data.dtype)


def _special_unary(prim, name: str, graph_name: str | bool = False, half: bool = False):
    @schema(f"special_{name}(Tensor input)")
    def fn(input: Tensor) -> Tensor:
        _no_complex(name + "_cpu", input)
        if not half:
            _no_half(input, name + "_cpu")
        return apply(prim, (input,))
    fn.__name__ = fn.__qualname__ = "special_" + name
    fn.__doc__ = f"``torch.special.{name}``, elementwise."
    register(fn, module=False, submodule="special", submodule_name=name, graph=graph_name)
    return fn


special_erfcx = _special_unary(erfcx_p, "erfcx", "erfcx")
special_ndtri = _special_unary(ndtri_p, "ndtri", "ndtri")
special_log_ndtr = _special_unary(log_ndtr_p, "log_ndtr")
special_entr = _special_unary(entr_p, "entr", half=True)


@register(module=False, submodule="special", submodule_name="ndtr")
@schema("special_ndtr(Tensor input)")
def special_ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, composed as PyTorch's: (1 + erf(x * sqrt(1/2))) * 0.5, with its nodes
    (MulBackward1, AddBackward1, ErfBackward0, MulBackward1)."""
    t = erf(apply(mul_scalar_p, (input, _SQRT1_2)))
    return apply(mul_scalar_p, (apply(add_scalar_p, (t, 1)), 0.5))


@register(module=False, submodule="special", submodule_name="xlog1py", graph="xlog1py")
def special_xlog1py(input, other) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is nan)."""
    if not isinstance(input, Tensor):
        check_tensor(other, "special_xlog1py", "other", 2)
        input = _operand(input, "special_xlog1py", None, "self")
        _no_complex("xlog1py_cpu", input, other)
        return apply(xlog1py_rscalar_p, (input, other))
    input, other = _binary_args(input, other, "special_xlog1py")
    _no_complex("xlog1py_cpu", input, other)
    return apply(xlog1py_p if isinstance(other, Tensor) else xlog1py_scalar_p, (input, other))


def _check_p(p) -> int:
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return int(p)


@register(method=True)
@schema("mvlgamma(Tensor input, int p)")
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``."""
    _no_complex("arange_cpu", input)   # PyTorch's formula starts with an arange of the input's dtype
    return apply(mvlgamma_p, (input,), {"p": _check_p(p)})


register(mvlgamma, module=False, submodule="special", submodule_name="multigammaln")


@method("mvlgamma_")
def imvlgamma(self: Tensor, p: int) -> Tensor:
    mvlgamma(self, p)
    return apply_inplace(mvlgamma_p, self, (), {"p": _check_p(p)})


# ----- torch.special, part B: the orthogonal polynomials (not differentiable: no grad_fn, as in PyTorch) ---------

def _orthogonal_polynomial(kind: str):
    op = "special_" + kind

    def fn(x, n) -> Tensor:
        if not isinstance(x, Tensor) and not isinstance(n, Tensor):
            check_tensor(x, op, "x")
        x, n = scalar_or_tensor(x, op, "x"), scalar_or_tensor(n, op, "n")
        d = promote(x, n)
        if d.is_complex:
            raise _not_implemented(kind + "_cpu", d.np)
        if not d.is_floating_point:
            d = D._default_float
        if d.itemsize < 4:   # float16 (and bfloat16): PyTorch has no CPU kernel
            raise _not_implemented(kind + "_cpu", d.np)
        t = x if isinstance(x, Tensor) else n
        xp = NAMESPACES[type(t._data)]

        def arr(v):
            return xp.cast(v._data if isinstance(v, Tensor) else xp.backend.asarray(v), d.np)
        return make(xp.orthogonal_polynomial(kind, arr(x), arr(n)))
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"``torch.special.{kind}(x, n)``: elementwise, ``x`` and ``n`` tensors or numbers."
    register(fn, module=False, submodule="special", submodule_name=kind)
    return fn


for _kind in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
              "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
              "laguerre_polynomial_l", "legendre_polynomial_p"):
    globals()["special_" + _kind] = _orthogonal_polynomial(_kind)


@register(module=False, graph="orthogonal_polynomial")
def _orthogonal_polynomial_graph(kind: str, x: Tensor, n: Tensor) -> Tensor:
    """graph_ns's twin of the raw kernel (no rule calls it: the polynomials have no derivative)."""
    return globals()["special_" + kind](x, n)


# ----- torch.special.zeta (Hurwitz), torch.igamma / igammac (special.gammainc / gammaincc) -------------------------

def _no_derivative(name: str):
    def rule(xp, g, out, *args, **params):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")
    return rule


def _zeta_other(xp, g, out, a, b):
    return g * -a * xp.zeta(a + 1.0, b)


zeta_p = defprim("special_zeta", lambda xp, a, b: xp.zeta(a, b), node="SpecialZetaBackward0",
                 vjp=(_no_derivative("zeta"), _zeta_other), jvp="elementwise", saves=(0, 1), promote="float",
                 batch=True)
zeta_rscalar_p = defprim("special_zeta", lambda xp, a, b: xp.zeta(a, b), node="SpecialZetaBackward1",
                         vjp=(None, _zeta_other), jvp="elementwise", saves=(1,), promote="float", scalar_args=(0,),
                         batch=True)
zeta_scalar_p = defprim("special_zeta", lambda xp, a, b: xp.zeta(a, b), node="SpecialZetaBackward2",
                        vjp=(_no_derivative("zeta"), None), jvp="elementwise", saves=(0,), promote="float",
                        scalar_args=(1,))   # its only rule raises: nothing to batch


def _zeta_dtype(input, other) -> None:
    _no_complex("zeta_cpu", input, other)
    d = promote(input, other)
    if d.is_floating_point and d.itemsize < 4:   # PyTorch's CPU kernel has no float16
        raise _not_implemented("zeta_cpu", d.np)


@register(module=False, submodule="special", submodule_name="zeta", graph="zeta")
def special_zeta(input, other) -> Tensor:
    """The Hurwitz zeta function ``sum_k (k + other) ** -input``; differentiable in ``other`` only."""
    if not isinstance(input, Tensor):
        check_tensor(other, "special_zeta", "other", 2)
        input = _operand(input, "special_zeta", None, "self")
        _zeta_dtype(input, other)
        return apply(zeta_rscalar_p, (input, other))
    input, other = _binary_args(input, other, "special_zeta")
    _zeta_dtype(input, other)
    return apply(zeta_p if isinstance(other, Tensor) else zeta_scalar_p, (input, other))


def _igamma_other(sign: float):
    def rule(xp, g, out, a, x):
        return g * (sign * xp.exp((a - 1) * xp.log(x) - x - xp.lgamma(a)))
    return rule


igamma_p = defprim("igamma", lambda xp, a, x: xp.igamma(a, x), vjp=(_no_derivative("igamma: input"), _igamma_other(1.0)),
                   jvp="elementwise", saves=(0, 1), promote="standard", batch=True)
igammac_p = defprim("igammac", lambda xp, a, x: xp.igammac(a, x),
                    vjp=(_no_derivative("igammac: input"), _igamma_other(-1.0)), jvp="elementwise", saves=(0, 1),
                    promote="standard", batch=True)


def _igamma_op(prim, name: str, special_name: str):
    @schema(f"{name}(Tensor input, Tensor other)")
    def fn(input: Tensor, other: Tensor) -> Tensor:
        d = promote(input, other)
        if not d.is_floating_point:
            raise _not_implemented(name + "_cpu", d.np)
        return apply(prim, (input, other))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The regularized {'upper' if name == 'igammac' else 'lower'} incomplete gamma function "
                  f"(``torch.special.{special_name}``); differentiable in ``other`` only.")
    register(fn, method=True, graph=True)
    register(fn, module=False, submodule="special", submodule_name=special_name)

    @schema(f"{name}_(Tensor input, Tensor other)")
    def inplace(self: Tensor, other: Tensor) -> Tensor:
        fn(self, other)   # the dtype errors
        return apply_inplace(prim, self, (other,))
    inplace.__name__ = inplace.__qualname__ = name + "_"
    method(name + "_", inplace)
    return fn


igamma = _igamma_op(igamma_p, "igamma", "gammainc")
igammac = _igamma_op(igammac_p, "igammac", "gammaincc")

@register()
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is in ``test_elements`` (either may be a scalar); not differentiable."""
    kinds = [isinstance(v, Tensor) or type(v) in (int, float, bool, complex) for v in (elements, test_elements)]
    if not all(kinds) or not (isinstance(elements, Tensor) or isinstance(test_elements, Tensor)):
        got = ", ".join(type(v).__name__ for v in (elements, test_elements))
        raise TypeError(f"isin() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = "
                        "False, Tensor out = None)\n * (Number element, Tensor test_elements, *, bool assume_unique = "
                        "False, bool invert = False, Tensor out = None)\n * (Tensor elements, Number test_element, *, "
                        "bool assume_unique = False, bool invert = False, Tensor out = None)\n")
    cx = [type(v) is complex or (isinstance(v, Tensor) and v.dtype.is_complex) for v in (elements, test_elements)]
    if any(cx):   # PyTorch's kernel has no complex version: it names the first complex operand (or bool elements)
        first = elements if cx[0] or (isinstance(elements, Tensor) and elements.dtype is D.bool) else test_elements
        from .._util import dtype_word
        word = "ComplexDouble" if type(first) is complex else dtype_word(first._data.dtype)
        raise RuntimeError(f"Unsupported input type encountered for isin(): {word}")
    if not isinstance(test_elements, Tensor):   # a scalar: elementwise ==
        hit = eq(elements, test_elements)
    elif not isinstance(elements, Tensor):
        hit = eq(test_elements, elements).any()
    else:
        # every element against every test element (as PyTorch's default path for small tests, no sort needed)
        hit = eq(elements.detach().unsqueeze(-1), test_elements.detach().reshape(-1)).any(-1)
    return logical_not(hit) if invert else hit


# ----- torch._standard_gamma_grad: the reparameterised gradient of Gamma samples (no derivative of its own) --------

def _gamma_grad_not_differentiable(xp, g, out, *args, **params):
    raise NotImplementedError("the derivative for '_standard_gamma_grad' is not implemented.")


standard_gamma_grad_p = defprim("_standard_gamma_grad", lambda xp, a, x: xp.standard_gamma_grad(a, x),
                                node="StandardGammaGradBackward0", vjp=(_gamma_grad_not_differentiable,) * 2,
                                jvp="elementwise")


@register(name="_standard_gamma_grad", graph="standard_gamma_grad")
def _standard_gamma_grad(self: Tensor, output: Tensor) -> Tensor:
    """-(d/dalpha cdf(output; self)) / pdf(output; self): how a Gamma(self) sample moves with its concentration
    (PyTorch's kernel: a series, Rice's saddle point or a rational approximation, in double)."""
    check_tensor(self, "_standard_gamma_grad", "self", 1)
    check_tensor(output, "_standard_gamma_grad", "output", 2)
    if output.dtype != self.dtype:
        raise RuntimeError(f"Found dtype {D.type_word(output.dtype.np)} but expected {D.type_word(self.dtype.np)}")
    if self.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"_standard_gamma_grad_cpu\" not implemented for '{D.type_word(self.dtype.np)}'")
    return apply(standard_gamma_grad_p, (self, output))


def _dirichlet_grad_not_differentiable(xp, g, out, *args, **params):
    raise RuntimeError("derivative for aten::_dirichlet_grad is not implemented")


dirichlet_grad_p = defprim("_dirichlet_grad", lambda xp, x, alpha, total: xp.dirichlet_grad(x, alpha, total),
                           node="NotImplemented", vjp=(_dirichlet_grad_not_differentiable,) * 3, jvp="elementwise")


@register(name="_dirichlet_grad", graph="dirichlet_grad")
def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """How a Beta(alpha, total - alpha) sample ``x`` moves with alpha, over (1 - x) (PyTorch's kernel, for
    Dirichlet's and Beta's reparameterised samples)."""
    for pos, (t, name) in enumerate(((x, "x"), (alpha, "alpha"), (total, "total")), 1):
        check_tensor(t, "_dirichlet_grad", name, pos)
    for t in (alpha, total):
        if t.dtype != x.dtype:
            raise RuntimeError(f"Found dtype {D.type_word(t.dtype.np)} but expected {D.type_word(x.dtype.np)}")
    if x.dtype not in (D.float32, D.float64):
        raise NotImplementedError(f"\"_dirichlet_grad_cpu\" not implemented for '{D.type_word(x.dtype.np)}'")
    return apply(dirichlet_grad_p, (x, alpha, total))


# ----- vmap -------------------------------------------------------------------------------------------------
# Every primitive of this family is elementwise: its inputs broadcast together, so a batched input gets its batch
# dim first and the batch broadcasts over the unbatched ones.
_batching.batching("elementwise", *_PRIMITIVES[_FIRST_PRIM:])


def _where_rule(call, args, bdims, params, size):
    """where's condition is a parameter (unbatched here: a batched one sends where to the per-example fallback)
    that broadcasts with the inputs: the batched inputs are padded to its rank too, so that the batch dim stays in
    front of every example dim."""
    rank = params["cond"].ndim
    for a, bd in zip(args, bdims):
        if isinstance(a, Tensor):
            rank = max(rank, a._data.ndim - (bd is not None))
    new = [a if bd is None else _batching._front_and_pad(a, bd, rank, size) for a, bd in zip(args, bdims)]
    return call(new, params), 0


_batching.batching(_where_rule, where_p)
