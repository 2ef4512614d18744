"""The op table, torch.nn.functional: activations and the softmax family.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``), and as ``ember.<name>`` /
``Tensor.<name>`` where PyTorch has those too; kernels in ``ember/devices/cpu/nn_activation.py``. Derivative
formulas follow PyTorch's tools/autograd/derivatives.yaml; every rule is written against ``xp`` so that it
is differentiable again. Node names are PyTorch's for the same call (in-place variants whose PyTorch node
differs, ``LeakyReluBackward1``..., get theirs).
"""
from __future__ import annotations

from ..autograd import _batching
from . import _vmap_nn
from . import _batch_public as _bp

import math
import warnings

import struct

from .. import _dtype as D
from .._device import NAMESPACES
from .._state import _state as _grad_state
from .._tensor import Tensor, make, wrap_dim
from ..autograd.graph import node_class
from . import elementwise as E
from ..autograd._primitive import PrimNode, apply, apply_saving, defprim, graph_ns
from ._registry import EXPORTS, graph, register
from ._schema import schema
from .._util import bf16_in_float32, check_tensor
from ..autograd._views import apply_inplace

_F = "nn.functional"
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_KAPPA = math.sqrt(2.0 / math.pi)


def _fn(f=None, *, name=None, module=False, method=False):
    """Register ``f`` as ``ember.nn.functional.<name>`` (and ``ember.<name>``/``Tensor.<name>`` if asked)."""
    def deco(g):
        return register(g, name=name, module=module, method=method, submodule=_F)
    return deco if f is None else deco(f)


def _graph_op(prim, name, params):
    """``xp.<name>`` under create_graph: the primitive applied to a Tensor (mirrors the raw kernel)."""
    def g(a, *args):
        return apply(prim, (a,), dict(zip(params, args)))
    g.__name__ = name
    graph(name, g)


def _not_implemented(kernel: str, t: Tensor) -> NotImplementedError:
    return NotImplementedError(f"\"{kernel}\" not implemented for '{D.type_word(t._data.dtype)}'")


def _float_input(input, op: str, kernel: str) -> Tensor:
    """The input of a floating-point kernel: a Tensor, and integral/bool dtypes refused as PyTorch does."""
    check_tensor(input, op)
    if input._data.dtype.kind not in "fV":
        raise _not_implemented(kernel, input)
    return input


def _no_complex_autograd(name: str, *tensors) -> None:
    """PyTorch's refusal of ops without complex derivatives: a complex output while grad mode records an input."""
    ts = [t for t in tensors if t is not None]
    if _grad_state.enabled and any(t.dtype.is_complex for t in ts) and any(t.requires_grad for t in ts):
        raise RuntimeError(f"{name} does not support automatic differentiation for outputs with complex dtype.")


def _number(v, op: str, arg: str, pos: int):
    if isinstance(v, Tensor) and v._data.ndim == 0:
        return v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if hasattr(v, "__float__") and not isinstance(v, (str, bytes, bool)) and v is not None:
            return float(v)
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Number, not {type(v).__name__}")
    return v


# ----- softmax, log_softmax ------------------------------------------------------------------------------

def _sum_keep(xp, x, dim):
    """sum over ``dim`` (as the user gave it), kept; a 0-d tensor is its own sum."""
    return xp.sum(x, (dim % x.ndim,), True) if x.ndim else x


# The first derivatives, PyTorch's _softmax_backward_data / _log_softmax_backward_data: primitives of their own
# that the rules call (``softmax_backward_p(xp, g, y, dim=dim)``: on raw arrays the formula itself, under
# create_graph a node, SoftmaxBackwardDataBackward0 / LogSoftmaxBackwardDataBackward0, with edges to the gradient
# and to the output, as PyTorch's).
def _softmax_bwd(xp, g, y, dim):
    return y * (g - _sum_keep(xp, g * y, dim))


def _log_softmax_bwd(xp, g, y, dim):
    return g - xp.exp(y) * _sum_keep(xp, g, dim)


# y (g - sum(g y)) is symmetric in g (its own adjoint); in y: gg g - sum(y g) gg - g sum(y gg) (PyTorch's
# softmax_double_backward)
# (bfloat16: both backward kernels compute in float32 and round once, as PyTorch's)
softmax_backward_p = defprim(
    "softmax_backward_data", bf16_in_float32(_softmax_bwd),
    vjp=(lambda xp, gg, out, g, y, dim: softmax_backward_p(xp, gg, y, dim=dim),
         lambda xp, gg, out, g, y, dim: gg * g - _sum_keep(xp, y * g, dim) * gg - g * _sum_keep(xp, y * gg, dim)),
    jvp=(lambda xp, t, out, g, y, dim: softmax_backward_p(xp, t, y, dim=dim),
         lambda xp, t, out, g, y, dim: t * (g - _sum_keep(xp, g * y, dim)) - y * _sum_keep(xp, g * t, dim)),
    saves={0: (1,), 1: (0, 1)}, saved_names=("grad_output", "output"))
log_softmax_backward_p = defprim(
    "log_softmax_backward_data", bf16_in_float32(_log_softmax_bwd),
    vjp=(lambda xp, gg, out, g, y, dim: gg - _sum_keep(xp, gg * xp.exp(y), dim),
         lambda xp, gg, out, g, y, dim: -(_sum_keep(xp, g, dim) * xp.exp(y) * gg)),
    jvp=(lambda xp, t, out, g, y, dim: log_softmax_backward_p(xp, t, y, dim=dim),
         lambda xp, t, out, g, y, dim: -(xp.exp(y) * t * _sum_keep(xp, g, dim))),
    saves={0: (1,), 1: (0, 1)}, saved_names=("grad_output", "output"))

# ``dim`` is kept as the user gave it (PyTorch's grad_fn._saved_dim shows -1 as it was passed).
softmax_p = defprim(
    "softmax", lambda xp, a, dim: xp.softmax(a, dim),
    vjp=lambda xp, g, out, a, dim: softmax_backward_p(xp, g, out, dim=dim),
    jvp=lambda xp, t, out, a, dim: out * (t - _sum_keep(xp, t * out, dim)),
    saves_out=True)

log_softmax_p = defprim(
    "log_softmax", lambda xp, a, dim: xp.log_softmax(a, dim),
    vjp=lambda xp, g, out, a, dim: log_softmax_backward_p(xp, g, out, dim=dim),
    jvp=lambda xp, t, out, a, dim: t - _sum_keep(xp, xp.exp(out) * t, dim),
    saves_out=True)

_graph_op(softmax_p, "softmax", ("dim",))
_graph_op(log_softmax_p, "log_softmax", ("dim",))


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_apply(prim, input, dim, dtype, op: str) -> Tensor:
    check_tensor(input, op)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    if dtype is not None:
        if not isinstance(dtype, D.dtype):
            raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        input = input.to(dtype)
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.dtype.kind not in "fV" and input._data.size:   # PyTorch returns an empty integral input as it is
        last = input._data.ndim == 0 or d == input._data.ndim - 1
        raise _not_implemented(f"{op}_{'lastdim_' if last else ''}kernel_impl", input)
    return apply(prim, (input,), {"dim": dim})


@_fn(name="softmax")
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed with the maximum taken out (SoftmaxBackward0)."""
    check_tensor(input, "softmax")
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return _softmax_apply(softmax_p, input, dim, dtype, "softmax")


@_fn(name="log_softmax")
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """x - logsumexp(x) along ``dim``: finite for inputs of any magnitude (LogSoftmaxBackward0)."""
    check_tensor(input, "log_softmax")
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _softmax_apply(log_softmax_p, input, dim, dtype, "log_softmax")


@_fn(name="softmin")
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along ``dim``."""
    check_tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return _softmax_apply(softmax_p, -input, dim, dtype, "softmax")


def torch_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``torch.softmax`` / ``Tensor.softmax`` (``dim`` required)."""
    return _softmax_apply(softmax_p, input, dim, dtype, "softmax")


def torch_log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``torch.log_softmax`` / ``Tensor.log_softmax`` (``dim`` required)."""
    return _softmax_apply(log_softmax_p, input, dim, dtype, "log_softmax")


torch_softmax.__name__ = "softmax"
torch_log_softmax.__name__ = "log_softmax"
register(torch_softmax, name="softmax", method=True)
register(torch_log_softmax, name="log_softmax", method=True)


# ----- first derivatives of the piecewise-linear activations, differentiable -----------------------------------
# Their VJP rules read the input only through comparisons, so written with xp.where their gradient would have no
# graph under create_graph, and autograd.grad of it would raise. PyTorch records a node of its own for each
# (ThresholdBackwardBackward0, ...), with edges to the upstream gradient and to the input: its derivative in the
# gradient is the same function again, in the input zero. These primitives are those nodes; the rules call them
# as xp.<name> (raw kernels in plain backward, so that path costs one call more, no graph).

