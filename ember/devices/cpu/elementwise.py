"""NumPy kernels of the 'elementwise' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Every name here is also in ``graph_ns`` (the public op registered with ``graph=True``), so derivative
rules may call it as ``xp.<name>`` in both namespaces. The special functions follow the algorithms of
PyTorch's CPU kernels (aten/src/ATen/native/Math.h) so that poles, signs of infinities and NaNs come out
as there; float16 and float32 inputs compute in float64 and round once.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from .reduced import BF16 as _BF16, REDUCED as _REDUCED, all_in_float32, finfo as _ml_finfo, simd_positions

__all__ = ["tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "exp2", "expm1",
           "log2", "log10", "log1p", "reciprocal", "rsqrt", "erf", "erfc", "erfinv", "lgamma", "digamma",
           "polygamma", "sinc", "logit", "xlogy", "hypot", "logaddexp", "logaddexp2", "copysign", "fmod",
           "div_rounded", "floor", "ceil", "trunc", "frac", "round_decimals", "nan_to_num", "isfinite", "isinf",
           "fmax", "fmin", "lerp", "tanh_backward", "sigmoid_backward", "zero_where", "sgn", "deg2rad", "rad2deg", "heaviside", "bitwise_left_shift", "bitwise_right_shift",
           "standard_gamma_grad", "dirichlet_grad",
           # not differentiable: the comparisons, logic and predicates the public functions reach through xp
           "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isposinf", "isneginf", "isreal", "signbit",
           "isclose", "exp", "sin", "cos", "tanh", "log", "sigmoid",
           # the arithmetic operators' kernels with a Python number (ember/ops/elementwise.py's _scalar_kernel)
           "weak_number", "half_number_op", "gcd", "lcm",
           # bfloat16: which elements PyTorch's elementwise loops compute with their vectorised lambda
           "simd_positions"]

_PI = math.pi


# float16 and bfloat16 compute in float32 and round once, as PyTorch's CPU kernels (opmath) do
_half_in_float = all_in_float32


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
_ONE_F64 = np.array(1.0)   # (read only: never written)
_ONE_F64.flags.writeable = False


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
    if not quiet:
        def inline(dtype, size):
            """For ember.compile's generated programs: this kernel on an array of ``dtype`` and ``size`` as an
            expression template (``{0}``: the argument; the other names: values to bind), where it is k's float32
            path (no function call, no checks); None elsewhere."""
            if dtype is _F32 and size is not None and size < _EXACT_MAX:   # (k's own test)
                return "{uf}({0}.astype({F64})).astype({F32})", {"uf": uf, "F64": _F64, "F32": _F32}
            return None
        k.inline = inline
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
    if (type(drop) is np.ndarray and type(g) is np.ndarray and drop.shape == g.shape and g.dtype.kind in "fV"
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
    float16 and bfloat16 compute in float32 and round once. From _EXACT_MAX elements on, plain float32 (speed)."""
    dt = out.dtype
    if (dt is _F32 or dt in _REDUCED) and out.size < _EXACT_MAX:
        o = out.astype(_F64)
        t = (_ONE_F64 - o * o).astype(_F32)   # (a 0-d float64 1.0: the same subtraction, ~0.2 us less than 1.0's)
        if dt is not _F32:
            return (np.asarray(g).astype(_F32) * t).astype(dt)
        return g * t
    return g * (1 - out * out)


def _tanh_backward_inline(dtype, size):
    """tanh_backward's float32 path as an expression template for ember.compile (see ``_rounded_once``'s inline;
    ``{0}``: g, ``{1}``: out; ``_o``: a temporary of the generated function)."""
    if dtype is _F32 and size is not None and size < _EXACT_MAX:   # (tanh_backward's own test)
        return ("{0} * ({ONE} - (_o := {1}.astype({F64})) * _o).astype({F32})",
                {"ONE": _ONE_F64, "F64": _F64, "F32": _F32})
    return None


tanh_backward.inline = _tanh_backward_inline


def sigmoid_backward(g, out):
    """g (1 - out) out, in PyTorch's order (float16 too rounds after each step, as PyTorch's kernel; its bfloat16
    kernel computes in float32 and rounds once)."""
    if out.dtype is _BF16:
        return (np.asarray(g).astype(_F32) * (1 - out.astype(_F32)) * out.astype(_F32)).astype(_BF16)
    return g * (1 - out) * out


def reciprocal(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(x)


@all_in_float32(dtypes=frozenset({np.dtype(np.float16)}))
def rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        if x.dtype is _BF16:   # PyTorch: Vectorized rsqrt in float, rounded once; the scalar tail 1 / std::sqrt(a) in
            x32 = x.astype(np.float32)   # c10::BFloat16, whose sqrt rounds to bfloat16 first
            tail = (1 / np.sqrt(x32).astype(_BF16).astype(np.float32)).astype(_BF16)
            vec = simd_positions(x.shape, x)
            return tail if vec is None else np.where(vec, (1 / np.sqrt(x32)).astype(_BF16), tail)
        return 1 / np.sqrt(x)


def sgn(x):
    r = np.sign(x)
    if r.dtype.kind in "fV":
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
    # complex: the real and imaginary parts each (NumPy's, as PyTorch's)
    if x.dtype.kind not in "fcV":
        return np.array(x, copy=True)
    if x.dtype is _BF16:   # (NumPy's nan_to_num leaves ml_dtypes' kind-'V' arrays alone): PyTorch's values in bfloat16
        big = float(_ml_finfo(x.dtype).max)
        nan, posinf, neginf = (np.asarray(v, dtype=_BF16) for v in (
            nan, big if posinf is None else posinf, -big if neginf is None else neginf))
        return np.where(np.isnan(x), nan, np.where(x == np.inf, posinf, np.where(x == -np.inf, neginf, x)))
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


# bfloat16: PyTorch multiplies by the constant as a wrapped number, in float32 (not rounded to bfloat16), once
@all_in_float32(dtypes=frozenset({_BF16}))
def deg2rad(x):
    return x * x.dtype.type(_PI / 180)


@all_in_float32(dtypes=frozenset({_BF16}))
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

@all_in_float32(dtypes=frozenset({np.dtype(np.float16)}))
def logit(x, eps=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        if x.dtype is _BF16:   # PyTorch's logit_kernel: c10::BFloat16 steps, each rounded (its vector lambda too)
            one = _BF16.type(1)
            if eps is not None and eps >= 0:
                lo = _BF16.type(eps)
                x = np.minimum(np.maximum(x, lo), one - lo)
            return np.log((x / (one - x)).astype(np.float32)).astype(_BF16)
        if eps is not None and eps >= 0:
            x = np.clip(x, x.dtype.type(eps), x.dtype.type(1 - eps))
        return np.log(x / (1 - x))


def _xlog_bf16(x, y, log):
    """PyTorch's bfloat16 xlogy/xlog1py (cpu_kernel, c10::BFloat16 arithmetic): std::log of a BFloat16 returns a
    BFloat16 (c10/util/BFloat16-math.h), so the log is rounded to bfloat16 before the product, which rounds too."""
    x, y = np.asarray(x, dtype=_BF16), np.asarray(y, dtype=_BF16)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x * log(y.astype(np.float32)).astype(_BF16)
    return np.where(np.isnan(y), y, np.where(x == 0, _BF16.type(0), r))


def _is_bf16(*xs) -> bool:
    return any(getattr(v, "dtype", None) is _BF16 for v in xs)


@all_in_float32(dtypes=frozenset({np.dtype(np.float16)}))
def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is nan), as PyTorch."""
    if _is_bf16(x, y):
        return _xlog_bf16(x, y, np.log)
    dt = np.result_type(x, y)   # Python scalars are weak: xlogy(float32, 2.5) is float32
    x, y = np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.multiply(x, np.log(y))
        return np.where(np.isnan(y), y, np.where(np.equal(x, 0), dt.type(0), r))


@_half_in_float
def _logaddexp_complex(x, y):
    """PyTorch's complex _log_add_exp_helper: max + log1p(exp(min - max)), min and max by real part; a nan part
    anywhere gives nan + nan j; equal infinite real parts: -inf gives the min, +inf log(exp(min) + exp(max))."""
    x, y = np.broadcast_arrays(x, y)
    swap = x.real < y.real
    lo, hi = np.where(swap, x, y), np.where(swap, y, x)
    with np.errstate(all="ignore"):
        r = np.log1p(np.exp(lo - hi)) + hi
        both_inf = ~np.isfinite(lo.real) & (lo.real == hi.real)
        if both_inf.any():
            r = np.where(both_inf, np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi))), r)
    nan = np.isnan(x) | np.isnan(y)
    return np.where(nan, x.dtype.type(complex(math.nan, math.nan)), r)


@all_in_float32(dtypes=frozenset({_BF16}))   # PyTorch's reduced-float kernel: in float32, rounded once
def logaddexp(x, y):
    if np.result_type(x, y).kind == "c":
        return _logaddexp_complex(x, y)
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
_ERF_SMALL_SQ = _ERF_SMALL * _ERF_SMALL   # 225/1024, exact


def _ratio_into(v, num_coef, den_coef, lead, num, den):
    """num(v) / den(v) by Horner's rule into the buffer ``num`` (``den`` is scratch; both of v's shape):
    num = lead v^n + num_coef[0] v^(n-1) + ... and den = v^n + den_coef[0] v^(n-1) + ... (both with their last
    coefficient added at the end). Every step is one in-place ufunc: no temporaries."""
    np.multiply(v, lead, out=num)
    np.add(v, den_coef[0], out=den)
    num += num_coef[0]
    num *= v
    den *= v
    for cn, cd in zip(num_coef[1:-1], den_coef[1:-1]):
        num += cn
        num *= v
        den += cd
        den *= v
    num += num_coef[-1]
    den += den_coef[-1]
    num /= den
    return num


def _ratio(v, num_coef, den_coef, lead):
    return _ratio_into(v, num_coef, den_coef, lead, np.empty_like(v), np.empty_like(v))


def _erf_small_into(x, v, num, den, squared: bool = False):
    """erf(x) for |x| <= 0.46875 (float64) into ``num``; ``v`` and ``den`` are scratch (``squared``: ``v`` already
    holds x * x)."""
    if not squared:
        np.multiply(x, x, out=v)
    _ratio_into(v, _ERF_A[:4], _ERF_B, _ERF_A[4], num, den)
    num *= x
    return num


def _erf_small(x):
    """erf(x) for |x| <= 0.46875 (float64)."""
    return _erf_small_into(x, np.empty_like(x), np.empty_like(x), np.empty_like(x))


def _erfc_large_into(y, t, num, den, k):
    """erfc(y) for y > 0.46875 or nan (float64) into ``num``: 0 beyond y = 27 or so, where it underflows. ``y``
    is clipped to 40 in place (erfc(40) is 0 in float64; an infinite y would give inf - inf below); ``t``,
    ``den`` and the intp buffer ``k`` are scratch. Only the few entries beyond 4 are picked out."""
    np.minimum(y, 40.0, out=y)
    np.minimum(y, 4.0, out=t)
    _ratio_into(t, _ERF_C[:8], _ERF_D, _ERF_C[8], num, den)
    far = np.flatnonzero(y > 4.0)
    if far.size:
        vf = y[far]
        z = 1.0 / (vf * vf)
        rf = _ratio(z, _ERF_P[:5], _ERF_Q, _ERF_P[5])
        rf *= -z
        rf += _ONE_OVER_SQRT_PI
        rf /= vf
        num[far] = rf
    # exp(-y^2) with y^2 split as h^2 + (y - h)(y + h), h = y to 4 bits: h^2 is exact, so the rounding of
    # y^2 (an error of y^2 ulps in the result, 1e-13 near y = 26) never happens; exp(-h^2) comes from a table
    np.multiply(y, 16.0, out=t)
    np.fmax(t, 0.0, out=t)   # fmax: nan gives 0 here (and nan through d below)
    np.copyto(k, t, casting="unsafe")
    np.divide(k, 16.0, out=t)   # h
    np.subtract(y, t, out=den)
    t += y
    den *= t   # d
    np.take(_EXP_NEG_H2, k, out=t)
    num *= t
    np.negative(den, out=den)
    num *= np.exp(den, out=den)
    return num


_CHUNK = 32768   # elements per pass: the float64 scratch stays in the CPU cache
_SCRATCH = threading.local()   # per thread: the scratch buffers of _erf_kernel, kept (fresh pages cost more
                               # than the arithmetic)


def _erf_scratch():
    """Six float64 buffers, an intp one and a bool one of ``_CHUNK`` elements, this thread's."""
    bufs = getattr(_SCRATCH, "erf", None)
    if bufs is None or bufs[0].size != _CHUNK:
        bufs = _SCRATCH.erf = tuple(np.empty(_CHUNK) for _ in range(7)) + (np.empty(_CHUNK, np.intp),
                                                                           np.empty(_CHUNK, bool))
    return bufs


