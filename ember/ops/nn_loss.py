"""The op table, torch.nn.functional: losses.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_loss.py``. Where PyTorch computes a loss with one fused kernel (``MseLossBackward0``,
``NllLossBackward0``, ...) it is one primitive here, with the reduction inside it and VJP rules written
against ``xp`` (so double backward works); where PyTorch composes a loss from other ops in Python or in
ATen (l1_loss, cross_entropy with class probabilities, gaussian_nll_loss, ...), it is composed from
ember's ops the same way, so ``grad_fn`` and the graph below it are PyTorch's.
"""
from __future__ import annotations

from ..autograd import _batching
from . import _vmap_nn

import math
import sys
import warnings

from .. import _dtype as D
from .._origin import internal
from .._device import NAMESPACES
from .._tensor import Tensor, make, wrap_dim
from ..autograd import grad_mode as _gm
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, apply, apply_saving, broadcast_error, defprim, graph_ns
from ._registry import graph, register
from .shape import _broadcast_shape
from .._util import bf16_in_float32, check_tensor, holds, promote
from .elementwise import add_scalar_p, clamp_unrecorded_p, div_scalar_p, is_int, mul_scalar_p
from .nn_activation import log_sigmoid_p, log_softmax_p
from .creation import full

_F = dict(module=False, submodule="nn.functional")


# ----- reductions: PyTorch's names, the legacy arguments --------------------------------------------

def _warn(message: str) -> None:
    """A UserWarning attributed to the user's line (the first frame outside ember's machinery)."""
    f, level = sys._getframe(1), 2
    while f is not None and internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _legacy_reduction(size_average, reduce) -> str:
    """torch.nn._reduction.legacy_get_string, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    _warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.")
    return ret


def _reduction(size_average, reduce, reduction) -> str:
    """The reduction a loss uses: the legacy pair if either is given, else ``reduction`` checked as
    torch.nn._reduction.get_enum does (ValueError for an unknown string)."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return _check_reduction(reduction)


def _check_reduction(reduction) -> str:
    if reduction == "elementwise_mean":
        _warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(xp, loss, reduction):
    if reduction == "mean":
        return xp.mean(loss)
    if reduction == "sum":
        return xp.sum(loss)
    return loss


def _unreduce(xp, g, shape, reduction):
    """The gradient of the reduction: ``g`` spread back over the elementwise loss of ``shape``."""
    if reduction == "none":
        return g
    if reduction == "mean":
        g = g / max(1, math.prod(shape))
    return xp.expand(g, shape)


def _size(shape) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _dims(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _no_grad_weight(weight, fn: str) -> None:
    if weight is not None and weight.requires_grad and _gm._state.enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument 'weight'. This "
                           "input cannot have requires_grad True.")


def _check_float(input: Tensor, kernel: str, half: bool = True) -> None:
    """Refuse a dtype the kernel has no loop for: integral and bool, and float16/bfloat16 where ``half`` is False (the
    kernels PyTorch dispatches over float32/float64 only: multi_margin_loss, multilabel_margin_loss, ctc_loss)."""
    dt = input._data.dtype
    if dt.kind not in "fV" or (not half and (dt == _HALF or dt is D.bfloat16.np)):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt)}\'')


# ----- Tensor-Scalar arithmetic as ATen's composites call it (mul.Scalar, div.Scalar: elementwise family) -----
# PyTorch's C++ composites (cross_entropy's label smoothing, ...) multiply by a Scalar: MulBackward1 /
# DivBackward1, where Python's ``tensor * 0.5`` records MulBackward0.

def _mul_s(a: Tensor, s) -> Tensor:
    return apply(mul_scalar_p, (a, s))


def _div_s(a: Tensor, s) -> Tensor:
    return apply(div_scalar_p, (a, s))


# ----- log_softmax: the activations family's primitive (cross_entropy's grad_fn chain is
# NllLossBackward0 <- LogSoftmaxBackward0, as in PyTorch) -----------------------------------------

def _log_softmax(input: Tensor, dim: int) -> Tensor:
    dim = wrap_dim(dim, input._data.ndim, "log_softmax")
    if input._data.dtype.kind not in "fV":
        kernel = "log_softmax_lastdim_kernel_impl" if dim == input._data.ndim - 1 or input._data.ndim == 0 \
            else "log_softmax_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(input._data.dtype)}\'')
    return apply(log_softmax_p, (input,), {"dim": dim})


# ----- nll_loss ------------------------------------------------------------------------------------------

def _nll_fwd(xp, a, target, weight, reduction, ignore_index):
    return xp.nll_loss_forward(a, target, weight, reduction, ignore_index)


# -x[n, target[n]] * w is linear in x: the JVP is the loss of the tangent; the VJP scatters g (its own VJP,
# for double backward, is the loss again). The input is saved, as PyTorch's (its version is checked), and the
# first derivative's node (NllLossBackwardBackward0) has an edge to it, with a zero gradient, as PyTorch's.
nll_p = defprim("nll_loss", _nll_fwd,
                vjp=lambda xp, g, out, a, target, weight, reduction, ignore_index:
                    xp.nll_loss_backward(g, a, target, weight, reduction, ignore_index),
                jvp="linear", saves=(0,), saved_names=("self",))
nll_backward_p = defprim(
    "nll_loss_backward",
    lambda xp, g, a, target, weight, reduction, ignore_index:
        xp.nll_loss_backward(g, a, target, weight, reduction, ignore_index),
    vjp=(lambda xp, gg, out, g, a, target, weight, reduction, ignore_index:
         xp.nll_loss_forward(gg, target, weight, reduction, ignore_index),
         lambda xp, gg, out, g, a, target, weight, reduction, ignore_index: xp.zeros_like(gg)),
    jvp="linear", saved_names=("grad_output", "self"))
_NLL2D = node_class("NllLoss2DBackward0", PrimNode)
graph("nll_loss_forward", lambda a, target, weight, reduction, ignore_index: apply(
    nll_p, (a,), {"target": target, "weight": weight, "reduction": reduction, "ignore_index": ignore_index}))
graph("nll_loss_backward", lambda g, a, target, weight, reduction, ignore_index: apply(
    nll_backward_p, (g, a), {"target": target, "weight": weight, "reduction": reduction,
                             "ignore_index": ignore_index}))


def _nll_weight(weight, input: Tensor, n_classes: int, fn: str, prefix: str = ""):
    if weight is None:
        return None
    check_tensor(weight, fn, "weight", 3)
    if weight._data.ndim != 1 or weight._data.size != n_classes:
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {_dims(weight._data.shape)}")
    return weight


def _nll_apply(input: Tensor, target: Tensor, weight, reduction: str, ignore_index: int, node=None) -> Tensor:
    """nll_loss (1-d/2-d input) or nll_loss2d (4-d): the checks of PyTorch's kernel, then the primitive."""
    x, t = input._data, target._data
    n_classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    if x.ndim == 4:
        if t.ndim != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got targets of "
                               f"dimension: {t.ndim}")
        if (x.shape[0], x.shape[2], x.shape[3]) != t.shape:
            raise RuntimeError(f"size mismatch (got input: {_dims(x.shape)} , target: {_dims(t.shape)}")
    elif t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if t.dtype not in (D.int64.np, D.uint8.np):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {D.type_word(t.dtype)}")
    _check_float(input, "nll_loss_out_frame" if x.ndim < 4 else "nll_loss2d_out_frame")
    weight = _nll_weight(weight, input, n_classes, "nll_loss")
    if weight is not None and weight._data.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {D.type_word(x.dtype)} but found {D.type_word(weight._data.dtype)}")
    _no_grad_weight(weight, "nll_loss_forward" if x.ndim < 4 else "nll_loss2d_forward")
    xp = NAMESPACES[type(x)]
    # a Byte target compared as int64: a negative ignore_index is out of uint8's range (the standard refuses it)
    tw = t if t.dtype == D.int64.np else xp.cast(t, D.int64.np)
    def in_bounds(tw) -> bool:   # (ignored targets may be anything)
        bad = (tw < 0) | (tw >= n_classes)
        return not xp.any(bad) or not xp.any((tw != ignore_index) & bad)
    if not holds(in_bounds, tw):
        bad = (tw != ignore_index) & ((tw < 0) | (tw >= n_classes))
        raise IndexError(f"Target {int(tw[bad][0])} is out of bounds.")
    if x.ndim == 1 and t.ndim == 1:   # PyTorch takes the one target of a 1-element batch
        if t.size != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.size}")
        t = t.reshape(())
    params = {"target": t, "weight": None if weight is None else weight._data, "reduction": reduction,
              "ignore_index": ignore_index}
    # the target and weight are saved (their versions checked at backward), as PyTorch's node saves them
    return apply_saving(nll_p, (input,), params, node, (target,) if weight is None else (target, weight))


