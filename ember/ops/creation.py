"""Tensor creation: tensor, zeros, ones, full, arange, linspace, eye, *_like (random ones live in ops/random.py).

The arguments are checked here, with PyTorch's errors; the arrays come from the device's backend (the CPU's without
a device argument), host data (Python numbers and lists, NumPy arrays) included.
"""
from __future__ import annotations

import cmath
import math
import struct
import warnings

from .. import _dtype as D
from .._device import DEVICES, NAMESPACES, backend_of, check_device, fp_quiet, fp_restore, move, quietly
from .._device import cpu as _cpu_device, device as _device_type
from .._origin import warn_once
from .._state import _state as _gm_state, func_depth as _func_depth, func_new_leaf as _func_new_leaf
from .._tensor import _SCALAR_WARNING, Tensor, _sizes_from_args, make
from .._util import refuse_shell
from ..autograd import _profiling
from ._registry import method as _register_method


def device_backend(d: _device_type | None = None):
    """The backend of device ``d`` (checked; None: the CPU), which makes the arrays of tensors created on it."""
    return DEVICES["cpu" if d is None else d.type].backend


# The CPU's backend is the host's: its scalar and array types are what users pass as Python numbers and data.
_HOST = device_backend()


def _finish(data, requires_grad: bool, device) -> Tensor:
    """A new tensor of ``data`` (moved onto ``device`` when one is given and the data is elsewhere: host data,
    or ``zeros_like(x, device=...)``), after the device argument's check; ``requires_grad`` for floating data
    only."""
    d = check_device(device, creation=True)
    if device is not None or d is not _cpu_device:   # (None: the default device, set_default_device's)
        data = move(data, d.type)
    t = make(data)
    if requires_grad:
        if not t.dtype.is_floating_point and not t.dtype.is_complex:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
        if _func_depth[0]:
            _func_new_leaf[0](t)
    return t


_host_cast = NAMESPACES[_HOST.host_array].cast   # astype without a copy where the dtype is already right
_NUMBER = (bool, int, float, complex, _HOST.host_bool, _HOST.host_number)
# PyTorch takes the Python types as dtypes too: float -> float64, int -> int64, bool -> bool, complex -> complex128.
_PY_DTYPES = {float: D.float64, int: D.int64, bool: D.bool, complex: D.complex128}


def _check_bool(value, op: str, arg: str = "requires_grad", none_ok: bool = True) -> bool:
    """A bool argument; a truthy string such as 'no' must not pass for True."""
    if value is None and none_ok:
        return False
    if not isinstance(value, (bool, _HOST.host_bool)):
        raise TypeError(f"{op}(): argument '{arg}' must be bool, not {type(value).__name__}")
    return bool(value)


def _check_dtype(dtype, op: str, default: D.dtype | None = None) -> D.dtype | None:
    if dtype is None:
        return default
    if isinstance(dtype, D.dtype):
        return dtype
    if isinstance(dtype, type) and dtype in _PY_DTYPES:
        return _PY_DTYPES[dtype]
    raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")


def _check_device(device, op: str):
    """The backend of the ``device`` argument (checked; None: the CPU)."""
    if device is not None and not isinstance(device, (str, int, _device_type)):
        raise TypeError(f"{op}(): argument 'device' must be torch.device, not {type(device).__name__}")
    return device_backend(check_device(device, creation=True))


def _check_memory_format(value, op: str) -> None:
    """A ``memory_format=`` argument of a creation function: a torch.memory_format or None."""
    if value is not None and not isinstance(value, D.memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(value).__name__}")


def _check_number(value, op: str, arg: str, pos: int):
    """A Number argument (a 0-d tensor counts, as in PyTorch), as a Python scalar."""
    if isinstance(value, Tensor) and value._data.ndim == 0:
        return value._data.item()
    if not isinstance(value, _NUMBER):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Number, not {type(value).__name__}")
    return value.item() if isinstance(value, _HOST.host_scalar) else value


