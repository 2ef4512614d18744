"""Shape, view and indexing kernels (the core's and the 'shape'/'indexing' families) in array-API standard
operations. Writes at basic indices use ``__setitem__`` on a fresh array; writes at advanced indices go through
the kit's generic scatters (the standard has no scatter-add)."""
from __future__ import annotations

import math

from ..cpu.shape import _maybe_overlapping as _overlapping
from ..index import SplitIndex


def _has_arrays(index) -> bool:
    if type(index) is SplitIndex:
        return True
    return any(hasattr(i, "dtype") or type(i) is bool for i in (index if isinstance(index, tuple) else (index,)))


def kernels(k) -> dict:
    xp = k.xp
    along = k.along

    def expand(x, shape):
        return xp.broadcast_to(x, tuple(shape))

    def reshape(x, shape):
        return xp.reshape(x, tuple(shape))

    def permute(x, dims):
        return xp.permute_dims(x, tuple(dims))

    def transpose(x, dim0, dim1):
        dims = list(range(x.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return xp.permute_dims(x, tuple(dims))

    def unsqueeze(x, dim):
        return xp.expand_dims(x, axis=dim)

    def squeeze(x, dim):
        if dim is None:
            dim = tuple(i for i, n in enumerate(x.shape) if n == 1)
        return xp.squeeze(x, axis=dim)

    def getitem(x, index):
        return k.index(x, index)

    def index_put_zeros(g, index, shape):
        return k.scatter_add(shape, lambda lin: k.index(lin, index), g, g.dtype)

    def fill_index(x, index, value):
        if not _has_arrays(index):
            out = xp.asarray(x, copy=True)
            out[index if isinstance(index, tuple) else (index,)] = xp.astype(
                value if hasattr(value, "dtype") else xp.asarray(value), x.dtype)
            return out
        return k.scatter_set(x, lambda lin: k.index(lin, index), value)

    def take_along_dim(x, indices, dim):
        return xp.take_along_axis(x, indices, axis=dim)

    def put_along_dim_zeros(g, indices, dim, shape):
        return k.scatter_set(k.zeros(shape, g.dtype), lambda lin: xp.take_along_axis(lin, indices, axis=dim), g)

    def clone(x):
        return xp.asarray(x, copy=True)

    def cast(x, dtype):
        to = k.lib(dtype)
        if k.kind(x) == "c" and not xp.isdtype(to, "complex floating"):
            x = xp.real(x)   # complex to real keeps the real part (the standard refuses the cast)
        return xp.astype(x, to, copy=False)

    def cat(xs, dim):
        return xp.concat(list(xs), axis=dim)

    def stack(xs, dim):
        return xp.stack(list(xs), axis=dim)

    def slice_dim(x, dim, start, stop, step=1):
        return x[along(dim, slice(start, stop, step))]

    def slice_scatter_zeros(g, dim, start, stop, step, shape):
        out = k.zeros(shape, g.dtype)
        out[along(dim, slice(start, stop, step))] = g
        return out

    def select_dim(x, dim, index):
        return x[along(dim, index)]

    def select_scatter_zeros(g, dim, index, shape):
        out = k.zeros(shape, g.dtype)
        out[along(dim, index)] = g
        return out

    def diagonal(x, offset=0, dim1=0, dim2=1):
        dim1, dim2 = dim1 % x.ndim, dim2 % x.ndim
        n1, n2 = x.shape[dim1], x.shape[dim2]
        length = max(0, min(n1, n2 - offset)) if offset >= 0 else max(0, min(n1 + offset, n2))
        rest = [i for i in range(x.ndim) if i not in (dim1, dim2)]
        y = xp.permute_dims(x, tuple(rest) + (dim1, dim2))
        lead = tuple(y.shape[:-2])
        if length == 0 or k.numel(x) == 0:
            return xp.zeros(lead + (length,), dtype=x.dtype)
        i = xp.arange(length, dtype=xp.int64) + max(0, -offset)
        j = xp.arange(length, dtype=xp.int64) + max(0, offset)
        return xp.take(xp.reshape(y, lead + (n1 * n2,)), i * n2 + j, axis=-1)

    def diag_scatter_zeros(g, offset, dim1, dim2, shape):
        return k.scatter_add(shape, lambda lin: diagonal(lin, offset, dim1, dim2), g, g.dtype)

    def flip(x, dims):
        return xp.flip(x, axis=tuple(dims)) if dims else xp.asarray(x, copy=True)

    def roll(x, shifts, dims):
        if dims is None or dims == ():
            return xp.roll(x, shift=shifts)
        return xp.roll(x, shift=shifts, axis=dims)

    def rot90(x, k_, dims):
        k_ %= 4
        a0, a1 = dims
        order = list(range(x.ndim))
        order[a0], order[a1] = order[a1], order[a0]
        if k_ == 0:
            return xp.asarray(x, copy=True)
        if k_ == 2:
            return xp.flip(xp.flip(x, axis=a0), axis=a1)
        if k_ == 1:
            return xp.permute_dims(xp.flip(x, axis=a1), tuple(order))
        return xp.flip(xp.permute_dims(x, tuple(order)), axis=a1)

    def _tri(x, diagonal, lower):
        n, m = x.shape[-2], x.shape[-1]
        d = xp.arange(m, dtype=xp.int64)[None, :] - xp.arange(n, dtype=xp.int64)[:, None]
        keep = (d <= diagonal) if lower else (d >= diagonal)
        return xp.where(keep, x, xp.zeros((), dtype=x.dtype))

    def tril(x, diagonal=0):
        return _tri(x, diagonal, True)

    def triu(x, diagonal=0):
        return _tri(x, diagonal, False)

    def repeat(x, sizes):
        return xp.tile(x, tuple(sizes))

    def trace(x):
        d = diagonal(x)
        return xp.sum(d, dtype=x.dtype if k.kind(x) in "fc" else xp.int64)

    def unfold(x, dimension, size, step):
        if x.ndim == 0:
            return xp.reshape(x, (1,)) if size else xp.zeros((0,), dtype=x.dtype)
        n = (x.shape[dimension] - size) // step + 1
        idx = xp.arange(n, dtype=xp.int64)[:, None] * step + xp.arange(size, dtype=xp.int64)[None, :]
        w = xp.take(x, xp.reshape(idx, (-1,)), axis=dimension)
        shape = tuple(x.shape[:dimension]) + (n, size) + tuple(x.shape[dimension + 1:])
        return xp.moveaxis(xp.reshape(w, shape), dimension + 1, -1)

    def unfold_backward(g, shape, dimension, size, step):
        out = k.zeros(shape, g.dtype)
        if len(shape) == 0:
            return xp.reshape(g, ()) if k.numel(g) else out
        n = g.shape[dimension]
        for j in range(size):
            sl = along(dimension, slice(j, j + step * (n - 1) + 1, step))
            out[sl] = out[sl] + g[..., j]
        return out

    def gather_rows(x, dim, index):
        return xp.take(x, index, axis=dim)

    def scatter_rows_zeros(g, dim, index, shape):
        return k.scatter_add(shape, lambda lin: xp.take(lin, index, axis=dim), g, g.dtype)

    def split_backward(grads, dim, bounds, shape, dtype):
        out = k.zeros(shape, dtype)
        for i, g in enumerate(grads):
            if g is not None:
                out[along(dim, slice(bounds[i], bounds[i + 1]) if bounds is not None else i)] = g
        return out

    def repeat_index(counts):
        return xp.repeat(xp.arange(counts.shape[0], dtype=xp.int64), counts)

    # ----- as_strided (a gather here: cpu/shape.py's docstrings say what they compute) --------------------------
    def _positions(size, stride, offset):
        pos = xp.full(tuple(size), offset, dtype=xp.int64)
        for d, (n, s) in enumerate(zip(size, stride)):
            pos = pos + xp.reshape(xp.arange(n, dtype=xp.int64) * s, (n,) + (1,) * (len(size) - d - 1))
        return pos

    def _extent(size, stride, offset) -> int:
        return offset + 1 + sum((n - 1) * s_ for n, s_ in zip(size, stride))

    def as_strided(x, size, stride, offset, in_stride, in_offset):
        size, shape = tuple(size), tuple(x.shape)
        if 0 in size or k.numel(x) == 0:
            return k.zeros(size, x.dtype)
        m = max(_extent(shape, in_stride, in_offset), _extent(size, stride, offset))
        pos_in = xp.reshape(_positions(shape, in_stride, in_offset), (-1,))
        vals = xp.reshape(x, (-1,))
        inp = [(n, s_) for n, s_ in zip(shape, in_stride) if n != 1]
        if not _overlapping([n for n, _ in inp], [s_ for _, s_ in inp]):
            store = k.scatter_set_flat(xp.zeros((m,), dtype=x.dtype), pos_in, vals)
        else:   # x's elements share positions: each position holds their mean (they are equal where x is memory)
            total = k.scatter_add_flat(m, pos_in, vals, x.dtype)
            count = k.scatter_add_flat(m, pos_in, xp.ones(pos_in.shape, dtype=xp.int64), xp.int64)
            c = xp.astype(xp.where(count > 1, count, xp.ones_like(count)), total.dtype)
            store = total if total.dtype == xp.bool else total / c if k.is_float(total) else xp.floor_divide(total, c)
        pos_out = _positions(size, stride, offset)
        return xp.reshape(xp.take(store, xp.reshape(pos_out, (-1,))), size)

    def as_strided_backward(g, in_size, in_stride, in_offset, size, stride, offset):
        in_size = tuple(in_size)
        if 0 in in_size or 0 in tuple(size):
            return k.zeros(in_size, g.dtype)
        out_size, out_stride = [], []
        for i in reversed(range(len(size))):
            if size[i] == 1:
                g = xp.squeeze(g, axis=i)
            elif stride[i] == 0:
                g = xp.sum(g, axis=i, dtype=g.dtype)
            else:
                out_size.insert(0, size[i])
                out_stride.insert(0, stride[i])
        inp = [(n, s_) for n, s_ in zip(in_size, in_stride) if n != 1]
        shared = min(in_offset, offset)
        in_eff, out_eff = in_offset - shared, offset - shared
        m = max(_extent([n for n, _ in inp], [s_ for _, s_ in inp], in_eff), _extent(out_size, out_stride, out_eff))
        pos_out = xp.reshape(_positions(out_size, out_stride, out_eff), (-1,))
        vals = xp.reshape(g, (-1,))
        if _overlapping(out_size, out_stride):
            store = k.scatter_add_flat(m, pos_out, vals, g.dtype)
        else:
            store = k.scatter_set_flat(xp.zeros((m,), dtype=g.dtype), pos_out, vals)
        pos_in = _positions(in_size, in_stride, in_eff)
        if _overlapping([n for n, _ in inp], [s_ for _, s_ in inp]):
            count = k.scatter_add_flat(m, xp.reshape(pos_in, (-1,)), xp.ones((k.numel(pos_in),), dtype=g.dtype),
                                       g.dtype)
            store = store / count
        return xp.reshape(xp.take(store, xp.reshape(pos_in, (-1,))), in_size)

    # ----- the 'indexing' family ------------------------------------------------------------------------------
    def index_put_add(x, index, v):
        r = k.scatter_add(tuple(x.shape), lambda lin: k.index(lin, index), v, x.dtype)
        return x | r if x.dtype == xp.bool else x + r

    def scatter_reduce(x, src, index, reduce, include_self):
        shape = tuple(x.shape)
        m = math.prod(shape)
        pos = xp.reshape(k.index(k.lin(shape), index), (-1,))
        src = xp.reshape(xp.astype(xp.broadcast_to(src, tuple(k.index(k.lin(shape), index).shape)), x.dtype), (-1,))
        flat = xp.reshape(x, (-1,))
        if pos.shape[0] == 0 or m == 0:
            return xp.asarray(x, copy=True)
        hits = k._hits(pos, m)
        count = xp.sum(xp.astype(hits, xp.int64), axis=0)
        if reduce in ("sum", "mean"):
            r = xp.sum(xp.where(hits, src[:, None], xp.zeros((), dtype=x.dtype)), axis=0, dtype=x.dtype)
            if include_self:
                r = flat + r
        elif reduce == "prod":
            r = xp.prod(xp.where(hits, src[:, None], xp.ones((), dtype=x.dtype)), axis=0, dtype=x.dtype)
            if include_self:
                r = flat * r
        else:
            big = reduce == "amax"
            if k.is_float(x):
                ident = -math.inf if big else math.inf
            elif x.dtype == xp.bool:
                ident = not big
            else:
                info = xp.iinfo(x.dtype)
                ident = info.min if big else info.max
            fn = xp.max if big else xp.min
            r = fn(xp.where(hits, src[:, None], xp.asarray(ident, dtype=x.dtype)), axis=0)
            if k.is_float(x):   # NaN propagates, as NumPy's maximum.at
                nan = xp.any(hits & xp.isnan(src)[:, None], axis=0)
                r = xp.where(nan, xp.asarray(math.nan, dtype=x.dtype), r)
            if include_self:
                r = (xp.maximum if big else xp.minimum)(flat, r)
        if reduce == "mean":
            c = count + 1 if include_self else xp.where(count == 0, xp.ones_like(count), count)
            r = r / xp.astype(c, x.dtype) if k.is_float(x) or k.kind(x) == "c" else \
                xp.floor_divide(r, xp.astype(c, x.dtype))
        return xp.reshape(xp.where(count > 0, r, flat), shape)

    def grid_index(idx, dim: int) -> tuple:
        """``idx`` at ``dim`` and open ranges elsewhere: gather's and scatter's all-integer-arrays index."""
        nd = idx.ndim
        grids = [xp.reshape(xp.arange(n, dtype=xp.int64), (1,) * i + (n,) + (1,) * (nd - i - 1))
                 for i, n in enumerate(idx.shape)]
        grids[dim] = idx
        return tuple(grids)

    def mask_count(mask) -> int:
        return int(xp.sum(xp.astype(mask, xp.int64)))

    def in_range(idx, lo: int, hi: int) -> bool:
        return not k.numel(idx) or bool(lo <= int(xp.min(idx)) and int(xp.max(idx)) < hi)

    def nonzero_tuple(x):
        if x.ndim == 0:
            return (xp.zeros((int(bool(x)),), dtype=xp.int64),)
        return tuple(xp.astype(i, xp.int64) for i in xp.nonzero(x))

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "along")
            and callable(f)}
