"""Reduced-precision floats on the CPU: float16 (NumPy's) and bfloat16 (the optional ml_dtypes package's).

PyTorch's CPU kernels compute both in float32 (their "opmath" type) and round once to the tensor's dtype. NumPy's
float16 loops mostly do the same per operation, ml_dtypes' bfloat16 loops too (each ufunc computes in float32 and
rounds), but a kernel of several NumPy operations rounds after each one, and NumPy's reductions and matmul on
bfloat16 round at every step (or run slowly): the kernels here route such work through float32. NumPy gives
ml_dtypes' types kind 'V', not 'f'.
"""
from __future__ import annotations

import functools

import numpy as np

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


def round_half_away(x):
    """float32 ``x`` rounded to bfloat16 with ties away from zero (FBGEMM's conversion: add half an ulp, truncate),
    not to even as ml_dtypes' (and PyTorch's own) conversion."""
    bits = (x.view(np.uint32) + np.uint32(0x8000)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), x, bits.view(np.float32)).astype(BF16)