def _check_int(value, op: str, arg: str, pos: int) -> int:
    if not isinstance(value, (int, _HOST.host_integer)) or isinstance(value, (bool, _HOST.host_bool)):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be int, not {type(value).__name__}")
    return int(value)


def _check_input(input, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input




def _infer_np(data, float_dtype=None):
    """A host array for nested Python data, typed the way PyTorch infers: bool < int64 < default float.
    ``float_dtype``: the requested dtype when it is floating (floats go straight to it, unrounded)."""
    try:
        arr = _HOST.array(data)
    except RuntimeError:   # tensors that require grad refuse __array__; go through tolist() below
        arr = _HOST.array(None)
    except (ValueError, TypeError):
        raise _bad_data_error(data) from None
    k = arr.dtype.kind
    if k == "O":
        try:
            arr = _HOST.array(_tensors_to_lists(data))
        except (ValueError, TypeError):
            raise _bad_data_error(data) from None
        k = arr.dtype.kind
    if k in "USO":
        raise _bad_data_error(data)
    if float_dtype is None and k in "fiubc" and isinstance(data, (list, tuple)):
        dt = _numpy_scalar_dtype(data)
        if dt is not None:   # NumPy scalars keep their dtype in PyTorch's inference
            return _host_cast(arr, dt.np)
    if k == "f":
        fp = fp_quiet()   # 1e40 -> inf in float32, silently as PyTorch
        try:
            return _host_cast(arr, float_dtype or D._default_float.np)
        finally:
            fp_restore(fp)
    if k == "u" and arr.dtype.itemsize == 8:
        raise ValueError("Overflow when unpacking long long")
    if k in "iu":
        return _host_cast(arr, D.int64.np)
    if k == "b":
        return arr
    if k == "c":   # Python complex numbers: the default complex dtype (complex64 by default), or the one asked for
        if isinstance(data, (list, tuple)) or not isinstance(data, _HOST.host_scalar):
            cx = float_dtype if float_dtype is not None and float_dtype.kind == "c" else D.default_complex().np
            return _host_cast(arr, cx)
        return arr
    raise TypeError(f"tensor(): unsupported data of dtype {arr.dtype}")


_SCALARS = _NUMBER


def _numpy_scalar_dtype(data):
    """PyTorch's dtype for nested data holding NumPy scalars: every element's own type (Python floats the
    default float, ints int64, NumPy scalars their dtype) promoted together; None without NumPy scalars."""
    types = _HOST.element_types(data)
    if not any(issubclass(t, _HOST.host_scalar) for t in types):
        return None
    result = None
    for t in types:
        if issubclass(t, _HOST.host_scalar):
            d = D._FROM_NP.get(_HOST.host_dtype(t))
            if d is None:
                return None
        elif t in (bool, int, float):
            d = D._scalar_dtype(t())
        else:
            return None
        result = d if result is None else D.promote_types(result, d)
    return result


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


def _has_tensor(data) -> bool:
    """Nested data holds a Tensor somewhere (cheap for flat lists of numbers: types only)."""
    types = set(map(type, data))
    if any(issubclass(t, Tensor) for t in types):
        return True
    if list in types or tuple in types:
        return any(_has_tensor(d) for d in data if isinstance(d, (list, tuple)))
    return False


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        if data._data.size != 1:   # PyTorch reads each tensor inside nested data as one number
            raise ValueError("only one element tensors can be converted to Python scalars")
        if data._requires_grad and _gm_state.enabled:   # as PyTorch, which reads each as float(tensor)
            warn_once("scalar", _SCALAR_WARNING)
        return data._data.item()
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(d) for d in data]
    return data


_F64 = D.float64.np
_F32_MAX = D.finfo(D.float32).max


