"""What kernels written against an array-API namespace share: dtype helpers, PyTorch-style indexing on the
standard's narrower indexing, and the generic scatter fallbacks (the standard has no scatter-add).

A ``Kit`` is made per device; each family file's ``kernels(kit)`` returns its kernels as closures over it.
"""
from __future__ import annotations

import math

import numpy as np

from ..index import SplitIndex


class Kit:
    """The array-API namespace ``xp`` plus helpers for kernels written against it."""

    def __init__(self, xp, device_type: str, to_lib: dict, to_np: dict):
        self.xp = xp
        self.device_type = device_type
        self.to_lib = to_lib   # NumPy dtype -> library dtype (dtype parameters arrive as NumPy dtypes)
        self.to_np = to_np
        self.int64 = xp.int64
        self.float64 = xp.float64

    # ----- dtypes --------------------------------------------------------------------------------------------
    def lib(self, dtype):
        """The library dtype for a dtype parameter (a NumPy dtype, or already the library's)."""
        try:
            return self.to_lib[np.dtype(dtype)]
        except TypeError:
            return dtype
        except KeyError:
            raise TypeError(f"device '{self.device_type}' has no {np.dtype(dtype)} (its library "
                            f"{self.xp.__name__} lacks it)") from None

    def kind(self, a) -> str:
        """NumPy's dtype kind letter of a library array: 'b', 'i', 'u', 'f' or 'c'."""
        return self.to_np[a.dtype].kind

    def promote(self, a, b):
        """``a`` and ``b`` (library arrays or Python scalars, at least one an array) cast to NumPy's result dtype,
        scalars made arrays: ember's raw arithmetic mixes bool masks with floats and ints with floats, which the
        standard leaves undefined (NumPy 2's rule: a Python scalar is weak, float32 + 2.5 stays float32)."""
        xp = self.xp
        if not hasattr(a, "dtype"):
            b, a = self.promote(b, a)
            return a, b
        ta = self.to_np[a.dtype]
        if hasattr(b, "dtype"):
            tb = self.to_np[b.dtype]
            if ta == tb:
                return a, b
            to = self.to_lib[np.result_type(ta, tb)]
            return xp.astype(a, to), xp.astype(b, to)
        to = np.result_type(ta, b) if type(b) in (int, float, bool) else ta
        if to != ta:
            a = xp.astype(a, self.to_lib[to])
        return a, xp.asarray(b, dtype=a.dtype)

    def is_float(self, a) -> bool:
        return self.xp.isdtype(a.dtype, "real floating")

    def finfo(self, a):
        return self.xp.finfo(a.dtype)

    def full(self, shape, value, like):
        return self.xp.full(tuple(shape), value, dtype=like.dtype, device=like.device)

    def zeros(self, shape, dtype, like=None):
        return self.xp.zeros(tuple(shape), dtype=self.lib(dtype), device=None if like is None else like.device)

    def scalar(self, v, like):
        """``v`` as an array of ``like``'s dtype (the standard mixes Python scalars only of the same kind)."""
        if hasattr(v, "dtype") and not isinstance(v, (np.ndarray, np.generic)):
            return v
        return self.xp.asarray(v, dtype=like.dtype, device=like.device)

    def numel(self, a) -> int:
        return math.prod(a.shape)

    def lin(self, shape, like=None):
        """``arange(prod(shape)).reshape(shape)`` (int64): applying a view or index to it gives the flat
        positions it selects, which turns every write into a scatter over flat positions."""
        xp = self.xp
        return xp.reshape(xp.arange(math.prod(shape), dtype=xp.int64), tuple(shape))

    # ----- indexing --------------------------------------------------------------------------------------------
    def index(self, a, index):
        """``a[index]`` with NumPy's (PyTorch's, after ember/ops/_index.py) meaning, in standard operations: basic
        indices directly; integer and boolean arrays through the standard's all-integer-arrays indexing."""
        if type(index) is SplitIndex:
            return self.index(self.index(a, index[0]), index[1])
        xp = self.xp
        if not isinstance(index, tuple):
            index = (index,)
        if any(type(i) is bool for i in index):   # a Python bool indexes as a 0-d mask
            index = tuple(xp.asarray(i) if type(i) is bool else i for i in index)
        if len(index) == 1 and getattr(index[0], "dtype", None) == xp.bool and index[0].ndim == 0:
            return xp.expand_dims(a, axis=0)[0:int(bool(index[0]))]   # x[True]: a new dim of 1 (or 0) entries
        if not any(hasattr(i, "dtype") for i in index):
            if not any(i is Ellipsis for i in index) and sum(i is not None for i in index) < a.ndim:
                index = index + (Ellipsis,)
            return a[index]
        # masks become integer arrays (one per masked dim); Ellipsis becomes full slices
        flat = []
        for i in index:
            if hasattr(i, "dtype") and i.dtype == xp.bool:
                if i.ndim == 0:
                    flat.append(None)
                    flat.append(xp.zeros((1 if bool(i) else 0,), dtype=xp.int64))
                    continue
                flat.extend(xp.nonzero(i))
            else:
                flat.append(i)
        specified = sum(1 for i in flat if i is not None and i is not Ellipsis)
        # (identity tests: ``in`` and ``index`` would compare arrays elementwise)
        at = [j for j, i in enumerate(flat) if i is Ellipsis]
        if at:
            flat[at[0]:at[0] + 1] = [slice(None)] * (a.ndim - specified)
        flat += [slice(None)] * (a.ndim + sum(i is None for i in flat) - len(flat))
        # None (new axes) and slices first, as a basic index; the arrays (and ints among them) after
        basic = tuple(slice(None) if hasattr(i, "dtype") or isinstance(i, int) else i for i in flat)
        y = a[basic]
        adv = [k for k, i in enumerate(flat) if hasattr(i, "dtype") or isinstance(i, int)]
        arrays = [xp.asarray(flat[k], dtype=xp.int64) if isinstance(flat[k], int) else flat[k] for k in adv]
        arrays = xp.broadcast_arrays(*arrays) if len(arrays) > 1 else arrays
        bshape = tuple(arrays[0].shape)
        # positions of y's dims (None adds one, so count dims of y in order)
        ydims = list(range(y.ndim))
        advset = set(adv)
        contiguous = adv == list(range(adv[0], adv[-1] + 1))
        rest = [d for d in ydims if d not in advset]
        # output layout: the broadcast dims where the first array was (contiguous) or in front (NumPy's rule)
        lead = [d for d in rest if d < adv[0]] if contiguous else []
        trail = [d for d in rest if d not in lead]
        nb = len(bshape)
        out_ndim = len(lead) + nb + len(trail)
        full = []
        arrs = iter(arrays)
        for d in ydims:
            if d in advset:
                arr = next(arrs)
                pos = len(lead)
                full.append(xp.reshape(arr, (1,) * pos + bshape + (1,) * (out_ndim - pos - nb)))
            else:
                pos = lead.index(d) if d in lead else len(lead) + nb + trail.index(d)
                n = y.shape[d]
                full.append(xp.reshape(xp.arange(n, dtype=xp.int64), (1,) * pos + (n,) + (1,) * (out_ndim - pos - 1)))
        if any(0 in f.shape for f in full) or y.ndim == 0:
            shape = tuple(np.broadcast_shapes(*[tuple(f.shape) for f in full])) if full else ()
            return xp.zeros(shape, dtype=a.dtype)
        return y[tuple(full)]

    # ----- scatters: generic fallbacks in standard operations ------------------------------------------------
    # The standard has no scatter-add; these compare every source position with every target position,
    # O(n * m) work and memory: right for tests and small arrays, and what a library with a scatter overrides.
    def _hits(self, pos, m: int):
        xp = self.xp
        return pos[:, None] == xp.arange(m, dtype=xp.int64)[None, :]

    def scatter_add_flat(self, m: int, pos, vals, dtype):
        """A flat array of ``m`` zeros with ``vals`` added at flat positions ``pos`` (repeats accumulate)."""
        xp = self.xp
        dtype = self.lib(dtype)
        if dtype == xp.bool:   # adding bools is or
            return self.scatter_add_flat(m, pos, xp.astype(vals, xp.int64), xp.int64) != 0
        pos, vals = xp.reshape(pos, (-1,)), xp.reshape(xp.astype(vals, dtype), (-1,))
        if pos.shape[0] == 0 or m == 0:
            return xp.zeros((m,), dtype=dtype)
        zero = xp.zeros((), dtype=dtype)
        return xp.sum(xp.where(self._hits(pos, m), vals[:, None], zero), axis=0, dtype=dtype)

    def scatter_set_flat(self, base, pos, vals):
        """``base`` (flat) with ``vals`` written at flat positions ``pos`` (of repeats, the last one wins; a position
        outside ``0 .. len(base) - 1`` writes nothing: views.py's write_back relies on it)."""
        xp = self.xp
        pos, vals = xp.reshape(pos, (-1,)), xp.reshape(xp.astype(vals, base.dtype), (-1,))
        n, m = pos.shape[0], base.shape[0]
        if n == 0 or m == 0:
            return xp.asarray(base, copy=True)
        order = xp.arange(n, dtype=xp.int64)[:, None]
        last = xp.max(xp.where(self._hits(pos, m), order, -1), axis=0)
        return xp.where(last >= 0, xp.take(vals, xp.where(last >= 0, last, 0)), base)

    def scatter_add(self, shape, region_of_lin, vals, dtype):
        """Zeros of ``shape`` with ``vals`` added where ``region_of_lin(lin)`` selects (a function of the flat
        positions array ``lin``)."""
        xp = self.xp
        m = math.prod(shape)
        pos = region_of_lin(self.lin(shape))
        vals = xp.broadcast_to(vals, tuple(pos.shape))
        return xp.reshape(self.scatter_add_flat(m, pos, vals, dtype), tuple(shape))

    def scatter_set(self, base, region_of_lin, vals):
        """A copy of ``base`` with ``vals`` written where ``region_of_lin(lin)`` selects."""
        xp = self.xp
        shape = tuple(base.shape)
        pos = region_of_lin(self.lin(shape))
        vals = xp.broadcast_to(xp.astype(vals if hasattr(vals, "dtype") else xp.asarray(vals), base.dtype),
                               tuple(pos.shape))
        return xp.reshape(self.scatter_set_flat(xp.reshape(base, (-1,)), pos, vals), shape)

    @staticmethod
    def along(dim: int, ix) -> tuple:
        return (slice(None),) * dim + (ix, Ellipsis)

    def unsupported(self, name: str):
        raise NotImplementedError(f"ember: the kernel '{name}' needs more than the array API standard and has no "
                                  f"generic version yet (device '{self.device_type}', ember/devices/common)")
