"""The op table, torch.nn.functional: normalisation, distances and attention.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``).

* ``layer_norm``, ``batch_norm``, ``group_norm`` are one fused primitive each (PyTorch's
  ``NativeLayerNormBackward0``, ``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``), all three
  the same computation: normalise over some axes of a (possibly regrouped) input, then scale and shift
  per channel. Their rules recompute the statistics from the saved input and are written against
  ``xp``, so they are differentiable again (PyTorch has double backward for all three).
* ``instance_norm`` is batch norm on the input viewed as (1, N*C, ...), as PyTorch builds it;
  ``rms_norm`` and ``local_response_norm`` are composites, as PyTorch's CPU graphs are.
* Statistics accumulate in float64 and the mean is removed in two steps (``norm_xhat``), so inputs with
  large offsets (mean 1e4) keep their precision; float16 computes in float32.
"""
from __future__ import annotations

from ..autograd import _batching
from . import _vmap_nn

import math
import numbers
import threading

from .. import _dtype as D
from .._device import NAMESPACES, cpu_backend, quietly
from ..backends.cuda import _sdp as _sdp_enabled
from .._state import _state as _gm_state
from .._tensor import Tensor, make
from ..autograd._primitive import PrimNode, apply, defprim
from ._registry import graph, register
from .._util import check_tensor, compute
from .elementwise import add_scalar_p, clamp_unrecorded_p, rsqrt
from .nn_activation import softmax_p
from .creation import empty
from .shape import cat
from ._schema import schema

_F = "nn.functional"

# ----- the shared normalisation core ----------------------------------------------------------------
# Parameters of every normalisation primitive:
#   view: the shape the input is viewed as for its statistics (group norm: (N, G, C // G * spatial)), or None;
#   axes:  the axes of that view the statistics reduce over;
#   wshape: the shape weight and bias are viewed as to broadcast against the input ((C, 1, 1) for channels
#          in dim 1), or None when they broadcast as they are (layer norm);
#   eps, and acc: the dtype the rules compute in (float64: see the module docstring).

_F16, _F32, _F64 = D.float16.np, D.float32.np, D.float64.np
_BF16 = D.bfloat16.np


def _acc(x: Tensor):
    # float16 computes in float32, as PyTorch's CPU kernels; sums accumulate in float64 (norm_xhat)
    return _F64 if x._data.dtype == _F64 else _F32


def _xhat(xp, x, view, axes, eps, acc):
    """The normalised input (in the grouped view) and 1 / std."""
    return xp.norm_xhat(xp.cast(x, acc), view, axes, eps)


# Within one norm node's plain backward, its input and weight rules share the normalised input. The node's ``_args``
# (which PrimNode.apply calls once, before the rules) hands the rules a fresh view of the saved input, an object
# made for this call alone; the input rule keeps (view, result) when the weight rule follows, the weight rule takes
# it if it was given that same view. No other call can be given that object, so nothing is read outside the apply
# that made it (create_graph, forward mode and compiled programs compute their own, the same values), and the
# next norm node's apply drops anything left (autograd.grad asking for the input's gradient alone).
_SHARED = threading.local()
_NP_ARRAY = cpu_backend().array_types[0]


def _xhat_rules(xp, x, view, axes, eps, acc, keep: bool = False):
    memo = getattr(_SHARED, "memo", None)
    if memo is not None and memo[0] is x:
        _SHARED.memo = None
        return memo[1]
    r = _xhat(xp, x, view, axes, eps, acc)
    if keep and x is getattr(_SHARED, "fresh", None):
        _SHARED.memo = (x, r)
    _SHARED.fresh = None
    return r


def _sharing_args(self, graph: bool) -> list:
    """PrimNode._args, the saved input given to the rules as a view made for this call when both the input's and
    the weight's gradients are wanted (see above)."""
    args = PrimNode._args(self, graph)
    _SHARED.memo = _SHARED.fresh = None
    if not graph and type(args[0]) is _NP_ARRAY:
        edges = self.next_functions
        if len(edges) > 1 and edges[0][0] is not None and edges[1][0] is not None:
            args[0] = _SHARED.fresh = args[0].view()
    return args


@graph("norm_xhat")
def _norm_xhat_graph(x: Tensor, view, axes, eps):
    """norm_xhat (ember/devices/cpu/nn_norm.py), differentiable: the same two-step centring, where the first step
    subtracts a constant (the detached mean), so the derivative is that of (x - mean(x)) * rstd."""
    xg = x if view is None else x.reshape(view)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        c = xg.detach().mean(axes, keepdim=True)
    xc = xg - c
    xc = xc - xc.mean(axes, keepdim=True)
    rstd = rsqrt((xc * xc).mean(axes, keepdim=True) + eps)
    return xc * rstd, rstd


def _param(xp, w, wshape, acc):
    w = xp.cast(w, acc)
    return w if wshape is None else xp.reshape(w, wshape)


def _to_param(xp, g, w, wshape):
    """A gradient of the input's shape summed down to a parameter's shape."""
    if wshape is None:
        return xp.sum_to(g, w.shape)
    return xp.reshape(xp.sum_to(g, wshape), w.shape)


def _norm_forward(xp, x, w, b, view, axes, wshape, eps, acc):
    xh, _ = _xhat(xp, x, view, axes, eps, acc)
    y = xp.reshape(xh, x.shape)
    if w is not None:
        y = y * _param(xp, w, wshape, acc)
    if b is not None:
        y = y + _param(xp, b, wshape, acc)
    return xp.cast(y, x.dtype)


def _bn_stats_bf16(xp, x, axes):
    """PyTorch's batch_norm_cpu_collect_stats for bfloat16: x in float32, its mean (float32) and the sum of
    squares about that mean (float32), over ``axes`` (kept), and the count."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    x32 = xp.cast(x, _F32)
    mean = xp.cast(xp.sum(xp.cast(x, _F64), axes, True), _F32) / n
    d = x32 - mean
    return x32, mean, xp.cast(xp.sum(xp.cast(d * d, _F64), axes, True), _F32), n


def _update_running_bf16(running_mean, running_var, x, axes, momentum: float) -> None:
    """PyTorch's update_stats with bfloat16 running statistics (Normalization.cpp), in place (``_running_bf16``)."""
    _write_running((running_mean, running_var),
                   compute(_running_bf16, x, running_mean, running_var, axes=axes, momentum=momentum))


def _running_bf16(x, rm, rv, axes, momentum: float) -> tuple:
    """The new bfloat16 running statistics (None for a missing one): momentum rounded to bfloat16;
    running_mean = momentum * mean + (1 - momentum) * running_mean, each step in bfloat16 (the mean stored as
    bfloat16); running_var = momentum * (var_sum / (n - 1)) in float32 (var_sum and the quotient rounded to
    bfloat16) plus (1 - momentum) * running_var rounded, the sum rounded once."""
    xp = NAMESPACES[type(x)]
    _, mean, var_sum, n = _bn_stats_bf16(xp, x, axes)
    m = xp.weak_number(x, momentum)
    rest = xp.weak_number(x, 1.0) - m
    new_mean = new_var = None
    if rm is not None:
        new_mean = xp.reshape(m * xp.cast(mean, _BF16) + rest * xp.reshape(rm, mean.shape), rm.shape)
    if rv is not None:
        unbiased = xp.cast(xp.cast(var_sum, _BF16) / xp.weak_number(x, float(n - 1)), _F32)
        new = xp.cast(xp.cast(m, _F32) * unbiased + xp.cast(rest * xp.reshape(rv, unbiased.shape), _F32), _BF16)
        new_var = xp.reshape(new, rv.shape)
    return new_mean, new_var


def _write_running(runnings, news) -> None:
    """Each running statistic's new value copied into it (outside autograd: no version counted)."""
    for r, new in zip(runnings, news):
        if r is not None:
            NAMESPACES[type(r._data)].backend.copyto(r._data, new)


