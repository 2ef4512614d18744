"""``add(alpha=)``'s kernel for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace): ``a + alpha*b``
rounded once, as PyTorch's CPU kernel computes it (a fused multiply-add, ``vec::fmadd``), and the exact float64
fused multiply-add it needs.

float32 uses the optimizers' exact ``fma`` (ember/devices/cpu/optim.py). float64 has no wider NumPy type to
compute in, so ``fma64`` is error-free arithmetic: Dekker's exact product (Veltkamp's splitting), exact sums
(TwoSum), and a final rounding made exact by rounding the small part to odd first (Boldo and Melquiond's
round-to-odd argument: an odd last bit never sits on a rounding midpoint of the larger part). The few elements
where that arithmetic could overflow or underflow are computed with exact rational arithmetic, element by element.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .optim import _TINY_PRODUCT, _fma_block, _round_odd_fix, _scratch_arrays
from .reduced import REDUCED as _REDUCED

__all__ = ["add_alpha"]

_F64 = np.dtype(np.float64)
_U64 = np.uint64
_SPLIT = 134217729.0          # 2**27 + 1: Veltkamp's constant, splits a double into two 26-bit halves
_CHUNK = 16384                # elements per block: the temporaries stay in the CPU cache
# Bounds of the error-free path (see fma64): no overflow in the splitting (|x| * 2**27) or in the sums, and the
# product's exact error and every partial sum representable (no bits below float64's subnormal unit 2**-1074).
_BIG_FACTOR = 2.0 ** 995
_BIG_TERM = 2.0 ** 1021
_SMALL_PRODUCT = 2.0 ** -960
_SMALL_SUM = 2.0 ** -1000


def _exact(x: float, y: float, z: float) -> float:
    """``x*y + z`` rounded once, by rational arithmetic (the rare elements the vectorised path leaves)."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y + z                 # an infinite or NaN product is exact: IEEE's rules as they are
    if not math.isfinite(z):
        return z                         # a finite exact product (even one beyond float64's range) beside inf/nan
    v = Fraction(x) * Fraction(y) + Fraction(z)
    if v == 0:
        # an exact zero product keeps IEEE's signed-zero sum; a cancellation of nonzero terms is +0 (round to nearest)
        return x * y + z if (x == 0 or y == 0) else 0.0
    try:
        return v.numerator / v.denominator   # correctly rounded (CPython's integer true division), subnormals too
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _split(v):
    c = v * _SPLIT
    hi = c - (c - v)
    return hi, v - hi


