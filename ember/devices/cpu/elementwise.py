"""NumPy kernels of the 'elementwise' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Every name here is also in ``graph_ns`` (the public op registered with ``graph=True``), so derivative
rules may call it as ``xp.<name>`` in both namespaces. The special functions follow the algorithms of
PyTorch's CPU kernels (aten/src/ATen/native/Math.h) so that poles, signs of infinities and NaNs come out
as there; float16 and float32 inputs compute in float64 and round once.
"""
from __future__ import annotations

import math

import numpy as np

from . import libm as _libm
from .libm import fma64

__all__ = ["tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "expm1",
           "log2", "log10", "log1p", "reciprocal", "rsqrt", "erf", "erfc", "erfinv", "lgamma", "digamma",
           "polygamma", "sinc", "logit", "xlogy", "hypot", "logaddexp", "logaddexp2", "copysign", "fmod",
           "div_rounded", "floor", "ceil", "trunc", "frac", "round_decimals", "nan_to_num", "isfinite", "isinf",
           "fmax", "fmin", "lerp", "tanh_backward", "sigmoid_backward", "zero_where", "sgn", "deg2rad", "rad2deg", "heaviside", "bitwise_left_shift", "bitwise_right_shift",
           # not differentiable: the comparisons, logic and predicates the public functions reach through xp
           "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isposinf", "isneginf", "isreal", "signbit",
           "isclose", "exp", "sin", "cos", "tanh", "log", "sigmoid",
           # the arithmetic operators' kernels with a Python number (ember/ops/elementwise.py's _scalar_kernel)
           "weak_number", "half_number_op", "i0", "i1", "gcd", "lcm"]

_PI = math.pi


def _half_in_float(fn):
    """float16 computes in float32 and rounds once, as PyTorch's CPU kernels (opmath) do."""
    def k(*args, **kwargs):
        if any(getattr(a, "dtype", None) == np.float16 for a in args):
            args = tuple(a.astype(np.float32) if getattr(a, "dtype", None) == np.float16 else a for a in args)
            return fn(*args, **kwargs).astype(np.float16)
        return fn(*args, **kwargs)
    k.__name__ = fn.__name__
    k.__doc__ = fn.__doc__
    return k


