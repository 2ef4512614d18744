"""NumPy kernels of affine_grid and grid_sample (part of the raw namespace ``ember.devices.cpu.namespace``).

grid_sample's sampling position along each axis is a piecewise-affine function of the grid (unnormalise, then clip
or reflect: ATen's GridSampler.h): pixel = A * grid + B with A, B constant on each piece. ``grid_sample_plan``
reads the pieces off the grid's values: which input positions each output reads (flat indices, in-bounds masks)
and the constants A and B - floor(pixel) that turn the grid into fractional offsets. It is not differentiable: the
rules in ember/ops/nn_grid.py rebuild the weights from the grid with xp arithmetic, so they are.
"""
from __future__ import annotations

import itertools as _itertools
import math as _math

import numpy as np

from .creation import linspace
from .reduced import BF16, F32

__all__ = ["affine_grid", "affine_grid_backward",
           "grid_sample_plan"]   # not differentiable (see above)


def _base_grid(size, align_corners, dtype):
    """(*spatial, d+1): the normalised coordinates (x, y[, z], 1) of every output location, x fastest."""
    axes = []
    for s in size[2:][::-1]:   # x (width) first
        if s <= 1:
            v = np.zeros(max(s, 0), dtype=dtype)
        else:
            v = np.linspace(-1, 1, s, dtype=dtype)
            if not align_corners:
                v = v * dtype.type((s - 1) / s)
        axes.append(v)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")          # spatial order (D, H, W)
    coords = [m for m in mesh[::-1]]                         # x, y, z
    return np.stack(coords + [np.ones_like(mesh[0])], axis=-1)


def _base_grid_bf16(size, align_corners):
    """``_base_grid`` in bfloat16 as PyTorch makes it: its bfloat16 linspace, then (without align_corners)
    ``* (s - 1)`` and ``/ s``, each computed in float32 and rounded to bfloat16."""
    axes = []
    for s in size[2:][::-1]:
        v = linspace(-1, 1, s, BF16)
        if not align_corners:
            v = (v.astype(F32) * np.float32(s - 1)).astype(BF16)
            v = (v.astype(F32) / np.float32(s)).astype(BF16)
        axes.append(v)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")
    return np.stack(list(mesh[::-1]) + [np.ones_like(mesh[0])], axis=-1)


def affine_grid(theta, size, align_corners):
    """(N, *spatial, d) sampling grid: the base grid transformed by each theta (N, d, d+1)."""
    if theta.dtype is BF16:
        # PyTorch's bmm of the bfloat16 base grid by theta^T (its plain kernel at these sizes): float32 sums
        # over k in order, each product rounded to float32, the sum rounded once
        b = _base_grid_bf16(size, align_corners).reshape(-1, theta.shape[2]).astype(F32)
        t = theta.astype(F32)
        acc = np.zeros((theta.shape[0], b.shape[0], theta.shape[1]), F32)
        for k in range(b.shape[1]):
            acc += b[None, :, k, None] * t[:, None, :, k]
        return acc.astype(BF16).reshape((theta.shape[0],) + tuple(size[2:]) + (theta.shape[1],))
    base = _base_grid(size, align_corners, theta.dtype).reshape(-1, theta.shape[2])
    out = np.matmul(base, theta.swapaxes(1, 2))             # (N, S, d)
    return out.reshape((theta.shape[0],) + tuple(size[2:]) + (theta.shape[1],))


def affine_grid_backward(g, size, align_corners):
    """The gradient of ``affine_grid`` with respect to theta: (N, d, d+1)."""
    d = g.shape[-1]
    base = _base_grid(size, align_corners, g.dtype).reshape(-1, d + 1)
    return np.matmul(g.reshape(g.shape[0], -1, d).swapaxes(1, 2), base)


# ----- grid_sample's plan --------------------------------------------------------------------------------------------

