"""NumPy kernels of the optimizers and of torch.nn.utils for the raw 'cpu' namespace (re-exported by
ember.devices.cpu.namespace).

No derivative rule calls these: ember.optim updates parameters and state in place on their raw arrays, and
ember.nn.utils needs a few LAPACK pieces, through the namespace of the data's device
(``NAMESPACES[type(array)].fma``). graph_ns therefore has no twin of them (tests/test_namespaces.py leaves the
names in ``__all__`` here out of its comparison).

``fma`` is the one fused multiply-add kernel every optimizer's ``add_(alpha=)``, ``addcmul_`` and ``lerp_`` goes
through. ``fma`` and ``fma_lerp_`` are NumPy's fast overrides of the array-API kernels in
``ember/devices/common/optim.py`` (same bits: bit masks on a float64 scratch block instead of ``nextafter`` on
whole arrays; tests/test_optim.py compares them). ``adam_step_`` is Adam's whole update block by block, with the
same operations per element as ember/optim/adam.py's generic one.

Cost (bench/NOTES.md): a float32 fused multiply-add is about seven NumPy passes per block (cast, multiply, cast,
add, shift, minimum, cast) against NumPy's two for ``p -= lr * g``; that is the floor of exact emulation with NumPy.
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["adam_step_", "fma", "fma_lerp_"]


# PyTorch's CPU kernels for add(alpha=), addcmul and lerp use a fused multiply-add: x*y + z rounded once.
# For float32 the product of two float32 numbers is exact in float64, so ``x*y + z`` in float64 is rounded once
# there; rounding that to float32 is a second rounding, which differs from the single rounding only where the
# float64 sum lands exactly on a float32 rounding midpoint (or in float32's subnormal range). Those rare
# elements are found from the bits of the float64 sum and redone with round-to-odd (the TwoSum error decides
# the direction), which makes the float64 -> float32 rounding exact: ember's float32 steps equal PyTorch's to the
# bit. float64 keeps plain NumPy arithmetic (two roundings: within an ulp of PyTorch's), as NumPy has no fast
# wider type. (float16 parameters take the float64 route but NumPy rounds their scalars to float16 where
# PyTorch computes in float32: close, not exact.)
_CHUNK = 131072                   # elements per block (two float64 scratch buffers; larger blocks: fewer calls)
# A float32 rounding midpoint in float64 has the 29 mantissa bits below float32's set as 1 then 28 zeros: shifted to
# the top (<< 35), int64's unique minimum.
_INT64_MIN = -(1 << 63)
_TINY32 = 2.0 ** -126             # float32's smallest normal: below it float32 keeps fewer bits
# Below float32's smallest normal the midpoints are at other bits, but there the float64 sum is exact (so rounding
# it once more is the single rounding) unless a product x*y is nonzero and below 2**-131 in magnitude: z is a
# multiple of 2**-149 and x*y of 2**(ex+ey-46) (ex, ey the exponents of x, y), so a sum below 2**-125 needs more
# than float64's 53 bits only where ex + ey < -132, i.e. |x*y| < 2**-131. A block whose z has a nonzero element
# below 2**-125 has its operands (or products) checked for such products (``_TINY_PRODUCT``, with a margin), and
# only where one is found its subnormal results too.
# (Redoing more elements than needed is harmless: where the float64 sum is exact, round-to-odd leaves it alone.)
_TINY_PRODUCT = 2.0 ** -129
_SMALL_Z_BITS = 0x01000000        # the bit pattern of 2**-125 in float32
_SMALL_Z_INT = -(1 << 31) + _SMALL_Z_BITS   # ... and of -2**-125, as int32
_F32 = np.dtype(np.float32)
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT = {2: np.int16, 4: np.int32, 8: np.int64}
_scratch = threading.local()


def _scratch_arrays(n: int):
    """Per-thread reusable buffers of at least ``n`` elements and their views: a float64 block ``t`` (and its
    uint64 view) and an 8-byte one ``w`` (as uint64, float64 and int64), as each pass needs them."""
    s = getattr(_scratch, "bufs", None)
    if s is None or s[0].size < n:
        t, w = np.empty(n, np.float64), np.empty(n, np.uint64)
        s = _scratch.bufs = (t, t.view(np.uint64), w, w.view(np.float64), w.view(np.int64))
    return s


def _has_small(v: np.ndarray, bound: float, w: np.ndarray) -> bool:
    """Whether a float array has a nonzero element of magnitude below ``bound`` (or possibly at it; NaNs are
    passed over). ``w``: 8-byte scratch of at least v's size."""
    if v.dtype.kind != "f" or v.dtype.itemsize not in _UINT:
        a = np.abs(v.astype(np.float64))
        return bool(((a < bound) & (a != 0)).any())
    # One pass, two reductions: ``bits - 1`` (zero wraps round to the largest pattern), whose unsigned minimum is
    # the smallest positive magnitude's pattern less one, and whose signed minimum is the sign bit plus the
    # smallest negative magnitude's pattern less one (-0 wraps round to the largest signed number, +0 gives -1).
    size = v.dtype.itemsize
    key = (v.dtype, bound)
    lim = _bound_cache.get(size)
    if lim is None or lim[0] != key:
        with np.errstate(over="ignore"):
            b = np.nextafter(np.array(bound, v.dtype), np.inf)   # at least the bound, whatever the rounding
        k = int(b.view(_UINT[size]))       # >= 1: a nonzero magnitude is small where its pattern is below k
        lim = _bound_cache[size] = (key, k - 1, -(1 << (8 * size - 1)) + k - 1)
    bits = w.view(_UINT[size])[:v.size]
    np.subtract(v.view(_UINT[size]), 1, out=bits)
    return bool(np.minimum.reduce(bits) < lim[1]) or bool(np.minimum.reduce(bits.view(_INT[size])) < lim[2])


