"""Elementwise kernels (the core's arithmetic and the 'elementwise' family) in array-API standard operations."""
from __future__ import annotations

import math

from . import optim as _optim


def kernels(k) -> dict:
    xp = k.xp

    def _ints(*arrays) -> bool:
        return all(not hasattr(a, "dtype") or k.kind(a) in "iub" for a in arrays) and \
            any(hasattr(a, "dtype") for a in arrays)

    def _int_zero_check(y):
        if hasattr(y, "dtype") and k.kind(y) in "iub" and bool(xp.any(y == 0)) or \
                (not hasattr(y, "dtype") and isinstance(y, int) and y == 0):
            raise RuntimeError("ZeroDivisionError")

    def _arr(v, like):
        return v if hasattr(v, "dtype") else k.scalar(v, like)

    def _promoted(fn):
        """``fn`` with its first two arguments cast to NumPy's result dtype (see ``Kit.promote``)."""
        def kernel(x, y, *rest, **kwargs):
            if hasattr(x, "dtype") or hasattr(y, "dtype"):
                x, y = k.promote(x, y)
            return fn(x, y, *rest, **kwargs)
        kernel.__name__ = fn.__name__
        return kernel

    def _u8(fn):
        """``fn`` with bool arrays computed as uint8 and the result bool again (NumPy orders bools; the standard
        has no order on them)."""
        def kernel(x, *rest):
            if x.dtype == xp.bool:
                rest = tuple(xp.astype(r, xp.uint8) if getattr(r, "dtype", None) == xp.bool else
                             int(r) if type(r) is bool else r for r in rest)
                r = fn(xp.astype(x, xp.uint8), *rest)
                return xp.astype(r, xp.bool) if r.dtype == xp.uint8 else r
            return fn(x, *rest)
        kernel.__name__ = fn.__name__
        return kernel

    def _flt(fn, empty):
        """A float predicate; for integers and bools it is the constant ``empty``."""
        def kernel(x):
            return fn(x) if k.is_float(x) else xp.full(tuple(x.shape), empty, dtype=xp.bool)
        return kernel

    abs = xp.abs  # noqa: A001

    @_u8
    @_promoted
    def maximum(x, y):
        return xp.maximum(x, _arr(y, x))

    @_u8
    @_promoted
    def minimum(x, y):
        return xp.minimum(x, _arr(y, x))

    @_u8
    @_promoted
    def fmax(x, y):
        y = _arr(y, x)
        return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.maximum(x, y))) if k.is_float(x) \
            else xp.maximum(x, y)

    @_u8
    @_promoted
    def fmin(x, y):
        y = _arr(y, x)
        return xp.where(xp.isnan(y), x, xp.where(xp.isnan(x), y, xp.minimum(x, y))) if k.is_float(x) \
            else xp.minimum(x, y)

    matmul = xp.matmul

    def zeros_like(x, dtype=None):
        return xp.zeros_like(x, dtype=None if dtype is None else k.lib(dtype))

    def ones_like(x, dtype=None):
        return xp.ones_like(x, dtype=None if dtype is None else k.lib(dtype))

    sqrt = xp.sqrt

    @_promoted
    def div(x, y):
        return x / y

    @_promoted
    def floor_divide(x, y):
        if _ints(x, y):
            _int_zero_check(y)
        return xp.floor_divide(_arr(x, y) if not hasattr(x, "dtype") else x, y)

    @_promoted
    def remainder(x, y):
        if _ints(x, y):
            _int_zero_check(y)
        x = _arr(x, y) if not hasattr(x, "dtype") else x
        return xp.remainder(x, y)

    @_promoted
    def fmod(x, y):
        """C's fmod (the sign of x) from the standard's remainder (the sign of y)."""
        if _ints(x, y):
            _int_zero_check(y)
        x = _arr(x, y) if not hasattr(x, "dtype") else x
        y = _arr(y, x)
        r = xp.remainder(x, y)
        fix = (r != 0) & ((r < 0) != (x < 0))
        return xp.where(fix, r - y, r)

    _POW = {0.5: xp.sqrt, -0.5: lambda x: 1 / xp.sqrt(x), 2: lambda x: x * x, 3: lambda x: x * x * x,
            -1: lambda x: 1 / x, -2: lambda x: 1 / (x * x)}

    def pow(x, y):  # noqa: A001
        if not hasattr(y, "dtype") and hasattr(x, "dtype") and k.is_float(x) and type(y) is not bool:
            special = _POW.get(y)
            if special is not None:
                return special(x)
        if hasattr(x, "dtype") and x.dtype == xp.bool:
            return xp.astype(pow(xp.astype(x, xp.int8), y if not hasattr(y, "dtype") else
                                 xp.astype(y, xp.int8)), xp.bool)
        x = _arr(x, y) if not hasattr(x, "dtype") else x
        y = _arr(y, x)
        if k.kind(y) in "iu" and k.kind(x) in "iu":
            # PyTorch's integer pow: a negative exponent gives 0, except for the bases 1 and -1
            r = xp.pow(x, xp.where(y < 0, xp.zeros_like(y), y))
            p1, m1 = k.scalar(1, r), k.scalar(-1, r)
            one = xp.where(y % 2 == 0, p1, xp.where(x == -1, m1, p1))
            return xp.where(y < 0, xp.where(xp.abs(x) == 1, one, k.scalar(0, r)), r)
        return xp.pow(x, y)

    def sign(x):
        if x.dtype == xp.bool:
            return xp.asarray(x, copy=True)
        r = xp.sign(x)
        return xp.where(xp.isnan(r), xp.zeros_like(r), r) if k.is_float(x) else r

    sgn = sign

    def relu(x):
        return xp.maximum(x, xp.zeros_like(x))

    def where(cond, a, b):
        if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
            a = xp.asarray(a)
        return xp.where(cond, a, b)

    @_u8
    def clamp(x, min=None, max=None):  # noqa: A002
        r = x
        if min is not None:
            r = xp.where(xp.isnan(_arr(min, x)), _arr(min, x), xp.maximum(r, _arr(min, x))) if k.is_float(x) \
                else xp.maximum(r, _arr(min, x))
        if max is not None:
            r = xp.where(xp.isnan(_arr(max, x)), _arr(max, x), xp.minimum(r, _arr(max, x))) if k.is_float(x) \
                else xp.minimum(r, _arr(max, x))
        return xp.broadcast_to(r, xp.broadcast_shapes(*(tuple(a.shape) for a in (x, min, max)
                                                           if hasattr(a, "shape")))) if r is x else r

    def round(x):  # noqa: A001
        return xp.round(x)

    isnan = _flt(xp.isnan, False)
    isfinite = _flt(xp.isfinite, True)
    isinf = _flt(xp.isinf, False)

    exp, sin, cos, tan, tanh, log = xp.exp, xp.sin, xp.cos, xp.tan, xp.tanh, xp.log
    asin, acos, atan, sinh, cosh = xp.asin, xp.acos, xp.atan, xp.sinh, xp.cosh
    asinh, acosh, atanh, expm1, log2, log10, log1p = xp.asinh, xp.acosh, xp.atanh, xp.expm1, xp.log2, xp.log10, \
        xp.log1p

    @_promoted
    def atan2(x, y):
        return xp.atan2(x, _arr(y, x))

    @_promoted
    def hypot(x, y):
        return xp.hypot(x, _arr(y, x))

    @_promoted
    def copysign(x, y):
        return xp.copysign(x, _arr(y, x))

    def exp2(x):
        return xp.pow(k.scalar(2, x), x)

    def sigmoid(x):
        return 1 / (1 + xp.exp(-x))

    def reciprocal(x):
        return 1 / x

    def rsqrt(x):
        return 1 / xp.sqrt(x)

    def zero_where(drop, g):
        return xp.where(drop, xp.zeros((), dtype=g.dtype), g)

    def tanh_backward(g, out):
        return g * (1 - out * out)

    def sigmoid_backward(g, out):
        return g * (1 - out) * out

    def _keep_int(fn):
        def kernel(x):
            return xp.asarray(x, copy=True) if k.kind(x) in "iub" else fn(x)
        return kernel

    floor, ceil, trunc = _keep_int(xp.floor), _keep_int(xp.ceil), _keep_int(xp.trunc)

    def frac(x):
        return x - xp.trunc(x)

    def round_decimals(x, decimals):
        if decimals >= 0:
            p = 10.0 ** decimals
            return xp.round(x * p) / p
        p = 10.0 ** -decimals
        return xp.round(x / p) * p

    @_promoted
    def div_rounded(x, y, mode):
        x = _arr(x, y) if not hasattr(x, "dtype") else x
        y = _arr(y, x)
        if _ints(x, y):
            _int_zero_check(y)
            q = xp.floor_divide(x, y)
            if mode == "trunc":   # C division: floor, plus one where the quotient is negative and inexact
                q = xp.where((q < 0) & (q * y != x), q + 1, q)
            return q
        if mode == "trunc":
            return xp.trunc(x / y)
        return xp.floor_divide(x, y)

    def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
        if k.kind(x) == "c":   # the real and imaginary parts each, as PyTorch's
            parts = (nan_to_num(xp.real(x), nan, posinf, neginf), nan_to_num(xp.imag(x), nan, posinf, neginf))
            re, im = (xp.astype(v, x.dtype) for v in parts)
            return re + im * xp.asarray(1j, dtype=x.dtype)   # both finite: no inf * 1j
        if not k.is_float(x):
            return xp.asarray(x, copy=True)
        fi = xp.finfo(x.dtype)
        r = xp.where(xp.isnan(x), k.scalar(nan, x), x)
        r = xp.where(xp.isinf(r) & (r > 0), k.scalar(fi.max if posinf is None else posinf, x), r)
        return xp.where(xp.isinf(r) & (r < 0), k.scalar(fi.min if neginf is None else neginf, x), r)

    def deg2rad(x):
        return x * (math.pi / 180)

    def rad2deg(x):
        return x * (180 / math.pi)

    @_u8
    @_promoted
    def heaviside(x, values):
        values = _arr(values, x)
        return xp.where(x == 0, values, xp.astype(x > 0, xp.result_type(x, values)))

    def lerp(a, b, w):
        w = _arr(w, a)
        d = b - a
        return xp.where(xp.abs(w) < 0.5, a + w * d, b - d * (1 - w))

    def _shift(x, y):
        bits = k.to_np[x.dtype].itemsize * 8
        y = _arr(y, x)
        out = (y < 0) | (y >= bits)
        return bits, out, xp.astype(xp.where(out, xp.zeros_like(y), y), x.dtype)

    @_promoted
    def bitwise_left_shift(x, y):
        _, out, s = _shift(x, y)
        r = xp.bitwise_left_shift(x, s)
        return xp.where(out, xp.zeros_like(r), r)

    @_promoted
    def gcd(x, y):
        """Euclid's algorithm on |x| and |y|, all elements at once, until every remainder is 0."""
        a, b = xp.broadcast_arrays(xp.abs(x), xp.abs(y))
        while bool(xp.any(b != 0)):
            nz = b != 0
            safe = xp.where(nz, b, xp.ones_like(b))
            a, b = xp.where(nz, b, a), xp.where(nz, a % safe, b)
        return a

    @_promoted
    def lcm(x, y):
        g = gcd(x, y)
        zero = g == 0
        return xp.where(zero, xp.zeros_like(g), xp.abs(x // xp.where(zero, xp.ones_like(g), g) * y))

    @_promoted
    def bitwise_right_shift(x, y):
        bits, out, s = _shift(x, y)
        r = xp.bitwise_right_shift(x, s)
        return xp.where(out, xp.bitwise_right_shift(x, k.scalar(bits - 1, x)), r)

    def logit(x, eps=None):
        if eps is not None and eps >= 0:
            x = xp.clip(x, eps, 1 - eps)
        return xp.log(x / (1 - x))

    @_promoted
    def xlogy(x, y):
        if not hasattr(x, "dtype"):
            x = _arr(x, y)
        y = _arr(y, x)
        r = x * xp.log(y)
        return xp.where(xp.isnan(y), y, xp.where(x == 0, xp.zeros_like(r), r))

    def _logaddexp_complex(x, y):
        # the cpu kernel's (PyTorch's _log_add_exp_helper): min and max by real part
        x, y = xp.broadcast_arrays(x, y)
        swap = xp.real(x) < xp.real(y)
        lo, hi = xp.where(swap, x, y), xp.where(swap, y, x)
        r = xp.log1p(xp.exp(lo - hi)) + hi
        both_inf = ~xp.isfinite(xp.real(lo)) & (xp.real(lo) == xp.real(hi))
        r = xp.where(both_inf, xp.where(xp.real(lo) < 0, lo, xp.log(xp.exp(lo) + xp.exp(hi))), r)
        nan = xp.asarray(complex(math.nan, math.nan), dtype=x.dtype, device=x.device)
        return xp.where(xp.isnan(x) | xp.isnan(y), nan, r)

    @_promoted
    def logaddexp(x, y):
        y = _arr(y, x)
        if k.kind(x) == "c":
            return _logaddexp_complex(x, y)
        return xp.where(xp.isinf(x) & (x == y), x, xp.maximum(x, y) + xp.log1p(xp.exp(-xp.abs(x - y))))

    @_promoted
    def logaddexp2(x, y):
        y = _arr(y, x)
        r = xp.maximum(x, y) + xp.log1p(xp.pow(k.scalar(2, x), -xp.abs(x - y))) / math.log(2)
        return xp.where(xp.isinf(x) & (x == y), x, r)

    def sinc(x):
        y = x * math.pi
        return xp.where(x == 0, xp.ones_like(x), xp.sin(y) / xp.where(x == 0, xp.ones_like(y), y))

    @_promoted
    def eq(x, y):
        return x == y

    @_promoted
    def ne(x, y):
        return x != y

    @_u8
    @_promoted
    def lt(x, y):
        return x < y

    @_u8
    @_promoted
    def le(x, y):
        return x <= y

    @_u8
    @_promoted
    def gt(x, y):
        return x > y

    @_u8
    @_promoted
    def ge(x, y):
        return x >= y

    def _truth(v):
        return v if getattr(v, "dtype", None) == xp.bool else (v != 0) if hasattr(v, "dtype") else bool(v)

    def _logical(fn):
        def kernel(x, y):
            return fn(_truth(x), _truth(y))
        return kernel

    logical_and, logical_or, logical_xor = (_logical(xp.logical_and), _logical(xp.logical_or),
                                            _logical(xp.logical_xor))

    def logical_not(x):
        return xp.logical_not(_truth(x))

    bitwise_and, bitwise_or, bitwise_xor = (_promoted(xp.bitwise_and), _promoted(xp.bitwise_or),
                                            _promoted(xp.bitwise_xor))
    bitwise_not = xp.bitwise_invert

    def isposinf(x):
        return xp.isinf(x) & (x > 0) if k.is_float(x) else xp.zeros(tuple(x.shape), dtype=xp.bool)

    def isneginf(x):
        return xp.isinf(x) & (x < 0) if k.is_float(x) else xp.zeros(tuple(x.shape), dtype=xp.bool)

    def isreal(x):
        if k.kind(x) == "c":   # PyTorch's imag == 0 (nan + 0j is real)
            return xp.imag(x) == 0
        return xp.ones(tuple(x.shape), dtype=xp.bool)

    def signbit(x):
        return xp.signbit(x) if k.is_float(x) else (x < 0) if k.kind(x) == "i" else \
            xp.zeros(tuple(x.shape), dtype=xp.bool)

    def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        if not k.is_float(a):   # integral inputs compare in float64, as PyTorch's
            a, b = xp.astype(a, xp.float64), xp.astype(b, xp.float64) if hasattr(b, "dtype") else b
        b = _arr(b, a)
        close = (a == b) | (xp.abs(a - b) <= atol + rtol * xp.abs(b))
        close = close & xp.isfinite(a) & xp.isfinite(b) | (a == b)
        return close | (xp.isnan(a) & xp.isnan(b)) if equal_nan else close

    def frexp(x):
        # exponent from log2, corrected by one either way (log2 may round across a power of two); the scaling by
        # 2**-e in two halves stays in range for the largest and the subnormal values, and is exact
        finite = xp.isfinite(x) & (x != 0)
        ax = xp.where(finite, xp.abs(x), xp.ones_like(x))
        e = xp.floor(xp.log2(ax)) + 1

        def scaled(v, e):
            h = xp.floor(e / 2)
            return v * xp.pow(k.scalar(2, v), -h) * xp.pow(k.scalar(2, v), h - e)
        m = scaled(ax, e)
        e = xp.where(m >= 1, e + 1, xp.where(m < 0.5, e - 1, e))
        mant = xp.where(finite, scaled(x, e), x)
        return mant, xp.astype(xp.where(finite, e, xp.zeros_like(e)), k.lib("int32"))

    @_promoted
    def nextafter(x, y):
        return xp.nextafter(x, _arr(y, x))

    def weak_number(a, b: float):
        return b   # a Python float beside an array: the standard's rules already keep the array's dtype

    def half_number_op(op, a, s):
        k.unsupported("half_number_op")   # float16 only

    def simd_positions(shape, *xs):
        return None   # bfloat16 only (PyTorch's vectorised CPU loops): the cpu device's

    def add_alpha(a, b, alpha):
        # ``a + alpha*b`` (add/sub's alpha=): float32 rounded once (the optimizers' exact fma, as the cpu kernel);
        # wider dtypes a product and a sum (the cpu kernel's float64 is the exact fused one: within an ulp)
        b = _arr(b, a)
        if a.dtype == xp.float32:
            return _optim.fma(alpha, b, a, xp=xp)
        return a + b * alpha

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp") and callable(f)}
