"""NumPy kernels of padding, unfold / fold (im2col / col2im) and the pixel and channel shuffles (part of the raw
namespace ``ember.devices.cpu.namespace``): index maps and rearrangements of the spatial dims.

Conventions: ``pads`` is a tuple of (lo, hi) pairs, one per padded dim (negative: cropped); reflect, replicate
and circular padding are index maps (``pad_indices``) read with ``pad_gather``.
"""
from __future__ import annotations

import math as _math

import numpy as np

from .nn_conv import _col2im, _out_size, _padded, _windows

__all__ = ["constant_pad", "constant_pad_backward", "pad_gather", "pad_backward", "pad_gather_backward",
           "im2col", "col2im", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "pad_indices"]   # not differentiable: the index maps the public function computes


def _pad_slices(shape, pads):
    """(source, destination) slices of the last len(pads) dims for a constant pad by (lo, hi) pairs, which
    may be negative (cropping)."""
    src, dst = [], []
    for s, (lo, hi) in zip(shape[len(shape) - len(pads):], pads):
        a, b = max(-lo, 0), s - max(-hi, 0)
        src.append(slice(a, max(a, b)))
        dst.append(slice(max(lo, 0), max(lo, 0) + max(b - a, 0)))
    return (Ellipsis,) + tuple(src), (Ellipsis,) + tuple(dst)


def constant_pad(x, pads, value):
    """``x`` padded with ``value`` by (lo, hi) pairs over its last len(pads) dims (negative: cropped)."""
    lead = x.ndim - len(pads)
    shape = x.shape[:lead] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[lead:], pads))
    out = np.full(shape, value, dtype=x.dtype)
    src, dst = _pad_slices(x.shape, pads)
    out[dst] = x[src]
    return out


def constant_pad_backward(g, pads, shape):
    """The gradient of ``constant_pad``: the unpadded part of ``g`` in zeros of the input's ``shape``."""
    out = np.zeros(shape, dtype=g.dtype)
    src, dst = _pad_slices(shape, pads)
    out[src] = g[dst]
    return out


def _pad_index(mode: str, S: int, lo: int, hi: int):
    """The source index of each padded position along one dim of size ``S`` padded by (lo, hi)."""
    p = np.arange(-lo, S + hi)
    if mode == "reflect":
        p = np.abs(p)
        p = np.where(p > S - 1, 2 * (S - 1) - p, p)
    elif mode == "replicate":
        p = np.clip(p, 0, S - 1)
    else:   # circular: PyTorch crops (negative pads) first, then wraps within what is left
        a, b = max(-lo, 0), S - max(-hi, 0)
        p = np.arange(-max(lo, 0), b - a + max(hi, 0)) % max(b - a, 1) + a
    return p.astype(np.int64)


def pad_indices(x, mode: str, pads):
    """The index vectors (for ``pad_gather``) of ``mode`` padding ('reflect', 'replicate', 'circular') by the
    (lo, hi) pairs ``pads`` over the last len(pads) dims of ``x``. Not differentiable."""
    return tuple(_pad_index(mode, s, lo, hi) for s, (lo, hi) in zip(x.shape[x.ndim - len(pads):], pads))


def pad_gather(x, idx):
    """``x`` read at index vector ``idx[i]`` along each of its last len(idx) dims (reflect, replicate and
    circular padding are such index maps)."""
    lead = x.ndim - len(idx)
    for i, ix in enumerate(idx):
        x = np.take(x, ix, axis=lead + i)
    return x


def pad_backward(g, x, idx):
    """Reflection/replication padding's input gradient (``x``: see pool_backward)."""
    return pad_gather_backward(g, idx, x.shape)


def pad_gather_backward(g, idx, shape):
    """The gradient of ``pad_gather``: each dim's index map transposed, one vectorised slab addition per
    position outside the identity run (the padding), the interior copied in one go."""
    lead = len(shape) - len(idx)
    for i in range(len(idx) - 1, -1, -1):
        ix = np.asarray(idx[i])
        ax = lead + i
        S = shape[ax]
        out = np.zeros(g.shape[:ax] + (S,) + g.shape[ax + 1:], dtype=g.dtype)
        # the interior: the longest run where ix[j] = ix[j0] + (j - j0)
        run = np.flatnonzero(np.diff(ix) != 1)
        starts = np.concatenate(([0], run + 1))
        ends = np.concatenate((run + 1, [len(ix)]))
        k = int(np.argmax(ends - starts)) if len(ix) else 0
        j0, j1 = (int(starts[k]), int(ends[k])) if len(ix) else (0, 0)
        pre = (slice(None),) * ax
        if j1 > j0:
            out[pre + (slice(int(ix[j0]), int(ix[j0]) + j1 - j0),)] += g[pre + (slice(j0, j1),)]
        for j in list(range(j0)) + list(range(j1, len(ix))):
            out[pre + (int(ix[j]),)] += g[pre + (j,)]
        g = out
    return g


# ----- unfold / fold (im2col / col2im), pixel and channel shuffles ----------------------------------------

def im2col(x, kernel, dilation, pads, stride):
    """F.unfold: (N, C, *S) -> (N, C*prod(kernel), L) columns of the sliding blocks ((C, *S): unbatched)."""
    if x.ndim == len(kernel) + 1:
        return im2col(x[None], kernel, dilation, pads, stride)[0]
    N, C = x.shape[:2]
    d = len(kernel)
    out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)], kernel, stride, dilation)
    win = _windows(_padded(x, pads), kernel, stride, dilation, out_size)
    perm = (0, 1) + tuple(range(2 + d, 2 + 2 * d)) + tuple(range(2, 2 + d))
    return win.transpose(perm).reshape(N, C * _math.prod(kernel), _math.prod(out_size))


def col2im(cols, size, kernel, dilation, pads, stride):
    """F.fold: (N, C*prod(kernel), L) -> (N, C, *size), overlapping blocks summed ((C*K, L): unbatched)."""
    if cols.ndim == 2:
        return col2im(cols[None], size, kernel, dilation, pads, stride)[0]
    N, CK = cols.shape[:2]
    d = len(kernel)
    C = CK // _math.prod(kernel)
    out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(size, pads)], kernel, stride, dilation)
    c = cols.reshape((N, C) + tuple(kernel) + tuple(out_size))
    c = c.transpose((1,) + tuple(range(2, 2 + d)) + (0,) + tuple(range(2 + d, 2 + 2 * d)))   # (C, *K, N, *L)
    full = tuple(s + lo + hi for s, (lo, hi) in zip(size, pads))
    return _col2im(c, kernel, stride, dilation, full, [lo for lo, _ in pads], size)


def pixel_shuffle(x, r):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    *lead, C, H, W = x.shape
    c = C // (r * r)
    y = x.reshape(tuple(lead) + (c, r, r, H, W))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return y.reshape(tuple(lead) + (c, H * r, W * r))


def pixel_unshuffle(x, r):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    *lead, C, H, W = x.shape
    h, w = H // r, W // r
    y = x.reshape(tuple(lead) + (C, h, r, w, r))
    k = len(lead)
    y = y.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return y.reshape(tuple(lead) + (C * r * r, h, w))


def channel_shuffle(x, groups):
    """(N, C, *) with the channels regrouped: (groups, C/groups) transposed."""
    N, C = x.shape[:2]
    rest = x.shape[2:]
    return x.reshape((N, groups, C // groups) + rest).swapaxes(1, 2).reshape(x.shape)