_bound_cache: dict = {}   # per item size: ((dtype, bound), its unsigned and signed limits): one lr at a time


def _round_odd_fix(t: np.ndarray, x, y, z: np.ndarray, idx: np.ndarray, picked: bool = False) -> None:
    """Replace ``t[idx]`` (= fl64(x*y + z)) by the float64 sum rounded to odd, whose float32 rounding is the
    exactly rounded ``x*y + z``. x, y are float64 (scalars or arrays like t, or with ``picked`` arrays of the
    ``idx`` elements only), z the original float32 addend."""
    a = z[idx].astype(np.float64)
    if not picked:
        x, y = (v[idx] if isinstance(v, np.ndarray) else v for v in (x, y))
    b = x * y                                  # exact
    s = t[idx]
    bb = s - a
    err = (a - (s - bb)) + (b - bb)            # TwoSum: s + err == a + b exactly
    bits = s.view(np.uint64)
    move = (err != 0) & ((bits & np.uint64(1)) == 0)
    if move.any():
        up = (err > 0) == (s > 0)              # away from zero: the bit pattern grows
        bits[move & up] += np.uint64(1)
        bits[move & ~up] -= np.uint64(1)
        t[idx] = s


def _fma32(x, y, z: np.ndarray, out: np.ndarray) -> None:
    """``out = x*y + z`` rounded once to float32; x, y float32 scalars/arrays (already float64-typed scalars
    or any float arrays of at most float32 precision), z and out float32 arrays of one shape (out may be z)."""
    shape = out.shape
    zz = np.broadcast_to(z, shape) if z.shape != shape else z
    xs = [np.broadcast_to(v, shape) if isinstance(v, np.ndarray) and v.shape != shape else v for v in (x, y)]
    n = out.size
    if n == 0:
        return
    flat = [v.reshape(-1) if isinstance(v, np.ndarray) else v for v in (*xs, zz)]
    o = out.reshape(-1) if out.flags.c_contiguous else None
    if o is None or any(isinstance(v, np.ndarray) and not v.flags.c_contiguous for v in flat):
        # strided operands: one pass over contiguous copies
        flat = [np.ascontiguousarray(v).reshape(-1) if isinstance(v, np.ndarray) else v for v in flat]
        res = np.empty(n, np.float32)
        _fma32_flat(flat[0], flat[1], flat[2], res)
        out[...] = res.reshape(shape)
        return
    _fma32_flat(*flat, o)


