"""The nn kernels (activations, normalisation, one-hot, embeddings, losses) in array-API standard operations.

The scatters of the cpu kernels (NumPy's ``add.at``, ``put_along_axis``) are comparisons with every target position here:
O(targets x sources) memory, right for these correctness paths."""
from __future__ import annotations

import math

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_KAPPA = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_ONE_SIXTH = 0.1666666716337204   # float32(1/6): PyTorch's hardsigmoid_backward multiplies by a float constant


def kernels(k, erf) -> dict:
    xp = k.xp

    def _axis(x, dim):
        return dim % x.ndim if x.ndim else None

    def _s(v, x):
        return xp.asarray(v, dtype=x.dtype)

    def _zero_where(drop, g):
        return xp.where(drop, xp.zeros((), dtype=g.dtype), g)

    def softmax(x, dim):
        if k.numel(x) == 0:
            return xp.asarray(x, copy=True)
        ax = _axis(x, dim)
        e = xp.exp(x - xp.max(x, axis=ax, keepdims=True))
        return e / xp.sum(e, axis=ax, keepdims=True)

    def log_softmax(x, dim):
        if k.numel(x) == 0:
            return xp.asarray(x, copy=True)
        ax = _axis(x, dim)
        s = x - xp.max(x, axis=ax, keepdims=True)
        return s - xp.log(xp.sum(xp.exp(s), axis=ax, keepdims=True))

    def leaky_relu(x, negative_slope):
        return xp.where(x > 0, x, x * negative_slope)

    def elu(x, alpha, scale, input_scale):
        return xp.where(x > 0, x * scale, xp.expm1(x * input_scale) * (alpha * scale))

    def gelu(x, approximate):
        if approximate == "tanh":
            inner = _KAPPA * (x + 0.044715 * (x * x * x))
            return 0.5 * x * (1 + xp.tanh(inner))
        return 0.5 * x * (1 + erf(x * _SQRT1_2))

    def _sigmoid(x):
        return 1 / (1 + xp.exp(-x))

    def silu(x):
        return x / (1 + xp.exp(-x))

    def mish(x):
        return x * xp.tanh(xp.log1p(xp.exp(x)))

    def softplus(x, beta, threshold):
        bx = x * beta
        return xp.where(bx > threshold, x, xp.log1p(xp.exp(bx)) / beta)

    def hardtanh(x, min_val, max_val):
        return xp.minimum(xp.maximum(x, _s(min_val, x)), _s(max_val, x))

    def hardsigmoid(x):
        return xp.minimum(xp.maximum(x + 3, _s(0, x)), _s(6, x)) / 6

    def hardswish(x):
        return x * xp.minimum(xp.maximum(x + 3, _s(0, x)), _s(6, x)) / 6

    def hardshrink(x, lambd):
        return xp.where((x >= -lambd) & (x <= lambd), _s(0, x), x)

    def softshrink(x, lambd):
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, _s(0, x)))

    def log_sigmoid(x):
        return xp.minimum(x, _s(0, x)) - xp.log1p(xp.exp(-xp.abs(x)))

    def threshold(x, threshold, value):
        v = xp.astype(xp.asarray(value), x.dtype)
        thr = xp.asarray(threshold, dtype=x.dtype) if k.is_float(x) or isinstance(threshold, int) else \
            xp.asarray(threshold)
        return xp.where((xp.astype(x, thr.dtype) if thr.dtype != x.dtype else x) <= thr, v, x)

    def glu(x, dim):
        dim %= x.ndim
        n = x.shape[dim] // 2
        a, b = x[k.along(dim, slice(0, n))], x[k.along(dim, slice(n, None))]
        return a * _sigmoid(b)

    def prelu(x, weight):
        return xp.where(x > 0, x, x * weight)

    def rrelu_with_noise(x, noise, lower, upper, training):
        n = xp.astype(noise, x.dtype) if training else _s((lower + upper) / 2, x)
        return xp.where(x > 0, x, x * n)

    def threshold_backward(g, x, threshold):
        return _zero_where(x <= threshold, g)

    def hardtanh_backward(g, x, min_val, max_val):
        return _zero_where((x <= min_val) | (x >= max_val), g)

    def leaky_relu_backward(g, x, negative_slope):
        return xp.where(x > 0, g, g * negative_slope)

    def hardshrink_backward(g, x, lambd):
        return _zero_where((x >= -lambd) & (x <= lambd), g)

    softshrink_backward = hardshrink_backward

    def rrelu_with_noise_backward(g, x, noise, lower, upper, training):
        return xp.where(x > 0, g, g * (xp.astype(noise, g.dtype) if training else _s((lower + upper) / 2, g)))

    def hardsigmoid_backward(g, x):
        return xp.where((x > -3.0) & (x < 3.0), g * _ONE_SIXTH, _s(0, g))

    def hardswish_backward(g, x):
        return xp.where(x <= -3.0, _s(0, g), xp.where(x < 3.0, g * (x / 3.0 + 0.5), g))

    def prelu_backward_self(g, x, w):
        return xp.where(x > 0, g, g * w)

    def prelu_backward_weight(g, x, w):
        return xp.where(x > 0, _s(0, g), g * x)

    def elu_backward(g, x, alpha, scale, input_scale):
        neg = xp.exp(xp.where(x < 0, x, _s(0, x)) * input_scale) * (alpha * scale * input_scale)
        return xp.where(x > 0, g * scale, g * neg)

    def softplus_backward(g, x, beta, threshold):
        bx = x * beta
        return xp.where(bx > threshold, g, g * _sigmoid(xp.where(bx < threshold, bx, _s(threshold, bx))))

    def log_sigmoid_backward(g, x):
        return g * _sigmoid(-x)

    def gelu_backward(g, x, approximate):
        if approximate == "tanh":
            x2 = x * x
            t = xp.tanh((x + x2 * x * 0.044715) * _KAPPA)
            return g * ((t + 1) * 0.5 + x * (1 - t * t) * ((x2 * (3 * 0.044715) + 1) * (0.5 * _KAPPA)))
        cdf = (erf(x * _SQRT1_2) + 1) * 0.5
        pdf = xp.exp(x * x * -0.5) * _INV_SQRT_2PI
        return g * (cdf + x * pdf)

    def index_bounds(x):
        return None if k.numel(x) == 0 else (int(xp.min(x)), int(xp.max(x)))

    def one_hot(x, num_classes):
        return xp.astype(x[..., None] == xp.arange(num_classes, dtype=x.dtype), xp.int64)

    def norm_xhat(x, view, axes, eps):
        """``((x - mean) * rstd, rstd)`` over ``axes`` (statistics in float64, as the cpu kernel)."""
        xg = x if view is None else xp.reshape(x, tuple(view))
        axes = tuple(axes)
        if k.numel(xg) == 0:
            shape = tuple(1 if i in axes else s for i, s in enumerate(xg.shape))
            rstd = xp.full(shape, math.nan, dtype=x.dtype)
            return xg * rstd, rstd
        w = xp.astype(xg, xp.float64)
        m = xp.astype(xp.mean(w, axis=axes, keepdims=True), x.dtype)
        xc = xg - m
        wc = xp.astype(xc, xp.float64)
        d = xp.mean(wc, axis=axes, keepdims=True)
        var = xp.mean(wc * wc, axis=axes, keepdims=True) - d * d
        rstd = xp.astype(1.0 / xp.sqrt(xp.maximum(var, xp.asarray(0.0, dtype=var.dtype)) + eps), x.dtype)
        return (xc - xp.astype(d, x.dtype)) * rstd, rstd

    # ----- embeddings ------------------------------------------------------------------------------------------
    def _vector_norms(x, p):
        """The ``p``-norm of each row of ``x``, as NumPy's ``linalg.norm(x, ord=p, axis=1)`` computes it."""
        a = xp.abs(x)
        if p == math.inf:
            return xp.max(a, axis=1)
        if p == -math.inf:
            return xp.min(a, axis=1)
        if p == 0:
            return xp.sum(xp.astype(x != 0, x.dtype), axis=1)
        if p == 1:
            return xp.sum(a, axis=1)
        if p == 2:
            return xp.sqrt(xp.sum(x * x, axis=1))
        return xp.sum(a ** p, axis=1) ** (1.0 / p)

    def embedding_renorm_(w, idx, max_norm, norm_type):
        """Each row of ``w`` indexed by ``idx`` whose norm exceeds ``max_norm`` scaled by max_norm / (norm + 1e-7),
        in place (norms in float64, as the cpu kernel)."""
        used = xp.any(xp.reshape(idx, (-1,))[:, None] == xp.arange(w.shape[0], dtype=idx.dtype)[None, :], axis=0)
        if w.shape[0] == 0 or w.shape[1] == 0 or not bool(xp.any(used)):
            return
        norms = _vector_norms(xp.astype(xp.abs(w), xp.float64), norm_type)   # complex: the moduli's norm
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        w[...] = xp.where(used[:, None], xp.astype(w * scale[:, None], w.dtype), w)

    def _bag_hits(bags, nbags: int):
        """(nbags, n): whether position i is in bag b."""
        return bags[None, :] == xp.arange(nbags, dtype=bags.dtype)[:, None]

    def _bag_max(rows, hit):
        """Per bag (hit: (nbags, n)) the column-wise maximum of its rows; -inf for an empty bag."""
        if rows.shape[0] == 0:
            return xp.full((hit.shape[0], rows.shape[1]), -math.inf, dtype=rows.dtype)
        return xp.max(xp.where(hit[:, :, None], rows[None, :, :], -math.inf), axis=1)

    def embedding_bag(w, psw, inv_count, indices, bags, nbags, mode, keep, fast=False):
        """Per bag: the sum (weighted by ``psw``), mean or max of the rows ``w[indices]`` kept by ``keep``; empty
        bags give 0. ``inv_count``: 1 / (number of rows kept) per bag, for the mean."""
        rows = xp.take(w, indices[keep], axis=0)
        if psw is not None:
            rows = rows * psw[keep][:, None]
        hit = _bag_hits(bags[keep], nbags)
        if mode == "max":
            out = _bag_max(rows, hit)
            return xp.where(out == -math.inf, xp.zeros((), dtype=w.dtype), out)
        out = xp.sum(xp.where(hit[:, :, None], rows[None, :, :], xp.zeros((), dtype=rows.dtype)), axis=1)
        return out * inv_count[:, None] if mode == "mean" else out

    def embedding_bag_argmax(w, indices, bags, nbags, keep):
        """For mode='max': (bag, column, weight row) of each maximum, the first position in its bag winning ties."""
        n = indices.shape[0]
        rows = xp.take(w, indices, axis=0)
        hit_bag = _bag_hits(bags, nbags)
        out = _bag_max(rows, hit_bag & keep[None, :])
        hit = keep[:, None] & (rows == xp.take(out, bags, axis=0))
        pos = xp.arange(n, dtype=xp.int64)[None, :, None]
        first = xp.min(xp.where(hit_bag[:, :, None] & hit[None, :, :], pos, n), axis=1) if n else \
            xp.full((nbags, w.shape[1]), n, dtype=xp.int64)
        bag, col = xp.nonzero(first < n)
        bag, col = xp.astype(bag, xp.int64), xp.astype(col, xp.int64)
        return bag, col, xp.take(indices, first[bag, col])

    def embedding_freq_backward(g, inv, indices, padding_idx, num_weights):
        """embedding(scale_grad_by_freq=True)'s weight gradient: row k the sum of ``inv[i] * g[i]`` over the
        positions of index k (the padding index left out), summed in float64 and rounded once."""
        d = g.shape[-1]
        g2 = xp.astype(xp.reshape(g, (-1, d)), xp.float64)
        idx = xp.reshape(indices, (-1,))
        contrib = xp.astype(xp.reshape(inv, (-1,)), xp.float64)[:, None] * g2
        hit = idx[None, :] == xp.arange(num_weights, dtype=idx.dtype)[:, None]
        if padding_idx >= 0:
            hit = hit & (idx != padding_idx)[None, :]
        if idx.shape[0] == 0:
            return xp.zeros((num_weights, d), dtype=g.dtype)
        return xp.astype(xp.sum(xp.where(hit[:, :, None], contrib[None, :, :], 0.0), axis=1), g.dtype)

    # ----- losses (the cpu kernels' formulas, ember/devices/cpu/nn_loss.py) --------------------------------------
    def _class_axis(ndim: int) -> int:
        return 0 if ndim == 1 else 1

    def _picked(target, weight, ignore_index, dtype):
        """(the target with 0 where ignored (int64), the per-target weight with 0 where ignored). ``target``
        int64 (a uint8 one is widened by the callers: the standard compares it with no negative ignore_index)."""
        keep = target != ignore_index
        safe = xp.astype(xp.where(keep, target, xp.zeros_like(target)), xp.int64)
        w = xp.ones(tuple(target.shape), dtype=dtype) if weight is None else \
            xp.astype(xp.reshape(xp.take(weight, xp.reshape(safe, (-1,))), tuple(target.shape)), dtype)
        return safe, xp.where(keep, w, xp.zeros((), dtype=dtype))

    def nll_loss_forward(x, target, weight, reduction, ignore_index):
        """-x[n, target[n], ...] * weight[target[n]], 0 where target == ignore_index; reduced ('mean' divides by
        the sum of the weights that count: nan when none does)."""
        target = xp.astype(target, xp.int64)
        axis = _class_axis(x.ndim)
        safe, w = _picked(target, weight, ignore_index, x.dtype)
        picked = xp.squeeze(xp.take_along_axis(x, xp.expand_dims(safe, axis=axis), axis=axis), axis=axis)
        loss = xp.where(target != ignore_index, -picked * w, xp.zeros((), dtype=x.dtype))
        if reduction == "none":
            return loss
        total = xp.sum(loss)
        return total if reduction == "sum" else total / xp.sum(w)

    def nll_loss_backward(g, x, target, weight, reduction, ignore_index):
        """The gradient of ``nll_loss_forward`` for ``x`` (only its shape is read)."""
        target = xp.astype(target, xp.int64)
        shape = tuple(x.shape)
        axis = _class_axis(len(shape))
        safe, w = _picked(target, weight, ignore_index, g.dtype)
        scale = -(g / xp.sum(w)) if reduction == "mean" else -g
        vals = xp.where(target != ignore_index, w * scale, xp.zeros((), dtype=g.dtype))
        classes = xp.reshape(xp.arange(shape[axis], dtype=xp.int64),
                             (1,) * axis + (shape[axis],) + (1,) * (len(shape) - axis - 1))
        return xp.where(xp.expand_dims(safe, axis=axis) == classes, xp.expand_dims(vals, axis=axis),
                        xp.zeros((), dtype=g.dtype))

    def _reduce_rows(loss, reduction):
        if reduction == "mean":
            return xp.mean(loss) if k.numel(loss) else xp.asarray(math.nan, dtype=loss.dtype)
        if reduction == "sum":
            return xp.sum(loss)
        return loss

    def _rows_grad(g, n, reduction, dtype):
        """The incoming gradient per row (N, 1): spread (sum), divided by N (mean) or as it is (none)."""
        g = xp.astype(g, dtype) if hasattr(g, "dtype") else xp.asarray(g, dtype=dtype)
        if reduction == "none":
            return xp.reshape(g, (n, 1))
        return xp.broadcast_to(g / n if reduction == "mean" else g, (n, 1))

    def _margins(x2, t, margin):
        """(N, C): margin - x[n, t[n]] + x[n, i], and the mask of i != t[n]."""
        picked = xp.take_along_axis(x2, t[:, None], axis=1)
        others = xp.arange(x2.shape[1], dtype=xp.int64)[None, :] != t[:, None]
        return margin - picked + x2, others

    def multi_margin_loss_forward(x, target, p, margin, weight, reduction):
        """sum over i != y of w[y] max(0, margin - x[y] + x[i]) ** p / C, per row; reduced."""
        x2 = xp.reshape(x, (-1, x.shape[-1]))
        t = xp.astype(xp.reshape(target, (-1,)), xp.int64)
        z, others = _margins(x2, t, margin)
        h = xp.where(others & (z > 0), z if p == 1 else z * z, xp.zeros((), dtype=z.dtype))
        if weight is not None:
            h = h * xp.take(weight, t)[:, None]
        loss = xp.astype(xp.sum(h, axis=1) / x2.shape[1], x.dtype)
        if x.ndim == 1:
            loss = xp.reshape(loss, tuple(target.shape))   # () or (1,), as the target
        return _reduce_rows(loss, reduction)

    def multi_margin_loss_backward(g, x, target, p, margin, weight, reduction):
        x2 = xp.reshape(x, (-1, x.shape[-1]))
        n, c = x2.shape
        t = xp.astype(xp.reshape(target, (-1,)), xp.int64)
        z, others = _margins(x2, t, margin)
        d = xp.where(others & (z > 0), xp.ones_like(z) if p == 1 else 2 * z, xp.zeros((), dtype=z.dtype))
        d = xp.astype(d, x.dtype)
        if weight is not None:
            d = d * xp.take(weight, t)[:, None]
        d = d * (_rows_grad(g, n, reduction, x.dtype) / c)
        grad = xp.where(others, d, -xp.sum(d, axis=1, keepdims=True))   # the target's entry: minus the rest
        return xp.astype(xp.reshape(grad, tuple(x.shape)), x.dtype)

    def _label_counts(t2, c):
        """(N, C): how often each class is listed before the first -1 of its row, and whether it is listed."""
        valid = xp.cumulative_sum(xp.astype(t2 < 0, xp.int64), axis=1) == 0
        hits = valid[:, :, None] & (t2[:, :, None] == xp.arange(c, dtype=t2.dtype)[None, None, :])
        counts = xp.sum(xp.astype(hits, xp.int64), axis=1)
        return counts, counts > 0

    def _label_hinges(x, target):
        """(rows x2, active hinge counts (N, j, i) as int64): listed class j, unlisted i with 1 - x[j] + x[i] > 0,
        counted as often as j is listed."""
        x2 = xp.reshape(x, (-1, x.shape[-1]))
        counts, listed = _label_counts(xp.astype(xp.reshape(target, tuple(x2.shape)), xp.int64), x2.shape[1])
        z = 1 - x2[:, :, None] + x2[:, None, :]          # [n, j, i]
        act = xp.astype((z > 0) & ~listed[:, None, :], xp.int64) * counts[:, :, None]
        return x2, z, act

    def multilabel_margin_loss_forward(x, target, reduction):
        """sum over listed classes j and unlisted i of max(0, 1 - (x[j] - x[i])) / C, per row; reduced (summed in
        float64, as the cpu kernel's int64 counts promote it)."""
        x2, z, act = _label_hinges(x, target)
        h = xp.astype(z, xp.float64) * xp.astype(act, xp.float64)
        loss = xp.astype(xp.sum(h, axis=(1, 2)) / x2.shape[1], x.dtype)
        if x.ndim == 1:
            loss = xp.reshape(loss, ())
        return _reduce_rows(loss, reduction)

    def multilabel_margin_loss_backward(g, x, target, reduction):
        x2, _, act = _label_hinges(x, target)
        n, c = x2.shape
        act = xp.astype(act, x.dtype)
        grad = xp.sum(act, axis=1) - xp.sum(act, axis=2)
        grad = grad * (_rows_grad(g, n, reduction, x.dtype) / c)
        return xp.astype(xp.reshape(grad, tuple(x.shape)), x.dtype)

    # ctc_loss: the alpha/beta recursions, vectorised over the batch and the label positions
    def _logsumexp3(a, b, c):
        m = xp.maximum(xp.maximum(a, b), c)
        m = xp.where(xp.isinf(m), xp.zeros((), dtype=m.dtype), m)
        return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m

    def _shift(x, kk, fill=-math.inf):
        """x moved kk places right along the last axis (kk < 0: left), ``fill`` shifted in."""
        out = xp.full(tuple(x.shape), fill, dtype=x.dtype)
        if abs(kk) >= x.shape[-1]:   # nothing left (the standard has no out-of-range slice bounds)
            return out
        if kk > 0:
            out[..., kk:] = x[..., :-kk]
        else:
            out[..., :kk] = x[..., -kk:]
        return out

    def _ctc_tables(lp, ext, label_lengths, input_lengths, blank, beta=True):
        """log alpha and log beta (T, N, S) over the extended label sequences ``ext`` (blank, l1, blank, ...)."""
        t_max, n, _ = lp.shape
        s = ext.shape[1]
        ninf = -math.inf
        lpe = xp.take_along_axis(lp, xp.broadcast_to(ext[None, ...], (t_max, n, s)), axis=2)
        pos = xp.arange(s, dtype=xp.int64)[None, :]
        valid = pos < (2 * label_lengths + 1)[:, None]
        skip = xp.zeros((n, s), dtype=xp.bool)
        if s > 2:
            skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
        first = xp.full((n, s), ninf, dtype=lp.dtype)
        first[:, 0] = lpe[0, :, 0]
        if s > 1:
            first[:, 1] = xp.where(label_lengths > 0, lpe[0, :, 1], ninf)
        alphas = [first]
        for t in range(1, t_max):
            prev = alphas[-1]
            alphas.append(xp.where(valid, _logsumexp3(prev, _shift(prev, 1), xp.where(skip, _shift(prev, 2), ninf))
                                   + lpe[t, ...], ninf))
        alpha = xp.stack(alphas, axis=0)
        if not beta:
            return alpha, None
        last = (2 * label_lengths)[:, None]
        has = (label_lengths > 0)[:, None]
        skip_next = _shift(skip, -2, False)   # s -> s + 2 allowed
        betas = []
        for t in range(t_max - 1, -1, -1):
            start = xp.where(pos == last, lpe[t, ...], ninf)
            start = xp.where(has & (pos == last - 1), lpe[t, ...], start)
            if betas:
                nxt = betas[-1]
                rec = _logsumexp3(nxt, _shift(nxt, -1), xp.where(skip_next, _shift(nxt, -2), ninf)) + lpe[t, ...]
            else:
                rec = xp.full((n, s), ninf, dtype=lp.dtype)
            ends, inside = (t == input_lengths - 1)[:, None], (t < input_lengths - 1)[:, None]
            betas.append(xp.where(valid, xp.where(ends, start, xp.where(inside, rec, ninf)), ninf))
        return alpha, xp.stack(betas[::-1], axis=0)

    def ctc_loss_forward(lp, ext, label_lengths, input_lengths, blank, zero_infinity):
        """The negative log likelihood of each target sequence (N,), summed over all alignments."""
        alpha, _ = _ctc_tables(lp, ext, label_lengths, input_lengths, blank, beta=False)
        n, s = alpha.shape[1:]
        at = xp.maximum(input_lengths - 1, xp.zeros((), dtype=input_lengths.dtype))
        at_end = xp.take_along_axis(alpha, xp.broadcast_to(xp.astype(at, xp.int64)[None, :, None], (1, n, s)),
                                    axis=0)[0, ...]                                    # (N, S)
        last = xp.astype(2 * label_lengths, xp.int64)[:, None]
        end = xp.take_along_axis(at_end, last, axis=1)[:, 0]
        before = xp.take_along_axis(at_end, xp.maximum(last - 1, xp.zeros((), dtype=xp.int64)), axis=1)[:, 0]
        before = xp.where(label_lengths > 0, before, -math.inf)
        return xp.astype(-xp.logaddexp(end, before), lp.dtype)

    def ctc_loss_backward(g, lp, ext, label_lengths, input_lengths, blank, zero_infinity):
        """PyTorch's gradient for log_probs: exp(lp) - exp(log(sum of alpha beta over the positions of each label)
        + nll - lp), times g; zero past each input length (and for infinite losses with zero_infinity)."""
        alpha, beta = _ctc_tables(lp, ext, label_lengths, input_lengths, blank)
        nll = ctc_loss_forward(lp, ext, label_lengths, input_lengths, blank, zero_infinity)
        ab = alpha + beta
        m = xp.max(ab, axis=2, keepdims=True)
        m = xp.where(xp.isinf(m), xp.zeros((), dtype=m.dtype), m)
        onehot = xp.astype(ext[:, :, None] == xp.arange(lp.shape[2], dtype=ext.dtype)[None, None, :], lp.dtype)
        # acc[t, n, c] = sum over s of exp(ab - m)[t, n, s] onehot[n, s, c]
        acc = xp.permute_dims(xp.matmul(xp.permute_dims(xp.exp(ab - m), (1, 0, 2)), onehot), (1, 0, 2))
        lcab = xp.log(acc) + m
        gg = xp.astype(g, lp.dtype) if hasattr(g, "dtype") else xp.asarray(g, dtype=lp.dtype)
        grad = (xp.exp(lp) - xp.exp(lcab + nll[None, :, None] - lp)) * gg[None, :, None]
        keep = xp.arange(lp.shape[0], dtype=xp.int64)[:, None] < input_lengths[None, :]
        if zero_infinity:
            keep = keep & ~xp.isinf(nll)[None, :]
        return xp.astype(xp.where(keep[:, :, None], grad, xp.zeros((), dtype=lp.dtype)), lp.dtype)

    def ctc_extended_targets(targets, target_lengths, blank: int):
        """CTC's extended label sequences, (N, 2 * S + 1) int64: each target with a blank before, between and after
        its labels, padded with blanks (S the longest target). ``targets``: (N, S') padded, or the 1-D
        concatenation of the N sequences."""
        n = target_lengths.shape[0]
        width = max(int(xp.max(target_lengths)) if n else 0, 0)
        if targets.ndim == 2:
            labels = targets[:, :width]
        elif k.numel(targets):
            start = xp.cumulative_sum(target_lengths) - target_lengths
            pos = start[:, None] + xp.arange(width, dtype=start.dtype)[None, :]
            pos = xp.minimum(pos, xp.asarray(targets.shape[0] - 1, dtype=pos.dtype))
            labels = xp.reshape(xp.take(targets, xp.reshape(xp.astype(pos, xp.int64), (-1,))), (n, width))
        else:
            labels = xp.zeros((n, width), dtype=xp.int64)
        width = labels.shape[1]
        mask = xp.arange(width, dtype=xp.int64)[None, :] < target_lengths[:, None]
        ext = xp.full((n, 2 * width + 1), blank, dtype=xp.int64)
        ext[:, 1::2] = xp.where(mask, xp.astype(labels, xp.int64), xp.asarray(blank, dtype=xp.int64))
        return ext

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "erf")
            and callable(f)}