def tensor(data, dtype: D.dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (Python scalars, nested lists, NumPy arrays, tensors)."""
    if type(data) is float and dtype is None and device is None and (requires_grad is True or requires_grad is False):
        # one Python float (micrograd-style code makes thousands): straight to a 0-d array of the default dtype
        npd = D._default_float.np
        if npd is _F64 or abs(data) <= _F32_MAX or data != data:
            arr = _HOST.array(data, npd)
        else:
            fp = fp_quiet()   # 1e40 -> inf in float32, silently as PyTorch
            try:
                arr = _HOST.array(data, npd)
            finally:
                fp_restore(fp)
        t = make(arr)
        t._requires_grad = requires_grad
        if requires_grad and _func_depth[0]:
            _func_new_leaf[0](t)
        return t
    dtype = _check_dtype(dtype, "tensor")
    requires_grad = _check_bool(requires_grad, "tensor", none_ok=False)
    _check_device(device, "tensor")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "torch.tensor(sourceTensor).", UserWarning, stacklevel=2)
        arr = backend_of(data._data).copy(data._data)
    elif isinstance(data, _HOST.host_array):
        D.from_numpy_dtype(data.dtype)
        arr = _HOST.copy(data)
    elif isinstance(data, _HOST.host_scalar):
        arr = _HOST.array(data)
    elif isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    else:
        if isinstance(data, (list, tuple)) and _has_tensor(data):
            data = _tensors_to_lists(data)
        if dtype is None or dtype.is_floating_point or dtype.is_complex:   # complex128 never rounds via complex64
            # float8: PyTorch rounds each Python float to float32 first (the cast below rounds to float8)
            arr = _infer_np(data, None if dtype is None else D.float32.np if dtype in D.FLOAT8 else dtype.np)
        else:   # Python numbers into an integral dtype: each checked, floats truncated from double (not float32)
            arr = _infer_np(data, D.float64.np)
            if not _HOST.ints_fit(arr, dtype.np):   # tensor([inf], dtype=torch.int32): PyTorch's check
                raise RuntimeError(f"value cannot be converted to type {dtype.np.name} without overflow")
    if dtype is not None:
        fp = fp_quiet()   # 1e300 into float16 is inf, silently as in PyTorch
        try:
            arr = NAMESPACES[type(arr)].cast(arr, dtype.np)
        finally:
            fp_restore(fp)
    return _finish(arr, requires_grad, device)


@quietly
def as_tensor(data, dtype: D.dtype | None = None, device=None) -> Tensor:
    """``data`` as a tensor, without a copy where it already is one (or a NumPy array) of that dtype."""
    dtype = _check_dtype(dtype, "as_tensor")
    _check_device(device, "as_tensor")
    if isinstance(data, Tensor):
        t = data if dtype is None or dtype is data.dtype else data.to(dtype)
        return t if device is None else t.to(device)
    if isinstance(data, _HOST.host_array):
        D.from_numpy_dtype(data.dtype)
        return _finish(_HOST.base_array(data if dtype is None else _host_cast(data, dtype.np)), False, device)
    return tensor(data, dtype, device)


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (a NumPy array)."""
    if not isinstance(ndarray, _HOST.host_array):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    return make(_HOST.base_array(ndarray))


def _creator(name, fill: str):
    def fn(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
        if not size:
            raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
        fmt = _empty_format(name, kw)
        npd = _check_dtype(dtype, name, D._default_float).np
        rg = _check_bool(requires_grad, name)
        be = _check_device(device, name)
        D.check_layout(layout, name)
        if out is not None:   # ignoring out= would be a silent wrong answer
            raise NotImplementedError(f"ember: {name}(out=...) is not supported yet")
        data = getattr(be, fill)(_sizes_from_args(size, name), npd)
        if fmt is not None:
            rank = len(D._CL_ORDER[fmt._name])
            if data.ndim != rank:
                raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
            relayout = getattr(NAMESPACES[type(data)], "channels_last_copy", None)
            if relayout is None:
                raise NotImplementedError(f"ember: memory_format={fmt!r} is built for the NumPy backend only")
            data = relayout(data)
        return _finish(data, rg, device)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"A new tensor of the given size, filled by {fill} (default float dtype)."
    return fn


def _empty_format(name: str, kw: dict):
    """``empty``'s ``memory_format`` (the channels-last format asked for, or None); zeros and ones take none."""
    fmt = kw.pop("memory_format", None) if name == "empty" else None
    if kw:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kw))}'")
    _check_memory_format(fmt, name)
    if fmt is D.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    return None if fmt is None or fmt is D.contiguous_format else fmt