def _quiet(fn):
    """A NumPy ufunc made silent about overflow, 0/0 and domain errors (PyTorch returns inf/nan silently)."""
    def k(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    k.__name__ = fn.__name__
    return k


_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# Tensors of this many elements and more keep NumPy's float32 kernels: their speed (the float64 path costs 3-40x
# on a long tensor: 0.2 ms instead of 0.025 ms for a 256 x 256 tanh) rather than PyTorch's last bit. PyTorch's
# grain size: beyond it its own loops split among threads.
_EXACT_MAX = 32768


def _rounded_once(uf, quiet=False):
    """The ufunc ``uf`` with float32 inputs (under _EXACT_MAX elements) computed in float64 and rounded once.

    PyTorch's float32 kernels for exp, log, sin, tanh, ... (MKL's VML, SLEEF, glibc) are within an ulp of the
    correctly rounded value and mostly equal to it; NumPy's own float32 kernels (its AVX-512 / AVX2 code) are an
    ulp off in 1-55% of inputs (bench/ulp_agreement.py). float64 then one rounding is correctly rounded but for
    rare double-rounding ties, and does not depend on NumPy's SIMD dispatch: a float64 kernel that differs in its
    last bit moves the float32 result only for a value within 2^-29 ulp of a tie. Costs about 0.6 us on a short
    tensor, and 3-40x NumPy's float32 time on a long one (sin and cos most: NumPy's float64 ones are scalar),
    hence _EXACT_MAX.
    float16 keeps NumPy's kernel: it computes in float32 and rounds once, as PyTorch's, and float32's last bit
    hardly ever moves a float16 result (differences from PyTorch under 0.01%), at 1/30 of the cost."""
    def k(x):
        if x.dtype is _F32 and x.size < _EXACT_MAX:
            # x.astype(_F64) rather than uf(x, dtype=_F64): the same values, 0.1 us less (the dtype= keyword
            # takes NumPy's slower type resolution)
            if quiet:
                with np.errstate(all="ignore"):
                    return uf(x.astype(_F64)).astype(_F32)
            return uf(x.astype(_F64)).astype(_F32)
        if quiet:
            with np.errstate(all="ignore"):
                return uf(x)
        return uf(x)
    k.__name__ = uf.__name__
    k.__doc__ = f"{uf.__name__}, correctly rounded for float32 (see _rounded_once)"
    return k


# ----- the C library's float functions: PyTorch's scalar path -----------------------------------------------
# PyTorch computes sinh, cosh, atanh and exp2 of float32 with a vectorized loop (SLEEF) over steps of 32 elements
# (two AVX-512 registers) and the C library's sinhf ... element by element for what is left: all of a tensor
# under 32 elements, and the last n % 32 of a longer one; asinh and acosh always element by element. glibc's
# float functions are not correctly rounded (sinhf, atanhf: up to 18% of inputs an ulp off), so ember calls the
# same C functions there (ctypes), and rounds float64 once elsewhere. Up to _EXACT_MAX elements (PyTorch's grain
# size, beyond which its loop is split among threads, each part with a tail of its own), at ~0.3 us an element.

_SCALAR_STEP = 32
_LIBM: dict = {}


def _libm_f32(name):
    """The C library's float function ``name`` (``sinhf``) as a Python callable, or None where there is none."""
    f = _LIBM.get(name, False)
    if f is False:
        import ctypes
        f = None
        for lib in ("libm.so.6", None):   # glibc; else the process's own symbols (macOS: libSystem)
            try:
                f = getattr(ctypes.CDLL(lib), name)
            except (OSError, AttributeError):
                continue
            f.restype = ctypes.c_float
            f.argtypes = (ctypes.c_float,)
            break
        _LIBM[name] = f
    return f


def _c_elementwise(f, x):
    """f (a C float function) applied to each element of the float32 array x."""
    return np.fromiter(map(f, x.ravel().tolist()), dtype=_F32, count=x.size).reshape(x.shape)


def _scalar_tail(uf, cname, vectorized=True):
    """``uf`` as PyTorch computes it: float32 through the C library's ``cname`` where PyTorch's loop takes its
    scalar path (the whole tensor when not ``vectorized``), correctly rounded elsewhere (_rounded_once)."""
    cr = _rounded_once(uf, quiet=True)

    def k(x):
        if x.dtype is not _F32 or x.size == 0 or x.size >= _EXACT_MAX:
            return cr(x)
        f = _libm_f32(cname)
        if f is None:
            return cr(x)
        if x.flags.f_contiguous and not x.flags.c_contiguous:
            return k(x.T).T   # a transposed tensor: PyTorch loops over it in memory order
        if not vectorized or x.ndim == 0 or not (x.flags.c_contiguous or x.strides[-1] == x.itemsize):
            return _c_elementwise(f, x)   # a strided inner dimension: PyTorch's loop is scalar throughout
        r = cr(x)
        if x.flags.c_contiguous:   # one loop over all elements: its tail is scalar
            t = x.size % _SCALAR_STEP
            if t:
                r.reshape(-1)[-t:] = _c_elementwise(f, x.reshape(-1)[-t:])
        else:   # one loop per row of the last dimension
            t = x.shape[-1] % _SCALAR_STEP
            if t:
                r[..., -t:] = _c_elementwise(f, x[..., -t:])
        return r
    k.__name__ = uf.__name__
    k.__doc__ = f"{uf.__name__}: PyTorch's C-library path for float32 (see _scalar_tail)"
    return k


def _c_or_rounded(uf, cname):
    """``uf`` for the float32 steps of a composite kernel (an activation) as PyTorch computes them: the C
    library's ``cname`` on arrays under _SCALAR_STEP elements (all of such a tensor takes PyTorch's scalar path),
    _rounded_once's elsewhere (the longer tensors' tails are not singled out)."""
    cr = _rounded_once(uf, quiet=True)

    def k(x):
        if x.dtype is _F32 and 0 < x.size < _SCALAR_STEP:
            f = _libm_f32(cname)
            if f is not None:
                return _c_elementwise(f, x)
        return cr(x)
    k.__name__ = uf.__name__
    return k


tan = _rounded_once(np.tan, quiet=True)
asin = _rounded_once(np.arcsin, quiet=True)
acos = _rounded_once(np.arccos, quiet=True)
atan = _rounded_once(np.arctan)
atan2 = _quiet(np.arctan2)
sinh = _scalar_tail(np.sinh, "sinhf")
cosh = _scalar_tail(np.cosh, "coshf")
asinh = _scalar_tail(np.arcsinh, "asinhf", vectorized=False)
acosh = _scalar_tail(np.arccosh, "acoshf", vectorized=False)
atanh = _scalar_tail(np.arctanh, "atanhf")
exp2 = _scalar_tail(np.exp2, "exp2f")
expm1 = _rounded_once(np.expm1, quiet=True)
log2 = _rounded_once(np.log2, quiet=True)
log10 = _rounded_once(np.log10, quiet=True)
log1p = _rounded_once(np.log1p, quiet=True)
hypot = _quiet(np.hypot)
copysign = np.copysign
isfinite = np.isfinite
isinf = np.isinf


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def zero_where(drop, g):
    """``g`` with +0.0 where ``drop`` holds: the gradient of clamp/relu/threshold. Bitwise (the mask widened to
    all-ones or zeros, ANDed with g's bits): exact, inf and NaN in g pass where kept, and about 10x faster than
    ``np.where`` on a data-dependent mask, whose branches the CPU mispredicts."""
    if (type(drop) is np.ndarray and type(g) is np.ndarray and drop.shape == g.shape and g.dtype.kind == "f"
            and g.dtype.itemsize in _UINT):
        u = _UINT[g.dtype.itemsize]
        m = drop.astype(u)
        np.subtract(m, 1, out=m)   # 0 where dropped, all ones where kept
        np.bitwise_and(m, g.view(u), out=m)
        return m.view(g.dtype)
    return np.where(drop, 0.0, g)


def tanh_backward(g, out):
    """g (1 - out^2), as PyTorch's kernel: in float32 its 1 - out*out compiles to one fused multiply-add (rounded
    once; float64 makes the product exact, and 1 - out^2 rounds at most once more, far from float32's ties);
    float16 computes in float32 and rounds once. From _EXACT_MAX elements on, plain float32 (speed)."""
    dt = out.dtype
    if (dt is _F32 or dt is _F16) and out.size < _EXACT_MAX:
        o = out.astype(_F64)
        t = (1.0 - o * o).astype(_F32)
        if dt is _F16:
            return (np.asarray(g).astype(_F32) * t).astype(_F16)
        return g * t
    return g * (1 - out * out)


def sigmoid_backward(g, out):
    """g (1 - out) out, in PyTorch's order (float16 too rounds after each step, as PyTorch's kernel)."""
    return g * (1 - out) * out


def reciprocal(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(x)


@_half_in_float
def rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 / np.sqrt(x)


def sgn(x):
    r = np.sign(x)
    if r.dtype.kind == "f":
        r = np.where(r != r, r.dtype.type(0), r)   # PyTorch: sgn(nan) is 0
    return r


def fmax(x, y):
    return np.fmax(x, y)


def fmin(x, y):
    return np.fmin(x, y)


# ----- rounding --------------------------------------------------------------------------------------

def _keep_int(fn):
    """floor/ceil/trunc of an integer tensor is the tensor itself (NumPy would make it float64)."""
    def k(x):
        if x.dtype.kind in "iub":
            return np.array(x, copy=True)
        return fn(x)
    k.__name__ = fn.__name__
    return k


floor = _keep_int(np.floor)
ceil = _keep_int(np.ceil)
trunc = _keep_int(np.trunc)


def frac(x):
    with np.errstate(invalid="ignore"):
        return x - np.trunc(x)


@_half_in_float
def round_decimals(x, decimals):
    """PyTorch's round(decimals=d): nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) * 10^-d)."""
    with np.errstate(all="ignore"):
        if decimals >= 0:
            p = x.dtype.type(10.0 ** decimals)
            return np.rint(x * p) / p
        p = x.dtype.type(10.0 ** -decimals)
        return np.rint(x / p) * p


def _int_zero_check(y):
    if np.asarray(y).dtype.kind in "iub" and np.any(np.equal(y, 0)):
        raise RuntimeError("ZeroDivisionError")


def div_rounded(x, y, mode):
    """x / y rounded toward zero ('trunc') or toward -inf ('floor'), as div(rounding_mode=...)."""
    ints = np.asarray(x).dtype.kind in "iub" and np.asarray(y).dtype.kind in "iub"
    if ints:
        _int_zero_check(y)
        q = np.floor_divide(x, y)
        if mode == "trunc":   # C division: floor, plus one where the quotient is negative and inexact
            q = np.where((q < 0) & (q * y != x), q + 1, q).astype(q.dtype, copy=False)
        return q
    with np.errstate(divide="ignore", invalid="ignore"):
        if mode == "trunc":
            return np.trunc(np.true_divide(x, y))
        return np.floor_divide(x, y)


def fmod(x, y):
    if np.asarray(x).dtype.kind in "iub":
        _int_zero_check(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(x, y)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind != "f":
        return np.array(x, copy=True)
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def deg2rad(x):
    return x * x.dtype.type(_PI / 180)


def rad2deg(x):
    return x * x.dtype.type(180 / _PI)


def heaviside(x, values):
    return np.where(x == 0, values, (x > 0).astype(np.result_type(x, values)))


@_half_in_float
def lerp(a, b, w):
    # PyTorch's two-sided formula: exact at w == 0 and at w == 1.
    with np.errstate(invalid="ignore", over="ignore"):
        d = b - a
        return np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w))


def _shift_count(x, y):
    bits = np.asarray(x).dtype.itemsize * 8
    y = np.asarray(y)
    return bits, (y < 0) | (y >= bits), np.where((y < 0) | (y >= bits), 0, y).astype(np.asarray(x).dtype)


def bitwise_left_shift(x, y):
    """x << y, 0 where the shift is negative or not less than the width (PyTorch's rule)."""
    _, out, s = _shift_count(x, y)
    r = np.left_shift(x, s)
    return np.where(out, 0, r).astype(r.dtype, copy=False)


def gcd(x, y):
    """The greatest common divisor of |x| and |y| (0 for 0 and 0); NumPy's loop is Euclid's, as PyTorch's."""
    return np.gcd(x, y)


def lcm(x, y):
    """PyTorch's lcm: |x / gcd(x, y) * y| in the dtype (wrapping as its C++ does), 0 where the gcd is 0."""
    g = np.gcd(x, y)
    with np.errstate(all="ignore"):
        q = x // np.where(g == 0, 1, g)   # exact: g divides x
        return np.where(g == 0, 0, np.abs(q * y)).astype(g.dtype, copy=False)


def bitwise_right_shift(x, y):
    """x >> y; a negative or too wide shift fills with the sign bit (PyTorch's rule)."""
    bits, out, s = _shift_count(x, y)
    r = np.right_shift(x, s)
    return np.where(out, np.right_shift(x, bits - 1), r).astype(r.dtype, copy=False)


# ----- log/exp combinations ------------------------------------------------------------------------

@_half_in_float
def logit(x, eps=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        if eps is not None and eps >= 0:
            x = np.clip(x, x.dtype.type(eps), x.dtype.type(1 - eps))
        return np.log(x / (1 - x))


@_half_in_float
def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is nan), as PyTorch."""
    dt = np.result_type(x, y)   # Python scalars are weak: xlogy(float32, 2.5) is float32
    x, y = np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.multiply(x, np.log(y))
        return np.where(np.isnan(y), y, np.where(np.equal(x, 0), dt.type(0), r))


@_half_in_float
def logaddexp(x, y):
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.maximum(x, y)
        r = m + np.log1p(np.exp(-np.abs(x - y)))
        return np.where(np.isinf(x) & (x == y), x, r)


@_half_in_float
def logaddexp2(x, y):
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.maximum(x, y)
        r = m + np.log1p(np.exp2(-np.abs(x - y))) / m.dtype.type(math.log(2))
        return np.where(np.isinf(x) & (x == y), x, r)


@_half_in_float
def sinc(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x * x.dtype.type(_PI)
        return np.where(x == 0, x.dtype.type(1), np.sin(y) / y)


# ----- special functions -----------------------------------------------------------------------------

def _in64(fn):
    """Run ``fn`` on float64 and round once to the input's float dtype."""
    def k(x, *rest):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            r = fn(x.astype(np.float64), *rest)
        return r.astype(x.dtype, copy=False)
    k.__name__ = fn.__name__
    return k


def _lgamma1(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):
        return math.inf   # the poles 0, -1, -2, ...


_erf_u = np.frompyfunc(math.erf, 1, 1)
_lgamma_u = np.frompyfunc(_lgamma1, 1, 1)


def _f64(u, x):
    return np.asarray(u(x), dtype=np.float64).reshape(np.shape(x))


# erf and erfc, vectorised: W. J. Cody's rational Chebyshev approximations ("Rational Chebyshev approximations
# for the error function", Math. Comp. 23 (1969) 631-638; the published double-precision coefficients of his
# CALERF), relative error near 1e-16 (tests/test_nn_kinks.py checks them against math.erf/math.erfc).
# |x| <= 0.46875: erf(x) = x P(x^2) / Q(x^2)
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
          1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
# 0.46875 < |x| <= 4: erfc(x) = exp(-x^2) P(x) / Q(x)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
          8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
          2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
          3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
# |x| > 4: erfc(x) = exp(-x^2) / x (1/sqrt(pi) - z P(z) / Q(z)), z = 1 / x^2
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
          6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
          2.33520497626869185e-3)
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1
_EXP_NEG_H2 = np.exp(-(np.arange(641) / 16.0) ** 2)   # exp(-h^2) for h = k / 16 <= 40 (h^2 exact)
_ERF_SMALL = 0.46875