def _zeros_rule(xp, gg, out, g, a, *rest, **params):
    # an explicit zero (not None): the input gets a zero gradient through this edge, as PyTorch's zeros_like(grad)
    return xp.zeros_like(gg)


def _backward_prim(name, node, forward, params, n_in=2, scalar_args=()):
    """``name(g, x, *extra, *params)``: the first derivative of an activation, linear in ``g`` (input 0),
    piecewise constant in ``x`` (input 1). Registered as ``xp.<name>`` in ember's namespace."""
    def vjp_g(xp, gg, out, g, a, *rest, **kw):
        return getattr(xp, name)(gg, a, *rest, *(kw[k] for k in params))

    vjps = (vjp_g, _zeros_rule) + (None,) * (n_in - 2)
    p = defprim(name, forward, node=node, vjp=vjps, jvp="elementwise", saves=tuple(range(1, n_in)),
                scalar_args=scalar_args)

    def in_graph(g, a, *args):
        return apply(p, (g, a) + args[:n_in - 2], dict(zip(params, args[n_in - 2:])))
    in_graph.__name__ = name
    graph(name, in_graph)
    return p


threshold_backward_p = _backward_prim(
    "threshold_backward", "ThresholdBackwardBackward0",
    lambda xp, g, a, threshold: xp.threshold_backward(g, a, threshold), ("threshold",))
hardtanh_backward_p = _backward_prim(
    "hardtanh_backward", "HardtanhBackwardBackward0",
    lambda xp, g, a, min_val, max_val: xp.hardtanh_backward(g, a, min_val, max_val), ("min_val", "max_val"))
leaky_relu_backward_p = _backward_prim(
    "leaky_relu_backward", "LeakyReluBackwardBackward0",
    lambda xp, g, a, negative_slope: xp.leaky_relu_backward(g, a, negative_slope), ("negative_slope",))
hardshrink_backward_p = _backward_prim(
    "hardshrink_backward", "HardshrinkBackwardBackward0",
    lambda xp, g, a, lambd: xp.hardshrink_backward(g, a, lambd), ("lambd",))
softshrink_backward_p = _backward_prim(
    "softshrink_backward", "SoftshrinkBackwardBackward0",
    lambda xp, g, a, lambd: xp.softshrink_backward(g, a, lambd), ("lambd",))
# noise: the slopes drawn in training, read but no edge (as rrelu_with_noise's own)
rrelu_backward_p = _backward_prim(
    "rrelu_with_noise_backward", "RreluWithNoiseBackwardBackward0",
    lambda xp, g, a, noise, lower, upper, training: xp.rrelu_with_noise_backward(g, a, noise, lower, upper, training),
    ("lower", "upper", "training"), n_in=3, scalar_args=(2,))


def _hardswish_backward_self(xp, gg, out, g, a):
    return xp.where((a > -3.0) & (a < 3.0), gg * g / 3.0, 0.0)


# hardswish's first derivative is not piecewise constant: its derivative in the input is 1/3 between the kinks
hardswish_backward_p = defprim(
    "hardswish_backward", lambda xp, g, a: xp.hardswish_backward(g, a),
    vjp=(lambda xp, gg, out, g, a: xp.hardswish_backward(gg, a), _hardswish_backward_self), jvp="elementwise",
    saves={0: (1,), 1: (0, 1)})
graph("hardswish_backward", lambda g, a: apply(hardswish_backward_p, (g, a)))


def _hardsigmoid_no_derivative(xp, gg, out, g, a):
    raise RuntimeError("derivative for aten::hardsigmoid_backward is not implemented")


# PyTorch declares no derivative for hardsigmoid_backward: its node is 'NotImplemented', backward through it raises
hardsigmoid_backward_p = defprim(
    "hardsigmoid_backward", lambda xp, g, a: xp.hardsigmoid_backward(g, a),
    node="NotImplemented", vjp=(_hardsigmoid_no_derivative,) * 2, jvp=(_hardsigmoid_no_derivative,) * 2, saves=(1,))
graph("hardsigmoid_backward", lambda g, a: apply(hardsigmoid_backward_p, (g, a)))


# prelu's two gradients: one PreluKernelBackwardBackward0 node in PyTorch, two here (one per gradient, same
# name); their derivatives are PyTorch's, which switch sides at x >= 0 (the first derivative at x > 0).
def _prelu_bs_g(xp, gg, out, g, a, w):
    return xp.where(a >= 0, gg, gg * w)


def _prelu_bs_w(xp, gg, out, g, a, w):
    return xp.where(a >= 0, 0.0, g * gg)


def _prelu_bw_g(xp, gg, out, g, a, w):
    return xp.where(a >= 0, 0.0, gg * a)


def _prelu_bw_a(xp, gg, out, g, a, w):
    return xp.where(a >= 0, 0.0, g * gg)


prelu_backward_self_p = defprim(
    "prelu_backward_self", lambda xp, g, a, w: xp.prelu_backward_self(g, a, w),
    node="PreluKernelBackwardBackward0",
    vjp=(_prelu_bs_g, _zeros_rule, _prelu_bs_w), jvp="elementwise", saves={0: (1, 2), 1: (0, 1, 2), 2: (0, 1)})
prelu_backward_weight_p = defprim(
    "prelu_backward_weight", lambda xp, g, a, w: xp.prelu_backward_weight(g, a, w),
    node="PreluKernelBackwardBackward0",
    vjp=(_prelu_bw_g, _prelu_bw_a, lambda xp, gg, out, g, a, w: xp.zeros_like(gg)), jvp="elementwise",
    saves={0: (1,), 1: (0, 1)})
graph("prelu_backward_self", lambda g, a, w: apply(prelu_backward_self_p, (g, a, w)))
graph("prelu_backward_weight", lambda g, a, w: apply(prelu_backward_weight_p, (g, a, w)))


# ----- pointwise activations --------------------------------------------------------------------------------

def _act(name, node, forward, params, vjp, complex=None):
    """An elementwise activation primitive: ``forward(xp, a, *params)`` calls the kernel ``xp.<name>``; the
    VJP ``vjp(xp, g, out, a, *params)`` is linear in ``g``, so it is the JVP too. ``complex``: as defprim's."""
    p = defprim(name, forward, node=node, vjp=vjp, jvp="elementwise", saves=(0,), batch=True, complex=complex)
    _graph_op(p, name, params)
    return p


def _leaky_vjp(xp, g, out, a, negative_slope):
    return xp.leaky_relu_backward(g, a, negative_slope)


def _leaky_result_vjp(xp, g, out, a, negative_slope):
    if negative_slope < 0:   # the sign of the result no longer tells the side of the input
        raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead. File an issue at "
                           "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
                           "backward calculation with negative slope")
    return xp.leaky_relu_backward(g, out, negative_slope)


leaky_relu_result_p = defprim("leaky_relu",
                              lambda xp, a, negative_slope: xp.leaky_relu(a, negative_slope),
                              node="LeakyReluBackward1", vjp=_leaky_result_vjp, jvp="elementwise", saves_out=True,
                              batch=True)

leaky_relu_p = _act("leaky_relu", "LeakyReluBackward0", lambda xp, a, negative_slope: xp.leaky_relu(a, negative_slope),
                    ("negative_slope",), _leaky_vjp)


# elu's first derivative, PyTorch's elu_backward (EluBackwardBackward0 under create_graph): on the negative side
# d/da scale*alpha*(exp(a*s) - 1) = scale*alpha*s*exp(a*s), and scale on the positive side; at a = 0 the slope
# is the negative side's and its derivative 0 (PyTorch's elu_double_backward masks a < 0).
def _elu_backward_self(xp, gg, out, g, a, alpha, scale, input_scale):
    d2 = xp.exp(xp.where(a < 0, a, 0.0) * input_scale) * (alpha * scale * input_scale * input_scale)
    return xp.where(a < 0, gg * g * d2, 0.0)


elu_backward_p = defprim(
    "elu_backward",
    lambda xp, g, a, alpha, scale, input_scale: xp.elu_backward(g, a, alpha, scale, input_scale),
    vjp=(lambda xp, gg, out, g, a, alpha, scale, input_scale: xp.elu_backward(gg, a, alpha, scale, input_scale),
         _elu_backward_self), jvp="elementwise", saves={0: (1,), 1: (0, 1)})
graph("elu_backward", lambda g, a, alpha, scale, input_scale: apply(
    elu_backward_p, (g, a), {"alpha": alpha, "scale": scale, "input_scale": input_scale}))


def _elu_vjp(xp, g, out, a, alpha, scale, input_scale):
    return xp.elu_backward(g, a, alpha, scale, input_scale)


