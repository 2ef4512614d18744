"""NumPy kernels of resampling (part of the raw namespace ``ember.devices.cpu.namespace``): interpolate's weight
matrices (one (out, in) matrix per spatial dim, ATen's index formulas), the resampling pair whose backward is not
the forward's transpose (nearest and antialiased interpolation), and PyTorch's uint8 image resizing.

``resample`` / ``resample_backward`` are the kernels derivative rules call as ``xp.*``; the matrices and the uint8
paths are not differentiable: ``ember/ops/nn_resample.py``'s interpolate calls them on the input's data before (or
instead of) recording a primitive.
"""
from __future__ import annotations

import math as _math

import numpy as np

from .nn_pool import dim_matrices

__all__ = ["resample", "resample_backward",
           # not differentiable (see above)
           "interpolate_matrices", "interpolate_aa_matrices", "interpolate_uint8", "interpolate_aa_uint8"]


# ----- interpolate's matrices ------------------------------------------------------------------------------------
# Every mode but 'area' is separable: one (out, in) matrix per spatial dim. The matrices follow ATen's index
# formulas (UpSample.h), in the input's precision (float32 opmath for float32).

def _scale_value(scale, S, L, dt):
    return dt(1.0 / scale) if scale is not None and scale > 0 else dt(S) / dt(L)


def _linear_scale(scale, S, L, align_corners, dt):
    if align_corners:
        return dt(S - 1) / dt(L - 1) if L > 1 else dt(0)
    return _scale_value(scale, S, L, dt)


def _source_index(scale, L, align_corners, cubic, dt):
    dst = np.arange(L, dtype=dt)
    if align_corners:
        return scale * dst
    src = scale * (dst + dt(0.5)) - dt(0.5)
    return src if cubic else np.maximum(src, dt(0))


def _interp_matrix(mode, S, L, scale, align_corners, dt, exact_sizes=False, generic=False):
    """The (L, S) matrix of one spatial dim. Nearest modes have two index formulas in PyTorch: ``generic`` (its
    generic kernel: the source index in the input's precision, then floorf) and the nearest_idx one (its 2-d
    small-output kernel and every backward: float32 arithmetic; ``exact_sizes``: a same-size dim copies and a
    double-size one halves its index whatever the scale, mode 'nearest' only)."""
    m = np.zeros((L, S), dtype=dt)
    rows = np.arange(L)
    if mode in ("nearest", "nearest-exact"):
        if exact_sizes and L == S:
            src = rows
        elif exact_sizes and L == 2 * S:
            src = rows >> 1
        elif generic:
            sc = _scale_value(scale, S, L, dt)
            r = rows.astype(dt)
            real = r * sc if mode == "nearest" else np.maximum(sc * (r + dt(0.5)) - dt(0.5), dt(0)) + dt(0.5)
            src = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), S - 1)   # floorf
        else:
            sc = np.float32(_scale_value(scale, S, L, np.float32))
            off = np.float32(0.5) if mode == "nearest-exact" else np.float32(0)
            src = np.minimum(np.floor((rows.astype(np.float32) + off) * sc).astype(np.int64), S - 1)
        m[rows, src] = 1
        return m
    if mode == "linear":
        if L == S:   # PyTorch copies a dim whose size is unchanged, whatever scale_factor was given
            m[rows, rows] = 1
            return m
        sc = _linear_scale(scale, S, L, align_corners, dt)
        src = _source_index(sc, L, align_corners, False, dt)
        i0 = src.astype(np.int64)
        i1 = i0 + (i0 < S - 1)
        lam1 = src - i0.astype(dt)
        np.add.at(m, (rows, i0), dt(1) - lam1)
        np.add.at(m, (rows, i1), lam1)
        return m
    # bicubic, A = -0.75, taps at floor(x)-1 .. floor(x)+2 clamped to the border
    sc = _linear_scale(scale, S, L, align_corners, dt)
    src = _source_index(sc, L, align_corners, True, dt)
    i = np.floor(src)
    t = src - i
    A = dt(-0.75)

    def cc1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def cc2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    coeffs = (cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t))
    for k, c in enumerate(coeffs):
        idx = np.clip(i.astype(np.int64) - 1 + k, 0, S - 1)
        np.add.at(m, (rows, idx), c.astype(dt))
    return m


def interpolate_matrices(x, mode, out_size, scales, align_corners, exact_sizes=False, generic=False):
    """The (L, S) matrices (see _interp_matrix) of resizing the spatial dims of ``x`` (N, C, *S) to ``out_size``
    with ``mode`` ('nearest', 'nearest-exact', 'linear' or 'cubic'), in ``x``'s float dtype (float32 for uint8:
    PyTorch computes uint8 indices in float32)."""
    dt = x.dtype.type if x.dtype.kind in "fV" else np.float32
    return tuple(_interp_matrix(mode, S, L, None if scales is None else scales[i], align_corners, dt, exact_sizes,
                                generic)
                 for i, (S, L) in enumerate(zip(x.shape[2:], out_size)))