def _ratio(v, num_coef, den_coef, lead):
    """num(v) / den(v) by Horner's rule, in place on two buffers: num = lead v^n + num_coef[0] v^(n-1) + ... and
    den = v^n + den_coef[0] v^(n-1) + ... (both with their last coefficient added at the end)."""
    num = v * lead
    den = v.copy()
    for cn, cd in zip(num_coef[:-1], den_coef[:-1]):
        num += cn
        num *= v
        den += cd
        den *= v
    num += num_coef[-1]
    den += den_coef[-1]
    num /= den
    return num


def _erf_small(x):
    """erf(x) for |x| <= 0.46875 (float64)."""
    r = _ratio(x * x, _ERF_A[:4], _ERF_B, _ERF_A[4])
    r *= x
    return r


def _erfc_large(y):
    """erfc(y) for y > 0.46875 (float64; other entries of y give values of no use): 0 beyond y = 27 or so,
    where it underflows. Whole-array arithmetic (cheap) rather than boolean indexing (not): only the few
    entries beyond 4 are picked out."""
    v = np.clip(y, _ERF_SMALL, 40.0)   # erfc(40) is 0 in float64; an infinite y would give inf - inf below
    r = _ratio(np.minimum(v, 4.0), _ERF_C[:8], _ERF_D, _ERF_C[8])
    far = np.flatnonzero(v > 4.0)
    if far.size:
        vf = v.ravel()[far]
        z = 1.0 / (vf * vf)
        rf = _ratio(z, _ERF_P[:5], _ERF_Q, _ERF_P[5])
        rf *= -z
        rf += _ONE_OVER_SQRT_PI
        rf /= vf
        r.ravel()[far] = rf
    # exp(-v^2) with v^2 split as h^2 + (v - h)(v + h), h = v to 4 bits: h^2 is exact, so the rounding of
    # v^2 (an error of v^2 ulps in the result, 1e-13 near v = 26) never happens; exp(-h^2) comes from a table
    k = np.fmax(v * 16.0, 0.0).astype(np.intp)   # fmax: nan gives 0 here (and nan through d below)
    h = k / 16.0
    d = v - h
    d *= v + h
    r *= _EXP_NEG_H2[k]
    r *= np.exp(np.negative(d, out=d), out=d)
    return r