elu_p = _act("elu", "EluBackward0", lambda xp, a, alpha, scale, input_scale: xp.elu(a, alpha, scale, input_scale),
             ("alpha", "scale", "input_scale"), _elu_vjp)


# elu_/celu_/selu_ (EluBackward1, CeluBackward1): PyTorch's rule reads the result, scale*alpha*(exp(a*s) - 1),
# and adds scale*alpha back: alpha*scale*s*exp(a*s) = s*(out + alpha*scale).
def _elu_result_vjp(xp, g, out, a, alpha, scale, input_scale):
    # out masked at out < 0 as above: the derivative at 0 is 0, as PyTorch's
    return xp.where(out > 0, g * scale, g * ((xp.where(out < 0, out, 0.0) + alpha * scale) * input_scale))


elu_result_p = defprim("elu",
                       lambda xp, a, alpha, scale, input_scale: xp.elu(a, alpha, scale, input_scale),
                       node="EluBackward1", vjp=_elu_result_vjp, jvp="elementwise", saves_out=True, batch=True)


def _to_float(v) -> float:
    """``v`` rounded to float32 (C++'s toFloat()), as a Python float: inf beyond float32's range."""
    v = float(v)
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:   # (struct refuses what rounds to inf)
        return math.copysign(math.inf, v)


def _celu_scale(alpha) -> float:
    # PyTorch's celu backward uses 1.0 / alpha.toFloat(): alpha rounded to float32 first
    return 1.0 / _to_float(alpha)


celu_p = defprim("celu", lambda xp, a, alpha: xp.elu(a, alpha, 1.0, 1.0 / alpha),
                 vjp=lambda xp, g, out, a, alpha: _elu_vjp(xp, g, out, a, alpha, 1.0, _celu_scale(alpha)),
                 jvp="elementwise", saves=(0,), batch=True)
celu_result_p = defprim("celu", lambda xp, a, alpha: xp.elu(a, alpha, 1.0, 1.0 / alpha),
                        node="CeluBackward1",
                        vjp=lambda xp, g, out, a, alpha: _elu_result_vjp(xp, g, out, a, alpha, 1.0, _celu_scale(alpha)),
                        jvp="elementwise", saves_out=True, batch=True)


# gelu's first derivative, PyTorch's gelu_backward (GeluBackwardBackward0 under create_graph), and its
# derivative: exact, Phi + x phi -> phi (2 - x^2); tanh form, with u = k (x + c x^3) and t = tanh(u):
# 0.5 (1 + t) + 0.5 x (1 - t^2) u' -> (1 - t^2) (u' + 0.5 x u'' - x t u'^2)
def _gelu_backward_self(xp, gg, out, g, a, approximate):
    if approximate == "tanh":
        a2 = a * a
        t = xp.tanh((a + a2 * a * 0.044715) * _KAPPA)
        du = (a2 * (3 * 0.044715) + 1) * _KAPPA
        d2u = a * (6 * 0.044715 * _KAPPA)
        return gg * g * ((1 - t * t) * (du + a * d2u * 0.5 - a * t * du * du))
    pdf = xp.exp(a * a * -0.5) * _INV_SQRT_2PI
    return gg * g * (pdf * (2 - a * a))


gelu_backward_p = defprim(
    "gelu_backward", lambda xp, g, a, approximate: xp.gelu_backward(g, a, approximate),
    vjp=(lambda xp, gg, out, g, a, approximate: xp.gelu_backward(gg, a, approximate), _gelu_backward_self),
    jvp="elementwise", saves={0: (1,), 1: (0, 1)})
graph("gelu_backward", lambda g, a, approximate: apply(gelu_backward_p, (g, a), {"approximate": approximate}))


def _gelu_vjp(xp, g, out, a, approximate):
    return xp.gelu_backward(g, a, approximate)


gelu_p = _act("gelu", "GeluBackward0", lambda xp, a, approximate: xp.gelu(a, approximate), ("approximate",),
              _gelu_vjp)


def _silu_vjp(xp, g, out, a):
    s = xp.sigmoid(a)
    return g * (s * (a * (1 - s) + 1))


def _silu_complex_jvp(xp, t, out, a):
    # PyTorch's complex silu: its autograd refuses complex outputs of silu (see silu), not of silu_, whose backward
    # is silu_backward as written, g * f'(z) (no conjugate, _silu_vjp); its forward mode (auto_element_wise on
    # silu_backward) gives t * conj(f'(z)), not the holomorphic t * f'(z)
    s = xp.sigmoid(a)
    return t * xp.conj(s * (a * (1 - s) + 1))


silu_p = _act("silu", "SiluBackward0", lambda xp, a: xp.silu(a), (), _silu_vjp,
              complex=(_silu_vjp, _silu_complex_jvp))


def _mish_vjp(xp, g, out, a):
    # tanh(softplus(a)) with softplus = log1p(exp(a)) written through log_sigmoid: -log_sigmoid(-a)
    tsp = xp.tanh(-xp.log_sigmoid(-a))
    return g * (tsp + a * xp.sigmoid(a) * (1 - tsp * tsp))


mish_p = _act("mish", "MishBackward0", lambda xp, a: xp.mish(a), (), _mish_vjp)


# softplus's first derivative, PyTorch's softplus_backward (SoftplusBackwardBackward0): z / (z + 1) with
# z = exp(beta a) is sigmoid(beta a), no inf / inf when exp overflows; 1 where beta a > threshold. At the kink the
# slope is sigmoid(threshold) and its derivative 0 (PyTorch's softplus_double_backward masks beta a < threshold).
def _softplus_backward_self(xp, gg, out, g, a, beta, threshold):
    ba = a * beta
    s = xp.sigmoid(ba)
    return xp.where(ba < threshold, gg * g * (s * (1 - s) * beta), 0.0)


softplus_backward_p = defprim(
    "softplus_backward",
    lambda xp, g, a, beta, threshold: xp.softplus_backward(g, a, beta, threshold),
    vjp=(lambda xp, gg, out, g, a, beta, threshold: xp.softplus_backward(gg, a, beta, threshold),
         _softplus_backward_self), jvp="elementwise", saves={0: (1,), 1: (0, 1)})
graph("softplus_backward", lambda g, a, beta, threshold: apply(
    softplus_backward_p, (g, a), {"beta": beta, "threshold": threshold}))


def _softplus_vjp(xp, g, out, a, beta, threshold):
    return xp.softplus_backward(g, a, beta, threshold)


softplus_p = _act("softplus", "SoftplusBackward0", lambda xp, a, beta, threshold: xp.softplus(a, beta, threshold),
                  ("beta", "threshold"), _softplus_vjp)


def _hardtanh_vjp(xp, g, out, a, min_val, max_val):
    return xp.hardtanh_backward(g, a, min_val, max_val)


hardtanh_p = _act("hardtanh", "HardtanhBackward0", lambda xp, a, min_val, max_val: xp.hardtanh(a, min_val, max_val),
                  ("min_val", "max_val"), _hardtanh_vjp)
hardsigmoid_p = _act("hardsigmoid", "HardsigmoidBackward0", lambda xp, a: xp.hardsigmoid(a), (),
                     lambda xp, g, out, a: xp.hardsigmoid_backward(g, a))
hardswish_p = _act("hardswish", "HardswishBackward0", lambda xp, a: xp.hardswish(a), (),
                   lambda xp, g, out, a: xp.hardswish_backward(g, a))
hardshrink_p = _act("hardshrink", "HardshrinkBackward0", lambda xp, a, lambd: xp.hardshrink(a, lambd), ("lambd",),
                    lambda xp, g, out, a, lambd: xp.hardshrink_backward(g, a, lambd))
softshrink_p = _act("softshrink", "SoftshrinkBackward0", lambda xp, a, lambd: xp.softshrink(a, lambd), ("lambd",),
                    lambda xp, g, out, a, lambd: xp.softshrink_backward(g, a, lambd))
# logsigmoid's first derivative g * sigmoid(-a), PyTorch's log_sigmoid_backward (LogSigmoidBackwardBackward0);
# its derivative in a is -sigmoid(a) sigmoid(-a)
log_sigmoid_backward_p = defprim(
    "log_sigmoid_backward", lambda xp, g, a: xp.log_sigmoid_backward(g, a),
    vjp=(lambda xp, gg, out, g, a: xp.log_sigmoid_backward(gg, a),
         lambda xp, gg, out, g, a: -(gg * g) * (xp.sigmoid(a) * xp.sigmoid(-a))), jvp="elementwise",
    saves={0: (1,), 1: (0, 1)})
graph("log_sigmoid_backward", lambda g, a: apply(log_sigmoid_backward_p, (g, a)))
log_sigmoid_p = _act("log_sigmoid", "LogSigmoidBackward0", lambda xp, a: xp.log_sigmoid(a), (),
                     lambda xp, g, out, a: xp.log_sigmoid_backward(g, a))
