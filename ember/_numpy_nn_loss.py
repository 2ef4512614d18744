"""NumPy kernels of torch.nn.functional's losses (part of the raw namespace ``_numpy_ns``).

Each kernel here has a differentiable twin of the same name in ``graph_ns`` (registered in
``ember/ops/nn_loss.py``), so derivative rules can call it as ``xp.<name>`` under ``create_graph``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["nll_loss_forward", "nll_loss_backward", "loss_log_softmax"]


def _class_axis(ndim: int) -> int:
    return 0 if ndim == 1 else 1


def _picked(target, weight, ignore_index, dtype):
    """(the target clamped into range where ignored, the per-target weight with 0 where ignored)."""
    keep = target != ignore_index
    safe = np.where(keep, target, 0).astype(np.int64, copy=False)
    w = np.ones(target.shape, dtype) if weight is None else weight[safe].astype(dtype, copy=False)
    return safe, np.where(keep, w, 0).astype(dtype, copy=False)


def nll_loss_forward(x, target, weight, reduction, ignore_index):
    """-x[n, target[n], ...] * weight[target[n]], 0 where target == ignore_index; reduced. 'mean' divides by
    the sum of the weights that count (nan when none does, as PyTorch)."""
    axis = _class_axis(x.ndim)
    safe, w = _picked(target, weight, ignore_index, x.dtype)
    picked = np.squeeze(np.take_along_axis(x, np.expand_dims(safe, axis), axis), axis)
    loss = np.where(target != ignore_index, -picked * w, 0).astype(x.dtype, copy=False)
    if reduction == "none":
        return loss
    total = np.sum(loss, dtype=np.float64 if x.dtype == np.float64 else np.float32)
    if reduction == "sum":
        return np.asarray(total, dtype=x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(total / np.sum(w, dtype=total.dtype), dtype=x.dtype)


def nll_loss_backward(g, target, weight, reduction, ignore_index, shape):
    """The gradient of ``nll_loss_forward`` for its input (linear in ``g``; its adjoint is the forward)."""
    axis = _class_axis(len(shape))
    safe, w = _picked(target, weight, ignore_index, g.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = -(g / np.sum(w)) if reduction == "mean" else -g
        vals = np.where(target != ignore_index, w * scale, 0).astype(g.dtype, copy=False)
    out = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(out, np.expand_dims(safe, axis), np.expand_dims(vals, axis), axis)
    return out


def loss_log_softmax(x, dim):
    """x - logsumexp(x) along ``dim``, stable at any magnitude (float16 computed in float32)."""
    w = x.astype(np.float32) if x.dtype == np.float16 else x
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if w.size == 0:
            return x.copy()
        m = np.max(w, axis=dim, keepdims=True)
        m = np.where(np.isfinite(m), m, 0).astype(w.dtype, copy=False)
        s = w - m
        r = s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))
    return r.astype(x.dtype, copy=False)
