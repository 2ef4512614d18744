"""PyTorch's CPU random stream (mt19937) and its sampling kernels, draw for draw, on NumPy arrays.

``ember.ops.random`` (torch.Generator, the public functions and their checks) reaches this file through the
device backend (``backend.random``); everything here takes a ``State`` and plain arguments and returns NumPy
arrays. The engine is NumPy's ``MT19937`` bit generator, whose state (624 words and a position) is PyTorch's;
every sampler reads raw 32-bit words in bulk and transforms them with array ops, consuming them in PyTorch's
order.

How PyTorch turns words into numbers (reimplemented here):
  * float32 uniform: one word, its low 24 bits times 2^-24 (float16 is sampled so, then rounded);
    float64: two words (hi, lo) as one 64-bit value, its low 53 bits times 2^-53.
    ``uniform_(a, b)`` is ``fma(x, b - a, a)`` in the tensor's type (float32 for float16).
  * normal, >= 16 contiguous elements: fill with uniforms, then Box-Muller on blocks of 16 (8 cosines,
    8 sines); if the size is not a multiple of 16, the last 16 elements are redrawn and redone.
    float32 uses AVX2 code (Cephes polynomials for log and sincos, fused multiply-adds), emulated
    here operation by operation; float16 uses it too, block by block (16 fresh uniforms per block).
  * normal, fewer than 16 elements or non-contiguous: Box-Muller in float64, one pair at a time;
    the unused sine is cached on the generator (part of its state).
  * exponential, geometric, cauchy, log-normal, bernoulli(p float): float64 uniforms, then cast.
  * random_/randint: word % range (+ from); 64-bit draws when the range is >= 2^28.
  * randperm: Fisher-Yates with word % (n - i); multinomial: cumulative sums and a binary search
    (with replacement), or ``p / Exp(1)`` and top-k (without).
"""
from __future__ import annotations

import math

import numpy as np

from .reduced import REDUCED as _REDUCED


def _low(np_dtype) -> bool:
    """Whether ``np_dtype`` is float16 or bfloat16 (sampled as float32, then rounded)."""
    return np.dtype(np_dtype) in _REDUCED

from . import libm  # the C library's log, sin, ...: what PyTorch's scalar transforms call
from .libm import fma64

N = 624                     # mt19937 state words
_U64 = np.uint64
_M24 = _U64((1 << 24) - 1)
_M53 = _U64((1 << 53) - 1)
_M21 = _U64((1 << 21) - 1)


def mt_key(seed: int) -> list:
    """mt19937's init_genrand on the seed's low 32 bits, as PyTorch seeds its engine: the 624 state words."""
    s = seed & 0xFFFFFFFF
    key = [s]
    for j in range(1, N):
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
        key.append(s)
    return key


class State:
    """PyTorch's CPU generator state: mt19937 (624 words and a position) and the cached normal samples.

    ``key`` (the words, Python ints) and ``pos`` as NumPy's MT19937 keeps them: ``pos == 624`` means the next
    draw regenerates the words. ``fresh``: seeded and not drawn from (PyTorch then reports next = 0, not 624).
    """

    __slots__ = ("_bg", "_key", "_pos", "fresh", "normal_double", "normal_float")

    def __init__(self, key: list, pos: int = N, fresh: bool = True, normal_double: float | None = None,
                 normal_float: float | None = None) -> None:
        self._bg = None       # NumPy's MT19937, made on first draw: importing numpy.random costs import time
        self._key = key
        self._pos = pos
        self.fresh = fresh
        self.normal_double = normal_double   # PyTorch's next_double_normal_sample
        self.normal_float = normal_float     # next_float_normal_sample (only carried through get/set_state)

    def key_pos(self) -> tuple[list, int]:
        """The mt19937 words (Python ints) and the position."""
        if self._bg is None:
            return list(self._key), self._pos
        st = self._bg.state["state"]
        return st["key"].tolist(), int(st["pos"])

    def _engine(self):
        bg = self._bg
        if bg is None:
            import numpy.random   # noqa: F401  (lazy: keeps `import ember` fast)
            bg = np.random.MT19937(0)
            bg.state = {"bit_generator": "MT19937",
                        "state": {"key": np.array(self._key, dtype=np.uint32), "pos": self._pos}}
            self._bg = bg
        return bg

    def words(self, n: int) -> np.ndarray:
        """``n`` consecutive 32-bit draws (as uint64), PyTorch's ``random()``."""
        self.fresh = False
        if n <= 0:
            return np.empty(0, np.uint64)
        return self._engine().random_raw(n)

    def words64(self, n: int) -> np.ndarray:
        """``n`` 64-bit draws, each two 32-bit draws (first = high half), PyTorch's ``random64()``."""
        w = self.words(2 * n)
        k = np.left_shift(w[0::2], _U64(32))   # (in place after the first array: dropout draws these per call)
        return np.bitwise_or(k, w[1::2], out=k)