threshold_p = _act("threshold", "ThresholdBackward0", lambda xp, a, threshold, value: xp.threshold(a, threshold, value),
                   ("threshold", "value"),
                   lambda xp, g, out, a, threshold, value: xp.threshold_backward(g, a, threshold))

# In-place variants PyTorch records under a node of their own (rules identical: the input is saved as it
# was before the write, as apply_inplace does for every primitive that reads its input).
_NODE1 = {n: node_class(n, PrimNode) for n in ("ThresholdBackward1",)}


def _inplace(prim, input, params, node=None):
    return apply_inplace(prim, input, (), params, node)


def _apply_act(prim, input, params, inplace, node=None, inplace_node=None, inplace_prim=None):
    if inplace:
        return _inplace(inplace_prim or prim, input, params, inplace_node)
    return apply(prim, (input,), params, node)


@_fn
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); ``inplace`` writes into ``input`` (ReluBackward0 either way, as PyTorch)."""
    check_tensor(input, "relu")
    return EXPORTS["relu_"](input) if inplace else E.relu(input)


register(EXPORTS["relu_"], name="relu_", module=False, submodule=_F)
register(E.sigmoid, name="sigmoid", module=False, submodule=_F)
register(E.tanh, name="tanh", module=False, submodule=_F)


def _hardtanh_checked(input, min_val, max_val, op, kernel):
    _float_or_int_ok(input, op)
    min_val = _number(min_val, op, "min_val", 2)
    max_val = _number(max_val, op, "max_val", 3)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return min_val, max_val


def _float_or_int_ok(input, op):
    check_tensor(input, op)
    if input._data.dtype.kind == "b":
        raise _not_implemented(f"{op}_cpu", input)


def _hardtanh_any(input, min_val, max_val, inplace):
    # integer inputs clamp exactly (PyTorch's hardtanh accepts them; they have no gradient)
    params = {"min_val": min_val, "max_val": max_val}
    if input._data.dtype.kind in "iu":
        out = E.clamp(input, int(min_val), int(max_val))
        if inplace:
            input.copy_(out)
            return input
        return out
    return _apply_act(hardtanh_p, input, params, inplace)


@_fn
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val), with zero gradient at and beyond the bounds (HardtanhBackward0)."""
    min_val, max_val = _hardtanh_checked(input, min_val, max_val, "hardtanh", "hardtanh")
    return _hardtanh_any(input, min_val, max_val, inplace)


@_fn
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


@_fn
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) (HardtanhBackward0, as PyTorch)."""
    _float_or_int_ok(input, "relu6")
    return _hardtanh_any(input, 0.0, 6.0, inplace)


@_fn
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (LeakyReluBackward0; in place LeakyReluBackward1)."""
    _float_input(input, "leaky_relu", "leaky_relu_cpu")
    s = _number(negative_slope, "leaky_relu", "negative_slope", 2)
    return _apply_act(leaky_relu_p, input, {"negative_slope": s}, inplace, None, None, leaky_relu_result_p)


@_fn
def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def _elu(input, alpha, scale, input_scale, inplace, op):
    _float_input(input, op, "elu_cpu")
    params = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
    if inplace:
        return _inplace(elu_result_p, input, params)
    return apply(elu_p, (input,), params)


@_fn
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1) (EluBackward0; in place EluBackward1)."""
    check_tensor(input, "elu")
    return _elu(input, _number(alpha, "elu", "alpha", 2), 1.0, 1.0, inplace, "elu")


@_fn
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


@_fn
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants (EluBackward0, as PyTorch)."""
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "selu")


@_fn
def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


@_fn
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (CeluBackward0; in place CeluBackward1)."""
    check_tensor(input, "celu")
    alpha = _number(alpha, "celu", "alpha", 2)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    _float_input(input, "celu", "elu_cpu")
    if inplace:
        return _inplace(celu_result_p, input, {"alpha": alpha})
    return apply(celu_p, (input,), {"alpha": alpha})


@_fn
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


@_fn
def gelu(input: Tensor, *, approximate: str = "none") -> Tensor:
    """x * Phi(x), or its tanh approximation (GeluBackward0)."""
    check_tensor(input, "gelu")
    if not isinstance(approximate, str):
        raise TypeError(f"gelu(): argument 'approximate' must be str, not {type(approximate).__name__}")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_input(input, "gelu", "GeluKernelImpl")
    return apply(gelu_p, (input,), {"approximate": approximate})


@_fn
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (SiluBackward0, in place too)."""
    check_tensor(input, "silu")
    if input.dtype.is_complex:
        if not inplace:   # PyTorch's silu has no complex backward (its silu_ has: see silu_p)
            _no_complex_autograd("silu", input)
    else:
        _float_input(input, "silu", "silu_cpu")
    return _apply_act(silu_p, input, {}, inplace)


@_fn
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)) (MishBackward0, in place too)."""
    _float_input(input, "mish", "mish_cpu")
    return _apply_act(mish_p, input, {}, inplace)


@_fn
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold (SoftplusBackward0)."""
    check_tensor(input, "softplus")
    beta = _number(beta, "softplus", "beta", 2)
    threshold = _number(threshold, "softplus", "threshold", 3)
    _float_input(input, "softplus", "softplus_cpu")
    return apply(softplus_p, (input,), {"beta": beta, "threshold": threshold})


@_fn
def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|) (composed, as PyTorch: DivBackward0)."""
    check_tensor(input, "softsign")
    return input / (input.abs() + 1)


@_fn
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6 (HardsigmoidBackward0)."""
    _float_input(input, "hardsigmoid", "hardsigmoid_cpu")
    return _apply_act(hardsigmoid_p, input, {}, inplace)


@_fn
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6 (HardswishBackward0)."""
    _float_input(input, "hardswish", "hardswish_cpu")
    return _apply_act(hardswish_p, input, {}, inplace)


def _lambd(input, lambd, op):
    check_tensor(input, op)
    lambd = _number(lambd, op, "lambd", 2)
    _float_input(input, op, f"{op}_cpu")
    return lambd


@_fn(module=True, method=True)
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (HardshrinkBackward0)."""
    return apply(hardshrink_p, (input,), {"lambd": _lambd(input, lambd, "hardshrink")})


@_fn
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd, x + lambd or 0 (SoftshrinkBackward0); ``lambd`` must not be negative."""
    lambd = _lambd(input, lambd, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{D.type_word(input._data.dtype)}, but found {lambd}")
    return apply(softshrink_p, (input,), {"lambd": lambd})


@_fn
def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x) (composed, as PyTorch: SubBackward0)."""
    check_tensor(input, "tanhshrink")
    return input - E.tanh(input)


@_fn
def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), finite for inputs of any magnitude (LogSigmoidBackward0)."""
    _float_input(input, "log_sigmoid", "log_sigmoid_cpu")
    return apply(log_sigmoid_p, (input,))


@_fn
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (ThresholdBackward0; in place ThresholdBackward1)."""
    check_tensor(input, "threshold")
    th = _number(threshold, "threshold", "threshold", 2)
    value = _number(value, "threshold", "value", 3)
    if input._data.dtype.kind == "b":
        raise _not_implemented("threshold_cpu", input)
    return _apply_act(threshold_p, input, {"threshold": th, "value": value}, inplace, None,
                      _NODE1["ThresholdBackward1"])


@_fn
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value, inplace=True)


# torch.<name>: the same ops without ``inplace`` (their own signatures)
@register(name="selu")
def torch_selu(input: Tensor) -> Tensor:
    return selu(input)


@register(name="selu_")
def torch_selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


@register(name="celu")
def torch_celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha)


@register(name="celu_")
def torch_celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


@register(name="threshold")
def torch_threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value)


@register(name="threshold_")
def torch_threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return globals()["threshold"](input, threshold, value, inplace=True)


# ----- glu -------------------------------------------------------------------------------------------------

def _halves(xp, x, dim):
    dim = dim % x.ndim
    h = x.shape[dim] // 2
    lead = (slice(None),) * dim
    return xp.getitem(x, lead + (slice(0, h),)), xp.getitem(x, lead + (slice(h, None),))


def _glu_vjp(xp, g, out, a, dim):
    a1, a2 = _halves(xp, a, dim)
    s = xp.sigmoid(a2)
    return xp.cat([g * s, g * (a1 * s * (1 - s))], dim)


def _glu_jvp(xp, t, out, a, dim):
    a1, a2 = _halves(xp, a, dim)
    t1, t2 = _halves(xp, t, dim)
    s = xp.sigmoid(a2)
    return t1 * s + t2 * (a1 * s * (1 - s))


glu_p = defprim("glu", lambda xp, a, dim: xp.glu(a, dim), vjp=_glu_vjp, jvp=_glu_jvp, saves=(0,))
_graph_op(glu_p, "glu", ("dim",))


