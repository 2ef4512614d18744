"""NumPy kernels of the convolution / pooling family's later additions (part of the raw namespace ``ember.devices.cpu.namespace``):
fractional max pooling's windows, the resampling pair whose backward is not the forward's transpose (nearest and
antialiased interpolation), and PyTorch's uint8 image resizing.

Underscored helpers are called by the public functions in ``ember/ops/nn_conv.py`` before (or instead of)
recording a primitive; ``resample`` / ``resample_backward`` are the kernels derivative rules call as ``xp.*``.
"""
from __future__ import annotations

import math as _math

import numpy as np


def _fractional_starts(u, S: int, L: int, k: int):
    """Window starts (P, L) along one dim of size ``S`` for pool size ``k``, from one sample per plane ``u``
    (P,): ATen's generate_intervals, computed in the samples' dtype (float32 samples round as float32):
    start_i = int((i + u) * alpha) - int(u * alpha) with alpha = (S - k) / (L - 1); the last is S - k."""
    out = np.empty((u.shape[0], L), dtype=np.int64)
    if L == 0:
        return out
    if L > 1:
        dt = u.dtype.type
        alpha = dt(S - k) / dt(L - 1)
        i = np.arange(L - 1, dtype=u.dtype)
        # C++'s static_cast<int> truncates toward zero (np.trunc, then the cast)
        out[:, :-1] = (np.trunc((i[None, :] + u[:, None]) * alpha).astype(np.int64)
                       - np.trunc(u * alpha).astype(np.int64)[:, None])
    out[:, -1] = S - k
    return out


def _fractional_max_indices(x, kernel, out_size, samples, order):
    """Flat spatial indices (N, C, *L) of each fractional window's maximum in ``x`` (N, C, *S).

    ``samples`` (>= N, C, d): one uniform sample per plane and dim; ``order[i]`` is the sample that drives
    spatial dim i (ATen's 2-d kernel reads sample 0 for the width, 1 for the height; 3-d: 0, 1, 2 for T, H,
    W). The scan is ATen's: a value wins when it is greater than the maximum so far or NaN (ties keep the
    first, NaN the last NaN); a window of -inf keeps its first position. One vectorised step per kernel
    offset, never a loop over pixels."""
    N, C = x.shape[:2]
    d = len(kernel)
    size = x.shape[2:]
    P = N * C
    if P == 0:   # an empty batch: no windows (reshape(0, -1) is ambiguous)
        return np.zeros((N, C) + tuple(out_size), np.int64)
    u = np.asarray(samples)[:N].reshape(P, d)
    starts = []
    for i in range(d):
        st = _fractional_starts(u[:, order[i]], size[i], out_size[i], kernel[i])
        shp = [P] + [1] * d
        shp[1 + i] = out_size[i]
        starts.append(st.reshape(shp))
    flat = x.reshape(P, -1)
    strides = [_math.prod(size[i + 1:]) for i in range(d)]
    first = sum(s * m for s, m in zip(starts, strides))
    first = np.broadcast_to(first, (P,) + tuple(out_size)).reshape(P, -1)
    best_idx = first.copy()
    if flat.shape[1] == 0 or first.shape[1] == 0:
        return best_idx.reshape((N, C) + tuple(out_size))
    best = np.full(first.shape, -np.inf, dtype=x.dtype)
    for off in np.ndindex(*kernel):
        idx = first + sum(o * m for o, m in zip(off, strides))
        v = np.take_along_axis(flat, idx, 1)
        take = (v > best) | (v != v)
        best = np.where(take, v, best)
        best_idx = np.where(take, idx, best_idx)
    return best_idx.reshape((N, C) + tuple(out_size))


# ----- resampling whose backward is not its forward's transpose ------------------------------------------------

def resample(x, mats, bmats, node):
    """Resampling forward: ``mats`` (one (L, S) matrix per spatial dim) applied to ``x``; ``node`` names the op
    (nearest or antialiased interpolation, see ember/ops/nn_conv.py)."""
    from .nn_conv import dim_matrices
    return dim_matrices(x, mats)


def resample_backward(g, mats, bmats, node):
    """Its backward: the transposes of ``bmats``, PyTorch's backward weights (for nearest: its backward index
    mapping, which copies a dim of the same size and halves the index of one of twice the size whatever
    scale_factor the forward used; antialiasing: the weights even where the forward copied a dim)."""
    from .nn_conv import dim_matrices
    return dim_matrices(g, tuple(b.T for b in bmats))