def _bn_forward(xp, x, w, b, view, axes, wshape, eps, acc):
    """native_batch_norm in training; bfloat16 as PyTorch's CPU kernels (batch_norm_kernel.cpp's
    collect_stats and contiguous_impl, Normalization.cpp's update_stats): the mean and the sum of squares about it
    in float32, each stored as a parameter (bfloat16, unless weight and bias are float32); the variance that sum
    divided by the count in bfloat16; 1 / sqrt(var + eps) in double, stored likewise; then
    y = x * alpha + beta in float32 (alpha = invstd * weight, beta = bias - mean * alpha), rounded once.
    (PyTorch's float32 parameters are also running statistics of float32 beside no weight and bias: those stats
    are rounded here.)"""
    if x.dtype is not _BF16 or x.size == 0:
        return _norm_forward(xp, x, w, b, view, axes, wshape, eps, acc)
    low = (w is None or w.dtype is _BF16) and (b is None or b.dtype is _BF16)
    keep = (lambda v: xp.cast(xp.cast(v, _BF16), _F32)) if low else (lambda v: v)
    x32, mean, var_sum, n = _bn_stats_bf16(xp, x, axes)
    # _var_sum / n: c10's BFloat16 / int64 divides by the count rounded to bfloat16, and rounds
    var = keep(keep(var_sum) / (xp.cast(xp.weak_number(x, float(n)), _F32) if low else n))
    invstd = keep(xp.cast(1.0 / xp.sqrt(xp.cast(var, _F64) + eps), _F32))
    if eps == 0:   # InvStd: 0 where var and eps are both 0
        invstd = xp.where(var == 0, 0.0 * invstd, invstd)
    alpha = invstd if w is None else invstd * _param(xp, w, wshape, _F32)
    beta = -(keep(mean) * alpha) if b is None else _param(xp, b, wshape, _F32) - keep(mean) * alpha
    return xp.cast(x32 * alpha + beta, _BF16)


def _xhat_adjoint(xp, gg, xh, rstd, axes):
    # d xhat: the Jacobian of (x - mean) * rstd is symmetric, so the same map serves VJP and JVP.
    return rstd * (gg - xp.mean(gg, axes, True) - xh * xp.mean(gg * xh, axes, True))


def _norm_vjp_x(xp, g, out, x, w, b, view, axes, wshape, eps, acc):
    xh, rstd = _xhat_rules(xp, x, view, axes, eps, acc, keep=w is not None)
    g = xp.cast(g, acc)
    if w is not None:
        g = g * _param(xp, w, wshape, acc)
    gg = g if view is None else xp.reshape(g, view)
    return xp.reshape(_xhat_adjoint(xp, gg, xh, rstd, axes), x.shape)


def _norm_vjp_w(xp, g, out, x, w, b, view, axes, wshape, eps, acc):
    xh, _ = _xhat_rules(xp, x, view, axes, eps, acc)
    return _to_param(xp, xp.cast(g, acc) * xp.reshape(xh, x.shape), w, wshape)


def _norm_vjp_b(xp, g, out, x, w, b, view, axes, wshape, eps, acc):
    return _to_param(xp, xp.cast(g, acc), b, wshape)


def _linked(rule, node):
    """``rule``'s gradient connected to the input and weight, as the output of PyTorch's native_*_norm_backward
    (one op taking both) is under create_graph (see nn_conv.grad_link_p); ``node``: its name."""
    def linked(xp, g, out, x, w, b, *args, **params):
        return xp.grad_link(rule(xp, g, out, x, w, b, *args, **params), x, w, node)
    return linked


def _norm_jvp_x(xp, t, out, x, w, b, view, axes, wshape, eps, acc):
    xh, rstd = _xhat(xp, x, view, axes, eps, acc)
    t = xp.cast(t, acc)
    tg = t if view is None else xp.reshape(t, view)
    r = xp.reshape(_xhat_adjoint(xp, tg, xh, rstd, axes), x.shape)
    return r if w is None else r * _param(xp, w, wshape, acc)


def _norm_jvp_w(xp, t, out, x, w, b, view, axes, wshape, eps, acc):
    xh, _ = _xhat(xp, x, view, axes, eps, acc)
    return xp.reshape(xh, x.shape) * _param(xp, t, wshape, acc)


def _norm_jvp_b(xp, t, out, x, w, b, view, axes, wshape, eps, acc):
    return _param(xp, t, wshape, acc)


def _norm_prim(name, node_name, link=True, forward=_norm_forward):
    # group norm's double backward in PyTorch is a composition (its bias gradient a plain sum): no link
    vjp_b = _linked(_norm_vjp_b, node_name.replace("Backward0", "BackwardBackward0")) if link else _norm_vjp_b
    p = defprim(name, forward, node=node_name, vjp=(_norm_vjp_x, _norm_vjp_w, vjp_b),
                jvp=(_norm_jvp_x, _norm_jvp_w, _norm_jvp_b), saves=(0, 1),
                saved_names=("input", "weight", "bias"))
    p.node_cls._args = _sharing_args   # (the node class is this primitive's own: node_class makes one per name)
    return p


layer_norm_p = _norm_prim("native_layer_norm", "NativeLayerNormBackward0")
group_norm_p = _norm_prim("native_group_norm", "NativeGroupNormBackward0", link=False)
batch_norm_p = _norm_prim("native_batch_norm", "NativeBatchNormBackward0", forward=_bn_forward)
# PyTorch's native_*_norm_backward is one formula for input, weight and bias: it keeps both whenever recorded


# Batch norm in evaluation mode: the running statistics are constants (inputs 3 and 4, with no graph edge,
# as PyTorch's node has none for them): y = (x - running_mean) / sqrt(running_var + eps) * w + b.

def _eval_stats(xp, rm, rv, wshape, eps, acc):
    return _param(xp, rm, wshape, acc), xp.rsqrt(_param(xp, rv, wshape, acc) + eps)


def _bn_eval_forward(xp, x, w, b, rm, rv, wshape, eps, acc):
    mean, rstd = _eval_stats(xp, rm, rv, wshape, eps, acc)
    y = (xp.cast(x, acc) - mean) * rstd
    if w is not None:
        y = y * _param(xp, w, wshape, acc)
    if b is not None:
        y = y + _param(xp, b, wshape, acc)
    return xp.cast(y, x.dtype)


def _bn_eval_vjp_x(xp, g, out, x, w, b, rm, rv, wshape, eps, acc):
    _, rstd = _eval_stats(xp, rm, rv, wshape, eps, acc)
    g = xp.cast(g, acc) * rstd
    return g if w is None else g * _param(xp, w, wshape, acc)


def _bn_eval_vjp_w(xp, g, out, x, w, b, rm, rv, wshape, eps, acc):
    mean, rstd = _eval_stats(xp, rm, rv, wshape, eps, acc)
    return _to_param(xp, xp.cast(g, acc) * ((xp.cast(x, acc) - mean) * rstd), w, wshape)


def _bn_eval_vjp_b(xp, g, out, x, w, b, rm, rv, wshape, eps, acc):
    return _to_param(xp, xp.cast(g, acc), b, wshape)


def _bn_eval_jvp_w(xp, t, out, x, w, b, rm, rv, wshape, eps, acc):
    mean, rstd = _eval_stats(xp, rm, rv, wshape, eps, acc)
    return (xp.cast(x, acc) - mean) * rstd * _param(xp, t, wshape, acc)


batch_norm_eval_p = defprim(
    "native_batch_norm_eval", _bn_eval_forward,
    node="NativeBatchNormBackward0", vjp=(_linked(_bn_eval_vjp_x, "NativeBatchNormBackwardBackward0"), _bn_eval_vjp_w,
         _linked(_bn_eval_vjp_b, "NativeBatchNormBackwardBackward0"), None, None),
    jvp=(_bn_eval_vjp_x, _bn_eval_jvp_w, lambda xp, t, out, x, w, b, rm, rv, wshape, eps, acc:
         _param(xp, t, wshape, acc), None, None),
    saves=(0, 1, 3, 4), scalar_args=(3, 4),
    saved_names=("input", "weight", "bias", "running_mean", "running_var"))


# ----- argument checks ------------------------------------------------------------------------------------

def _shape_list(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _int_tuple(value, op: str, arg: str, pos: int) -> tuple:
    """A sequence of ints (PyTorch refuses a bare int, None or a string where a shape goes)."""
    if isinstance(value, Tensor) or not isinstance(value, (list, tuple)) or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be tuple of ints, not "
                        f"{type(value).__name__}")
    return tuple(int(v) for v in value)


def _optional_tensor(x, op: str, arg: str, pos: int):
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


def _float_arg(x, op: str, arg: str, pos: int) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be float, not {type(x).__name__}")
    return float(x)


def _check_floating(x: Tensor, kernel: str) -> None:
    if x._data.dtype.kind not in "fV":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(x._data.dtype)}\'')


def _check_param_dtypes(x: Tensor, params, op: str) -> None:
    """PyTorch's CPU kernels: every parameter has the input's dtype, or float32 for a float16/bfloat16 input."""
    dts = {p._data.dtype for p in params if p is not None}
    if not dts:
        return
    xd = x._data.dtype
    low = xd == _F16 or xd is _BF16
    if dts == {xd} or (low and dts == {_F32}):
        return
    want = D.type_word(_F32 if low and len(dts) > 1 else xd)
    raise RuntimeError(f"{op}: mixed dtype (CPU): expect parameter to have scalar type of {want}")