@_fn
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the two halves a, b of ``input`` along ``dim`` (GluBackward0)."""
    check_tensor(input, "glu")
    if input._data.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input._data.ndim, "glu")
    if input._data.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input._data.shape[d]}")
    _float_input(input, "glu", "glu_cpu")
    return apply(glu_p, (input,), {"dim": dim})


# ----- prelu, rrelu ----------------------------------------------------------------------------------------

# the tangent switches sides at x >= 0, the gradient at x > 0 (PyTorch's formulas)
prelu_p = defprim("prelu", lambda xp, a, w: xp.prelu(a, w),
                  node="PreluKernelBackward0", vjp=(lambda xp, g, out, a, w: xp.prelu_backward_self(g, a, w),
                       lambda xp, g, out, a, w: xp.prelu_backward_weight(g, a, w)),
                  jvp=(lambda xp, t, out, a, w: xp.where(a >= 0, t, t * w),
                       lambda xp, t, out, a, w: xp.where(a >= 0, 0.0, t * a)),
                  saves=(0, 1), saved_names=("self", "weight"))
graph("prelu", lambda a, w: apply(prelu_p, (a, w)))


@_fn(module=True, method=True)
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, one weight per channel (dim 1) or one for all (PreluKernelBackward0)."""
    check_tensor(input, "prelu")
    check_tensor(weight, "prelu", "weight", 2)
    if weight._data.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
                           f"{weight._data.ndim}")
    n = weight._data.size
    nd = input._data.ndim
    if n != 1:
        if nd == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input._data.shape[1] if nd >= 2 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {D.type_word(input._data.dtype)} and "
                           f"{D.type_word(weight._data.dtype)}")
    _float_input(input, "prelu", "prelu_cpu")
    if weight._data.ndim != nd:
        shape = [1] * nd
        if nd >= 2:
            shape[1] = n
        weight = weight.view(shape)
    return apply(prelu_p, (input, weight))


def _rrelu_vjp(xp, g, out, a, noise, lower, upper, training):
    return xp.rrelu_with_noise_backward(g, a, noise, lower, upper, training)


# noise: the slopes drawn in training (1 where the input is positive), unused in eval; no edge, as PyTorch's
rrelu_p = defprim("rrelu_with_noise",
                  lambda xp, a, noise, lower, upper, training: xp.rrelu_with_noise(a, noise, lower, upper, training),
                  vjp=(_rrelu_vjp, None), jvp="elementwise", saves=(0, 1), scalar_args=(1,),
                  saved_names=("self", "noise"))
# rrelu_ (RreluWithNoiseBackward1) reads the result: its sign is the input's for the positive slopes drawn.
# Its tangent is the in-place activations' (leaky_relu_'s in PyTorch's derivatives.yaml): the slope at the input
# from before the write (the JVP runs before apply_inplace writes, so ``a`` is that input), with no sign question.
rrelu_result_p = defprim("rrelu_with_noise_",
                         lambda xp, a, noise, lower, upper, training:
                             xp.rrelu_with_noise(a, noise, lower, upper, training),
                         node="RreluWithNoiseBackward1", vjp=(lambda xp, g, out, a, noise, lower, upper, training:
                              _rrelu_vjp(xp, g, out, out, noise, lower, upper, training), None),
                         jvp=(_rrelu_vjp, None), saves=(1,), saves_out=True, scalar_args=(1,),
                         saved_names=("self", "noise"))
graph("rrelu_with_noise", lambda a, noise, lower, upper, training:
      apply(rrelu_p, (a, noise), {"lower": lower, "upper": upper, "training": training}))


@_fn
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False, *, generator=None) -> Tensor:
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) for x <= 0 in training (PyTorch's draws for the same
    seed), their mean in eval (RreluWithNoiseBackward0; in place RreluWithNoiseBackward1)."""
    check_tensor(input, "rrelu")
    lower = _number(lower, "rrelu", "lower", 2)
    upper = _number(upper, "rrelu", "upper", 3)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _float_input(input, "rrelu", "rrelu_with_noise_cpu")
    if training and input.dtype == D.float16:
        raise _not_implemented("rrelu_with_noise_out_cpu", input)
    from .creation import empty, zeros_like
    from ..autograd.grad_mode import no_grad
    with no_grad():
        noise = zeros_like(input)
        if training:
            # PyTorch's CPU kernel draws one double from U(lower, upper) per element <= 0, in order; 1 elsewhere
            neg = input <= 0
            k = int(neg.sum().item())
            # at::uniform_real_distribution<double>: a 53-bit draw scaled to [0, 1), then * (upper - lower) + lower,
            # with the bounds in the input's compute type (float32 bounds for a float32 input), rounded to it after
            f32 = input.dtype != D.float64
            lo, hi = (_to_float(lower), _to_float(upper)) if f32 else (lower, upper)
            bits = empty((k,), dtype=D.float64).random_(0, 2 ** 53, generator=generator)
            slopes = bits * (2.0 ** -53) * (hi - lo) + lo
            noise = E.where(neg, 0.0, 1.0).to(input.dtype)
            noise[neg] = slopes.to(input.dtype)
    params = {"lower": lower, "upper": upper, "training": bool(training)}
    if inplace:
        return apply_inplace(rrelu_result_p, input, (noise,), params)
    return apply(rrelu_p, (input, noise), params)


@_fn
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


@register(name="rrelu")
def torch_rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
                generator=None) -> Tensor:
    return rrelu(input, lower, upper, training, generator=generator)


@register(name="rrelu_")
def torch_rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
                 generator=None) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True, generator=generator)


# ----- normalize ---------------------------------------------------------------------------------------------

@_fn
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    """input / max(||input||_p along dim, eps) (composed, as PyTorch: DivBackward0 over ExpandBackward0)."""
    check_tensor(input, "normalize")
    from .reduction import norm
    denom = norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        raise NotImplementedError("ember: normalize(out=...) is not supported; use the returned tensor")
    return input / denom


# The elementwise activations broadcast over a leading batch dimension of the gradient as written. softmax,
# log_softmax, glu and prelu locate their dim from the gradient's ndim: they run row by row under is_grads_batched.


# ----- linear, bilinear ------------------------------------------------------------------------------------

def _node(name: str) -> type:
    return node_class(name, PrimNode)


@_fn
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias, through the ops PyTorch's kernel uses (MmBackward0/AddmmBackward0 on a 2-D view,
    so that the graph is PyTorch's node for node)."""
    from . import linalg as L
    from .shape import reshape_p
    check_tensor(input, "linear")
    check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        check_tensor(bias, "linear", "bias", 3)
    nd = input._data.ndim
    if nd == 0 or weight._data.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {nd}D and "
                           f"{weight._data.ndim}D")
    wt = weight.t()
    if weight._data.ndim == 1:
        if bias is not None and nd >= 2:
            raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
        out = L.matmul(input, wt)
        return out if bias is None else out + bias
    if nd == 2:
        return L.addmm(bias, input, wt) if bias is not None else L.mm(input, wt)
    if nd == 1:
        if bias is not None:
            return L.addmm(bias, input.view(1, -1), wt).view(-1)
        out = L.mm(input.unsqueeze(0), wt)
        return out.squeeze_(0)   # SqueezeBackward4, as PyTorch
    lead = input._data.shape[:-1]
    rows = 1
    for n in lead:
        rows *= n
    # the row count spelled out, as PyTorch folds: reshape(-1, 0) is ambiguous for an empty inner dimension
    flat = input.reshape(rows, input._data.shape[-1])
    if bias is not None and input._data.flags.c_contiguous and (nd == 3 or bias._data.ndim == 1):
        return L.addmm(bias, flat, wt).view(*lead, weight._data.shape[0])
    out = L.mm(flat, wt)
    out = apply(reshape_p, (out,), {"shape": lead + (weight._data.shape[0],)}, _node("UnsafeViewBackward0"))
    # PyTorch folds the bias into the product only for a contiguous input (else matmul, then add_: AddBackward0,
    # the product rounded before the bias is added; add_ on its _unsafe_view result is no view's in-place)
    return out if bias is None else out + bias


def _trilinear_vjp(k):
    eqs = ("bo,oij,bj->bi", "bo,bi,bj->oij", "bo,oij,bi->bj")

    def rule(xp, g, out, a, w, b):
        ops = ((w, b), (a, b), (w, a))[k]
        return xp.einsum(eqs[k], g, *ops)
    return rule


# out[b, o] = sum_ij x1[b, i] W[o, i, j] x2[b, j]; linear in each input alone
trilinear_p = defprim("trilinear", lambda xp, a, w, b: xp.einsum("bi,oij,bj->bo", a, w, b),
                      vjp=(_trilinear_vjp(0), _trilinear_vjp(1), _trilinear_vjp(2)), jvp="multilinear",
                      saves=(0, 1, 2), promote="standard", saved_names=("i1", "i2", "i3"))