def _erf64(x):
    r = _erf_small(x)
    small = np.abs(x) <= _ERF_SMALL
    if small.all():
        return r
    big = _erfc_large(np.abs(x))
    np.subtract(1.0, big, out=big)
    np.copysign(big, x, out=big)
    return np.where(small, r, big)   # nan is not small: erfc's nan


def _erfc64(x):
    small = np.abs(x) <= _ERF_SMALL
    r = _erf_small(x)
    np.subtract(1.0, r, out=r)
    if small.all():
        return r
    big = _erfc_large(np.abs(x))
    return np.where(small, r, np.where(x < 0, 2.0 - big, big))


_CHUNK = 16384


def _chunked(fn):
    """``fn`` run on slices of ``_CHUNK`` elements: its dozens of temporaries then stay in cache and reuse the
    allocator's memory (on a whole 1e6-element array, fresh pages cost more than the arithmetic)."""
    def k(x):
        if x.ndim == 0:   # in-place steps need arrays, not NumPy scalars
            return fn(x.reshape(1)).reshape(())
        if x.size <= _CHUNK:
            return fn(x)
        flat = np.ascontiguousarray(x).reshape(-1)
        out = np.empty_like(flat)
        for i in range(0, flat.size, _CHUNK):
            out[i:i + _CHUNK] = fn(flat[i:i + _CHUNK])
        return out.reshape(x.shape)
    k.__name__ = fn.__name__
    return k


