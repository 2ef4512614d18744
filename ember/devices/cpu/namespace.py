"""The raw array namespace of device 'cpu': thin NumPy functions that op rules call as ``xp.*``.

Plain ``backward()`` runs every derivative rule with this namespace on raw arrays: no Tensors,
no graph. ``create_graph=True`` runs the very same rules with ember's own namespace
(``ember.ops.graph_ns``) on Tensors, so gradients come out differentiable. Both namespaces export
the same names (a test checks it). Device 'cuda' (devices/cuda) runs the common kernels on CuPy instead.
Each op family keeps its NumPy kernels in a file of its own beside this one; they are part of this namespace.
"""
from __future__ import annotations

import functools as _functools
import math as _math
import sys as _sys

import numpy as np

from ..index import view_of as _view_of
from . import creation as _creation
from . import random as _random
from . import shared as _shared
from . import shape as _shape
from . import reduced as _reduced
from .reduced import BF16 as _BF16, F32 as _F32, F8 as _F8, SCALAR_TYPES as _REDUCED_SCALARS

# NumPy reports floating-point exceptions (overflow, 0/0, log(0), inf/nan cast to an integer) as RuntimeWarnings;
# PyTorch is silent. ember's entry points (apply and the operator fast paths, the engine, optimizer steps,
# creation, casts, printing) switch NumPy's error state to "ignore" while they compute and put the caller's
# state back before they return: the user's own NumPy code keeps its warnings, and no warnings filter (which
# the user's filters override, and which depends on the frame a warning is attributed to) is involved.
# NumPy 2 keeps the state in a context variable: setting it to a prepared "ignore" state and resetting its
# token costs about 0.1 us (an np.errstate object costs about 0.8 us).
_fp_var = getattr(getattr(getattr(np, "_core", None), "_ufunc_config", None), "_extobj_contextvar", None)
# _fp_quiet() makes NumPy's floating-point exceptions silent and returns the token _fp_restore(token) takes; both
# are C callables (a partial, a bound method): no Python frame per op. (The prepared state keeps the buffer size
# and error callback NumPy had at import.)
if _fp_var is not None:
    with np.errstate(all="ignore"):
        _fp_quiet = _functools.partial(_fp_var.set, _fp_var.get())
    _fp_restore = _fp_var.reset
else:  # NumPy 1.x: a per-thread state that seterr sets and returns
    _fp_quiet = _functools.partial(np.seterr, all="ignore")

    def _fp_restore(token) -> None:
        np.seterr(**token)


def _quietly(fn):
    """``fn`` with NumPy's floating-point exceptions silent while it runs (an entry point's decorator)."""
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        token = _fp_quiet()
        try:
            return fn(*args, **kwargs)
        finally:
            _fp_restore(token)
    return wrapper


class _Quiet:
    """``with quiet():`` -- _fp_quiet() on entry, _fp_restore on exit (reentrant: one token per entry)."""

    __slots__ = ("tokens",)

    def __init__(self):
        self.tokens = []

    def __enter__(self):
        self.tokens.append(_fp_quiet())
        return self

    def __exit__(self, *exc) -> None:
        _fp_restore(self.tokens.pop())


_this = _sys.modules[__name__]  # view_replay hands this namespace to the recorded view ops


