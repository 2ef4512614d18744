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


# PyTorch's cpu_kernel_vec (aten/src/ATen/native/cpu/Loops.h) runs an elementwise op's Vectorized<BFloat16> lambda
# on whole steps of two vectors (2 * 32 elements with AVX512, ``torch.backends.cpu.get_cpu_capability()``) of each
# inner row and its scalar lambda on the rest of the row, and on every element of a row whose operands are neither
# contiguous nor a broadcast number. Where the two lambdas round differently (the vector one rounds every step to
# bfloat16, the scalar one often computes in float), the element's position decides its value.
SIMD_STEP = 64


def simd_positions(shape, *xs):
    """A bool array of ``shape`` (the broadcast shape of the operands ``xs``), True where PyTorch's cpu_kernel_vec
    takes its Vectorized path for a bfloat16 op of ``xs`` into a new contiguous output; None where no element does.
    The row is TensorIterator's inner dimension after coalescing (coalesce_dimensions); one thread (a loop over
    more than 32768 elements on several threads splits its rows where the threads' ranges start)."""
    shape = tuple(shape)
    size = math.prod(shape)
    if size < SIMD_STEP:
        return None
    ops = [np.broadcast_to(x, shape) if isinstance(x, np.ndarray) else None for x in xs]
    ops = [o for o in ops if o is not None]
    out_strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    strides = [out_strides] + [[s // o.itemsize for s in o.strides] for o in ops]
    dims = [d for d in range(len(shape)) if shape[d] != 1]   # size-1 dimensions coalesce with anything
    if not dims:
        return None
    row, inner = shape[dims[-1]], dims[-1]
    for d in reversed(dims[:-1]):
        if any(st[d] != st[inner] * row for st in strides):
            break
        row *= shape[d]
    steps = [st[inner] for st in strides[1:]]
    if not (all(s == 1 for s in steps) or (sum(s == 0 for s in steps) == 1 and all(s in (0, 1) for s in steps))):
        return None   # basic_loop: the scalar lambda everywhere
    cut = row // SIMD_STEP * SIMD_STEP
    if cut == 0:
        return None
    return np.broadcast_to(np.arange(row) < cut, (size // row, row)).reshape(shape)