def _erf_kernel(complement: bool):
    """erf (or erfc) of a float array in float64, rounded once to its dtype. Slices of ``_CHUNK`` elements
    through the thread's scratch buffers: the entries with |x| <= 0.46875 get Cody's erf ratio (on the whole slice
    in place when they are most of it, as a network's activations are; gathered otherwise); the others (his erfc
    ratios, nan included) are gathered from every slice and done together at the end, so a few of them cost one
    pass of the erfc code, not one a slice. Each entry's value depends on that entry alone."""
    def kernel(x):
        x = np.asarray(x)
        src = np.ascontiguousarray(x).reshape(-1)
        out = np.empty(src.size, x.dtype)
        if src.size == 0:
            return out.reshape(x.shape)
        x64, a, xs, v, num, den, _, k, small = _erf_scratch()
        n = _CHUNK
        far = []   # the positions of the entries outside the small range, slice by slice
        with np.errstate(all="ignore"):
            for i in range(0, src.size, n):
                xi = src[i:i + n]
                m = xi.size
                if xi.dtype == _F64:
                    xc = xi
                else:
                    xc = x64[:m]
                    np.copyto(xc, xi)
                # |x| <= 0.46875 exactly when x * x <= 0.46875^2 (= 225/1024; the rounding of x * x cannot cross it,
                # and nan is neither): the square serves the small ratio too
                vc = np.multiply(xc, xc, out=v[:m])
                sc = np.less_equal(vc, _ERF_SMALL_SQ, out=small[:m])
                s = np.count_nonzero(sc)
                if 2 * s >= m:   # the large entries' values are overwritten at the end
                    r = _erf_small_into(xc, vc, num[:m], den[:m], squared=True)
                    if complement:
                        np.subtract(1.0, r, out=r)
                    np.copyto(out[i:i + m], r, casting="unsafe")
                elif s:
                    si = np.flatnonzero(sc)
                    r = _erf_small_into(np.take(xc, si, out=xs[:s]), v[:s], num[:s], den[:s])
                    if complement:
                        np.subtract(1.0, r, out=r)
                    out[i:i + m][si] = r
                if s < m:
                    far.append(np.flatnonzero(np.logical_not(sc, out=sc)) + i)
            if far:
                idx = far[0] if len(far) == 1 else np.concatenate(far)
                for j in range(0, idx.size, n):
                    ij = idx[j:j + n]
                    b = ij.size
                    xb = x64[:b]
                    if src.dtype == _F64:
                        np.take(src, ij, out=xb)
                    else:
                        np.copyto(xb, src[ij])
                    r = _erfc_large_into(np.abs(xb, out=xs[:b]), v[:b], num[:b], den[:b], k[:b])
                    if complement:   # erfc(-y) = 2 - erfc(y)
                        neg = np.flatnonzero(xb < 0)
                        r[neg] = 2.0 - r[neg]
                    else:
                        np.subtract(1.0, r, out=r)
                        np.copysign(r, xb, out=r)
                    out[ij] = r
        return out.reshape(x.shape)
    return kernel


def _fma32(a, b, c):
    """float32 a * b + c rounded once (a * b is exact in float64)."""
    return (a.astype(_F64) * b + c).astype(_F32)


# Abramowitz and Stegun 7.1.26, the coefficients of PyTorch's Vectorized<float>::erf
_AS_P = 0.3275911
_AS_A = tuple(float(np.float32(v)) for v in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def _erf_half(x):
    """float16 (and bfloat16) erf as PyTorch computes it: its vectorized float32 polynomial (Abramowitz-Stegun
    7.1.26, fused multiply-adds, absolute error 1.5e-7), rounded: the correctly rounded value differs in 19% of
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
    return np.copysign(res, v).astype(x.dtype)


_erf_in64 = _erf_kernel(False)

# float32 erf, fast path: for |x| <= 1, erf(x) = x P(x^2) with P of degree 8 (least squares at Chebyshev nodes of
# x^2 in [0, 1], fitted with 40-digit erf; relative error 9.3e-13 = 2^-40.0), in float64: only products and sums
# (correctly rounded on every SIMD path: the result depends on the input alone). Rounded to float32 it is
# _erf_in64's value unless the float64 value lies within _ERF32_T float64 ulps (at least 2^-38 of it: 3.7 times the
# approximation's error plus the evaluation's, 2^-48) of a float32 rounding midpoint; those elements, those beyond
# 1 (nan and inf too) and the nonzero ones below 2^-125 (subnormal results: a coarser grid), are redone by
# _erf_in64. Checked against _erf_in64 on all 2^32 float32 inputs, bit for bit (tools/erf32_exhaustive.py;
# tests/test_nn_kinks.py a sample). Faster than Cody's ratio (no division; no gathering of the entries beyond 0.47,
# which took his erfc ratio and an exp): 10-15% on activations within |x| < 1, 40% on N(0, 0.5) ones.
_ERF32_C = tuple(float.fromhex(h) for h in (
    "0x1.20dd750428d0cp+0", "-0x1.812746adee0adp-2", "0x1.ce2f20aa9e775p-4", "-0x1.b82cbb52a7333p-6",
    "0x1.565891c44c514p-8", "-0x1.bfe1c8912f63dp-11", "0x1.f582bd29fc18ep-14", "-0x1.d2cc9a598f998p-17",
    "0x1.1c6a2e6156874p-20"))
_ERF32_R2 = 1.0
_ERF32_TINY = 2.0 ** -250   # x^2 below it: |x| < 2^-125
_ERF32_T = 1 << 15          # float64 ulps (2^-38 of the value, whose ulp is 2^-52 or 2^-53 of it)
# the low 29 bits of a float64 holding a float32 rounding midpoint are 2^28: (bits + _ERF32_K) & _ERF32_M is then
# _ERF32_T, and it is <= 2 _ERF32_T exactly when those bits are within _ERF32_T of 2^28
_ERF32_K = np.int64((1 << 28) + _ERF32_T)
_ERF32_M = np.int64((1 << 29) - 1)


def _erf32(x):
    """erf of a float32 array: ``_erf_in64``'s values (float64 Cody, rounded once), faster (see above)."""
    src = np.ascontiguousarray(x).reshape(-1)
    n = src.size
    if n < 8192:   # (below, the extra calls cost more than the polynomial saves)
        return _erf_in64(x)
    out = np.empty(n, _F32)
    scratch = _erf_scratch()
    t, s, p, flags = scratch[0], scratch[1], scratch[2], scratch[8]
    c = _ERF32_C
    lim = 2 * _ERF32_T
    redo = []
    with np.errstate(all="ignore"):
        for i in range(0, n, _CHUNK):
            xi = src[i:i + _CHUNK]
            m = xi.size
            tc = t[:m]
            np.copyto(tc, xi)
            sc = np.multiply(tc, tc, out=s[:m])
            far = None
            if not sc.max() <= _ERF32_R2:   # (nan too)
                beyond = np.less_equal(sc, _ERF32_R2, out=flags[:m])
                np.logical_not(beyond, out=beyond)
                # many beyond the polynomial's range: the old kernel for the slice
                if 8 * np.count_nonzero(beyond) > m:
                    out[i:i + m] = _erf_in64(xi)
                    continue
                far = np.flatnonzero(beyond)
            if sc.min() < _ERF32_TINY:   # results below float32's normal range: its rounding grid is coarser
                tiny = np.flatnonzero((sc < _ERF32_TINY) & (sc != 0.0))   # (0 stays 0, signed, here too)
                if tiny.size:
                    far = tiny if far is None else np.concatenate((far, tiny))
            pc = np.multiply(sc, c[-1], out=p[:m])
            pc += c[-2]
            for ck in c[-3::-1]:
                pc *= sc
                pc += ck
            pc *= tc
            np.copyto(out[i:i + m], pc, casting="unsafe")
            b = pc.view(np.int64)   # (pc is scratch from here)
            b += _ERF32_K
            b &= _ERF32_M
            if b.min() <= lim:
                redo.append(np.flatnonzero(b <= lim) + i)
            if far is not None:
                redo.append(far + i)
        if redo:
            idx = redo[0] if len(redo) == 1 else np.concatenate(redo)
            out[idx] = _erf_in64(src[idx])
    return out.reshape(np.shape(x))


def erf(x):
    if x.dtype in _REDUCED:
        return _erf_half(x)
    if x.dtype == _F32:
        return _erf32(x)
    return _erf_in64(x)


erfc = _erf_kernel(True)
erfc.__name__ = "erfc"
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
    if x.dtype in _REDUCED:
        return _digamma32(x.astype(_F32)).astype(x.dtype)
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


# ----- _standard_gamma_grad: PyTorch's standard_gamma_grad_one (aten/src/ATen/native/Distributions.h) ----------------
# -(d/dalpha cdf(x; alpha)) / pdf(x; alpha) for x ~ Gamma(alpha): a Taylor series for small x, Rice's saddle point
# expansion for large alpha, else a bivariate rational approximation; computed in double. Written once on a few
# array functions (``ops``: where, isnan, log, exp, pow, sqrt, digamma) for the cpu kernel and its array-API twin.

_GAMMA_GRAD_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
                  (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
                   -0.00058392623),
                  (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
                   0.00085092367, -1.5247877e-07))
