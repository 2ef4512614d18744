"""Pooling and resampling in array-API standard operations: the counterparts of ``ember/devices/cpu/nn_pool.py``
and ``nn_resample.py`` (same arguments, results, dtypes and index tie-breaking).

Max pooling's indices come from PyTorch's scan over the window offsets in order (a value wins when it is greater
than the maximum so far or NaN: ties keep the first maximum, NaN the last NaN), one vectorised step per offset.
The scatters compare each row's indices with every spatial position (the standard has no scatter-add): O(L * S)
per row, what correctness paths on small arrays need. The matrices of average pooling and interpolation follow
the cpu kernels' formulas in the same precision; their geometry (window bounds) is host-side Python on sizes.
"""
from __future__ import annotations

import itertools
import math


def kernels(k) -> dict:
    xp = k.xp
    i64 = xp.int64

    # ----- helpers ------------------------------------------------------------------------------------------
    def _lowest(x):
        return -math.inf if k.is_float(x) else xp.iinfo(x.dtype).min

    def _pitches(size) -> list:
        """Flat strides of spatial dims of ``size``."""
        return [math.prod(size[i + 1:]) for i in range(len(size))]

    def _along(v, i: int, d: int):
        """A 1-d ``v`` shaped to broadcast along spatial dim ``i`` of ``d`` (leading dims added by broadcasting)."""
        return xp.reshape(v, tuple(v.shape[0] if j == i else 1 for j in range(d)))

    def _padded(x, pads, value):
        """``x`` (N, C, *S) with ``pads`` ((lo, hi) per spatial dim) of ``value`` around its spatial dims."""
        for i, (lo, hi) in enumerate(pads):
            if lo or hi:
                ax = 2 + i
                parts = []
                for n in (lo, None, hi):
                    if n is None:
                        parts.append(x)
                    elif n:
                        shape = list(x.shape)
                        shape[ax] = n
                        parts.append(xp.full(tuple(shape), value, dtype=x.dtype))
                x = xp.concat(parts, axis=ax)
        return x

    def _scan(candidates, best, best_idx):
        """PyTorch's max-pool scan over ``candidates`` ((value, flat index) per window offset, in order) from
        ``best``/``best_idx``: a value wins when it is greater than the maximum so far or NaN."""
        for v, idx in candidates:
            take = v > best
            if k.is_float(v):
                take = take | (v != v)
            best = xp.where(take, v, best)
            best_idx = xp.where(take, idx, best_idx)
        return best_idx

    # ----- reading and scattering at flat spatial indices ---------------------------------------------------
    def pool_gather(x, indices, sd, unique=False):
        if k.numel(x) == 0 or k.numel(indices) == 0:
            return xp.zeros(tuple(indices.shape), dtype=x.dtype)
        lead = math.prod(x.shape[:x.ndim - sd])
        rows = xp.reshape(indices, (lead, -1))
        flat = xp.reshape(x, (lead, math.prod(x.shape[x.ndim - sd:])))
        return xp.reshape(xp.take_along_axis(flat, rows, axis=1), tuple(indices.shape))

    def pool_scatter(g, indices, shape, sd, unique=False):
        shape = tuple(shape)
        S = math.prod(shape[len(shape) - sd:])
        lead = math.prod(shape[:len(shape) - sd])
        if k.numel(g) == 0 or S == 0:
            return xp.zeros(shape, dtype=g.dtype)
        # rows never share positions: compare each row's indices with its own S positions only
        hits = xp.reshape(indices, (lead, -1, 1)) == xp.reshape(xp.arange(S, dtype=i64), (1, 1, S))
        vals = xp.reshape(g, (lead, -1, 1))
        if g.dtype == xp.bool:
            return xp.reshape(xp.any(hits & vals, axis=1), shape)
        acc = xp.float64 if k.is_float(g) else g.dtype   # the cpu's bincount adds in float64
        out = xp.sum(xp.where(hits, xp.astype(vals, acc), xp.zeros((), dtype=acc)), axis=1, dtype=acc)
        return xp.reshape(xp.astype(out, g.dtype), shape)

    def pool_backward(g, x, indices, sd, unique=False):
        return pool_scatter(g, indices, tuple(x.shape), sd, unique)

    # ----- separable linear pooling -------------------------------------------------------------------------
    def dim_matrices(x, mats, low=None):
        """``x`` (..., *S) with matrix ``mats[i]`` (L_i, S_i) applied along spatial dim i."""
        first = x.ndim - len(mats)
        for i, a in enumerate(mats):
            x = xp.moveaxis(xp.matmul(xp.moveaxis(x, first + i, -1), xp.astype(xp.matrix_transpose(a), x.dtype)),
                            -1, first + i)
        return x

    def avg_pool_backward(g, x, mats):
        return dim_matrices(g, tuple(xp.matrix_transpose(a) for a in mats))

    # ----- max pooling's indices ----------------------------------------------------------------------------
    def max_pool_indices(x, kernel, stride, pads, dilation, out_size):
        d = len(kernel)
        size = tuple(x.shape[2:])
        pitch = _pitches(size)
        low = _lowest(x)
        xpad = _padded(x, pads, low)
        starts = [_along(xp.arange(out_size[i], dtype=i64) * stride[i] - pads[i][0], i, d) for i in range(d)]

        def candidates():
            for off in itertools.product(*(range(n) for n in kernel)):
                sl = tuple(slice(off[i] * dilation[i], off[i] * dilation[i] + stride[i] * (out_size[i] - 1) + 1,
                                 stride[i]) for i in range(d))
                idx = sum((starts[i] + off[i] * dilation[i]) * pitch[i] for i in range(d))
                yield xpad[(slice(None), slice(None)) + sl], idx
        shape = tuple(x.shape[:2]) + tuple(out_size)
        cands = candidates()
        if not any(lo or hi for lo, hi in pads):   # every offset is inside: the first one starts the scan
            best, idx = next(cands)
            return xp.broadcast_to(_scan(cands, best, idx), shape)
        # nothing beats the lowest value (padding, or a window of it): the window's first in-bounds position
        first = sum(xp.where(st < 0, st + dilation[i] * -(st // dilation[i]), st) * pitch[i]
                    for i, st in enumerate(starts))
        best = xp.full(shape, low, dtype=x.dtype)
        return xp.broadcast_to(_scan(cands, best, xp.broadcast_to(first, shape)), shape)

    def _adaptive_bounds(S: int, L: int):
        """PyTorch's adaptive windows along one dim: start = floor(i*S/L), end = ceil((i+1)*S/L)."""
        return [(i * S) // L for i in range(L)], [-((-(i + 1) * S) // L) for i in range(L)]

    def adaptive_max_indices(x, out_size):
        d = len(out_size)
        size = tuple(x.shape[2:])
        pitch = _pitches(size)
        per_dim = []   # (L_i, kmax_i) window positions, the last repeated where a window is shorter
        for S, L in zip(size, out_size):
            start, end = _adaptive_bounds(S, L)
            kmax = max((e - s for s, e in zip(start, end)), default=1)
            per_dim.append(xp.asarray([[min(s + j, e - 1) for j in range(kmax)] for s, e in zip(start, end)],
                                      dtype=i64) if L else xp.zeros((0, kmax), dtype=i64))

        def candidates():
            for off in itertools.product(*(range(p.shape[1]) for p in per_dim)):
                v = x
                idx = 0
                for i, p in enumerate(per_dim):
                    v = xp.take(v, p[:, off[i]], axis=2 + i)
                    idx = idx + _along(p[:, off[i]], i, d) * pitch[i]
                yield v, idx
        shape = tuple(x.shape[:2]) + tuple(out_size)
        first = sum(_along(p[:, 0], i, d) * pitch[i] for i, p in enumerate(per_dim))   # nothing won: the first
        best = xp.full(shape, _lowest(x), dtype=x.dtype)
        return xp.broadcast_to(_scan(candidates(), best, xp.broadcast_to(first, shape)), shape)

    def _fractional_starts(u, S: int, L: int, kk: int):
        """Window starts (P, L) along one dim (ATen's generate_intervals in the samples' dtype, see the cpu)."""
        P = u.shape[0]
        last = xp.full((P, 1), S - kk, dtype=i64)
        if L <= 1:
            return last[:, :L]
        alpha = xp.asarray(S - kk, dtype=u.dtype) / xp.asarray(L - 1, dtype=u.dtype)
        i = xp.arange(L - 1, dtype=u.dtype)
        # C++'s static_cast<int> truncates toward zero
        head = (xp.astype(xp.trunc((i[None, :] + u[:, None]) * alpha), i64)
                - xp.astype(xp.trunc(u * alpha), i64)[:, None])
        return xp.concat([head, last], axis=1)

    def fractional_max_indices(x, kernel, out_size, samples, order):
        N, C = x.shape[:2]
        d = len(kernel)
        size = tuple(x.shape[2:])
        P = N * C
        if P == 0:
            return xp.zeros((N, C) + tuple(out_size), dtype=i64)
        u = xp.reshape(samples[:N, ...], (P, d))
        pitch = _pitches(size)
        first = 0
        for i in range(d):
            st = _fractional_starts(u[:, order[i]], size[i], out_size[i], kernel[i])
            first = first + xp.reshape(st, (P,) + tuple(out_size[i] if j == i else 1 for j in range(d))) * pitch[i]
        first = xp.reshape(xp.broadcast_to(first, (P,) + tuple(out_size)), (P, -1))
        flat = xp.reshape(x, (P, -1))
        if flat.shape[1] == 0 or first.shape[1] == 0:
            return xp.reshape(first, (N, C) + tuple(out_size))

        def candidates():
            for off in itertools.product(*(range(n) for n in kernel)):
                idx = first + sum(o * m for o, m in zip(off, pitch))
                yield xp.take_along_axis(flat, idx, axis=1), idx
        best = xp.full(tuple(first.shape), _lowest(x), dtype=x.dtype)
        return xp.reshape(_scan(candidates(), best, first), (N, C) + tuple(out_size))

    # ----- average pooling's matrices -----------------------------------------------------------------------
    def _pool_bounds(S, L, kk, s, p, count_include_pad):
        """(inside (L, S) bool, PyTorch's per-window count (L,) int64) of one spatial dim."""
        start = xp.arange(L, dtype=i64) * s - p
        end = xp.minimum(start + kk, xp.asarray(S + p, dtype=i64))
        lo, hi = xp.maximum(start, xp.asarray(0, dtype=i64)), xp.minimum(end, xp.asarray(S, dtype=i64))
        count = end - start if count_include_pad else hi - lo
        pos = xp.arange(S, dtype=i64)[None, :]
        return (pos >= lo[:, None]) & (pos < hi[:, None]), xp.maximum(count, xp.asarray(1, dtype=i64))

    def avg_pool_matrices(x, size, out_size, kernel, stride, pad, count_include_pad, divisor_override):
        dt = x.dtype if k.is_float(x) else xp.float64
        mats = []
        for S, L, kk, s, p in zip(size, out_size, kernel, stride, pad):
            inside, count = _pool_bounds(S, L, kk, s, p, count_include_pad)
            m = xp.astype(inside, dt)
            mats.append(m if divisor_override is not None else m / xp.astype(count, dt)[:, None])
        if divisor_override is not None:   # sums over the windows, divided by the override
            mats[0] = mats[0] / divisor_override
        return tuple(mats)

    def avg_pool_integer(x, size, out_size, kernel, stride, pad, count_include_pad, divisor_override):
        d = len(kernel)
        sums, div = [], 1
        for i, (S, L, kk, s, p) in enumerate(zip(size, out_size, kernel, stride, pad)):
            inside, count = _pool_bounds(S, L, kk, s, p, count_include_pad)
            sums.append(xp.astype(inside, xp.float64))
            div = div * _along(xp.astype(count, xp.float64), i, d)
        if divisor_override is not None:
            div = divisor_override
        return xp.astype(xp.trunc(dim_matrices(xp.astype(x, xp.float64), tuple(sums)) / div), x.dtype)

    def adaptive_avg_matrices(x, out_size):
        dt = x.dtype if k.is_float(x) else xp.float64
        mats = []
        for S, L in zip(x.shape[x.ndim - len(out_size):], out_size):
            start, end = _adaptive_bounds(S, L)
            st, en = xp.asarray(start, dtype=i64), xp.asarray(end, dtype=i64)
            pos = xp.arange(S, dtype=i64)[None, :]
            inside = xp.astype((pos >= st[:, None]) & (pos < en[:, None]), xp.float64)
            # the cpu divides in float64, then rounds to the dtype
            mats.append(xp.astype(inside / xp.astype(en - st, xp.float64)[:, None], dt))
        return tuple(mats)

    # ----- interpolate's matrices (ATen's index formulas, see cpu/nn_resample.py) ---------------------------
    def _c(v, dt):
        return xp.asarray(v, dtype=dt)

    def _scale_value(scale, S, L, dt):
        return _c(1.0 / scale, dt) if scale is not None and scale > 0 else _c(S, dt) / _c(L, dt)

    def _linear_scale(scale, S, L, align_corners, dt):
        if align_corners:
            return _c(S - 1, dt) / _c(L - 1, dt) if L > 1 else _c(0, dt)
        return _scale_value(scale, S, L, dt)

    def _source_index(scale, L, align_corners, cubic, dt):
        dst = xp.arange(L, dtype=dt)
        if align_corners:
            return scale * dst
        src = scale * (dst + 0.5) - 0.5
        return src if cubic else xp.maximum(src, _c(0, dt))

    def _one_hot_rows(src, S, dt):
        """The (L, S) matrix with a one at column ``src[r]`` of each row r."""
        return xp.astype(src[:, None] == xp.arange(S, dtype=i64)[None, :], dt)

    def _interp_matrix(mode, S, L, scale, align_corners, dt, exact_sizes=False, generic=False):
        f32 = xp.float32
        rows = xp.arange(L, dtype=i64)
        col = xp.arange(S, dtype=i64)[None, :]
        zero = _c(0, dt)
        if mode in ("nearest", "nearest-exact"):
            if exact_sizes and L == S:
                src = rows
            elif exact_sizes and L == 2 * S:
                src = rows // 2
            elif generic:
                sc = _scale_value(scale, S, L, dt)
                r = xp.astype(rows, dt)
                real = r * sc if mode == "nearest" else xp.maximum(sc * (r + 0.5) - 0.5, zero) + 0.5
                src = xp.astype(xp.floor(xp.astype(real, f32)), i64)   # floorf
            else:
                sc = _scale_value(scale, S, L, f32)
                off = 0.5 if mode == "nearest-exact" else 0.0
                src = xp.astype(xp.floor((xp.astype(rows, f32) + off) * sc), i64)
            return _one_hot_rows(xp.minimum(src, _c(S - 1, i64)), S, dt)
        if mode == "linear":
            if L == S:   # PyTorch copies a dim whose size is unchanged, whatever scale_factor was given
                return xp.eye(L, dtype=dt)
            src = _source_index(_linear_scale(scale, S, L, align_corners, dt), L, align_corners, False, dt)
            i0 = xp.astype(src, i64)
            i1 = i0 + xp.astype(i0 < S - 1, i64)
            lam1 = src - xp.astype(i0, dt)
            return (xp.where(col == i0[:, None], (1 - lam1)[:, None], zero)
                    + xp.where(col == i1[:, None], lam1[:, None], zero))
        # bicubic, A = -0.75, taps at floor(x)-1 .. floor(x)+2 clamped to the border (added in tap order)
        src = _source_index(_linear_scale(scale, S, L, align_corners, dt), L, align_corners, True, dt)
        i = xp.floor(src)
        t = src - i
        A = _c(-0.75, dt)

        def cc1(v):
            return ((A + 2) * v - (A + 3)) * v * v + 1

        def cc2(v):
            return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
        m = xp.zeros((L, S), dtype=dt)
        for tap, c in enumerate((cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t))):
            idx = xp.clip(xp.astype(i, i64) - 1 + tap, 0, S - 1)
            m = m + xp.where(col == idx[:, None], c[:, None], zero)
        return m

    def interpolate_matrices(x, mode, out_size, scales, align_corners, exact_sizes=False, generic=False):
        dt = x.dtype if k.is_float(x) else xp.float32
        return tuple(_interp_matrix(mode, S, L, None if scales is None else scales[i], align_corners, dt,
                                    exact_sizes, generic)
                     for i, (S, L) in enumerate(zip(x.shape[2:], out_size)))

    def _aa_filter(v, mode):
        """The antialiasing filters (Pillow's): triangle, Keys cubic with a = -0.5, Lanczos-3 (float64)."""
        v = xp.abs(v)
        zero = _c(0.0, xp.float64)
        if mode == "bilinear":
            return xp.maximum(1.0 - v, zero)
        if mode == "bicubic":
            a = -0.5
            return xp.where(v < 1, ((a + 2) * v - (a + 3)) * v * v + 1,
                            xp.where(v < 2, ((a * v - 5 * a) * v + 8 * a) * v - 4 * a, zero))
        one = _c(1.0, xp.float64)
        px = math.pi * xp.where(v == 0, one, v)
        sinc = xp.where(v == 0, one, xp.sin(px) / px)
        sinc3 = xp.where(v == 0, one, xp.sin(px / 3) / (px / 3))
        return xp.where(v < 3, sinc * sinc3, zero)

    def _aa_matrix(mode, S, L, scale, align_corners, dt):
        """The (L, S) weights of antialiased resizing along one dim (ATen's; see the cpu's _aa_matrix)."""
        f64 = xp.float64
        n = {"bilinear": 2, "bicubic": 4, "lanczos": 6}[mode]
        if align_corners:
            sc = (S - 1) / (L - 1) if L > 1 else 0.0
        else:
            sc = 1.0 / scale if scale is not None and scale > 0 else S / L
        support = n * 0.5 * sc if sc >= 1.0 else n * 0.5
        width = int(math.ceil(support)) * 2 + 1
        inv = 1.0 / sc if sc >= 1.0 else 1.0
        center = sc * (xp.astype(xp.arange(L, dtype=i64), f64) + 0.5)
        xmin = xp.maximum(xp.astype(xp.trunc(center - support + 0.5), i64), _c(0, i64))   # C++ casts truncate
        xsize = xp.clip(xp.minimum(xp.astype(xp.trunc(center + support + 0.5), i64), _c(S, i64)) - xmin, 0, width)
        j = xp.arange(width, dtype=i64)[None, :]
        inside = j < xsize[:, None]
        w = xp.where(inside, _aa_filter((xp.astype(j + xmin[:, None], f64) - center[:, None] + 0.5) * inv, mode),
                     _c(0.0, f64))
        total = xp.sum(w, axis=1, keepdims=True)
        w = xp.where(total != 0, w / xp.where(total != 0, total, _c(1.0, f64)), w)
        # column s of row r holds tap s - xmin[r] where that tap is inside the window
        tap = xp.arange(S, dtype=i64)[None, :] - xmin[:, None]
        valid = (tap >= 0) & (tap < xsize[:, None])
        m = xp.where(valid, xp.take_along_axis(w, xp.clip(tap, 0, width - 1), axis=1), _c(0.0, f64))
        return xp.astype(m, dt)

    def interpolate_aa_matrices(x, mode, out_size, scales, align_corners):
        dt = x.dtype
        bmats = tuple(_aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), dt)
                      for i, (S, L) in enumerate(zip(x.shape[2:], out_size)))
        mats = tuple(xp.eye(L, dtype=dt) if S == L else b for S, L, b in zip(x.shape[2:], out_size, bmats))
        return mats, bmats

    # ----- uint8 images, PyTorch's way (see cpu/nn_resample.py): int16 fixed-point separable passes ---------
    def _precision(top: float) -> int:
        """ATen's fixed-point precision for weights whose largest is ``top``: the most bits (at most 22) that keep
        it under 2^15."""
        prec = 0
        while prec < 22 and int(0.5 + top * (1 << (prec + 1))) < (1 << 15):
            prec += 1
        return prec

    def _fixed(w, prec: int):
        """float64 weights as int64 fixed-point values at ``prec`` bits, rounded half away from zero."""
        v = w * (1 << prec)
        return xp.astype(xp.where(v < 0, xp.trunc(v - 0.5), xp.trunc(v + 0.5)), i64)

    def _top(w) -> float:
        return float(xp.max(w)) if k.numel(w) else 0.0

    def _uint8_filter(v, cubic):
        v = xp.abs(v)
        zero = _c(0.0, xp.float64)
        if not cubic:
            return xp.maximum(1.0 - v, zero)
        a = -0.75   # the float kernels' constant (antialias=False)
        near = ((a + 2) * v - (a + 3)) * v * v + 1
        far = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
        return xp.where(v < 1.0, near, xp.where(v < 2.0, far, zero))

    def _uint8_taps(S: int, L: int, scale, align_corners: bool, cubic: bool):
        """(taps (L, n) int64, fixed-point weights (L, n), precision) of one dim (the cpu's _uint8_taps)."""
        f64 = xp.float64
        n = 4 if cubic else 2
        if align_corners:
            sc = (S - 1) / (L - 1) if L > 1 else 0.0
        else:
            sc = 1.0 / scale if scale is not None and scale > 0 else S / L
        i = xp.astype(xp.arange(L, dtype=i64), f64)
        if align_corners:
            real = sc * i
        else:
            real = sc * (i + 0.5) - 0.5
            if not cubic:
                real = xp.maximum(real, _c(0.0, f64))
        idx = xp.minimum(xp.astype(xp.floor(xp.astype(real, xp.float32)), i64), _c(S - 1, i64))   # floorf
        lam = xp.clip(real - xp.astype(idx, f64), 0.0, 1.0)
        support = n // 2
        lo = idx - support + 1
        first = xp.maximum(lo, _c(0, i64))
        size = xp.clip(xp.minimum(idx + support + 1, _c(S, i64)) - first, 0, n)
        cols = xp.arange(n, dtype=i64)[None, :]
        zero = _c(0.0, f64)
        w = xp.zeros((L, n), dtype=f64)
        wmax = xp.zeros((L,), dtype=f64)
        slot = xp.zeros((L,), dtype=i64)
        for j in range(n):   # ATen's loop folds taps past an edge onto the edge sample's weight
            v = _uint8_filter(j + 1 - support - lam, cubic)
            pos = lo + j
            slot = xp.where(pos <= 0, _c(0, i64), xp.where(pos >= S - 1, size - 1, slot))
            w = w + xp.where(cols == slot[:, None], v[:, None], zero)
            wmax = xp.maximum(wmax, xp.take_along_axis(w, slot[:, None], axis=1)[:, 0])
            slot = slot + 1
        prec = _precision(_top(wmax))
        w16 = xp.where(cols >= size[:, None], _c(0, i64), _fixed(w, prec))   # taps past the window are not read
        return xp.minimum(first[:, None] + cols, _c(S - 1, i64)), w16, prec

    def _uint8_passes(x, out_size, pass_):
        """``x`` uint8 (N, C, *S) resized one spatial dim at a time, the last first, a dim of unchanged size
        skipped; ``pass_(y, k)`` gives dim k's int64 accumulator (last axis: the outputs) and its precision. Each
        pass's result is rounded and clamped to 0..255 before the next."""
        y = xp.astype(x, i64)
        for kk in reversed(range(len(out_size))):
            ax = 2 + kk
            if y.shape[ax] == out_size[kk]:
                continue
            acc, prec = pass_(xp.moveaxis(y, ax, -1), kk)
            y = xp.moveaxis(xp.clip(acc >> prec, 0, 255), -1, ax)
        return xp.astype(y, xp.uint8)

    def _uint8_resize(x, out_size, scales, align_corners: bool, cubic: bool):
        """Bilinear or bicubic resizing of uint8 ``x`` (N, C, *S), PyTorch's uint8 way."""
        if tuple(x.shape[2:]) == tuple(out_size):
            return xp.asarray(x, copy=True)

        def pass_(moved, kk):
            taps, w16, prec = _uint8_taps(moved.shape[-1], out_size[kk], None if scales is None else scales[kk],
                                          align_corners, cubic)
            acc = xp.full(tuple(moved.shape[:-1]) + (out_size[kk],), 1 << (prec - 1), dtype=i64)
            for j in range(taps.shape[1]):
                acc = acc + xp.take(moved, taps[:, j], axis=moved.ndim - 1) * w16[:, j]
            return acc, prec
        return _uint8_passes(x, out_size, pass_)

    def interpolate_uint8(x, mode, out_size, scales, align_corners):
        if mode in ("bilinear", "bicubic"):
            return _uint8_resize(x, tuple(out_size), scales, bool(align_corners), mode == "bicubic")
        small = len(out_size) == 2 and sum(out_size) <= 128   # as interpolate's; indices in float32
        mats = interpolate_matrices(x, mode, out_size, scales, None, mode == "nearest" and small, not small)
        return xp.astype(xp.round(dim_matrices(xp.astype(x, xp.float64), mats)), xp.uint8)

    def interpolate_aa_uint8(x, mode, out_size, scales, align_corners):
        if tuple(x.shape[2:]) == tuple(out_size):
            return xp.asarray(x, copy=True)
        mats = [_aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), xp.float64)
                for i, (S, L) in enumerate(zip(x.shape[2:], out_size))]

        def pass_(moved, kk):
            prec = _precision(_top(mats[kk]))
            return xp.matmul(moved, xp.matrix_transpose(_fixed(mats[kk], prec))) + (1 << (prec - 1)), prec
        return _uint8_passes(x, tuple(out_size), pass_)

    def resample(x, mats, bmats, node):
        return dim_matrices(x, mats)

    def resample_backward(g, mats, bmats, node):
        return dim_matrices(g, tuple(xp.matrix_transpose(b) for b in bmats))

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "i64")
            and callable(f)}