def _two_sum(a, b, s):
    """The exact error of ``s = a + b`` (s already computed): ``a + b == s + err``."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


def _fma64_block(x, y, z, out) -> None:
    """``out = x*y + z`` rounded once on one block: x a float or an array, y and z arrays (1-D, one size)."""
    ph = x * y
    s = ph + z                                   # the plain two-rounding result
    xh, xl = _split(x)                           # (a Python float: the same IEEE arithmetic)
    yh, yl = _split(y)
    pl = ((xh * yh - ph) + xh * yl + xl * yh) + xl * yl    # Dekker: ph + pl == x*y exactly
    t = _two_sum(ph, z, s)                       # s + t == ph + z
    u = t + pl
    w = _two_sum(t, pl, u)                       # u + w == t + pl: x*y + z == s + u + w
    h = s + u
    lo = _two_sum(s, u, h)                       # h + lo == s + u, |lo| <= ulp(h)/2; |lo + w| < 3 ulp(h) where lo != 0
    r = lo + w
    e = _two_sum(lo, w, r)
    # r rounded to odd: a nonzero error moves an even last bit one unit toward the exact value, so r + e's
    # relation to every rounding midpoint of h's format is kept and h + r rounds as the exact sum would
    bits = r.view(_U64)
    move = (e != 0) & ((bits & _U64(1)) == 0)
    if move.any():
        away = move & ((e > 0) == (r > 0))
        np.add(bits, _U64(1), out=bits, where=away)
        np.subtract(bits, _U64(1), out=bits, where=move & ~away)
    np.add(h, r, out=out)
    # where the error-free arithmetic may fail: plain IEEE (exact zero product, inf/nan operands) or exact rationals
    ax = abs(x)
    aph = np.abs(ph)
    if aph.min() >= _SMALL_PRODUCT and aph.max() < _BIG_TERM and np.abs(s).min() >= _SMALL_SUM \
            and np.abs(z).max() < _BIG_TERM and np.abs(y).max() < _BIG_FACTOR \
            and (ax.max() if isinstance(x, np.ndarray) else ax) < _BIG_FACTOR:
        return   # the common block: every element inside the bounds (a NaN fails every comparison)
    ay = np.abs(y)
    az = np.abs(z)
    zero = (ax == 0) | (ay == 0) if isinstance(x, np.ndarray) else ((ay == 0) if ax != 0 else None)
    if zero is None:                             # x == 0: every product is an exact zero
        out[...] = s
        return
    risky = ~((aph >= _SMALL_PRODUCT) & (aph < _BIG_TERM) & (az < _BIG_TERM) & (ay < _BIG_FACTOR)
              & ((np.abs(s) >= _SMALL_SUM) | (s == 0)))
    if isinstance(x, np.ndarray):
        risky |= ax >= _BIG_FACTOR
    elif ax >= _BIG_FACTOR:
        risky[...] = True
    # IEEE's own arithmetic is exact where the product is: a zero, an infinity or NaN, and beside an infinite z
    plain = zero | ~np.isfinite(y) | (~np.isfinite(z) & np.isfinite(ph))
    if isinstance(x, np.ndarray):
        plain |= ~np.isfinite(x)
    elif not math.isfinite(x):
        plain[...] = True
    risky &= ~plain
    if plain.any():
        np.copyto(out, s, where=plain)
    if risky.any():
        idx = np.flatnonzero(risky)
        xs = x[idx].tolist() if isinstance(x, np.ndarray) else [float(x)] * idx.size
        out[idx] = [_exact(a, b, c) for a, b, c in zip(xs, y[idx].tolist(), z[idx].tolist())]


_LOW29 = _U64(0x1FFFFFFF)     # the float64 significand bits below float32's
_MID = _U64(0x10000000)       # ... of a float32 rounding midpoint
_TINY32 = 2.0 ** -126         # float32's smallest normal: below it float32 keeps fewer bits


def _add_alpha32(a: np.ndarray, b: np.ndarray, al: float) -> np.ndarray:
    """float32 ``a + al*b`` rounded once (al a float32 value). The product of two float32 numbers is exact in
    float64 and the float64 sum is rounded once; rounding that to float32 again differs from one rounding only
    where the float64 sum sits exactly on a float32 midpoint, or near float32's subnormal range (other
    midpoints). Those rare elements are redone with round-to-odd: large arrays go block by block through the
    optimizers' kernel (devices/cpu/optim.py ``_fma_block``)."""
    if a.size <= _SMALL32 and b.size <= _SMALL32:
        # small arrays: whole-array operations (fewer calls)
        t = b.astype(np.float64)
        t *= al                                         # exact
        t = t + a                                       # rounded once
        out = t.astype(np.float32)
        if ((t.view(_U64) & _LOW29) == _MID).any() or (out.size and np.abs(out).min() <= _TINY32):
            flags = ((np.abs(t) <= _TINY32) & (t != 0)) | ((t.view(_U64) & _LOW29) == _MID)
            idx = np.flatnonzero(flags)
            tf = t.reshape(-1)
            _round_odd_fix(tf, al, np.broadcast_to(b, t.shape).reshape(-1).astype(np.float64),
                           np.broadcast_to(a, t.shape).reshape(-1), idx)
            out.reshape(-1)[idx] = tf[idx]
        return out
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape, np.float32)
    n = out.size
    af, bf = (v.reshape(-1) if v.shape == shape and v.flags.c_contiguous else
              np.ascontiguousarray(np.broadcast_to(v, shape)).reshape(-1) for v in (a, b))
    o = out.reshape(-1)
    step = min(n, _CHUNK32)
    bufs = _scratch_arrays(step)
    bound = _TINY_PRODUCT / abs(al) if al != 0 else 0.0
    for i in range(0, n, step):
        # (the optimizers' block kernel: b*al + a in float64, the rare double roundings redone)
        _fma_block(None, al, bf[i:i + step], af[i:i + step], o[i:i + step], bufs, bound)
    return out


_CHUNK32 = 131072
_SMALL32 = 4096


def fma64(x, y, z) -> np.ndarray:
    """``x * y + z`` rounded once in float64 (IEEE's fusedMultiplyAdd): x a number or an array, y and z arrays;
    they broadcast together. A new float64 array."""
    arrays = [v for v in (x, y, z) if isinstance(v, np.ndarray)]
    shape = np.broadcast_shapes(*(v.shape for v in arrays))
    xs = np.ascontiguousarray(np.broadcast_to(x, shape), _F64).reshape(-1) if isinstance(x, np.ndarray) else float(x)
    ys, zs = (np.ascontiguousarray(np.broadcast_to(v, shape), _F64).reshape(-1) for v in (y, z))
    out = np.empty(shape, _F64)
    o = out.reshape(-1)
    with np.errstate(all="ignore"):
        for i in range(0, o.size, _CHUNK):
            j = i + _CHUNK
            _fma64_block(xs[i:j] if isinstance(xs, np.ndarray) else xs, ys[i:j], zs[i:j], o[i:j])
    return out


