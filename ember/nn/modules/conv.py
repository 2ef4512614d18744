"""Convolutions: Conv1d/2d/3d (padding modes, 'same'/'valid') and ConvTranspose1d/2d/3d (output_size)."""
from __future__ import annotations

import math
from typing import Any

from ...ops import creation as _creation
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .lazy import LazyModuleMixin
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_VALID_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _VALID_PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_VALID_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts (last dim first) for the non-zero padding modes
        if isinstance(padding, str):
            pads = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    pads[2 * i] = total // 2
                    pads[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = pads
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(padding, 2)
        shape = ((in_channels, out_channels // groups, *kernel_size) if transposed
                 else (out_channels, in_channels // groups, *kernel_size))
        self.weight = Parameter(_creation.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with no_grad():
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
                bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _n = 0
    _tuple = staticmethod(_single)
    _fn = staticmethod(F.conv1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride),
                         padding if isinstance(padding, str) else t(padding), t(dilation), False, t(0), groups,
                         bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            return self._fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                            self.stride, self._tuple(0), self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _n = 1
    _tuple = staticmethod(_single)
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    _n = 2
    _tuple = staticmethod(_pair)
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _n = 3
    _tuple = staticmethod(_triple)
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _n = 0
    _tuple = staticmethod(_single)
    _fn = staticmethod(F.conv_transpose1d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        t = self._tuple
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size, stride, padding, kernel_size, num_spatial_dims: int,
                        dilation=None) -> list[int]:
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes = [(input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                     + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1
                     for d in range(num_spatial_dims)]
        max_sizes = [m + stride[d] - 1 for d, m in enumerate(min_sizes)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input: Tensor, output_size: list[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              self._n, self.dilation)
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                        self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1
    _tuple = staticmethod(_single)
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2
    _tuple = staticmethod(_pair)
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    _n = 3
    _tuple = staticmethod(_triple)
    _fn = staticmethod(F.conv_transpose3d)


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