def _channel_shape(x: Tensor) -> tuple:
    # weight/bias of channel dim 1, viewed to broadcast against the input
    return (x._data.shape[1],) + (1,) * (x._data.ndim - 2)


# ----- layer_norm --------------------------------------------------------------------------------------------

@register(module=True, submodule=_F)
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims, then scale by ``weight`` and shift by ``bias``."""
    check_tensor(input, "layer_norm")
    shape = _int_tuple(normalized_shape, "layer_norm", "normalized_shape", 2)
    _optional_tensor(weight, "layer_norm", "weight", 3)
    _optional_tensor(bias, "layer_norm", "bias", 4)
    eps = _float_arg(eps, "layer_norm", "eps", 5)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    for p, name in ((weight, "weight"), (bias, "bias")):
        if p is not None and tuple(p._data.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{_shape_list(p._data.shape)} and normalized_shape = {_shape_list(shape)}")
    xs = input._data.shape
    k = len(shape)
    if len(xs) < k or tuple(xs[len(xs) - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={_shape_list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{_shape_list(xs)}")
    _check_floating(input, "LayerNormKernelImpl")
    _check_param_dtypes(input, (weight, bias), "layer_norm")
    axes = tuple(range(len(xs) - k, len(xs)))
    return apply(layer_norm_p, (input, weight, bias),
                 {"view": None, "axes": axes, "wshape": None, "eps": eps, "acc": _acc(input)})


# ----- batch_norm --------------------------------------------------------------------------------------------

def _verify_batch_size(shape) -> None:
    n = shape[0]
    for s in shape[2:]:
        n *= s
    if n == 1:
        # PyTorch prints the input's torch.Size, or the list it built (group_norm's grouped shape)
        size = list(shape) if isinstance(shape, list) else f"torch.Size({list(shape)})"
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _blend(r, stat, momentum: float):
    """(1 - momentum) * r + momentum * stat in float64, in r's shape (copied into r, outside autograd, as PyTorch,
    whose kernel writes the buffer without counting a version)."""
    xp = NAMESPACES[type(r)]
    return xp.reshape((1.0 - momentum) * xp.cast(r, _F64) + momentum * stat, r.shape)


def _running(x, rm, rv, axes, momentum: float) -> tuple:
    """Batch norm's new running mean and variance (None for a missing one) from the batch ``x``."""
    mean, var = _batch_stats(x, axes)
    return (None if rm is None else _blend(rm, mean, momentum), None if rv is None else _blend(rv, var, momentum))


def _running_instance(x, rm, rv, axes, n: int, c: int, momentum: float) -> tuple:
    """Instance norm's: each (sample, channel) updates its copy of the channel's estimate; the channel keeps
    their mean."""
    mean, var = _batch_stats(x, axes)
    xp = NAMESPACES[type(x)]
    return tuple(None if r is None else _blend(r, xp.mean(xp.reshape(stat, (n, c)), (0,), False), momentum)
                 for r, stat in ((rm, mean), (rv, var)))


def _batch_stats(x, axes: tuple) -> tuple:
    """The batch mean and the unbiased variance PyTorch keeps in the running estimate, in float64 (the callers
    make sure more than one value goes into each)."""
    xp = NAMESPACES[type(x)]
    w = xp.cast(x, _F64)
    n = 1
    for a in axes:
        n *= x.shape[a]
    mean = xp.mean(w, axes, True)
    c = w - mean
    var = xp.sum(c * c, axes, False) / (n - 1)
    return xp.reshape(mean, var.shape), var


@register(module=False, submodule=_F)
@quietly   # the running statistics are updated on raw arrays, outside apply: inf and nan silently, as in PyTorch
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and every other dim; in training, with the batch's
    statistics (and the running estimates updated in place), else with the running estimates."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, True)


@register(name="batch_norm")
def _aten_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                     running_var: Tensor | None, training: bool, momentum: float, eps: float,
                     cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm``: F.batch_norm's computation in ATen's argument order, without F's check that a
    channel has more than one value in training (one value normalises to 0)."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, False)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, python_checks: bool):
    op = "batch_norm"
    check_tensor(input, op)
    _optional_tensor(running_mean, op, "running_mean", 4)
    _optional_tensor(running_var, op, "running_var", 5)
    for name, r in (("running_mean", running_mean), ("running_var", running_var)):
        if r is not None and r._requires_grad and _gm_state.enabled:
            raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with respect to argument "
                               f"'{name}'. This input cannot have requires_grad True.")
    _optional_tensor(weight, op, "weight", 2)
    _optional_tensor(bias, op, "bias", 3)
    momentum = _float_arg(momentum, op, "momentum", 7)
    eps = _float_arg(eps, op, "eps", 8)
    xs = input._data.shape
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if training:
        if input._data.ndim < 2 and python_checks:
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
        if python_checks:
            _verify_batch_size(xs)
    elif running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")
    if input._data.ndim < 2:
        raise RuntimeError(f"batch_norm: expected a 2-d or higher input (N, C, ...), got {input._data.ndim}-d")
    c = xs[1]
    # PyTorch's order: the running statistics first, then the affine parameters
    for p, name in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"),
                    (bias, "bias")):
        if p is not None and p._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {p._data.size}")
    _check_floating(input, "batch_norm")
    _check_param_dtypes(input, (weight, bias, running_mean, running_var), op)
    wshape = _channel_shape(input)
    axes = (0,) + tuple(range(2, input._data.ndim))
    if training:
        out = apply(batch_norm_p, (input, weight, bias),
                    {"view": None, "axes": axes, "wshape": wshape, "eps": eps, "acc": _acc(input)})
        if input._data.dtype is _BF16 and input._data.size > 1 and all(
                r is None or r._data.dtype is _BF16 for r in (running_mean, running_var)):
            _update_running_bf16(running_mean, running_var, input, axes, momentum)
        elif running_mean is not None or running_var is not None:
            rs = (running_mean, running_var)
            _write_running(rs, compute(_running, input, *rs, axes=axes, momentum=momentum))
        return out
    return apply(batch_norm_eval_p, (input, weight, bias, running_mean, running_var),
                 {"wshape": wshape, "eps": eps, "acc": _acc(input)})


def _check_groups(xs, c: int, num_groups: int, weight, bias) -> None:
    """PyTorch's group-norm checks of the channels against the groups, the weight and the bias."""
    if num_groups < 0 or c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {_shape_list(xs)} and num_groups={num_groups}")
    for p in (weight, bias):
        if p is not None and (p._data.ndim != 1 or p._data.size != c):
            raise RuntimeError(f"Expected weight to be a vector of size equal to the number of channels in input, "
                               f"but got weight of shape {_shape_list(p._data.shape)} and input of shape "
                               f"{_shape_list(xs)}")


# ----- group_norm ----------------------------------------------------------------------------------------

