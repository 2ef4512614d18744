"""The raw namespace of a device made from an array-API library: ``make_namespace(name, xp)``.

The result is a module with every name the 'cpu' namespace has (what derivative rules and kernels call as
``xp.*``), plus its ``backend``. Its functions take and return the device's arrays (``DeviceArray``s, see
array.py); each unwraps them, runs a kernel written against the standard (the family files beside this one), and
wraps the result. A name with no kernel here raises NotImplementedError naming the kernel and the device
(``MISSING`` lists them).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import types

import numpy as np

from ..cpu import namespace as _cpu
from ..cpu import nn_rnn as _rnn
from ..index import SplitIndex
from . import elementwise, linalg, nn, nn_conv, nn_pool, reduction, shape, sorting, special
from . import bessel, complex as _complex, fft as _fft
from . import optim as _optim
from .array import DeviceArray, make_array_type
from .views import VIEW_KERNELS, aliasing, c_strides, replay

FAMILIES = (elementwise, reduction, shape, linalg, special, nn_conv, nn_pool, sorting, bessel, _complex, _fft)   # and nn (it uses special's erf)
# parameters that may hold host (NumPy) index arrays: PyTorch accepts CPU index tensors for a device tensor
_HOST_OK = frozenset({"index", "indices", "steps"})


def _cpu_names() -> list:
    return sorted(n for n in vars(_cpu) if not n.startswith("_") and n not in ("np", "annotations", "backend"))


class _Backend:
    """What the machinery needs from the device beyond the rules (see ``cpu.namespace._Backend``)."""

    forward_errors = (ValueError, IndexError, TypeError)
    has_data = True    # 'meta' has none: printing, random fills and copies to the host know it

    def __init__(self, name: str, xp, arr: type):
        self.device_type = name
        self.array_types = (arr,)
        self.scalar_types = (arr,)
        self.xp = xp
        self._arr = arr
        self.ns = None   # the device's raw namespace (make_namespace sets it)

    def asarray(self, x):
        """``x`` (a device array, host NumPy data, or a Python scalar or list) on this device."""
        if type(x) is self._arr:
            return x
        if isinstance(x, DeviceArray):
            raise self._arr.mixed(x.device_type, self.device_type)
        host = np.asarray(x)
        lib = self._arr._to_lib.get(host.dtype)
        if lib is None:   # bfloat16, float16 on a library without it: refused as creation refuses it
            raise TypeError(f"device '{self.device_type}' has no {host.dtype} (its library {self.xp.__name__} "
                            "lacks it)")
        try:
            a = self.xp.from_dlpack(host if host.flags.c_contiguous else host.copy())
        except (TypeError, AttributeError, RuntimeError, BufferError, ValueError):
            a = self.xp.asarray(host.tolist(), dtype=lib)
        return self._arr(a)

    @staticmethod
    def may_share_memory(a, b) -> bool:
        """Whether ``a`` and ``b`` are views of the same memory (the same root array, see views.py)."""
        va, vb = getattr(a, "_view", None), getattr(b, "_view", None)
        return (a if va is None else va.root) is (b if vb is None else vb.root)

    # ----- creation (the creation functions' ``device=``) ----------------------------------------------------
    def _lib(self, dtype):
        """The library's dtype for a NumPy dtype (TypeError naming the device where the library lacks it)."""
        return self._arr._kit.lib(np.dtype(dtype))

    def zeros(self, shape, dtype=np.float64):
        return self._arr(self.xp.zeros(tuple(shape), dtype=self._lib(dtype)))

    def ones(self, shape, dtype=np.float64):
        return self._arr(self.xp.ones(tuple(shape), dtype=self._lib(dtype)))

    def full(self, shape, value, dtype=None):
        if dtype is None:
            return self.asarray(np.full(shape, value))
        return self._arr(self.xp.full(tuple(shape), value, dtype=self._lib(dtype)))

    def eye(self, n: int, m: int | None = None, dtype=np.float64):
        return self._arr(self.xp.eye(n, m, dtype=self._lib(dtype)))

    # PyTorch's formulas for these (float64 steps, fused multiply-adds, its order of the triangle's indices) are
    # the CPU's kernels: computed there on the host and moved, they give the CPU's values to the last bit.
    def arange(self, start, end, step, n: int, dtype):
        return self.asarray(_cpu.backend.arange(start, end, step, n, dtype))

    def linspace(self, start, end, steps: int, dtype):
        return self.asarray(_cpu.backend.linspace(start, end, steps, dtype))

    def logspace(self, start, end, steps: int, base: float, dtype):
        return self.asarray(_cpu.backend.logspace(start, end, steps, base, dtype))

    def tri_indices(self, upper: bool, row: int, col: int, offset: int, dtype):
        return self.asarray(_cpu.backend.tri_indices(upper, row, col, offset, dtype))

    def kaiser_window(self, m: int, beta: float, dtype):
        return self.asarray(_cpu.backend.kaiser_window(m, beta, dtype))

    def zeros_like(self, x, dtype=None):
        return self._arr(self.xp.zeros_like(x.a, dtype=None if dtype is None else self._lib(dtype)))

    def ones_like(self, x, dtype=None):
        return self._arr(self.xp.ones_like(x.a, dtype=None if dtype is None else self._lib(dtype)))

    def copy(self, x, dtype=None):
        a = self.asarray(x).a
        return self._arr(self.xp.astype(a, self._lib(dtype)) if dtype is not None else
                         self.xp.asarray(a, copy=True))

    def _cast_to(self, dst, src):
        src = src.a if type(src) is self._arr else self.asarray(src).a
        return self.xp.astype(self.xp.broadcast_to(src, tuple(dst.a.shape)), dst.a.dtype)

    def copyto(self, dst, src) -> None:
        """``dst[...] = src`` (cast, broadcast): rebinds ``dst``'s array (a DeviceArray is the storage)."""
        dst.store(self.xp.asarray(self._cast_to(dst, src), copy=True))

    def add_into(self, dst, src) -> None:
        src = src.a if type(src) is self._arr else self.asarray(src).a
        dst.store(self.xp.astype(dst.a + src, dst.a.dtype))

    def set_index(self, dst, index, value) -> None:
        """``dst[index] = value`` in place (rebinds ``dst``'s array): the namespace's ``fill_index``, which takes
        host index arrays too (PyTorch indexes a device tensor with CPU index tensors)."""
        written = None
        if dst._view is not None:   # which elements of a view were written (views.py: only those reach its root)
            written = self.ns.fill_index(self._arr(self.xp.zeros(dst.a.shape, dtype=self.xp.bool)), index, True).a
        dst.store(self.ns.fill_index(dst, index, value).a, written)

    # ----- storage (ember/ops/storage.py): a view's root array is its storage (views.py)
    @staticmethod
    def storage_root(x):
        v = x._view
        return x if v is None else v.root

    def storage_offset(self, x) -> int:
        """Where ``x``'s first element sits in its root, in elements: its steps replayed on the root's positions."""
        v = x._view
        if v is None or x.size == 0 or not self.has_data:
            return 0   # ('meta' has no positions to replay: 0)
        pos = replay(self._arr(v.root._kit.lin(tuple(v.root.shape))), v.steps).a
        return int(self.xp.reshape(pos, (-1,))[0])

    def data_ptr(self, x) -> int:
        """An address stand-in (the library gives none): the root's identity, plus the offset in bytes."""
        return id(self.storage_root(x)) * 64 + self.storage_offset(x) * x.dtype.itemsize

    @staticmethod
    def storage_nbytes(root) -> int:
        return root.size * root.dtype.itemsize

    # floating-point exceptions: the standard has no error state, so these are no-ops
    @staticmethod
    def quiet():
        return contextlib.nullcontext()

    @staticmethod
    def fp_quiet():
        return None

    @staticmethod
    def fp_restore(token) -> None:
        return None

    @staticmethod
    def quietly(fn):
        return fn

    @staticmethod
    def to_numpy(x) -> np.ndarray:
        return x.host()

    @staticmethod
    def host_view(x) -> np.ndarray:
        """A C-contiguous host copy of ``x`` (a host transport's buffer; write it back with ``copyto``)."""
        return np.ascontiguousarray(x.host())

    @staticmethod
    def to_bytes(x) -> bytes:
        """The bytes of an array's elements in C order (through a host copy)."""
        return x.host().tobytes()

    @staticmethod
    def can_adopt(g, dtype, shape) -> bool:
        return False   # a gradient is always copied into .grad here (adopting is the cpu's allocation shortcut)


