"""CuPy's namespace as the Python array API standard spells it, for the common kernels (``ember/devices/common``).

CuPy's arrays follow the standard, but its namespace still spells many functions as NumPy 1 did (``concatenate``
for ``concat``, ``transpose`` for ``permute_dims``, ``power`` for ``pow``), its creation functions take no
``device=``, its ``sort``/``argsort`` no ``descending=``, and older versions have no ``__array_namespace_info__``.
``adapt(cupy)`` returns a module with every name of CuPy's namespace plus the standard's where CuPy lacks them
(a standard name CuPy has is used unchanged); ``asarray``, ``astype``, ``sort``, ``argsort``, ``clip``, the
creation functions and ``__array_namespace_info__`` (which lists float16: CuPy has it, the standard's list leaves
it out) are always the adapter's.
"""
from __future__ import annotations

import types

import numpy as np

# the standard's name -> CuPy's (NumPy 1's) name for the same function
_RENAMED = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atan2": "arctan2", "atanh": "arctanh", "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
    "bitwise_invert": "invert", "concat": "concatenate", "permute_dims": "transpose", "pow": "power",
}
# creation functions: the standard's ``device=`` names the device, which is CuPy's current one here
_CREATION = ("zeros", "ones", "empty", "full", "eye", "arange", "linspace", "zeros_like", "ones_like", "empty_like",
             "full_like")

_DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64", "complex64", "complex128")   # (CuPy has float16, not bfloat16)


def _drop_device(fn):
    def f(*args, device=None, **kwargs):
        return fn(*args, **kwargs)
    f.__name__ = fn.__name__
    return f


def adapt(cp) -> types.ModuleType:
    """An array-API namespace over ``cp`` (CuPy, or a stand-in with CuPy's API)."""
    ns = types.ModuleType(f"ember.devices.cuda.xp({cp.__name__})")
    for name in dir(cp):
        if not name.startswith("__"):
            setattr(ns, name, getattr(cp, name))
    ns.__name__ = cp.__name__
    ns.cupy = cp
    if not hasattr(cp, "bool"):
        ns.bool = np.dtype(bool)
    for std, old in _RENAMED.items():
        if not hasattr(cp, std):
            setattr(ns, std, getattr(cp, old))
    for name in _CREATION:
        setattr(ns, name, _drop_device(getattr(cp, name)))

    def asarray(obj, /, *, dtype=None, device=None, copy=None):
        if dtype is not None and type(obj) in (bool, int, float, complex):
            # a kernel's Python number as a 0-d array: filled on the GPU, where cupy.asarray would copy it
            # from the host synchronously
            return cp.full((), obj, dtype=dtype)
        if copy:
            return cp.array(obj, dtype=dtype, copy=True)
        return cp.asarray(obj, dtype=dtype)
    ns.asarray = asarray

    def astype(x, dtype, /, *, copy=True, device=None):
        return x.astype(dtype, copy=copy)
    ns.astype = astype

    def isdtype(dtype, kind) -> bool:
        if isinstance(kind, tuple):
            return any(isdtype(dtype, k) for k in kind)
        d = np.dtype(dtype)
        if not isinstance(kind, str):
            return d == np.dtype(kind)
        return {"bool": d.kind == "b", "signed integer": d.kind == "i", "unsigned integer": d.kind == "u",
                "integral": d.kind in "iu", "real floating": d.kind == "f", "complex floating": d.kind == "c",
                "numeric": d.kind in "iufc"}[kind]
    if not hasattr(cp, "isdtype"):
        ns.isdtype = isdtype

    def _stable_sort(fn, x, axis, descending):
        if not descending:
            return fn(x, axis=axis)
        # stable descending: the ascending stable order of the reversed array, reversed (ties keep their order)
        r = cp.flip(fn(cp.flip(x, axis=axis), axis=axis), axis=axis)
        return x.shape[axis] - 1 - r if fn is cp.argsort else r

    def sort(x, /, *, axis=-1, descending=False, stable=True):
        return _stable_sort(cp.sort, x, axis, descending)

    def argsort(x, /, *, axis=-1, descending=False, stable=True):
        return _stable_sort(cp.argsort, x, axis, descending)
    ns.sort, ns.argsort = sort, argsort

    def clip(x, /, min=None, max=None):
        if min is None and max is None:
            return x.copy()
        return cp.clip(x, min, max)
    ns.clip = clip

    if not hasattr(cp, "cumulative_sum"):
        def _cumulative(fn, start):
            def f(x, /, *, axis=None, dtype=None, include_initial=False):
                axis = 0 if axis is None else axis
                r = fn(x, axis=axis, dtype=dtype)
                if include_initial:
                    shape = list(r.shape)
                    shape[axis] = 1
                    r = cp.concatenate([cp.full(tuple(shape), start, dtype=r.dtype), r], axis=axis)
                return r
            return f
        ns.cumulative_sum = _cumulative(cp.cumsum, 0)
        ns.cumulative_prod = _cumulative(cp.cumprod, 1)
    if not hasattr(cp, "matrix_transpose"):
        ns.matrix_transpose = lambda x, /: cp.swapaxes(x, -1, -2)
    if not hasattr(cp, "broadcast_shapes"):
        ns.broadcast_shapes = np.broadcast_shapes   # shape arithmetic only: no array data

    linalg = types.ModuleType(f"{ns.__name__}.linalg")
    for name in dir(cp.linalg):
        if not name.startswith("__"):
            setattr(linalg, name, getattr(cp.linalg, name))
    if not hasattr(cp.linalg, "cross"):
        linalg.cross = lambda x1, x2, /, *, axis=-1: cp.cross(x1, x2, axis=axis)
    if not hasattr(cp.linalg, "svdvals"):
        linalg.svdvals = lambda x, /: cp.linalg.svd(x, compute_uv=False)
    ns.linalg = linalg

    class _Info:
        # always ember's own: CuPy's (where it has one) lists the standard's dtypes only, and CuPy has float16 too
        def dtypes(self, *, device=None, kind=None):
            return {n: np.dtype(n) for n in _DTYPE_NAMES}   # CuPy's dtypes are NumPy's

        def default_device(self):
            return None

        def devices(self):
            return [None]
    ns.__array_namespace_info__ = _Info
    return ns