def _gs_axis(coord, size, padding, align):
    """(pixel position, A, B) along one axis for normalised coordinates ``coord`` (pixel = A*coord + B)."""
    dt = coord.dtype.type
    scale = dt((size - 1) / 2) if align else dt(size / 2)
    shift = dt((size - 1) / 2)
    c = coord * scale + shift
    a = np.ones_like(c)
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            c = np.zeros_like(c)
            a = np.zeros_like(c)
        else:
            mn, span = dt(lo2 / 2), dt((hi2 - lo2) / 2)
            t = c - mn
            s1 = np.where(t < 0, dt(-1), dt(1))
            t = np.abs(t)
            extra = np.fmod(t, span)
            even = np.floor(t / span) % 2 == 0
            c = np.where(even, extra + mn, span - extra + mn)
            a = np.where(even, s1, -s1)
    if padding in ("border", "reflection"):
        inside = (c > 0) & (c < size - 1)
        a = np.where(inside, a, dt(0))
        c = np.clip(c, 0, size - 1)
    A = (a * scale).astype(coord.dtype)
    return c.astype(coord.dtype), A, (c - A * coord).astype(coord.dtype)


def _rb(v):
    return np.asarray(v, np.float32).astype(BF16).astype(np.float32)


def _gs_nearest_bf16(coord, size: int, padding: str, align: bool, vectorized: bool):
    """The source position of a bfloat16 grid coordinate as PyTorch computes it for nearest sampling, every
    operation rounded to bfloat16: ``vectorized`` its 2-d kernel's formulas (GridSamplerKernel.cpp,
    Vectorized<BFloat16>), else its 3-d scalar ones (GridSampler.h)."""
    c = coord.astype(np.float32)
    one = np.float32(1)
    if vectorized:
        scale = _rb(np.float32(size - 1) / 2) if align else _rb(np.float32(size) / 2)
        c = _rb(_rb(c + one) * scale)
        if not align:
            c = _rb(c - np.float32(0.5))
        return _gs_vec_pad_bf16(c, size, padding, align)
    else:
        if align:
            c = _rb(_rb(_rb(c + one) / 2) * np.float32(size - 1))
        else:
            c = _rb(_rb(_rb(_rb(c + one) * np.float32(size)) - one) / 2)
        if padding == "reflection":
            lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
            if lo2 == hi2:
                c = np.zeros_like(c)
            else:
                mn, span = _rb(np.float32(lo2) / 2), _rb(np.float32(hi2 - lo2) / 2)
                a = np.abs(_rb(c - mn))
                extra = _rb(np.fmod(a, span))
                even = np.floor(_rb(a / span)) % 2 == 0
                c = np.where(even, _rb(extra + mn), _rb(_rb(span - extra) + mn))
    if padding in ("border", "reflection"):
        c = np.minimum(np.float32(size - 1), np.maximum(c, np.float32(0)))
    return c


def _gs_vec_pad_bf16(c, size: int, padding: str, align: bool):
    """PyTorch's 2-d vectorized compute_coordinates in bfloat16: border clips, reflection reflects (every step
    rounded) and clips; zeros leaves the position."""
    if padding == "reflection":
        twice = _rb(np.float32(size - 1) * 2) if align else _rb(np.float32(size) * 2)
        low = np.float32(0) if align else np.float32(-0.5)
        if twice <= 0:
            c = np.zeros_like(c)
        else:
            a = np.abs(_rb(c - low))
            extra = _rb(a - _rb(np.trunc(_rb(a / twice)) * twice))
            c = _rb(np.minimum(extra, _rb(twice - extra)) + low)
    if padding in ("border", "reflection"):
        c = np.minimum(np.float32(size - 1), np.maximum(c, np.float32(0)))
    return c


def _gs_bicubic_bf16(inp_shape, g, padding, align):
    """Bicubic sampling of a bfloat16 grid as PyTorch's 2-d vectorized kernel computes it in bfloat16: the 16
    taps (flat index, mask, i, j), rows j of x taps i, and the cubic coefficients (A = -0.75) of x and y, every
    operation rounded."""
    N, C, H, W = inp_shape
    one = np.float32(1)
    A = np.float32(-0.75)

    def coeffs(t):
        far = lambda x: _rb(_rb(_rb(_rb(_rb(A * x) - 5 * A) * x) + 8 * A) * x) - 4 * A   # noqa: E731
        near = lambda x: _rb(_rb(_rb(_rb(_rb((A + 2) * x) - (A + 3)) * x) * x) + one)   # noqa: E731
        return [_rb(far(_rb(t + one))), near(t), near(_rb(one - t)), _rb(far(_rb(np.float32(2) - t)))]
    xs, ys = [_gs_nearest_bf16(g[..., k], size, "zeros", align, True) for k, size in ((0, W), (1, H))]
    fx, fy = np.floor(xs), np.floor(ys)
    cx, cy = coeffs(_rb(xs - fx)), coeffs(_rb(ys - fy))
    taps = []
    for j in range(4):
        yy = _gs_vec_pad_bf16(fy - 1 + j, H, padding, align)
        for i in range(4):
            xx = _gs_vec_pad_bf16(fx - 1 + i, W, padding, align)
            mask = (xx > -1) & (xx < W) & (yy > -1) & (yy < H)
            xi = np.where(xx == xx, np.trunc(xx), 0)
            yi = np.where(yy == yy, np.trunc(yy), 0)
            flat = np.clip(yi, 0, H - 1).astype(np.int64) * W + np.clip(xi, 0, W - 1).astype(np.int64)
            idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
            taps.append((idx, mask.astype(g.dtype), i, j))
    return taps, ([c.astype(BF16) for c in cx], [c.astype(BF16) for c in cy])