# ----- uint8 bilinear / bicubic interpolation ------------------------------------------------------------------
# PyTorch resizes uint8 images its own way (not the float kernel then a cast): one pass per spatial dim whose size
# changes, the last dim first, each with int16 fixed-point weights and the result rounded and clamped to 0..255
# before the next pass (ATen's separable uint8 path, after Pillow).

def _uint8_filter(x, cubic):
    x = np.abs(x)
    if not cubic:
        return np.maximum(1.0 - x, 0.0)
    a = -0.75   # the float kernels' constant (antialias=False)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _uint8_taps(S: int, L: int, scale, align_corners: bool, cubic: bool):
    """(first input index (L,), taps (L, n) int64, int16 weights (L, n), precision) of one dim, in float64 as
    ATen computes them; taps past an edge fold onto the edge sample's weight."""
    n = 4 if cubic else 2
    if align_corners:
        sc = (S - 1) / (L - 1) if L > 1 else 0.0
    else:
        sc = 1.0 / scale if scale is not None and scale > 0 else S / L
    i = np.arange(L, dtype=np.float64)
    if align_corners:
        real = sc * i
    else:
        real = sc * (i + 0.5) - 0.5
        if not cubic:
            real = np.maximum(real, 0.0)
    idx = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), S - 1)   # ATen's floorf
    lam = np.clip(real - idx, 0.0, 1.0)
    support = n // 2
    lo = idx - support + 1
    first = np.maximum(lo, 0)
    size = np.clip(np.minimum(idx + support + 1, S) - first, 0, n)
    w = np.zeros((L, n))
    wmax = np.zeros(L)
    slot = np.zeros(L, dtype=np.int64)
    rows = np.arange(L)
    for j in range(n):   # n <= 4 taps: the edge folding of ATen's loop, vectorised over the outputs
        v = _uint8_filter(j + 1 - support - lam, cubic)
        pos = lo + j
        slot = np.where(pos <= 0, 0, np.where(pos >= S - 1, size - 1, slot))
        w[rows, slot] += v
        wmax = np.maximum(wmax, w[rows, slot])
        slot = slot + 1
    top = wmax.max() if L else 0.0
    prec = 0
    while prec < 22 and int(0.5 + top * (1 << (prec + 1))) < (1 << 15):
        prec += 1
    v = w * (1 << prec)
    w16 = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64)
    w16[np.arange(n)[None, :] >= size[:, None]] = 0   # taps past the window's size are not read
    taps = np.minimum(first[:, None] + np.arange(n)[None, :], S - 1)
    return taps, w16, prec


def _uint8_resize(x, out_size, scales, align_corners: bool, cubic: bool):
    """``x`` uint8 (N, C, *S) resized to ``out_size`` (bilinear or bicubic), PyTorch's uint8 way."""
    d = len(out_size)
    if tuple(x.shape[2:]) == tuple(out_size):
        return x.copy()
    y = x.astype(np.int64)
    for k in reversed(range(d)):   # the last spatial dim first, then the others
        ax = 2 + k
        S, L = y.shape[ax], out_size[k]
        if S == L:
            continue
        taps, w16, prec = _uint8_taps(S, L, None if scales is None else scales[k], align_corners, cubic)
        moved = np.moveaxis(y, ax, -1)
        acc = np.full(moved.shape[:-1] + (L,), 1 << (prec - 1), dtype=np.int64)
        for j in range(taps.shape[1]):
            acc += moved[..., taps[:, j]] * w16[:, j]
        y = np.moveaxis(np.clip(acc >> prec, 0, 255), -1, ax)
    return y.astype(np.uint8)


def _uint8_resize_weights(x, mats):
    """``x`` uint8 (N, C, *S) resized by float64 weight matrices ``mats`` (one (L, S) per spatial dim; antialiased
    resizing), PyTorch's uint8 way: the last dim first, a dim of unchanged size skipped, each pass with the weights
    rounded to int16 at the largest precision that keeps the largest weight under 2^15, its result rounded and
    clamped to 0..255."""
    y = x.astype(np.int64)
    d = len(mats)
    for k in reversed(range(d)):
        ax = 2 + k
        m = mats[k]
        if m.shape[0] == m.shape[1] == y.shape[ax]:
            continue
        top = m.max() if m.size else 0.0
        prec = 0
        while prec < 22 and int(0.5 + top * (1 << (prec + 1))) < (1 << 15):
            prec += 1
        v = m * (1 << prec)
        w16 = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int64)
        acc = np.moveaxis(y, ax, -1) @ w16.T + (1 << (prec - 1))
        y = np.moveaxis(np.clip(acc >> prec, 0, 255), -1, ax)
    return y.astype(np.uint8)