@register(module=True, submodule=_F)
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """Split the channels (dim 1) into ``num_groups`` groups and normalise each group of each sample."""
    op = "group_norm"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input._data.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input._data.ndim}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral):
        raise TypeError(f"{op}(): argument 'num_groups' (position 2) must be int, not {type(num_groups).__name__}")
    num_groups = int(num_groups)
    _optional_tensor(weight, op, "weight", 3)
    _optional_tensor(bias, op, "bias", 4)
    eps = _float_arg(eps, op, "eps", 5)
    xs = input._data.shape
    n, c = xs[0], xs[1]
    if num_groups == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    spatial = 1
    for s in xs[2:]:
        spatial *= s
    _verify_batch_size([n * c // num_groups, num_groups] + list(xs[2:]))   # PyTorch's check, as its F builds it
    _check_groups(xs, c, num_groups, weight, bias)
    _check_floating(input, "group_norm")
    _check_param_dtypes(input, (weight, bias), op)
    return apply(group_norm_p, (input, weight, bias),
                 {"view": (n, num_groups, c // num_groups * spatial), "axes": (2,), "wshape": _channel_shape(input),
                  "eps": eps, "acc": _acc(input)})


# ----- instance_norm -------------------------------------------------------------------------------------

@register(module=False, submodule=_F)
@quietly   # as batch_norm: the running statistics
def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial dims: batch norm of the input viewed as
    (1, N*C, ...), as PyTorch computes it (so its graph is View -> NativeBatchNorm -> View)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"instance_norm(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps, True)


@register(name="instance_norm")
def _aten_instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                        running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                        cudnn_enabled: bool) -> Tensor:
    """``torch.instance_norm``: F.instance_norm in ATen's argument order, without F's spatial-size check."""
    check_tensor(input, "instance_norm")
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps, False)


def _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps,
                   python_checks: bool):
    op = "instance_norm"
    xs = input._data.shape
    if use_input_stats and python_checks:
        spatial = 1
        for s in xs[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"torch.Size({list(xs)})")
    for p, name, pos in ((running_mean, "running_mean", 2), (running_var, "running_var", 3),
                         (weight, "weight", 4), (bias, "bias", 5)):
        _optional_tensor(p, op, name, pos)
    momentum = _float_arg(momentum, op, "momentum", 7)
    eps = _float_arg(eps, op, "eps", 8)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    n, c = xs[0], xs[1]
    for p, name in ((weight, "weight"), (bias, "bias"), (running_mean, "running_mean"),
                    (running_var, "running_var")):
        if p is not None and p._data.size != c:
            raise RuntimeError(f"{name} should contain {c} elements not {p._data.size}")
    _check_floating(input, "batch_norm")
    _check_param_dtypes(input, (weight, bias, running_mean, running_var), op)
    flat = (1, n * c) + tuple(xs[2:])
    x = input.reshape(flat)
    w = None if weight is None else weight.repeat(n)
    b = None if bias is None else bias.repeat(n)
    wshape = (n * c,) + (1,) * (len(xs) - 2)
    if use_input_stats:
        axes = tuple(range(2, len(flat)))
        out = apply(batch_norm_p, (x, w, b),
                    {"view": None, "axes": (0,) + axes, "wshape": wshape, "eps": eps, "acc": _acc(input)})
        if (running_mean is not None or running_var is not None) and x._data.dtype is _BF16 and \
                x._data.size > n * c and all(r is None or r._data.dtype is _BF16 for r in (running_mean, running_var)):
            # PyTorch: batch_norm updates the repeated (bfloat16) estimates, then their mean over the samples
            reps = [None if r is None else r.detach().repeat(n) for r in (running_mean, running_var)]
            _update_running_bf16(reps[0], reps[1], x, (0,) + axes, momentum)
            for running, rep in zip((running_mean, running_var), reps):
                if running is not None:
                    xp = NAMESPACES[type(rep._data)]
                    m = xp.mean(xp.cast(xp.reshape(rep._data, (n, c)), _F32), (0,), False)
                    xp.backend.copyto(running._data, xp.cast(m, _BF16))
                    running._vc[0] += 1
        elif running_mean is not None or running_var is not None:
            rs = (running_mean, running_var)
            _write_running(rs, compute(_running_instance, x, *rs, axes=(0,) + axes, n=n, c=c, momentum=momentum))
            for running in (running_mean, running_var):
                if running is not None:
                    running._vc[0] += 1   # PyTorch copies the result in (copy_), which counts a version
    else:
        rm = running_mean.repeat(n)
        rv = running_var.repeat(n)
        out = apply(batch_norm_eval_p, (x, w, b, rm, rv), {"wshape": wshape, "eps": eps, "acc": _acc(input)})
    return out.view(xs)


# ----- native_layer_norm, native_batch_norm, native_group_norm: ATen's forms, with the saved statistics ----
# PyTorch's forward kernels return the mean and 1/std they normalised with (its backward reads them). ember's fused
# primitives recompute what their rules need, so these return the primitive's output and the statistics as the
# forward computes them: the mean in float64 rounded once, 1/std from the same norm_xhat kernel.

def _stat_dtype(x: Tensor, params) -> object:
    """The statistics' dtype: the input's, or float32 for a float16/bfloat16 input with float32 parameters."""
    xd = x._data.dtype
    if (xd == _F16 or xd is _BF16) and any(p is not None and p._data.dtype == _F32 for p in params):
        return _F32
    return xd


def _mean_rstd(xp, x, view, axes, eps, acc, dt) -> tuple:
    """The raw mean and 1/std of ``x`` (viewed as ``view``) over ``axes``, kept dims, in dtype ``dt``."""
    xg = x if view is None else xp.reshape(x, view)
    mean = xp.cast(xp.mean(xp.cast(xg, _F64), axes, True), dt)
    return mean, xp.cast(_xhat(xp, x, view, axes, eps, acc)[1], dt)


@register()
@schema("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps)")
def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple:
    """``(layer_norm(...), mean, rstd)``; the statistics have the input's leading dims and 1 for each normalised
    dim, and no gradient (as PyTorch's)."""
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    x = input._data
    k = len(normalized_shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean, rstd = _mean_rstd(NAMESPACES[type(x)], x, None, axes, float(eps), _acc(input),
                            _stat_dtype(input, (weight, bias)))
    return out, make(mean), make(rstd)


@register()
@schema("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
        "bool training, float momentum, float eps)")
@quietly
def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float, eps: float) -> tuple:
    """``(batch_norm(...), save_mean, save_invstd)``: in training the batch's per-channel mean and 1/std (biased
    variance) and the running estimates updated in place; in evaluation two empty tensors. No gradient flows
    through the statistics (as in PyTorch)."""
    out = _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, False)
    x = input._data
    xp = NAMESPACES[type(x)]
    dt = _stat_dtype(input, (weight, bias, running_mean, running_var))
    c = x.shape[1]
    if training:
        mean, rstd = _mean_rstd(xp, x, None, (0,) + tuple(range(2, x.ndim)), float(eps), _acc(input), dt)
        return out, make(xp.reshape(mean, (c,))), make(xp.reshape(rstd, (c,)))
    return out, *(empty(0, dtype=D.from_numpy_dtype(dt), device=input.device) for _ in range(2))


# native_group_norm's mean and rstd are differentiable in PyTorch (one NativeGroupNormBackward0 for all three
# outputs): here one primitive each under that node name. view: (N, group, C // group * HxW); dt: their dtype.

def _gn_mean_forward(xp, x, w, b, view, eps, dt):
    return xp.cast(xp.mean(xp.cast(xp.reshape(x, view), _F64), (2,), False), dt)


def _gn_mean_vjp(xp, g, out, x, w, b, view, eps, dt):
    g = xp.expand(xp.reshape(g, view[:2] + (1,)), view)   # (the engine casts it to the input's dtype)
    return xp.reshape(g / view[2], x.shape)


def _gn_rstd_forward(xp, x, w, b, view, eps, acc, dt):
    return xp.cast(xp.reshape(_xhat(xp, x, view, (2,), eps, acc)[1], view[:2]), dt)


def _gn_rstd_vjp(xp, g, out, x, w, b, view, eps, acc, dt):
    # d rstd / dx = -rstd**3 (x - mean) / n = -rstd**2 xhat / n
    xh, rstd = _xhat(xp, x, view, (2,), eps, acc)
    g = xp.reshape(xp.cast(g, acc), view[:2] + (1,))
    return xp.reshape(g * (rstd * rstd) * xh * (-1.0 / view[2]), x.shape)


def _gn_rstd_jvp(xp, t, out, x, w, b, view, eps, acc, dt):
    xh, rstd = _xhat(xp, x, view, (2,), eps, acc)
    tg = xp.reshape(xp.cast(t, acc), view)
    r = xp.sum(xh * tg, (2,), True) * (rstd * rstd) * (-1.0 / view[2])
    return xp.cast(xp.reshape(r, view[:2]), dt)


def _gn_mean_jvp(xp, t, out, x, w, b, view, eps, dt):
    return _gn_mean_forward(xp, t, None, None, view, eps, dt)   # linear in x


def _no_grad_rule(*args, **params):
    return None   # no gradient reaches weight or bias from the statistics


# weight and bias are inputs without a gradient: the node has PyTorch's three edges
_NONE2 = (_no_grad_rule, _no_grad_rule)
group_norm_mean_p = defprim("native_group_norm_mean", _gn_mean_forward, node="NativeGroupNormBackward0",
                            vjp=(_gn_mean_vjp,) + _NONE2, jvp=(_gn_mean_jvp,) + _NONE2, saves=(0, 1),
                            saved_names=("input", "weight", "bias"))
group_norm_rstd_p = defprim("native_group_norm_rstd", _gn_rstd_forward, node="NativeGroupNormBackward0",
                            vjp=(_gn_rstd_vjp,) + _NONE2, jvp=(_gn_rstd_jvp,) + _NONE2, saves=(0, 1),
                            saved_names=("input", "weight", "bias"))


