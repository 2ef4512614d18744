"""NumPy helpers of the convolution / pooling family's later additions: fractional max pooling.

Private helpers (underscored) that the public functions in ``ember/ops/nn_conv.py`` call before recording a
primitive; the gradients reuse the max-pooling primitives (``pool_gather`` / ``pool_scatter``).
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
