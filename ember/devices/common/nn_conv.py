"""Convolution, unfold / fold, reflect / replicate / circular padding, affine_grid and grid_sample's plan in array-API
standard operations (the cpu's are ember/devices/cpu/nn_conv.py, nn_pad.py and nn_grid.py; same contracts).

A convolution is im2col followed by one matmul batched over the samples and the groups: the columns are the
prod(kernel) strided slices of the zero-padded input, one per kernel offset, stacked (the standard has no strided
views). col2im (fold, the transposed convolution) adds the columns back one strided slice per kernel offset into a
zero buffer, in the cpu's order (so fold's sums are the cpu's, bit for bit), and crops the padding. These are
correctness paths: they hold the whole batch's columns at once, where the cpu works a chunk of samples at a time.
grid_sample reads and writes its input through pool_gather / pool_scatter (the pooling family's kernels); its plan
is here.
"""
from __future__ import annotations

import itertools
import math


def kernels(k) -> dict:
    xp = k.xp
    LEAD = (slice(None), slice(None))

    # ----- convolution ---------------------------------------------------------------------------------------
    def _out_size(grid, kernel, stride, dilation):
        return tuple((p - dl * (kk - 1) - 1) // s + 1 for p, kk, s, dl in zip(grid, kernel, stride, dilation))

    def _padded(x, pads):
        """``x`` (N, C, *S) with zeros added by the (lo, hi) ``pads`` around its spatial dims."""
        if not any(lo or hi for lo, hi in pads):
            return x
        shape = tuple(x.shape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
        out = xp.zeros(shape, dtype=x.dtype)
        out[LEAD + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))] = x
        return out

    def _offsets(kernel):
        """The kernel offsets in C order (the order of the cpu's ndindex loops)."""
        return list(itertools.product(*(range(n) for n in kernel)))

    def _cols(x, kernel, stride, pads, dilation, out_size):
        """im2col: (N, C*prod(kernel), prod(out_size)), channels major, then the kernel offsets (the cpu's
        layout): one strided slice of the padded input per kernel offset."""
        N, C = x.shape[:2]
        xpad = _padded(x, pads)
        taps = [xpad[LEAD + tuple(slice(o * dl, o * dl + s * (L - 1) + 1, s)
                                  for o, dl, s, L in zip(off, dilation, stride, out_size))]
                for off in _offsets(kernel)]
        return xp.reshape(xp.stack(taps, axis=2), (N, C * math.prod(kernel), math.prod(out_size)))

    def _col2im(cols, size, kernel, stride, dilation, lo):
        """The columns ``cols`` (N, C, prod(kernel), *L) added into zeros at their windows (origins at ``-lo``),
        one strided slice per kernel offset, then cropped to ``size``: (N, C, *size)."""
        N, C = cols.shape[:2]
        out_size = tuple(cols.shape[3:])
        full = tuple(max(l0 + s, (L - 1) * st + (kk - 1) * dl + 1)
                     for l0, s, L, st, kk, dl in zip(lo, size, out_size, stride, kernel, dilation))
        buf = xp.zeros((N, C) + full, dtype=cols.dtype)
        for j, off in enumerate(_offsets(kernel)):
            sl = LEAD + tuple(slice(o * dl, o * dl + st * (L - 1) + 1, st)
                              for o, dl, st, L in zip(off, dilation, stride, out_size))
            buf[sl] = buf[sl] + cols[:, :, j, ...]
        return buf[LEAD + tuple(slice(l0, l0 + s) for l0, s in zip(lo, size))]

    def _bias(out, b):
        if b is None:
            return out
        return out + xp.reshape(xp.astype(b, out.dtype), (b.shape[0],) + (1,) * (out.ndim - 2))

    def conv_nd(x, w, b, stride, pads, dilation, groups):
        """The convolution of ``x`` (N, C, *S) with ``w`` (O, C/groups, *K), plus ``b`` (O,) or None."""
        x, w = k.promote(x, w)
        N, C = x.shape[:2]
        O = w.shape[0]
        kernel = tuple(w.shape[2:])
        grid = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
        out_size = _out_size(grid, kernel, stride, dilation)
        cols = _cols(x, kernel, stride, pads, dilation, out_size)
        G = groups
        cols = xp.reshape(cols, (N, G, cols.shape[1] // G, cols.shape[2]))
        wm = xp.reshape(w, (G, O // G, cols.shape[2]))
        out = xp.matmul(wm, cols)                                  # (N, G, O/G, L)
        return _bias(xp.reshape(out, (N, O) + out_size), b)

    def conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size):
        """The transposed convolution (the input gradient of ``conv_nd``): ``x`` (N, O, *L), ``w``
        (O, C/groups, *K), output (N, C, *size), plus ``b`` (C,) or None."""
        x, w = k.promote(x, w)
        N, O = x.shape[:2]
        out_size = tuple(x.shape[2:])
        kernel = tuple(w.shape[2:])
        K = math.prod(kernel)
        G = groups
        C = G * w.shape[1]
        wt = xp.matrix_transpose(xp.reshape(w, (G, O // G, w.shape[1] * K)))        # (G, C/G*K, O/G)
        cols = xp.matmul(wt, xp.reshape(x, (N, G, O // G, math.prod(out_size))))    # (N, G, C/G*K, L)
        cols = xp.reshape(cols, (N, C, K) + out_size)
        return _bias(_col2im(cols, tuple(size), kernel, stride, dilation, [lo for lo, _ in pads]), b)

    def conv_weight_nd(x, gy, wshape, stride, pads, dilation, groups):
        """The weight gradient of ``conv_nd``: ``x`` (N, C, *S) against the output gradient ``gy`` (N, O, *L)."""
        x, gy = k.promote(x, gy)
        N, O = gy.shape[:2]
        out_size = tuple(gy.shape[2:])
        kernel = tuple(wshape[2:])
        G = groups
        cols = _cols(x, kernel, stride, pads, dilation, out_size)
        cols = xp.reshape(cols, (N, G, cols.shape[1] // G, cols.shape[2]))
        g = xp.reshape(gy, (N, G, O // G, cols.shape[3]))
        return xp.reshape(xp.sum(xp.matmul(g, xp.matrix_transpose(cols)), axis=0), tuple(wshape))

    # ----- unfold / fold ---------------------------------------------------------------------------------------
    def im2col(x, kernel, dilation, pads, stride):
        """F.unfold: (N, C, *S) -> (N, C*prod(kernel), L) columns of the sliding blocks ((C, *S): unbatched)."""
        if x.ndim == len(kernel) + 1:
            return im2col(xp.expand_dims(x, axis=0), kernel, dilation, pads, stride)[0, ...]
        grid = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)]
        return _cols(x, kernel, stride, pads, dilation, _out_size(grid, kernel, stride, dilation))

    def col2im(cols, size, kernel, dilation, pads, stride):
        """F.fold: (N, C*prod(kernel), L) -> (N, C, *size), overlapping blocks summed ((C*K, L): unbatched)."""
        if cols.ndim == 2:
            return col2im(xp.expand_dims(cols, axis=0), size, kernel, dilation, pads, stride)[0, ...]
        N, CK = cols.shape[:2]
        K = math.prod(kernel)
        out_size = _out_size([s + lo + hi for s, (lo, hi) in zip(size, pads)], kernel, stride, dilation)
        c = xp.reshape(cols, (N, CK // K, K) + out_size)
        return _col2im(c, tuple(size), kernel, stride, dilation, [lo for lo, _ in pads])

    # ----- reflect / replicate / circular padding: index maps ---------------------------------------------------
    def _pad_index(mode, S, lo, hi):
        """The source index of each padded position along one dim of size ``S`` padded by (lo, hi)."""
        if mode == "circular":   # PyTorch crops (negative pads) first, then wraps within what is left
            a, b = max(-lo, 0), S - max(-hi, 0)
            return xp.arange(-max(lo, 0), b - a + max(hi, 0), dtype=xp.int64) % max(b - a, 1) + a
        p = xp.arange(-lo, S + hi, dtype=xp.int64)
        if mode == "reflect":
            p = xp.abs(p)
            return xp.where(p > S - 1, 2 * (S - 1) - p, p)
        return xp.clip(p, 0, S - 1)   # replicate

    def pad_indices(x, mode, pads):
        """The index vectors (for ``pad_gather``) of ``mode`` padding by the (lo, hi) pairs ``pads`` over the last
        len(pads) dims of ``x``. Not differentiable."""
        return tuple(_pad_index(mode, s, lo, hi) for s, (lo, hi) in zip(x.shape[x.ndim - len(pads):], pads))

    def pad_gather(x, idx):
        """``x`` read at index vector ``idx[i]`` along each of its last len(idx) dims."""
        lead = x.ndim - len(idx)
        for i, ix in enumerate(idx):
            x = xp.take(x, ix, axis=lead + i)
        return x

    def pad_gather_backward(g, idx, shape):
        """The gradient of ``pad_gather``: each dim's index map transposed, as the cpu's (the interior run copied
        in one go, then one slab addition per padded position, in the same order: the same sums)."""
        lead = len(shape) - len(idx)
        for i in range(len(idx) - 1, -1, -1):
            ix = [int(idx[i][j]) for j in range(idx[i].shape[0])]   # a few host ints: the slabs to add
            ax = lead + i
            out = xp.zeros(tuple(g.shape[:ax]) + (shape[ax],) + tuple(g.shape[ax + 1:]), dtype=g.dtype)
            # the interior: the longest run where ix[j] = ix[j0] + (j - j0) (the first of the longest)
            starts = [0] + [j for j in range(1, len(ix)) if ix[j] - ix[j - 1] != 1]
            ends = starts[1:] + [len(ix)]
            j0, j1 = max(zip(starts, ends), key=lambda r: r[1] - r[0]) if ix else (0, 0)
            pre = (slice(None),) * ax
            if j1 > j0:
                dst = pre + (slice(ix[j0], ix[j0] + j1 - j0), Ellipsis)
                out[dst] = out[dst] + g[pre + (slice(j0, j1), Ellipsis)]
            for j in list(range(j0)) + list(range(j1, len(ix))):
                dst = pre + (ix[j], Ellipsis)
                out[dst] = out[dst] + g[pre + (j, Ellipsis)]
            g = out
        return g

    def pad_backward(g, x, idx):
        """Reflection/replication padding's input gradient (``x`` is there for its shape)."""
        return pad_gather_backward(g, idx, tuple(x.shape))

    # ----- affine_grid -----------------------------------------------------------------------------------------
    def _base_grid(size, align_corners, dtype):
        """(*spatial, d+1): the normalised coordinates (x, y[, z], 1) of every output location, x fastest."""
        axes = []
        for s in size[2:][::-1]:   # x (width) first
            if s <= 1:
                v = xp.zeros((max(s, 0),), dtype=dtype)
            else:
                v = xp.linspace(-1.0, 1.0, s, dtype=dtype)
                if not align_corners:
                    v = v * xp.asarray((s - 1) / s, dtype=dtype)
            axes.append(v)
        mesh = xp.meshgrid(*axes[::-1], indexing="ij")           # spatial order (D, H, W)
        return xp.stack(list(mesh[::-1]) + [xp.ones_like(mesh[0])], axis=-1)

    def affine_grid(theta, size, align_corners):
        """(N, *spatial, d) sampling grid: the base grid transformed by each theta (N, d, d+1)."""
        base = xp.reshape(_base_grid(size, align_corners, theta.dtype), (math.prod(size[2:]), theta.shape[2]))
        out = xp.matmul(base, xp.matrix_transpose(theta))          # (N, S, d)
        return xp.reshape(out, (theta.shape[0],) + tuple(size[2:]) + (theta.shape[1],))

    def affine_grid_backward(g, size, align_corners):
        """The gradient of ``affine_grid`` with respect to theta: (N, d, d+1)."""
        d = g.shape[-1]
        S = math.prod(size[2:])
        base = xp.reshape(_base_grid(size, align_corners, g.dtype), (S, d + 1))
        return xp.matmul(xp.matrix_transpose(xp.reshape(g, (g.shape[0], S, d))), base)

    # ----- grid_sample's plan (see cpu/nn_grid.py: the same pieces, in standard operations) -------------------
    def _reflect(c, size, align, const):
        """(reflected coordinate, whether it lies on an even (unmirrored) piece, the sign of ``c - mn``) of ``c``
        (ATen's reflect_coordinates; None where the range is one point: everything reflects to it); ``const`` makes
        its two constants (arrays of the coordinate's dtype or Python floats, as the cpu's)."""
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            return None
        mn, span = const(lo2 / 2), const((hi2 - lo2) / 2)
        t = c - mn
        negative = t < 0
        t = xp.abs(t)
        extra = xp.remainder(t, span)   # t >= 0 (or nan): the cpu's fmod
        even = xp.floor(t / span) % 2 == 0
        return xp.where(even, extra + mn, span - extra + mn), even, negative

    def _gs_axis(coord, size, padding, align):
        """(pixel position, A, B) along one axis for normalised coordinates ``coord`` (pixel = A*coord + B)."""
        def dt(v):
            return xp.asarray(v, dtype=coord.dtype)
        scale = dt((size - 1) / 2) if align else dt(size / 2)
        c = coord * scale + dt((size - 1) / 2)
        a = xp.ones_like(c)
        if padding == "reflection":
            r = _reflect(c, size, align, dt)
            if r is None:
                c = xp.zeros_like(c)
                a = xp.zeros_like(c)
            else:
                c, even, negative = r
                s1 = xp.where(negative, dt(-1), dt(1))
                a = xp.where(even, s1, -s1)
        if padding in ("border", "reflection"):
            a = xp.where((c > 0) & (c < size - 1), a, dt(0))
            c = xp.clip(c, 0, size - 1)
        A = a * scale
        return c, A, c - A * coord

    def _flat(pos, sizes, N, C):
        """(flat spatial index broadcast to (N, C, *out), in-bounds mask (N, *out)) of the integer-valued float
        positions ``pos`` (component k addresses spatial dim d-1-k)."""
        d = len(sizes)
        mask = xp.ones(tuple(pos[0].shape), dtype=xp.bool)
        flat = xp.zeros(tuple(pos[0].shape), dtype=xp.int64)
        for kk, p in enumerate(pos):
            S = sizes[d - 1 - kk]
            mask = mask & (p >= 0) & (p <= S - 1)
            p = xp.where(xp.isnan(p), xp.zeros_like(p), p)   # a nan position is masked off; any valid index
            flat = flat + xp.astype(xp.clip(p, 0, S - 1), xp.int64) * math.prod(sizes[d - kk:])
        idx = xp.broadcast_to(xp.expand_dims(flat, axis=1), (N, C) + tuple(flat.shape[1:]))
        return xp.asarray(idx, copy=True), mask

    def _gs_plan(inp_shape, grid, mode, padding, align):
        """The corners (flat index, mask, offsets) and the axis maps, as the cpu's _gs_plan."""
        sizes = tuple(inp_shape[2:])
        d = len(sizes)
        N, C = inp_shape[:2]
        axes = [_gs_axis(grid[..., kk], sizes[d - 1 - kk], padding, align) for kk in range(d)]
        if mode == "nearest":
            bases = [(tuple(xp.round(c) for c, _, _ in axes), None)]
        else:
            floors = [xp.floor(c) for c, _, _ in axes]
            bases = [(tuple(f + o for f, o in zip(floors, offs[::-1])), offs[::-1])
                     for offs in itertools.product((0, 1), repeat=d)]
        corners = []
        for pos, offs in bases:
            idx, mask = _flat(pos, sizes, N, C)
            corners.append((idx, xp.astype(mask, grid.dtype), offs))
        maps = [(A, B - xp.floor(c)) if mode != "nearest" else (A, B) for c, A, B in axes]
        return corners, maps

    def _gs_tap(coord, size, padding, align):
        """A bicubic tap's integer coordinate after padding (reflect, then clip; or clip) and its in-bounds mask."""
        if padding == "reflection":
            r = _reflect(coord, size, align, float)
            coord = xp.zeros_like(coord) if r is None else r[0]
        if padding in ("border", "reflection"):
            coord = xp.clip(coord, 0, size - 1)
        ic = xp.trunc(coord)   # C++'s cast to int64 truncates
        return ic, (ic >= 0) & (ic <= size - 1)

    def _gs_bicubic_plan(inp_shape, grid, padding, align):
        """The 16 taps (flat index, mask, i, j) and the maps of the fractional offsets, as the cpu's."""
        N, C, H, W = inp_shape
        maps, floors = [], []
        for kk, size in ((0, W), (1, H)):
            c, A, B = _gs_axis(grid[..., kk], size, "zeros", align)   # unnormalised, never clipped
            f = xp.floor(c)
            floors.append(f)
            maps.append((A, B - f))
        taps = []
        for j in range(4):
            yy, my = _gs_tap(floors[1] - 1 + j, H, padding, align)
            for i in range(4):
                xx, mx = _gs_tap(floors[0] - 1 + i, W, padding, align)
                idx, _ = _flat((xx, yy), (H, W), N, C)
                taps.append((idx, xp.astype(mx & my, grid.dtype), i, j))
        return taps, maps

    def grid_sample_plan(inp_shape, grid, mode, padding, align):
        """What grid_sample of an input of ``inp_shape`` reads at ``grid`` (N, *out, d) (see cpu/nn_grid.py)."""
        if mode == "bicubic":
            return _gs_bicubic_plan(tuple(inp_shape), grid, padding, align)
        return _gs_plan(tuple(inp_shape), grid, mode, padding, align)

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "LEAD")
            and callable(f)}
