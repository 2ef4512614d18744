"""NumPy kernels of torch.nn.functional's losses (part of the raw namespace ``ember.devices.cpu.namespace``).

Each kernel here has a differentiable twin of the same name in ``graph_ns`` (registered in
``ember/ops/nn_loss.py``), so derivative rules can call it as ``xp.<name>`` under ``create_graph``.
"""
from __future__ import annotations

import numpy as np

from .reduced import BF16

__all__ = ["nll_loss_forward", "nll_loss_backward", "multi_margin_loss_forward",
           "multi_margin_loss_backward", "multilabel_margin_loss_forward", "multilabel_margin_loss_backward",
           "ctc_loss_forward", "ctc_loss_backward", "ctc_extended_targets"]


def _class_axis(ndim: int) -> int:
    return 0 if ndim == 1 else 1


def _picked(target, weight, ignore_index, dtype):
    """(the target clamped into range where ignored, the per-target weight with 0 where ignored)."""
    keep = target != ignore_index
    safe = np.where(keep, target, 0).astype(np.int64, copy=False)
    w = np.ones(target.shape, dtype) if weight is None else weight[safe].astype(dtype, copy=False)
    return safe, np.where(keep, w, 0).astype(dtype, copy=False)


def _ROWS(n: int) -> np.ndarray:
    """0, 1, ..., n - 1 (the row index of (N, C) picks), kept for the last n."""
    r = _rows_cache[0]
    if r.size != n:
        r = _rows_cache[0] = np.arange(n)
    return r


_rows_cache = [np.arange(0)]


def _plain_rows(x, target, weight, ignore_index) -> bool:
    """The common case: a float32/float64 (N, C) input with N < 2**24, int64 targets (N,), no weight, none ignored."""
    return (weight is None and x.ndim == 2 and target.ndim == 1 and x.dtype in (np.float32, np.float64)
            and target.dtype == np.int64 and 0 < x.shape[0] < 1 << 24 and x.shape[1] > 0
            and not (target == ignore_index).any())


