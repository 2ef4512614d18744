"""Tensor: a raw array plus autograd metadata.

This file holds the data and metadata side only. Math methods (``__mul__``, ``sum``, ...) are
attached by the op modules that declare them (``ember/ops``), and ``backward`` by
``ember/autograd``, so each op lives in exactly one place and nothing here imports upward.
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import _dtype as D
from . import _formatting
from ._device import backend_of, cpu, cpu_backend, device_namespace, device_of, has_data
from ._hooks import add_hook
from ._origin import created_at, user_site, warn_once
from ._state import FUNC_REQUIRES_GRAD as _FUNC_REQUIRES_GRAD, _state as _gm_state, func_depth as _func_depth
from ._state import FUNC_RETAIN_GRAD as _FUNC_RETAIN_GRAD, func_new_leaf as _func_new_leaf
from ._state import func_requires_grad as _func_requires_grad

_new = object.__new__


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``torch.Size([2, 3])``."""

    __slots__ = ()
    __module__ = "ember"   # torch.Size's module (<class 'torch.Size'>; a plain pickle names ember.Size)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


SAME_DTYPE = "same"   # _Meta.grad_dtype's default: the gradient has the tensor's dtype


class _Meta:
    """Rarely used per-tensor autograd state, allocated on first use to keep op outputs cheap."""

    __slots__ = ("grad", "retains_grad", "hooks", "post_acc_hooks", "acc", "grad_dtype")

    def __init__(self):
        self.grad = None
        self.retains_grad = False
        self.hooks = None            # leaf tensors only: {id: fn}, run before accumulation
        self.post_acc_hooks = None   # {id: fn(tensor)}
        self.acc = None              # weakref to this leaf's AccumulateGrad node
        self.grad_dtype = SAME_DTYPE   # a leaf's allowed .grad dtype: a dtype, None (any), or the tensor's own


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information.")


def _non_leaf_grad_warning(t) -> str:
    """PyTorch's warning, then (ember) where the tensor was made, when anomaly mode recorded it."""
    at = created_at(t.grad_fn)
    where = f" It was created by {t.grad_fn.name()} at {at}." if at else ""
    return (_NON_LEAF_GRAD_WARNING + f"\n[ember]{where} torch.autograd.explain(tensor) tells why a .grad is None "
            "and which leaf holds the gradient.")


def _is_int(s) -> bool:
    """An integer size: Python/NumPy ints and integer 0-d tensors, not bools (as PyTorch's int parser)."""
    if isinstance(s, Tensor):
        return s._data.ndim == 0 and s._data.dtype.kind in "iu"
    return isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))


def _sizes_from_args(args, op: str = "size") -> tuple:
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(torch.Size(...))`` as a shape tuple, with PyTorch's errors."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    elif len(args) == 1 and not _is_int(args[0]):
        raise TypeError(f"{op}(): argument 'size' (position 1) must be tuple of ints, not {type(args[0]).__name__}")
    for i, s in enumerate(args):
        if not _is_int(s):
            raise TypeError(f"{op}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
    sizes = tuple(int(s) for s in args)
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    return sizes


# PyTorch's TORCH_WARN_ONCE of float()/complex() (not int(), item() or bool()) of a tensor that requires grad
_SCALAR_WARNING = ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                   "Consider using tensor.detach() first.")