def _scalar_math_orders() -> dict:
    """``{(op, dtype): swapped}`` for ``a OP b`` (OP: operator.add, sub, mul) on two NumPy scalars of one float dtype
    (float32, float64): whether NumPy's scalar math gives the ufunc's bits on 0-d arrays (``np.OP(a, b)``) as
    ``a OP b`` (False) or as ``b OP a`` (True: a build whose C compiler swapped a commutative op's operands takes the
    other NaN's payload when both operands are NaN; every other input gives the same bits either way). A pair is
    absent where neither order matches on the probe values. ``("add_into", dtype)``: the same for
    ``np.add(a, b, out=a)`` (``add_into``), whose in-place loop may keep the other NaN than ``np.add(a, b)``.
    ember.compile's programs compute 0-d chains on scalars where this says how (a NumPy scalar op costs ~40 ns, the
    ufunc on 0-d arrays ~330)."""
    import operator as _op
    out = {}
    with np.errstate(all="ignore"):
        for dt, it, nan_bits in ((np.float32, np.uint32, (0x7FC00001, 0xFFC00123, 0x7F800001, 0x7FC00000)),
                                 (np.float64, np.uint64, (0x7FF8000000000001, 0xFFF8000000000123,
                                                          0x7FF0000000000001, 0x7FF8000000000000))):
            fi = np.finfo(dt)
            vals = list(np.array(nan_bits, it).view(dt)) + [dt(v) for v in (
                0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, fi.max, -fi.max, fi.tiny, fi.smallest_subnormal, 3.0e-3)]
            for op in (_op.add, _op.sub, _op.mul, "add_into"):
                if op == "add_into":   # np.add(dst, src, out=dst) on 0-d arrays (add_into; its NaN may differ)
                    def ref(a, b):
                        d = np.array(a)
                        np.add(d, np.array(b), out=d, casting="unsafe")
                        return d.view(it)[()]
                    f = _op.add
                else:
                    def ref(a, b, op=op):
                        return np.asarray(op(np.asarray(a), np.asarray(b))).view(it)[()]
                    f = op
                want = [ref(a, b) for a in vals for b in vals]
                for swapped in (False, True):
                    got = [np.asarray(f(b, a) if swapped else f(a, b)).view(it)[()] for a in vals for b in vals]
                    if got == want and all(type(f(a, b)) is dt for a in vals for b in vals):
                        out[(op, np.dtype(dt))] = swapped
                        break
    return out


_ORDERS: list = []   # [orders, add_into's {dtype: swapped}], probed at the first use (~10 ms: not at import)


def _orders() -> list:
    if not _ORDERS:
        orders = _scalar_math_orders()
        _ORDERS[:] = [orders, {dt: sw for (op, dt), sw in orders.items() if op == "add_into"}]
    return _ORDERS


_F32_DT = np.dtype(np.float32)