def _gs_bilinear_bf16(inp_shape, g, padding, align):
    """Bilinear sampling of a bfloat16 grid as PyTorch computes it, every operation rounded to bfloat16: the
    corners (flat index, in-bounds mask, None) in its order (2-d: nw, ne, sw, se; 3-d: tnw, tne, tsw, tse, bnw,
    bne, bsw, bse) and their bfloat16 weights (2-d: its vectorized kernel's s*e, s*w, n*e, n*w; 3-d: its scalar
    kernel's products of three distances)."""
    sizes = tuple(inp_shape[2:])
    d = len(sizes)
    cs = [_gs_nearest_bf16(g[..., k], sizes[d - 1 - k], padding, align, d == 2) for k in range(d)]
    fl = [np.floor(c) for c in cs]
    one = np.float32(1)
    if d == 2:
        w, n = _rb(cs[0] - fl[0]), _rb(cs[1] - fl[1])
        e, s = _rb(one - w), _rb(one - n)
        weights = [_rb(s * e), _rb(s * w), _rb(n * e), _rb(n * w)]
        offsets = [(0, 0), (1, 0), (0, 1), (1, 1)]   # (x, y)
    else:
        ix, iy, iz = cs
        x0, y0, z0 = fl
        lo = lambda c, f: _rb(c - f)          # noqa: E731  c - floor
        hi = lambda c, f: _rb((f + one) - c)  # noqa: E731  (floor + 1) - c
        dx, dy, dz = (lo(ix, x0), hi(ix, x0)), (lo(iy, y0), hi(iy, y0)), (lo(iz, z0), hi(iz, z0))
        offsets, weights = [], []
        for oz in (0, 1):
            for oy in (0, 1):
                for ox in (0, 1):
                    # the weight of a corner is the product of the distances to the opposite sides
                    weights.append(_rb(_rb(dx[1 - ox] * dy[1 - oy]) * dz[1 - oz]))
                    offsets.append((ox, oy, oz))
    N, C = inp_shape[:2]
    corners = []
    for offs in offsets:
        mask = np.ones(g.shape[:-1], dtype=bool)
        flat = 0
        for k, o in enumerate(offs):
            S = sizes[d - 1 - k]
            p = fl[k] + o
            mask &= (p >= 0) & (p <= S - 1)
            p = np.where(p == p, p, 0)
            flat = flat + np.clip(p, 0, S - 1).astype(np.int64) * _math.prod(sizes[d - k:])
        idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
        corners.append((idx, mask.astype(g.dtype), None))
    return corners, [wt.astype(BF16) for wt in weights]


