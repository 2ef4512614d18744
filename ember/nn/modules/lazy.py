"""LazyModuleMixin and the Lazy* modules: parameters whose shapes come from the first input (or from a loaded
state dict), as PyTorch's.

PyTorch marks such tensors with UninitializedParameter/UninitializedBuffer; ember keeps ordinary empty tensors and
remembers their names in ``_lazy_pending``. Shapes are filled in ("materialised") by ``load_state_dict`` (from the
checkpoint's shapes) or by the first forward, which then initialises them exactly as PyTorch does (same order of
random draws), and the module becomes its ordinary class (``cls_to_become``).
"""
from __future__ import annotations

from typing import Any

from ...ops import creation as _creation
from ..._tensor import Tensor
from ...autograd import grad_mode as _gm
from ..parameter import Parameter
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Hooks in a load_state_dict pre-hook (materialise from the checkpoint's shapes) and a forward pre-hook
    (``initialize_parameters(*args)``, then become ``cls_to_become``)."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy_pending = {}
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _make_lazy(self, name: str, buffer: bool = False, dtype=None, device=None) -> None:
        """Sets ``name`` to an empty parameter (or buffer) awaiting its shape."""
        t = _creation.empty(0, dtype=dtype, device=device)
        if buffer:
            self.register_buffer(name, t)
        else:
            setattr(self, name, Parameter(t))
        self._lazy_pending[name] = buffer

    def _materialize(self, name: str, shape: tuple) -> None:
        """Gives a pending tensor its shape (uninitialised values, as PyTorch's ``materialize``)."""
        old = getattr(self, name)
        new = _creation.empty(tuple(shape), dtype=old.dtype, device=old.device)
        if self._lazy_pending.pop(name):
            self._buffers[name] = new
        else:
            with _gm.no_grad():
                old.data = new

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer still awaits its shape."""
        return bool(getattr(self, "_lazy_pending", None))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs) -> None:
        for name in list(self._lazy_pending):
            key = prefix + name
            if key in state_dict:
                value = state_dict[key]
                # an uninitialised tensor in the checkpoint leaves this one uninitialised, as PyTorch's
                if isinstance(value, Tensor) and value.numel() > 0:
                    self._materialize(name, tuple(value.shape))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        for name in ("_initialize_hook", "_load_hook", "_lazy_pending"):
            delattr(module, name)
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def __deepcopy__(self, memo: dict):
        # PyTorch's uninitialized buffers refuse deepcopy (its uninitialized parameters copy; pickling works)
        if any(getattr(self, "_lazy_pending", {}).values()):
            raise ValueError("Attempted to use an uninitialized parameter in <function Tensor.__deepcopy__>. This "
                             "error happens when you are using a `LazyModule` or explicitly manipulating "
                             "`torch.nn.parameter.UninitializedBuffer` objects. When using LazyModules Call "
                             "`forward` with a dummy batch to initialize the parameters before calling torch "
                             "functions")
        import copy
        return copy._reconstruct(self, memo, *self.__reduce_ex__(4))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # materialise first (the pre-hook may run only inside the base method); what stays uninitialised loads
        # nothing (PyTorch skips the shape check for lazy tensors)
        if getattr(self, "_lazy_pending", None):
            self._lazy_load_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs)
        pending = [n for n in getattr(self, "_lazy_pending", {}) if prefix + n in state_dict]
        if pending:
            state_dict = {k: v for k, v in state_dict.items() if k[len(prefix):] not in pending}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        for n in pending:  # present in the checkpoint, so not missing
            if prefix + n in missing_keys:
                missing_keys.remove(prefix + n)


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is inferred from the first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self._make_lazy("weight", dtype=dtype, device=device)
        self.out_features = out_features
        if bias:
            self._make_lazy("bias", dtype=dtype, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with _gm.no_grad():
                self.in_features = input.shape[-1]
                self._materialize("weight", (self.out_features, self.in_features))
                if self.bias is not None:
                    self._materialize("bias", (self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    _spatial = 1

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self._materialize("weight", shape)
            if self.bias is not None:
                self._materialize("bias", (self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        no_batch = self._spatial + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def _get_num_spatial_dims(self) -> int:
        return self._spatial


def _lazy_conv(name: str, base: type, spatial: int) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        _lazy_init(self, out_channels, bias, device, dtype)

    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "_spatial": spatial,
                                                  "__doc__": f"A {base.__name__} whose in_channels is inferred from "
                                                             "the first input.", "__module__": __name__})


def _lazy_conv_transpose(name: str, base: type, spatial: int) -> type:
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                      padding_mode, device, dtype)
        _lazy_init(self, out_channels, bias, device, dtype)

    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "_spatial": spatial,
                                                  "__doc__": f"A {base.__name__} whose in_channels is inferred from "
                                                             "the first input.", "__module__": __name__})


def _lazy_init(self, out_channels: int, bias: bool, device, dtype) -> None:
    # the base class's __init__ ran without the mixin's (it is called directly), so add the hooks here
    self._lazy_pending = {}
    self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
    self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)
    self._make_lazy("weight", dtype=dtype, device=device)
    self.out_channels = out_channels
    if bias:
        self._make_lazy("bias", dtype=dtype, device=device)


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", ConvTranspose3d, 3)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self._make_lazy("weight", dtype=dtype, device=device)
            if bias:
                self._make_lazy("bias", dtype=dtype, device=device)
        if track_running_stats:
            self._make_lazy("running_mean", buffer=True, dtype=dtype, device=device)
            self._make_lazy("running_var", buffer=True, dtype=dtype, device=device)
            from ... import _dtype as D
            self.num_batches_tracked = _creation.tensor(0, dtype=D.long, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self._materialize("weight", (self.num_features,))
                if self.bias is not None:
                    self._materialize("bias", (self.num_features,))
            if self.track_running_stats:
                self._materialize("running_mean", (self.num_features,))
                self._materialize("running_var", (self.num_features,))
            self.reset_parameters()


def _lazy_norm(name: str, base: type) -> type:
    return type(name, (_LazyNormBase, base), {"cls_to_become": base, "__module__": __name__,
                                               "__doc__": f"A {base.__name__} whose num_features is inferred from "
                                                          "the first input."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d)
