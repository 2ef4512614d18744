"""The optimizers' fused multiply-add, written once in Python array API standard operations (any device).

PyTorch's CPU kernels for ``add(alpha=)``, ``addcmul`` and ``lerp`` compute ``x*y + z`` rounded once. For float32
the product of two float32 numbers is exact in float64, so ``x*y + z`` in float64 is rounded once there; rounding
that to float32 is a second rounding, which differs from the single rounding only where the float64 sum lands
exactly on a float32 rounding midpoint (float32's numbers and midpoints, subnormal ones included, are all float64
numbers, and rounding is monotonic). Those elements are found with ``nextafter`` and moved to the neighbour the
exact sum lies towards (the TwoSum error of the float64 sum says which). Wider dtypes round twice (float64: the
plain ``x*y + z``), as NumPy has no wider type.

``ember/devices/cpu/optim.py`` overrides ``fma`` with a NumPy version that gives the same bits faster (bit masks on
a float64 scratch block, ``out=``); tests/test_optim.py checks the two against each other.
"""
from __future__ import annotations

__all__ = ["fma", "fma_lerp_"]

_TWO128 = 2.0 ** 128   # the float32 number after the largest, were there one: the bound of float32's overflow midpoint


def _is_array(v) -> bool:
    return hasattr(v, "shape")   # a library array (the numbers are Python's: the namespace's boundary made them so)


def _fma32(xp, x, y, z):
    """``x*y + z`` rounded once to float32: x, y numbers or arrays of at most float32 precision, z an array."""
    f32, f64 = xp.float32, xp.float64

    def wide(v):  # a number is rounded to float32 first (the computation's dtype), as PyTorch's kernel does
        return xp.astype(v, f64) if _is_array(v) else xp.astype(xp.asarray(float(v), dtype=f32), f64)

    p = wide(x) * wide(y)                       # exact: at most 48 significant bits
    zw = xp.astype(z, f64)
    t = p + zw                                  # rounded once, in float64
    r = xp.astype(t, f32)                       # rounded again: wrong only where t is a float32 midpoint
    bb = t - zw
    err = (zw - (t - bb)) + (p - bb)            # TwoSum: t + err == p + zw exactly
    r64 = xp.astype(r, f64)
    finite = xp.isfinite(t)
    # an overflow to inf stands for 2**128 (the midpoint below it is float64's, and rounds up to inf)
    two128 = xp.asarray(_TWO128, dtype=f64)
    r64 = xp.where(xp.isinf(r64) & finite, xp.where(t > 0, two128, -two128), r64)
    inf = xp.asarray(float("inf"), dtype=f32)
    other = xp.nextafter(r, xp.where(t > r64, inf, -inf))   # r's float32 neighbour on t's side
    o64 = xp.astype(other, f64)
    on_mid = finite & (err != 0) & (t == (r64 + o64) / 2)  # (exact: both are float32 numbers or 2**128)
    return xp.where(on_mid & ((err > 0) == (o64 > r64)), other, r)


def fma(x, y, z, out=None, xp=None):
    """``x * y + z`` rounded once for float32 (x, y numbers or arrays, z an array); written into ``out`` if given,
    else a new array. Mixed dtypes compute in the promoted dtype, as PyTorch's kernels. ``xp``: the arrays'
    namespace (default: ``z.__array_namespace__()``; CuPy's arrays before v14 have no such method)."""
    xp = z.__array_namespace__() if xp is None else xp
    wide = xp.result_type(*(v for v in (x, y, z) if _is_array(v)))
    if wide == xp.float32 and (out is None or out.dtype == xp.float32):
        r = _fma32(xp, x, y, z)
    elif xp.finfo(wide).bits < 64:
        # numbers rounded to the computation's dtype (the arrays' promoted dtype), then float64
        x, y = (xp.astype(v, xp.float64) if _is_array(v) else
                xp.astype(xp.asarray(float(v), dtype=wide), xp.float64) for v in (x, y))
        r = x * y + xp.astype(z, xp.float64)
    else:
        x, y = (xp.astype(v, wide) if _is_array(v) else v for v in (x, y))
        r = x * y + z
    if out is None:   # out of place: the promoted dtype, as PyTorch's ``a.add(b, alpha=)``
        return xp.astype(r, wide)
    out[...] = xp.astype(r, out.dtype)
    return out


def fma_lerp_(a, end, weight: float, xp=None) -> None:
    """``a.lerp_(end, weight)`` for a Python number ``weight``, with PyTorch's two-sided formula (exact at both
    ends: ``a + w*(end - a)`` below one half, ``end - (1 - w)*(end - a)`` from there), each a fused
    multiply-add. ``end`` has ``a``'s dtype (the caller checks)."""
    xp = a.__array_namespace__() if xp is None else xp
    if abs(weight) < 0.5:
        fma(weight, end - a, a, out=a, xp=xp)
    else:
        # (1 - w) in the arrays' dtype where that is narrower than a Python float, as PyTorch's kernel
        narrow = xp.finfo(a.dtype).bits < 64
        fma(-(end - a), 1 - xp.asarray(weight, dtype=a.dtype) if narrow else 1 - weight, end, out=a, xp=xp)