@register()
@schema("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int N, int C, int HxW, int group, float eps)")
def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int,
                      group: int, eps: float) -> tuple:
    """``(group_norm(...), mean, rstd)`` of ``input`` read as (N, C, HxW); the statistics are (N, group), and
    differentiable, as PyTorch's."""
    xs = input._data.shape
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    _check_groups(xs, C, group, weight, bias)
    if input._data.size != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  (Could this error message "
                           "be improved?  If so, please report an enhancement request to PyTorch.)")
    _check_floating(input, "GroupNormKernelImpl")
    _check_param_dtypes(input, (weight, bias), "group_norm")
    # an input not laid out as (N, C, ...) is read as (N, C, HxW), as PyTorch's kernel reads its memory
    x = input if len(xs) >= 2 and tuple(xs[:2]) == (N, C) else input.reshape((N, C, HxW))
    view = (N, group, C // group * HxW)
    eps = float(eps)
    out = apply(group_norm_p, (x, weight, bias),
                {"view": view, "axes": (2,), "wshape": _channel_shape(x), "eps": eps, "acc": _acc(input)})
    dt = _stat_dtype(input, (weight, bias))
    mean = apply(group_norm_mean_p, (x, weight, bias), {"view": view, "eps": eps, "dt": dt})
    rstd = apply(group_norm_rstd_p, (x, weight, bias), {"view": view, "eps": eps, "acc": _acc(input), "dt": dt})
    return (out if x is input else out.reshape(xs)), mean, rstd


# ----- rms_norm ------------------------------------------------------------------------------------------

@register(module=True, submodule=_F)
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x**2 over the last dims) + eps) * weight, composed as PyTorch's CPU graph is
    (float16 computes in float32; ``eps`` defaults to the machine epsilon of that dtype)."""
    op = "rms_norm"
    check_tensor(input, op)
    shape = _int_tuple(normalized_shape, op, "normalized_shape", 2)
    _optional_tensor(weight, op, "weight", 3)
    if eps is not None:
        eps = _float_arg(eps, op, "eps", 4)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if weight is not None and tuple(weight._data.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{_shape_list(weight._data.shape)} and normalized_shape = {_shape_list(shape)}")
    xs = input._data.shape
    k = len(shape)
    if len(xs) < k or tuple(xs[len(xs) - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={_shape_list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size{_shape_list(xs)}")
    if not input.dtype.is_complex:   # complex: PyTorch's same composition (z**2, not |z|**2)
        _check_floating(input, op)
    dtype = input.dtype
    x = input.float() if input._data.dtype == _F16 or input._data.dtype is _BF16 else input
    if eps is None:
        eps = D.finfo(x.dtype.to_real() if x.dtype.is_complex else x.dtype).eps
    dims = tuple(range(len(xs) - k, len(xs)))
    out = x * rsqrt(apply(add_scalar_p, (x.pow(2).mean(dims, keepdim=True), eps)))
    if weight is not None:
        out = out * weight
    return out if out.dtype == dtype else out.to(dtype)


# ----- local_response_norm ---------------------------------------------------------------------------------

@register(module=False, submodule=_F)
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x**2 over a window of ``size`` neighbouring channels) ** beta (the window
    padded with zeros, size // 2 before and (size - 1) // 2 after, and divided by ``size`` throughout)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"local_response_norm(): argument 'input' must be Tensor, not {type(input).__name__}")
    nd = input._data.ndim
    if nd < 3:
        # PyTorch's text, with the run of spaces its source's line continuation leaves in it
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {nd} dimensions)")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral):
        raise TypeError(f"local_response_norm(): argument 'size' must be int, not {type(size).__name__}")
    size = int(size)
    if size <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {size} kW: 1")
    if input.dtype.is_complex:   # PyTorch's window sums are average pools, which refuse complex
        kernel = "avg_pool2d" if nd == 3 else "avg_pool3d_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(input._data.dtype)}\'')
    if input._data.size == 0:
        return input
    if nd > 3 and input._data.dtype.itemsize == 2 and input.dtype.is_floating_point:
        # beyond 3-d PyTorch's window sums are avg_pool3d, which has no float16/bfloat16 kernel
        raise NotImplementedError(f'"avg_pool3d_out_frame" not implemented for \'{D.type_word(input._data.dtype)}\'')
    sq = input * input
    xs = input._data.shape
    before, after = size // 2, (size - 1) // 2
    parts = []
    if before:
        parts.append(sq.new_zeros((xs[0], before) + tuple(xs[2:])))
    parts.append(sq)
    if after:
        parts.append(sq.new_zeros((xs[0], after) + tuple(xs[2:])))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    c = xs[1]
    # the window sums: `size` shifted slices (a loop over the window, not over elements)
    div = padded[:, 0:c]
    for j in range(1, size):
        div = div + padded[:, j:j + c]
    div = (div / size * alpha + k).pow(beta)
    return input / div


# ----- distances: cosine_similarity, pairwise_distance, pdist ------------------------------------------------

def _common_float(x1: Tensor, x2: Tensor):
    from .._util import promote
    d = promote(x1, x2)
    if not d.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {D.type_word(d.np)}")
    return d


@register(module=True, submodule=_F)
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) over ``dim``, as PyTorch 2.x computes it: each input
    divided by its own norm first (no overflow of the product of norms); the gradient flows through the unclamped
    norm, as in PyTorch (``clamp_unrecorded_p``)."""
    op = "cosine_similarity"
    check_tensor(x1, op, "x1", 1)
    check_tensor(x2, op, "x2", 2)
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{op}(): argument 'dim' (position 3) must be int, not {type(dim).__name__}")
    eps = _float_arg(eps, op, "eps", 4)
    dtype = _common_float(x1, x2)
    if x1._data.shape != x2._data.shape:
        from .shape import broadcast_tensors
        x1, x2 = broadcast_tensors(x1, x2)
    if x1.dtype != dtype:
        x1 = x1.to(dtype)
    if x2.dtype != dtype:
        x2 = x2.to(dtype)
    from .reduction import vector_norm
    n1 = apply(clamp_unrecorded_p, (vector_norm(x1, 2, dim, True), eps))
    n2 = apply(clamp_unrecorded_p, (vector_norm(x2, 2, dim, True), eps))
    return ((x1 / n1) * (x2 / n2)).sum(dim)


_NORM1 = None


def _norm_backward1():
    # at::norm(Tensor, p, dim, keepdim)'s node (pairwise_distance calls it from C++; torch.norm from Python
    # records LinalgVectorNormBackward0): the same primitive under PyTorch's name for it
    global _NORM1
    if _NORM1 is None:
        from ..autograd.graph import node_class
        from ..autograd._primitive import PrimNode
        _NORM1 = node_class("NormBackward1", PrimNode)
    return _NORM1


@register(module=True, submodule=_F)
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim (PyTorch adds ``eps`` to the difference)."""
    op = "pairwise_distance"
    check_tensor(x1, op, "x1", 1)
    check_tensor(x2, op, "x2", 2)
    p = _float_arg(p, op, "p", 3)
    eps = _float_arg(eps, op, "eps", 4)
    from .reduction import norm_p
    d = apply(add_scalar_p, (x1 - x2, eps))
    nd = d._data.ndim
    dims = (nd - 1,) if nd else ()
    if (p < 0 or p == math.inf) and nd and d._data.shape[-1] == 0:
        name = "inf" if p == math.inf else f"{p:g}"
        raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {nd - 1}because "
                           "this dimension is empty and the operation does not have an identity")
    ordv = int(p) if p != math.inf and p == int(p) else p
    return apply(norm_p, (d,), {"ord": ordv, "dims": dims, "keepdim": keepdim}, _norm_backward1())


def _pdist_forward(xp, x, p):
    i, j = xp.row_pairs(x)
    return xp.vector_norm(xp.getitem(x, i) - xp.getitem(x, j), p, (1,), False)


def _pdist_vjp(xp, g, out, x, p):
    from .reduction import _norm_grad
    n = x.shape[0]
    if n < 2:
        return xp.zeros_like(x)
    i, j = xp.row_pairs(x)
    d = xp.getitem(x, i) - xp.getitem(x, j)
    # PyTorch's pdist backward takes every maximal entry of an inf-norm (no splitting of ties), as cdist's
    G = _norm_grad(xp, xp.unsqueeze(g, 1), d, p, xp.unsqueeze(out, 1), (1,), split_ties=False)
    if G is None:   # p = 0: the "norm" counts non-zeros, a zero gradient (PyTorch gives zeros, not None)
        return xp.zeros_like(x)
    return xp.index_put_zeros(G, (i,), x.shape) - xp.index_put_zeros(G, (j,), x.shape)


def _pdist_jvp(xp, t, out, x, p):
    from .reduction import _norm_tangent
    i, j = xp.row_pairs(x)
    d = xp.getitem(x, i) - xp.getitem(x, j)
    return _norm_tangent(xp, xp.getitem(t, i) - xp.getitem(t, j), d, p, out, (1,), False)


graph("row_pairs", lambda x: NAMESPACES[type(x._data)].row_pairs(x._data))   # raw index vectors
pdist_p = defprim("pdist", _pdist_forward, vjp=_pdist_vjp, jvp=_pdist_jvp, saves=(0,),
                  saves_out=True, saved_names=("self",))


@register(module=True, submodule=_F)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between the rows of a 2-d input, pairs (i < j) in row-major order."""
    check_tensor(input, "pdist")
    p = _float_arg(p, "pdist", "p", 2)
    if input._data.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input._data.ndim}D")
    if input._data.dtype.kind not in "fV":
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n, c = input._data.shape
    if (input._data.dtype == _F16 or input._data.dtype is _BF16) and n > 1 and c:
        # PyTorch's kernel has no reduced-precision loop; an input of one row (or none) or no columns skips it
        raise NotImplementedError(f"\"pdist\" not implemented for '{D.type_word(input._data.dtype)}'")
    ordv = int(p) if p != math.inf and p == int(p) else p
    return apply(pdist_p, (input,), {"p": ordv})