@_fn(module=True)
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x1^T A x2 + b over the last dims of ``input1``/``input2`` (TrilinearBackward0 under a view, as PyTorch)."""
    check_tensor(input1, "bilinear", "input1", 1)
    check_tensor(input2, "bilinear", "input2", 2)
    check_tensor(weight, "bilinear", "weight", 3)
    if bias is not None:
        check_tensor(bias, "bilinear", "bias", 4)
    s1, s2, sw = input1._data.shape, input2._data.shape, weight._data.shape
    if input1._data.ndim != input2._data.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1._data.ndim} and "
                           f"{input2._data.ndim}")
    if s1[:-1] != s2[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(s1[:-1])} and "
                           f"{list(s2[:-1])}")
    if weight._data.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got {weight._data.ndim} dimensions")
    if s1[-1] != sw[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {s1[-1]} but expected {sw[1]}")
    if s2[-1] != sw[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {s2[-1]} but expected {sw[2]}")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != sw[0]):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias._data.shape[-1] if bias._data.ndim else 0} but expected {sw[0]}")
    _no_complex_autograd("_trilinear", input1, input2, weight)
    a = input1.reshape(-1, s1[-1])
    b = input2.reshape(-1, s2[-1])
    out = apply(trilinear_p, (a, weight, b)).view(*s1[:-1], sw[0])
    return out if bias is None else out + bias


# ----- embedding, one_hot ----------------------------------------------------------------------------------

def _embedding_vjp(xp, g, out, w, indices, padding_idx):
    if padding_idx >= 0:   # the padding row gets no gradient: its positions are left out
        keep = indices != padding_idx
        return xp.index_put_zeros(xp.getitem(g, (keep,)), (indices[keep],), w.shape)
    return xp.index_put_zeros(g, (indices,), w.shape)


# indices are a parameter (an integer array), not an input: PyTorch gives them no edge
embedding_p = defprim("embedding", lambda xp, w, indices, padding_idx: xp.getitem(w, (indices,)),
                      vjp=_embedding_vjp, jvp="linear")


def _embedding_freq_vjp(xp, g, out, w, inv_count, indices, padding_idx):
    # scale_grad_by_freq: each position's gradient times 1 / (how often its index occurs in the batch)
    return xp.embedding_freq_backward(g, inv_count, indices, padding_idx, w.shape[0])


# Under create_graph: the same sum from differentiable ops (PyTorch's own double backward leaves the 1 / count
# factor out; ember keeps the true derivative).
graph("embedding_freq_backward", lambda g, inv, indices, padding_idx, n: _embedding_vjp(
    graph_ns, g * graph_ns.unsqueeze(inv, -1), None, _Shape((n, g.shape[-1])), indices, padding_idx))


class _Shape:
    __slots__ = ("shape",)

    def __init__(self, shape) -> None:
        self.shape = shape


# embedding(scale_grad_by_freq=True): the same node, with the per-position factors as a constant input (no edge)
embedding_freq_p = defprim(
    "embedding",
    lambda xp, w, inv_count, indices, padding_idx: xp.getitem(w, (indices,)),
    vjp=(_embedding_freq_vjp, None),
    jvp=(lambda xp, t, out, w, inv_count, indices, padding_idx: xp.getitem(t, (indices,)), None),
    saves=(1,), scalar_args=(1,), saved_names=(None, None))


@_fn(name="embedding")
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the indices ``input`` (EmbeddingBackward0); ``padding_idx``'s row gets no gradient;
    ``max_norm`` renormalises the rows used, in place and without recording, as PyTorch."""
    check_tensor(input, "embedding")
    check_tensor(weight, "embedding", "weight", 2)
    if weight._data.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight._data.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if input._data.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    xp = NAMESPACES[type(input._data)]
    idx = xp.cast(input._data, D.int64.np)
    if not xp.in_range(idx, 0, n):
        raise IndexError("index out of range in self")
    if sparse:
        raise NotImplementedError("ember: embedding(sparse=True) needs sparse gradients, and ember has no sparse "
                                  "tensors: use sparse=False (a dense gradient, the same values)")
    if max_norm is not None:
        _embedding_renorm_(weight, idx, max_norm, norm_type)
    _no_complex_autograd("embedding", weight)
    if scale_grad_by_freq:
        # PyTorch counts every index in the batch (the padding index too) and scales each position's gradient
        # by 1 / its index's count
        inv = xp.index_count_inverse(idx, n, weight._data.dtype)
        return apply_saving(embedding_freq_p, (weight, make(inv)), {"indices": idx, "padding_idx": padding_idx},
                            None, (input,))
    return apply_saving(embedding_p, (weight,), {"indices": idx, "padding_idx": padding_idx}, None, (input,))


def _embedding_renorm_(weight: Tensor, idx, max_norm: float, norm_type: float) -> None:
    """PyTorch's embedding_renorm_: the rows used whose norm exceeds max_norm are scaled to max_norm, in place and
    not recorded; the version counter moves, so a graph that saved the weight notices."""
    NAMESPACES[type(weight._data)].embedding_renorm_(weight._data, idx, max_norm, norm_type)
    weight._vc[0] += 1


graph("embedding_renorm_", lambda w, idx, max_norm, norm_type: _embedding_renorm_(w, idx, max_norm, norm_type))
graph("index_bounds", lambda x: NAMESPACES[type(x._data)].index_bounds(x._data))
graph("one_hot", lambda x, num_classes: make(NAMESPACES[type(x._data)].one_hot(x._data, num_classes)))


def _bag_rows(xp, g, indices, bags, keep):
    """The gradient of each kept row: its bag's gradient (kept rows only)."""
    return xp.getitem(g, (bags[keep],))


def _bag_weight_vjp(xp, g, out, w, psw, inv_count, indices, bags, nbags, mode, keep, argmax, fast=False):
    gr = _bag_rows(xp, g, indices, bags, keep)
    if mode == "mean":
        gr = gr * xp.unsqueeze(xp.getitem(inv_count, (bags[keep],)), 1)
    elif mode == "max":   # each maximum's gradient goes to the row that gave it (the first one on ties)
        bag, col, row = argmax
        return xp.index_put_zeros(xp.getitem(g, (bag, col)), (row, col), w.shape)
    if psw is not None:
        gr = gr * xp.unsqueeze(xp.getitem(psw, (keep,)), 1)
    return xp.index_put_zeros(gr, (indices[keep],), w.shape)


def _bag_psw_vjp(xp, g, out, w, psw, inv_count, indices, bags, nbags, mode, keep, argmax, fast=False):
    gr = _bag_rows(xp, g, indices, bags, keep)
    d = xp.sum(gr * xp.getitem(w, (indices[keep],)), (1,))
    return xp.index_put_zeros(d, (keep,), psw.shape)


def _bag_weight_jvp(xp, t, out, w, psw, inv_count, indices, bags, nbags, mode, keep, argmax, fast=False):
    if mode == "max":
        bag, col, row = argmax
        return xp.index_put_zeros(xp.getitem(t, (row, col)), (bag, col), (nbags, w.shape[1]))
    return xp.embedding_bag(t, psw, inv_count, indices, bags, nbags, mode, keep)


def _bag_psw_jvp(xp, t, out, w, psw, inv_count, indices, bags, nbags, mode, keep, argmax, fast=False):
    return xp.embedding_bag(w, t, inv_count, indices, bags, nbags, mode, keep)


# inputs: weight, per_sample_weights (or None), 1 / count per bag (a constant: no edge); the index arrays are
# parameters
embedding_bag_p = defprim(
    "embedding_bag",
    lambda xp, w, psw, inv_count, indices, bags, nbags, mode, keep, argmax, fast=False:
        xp.embedding_bag(w, psw, inv_count, indices, bags, nbags, mode, keep, fast),
    vjp=(_bag_weight_vjp, _bag_psw_vjp, None), jvp=(_bag_weight_jvp, _bag_psw_jvp, None),
    saves={0: (1,), 1: (0, 1), 2: (0,)},   # PyTorch keeps per_sample_weights whichever gradient is needed
    scalar_args=(2,), saved_names=("weight", "per_sample_weights", None))
graph("embedding_bag", lambda w, psw, inv_count, indices, bags, nbags, mode, keep: apply(
    embedding_bag_p, (w, psw, inv_count), {"indices": indices, "bags": bags, "nbags": nbags, "mode": mode,
                                           "keep": keep, "argmax": None}))
graph("embedding_bag_argmax", lambda w, indices, bags, nbags, keep: NAMESPACES[type(w._data)].embedding_bag_argmax(
    w._data, indices, bags, nbags, keep))
