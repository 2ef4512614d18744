"""Special functions in array-API standard operations (the standard has none): erf, erfc, erfinv, lgamma, digamma,
polygamma, i0 and i1, computed in float64 and rounded once to the input's dtype. The coefficients are the cpu kernels' (Cody's
erf, PyTorch's erfinv, digamma and trigamma, Cephes' Hurwitz zeta); lgamma (the cpu's is libm's) is Stirling's series
after the recurrence up to 10, with the reflection formula below 1/2."""
from __future__ import annotations

import math
import types

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

    def _lgamma_large(z):
        """lgamma for z >= 10: Stirling's series (its next term is below 1e-17 of the value there)."""
        iz = 1.0 / z
        iz2 = iz * iz
        s_ = xp.zeros_like(z)
        for c in _STIRLING[:0:-1]:
            s_ = (s_ + c) * iz2
        s_ = (s_ + _STIRLING[0]) * iz
        return (z - 0.5) * xp.log(z) - z + _HALF_LOG_2PI + s_

    def _lgamma_from_half(x):
        """lgamma for x >= 1/2 (finite): lgamma(x + j) - log(x (x + 1) ... (x + j - 1)) with x + j >= 10."""
        z, prod = x, xp.ones_like(x)
        while True:
            small = z < 10
            if not bool(xp.any(small)):
                break
            prod = xp.where(small, prod * z, prod)
            z = xp.where(small, z + 1, z)
        return _lgamma_large(z) - xp.log(prod)

    @_in64
    def lgamma(x):
        """log|Gamma(x)|: inf at the poles 0, -1, -2, ... and at +-inf (libm's lgamma)."""
        inf = xp.asarray(math.inf, dtype=x.dtype)
        pole = (x <= 0) & (x == xp.floor(x))
        low = x < 0.5
        fin = xp.where(xp.isfinite(x) & ~pole, x, 1.0)
        # the reflection Gamma(x) Gamma(1 - x) = pi / sin(pi x); x - round(x) is exact, so sin loses nothing
        w = xp.where(low, 1.0 - fin, fin)
        r = xp.where(low, fin - xp.round(fin), 0.5)
        # log(pi / |sin(pi r)|); for tiny |r| from its series, as pi r would lose the bits of a subnormal r
        tiny = xp.abs(r) < 1e-8
        refl = xp.where(tiny, (math.pi * r) ** 2 / 6 - xp.log(xp.abs(xp.where(tiny, r, 1.0))),
                        _LOG_PI - xp.log(xp.abs(xp.sin(math.pi * r))))
        res = _lgamma_from_half(w)
        res = xp.where(low, refl - res, res)
        res = xp.where(pole | xp.isinf(x), inf, res)
        return xp.where(xp.isnan(x), x, res)

    def _trigamma(x):
        """PyTorch's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series."""
        sign = xp.where(x < 0.5, -xp.ones_like(x), 1.0)
        s_ = xp.sin(math.pi * x)
        result = xp.where(x < 0.5, -(math.pi * math.pi) / (s_ * s_), 0.0)
        x = xp.where(x < 0.5, 1 - x, x)
        for _ in range(6):
            result = result + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        result = result + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
        return sign * result

    def polygamma(n: int, x):
        """The n-th derivative of digamma (the cpu kernel's: digamma, trigamma, then Hurwitz zeta)."""
        if n == 0:
            return digamma(x)
        w = xp.astype(x, xp.float64)
        if n == 1:
            r = _trigamma(w)
        else:
            r = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * _c.zeta_in(xp, xp.asarray(n + 1.0, dtype=xp.float64), w)
        return xp.astype(r, x.dtype if k.is_float(x) else xp.float32)

    # torch.special, part B: erfcx and ndtri (the cpu kernels' algorithms), zeta, igamma, the polynomials
    def _polevl(x, coef):
        r = xp.zeros_like(x)
        for c in coef:
            r = r * x + c
        return r

    @_in64
    def erfcx(x):
        a = xp.abs(x)
        v = xp.clip(a, _c._ERF_SMALL, 4.0)
        r = _ratio(v, _c._ERF_C[:8], _c._ERF_D, _c._ERF_C[8])
        z = 1.0 / (a * a)
        far = (_c._ONE_OVER_SQRT_PI - z * _ratio(z, _c._ERF_P[:5], _c._ERF_Q, _c._ERF_P[5])) / a
        r = xp.where(a > 4.0, far, r)
        small = _ratio(a * a, _c._ERF_A[:4], _c._ERF_B, _c._ERF_A[4]) * a
        r = xp.where(a <= _c._ERF_SMALL, xp.exp(a * a) * (1.0 - small), r)
        r = xp.where(x < 0, 2.0 * xp.exp(x * x) - r, r)
        r = xp.where(x < -26.7, math.inf, r)
        return xp.where(xp.isnan(x), x, r)

    @_in64
    def ndtri(y0):
        upper = y0 > 1.0 - _c._EXP_M2
        y = xp.where(upper, 1.0 - y0, y0)
        c = y - 0.5
        c2 = c * c
        central = (c + c * (c2 * _polevl(c2, _c._NDTRI_P0) / _polevl(c2, _c._NDTRI_Q0))) * _c._SQRT_2PI
        t = xp.sqrt(-2.0 * xp.log(xp.where(y > 0, y, 1.0)))
        z = 1.0 / t
        x1 = xp.where(t < 8.0, z * _polevl(z, _c._NDTRI_P1) / _polevl(z, _c._NDTRI_Q1),
                      z * _polevl(z, _c._NDTRI_P2) / _polevl(z, _c._NDTRI_Q2))
        tail = t - xp.log(t) / t - x1
        r = xp.where(y > _c._EXP_M2, central, xp.where(upper, tail, -tail))
        r = xp.where((y0 < 0) | (y0 > 1) | xp.isnan(y0), math.nan, r)
        r = xp.where(y0 == 0, -math.inf, r)
        return xp.where(y0 == 1, math.inf, r)

    def xlog1py(x, y):
        if not hasattr(x, "dtype"):
            x = xp.asarray(x, dtype=y.dtype)
        if not hasattr(y, "dtype"):
            y = xp.asarray(y, dtype=x.dtype)
        r = x * xp.log1p(y)
        return xp.where(xp.isnan(y), y, xp.where(x == 0, xp.zeros_like(r), r))

    def orthogonal_polynomial(kind: str, x, n):
        return _c.orthogonal_polynomial_in(xp, kind, x, n)   # written against the standard already

    def zeta(x, q):
        if not hasattr(x, "dtype"):
            x = xp.asarray(x, dtype=q.dtype)
        if not hasattr(q, "dtype"):
            q = xp.asarray(q, dtype=x.dtype)
        return xp.astype(_c.zeta_in(xp, x, q), xp.result_type(x, q))

    def _igamma(upper: bool):
        def kernel(a, x):
            r = _c.igamma_in(xp, a, x, upper, lgamma, erfc)
            return xp.astype(r, xp.result_type(a, x))
        return kernel

    _gamma_grad_ops = types.SimpleNamespace(   # the array functions standard_gamma_grad_formula needs
        where=xp.where, isnan=xp.isnan, log=xp.log, exp=xp.exp, pow=xp.pow, sqrt=xp.sqrt, digamma=digamma)

    def standard_gamma_grad(alpha, x):
        """PyTorch's _standard_gamma_grad (the cpu kernel's formula), in float64, rounded once."""
        out = _c.standard_gamma_grad_formula(_gamma_grad_ops, xp.astype(alpha, xp.float64), xp.astype(x, xp.float64))
        return xp.astype(out, alpha.dtype)

    class _dirichlet_ops:   # dirichlet_grad_formula's functions, all in double (the cpu rounds float32 steps)
        where, isnan, log, pow, sqrt, floor = (staticmethod(f) for f in (xp.where, xp.isnan, xp.log, xp.pow,
                                                                          xp.sqrt, xp.floor))
        logS, powS, tanS = staticmethod(xp.log), staticmethod(xp.pow), staticmethod(xp.tan)
        S = staticmethod(lambda v: v)

    def dirichlet_grad(x, alpha, total):
        """PyTorch's _dirichlet_grad (the cpu kernel's formula in double), rounded once."""
        x64, a64, t64 = (xp.astype(v, xp.float64) for v in xp.broadcast_arrays(x, alpha, total))
        return xp.astype(_c.dirichlet_grad_formula(_dirichlet_ops, x64, a64, t64), x.dtype)

    return {"standard_gamma_grad": standard_gamma_grad, "dirichlet_grad": dirichlet_grad,
            "erf": erf, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma, "digamma": digamma,
            "polygamma": polygamma, "erfcx": erfcx, "ndtri": ndtri, "xlog1py": xlog1py,
            "orthogonal_polynomial": orthogonal_polynomial, "zeta": zeta, "igamma": _igamma(False),
            "igammac": _igamma(True)}


# Stirling's series of lgamma: B_2k / (2k (2k - 1)), k = 1 .. 8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