def _fma32(a, b, c):
    """float32 a * b + c rounded once (a * b is exact in float64)."""
    return (a.astype(_F64) * b + c).astype(_F32)


# Abramowitz and Stegun 7.1.26, the coefficients of PyTorch's Vectorized<float>::erf
_AS_P = 0.3275911
_AS_A = tuple(float(np.float32(v)) for v in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _erf_half(x):
    """float16 erf as PyTorch computes it: its vectorized float32 polynomial (Abramowitz-Stegun 7.1.26, fused
    multiply-adds, absolute error 1.5e-7), rounded to float16: the correctly rounded value differs in 19% of
    float16 inputs (the tiny ones), this in none (every finite float16 checked)."""
    v = x.astype(_F32)
    a = np.abs(v)
    with np.errstate(all="ignore"):
        t = np.float32(1) / _fma32(a, float(np.float32(_AS_P)), 1.0)
        r = np.full_like(t, _AS_A[0])
        for c in _AS_A[1:]:
            r = _fma32(r, t, c)
        e = np.exp(-(v * v), dtype=_F64).astype(_F32)   # SLEEF's expf, as good as correctly rounded here
        res = _fma32(-e * t, r, 1.0)
    return np.copysign(res, v).astype(_F16)


_erf_in64 = _in64(_chunked(_erf64))


def erf(x):
    if x.dtype is _F16:
        return _erf_half(x)
    return _erf_in64(x)

erfc = _in64(_chunked(_erfc64))
lgamma = _in64(lambda x: _f64(_lgamma_u, x))

_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (3.543889200, 1.637067800)


@_in64
def erfinv(y):
    """PyTorch's calc_erfinv: a rational first guess, then two Newton steps on erf."""
    a, b, c, d = _ERFINV_A, _ERFINV_B, _ERFINV_C, _ERFINV_D
    ya = np.abs(y)
    z = y * y
    central = y * (((a[3] * z + a[2]) * z + a[1]) * z + a[0]) / \
        ((((b[3] * z + b[2]) * z + b[1]) * z + b[0]) * z + 1.0)
    z = np.sqrt(-np.log((1.0 - ya) / 2.0))
    tail = np.copysign(((c[3] * z + c[2]) * z + c[1]) * z + c[0], y) / ((d[1] * z + d[0]) * z + 1.0)
    x = np.where(ya <= 0.7, central, tail)
    k = 2.0 / math.sqrt(_PI)
    for _ in range(2):
        x = x - (_f64(_erf_u, x) - y) / (k * np.exp(-x * x))
    x = np.where(ya == 1, np.copysign(np.inf, y), x)
    return np.where(ya > 1, np.nan, x)


_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
              -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
              8.33333333333333333333E-2)