graph("row_ids", lambda x: NAMESPACES[type(x)].row_ids(x))   # raw arrays in and out, as bag_ids
graph("index_count_inverse", lambda idx, n, dtype: NAMESPACES[type(idx)].index_count_inverse(idx, n, dtype))
graph("bag_count_inverse", lambda bags, keep, nbags, dtype: NAMESPACES[type(bags)].bag_count_inverse(bags, keep,
                                                                                                      nbags, dtype))
graph("bag_ids", lambda n, offsets, include_last_offset: NAMESPACES[type(offsets)].bag_ids(n, offsets,
                                                                                          include_last_offset))


@_fn(name="embedding_bag")
def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows (EmbeddingBagBackward0): a 2-D ``input`` holds one bag per
    row; a 1-D one is cut into bags at ``offsets``. Rows at ``padding_idx`` are left out of every bag."""
    return _embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                          per_sample_weights, include_last_offset, padding_idx)[0]


def _embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse, per_sample_weights,
                   include_last_offset, padding_idx) -> tuple:
    """embedding_bag's output and what ATen's form also reports: ``(output, bags, keep, argmax, nbags)`` (raw: the
    bag of each index, which indices count (not padding), embedding_bag_argmax's triple or None)."""
    check_tensor(input, "embedding_bag")
    check_tensor(weight, "embedding_bag", "weight", 2)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        check_tensor(per_sample_weights, "embedding_bag", "per_sample_weights")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                             f"must have the same shape as the input ({input.shape})")
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      f"on GitHub.")
    if weight._data.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight._data.ndim}")
    if sparse:
        raise NotImplementedError("ember: embedding_bag(sparse=True) needs sparse gradients, and ember has no "
                                  "sparse tensors: use sparse=False (a dense gradient, the same values)")
    if scale_grad_by_freq:
        raise NotImplementedError("ember: embedding_bag(scale_grad_by_freq=True) is not built yet")
    xp = NAMESPACES[type(input._data)]
    n_emb = weight._data.shape[0]
    if input._data.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        nb, length = input._data.shape
        idx = xp.reshape(input._data, (-1,))
        bags = xp.row_ids(input._data)
        psw = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    elif input._data.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        check_tensor(offsets, "embedding_bag", "offsets", 3)
        if offsets._data.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        bounds = xp.index_bounds(offsets._data)
        if bounds is not None:
            first = int(offsets._data[0])
            if first != 0:
                raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                                   f"from position 0. However, got {first}")
            last = int(offsets._data[-1])
            if last > input._data.shape[0]:
                raise RuntimeError(f"offsets[-1] can not be greater than input's length {input._data.shape[0]} but "
                                   f"got offsets[-1] of {last}")
        nb = offsets._data.shape[0] - (1 if include_last_offset else 0)
        idx = input._data
        bags = xp.bag_ids(idx.shape[0], xp.cast(offsets._data, D.int64.np), include_last_offset)
        psw = per_sample_weights
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input._data.ndim}")
    if input._data.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding_bag)")
    if weight.dtype.is_complex:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following scalar types: "
                           f"Half, BFloat16, Float, Double; but got CPU{D.type_word(weight._data.dtype)}Type instead "
                           "(while checking arguments for embedding_bag)")
    idx = xp.cast(idx, D.int64.np)
    if not xp.in_range(idx, 0, n_emb):
        raise RuntimeError(f"embedding_bag: an index of input is not in the valid range [0, {n_emb})")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += n_emb
    keep = idx != padding_idx if padding_idx is not None else idx >= 0
    if max_norm is not None:
        _embedding_renorm_(weight, idx, max_norm, norm_type)
    inv = make(xp.bag_count_inverse(bags, keep, nb, weight._data.dtype))
    argmax = xp.embedding_bag_argmax(weight._data, idx, bags, nb, keep) if mode == "max" else None
    # PyTorch's node saves the indices (a 2-D input flattened) and the offsets: changed in place, backward refuses
    saved = (input, offsets) if input._data.ndim == 1 else (input.reshape(-1),)
    out = apply_saving(embedding_bag_p, (weight, psw, inv),
                       {"indices": idx, "bags": bags, "nbags": nb, "mode": mode, "keep": keep, "argmax": argmax,
                        "fast": padding_idx is None}, None, saved)
    return out, bags, keep, argmax, nb


@_fn
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding with ``num_classes`` (inferred as max + 1 when -1)."""
    check_tensor(tensor, "one_hot", "input")
    if not E.is_int(num_classes):
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not "
                        f"{type(num_classes).__name__}")
    d = tensor._data
    if d.dtype != D.int64.np:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    xp = NAMESPACES[type(d)]
    bounds = xp.index_bounds(d)
    if num_classes == -1:
        if bounds is None:
            if d.size:   # elements without values ('meta'): PyTorch's error for reading one
                raise RuntimeError("Tensor.item() cannot be called on meta tensors")
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = bounds[1] + 1
    if bounds is not None and bounds[0] < 0:
        raise RuntimeError("Class values must be non-negative.")
    if bounds is not None and bounds[1] >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return make(xp.one_hot(d, num_classes))


# ----- dropout -------------------------------------------------------------------------------------------------
# PyTorch's CPU kernel (_dropout_impl): noise = empty_like(input).bernoulli_(1 - p) (one draw per element, or per
# (sample, channel) for the feature variants), scaled by 1 / (1 - p), then input * noise. The noise comes from
# ember's bernoulli_, which follows PyTorch's stream, so the same seed gives PyTorch's mask.

_ALPHA = 1.7580993408473766   # -scale * alpha of SELU: the value alpha dropout drops to


def _check_p(p, exc=ValueError) -> float:
    if isinstance(p, Tensor):
        p = p.item()
    if p < 0.0 or p > 1.0:
        raise exc(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def _dropout_impl(input: Tensor, p: float, train, feature: bool, alpha: bool, inplace: bool) -> Tensor:
    from .creation import empty_like, zeros
    from ..autograd.grad_mode import no_grad
    check_tensor(input, "dropout")
    if p == 0 or not train or input._data.size == 0:
        return input   # the very same tensor, as PyTorch
    if p == 1:
        z = zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(z) if inplace else input * z
    shape = input._data.shape
    if feature:
        if len(shape) < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = shape[:2] + (1,) * (len(shape) - 2)
    with no_grad():
        # on input's device: a like-tensor of input itself, or of its first element per (sample, channel)
        noise = empty_like(input if not feature else input[(slice(None), slice(None)) + (slice(0, 1),) *
                                                            (len(shape) - 2)]).bernoulli_(1 - p)
        half = noise.dtype == D.float16
        if half:   # PyTorch scales float16 noise in float32 (its opmath type) and rounds once
            noise = noise.float()
        if alpha:
            a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
            b = noise.add(-1).mul_(_ALPHA * a).add_(_ALPHA * a * p)
            noise.mul_(a)
            if half:
                b = b.half()
        else:
            noise.div_(1 - p)
        if half:
            noise = noise.half()
    out = input.mul_(noise) if inplace else input * noise
    return out.add_(b) if alpha else out


@_fn
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) in training; ``p=0`` and eval
    return ``input`` itself."""
    check_tensor(input, "dropout")
    return _dropout_impl(input, _check_p(p), training, False, False, inplace)


@_fn
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value, then an affine map
    keeps mean and variance."""
    check_tensor(input, "alpha_dropout")
    return _dropout_impl(input, _check_p(p), training, False, True, inplace)


@_fn
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels (one draw per sample and channel)."""
    check_tensor(input, "feature_alpha_dropout")
    return _dropout_impl(input, _check_p(p), training, True, True, inplace)


@_fn
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    check_tensor(input, "dropout1d")
    p = _check_p(p)
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that dropout1d "
                           f"exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           f"dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout_unbatched(input, p, training, inplace, nd == 3)


def _feature_dropout_unbatched(input, p, training, inplace, batched):
    if not batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _dropout_impl(input, p, training, True, False, inplace)
    if not batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


@_fn
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, H, W) inputs (3-D inputs are taken as (N, C, L), with PyTorch's warning)."""
    check_tensor(input, "dropout2d")
    p = _check_p(p)
    nd = input._data.ndim
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      f"inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, True, False, inplace)


@_fn
def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    check_tensor(input, "dropout3d")
    p = _check_p(p)
    nd = input._data.ndim
    if nd not in (4, 5):
        warnings.warn(f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      f"inputs).", stacklevel=2)
    return _feature_dropout_unbatched(input, p, training, inplace, nd == 5)


def _torch_dropout(alpha: bool, feature: bool, inplace: bool, name: str):
    def fn(input: Tensor, p: float, train: bool) -> Tensor:
        check_tensor(input, name)
        return _dropout_impl(input, _check_p(p, RuntimeError), train, feature, alpha, inplace)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, p, train)`` (``p`` and ``train`` required)."
    return register(fn, name=name)