def _boundary(fn, arr: type, backend: _Backend):
    """``fn`` (a kernel on library arrays) as a namespace function on the device's arrays."""
    name = fn.__name__
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []

    def down(v, host_ok: bool):
        t = type(v)
        if t is arr:
            return v.a
        if t in (tuple, list, SplitIndex):
            return t(down(i, host_ok) for i in v)
        if t is np.ndarray:
            if host_ok or (arr.cpu_scalars and v.ndim == 0):
                return backend.asarray(v).a
            raise arr.mixed("cpu", backend.device_type)
        if isinstance(v, np.generic):   # a host scalar: its value, with its dtype where the value would lose it
            if isinstance(v, np.floating) and v.dtype != np.float64:
                return backend.xp.asarray(v.item(), dtype=arr._to_lib[v.dtype])
            return v.item()
        if isinstance(v, DeviceArray):
            raise arr.mixed(v.device_type, backend.device_type)
        return v

    lib_type = None

    def up(v):
        nonlocal lib_type
        if lib_type is None:
            lib_type = type(backend.xp.asarray(0))
        if type(v) is lib_type:
            return arr(v)
        if type(v) in (tuple, list):
            return type(v)(up(i) for i in v)
        return v

    @functools.wraps(fn)
    def op(*args, **kwargs):
        args = tuple(down(a, i < len(params) and params[i] in _HOST_OK) for i, a in enumerate(args))
        kwargs = {k: down(v, k in _HOST_OK) for k, v in kwargs.items()}
        return up(fn(*args, **kwargs))
    op.__name__ = name
    return op