def _digamma_pos(x):
    """digamma for x > 0: recurrence up to 10, then the asymptotic series (PyTorch's calc_digamma)."""
    result = np.zeros_like(x)
    x = x.copy()
    while True:
        small = x < 10
        if not small.any():
            break
        result = np.where(small, result - 1 / np.where(small, x, 1), result)
        x = np.where(small, x + 1, x)
    z = 1.0 / (x * x)
    p = np.zeros_like(x)
    for c in _DIGAMMA_A:
        p = p * z + c
    y = np.where(x < 1.0e17, z * p, 0.0)
    return np.where(x == 10, result + _PSI_10, result + np.log(x) - 0.5 / x - y)


_DIGAMMA_A32 = tuple(np.float32(c) for c in _DIGAMMA_A)


def _digamma32(x):
    """PyTorch's calc_digamma(float): the same steps as _digamma_pos in float32 arithmetic (its float kernel
    does not compute in double; the correctly rounded value differs from it in 41% of inputs), the reflection
    term pi / tan(pi r) in double."""
    one = np.float32(1)
    with np.errstate(all="ignore"):
        neg = x < 0
        refl = np.where(neg, _PI / np.tan(_PI * np.modf(x.astype(_F64))[0]), 0.0).astype(_F32)
        v = np.where(neg, one - x, x)
        v = np.where(np.isnan(v) | (v == 0), one, v)
        res = np.zeros_like(v)
        while True:
            small = v < 10
            if not small.any():
                break
            res = np.where(small, res - one / np.where(small, v, one), res)
            v = np.where(small, v + one, v)
        z = one / (v * v)
        p = np.full_like(z, _DIGAMMA_A32[0])
        for c in _DIGAMMA_A32[1:]:
            p = p * z + c
        y = np.where(v < np.float32(1e17), z * p, np.float32(0))
        out = res + np.log(v, dtype=_F64).astype(_F32) - np.float32(0.5) / v - y
        out = np.where(v == 10, res + np.float32(_PSI_10), out)
        out = np.where(neg, out - refl, out)
        out = np.where(neg & (x == np.trunc(x)), np.float32(np.nan), out)
        out = np.where(x == 0, np.copysign(np.float32(np.inf), -x), out)
        return np.where(np.isnan(x), x, out).astype(_F32, copy=False)


def digamma(x):
    x = np.asarray(x)
    if x.dtype is _F32:
        return _digamma32(x)
    if x.dtype is _F16:
        return _digamma32(x.astype(_F32)).astype(_F16)
    return _digamma64(x)


@_in64
def _digamma64(x):
    neg = x < 0
    integer = x == np.trunc(x)
    r = np.where(neg, x - np.trunc(x), 0.0)
    xp = np.where(neg, 1 - x, np.where(x == 0, 1.0, x))
    res = _digamma_pos(np.where(np.isnan(xp), 1.0, xp))
    res = np.where(neg, res - _PI / np.tan(_PI * r), res)
    res = np.where(neg & integer, np.nan, res)
    res = np.where(x == 0, np.copysign(np.inf, -x), res)
    return np.where(np.isnan(x), x, res)