def _complex_scaled(b, alpha: complex):
    """``alpha * b`` for a complex array ``b``, with PyTorch's complex product (real part ``br*ar - bi*ai``,
    imaginary part ``bi*ar + br*ai``), which NumPy's may not round alike."""
    rt = b.real.dtype.type
    ar, ai = rt(alpha.real), rt(alpha.imag)
    r = np.empty_like(b)
    r.real = b.real * ar - b.imag * ai
    r.imag = b.imag * ar + b.real * ai
    return r


_SIMD_STEP16 = 32   # elements per step of PyTorch's vectorised CPU loop for 16-bit floats (two vectors of 16)


def _simd_remainder(shape: tuple, *operand_shapes: tuple):
    """Which elements of a result of ``shape`` PyTorch's CPU loop for 16-bit floats computes in its scalar
    remainder (None: none): its TensorIterator merges the dimensions the operands (broadcast, C-contiguous) walk
    alike into one inner run; each run is done in steps of 32 elements and its last ``len % 32`` are left over."""
    shape = tuple(shape)
    nd = len(shape)

    def strides(s):
        s = (1,) * (nd - len(s)) + tuple(s)
        st, acc = [0] * nd, 1
        for d in range(nd - 1, -1, -1):
            st[d] = acc if s[d] != 1 else 0
            acc *= s[d]
        return st

    all_st = [strides(shape)] + [strides(s) for s in operand_shapes]
    run = 1
    for d in range(nd - 1, -1, -1):
        if shape[d] == 1:
            continue
        if run > 1 and not all(st[d] == st_inner for st, st_inner in
                               zip(all_st, (_inner_stride(st, shape, d) for st in all_st))):
            break
        run *= shape[d]
    if run % _SIMD_STEP16 == 0:
        return None
    pos = np.arange(math.prod(shape)).reshape(shape) % run
    return pos >= run - run % _SIMD_STEP16


def _inner_stride(st: list, shape: tuple, d: int) -> int:
    """The stride dimension ``d`` must have to merge with the (merged) dimensions inside it: the innermost
    non-1 dimension's stride times the merged size so far."""
    inner = [k for k in range(d + 1, len(shape)) if shape[k] != 1]
    k = inner[-1] if inner else d
    return st[k] * math.prod(shape[k2] for k2 in inner)


def add_alpha(a, b, alpha):
    """``a + alpha * b`` as PyTorch's CPU kernel computes it (a and b of the result dtype, b maybe a Python
    number; ``alpha`` a Python number, already checked and fitted to the dtype): one rounding for float32 and
    float64 (a fused multiply-add), float16/bfloat16 computed in float32 with ``alpha`` rounded to their dtype
    first, complex with PyTorch's complex product then a sum, integers exact (wrapping)."""
    dt = a.dtype
    if not isinstance(b, np.ndarray):
        b = np.asarray(b, dt)
    kind = dt.kind
    if kind == "f" and dt.itemsize == 8:
        return fma64(float(alpha), b, a)
    if kind == "f" and dt.itemsize == 4:
        return _add_alpha32(a, b, float(np.float32(alpha)))
    if dt in _REDUCED or (kind == "f" and dt.itemsize == 2):
        # opmath: float32, with alpha rounded to the tensor's dtype (the product of two 16-bit numbers is exact);
        # PyTorch's scalar remainder loop rounds the product to the dtype first
        f32 = np.float32
        af, p = a.astype(f32), f32(dt.type(alpha)) * b.astype(f32)
        r = np.asarray(af + p).astype(dt)
        tail = _simd_remainder(r.shape, a.shape, b.shape)
        if tail is not None:
            r[tail] = (np.broadcast_to(af, r.shape)[tail] + np.broadcast_to(p.astype(dt), r.shape)[tail]).astype(dt)
        return r
    if kind == "c":
        return a + (_complex_scaled(b, complex(alpha)) if type(alpha) is complex else b * dt.type(alpha))
    if kind == "b":
        return a | (b & bool(alpha))
    return a + b * dt.type(alpha)
