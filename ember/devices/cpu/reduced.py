"""Reduced-precision floats on the CPU: float16 (NumPy's) and bfloat16 (the optional ml_dtypes package's).

PyTorch's CPU kernels compute both in float32 (their "opmath" type) and round once to the tensor's dtype. NumPy's
float16 loops mostly do the same per operation, ml_dtypes' bfloat16 loops too (each ufunc computes in float32 and
rounds), but a kernel of several NumPy operations rounds after each one, and NumPy's reductions and matmul on
bfloat16 round at every step (or run slowly): the kernels here route such work through float32. NumPy gives
ml_dtypes' types kind 'V', not 'f'.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..order import insertion_order

try:
    import ml_dtypes as _ml
    BF16 = np.dtype(_ml.bfloat16)
except ImportError:   # optional: bfloat16 tensors then cannot be made (ember/_dtype.py says so)
    _ml = None
    BF16 = None

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
# the reduced-precision float dtypes; their scalar types (what a 0-d result of a NumPy op may be)
REDUCED = frozenset(d for d in (F16, BF16) if d is not None)
SCALAR_TYPES = tuple(d.type for d in (F16, BF16) if d is not None)


def finfo(dtype):
    """np.finfo, also for bfloat16 (ml_dtypes' finfo)."""
    return _ml.finfo(dtype) if BF16 is not None and np.dtype(dtype) == BF16 else np.finfo(dtype)


def in_float32(kernel=None, *, dtypes=REDUCED):
    """``kernel`` with its first argument computed in float32 and the result rounded once to that argument's
    dtype when it is one of ``dtypes`` (float16 or bfloat16: PyTorch's opmath)."""
    if kernel is None:
        return functools.partial(in_float32, dtypes=dtypes)

    @functools.wraps(kernel)
    def fn(x, *args, **kwargs):
        dt = x.dtype
        if dt in dtypes:
            return kernel(x.astype(F32), *args, **kwargs).astype(dt)
        return kernel(x, *args, **kwargs)
    return fn


def all_in_float32(fn=None, *, dtypes=REDUCED):
    """``fn`` with every array argument of one of ``dtypes`` (float16 and bfloat16) computed in float32 and the
    result (an array or a tuple of arrays) rounded once to the first such argument's dtype."""
    if fn is None:
        return functools.partial(all_in_float32, dtypes=dtypes)

    @functools.wraps(fn)
    def k(*args, **kwargs):
        low = None
        for a in args:
            low = getattr(a, "dtype", None)
            if low in dtypes:
                break
        else:
            return fn(*args, **kwargs)
        args = tuple(a.astype(F32) if getattr(a, "dtype", None) in dtypes else a for a in args)
        r = fn(*args, **kwargs)
        return tuple(x.astype(low) for x in r) if isinstance(r, tuple) else r.astype(low)
    return k


# bfloat16 only: float16 keeps NumPy's own float16 loops where ember's float16 results were checked with them
BF16_ONLY = frozenset(d for d in (BF16,) if d is not None)


# ----- float8 (issue 18): PyTorch's conversions, which ml_dtypes' casts differ from at the edges -------------
# PyTorch converts every value to and from float8 through float32 (a double or an int64 is rounded to float32
# first); float32 -> float8 rounds to nearest even as ml_dtypes does, except that e4m3fn saturates (a finite
# overflow and inf give +-448, ml_dtypes gives NaN), e5m2's NaN is 0x7f (ml_dtypes 0x7e), and e8m0fnu has its
# own rounding of the exponent (c10::detail::fp8e8m0fnu_from_fp32_value). The one NaN of the fnuz types and
# e8m0fnu is positive, and 0 in an integer. NaN payloads are NumPy's (PyTorch keeps float8's mantissa bits).
F8 = frozenset(np.dtype(getattr(_ml, n)) for n in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                                                      "float8_e5m2fnuz", "float8_e8m0fnu")) if _ml is not None \
    else frozenset()
_NAN_TO_ZERO = frozenset(("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"))


def to_float8(x, dtype):
    """``x`` (no complex) converted to the float8 ``dtype`` as PyTorch converts."""
    f = x.astype(F32, copy=False)
    name = dtype.name
    if name == "float8_e8m0fnu":   # the float32 exponent, rounded on the mantissa's guard, round and sticky bits
        bits = f.view(np.uint32)
        exp = (bits >> 23) & 0xFF
        g = (bits & 0x400000) != 0
        up = g & (((bits & 0x3FFFFF) != 0) | (exp > 0))
        return np.where(exp == 0xFF, 0xFF, exp + up).astype(np.uint8).view(dtype)
    if name == "float8_e4m3fn":
        f = np.clip(f, -448.0, 448.0)   # saturates; NaN stays NaN
    out = f.astype(dtype)
    if name == "float8_e5m2":
        nan = np.isnan(f)
        if nan.any():
            b = out.view(np.uint8)
            b[nan] = 0x7F | (np.signbit(f[nan]).astype(np.uint8) << 7)
    return out