_F08, _F09, _F11 = (float(np.float32(v)) for v in (0.8, 0.9, 1.1))   # the C++ float literals, widened


def standard_gamma_grad_formula(ops, alpha, x):
    """The float64 gradient of Gamma(alpha) samples x with respect to alpha (PyTorch's three regimes)."""
    where, log, exp, pow, sqrt = ops.where, ops.log, ops.exp, ops.pow, ops.sqrt
    numer, denom = alpha * 0 + 1, alpha
    s1, s2 = numer / denom, numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / float(i))
        denom = denom + 1
        s1 = s1 + numer / denom
        s2 = s2 + numer / (denom * denom)
    pxa = pow(x, alpha)
    pdf = pow(x, alpha - 1) * exp(-x)
    cdf_alpha = (log(x) - ops.digamma(alpha)) * (pxa * s1) - pxa * s2
    small = -cdf_alpha / pdf
    small = where(ops.isnan(small), 0.0, small)

    n1 = 1 + 24 * alpha * (1 + 12 * alpha)
    n2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    mid = n1 * n2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    den = sqrt(8 * alpha)
    term2 = den / (alpha - x)
    term3 = pow(x - alpha - alpha * log(x / alpha), -1.5)
    term23 = where(x < alpha, term2 - term3, term2 + term3)
    term1 = log(x / alpha) * term23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * (x * term1) / den

    u, v = log(x / alpha), log(alpha)
    c = [a + u * (b + u * cc) for a, b, cc in zip(*_GAMMA_GRAD_UV)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    rational = exp(p / q)
    saddle = where((_F09 * alpha <= x) & (x <= _F11 * alpha), mid, far)
    return where(x < _F08, small, where(alpha > 8.0, saddle, rational))


def _c_pow(x, y):
    """The C library's pow of each element (NumPy's float64 power may be a SIMD kernel off in the last bit)."""
    x, y = np.broadcast_arrays(np.asarray(x, _F64), np.asarray(y, _F64))
    out = np.empty(x.shape)
    flat = out.reshape(-1)
    for i, (a, b) in enumerate(zip(x.reshape(-1).tolist(), y.reshape(-1).tolist())):
        try:
            flat[i] = math.pow(a, b)
        except (OverflowError, ValueError):   # C gives inf / nan there
            flat[i] = np.power(a, b)
    return out


class _GammaGradOps:
    where, isnan, sqrt, pow = staticmethod(np.where), staticmethod(np.isnan), staticmethod(np.sqrt), \
        staticmethod(_c_pow)

    @staticmethod
    def log(x):
        return _libm().log(x)

    @staticmethod
    def exp(x):
        return _libm().exp(x)

    @staticmethod
    def digamma(x):
        return _digamma64(x)


def _libm():
    from . import libm   # the C library's log and exp, as PyTorch's scalar kernel calls them
    return libm


def standard_gamma_grad(alpha, x):
    """PyTorch's _standard_gamma_grad(alpha, x) (float32/float64), computed in float64 and rounded once."""
    a, v = np.broadcast_arrays(np.asarray(alpha, _F64), np.asarray(x, _F64))
    with np.errstate(all="ignore"):   # flat: the libm kernels work on 1-d arrays
        out = standard_gamma_grad_formula(_GammaGradOps, a.reshape(-1), v.reshape(-1))
    return out.reshape(a.shape).astype(np.asarray(alpha).dtype)


# ----- _dirichlet_grad: PyTorch's dirichlet_grad_one (aten/src/ATen/native/Distributions.h) --------------------------
# The reparameterised gradient of a Beta(alpha, total - alpha) sample x with respect to alpha (scaled by 1 / (1 - x)),
# from which Dirichlet's follows. Taylor series near 0 and 1, Rice's saddle point for large alpha and beta, else a
# rational correction. Parts of it compute in the element type (float32 operations and logf/powf/tanf for float32
# tensors), the rest in double, as the C++ does: ``ops.S`` rounds to the element type, ``ops.logS``/``powS``/``tanS``
# are the element type's C functions, ``ops.log``/``pow``/``sqrt`` double ones.

_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))))
_F1E17 = float(np.float32(1.0e17))


def _digamma_one(ops, x):
    """PyTorch's digamma_one<scalar_t, double> of x (element-type values): its own recurrence and series."""
    S, where = ops.S, ops.where
    zero, neg = x == 0, x < 0
    integer = x == ops.floor(x)
    pi_s = S(math.pi)
    add = where(neg, S(-pi_s / ops.tanS(S(pi_s * where(neg, x, 0.5)))), 0.0)
    x = where(neg, S(1 - x), where(zero, 1.0, x))
    result = x * 0
    for _ in range(11):   # x > 0 reaches 10 within 10 steps
        small = x < 10
        result = where(small, result - S(1 / x), result)
        x = where(small, S(x + 1), x)
    z = 1.0 / S(x * x)
    poly = x * 0
    for c in _DIGAMMA_A:
        poly = poly * z + c
    y = where(x < _F1E17, z * poly, 0.0)
    out = result + ops.logS(x) - S(0.5 / x) - y + add
    out = where(x == 10, result + _PSI_10 + add, out)
    return S(where(zero | (neg & integer), math.inf, out))


def _beta_grad_alpha_small(ops, x, alpha, beta):
    S = ops.S
    factor = S(S(_digamma_one(ops, alpha) - _digamma_one(ops, S(alpha + beta))) - ops.logS(x))
    numer = x * 0 + 1
    series = S(S(numer / alpha) * S(factor + S(1 / alpha)))
    for i in range(1, 11):
        numer = S(numer * S(S(S(i - beta) * x) / i))
        denom = S(alpha + i)
        series = S(series + S(S(numer / denom) * S(factor + S(1 / denom))))
    result = S(S(x * ops.powS(S(1 - x), -beta)) * series)
    return ops.where(ops.isnan(result), 0.0, result)