def _nll_loss_nd(input: Tensor, target: Tensor, weight, reduction: str, ignore_index: int) -> Tensor:
    """PyTorch's nll_loss_nd: (C), (N, C) -> nll_loss; (N, C, H, W) -> nll_loss2d; other K-dimensional
    inputs are viewed as (N, C, 1, -1) for nll_loss2d, and the unreduced loss viewed back."""
    x, t = input._data, target._data
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    if x.ndim != 1 and (t.ndim == 0 or x.shape[0] != t.shape[0]):
        got = t.shape[0] if t.ndim else 1
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({got}).")
    if x.ndim <= 2:
        return _nll_apply(input, target, weight, reduction, ignore_index)
    if x.ndim == 4:
        return _nll_apply(input, target, weight, reduction, ignore_index, _NLL2D)
    n, c = x.shape[0], x.shape[1]
    out_size = (n,) + tuple(x.shape[2:])
    if tuple(t.shape[1:]) != tuple(x.shape[2:]):
        raise RuntimeError(f"Expected target size {_dims(out_size)}, got {_dims(t.shape)}")
    input = input.contiguous().view(n, c, 1, -1) if x.size > 0 else input.contiguous().view(n, c, 0, 0)
    target = target.contiguous().view(n, 1, -1) if t.size > 0 else target.contiguous().view(n, 0, 0)
    out = _nll_apply(input, target, weight, reduction, ignore_index, _NLL2D)
    return out if reduction != "none" else out.view(out_size)