def _fma32_flat(xf, yf, zf: np.ndarray, o: np.ndarray) -> None:
    """``_fma32`` on C-contiguous 1-D arrays (x or y may be a float64 number) of one nonzero size, block by block
    (``_fma_block``)."""
    n = o.size
    step = min(n, _CHUNK)
    bufs = _scratch_arrays(step)
    xa_, ya_ = isinstance(xf, np.ndarray), isinstance(yf, np.ndarray)
    if xa_ and ya_:
        for i in range(0, n, step):
            _fma_block(xf[i:i + step], None, yf[i:i + step], zf[i:i + step], o[i:i + step], bufs, 0.0)
        return
    if not xa_ and not ya_:
        # (both numbers: every product is the same; rare, kept simple)
        tiny = 0 < abs(float(xf) * float(yf)) < _TINY_PRODUCT      # (exact: two float32 numbers)
        for i in range(0, n, step):
            j = min(i + step, n)
            t, w = bufs[0][:j - i], bufs[3][:j - i]
            np.multiply(xf, yf, out=t, dtype=np.float64)
            np.copyto(w, zf[i:j])
            np.add(t, w, out=t)
            _fix_block(t, bufs[1][:j - i], bufs[2][:j - i], xf, yf, zf[i:j], tiny)
            np.copyto(o[i:j], t, casting="unsafe")
        return
    # a number times an array: the array's smallest magnitude says whether a product is tiny
    num, arr = (xf, yf) if ya_ else (yf, xf)
    bound = _TINY_PRODUCT / abs(float(num)) if num != 0 else 0.0
    for i in range(0, n, step):
        _fma_block(None, num, arr[i:i + step], zf[i:i + step], o[i:i + step], bufs, bound)


def _fma_block(xa, num, ya, za, o, bufs, bound: float) -> None:
    """``o = x*y + z`` rounded once to float32 on one block: ``xa * ya`` (two arrays) or ``ya * num`` (``bound``:
    a nonzero |ya| below it makes a tiny product), ``za`` and ``o`` float32, all of one size (o may be za).

    In float64: the exact product, the sum rounded once, one shift and one reduction that find a float32 midpoint
    among the sums (rare: then the flagged elements are redone with round-to-odd), the rounding to float32. Casts
    and arithmetic are separate passes (NumPy's mixed-dtype loops are slower than the two)."""
    m = za.size
    t, tu, w, w64, wi = (b[:m] for b in bufs)
    # An inexact float64 sum in float32's subnormal range needs a tiny product and a nonzero z below 2**-125
    # (z == 0: the sum is the exact product; |z| >= 2**-125: the sum is a normal float32 number). No z below
    # 2**-125, zeros included, is two reductions over z's bits (no pass): the usual block checks no product.
    zb = za.view(np.uint32)
    small_z = np.minimum.reduce(zb) < _SMALL_Z_BITS or np.minimum.reduce(zb.view(np.int32)) < _SMALL_Z_INT
    if xa is not None:
        np.copyto(t, xa)
        np.copyto(w64, ya)
        np.multiply(t, w64, out=t)              # exact: at most 48 significant bits
        tiny = small_z and _has_small(t, _TINY_PRODUCT, w)  # the products themselves: is one of them tiny?
    else:
        tiny = small_z and bound != 0 and _has_small(ya, bound, w)
        np.copyto(t, ya)
        np.multiply(t, num, out=t)              # exact
    np.copyto(w64, za)
    np.add(t, w64, out=t)                       # rounded once, in float64
    _fix_block(t, tu, w, xa if xa is not None else num, ya, za, tiny, wi)
    np.copyto(o, t, casting="unsafe")


def _fix_block(t, tu, w, x, y, za, tiny: bool, wi=None) -> None:
    """Redo with round-to-odd the elements of a block of float64 sums ``t`` (= fl64(x*y + za); ``tu`` its uint64
    view, ``w`` uint64 scratch, ``wi`` its int64 view) whose rounding to float32 would round twice: those on a
    float32 midpoint, and (``tiny``) those in float32's subnormal range."""
    if wi is None:
        wi = w.view(np.int64)
    np.left_shift(tu, 35, out=w)                # a float32 midpoint: the low 29 bits 1 then 28 zeros
    if not tiny and np.minimum.reduce(wi) != _INT64_MIN:
        return
    flags = np.equal(wi, _INT64_MIN)            # float64 sum on a float32 midpoint: double rounding
    if tiny:                                    # float32 subnormal results keep fewer bits
        # (an exact zero needs no fix: the float64 sum of an exact product is 0 only when x*y + z is)
        flags |= (np.abs(t) < _TINY32) & (t != 0)
    idx = np.flatnonzero(flags)
    if idx.size:
        xi = x[idx].astype(np.float64) if isinstance(x, np.ndarray) else x
        yi = y[idx].astype(np.float64) if isinstance(y, np.ndarray) else y
        _round_odd_fix(t, xi, yi, za, idx, picked=True)