def _beta_grad_beta_small(ops, x, alpha, beta):
    S = ops.S
    factor = S(_digamma_one(ops, S(alpha + beta)) - _digamma_one(ops, beta))
    numer, betas, dbetas = x * 0 + 1, x * 0 + 1, x * 0
    series = S(factor / alpha)
    for i in range(1, 9):
        numer = S(numer * S(-x / i))
        dbetas = S(S(dbetas * S(beta - i)) + betas)
        betas = S(betas * S(beta - i))
        series = S(series + S(S(numer / S(alpha + i)) * S(dbetas + S(factor * betas))))
    result = S(-ops.powS(S(1 - x), S(1 - beta)) * series)
    return ops.where(ops.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(ops, x, alpha, beta):
    """In double: Rice's saddle point expansion, a polynomial next to the mean."""
    log, sqrt, pow = ops.log, ops.sqrt, ops.pow
    total = alpha + beta
    mean = alpha / total
    std = sqrt(alpha * beta / (total + 1)) / total
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (sqrt(2 * alpha / beta) * pow(total, 1.5) * axbx * axbx)
    term2 = 0.5 * log(alpha / (total * x))
    term3 = sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = pow(beta * log(beta / (total * (1 - x))) + alpha * log(alpha / (total * x)), -1.5)
    far = stirling * prefactor * (term1 + term2 * (term3 + ops.where(x < mean, term4, -term4)))
    return ops.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def dirichlet_grad_formula(ops, x, alpha, total):
    """PyTorch's dirichlet_grad_one on arrays of element-type values (float64 arrays; ``ops.S`` the rounding)."""
    S, where = ops.S, ops.where
    beta = S(total - alpha)
    beta_ = total - alpha
    boundary = S(S(total * x) * S(1 - x))
    u = ops.log(x)
    a = ops.log(alpha) - u
    b = ops.log(total) - a
    pow_u, pow_a = (1.0, u, u * u), (1.0, a, a * a)
    p = q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            c0, c1 = _DIRICHLET_C[0][i][j], _DIRICHLET_C[1][i][j]
            p = p + ua * (c0[0] + b * (c0[1] + b * (c0[2] + b * c0[3])))
            q = q + ua * (c1[0] + b * (c1[1] + b * (c1[2] + b * c1[3])))
    approx = x * S(_digamma_one(ops, total) - _digamma_one(ops, alpha)) / beta_
    rational = S(p / q * approx)
    mid = S(_beta_grad_alpha_mid(ops, x, alpha, beta_))
    near1 = -_beta_grad_beta_small(ops, S(1 - x), beta, alpha)
    near0 = _beta_grad_alpha_small(ops, x, alpha, beta)
    return where((x <= 0.5) & (boundary < 2.5), near0,
                 where((x >= 0.5) & (boundary < 0.75), near1, where((alpha > 6) & (beta > 6), mid, rational)))


class _Ops64:
    """The cpu's functions for float64 elements: the C library's log, tan and pow."""
    where, isnan, sqrt, floor = staticmethod(np.where), staticmethod(np.isnan), staticmethod(np.sqrt), \
        staticmethod(np.floor)

    @staticmethod
    def S(v):
        return v

    @staticmethod
    def log(v):
        return _libm().log(v)

    logS = log

    @staticmethod
    def tanS(v):
        return _libm().tan(v)

    pow = powS = staticmethod(lambda a, b: _c_pow(a, b))


class _Ops32(_Ops64):
    """float32 elements: float32 operations (rounding the double result once is exact for + - * /), logf, powf,
    tanf."""

    @staticmethod
    def S(v):
        return np.asarray(v, _F64).astype(_F32).astype(_F64)

    @staticmethod
    def logS(v):
        return _libm().float_map("logf", v)

    @staticmethod
    def tanS(v):
        return _libm().float_map("tanf", v)

    @staticmethod
    def powS(a, b):
        return _libm().float_map("powf", a, b)


def dirichlet_grad(x, alpha, total):
    """PyTorch's _dirichlet_grad(x, alpha, total) (float32/float64, broadcast), its element-type arithmetic."""
    dt = np.asarray(x).dtype
    x, alpha, total = np.broadcast_arrays(*(np.asarray(v, _F64) for v in (x, alpha, total)))
    with np.errstate(all="ignore"):
        out = dirichlet_grad_formula(_Ops32 if dt == _F32 else _Ops64, x.reshape(-1), alpha.reshape(-1),
                                     total.reshape(-1))
    return np.asarray(out).reshape(x.shape).astype(dt)


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


def polygamma(n: int, x):
    """The n-th derivative of digamma (PyTorch's kernels: digamma, trigamma, then Hurwitz zeta)."""
    if n == 0:
        return digamma(x)
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        w = x.astype(np.float64)
        if n == 1:
            r = _trigamma(w)
        elif x.dtype is _BF16:   # calc_polygamma<c10::BFloat16> (measured): zeta (in float, its accumulation type)
            # rounded to bfloat16, times +-n! (exp(lgamma(n + 1))) in float32, rounded
            fact = np.float32(math.exp(math.lgamma(n + 1.0)))
            z = zeta_in(np, np.float64(n + 1.0), w).astype(np.float32).astype(_BF16).astype(np.float32)
            return (z * (fact if n % 2 else -fact)).astype(_BF16)
        else:
            r = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * zeta_in(np, np.float64(n + 1.0), w)
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
    return np.isposinf(x) if x.dtype.kind in "fV" else np.zeros(x.shape, dtype=np.bool_)


def isneginf(x):
    return np.isneginf(x) if x.dtype.kind in "fV" else np.zeros(x.shape, dtype=np.bool_)


def isreal(x):
    if x.dtype.kind == "c":   # PyTorch's imag == 0 (nan + 0j is real)
        return x.imag == 0
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
    # exp(-x) overflows to inf, where the result is 0 as in PyTorch. float16 and bfloat16 compute in float32.
    if x.dtype in _REDUCED:
        return sigmoid(x.astype(_F32)).astype(x.dtype)
    # exp correctly rounded, then float32 arithmetic: PyTorch's 1 / (1 + std::exp(-x)) (glibc's expf)
    with np.errstate(over="ignore"):
        return 1 / (1 + exp(np.negative(x)))


# ----- an array OP a Python number ------------------------------------------------------------------------

# A Python float beside a float32/float64 array goes in as a cached 0-d array of the array's dtype: NumPy casts a
# Python float to the array's dtype either way (the same result bit for bit, NaN signs, subnormals and overflow
# included), but converting it costs a small op half its time (a * 1.01 on 64 elements: 0.85 -> 0.5 us).
# Signed zeros and NaN cannot key a dict, and a float32 conversion out of range would warn: those stay floats.
# bfloat16 too: NumPy would promote a bfloat16 array beside a Python float to float32, so the number always goes in
# as a 0-d bfloat16 array (rounded first, as PyTorch's add and sub round it).
_WEAK = {_F32: {}, _F64: {}}
if _BF16 is not None:
    _WEAK[_BF16] = {}
_WEAK_F32 = _WEAK[_F32]
_F32_MAX = float(np.finfo(np.float32).max)


def weak_number(a, b: float):
    """The Python float ``b`` as the operand beside array ``a``: a cached 0-d array of ``a``'s dtype when that
    is float32/float64 (the same values, faster), else ``b`` itself."""
    dt = a.dtype
    cache = _WEAK_F32 if dt is _F32 else _WEAK.get(dt)   # (float32 by identity: hashing a dtype costs more)
    if cache is None:
        return b
    c = cache.get(b)
    if c is not None:
        return c
    if not b or b != b or (a.dtype is _F32 and not -_F32_MAX <= b <= _F32_MAX):
        return b if a.dtype is not _BF16 else np.array(b, _BF16)
    if len(cache) >= 256:   # many distinct numbers (a schedule): start again
        cache.clear()
    c = cache[b] = np.array(b, a.dtype)
    return c


def half_number_op(op, a, s):
    """float16 (or bfloat16) array ``a`` OP a Python number ``s`` as PyTorch's CPU kernels: the number kept as given
    (a wrapped number) rounded to float32 (the opmath type), the op in float32, rounded once to ``a``'s dtype.
    (NumPy would round the number to float16 first: 0.3 -> 0.30005, 1e-5 -> 1.0014e-05, 70000 -> inf.)"""
    return op(a.astype(_F32), float(np.float32(float(s)))).astype(a.dtype, copy=False)


# ----- torch.special, part B: erfcx and ndtri (the other new special functions are compositions in the op rules) --

__all__ += ["erfcx", "ndtri", "xlog1py", "orthogonal_polynomial", "zeta"]


@_in64
def erfcx(x):
    """exp(x^2) erfc(x): Cody's erfc without its exp(-x^2) factor for x > 0.46875 (his CALERF's scaled mode),
    exp(x^2) erfc(x) below, 2 exp(x^2) - erfcx(-x) for x < 0 (inf below -26.7, as PyTorch's calc_erfcx)."""
    a = np.abs(x)
    v = np.clip(a, _ERF_SMALL, 4.0)
    r = _ratio(v, _ERF_C[:8], _ERF_D, _ERF_C[8])
    z = 1.0 / (a * a)
    far = _ratio(z, _ERF_P[:5], _ERF_Q, _ERF_P[5])
    far = (_ONE_OVER_SQRT_PI - z * far) / a
    r = np.where(a > 4.0, far, r)
    small = a <= _ERF_SMALL
    r = np.where(small, np.exp(a * a) * (1.0 - _erf_small(a)), r)
    r = np.where(x < 0, 2.0 * np.exp(x * x) - r, r)
    r = np.where(x < -26.7, np.inf, r)
    return np.where(np.isnan(x), x, r)


# Cephes' ndtri (PyTorch's calc_ndtri): three rational approximations, highest coefficient first.
_NDTRI_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0)
_NDTRI_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_NDTRI_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXP_M2 = 0.13533528323661269189
_SQRT_2PI = 2.50662827463100050242E0


def _polevl(x, coef):
    r = 0.0
    for c in coef:
        r = r * x + c
    return r


@_in64
def ndtri(y0):
    """The inverse of the standard normal CDF (PyTorch's calc_ndtri)."""
    upper = y0 > 1.0 - _EXP_M2
    y = np.where(upper, 1.0 - y0, y0)
    c = y - 0.5
    c2 = c * c
    central = (c + c * (c2 * _polevl(c2, _NDTRI_P0) / _polevl(c2, _NDTRI_Q0))) * _SQRT_2PI
    t = np.sqrt(-2.0 * np.log(np.where(y > 0, y, 1.0)))
    z = 1.0 / t
    x1 = np.where(t < 8.0, z * _polevl(z, _NDTRI_P1) / _polevl(z, _NDTRI_Q1),
                  z * _polevl(z, _NDTRI_P2) / _polevl(z, _NDTRI_Q2))
    tail = t - np.log(t) / t - x1
    r = np.where(y > _EXP_M2, central, np.where(upper, tail, -tail))
    r = np.where((y0 < 0) | (y0 > 1) | np.isnan(y0), np.nan, r)
    r = np.where(y0 == 0, -np.inf, r)
    return np.where(y0 == 1, np.inf, r)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (unless y is nan), as PyTorch's special_xlog1py (float16 rounds each step)."""
    if _is_bf16(x, y):
        return _xlog_bf16(x, y, np.log1p)
    dt = np.result_type(x, y)   # Python scalars are weak, as in xlogy
    x, y = np.asarray(x, dtype=dt), np.asarray(y, dtype=dt)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.multiply(x, np.log1p(y))
        return np.where(np.isnan(y), y, np.where(np.equal(x, 0), dt.type(0), r))