zeros = _creator("zeros", "zeros")
ones = _creator("ones", "ones")
empty = _creator("empty", "zeros")

_INT64 = (-2 ** 63, 2 ** 63)


def _fill_array(shape, fill_value, dtype: D.dtype, op: str, be):
    """An array of ``shape`` filled with ``fill_value``, made by the device backend ``be``."""
    if isinstance(fill_value, int) and not isinstance(fill_value, bool) and \
            not _INT64[0] <= fill_value < _INT64[1]:
        if not -2 ** 64 < fill_value < 2 ** 64:   # PyTorch's scalar holds at most 64 bits
            raise OverflowError("int too big to convert")
    fill_value = D.checked_scalar(fill_value, dtype.np)   # 1e40 in float32, inf in int32: PyTorch's RuntimeError
    fp = fp_quiet()   # 1e300 -> inf in float32, silently as PyTorch
    try:
        return be.full(shape, fill_value, dtype=dtype.np)
    finally:
        fp_restore(fp)


@quietly
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (its dtype inferred from the value)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    fill_value = _check_number(fill_value, "full", "fill_value", 2)
    dtype = _check_dtype(dtype, "full", D._scalar_dtype(fill_value))
    rg = _check_bool(requires_grad, "full")
    be = _check_device(device, "full")
    D.check_layout(layout, "full")
    if out is not None:
        raise NotImplementedError("ember: full(out=...) is not supported yet")
    return _finish(_fill_array(_sizes_from_args((tuple(size),), "full"), fill_value, dtype, "full", be), rg, device)


def _like(name, fill):
    def fn(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
           pin_memory=False):
        _check_input(input, name)
        npd = _check_dtype(dtype, name, input.dtype).np
        rg = _check_bool(requires_grad, name)
        be = _check_device(device, name) if device is not None else backend_of(input._data)   # default: input's
        D.check_layout(layout, name)
        _check_memory_format(memory_format, name)
        like = input._data
        if backend_of(like) is not be:   # onto another device: a stand-in of its own of the shape
            like = be.zeros(like.shape, npd)
        elif any(st == 0 and n > 1 for st, n in zip(like.strides, like.shape)):
            like = _dense_like(like, be, npd)
        return _finish(getattr(be, fill)(like, dtype=npd), rg, device)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"A new tensor shaped like ``input`` (and of its dtype unless given), filled as {fill}."
    return fn


def _dense_like(arr, be, npd):
    """A stand-in for an overlapping array (an expanded one): dense, its dims in the order PyTorch's like-functions
    infer from the strides (a broadcast dim is ambiguous: it keeps its place, as in a contiguous tensor)."""
    shape, strides = arr.shape, arr.strides
    n = len(shape)

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0
    perm = list(range(n - 1, -1, -1))   # innermost first
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    outer_first = perm[::-1]
    laid = be.zeros(tuple(shape[d] for d in outer_first), npd)
    return NAMESPACES[type(laid)].permute(laid, [outer_first.index(d) for d in range(n)])


zeros_like = _like("zeros_like", "zeros_like")
ones_like = _like("ones_like", "ones_like")
empty_like = _like("empty_like", "zeros_like")


@quietly
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None, pin_memory=False) -> Tensor:
    _check_input(input, "full_like")
    fill_value = _check_number(fill_value, "full_like", "fill_value", 2)
    dtype = _check_dtype(dtype, "full_like", input.dtype)
    rg = _check_bool(requires_grad, "full_like")
    be = _check_device(device, "full_like") if device is not None else backend_of(input._data)
    D.check_layout(layout, "full_like")
    _check_memory_format(memory_format, "full_like")
    return _finish(_fill_array(input._data.shape, fill_value, dtype, "full_like", be), rg, device)