def fma(x, y, z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x * y + z`` rounded once for float32 (x, y numbers or arrays, z an array); written into ``out`` if
    given, else a new array. Mixed dtypes (state kept in float32 after ``model.double()``) compute in the promoted
    dtype, as PyTorch's kernels."""
    if out is z and type(z) is np.ndarray and z.dtype == _F32 and z.flags.c_contiguous and z.size:
        # the optimizers' case, in place: a number times a float32 array of z's layout, or two such arrays
        xa, ya = type(x) is np.ndarray, type(y) is np.ndarray
        if ((not xa or (x.dtype == _F32 and x.shape == z.shape and x.flags.c_contiguous))
                and (not ya or (y.dtype == _F32 and y.shape == z.shape and y.flags.c_contiguous))
                and (xa or ya) and not ((xa and np.may_share_memory(x, z)) or (ya and np.may_share_memory(y, z)))):
            xs = x.reshape(-1) if xa else float(np.float32(x))
            ys = y.reshape(-1) if ya else float(np.float32(y))
            zf = z.reshape(-1)
            if not (xa and ya):
                num, arr = (ys, xs) if xa else (xs, ys)
                if num == 1.0 and not (np.isnan(np.minimum.reduce(arr)) and np.isnan(np.minimum.reduce(zf))):
                    # 1 * y is exact: the fused result is the float32 sum, rounded once by NumPy's add (momentum's
                    # ``add_(g, alpha=1 - dampening)``). The product is the first operand, as in the float64
                    # emulation; where both operands have NaNs, NumPy's loops may pick either NaN, so those go there.
                    np.add(arr, zf, out=zf)
                    return z
            _fma32_flat(xs, ys, zf, zf)
            return z
    dt = z.dtype
    wide = np.result_type(dt, *(v.dtype for v in (x, y) if isinstance(v, np.ndarray)))
    if wide == np.float32 and (out is None or out.dtype == np.float32):
        # scalars rounded to float32 (the computation's dtype), then exact in float64
        xs = x if isinstance(x, np.ndarray) else np.float64(np.float32(x))
        ys = y if isinstance(y, np.ndarray) else np.float64(np.float32(y))
        shape = np.broadcast_shapes(*(v.shape for v in (x, y, z) if isinstance(v, np.ndarray)))
        if out is None:
            out = np.empty(shape, np.float32)
        elif out.shape != shape:
            raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the "
                             f"broadcast shape {shape}")
        # operands overlapping the output other than element for element: copies (it is written block by block)
        zz = np.asarray(z).astype(np.float32, copy=False)   # (a 0-d parameter's -g or g * g is a NumPy scalar)
        if out is not z and np.may_share_memory(out, zz):
            zz = zz.copy()
        xs, ys = (v.copy() if isinstance(v, np.ndarray) and v is not out and np.may_share_memory(out, v) else v
                  for v in (xs, ys))
        _fma32(xs, ys, zz, out)
        return out
    if wide.itemsize < 8:
        # scalars rounded to the computation's dtype (the tensors' promoted dtype)
        x = x.astype(np.float64) if isinstance(x, np.ndarray) else np.float64(wide.type(x))
        y = y.astype(np.float64) if isinstance(y, np.ndarray) else np.float64(wide.type(y))
        r = x * y
        r += z
    else:
        x = x.astype(wide, copy=False) if isinstance(x, np.ndarray) else x
        y = y.astype(wide, copy=False) if isinstance(y, np.ndarray) else y
        r = x * y + z
    if out is None:  # out of place: the promoted dtype, as PyTorch's ``a.add(b, alpha=)``
        return np.asarray(r).astype(wide, copy=False)
    np.copyto(out, r, casting="unsafe")
    return out


def fma_lerp_(a: np.ndarray, end: np.ndarray, weight: float) -> None:
    """``a.lerp_(end, weight)`` for a Python number ``weight``, with PyTorch's two-sided formula (exact at both
    ends: ``a + w*(end - a)`` below one half, ``end - (1 - w)*(end - a)`` from there), each a fused
    multiply-add. ``end`` has ``a``'s dtype (the caller checks)."""
    if abs(weight) < 0.5:
        fma(weight, end - a, a, out=a)
    else:
        # (1 - w) in the arrays' dtype where that is narrower than a Python float, as PyTorch's kernel
        fma(-(end - a), 1 - a.dtype.type(weight) if a.dtype.itemsize < 8 else 1 - weight, end, out=a)


