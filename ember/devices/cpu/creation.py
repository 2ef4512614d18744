"""NumPy kernels of tensor creation for device 'cpu' (reached as ``backend.<name>``, see namespace.py's _Backend).

``ember/ops/creation.py`` checks the arguments with PyTorch's errors and calls these for the arrays: ranges,
evenly spaced values to PyTorch's last bit, identity matrices, triangle indices, and the conversion of host data
(nested Python numbers, NumPy arrays and scalars) to arrays. The CPU is the host: its arrays are NumPy's.
"""
from __future__ import annotations

import numpy as np

from .libm import fma64


def isfinite(v) -> bool:
    """Whether a Python number is finite (NumPy's TypeError for integers beyond 64 bits)."""
    return bool(np.isfinite(v))


def element_types(data) -> set:
    """The types of the numbers in nested data (C loops: cheap even for long lists)."""
    return set(map(type, np.array(data, dtype=object).ravel()))


def base_array(a: np.ndarray) -> np.ndarray:
    """An ndarray subclass (np.memmap, np.matrix, masked arrays) as a plain ndarray over the same memory:
    ops find a tensor's device namespace by the exact type of its data, so only base ndarrays may be wrapped."""
    return a if type(a) is np.ndarray else a.view(np.ndarray)


def ints_fit(arr: np.ndarray, np_dtype) -> bool:
    """PyTorch's check of Python numbers given for an integral dtype (``tensor([inf], dtype=torch.int32)``): nan,
    inf and values out of the dtype's range do not fit (an unsigned type takes negative integers down to -max,
    which wrap, but no negative float)."""
    if np_dtype.kind not in "iu" or not arr.size:
        return True
    info = np.iinfo(np_dtype)
    if arr.dtype.kind in "fV":
        lo, hi = (0 if np_dtype.kind == "u" else info.min), info.max
        with np.errstate(invalid="ignore"):
            return bool(np.all((arr >= lo) & (arr <= hi)))   # nan compares False
    if arr.dtype.kind in "iu":
        lo = -int(info.max) if np_dtype.kind == "u" else int(info.min)
        return lo <= int(arr.min()) and int(arr.max()) <= info.max
    return True


def arange(start, end, step, n: int, np_dtype) -> np.ndarray:
    """``n`` values ``start + i * step`` (floating dtypes: computed in double), or NumPy's integer range."""
    if np_dtype.kind in "fV":
        data = start + np.arange(n, dtype=np.float64) * step
    else:
        data = np.arange(start, end, step)
    return data.astype(np_dtype)


def linspace(start, end, steps: int, np_dtype) -> np.ndarray:
    """PyTorch's CPU kernel to the last bit: ``start + step * i`` for the first half and
    ``end - step * (steps - 1 - i)`` for the second (so both ends are exact), each a fused multiply-add;
    floats compute in their own dtype (float16 in float32), integers in double, truncated (the bounds, checked,
    cast to the output type first)."""
    npd = np.dtype(np_dtype)
    if steps <= 1:
        return np.full(steps, start, dtype=np.float64).astype(npd)
    if npd.kind in "iub":
        # the bounds are cast to the output type first (truncated; negative integers wrap for uint8)
        s, e = (float(np.array(int(v)).astype(npd)) for v in (start, end))
        step = (e - s) / (steps - 1)
    else:
        work = np.float32 if npd == np.float16 else npd.type
        s, e = npd.type(start), npd.type(end)
        step = npd.type((work(e) - work(s)) / work(steps - 1))   # float16's step is rounded to float16
        s, e, step = float(s), float(e), float(step)
        if npd.kind == "V":   # bfloat16: PyTorch's kernel computes in bfloat16, each product and sum rounded
            i = np.arange(steps, dtype=np.float32)
            first = np.arange(steps) < steps // 2
            up = (np.float32(step) * i).astype(npd).astype(np.float32)
            down = (np.float32(step) * (steps - 1 - i)).astype(npd).astype(np.float32)
            return np.where(first, np.float32(s) + up, np.float32(e) - down).astype(npd)
    i = np.arange(steps, dtype=np.float64)
    first = np.arange(steps) < steps // 2
    with np.errstate(over="ignore", invalid="ignore"):
        if npd.kind in "fV" and npd.itemsize < 8:
            # the product of a float32 and a small integer is exact in float64: one rounding to float32
            out = np.where(first, s + step * i, e - step * (steps - 1 - i)).astype(np.float32)
        else:
            out = np.where(first, fma64(np.full(steps, step), i, np.full(steps, s)),
                           fma64(np.full(steps, -step), steps - 1 - i, np.full(steps, e)))
        return np.trunc(out).astype(npd) if npd.kind in "iub" else out.astype(npd)