def _trigamma(x):
    """PyTorch's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series."""
    sign = np.where(x < 0.5, -1.0, 1.0)
    s = np.sin(_PI * x)
    result = np.where(x < 0.5, -(_PI * _PI) / (s * s), 0.0)
    x = np.where(x < 0.5, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
    return sign * result


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042E-16


def _zeta(s: float, q):
    """The Hurwitz zeta function zeta(s, q) for a scalar s > 1 (Cephes' algorithm, as PyTorch)."""
    out = np.full(q.shape, np.nan)
    done = np.zeros(q.shape, dtype=bool)
    pole = (q <= 0) & (q == np.floor(q))
    out[pole] = np.inf
    done |= pole | np.isnan(q)
    if s != math.floor(s):
        done |= q <= 0   # nan
    qq = np.where(done, 1.0, q)
    acc = qq ** -s
    a = qq.copy()
    b = np.zeros_like(qq)
    i = 0
    while True:
        active = ~done & ((i < 9) | (a <= 9.0))
        if not active.any():
            break
        i += 1
        a = np.where(active, a + 1, a)
        b = np.where(active, a ** -s, b)
        acc = np.where(active, acc + b, acc)
        conv = active & (-_MACHEP * acc < b) & (b < _MACHEP * acc)
        out = np.where(conv, acc, out)
        done = done | conv
    w = a
    acc = acc + b * w / (s - 1) - 0.5 * b
    a = np.ones_like(qq)
    k = 0.0
    for c in _ZETA_A:
        a = a * (s + k)
        b = b / w
        t = a * b / c
        acc = acc + t
        conv = ~done & (np.abs(t / acc) < _MACHEP)
        out = np.where(conv, acc, out)
        done = done | conv
        k += 1
        a = a * (s + k)
        b = b / w
        k += 1
    return np.where(done, out, acc)


def polygamma(n: int, x):
    """The n-th derivative of digamma (PyTorch's kernels: digamma, trigamma, then Hurwitz zeta)."""
    if n == 0:
        return digamma(x)
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        w = x.astype(np.float64)
        if n == 1:
            r = _trigamma(w)
        else:
            r = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * _zeta(n + 1.0, w)
    return r.astype(x.dtype, copy=False)


# ----- comparisons, logic and predicates (not differentiable) --------------------------------------------
# The public functions reach these through the device's namespace (xp), so another device brings its own.
# Like NumPy's ufuncs they may return a NumPy scalar for 0-d inputs; the callers make arrays of them.

eq = np.equal
ne = np.not_equal
lt = np.less
le = np.less_equal
gt = np.greater
ge = np.greater_equal
logical_and = np.logical_and
logical_or = np.logical_or
logical_xor = np.logical_xor
logical_not = np.logical_not
bitwise_and = np.bitwise_and
bitwise_or = np.bitwise_or
bitwise_xor = np.bitwise_xor
bitwise_not = np.invert


def isposinf(x):
    return np.isposinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=np.bool_)


def isneginf(x):
    return np.isneginf(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=np.bool_)


def isreal(x):
    return np.ones(x.shape, dtype=np.bool_)


def signbit(x):
    return np.signbit(x) if x.dtype.kind != "b" else np.zeros(x.shape, dtype=np.bool_)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b| (integral inputs compare in float64, as PyTorch's)."""
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iub":
            a, b = a.astype(np.float64), b.astype(np.float64)
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=bool(equal_nan))


exp = _rounded_once(np.exp)   # exp(100)'s overflow in the float32 cast: silent under fp_quiet
sin = _rounded_once(np.sin)
cos = _rounded_once(np.cos)
tanh = _rounded_once(np.tanh)
log = _rounded_once(np.log, quiet=True)


def sigmoid(x):
    # PyTorch's form: exact in the negative tail (exp(-x) keeps its relative precision) until
    # exp(-x) overflows to inf, where the result is 0 as in PyTorch. float16 computes in float32.
    if x.dtype == np.float16:
        return sigmoid(x.astype(np.float32)).astype(np.float16)
    # exp correctly rounded, then float32 arithmetic: PyTorch's 1 / (1 + std::exp(-x)) (glibc's expf)
    with np.errstate(over="ignore"):
        return 1 / (1 + exp(np.negative(x)))


# ----- an array OP a Python number ------------------------------------------------------------------------