def _real_item(v, ctype: str):
    """A complex element as a real number, as PyTorch's checked conversion: only with a zero imaginary part."""
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
        return v.real
    return v


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    ``Tensor(*sizes)`` and ``Tensor(data)`` are PyTorch's legacy constructors (default float dtype);
    use ``ember.tensor`` to build tensors from data.
    """

    # _view_steps/_view_v are set only on views (``_base`` not None): the view ops that lead from the
    # base to this view, and the version at which this view's grad_fn was last made from the base's.
    __slots__ = ("_data", "_requires_grad", "grad_fn", "_output_nr", "_vc", "_base", "_view_steps", "_view_v",
                 "_view_nograd", "__weakref__", "__dict__",
                 # How a tensor that does not require grad was cut from the graph, for autograd.explain: set
                 # by detach()/.data and by ops run under no_grad on inputs that require grad; unset (no cost)
                 # on other tensors, so read it with getattr(t, "_origin", None).
                 "_origin")

    # torch.Tensor's own module: ``type(t)`` prints <class 'ember.Tensor'> as PyTorch's <class 'torch.Tensor'>
    # (messages such as assert_close's name the type); pickles never record the class (they call _rebuild)
    __module__ = "ember"

    def __init__(self, *args, **kwargs):
        if kwargs.pop("device", None) not in (None, "cpu", cpu):
            raise RuntimeError("ember only has the 'cpu' device so far")
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
        npd = D._default_float.np
        if len(args) == 1 and isinstance(args[0], (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(args[0]).__name__}'")
        backend = cpu_backend()   # the legacy constructor makes CPU tensors only, as PyTorch's
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = backend.copy(args[0].tolist() if isinstance(args[0], Tensor) else args[0], dtype=npd)
        else:
            data = backend.zeros(_sizes_from_args(args or (0,)), dtype=npd)
        _init(self, data)

    # ----- identity and metadata -------------------------------------------------------------
    __hash__ = object.__hash__

    @property
    def data(self) -> Tensor:
        # As PyTorch: .data shares memory but not the version counter (in-place changes through it
        # are invisible to autograd), unlike detach().
        t = self.detach()
        t._vc = [0]
        t._origin = (".data", t._origin[1])
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._data = value._data

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def dtype(self) -> D.dtype:
        return D._FROM_NP[self._data.dtype]

    @property
    def device(self):
        return device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        """Whether the tensor is on device 'meta' (a shape and a dtype, no data)."""
        return self.device.type == "meta"

    def cpu(self, memory_format=None) -> Tensor:
        if memory_format is not None:      # PyTorch's cpu() copies only to change the layout
            if not isinstance(memory_format, D.memory_format):
                raise TypeError(f"cpu(): argument 'memory_format' must be torch.memory_format, not "
                                f"{type(memory_format).__name__}")
            return self.contiguous(memory_format=memory_format)
        if device_of(self._data).type != "cpu":
            return self.to("cpu")   # a copy from another device
        return self

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """A copy on the GPU (``self`` if it is there already); without CuPy or a GPU, a CPU-only PyTorch's
        AssertionError. ``non_blocking`` is accepted; copies are blocking."""
        from ._device import check_device
        d = check_device("cuda" if device is None else device)   # (a bare int: the accelerator's index)
        if d.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        return self.to(d, memory_format=memory_format) if memory_format is not None else self.to(d)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind in "fV"

    def is_contiguous(self, *, memory_format=None) -> bool:
        if memory_format is None:
            return self._data.flags.c_contiguous
        return D._is_contiguous_as(self, memory_format)

    def stride(self, dim: int | None = None):
        isz = self._data.itemsize
        st = tuple(s // isz for s in self._data.strides)
        if not self._data.size and self._data.ndim and not any(self._data.strides):
            # NumPy 2 zeroes a new empty array's strides; PyTorch keeps row-major ones (a size-0 dim counts as 1)
            st, step = [], 1
            for n in reversed(self._data.shape):
                st.insert(0, step)
                step *= max(n, 1)
            st = tuple(st)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim, "stride")]

    def data_ptr(self) -> int:
        be = backend_of(self._data)
        if not has_data(be):
            return 0   # 'meta': no memory, as PyTorch's
        return be.data_ptr(self._data)   # the device's (its storage's address plus the offset in bytes)

    @property
    def _version(self) -> int:
        """How many times this tensor's memory was changed in place (shared by views)."""
        return self._vc[0]

    def _is_view(self) -> bool:
        return self._base is not None

    # Set on the instance for tensors made inside inference_mode (PyTorch's inference tensors).
    _inference = False
    # Rarely set, so class defaults rather than slots: making a tensor (once per op) writes neither.
    _meta = None     # a leaf's .grad, hooks and retain_grad state (_Meta), made on first use
    _fw_grad = None  # the forward-mode tangent, inside a dual_level
    # Set on the views that a multi-output view op returns (split, unbind: the op's name); PyTorch refuses
    # in-place ops on them while recording.
    _multi_view_op = None

    def is_inference(self) -> bool:
        """Whether this tensor was made inside ``inference_mode``: it can never join an autograd graph."""
        return self._inference

    # ----- small queries and element-wise Python callbacks (PyTorch's is_signed, is_nonzero, apply_, ...) -----
    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (uint8 and bool do not)."""
        return self._data.dtype.kind not in "ub" and self._data.dtype.name != "float8_e8m0fnu"

    def is_nonzero(self) -> bool:
        """Whether a one-element tensor is not zero (nan counts as nonzero); PyTorch's errors otherwise."""
        return self.__bool__()

    def is_same_size(self, other: Tensor) -> bool:
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return self._data.shape == other._data.shape

    def get_device(self) -> int:
        """The device index: -1 for the cpu (and the devices without an index), 0 for cuda:0."""
        index = device_of(self._data).index
        return -1 if index is None else index

    def __dlpack__(self, stream=None, **kwargs):
        if stream is not None:   # a GPU consumer names its stream (the producer orders its work before it)
            kwargs["stream"] = stream
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def _map_python(self, op: str, fn, others: tuple) -> Tensor:
        """apply_/map_/map2_: ``self[i] = fn(self[i], *others[i])`` on Python numbers (others broadcast to self's
        shape, of self's dtype), cast as PyTorch casts a Python number into the dtype; no autograd."""
        if self._requires_grad:
            raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
        xp = device_namespace(self.device.type)
        be = xp.backend
        cols = []
        for name, o in others:
            if not isinstance(o, Tensor) or o._data.dtype != self._data.dtype:
                got = o.type() if isinstance(o, Tensor) else type(o).__name__
                raise TypeError(f"{op}: expected {self.type()} for '{name}' (got {got})")
            cols.append(xp.expand(o._data, self._data.shape).reshape(-1).tolist())
        values = [fn(*row) for row in zip(self._data.reshape(-1).tolist(), *cols)]
        if values:
            be.copyto(self._data, be.asarray(values).reshape(self._data.shape))
        self._vc[0] += 1
        return self

    def apply_(self, callable) -> Tensor:
        return self._map_python("apply_", callable, ())

    def map_(self, tensor: Tensor, callable) -> Tensor:
        return self._map_python("map_", callable, (("other", tensor),))

    def map2_(self, x: Tensor, y: Tensor, callable) -> Tensor:
        return self._map_python("map2_", callable, (("x", x), ("y", y)))

    # ----- autograd metadata -----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        if _func_depth[0]:   # inside torch.func's transforms: what the innermost level sees
            return _func_requires_grad[0](self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        # PyTorch's attribute setter words its errors differently from requires_grad_().
        if not isinstance(flag, (bool, np.bool_)):
            raise RuntimeError("requires_grad must be a bool")
        if self.grad_fn is not None and flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if flag and self._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if _func_depth[0]:   # (allowed inside torch.func's transforms, unlike requires_grad_(), as PyTorch's)
            if flag and self.grad_fn is None and not self._requires_grad:
                _func_new_leaf[0](self)
            self._requires_grad = bool(flag)
            return
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not isinstance(requires_grad, (bool, np.bool_)):
            # A truthy string ('no') must not silently turn gradients on.
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                            f"{type(requires_grad).__name__}")
        if _func_depth[0]:   # refused first inside torch.func's transforms, whatever the tensor, as PyTorch's
            raise RuntimeError(_FUNC_REQUIRES_GRAD)
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad: bool) -> Tensor:
        """``requires_grad_`` for ember's own code (factories, Parameter): allowed inside torch.func's transforms,
        where a new leaf belongs to the innermost transform's level."""
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().")
        if requires_grad and self._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not _gm_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if requires_grad and _func_depth[0] and not self._requires_grad:
            _func_new_leaf[0](self)
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    def _get_meta(self) -> _Meta:
        m = self._meta
        if m is None:
            m = self._meta = _Meta()
        return m

    @property
    def grad(self) -> Tensor | None:
        m = self._meta
        if self.grad_fn is not None and (m is None or (not m.retains_grad and m.grad is None)):
            warnings.warn(_non_leaf_grad_warning(self), UserWarning, stacklevel=2)
            return None
        return None if m is None else m.grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            allowed = self._grad_np_dtype(value._data.dtype)
            if value._data.dtype != allowed:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{D.c_type_name(value._data.dtype)}' to a tensor "
                    f"with grad_dtype '{D.type_word(allowed)}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute "
                    "with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the "
                    "dtypes of a tensor and its gradient may break downstream systems that assume they match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor "
                                   f"of size '{list(self._data.shape)}'. Please ensure that the gradient and the "
                                   "tensor are the same size")
        self._get_meta().grad = value

    def _grad_np_dtype(self, incoming):
        """The array dtype this leaf keeps its gradient in, for a gradient of dtype ``incoming``."""
        m = self._meta
        want = SAME_DTYPE if m is None else m.grad_dtype
        return self._data.dtype if want is SAME_DTYPE else incoming if want is None else want.np

    @property
    def grad_dtype(self):
        """The allowed dtype of a leaf's ``.grad`` (PyTorch 2.13): by default the tensor's dtype; a dtype makes the
        engine cast incoming gradients to it; None allows any."""
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        m = self._meta
        return self.dtype if m is None or m.grad_dtype is SAME_DTYPE else m.grad_dtype

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, D.dtype):
            raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        m = self._get_meta()
        if value is not None and m.grad is not None and m.grad._data.dtype != value.np:
            raise RuntimeError(f"Cannot set grad_dtype to '{D.type_word(value.np)}' because there is already a "
                               f"gradient with dtype '{D.c_type_name(m.grad._data.dtype)}'. Please clear the gradient "
                               "(.grad = None) before changing grad_dtype, or ensure the new grad_dtype matches the "
                               "existing gradient's dtype.")
        m.grad_dtype = value

    @property
    def retains_grad(self) -> bool:
        return self._meta is not None and self._meta.retains_grad

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after backward."""
        if self.grad_fn is None and not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if _func_depth[0]:
            raise RuntimeError(_FUNC_RETAIN_GRAD)
        if self.grad_fn is None:
            return
        m = self._get_meta()
        if m.retains_grad:
            return
        m.retains_grad = True
        self.grad_fn._retain_grad(self._output_nr, weakref.ref(self))

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_hook(self._output_nr, hook)
        m = self._get_meta()
        if m.hooks is None:
            m.hooks = {}
        return add_hook(m.hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a gradient has been accumulated into this leaf's ``.grad``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        m = self._get_meta()
        if m.post_acc_hooks is None:
            m.post_acc_hooks = {}
        return add_hook(m.post_acc_hooks, hook)

    def detach(self) -> Tensor:
        """A tensor sharing this one's data (and version counter) with no autograd history."""
        t = _new(Tensor)
        t._data = self._data
        t.grad_fn = None
        t._requires_grad = False
        t._output_nr = 0
        t._vc = self._vc
        t._base = None
        t._origin = ("detach()", user_site())   # for autograd.explain; detach is rare enough to afford it
        return t

    def detach_(self) -> Tensor:
        if self._base is not None and self.grad_fn is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # ----- conversion ------------------------------------------------------------------------
    # As PyTorch's: a NumPy scalar on the left of an operator (np.float64(0.5) * t) defers to the Tensor's
    # reflected operator instead of turning the tensor into an array.
    __array_priority__ = 1000

    def numpy(self, *, force: bool = False) -> np.ndarray:
        # As PyTorch: refused only while grad mode is on (a custom Function's forward runs with it off)
        if self._requires_grad and not force and _gm_state.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if device_of(self._data).type != "cpu":
            raise TypeError(f"can't convert {device_of(self._data)} device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        if self._data.dtype.name.startswith("float8"):   # NumPy has no float8 (ml_dtypes' arrays stay inside)
            raise TypeError(f"Got unsupported ScalarType {D.type_word(self._data.dtype)}")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad and _gm_state.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        a = self._data
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def __bool__(self) -> bool:
        n = self._data.size
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with "
                               + ("no values" if n == 0 else "more than one value") + " is ambiguous")
        return bool(self._data.item())

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self._requires_grad and _gm_state.enabled:
            warn_once("scalar", _SCALAR_WARNING)
        return float(_real_item(self._data.item(), "double"))

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(_real_item(self._data.item(), "int64_t"))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.item())

    def __complex__(self) -> complex:
        if self._requires_grad and _gm_state.enabled and self._data.size == 1:
            warn_once("scalar", _SCALAR_WARNING)
        return complex(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self._data.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        suffixes = ()
        d = device_of(self._data)
        if d.type != "cpu":
            suffixes = (f"device='{d}'",)
        if self.grad_fn is not None:
            suffixes += (f"grad_fn=<{type(self.grad_fn).__name__}>",)
        elif self._requires_grad:
            suffixes += ("requires_grad=True",)
        be = backend_of(self._data)
        if not has_data(be):   # 'meta': the size in place of the values
            return _formatting.format_no_data(self._data.shape, self.dtype._name, D._default_float._name, suffixes)
        host = be.to_numpy(self._data)   # printing formats a host copy
        return _formatting.format_tensor(host, self.dtype._name, D._default_float._name, suffixes)

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        d = self._data
        if not has_data(backend_of(d)):   # 'meta': its shape and dtype (its array type has no name to pickle by)
            return (_rebuild_empty, (device_of(d).type, d.shape, d.dtype.str, self._requires_grad))
        return (_rebuild, (d, self._requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment.  If you were attempting to deepcopy a module, "
                               "this may be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        t = _rebuild(self._data.copy(), self._requires_grad)
        if self._meta is not None and self._meta.grad is not None:
            t.grad = self._meta.grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t


def _init(t: Tensor, data: np.ndarray) -> None:
    if _gm_state.inference:
        t._inference = True
    t._data = data
    t.grad_fn = None
    t._requires_grad = False
    t._output_nr = 0
    t._vc = [0]
    t._base = None


def _rebuild_empty(device_type: str, shape: tuple, dtype: str, requires_grad: bool) -> Tensor:
    """A tensor without data read back from a pickle."""
    return _rebuild(device_namespace(device_type).backend.zeros(shape, dtype), requires_grad)


def _rebuild(data, requires_grad):
    t = _new(Tensor)
    _init(t, data)
    t._requires_grad = requires_grad
    return t


def make(data: np.ndarray) -> Tensor:
    """Wrap a raw array (no copy) as a new leaf tensor; the hot path of every op."""
    t = _new(Tensor)
    _init(t, data)
    return t


def zeros_of(t: Tensor) -> Tensor:
    """Constant zeros with ``t``'s shape, dtype and device (no graph): the tangent of an input that has none."""
    return make(backend_of(t._data).zeros_like(t._data))


def _wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    n = max(ndim, 1)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        if not (isinstance(dim, Tensor) and dim._data.ndim == 0 and dim._data.dtype.kind in "iu"):
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
        dim = dim.item()   # a 0-d integer tensor, as PyTorch's parser takes it (its __index__)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


wrap_dim = _wrap_dim