def logspace(start, end, steps: int, base: float, np_dtype) -> np.ndarray:
    """``base ** linspace(start, end, steps)``, computed in double as PyTorch's CPU kernel (``start`` and ``end``
    first rounded to the output type, or truncated to integers)."""
    npd = np.dtype(np_dtype)
    if npd.kind in "fV":
        start, end = npd.type(start), npd.type(end)
    else:
        start, end = int(start), int(end)
    if steps == 1:
        data = np.full(1, float(base) ** float(start))
    else:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            step = (float(end) - float(start)) / (steps - 1)
            i = np.arange(steps, dtype=np.float64)
            expo = np.where(i < steps // 2, float(start) + step * i, float(end) - step * (steps - 1 - i))
            data = np.power(float(base), expo)
    with np.errstate(over="ignore", invalid="ignore"):
        return data[:steps].astype(np_dtype)


def tri_indices(upper: bool, row: int, col: int, offset: int, np_dtype) -> np.ndarray:
    """The (row, col) indices of the lower (upper) triangle of a ``row`` x ``col`` matrix, row by row, as a 2 x n
    array."""
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return np.stack([r, c]).astype(np_dtype).reshape(2, -1)


def kaiser_window(m: int, beta: float, np_dtype) -> np.ndarray:
    """PyTorch's kaiser_window kernel for ``arange(m)``: ``i0(beta sqrt(|1 - ((k - a) / a)^2|)) / i0(beta)``,
    a = (m - 1) / 2, in the dtype's opmath type (float for float16). Its ``1 - x * x`` is compiled as one fused
    multiply-add: float32 takes it in float64 (x * x is exact there), float64 through libm's fma."""
    from .bessel import i0   # the kernel module imports this one's neighbours; a local import keeps it light
    npd = np.dtype(np_dtype)
    work = np.float64 if npd == np.float64 else np.float32
    alpha = work((m - 1) / 2.0)
    b = np.array(beta, dtype=work)
    with np.errstate(all="ignore"):
        x = (np.arange(m, dtype=work) - alpha) / alpha
        if work is np.float32:
            inner = (1.0 - x.astype(np.float64) ** 2).astype(np.float32)
        else:
            inner = fma64(-x, x, np.ones_like(x))
        return (i0(b * np.sqrt(np.abs(inner))) / i0(b)).astype(npd)


def map_file(filename: str, shared: bool, size: int, dtype):
    """``size`` elements of ``dtype`` mapped from the start of a file (torch.from_file's storage), as a plain
    1-d array over the mapping: ``shared`` maps it MAP_SHARED (writes reach the file; a missing or short file is
    created or extended with zeros), else MAP_PRIVATE (copy on write; the file must hold the bytes). PyTorch's
    RuntimeErrors for a missing or short file."""
    import mmap
    import os
    dtype = np.dtype(dtype)
    nbytes = size * dtype.itemsize
    if nbytes < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory (12)")
    if shared:
        fd = os.open(filename, os.O_RDWR | os.O_CREAT, 0o644)
    else:
        try:
            fd = os.open(filename, os.O_RDONLY)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: {e.strerror} ({e.errno})") \
                from None
    try:
        have = os.fstat(fd).st_size
        if have < nbytes:
            if not shared:
                raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size "
                                   f"<{nbytes}>")
            os.ftruncate(fd, nbytes)
        if nbytes == 0:
            return np.zeros(0, dtype=dtype)
        mm = mmap.mmap(fd, nbytes, access=mmap.ACCESS_WRITE if shared else mmap.ACCESS_COPY)
    finally:
        os.close(fd)
    return np.frombuffer(mm, dtype=dtype, count=size)