@quietly
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
           pin_memory=False) -> Tensor:
    """``start, start + step, ...`` up to ``end`` (excluded); int64 when every bound is an integer."""
    if end is None:
        vals = [0, _check_number(start, "arange", "end", 1), _check_number(step, "arange", "step", 2)]
    else:
        vals = [_check_number(v, "arange", a, i + 1) for i, (v, a) in enumerate(zip((start, end, step),
                                                                                    ("start", "end", "step")))]
    # PyTorch converts the bounds to double (a complex bound with an imaginary part is its overflow error)
    vals = [D.checked_scalar(v, D.float64.np) if type(v) is complex else v for v in vals]
    dtype = _check_dtype(dtype, "arange")
    if dtype is not None and dtype.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{D.type_word(dtype.np)}'")
    refuse_shell(dtype, "arange_cpu")
    rg = _check_bool(requires_grad, "arange")
    be = _check_device(device, "arange")
    D.check_layout(layout, "arange")
    if out is not None:
        raise NotImplementedError("ember: arange(out=...) is not supported yet")
    if not all(_HOST.isfinite(v) for v in vals[:2]):
        raise RuntimeError(f"unsupported range: {vals[0]} -> {vals[1]}")
    if not vals[2] or vals[2] != vals[2]:   # zero or NaN
        raise RuntimeError("step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = D.int64 if all(isinstance(v, int) for v in vals) else D._default_float
    if dtype is D.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    n = max(0, math.ceil((vals[1] - vals[0]) / vals[2]))
    return _finish(be.arange(vals[0], vals[1], vals[2], n, dtype.np), rg, device)


@quietly
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included)."""
    for v, a in ((start, "start"), (end, "end")):
        if isinstance(v, Tensor) and v._data.ndim:
            raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, but got {a} with "
                               f"{v._data.ndim} dimension(s).")
    D.check_layout(layout, "linspace")
    start, end, steps, dtype, rg, be = _space_args("linspace", start, end, steps, dtype, requires_grad, device, out)
    refuse_shell(dtype, "linspace_cpu")
    if dtype.is_complex:
        return _finish(_complex_linspace(be, complex(start), complex(end), steps, dtype), rg, device)
    for v in (start, end):
        if dtype.is_floating_point:
            D.checked_scalar(v, dtype.np)
        elif steps > 1:   # integers: the bounds are cast to the output type first
            _checked_int(v, dtype)
    return _finish(be.linspace(start, end, steps, dtype.np), rg, device)


def _complex_linspace(be, start: complex, end: complex, steps: int, dtype: D.dtype):
    """A complex linspace: PyTorch's complex step divides each part by steps - 1 and scales by a real index, so
    the real and imaginary parts are each the real kernel's linspace of the parts."""
    real = dtype.to_real().np
    re, im = be.linspace(start.real, end.real, steps, real), be.linspace(start.imag, end.imag, steps, real)
    return NAMESPACES[type(re)].make_complex(re, im)


def _space_args(op, start, end, steps, dtype, requires_grad, device, out):
    """The checks linspace and logspace share, as PyTorch makes them."""
    start = _check_number(start, op, "start", 1)
    end = _check_number(end, op, "end", 2)
    steps = _check_int(steps, op, "steps", 3)
    # a complex bound makes the default dtype complex, and a real one refused
    cx = complex in (type(start), type(end))
    if cx and isinstance(dtype, D.dtype) and not dtype.is_complex:
        raise RuntimeError(f"torch.{op}(): inferred dtype {D.c_type_name(D.default_complex().np)} can't be safely "
                           f"cast to passed dtype {D.type_word(dtype.np)}")
    dtype = _check_dtype(dtype, op, D.default_complex() if cx else D._default_float)
    rg = _check_bool(requires_grad, op)
    be = _check_device(device, op)
    if out is not None:
        raise NotImplementedError(f"ember: {op}(out=...) is not supported yet")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dtype is D.bool:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")
    return start, end, steps, dtype, rg, be


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                "bool": "bool"}