# The orthogonal polynomials of torch.special (PyTorch's *_polynomial_*_forward in Math.h, elementwise in the
# input's dtype): written once against the array-API standard, run with NumPy here and with the device's library
# by ember/devices/common/special.py.
# Chebyshev kinds: n above which |y| < 1 takes the closed form (y = x, or 2x - 1 for the shifted ones).
_CHEBYSHEV_CLOSED = {"chebyshev_polynomial_t": 6, "chebyshev_polynomial_u": 8, "chebyshev_polynomial_v": 8,
                     "chebyshev_polynomial_w": 8, "shifted_chebyshev_polynomial_t": 6,
                     "shifted_chebyshev_polynomial_u": 6, "shifted_chebyshev_polynomial_v": 6,
                     "shifted_chebyshev_polynomial_w": 4}
ORTHOGONAL_POLYNOMIALS = tuple(_CHEBYSHEV_CLOSED) + ("hermite_polynomial_h", "hermite_polynomial_he",
                                                     "laguerre_polynomial_l", "legendre_polynomial_p")


def orthogonal_polynomial_in(xp, kind: str, x, n):
    """The polynomial ``kind`` of degree ``n`` at ``x`` (float arrays of one dtype), in the namespace ``xp``:
    PyTorch's special cases first, then its three-term recurrence (stopped at the first nan, as there)."""
    x, n = xp.broadcast_arrays(x, n)
    dt = x.dtype

    def T(v):
        return xp.astype(v, dt)

    def fms(a, b, c):
        """a * b - c with one rounding in float32 (PyTorch's float kernels are compiled with fused multiply-adds)."""
        if dt != xp.float32:
            return a * b - c
        f = xp.float64
        return T(xp.astype(a, f) * xp.astype(b, f) - xp.astype(c, f))

    def rounded(fn):   # correctly rounded, as the libm's float functions are (NumPy's float32 loops are not)
        return lambda v: T(fn(xp.astype(v, xp.float64)))
    acos, cos, sin = rounded(xp.acos), rounded(xp.cos), rounded(xp.sin)
    n = xp.astype(n, xp.float64)
    n = xp.where(xp.abs(n) < 2.0 ** 63, xp.trunc(n), -1.0)   # nan, inf, beyond int64: PyTorch's cast gives < 0
    even = (n % 2) == 0
    out = xp.zeros_like(x)
    done = n < 0
    one = xp.ones_like(x)

    def put(cond, val):
        nonlocal out, done
        new = cond & ~done
        out = xp.where(new, val, out)
        done = done | new

    if kind in _CHEBYSHEV_CLOSED:
        base, shifted = kind[-1], kind.startswith("shifted")
        y = x + x - 1.0 if shifted else x
        n1, n21 = T(n + 1), T(n + n + 1)
        sign1 = xp.where(even, one, -one)
        put(x == 1.0, {"t": one, "u": n1, "v": one, "w": n21}[base])
        put(x == 0.0 if shifted else x == -1.0,
            {"t": sign1, "u": xp.where(even, n1, -n1), "v": xp.where(even, n21, -n21), "w": sign1}[base])
        closed = (n > _CHEBYSHEV_CLOSED[kind]) & (xp.abs(y) < 1.0)
        th = acos(xp.where(closed, y, 0.0))
        if base == "t":
            val = cos(T(n) * th)
        elif base == "u":
            st = sin(th)
            val = xp.where(st != 0.0, sin(n1 * th) / st, n1 * cos(n1 * th) / y)
        elif base == "v":
            val = xp.where(sin(th / 2.0) != 1.0, cos((T(n) + 0.5) * th) / cos(th / 2.0),
                           xp.where(even, n21, -n21))
        else:
            edge = sign1 if shifted else xp.where(x > 0.0, n21, sign1)
            val = xp.where(cos(th / 2.0) != 1.0, sin((T(n) + 0.5) * th) / sin(th / 2.0), edge)
        put(closed, val)
        two = y + y
        q = {"t": y, "u": two, "v": two - 1.0, "w": two + 1.0}[base]

        def step(k, p, q):
            return fms(two, q, p)
        k, last, nan_stop = 2, n, True
    elif kind == "hermite_polynomial_h":
        put(n > (128 if dt == xp.float32 else 512), T(xp.full_like(x, math.nan)))
        q = x + x

        def step(k, p, q):
            return fms(x + x, q, (2 * k) * p)
        k, last, nan_stop = 1, n - 1, False
    elif kind == "hermite_polynomial_he":
        put(n > (128 if dt == xp.float32 else 512), T(xp.full_like(x, math.nan)))
        q = x

        def step(k, p, q):
            return fms(x, q, k * p)
        k, last, nan_stop = 1, n - 1, False
    elif kind == "laguerre_polynomial_l":
        put(x == 0.0, one)
        q = 1.0 - x

        def step(k, p, q):
            return fms((k + k) + (1.0 - x), q, k * p) / (k + 1)
        k, last, nan_stop = 1, n - 1, True
    elif kind == "legendre_polynomial_p":
        put(xp.abs(x) == 1.0, xp.where((x > 0.0) | even, one, -one))
        q = x

        def step(k, p, q):
            return fms((k + k + 1) * x, q, k * p) / (k + 1)
        k, last, nan_stop = 1, n - 1, True
    else:
        raise ValueError(f"unknown orthogonal polynomial {kind!r}")
    put(n == 0, one)
    put(n == 1, q)
    p, r = one, q
    while True:
        go = ~done & (k <= last)
        if nan_stop:
            go = go & ~xp.isnan(q)
        if not bool(xp.any(go)):
            break
        r = xp.where(go, step(k, p, q), r)
        p, q = xp.where(go, q, p), xp.where(go, r, q)
        k += 1
    return xp.where(done, out, r)


def orthogonal_polynomial(kind: str, x, n):
    with np.errstate(all="ignore"):
        return np.asarray(orthogonal_polynomial_in(np, kind, np.asarray(x), np.asarray(n)))


def zeta_in(xp, x, q):
    """The Hurwitz zeta function zeta(x, q) elementwise (PyTorch's zeta: Cephes', computed in float64), in the
    namespace ``xp`` (standard operations only)."""
    x, q = xp.broadcast_arrays(xp.astype(x, xp.float64), xp.astype(q, xp.float64))
    out = xp.full_like(x, math.nan)
    done = x < 1.0
    out = xp.where(x == 1.0, math.inf, out)
    done = done | (x == 1.0)
    neg = ~done & (q <= 0.0)
    pole = neg & (q == xp.floor(q))
    out = xp.where(pole, math.inf, out)
    done = done | pole | (neg & (x != xp.floor(x)))
    xx, qq = xp.where(done, 2.0, x), xp.where(done, 1.0, q)
    acc = qq ** -xx
    a, b = qq, xp.zeros_like(qq)
    i = 0
    while True:
        active = ~done & ((i < 9) | (a <= 9.0))
        if not bool(xp.any(active)):
            break
        i += 1
        a = xp.where(active, a + 1.0, a)
        b = xp.where(active, a ** -xx, b)
        acc = xp.where(active, acc + b, acc)
        conv = active & (-_MACHEP * acc < b) & (b < _MACHEP * acc)
        out = xp.where(conv, acc, out)
        done = done | conv
    w = a
    acc = acc + b * w / (xx - 1.0) - 0.5 * b
    a = xp.ones_like(qq)
    k = 0.0
    for c in _ZETA_A:
        a = a * (xx + k)
        b = b / w
        t = a * b / c
        acc = acc + t
        conv = ~done & (xp.abs(t / acc) < _MACHEP)
        out = xp.where(conv, acc, out)
        done = done | conv
        k += 1.0
        a = a * (xx + k)
        b = b / w
        k += 1.0
    return xp.where(done, out, acc)


def zeta(x, q):
    """zeta(x, q) in the inputs' (float) dtype, computed in float64 as PyTorch's (its accumulate type)."""
    dt = np.result_type(x, q)   # Python scalars are weak, as in xlogy
    with np.errstate(all="ignore"):
        return zeta_in(np, np.asarray(x), np.asarray(q)).astype(dt, copy=False)


# ----- the regularized incomplete gamma functions (PyTorch's calc_igamma / calc_igammac, from Cephes' igam.c) --------