# ----- layout: where PyTorch's serial kernels write sample k -------------------------------------------------

def _axes_order(arr: np.ndarray) -> list:
    return sorted(range(arr.ndim), key=lambda d: (-abs(arr.strides[d]), d))


def write(like: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A new array shaped and typed like ``like`` holding ``values`` in PyTorch's fill order: its elements in
    memory order (TensorIterator walks the smallest stride fastest)."""
    out = np.empty_like(like)
    if out.flags.c_contiguous:
        out.reshape(-1)[:] = values
    else:
        view = np.transpose(out, _axes_order(out))
        view[...] = values.reshape(view.shape)
    return out


# ----- uniforms --------------------------------------------------------------------------------------------

def _uniform01(st: State, n: int, np_dtype) -> np.ndarray:
    """PyTorch's uniform samples in [0, 1): float64 for float64, else float32 (float16 is sampled as float32)."""
    if np_dtype == np.float64:
        return _uniform01_f64(st, n)
    return (st.words(n) & _M24).astype(np.float32) * np.float32(2.0 ** -24)


def _uniform01_f64(st: State, n: int) -> np.ndarray:
    return (st.words64(n) & _M53).astype(np.float64) * 2.0 ** -53


_MID_MASK = np.uint64((1 << 29) - 1)   # the float64 bits below float32's last place
_MID = np.uint64(1 << 28)              # ... holding exactly half a float32 ulp


def _fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once to float32, as the FMA instruction (float32 inputs).

    The float64 product is exact; the float64 sum is exact unless the exponents are far apart, and
    then rounding it to float32 can go wrong only if it landed exactly on a float32 midpoint: those
    rare elements are redone with the sum's rounding error (TwoSum) as a tie-breaker."""
    s = np.multiply(a, b, dtype=np.float64)
    s += c
    mid = (s.view(np.uint64) & _MID_MASK) == _MID
    if mid.any():
        idx = np.nonzero(mid)
        p = (np.broadcast_to(np.asarray(a, np.float64), s.shape)[idx] *
             np.broadcast_to(np.asarray(b, np.float64), s.shape)[idx])
        cc = np.broadcast_to(np.asarray(c, np.float64), s.shape)[idx]
        t = s[idx]
        bp = t - p
        err = (p - (t - bp)) + (cc - bp)
        s[idx] = np.where(err == 0, t, np.nextafter(t, np.where(err > 0, np.inf, -np.inf)))
    return s.astype(np.float32)


def _fma64(a, b, c) -> np.ndarray:
    """``fma64`` on float64 arrays, ``a * b + c`` where it is not finite."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        r = fma64(a, b, c)
    return np.where(np.isfinite(r), r, a * b + c)


# Complex tensors are sampled as PyTorch samples them: through their real view (real and imaginary parts
# interleaved), normals with std / sqrt(2) so that the complex variance is std^2.
_REAL_OF = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def uniform(st: State, n: int, np_dtype, a: float, b: float) -> np.ndarray:
    """``n`` samples of ``uniform_(a, b)`` in ``np_dtype``."""
    real = _REAL_OF.get(np.dtype(np_dtype))
    if real is not None:
        return uniform(st, 2 * n, real, a, b).view(np_dtype)
    x = _uniform01(st, n, np_dtype)
    if np_dtype == np.float64:
        return _fma64(x, b - a, a)
    if _low(np_dtype):
        # sampled in float32, rounded to half (or bfloat16); a value that rounds up to `to` becomes `from`
        fa, fb = np.float32(a), np.float32(b)
        low = np.dtype(np_dtype).type
        h = _fma32(x, fb - fa, fa).astype(low)
        return np.where(h == low(b), low(a), h)
    fa, fb = np.float32(a), np.float32(b)
    return _fma32(x, np.float32(fb - fa), fa)


# ----- normals ---------------------------------------------------------------------------------------------

def _normal_pairs(st: State, n: int, mean: float, std: float) -> np.ndarray:
    """n samples of PyTorch's scalar normal_distribution<double>: Box-Muller one pair at a time, the
    sine cached on the generator for the next call."""
    out = np.empty(n, np.float64)
    if n == 0:
        return out
    i = 0
    if st.normal_double is not None:
        out[0] = st.normal_double
        st.normal_double = None
        i = 1
    m = n - i
    pairs = (m + 1) // 2
    if pairs:
        u = _uniform01_f64(st, 2 * pairs)
        r = np.sqrt(-2.0 * libm.log1p(-u[1::2]))
        theta = 2.0 * math.pi * u[0::2]
        z = np.empty(2 * pairs)
        z[0::2] = r * libm.cos(theta)
        z[1::2] = r * libm.sin(theta)
        out[i:] = z[:m]
        if m % 2:
            st.normal_double = float(z[-1])
    return _fma64(out, std, mean)


# AVX2 log and sincos (Cephes polynomials, as in PyTorch's avx_mathfun.h), in float32, with the fused
# multiply-adds the compiler makes of them. Verified bit for bit against PyTorch's randn.
_F = np.float32
_LOG_P = [_F(v) for v in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                          3.3333331174E-1)]


def _avx_log(x: np.ndarray) -> np.ndarray:
    xi = x.view(np.int32)    # (PyTorch clamps denormals first; inputs here are >= 2^-24)
    e = ((xi >> 23) - 0x7F).astype(_F) + _F(1)
    m = ((xi & ~np.int32(0x7F800000)) | np.int32(0x3F000000)).view(_F)   # mantissa in [0.5, 1)
    small = m < _F(0.707106781186547524)
    x = (m - _F(1)) + np.where(small, m, _F(0))
    e = e - np.where(small, _F(1), _F(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = _fma32(y, x, p)
    y = y * x
    y = _fma32(y, z, e * _F(-2.12194440e-4))
    y = _fma32(z, _F(-0.5), y)
    x = x + y
    return _fma32(e, _F(0.693359375), x)   # (inputs are in (0, 1]: no invalid-argument mask needed)


def _avx_sincos(x: np.ndarray):
    neg = np.signbit(x)
    x = np.abs(x)
    j = (x * _F(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~np.int32(1)
    y = j.astype(_F)
    sin_sign = neg ^ ((j & 4) != 0)
    poly = (j & 2) == 0
    cos_sign = (~(j - 2) & 4) != 0
    x = _fma32(y, _F(-0.78515625), x)
    x = _fma32(y, _F(-2.4187564849853515625e-4), x)
    x = _fma32(y, _F(-3.77489497744594108e-8), x)
    z = x * x
    yc = _fma32(np.full_like(x, _F(2.443315711809948E-005)), z, _F(-1.388731625493765E-003))
    yc = _fma32(yc, z, _F(4.166664568298827E-002))
    yc = yc * z
    yc = _fma32(yc, z, -(z * _F(0.5)))
    yc = yc + _F(1)
    ys = _fma32(np.full_like(x, _F(-1.9515295891E-4)), z, _F(8.3321608736E-3))
    ys = _fma32(ys, z, _F(-1.6666654611E-1))
    ys = ys * z
    ys = _fma32(ys, x, x)
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    return np.where(sin_sign, -s, s), np.where(cos_sign, -c, c)


def _box_muller16(u: np.ndarray, np_dtype, mean: float, std: float) -> np.ndarray:
    """PyTorch's normal_fill_16 on rows of 16 uniforms: 8 cosines then 8 sines. Done in chunks of rows so
    the many temporaries stay in cache (about 1.6x faster on 10^6 samples)."""
    rows = 8192
    if len(u) <= rows:
        return _box_muller_block(u, np_dtype, mean, std)
    out = np.empty(u.shape, np_dtype)
    for i in range(0, len(u), rows):
        out[i:i + rows] = _box_muller_block(u[i:i + rows], np_dtype, mean, std)
    return out


def _box_muller_block(u: np.ndarray, np_dtype, mean: float, std: float) -> np.ndarray:
    if np_dtype == np.float32:
        u1 = _F(1) - u[:, :8]
        u2 = u[:, 8:]
        r = np.sqrt(_F(-2) * _avx_log(u1))
        s, c = _avx_sincos(_F(2.0 * math.pi) * u2)
        z = np.concatenate([r * c, r * s], axis=1)
        return _fma32(z, _F(std), _F(mean))
    if np_dtype == np.float64:   # PyTorch's scalar normal_fill_16 (libm log/cos/sin, FMA for std and mean)
        r = np.sqrt(-2.0 * libm.log(1.0 - u[:, :8]))
        theta = 2.0 * math.pi * u[:, 8:]
        return np.concatenate([_fma64(r * libm.cos(theta), std, mean), _fma64(r * libm.sin(theta), std, mean)], 1)
    raise AssertionError("float16 normals are computed as float32 blocks")   # see normal


def normal(st: State, n: int, np_dtype, mean: float, std: float, contiguous: bool = True) -> np.ndarray:
    """n normal samples in PyTorch's order for a tensor of n elements (the path depends on n and on whether
    the tensor is contiguous)."""
    real = _REAL_OF.get(np.dtype(np_dtype))
    if real is not None:
        return normal(st, 2 * n, real, mean, std / math.sqrt(2), contiguous).view(np_dtype)
    if n >= 16 and contiguous:
        full = n // 16 * 16
        out = np.empty(n, np_dtype)
        if _low(np_dtype):
            # float16 (and bfloat16) goes through float32 blocks: 16 fresh uniforms per block, the last (partial) block
            # computed whole and written over the last 16 elements
            nblocks = -(-n // 16)
            u = _uniform01(st, nblocks * 16, np.float32).reshape(-1, 16)
            z = _box_muller16(u, np.float32, mean, std).astype(np_dtype)
            out[:full] = z[:full // 16].reshape(-1)
            if n % 16:
                out[n - 16:] = z[-1]
            return out
        u = _uniform01(st, n, np_dtype)
        out[:full] = _box_muller16(u[:full].reshape(-1, 16), np_dtype, mean, std).reshape(-1)
        if n % 16:
            # PyTorch redraws the last 16 uniforms and redoes them (overwriting some finished ones)
            tail = _uniform01(st, 16, np_dtype)
            out[n - 16:] = _box_muller16(tail.reshape(1, 16), np_dtype, mean, std).reshape(-1)
        return out
    return _cast_from_double(_normal_pairs(st, n, mean, std), np_dtype)


def normal_like(st: State, like: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normal_(mean, std)`` of an array like ``like``: the samples in its fill order."""
    if like.size == 0:
        return like.copy()
    return write(like, normal(st, like.size, like.dtype, mean, std, like.flags.c_contiguous))


