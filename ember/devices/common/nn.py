"""The nn kernels (activations, normalisation, one-hot) in array-API standard operations."""
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

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "erf")
            and callable(f)}