def float8_scalar(value, dtype):
    """A Python number as a 0-d array of the float8 ``dtype``, converted as PyTorch converts (through float32)."""
    return to_float8(np.asarray(value, np.float64), np.dtype(dtype))


def from_float8(x, dtype):
    """The float8 array ``x`` converted to ``dtype`` (any) as PyTorch converts: through float32."""
    f = x.astype(F32)
    if x.dtype.name in _NAN_TO_ZERO:   # their one NaN reads as a positive NaN (ml_dtypes: negative), 0 in an integer
        f[np.isnan(f)] = 0 if dtype.kind in "iu" else np.nan
    if dtype in F8:
        return to_float8(f, dtype)
    return f.astype(dtype, copy=False)


# PyTorch's cpu_kernel_vec (aten/src/ATen/native/cpu/Loops.h) runs an elementwise op's Vectorized<BFloat16> lambda
# on whole steps of two vectors of each inner row and its scalar lambda on the rest of the row, and on every element
# of a row whose operands are neither contiguous nor a broadcast number. Where the two lambdas round differently (the
# vector one computes in float and rounds once, the scalar one rounds c10::BFloat16 math such as std::sqrt to
# bfloat16 first), the element's position decides its value. Most kernels are registered for AVX2 only
# (REGISTER_DISPATCH without ALSO_REGISTER_AVX512_DISPATCH), so even on AVX512 a vector holds 16 bfloat16: a step
# is 32 elements (measured on torch 2.13: rsqrt of 300 elements rounds once up to 288).
SIMD_STEP = 32


def _iter_order(shape, strides):
    """TensorIterator's reorder_dimensions: the dimensions fastest first, by the operands' strides (a broadcast
    dimension of an operand says nothing; equal strides put the smaller size first)."""
    def should_swap(d0, d1):
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0
    return insertion_order(len(shape), should_swap)


def simd_positions(shape, *xs, step: int = SIMD_STEP):
    """A bool array of ``shape`` (the broadcast shape of the operands ``xs``), True where PyTorch's cpu_kernel_vec
    takes its Vectorized path for a bfloat16 op of ``xs`` into a new output; None where no element does. The
    dimensions are ordered and coalesced as TensorIterator does (the new output follows the inputs' layout); one
    thread (a loop over more than 32768 elements on several threads splits its rows where the threads' ranges
    start)."""
    shape = tuple(shape)
    size = math.prod(shape)
    if size < step:
        return None
    ops = [np.broadcast_to(x, shape) for x in xs if isinstance(x, np.ndarray)]
    strides = [[s // o.itemsize if n > 1 else 0 for s, n in zip(o.strides, shape)] for o in ops]
    perm = [d for d in _iter_order(shape, strides) if shape[d] != 1]   # size-1 dimensions coalesce with anything
    if not perm:
        return None
    out = {}
    acc = 1
    for d in perm:   # the output, allocated in that order
        out[d], acc = acc, acc * shape[d]
    strides.append([out.get(d, 0) for d in range(len(shape))])
    inner, row, k = perm[0], shape[perm[0]], 1
    while k < len(perm) and all(st[perm[k]] == st[perm[k - 1]] * shape[perm[k - 1]] for st in strides):
        row *= shape[perm[k]]
        k += 1
    steps = [st[inner] for st in strides[:-1]]
    if not (all(v == 1 for v in steps) or (sum(v == 0 for v in steps) == 1 and all(v in (0, 1) for v in steps))):
        return None   # basic_loop: the scalar lambda everywhere
    cut = row // step * step
    if cut == 0:
        return None
    # the flat position of each element along its row: the coalesced dimensions, fastest first
    pos = np.zeros(shape, dtype=np.int64)
    acc = 1
    for d in perm[:k]:
        idx = np.arange(shape[d]).reshape([-1 if j == d else 1 for j in range(len(shape))])
        pos = pos + idx * acc
        acc *= shape[d]
    return pos < cut


def round_half_away(x):
    """float32 ``x`` rounded to bfloat16 with ties away from zero (FBGEMM's conversion: add half an ulp, truncate),
    not to even as ml_dtypes' (and PyTorch's own) conversion."""
    bits = (x.view(np.uint32) + np.uint32(0x8000)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), x, bits.view(np.float32)).astype(BF16)
