"""Reductions (the core's sum/mean/var and the 'reduction' family) in array-API standard operations."""
from __future__ import annotations

import builtins
import math

from ..cpu.reduction import _segment_reduce, _segment_reduce_backward


def kernels(k) -> dict:
    xp = k.xp

    def _axis(dim):
        return tuple(dim) if isinstance(dim, list) else dim

    def _dims(x, dim) -> tuple:
        if dim is None:
            return tuple(range(x.ndim))
        return tuple(d % max(x.ndim, 1) for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))

    def _sum_dtype(x):
        # NumPy's sum (which the cpu kernels follow): bool and small integers sum in int64, unsigned in uint64
        kd = k.kind(x)
        if kd == "b" or kd == "i":
            return xp.int64
        if kd == "u":
            return xp.uint64
        return x.dtype

    def _num(x):   # bools count as 0 and 1 (NumPy's sums of masks); the standard does not sum bools
        return xp.astype(x, xp.int64) if x.dtype == xp.bool else x

    def sum(x, dim=None, keepdim=False):  # noqa: A001
        return xp.sum(_num(x), axis=_axis(dim), keepdims=keepdim, dtype=_sum_dtype(x))

    def nansum(x, dim, keepdim=False):
        if k.is_float(x):
            x = xp.where(xp.isnan(x), xp.zeros_like(x), x)
        return xp.sum(_num(x), axis=_axis(dim), keepdims=keepdim, dtype=_sum_dtype(x))

    def prod(x, dim=None, keepdim=False):
        return xp.prod(_num(x), axis=_axis(dim), keepdims=keepdim, dtype=_sum_dtype(x))

    def _ordered(fn):   # bools ordered as 0 < 1 (the standard has no order on bools)
        def kernel(x, *args, **kwargs):
            if x.dtype == xp.bool:
                r = fn(xp.astype(x, xp.uint8), *args, **kwargs)
                return xp.astype(r, xp.bool) if r.dtype == xp.uint8 else r
            return fn(x, *args, **kwargs)
        return kernel

    @_ordered
    def amax(x, dim=None, keepdim=False):
        return xp.max(x, axis=_axis(dim), keepdims=keepdim)

    @_ordered
    def amin(x, dim=None, keepdim=False):
        return xp.min(x, axis=_axis(dim), keepdims=keepdim)

    def mean(x, dim=None, keepdim=False):
        if k.numel(x) == 0 or math.prod(x.shape[d] for d in _dims(x, dim)) == 0:
            return xp.sum(x, axis=_axis(dim), keepdims=keepdim) / k.scalar(0, x)
        return xp.mean(x, axis=_axis(dim), keepdims=keepdim)

    def _var64(x, dim, correction, keepdim):
        w = xp.astype(x, xp.float64)
        dims = _dims(x, dim)
        count = math.prod(x.shape[d] for d in dims)
        centered = w - mean(w, dims, True)
        return xp.sum(centered * centered, axis=dims, keepdims=keepdim) / float(max(0, count - correction))

    def _var_complex(x, dim, correction, keepdim):
        # the variances of the real and imaginary parts, each rounded to the real dtype, added (PyTorch's)
        rt = xp.float32 if x.dtype == xp.complex64 else xp.float64
        return (xp.astype(_var64(xp.real(x), dim, correction, keepdim), rt)
                + xp.astype(_var64(xp.imag(x), dim, correction, keepdim), rt))

    def var(x, dim, correction, keepdim=False):
        if k.kind(x) == "c":
            return _var_complex(x, dim, correction, keepdim)
        return xp.astype(_var64(x, dim, correction, keepdim), x.dtype)

    def std(x, dim, correction, keepdim=False):
        if k.kind(x) == "c":
            return xp.sqrt(_var_complex(x, dim, correction, keepdim))
        return xp.astype(xp.sqrt(_var64(x, dim, correction, keepdim)), x.dtype)

    def sum_to(x, shape):
        shape = tuple(shape)
        if tuple(x.shape) == shape:
            return x
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
        r = xp.sum(x, axis=axes, keepdims=True, dtype=x.dtype) if axes else x
        return xp.reshape(r, shape)

    # PyTorch's CPU scans carry float32 (complex64) running values in double (complex128), as the cpu kernels
    _SCAN_ACC = {xp.float32: xp.float64, xp.complex64: xp.complex128}

    def _scan(x, dim, fn):
        if x.ndim == 0:
            return xp.asarray(x, copy=True)
        acc = _SCAN_ACC.get(x.dtype)
        if acc is not None:
            return xp.astype(fn(xp.astype(x, acc), axis=dim), x.dtype)
        return fn(_num(x), axis=dim, dtype=_sum_dtype(x))

    def cumsum(x, dim):
        return _scan(x, dim, xp.cumulative_sum)

    def cumprod(x, dim):
        return _scan(x, dim, xp.cumulative_prod)

    def logsumexp(x, dim, keepdim=False):
        dims = _dims(x, dim)
        if k.numel(x) == 0 or builtins.any(x.shape[d] == 0 for d in dims):
            return xp.log(xp.sum(xp.exp(x), axis=dims, keepdims=keepdim))
        m = xp.max(xp.real(x) if k.kind(x) == "c" else x, axis=dims, keepdims=True)   # complex: the real parts'
        m = xp.where(xp.isinf(m), xp.zeros_like(m), m)
        r = xp.log(xp.sum(xp.exp(x - m), axis=dims, keepdims=True)) + m
        return r if keepdim else xp.squeeze(r, axis=dims)

    def logcumsumexp(x, dim):
        """A running logaddexp along ``dim``: the standard has no accumulate, so one step per position."""
        if x.ndim == 0:
            return xp.asarray(x, copy=True)
        acc = _SCAN_ACC.get(x.dtype)
        if acc is not None:
            return xp.astype(logcumsumexp(xp.astype(x, acc), dim), x.dtype)
        if k.kind(x) == "c":
            return _logcumsumexp_complex(x, dim)
        xm = xp.moveaxis(x, dim, -1)
        n = xm.shape[-1]
        out, acc = [], None
        for i in range(n):
            v = xm[..., i]
            if acc is None:
                acc = v
            else:
                m = xp.maximum(acc, v)
                acc = xp.where(xp.isinf(acc) & (acc == v), acc, m + xp.log1p(xp.exp(-xp.abs(acc - v))))
            out.append(acc)
        r = xp.stack(out, axis=-1) if out else xm
        return xp.moveaxis(r, -1, dim)

    def _logaddexp_complex(x, y):
        """PyTorch's _log_add_exp_helper for complex values (its CPU scan's step)."""
        xnan, ynan = xp.isnan(x), xp.isnan(y)
        lt = xp.real(x) < xp.real(y)
        lo = xp.where(ynan, y, xp.where(xnan, x, xp.where(lt, x, y)))
        hi = xp.where(ynan, y, xp.where(xnan, x, xp.where(lt, y, x)))
        r = xp.log1p(xp.exp(lo - hi)) + hi
        lr, hr = xp.real(lo), xp.real(hi)
        same_inf = ~xp.isfinite(lr) & (lr == hr)
        if bool(xp.any(same_inf)):
            r = xp.where(same_inf, xp.where(lr < 0, lo, xp.log(xp.exp(lo) + xp.exp(hi))), r)
        nan = xp.full_like(r, math.nan)
        return xp.where(xp.isnan(lo), nan * (1 + 1j), r)

    def _logcumsumexp_complex(x, dim):
        xm = xp.moveaxis(x, dim, -1)
        acc = xp.full(tuple(xm.shape[:-1]), -math.inf, dtype=x.dtype)   # PyTorch's scan starts from -inf
        out = []
        for i in range(xm.shape[-1]):
            acc = _logaddexp_complex(xm[..., i], acc)
            out.append(acc)
        r = xp.stack(out, axis=-1) if out else xm
        return xp.moveaxis(r, -1, dim)

    def reverse_dim(x, dim):
        return xp.flip(x, axis=dim) if x.ndim else x

    def gather_dim(x, indices, dim):
        return xp.take_along_axis(x, indices, axis=dim) if x.ndim else xp.asarray(x, copy=True)

    def scatter_add_zeros(g, indices, dim, shape):
        if len(shape) == 0:
            return xp.reshape(xp.asarray(g, copy=True), ())
        return k.scatter_add(shape, lambda lin: xp.take_along_axis(lin, indices, axis=dim), g, g.dtype)

    def vector_norm(x, ord, dim, keepdim=False):  # noqa: A002
        if k.kind(x) == "c":   # the moduli's norm (a real result)
            return vector_norm(xp.abs(x), ord, dim, keepdim)
        dim = _axis(dim)
        if ord == 2:
            r = xp.sqrt(xp.sum(x * x, axis=dim, keepdims=keepdim))
        elif ord == 1:
            r = xp.sum(xp.abs(x), axis=dim, keepdims=keepdim)
        elif ord == 0:
            r = xp.astype(xp.sum(xp.astype(x != 0, x.dtype), axis=dim, keepdims=keepdim), x.dtype)
        elif ord == math.inf:
            r = xp.max(xp.abs(x), axis=dim, keepdims=keepdim)
        elif ord == -math.inf:
            r = xp.min(xp.abs(x), axis=dim, keepdims=keepdim)
        else:
            r = xp.pow(xp.sum(xp.pow(xp.abs(x), k.scalar(ord, x)), axis=dim, keepdims=keepdim), 1.0 / ord)
        return xp.astype(r, x.dtype)

    @_ordered
    def cum_extremum_indices(x, dim, largest):
        if x.ndim == 0:
            return xp.zeros((), dtype=xp.int64)
        xm = xp.moveaxis(x, dim, -1)
        n = xm.shape[-1]
        if n == 0 or k.numel(xm) == 0:
            return xp.moveaxis(xp.zeros(tuple(xm.shape), dtype=xp.int64), -1, dim)
        best = xm[..., 0]
        cur = xp.zeros(tuple(best.shape), dtype=xp.int64)
        out = [cur]
        for i in range(1, n):
            v = xm[..., i]
            take = (v >= best) if largest else (v <= best)
            if k.is_float(x):
                take = xp.isnan(v) | (take & ~xp.isnan(best))
            best = xp.where(take, v, best)
            cur = xp.where(take, xp.asarray(i, dtype=xp.int64), cur)
            out.append(cur)
        return xp.moveaxis(xp.stack(out, axis=-1), -1, dim)

    def any(x, dim=None, keepdim=False):  # noqa: A001
        return xp.any(x, axis=_axis(dim), keepdims=keepdim)

    def all(x, dim=None, keepdim=False):  # noqa: A001
        return xp.all(x, axis=_axis(dim), keepdims=keepdim)

    def _arg(fn, x, dim, keepdim):
        if k.is_float(x) and k.numel(x):   # NumPy (and PyTorch): the first NaN is the extremum
            nan = xp.isnan(x)
            has = xp.any(nan, axis=dim, keepdims=True) if dim is not None else xp.any(nan)
            if bool(xp.any(has)):
                first = xp.argmax(xp.astype(nan, xp.int8) if dim is not None else
                                  xp.reshape(xp.astype(nan, xp.int8), (-1,)), axis=dim, keepdims=keepdim)
                r = fn(x if dim is not None else xp.reshape(x, (-1,)), axis=dim, keepdims=keepdim)
                h = has if keepdim or dim is None else xp.squeeze(has, axis=dim)
                return xp.astype(xp.where(h, first, r), xp.int64)
        r = fn(x if dim is not None else xp.reshape(x, (-1,)), axis=dim, keepdims=keepdim)
        if dim is None and keepdim:
            r = xp.reshape(r, (1,) * x.ndim)
        return xp.astype(r, xp.int64)

    @_ordered
    def argmax(x, dim=None, keepdim=False):
        return _arg(xp.argmax, x, dim, keepdim)

    @_ordered
    def argmin(x, dim=None, keepdim=False):
        return _arg(xp.argmin, x, dim, keepdim)

    def segment_reduce(data, lengths, reduce, axis, initial):
        """The cpu kernel's algorithm (written against an array-API namespace), on this device's."""
        return _segment_reduce(xp, data, lengths, reduce, axis, initial)

    def segment_reduce_backward(g, out, data, lengths, reduce, axis, initial):
        return _segment_reduce_backward(xp, g, out, data, lengths, reduce, axis, initial)

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp") and callable(f)}