# A Python float beside a float32/float64 array goes in as a cached 0-d array of the array's dtype: NumPy casts a
# Python float to the array's dtype either way (the same result bit for bit, NaN signs, subnormals and overflow
# included), but converting it costs a small op half its time (a * 1.01 on 64 elements: 0.85 -> 0.5 us).
# Signed zeros and NaN cannot key a dict, and a float32 conversion out of range would warn: those stay floats.
_WEAK = {_F32: {}, _F64: {}}
_F32_MAX = float(np.finfo(np.float32).max)


def weak_number(a, b: float):
    """The Python float ``b`` as the operand beside array ``a``: a cached 0-d array of ``a``'s dtype when that
    is float32/float64 (the same values, faster), else ``b`` itself."""
    cache = _WEAK.get(a.dtype)
    if cache is None:
        return b
    c = cache.get(b)
    if c is not None:
        return c
    if not b or b != b or (a.dtype is _F32 and not -_F32_MAX <= b <= _F32_MAX):
        return b
    if len(cache) >= 256:   # many distinct numbers (a schedule): start again
        cache.clear()
    c = cache[b] = np.array(b, a.dtype)
    return c


def half_number_op(op, a, s):
    """float16 array ``a`` OP a Python number ``s`` as PyTorch's CPU kernels: the number kept as given (a wrapped
    number) rounded to float32 (the opmath type), the op in float32, rounded once to float16. (NumPy would round
    the number to float16 first: 0.3 -> 0.30005, 1e-5 -> 1.0014e-05, 70000 -> inf.)"""
    return op(a.astype(_F32), float(np.float32(float(s)))).astype(_F16, copy=False)


# ----- the modified Bessel functions i0 and i1 (PyTorch's calc_i0 / calc_i1, from Cephes; Math.h) ---------------
# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] (A) and of exp(-x) sqrt(x) I0(x) on (8, inf) (B); likewise I1.
# float32 evaluates the same tables in float (i1 with PyTorch's shorter float tables).
_I0_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
         1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
         -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
         9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
         -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
         1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
         -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
         1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
         -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
         1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
         3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
         1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
         -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
         7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
         -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
         3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
         2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
         8.04490411014108831608E-1)
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)
_I1_A32, _I1_B32 = _I1_A[12:], _I1_B[18:]   # PyTorch's float tables: the last 17 and 7 coefficients


def _chbevl(x, coef):
    """Cephes' Chebyshev series in x's dtype. PyTorch's kernel is compiled with FMA contraction
    (``x * b1 - b2`` is one fused multiply-add): float32 takes it exactly in float64 (the product of two floats is
    exact there) and rounds once, float64 through libm's fma."""
    t = x.dtype.type
    b0, b1, b2 = np.full_like(x, t(coef[0])), np.zeros_like(x), np.zeros_like(x)
    for c in coef[1:]:
        b2, b1 = b1, b0
        if x.dtype is _F32:
            m = (x.astype(_F64) * b1 - b2).astype(_F32)
        else:
            m = fma64(x, b1, -b2)
        b0 = m + t(c)
    return t(0.5) * (b0 - b2)


def _libm_exp(x):
    """The C library's exp (expf for float32), which PyTorch's scalar calc_i0/calc_i1 call."""
    if x.dtype is _F32:
        f = _libm_f32("expf")
        return _c_elementwise(f, x) if f is not None else np.exp(x.astype(_F64)).astype(_F32)
    return _libm.exp(x).reshape(x.shape)


def _bessel(x, small, large, odd: bool):
    """calc_i0 (odd False) / calc_i1 (odd True) for a float32 or float64 array."""
    t = x.dtype.type
    a = np.abs(x)
    near = a <= t(8)
    xs = np.where(near, a, t(0))
    xl = np.where(near, t(16), a)   # a placeholder inside each branch's domain
    ex = _libm_exp(np.where(near, xs, xl))
    rs = (ex * xs if odd else ex) * _chbevl(xs / t(2) - t(2), small)
    rl = ex * _chbevl(t(32) / xl - t(2), large) / np.sqrt(xl)
    out = np.where(near, rs, rl)
    return np.where(x < 0, -out, out) if odd else out


def _bessel_kernel(name, tables32, tables64, odd):
    def k(x):
        x = np.asarray(x)
        dt = x.dtype
        work = x.astype(_F32) if dt == _F16 else x
        with np.errstate(all="ignore"):
            return _bessel(work, *(tables32 if work.dtype == _F32 else tables64), odd).astype(dt, copy=False)
    k.__name__ = name
    k.__doc__ = f"PyTorch's calc_{name} (Cephes, Chebyshev series; float16 computes in float32)."
    return k


i0 = _bessel_kernel("i0", (_I0_A, _I0_B), (_I0_A, _I0_B), False)
i1 = _bessel_kernel("i1", (_I1_A32, _I1_B32), (_I1_A, _I1_B), True)