# ----- attention ---------------------------------------------------------------------------------------------

def _safe_softmax_forward(xp, x, dim, acc):
    """softmax along ``dim``, 0 in rows that are entirely -inf (PyTorch's _safe_softmax: a fully masked query
    attends to nothing rather than giving NaN)."""
    if 0 in x.shape:   # no keys (or no queries): nothing to normalise, and amax of an empty row is undefined
        return xp.zeros_like(x)
    xa = xp.cast(x, acc)
    m = xp.amax(xa, dim, True)
    dead = xp.isneginf(m)
    if not bool(xp.any(dead)):   # no fully masked row (the usual case): the same values without the selections
        e = xp.exp(xa - m)
        return xp.cast(e / xp.sum(e, dim, True), x.dtype)
    e = xp.exp(xa - xp.where(dead, 0.0, m))
    s = xp.sum(e, dim, True)
    out = xp.where(dead, 0.0, e / xp.where(dead, 1.0, s))
    return xp.cast(out, x.dtype)


def _safe_softmax_vjp(xp, g, out, x, dim, acc):
    # softmax's rule (the activations family's), in the accumulation dtype: masked rows have out = 0, so 0 there
    return softmax_p.vjps[0](xp, xp.cast(g, acc), xp.cast(out, acc), x, dim)


safe_softmax_p = defprim("_safe_softmax", _safe_softmax_forward, vjp=_safe_softmax_vjp,
                         jvp="elementwise", saves_out=True)


def _dropout_weights(attn: Tensor, p: float) -> Tensor:
    """PyTorch's CPU dropout: noise = bernoulli_(1 - p) / (1 - p) drawn from the generator, then input * noise."""
    from .creation import empty_like, zeros_like
    if p == 1.0:
        return attn * zeros_like(attn)
    noise = empty_like(attn).bernoulli_(1.0 - p)
    return attn * (noise / (1.0 - p))

_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
               "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
               "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _tname(t: Tensor) -> str:
    return _TYPE_NAMES.get(t._data.dtype.name, t._data.dtype.name)


def _flash_cpu_refusal(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float,
                       enable_gqa: bool) -> str | None:
    """Why PyTorch's CPU flash-attention kernel would not take these inputs (its checks in order, its
    warning text), or None when it would."""
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    dims = (q._data.ndim, k._data.ndim, v._data.ndim)
    if dims != (4, 4, 4):
        return (f"All fused kernels requires query, key and value to be 4 dimensional, but got Query dim: "
                f"{dims[0]}, Key dim: {dims[1]}, Value dim: {dims[2]} instead.")
    qs, ks, vs = (list(t._data.shape) for t in (q, k, v))
    if not qs[0] == ks[0] == vs[0]:
        return (f"For dense inputs, both fused kernels require query, key and value to have the same batch_size. "
                f"Query.sizes(): {qs}, Key.sizes(): {ks}, Value.sizes(): {vs} instead. To broadcast dense inputs, "
                f"try using unsqueeze and expand_to before passing them into the kernel.")
    if enable_gqa:
        if ks[1] != vs[1]:
            return (f"Both fused kernels require key and value to have the same num_heads and batch_size but got: "
                    f"Key sizes: {ks}, Value sizes: {vs}, Query sizes: {qs} instead.")
        if qs[1] % ks[1]:
            return (f"FlashAttentionV2 only supports grouped query attention, where the number of heads in "
                    f"key/value must divide number of heads in query.Got input Key sizes(): {ks[1]}, "
                    f"Value sizes(): {vs[1]}, Query sizes(): {qs[1]} instead.")
    elif not qs[1] == ks[1] == vs[1]:
        return (f"For dense input, both fused kernels require query, key and value to have the same num_heads. "
                f"Query.sizes(): {qs}, Key sizes(): {ks}, Value sizes(): {vs} instead. To broadcast dense inputs, "
                f"try using unsqueeze and expand_to before passing them into the kernel.")
    if attn_mask is not None:
        ms = attn_mask._data.shape
        fits = (not attn_mask.requires_grad and ms[-2] in (qs[2], 1) and ms[-1] in (ks[2], 1)
                and (len(ms) == 2 or (len(ms) == 4 and ms[0] in (1, qs[0]) and ms[1] in (1, qs[1]))))
        if not fits:
            return ("" if attn_mask.requires_grad else
                    "Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, 1}); "
                    "4d - ({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})")
    if qs[-1] != ks[-1] or qs[-1] != vs[-1]:
        return (f"Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): {qs[-1]}, "
                f"Key.size(-1): {ks[-1]}, Value.size(-1): {vs[-1]} instead.")
    if qs[-2] == 0 or ks[-2] == 0:
        return "All fused kernels do not support zero seq_len_q or seq_len_kv."
    strides = [t.stride(-1) for t in (q, k, v)]
    if strides != [1, 1, 1] or (attn_mask is not None and attn_mask.stride(-1) != 1):
        tail = f", Attn_mask.stride(-1): {attn_mask.stride(-1)}" if attn_mask is not None else ""
        return (f"All fused kernels require the last dimension of the input to have stride 1. Got Query.stride(-1): "
                f"{strides[0]}, Key.stride(-1): {strides[1]}, Value.stride(-1): {strides[2]}{tail}")
    if q.dtype not in (D.float32, D.float64, D.bfloat16, D.float16):
        return (f"Expected query, key and value to all be of dtype: {{Float, Double, BFloat16, Half}}. Got Query "
                f"dtype: {_tname(q)}, Key dtype: {_tname(k)}, and Value dtype: {_tname(v)} instead.")
    return None