def _gs_plan(inp_shape, grid, mode, padding, align):
    """The corners: (flat index (N, C, *out), in-bounds mask (N, *out), offsets) per corner, the offsets (0 or 1
    per grid component x, y[, z]) from floor (bilinear) or None (nearest); and the axis maps (A, B - floor) per
    component (nearest: (A, B), unused). Component k addresses spatial dim d-1-k (x the width); corners run with x fastest, as PyTorch sums
    them (nw, ne, sw, se; then the bottom plane in 3-d)."""
    sizes = tuple(inp_shape[2:])
    d = len(sizes)
    g = grid
    axes = [_gs_axis(g[..., k], sizes[d - 1 - k], padding, align) for k in range(d)]
    if mode == "nearest" and g.dtype == BF16:
        bases = [(tuple(np.rint(_gs_nearest_bf16(g[..., k], sizes[d - 1 - k], padding, align, d == 2))
                        for k in range(d)), None)]
    elif mode == "nearest":
        bases = [(tuple(np.rint(c) for c, _, _ in axes), None)]
    else:
        floors = [np.floor(c) for c, _, _ in axes]
        bases = [(tuple(f + o for f, o in zip(floors, offs[::-1])), offs[::-1])
                 for offs in _itertools.product((0, 1), repeat=d)]
    N, C = inp_shape[:2]
    corners = []
    for pos, offs in bases:
        mask = np.ones(g.shape[:-1], dtype=bool)
        flat = 0
        for k, p in enumerate(pos):
            S = sizes[d - 1 - k]
            mask &= (p >= 0) & (p <= S - 1)
            p = np.where(p == p, p, 0)   # a nan position is masked off; its index only has to be valid
            flat = flat + np.clip(p, 0, S - 1).astype(np.int64) * _math.prod(sizes[d - k:])
        idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
        corners.append((idx, mask.astype(g.dtype), offs))
    maps = [(A, B - np.floor(c)) if mode != "nearest" else (A, B) for c, A, B in axes]
    return corners, maps


# bicubic (2-d): 4 x 4 taps around floor(pixel), each tap's coordinate padded on its own (PyTorch's
# get_value_bounded: the source position is never clipped, a tap past the border reads the border or its mirror,
# or zero), weights the cubic convolution coefficients (A = -0.75) of the fractional offsets, rows first.

def _gs_tap(coord, size, padding, align):
    """A tap's integer coordinate after padding (reflect, then clip; or clip) and its in-bounds mask."""
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            coord = np.zeros_like(coord)
        else:
            mn, span = lo2 / 2, (hi2 - lo2) / 2
            t = np.abs(coord - mn)
            extra = np.fmod(t, span)
            coord = np.where(np.floor(t / span) % 2 == 0, extra + mn, span - extra + mn)
    if padding in ("border", "reflection"):
        coord = np.clip(coord, 0, size - 1)
    ic = np.trunc(coord)   # C++'s cast to int64 truncates
    return ic, (ic >= 0) & (ic <= size - 1)


def _gs_bicubic_plan(inp_shape, grid, padding, align):
    """The 16 taps as (flat index (N, C, Ho, Wo), mask (N, Ho, Wo), i, j) (i the x tap, j the y tap) and the
    maps (A, B - floor) of the fractional offsets t = A * grid + (B - floor) for x and y."""
    N, C, H, W = inp_shape
    g = grid
    maps, floors = [], []
    for k, size in ((0, W), (1, H)):
        c, A, B = _gs_axis(g[..., k], size, "zeros", align)   # unnormalised, never clipped
        f = np.floor(c)
        floors.append(f)
        maps.append((A, B - f))
    taps = []
    for j in range(4):
        yy, my = _gs_tap(floors[1] - 1 + j, H, padding, align)
        for i in range(4):
            xx, mx = _gs_tap(floors[0] - 1 + i, W, padding, align)
            mask = mx & my
            yy, xx = np.where(yy == yy, yy, 0), np.where(xx == xx, xx, 0)   # nan: masked off, any valid index
            flat = np.clip(yy, 0, H - 1).astype(np.int64) * W + np.clip(xx, 0, W - 1).astype(np.int64)
            idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
            taps.append((idx, mask.astype(g.dtype), i, j))
    return taps, maps


def grid_sample_plan(inp_shape, grid, mode: str, padding: str, align: bool):
    """What grid_sample of an input of ``inp_shape`` reads at ``grid`` (N, *out, d): bilinear and nearest give
    (corners, maps), corners (flat index (N, C, *out), mask (N, *out), offsets) and maps (A, B - floor) per grid
    component (see _gs_plan); bicubic (2-d) gives (taps, maps), taps (flat index, mask, i, j) (see
    _gs_bicubic_plan). The masks are in the grid's dtype."""
    if mode == "bicubic":
        return _gs_bicubic_plan(tuple(inp_shape), grid, padding, align)
    if mode == "bilinear_bf16":   # (a bfloat16 grid's forward: the corners and their bfloat16 weights)
        return _gs_bilinear_bf16(tuple(inp_shape), grid, padding, align)
    if mode == "bicubic_bf16":    # (the taps and the bfloat16 coefficients of x and y)
        return _gs_bicubic_bf16(tuple(inp_shape), grid, padding, align)
    return _gs_plan(tuple(inp_shape), grid, mode, padding, align)