def interpolate_uint8(x, mode, out_size, scales, align_corners):
    """uint8 images (no gradient): nearest picks as the float kernels do (indices in float32); bilinear and bicubic
    are PyTorch's fixed-point separable passes (_uint8_resize)."""
    if mode in ("bilinear", "bicubic"):
        return _uint8_resize(x, tuple(out_size), scales, bool(align_corners), mode == "bicubic")
    small = len(out_size) == 2 and sum(out_size) <= 128   # as interpolate's; uint8 indices are computed in float32
    mats = interpolate_matrices(x, mode, out_size, scales, None, mode == "nearest" and small, not small)
    return dim_matrices(x.astype(np.float64), mats).round().astype(np.uint8)


# ----- antialiasing -------------------------------------------------------------------------------------------

def _aa_filter(x, mode):
    """The antialiasing filters (Pillow's): triangle, Keys cubic with a = -0.5, Lanczos-3."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1.0 - x, 0.0)
    if mode == "bicubic":
        a = -0.5
        return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    px = np.pi * np.where(x == 0, 1.0, x)
    sinc = np.where(x == 0, 1.0, np.sin(px) / px)
    sinc3 = np.where(x == 0, 1.0, np.sin(px / 3) / (px / 3))
    return np.where(x < 3, sinc * sinc3, 0.0)


def _aa_matrix(mode, S, L, scale, align_corners, dt):
    """The (L, S) weights of antialiased resizing along one dim, ATen's: each output averages the inputs under
    the filter stretched by the downsampling factor (support n/2 * scale), centred at scale * (i + 0.5), the
    weights normalised to sum 1. A dim of unchanged size is copied."""
    n = {"bilinear": 2, "bicubic": 4, "lanczos": 6}[mode]
    if align_corners:
        sc = (S - 1) / (L - 1) if L > 1 else 0.0
    else:
        sc = 1.0 / scale if scale is not None and scale > 0 else S / L
    support = n * 0.5 * sc if sc >= 1.0 else n * 0.5
    width = int(_math.ceil(support)) * 2 + 1
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    center = sc * (np.arange(L) + 0.5)
    xmin = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)   # C++ casts truncate
    xsize = np.clip(np.minimum(np.trunc(center + support + 0.5).astype(np.int64), S) - xmin, 0, width)
    j = np.arange(width)
    inside = j[None, :] < xsize[:, None]
    w = np.where(inside, _aa_filter((j[None, :] + xmin[:, None] - center[:, None] + 0.5) * inv, mode), 0.0)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1.0), w)
    m = np.zeros((L, S))
    rows, taps = np.nonzero(inside)
    m[rows, xmin[rows] + taps] = w[rows, taps]
    return m.astype(dt)


def interpolate_aa_matrices(x, mode, out_size, scales, align_corners):
    """(forward, backward) matrices of antialiased resizing of float ``x`` (N, C, H, W): the forward copies a dim
    whose size is unchanged, the backward applies the weights all the same."""
    dt = x.dtype.type
    bmats = tuple(_aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), dt)
                  for i, (S, L) in enumerate(zip(x.shape[2:], out_size)))
    mats = tuple(np.eye(L, dtype=dt) if S == L else b for S, L, b in zip(x.shape[2:], out_size, bmats))
    return mats, bmats


def interpolate_aa_uint8(x, mode, out_size, scales, align_corners):
    """Antialiased resizing of uint8 ``x`` (N, C, H, W), PyTorch's uint8 way (_uint8_resize_weights; no
    gradient)."""
    if tuple(x.shape[2:]) == tuple(out_size):
        return x.copy()
    return _uint8_resize_weights(x, tuple(
        _aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), np.float64)
        for i, (S, L) in enumerate(zip(x.shape[2:], out_size))))


# ----- resampling whose backward is not its forward's transpose ------------------------------------------------

def resample(x, mats, bmats, node):
    """Resampling forward: ``mats`` (one (L, S) matrix per spatial dim) applied to ``x``; ``node`` names the op
    (nearest or antialiased interpolation, see ember/ops/nn_resample.py)."""
    return dim_matrices(x, mats)


def resample_backward(g, mats, bmats, node):
    """Its backward: the transposes of ``bmats``, PyTorch's backward weights (for nearest: its backward index
    mapping, which copies a dim of the same size and halves the index of one of twice the size whatever
    scale_factor the forward used; antialiasing: the weights even where the forward copied a dim)."""
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
