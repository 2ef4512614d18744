"""The op table, torch.nn.functional: convolution and pooling.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/_numpy_nn_conv.py``.

Convolution is three bilinear primitives, N-d generic, each the others' derivatives:
  * ``convolution``    y = conv(x, w) + b                      (PyTorch's ConvolutionBackward0)
  * ``conv_transpose`` x' = conv_transpose(y, w) + b           (the input gradient of conv; ConvolutionBackward0
                                                                for F.conv_transpose*d)
  * ``conv_weight``    w' = conv_weight(x, y)                  (the weight gradient of conv)
Their VJPs call each other through ``xp``, so gradients of any order are convolutions again.
Pooling: ``max_pool`` picks the input at indices found in the forward (its gradient scatters back through
``pool_scatter``, whose own gradient is ``pool_gather``); ``avg_pool`` is linear, its gradient
``avg_pool_backward`` is linear too and each is the other's VJP.
"""
from __future__ import annotations

import math

from .._numpy_nn_conv import _max_pool_indices
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ._primitive import PrimNode, apply, defprim
from ._registry import graph, register
from ._util import check_tensor

_NN = "nn.functional"
_BB = node_class("ConvolutionBackwardBackward0", PrimNode)


# ----- convolution primitives ---------------------------------------------------------------------------

def _bias_grad(xp, g):
    return xp.sum(g, (0,) + tuple(range(2, g.ndim)))


def _bias_tangent(xp, t, out):
    return xp.expand(xp.reshape(t, (1, t.shape[0]) + (1,) * (out.ndim - 2)), tuple(out.shape))