class _Backend:
    """What the op machinery, the engine and Tensor need from the device beyond the rules' functions:
    moving data in and out of its arrays. Everything outside ember.devices reaches the array library through here."""

    device_type = "cpu"
    array_types = (np.ndarray,)
    # the types of raw arrays this device's kernels return: NumPy scalars count (raw gradients of 0-d tensors
    # can come back as np.float32 and kin)
    scalar_types = (np.ndarray, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                    np.bool_, np.complex64, np.complex128) + _REDUCED_SCALARS
    forward_errors = (ValueError, IndexError, TypeError, np.exceptions.AxisError)
    has_data = True   # ('meta' has none)

    @staticmethod
    def scalar_orders() -> dict:
        """See ``_scalar_math_orders`` (probed once)."""
        return _orders()[0]

    asarray = staticmethod(np.asarray)
    may_share_memory = staticmethod(np.may_share_memory)
    zeros = staticmethod(np.zeros)
    @staticmethod
    def full(shape, fill_value, dtype=None):
        if dtype in _F8:   # PyTorch's float8 conversion of the value (reduced.py)
            fill_value = _reduced.float8_scalar(fill_value, dtype)
        return np.full(shape, fill_value, dtype=dtype)
    zeros_like = staticmethod(np.zeros_like)
    ones_like = staticmethod(np.ones_like)

    # ----- creation (ember/ops/creation.py checks the arguments; the kernels are in creation.py beside this)
    array = staticmethod(np.array)          # a copy of host data (nested lists, arrays, scalars), as np.array
    ones = staticmethod(np.ones)
    eye = staticmethod(np.eye)
    frombuffer = staticmethod(np.frombuffer)
    map_file = staticmethod(_creation.map_file)   # torch.from_file: a file's bytes as an array
    arange = staticmethod(_creation.arange)
    linspace = staticmethod(_creation.linspace)
    logspace = staticmethod(_creation.logspace)
    tri_indices = staticmethod(_creation.tri_indices)
    kaiser_window = staticmethod(_creation.kaiser_window)
    # The host's (NumPy's) own types, which PyTorch's argument parsing and tensor() accept: its scalars as Python
    # numbers, its arrays as data; the conversions of host data.
    host_array = np.ndarray
    host_scalar = np.generic
    host_number = np.number
    host_integer = np.integer
    host_bool = np.bool_
    host_dtype = staticmethod(np.dtype)
    isfinite = staticmethod(_creation.isfinite)
    element_types = staticmethod(_creation.element_types)
    base_array = staticmethod(_creation.base_array)
    ints_fit = staticmethod(_creation.ints_fit)

    # ----- storage: the memory a tensor's array views (ember/ops/storage.py: untyped_storage, as_strided)
    storage_root = staticmethod(_shape.storage_root)        # the array owning the memory (one per storage)
    storage_offset = staticmethod(_shape.storage_offset)    # in elements of the array's dtype
    data_ptr = staticmethod(_shape.data_ptr)

    @staticmethod
    def storage_nbytes(root) -> int:
        return root.nbytes

    @staticmethod
    def storage_bytes(root):
        """The storage's bytes as a flat uint8 array sharing its memory."""
        return root.ravel(order="K").view(np.uint8)   # (a root is C- or F-contiguous: no copy)

    # ----- random: PyTorch's CPU generator (mt19937 stream, samplers), for ember/ops/random.py
    random = _random
    # ----- shared memory: storages other processes map (Tensor.share_memory_, ember.multiprocessing's pickling)
    shared = _shared

    @staticmethod
    def to_bytes(x) -> bytes:
        """The bytes of an array's elements in C order."""
        return x.tobytes()

    @staticmethod
    def copy(x, dtype=None):
        return np.array(x, dtype=dtype, copy=True)

    @staticmethod
    def copyto(dst, src) -> None:
        token = _fp_quiet()   # float64 -> float16 may overflow: silently, as in PyTorch
        try:
            if (dst.dtype in _F8 or getattr(src, "dtype", None) in _F8) and dst.dtype != src.dtype:
                src = cast(np.asarray(src), dst.dtype)   # PyTorch's float8 conversions
            np.copyto(dst, src, casting="unsafe")
        finally:
            _fp_restore(token)

    @staticmethod
    def add_into(dst, src) -> None:
        token = _fp_quiet()
        try:
            np.add(dst, src, out=dst, casting="unsafe")
        finally:
            _fp_restore(token)

    @staticmethod
    def add_into_all(dsts, srcs) -> None:
        """``add_into(dst, src)`` for each pair (the leaves' gradients of one backward). A 0-d float32/float64
        ``dst`` and a ``src`` of its dtype (a 0-d array or a NumPy scalar) add as NumPy scalars, in the operand order
        that gives ``np.add(dst, src, out=dst)``'s bits (``_orders``), without the ufunc's ``out=`` machinery
        (~1 us on a 0-d array)."""
        token = _fp_quiet()
        try:
            nd = np.ndarray
            f32, f64 = _F32_DT, _F64
            add_orders = _orders()[1]
            sw32, sw64 = add_orders.get(f32), add_orders.get(f64)
            for dst, src in zip(dsts, srcs):
                if type(dst) is nd and dst.shape == ():
                    dt = dst.dtype
                    sw = sw32 if dt is f32 else sw64 if dt is f64 else None
                    if sw is not None and src.dtype is dt:
                        ts = type(src)
                        if ts is nd:
                            b = src[()] if src.shape == () else None
                        else:
                            b = src if ts is dt.type else None
                        if b is not None:
                            a = dst[()]
                            dst[()] = b + a if sw else a + b
                            continue
                np.add(dst, src, out=dst, casting="unsafe")
        finally:
            _fp_restore(token)

    @staticmethod
    def set_index(dst, index, value) -> None:
        """``dst[index] = value`` in place (a raw index: a SplitIndex writes through its basic view), cast to dst's
        dtype; overflow silent, as in PyTorch."""
        view, index = _view_of(dst, index)
        token = _fp_quiet()
        try:
            view[index] = value
        finally:
            _fp_restore(token)

    @staticmethod
    def quiet():
        """A context in which floating-point exceptions are silent (PyTorch never warns about them)."""
        return _Quiet()

    # The same as two calls, for the per-op paths: ``token = fp_quiet()`` ... ``fp_restore(token)``.
    fp_quiet = staticmethod(_fp_quiet)
    fp_restore = staticmethod(_fp_restore)
    quietly = staticmethod(_quietly)   # a decorator: the function runs with them silent

    @staticmethod
    def to_numpy(x) -> np.ndarray:
        return x

    # ----- host buffers for a host transport (ember.distributed hands these to MPI)
    @staticmethod
    def host_view(x) -> np.ndarray:
        """``x``'s elements as a C-contiguous host array: ``x`` itself when it is one (a transport writing into it
        writes into ``x``), else a copy (write it back with ``copyto``)."""
        if type(x) is np.ndarray and x.flags.c_contiguous and x.flags.writeable:
            return x
        return np.ascontiguousarray(x)

    @staticmethod
    def host_empty(shape, dtype) -> np.ndarray:
        return np.empty(shape, dtype=dtype)

    @staticmethod
    def host_bytes(h) -> np.ndarray:
        """The bytes of a C-contiguous host array, as a flat uint8 array sharing its memory (for dtypes a
        transport has no type for: bfloat16, float8)."""
        return h.reshape(-1).view(np.uint8)

    @staticmethod
    def host_pack(arrays) -> np.ndarray:
        """The bytes of host arrays one after another, as one flat uint8 array (a transport's send buffer)."""
        if not arrays:
            return np.empty(0, np.uint8)
        return np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays])

    @staticmethod
    def host_unpack(buf, offset: int, dtype, shape) -> np.ndarray:
        """The array of ``dtype`` and ``shape`` at byte ``offset`` of the flat uint8 host array ``buf`` (a view)."""
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        return buf[offset:offset + n].view(dtype).reshape(shape)

    @staticmethod
    def host_chunks(h, nbytes: int) -> list:
        """A C-contiguous host array as flat views of about ``nbytes`` each (one transfer each, pipelined)."""
        flat = h.reshape(-1)
        step = max(1, nbytes // max(1, h.itemsize))
        return [flat[i:i + step] for i in range(0, flat.size, step)] or [flat]

    @staticmethod
    def host_reduce(stacked, op: str) -> np.ndarray:
        """``stacked`` (one row per rank) reduced along its first axis by ``op`` (sum, prod, min, max, band, bor,
        bxor), in rank order: the reduction of dtypes a transport cannot reduce itself (bool, bfloat16)."""
        ufunc = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
                 "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}[op]
        token = _fp_quiet()
        try:
            out = np.array(stacked[0], copy=True)
            for row in stacked[1:]:
                ufunc(out, row, out=out)
            return out
        finally:
            _fp_restore(token)

    @staticmethod
    def to_dlpack(x):
        """A DLPack capsule of the array's memory (torch.to_dlpack)."""
        return x.__dlpack__()

    @staticmethod
    def from_dlpack(obj) -> np.ndarray:
        """An array on the memory of an object with ``__dlpack__``, or of a DLPack capsule (torch.from_dlpack). A
        read-only result (NumPy marks legacy capsules so) is copied, since tensors are writable."""
        if type(obj).__name__ == "PyCapsule":
            capsule = obj

            class _Capsule:   # NumPy takes objects with __dlpack__ only
                def __dlpack__(self, stream=None, **kwargs):
                    return capsule

                def __dlpack_device__(self):
                    return (1, 0)   # kDLCPU
            obj = _Capsule()
        x = np.from_dlpack(obj)
        return x if x.flags.writeable else x.copy()

    @staticmethod
    def can_adopt(g, dtype, shape) -> bool:
        """Whether the array ``g``, which no one else holds, may become a leaf's ``.grad`` as it is (no copy): its
        own writable, C-contiguous memory of that dtype and shape."""
        return (type(g) is np.ndarray and g.base is None and g.dtype == dtype and g.shape == shape
                and g.flags.c_contiguous and g.flags.writeable)


backend = _Backend()

def abs(x):  # noqa: A001
    """|x|; a complex modulus as hypot(real, imag), as PyTorch's (NumPy's complex abs loops are 1 ulp off the
    correctly rounded value in a third of complex64 elements, |1+1.1j| among them; hypot matches PyTorch's
    complex64 abs everywhere and its complex128 abs in all but ~0.6% of elements, which are 1 ulp apart)."""
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
        return np.hypot(x.real, x.imag)
    return np.abs(x)


maximum = np.maximum
minimum = np.minimum
matmul = np.matmul
zeros_like = np.zeros_like
ones_like = np.ones_like




def sqrt(x):
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def div(x, y):
    # x / 0 is inf or nan, silently, as in PyTorch.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(x, y)


def floor_divide(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.asarray(y).dtype.kind in "iub" and np.asarray(x).dtype.kind in "iub" and np.any(np.equal(y, 0)):
            raise RuntimeError("ZeroDivisionError")
        return np.floor_divide(x, y)


def remainder(x, y):
    """Python's remainder (the sign of y), computed from fmod as PyTorch does (so -2 % 2 is -0.)."""
    floor_divide(x, y)  # the integer division-by-zero check
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmod(x, y)
        return np.where((r != 0) & ((r < 0) != (np.asarray(y) < 0)), r + y, r)


# PyTorch computes these scalar exponents of float tensors with dedicated kernels, which differ from
# pow() at signed zeros and infinities (rsqrt(-0.) is -inf, sqrt(-inf) is nan).
_POW_SPECIAL = {0.5: np.sqrt, -0.5: lambda x: 1 / np.sqrt(x), 2: lambda x: x * x, 3: lambda x: x * x * x,
                -1: lambda x: 1 / x, -2: lambda x: 1 / (x * x)}


def pow(x, y):
    if type(y) is not np.ndarray:   # a Python number beside bfloat16: rounded to it first
        if type(x) is np.ndarray and x.dtype is _BF16:
            y = _bf16_number(y, x)
    elif type(x) is not np.ndarray and y.dtype is _BF16:
        x = _bf16_number(x, y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if type(y) is not np.ndarray and type(x) is np.ndarray and x.dtype.kind in "fV":
            special = _POW_SPECIAL.get(y)
            if special is not None and type(y) is not bool:
                return special(x)
        if type(y) is np.ndarray and y.dtype.kind in "iu" and np.asarray(x).dtype.kind in "iu" and (y < 0).any():
            # PyTorch's integer pow: a negative exponent gives 0, except for the bases 1 and -1.
            r = np.power(x, np.where(y < 0, 0, y))
            one = np.where(y % 2 == 0, 1, np.where(np.equal(x, -1), -1, 1))
            return np.where(y < 0, np.where(np.abs(x) == 1, one, 0), r).astype(r.dtype)
        r = np.power(x, y)
        if r.dtype == np.int8 and np.asarray(x).dtype == np.bool_:   # bool ** bool stays bool
            r = r.astype(np.bool_)
        return r


def sign(x):
    r = np.sign(x)
    if r.dtype.kind in "fV":
        r = np.where(r != r, r.dtype.type(0), r)   # PyTorch: sign(nan) is 0
    return r


def relu(x):
    # PyTorch's relu keeps x where it ties 0 (relu(-0.0) is -0.0); NumPy's maximum keeps its second operand on a tie
    return np.maximum(0, x)


def where(cond, a, b):
    return np.where(cond, a, b)


def _bf16_number(v, other):
    """A Python number ``v`` beside a bfloat16 array ``other`` as a bfloat16 scalar (NumPy would promote the
    pair to float32); anything else as it is."""
    if (type(v) is float or type(v) is int) and getattr(other, "dtype", None) is _BF16:
        return _BF16.type(v)
    return v


def clamp(x, min=None, max=None):
    """PyTorch's clamp, max(min(x, max), min) keeping x where it ties a bound (clamp(-0.0, min=0) is -0.0): NumPy's
    maximum/minimum keep their second operand on a tie (so x goes second), np.clip keeps the bound."""
    if min is None and max is None:
        return x.copy()
    if x.dtype is _BF16:   # (a Python number beside bfloat16 as bfloat16, not float32)
        min, max = _bf16_number(min, x), _bf16_number(max, x)
    r = x if min is None else np.maximum(min, x)
    return r if max is None else np.minimum(max, r)


def round(x):
    return np.round(x)


def sum(x, dim=None, keepdim=False):
    if x.dtype is _BF16:   # NumPy's bfloat16 reduction rounds every partial sum: float32 sums, rounded once
        return np.sum(x, axis=dim, keepdims=keepdim, dtype=_F32).astype(_BF16)
    return np.sum(x, axis=dim, keepdims=keepdim)


def amax(x, dim=None, keepdim=False):
    return np.max(x, axis=dim, keepdims=keepdim)


def amin(x, dim=None, keepdim=False):
    return np.min(x, axis=dim, keepdims=keepdim)


def mean(x, dim=None, keepdim=False):
    if x.size == 0:   # nan, silently (np.mean warns from inside NumPy)
        with np.errstate(invalid="ignore"):
            return np.sum(x, axis=dim, keepdims=keepdim) / x.dtype.type(0)
    if x.dtype is _BF16:   # sum / n in float32, rounded once, as PyTorch
        return np.mean(x, axis=dim, keepdims=keepdim, dtype=_F32).astype(_BF16)
    return np.mean(x, axis=dim, keepdims=keepdim)


def _var64(x, dim, correction, keepdim):
    # PyTorch's CPU reductions accumulate float16/32 in float64: no overflow of the squares at 1e20,
    # no underflow at 1e-25. A divisor <= 0 gives inf or nan, as PyTorch (which also warns).
    w = x.astype(np.float64)
    count = 1
    for d in dim:
        count *= x.shape[d]
    centered = w - mean(w, dim, True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(centered * centered, axis=dim, keepdims=keepdim) / np.float64(max(0, count - correction))


def _var_complex(x, dim, correction, keepdim):
    # PyTorch: the variances of the real and imaginary parts, each rounded to the real dtype, added
    rt = x.real.dtype
    return (_var64(x.real, dim, correction, keepdim).astype(rt, copy=False)
            + _var64(x.imag, dim, correction, keepdim).astype(rt, copy=False))


def var(x, dim, correction, keepdim=False):
    if x.dtype.kind == "c":
        return _var_complex(x, dim, correction, keepdim)
    return _var64(x, dim, correction, keepdim).astype(x.dtype, copy=False)


def std(x, dim, correction, keepdim=False):
    if x.dtype.kind == "c":
        return np.sqrt(_var_complex(x, dim, correction, keepdim))
    return np.sqrt(_var64(x, dim, correction, keepdim)).astype(x.dtype, copy=False)


isnan = np.isnan


def sum_to(x, shape):
    """Sum a broadcast gradient back down to ``shape`` (the one place broadcasting is undone)."""
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
    r = sum(x, axes, True) if axes else x
    return r.reshape(shape)


def expand(x, shape):
    return np.broadcast_to(x, shape)


def reshape(x, shape):
    return np.reshape(x, shape)


def permute(x, dims):
    return np.transpose(x, dims)


def transpose(x, dim0, dim1):
    return np.swapaxes(x, dim0, dim1)


def unsqueeze(x, dim):
    return np.expand_dims(x, dim)


def squeeze(x, dim):
    return np.squeeze(x, dim)


def getitem(x, index):
    x, index = _view_of(x, index)
    return x[index]


def _rows_added(g, idx, shape):
    """``index_put_zeros`` for one integer index array on the first axis (embedding's and a row gather's
    backward), or None: ``np.add.at`` on the flattened arrays, one index per element, which NumPy runs without
    its per-index cost on rows; every element still gets its rows added in the same order (the index order)."""
    m = _math.prod(shape[1:])
    if idx.size < 16 or m < 2 or g.shape != idx.shape + tuple(shape[1:]) or g.dtype.kind not in "fc":
        return None
    rows = idx.reshape(-1, 1) % shape[0] if int(idx.min()) < 0 else idx.reshape(-1, 1)
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out.reshape(-1), (rows * m + np.arange(m)).reshape(-1), g.reshape(-1))
    return out


def index_put_zeros(g, index, shape):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeated indices accumulate)."""
    if len(index) == 1 and type(index[0]) is np.ndarray and index[0].dtype.kind in "iu" and len(shape) >= 1:
        out = _rows_added(g, index[0], shape)
        if out is not None:
            return out
    out = np.zeros(shape, dtype=g.dtype)
    view, index = _view_of(out, index)
    np.add.at(view, index, g)
    return out


def fill_index(x, index, value):
    """A copy of ``x`` with ``x[index] = value``."""
    out = np.array(x, copy=True)
    view, index = _view_of(out, index)
    view[index] = _reduced.float8_scalar(value, out.dtype) if out.dtype in _F8 else value
    return out


def take_along_dim(x, indices, dim):
    return np.take_along_axis(x, indices, dim)


def put_along_dim_zeros(g, indices, dim, shape):
    out = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(out, indices, g, dim)
    return out


def view_replay(x, steps):
    """Apply the recorded view ops ``steps`` ((primitive, params), ...) to ``x``: the view's region."""
    for prim, params in steps:
        x = prim.forward(_this, x, **params)
    return x


def _view_positions(steps, shape):
    """The flat (C-order) positions in an array of ``shape`` of the elements the view ``steps`` select, -1 where one
    is none of its elements (a layout replayed as a gather on a stand-in reads 0 there: hence the arange from 1)."""
    return view_replay(np.arange(1, int(np.prod(shape)) + 1).reshape(shape), steps) - 1


def _scatter_positions(out, steps, values) -> None:
    """``out`` (C-contiguous) with ``values`` written at the positions the view ``steps`` select in it."""
    pos = _view_positions(steps, out.shape)
    keep = pos >= 0
    out.reshape(-1)[pos[keep]] = np.broadcast_to(values, pos.shape)[keep]


def view_scatter_zeros(g, steps, shape):
    """Zeros of ``shape`` holding ``g`` in the region the view ``steps`` select."""
    out = np.zeros(shape, dtype=g.dtype)
    region = view_replay(out, steps)
    if region.size == 0:   # an empty view: nothing to place (and it shares no memory to check)
        return out
    if region.flags.writeable and np.shares_memory(region, out):
        region[...] = g
    elif np.shares_memory(region, out):   # an expand: one position for several elements
        raise RuntimeError("ember: this view cannot be written through (it is an expand); clone() it before "
                           "modifying it in place")
    else:   # the stand-in's replay copied (a layout it does not have): the positions the steps select
        _scatter_positions(out, steps, g)
    return out


def view_scatter(x, src, steps):
    """A copy of ``x`` (its layout kept where it is dense) with ``src`` written where the view ``steps`` select
    (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter)."""
    out = x.copy(order="K") if _shape.dense(x) else x.copy()
    region = view_replay(out, steps)
    if region.size == 0:
        return out
    if region.flags.writeable and np.shares_memory(region, out):
        region[...] = src
        return out
    out = np.ascontiguousarray(out)
    _scatter_positions(out, steps, src)
    return out


def view_scatter_add(g, steps, shape):
    """Zeros of ``shape`` with ``g`` added at the positions the view ``steps`` select: the gradient of replaying a
    view, where an expanded view's repeated positions sum (PyTorch's as_strided_backward)."""
    out = np.zeros(shape, dtype=g.dtype)
    region = view_replay(out, steps)
    if region.size == 0:
        return out
    if region.flags.writeable and np.shares_memory(region, out):   # a writable view repeats no position
        region[...] = g
        return out
    pos = _view_positions(steps, shape)
    keep = pos >= 0
    np.add.at(out.reshape(-1), pos[keep], np.broadcast_to(g, pos.shape)[keep])
    return out


def clone(x):
    return x.copy()


def cast(x, dtype):
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = x.real   # complex to real keeps the real part (PyTorch; NumPy would warn)
    if (x.dtype in _F8 or dtype in _F8) and x.dtype != dtype:   # PyTorch's float8 conversions (reduced.py)
        return _reduced.from_float8(x, np.dtype(dtype)) if x.dtype in _F8 else _reduced.to_float8(x, np.dtype(dtype))
    if x.dtype == _F64 and dtype == _F16:
        # PyTorch converts double to Half through float (c10::Half(float)): rounded twice, as here
        return x.astype(np.float32).astype(np.float16)
    return x.astype(dtype, copy=False)


_F64, _F16 = np.dtype(np.float64), np.dtype(np.float16)


def cat(xs, dim):
    return np.concatenate(xs, axis=dim)


def stack(xs, dim):
    return np.stack(xs, axis=dim)


# Each op family keeps its own NumPy kernels in its own file; they are part of this namespace.
from .elementwise import *  # noqa: E402,F401,F403
from .reduction import *  # noqa: E402,F401,F403
from .shape import *  # noqa: E402,F401,F403
from .indexing import *  # noqa: E402,F401,F403
from .linalg import *  # noqa: E402,F401,F403
from .sorting import *  # noqa: E402,F401,F403
from .nn import *  # noqa: E402,F401,F403
from .optim import *  # noqa: E402,F401,F403
from .bessel import *  # noqa: E402,F401,F403
from .complex import *  # noqa: E402,F401,F403
from .fft import *  # noqa: E402,F401,F403
from .fused import *  # noqa: E402,F401,F403
from . import nn_rnn as _nn_rnn  # noqa: E402


def rnn_forward(mode, x, sizes, state0, w_hh, b_hh, w_hr, reverse, layout):
    """One direction of a recurrent layer (or a cell step): nn_rnn.forward_loop on this namespace's kernels."""
    return _nn_rnn.forward_loop(_this, mode, x, sizes, state0, w_hh, b_hh, w_hr, reverse, layout)


def rnn_backward(mode, saved, state0, w_hh, b_hh, w_hr, reverse, layout, g_y, g_finals, need_w=True):
    """rnn_forward's reverse loop: nn_rnn.backward_loop on this namespace's kernels."""
    return _nn_rnn.backward_loop(_this, mode, saved, state0, w_hh, b_hh, w_hr, reverse, layout,
                                 g_y, g_finals, need_w)
