"""Device 'meta': tensors with a shape and a dtype and no data, as PyTorch's.

Built as any other device, through ``common.namespace.make_namespace``, from ``xp.py`` beside this file: an
array-API namespace whose arrays carry only a shape and a dtype. The common kernels, written against the standard,
then compute every op's result shape and dtype, forward and backward. What this file adds is what PyTorch does
differently on 'meta': its arrays cannot give values (``item``, ``tolist``, a copy to the cpu raise PyTorch's
errors), mixing devices raises PyTorch's meta wording, 0-d cpu tensors may join meta ops, and creation functions
make meta tensors directly, without drawing random numbers or allocating anything.
"""
from __future__ import annotations

import math

import numpy as np

from ..common.array import DeviceArray
from ..common.kit import Kit
from ..common.namespace import _Backend, make_namespace
from . import xp


class MetaKit(Kit):
    """The kernels' helpers on 'meta': a write keeps its target's shape and dtype, so the positions it writes are
    never computed (a boolean mask's would need its values)."""

    def scatter_set(self, base, region_of_lin, vals):
        return self.xp.asarray(base, copy=True)

    def scatter_add(self, shape, region_of_lin, vals, dtype):
        return self.xp.zeros(tuple(shape), dtype=self.lib(dtype))


class MetaDeviceArray(DeviceArray):
    """A meta array as ember's core sees it (see common/array.py): shape and dtype, and PyTorch's errors for values."""

    __slots__ = ()
    kit_type = MetaKit
    cpu_scalars = True   # PyTorch lets a 0-d cpu tensor join an op on another device

    @classmethod
    def mixed(cls, found: str, expected: str) -> RuntimeError:
        return RuntimeError(f"Tensor on device {found} is not on the expected device {expected}!")

    def mixed_on_host(self) -> RuntimeError:
        return self.mixed(self.device_type, "cpu")

    def item(self):
        raise RuntimeError(xp._NO_ITEM)

    def host(self):
        raise NotImplementedError(xp._NO_DATA)

    def view(self, dtype):
        """The same bytes read as ``dtype`` (Tensor.view(dtype)): the last dim scales by the itemsizes' ratio."""
        shape = self.shape
        if shape:
            shape = shape[:-1] + (shape[-1] * self.dtype.itemsize // np.dtype(dtype).itemsize,)
        return type(self)(xp.MetaArray(shape, dtype))

    def __repr__(self) -> str:
        return f"meta:{self.a!r}"


def _tri_count(row: int, col: int, offset: int) -> int:
    """How many (i, j) of a ``row`` x ``col`` matrix have ``j - i <= offset`` (the lower triangle's size)."""
    return sum(min(max(i + offset + 1, 0), col) for i in range(row))


class _MetaBackend(_Backend):
    """The backend of 'meta': creation functions make arrays of a shape and dtype; nothing has values."""

    has_data = False

    def ones(self, shape, dtype=xp.float64):
        return self.zeros(shape, dtype)

    def eye(self, n, m=None, dtype=xp.float64):
        return self.zeros((n, n if m is None else m), dtype)

    def arange(self, start, end, step, n: int, dtype):
        return self.zeros((n,), dtype)

    def linspace(self, start, end, steps: int, dtype):
        return self.zeros((steps,), dtype)

    def logspace(self, start, end, steps: int, base: float, dtype):
        return self.zeros((steps,), dtype)

    def tri_indices(self, upper: bool, row: int, col: int, offset: int, dtype):
        n = row * col - _tri_count(row, col, offset - 1) if upper else _tri_count(row, col, offset)
        return self.zeros((2, n), dtype)

    @staticmethod
    def isfinite(v) -> bool:
        return math.isfinite(v)

    def full(self, shape, value, dtype=None):
        return self.zeros(shape, xp.asarray(value).dtype if dtype is None else dtype)

    @staticmethod
    def to_numpy(x):
        raise NotImplementedError(xp._NO_DATA)

    to_bytes = to_numpy


def _kernels(kit) -> dict:
    """Meta's versions of the common kernels that read values: bounds checks pass (PyTorch's meta kernels skip
    them); what would need a count of values raises PyTorch's error."""
    def in_range(idx, lo: int, hi: int) -> bool:
        return True

    def index_bounds(x):
        return None

    def mask_count(mask) -> int:
        raise xp._nonzero_error()

    def half_number_op(op, a, s):   # float16/bfloat16 OP a number: in float32, rounded (cpu/elementwise.py)
        return xp.astype(op(xp.astype(a, xp.float32), s), a.dtype)   # (float16 or bfloat16)

    def row_pairs(x) -> tuple:   # the (i, j) with i < j of x's rows: n (n - 1) / 2 of them, whatever the values
        n = x.shape[0] * (x.shape[0] - 1) // 2
        return xp.zeros((n,), dtype=xp.int64), xp.zeros((n,), dtype=xp.int64)

    def matrix_exp(a):   # (the common kernel picks its scaling from the values)
        return xp.asarray(a, copy=True)

    def unique(*args, **kwargs):
        raise xp._no_meta_kernel("_unique2")

    return {"in_range": in_range, "index_bounds": index_bounds, "mask_count": mask_count,
            "half_number_op": half_number_op, "row_pairs": row_pairs, "matrix_exp": matrix_exp,
            "unique_values": unique, "unique_runs": unique, "unique_slices": unique}


def make():
    """The raw namespace of device 'meta' (``ember.devices`` installs it on first use)."""
    return make_namespace("meta", xp, array_base=MetaDeviceArray, backend_class=_MetaBackend, overrides=_kernels)
