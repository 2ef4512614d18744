"""Special functions in array-API standard operations (the standard has none): erf, erfc, erfinv and digamma,
computed in float64 and rounded once to the input's dtype. The coefficients are the cpu kernels' (Cody's erf, PyTorch's
erfinv and digamma)."""
from __future__ import annotations

import math

from ..cpu import elementwise as _c   # coefficient tables only (Python floats)


def kernels(k) -> dict:
    xp = k.xp

    def _in64(fn):
        def kernel(x):
            return xp.astype(fn(xp.astype(x, xp.float64)), x.dtype if k.is_float(x) else xp.float32)
        kernel.__name__ = fn.__name__
        return kernel

    def _ratio(v, num, den, lead):
        n, d = v * lead, v
        for cn, cd in zip(num[:-1], den[:-1]):
            n, d = (n + cn) * v, (d + cd) * v
        return (n + num[-1]) / (d + den[-1])

    def _small(x):   # erf for |x| <= 0.46875
        return _ratio(x * x, _c._ERF_A[:4], _c._ERF_B, _c._ERF_A[4]) * x

    def _erfc_large(y):   # erfc for y > 0.46875
        v = xp.clip(y, _c._ERF_SMALL, 40.0)
        r = _ratio(xp.minimum(v, xp.asarray(4.0, dtype=v.dtype)), _c._ERF_C[:8], _c._ERF_D, _c._ERF_C[8])
        z = 1.0 / (v * v)
        far = (_c._ONE_OVER_SQRT_PI - z * _ratio(z, _c._ERF_P[:5], _c._ERF_Q, _c._ERF_P[5])) / v
        return xp.where(v > 4.0, far, r) * xp.exp(-(v * v))

    def _erf64(x):
        big = xp.copysign(1.0 - _erfc_large(xp.abs(x)), x)
        return xp.where(xp.abs(x) <= _c._ERF_SMALL, _small(x), big)

    def _erfc64(x):
        big = _erfc_large(xp.abs(x))
        return xp.where(xp.abs(x) <= _c._ERF_SMALL, 1.0 - _small(x), xp.where(x < 0, 2.0 - big, big))

    erf, erfc = _in64(_erf64), _in64(_erfc64)

    @_in64
    def erfinv(y):
        a, b, c, d = _c._ERFINV_A, _c._ERFINV_B, _c._ERFINV_C, _c._ERFINV_D
        ya = xp.abs(y)
        z = y * y
        central = y * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / \
            ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0)
        z = xp.sqrt(-xp.log((1.0 - ya) / 2.0))
        tail = xp.copysign(((c[3] * z + c[2]) * z + c[1]) * z + c[0], y) / ((d[1] * z + d[0]) * z + 1.0)
        x = xp.where(ya <= 0.7, central, tail)
        kk = 2.0 / math.sqrt(math.pi)
        for _ in range(2):
            x = x - (_erf64(x) - y) / (kk * xp.exp(-x * x))
        x = xp.where(ya == 1, xp.copysign(xp.asarray(math.inf, dtype=y.dtype), y), x)
        return xp.where(ya > 1, xp.asarray(math.nan, dtype=y.dtype), x)

    def _digamma_pos(x):
        result = xp.zeros_like(x)
        while True:
            small = x < 10
            if not bool(xp.any(small)):
                break
            result = xp.where(small, result - 1 / xp.where(small, x, 1.0), result)
            x = xp.where(small, x + 1, x)
        z = 1.0 / (x * x)
        p = xp.zeros_like(x)
        for cc in _c._DIGAMMA_A:
            p = p * z + cc
        y = xp.where(x < 1.0e17, z * p, 0.0)
        return xp.where(x == 10, result + _c._PSI_10, result + xp.log(x) - 0.5 / x - y)

    @_in64
    def digamma(x):
        neg = x < 0
        integer = x == xp.trunc(x)
        r = xp.where(neg, x - xp.trunc(x), 0.0)
        v = xp.where(neg, 1 - x, xp.where(x == 0, 1.0, x))
        res = _digamma_pos(xp.where(xp.isnan(v), 1.0, v))
        res = xp.where(neg, res - math.pi / xp.tan(math.pi * r), res)
        res = xp.where(neg & integer, math.nan, res)
        res = xp.where(x == 0, xp.copysign(xp.asarray(math.inf, dtype=x.dtype), -x), res)
        return xp.where(xp.isnan(x), x, res)

    return {"erf": erf, "erfc": erfc, "erfinv": erfinv, "digamma": digamma}