def check_std(std: np.ndarray) -> None:
    """``normal(mean, std)``'s check of an array std."""
    if std.size and not (std >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def normal_tensor(st: State, mean, std, np_dtype) -> np.ndarray:
    """``normal(mean, std)`` with an array mean and/or std (the other a float; std checked): N(0, std) plus mean,
    or N(0, 1) times std plus mean, in PyTorch's order of operations."""
    if not isinstance(std, np.ndarray):
        z = normal(st, mean.size, np_dtype, 0.0, std).reshape(mean.shape)
        return (z + mean).astype(np_dtype, copy=False)
    shape = std.shape if not isinstance(mean, np.ndarray) else np.broadcast_shapes(mean.shape, std.shape)
    z = normal(st, math.prod(shape), np_dtype, 0.0, 1.0).reshape(shape)
    if not isinstance(mean, np.ndarray):
        return (z * std).astype(np_dtype) + np.array(mean, np_dtype)
    return ((z * std).astype(np_dtype) + mean).astype(np_dtype, copy=False)


def log_normal(st: State, n: int, mean: float, std: float, np_dtype) -> np.ndarray:
    """exp(Normal(mean, std)) samples (the scalar normal path, sharing its cached sample)."""
    with np.errstate(over="ignore"):
        vals = libm.exp(_normal_pairs(st, n, mean, std))
    return _cast_from_double(vals, np_dtype)


def _cast_from_double(x: np.ndarray, np_dtype) -> np.ndarray:
    if _low(np_dtype):   # c10::Half (BFloat16) is built from a float: double -> float -> half
        return x.astype(np.float32).astype(np_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(np_dtype)


# ----- other continuous distributions ----------------------------------------------------------------------

def exponential(st: State, n: int, lambd: float, np_dtype) -> np.ndarray:
    """Exp(lambd) samples: -log1p(-u) / lambd in float64, then cast."""
    u = _uniform01_f64(st, n)
    return _cast_from_double(-1.0 / lambd * libm.log1p(-u), np_dtype)


def geometric(st: State, n: int, p: float, np_dtype) -> np.ndarray:
    """Geometric(p) samples (trials until the first success)."""
    u = _uniform01_f64(st, n)
    with np.errstate(divide="ignore"):   # PyTorch: ceil(log(u) / log1p(-p)), with the C library's log and log1p
        vals = np.ceil(libm.log(u) / math.log1p(-p))
    return _cast_from_double(vals, np_dtype)


def cauchy(st: State, n: int, median: float, sigma: float, np_dtype) -> np.ndarray:
    """Cauchy(median, sigma) samples."""
    u = _uniform01_f64(st, n)
    return _cast_from_double(_fma64(sigma, libm.tan(math.pi * (u - 0.5)), median), np_dtype)


# ----- integers --------------------------------------------------------------------------------------------

def _ints_from_to(st: State, n: int, np_dtype, rng: int, base: int) -> np.ndarray:
    """PyTorch's uniform_int_from_to: (draw % range) + from. PyTorch 2.13 takes 64-bit draws for ranges
    >= 2^28 (whatever the dtype), which keeps the modulo bias small; found by probing torch."""
    wide = rng >= (1 << 28)
    w = st.words64(n) if wide else st.words(n)
    v = (w % _U64(rng)) + _U64(base & 0xFFFFFFFFFFFFFFFF)   # uint64 wrap-around, as in C++
    return _int64_to(v.view(np.int64), np_dtype)


def _int64_to(v: np.ndarray, np_dtype) -> np.ndarray:
    if np_dtype == np.bool_:
        return v != 0
    if _low(np_dtype):
        return v.astype(np.float32).astype(np_dtype)
    return v.astype(np_dtype)


def random(st: State, n: int, np_dtype, frm, to) -> np.ndarray:
    """Samples of ``random_(from, to)`` (``to`` exclusive, checked): ``frm is None`` means random_() without
    bounds, ``to is None`` (with from = -2^63) the full 64-bit range."""
    if frm is None:
        if np_dtype == np.bool_:
            return (st.words(n) & _U64(1)).astype(np.bool_)
        if np_dtype.kind in "fV":
            digits = np.finfo(np_dtype).nmant + 1   # 11, 24, 53: the integers a float holds exactly up to 2^digits
            w = st.words64(n) if np_dtype == np.float64 else st.words(n)
            return _int64_to((w % _U64((1 << digits) + 1)).view(np.int64), np_dtype)
        if np_dtype == np.int64:
            return (st.words64(n) % _U64(1 << 63)).view(np.int64)
        hi = int(np.iinfo(np_dtype).max) + 1
        return (st.words(n) % _U64(hi)).astype(np_dtype)
    if to is None:
        return _int64_to(st.words64(n).view(np.int64), np_dtype)
    return _ints_from_to(st, n, np_dtype, to - frm, frm)


def bernoulli(st: State, n: int, p: float, np_dtype) -> np.ndarray:
    """0/1 samples: 1 where a float64 uniform draw is < p. The draw is k * 2^-53 for the 53-bit integer k of a
    64-bit word, and p * 2^53 is exact, so the test is k < ceil(p * 2^53) on the integers (no float64 array)."""
    if not 0.0 <= p <= 1.0:   # (nan: no sample is 1, as the float comparison has it)
        return _int64_to((_uniform01_f64(st, n) < p).astype(np.int64), np_dtype)
    # words64 & _M53 with the mask on the high words (their top 11 bits go; the low words are below 2^32)
    w = st.words(2 * n)
    k = np.bitwise_and(w[0::2], _M21)
    np.left_shift(k, _U64(32), out=k)
    ones = np.bitwise_or(k, w[1::2], out=k) < _U64(math.ceil(p * 2.0 ** 53))
    if np.dtype(np_dtype).kind in "biuf" and not _low(np_dtype):
        return ones.astype(np_dtype)   # 0 and 1 exactly, as through int64 (one pass fewer: dropout's mask)
    return _int64_to(ones.astype(np.int64), np_dtype)


def bernoulli_tensor(st: State, like: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``bernoulli_(p)`` of an array like ``like`` with probabilities ``p`` (float32 or float64, broadcast to
    it), read in the order ``like`` is filled: the samples in that order."""
    if like.size == 0:
        return like.copy()
    pv = np.broadcast_to(p, like.shape)
    flat_p = pv.reshape(-1) if like.flags.c_contiguous else np.transpose(pv, _axes_order(like)).reshape(-1)
    if ((flat_p < 0) | (flat_p > 1)).any():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")
    u = _uniform01(st, like.size, p.dtype)   # float p: float uniforms (one word); double p: double uniforms
    return write(like, _int64_to((u < flat_p).astype(np.int64), like.dtype))


def randperm(st: State, n: int, np_dtype) -> np.ndarray:
    """A random permutation of 0..n-1 (PyTorch's Fisher-Yates)."""
    if n < (2 ** 32 - 1) // 20:
        # swap i with i + (draw % (n - i)): the draws are independent of the swaps, so draw them at once
        targets = ((st.words(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
                   + np.arange(n - 1)) if n > 1 else np.empty(0, np.int64)
        perm = _fisher_yates(targets, n)
    else:
        # PyTorch's large-n path (inside-out shuffle with 64-bit draws); a Python loop, slow
        w = st.words64(n)
        perm = [0] * n
        for i in range(n):
            z = int(w[i]) % (i + 1)
            perm[i] = perm[z]
            perm[z] = i
    return _int64_to(np.asarray(perm, dtype=np.int64), np_dtype)


def _fisher_yates(j: np.ndarray, n: int) -> np.ndarray:
    """The result of ``for k in range(n - 1): swap(perm[k], perm[j[k]])`` on 0..n-1 (j[k] >= k), without
    the sequential loop.

    Step k fixes position k. Let carry(p) be the value at position p just before step p: it is the original
    p, or, if earlier steps swapped with p, what the last of them (k < p) brought, which is carry(k). So
    carry follows "last step targeting p" pointers back to a root (pointer jumping). Step k's final value
    is carry(k) if j[k] == k; else what sits at j[k]: the original j[k], or carry(k') for the previous
    step k' that targeted j[k]."""
    res = np.arange(n, dtype=np.int64)
    if n < 2:
        return res
    k = np.arange(n - 1)
    swap = j != k
    ks, js = k[swap], j[swap]
    order = np.argsort(js, kind="stable")      # grouped by target, steps in order within a group
    sj, sk = js[order], ks[order]
    first = np.ones(len(sj), bool)
    first[1:] = sj[1:] != sj[:-1]
    last = np.ones(len(sj), bool)
    last[:-1] = sj[1:] != sj[:-1]
    carry = np.arange(n, dtype=np.int64)
    carry[sj[last]] = sk[last]                 # pointer to the last step that targeted p
    while True:
        nxt = carry[carry]
        if np.array_equal(nxt, carry):
            break
        carry = nxt
    stay = k[~swap]
    res[stay] = carry[stay]
    prev = np.empty(len(sj), np.int64)
    prev[first] = sj[first]
    later = np.nonzero(~first)[0]
    prev[later] = carry[sk[later - 1]]
    res[sk] = prev
    res[n - 1] = carry[n - 1]
    return res


def multinomial(st: State, probs: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """Indices (int64) sampled from the rows of ``probs`` (1-d or 2-d, floating, non-negative weights; the
    arguments checked), as PyTorch's CPU kernel; PyTorch's errors for bad weights."""
    n_cat = probs.shape[-1]
    rows = probs.reshape(-1, n_cat)
    shape = (num_samples,) if probs.ndim == 1 else (probs.shape[0], num_samples)
    if math.prod(shape) == 0:
        return np.empty(shape, np.int64)
    if probs.dtype == np.float16 and not replacement:
        raise RuntimeError("multinomial is not implemented for half on CPU")
    if not replacement or num_samples == 1:
        # PyTorch's fast path, also taken for a single sample with replacement
        if not (np.all(probs < np.inf) and np.all(probs >= 0)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(rows.sum(axis=1) == 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # Gumbel-top-k in PyTorch's form: argmax / top-k of p / q with q ~ Exp(1)
        q = exponential(st, rows.size, 1.0, probs.dtype).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            key = (rows / q).astype(probs.dtype, copy=False)
        idx = np.argsort(-key, axis=1, kind="stable")[:, :num_samples]
        return np.ascontiguousarray(idx.reshape(shape), dtype=np.int64)
    if (rows < 0).any():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if not np.isfinite(rows).all():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    cum = np.cumsum(rows, axis=1, dtype=rows.dtype)     # sequential sums in the input's type, as PyTorch
    total = cum[:, -1:]
    if not (total > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    cum = (cum / total).astype(rows.dtype)
    cum[:, -1] = 1
    u = _uniform01_f64(st, rows.shape[0] * num_samples).reshape(rows.shape[0], num_samples)
    # PyTorch's binary search finds the first bucket with cum >= u: on a non-decreasing cum, the number
    # of buckets with cum < u
    if cum.size * num_samples <= 1 << 22:
        result = (cum[:, None, :] < u[:, :, None]).sum(axis=2)
    else:
        result = np.stack([np.searchsorted(c.astype(np.float64), uu, side="left") for c, uu in zip(cum, u)])
    return result.astype(np.int64).reshape(shape)


# ----- poisson: PyTorch's sample_poisson (aten/src/ATen/native/Distributions.h), one rate at a time --------------

def _sample_poisson(st: State, lam: float) -> float:
    """Hoermann's transformed rejection (PTRS) for rates >= 10, else the product of uniforms; each uniform is one
    random64 draw, as PyTorch's uniform_real_distribution<double>. (std::lgamma is glibc's; math.lgamma,
    CPython's own, may differ in the last bit, which moves an acceptance only at a tie.)"""
    def u() -> float:
        return float(_uniform01_f64(st, 1)[0])
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = u() - 0.5
            V = u()
            us = 0.5 - abs(U)
            k = math.floor((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return float(k)
            if k < 0 or (us < 0.013 and V > us):
                continue
            if math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1):
                return float(k)
    if lam == 0:
        return 0.0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= u()
        if prod > enlam:
            x += 1
        else:
            return float(x)


def poisson(st: State, lam: np.ndarray) -> np.ndarray:
    """Poisson samples of the rates ``lam`` in lam's dtype, drawn in the order of PyTorch's new contiguous
    output (row-major, whatever lam's layout)."""
    rates = lam.reshape(-1).astype(np.float64)
    if rates.size and not (rates >= 0).all():   # negative or NaN
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = np.array([_sample_poisson(st, r) for r in rates.tolist()], dtype=np.float64)
    return out.astype(lam.dtype).reshape(lam.shape)


# ----- binomial, gamma, dirichlet: PyTorch's sample_binomial / sample_gamma (aten/src/ATen/native/Distributions.h) ---
#
# PyTorch runs these one element at a time (cpu_serial_kernel over a new contiguous output), each element drawing
# as many numbers as its rejection loop needs: uniforms are ``uniform_real_distribution<double>`` (one random64
# draw each), normals ``normal_distribution<double>`` (Box-Muller pairs, the sine cached on the generator). The
# arithmetic is in double except where the C++ operands are the element type (``scalar_t``): for float32 those
# operations round to float32 (``_f32``), and ``std::log1p`` of a float is the C library's ``log1pf``.

def _f32(x: float) -> float:
    """``x`` rounded to float32, overflowing to inf quietly (for +, -, *, /, sqrt of float32 operands, rounding
    the exact double result once more gives the float32 operation's result: double has over twice float's
    precision)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _same(x: float) -> float:
    return x


def _log1pf(x: float) -> float:
    """The C library's ``log1pf`` (what ``std::log1p(float)`` calls)."""
    return float(libm.c_float("log1pf")(x))


def _cfloor(x: float) -> float:
    """C's floor: infinities and nan pass through (math.floor raises there)."""
    return float(math.floor(x)) if math.isfinite(x) else x


def _clog(x: float) -> float:
    """C's log: -inf at 0, nan below (math.log raises there)."""
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _uniform_sampler(st: State):
    def u() -> float:
        return float(_uniform01_f64(st, 1)[0])
    return u


def _stirling_approx_tail(k: float) -> float:
    if k < 10:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _binomial_inversion(u, count: float, prob: float, f, log1p) -> float:
    logprob = log1p(-prob)
    geom_sum, num_geom = 0.0, 0.0
    while True:
        q = _clog(u()) / logprob
        geom_sum += float(math.ceil(q)) if math.isfinite(q) else q
        if geom_sum > count:
            return num_geom
        num_geom = f(num_geom + 1)


def _btrs(u, count: float, prob: float, f) -> float:
    """Hoermann's BTRS as PyTorch writes it (TensorFlow's adaptation, with its missing log)."""
    stddev = f(math.sqrt(f(f(count * prob) * f(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = f(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = f(prob / f(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = _cfloor(f(f(count + 1) * prob))
    while True:
        U = u() - 0.5
        V = u()
        us = 0.5 - abs(U)
        if us == 0:   # C: 2a/0 = inf, k = floor(-inf) < 0: rejected
            continue
        z = (2 * a / us + b) * U + c
        k = f(_cfloor(z))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = _clog(V * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * _clog((m + 1) / (r * (count - m + 1)))
                      + f(count + 1) * _clog((count - m + 1) / f(f(count - k) + 1))
                      + (k + 0.5) * _clog(r * f(f(count - k) + 1) / f(k + 1))
                      + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
                      - _stirling_approx_tail(k) - _stirling_approx_tail(f(count - k)))
        if V <= upperbound:
            return k


def _sample_binomial(u, count: float, prob: float, f, log1p) -> float:
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if f(count * prob) >= 10.0:
            return _btrs(u, count, prob, f)
        return _binomial_inversion(u, count, prob, f, log1p)
    if prob > 0.5:
        qprob = f(1.0 - prob)
        if f(count * qprob) >= 10.0:
            return f(count - _btrs(u, count, qprob, f))
        return f(count - _binomial_inversion(u, count, qprob, f, log1p))
    return math.nan


def binomial(st: State, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """Binomial samples of ``count`` trials with probabilities ``prob`` (same float dtype, broadcast together),
    drawn in row-major order of the broadcast shape, in that dtype."""
    shape = np.broadcast_shapes(count.shape, prob.shape)
    f32 = count.dtype == np.float32
    f, log1p = (_f32, _log1pf) if f32 else (_same, math.log1p)
    counts = np.broadcast_to(count, shape).reshape(-1).tolist()
    probs = np.broadcast_to(prob, shape).reshape(-1).tolist()
    for n, p in zip(counts, probs):
        if n != n and 0 < p < 1:   # PyTorch's inversion loop never ends there (geom_sum > nan is never true)
            raise RuntimeError("binomial: count is nan (PyTorch's sampler does not terminate for it)")
    u = _uniform_sampler(st)
    out = [_sample_binomial(u, n, p, f, log1p) for n, p in zip(counts, probs)]
    return np.array(out, dtype=np.float64).astype(count.dtype).reshape(shape)


_C0331 = float(np.float32(0.0331))     # the float literals of sample_gamma, widened to double
_THIRD32 = float(np.float32(1.0) / np.float32(3.0))


def _sample_gamma(u, normal, alpha: float, f) -> float:
    """Marsaglia and Tsang's method (alpha < 1 boosted by one), as PyTorch's sample_gamma<scalar_t, double>."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        scale *= _cpow(1 - u(), f(1.0 / alpha))
        alpha = f(alpha + 1.0)
    d = f(alpha - _THIRD32)
    c = 1.0 / math.sqrt(9.0 * d) if d > 0 else (math.inf if d == 0 else math.nan)
    while True:
        while True:
            x = normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        uu = 1 - u()
        xx = x * x
        if uu < 1.0 - _C0331 * xx * xx:
            return scale * d * v
        if _clog(uu) < 0.5 * xx + d * (1.0 - v + _clog(v)):
            return scale * d * v


def _cpow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except (OverflowError, ValueError):   # C's pow: inf on overflow, nan for a negative base
        return float(np.power(x, y))


def _normal_sampler(st: State):
    def n() -> float:
        return float(_normal_pairs(st, 1, 0.0, 1.0)[0])
    return n


def _clamp_min(lo: float, v: float) -> float:
    """std::max(lo, v): lo unless lo < v (so a nan gives lo)."""
    return v if lo < v else lo


def standard_gamma(st: State, alpha: np.ndarray) -> np.ndarray:
    """Gamma(alpha, 1) samples in alpha's dtype (float32/64), in row-major order, at least the dtype's smallest
    normal number (PyTorch's clamp, which also turns a nan into it)."""
    f32 = alpha.dtype == np.float32
    f = _f32 if f32 else _same
    tiny = float(np.finfo(alpha.dtype).tiny)
    u, n = _uniform_sampler(st), _normal_sampler(st)
    out = [_clamp_min(tiny, f(_sample_gamma(u, n, a, f))) for a in alpha.reshape(-1).tolist()]
    return np.array(out, dtype=np.float64).astype(alpha.dtype).reshape(alpha.shape)


def dirichlet(st: State, alpha: np.ndarray) -> np.ndarray:
    """Dirichlet samples along alpha's last axis: double gammas (row-major), divided by their sum along the
    axis, then cast and kept in [tiny, the float below 1]."""
    u, n = _uniform_sampler(st), _normal_sampler(st)
    g = [_clamp_min(2.2250738585072014e-308, _sample_gamma(u, n, a, _same)) for a in alpha.reshape(-1).tolist()]
    gamma = np.array(g, dtype=np.float64).reshape(alpha.shape)
    ratio = (gamma / _row_sums(gamma.reshape(-1, gamma.shape[-1])).reshape(gamma.shape[:-1] + (1,))).astype(alpha.dtype)
    one = alpha.dtype.type(1)
    hi = np.nextafter(one, alpha.dtype.type(0))
    lo = np.finfo(alpha.dtype).tiny
    ratio = np.where(ratio < lo, lo, ratio)      # std::max(min, x), std::min(max, x): a nan becomes lo
    ratio = np.where(np.isnan(ratio), lo, ratio)
    return np.where(hi < ratio, hi, ratio)


# ----- PyTorch's float64 sum over a contiguous last axis (aten/src/ATen/native/cpu/SumKernel.cpp), bit for bit ------
# _sample_dirichlet normalises by ``gamma.sum(-1)``: rows of at least one SIMD vector are summed as vectors (four
# interleaved vector accumulators, cascaded every 16 steps), the tail and the lanes added after; shorter rows
# with four interleaved scalar accumulators.

_LANES = 4   # doubles per vector in PyTorch's sum kernel (measured: 4 on an AVX-512 machine too)


def _multi_row_sum(x: np.ndarray) -> np.ndarray:
    """PyTorch's multi_row_sum over axis 1 of ``x`` (rows, size, ...): 4 cascade levels of 16 steps."""
    size = x.shape[1]
    power = max(4, (max(size - 1, 1).bit_length() if size > 2 else 1) // 4)
    step, mask = 1 << power, (1 << power) - 1
    acc = [np.zeros((x.shape[0],) + x.shape[2:]) for _ in range(4)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] = acc[0] + x[:, i]
            i += 1
        for j in range(1, 4):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = np.zeros_like(acc[j - 1])
            if i & (mask << (j * power)):
                break
    for k in range(i, size):
        acc[0] = acc[0] + x[:, k]
    for j in range(1, 4):
        acc[0] = acc[0] + acc[j]
    return acc[0]


def _row_sum(x: np.ndarray) -> np.ndarray:
    """PyTorch's row_sum over axis 1 of ``x`` (rows, size, ...): 4 interleaved accumulators, the rest into the
    first, then the four added in order."""
    size = x.shape[1]
    n4 = size // 4
    part = _multi_row_sum(x[:, :n4 * 4].reshape((x.shape[0], n4, 4) + x.shape[2:]))   # (rows, 4, ...)
    p0 = part[:, 0]
    for k in range(n4 * 4, size):
        p0 = p0 + x[:, k]
    for k in range(1, 4):
        p0 = p0 + part[:, k]
    return p0


def _row_sums(x: np.ndarray) -> np.ndarray:
    """Sums of the rows of the float64 matrix ``x`` as PyTorch's CPU sum(-1) adds them."""
    rows, n = x.shape
    if n < _LANES:
        return _row_sum(x)
    nv = n // _LANES
    vec = _row_sum(x[:, :nv * _LANES].reshape(rows, nv, _LANES))     # (rows, lanes)
    total = np.zeros(rows)
    for k in range(nv * _LANES, n):
        total = total + x[:, k]
    for k in range(_LANES):
        total = total + vec[:, k]
    return total