def _checked_int(v, dt: D.dtype):
    """A bound converted to an integral dtype as PyTorch's Scalar conversion does, refusing overflow."""
    info = D.iinfo(dt) if dt is not D.bool else None
    lo, hi = (0, 1) if info is None else (info.min, info.max)
    if dt is D.uint8 and isinstance(v, int):
        lo = -hi   # negative integers wrap around (two's complement) for unsigned types
    if not lo <= v <= hi:
        raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[dt.np.name]} without overflow")
    return v


@quietly
def logspace(start, end, steps, base: float = 10.0, *, dtype=None, device=None, requires_grad=False,
             out=None, layout=None, pin_memory=False) -> Tensor:
    """``base ** linspace(start, end, steps)``, computed in double as PyTorch's CPU kernel."""
    D.check_layout(layout, "logspace")
    start, end, steps, dtype, rg, be = _space_args("logspace", start, end, steps, dtype, requires_grad, device, out)
    base = _check_number(base, "logspace", "base", 4)
    if dtype.is_complex:   # PyTorch's complex pow(base, z) = exp(z log(base)), in the complex dtype
        expo = _complex_linspace(be, complex(start), complex(end), steps, dtype)
        xp = NAMESPACES[type(expo)]
        return _finish(xp.exp(expo * xp.cast(be.asarray(cmath.log(base)), dtype.np)), rg, device)
    return _finish(be.logspace(start, end, steps, float(base), dtype.np), rg, device)


