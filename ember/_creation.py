"""Tensor creation: tensor, zeros, ones, full, arange, linspace, eye, *_like (random ones live in _random)."""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtype as D
from ._device import check_device
from ._tensor import Tensor, _sizes_from_args, make
# The generator and the random creation functions (PyTorch's exact stream) live in _random.
from ._random import (Generator, default_generator, initial_seed, manual_seed, rand, rand_like,  # noqa: F401
                      randint, randn, randn_like, seed)


def _finish(data: np.ndarray, requires_grad: bool, device) -> Tensor:
    check_device(device)
    t = make(data)
    if requires_grad:
        if data.dtype.kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _np_dtype(dtype, default=None):
    if dtype is None:
        return default
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"dtype must be an ember dtype (e.g. torch.float32), not {type(dtype).__name__}")
    return dtype.np


def _infer_np(data, float_dtype=None):
    """NumPy array for nested Python data, typed the way PyTorch infers: bool < int64 < default float.
    ``float_dtype``: the requested dtype when it is floating (floats go straight to it, unrounded)."""
    try:
        arr = np.array(data)
    except RuntimeError:   # tensors that require grad refuse __array__; go through tolist() below
        arr = np.array(None)
    except (ValueError, TypeError):
        raise _bad_data_error(data) from None
    k = arr.dtype.kind
    if k == "O":
        try:
            arr = np.array(_tensors_to_lists(data))
        except (ValueError, TypeError):
            raise _bad_data_error(data) from None
        k = arr.dtype.kind
    if k in "USO":
        raise _bad_data_error(data)
    if k == "f":
        with np.errstate(over="ignore"):   # 1e40 -> inf in float32, silently as PyTorch
            return arr.astype(float_dtype or D._default_float.np, copy=False)
    if k == "u" and arr.dtype.itemsize == 8:
        raise ValueError("Overflow when unpacking long long")
    if k in "iu":
        return arr.astype(np.int64, copy=False)
    if k == "b":
        return arr
    raise TypeError(f"tensor(): unsupported data of dtype {arr.dtype}")


_SCALARS = (bool, int, float, np.bool_, np.number)


def _bad_data_error(data) -> Exception:
    """PyTorch's exception for nested data it cannot turn into a tensor (found by walking it)."""
    def walk(obj, dim, first):
        if isinstance(obj, Tensor) or isinstance(obj, _SCALARS):
            if isinstance(obj, int) and not isinstance(obj, bool) and not -2 ** 63 <= obj < 2 ** 63:
                return ValueError("Overflow when unpacking long long")
            return None
        if isinstance(obj, (str, bytes)):
            if dim > 0 and first:   # PyTorch sizes the data along first elements: a str looks like a sequence
                return ValueError(f"too many dimensions '{type(obj).__name__}'")
            return TypeError(f"new(): invalid data type '{type(obj).__name__}'")
        if not isinstance(obj, (list, tuple)):
            return RuntimeError(f"Could not infer dtype of {type(obj).__name__}")
        seq_flags = {isinstance(v, (list, tuple)) for v in obj}
        if len(seq_flags) > 1:
            return TypeError("not a sequence") if isinstance(obj[0], (list, tuple)) else \
                TypeError(f"'{type(next(v for v in obj if isinstance(v, (list, tuple)))).__name__}' object "
                          "cannot be interpreted as an integer")
        if seq_flags == {True}:
            n = len(obj[0])
            for v in obj:
                if len(v) != n:
                    return ValueError(f"expected sequence of length {n} at dim {dim + 1} (got {len(v)})")
        for i, v in enumerate(obj):
            err = walk(v, dim + 1, first and i == 0)
            if err is not None:
                return err
        return None

    err = walk(data, 0, True)
    return err if err is not None else ValueError("tensor(): could not convert the nested data to a tensor")


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(d) for d in data]
    return data


def tensor(data, dtype: D.dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (Python scalars, nested lists, NumPy arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
        arr = np.array(data._data, copy=True)
    elif isinstance(data, np.ndarray):
        D.from_numpy_dtype(data.dtype)
        arr = np.array(data, copy=True)
    elif isinstance(data, np.generic):
        arr = np.array(data)
    elif isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    else:
        arr = _infer_np(data, dtype.np if dtype is not None and dtype.is_floating_point else None)
    if dtype is not None:
        arr = arr.astype(_np_dtype(dtype), copy=False)
    return _finish(arr, requires_grad, device)


def as_tensor(data, dtype: D.dtype | None = None, device=None) -> Tensor:
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        D.from_numpy_dtype(data.dtype)
        return make(data if dtype is None else data.astype(dtype.np, copy=False))
    return tensor(data, dtype, device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    return make(ndarray)


def _creator(np_fill):
    def fn(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
        if not size:
            raise TypeError(f'{fn.__name__}() missing 1 required positional arguments: "size"')
        shape = _sizes_from_args(size)
        return _finish(np_fill(shape, _np_dtype(dtype, D._default_float.np)), requires_grad, device)
    return fn


zeros = _creator(np.zeros)
ones = _creator(np.ones)
empty = _creator(np.zeros)
zeros.__name__, ones.__name__, empty.__name__ = "zeros", "ones", "empty"


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape = _sizes_from_args((size,) if not isinstance(size, (tuple, list)) else (tuple(size),))
    if dtype is None:
        dtype = D._scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    return _finish(np.full(shape, fill_value, dtype=dtype.np), requires_grad, device)


def _like(fill):
    def fn(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
        npd = _np_dtype(dtype, input._data.dtype)
        return _finish(fill(input._data.shape, npd), requires_grad, device)
    return fn


zeros_like = _like(np.zeros)
ones_like = _like(np.ones)
empty_like = _like(np.zeros)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    npd = _np_dtype(dtype, input._data.dtype)
    return _finish(np.full(input._data.shape, fill_value, dtype=npd), requires_grad, device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError(f"upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in vals) else D._default_float
    n = max(0, int(np.ceil((vals[1] - vals[0]) / vals[2])))
    data = (vals[0] + np.arange(n, dtype=np.float64) * vals[2]) if dtype.is_floating_point else \
        np.arange(vals[0], vals[1], vals[2])
    return _finish(data.astype(dtype.np), requires_grad, device)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    npd = _np_dtype(dtype, D._default_float.np)
    return _finish(np.linspace(start, end, steps).astype(npd), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_np_dtype(dtype, D._default_float.np)), requires_grad, device)


def _legacy(dtype):
    def ctor(*args):
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            return tensor(args[0], dtype=dtype)
        return zeros(*(args or (0,)), dtype=dtype)
    return ctor


FloatTensor = _legacy(D.float32)
DoubleTensor = _legacy(D.float64)
HalfTensor = _legacy(D.float16)
LongTensor = _legacy(D.int64)
IntTensor = _legacy(D.int32)
BoolTensor = _legacy(D.bool)