for _a, _f, _n in ((False, False, "dropout"), (True, False, "alpha_dropout"), (False, True, "feature_dropout"),
                   (True, True, "feature_alpha_dropout")):
    _torch_dropout(_a, _f, False, _n)
    _torch_dropout(_a, _f, True, _n + "_")


# ----- torch.native_dropout: (output, mask) ----------------------------------------------------------------
# ATen's kernel: mask = empty_like(input).bernoulli_(1 - p) (the draws of F.dropout for the same seed), output =
# input * mask * scale, the mask returned as bool; in evaluation a copy of the input and a mask of ones. mask (a
# tensor in the input's dtype) is a constant input without an edge; grad_scale is what PyTorch's backward
# multiplies by: 1 whenever train is not True (also for train=None, which trains: PyTorch's formula).

def _native_dropout_forward(xp, x, mask, scale, grad_scale, p, train):
    return E._mul(xp, x * mask, scale)


native_dropout_p = defprim(
    "native_dropout", _native_dropout_forward, node="NativeDropoutBackward0",
    vjp=(lambda xp, g, out, x, mask, scale, grad_scale, p, train: E._mul(xp, g * mask, grad_scale), None),
    jvp=(lambda xp, t, out, x, mask, scale, grad_scale, p, train: E._mul(xp, t * mask, scale), None),
    saves=(1,), scalar_args=(1,), saved_names=("input", "result1"), complex=True)


@register()
@schema("native_dropout(Tensor input, float p, bool? train)")
def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple:
    """``(output, mask)`` as ATen's native_dropout: the dropped-out input and the bool mask of kept elements."""
    from .creation import empty_like, ones_like, tensor
    from ..autograd.grad_mode import no_grad
    if input._data.size == 0:
        return input, empty_like(input)   # PyTorch's: the input itself, and a mask of the input's dtype
    training = train is None or bool(train)
    with no_grad():
        if training:
            q = 1.0 - p
            if not 0.0 <= q <= 1.0:
                raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={q}")
            # complex: the draws of the real dtype (PyTorch's are the same for every dtype)
            mask = empty_like(input, dtype=input.dtype.to_real() if input.dtype.is_complex else None).bernoulli_(q)
            scale = 0.0 if q == 0 else 1.0 / q
            if input.dtype in (D.float16, D.bfloat16):   # PyTorch's mul_(scale) rounds the scale to the dtype
                scale = tensor(scale, dtype=input.dtype).item()
        else:
            mask = ones_like(input, dtype=input.dtype.to_real() if input.dtype.is_complex else None)
            scale = 1   # an int: an integral input stays integral (PyTorch's clone)
    if training and input._data.dtype.kind not in "fcV":   # mul_(scale) of an integral result
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{D.type_word(input._data.dtype)}")
    keep = mask.bool()   # the mask returned, which PyTorch's node saves: changed in place, backward refuses it
    out = apply_saving(native_dropout_p, (input, mask), {"scale": scale, "grad_scale": scale if train is True else 1,
                                                         "p": p, "train": train}, None, (keep,))
    return out, keep


# ----- gumbel_softmax ---------------------------------------------------------------------------------------

@_fn
def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn as PyTorch draws it (-log of exponential_()), so the
    same seed gives PyTorch's sample; ``hard``: the one-hot argmax with the soft sample's gradient."""
    from .creation import empty_like, zeros_like
    check_tensor(logits, "gumbel_softmax", "logits")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = torch_softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ----- torch.special.softmax and log_softmax: dim is required there --------------------------------------------

@register(module=False, submodule="special", submodule_name="softmax")
def special_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``torch.special.softmax``: ``softmax`` with a required ``dim``."""
    check_tensor(input, "softmax")
    return _softmax_apply(softmax_p, input, dim, dtype, "softmax")


@register(module=False, submodule="special", submodule_name="log_softmax")
def special_log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """``torch.special.log_softmax``: ``log_softmax`` with a required ``dim``."""
    check_tensor(input, "log_softmax")
    return _softmax_apply(log_softmax_p, input, dim, dtype, "log_softmax")


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("elementwise", "threshold_backward", "hardtanh_backward", "leaky_relu_backward",
                  "hardshrink_backward", "softshrink_backward", "hardswish_backward", "hardsigmoid_backward",
                  "elu_backward", "gelu_backward", "softplus_backward", "log_sigmoid_backward", "leaky_relu", "elu",
                  "celu", "gelu", "silu", "mish", "softplus", "hardtanh", "hardsigmoid", "hardswish", "hardshrink",
                  "softshrink", "log_sigmoid", "threshold")
_batching.by_name(_batching.dims_rule("dim"), "softmax", "log_softmax", "glu", "softmax_backward_data",
                  "log_softmax_backward_data")
# (prelu's wrapper views the weight to the input's rank, channels at dim 1: it broadcasts from the right)
_batching.by_name("elementwise", "prelu", "prelu_backward_self", "prelu_backward_weight")


def _trilinear_rule(call, args, bdims, params, size):
    """bilinear's (M, i) x (o, i, j) x (M, j) -> (M, o): with a shared weight the vmap batch folds into M; with
    a weight of each example's own, sum_j (x1 W)[b, m, o, j] x2[b, m, j] by batched matmul."""
    (a, w, b), (ba, bw, bb) = args, bdims
    A, Bt = (_batching._moved(t, bd) if bd is not None else t.unsqueeze(0).expand((size,) + tuple(t._data.shape))
             for t, bd in ((a, ba), (b, bb)))
    if bw is not None:
        W = _batching._moved(w, bw)                                          # (B, o, i, j)
        xw = A.unsqueeze(2).unsqueeze(3).matmul(W.unsqueeze(1)).squeeze(-2)  # (B, M, o, j)
        return (xw * Bt.unsqueeze(2)).sum(-1), 0
    m = A._data.shape[1]
    out = call([A.reshape((size * m, A._data.shape[2])), w, Bt.reshape((size * m, Bt._data.shape[2]))], params)
    return out.reshape((size, m, out._data.shape[1])), 0


_batching.by_name(_trilinear_rule, "trilinear")
_batching.by_name("fallback", "rrelu_with_noise", "rrelu_with_noise_", "rrelu_with_noise_backward", "native_dropout",
                  why="a random op: vmap's randomness modes are not built for it yet")
_batching.by_name("fallback", "embedding", "embedding_bag", why="an index array in its parameters")


def _embedding_public(orig, name, bound, level, size):
    """F.embedding (its wrapper reads the indices): indices mapped over with a shared weight gather from it at
    once; a weight of its own for each example is flattened to (B*n, D) and each example's indices offset by
    b*n (checked against its own n rows first). Scaled gradients (counts within each example), or a padding
    index or max_norm with batched weights: per example."""
    a = bound.arguments
    idx, w = a["input"], a["weight"]
    if a["scale_grad_by_freq"] or not isinstance(idx, Tensor) or not isinstance(w, Tensor):
        return NotImplemented
    I = _vmap_nn.front(idx, level, size)
    if not _vmap_nn.at(w, level):
        a["input"] = I
        return _batching.wrap(_vmap_nn.again(orig, name, bound.args, bound.kwargs), 0, level)
    if a["padding_idx"] is not None or a["max_norm"] is not None or w.ndim != 2:
        return NotImplemented
    W = _vmap_nn.front(w, level, size)
    n, d = tuple(W.shape[1:])
    _vmap_nn.again(orig, name, (I, W.new_zeros((n, 1))), {})   # the indices' range check, against n rows
    from .creation import arange
    offsets = (arange(size) * n).reshape((size,) + (1,) * (I.ndim - 1))
    a["input"] = I + offsets
    a["weight"] = W.reshape((size * n, d))
    return _batching.wrap(_vmap_nn.again(orig, name, bound.args, bound.kwargs), 0, level)


_vmap_nn.public_rule(_embedding_public, "embedding")
_ONE_HOT_VMAP = "When vmap-ing torch.nn.functional.one_hot, please provide an explicit positive num_classes argument."


def _one_hot_rule(orig, args, kwargs, level):
    """one_hot of the physical indices; without num_classes PyTorch refuses (each example could infer its own)."""
    bound = _bp.bind(one_hot, args, kwargs)
    if bound is None or not isinstance(bound.get("tensor"), Tensor):
        return _bp.own(orig, args, kwargs, level)
    n = bound.get("num_classes", -1)
    if E.is_int(n) and n == -1:
        raise RuntimeError(_ONE_HOT_VMAP)
    return _bp.wrap_out(one_hot(_bp.front(bound["tensor"], level), n), level)


_bp.public_rule(one_hot, _one_hot_rule)
