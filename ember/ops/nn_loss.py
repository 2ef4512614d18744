"""The op table, torch.nn.functional: losses.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/_numpy_nn_loss.py``. Where PyTorch computes a loss with one fused kernel (``MseLossBackward0``,
``NllLossBackward0``, ...) it is one primitive here, with the reduction inside it and VJP rules written
against ``xp`` (so double backward works); where PyTorch composes a loss from other ops in Python or in
ATen (l1_loss, cross_entropy with class probabilities, gaussian_nll_loss, ...), it is composed from
ember's ops the same way, so ``grad_fn`` and the graph below it are PyTorch's.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, wrap_dim
from ..autograd import grad_mode as _gm
from ..autograd.graph import node_class
from ._primitive import PrimNode, apply, defprim
from ._registry import graph, register
from ._util import check_tensor

_F = dict(module=False, submodule="nn.functional")


# ----- reductions: PyTorch's names, the legacy arguments --------------------------------------------

def _legacy_reduction(size_average, reduce) -> str:
    """torch.nn._reduction.legacy_get_string, with its warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _reduction(size_average, reduce, reduction) -> str:
    """The reduction a loss uses: the legacy pair if either is given, else ``reduction`` checked as
    torch.nn._reduction.get_enum does (ValueError for an unknown string)."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return _check_reduction(reduction)


def _check_reduction(reduction) -> str:
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
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


def _check_float(input: Tensor, kernel: str) -> None:
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(input._data.dtype)}\'')


# ----- Tensor-Scalar arithmetic as ATen's composites call it (mul.Scalar, div.Scalar) -------------------------
# PyTorch's C++ composites (cross_entropy's label smoothing, ...) multiply by a Scalar: MulBackward1 /
# DivBackward1, where Python's ``tensor * 0.5`` records MulBackward0.

mul_scalar_p = defprim("mul", "MulBackward1", lambda xp, a, s: a * s, vjp=(lambda xp, g, out, a, s: g * s, None),
                       jvp="elementwise", scalar_args=(1,), saved_names=("self", "other"))
div_scalar_p = defprim("div", "DivBackward1", lambda xp, a, s: a / s, vjp=(lambda xp, g, out, a, s: g / s, None),
                       jvp="elementwise", scalar_args=(1,), saved_names=("self", "other"))


def _mul_s(a: Tensor, s) -> Tensor:
    return apply(mul_scalar_p, (a, s))


def _div_s(a: Tensor, s) -> Tensor:
    return apply(div_scalar_p, (a, s))


# ----- log_softmax (cross_entropy's; the activations family exports F.log_softmax) ---------------------

def _log_softmax_vjp(xp, g, out, a, dim):
    if a.ndim == 0:
        return g - xp.exp(out) * g
    return g - xp.exp(out) * xp.sum(g, dim, True)


def _log_softmax_jvp(xp, t, out, a, dim):
    if a.ndim == 0:
        return t - xp.exp(out) * t
    return t - xp.sum(xp.exp(out) * t, dim, True)


# A private primitive with PyTorch's node name: cross_entropy's grad_fn chain is
# NllLossBackward0 <- LogSoftmaxBackward0, as in PyTorch.
log_softmax_p = defprim("loss_log_softmax", "LogSoftmaxBackward0",
                        lambda xp, a, dim: xp.loss_log_softmax(a, dim),
                        vjp=_log_softmax_vjp, jvp=_log_softmax_jvp, saves_out=True, saved_names=("self",))
graph("loss_log_softmax", lambda a, dim: apply(log_softmax_p, (a,), {"dim": dim}))


def _log_softmax(input: Tensor, dim: int) -> Tensor:
    dim = wrap_dim(dim, input._data.ndim, "log_softmax")
    if input._data.dtype.kind != "f":
        kernel = "log_softmax_lastdim_kernel_impl" if dim == input._data.ndim - 1 or input._data.ndim == 0 \
            else "log_softmax_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.type_word(input._data.dtype)}\'')
    return apply(log_softmax_p, (input,), {"dim": dim})


# ----- nll_loss ------------------------------------------------------------------------------------------

def _nll_fwd(xp, a, target, weight, reduction, ignore_index):
    return xp.nll_loss_forward(a, target, weight, reduction, ignore_index)


# -x[n, target[n]] * w is linear in x: the JVP is the loss of the tangent; the VJP scatters g (its own VJP,
# for double backward, is the loss again).
nll_p = defprim("nll_loss", "NllLossBackward0", _nll_fwd,
                vjp=lambda xp, g, out, a, target, weight, reduction, ignore_index:
                    xp.nll_loss_backward(g, target, weight, reduction, ignore_index, a.shape),
                jvp="linear", saved_names=("self",))
nll_backward_p = defprim(
    "nll_loss_backward", "NllLossBackwardBackward0",
    lambda xp, g, target, weight, reduction, ignore_index, shape:
        xp.nll_loss_backward(g, target, weight, reduction, ignore_index, shape),
    vjp=lambda xp, gg, out, g, target, weight, reduction, ignore_index, shape:
        xp.nll_loss_forward(gg, target, weight, reduction, ignore_index),
    jvp="linear", saved_names=("grad_output",))
_NLL2D = node_class("NllLoss2DBackward0", PrimNode)
graph("nll_loss_forward", lambda a, target, weight, reduction, ignore_index: apply(
    nll_p, (a,), {"target": target, "weight": weight, "reduction": reduction, "ignore_index": ignore_index}))
graph("nll_loss_backward", lambda g, target, weight, reduction, ignore_index, shape: apply(
    nll_backward_p, (g,), {"target": target, "weight": weight, "reduction": reduction,
                           "ignore_index": ignore_index, "shape": shape}))


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
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {D.type_word(t.dtype)}")
    _check_float(input, "nll_loss_out_frame" if x.ndim < 4 else "nll_loss2d_out_frame")
    weight = _nll_weight(weight, input, n_classes, "nll_loss")
    if weight is not None and weight._data.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {D.type_word(x.dtype)} but found {D.type_word(weight._data.dtype)}")
    _no_grad_weight(weight, "nll_loss_forward" if x.ndim < 4 else "nll_loss2d_forward")
    bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    if x.ndim == 1 and t.ndim == 1:   # PyTorch takes the one target of a 1-element batch
        if t.size != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.size}")
        t = t.reshape(())
    params = {"target": t, "weight": None if weight is None else weight._data, "reduction": reduction,
              "ignore_index": ignore_index}
    return apply(nll_p, (input,), params, node)


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
        if target._data.dtype.kind != "f":
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
