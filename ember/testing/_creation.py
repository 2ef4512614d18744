"""``torch.testing.make_tensor`` as PyTorch 2.13 has it (torch/testing/_creation.py): the same default ranges per
dtype, checks and messages, drawn with the same random ops (randint, uniform_), so a seed gives PyTorch's values."""
from __future__ import annotations

import collections.abc
import functools
import math
import warnings

from ..ops import public as torch

__all__ = ["make_tensor"]

_INTEGRAL_TYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
                   torch.uint64]
_FLOATING_TYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
_FLOATING_8BIT_TYPES = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]
_COMPLEX_TYPES = [torch.complex32, torch.complex64, torch.complex128]
_BOOLEAN_OR_INTEGRAL_TYPES = [torch.bool, *_INTEGRAL_TYPES]
_FLOATING_OR_COMPLEX_TYPES = [*_FLOATING_TYPES, *_COMPLEX_TYPES]


def _uniform_random_(t, low: float, high: float):
    if high - low >= torch.finfo(t.dtype).max:   # the width would overflow: draw half of it and double
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)``: defaults ``[0, 2)`` for bool,
    ``[-9, 10)`` for integers (clamped to the dtype), ``[-9, 9)`` for floating and complex dtypes.
    ``noncontiguous`` gives every other element of a twice-as-long last dimension; ``exclude_zero`` replaces zeros
    with 1 (integers) or the dtype's ``tiny``."""

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high):
        def clamp(a, l, h):
            return min(max(a, l), h)

        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(value, float) and math.isnan(value) for value in [low, high]):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        elif low == high and dtype in _FLOATING_OR_COMPLEX_TYPES:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
                          "is deprecated since 2.1 and will be removed in 2.3. "
                          "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                             f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
        low = clamp(low, lowest_inclusive, highest_exclusive)
        high = clamp(high, lowest_inclusive, highest_exclusive)
        if dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
            # low ceiled to stay inside the interval; high ceiled too, as randint's bound is exclusive
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)

    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got {noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")

    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:   # twice the last dimension, so that the strided view sees distinct values
        shape = (*shape[:-1], 2 * shape[-1])

    if dtype is torch.bool:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0,
                                    default_high=2)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _BOOLEAN_OR_INTEGRAL_TYPES:
        # randint cannot draw 2**63 - 1 (its bounds are int64): int64's upper end stays exclusive
        low, high = modify_low_high(low, high, lowest_inclusive=torch.iinfo(dtype).min,
                                    highest_exclusive=torch.iinfo(dtype).max + (1 if dtype is not torch.int64 else 0),
                                    default_low=-9, default_high=10)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING_OR_COMPLEX_TYPES:
        low, high = modify_low_high(low, high, lowest_inclusive=torch.finfo(dtype).min,
                                    highest_exclusive=torch.finfo(dtype).max, default_low=-9, default_high=9)
        result = torch.empty(shape, device=device, dtype=dtype)
        _uniform_random_(torch.view_as_real(result) if dtype in _COMPLEX_TYPES else result, low, high)
    elif dtype in _FLOATING_8BIT_TYPES:
        low, high = modify_low_high(low, high, lowest_inclusive=torch.finfo(dtype).min,
                                    highest_exclusive=torch.finfo(dtype).max, default_low=-9, default_high=9)
        result = torch.empty(shape, device=device, dtype=torch.float32)
        _uniform_random_(result, low, high)
        result = result.to(dtype)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor()."
                        " To request support, file an issue at: https://github.com/pytorch/pytorch/issues")

    if noncontiguous:
        result = result[..., 1::2]   # offset by 1 to also catch offsetting issues
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)

    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL_TYPES else torch.finfo(dtype).tiny

    if dtype in _FLOATING_OR_COMPLEX_TYPES:
        result.requires_grad = requires_grad
    return result