def _missing(name: str, device_type: str):
    def op(*args, **kwargs):
        raise NotImplementedError(f"ember: the kernel '{name}' has no array-API version yet (device "
                                  f"'{device_type}'; see ember/devices/common)")
    op.__name__ = name
    return op


def make_namespace(name: str, xp, *, array_base: type = DeviceArray, backend_class: type = _Backend,
                   overrides=None) -> types.ModuleType:
    """The raw namespace (a module, as ``ember.devices.cpu.namespace``) of device ``name`` computing with the
    array-API namespace ``xp``. For a device that differs ('meta': no data): ``array_base`` and ``backend_class``
    (subclasses of DeviceArray and _Backend) change what its arrays and its backend do, and ``overrides(kit)``
    returns kernels (on library arrays, as the family files' ``kernels(kit)``) that replace or add to the common
    ones."""
    arr = make_array_type(name, xp, array_base)
    backend = backend_class(name, xp, arr)
    kit = arr._kit
    kernels: dict = {}
    for family in FAMILIES:
        kernels.update(family.kernels(kit))
    kernels.update(nn.kernels(kit, kernels["erf"]))
    if overrides is not None:
        kernels.update(overrides(kit))
    ns = types.ModuleType(f"ember.devices.{name}", f"ember's raw namespace of device '{name}' ({xp.__name__}).")
    missing = []
    for n in _cpu_names():
        if n in kernels:
            setattr(ns, n, _boundary(kernels[n], arr, backend))
        else:
            setattr(ns, n, _missing(n, name))
            missing.append(n)
    for n, rule in VIEW_KERNELS.items():   # their results are views of their inputs where NumPy's are (views.py)
        setattr(ns, n, aliasing(getattr(ns, n), rule, arr, readonly=n == "expand"))

    strided = ns.as_strided

    def as_strided(x, size, stride, offset, in_stride, in_offset):
        # a view laid out as the layout says (a tensor's own array, not a gradient's) reads its root's memory (its
        # storage, C-ordered here), outside its own elements too; anything else is read as its values (as the cpu's)
        v = getattr(x, "_view", None)
        if v is not None and all(n <= 1 or a == b for n, a, b in zip(x.shape, v.strides, in_stride)) and \
                backend.storage_offset(x) == in_offset:
            x, in_stride, in_offset = v.root, c_strides(tuple(v.root.shape)), 0
        return strided(x, size, stride, offset, in_stride, in_offset)
    ns.as_strided = as_strided

    # views replay through this namespace itself (its functions take the device's arrays)
    def view_replay(x, steps):
        for prim, params in steps:
            x = prim.forward(ns, x, **params)
        return x

    def view_scatter_zeros(g, steps, shape):
        # as the cpu's: the view's region of an arange is where g goes (of overlapping windows, the last one wins)
        lin = arr(kit.lin(shape))
        region = view_replay(lin, steps)
        base = xp.zeros(tuple(shape), dtype=g.a.dtype)
        if region.size == 0:
            return arr(base)
        if not backend.may_share_memory(region, lin) or not region.flags.writeable:
            raise RuntimeError("ember: this view cannot be written through (it is an expand or a copy); clone() it "
                               "before modifying it in place")
        return arr(kit.scatter_set(base, lambda _: region.a, g.a))

    def view_scatter(x, src, steps):
        # as the cpu's: the positions the view selects in an arange of x's shape are where src goes
        return arr(kit.scatter_set(x.a, lambda lin: view_replay(arr(lin), steps).a, src.a))

    def view_scatter_add(g, steps, shape):
        # as the cpu's: the positions the view selects in an arange, with g added there (repeats sum)
        positions = view_replay(arr(kit.lin(shape)), steps).a
        vals = xp.broadcast_to(g.a, tuple(positions.shape))
        flat = kit.scatter_add_flat(math.prod(shape), positions, vals, g.dtype)
        return arr(xp.reshape(flat, tuple(shape)))

    # the optimizers' fused multiply-add (common/optim.py), in place by rebinding (a DeviceArray is the storage)
    def fma(x, y, z, out=None):
        r = _optim.fma(*(v.a if type(v) is arr else v for v in (x, y, z)), xp=xp)
        if out is None:
            return arr(r)
        backend.copyto(out, arr(r))
        return out

    def fma_lerp_(a, end, weight: float) -> None:
        work = xp.asarray(a.a, copy=True)
        _optim.fma_lerp_(work, end.a, weight, xp=xp)
        a.store(work)

    ns.view_replay, ns.view_scatter_zeros, ns.fma, ns.fma_lerp_ = view_replay, view_scatter_zeros, fma, fma_lerp_
    ns.view_scatter_add, ns.view_scatter = view_scatter_add, view_scatter
    # the recurrent layers' time loops, over this namespace's own kernels (written once: cpu/nn_rnn.py)
    ns.rnn_forward = functools.partial(_rnn.forward_loop, ns)
    ns.rnn_backward = functools.partial(_rnn.backward_loop, ns)
    for n in ("view_replay", "view_scatter_zeros", "view_scatter_add", "view_scatter", "fma", "fma_lerp_",
              "rnn_forward", "rnn_backward"):
        if n in missing:
            missing.remove(n)
    # Adam's block-by-block kernel (cpu/optim.py) is the cpu's alone: here it declines (None) and Adam runs its
    # generic update over this namespace's kernels
    ns.adam_step_ = lambda *args, **kwargs: None
    if "adam_step_" in missing:
        missing.remove("adam_step_")
    ns.backend = backend
    backend.ns = ns
    ns.MISSING = tuple(missing)
    ns.xp = xp
    return ns