def _tri_indices(name, upper: bool, row, col, offset, dtype, device, layout=None):
    row = _check_int(row, name, "row", 1)
    col = _check_int(col, name, "col", 2)
    offset = _check_int(offset, name, "offset", 3)
    dtype = _check_dtype(dtype, name, D.int64)
    be = _check_device(device, name)
    D.check_layout(layout, name)
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
    if dtype not in (D.int64, D.int32):
        raise NotImplementedError("\"" + name + "\" not implemented for '" + D.type_word(dtype.np) + "'")
    return _finish(be.tri_indices(upper, row, col, offset, dtype.np), False, device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (row, col) indices of the lower triangle of a ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("tril_indices", False, row, col, offset, dtype, device, layout)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (row, col) indices of the upper triangle of a ``row`` x ``col`` matrix, row by row."""
    return _tri_indices("triu_indices", True, row, col, offset, dtype, device, layout)


@quietly
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """A tensor from ``obj``, sharing memory with it when it is a tensor or array of the right dtype
    (unless ``copy=True``); ``copy=False`` raises where a copy would be needed."""
    dtype = _check_dtype(dtype, "asarray")
    rg = _check_bool(requires_grad, "asarray")
    _check_device(device, "asarray")
    if isinstance(obj, Tensor):
        t = obj if dtype is None or dtype is obj.dtype else None
        if t is None:
            if copy is False:
                raise ValueError("can't alias tensor of a different dtype without a copy")
            t = obj.to(dtype)
        elif copy:
            t = obj.clone()
        if device is not None:
            t = t.to(device)
        if rg:
            t = t.detach()._set_requires_grad(True) if t is obj else t._set_requires_grad(True)
        return t
    if isinstance(obj, _HOST.host_array) and copy is not True:
        D.from_numpy_dtype(obj.dtype)
        obj = _HOST.base_array(obj)
        if dtype is not None and obj.dtype != dtype.np:
            if copy is False:
                raise ValueError("can't alias NumPy array of a different dtype without a copy")
            return _finish(obj.astype(dtype.np), rg, device)
        return _finish(obj, rg, device)
    if copy is False and not isinstance(obj, _HOST.host_array):
        raise ValueError(f"can't alias Python object of type {type(obj).__name__} without copying")
    return tensor(obj, dtype=dtype, device=device, requires_grad=rg)


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-d tensor sharing memory with a Python buffer (``bytes``, ``bytearray``, ``array.array``, ...)."""
    dtype = _check_dtype(dtype, "frombuffer")
    rg = _check_bool(requires_grad, "frombuffer")
    try:
        data = _HOST.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    except (TypeError, ValueError) as e:
        raise ValueError(f"frombuffer(): {e}") from None
    return _finish(data, rg, None)


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A 1-d CPU tensor of ``size`` elements whose memory is the file mapped: with ``shared=True`` writes reach the
    file (created or extended as needed), else they stay private (the file must hold ``size`` elements)."""
    if not isinstance(filename, str):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not {type(filename).__name__}")
    shared = _check_bool(shared, "from_file", "shared")
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"from_file(): argument 'size' (position 3) must be int, not {type(size).__name__}")
    dtype = _check_dtype(dtype, "from_file", D._default_float)
    D.check_layout(layout, "from_file")
    if device is not None and check_device(device, creation=True).type != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped to files")
    rg = _check_bool(requires_grad, "from_file")
    return _finish(_HOST.map_file(filename, shared, size, dtype.np), rg, None)


_register_method("layout", property(lambda self: D.strided, doc="Always ``torch.strided`` in ember."))


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return tensor(data, dtype=dtype or self.dtype, device=self.device if device is None else device,
                  requires_grad=requires_grad)


@quietly
def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if device is not None:
        return full(size, fill_value, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)
    dtype = _check_dtype(dtype, "new_full", self.dtype)
    shape = _sizes_from_args((tuple(size) if isinstance(size, (tuple, list)) else size,), "new_full")
    fill_value = _check_number(fill_value, "new_full", "fill_value", 2)
    return _finish(_fill_array(shape, fill_value, dtype, "new_full", backend_of(self._data)),
                   _check_bool(requires_grad, "new_full"), None)


def _type_as(self, other) -> Tensor:
    if not isinstance(other, Tensor):
        raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self.to(other.dtype)


for _name, _fn in (("new_tensor", _new_tensor), ("new_full", _new_full), ("type_as", _type_as)):
    _register_method(_name, _fn)


_NO_M = object()


def eye(n, m=_NO_M, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
        pin_memory=False) -> Tensor:
    """The ``n`` x ``m`` identity matrix (``m`` defaults to ``n``)."""
    n = _check_int(n, "eye", "n", 1)
    m = n if m is _NO_M else _check_int(m, "eye", "m", 2)
    dtype = _check_dtype(dtype, "eye", D._default_float)
    refuse_shell(dtype, "eye", "HILQ")
    rg = _check_bool(requires_grad, "eye")
    be = _check_device(device, "eye")
    D.check_layout(layout, "eye")
    if out is not None:
        raise NotImplementedError("ember: eye(out=...) is not supported yet")
    for v, a in ((n, "n"), (m, "m")):
        if v < 0:
            raise RuntimeError(f"{a} must be greater or equal to 0, got {v}")
    return _finish(be.eye(n, m, dtype=dtype.np), rg, device)


def _legacy(dtype):
    def ctor(*args):
        if len(args) == 1 and not isinstance(args[0], (int, _HOST.host_integer)):
            return tensor(args[0], dtype=dtype)
        return zeros(*(args or (0,)), dtype=dtype)
    return ctor


FloatTensor = _legacy(D.float32)
DoubleTensor = _legacy(D.float64)
HalfTensor = _legacy(D.float16)
LongTensor = _legacy(D.int64)
IntTensor = _legacy(D.int32)
BoolTensor = _legacy(D.bool)
ByteTensor = _legacy(D.uint8)
CharTensor = _legacy(D.int8)
ShortTensor = _legacy(D.int16)
BFloat16Tensor = _legacy(D.bfloat16)


# ----- window functions (PyTorch's aten/src/ATen/native/TensorFactories.cpp, step for step) ----------------------
# Each is arange(N) put through the same Tensor ops, each rounding to the dtype where PyTorch's in-place steps do,
# so the values are PyTorch's to the last bit. A periodic window is the symmetric one of N + 1, less its last point.

def _scalar_for(v: float, dtype: D.dtype) -> float:
    """A Python number as PyTorch's window code multiplies by it: a scalar the C++ code passes to ``mul_``/``add_``
    is cast to the tensor's dtype first, which for float16 rounds it (float32 and float64 compute with the same
    value either way)."""
    return struct.unpack("e", struct.pack("e", v))[0] if dtype is D.float16 else v


def _window(name: str, window_length, periodic, dtype, layout, device, requires_grad, body) -> Tensor:
    n = _check_int(window_length, name, "window_length", 1)
    periodic = _check_bool(periodic, name, "periodic", none_ok=False)
    dtype = _check_dtype(dtype, name, D._default_float)
    rg = _check_bool(requires_grad, name)
    _check_device(device, name)
    D.check_layout(layout, name)
    if not dtype.is_floating_point and not dtype.is_complex:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        return (ones if n else empty)(n, dtype=dtype, device=device, requires_grad=rg)
    if dtype.is_complex:   # PyTorch takes complex dtypes as floating and then fails in its arange
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{D.type_word(dtype.np)}'")
    m = n + 1 if periodic else n
    w = body(arange(m, dtype=dtype, device=device), m)
    return _finish((w[:n] if periodic else w)._data, rg, None)


def _hamming(k: Tensor, m: int, alpha: float, beta: float) -> Tensor:
    dt = k.dtype
    return (k * _scalar_for(math.pi * 2.0 / (m - 1), dt)).cos() * _scalar_for(-beta, dt) + _scalar_for(alpha, dt)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """``alpha - beta * cos(2 pi k / (N - 1))``."""
    alpha = _check_number(alpha, "hamming_window", "alpha", 3)
    beta = _check_number(beta, "hamming_window", "beta", 4)
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda k, m: _hamming(k, m, alpha, beta))


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi k / (N - 1))`` (PyTorch's: hamming_window with alpha = beta = 0.5)."""
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda k, m: _hamming(k, m, 0.5, 0.5))