# DLMF 8.12 coefficients of the uniform asymptotic expansion (Cephes' igam.h), row k, column n.
_IGAM_D = (
    (-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2, 1.1574074074074074e-3,
     3.527336860670194e-4, -1.7875514403292181e-4, 3.9192631785224378e-5, -2.1854485106799922e-6,
     -1.85406221071516e-6, 8.296711340953086e-7, -1.7665952736826079e-7, 6.7078535434014986e-9,
     1.0261809784240308e-8, -4.3820360184533532e-9, 9.1476995822367902e-10, -2.551419399494625e-11,
     -5.8307721325504251e-11, 2.4361948020667416e-11, -5.0276692801141756e-12, 1.1004392031956135e-13,
     3.3717632624009854e-13, -1.3923887224181621e-13, 2.8534893807047443e-14, -5.1391118342425726e-16,
     -1.9752288294349443e-15),
    (-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3, -9.9022633744855967e-4,
     2.0576131687242798e-4, -4.0187757201646091e-7, -1.8098550334489978e-5, 7.6491609160811101e-6,
     -1.6120900894563446e-6, 4.6471278028074343e-9, 1.378633446915721e-7, -5.752545603517705e-8,
     1.1951628599778147e-8, -1.7543241719747648e-11, -1.0091543710600413e-9, 4.1627929918425826e-10,
     -8.5639070264929806e-11, 6.0672151016047586e-14, 7.1624989648114854e-12, -2.9331866437714371e-12,
     5.9966963656836887e-13, -2.1671786527323314e-16, -4.9783399723692616e-14, 2.0291628823713425e-14,
     -4.13125571381061e-15),
    (4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4, 2.0093878600823045e-6,
     -1.0736653226365161e-4, 5.2923448829120125e-5, -1.2760635188618728e-5, 3.4235787340961381e-8,
     1.3721957309062933e-6, -6.298992138380055e-7, 1.4280614206064242e-7, -2.0477098421990866e-10,
     -1.4092529910867521e-8, 6.228974084922022e-9, -1.3670488396617113e-9, 9.4283561590146782e-13,
     1.2872252400089318e-10, -5.5645956134363321e-11, 1.1975935546366981e-11, -4.1689782251838635e-15,
     -1.0940640427884594e-12, 4.6622399463901357e-13, -9.905105763906906e-14, 1.8931876768373515e-17,
     8.8592218725911273e-15),
    (6.4943415637860082e-4, 2.2947209362139918e-4, -4.6918949439525571e-4, 2.6772063206283885e-4,
     -7.5618016718839764e-5, -2.3965051138672967e-7, 1.1082654115347302e-5, -5.6749528269915966e-6,
     1.4230900732435884e-6, -2.7861080291528142e-11, -1.6958404091930277e-7, 8.0994649053880824e-8,
     -1.9111168485973654e-8, 2.3928620439808118e-12, 2.0620131815488798e-9, -9.4604966618551322e-10,
     2.1541049775774908e-10, -1.388823336813903e-14, -2.1894761681963939e-11, 9.7909989511716851e-12,
     -2.1782191880180962e-12, 6.2088195734079014e-17, 2.126978363279737e-13, -9.3446887915174333e-14,
     2.0453671226782849e-14),
    (-8.618882909167117e-4, 7.8403922172006663e-4, -2.9907248030319018e-4, -1.4638452578843418e-6,
     6.6414982154651222e-5, -3.9683650471794347e-5, 1.1375726970678419e-5, 2.5074972262375328e-10,
     -1.6954149536558306e-6, 8.9075075322053097e-7, -2.2929348340008049e-7, 2.956794137544049e-11,
     2.8865829742708784e-8, -1.4189739437803219e-8, 3.4463580499464897e-9, -2.3024517174528067e-13,
     -3.9409233028046405e-10, 1.8602338968504502e-10, -4.356323005056618e-11, 1.2786001016296231e-15,
     4.6792750266579195e-12, -2.1492464706134829e-12, 4.9088156148096522e-13, -6.3385914848915603e-18,
     -5.0453320690800944e-14),
    (-3.3679855336635815e-4, -6.9728137583658578e-5, 2.7727532449593921e-4, -1.9932570516188848e-4,
     6.7977804779372078e-5, 1.419062920643967e-7, -1.3594048189768693e-5, 8.0184702563342015e-6,
     -2.2914811765080952e-6, -3.252473551298454e-10, 3.4652846491085265e-7, -1.8447187191171343e-7,
     4.8240967037894181e-8, -1.7989466721743515e-14, -6.3061945000135234e-9, 3.1624176287745679e-9,
     -7.8409242536974293e-10, 5.1926791652540407e-15, 9.3589442423067836e-11, -4.5134262161632782e-11,
     1.0799129993116827e-11, -3.661886712685252e-17, -1.210902069055155e-12, 5.6807435849905643e-13,
     -1.3249659916340829e-13),
    (5.3130793646399222e-4, -5.9216643735369388e-4, 2.7087820967180448e-4, 7.9023532326603279e-7,
     -8.1539693675619688e-5, 5.6116827531062497e-5, -1.8329116582843376e-5, -3.0796134506033048e-9,
     3.4651553688036091e-6, -2.0291327396058604e-6, 5.7887928631490037e-7, 2.338630673826657e-13,
     -8.8286007463304835e-8, 4.7435958880408128e-8, -1.2545415020710382e-8, 8.6496488580102925e-14,
     1.6846058979264063e-9, -8.5754928235775947e-10, 2.1598224929232125e-10, -7.6132305204761539e-16,
     -2.6639822008536144e-11, 1.3065700536611057e-11, -3.1799163902367977e-12, 4.7109761213674315e-18,
     3.6902800842763467e-13),
    (3.4436760689237767e-4, 5.1717909082605922e-5, -3.3493161081142236e-4, 2.812695154763237e-4,
     -1.0976582244684731e-4, -1.2741009095484485e-7, 2.7744451511563644e-5, -1.8263488805711333e-5,
     5.7876949497350524e-6, 4.9387589339362704e-10, -1.0595367014026043e-6, 6.1667143761104075e-7,
     -1.7562973359060462e-7, -1.2974473287015439e-12, 2.695423606288966e-8, -1.4578352908731271e-8,
     3.887645959386175e-9, -3.8810022510194121e-17, -5.3279941738772867e-10, 2.7437977643314845e-10,
     -6.9957960920705679e-11, 2.5899863874868481e-17, 8.8566890996696381e-12, -4.403168815871311e-12,
     1.0865561947091654e-12),
    (-6.5262391859530942e-4, 8.3949872067208728e-4, -4.3829709854172101e-4, -6.969091458420552e-7,
     1.6644846642067548e-4, -1.2783517679769219e-4, 4.6299532636913043e-5, 4.5579098679227077e-9,
     -1.0595271125805195e-5, 6.7833429048651666e-6, -2.1075476666258804e-6, -1.7213731432817145e-11,
     3.7735877416110979e-7, -2.1867506700122867e-7, 6.2202288040189269e-8, 6.5977038267330006e-16,
     -9.5903864974256858e-9, 5.2132144922808078e-9, -1.3991589583935709e-9, 5.382058999060575e-16,
     1.9484714275467745e-10, -1.0127287556389682e-10, 2.6077347197254926e-11, -5.0904186999932993e-18,
     -3.3721464474854592e-12),
    (-5.9676129019274625e-4, -7.2048954160200106e-5, 6.7823088376673284e-4, -6.4014752602627585e-4,
     2.7750107634328704e-4, 1.8197008380465151e-7, -8.4795071170685032e-5, 6.105192082501531e-5,
     -2.1073920183404862e-5, -8.8585890141255994e-10, 4.5284535953805377e-6, -2.8427815022504408e-6,
     8.7082341778646412e-7, 3.6886101871706965e-12, -1.5344695190702061e-7, 8.862466778790695e-8,
     -2.5184812301826817e-8, -1.0225912098215092e-14, 3.8969470758154777e-9, -2.1267304792235635e-9,
     5.7370135528051385e-10, -1.887749850169741e-19, -8.0931538694657866e-11, 4.2382723283449199e-11,
     -1.1002224534207726e-11),
    (1.3324454494800656e-3, -1.9144384985654775e-3, 1.1089369134596637e-3, 9.932404122642299e-7,
     -5.0874501293093199e-4, 4.2735056665392884e-4, -1.6858853767910799e-4, -8.1301893922784998e-9,
     4.5284402370562147e-5, -3.127053674781734e-5, 1.044986828530338e-5, 4.8435226265680926e-11,
     -2.1482565873456258e-6, 1.329369701097492e-6, -4.0295693092101029e-7, -1.7567877666323291e-13,
     7.0145043163668257e-8, -4.040787734999483e-8, 1.1474026743371963e-8, 3.9642746853563325e-18,
     -1.7804938269892714e-9, 9.7480262548731646e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
     3.7647749553543836e-11),
    (1.579727660730835e-3, 1.6251626278391582e-4, -2.0633421035543276e-3, 2.1389686185689098e-3,
     -1.0108559391263003e-3, -3.9912705529919201e-7, 3.6235025084764691e-4, -2.8143901463712154e-4,
     1.0449513336495887e-4, 2.1211418491830297e-9, -2.5779417251947842e-5, 1.7281818956040463e-5,
     -5.6413773872904282e-6, -1.1024320105776174e-11, 1.1223224418895175e-6, -6.8693396379526735e-7,
     2.0653236975414887e-7, 4.6714772409838506e-14, -3.5609886164949055e-8, 2.0470855345905963e-8,
     -5.8091738633283358e-9, -1.332821287582869e-16, 9.0354604391335133e-10, -4.9598782517330834e-10,
     1.3481607129399749e-10),
    (-4.0725121195140166e-3, 6.4033628338080698e-3, -4.0410161081676618e-3, -2.183732802866233e-6,
     2.1740441801254639e-3, -1.9700440518418892e-3, 8.3595469747962458e-4, 1.9445447567109655e-8,
     -2.5779387120421696e-4, 1.9009987368139304e-4, -6.7696499937438965e-5, -1.4440629666426572e-10,
     1.5712512518742269e-5, -1.0304008744776893e-5, 3.304517767401387e-6, 7.9829760242325709e-13,
     -6.4097794149313004e-7, 3.8894624761300056e-7, -1.1618347644948869e-7, -2.816808630596451e-15,
     1.9878012911297093e-8, -1.1407719956357511e-8, 3.2355857064185555e-9, 4.1759468293455945e-20,
     -5.0423112718105824e-10),
    (-5.9475779383993003e-3, -5.4016476789260452e-4, 8.7910413550767898e-3, -9.8576315587856125e-3,
     5.0134695031021538e-3, 1.2807521786221875e-6, -2.0626019342754683e-3, 1.7109128573523058e-3,
     -6.7695312714133799e-4, -6.9011545676562133e-9, 1.8855128143995902e-4, -1.3395215663491969e-4,
     4.6263183033528039e-5, 4.0034230613321351e-11, -1.0255652921494033e-5, 6.612086372797651e-6,
     -2.0913022027253008e-6, -2.0951775649603837e-13, 3.9756029041993247e-7, -2.3956211978815887e-7,
     7.1182883382145864e-8, 8.925574873053455e-16, -1.2101547235064676e-8, 6.9350618248334386e-9,
     -1.9661464453856102e-9),
    (1.7402027787522711e-2, -2.9527880945699121e-2, 2.0045875571402799e-2, 7.0289515966903407e-6,
     -1.2375421071343148e-2, 1.1976293444235254e-2, -5.4156038466518525e-3, -6.3290893396418616e-8,
     1.8855118129005065e-3, -1.473473274825001e-3, 5.5515810097708387e-4, 5.2406834412550662e-10,
     -1.4357913535784836e-4, 9.9181293224943297e-5, -3.3460834749478311e-5, -3.5755837291098993e-12,
     7.1560851960630076e-6, -4.5516802628155526e-6, 1.4236576649271475e-6, 1.8803149082089664e-14,
     -2.6623403898929211e-7, 1.5950642189595716e-7, -4.7187514673841102e-8, -6.5107872958755177e-17,
     7.9795091026746235e-9),
    (3.0249124160905891e-2, 2.4817436002649977e-3, -4.9939134373457022e-2, 5.9915643009307869e-2,
     -3.2483207601623391e-2, -5.7212968652103441e-6, 1.5085251778569354e-2, -1.3261324005088445e-2,
     5.5515262632426148e-3, 3.0263182257030016e-8, -1.7229548406756723e-3, 1.2893570099929637e-3,
     -4.6845138348319876e-4, -1.830259937893045e-10, 1.1449739014822654e-4, -7.7378565221244477e-5,
     2.5625836246985201e-5, 1.0766165333192814e-12, -5.3246809282422621e-6, 3.349634863064464e-6,
     -1.0381253128684018e-6, -5.608909920621128e-15, 1.9150821930676591e-7, -1.1418365800203486e-7,
     3.3654425209171788e-8),
    (-9.9051020880159045e-2, 1.7954011706123486e-1, -1.2989606383463778e-1, -3.1478872752284357e-5,
     9.0510635276848131e-2, -9.2828824411184397e-2, 4.4412112839877808e-2, 2.7779236316835888e-7,
     -1.7229543805449697e-2, 1.4182925050891573e-2, -5.6214161633747336e-3, -2.39598509186381e-9,
     1.6029634366079908e-3, -1.1606784674435773e-3, 4.1001337768153873e-4, 1.8365800754090661e-11,
     -9.5844256563655903e-5, 6.3643062337764708e-5, -2.076250624489065e-5, -1.1806020912804483e-13,
     4.2131808239120649e-6, -2.6262241337012467e-6, 8.0770620494930662e-7, 6.0125912123632725e-16,
     -1.4729737374018841e-7),
    (-1.9994542198219728e-1, -1.5056113040026424e-2, 3.6470239469348489e-1, -4.6435192311733545e-1,
     2.6640934719197893e-1, 3.4038266027147191e-5, -1.3784338709329624e-1, 1.276467178337056e-1,
     -5.6213828755200985e-2, -1.753150885483011e-7, 1.9235592956768113e-2, -1.5088821281095315e-2,
     5.7401854451350123e-3, 1.0622382710310225e-9, -1.5335082692563998e-3, 1.0819320643228214e-3,
     -3.7372510193945659e-4, -6.6170909729031985e-12, 8.4263617380909628e-5, -5.5150706827483479e-5,
     1.7769536448348069e-5, 3.8827923210205533e-14, -3.53513697488768e-6, 2.1865832130045269e-6,
     -6.6812849447625594e-7),
    (7.2438608504029431e-1, -1.3918010932653375, 1.0654143352413968, 1.876173868950258e-4, -8.2705501176152696e-1,
     8.9352433347828414e-1, -4.4971003995291339e-1, -1.6107401567546652e-6, 1.9235590165271091e-1,
     -1.6597702160042609e-1, 6.8882222681814333e-2, 1.3910091724608687e-8, -2.146911561508663e-2,
     1.6228980898865892e-2, -5.9796016172584256e-3, -1.1287469112826745e-10, 1.5167451119784857e-3,
     -1.0478634293553899e-3, 3.5539072889126421e-4, 8.1704322111801517e-13, -7.7773013442452395e-5,
     5.0291413897007722e-5, -1.6035083867000518e-5, 1.2469354315487605e-14, 3.1369106244517615e-6),
    (1.6668949727276811, 1.165462765994632e-1, -3.3288393225018906, 4.4692325482864037, -2.6977693045875807,
     -2.600667859891061e-4, 1.5389017615694539, -1.4937962361134612, 6.8881964633233148e-1, 1.3077482004552385e-6,
     -2.5762963325596288e-1, 2.1097676102125449e-1, -8.3714408359219882e-2, -7.7920428881354753e-9,
     2.4267923064833599e-2, -1.7813678334552311e-2, 6.3970330388900056e-3, 4.9430807090480523e-11,
     -1.5554602758465635e-3, 1.0561196919903214e-3, -3.5277184460472902e-4, 9.3002334645022459e-14,
     7.5285855026557172e-5, -4.8186515569156351e-5, 1.5227271505597605e-5),
    (-6.6188298861372935, 1.3397985455142589e+1, -1.0789350606845146e+1, -1.4352254537875018e-3, 9.2333694596189809,
     -1.0456552819547769e+1, 5.5105526029033471, 1.2024439690716742e-5, -2.5762961164755816, 2.3207442745387179,
     -1.0045728797216284, -1.0207833290021914e-7, 3.3975092171169466e-1, -2.6720517450757468e-1,
     1.0235252851562706e-1, 8.4329730484871625e-10, -2.7998284958442595e-2, 2.0066274144976813e-2,
     -7.0554368915086242e-3, 1.9402238183698188e-12, 1.6562888105449611e-3, -1.1082898580743683e-3,
     3.654545161310169e-4, -5.1290032026971794e-11, -7.6340103696869031e-5),
    (-1.7112706061976095e+1, -1.1208044642899116, 3.7131966511885444e+1, -5.2298271025348962e+1,
     3.3058589696624618e+1, 2.4791298976200222e-3, -2.061089403411526e+1, 2.088672775145582e+1,
     -1.0045703956517752e+1, -1.2238783449063012e-5, 4.0770134274221141, -3.473667358470195, 1.4329352617312006,
     7.1359914411879712e-8, -4.4797257159115612e-1, 3.4112666080644461e-1, -1.2699786326594923e-1,
     -2.8953677269081528e-10, 3.3125776278259863e-2, -2.3274087021036101e-2, 8.0399993503648882e-3,
     -1.177805216235265e-9, -1.8321624891071668e-3, 1.2108282933588665e-3, -3.9479941246822517e-4),
    (7.389033153567425e+1, -1.5680141270402273e+2, 1.322177542759164e+2, 1.3692876877324546e-2,
     -1.2366496885920151e+2, 1.4620689391062729e+2, -8.0365587724865346e+1, -1.1259851148881298e-4,
     4.0770132196179938e+1, -3.8210340013273034e+1, 1.719522294277362e+1, 9.3519707955168356e-7, -6.2716159907747034,
     5.1168999071852637, -2.0319658112299095, -4.9507215582761543e-9, 5.9626397294332597e-1, -4.4220765337238094e-1,
     1.6079998700166273e-1, -2.4733786203223402e-8, -4.0307574759979762e-2, 2.7849050747097869e-2,
     -9.4751858992054221e-3, 6.419922235909132e-6, 2.1250180774699461e-3),
    (2.1216837098382522e+2, 1.3107863022633868e+1, -4.9698285932871748e+2, 7.3121595266969204e+2,
     -4.8213821720890847e+2, -2.8817248692894889e-2, 3.2616720302947102e+2, -3.4389340280087117e+2,
     1.7195193870816232e+2, 1.4038077378096158e-4, -7.52594195897599e+1, 6.651969984520934e+1,
     -2.8447519748152462e+1, -7.613702615875391e-7, 9.5402237105304373, -7.5175301113311376, 2.8943997568871961,
     -4.6612194999538201e-7, -8.0615149598794088e-1, 5.8483006570631029e-1, -2.0845408972964956e-1,
     1.4765818959305817e-4, 5.1000433863753019e-2, -3.3066252141883665e-2, 1.5109265210467774e-2),
    (-9.8959643098322368e+2, 2.1925555360905233e+3, -1.9283586782723356e+3, -1.5925738122215253e-1,
     1.9569985945919857e+3, -2.4072514765081556e+3, 1.3756149959336496e+3, 1.2920735237496668e-3,
     -7.525941715948055e+2, 7.3171668742208716e+2, -3.4137023466220065e+2, -9.9857390260608043e-6,
     1.3356313181291573e+2, -1.1276295161252794e+2, 4.6310396098204458e+1, -7.9237387133614756e-6,
     -1.4510726927018646e+1, 1.1111771248100563e+1, -4.1690817945270892, 3.1008219800117808e-3, 1.1220095449981468,
     -7.6052379926149916e-1, 3.6262236505085254e-1, 2.216867741940747e-1, 4.8683443692930507e-1),
)
_LANCZOS_NUM = (
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (
    1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076., 150917976., 120543840., 39916800.,
    0.)
_LANCZOS_G = 6.024680040776729583740234375
_IGAM_MAXITER = 2000
_PI_FLOAT = 3.1415927410125732   # c10::pi<float>, which PyTorch's asymptotic series uses in double arithmetic


def igamma_in(xp, a, x, upper: bool, lgamma, erfc):
    """The regularized lower (upper: upper) incomplete gamma function P(a, x) (Q(a, x)), elementwise in float64,
    in the namespace ``xp`` with the device's ``lgamma`` and ``erfc`` kernels: PyTorch's branches (boundaries,
    the uniform asymptotic expansion for a ~ x, the power series, the continued fraction), each iteration stopped
    per element where PyTorch's loop stops."""
    a, x = xp.broadcast_arrays(xp.astype(a, xp.float64), xp.astype(x, xp.float64))
    nan = xp.full_like(a, math.nan)

    def where(c, u, v):
        return xp.where(c, u, v)

    def fac(a, x):
        ax = a * xp.log(x) - x - lgamma(a)
        direct = where(ax < -7.09782712893383996843E2, 0.0, xp.exp(ax))
        f = a + _LANCZOS_G - 0.5
        big = xp.abs(a) > 1.0
        y = where(big, 1.0 / a, a)
        def ratio(num_coef, den_coef):   # PyTorch's ratevl: the polynomials in 1 / a (reversed) beyond |a| = 1
            num, den = xp.zeros_like(a), xp.zeros_like(a)
            for cn, cd in zip(num_coef, den_coef):
                num, den = num * y + cn, den * y + cd
            return num / den
        res = xp.sqrt(f / math.e) / where(big, ratio(_LANCZOS_NUM[::-1], _LANCZOS_DEN[::-1]),
                                          ratio(_LANCZOS_NUM, _LANCZOS_DEN))
        numfac = (x - a - _LANCZOS_G + 0.5) / f
        res = where((a < 200.0) & (x < 200.0), res * (xp.exp(a - x) * (x / f) ** a),
                    res * xp.exp(a * (xp.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / f))
        return where(xp.abs(a - x) > 0.4 * xp.abs(a), direct, res)

    def series(a, x, need):   # P(a, x) by its power series
        ax = fac(a, x)
        need = need & (ax != 0.0)
        r, c, ans = a, xp.ones_like(a), xp.ones_like(a)
        for _ in range(_IGAM_MAXITER):
            if not bool(xp.any(need)):
                break
            r = where(need, r + 1.0, r)
            c = where(need, c * (x / r), c)
            ans = where(need, ans + c, ans)
            need = need & ~(c <= _MACHEP * ans)
        return where(ax == 0.0, 0.0, ans * ax / a)

    def upper_series(a, x, need):   # Q(a, x) for small x
        f, total = xp.ones_like(a), xp.zeros_like(a)
        for n in range(1, _IGAM_MAXITER):
            if not bool(xp.any(need)):
                break
            f = where(need, f * (-x / n), f)
            term = f / (a + n)
            total = where(need, total + term, total)
            need = need & ~(xp.abs(term) <= _MACHEP * xp.abs(total))
        logx = xp.log(x)
        return -xp.expm1(a * logx - lgamma(1.0 + a)) - xp.exp(a * logx - lgamma(a)) * total

    def continued_fraction(a, x, need):   # Q(a, x) for large x
        ax = fac(a, x)
        need = need & (ax != 0.0)
        y = 1.0 - a
        z = x + y + 1.0
        c = xp.zeros_like(a)
        pkm2, qkm2, pkm1, qkm1 = xp.ones_like(a), x, x + 1.0, z * x
        ans = pkm1 / qkm1
        for _ in range(_IGAM_MAXITER):
            if not bool(xp.any(need)):
                break
            c, y, z = c + 1.0, y + 1.0, z + 2.0
            yc = y * c
            pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
            nz = qk != 0.0
            r = pk / where(nz, qk, 1.0)
            t = where(nz, xp.abs((ans - r) / r), 1.0)
            ans = where(need & nz, r, ans)
            scale = where(xp.abs(pk) > 4.503599627370496e15, xp.full_like(a, 2.22044604925031308085e-16), 1.0)
            pkm2, pkm1 = where(need, pkm1 * scale, pkm2), where(need, pk * scale, pkm1)
            qkm2, qkm1 = where(need, qkm1 * scale, qkm2), where(need, qk * scale, qkm1)
            need = need & ~(t <= _MACHEP)
        return where(ax == 0.0, 0.0, ans * ax)

    def asymptotic(a, x, need, igam: bool):   # DLMF 8.12.3 / 8.12.4 for large a ~ x
        sgn = -1.0 if igam else 1.0
        lam, sigma = x / a, (x - a) / a
        root = xp.sqrt(-2.0 * (xp.log1p(sigma) - sigma))
        eta = where(lam > 1.0, root, where(lam < 1.0, -root, 0.0))
        res = 0.5 * erfc(sgn * eta * xp.sqrt(a / 2.0))
        etapow = [xp.ones_like(a)]
        for _ in range(24):
            etapow.append(eta * etapow[-1])
        total, afac = xp.zeros_like(a), xp.ones_like(a)
        absold = xp.full_like(a, math.inf)
        for row in _IGAM_D:
            if not bool(xp.any(need)):
                break
            ck = xp.full_like(a, row[0])
            go = need
            for dn, ep in zip(row[1:], etapow[1:]):
                ckterm = dn * ep
                ck = where(go, ck + ckterm, ck)
                go = go & ~(xp.abs(ckterm) < _MACHEP * xp.abs(ck))
            term = ck * afac
            absterm = xp.abs(term)
            need = need & ~(absterm > absold)
            total = where(need, total + term, total)
            need = need & ~(absterm < _MACHEP * xp.abs(total))
            absold = where(need, absterm, absold)
            afac = where(need, afac / a, afac)
        return res + sgn * xp.exp(-0.5 * a * eta * eta) * total / xp.sqrt(2.0 * _PI_FLOAT * a)

    def igammac_core(a, x, need):
        """calc_igammac's choice among the series (for the elements in ``need``, boundaries handled)."""
        pos = xp.where(need, a, 1.0)
        absxma = xp.abs(x - a) / pos
        asym = need & (((a > 20.0) & (a < 200.0) & (absxma < 0.3)) | ((a > 200.0) & (absxma < 4.5 / xp.sqrt(pos))))
        rest = need & ~asym
        lower = rest & (((x > 1.1) & (x < a)) | ((x <= 0.5) & (-0.4 / xp.log(x) < a)) |
                        ((x > 0.5) & (x <= 1.1) & (x * 1.1 < a)))
        cf = rest & (x > 1.1) & ~lower
        small = rest & ~lower & ~cf
        out = where(asym, asymptotic(a, x, asym, False), nan)
        out = where(lower, 1.0 - series(a, x, lower), out)
        out = where(cf, continued_fraction(a, x, cf), out)
        return where(small, upper_series(a, x, small), out)

    # the boundaries, as calc_igamma / calc_igammac (P = 1 - Q there)
    bounds = [((x < 0.0) | (a < 0.0), nan),
              ((a == 0.0) & (x > 0.0), 0.0 if upper else 1.0), (a == 0.0, nan),
              (x == 0.0, 1.0 if upper else 0.0),
              (xp.isinf(a) & xp.isinf(x), nan), (xp.isinf(a), 1.0 if upper else 0.0),
              (xp.isinf(x), 0.0 if upper else 1.0), (xp.isnan(a) | xp.isnan(x), nan)]
    out, done = nan, xp.zeros(a.shape, dtype=xp.bool)
    for cond, val in bounds:
        out = where(cond & ~done, val, out)
        done = done | cond
    aa = where(done, 1.0, a)
    xx = where(done, 1.0, x)
    need = ~done
    if upper:
        return where(done, out, igammac_core(aa, xx, need))
    absxma = xp.abs(xx - aa) / aa
    asym = need & (((aa > 20.0) & (aa < 200.0) & (absxma < 0.3)) | ((aa > 200.0) & (absxma < 4.5 / xp.sqrt(aa))))
    comp = need & ~asym & (xx > 1.0) & (xx > aa)
    ser = need & ~asym & ~comp
    r = where(asym, asymptotic(aa, xx, asym, True), nan)
    r = where(comp, 1.0 - igammac_core(aa, xx, comp), r)
    r = where(ser, series(aa, xx, ser), r)
    return where(done, out, r)


def _igamma_kernel(upper: bool):
    def kernel(a, x):
        dt = np.result_type(a, x)
        with np.errstate(all="ignore"):
            r = igamma_in(np, np.asarray(a), np.asarray(x), upper, _lgamma_f64, _erfc_f64)
        return np.asarray(r).astype(dt, copy=False)
    kernel.__name__ = "igammac" if upper else "igamma"
    return kernel


def _lgamma_f64(x):
    return _f64(_lgamma_u, x)


def _erfc_f64(x):
    return erfc(np.asarray(x, dtype=np.float64))


igamma, igammac = _igamma_kernel(False), _igamma_kernel(True)
__all__ += ["igamma", "igammac"]


__all__ += ["frexp", "nextafter"]


def frexp(x):
    """(mantissa, exponent): x = mantissa * 2**exponent with 0.5 <= |mantissa| < 1; exponent int32 (C's frexp:
    0 for zero, inf and nan, whose mantissa is themselves)."""
    if x.dtype is _BF16:   # (NumPy has no bfloat16 frexp): exact in float32
        m, e = np.frexp(x.astype(np.float32))
        return m.astype(_BF16), e.astype(np.int32, copy=False)
    m, e = np.frexp(x)
    return m, e.astype(np.int32, copy=False)


def nextafter(x, y):
    """The next representable value after x towards y."""
    return np.nextafter(x, y)