_ADAM_CHUNK = 131072  # elements per block of Adam's step (float32 scratch beside the fma's float64 scratch)


def _f32_block(n: int):
    """Two per-thread float32 scratch blocks of ``n`` elements (Adam's temporaries)."""
    s = getattr(_scratch, "f32", None)
    if s is None or s[0].size < n:
        s = _scratch.f32 = (np.empty(n, np.float32), np.empty(n, np.float32))
    return s[0][:n], s[1][:n]


def adam_step_(a, g, m, v, vmax, w1: float, beta2: float, c2: float, bc2_sqrt: float, eps: float, neg_step: float,
               sqrt=None):
    """Adam's update of float32 arrays, block by block (ember/optim/adam.py's ``Adam._update``, the same operations
    on each element, so the same bits): ``m.lerp_(g, w1)``; ``v *= beta2``; ``v.addcmul_(g, g, value=c2)``;
    ``vmax = max(vmax, v)`` (amsgrad, or None); ``denom = sqrt(vmax or v) / bc2_sqrt + eps``; ``neg_step * m /
    denom`` added into ``a`` (or, where a is None, into a new array). The numbers are Python floats (float32 in the
    arithmetic); ``sqrt``: the namespace's square root (the optimizer passes its own; None: NumPy's). Returns
    ``a`` or the new array; None, doing nothing, where the arrays are not all C-contiguous
    float32 arrays of one shape in memory of their own: the caller then runs the generic update."""
    arrays = [x for x in (a, g, m, v, vmax) if x is not None]
    shape = g.shape
    for k, x in enumerate(arrays):
        if type(x) is not np.ndarray or x.dtype != _F32 or x.shape != shape or not x.flags.c_contiguous:
            return None
        for y in arrays[:k]:
            if np.may_share_memory(x, y):
                return None
    n = g.size
    if n == 0:
        return None
    upd = np.empty(shape, np.float32) if a is None else None
    af, gf, mf, vf = (x.reshape(-1) if x is not None else None for x in (a, g, m, v))
    xf, uf = (x.reshape(-1) if x is not None else None for x in (vmax, upd))
    step = min(n, _ADAM_CHUNK)
    s1_all, s2_all = _f32_block(step)
    bufs = _scratch_arrays(step)
    small = abs(w1) < 0.5                       # fma_lerp_'s two formulas
    w32 = float(np.float32(w1)) if small else np.float64(np.float32(1 - np.float32(w1)))
    bound = _TINY_PRODUCT / abs(float(w32)) if w32 != 0 else 0.0
    for i in range(0, n, step):
        j = min(i + step, n)
        s1, s2 = s1_all[:j - i], s2_all[:j - i]
        gc, mc, vc = gf[i:j], mf[i:j], vf[i:j]
        # m.lerp_(g, w1): m + w1*(g - m), or g - (1 - w1)*(g - m), each a fused multiply-add (fma's operands)
        np.subtract(gc, mc, out=s1)
        if small:
            _fma_block(None, w32, s1, mc, mc, bufs, bound)
        else:
            np.negative(s1, out=s1)
            _fma_block(None, w32, s1, gc, mc, bufs, bound)
        np.multiply(vc, beta2, out=vc)
        np.multiply(c2, gc, out=s2)
        _fma_block(s2, None, gc, vc, vc, bufs, 0.0)     # v + (c2*g)*g rounded once
        src = vc
        if xf is not None:
            np.maximum(xf[i:j], vc, out=xf[i:j])
            src = xf[i:j]
        if sqrt is None:
            np.sqrt(src, out=s1)
            np.divide(s1, bc2_sqrt, out=s1)
        else:
            np.divide(sqrt(src), bc2_sqrt, out=s1)
        np.add(s1, eps, out=s1)
        np.multiply(neg_step, mc, out=s2)
        if af is not None:
            np.divide(s2, s1, out=s2)
            np.add(af[i:j], s2, out=af[i:j])
        else:
            np.divide(s2, s1, out=uf[i:j])
    return upd if a is None else a