def _blackman(k: Tensor, m: int) -> Tensor:
    dt = k.dtype
    k = k * _scalar_for(math.pi / (m - 1), dt)
    return (k * 4).cos() * _scalar_for(0.08, dt) - (k * 2).cos() * 0.5 + _scalar_for(0.42, dt)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, _blackman)


def _bartlett(k: Tensor, m: int) -> Tensor:
    w = k * _scalar_for(2.0 / (m - 1), k.dtype)
    half = ((m - 1) >> 1) + 1   # the second half falls: 2 - w (PyTorch's mul_(-1).add_(2), the same bits)
    return (w * -1 + 2).where(k >= half, w)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """The triangle ``1 - |2k / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, _bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``i0(beta sqrt(1 - ((k - a) / a)^2)) / i0(beta)``, a = (N - 1) / 2: PyTorch's kaiser_window kernel, which
    computes in float for float16 and rounds once."""
    beta = _check_number(beta, "kaiser_window", "beta", 3)

    def body(k: Tensor, m: int) -> Tensor:
        return make(device_backend(k.device).kaiser_window(m, beta, k.dtype.np))
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, body)


# ----- what the profiler records for the factories: PyTorch's op and the ops its composite runs inside -----------
_EMPTY_LIKE = ("empty_like", (("empty_strided", ()),))
_profiling.FACTORIES += [
    (zeros, "zeros", (("empty", ()), ("zero_", ()))), (ones, "ones", (("empty", ()), ("fill_", ()))),
    (empty, "empty", ()), (full, "full", (("empty", ()), ("fill_", ()))),
    (arange, "arange", (("empty", ()), ("arange", (("resize_", ()),)))),
    (linspace, "linspace", (("empty", ()), ("linspace", ()))), (logspace, "logspace", (("empty", ()), ("logspace", ()))),
    (eye, "eye", (("empty", ()), ("eye", (("resize_", ()), ("zero_", ()))))),
    (zeros_like, "zeros_like", (_EMPTY_LIKE, ("zero_", ()))), (ones_like, "ones_like", (_EMPTY_LIKE, ("fill_", ()))),
    (empty_like, "empty_like", (("empty_strided", ()),)), (full_like, "full_like", (_EMPTY_LIKE, ("fill_", ()))),
]