def nll_loss_forward(x, target, weight, reduction, ignore_index):
    """-x[n, target[n], ...] * weight[target[n]], 0 where target == ignore_index; reduced. 'mean' divides by
    the sum of the weights that count (nan when none does, as PyTorch)."""
    if _plain_rows(x, target, weight, ignore_index):
        # (N, C) rows, every target counted with weight 1: the general path's numbers, without its masks
        loss = -x[_ROWS(x.shape[0]), target]
        if reduction == "none":
            return loss
        total = np.sum(loss, dtype=np.float64 if x.dtype == np.float64 else np.float32)
        if reduction == "sum":
            return np.asarray(total, dtype=x.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(total / total.dtype.type(x.shape[0]), dtype=x.dtype)
    axis = _class_axis(x.ndim)
    safe, w = _picked(target, weight, ignore_index, x.dtype)
    picked = np.squeeze(np.take_along_axis(x, np.expand_dims(safe, axis), axis), axis)
    loss = np.where(target != ignore_index, -picked * w, 0).astype(x.dtype, copy=False)
    if reduction == "none":
        return loss
    if x.dtype is BF16:
        return _nll_cascade_bf16(picked, w if weight is not None else None, target != ignore_index, reduction)
    total = np.sum(loss, dtype=np.float64 if x.dtype == np.float64 else np.float32)
    if reduction == "sum":
        return np.asarray(total, dtype=x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(total / np.sum(w, dtype=total.dtype), dtype=x.dtype)


def _nll_cascade_bf16(picked, w, keep, reduction):
    """PyTorch's bfloat16 nll_loss/nll_loss2d reduction (LossNLL.cpp, LossNLL2d.cpp): over the targets in order,
    a cascade of 8 partial sums of c10::BFloat16 (every addition rounded), a level flushed into the next after
    each counted target whose index has the level's bits zero; the levels added up from 0 in bfloat16, the
    weight total likewise (bfloat16(count) without a weight); 'mean' divides in bfloat16."""
    n = picked.size
    power = max(4, (max(n, 1) - 1).bit_length() // 8)   # utils::CeilLog2(numiter) / cascade_sum_num_levels
    mask = (1 << power) - 1
    zero = BF16.type(0)
    loss, wsum = [zero] * 8, [zero] * 8
    vals = picked.reshape(-1) if w is None else (picked * w).reshape(-1)   # data * weight_val, rounded
    ws = None if w is None else w.reshape(-1)
    for b in np.flatnonzero(keep.reshape(-1)).tolist():
        loss[0] = loss[0] - vals[b]
        if ws is not None:
            wsum[0] = wsum[0] + ws[b]
        for j in range(7):
            if b & (mask << (j * power)):
                break
            loss[j + 1], wsum[j + 1] = loss[j + 1] + loss[j], wsum[j + 1] + wsum[j]
            loss[j], wsum[j] = zero, zero
    out = zero
    for v in loss:
        out = out + v
    if reduction == "mean":
        total = BF16.type(int(keep.sum())) if w is None else zero
        if w is not None:
            for v in wsum:
                total = total + v
        with np.errstate(divide="ignore", invalid="ignore"):
            out = out / total
    return np.asarray(out, dtype=BF16)


def nll_loss_backward(g, x, target, weight, reduction, ignore_index):
    """The gradient of ``nll_loss_forward`` for its input ``x`` (linear in ``g``, its adjoint is the forward;
    ``x`` gives only its shape)."""
    shape = x.shape
    if _plain_rows(x, target, weight, ignore_index) and g.dtype in (np.float32, np.float64):
        n = shape[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = -(g / g.dtype.type(n)) if reduction == "mean" else -g
        out = np.zeros(shape, dtype=g.dtype)
        out[_ROWS(n), target] = scale
        return out
    axis = _class_axis(len(shape))
    safe, w = _picked(target, weight, ignore_index, g.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = -(g / np.sum(w)) if reduction == "mean" else -g
        vals = np.where(target != ignore_index, w * scale, 0).astype(g.dtype, copy=False)
    out = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(out, np.expand_dims(safe, axis), np.expand_dims(vals, axis), axis)
    return out


def _reduce_rows(loss, reduction):
    if reduction == "mean":
        return np.asarray(np.mean(loss) if loss.size else np.nan, dtype=loss.dtype)
    if reduction == "sum":
        return np.asarray(np.sum(loss), dtype=loss.dtype)
    return loss


def _rows_grad(g, n, reduction, dtype):
    """The incoming gradient per row (N, 1): spread (sum), divided by N (mean) or as it is (none)."""
    g = np.asarray(g, dtype=dtype)
    if reduction == "none":
        return g.reshape(n, 1)
    return np.broadcast_to(g / n if reduction == "mean" else g, (n, 1))


def _margins(x2, t, margin):
    """(N, C): margin - x[n, t[n]] + x[n, i], and the mask of i != t[n]."""
    picked = np.take_along_axis(x2, t[:, None], 1)
    others = np.arange(x2.shape[1])[None, :] != t[:, None]
    return margin - picked + x2, others


def multi_margin_loss_forward(x, target, p, margin, weight, reduction):
    """sum over i != y of w[y] max(0, margin - x[y] + x[i]) ** p / C, per row; reduced."""
    x2 = x.reshape(-1, x.shape[-1])
    t = target.reshape(-1).astype(np.int64)
    z, others = _margins(x2, t, margin)
    h = np.where(others & (z > 0), z if p == 1 else z * z, 0)
    if weight is not None:
        h = h * weight[t][:, None]
    loss = (np.sum(h, axis=1) / x2.shape[1]).astype(x.dtype, copy=False)
    if x.ndim == 1:
        loss = loss.reshape(target.shape)   # () or (1,), as the target
    return _reduce_rows(loss, reduction)


def multi_margin_loss_backward(g, x, target, p, margin, weight, reduction):
    x2 = x.reshape(-1, x.shape[-1])
    n, c = x2.shape
    t = target.reshape(-1).astype(np.int64)
    z, others = _margins(x2, t, margin)
    d = np.where(others & (z > 0), 1.0 if p == 1 else 2 * z, 0).astype(x.dtype, copy=False)
    if weight is not None:
        d = d * weight[t][:, None]
    d = d * (_rows_grad(g, n, reduction, x.dtype) / c)
    grad = d.copy()
    np.put_along_axis(grad, t[:, None], -np.sum(d, axis=1, keepdims=True), 1)
    return grad.reshape(x.shape).astype(x.dtype, copy=False)


def _label_counts(t2, c):
    """(N, C): how often each class is listed before the first -1 of its row, and whether it is listed."""
    valid = np.cumprod(t2 >= 0, axis=1).astype(bool)
    counts = np.zeros(t2.shape, np.int64)
    rows = np.broadcast_to(np.arange(t2.shape[0])[:, None], t2.shape)
    np.add.at(counts, (rows[valid], t2[valid]), 1)
    return counts[:, :c], counts[:, :c] > 0


def multilabel_margin_loss_forward(x, target, reduction):
    """sum over listed classes j and unlisted i of max(0, 1 - (x[j] - x[i])) / C, per row; reduced."""
    x2 = x.reshape(-1, x.shape[-1])
    c = x2.shape[1]
    counts, listed = _label_counts(target.reshape(x2.shape).astype(np.int64), c)
    z = 1 - x2[:, :, None] + x2[:, None, :]          # [n, j, i]
    h = np.where((z > 0) & ~listed[:, None, :], z, 0) * counts[:, :, None]
    loss = (np.sum(h, axis=(1, 2)) / c).astype(x.dtype, copy=False)
    if x.ndim == 1:
        loss = loss.reshape(())
    return _reduce_rows(loss, reduction)


def multilabel_margin_loss_backward(g, x, target, reduction):
    x2 = x.reshape(-1, x.shape[-1])
    n, c = x2.shape
    counts, listed = _label_counts(target.reshape(x2.shape).astype(np.int64), c)
    z = 1 - x2[:, :, None] + x2[:, None, :]
    act = (((z > 0) & ~listed[:, None, :]) * counts[:, :, None]).astype(x.dtype)
    grad = np.sum(act, axis=1) - np.sum(act, axis=2)
    grad = grad * (_rows_grad(g, n, reduction, x.dtype) / c)
    return grad.reshape(x.shape).astype(x.dtype, copy=False)


# ----- ctc_loss: the alpha/beta recursions, vectorised over the batch and the label positions -----------------

def _logsumexp3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    m = np.where(np.isinf(m), 0, m)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m)) + m


def _shift(x, k):
    """x moved k places right along the last axis (k < 0: left), -inf shifted in."""
    out = np.full_like(x, -np.inf)
    if k > 0:
        out[..., k:] = x[..., :-k]
    else:
        out[..., :k] = x[..., -k:]
    return out


def _ctc_tables(lp, ext, label_lengths, input_lengths, blank):
    """log alpha and log beta (T, N, S) over the extended label sequences ``ext`` (blank, l1, blank, ...)."""
    t_max, n, _ = lp.shape
    s = ext.shape[1]
    lpe = np.take_along_axis(lp, np.broadcast_to(ext[None], (t_max, n, s)), 2)
    valid = np.arange(s)[None, :] < (2 * label_lengths + 1)[:, None]
    skip = np.zeros((n, s), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    rows = np.arange(n)
    alpha = np.full((t_max, n, s), -np.inf, lp.dtype)
    alpha[0, :, 0] = lpe[0, :, 0]
    if s > 1:
        alpha[0, :, 1] = np.where(label_lengths > 0, lpe[0, :, 1], -np.inf)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        alpha[t] = np.where(valid, _logsumexp3(prev, _shift(prev, 1), np.where(skip, _shift(prev, 2), -np.inf))
                            + lpe[t], -np.inf)
    beta = np.full((t_max, n, s), -np.inf, lp.dtype)
    last = 2 * label_lengths
    skip_next = _shift(skip, -2).astype(bool)   # s -> s + 2 allowed
    for t in range(t_max - 1, -1, -1):
        start = np.full((n, s), -np.inf, lp.dtype)
        start[rows, last] = lpe[t, rows, last]
        has = label_lengths > 0
        start[rows[has], last[has] - 1] = lpe[t, rows[has], last[has] - 1]
        if t + 1 < t_max:
            nxt = beta[t + 1]
            rec = _logsumexp3(nxt, _shift(nxt, -1), np.where(skip_next, _shift(nxt, -2), -np.inf)) + lpe[t]
        else:
            rec = np.full((n, s), -np.inf, lp.dtype)
        ends, inside = (t == input_lengths - 1)[:, None], (t < input_lengths - 1)[:, None]
        step = np.where(ends, start, np.where(inside, rec, -np.inf))
        beta[t] = np.where(valid, step, -np.inf)
    return alpha, beta


def ctc_loss_forward(lp, ext, label_lengths, input_lengths, blank, zero_infinity):
    """The negative log likelihood of each target sequence (N,), summed over all alignments."""
    alpha, _ = _ctc_tables(lp, ext, label_lengths, input_lengths, blank)
    rows = np.arange(lp.shape[1])
    at_end = alpha[np.maximum(input_lengths - 1, 0), rows]            # (N, S)
    last = 2 * label_lengths
    end = at_end[rows, last]
    before = np.where(label_lengths > 0, at_end[rows, np.maximum(last - 1, 0)], -np.inf)
    return (-np.logaddexp(end, before)).astype(lp.dtype, copy=False)


def ctc_loss_backward(g, lp, ext, label_lengths, input_lengths, blank, zero_infinity):
    """PyTorch's gradient for log_probs: exp(lp) - exp(log(sum of alpha beta over the positions of each label)
    + nll - lp), times g; zero past each input length (and for infinite losses with zero_infinity). Like
    PyTorch's, it is the gradient through an implied log_softmax (the exp(lp) term vanishes behind one)."""
    alpha, beta = _ctc_tables(lp, ext, label_lengths, input_lengths, blank)
    nll = ctc_loss_forward(lp, ext, label_lengths, input_lengths, blank, zero_infinity)
    ab = alpha + beta
    m = np.max(ab, axis=2, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    onehot = (ext[:, :, None] == np.arange(lp.shape[2])[None, None, :]).astype(lp.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        acc = np.einsum("tns,nsc->tnc", np.exp(ab - m), onehot)
        lcab = np.log(acc) + m
        grad = (np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)) * np.asarray(g, lp.dtype)[None, :, None]
    keep = np.arange(lp.shape[0])[:, None] < input_lengths[None, :]
    if zero_infinity:
        keep = keep & ~np.isinf(nll)[None, :]
    return np.where(keep[:, :, None], grad, 0).astype(lp.dtype, copy=False)


def ctc_extended_targets(targets, target_lengths, blank: int):
    """CTC's extended label sequences, (N, 2 * S + 1) int64: each target with a blank before, between and after
    its labels, padded with blanks (S the longest target). ``targets`` is int64, (N, S') padded or the 1-D
    concatenation of the N sequences; the lengths have been checked against it. Not differentiable."""
    n = target_lengths.shape[0]
    width = int(target_lengths.max(initial=0))
    if targets.ndim == 2:
        labels = targets[:, :max(width, 0)]
    else:
        idx = np.cumsum(target_lengths) - target_lengths
        pos = idx[:, None] + np.arange(width)[None, :]
        labels = (targets[np.minimum(pos, max(targets.size - 1, 0))] if targets.size
                  else np.zeros((n, width), np.int64))
    width = labels.shape[1]
    mask = np.arange(width)[None, :] < target_lengths[:, None]
    ext = np.full((n, 2 * width + 1), blank, np.int64)
    ext[:, 1::2] = np.where(mask, labels, blank)
    return ext