def _sdp_without_math(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, dropout_p: float,
                      enable_gqa: bool) -> None:
    """With the math backend switched off (``nn.attention.sdpa_kernel``), refuse what PyTorch's CPU dispatch
    finds no kernel for: nothing when flash is off too, else what its flash kernel does not take (warning why).
    ember then computes with its math kernel anyway: the values are the math path's."""
    import warnings
    if not _sdp_enabled["flash"]:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    reason = _flash_cpu_refusal(q, k, v, attn_mask, dropout_p, enable_gqa)
    if reason is not None:
        warnings.warn("Flash attention kernel not used because:", stacklevel=3)
        if reason:
            warnings.warn(reason, stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution.")


@register(module=False, submodule=_F)
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(Q K^T * scale + mask) V, PyTorch's math path: Q and K each scaled by sqrt(scale); a bool mask
    keeps the True positions; ``is_causal`` keeps the lower triangle (aligned top-left); a fully masked query
    row gives zeros (PyTorch's safe softmax); ``dropout_p`` drops attention weights with PyTorch's generator
    stream (``bernoulli_(1 - p)``); ``enable_gqa`` repeats the key/value heads (dim -3) to the number of query
    heads."""
    op = "scaled_dot_product_attention"
    check_tensor(query, op, "query", 1)
    check_tensor(key, op, "key", 2)
    check_tensor(value, op, "value", 3)
    _optional_tensor(attn_mask, op, "attn_mask", 4)
    dropout_p = _float_arg(dropout_p, op, "dropout_p", 5)
    if scale is not None:
        scale = _float_arg(scale, op, "scale", 7)
    q, k, v = query, key, value
    if q._data.ndim < 2 or k._data.ndim < 2 or v._data.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{q._data.ndim} key.dim: {k._data.ndim} and value.dim: {v._data.ndim} instead.")
    if not (q._data.dtype == k._data.dtype == v._data.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: {_tname(q)} "
                           f"key.dtype: {_tname(k)} and value.dtype: {_tname(v)} instead.")
    if attn_mask is not None and attn_mask._data.dtype.kind != "b" and attn_mask._data.dtype != q._data.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_tname(attn_mask)} and  query.dtype: {_tname(q)} instead.")
    if not _sdp_enabled["math"]:
        _sdp_without_math(q, k, v, attn_mask, dropout_p, enable_gqa)
    if q._data.dtype.kind not in "fcV":   # complex: refused at the softmax, below
        # PyTorch's math path meets the integer query at its first float product: mm's check for 2-d
        # inputs, bmm's scalar-type check otherwise
        if q._data.ndim == 2:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: float != {_tname(q)}")
        raise RuntimeError(f"expected scalar type Float but found {D.type_word(q._data.dtype)}")
    if dropout_p > 1.0:   # (a negative p means no dropout, as in PyTorch)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    from .linalg import matmul
    from .shape import repeat_interleave
    L, S = q._data.shape[-2], k._data.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(q._data.shape[-1]) if q._data.shape[-1] else math.inf
    if enable_gqa and q._data.ndim >= 3 and k._data.ndim >= 3 and q._data.shape[-3] != k._data.shape[-3]:
        hq, hk, hv = q._data.shape[-3], k._data.shape[-3], v._data.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        k = repeat_interleave(k, hq // hk, -3)
        v = repeat_interleave(v, hq // hv, -3)
    if is_causal and attn_mask is not None:
        # (PyTorch 2.13's fused CPU kernel, for float32 inputs, applies both; its math path refuses)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    if q.dtype.is_complex:   # PyTorch's math path computes up to its softmax, which has no complex kernel
        raise NotImplementedError(f'"softmax_lastdim_kernel_impl" not implemented for '
                                  f'\'{D.type_word(q._data.dtype)}\'')
    sf = math.sqrt(abs(scale))
    attn = matmul(q * (-sf if scale < 0 else sf), k.transpose(-2, -1) * sf)
    mask = attn_mask
    if is_causal:
        mask = q.new_ones((L, S), dtype=D.bool).tril()
    if mask is not None:
        if mask._data.dtype.kind == "b":
            mask = q.new_zeros(mask._data.shape).masked_fill(~mask, -math.inf)
        attn = attn + mask
    attn = apply(safe_softmax_p, (attn,), {"dim": -1, "acc": _acc(attn)})
    if dropout_p > 0.0:
        attn = _dropout_weights(attn, dropout_p)
    return matmul(attn, v)


# ----- multi_head_attention_forward ----------------------------------------------------------------------------
# As far as nn.MultiheadAttention needs it, following torch/nn/functional.py step by step: inputs (L, N, E) or
# unbatched (L, E), packed or separate in-projections, bias_k/bias_v, add_zero_attn, key_padding_mask and
# attn_mask (bool or float), need_weights (the explicit softmax path, whose weights are returned, averaged over
# the heads or not) or scaled_dot_product_attention, dropout in training. PyTorch raises AssertionError for
# shape misuse here, and so does ember.

def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    # x @ w.T + b as PyTorch's linear records it for a 2-d x (addmm); F.linear belongs to another family
    from .linalg import addmm, matmul
    if b is not None and x.dim() == 2:
        return addmm(b, x, w.t())
    y = matmul(x, w.t())
    return y if b is None else y + b


def _in_projection_packed(q: Tensor, k: Tensor, v: Tensor, w: Tensor, b: Tensor | None):
    """q, k and v through the packed (3E, E) in-projection as PyTorch's ``_in_projection_packed``: F.linear (one
    GEMM of the folded rows) with the whole weight for self-attention, with its key/value rows for
    encoder-decoder attention (key is value), a third of it for each otherwise."""
    from .nn_activation import linear
    E = q.shape[-1]
    if k is v:
        if q is k:
            # PyTorch copies the (..., 3E) product into (3, ..., E) and selects; split views hold the same
            # values and cost a third of it (a SelectBackward0 writes its gradient into zeros of the whole)
            return linear(q, w, b).chunk(3, -1)
        w_q, w_kv = w.split([E, E * 2])
        b_q = b_kv = None
        if b is not None:
            b_q, b_kv = b.split([E, E * 2])
        k, v = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), k, v
    w_q, w_k, w_v = w.chunk(3)
    b_q = b_k = b_v = None
    if b is not None:
        b_q, b_k, b_v = b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q: Tensor, k: Tensor, v: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, b_q: Tensor | None,
                   b_k: Tensor | None, b_v: Tensor | None):
    """q, k and v through separate in-projections (PyTorch's ``_in_projection``: its shape checks, F.linear)."""
    from .nn_activation import linear
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for w, want, name in ((w_q, (Eq, Eq), "query"), (w_k, (Eq, Ek), "key"), (w_v, (Eq, Ev), "value")):
        if tuple(w.shape) != want:
            raise AssertionError(f"expecting {name} weights shape of {want}, but got {w.shape}")
    for bb, name in ((b_q, "query"), (b_k, "key"), (b_v, "value")):
        if bb is not None and tuple(bb.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {bb.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    qd, kd, vd = query.dim(), key.dim(), value.dim()
    if qd == 3:
        if kd != 3 or vd != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found {kd}-D "
                                 f"and {vd}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if qd == 2:
        if kd != 2 or vd != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{kd}-D and {vd}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            want = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != want:
                raise AssertionError(f"Expected `attn_mask` shape to be {want} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {qd}-D query tensor")


def _canonical_mask(mask, name: str, dtype):
    """A bool mask as a float one (-inf where True); float masks pass unchanged."""
    if mask is None:
        return None
    if mask._data.dtype.kind not in "bfV":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if mask._data.dtype.kind == "b":
        return mask.new_zeros(mask._data.shape, dtype=dtype).masked_fill(mask, -math.inf)
    return mask


def _pad_last(mask: Tensor) -> Tensor:
    # one more key position (bias_k or the zero attention), never masked
    return cat([mask, mask.new_zeros(tuple(mask.shape[:-1]) + (1,))], -1)


@register(module=False, submodule=_F)
def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention over (L, N, E) inputs (or unbatched (L, E)): returns ``(output, weights)``, the
    weights ``None`` unless ``need_weights`` (then (N, L, S), or (N, heads, L, S) without averaging)."""
    for t, name in ((query, "query"), (key, "key"), (value, "value")):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_head_attention_forward(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    from .linalg.products import baddbmm, bmm
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None   # scaled_dot_product_attention makes the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for w, name in ((q_proj_weight, "q_proj_weight"), (k_proj_weight, "k_proj_weight"),
                        (v_proj_weight, "v_proj_weight")):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    if not need_weights and static_k is None and static_v is None and not add_zero_attn:
        # straight to scaled_dot_product_attention's (N, heads, L, head_dim): one view each, where PyTorch's
        # reshape, transpose and reshape give the same strides (the same arrays reach every kernel, both ways)
        # (view: splitting the last dim views the in-projection's split views too, where reshape would name
        # its node UnsafeViewBackward0 for a non-contiguous input)
        q = q.view(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
        k = k.view(k.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)
        v = v.view(v.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)
        src_len = k.shape[2]
        return _mha_sdpa(q, k, v, attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, embed_dim,
                         training, dropout_p, is_causal, out_proj_weight, out_proj_bias, is_batched)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    for which, static in (("k", static_k), ("v", static_v)):
        if static is not None:
            if static.shape[0] != bsz * num_heads:
                raise AssertionError(f"expecting static_{which}.size(0) of {bsz * num_heads}, but got "
                                     f"{static.shape[0]}")
            if static.shape[2] != head_dim:
                raise AssertionError(f"expecting static_{which}.size(2) of {head_dim}, but got {static.shape[2]}")
    k = static_k if static_k is not None else k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        k = cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if not need_weights:
        q = q.reshape(bsz, num_heads, tgt_len, head_dim)
        k = k.reshape(bsz, num_heads, src_len, head_dim)
        v = v.reshape(bsz, num_heads, src_len, head_dim)
        return _mha_sdpa(q, k, v, attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, embed_dim,
                         training, dropout_p, is_causal, out_proj_weight, out_proj_bias, is_batched)
    attn_mask = _merge_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    if is_causal and attn_mask is None:
        raise AssertionError("FIXME: is_causal not implemented for need_weights")
    E = q.shape[-1]
    # PyTorch's ops (baddbmm with a mask): autocast runs them in its dtype, the float mask cast too
    q_scaled = q * math.sqrt(1.0 / float(E))
    weights = (bmm(q_scaled, k.transpose(-2, -1)) if attn_mask is None else
               baddbmm(attn_mask, q_scaled, k.transpose(-2, -1)))
    weights = apply(softmax_p, (weights,), {"dim": -1})   # the activations family's SoftmaxBackward0
    if dropout_p > 0.0:
        weights = _dropout_weights(weights, dropout_p)
    out = bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    weights = weights.view(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        out, weights = out.squeeze(1), weights.squeeze(0)
    return out, weights


def _merge_padding(attn_mask, key_padding_mask, bsz: int, num_heads: int, src_len: int):
    """attn_mask with the key padding mask added in, as (N * heads, 1, S) rows (either may be None)."""
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    return attn_mask


def _mha_sdpa(q, k, v, attn_mask, key_padding_mask, bsz: int, num_heads: int, tgt_len: int, src_len: int,
              embed_dim: int, training: bool, dropout_p: float, is_causal: bool, out_proj_weight, out_proj_bias,
              is_batched: bool):
    """multi_head_attention_forward's end without weights: the masks merged, scaled_dot_product_attention over
    the (N, heads, L, head_dim) q/k/v, the heads joined and projected out."""
    attn_mask = _merge_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name(_batching.dims_rule("dim"), "_safe_softmax")


def _front(p: Tensor, bd, size: int) -> Tensor:
    """A physical input with its batch dim first, or an unbatched one expanded over the batch (a view)."""
    return _batching._moved(p, bd) if bd is not None else p.unsqueeze(0).expand((size,) + tuple(p._data.shape))


def _per_example_affine(out: Tensor, w, bw, b, bb, size: int, view) -> Tensor:
    """``out * weight + bias`` with a weight or bias of its own for each example (``view``: the shape each
    example's parameter takes to broadcast against the batch-first output), as PyTorch's rules apply them."""
    if w is not None:
        out = out * _front(w, bw, size).reshape(view)
    if b is not None:
        out = out + _front(b, bb, size).reshape(view)
    return out


def _layer_norm_rule(call, args, bdims, params, size):
    """Layer norm normalises trailing dims: the batch dim goes first and the axes shift by one. A weight or bias
    mapped over is applied after the normalisation."""
    (x, w, b), (bx, bw, bb) = args, bdims
    X = _front(x, bx, size)
    new = dict(params)
    new["axes"] = tuple(a + 1 for a in params["axes"])
    if bw is None and bb is None:
        return call([X, w, b], new), 0
    k = len(params["axes"])
    lead = X._data.ndim - 1 - k
    shape = tuple(X._data.shape[X._data.ndim - k:])
    return _per_example_affine(call([X, None, None], new), w, bw, b, bb, size, (size,) + (1,) * lead + shape), 0


def _group_fold(call, args, bdims, params, size):
    """Group norm's primitives (the output and the statistics): the vmap batch folded into N, the result viewed
    back as (B, N, ...). A weight or bias mapped over: the output's affine part applied after."""
    (x, w, b), (bx, bw, bb) = args, bdims
    X = _front(x, bx, size)
    s = tuple(X._data.shape)
    n, g, r = params["view"]
    new = dict(params)
    new["view"] = (size * n, g, r)
    X = X.reshape((size * s[1],) + s[2:])
    if bw is None and bb is None:
        out = call([X, w, b], new)
    else:
        out = call([X, None, None], new)
    out = out.reshape((size, s[1]) + tuple(out._data.shape[1:]))
    if (bw is None and bb is None) or "wshape" not in params:
        return out, 0
    return _per_example_affine(out, w, bw, b, bb, size, (size, 1, s[2]) + (1,) * (len(s) - 3)), 0


def _bn_param(p, bd, size: int):
    return None if p is None else _front(p, bd, size).reshape((-1,))


def _batch_norm_rule(call, args, bdims, params, size):
    """Batch norm (training, and evaluation with a statistic or parameter mapped over): each example's channels
    are channels of their own, (B, N, C, ...) -> (N, B*C, ...), the parameters (B*C); the result comes back as
    (N, B, C, ...) with the batch dim 1. Evaluation with shared parameters broadcasts them as they are."""
    x, bx = args[0], bdims[0]
    if "axes" not in params and all(bd is None for bd in bdims[1:]):
        return call([_front(x, bx, size)] + list(args[1:]), params), 0
    X = _front(x, bx, size)
    s = tuple(X._data.shape)
    X = X.transpose(0, 1).reshape((s[1], size * s[2]) + s[3:])
    new = dict(params)
    new["wshape"] = (size * s[2],) + tuple(params["wshape"][1:])
    out = call([X] + [_bn_param(p, bd, size) for p, bd in zip(args[1:], bdims[1:])], new)
    return out.reshape((s[1], size, s[2]) + s[3:]), 1


_batching.batching(_layer_norm_rule, layer_norm_p)
_batching.batching(_group_fold, group_norm_p, group_norm_mean_p, group_norm_rstd_p)
_batching.batching(_batch_norm_rule, batch_norm_p, batch_norm_eval_p)
_batching.by_name("fallback", "pdist", why="takes one (N, M) matrix, with no batch dims")


# ----- vmap: whole functions whose wrappers read values (the running statistics' update, the statistics) --------
_BN_UNBATCHED = ("Batch norm got a batched tensor as input while the running_mean or running_var, which will be "
                 "updated in place, were not batched.\nIf you are using a module and do not need eval mode, please "
                 "set `track_running_stats` to be False.If you are using a prebuilt module and do not need eval "
                 "mode, please see the functorch website for resources on how to patch your module to work with vmap")


def _bn_public(orig, name, bound, level, size):
    """batch_norm and native_batch_norm with their statistics: each example's channels are channels of their own
    ((B, N, C, ...) -> (N, B*C, ...), as the primitives' rule); in training the running statistics must be mapped
    over too (each example updates its own, as PyTorch requires), and are updated through the folded copy."""
    a = bound.arguments
    stats = a["training"] and (a["running_mean"] is not None or a["running_var"] is not None)
    if name != "native_batch_norm" and not stats:
        return orig(*bound.args, **bound.kwargs)   # the primitives' rules batch it
    x = a["input"]
    if stats and not all(r is None or _vmap_nn.at(r, level) for r in (a["running_mean"], a["running_var"])):
        if _vmap_nn.at(x, level):
            raise RuntimeError(_BN_UNBATCHED)
        # only the weight or bias mapped over: one normalisation (one update), then each example's affine part
        w, b = a["weight"], a["bias"]
        a["weight"] = a["bias"] = None
        res = _vmap_nn.again(orig, name, bound.args, bound.kwargs)
        main = res[0] if name == "native_batch_norm" else res
        view = (-1,) + (1,) * (main.ndim - 2)
        if w is not None:
            main = main * w.reshape(view)
        if b is not None:
            main = main + b.reshape(view)
        return (main,) + tuple(res[1:]) if name == "native_batch_norm" else main
    if not isinstance(x, Tensor) or x.ndim < 2:
        return NotImplemented
    X = _vmap_nn.front(x, level, size)
    s = tuple(X.shape)
    a["input"] = X.transpose(0, 1).reshape((s[1], size * s[2]) + s[3:])
    for k in ("weight", "bias"):
        if isinstance(a[k], Tensor):
            a[k] = _vmap_nn.front(a[k], level, size).reshape((-1,))
    back = []
    for k in ("running_mean", "running_var"):
        r = a[k]
        if isinstance(r, Tensor):
            p = _vmap_nn.front(r, level, size)
            a[k] = p.reshape((-1,)).clone() if stats else p.reshape((-1,))
            back.append((p, a[k]))
    res = _vmap_nn.again(orig, name, bound.args, bound.kwargs)
    if stats:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            for p, folded in back:   # the updated statistics into each example's own
                p.copy_(folded.reshape(tuple(p.shape)))
    main = res[0] if name == "native_batch_norm" else res
    out = _batching.wrap(main.reshape((s[1], size, s[2]) + s[3:]), 1, level)
    if name != "native_batch_norm":
        return out
    extra = tuple(_batching.wrap(_batching.rows(t, size) if t.numel() else t.unsqueeze(0).expand((size, 0)), 0, level)
                  for t in res[1:])
    return (out,) + extra


_vmap_nn.public_rule(_bn_public, "batch_norm", "native_batch_norm")
# native_layer_norm computes its statistics from the input's values: the batch dim first (a weight or bias mapped
# over: per example)
_vmap_nn.public_rule(_vmap_nn.folding(lambda name, bound, rank: False), "native_layer_norm")