conv_p = defprim(
    "convolution", "ConvolutionBackward0",
    lambda xp, x, w, b, stride, pads, dilation, groups: xp.conv_nd(x, w, b, stride, pads, dilation, groups),
    vjp=(lambda xp, g, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_transpose_nd(g, w, None, stride, pads, dilation, groups, tuple(x.shape[2:])),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_weight_nd(x, g, tuple(w.shape), stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups: _bias_grad(xp, g)),
    jvp=(lambda xp, t, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_nd(t, w, None, stride, pads, dilation, groups),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_nd(x, t, None, stride, pads, dilation, groups),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups: _bias_tangent(xp, t, out)),
    saves=(0, 1), saved_names=("input", "weight", "bias"))

conv_transpose_p = defprim(
    "conv_transpose", "ConvolutionBackward0",
    lambda xp, x, w, b, stride, pads, dilation, groups, size:
    xp.conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size),
    vjp=(lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_nd(g, w, None, stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_weight_nd(g, x, tuple(w.shape), stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size: _bias_grad(xp, g)),
    jvp=(lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(t, w, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(x, t, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size: _bias_tangent(xp, t, out)),
    saves=(0, 1), saved_names=("input", "weight", "bias"))

conv_weight_p = defprim(
    "conv_weight", "ConvolutionBackwardBackward0",
    lambda xp, x, gy, wshape, stride, pads, dilation, groups:
    xp.conv_weight_nd(x, gy, wshape, stride, pads, dilation, groups),
    vjp=(lambda xp, g, out, x, gy, wshape, stride, pads, dilation, groups:
         xp.conv_transpose_nd(gy, g, None, stride, pads, dilation, groups, tuple(x.shape[2:])),
         lambda xp, g, out, x, gy, wshape, stride, pads, dilation, groups:
         xp.conv_nd(x, g, None, stride, pads, dilation, groups)),
    jvp="multilinear", saves=(0, 1))


def _conv_params(stride, pads, dilation, groups):
    return {"stride": stride, "pads": pads, "dilation": dilation, "groups": groups}


# Under create_graph these record PyTorch's double-backward node name.
graph("conv_nd", lambda x, w, b, stride, pads, dilation, groups: apply(
    conv_p, (x, w, b), _conv_params(stride, pads, dilation, groups), _BB))
graph("conv_transpose_nd", lambda x, w, b, stride, pads, dilation, groups, size: apply(
    conv_transpose_p, (x, w, b), dict(_conv_params(stride, pads, dilation, groups), size=tuple(size)), _BB))
graph("conv_weight_nd", lambda x, gy, wshape, stride, pads, dilation, groups: apply(
    conv_weight_p, (x, gy), dict(_conv_params(stride, pads, dilation, groups), wshape=tuple(wshape))))


# ----- argument checking ----------------------------------------------------------------------------------

def _ntuple(v, d: int, name: str, op: str) -> tuple:
    """An int or a sequence of ``d`` ints (a 1-sequence repeats), as PyTorch's int[d] arguments."""
    if isinstance(v, bool) or v is None:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")
    if isinstance(v, int):
        return (v,) * d
    if isinstance(v, Tensor) and v.ndim == 0:
        return (int(v.item()),) * d
    try:
        vals = tuple(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}") from None
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vals):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                        f"{type(next(i for i in vals if not isinstance(i, int) or isinstance(i, bool))).__name__}")
    if len(vals) == 1:
        return vals * d
    if len(vals) != d:
        raise RuntimeError(f"{op}(): argument '{name}' expected {d} ints, got {len(vals)}")
    return vals


def _size_str(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _check_dtypes(input: Tensor, weight: Tensor, bias) -> None:
    if input._data.dtype != weight._data.dtype:
        raise RuntimeError(f"Input type ({_tensor_type(input)}) and weight type ({_tensor_type(weight)}) should "
                           "be the same")
    if bias is not None and bias._data.dtype != input._data.dtype:
        raise RuntimeError(f"Input type ({input._data.dtype.name.replace('float32', 'float').replace('float64', 'double')}) "
                           f"and bias type ({bias._data.dtype.name.replace('float32', 'float').replace('float64', 'double')}) "
                           "should be the same")


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16"}


def _tensor_type(t: Tensor) -> str:
    return f"torch.{_TYPE_NAMES.get(str(t._data.dtype), str(t._data.dtype))}Tensor"


def _conv_args(op, input, weight, bias, d, transposed):
    check_tensor(input, op, "input", 1)
    check_tensor(weight, op, "weight", 2)
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{op}(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to {op}, but got input "
                           f"of size: {_size_str(input.shape)}")
    batched = input.ndim == d + 2
    if weight.ndim != d + 2:
        raise RuntimeError(f"weight should have at least three dimensions" if weight.ndim < 3 else
                           f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                           f"{_size_str(weight.shape)}, but got {input.ndim}-dimensional input of size "
                           f"{_size_str(input.shape)} instead")
    _check_dtypes(input, weight, bias)
    return batched


def _check_groups(op, input_shape, weight, bias, groups, transposed):
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    ws = tuple(weight.shape)
    if ws[0] % groups and not transposed:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{_size_str(ws)}] instead")
    C = input_shape[1]
    want = ws[0] if transposed else ws[1] * groups
    if C != want:
        kind = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {kind}, weight of size {_size_str(ws)}, expected input{_size_str(input_shape)} "
                           f"to have {want} channels, but got {C} channels instead")
    out_ch = ws[1] * groups if transposed else ws[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_ch):
        raise RuntimeError(f"Given weight of size {_size_str(ws)}, expected bias to be 1-dimensional with "
                           f"{out_ch} elements, but got bias of size {_size_str(bias.shape)} instead")


def _conv(op, d, input, weight, bias, stride, padding, dilation, groups):
    batched = _conv_args(op, input, weight, bias, d, False)
    x = input if batched else input.unsqueeze(0)
    _check_groups(op, tuple(x.shape), weight, bias, groups, False)
    stride = _ntuple(stride, d, "stride", op)
    dilation = _ntuple(dilation, d, "dilation", op)
    kernel = tuple(weight.shape[2:])
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(s <= 0 for s in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * d
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            tot = [dl * (k - 1) for dl, k in zip(dilation, kernel)]
            pads = tuple((t // 2, t - t // 2) for t in tot)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = _ntuple(padding, d, "padding", op)
        if any(v < 0 for v in p):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    padded = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)]
    eff = [dl * (k - 1) + 1 for dl, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           "actual input size")
    out = apply(conv_p, (x, weight, bias), _conv_params(stride, pads, dilation, groups))
    return out if batched else out.squeeze(0)


@register(submodule=_NN)
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-d convolution over (N, C, L) or (C, L) inputs (PyTorch's cross-correlation)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@register(submodule=_NN)
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-d convolution over (N, C, H, W) or (C, H, W) inputs."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@register(submodule=_NN)
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-d convolution over (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, d, input, weight, bias, stride, padding, output_padding, groups, dilation):
    batched = _conv_args(op, input, weight, bias, d, True)
    x = input if batched else input.unsqueeze(0)
    _check_groups(op, tuple(x.shape), weight, bias, groups, True)
    stride = _ntuple(stride, d, "stride", op)
    dilation = _ntuple(dilation, d, "dilation", op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    pad = _ntuple(padding, d, "padding", op)
    opad = _ntuple(output_padding, d, "output_padding", op)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(s <= 0 for s in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(v < 0 for v in pad):
        raise RuntimeError("negative padding is not supported")
    if any(o >= s and o >= dl for o, s, dl in zip(opad, stride, dilation)) or any(o < 0 for o in opad):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                           f"output_padding: {list(opad)} stride: {list(stride)} dilation: {list(dilation)}")
    kernel = tuple(weight.shape[2:])
    size = tuple((L - 1) * s - 2 * p + dl * (k - 1) + o + 1
                 for L, s, p, dl, k, o in zip(x.shape[2:], stride, pad, dilation, kernel, opad))
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    out = apply(conv_transpose_p, (x, weight, bias),
                dict(_conv_params(stride, tuple((p, p) for p in pad), dilation, groups), size=size))
    return out if batched else out.squeeze(0)


@register(submodule=_NN)
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-d transposed convolution (the gradient of conv1d with respect to its input)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


@register(submodule=_NN)
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-d transposed convolution."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


@register(submodule=_NN)
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-d transposed convolution."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