@register(**_F)
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
             ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The negative log likelihood loss: ``-input[n, target[n], ...] * weight[target[n]]``, reduced."""
    check_tensor(input, "nll_loss_nd", "input", 1)
    check_tensor(target, "nll_loss_nd", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    return _nll_loss_nd(input, target, weight, reduction, int(ignore_index))


# ----- cross_entropy -------------------------------------------------------------------------------------

def _class_shape(ndim: int, n_classes: int, class_dim: int) -> tuple:
    return tuple(n_classes if i == class_dim else 1 for i in range(ndim))


def _ce_prob_target(input: Tensor, target: Tensor, weight, reduction: str, label_smoothing: float) -> Tensor:
    """Class probabilities: -(log_softmax(input) * target [* weight]) summed over the classes (PyTorch's
    composite, so the graph is its Neg/Sum/Mul nodes)."""
    class_dim = 0 if input._data.ndim == 1 else 1
    n_classes = input._data.shape[class_dim]
    if weight is not None:
        check_tensor(weight, "cross_entropy_loss", "weight", 3)
        if weight._data.ndim != 1 or weight._data.size != n_classes:
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes "
                               f"or no classes but got weight tensor of shape: {_dims(weight._data.shape)}")
    logp = _log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        w = weight.view(*_class_shape(logp.ndim, n_classes, 1)) if logp.ndim > 1 else weight
        prod = prod * w
    if reduction == "mean":
        if input._data.size == 0:
            return -prod.sum().fill_(math.nan)
        return _div_s(-prod.sum(), input._data.size // n_classes)
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum(class_dim)


def _ce_label_smoothing(input: Tensor, target: Tensor, weight, reduction: str, ignore_index: int,
                        label_smoothing: float) -> Tensor:
    """Class indices with label smoothing: (1 - s) * nll + s / C * (the loss against uniform targets)."""
    class_dim = 0 if input._data.ndim == 1 else 1
    logp = _log_softmax(input, class_dim)
    nll = _nll_loss_nd(logp, target, weight, reduction, ignore_index)
    n_classes = logp._data.shape[class_dim]
    if weight is not None:
        smooth = -(logp * weight.view(*_class_shape(logp.ndim, n_classes, class_dim))).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    ignore_mask = target == ignore_index
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        if weight is not None:
            ret = smooth.sum() / weight.gather(0, target.masked_select(~ignore_mask).flatten()).sum()
        else:
            ret = smooth.sum() / (~ignore_mask).sum()
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return _mul_s(nll, 1 - label_smoothing) + _mul_s(ret, label_smoothing / n_classes)


@register(**_F)
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: bool | None = None,
                  ignore_index: int = -100, reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """nll_loss(log_softmax(input, class dim), target) for class indices; for class probabilities (target of
    the input's shape) -sum(target * log_softmax(input)); optional label smoothing. Stable at any magnitude."""
    check_tensor(input, "cross_entropy_loss", "input", 1)
    check_tensor(target, "cross_entropy_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    ignore_index = int(ignore_index)
    label_smoothing = float(label_smoothing)
    if input._data.shape == target._data.shape:
        if target._data.dtype.kind not in "fV":
            raise RuntimeError("Expected floating point type for target with class probabilities, got "
                               f"{D.type_word(target._data.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _ce_prob_target(input, target, weight, reduction, label_smoothing)
    if weight is not None:
        check_tensor(weight, "cross_entropy_loss", "weight", 3)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _ce_label_smoothing(input, target, weight, reduction, ignore_index, label_smoothing)
    class_dim = 0 if input._data.ndim == 1 else 1
    return _nll_loss_nd(_log_softmax(input, class_dim), target, weight, reduction, ignore_index)


# ----- pointwise losses: one fused primitive each (reduction inside), as PyTorch's kernels ---------------------

def _const(xp, arr):
    """A constant array (a weight) as the namespace's operand: itself on raw arrays, a tensor under
    create_graph / forward mode (where the rules run on Tensors)."""
    return make(arr) if xp is graph_ns and arr is not None else arr


def _scaled(xp, x, w):
    return x if w is None else x * _const(xp, w)


def _pointwise_loss(name: str, node: str, elem, d_input, d_target, saved_names=("self", "target"), dd=None,
                    backward_node=None, opmath: bool = True):
    """A loss ``reduce(elem(input, target))`` over inputs of one shape; ``d_input``/``d_target`` are the
    elementwise partial derivatives (written against xp, so they differentiate again). ``p`` is the
    loss's own parameters (beta, delta, weights), ``None`` when it has none.

    With ``dd`` (the second derivative in the input, for losses of ``input - target`` alone, even in it: mse,
    smooth_l1, huber), each gradient is PyTorch's node of its own under create_graph (``backward_node``:
    MseLossBackwardBackward0, ...): ``loss_backward(g, input, target)`` for the input and
    ``loss_backward(g, target, input)`` for the target, as PyTorch's formulas call them."""
    # bfloat16: the elementwise loss in float32, rounded once, then reduced (in float32, rounded); without
    # ``opmath`` (a kernel of Python-number-free NumPy steps), rounded after every step, as PyTorch's mse kernel
    elem_low = bf16_in_float32(elem) if opmath else elem

    def forward(xp, a, b, reduction, p):
        return _reduce(xp, elem_low(xp, a, b, p), reduction)

    def vjp(d):
        return lambda xp, g, out, a, b, reduction, p: _unreduce(xp, g, a.shape, reduction) * d(xp, a, b, p)

    def jvp(d):
        return lambda xp, t, out, a, b, reduction, p: _reduce(xp, t * d(xp, a, b, p), reduction)

    if dd is None:
        return defprim(name, forward, node=node,
                                            vjp=(vjp(d_input), vjp(d_target)), jvp=(jvp(d_input), jvp(d_target)),
                       saves=(0, 1), saved_names=saved_names)

    def backward(xp, g, a, b, reduction, p):
        return _unreduce(xp, g, a.shape, reduction) * d_input(xp, a, b, p)

    def second(sign):
        def rule(xp, gg, out, g, a, b, reduction, p):
            r = gg * _unreduce(xp, g, a.shape, reduction) * dd(xp, a, b, p)
            return -r if sign < 0 else r
        return rule

    bprim = defprim(
        name + "_backward", backward,
        node=backward_node,
        vjp=(lambda xp, gg, out, g, a, b, reduction, p: _reduce(xp, gg * d_input(xp, a, b, p), reduction),
             second(1), second(-1)),
        jvp=(lambda xp, t, out, g, a, b, reduction, p: backward(xp, t, a, b, reduction, p), second(1), second(-1)),
        saves={0: (1, 2), 1: (0, 1, 2), 2: (0, 1, 2)}, saved_names=("grad_output", "self", "target"))

    return defprim(name, forward,
                   node=node, vjp=(lambda xp, g, out, a, b, reduction, p: bprim(xp, g, a, b, reduction=reduction, p=p),
                                   lambda xp, g, out, a, b, reduction, p: bprim(xp, g, b, a, reduction=reduction, p=p)),
                   jvp=(jvp(d_input), jvp(d_target)), saves=(0, 1), saved_names=saved_names)


mse_p = _pointwise_loss("mse_loss", "MseLossBackward0", lambda xp, a, b, p: (a - b) * (a - b),
                        lambda xp, a, b, p: (a - b) * 2, lambda xp, a, b, p: (b - a) * 2,
                        dd=lambda xp, a, b, p: 2.0, backward_node="MseLossBackwardBackward0", opmath=False)


def _smooth_l1(xp, a, b, beta):
    d = a - b
    z = xp.abs(d)
    return xp.where(z < beta, d * d * (0.5 / beta), z - 0.5 * beta)


def _smooth_l1_d(xp, a, b, beta):
    d = a - b
    # at |d| = beta the slope is +-1 and its derivative 0, as PyTorch's smooth_l1_loss_double_backward
    return xp.where(d <= -beta, -1.0, xp.where(d >= beta, 1.0, d / beta))


smooth_l1_p = _pointwise_loss("smooth_l1_loss", "SmoothL1LossBackward0", _smooth_l1, _smooth_l1_d,
                              lambda xp, a, b, beta: -_smooth_l1_d(xp, a, b, beta),
                              dd=lambda xp, a, b, beta: xp.where(xp.abs(a - b) < beta, 1.0 / beta, 0.0),
                              backward_node="SmoothL1LossBackwardBackward0")


def _huber(xp, a, b, delta):
    if a.dtype is _BF16:
        return _huber_bf16(xp, a, b, delta)
    d = a - b
    z = xp.abs(d)
    return xp.where(z < delta, d * d * 0.5, (z - 0.5 * delta) * delta)


def _huber_bf16(xp, a, b, delta):
    """PyTorch's bfloat16 huber_kernel (BinaryOpsKernel.cpp): delta rounded to bfloat16 and every step rounded to
    bfloat16 (c10::BFloat16 arithmetic in its scalar lambda, Vectorized<BFloat16> in its vector one)."""
    dv, half = xp.weak_number(a, delta), xp.weak_number(a, 0.5)   # scalar_t delta_val(delta), scalar_t(0.5)
    z = xp.abs(a - b)
    return xp.where(z < dv, half * z * z, dv * (z - half * dv))


def _huber_d(xp, a, b, delta):
    d = a - b
    # at |d| = delta the slope is +-delta and its derivative 0, as PyTorch's huber_loss_double_backward
    return xp.where(d <= -delta, -delta, xp.where(d >= delta, delta, d))


huber_p = _pointwise_loss("huber_loss", "HuberLossBackward0", _huber, _huber_d,
                          lambda xp, a, b, delta: -_huber_d(xp, a, b, delta),
                          dd=lambda xp, a, b, delta: xp.where(xp.abs(a - b) < delta, 1.0, 0.0),
                          backward_node="HuberLossBackwardBackward0", opmath=False)


# binary_cross_entropy: PyTorch clamps each log at -100 (so x = 0 or 1 gives a finite loss) and the
# derivative's denominator x (1 - x) at 1e-12; ``p`` is the weight (an array, not differentiable).
def _bce(xp, a, b, w):
    if a.dtype is _BF16:   # PyTorch's bfloat16 kernel: each log in float32 rounded, every step of c10::BFloat16
        log_x = xp.cast(xp.clamp(xp.log(xp.cast(a, _SINGLE)), -100.0, None), _BF16)
        log_1mx = xp.cast(xp.clamp(xp.log1p(-xp.cast(a, _SINGLE)), -100.0, None), _BF16)
        return _scaled(xp, (b - xp.weak_number(b, 1.0)) * log_1mx - b * log_x, w)
    log_x = xp.clamp(xp.log(a), -100.0, None)
    log_1mx = xp.clamp(xp.log(1 - a), -100.0, None)
    return _scaled(xp, (b - 1) * log_1mx - b * log_x, w)


bce_p = _pointwise_loss(
    "binary_cross_entropy", "BinaryCrossEntropyBackward0", _bce,
    lambda xp, a, b, w: _scaled(xp, (a - b) / xp.clamp((1 - a) * a, 1e-12, None), w),
    lambda xp, a, b, w: _scaled(xp, xp.log(1 - a) - xp.log(a), w), opmath=False)


# binary_cross_entropy_with_logits: (1 - y) x + (1 + (pw - 1) y) softplus(-x), softplus(-x) written
# max(-x, 0) + log1p(exp(-|x|)): finite for logits of any magnitude. ``p`` is (weight, pos_weight).
def _softplus_neg(xp, a):
    return xp.relu(-a) + xp.log1p(xp.exp(-xp.abs(a)))


def _log_weight(xp, b, pw):
    return None if pw is None else (_const(xp, pw) - 1) * b + 1


def _bce_logits(xp, a, b, p):
    w, pw = p
    if a.dtype != b.dtype:   # float32 and float64 mixed (the wrapper keeps them apart): PyTorch's composite
        return _bce_logits_mixed(xp, a, b, w, pw)
    if a.dtype == _HALF:   # computed in float32, as PyTorch's CPU kernels do
        return xp.cast(_bce_logits(xp, xp.cast(a, _SINGLE), xp.cast(b, _SINGLE), p), _HALF)
    if a.dtype is _BF16:   # PyTorch's composite (Loss.cpp) of bfloat16 ops, each rounded
        one, ls = xp.weak_number(a, 1.0), xp.log_sigmoid(a)
        if pw is not None:
            ls = ls * ((_const(xp, pw) - one) * b + one)
        return _scaled(xp, (one - b) * a - ls, w)
    lw = _log_weight(xp, b, pw)
    sp = _softplus_neg(xp, a)
    return _scaled(xp, (1 - b) * a + (sp if lw is None else lw * sp), w)


def _raw_dtype(x):
    """The array dtype ``xp.cast`` takes, of a raw array or (under create_graph) a Tensor."""
    return x._data.dtype if isinstance(x, Tensor) else x.dtype


def _bce_logits_mixed(xp, a, b, w, pw):
    """PyTorch's composite (Loss.cpp) when input and target differ in dtype: log_sigmoid in the input's dtype
    (``mul_`` by the positive weight stays in it), then ``(1 - target).mul_(input).sub_(...)`` in place, each step
    computed in the wider dtype and stored in the target's."""
    ls = -_softplus_neg(xp, a)
    if pw is not None:
        ls = xp.cast(ls * _log_weight(xp, b, pw), _raw_dtype(a))
    dt = _raw_dtype(b)
    loss = xp.cast(xp.cast((1 - b) * a, dt) - ls, dt)
    return _scaled(xp, loss, w)


def _bce_logits_d_input(xp, a, b, p):
    w, pw = p
    if pw is None and a.dtype != b.dtype:   # PyTorch's input.sigmoid().sub_(target): stored in the input's dtype
        return _scaled(xp, xp.cast(xp.sigmoid(a) - b, _raw_dtype(a)), w)
    if pw is None:
        return _scaled(xp, xp.sigmoid(a) - b, w)
    t = _const(xp, pw) * b
    if a.dtype != b.dtype:   # t.add(1).sub_(target).mul_(input.sigmoid()).sub_(t): stored in the target's dtype
        dt = _raw_dtype(b)
        return _scaled(xp, xp.cast(xp.cast((t + 1 - b) * xp.sigmoid(a), dt) - t, dt), w)
    return _scaled(xp, (t + 1 - b) * xp.sigmoid(a) - t, w)


def _bce_logits_d_target(xp, a, b, p):
    w, pw = p
    if pw is None:
        return _scaled(xp, -a, w)
    if a.dtype != b.dtype:   # log_sigmoid(-input).sub_(log_sigmoid(input).mul_(pos_weight)): the input's dtype
        dt = _raw_dtype(a)
        ls_pw = xp.cast(_softplus_neg(xp, a) * _const(xp, pw), dt)
        return _scaled(xp, xp.cast(ls_pw - _softplus_neg(xp, -a), dt), w)
    return _scaled(xp, (_const(xp, pw) - 1) * _softplus_neg(xp, a) - a, w)


bce_logits_p = _pointwise_loss("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0",
                               _bce_logits, _bce_logits_d_input, _bce_logits_d_target, opmath=False)
_HALF = D.float16.np
_SINGLE = D.float32.np
_BF16 = D.bfloat16.np


def _check_target(target, fn: str) -> None:
    if not isinstance(target, Tensor):
        raise TypeError(f"{fn}(): argument 'target' (position 2) must be Tensor, not {type(target).__name__}")


def _warn_broadcast(input: Tensor, target: Tensor) -> None:
    if input._data.shape != target._data.shape:
        _warn(f"Using a target size ({_size(target._data.shape)}) that is different to the input size "
                      f"({_size(input._data.shape)}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.")


def _fused(prim, input, target, reduction, p, kernel: str) -> Tensor:
    """Apply a pointwise loss primitive to broadcast operands of one floating dtype (PyTorch's promotion)."""
    from .shape import broadcast_tensors
    input, target = broadcast_tensors(input, target)
    dt = promote(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt.np)}\'')
    if input._data.dtype != dt.np:
        input = input.to(dt)
    if target._data.dtype != dt.np:
        target = target.to(dt)
    return apply(prim, (input, target), {"reduction": reduction, "p": p})


def _weighted(loss: Tensor, weight, input: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    """The Python-level weighted forms of mse/l1/huber: loss * weight, reduced (mean: / sum(weight) for
    mse and l1, .mean() for huber)."""
    from .reduction import sum as _sum
    check_tensor(weight, "mul", "other", 2)
    if weight._data.shape != input._data.shape:
        raise ValueError("Weights and input must have the same size.")
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return _sum(weighted)
    if reduction == "mean":
        return _sum(weighted) / _sum(weight) if mean_by_weight else weighted.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


@register(**_F)
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced (optionally weighted elementwise)."""
    check_tensor(input, "mse_loss", "input", 1)
    _check_target(target, "mse_loss")
    _warn_broadcast(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is not None:
        from .shape import broadcast_tensors
        a, b = broadcast_tensors(input, target)
        return _weighted((a - b) ** 2, weight, input, reduction, True)
    return _fused(mse_p, input, target, _check_reduction(reduction), None, "mse_cpu")


@register(**_F)
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|``, reduced (PyTorch's composite: AbsBackward0 under it)."""
    check_tensor(input, "l1_loss", "input", 1)
    _check_target(target, "l1_loss")
    _warn_broadcast(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    from .shape import broadcast_tensors
    a, b = broadcast_tensors(input, target)
    if weight is not None:
        return _weighted((a - b).abs(), weight, input, reduction, True)
    return _l1(a, b, _check_reduction(reduction))


def _l1(a: Tensor, b: Tensor, reduction: str) -> Tensor:
    loss = (a - b).abs()
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


@register(**_F)
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta = 0 is l1_loss."""
    check_tensor(input, "smooth_l1_loss", "input", 1)
    _check_target(target, "smooth_l1_loss")
    _warn_broadcast(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    beta = float(beta)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        from .shape import broadcast_tensors
        return _l1(*broadcast_tensors(input, target), reduction)
    return _fused(smooth_l1_p, input, target, reduction, beta, "smooth_l1_cpu")


@register(**_F)
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target), reduced."""
    check_tensor(input, "huber_loss", "input", 1)
    _check_target(target, "huber_loss")
    _warn_broadcast(input, target)
    delta = float(delta)
    # PyTorch's kernel writes into a tensor like the input: the loss has the input's dtype
    common = promote(input, target)
    if common.is_floating_point and input._data.dtype != common.np:
        if input._data.dtype.kind not in "fV":
            raise _cast_error(common, input._data.dtype)
        target = target.to(D.from_numpy_dtype(input._data.dtype))
    if weight is not None:
        check_tensor(weight, "huber_loss", "weight", 5)
        if weight._data.shape != input._data.shape:
            raise ValueError("Weights and input must have the same size.")
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        loss = _fused(huber_p, input, target, "none", delta, "huber_cpu")
        return _weighted(loss, weight, input, reduction, False)
    reduction = _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _fused(huber_p, input, target, reduction, delta, "huber_cpu")


def _weight_array(weight, fn: str, arg: str, pos: int):
    if weight is None:
        return None
    check_tensor(weight, fn, arg, pos)
    if weight.requires_grad and _gm._state.enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{arg}'. This input "
                           "cannot have requires_grad True.")
    return weight._data


def _in_unit_range(a) -> bool:
    return NAMESPACES[type(a)].all((a >= 0) & (a <= 1))


@register(**_F)
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """-w (y log x + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch, reduced."""
    check_tensor(input, "binary_cross_entropy", "input", 1)
    _check_target(target, "binary_cross_entropy")
    reduction = _reduction(size_average, reduce, reduction)
    x, y = input._data, target._data
    if x.shape != y.shape:
        raise ValueError(f"Using a target size ({_size(y.shape)}) that is different to the input size "
                         f"({_size(x.shape)}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        check_tensor(weight, "binary_cross_entropy", "weight", 3)
        from .shape import broadcast_shapes
        weight = weight.expand(broadcast_shapes(y.shape, weight._data.shape))
    for t in (target, weight):
        if t is not None and t._data.dtype != x.dtype:
            raise RuntimeError(f"Found dtype {D.type_word(t._data.dtype)} but expected {D.type_word(x.dtype)}")
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for \'{D.type_word(x.dtype)}\'')
    w = _weight_array(weight, "binary_cross_entropy", "weight", 3)
    if w is not None and w.shape != x.shape:
        raise RuntimeError(f"output with shape {_dims(x.shape)} doesn't match the broadcast shape "
                           f"{_dims(w.shape)}")
    xp = NAMESPACES[type(x)]
    if not holds(_in_unit_range, x):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not holds(_in_unit_range, y):
        raise RuntimeError("all elements of target should be between 0 and 1")
    # the weight is saved (PyTorch's node saves it: a change in place is an error at backward)
    return apply_saving(bce_p, (input, target), {"reduction": reduction, "p": w}, None,
                        () if weight is None else (weight,))


@register(**_F)
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """binary_cross_entropy(sigmoid(input), target) in one stable step (pos_weight scales the positive term)."""
    check_tensor(input, "binary_cross_entropy_with_logits", "input", 1)
    _check_target(target, "binary_cross_entropy_with_logits")
    reduction = _reduction(size_average, reduce, reduction)
    if input._data.shape != target._data.shape:
        raise ValueError(f"Target size ({_size(target._data.shape)}) must be the same as input size "
                         f"({_size(input._data.shape)})")
    fn = "binary_cross_entropy_with_logits"
    w = _weight_array(weight, fn, "weight", 3)
    pw = _weight_array(pos_weight, fn, "pos_weight", 4)
    # PyTorch's kernel: log_sigmoid(input), then (1 - target).mul_(input).sub_(...) and mul_(weight) in place:
    # its errors for other dtypes, and the loss in the target's dtype
    _check_float(input, "log_sigmoid_cpu")
    if target._data.dtype.kind == "b":
        raise RuntimeError(_BOOL_SUB)
    if target._data.dtype.kind not in "fV":
        raise _cast_error(promote(input, target), target._data.dtype)
    dt = D.from_numpy_dtype(target._data.dtype)
    shape = input._data.shape
    for extra in (w, pw):
        if extra is not None and broadcast_error((shape, extra.shape)) is None:
            full = _broadcast_shape((shape, extra.shape))
            if full != shape:
                raise RuntimeError(f"output with shape {_dims(shape)} doesn't match the broadcast shape "
                                   f"{_dims(full)}")
        elif extra is not None:
            raise broadcast_error((shape, extra.shape))
    if input._data.dtype != dt.np and not {input.dtype, dt} == {D.float32, D.float64}:
        input = input.to(dt)   # float16/bfloat16 mixed in: the one-dtype kernel (float32 and float64 mix step by step)
    xp = NAMESPACES[type(input._data)]
    p = (None if w is None else xp.cast(w, dt.np), None if pw is None else xp.cast(pw, dt.np))
    return apply_saving(bce_logits_p, (input, target), {"reduction": reduction, "p": p}, None,
                        tuple(t for t in (weight, pos_weight) if t is not None))   # saved, as PyTorch's node


# ----- composites: kl_div, poisson_nll_loss, gaussian_nll_loss (PyTorch builds them from other ops) -------------

def _apply_loss_reduction(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


@register(**_F)
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """The Kullback-Leibler divergence of ``target`` from ``input`` (log-probabilities): target * (log target -
    input) pointwise; ``reduction='batchmean'`` divides the sum by the batch size."""
    check_tensor(input, "kl_div", "input", 1)
    check_tensor(target, "kl_div", "target", 2)
    if size_average is not None or reduce is not None:
        enum = _legacy_reduction(size_average, reduce)
    else:
        if reduction == "mean":
            _warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
        enum = "sum" if reduction == "batchmean" else _check_reduction(reduction)
    if input._data.dtype.kind not in "fV" or target._data.dtype.kind not in "fV":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    from .elementwise import xlogy
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    reduced = _apply_loss_reduction(loss, enum)
    if reduction == "batchmean" and input._data.ndim != 0 and size_average is None and reduce is None:
        reduced = reduced / input._data.shape[0]
    return reduced


@register(**_F)
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood: exp(input) - target * input (log_input), else input - target *
    log(input + eps); ``full`` adds Stirling's approximation of log(target!) where target > 1."""
    check_tensor(input, "poisson_nll_loss", "input", 1)
    check_tensor(target, "poisson_nll_loss", "target", 2)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + _mul_s((target * (2 * math.pi)).log(), 0.5)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _apply_loss_reduction(loss, reduction)


@register(**_F)
def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """Gaussian negative log likelihood 0.5 (log var + (input - target)^2 / var), var clamped at ``eps``
    (without gradient through the clamp, as PyTorch); var may omit the last dim or have one of size 1."""
    from .creation import ones_like
    check_tensor(input, "gaussian_nll_loss", "input", 1)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var._data.shape != input._data.shape:
        ishape, vshape = input._data.shape, var._data.shape
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif len(ishape) == len(vshape) and sum(y for x, y in zip(ishape, vshape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    if var._data.dtype.kind not in "fV":   # PyTorch's clamp_ words it with the C++ type name
        raise RuntimeError(f"result type {D.type_word(D._default_float.np)} can't be cast to the desired output "
                           f"type {D.c_type_name(var._data.dtype)}")
    var = apply(clamp_unrecorded_p, (var, eps))   # (PyTorch: a clone clamped in place under no_grad)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    return _apply_loss_reduction(loss, reduction)


# ----- margin and embedding losses -------------------------------------------------------------------------------


# soft_margin_loss: log(1 + exp(-y x)), one fused primitive (SoftMarginLossBackward0); the target is not
# differentiable (PyTorch refuses a target that requires grad), so it is a parameter.
def _soft_margin_d(xp, a, y):
    z = xp.exp(-_const(xp, y) * a)
    return -_const(xp, y) * z / (z + 1)


soft_margin_p = defprim(
    "soft_margin_loss",
    lambda xp, a, y, reduction: _reduce(xp, xp.log1p(xp.exp(-y * a)), reduction),
    vjp=lambda xp, g, out, a, y, reduction:
        _unreduce(xp, g, _bshape(a.shape, y.shape), reduction) * _soft_margin_d(xp, a, y),
    jvp=lambda xp, t, out, a, y, reduction: _reduce(xp, t * _soft_margin_d(xp, a, y), reduction),
    saves=(0,), saved_names=("self",),
    # complex: PyTorch's autograd refuses it (see soft_margin_loss); its forward mode gives t * conj(f'(z))
    complex=(lambda xp, g, out, a, y, reduction:
             _unreduce(xp, g, _bshape(a.shape, y.shape), reduction) * xp.conj(_soft_margin_d(xp, a, y)),
             lambda xp, t, out, a, y, reduction: _reduce(xp, t * xp.conj(_soft_margin_d(xp, a, y)), reduction)))


def _bshape(a, b) -> tuple:
    return _broadcast_shape((a, b))


def _target_no_grad(target: Tensor, fn: str) -> None:
    if target.requires_grad and _gm._state.enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument 'target'. This "
                           "input cannot have requires_grad True.")


@register(**_F)
def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """The two-class logistic loss log(1 + exp(-target * input)), reduced."""
    check_tensor(input, "soft_margin_loss", "input", 1)
    check_tensor(target, "soft_margin_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    err = broadcast_error((input._data.shape, target._data.shape))
    if err is not None:
        raise err
    full = _bshape(input._data.shape, target._data.shape)
    if full != input._data.shape:
        raise RuntimeError(f"output with shape {_dims(input._data.shape)} doesn't match the broadcast shape "
                           f"{_dims(full)}")
    # PyTorch's kernel: neg(input) into a tensor of the input's dtype, then mul_(target), exp_(), log1p_() in place:
    # the result has the input's dtype, and an integral input cannot hold the result
    if input._data.dtype.kind == "b":
        raise RuntimeError(_BOOL_NEG)
    if input.dtype.is_complex:
        if (input.requires_grad or target.requires_grad) and _gm.is_grad_enabled():
            raise RuntimeError("soft_margin_loss does not support automatic differentiation for outputs with complex "
                               "dtype.")
    elif input._data.dtype.kind not in "fV":
        raise _cast_error(_float_result(input, target), input._data.dtype)
    dt = D.from_numpy_dtype(input._data.dtype)
    _target_no_grad(target, "soft_margin_loss")
    if input._data.dtype != dt.np:
        input = input.to(dt)
    return apply_saving(soft_margin_p, (input,), {"y": NAMESPACES[type(target._data)].cast(target._data, dt.np),
                                                     "reduction": reduction}, None, (target,))   # saved, as PyTorch's


def _check_float_dtype(dt, kernel: str) -> None:
    if not dt.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(dt.np)}\'')


@register(**_F)
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), weighted per class, averaged over the classes."""
    check_tensor(input, "multilabel_soft_margin_loss", "input", 1)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    _check_float(input, "log_sigmoid_cpu")   # logsigmoid(input) is PyTorch's first step
    loss = -(target * apply(log_sigmoid_p, (input,)) + (1 - target) * apply(log_sigmoid_p, (-input,)))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    c = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not valid")


@register(**_F)
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin), reduced."""
    for i, (x, nm) in enumerate(((input1, "input1"), (input2, "input2"), (target, "target"))):
        check_tensor(x, "margin_ranking_loss", nm, i + 1)
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {_size(input1._data.shape)}, input2: {_size(input2._data.shape)}, target: "
                           f"{_size(target._data.shape)} ")
    diff = input1 - input2   # first, as PyTorch (its error for bool inputs is this subtraction's)
    out = apply(add_scalar_p, (-target * diff, float(margin))).clamp_min(0)
    return _apply_loss_reduction(out, reduction)


@register(**_F)
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where target is -1, reduced."""
    from .creation import zeros_like
    from .elementwise import where
    check_tensor(input, "hinge_embedding_loss", "input", 1)
    check_tensor(target, "hinge_embedding_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    zeros = zeros_like(input)
    if input._data.dtype.kind in "iub":
        # PyTorch's C++ `margin - self` is empty_like(self).fill_(margin).sub_(self): the input's dtype (so
        # an integral loss, whose mean then raises; bool refuses the subtraction)
        from .creation import full_like
        margin_clamp = (full_like(input, margin) - input).clamp_min(0)
    else:
        margin_clamp = (margin - input).clamp_min(0)
    output_margin = where(target != 1, margin_clamp, zeros)
    output_self = where(target != -1, input, zeros)
    return _apply_loss_reduction(output_margin + output_self, reduction)


@register(**_F)
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where target is -1, reduced."""
    from .creation import zeros_like
    from .elementwise import where
    for i, (x, nm) in enumerate(((input1, "input1"), (input2, "input2"), (target, "target"))):
        check_tensor(x, "cosine_embedding_loss", nm, i + 1)
    reduction = _reduction(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and input1.dim() != 2:
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{_dims(input1._data.shape)} and {_dims(input2._data.shape)}.")
    if targ_dim == 0 and input1.dim() != 1:
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{_dims(input1._data.shape)} and {_dims(input2._data.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = apply(add_scalar_p, ((input1 * input1).sum(targ_dim), eps))
    mag_square2 = apply(add_scalar_p, ((input2 * input2).sum(targ_dim), eps))
    denom = (mag_square1 * mag_square2).sqrt()
    cos = prod_sum / denom
    zeros = zeros_like(cos)
    pos = 1 - cos
    neg = apply(add_scalar_p, (cos, -float(margin))).clamp_min(0)
    output = where(target == 1, pos, zeros) + where(target == -1, neg, zeros)
    return _apply_loss_reduction(output, reduction)


def _pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float) -> Tensor:
    """PyTorch's pairwise_distance: the p-norm of x1 - x2 + eps over the last dim."""
    from .reduction import norm
    dim = max(x1.dim(), x2.dim()) - 1
    return norm(apply(add_scalar_p, (x1 - x2, eps)), p, dim)


def _same_ndim(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


@register(**_F)
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None,
                        reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the pairwise p-norm distance;
    ``swap`` takes the smaller of d(anchor, negative) and d(positive, negative)."""
    from .elementwise import minimum
    for i, (x, nm) in enumerate(((anchor, "anchor"), (positive, "positive"), (negative, "negative"))):
        check_tensor(x, "triplet_margin_loss", nm, i + 1)
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndim(anchor, positive, negative)
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, _pairwise_distance(positive, negative, p, eps))
    out = (apply(add_scalar_p, (dist_pos, float(margin))) - dist_neg).clamp_min(0)
    return _apply_loss_reduction(out, reduction)


@register(**_F)
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance function (default: the pairwise Euclidean distance)."""
    from .elementwise import minimum
    for i, (x, nm) in enumerate(((anchor, "anchor"), (positive, "positive"), (negative, "negative"))):
        check_tensor(x, "triplet_margin_with_distance_loss", nm, i + 1)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndim(anchor, positive, negative)
    if distance_function is None:
        def distance_function(x1, x2):
            return _pairwise_distance(x1, x2, 2.0, 1e-6)
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance_function(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    return _apply_loss_reduction(loss, reduction)


# ----- multi_margin_loss, multilabel_margin_loss: fused, first derivatives only (as PyTorch) -----------------

def _no_double_backward(name):
    def rule(xp, gg, out, *args, **params):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return rule


multi_margin_p = defprim(
    "multi_margin_loss",
    lambda xp, a, target, p, margin, weight, reduction:
        xp.multi_margin_loss_forward(a, target, p, margin, weight, reduction),
    vjp=lambda xp, g, out, a, target, p, margin, weight, reduction:
        xp.multi_margin_loss_backward(g, a, target, p, margin, weight, reduction),
    jvp=lambda xp, t, out, a, target, p, margin, weight, reduction: _reduce(xp, xp.sum(
        t * xp.multi_margin_loss_backward(xp.ones_like(xp.multi_margin_loss_forward(a, target, p, margin, weight,
                                                                                   "none")),
                                          a, target, p, margin, weight, "none"), -1), reduction),
    saves=(0,), saved_names=("self",))
multi_margin_backward_p = defprim(
    "multi_margin_loss_backward",
    lambda xp, g, a, target, p, margin, weight, reduction:
        xp.multi_margin_loss_backward(g, a, target, p, margin, weight, reduction),
    node="NotImplemented", vjp=(_no_double_backward("multi_margin_loss_backward"),) * 2, saves=(0, 1))
graph("multi_margin_loss_forward", lambda a, target, p, margin, weight, reduction: apply(
    multi_margin_p, (a,), {"target": target, "p": p, "margin": margin, "weight": weight, "reduction": reduction}))
graph("multi_margin_loss_backward", lambda g, a, target, p, margin, weight, reduction: apply(
    multi_margin_backward_p, (g, a), {"target": target, "p": p, "margin": margin, "weight": weight,
                                      "reduction": reduction}))

multilabel_margin_p = defprim(
    "multilabel_margin_loss",
    lambda xp, a, target, reduction: xp.multilabel_margin_loss_forward(a, target, reduction),
    vjp=lambda xp, g, out, a, target, reduction: xp.multilabel_margin_loss_backward(g, a, target, reduction),
    jvp=lambda xp, t, out, a, target, reduction: _reduce(xp, xp.sum(
        t * xp.multilabel_margin_loss_backward(xp.ones_like(xp.multilabel_margin_loss_forward(a, target, "none")),
                                               a, target, "none"), -1), reduction),
    saves=(0,), saved_names=("self",))
multilabel_margin_backward_p = defprim(
    "multilabel_margin_loss_backward",
    lambda xp, g, a, target, reduction: xp.multilabel_margin_loss_backward(g, a, target, reduction),
    node="NotImplemented", vjp=(_no_double_backward("multilabel_margin_loss_backward"),) * 2, saves=(0, 1))
graph("multilabel_margin_loss_forward", lambda a, target, reduction: apply(
    multilabel_margin_p, (a,), {"target": target, "reduction": reduction}))
graph("multilabel_margin_loss_backward", lambda g, a, target, reduction: apply(
    multilabel_margin_backward_p, (g, a), {"target": target, "reduction": reduction}))


_BOOL_NEG = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")
_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
             "operator instead.")


def _cast_error(result: D.dtype, out_np) -> RuntimeError:
    """PyTorch's error for an in-place step whose result type cannot be stored in its output's dtype."""
    return RuntimeError(f"result type {D.type_word(result.np)} can't be cast to the desired output type "
                        f"{D.type_word(out_np)}")


def _float_result(*xs) -> D.dtype:
    """The result type of ``xs``, or the default float where that is integral (exp_ of an integer tensor)."""
    dt = promote(*xs)
    return dt if dt.is_floating_point else D._default_float


def _margin_input(input: Tensor) -> None:
    x = input._data
    if not (x.ndim == 1 and x.size > 0 or x.ndim == 2 and x.shape[1] > 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_dims(x.shape)}")


@register(**_F)
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: sum over i != y of w[y] max(0, margin - x[y] + x[i]) ** p / C."""
    check_tensor(input, "multi_margin_loss", "input", 1)
    check_tensor(target, "multi_margin_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None:
        check_tensor(weight, "multi_margin_loss", "weight", 5)
        if weight.dim() != 1:
            raise ValueError("weight must be one-dimensional")
    # PyTorch's order: shapes, then the kernel's dtypes (float32/float64), then the target's
    _margin_input(input)
    x, t = input._data, target._data
    n_frames = 1 if x.ndim == 1 else x.shape[0]
    c = x.shape[-1]
    if t.ndim > 1 or t.size != n_frames:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n_frames}], but got {_dims(t.shape)}. "
                           f"Input has shape {_dims(x.shape)}.")
    if weight is not None and weight._data.size != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {_dims(weight._data.shape)}")
    _check_float(input, "multi_margin_loss_cpu_kernel", half=False)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {D.type_word(t.dtype)}")
    w = None
    if weight is not None:
        w = NAMESPACES[type(x)].cast(_weight_array(weight, "multi_margin_loss", "weight", 5), x.dtype)
    if not holds(lambda t: not NAMESPACES[type(t)].any((t < 0) | (t >= c)), t):
        raise RuntimeError("target out of range")
    return apply_saving(multi_margin_p, (input,), {"target": t, "p": int(p), "margin": float(margin), "weight": w,
                                                   "reduction": reduction},
                        None, (target,) if weight is None else (target, weight))


@register(**_F)
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: over the classes listed in target (up to the first -1) and the others,
    max(0, 1 - (x[listed] - x[other])) / C."""
    check_tensor(input, "multilabel_margin_loss", "input", 1)
    check_tensor(target, "multilabel_margin_loss", "target", 2)
    reduction = _reduction(size_average, reduce, reduction)
    _margin_input(input)
    x, t = input._data, target._data
    if t.shape != x.shape:
        raise RuntimeError(f"inconsistent target size: {_dims(t.shape)} for input of size: {_dims(x.shape)}")
    # PyTorch checks an integral target's range before the input's dtype (a complex or float16 input too)
    if t.dtype.kind in "iu" and not holds(lambda t: not NAMESPACES[type(t)].any((t >= x.shape[-1]) | (t < -1)),
                                          t):
        raise RuntimeError("argument #2 'target' is out of range")
    _check_float(input, "multilabel_margin_loss_forward_out_frame", half=False)
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {D.type_word(t.dtype)}")
    return apply_saving(multilabel_margin_p, (input,), {"target": t, "reduction": reduction}, None, (target,))


# ----- ctc_loss: fused (CtcLossBackward0); PyTorch has neither its double backward nor forward mode ---------------

def _ctc_params(ext, label_lengths, input_lengths, blank, zero_infinity):
    return {"ext": ext, "label_lengths": label_lengths, "input_lengths": input_lengths, "blank": blank,
            "zero_infinity": zero_infinity}


ctc_p = defprim(
    "ctc_loss",
    lambda xp, lp, ext, label_lengths, input_lengths, blank, zero_infinity:
        xp.ctc_loss_forward(lp, ext, label_lengths, input_lengths, blank, zero_infinity),
    vjp=lambda xp, g, out, lp, ext, label_lengths, input_lengths, blank, zero_infinity:
        xp.ctc_loss_backward(g, lp, ext, label_lengths, input_lengths, blank, zero_infinity),
    saves=(0,), saved_names=("log_probs",))
ctc_backward_p = defprim(
    "ctc_loss_backward",
    lambda xp, g, lp, ext, label_lengths, input_lengths, blank, zero_infinity:
        xp.ctc_loss_backward(g, lp, ext, label_lengths, input_lengths, blank, zero_infinity),
    node="NotImplemented", vjp=(_no_double_backward("_ctc_loss_backward"),) * 2, saves=(0, 1))
graph("ctc_loss_forward", lambda lp, ext, label_lengths, input_lengths, blank, zero_infinity: apply(
    ctc_p, (lp,), _ctc_params(ext, label_lengths, input_lengths, blank, zero_infinity)))
graph("ctc_extended_targets", lambda tg, tl, blank: NAMESPACES[type(tg)].ctc_extended_targets(tg, tl, blank))
graph("ctc_loss_backward", lambda g, lp, ext, label_lengths, input_lengths, blank, zero_infinity: apply(
    ctc_backward_p, (g, lp), _ctc_params(ext, label_lengths, input_lengths, blank, zero_infinity)))


def _lengths(xp, x, n_expected: int, what: str):
    """CTC's input or target lengths (a tensor, an int or a sequence of ints) as an int64 array of namespace
    ``xp``, checked."""
    if isinstance(x, Tensor):
        vals = xp.reshape(x._data, (-1,))
    elif isinstance(x, int) or is_int(x):
        vals = xp.backend.asarray([x])
    else:
        vals = xp.backend.asarray(list(x))
    if vals.dtype.kind not in "iu":
        raise RuntimeError(f"{what} must be integral")
    if vals.size != n_expected:
        raise RuntimeError(f"{what} must be of size batch_size")
    return xp.backend.copy(vals, D.int64.np)


@register(**_F)
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The Connectionist Temporal Classification loss of log_probs (T, N, C) (or (T, C)) against targets
    (N, S) padded or concatenated 1-D, summed over all alignments (alpha/beta recursions in log space)."""
    from .elementwise import where
    check_tensor(log_probs, "ctc_loss", "log_probs", 1)
    check_tensor(targets, "ctc_loss", "targets", 2)
    enum = _check_reduction(reduction)
    _check_float(log_probs, "ctc_loss_cpu", half=False)   # before the shape checks, as PyTorch's kernel
    batched = log_probs.dim() == 3
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss(): log_probs must be 2-D or 3-D, got {log_probs.dim()}-D")
    lp = log_probs if batched else log_probs.unsqueeze(1)
    t_max, n, c = lp._data.shape
    xp = NAMESPACES[type(lp._data)]
    tg = targets._data if batched else xp.reshape(targets._data, (1, -1))
    if tg.dtype.kind not in "iufV":
        raise RuntimeError(f"ctc_loss(): targets must be integral, got {D.type_word(tg.dtype)}")
    tg = xp.cast(tg, D.int64.np)
    il = _lengths(xp, input_lengths, n, "input_lengths")
    tl = _lengths(xp, target_lengths, n, "target_lengths")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    where_ = " (while checking arguments for ctc_loss_allocate_outputs)"
    longest = max(int(xp.amax(tl)), 0) if n else 0
    if tg.ndim == 2:
        if n and longest > tg.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets'{where_}")
    elif int(xp.sum(tl)) > tg.size:
        raise RuntimeError(f"Expected tensor to have size at least {int(xp.sum(tl))} at dimension 0, but got size "
                           f"{tg.size} for argument #2 'targets'{where_}")
    if n and int(xp.amax(il)) > t_max:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {int(xp.amax(il))}"
                           f"{where_}")
    ext = xp.ctc_extended_targets(tg, tl, blank)
    if not xp.in_range(ext, 0, c):
        raise IndexError("ctc_loss(): a target is out of the label range")
    # PyTorch's node saves the targets (their version checked at backward); the lengths it reads as ints
    res = apply_saving(ctc_p, (lp,), _ctc_params(ext, tl, il, int(blank), bool(zero_infinity)), None, (targets,))
    if zero_infinity:
        res = where(res == math.inf, make(xp.backend.zeros((), res._data.dtype)), res)
    if enum == "mean":   # each loss divided by its target's length (at least 1), on the device of the losses
        return (res / make(xp.cast(tl, res._data.dtype)).clamp_min(1)).mean()
    if enum == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("fallback", "nll_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss", "soft_margin_loss",
                  why="its target is an array in its parameters")


def _per_example_reduction(loss: Tensor, reduction: str) -> Tensor:
    """A batch-first elementwise loss reduced over each example's own dims."""
    dims = tuple(range(1, loss._data.ndim))
    if reduction == "none" or not dims:
        return loss
    return loss.mean(dims) if reduction == "mean" else loss.sum(dims)


def _pointwise_loss_rule(call, args, bdims, params, size):
    """The pointwise losses (one fused primitive each, its reduction inside): the elementwise loss of the whole
    batch (both operands batch-first), then each example's reduction."""
    both = [a if bd == 0 else _batching._moved(a, bd) if bd is not None else
            a.unsqueeze(0).expand((size,) + tuple(a._data.shape)) for a, bd in zip(args, bdims)]
    new = dict(params)
    new["reduction"] = "none"
    return _per_example_reduction(call(both, new), params["reduction"]), 0


_batching.by_name(_pointwise_loss_rule, "mse_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                  "binary_cross_entropy_with_logits")


def _unreduced(orig, name, bound, level, size, reduction: str, tensors, has_n: bool):
    """``orig`` with reduction='none' on the arguments ``tensors`` (batch-first, folded into N when the example
    has its own): the loss viewed back as (B, ...)."""
    a = bound.arguments
    for k in tensors:
        a[k] = _vmap_nn.fold(_vmap_nn.front(a[k], level, size), has_n)
    a["reduction"] = "none"
    for k in ("size_average", "reduce"):
        if k in a:
            a[k] = None
    loss = _vmap_nn.again(orig, name, bound.args, bound.kwargs)
    if has_n:
        loss = loss.reshape((size, loss._data.shape[0] // size if size else 0) + tuple(loss._data.shape[1:]))
    return loss


def _legacy(a) -> str:
    return _reduction(a.get("size_average"), a.get("reduce"), a["reduction"])


def _elementwise_loss_public(orig, name, bound, level, size):
    """Losses whose wrappers read values (binary_cross_entropy's range check, soft_margin_loss's target in the
    primitive's parameters): the unreduced loss of the whole batch, then each example's reduction. A weight of
    its own for each example, or operands of different shapes: per example."""
    a = bound.arguments
    weights = ("weight", "pos_weight")
    if any(_vmap_nn.at(v, level) for k, v in a.items() if k not in ("input", "target") + weights):
        return NotImplemented
    x, t = a["input"], a["target"]
    if not (isinstance(x, Tensor) and isinstance(t, Tensor)) or tuple(x.shape) != tuple(t.shape):
        return NotImplemented
    for k in weights:   # a weight of each example's own: batch-first, padded to broadcast as its example does
        w = a.get(k)
        if _vmap_nn.at(w, level):
            if w.ndim > x.ndim:
                return NotImplemented
            a[k] = _batching._front_and_pad(w._phys, w._bdim, x.ndim, size)
    reduction = _legacy(a)
    loss = _unreduced(orig, name, bound, level, size, reduction, ("input", "target"), False)
    return _batching.wrap(_per_example_reduction(loss, reduction), 0, level)


_vmap_nn.public_rule(_elementwise_loss_public, "binary_cross_entropy", "binary_cross_entropy_with_logits",
                     "soft_margin_loss")


def _class_loss_public(orig, name, bound, level, size):
    """nll_loss and cross_entropy (the wrappers read the target's values): the unreduced loss of the batch folded
    into N (an example without N: the batch is N), then each example's reduction: the mean divides by the sum
    of the weights of its targets not ignored (PyTorch's nll_loss; label smoothing's mean too), or for class
    probabilities by its number of positions. A class weight of each example's own: the unweighted loss times
    each target's weight (class probabilities: the weight goes into the (smoothed) target); with class indices
    and label smoothing, per example."""
    a = bound.arguments
    x, t, w = a["input"], a["target"], a["weight"]
    if not (isinstance(x, Tensor) and isinstance(t, Tensor)) or x.ndim == 0:
        return NotImplemented
    probs = name == "cross_entropy" and tuple(x.shape) == tuple(t.shape)
    if not probs and t.ndim != x.ndim - 1:
        return NotImplemented   # (a 1-d input with a 1-element target, bad ranks: the op's own handling)
    smoothing = float(a.get("label_smoothing", 0.0))
    own_weight = _vmap_nn.at(w, level)
    if own_weight and (w.ndim != 1 or (smoothing > 0 and not probs) or not 0 <= smoothing <= 1):
        return NotImplemented
    reduction = _legacy(a)
    ignore = int(a["ignore_index"])
    has_n = x.ndim >= 2
    if own_weight:
        W = _vmap_nn.front(w, level, size)   # (B, C)
        a["weight"] = None
        if probs:   # -(log_softmax * smoothed target * weight): the weight folded into the target
            T = _vmap_nn.front(t, level, size)
            if smoothing > 0:
                T = T * (1 - smoothing) + smoothing / W._data.shape[1]
                a["label_smoothing"] = 0.0
            T = T * (W.reshape((size, 1, W._data.shape[1]) + (1,) * (x.ndim - 2)) if has_n else W)
            a["target"] = _batching.wrap(T, 0, level)   # (batched again: folded with the input below)
    loss = _unreduced(orig, name, bound, level, size, reduction, ("input", "target"), has_n)
    wt = None
    if own_weight and not probs:   # each target's weight (0 where ignored), gathered from its example's row
        T = _vmap_nn.front(t, level, size)
        keep = T != ignore
        rows = W.gather(1, _batching.rows(T.masked_fill(~keep, 0), size)).reshape(tuple(T.shape))
        wt = rows * keep
        loss = loss * wt
    if reduction != "mean":
        return _batching.wrap(_per_example_reduction(loss, reduction), 0, level)
    dims = tuple(range(1, loss._data.ndim))
    total = loss.sum(dims) if dims else loss
    if probs:
        count = 1
        for n in loss._data.shape[1:]:
            count *= n
        return _batching.wrap(total / count if count else total * math.nan, 0, level)
    if wt is None:
        # each position's weight (0 where ignored): the unreduced nll_loss of an input of -1s (a plain tensor
        # of the folded input's shape: the same for every example of lower levels)
        X, T = a["input"], a["target"]
        minus_ones = full(tuple(X.shape), -1.0, dtype=X.dtype, device=X.device)
        wt = nll_loss(minus_ones, T, w, ignore_index=ignore, reduction="none")
        if has_n:
            wt = wt.reshape(tuple(loss._data.shape))
    return _batching.wrap(total / (wt.sum(dims) if dims else wt), 0, level)


_vmap_nn.public_rule(_class_loss_public, "nll_loss", "cross_entropy")


def _margin_public(orig, name, bound, level, size):
    """multi_margin_loss / multilabel_margin_loss (the target in the primitive's parameters): the unreduced loss
    of the batch folded into N (an example (C,): the batch is N), each example's mean or sum after."""
    a = bound.arguments
    x, t = a["input"], a["target"]
    if not (isinstance(x, Tensor) and isinstance(t, Tensor)) or _vmap_nn.at(a.get("weight"), level) or \
            x.ndim not in (1, 2) or t.ndim != (x.ndim if name == "multilabel_margin_loss" else x.ndim - 1):
        return NotImplemented
    reduction = _legacy(a)
    loss = _unreduced(orig, name, bound, level, size, reduction, ("input", "target"), x.ndim == 2)
    return _batching.wrap(_per_example_reduction(loss, reduction), 0, level)


_vmap_nn.public_rule(_margin_public, "multi_margin_loss", "multilabel_margin_loss")
_batching.by_name("fallback", "nll_loss_backward", "mse_loss_backward", "smooth_l1_loss_backward", "huber_loss_backward",
                  "multi_margin_loss_backward", "multilabel_margin_loss_backward", "ctc_loss_backward", why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")
