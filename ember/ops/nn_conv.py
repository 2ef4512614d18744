"""The op table, torch.nn.functional: convolution and pooling.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_conv.py``.

Convolution is three bilinear primitives, N-d generic, each the others' derivatives:
  * ``convolution``    y = conv(x, w) + b                      (PyTorch's ConvolutionBackward0)
  * ``conv_transpose`` x' = conv_transpose(y, w) + b           (the input gradient of conv; ConvolutionBackward0
                                                                for F.conv_transpose*d)
  * ``conv_weight``    w' = conv_weight(x, y)                  (the weight gradient of conv)
Their VJPs call each other through ``xp``, so gradients of any order are convolutions again.
Pooling: ``max_pool`` picks the input at indices found in the forward (its gradient scatters back through
``pool_backward``, whose own gradient is ``pool_gather``); ``avg_pool`` is linear, its gradient
``avg_pool_backward`` is linear too and each is the other's VJP. As PyTorch's, these backward ops (and
padding's) take the input as well, with a zero derivative, so a second derivative reaches the input.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..devices.cpu.nn_conv import _adaptive_bounds, _adaptive_max_indices, _max_pool_indices
from ..devices.cpu.nn_conv import dim_matrices as _dim_matrices_raw
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, Unsaved, apply, defprim, save_always
from ._registry import graph, register
from .._util import check_tensor

_NN = "nn.functional"
_BB = node_class("ConvolutionBackwardBackward0", PrimNode)


# ----- convolution primitives ---------------------------------------------------------------------------

def _bias_grad(xp, g, x=None, w=None):
    gb = xp.sum(g, (0,) + tuple(range(2, g.ndim)))
    return gb if x is None else xp.grad_link(gb, x, w, "ConvolutionBackwardBackward0")


# PyTorch computes the input, weight and bias gradients of a convolution or a normalisation in one op that takes
# the input and the weight (convolution_backward, native_layer_norm_backward, ...): under create_graph even the
# bias gradient, a plain sum of the upstream gradient, is connected to them (with no derivative: a second
# derivative reaches them as None, "not used" without allow_unused). grad_link gives ember's the same edges.
grad_link_p = defprim(
    "grad_link", "ConvolutionBackwardBackward0",
    lambda xp, g, a, b: xp.clone(g),
    vjp=(lambda xp, gg, out, g, a, b: gg, lambda xp, gg, out, g, a, b: None, lambda xp, gg, out, g, a, b: None),
    jvp=(lambda xp, t, out, g, a, b: t, lambda xp, t, out, g, a, b: None, lambda xp, t, out, g, a, b: None))
graph("grad_link", lambda g, a, b, node: apply(grad_link_p, (g, a, b), {}, node_class(node, PrimNode)))
# the same, with a zero derivative (not None) for ``b`` (nearest grid_sample's input gradient and its grid)
grad_link_zero_p = defprim(
    "grad_link_zero", "GridSampler2DBackwardBackward0",
    lambda xp, g, a, b: xp.clone(g),
    vjp=(lambda xp, gg, out, g, a, b: gg, lambda xp, gg, out, g, a, b: None,
         lambda xp, gg, out, g, a, b: xp.zeros_like(b)),
    jvp=(lambda xp, t, out, g, a, b: t, lambda xp, t, out, g, a, b: None, lambda xp, t, out, g, a, b: None),
    saves=(2,))
graph("grad_link_zero", lambda g, a, b, node: apply(grad_link_zero_p, (g, a, b), {}, node_class(node, PrimNode)))


def _bias_tangent(xp, t, out):
    return xp.expand(xp.reshape(t, (1, t.shape[0]) + (1,) * (out.ndim - 2)), tuple(out.shape))


conv_p = defprim(
    "convolution", "ConvolutionBackward0",
    lambda xp, x, w, b, stride, pads, dilation, groups: xp.conv_nd(x, w, b, stride, pads, dilation, groups),
    vjp=(lambda xp, g, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_transpose_nd(g, w, None, stride, pads, dilation, groups, tuple(x.shape[2:])),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_weight_nd(x, g, tuple(w.shape), stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups: _bias_grad(xp, g, x, w)),
    jvp=(lambda xp, t, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_nd(t, w, None, stride, pads, dilation, groups),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups:
         xp.conv_nd(x, t, None, stride, pads, dilation, groups),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups: _bias_tangent(xp, t, out)),
    saves=(0, 1), saved_names=("input", "weight", "bias"))
save_always(conv_p)   # PyTorch's convolution_backward is one formula for all three inputs


def _crop_to(xp, r, shape):
    """The input gradient of a transposed convolution whose output_padding reaches past a stride (allowed when
    dilation > stride): the convolution of the gradient is larger than the input; the extra rows had no input."""
    if tuple(r.shape) == tuple(shape):
        return r
    return xp.getitem(r, (slice(None), slice(None)) + tuple(slice(0, s) for s in shape[2:]))


conv_transpose_p = defprim(
    "conv_transpose", "ConvolutionBackward0",
    lambda xp, x, w, b, stride, pads, dilation, groups, size:
    xp.conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size),
    vjp=(lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         _crop_to(xp, xp.conv_nd(g, w, None, stride, pads, dilation, groups), x.shape),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_weight_nd(g, x, tuple(w.shape), stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size: _bias_grad(xp, g, x, w)),
    jvp=(lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(t, w, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(x, t, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size: _bias_tangent(xp, t, out)),
    saves=(0, 1), saved_names=("input", "weight", "bias"))
save_always(conv_transpose_p)

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
        raise RuntimeError(f"Input type ({_scalar_word(input)}) and bias type ({_scalar_word(bias)}) should be the "
                           "same")


def _scalar_word(t: Tensor) -> str:
    """PyTorch's C++ scalar name (float, double, long, ...)."""
    return {"float32": "float", "float64": "double", "int64": "long"}.get(t._data.dtype.name, t._data.dtype.name)


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
        raise RuntimeError("weight should have at least three dimensions" if weight.ndim < 3 else
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
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
                           f"but got weight of size {_size_str(ws)} instead")
    if ws[0] % groups:   # PyTorch prints this size in double brackets
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
            pads = tuple((t // 2, t // 2) for t in tot)
            if any(t % 2 for t in tot):   # as PyTorch: the odd extra padded on the right by constant_pad_nd first
                x = apply(constant_pad_p, (x,), {"pads": tuple((0, t % 2) for t in tot), "value": 0})
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
    _check_empty_input(d, tuple(x.shape))
    _check_kernel(d, tuple(weight.shape), False, groups)
    out = apply(conv_p, (x, weight, bias), _conv_params(stride, pads, dilation, groups))
    return out if batched else out.squeeze(0)


def _check_empty_input(d, shape):
    """An empty input is computed only when its batch or channel dim is the empty one (PyTorch's message shows
    a 1-d input as the 2-d one it runs)."""
    if 0 in shape[2:] and shape[0] and shape[1]:
        shown = shape[:2] + (1,) + shape[2:] if d == 1 else shape
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input shape: "
                           f"{_size_str(shown)}")


def _check_kernel(d, ws, transposed, groups):
    """PyTorch's CPU kernels' checks of an empty kernel (and of a transposed weight with no output channels),
    after the shape checks: a 1-d convolution runs as a 2-d one over (1, L), one group at a time."""
    ws = (ws[0] // groups,) + ws[1:]
    if d == 3:
        if transposed and 0 in ws:
            raise RuntimeError("non-empty 5D (n_output_plane x n_input_plane x kernel_depth x kernel_height x "
                               f"kernel_width) tensor expected for weight, but got: {_size_str(ws)}")
        if 0 in ws[2:]:
            raise RuntimeError(f"kernel size should be greater than zero, but got: {' x '.join(map(str, ws[2:]))} "
                               "(TxHxW)")
        return
    kh, kw = (1,) + ws[2:] if d == 1 else ws[2:]
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} "
                           f"kernel_width: {kw}")
    if transposed and ws[1] == 0:
        shape = ws[:2] + (1,) + ws[2:] if d == 1 else ws
        raise RuntimeError(f"non-empty 2D or 4D weight tensor expected, but got: {_size_str(shape)}")


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
    _check_empty_input(d, tuple(x.shape))
    size = tuple((L - 1) * s - 2 * p + dl * (k - 1) + o + 1
                 for L, s, p, dl, k, o in zip(x.shape[2:], stride, pad, dilation, kernel, opad))
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, size))}). Output size is too small")
    _check_kernel(d, tuple(weight.shape), True, groups)
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


# ----- pooling primitives ---------------------------------------------------------------------------------

def _node(name: str) -> type:
    return node_class(name, PrimNode)


# max pooling: the input read at the indices of each window's maximum (found before, in the public function)
# As PyTorch's, the input gradients of max/avg pooling and reflection/replication padding take the input itself
# (max_pool2d_with_indices_backward(grad, self, ...)), so under create_graph the gradient is connected to the
# input, whose derivative there is zero: a second derivative with respect to the input is zeros, not "unused".
# The input is saved for that (PyTorch saves it too).
max_pool_p = defprim(
    "max_pool", "MaxPool2DWithIndicesBackward0",
    lambda xp, x, indices, sd, unique: xp.pool_gather(x, indices, sd),
    vjp=lambda xp, g, out, x, indices, sd, unique: xp.pool_backward(g, x, indices, sd, unique),
    jvp="linear", saves=(0,))
pool_backward_p = defprim(
    "pool_backward", "MaxPool2DWithIndicesBackwardBackward0",
    lambda xp, g, x, indices, sd, unique: xp.pool_scatter(g, indices, tuple(x.shape), sd, unique),
    vjp=(lambda xp, gg, out, g, x, indices, sd, unique: xp.pool_gather(gg, indices, sd, unique),
         lambda xp, gg, out, g, x, indices, sd, unique: xp.zeros_like(gg)),
    jvp=(lambda xp, t, out, g, x, indices, sd, unique: xp.pool_scatter(t, indices, tuple(x.shape), sd, unique),
         lambda xp, t, out, g, x, indices, sd, unique: None))
graph("pool_backward", lambda g, x, indices, sd, unique=False: apply(
    pool_backward_p, (g, x), {"indices": indices, "sd": sd, "unique": unique}))
pool_scatter_p = defprim(
    "pool_scatter", "MaxPool2DWithIndicesBackwardBackward0",
    lambda xp, g, indices, shape, sd, unique: xp.pool_scatter(g, indices, shape, sd, unique),
    vjp=lambda xp, g, out, gy, indices, shape, sd, unique: xp.pool_gather(g, indices, sd, unique),
    jvp="linear")
graph("pool_gather", lambda x, indices, sd, unique=False: apply(
    max_pool_p, (x,), {"indices": indices, "sd": sd, "unique": unique}))
graph("pool_scatter", lambda g, indices, shape, sd, unique=False: apply(
    pool_scatter_p, (g,), {"indices": indices, "shape": tuple(shape), "sd": sd, "unique": unique}))

# separable linear pooling (avg_pool, adaptive_avg_pool): one matrix per spatial dim; the VJP is the same
# op with the transposed matrices
dim_matrices_p = defprim(
    "dim_matrices", "AvgPool2DBackward0",
    lambda xp, x, mats: xp.dim_matrices(x, mats),
    vjp=lambda xp, g, out, x, mats: xp.dim_matrices(g, tuple(a.T for a in mats)),
    jvp="linear")
graph("dim_matrices", lambda x, mats: apply(dim_matrices_p, (x,), {"mats": tuple(mats)}))
# average pooling: the same forward, the gradient connected to the input as PyTorch's (see max_pool_p)
avg_pool_p = defprim(
    "avg_pool", "AvgPool2DBackward0",
    lambda xp, x, mats: xp.dim_matrices(x, mats),
    vjp=lambda xp, g, out, x, mats: xp.avg_pool_backward(g, x, mats),
    jvp="linear", saves=(0,))
avg_pool_backward_p = defprim(
    "avg_pool_backward", "AvgPool2DBackwardBackward0",
    lambda xp, g, x, mats: xp.dim_matrices(g, tuple(a.T for a in mats)),
    vjp=(lambda xp, gg, out, g, x, mats: xp.dim_matrices(gg, mats),
         lambda xp, gg, out, g, x, mats: xp.zeros_like(gg)),
    jvp=(lambda xp, t, out, g, x, mats: xp.dim_matrices(t, tuple(a.T for a in mats)),
         lambda xp, t, out, g, x, mats: None))
graph("avg_pool_backward", lambda g, x, mats: apply(avg_pool_backward_p, (g, x), {"mats": tuple(mats)}))

_POOL_NODES = {name: _node(name) for name in (
    "MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0", "AvgPool2DBackward0", "AvgPool3DBackward0",
    "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool3DBackward0", "AdaptiveMaxPool2DBackward0",
    "AdaptiveMaxPool3DBackward0")}


# ----- pooling ---------------------------------------------------------------------------------------------

def _pool_input(op, input, d):
    """PyTorch's input checks of (max/avg) pooling; True when the input is batched."""
    check_tensor(input, op, "input", 1)
    n, shape = input.ndim, tuple(input.shape)
    avg = op.startswith("avg")
    optional_batch = (f"Expected {d + 1}D or {d + 2}D (batch mode) tensor with optional 0 dim batch size for "
                      f"input, but got:{_size_str(shape)}")
    if d == 2 and avg and n > d + 2:
        raise RuntimeError(optional_batch)
    if n not in (d + 1, d + 2):
        raise RuntimeError(f"non-empty {d + 1}D or {d + 2}D (batch mode) tensor expected for input")
    if 0 in (shape[1:] if n == d + 2 else shape):   # only the batch dim may be empty
        if d == 3:   # PyTorch's 3-d kernels name themselves, and always "dimension 0"
            name = "avg_pool3d" if avg else "max_pool3d_with_indices_out_cpu_template"
            raise RuntimeError(f"{name}(): Expected input's non-batch dimensions to have positive length, but "
                               f"input has a shape of {_size_str(shape)} and non-batch dimension 0 has length zero!")
        raise RuntimeError(optional_batch)
    return n == d + 2


def _dims_error(n, op):
    """PyTorch's checkDimRange message of the 1-d pooling functions (2 to 3 dims)."""
    return RuntimeError(f"Expected 2 to 3 dimensions, but got {n}-dimensional tensor for argument #1 'self' (while "
                        f"checking arguments for {op})")


def _pool_geometry(op, size, kernel_size, stride, padding, dilation, ceil_mode, d, avg, channels=None,
                   invalid_1d=False):
    """(kernel, stride, pad, dilation, out_size, pads with the ceil-mode extra) as PyTorch computes them.
    ``channels`` goes into the too-small message; ``invalid_1d``: max_pool1d's own kernel and message."""
    kernel = _ntuple(kernel_size, d, "kernel_size", op)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _ntuple(stride, d, "stride", op)
    pad = _ntuple(padding, d, "padding", op)
    dil = _ntuple(dilation, d, "dilation", op)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel_size must be greater than zero, but got {list(kernel)}" if not avg else
                           "kernel size should be greater than zero, but got " +
                           " ".join(f"k{'dhw'[3 - d + i]}: {k}" for i, k in enumerate(kernel)))
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero" if any(s == 0 for s in stride) else
                           f"stride should be greater than zero, but got {list(stride)}")
    if any(v <= 0 for v in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dil)}")
    for p, k, dl in zip(pad, kernel, dil):
        if p < 0:
            raise RuntimeError("pad must be non-negative")
        if avg and p > k // 2:
            raise RuntimeError(f"pad should be at most half of kernel size, but got pad={p} and kernel_size={k}")
        if not avg and p > ((k - 1) * dl + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={dl}")
    out = []
    for S, k, s, p, dl in zip(size, kernel, stride, pad, dil):
        num = S + 2 * p - dl * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        L = num // s + 1
        if ceil_mode and (L - 1) * s >= S + p:
            L -= 1
        out.append(L)
    if any(L <= 0 for L in out):
        if invalid_1d:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out[-1]}")
        ch = "?" if channels is None else channels
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (ch,) + tuple(size)))}). Calculated output "
                           f"size: ({'x'.join(map(str, (ch,) + tuple(out)))}). Output size is too small")
    pads = tuple((p, max(p, (L - 1) * s + dl * (k - 1) + 1 - S - p))
                 for S, k, s, p, dl, L in zip(size, kernel, stride, pad, dil, out))
    return kernel, stride, pad, dil, tuple(out), pads


def _parse_pool_args(op, d, kernel_size, stride, padding, dilation=1):
    """Argument types first, as PyTorch's parser (a TypeError before any shape check)."""
    _ntuple(kernel_size, d, "kernel_size", op)
    if stride is not None and not (isinstance(stride, (list, tuple)) and len(stride) == 0):
        _ntuple(stride, d, "stride", op)
    _ntuple(padding, d, "padding", op)
    _ntuple(dilation, d, "dilation", op)


def _max_pool(op, d, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, invalid_1d=False):
    check_tensor(input, op, "input", 1)
    _parse_pool_args(op, d, kernel_size, stride, padding, dilation)
    batched = _pool_input(op, input, d)
    x = input._data if batched else input._data[None]
    kernel, stride, _, dil, out_size, pads = _pool_geometry(op, tuple(x.shape[2:]), kernel_size, stride, padding,
                                                            dilation, ceil_mode, d, False, x.shape[1], invalid_1d)
    if x.dtype == bool:
        raise RuntimeError(f'"max_pool{d}d" not implemented for \'Bool\'')
    idx = _max_pool_indices(x, kernel, stride, pads, dil, out_size)
    if not batched:
        idx = idx[0]
    # non-overlapping windows: no index repeats, the gradient is a plain assignment
    unique = all(s >= dl * (k - 1) + 1 for s, dl, k in zip(stride, dil, kernel))
    out = apply(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": unique},
                _POOL_NODES[f"MaxPool{max(d, 2)}DWithIndicesBackward0"])
    return (out, make(idx)) if return_indices else out


@register(module=False, submodule=_NN)
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-d max pooling over (N, C, H, W) or (C, H, W); ties go to the first maximum in the window."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@register(module=False, submodule=_NN)
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """3-d max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _as_2d(v, fill):
    """A 1-d pooling argument as its 2-d one (PyTorch runs 1-d pooling as 2-d over (1, L))."""
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        return v
    if isinstance(v, (list, tuple)):
        return (fill,) + tuple(v)
    return (fill, v)


@register(module=False, submodule=_NN)
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-d max pooling over (N, C, L) or (C, L) (as PyTorch: 2-d pooling of the input unsqueezed at -2)."""
    check_tensor(input, "max_pool1d", "input", 1)
    if return_indices:   # max_pool1d_with_indices: a 2-d pooling of the input unsqueezed, which checks emptiness
        if input.ndim not in (2, 3):
            raise _dims_error(input.ndim, "max_pool1d")
    elif input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{_size_str(input.shape)}")
    for name, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        if isinstance(v, (list, tuple)) and len(v) > 1:
            raise RuntimeError(f"max_pool1d() {name} must be an int or int list of size 1 but got size {len(v)}")
    if input._data.dtype.kind != "f" and not return_indices:
        raise NotImplementedError(f'"max_pool1d_impl" not implemented for \'{_TYPE_NAMES[str(input._data.dtype)]}\'')
    res = _max_pool("max_pool1d", 2, input.unsqueeze(-2), _as_2d(kernel_size, 1), _as_2d(stride, 1),
                    _as_2d(padding, 0), _as_2d(dilation, 1), ceil_mode, True, invalid_1d=not return_indices)
    out, ind = res[0].squeeze(-2), res[1].squeeze(-2)
    return (out, ind) if return_indices else out


def _pool_matrix(S, L, k, s, p, count_include_pad, dtype, divide=True):
    """The (L, S) averaging matrix of one spatial dim: ones over each window's part inside the input, divided
    by PyTorch's per-dim count (not divided: a summing matrix)."""
    start = np.arange(L) * s - p
    end = np.minimum(start + k, S + p)
    count = end - start
    lo, hi = np.maximum(start, 0), np.minimum(end, S)
    if not count_include_pad:
        count = hi - lo
    pos = np.arange(S)
    inside = (pos >= lo[:, None]) & (pos < hi[:, None])
    if divide is None:
        return np.maximum(count, 1)
    if not divide:
        return inside.astype(dtype)
    return inside / np.maximum(count, 1)[:, None].astype(dtype)


def _avg_pool(op, d, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
              node):
    check_tensor(input, op, "input", 1)
    _parse_pool_args(op, d, kernel_size, stride, padding)
    if d == 2 and 0 < input.ndim < d + 1:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {-(d + 1)})")
    batched = _pool_input(op, input, d)
    x = input if batched else input._data[None]
    kernel, stride, pad, _, out_size, _ = _pool_geometry(op, tuple(x.shape[2:]), kernel_size, stride, padding, 1,
                                                         ceil_mode, d, True, x.shape[1])
    size = tuple(x.shape[2:])
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x = input._data
    dt = x.dtype if x.dtype.kind == "f" else np.float64
    mats = [_pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=divisor_override is None)
            for S, L, k, s, p in zip(size, out_size, kernel, stride, pad)]
    if divisor_override is not None:   # sums over the windows, divided by the override
        mats[0] = mats[0] / divisor_override
    mats = tuple(m.astype(dt) for m in mats)
    if x.dtype.kind != "f":
        if x.dtype == bool:
            raise RuntimeError(f'"avg_pool{d}d" not implemented for \'Bool\'')
        # exact integer sums over exact counts, truncated as PyTorch's integer division
        sums = [_pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=False)
                for S, L, k, s, p in zip(size, out_size, kernel, stride, pad)]
        div = divisor_override
        if div is None:
            div = 1
            for i, (S, L, k, s, p) in enumerate(zip(size, out_size, kernel, stride, pad)):
                shp = [1] * d
                shp[i] = L
                div = div * _pool_matrix(S, L, k, s, p, count_include_pad, dt, divide=None).reshape(shp)
        raw = np.trunc(_dim_matrices_raw(input._data.astype(np.float64), tuple(sums)) / div)
        return make(raw.astype(x.dtype))
    return apply(avg_pool_p, (input,), {"mats": mats}, _POOL_NODES[node])


@register(module=False, submodule=_NN)
def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-d average pooling over (N, C, H, W) or (C, H, W)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "AvgPool2DBackward0")


@register(module=False, submodule=_NN)
def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-d average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "AvgPool3DBackward0")


@register(submodule=_NN)
def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling over (N, C, L) or (C, L) (as PyTorch: 2-d pooling over (1, L))."""
    check_tensor(input, "avg_pool1d", "input", 1)
    if input.ndim not in (2, 3):
        raise _dims_error(input.ndim, "avg_pool1d")
    out = _avg_pool("avg_pool1d", 2, input.unsqueeze(-2), _as_2d(kernel_size, 1), _as_2d(stride, 1),
                    _as_2d(padding, 0), ceil_mode, count_include_pad, None, "AvgPool2DBackward0")
    return out.squeeze(-2)


def _adaptive_size(op, output_size, size, d):
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        out = (output_size,) * d
    else:
        try:
            out = tuple(output_size)
        except TypeError:
            raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not "
                            f"{type(output_size).__name__}") from None
        if isinstance(output_size, str) or not all(o is None or (isinstance(o, int) and not isinstance(o, bool))
                                                   for o in out):
            raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not "
                            f"{type(output_size).__name__}")
        if len(out) == 1:
            out = out * d
    if len(out) != d:
        raise RuntimeError(f"{op}: output_size must be {d}")
    return tuple(S if o is None else o for o, S in zip(out, size))


def _adaptive_input(op, input, d, output_size):
    check_tensor(input, op, "input", 1)
    _adaptive_size(op, output_size, (1,) * d, d)   # argument types first, as PyTorch
    if input.ndim < d + 1 and not (isinstance(output_size, int) and not isinstance(output_size, bool)):
        raise ValueError(f"Input dimension should be at least {d + 1}")
    n, shape = input.ndim, tuple(input.shape)

    def check_nonempty(dims):
        for i in dims:
            if shape[i] == 0:
                raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                                   f"input has sizes {_size_str(shape)} with dimension {i} being empty")

    if op == "adaptive_avg_pool3d":   # checks the sizes before the rank
        check_nonempty(range(1, n))
    if n not in (d + 1, d + 2):
        raise RuntimeError(f"{op}(): Expected {d + 1}D or {d + 2}D tensor, but got{':' if 'max' in op else ''} "
                           f"{_size_str(shape)}")
    # adaptive_avg_pool2d checks the spatial dims only (an unbatched input may have no channels)
    check_nonempty(range(n - 2, n) if op == "adaptive_avg_pool2d" else range(1, n))
    return n == d + 2


def _adaptive_avg(op, d, input, output_size):
    batched = _adaptive_input(op, input, d, output_size)
    x = input if batched else input._data[None]
    out_size = _adaptive_size(op, output_size, x.shape[2:], d)
    dt = input._data.dtype if input._data.dtype.kind == "f" else np.float64
    mats = []
    for S, L in zip(x.shape[2:], out_size):
        start, end = _adaptive_bounds(S, L)
        pos = np.arange(S)
        inside = (pos >= start[:, None]) & (pos < end[:, None])
        mats.append((inside / (end - start)[:, None]).astype(dt))
    if input._data.dtype.kind != "f":
        kernel = "adaptive_avg_pool2d" if d == 2 else "adaptive_avg_pool3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TYPE_NAMES[str(input._data.dtype)]}\'')
    if all(L == 1 for L in out_size):   # PyTorch computes this case as a mean (MeanBackward1)
        return input.mean(tuple(range(-d, 0)), keepdim=True)
    return apply(avg_pool_p, (input,), {"mats": tuple(mats)},
                 _POOL_NODES[f"AdaptiveAvgPool{max(d, 2)}DBackward0"])


@register(module=False, submodule=_NN)
def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """2-d adaptive average pooling to ``output_size`` (an int, a pair, None keeps a size)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@register(module=False, submodule=_NN)
def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """3-d adaptive average pooling."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


@register(submodule=_NN)
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-d adaptive average pooling (as PyTorch: 2-d over (1, L))."""
    check_tensor(input, "adaptive_avg_pool1d", "input", 1)
    if input.ndim not in (2, 3):
        raise _dims_error(input.ndim, "adaptive_avg_pool1d")
    size = output_size if isinstance(output_size, int) else _single(output_size, "adaptive_avg_pool1d")
    _adaptive_size("adaptive_avg_pool1d", size, (1,), 1)
    return _adaptive_avg("adaptive_avg_pool2d", 2, input.unsqueeze(-2), (1, size)).squeeze(-2)


def _single(v, op):
    if v is None or isinstance(v, str):
        raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not {type(v).__name__}")
    v = tuple(v)
    if len(v) != 1:
        raise RuntimeError(f"{op}: output_size must be 1")
    return v[0]


def _adaptive_max(op, d, input, output_size, return_indices):
    batched = _adaptive_input(op, input, d, output_size)
    x = input._data if batched else input._data[None]
    out_size = _adaptive_size(op, output_size, x.shape[2:], d)
    if x.dtype.kind != "f":
        kernel = "adaptive_max_pool2d" if d == 2 else "adaptive_max_pool3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TYPE_NAMES[str(x.dtype)]}\'')
    idx = _adaptive_max_indices(x, out_size)
    if not batched:
        idx = idx[0]
    out = apply(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": False},
                _POOL_NODES[f"AdaptiveMaxPool{max(d, 2)}DBackward0"])
    return (out, make(idx)) if return_indices else out


@register(module=False, submodule=_NN)
def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """2-d adaptive max pooling (ties: the first maximum)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


@register(module=False, submodule=_NN)
def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """3-d adaptive max pooling."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


@register(module=False, submodule=_NN)
def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """1-d adaptive max pooling (as PyTorch: 2-d over (1, L))."""
    check_tensor(input, "adaptive_max_pool1d", "input", 1)
    if input.ndim not in (2, 3):
        raise _dims_error(input.ndim, "adaptive_max_pool1d")
    for i in range(1, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {_size_str(input.shape)} with dimension {i} being "
                               "empty")
    size = output_size if isinstance(output_size, int) else _single(output_size, "adaptive_max_pool1d")
    _adaptive_size("adaptive_max_pool1d", size, (1,), 1)
    out, ind = _adaptive_max("adaptive_max_pool2d", 2, input.unsqueeze(-2), (1, size), True)
    out, ind = out.squeeze(-2), ind.squeeze(-2)
    return (out, ind) if return_indices else out


# ----- padding ---------------------------------------------------------------------------------------------

constant_pad_p = defprim(
    "constant_pad_nd", "ConstantPadNdBackward0",
    lambda xp, x, pads, value: xp.constant_pad(x, pads, value),
    vjp=lambda xp, g, out, x, pads, value: xp.constant_pad_backward(g, pads, tuple(x.shape)),
    jvp=lambda xp, t, out, x, pads, value: xp.constant_pad(t, pads, 0))
constant_pad_backward_p = defprim(
    "constant_pad_backward", "ConstantPadNdBackwardBackward0",
    lambda xp, g, pads, shape: xp.constant_pad_backward(g, pads, shape),
    vjp=lambda xp, g, out, gy, pads, shape: xp.constant_pad(g, pads, 0),
    jvp="linear")
graph("constant_pad", lambda x, pads, value: apply(constant_pad_p, (x,), {"pads": tuple(pads), "value": value}))
graph("constant_pad_backward", lambda g, pads, shape: apply(constant_pad_backward_p, (g,), {
    "pads": tuple(pads), "shape": tuple(shape)}))

pad_gather_p = defprim(
    "pad_gather", "ReflectionPad2DBackward0",
    lambda xp, x, idx: xp.pad_gather(x, idx),
    vjp=lambda xp, g, out, x, idx: xp.pad_gather_backward(g, idx, tuple(x.shape)),
    jvp="linear")
# reflection and replication padding: the same forward, the gradient connected to the input (see max_pool_p);
# circular padding is a composition of slices in PyTorch and keeps pad_gather_p
pad_p = defprim(
    "pad", "ReflectionPad2DBackward0",
    lambda xp, x, idx: xp.pad_gather(x, idx),
    vjp=lambda xp, g, out, x, idx: xp.pad_backward(g, x, idx),
    jvp="linear", saves=(0,))
pad_backward_p = defprim(
    "pad_backward", "ReflectionPad2DBackwardBackward0",
    lambda xp, g, x, idx: xp.pad_gather_backward(g, idx, tuple(x.shape)),
    vjp=(lambda xp, gg, out, g, x, idx: xp.pad_gather(gg, idx),
         lambda xp, gg, out, g, x, idx: xp.zeros_like(gg)),
    jvp=(lambda xp, t, out, g, x, idx: xp.pad_gather_backward(t, idx, tuple(x.shape)),
         lambda xp, t, out, g, x, idx: None))
graph("pad_backward", lambda g, x, idx: apply(pad_backward_p, (g, x), {"idx": tuple(idx)}))
pad_gather_backward_p = defprim(
    "pad_gather_backward", "ReflectionPad2DBackwardBackward0",
    lambda xp, g, idx, shape: xp.pad_gather_backward(g, idx, shape),
    vjp=lambda xp, g, out, gy, idx, shape: xp.pad_gather(g, idx),
    jvp="linear")
graph("pad_gather", lambda x, idx: apply(pad_gather_p, (x,), {"idx": tuple(idx)}))
graph("pad_gather_backward", lambda g, idx, shape: apply(pad_gather_backward_p, (g,), {
    "idx": tuple(idx), "shape": tuple(shape)}))

_PAD_NODES = {f"{kind}{k}DBackward0": _node(f"{kind}{k}DBackward0")
              for kind in ("ReflectionPad", "ReplicationPad") for k in (1, 2, 3)}
_PAD_NODES["circular"] = _node("CircularPadBackward0")


def _pad_index(mode: str, S: int, lo: int, hi: int):
    p = np.arange(-lo, S + hi)
    if mode == "reflect":
        p = np.abs(p)
        p = np.where(p > S - 1, 2 * (S - 1) - p, p)
    elif mode == "replicate":
        p = np.clip(p, 0, S - 1)
    else:   # circular: PyTorch crops (negative pads) first, then wraps within what is left
        a, b = max(-lo, 0), S - max(-hi, 0)
        p = np.arange(-max(lo, 0), b - a + max(hi, 0)) % max(b - a, 1) + a
    return p.astype(np.int64)


@register(module=False, submodule=_NN)
def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)/2 dims of ``input``: ``pad`` = (left of the last dim, right of the last dim,
    left of the one before, ...); negative values crop. Modes: constant (``value``, default 0), reflect,
    replicate, circular."""
    check_tensor(input, "pad", "input", 1)
    try:
        pads_flat = tuple(pad)
    except TypeError:
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}") \
            from None
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in pads_flat):
        raise TypeError("pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                        f"{type(next(p for p in pads_flat if not isinstance(p, int) or isinstance(p, bool))).__name__}")
    if not isinstance(mode, str):
        raise TypeError(f"pad(): argument 'mode' (position 3) must be str, not {type(mode).__name__}")
    if len(pads_flat) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pads_flat) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pads_flat)} and input of dimension {input.ndim}")
    # (lo, hi) per padded dim, in the tensor's order (torch lists the last dim first)
    pads = tuple((pads_flat[2 * j], pads_flat[2 * j + 1]) for j in range(k))[::-1]
    shape = tuple(input.shape)
    if mode == "constant":
        if value is not None and not isinstance(value, (int, float, bool)):
            raise TypeError(f"pad(): argument 'value' (position 4) must be float, not {type(value).__name__}")
        for i, (s, (lo, hi)) in enumerate(zip(shape[input.ndim - k:], pads)):
            if s + lo + hi < 0:
                raise RuntimeError(f"The input size {s}, plus negative padding {lo} and {hi} resulted in a negative "
                                   f"output size, which is invalid. Check dimension {input.ndim - k + i} of your "
                                   "input.")
        v = 0 if value is None else value
        if input._data.dtype.kind in "iub" and isinstance(v, float) and v != int(v):
            v = int(v)
        return apply(constant_pad_p, (input,), {"pads": pads, "value": v})
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if not (1 <= k <= 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pads_flat)} is not supported for {input.ndim}D input tensor.")
    if mode != "circular" and (any(s == 0 for s in shape[1:]) or (input.ndim == k + 1 and any(s == 0 for s in shape))):
        # (circular padding is a composition in PyTorch: empty dims pass, its wrap-around check refuses empty sizes)
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {_size_str(shape)}")
    spatial = shape[input.ndim - k:]
    for i, (s, (lo, hi)) in enumerate(zip(spatial, pads)):
        if mode == "reflect" and (lo >= s or hi >= s):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {input.ndim - k + i} of input "
                               f"{_size_str(shape)}")
        if mode == "circular" and (lo > s or hi > s):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if s + lo + hi <= 0:
            raise RuntimeError(f"input (H: {s}) is too small. Calculated output H: {s + lo + hi}")
    idx = tuple(_pad_index(mode, s, lo, hi) for s, (lo, hi) in zip(spatial, pads))
    node = _PAD_NODES["circular" if mode == "circular" else
                      f"{'ReflectionPad' if mode == 'reflect' else 'ReplicationPad'}{k}DBackward0"]
    if input._data.dtype.kind != "f" and mode != "circular":
        from ..devices.cpu.nn_conv import pad_gather as _raw_gather
        if input._data.dtype == bool:
            raise RuntimeError(f'"{mode}_pad{k}d" not implemented for \'Bool\'')
        return make(_raw_gather(input._data, idx))
    return apply(pad_gather_p if mode == "circular" else pad_p, (input,), {"idx": idx}, node)


# ----- unfold / fold, pixel and channel shuffles ---------------------------------------------------------

im2col_p = defprim(
    "im2col", "Im2ColBackward0",
    lambda xp, x, kernel, dilation, pads, stride: xp.im2col(x, kernel, dilation, pads, stride),
    vjp=lambda xp, g, out, x, kernel, dilation, pads, stride:
    xp.col2im(g, tuple(x.shape[-len(kernel):]), kernel, dilation, pads, stride),
    jvp="linear")
col2im_p = defprim(
    "col2im", "Col2ImBackward0",
    lambda xp, x, size, kernel, dilation, pads, stride: xp.col2im(x, size, kernel, dilation, pads, stride),
    vjp=lambda xp, g, out, x, size, kernel, dilation, pads, stride: xp.im2col(g, kernel, dilation, pads, stride),
    jvp="linear")
graph("im2col", lambda x, kernel, dilation, pads, stride: apply(
    im2col_p, (x,), {"kernel": kernel, "dilation": dilation, "pads": pads, "stride": stride}))
graph("col2im", lambda x, size, kernel, dilation, pads, stride: apply(
    col2im_p, (x,), {"size": tuple(size), "kernel": kernel, "dilation": dilation, "pads": pads, "stride": stride}))


def _fold_args(op, kernel_size, dilation, padding, stride):
    kernel = _ntuple(kernel_size, 2, "kernel_size", op)
    dil = _ntuple(dilation, 2, "dilation", op)
    pad = _ntuple(padding, 2, "padding", op)
    st = _ntuple(stride, 2, "stride", op)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if any(s <= 0 for s in st):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {st[0]} stride_width: {st[1]}")
    if any(v <= 0 for v in dil):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dil[0]} "
                           f"dilation_width: {dil[1]}")
    if any(p < 0 for p in pad):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pad[0]} pad_width: {pad[1]}")
    return kernel, dil, tuple((p, p) for p in pad), st


def _float_only(input: Tensor, kernel: str) -> None:
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TYPE_NAMES[str(input._data.dtype)]}\'')


def _blocks(size, kernel, dil, pads, st):
    return [(s + 2 * p - dl * (k - 1) - 1) // sd + 1 for s, k, dl, (p, _), sd in zip(size, kernel, dil, pads, st)]


@register(module=False, submodule=_NN)
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: the sliding (kernel_size) blocks of (N, C, H, W) (or (C, H, W)) as columns (N, C*kh*kw, L)."""
    check_tensor(input, "unfold", "input", 1)
    kernel, dil, pads, st = _fold_args("unfold", kernel_size, dilation, padding, stride)
    # PyTorch's shape check reads input.size(1), then input.size(2), before it checks the rank
    if input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    if input.ndim == 1 or (input.ndim == 2 and input.shape[1] != 0):
        bad = input.ndim
        raise IndexError(f"Dimension out of range (expected to be in range of [{-bad}, {bad - 1}], but got {bad})")
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {_size_str(input.shape)}")
    blocks = _blocks(input.shape[-2:], kernel, dil, pads, st)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({input.shape[-2]}, {input.shape[-1]}), kernel_size="
                           f"({kernel[0]}, {kernel[1]}), dilation=({dil[0]}, {dil[1]}), padding=({pads[0][0]}, "
                           f"{pads[1][0]}), calculated shape of the array of sliding blocks as ({blocks[0]}, "
                           f"{blocks[1]}), but its components must be at least one.")
    _float_only(input, "im2col_out_cpu")
    return apply(im2col_p, (input,), {"kernel": kernel, "dilation": dil, "pads": pads, "stride": st})


@register(module=False, submodule=_NN)
def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: columns (N, C*kh*kw, L) summed back into (N, C, *output_size) (overlaps add up)."""
    check_tensor(input, "fold", "input", 1)
    size = _ntuple(output_size, 2, "output_size", "fold")
    kernel, dil, pads, st = _fold_args("fold", kernel_size, dilation, padding, stride)
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {_size_str(input.shape)}")
    CK = input.shape[-2]
    if CK % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={CK} and kernel_size=({kernel[0]}, {kernel[1]})")
    blocks = _blocks(size, kernel, dil, pads, st)
    if blocks[0] * blocks[1] != input.shape[-1] or any(b < 1 for b in blocks):
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
                           f"dilation=({dil[0]}, {dil[1]}), padding=({pads[0][0]}, {pads[1][0]}), stride=({st[0]}, "
                           f"{st[1]}), expected size of input's dimension {input.ndim - 1} to match the calculated "
                           f"number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size({input.ndim - 1})={input.shape[-1]}.")
    _float_only(input, "col2im_out_cpu")
    return apply(col2im_p, (input,), {"size": size, "kernel": kernel, "dilation": dil, "pads": pads, "stride": st})


pixel_shuffle_p = defprim(
    "pixel_shuffle", "PixelShuffleBackward0",
    lambda xp, x, upscale_factor: xp.pixel_shuffle(x, upscale_factor),
    vjp=lambda xp, g, out, x, upscale_factor: xp.pixel_unshuffle(g, upscale_factor), jvp="linear")
pixel_unshuffle_p = defprim(
    "pixel_unshuffle", "PixelUnshuffleBackward0",
    lambda xp, x, downscale_factor: xp.pixel_unshuffle(x, downscale_factor),
    vjp=lambda xp, g, out, x, downscale_factor: xp.pixel_shuffle(g, downscale_factor), jvp="linear")
channel_shuffle_p = defprim(
    "channel_shuffle", "ChannelShuffleBackward0",
    lambda xp, x, groups: xp.channel_shuffle(x, groups),
    vjp=lambda xp, g, out, x, groups: xp.channel_shuffle(g, x.shape[1] // groups), jvp="linear")
graph("pixel_shuffle", lambda x, r: apply(pixel_shuffle_p, (x,), {"upscale_factor": r}))
graph("pixel_unshuffle", lambda x, r: apply(pixel_unshuffle_p, (x,), {"downscale_factor": r}))
graph("channel_shuffle", lambda x, groups: apply(channel_shuffle_p, (x,), {"groups": groups}))


def _factor(v, op, what):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{op}(): argument '{what}' (position 2) must be int, not {type(v).__name__}")
    if v <= 0:
        raise RuntimeError(f"{op} expects a positive {what}, but got {v}")
    return v


@register(submodule=_NN)
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r): channels rearranged into space."""
    check_tensor(input, "pixel_shuffle", "input", 1)
    r = _factor(upscale_factor, "pixel_shuffle", "upscale_factor")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={input.shape[-3]} is not divisible by {r * r}")
    return apply(pixel_shuffle_p, (input,), {"upscale_factor": r})


@register(submodule=_NN)
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W): the inverse of pixel_shuffle."""
    check_tensor(input, "pixel_unshuffle", "input", 1)
    r = _factor(downscale_factor, "pixel_unshuffle", "downscale_factor")
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    for name, s in (("height", input.shape[-2]), ("width", input.shape[-1])):
        if s % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but input.size("
                               f"{-2 if name == 'height' else -1})={s} is not divisible by {r}")
    return apply(pixel_unshuffle_p, (input,), {"downscale_factor": r})


@register(submodule=_NN)
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with its channels split into ``groups`` groups and interleaved (ShuffleNet)."""
    check_tensor(input, "channel_shuffle", "input", 1)
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not {type(groups).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.shape[1] % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {input.shape[1]} channels and "
                           f"{groups} groups.")
    return apply(channel_shuffle_p, (input,), {"groups": groups})


# ----- interpolate ---------------------------------------------------------------------------------------------
# Every mode but 'area' is separable: one (out, in) matrix per spatial dim, applied with the dim_matrices
# primitive (its VJP applies the transposed matrices), recorded under PyTorch's node name. The matrices
# follow ATen's index formulas (UpSample.h), in the input's precision (float32 opmath for float32).

_UPSAMPLE_NODES = {}


def _upsample_node(name: str) -> type:
    if name not in _UPSAMPLE_NODES:
        _UPSAMPLE_NODES[name] = _node(name)
    return _UPSAMPLE_NODES[name]


def _scale_value(scale, S, L, dt):
    return dt(1.0 / scale) if scale is not None and scale > 0 else dt(S) / dt(L)


def _linear_scale(scale, S, L, align_corners, dt):
    if align_corners:
        return dt(S - 1) / dt(L - 1) if L > 1 else dt(0)
    return _scale_value(scale, S, L, dt)


def _source_index(scale, L, align_corners, cubic, dt):
    dst = np.arange(L, dtype=dt)
    if align_corners:
        return scale * dst
    src = scale * (dst + dt(0.5)) - dt(0.5)
    return src if cubic else np.maximum(src, dt(0))


def _interp_matrix(mode, S, L, scale, align_corners, dt, exact_sizes=False, generic=False):
    """The (L, S) matrix of one spatial dim. Nearest modes have two index formulas in PyTorch: ``generic`` (its
    generic kernel: the source index in the input's precision, then floorf) and the nearest_idx one (its 2-d
    small-output kernel and every backward: float32 arithmetic; ``exact_sizes``: a same-size dim copies and a
    double-size one halves its index whatever the scale, mode 'nearest' only)."""
    m = np.zeros((L, S), dtype=dt)
    rows = np.arange(L)
    if mode in ("nearest", "nearest-exact"):
        if exact_sizes and L == S:
            src = rows
        elif exact_sizes and L == 2 * S:
            src = rows >> 1
        elif generic:
            sc = _scale_value(scale, S, L, dt)
            r = rows.astype(dt)
            real = r * sc if mode == "nearest" else np.maximum(sc * (r + dt(0.5)) - dt(0.5), dt(0)) + dt(0.5)
            src = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), S - 1)   # floorf
        else:
            sc = np.float32(_scale_value(scale, S, L, np.float32))
            off = np.float32(0.5) if mode == "nearest-exact" else np.float32(0)
            src = np.minimum(np.floor((rows.astype(np.float32) + off) * sc).astype(np.int64), S - 1)
        m[rows, src] = 1
        return m
    if mode == "linear":
        if L == S:   # PyTorch copies a dim whose size is unchanged, whatever scale_factor was given
            m[rows, rows] = 1
            return m
        sc = _linear_scale(scale, S, L, align_corners, dt)
        src = _source_index(sc, L, align_corners, False, dt)
        i0 = src.astype(np.int64)
        i1 = i0 + (i0 < S - 1)
        lam1 = src - i0.astype(dt)
        np.add.at(m, (rows, i0), dt(1) - lam1)
        np.add.at(m, (rows, i1), lam1)
        return m
    # bicubic, A = -0.75, taps at floor(x)-1 .. floor(x)+2 clamped to the border
    sc = _linear_scale(scale, S, L, align_corners, dt)
    src = _source_index(sc, L, align_corners, True, dt)
    i = np.floor(src)
    t = src - i
    A = dt(-0.75)

    def cc1(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def cc2(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    coeffs = (cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t))
    for k, c in enumerate(coeffs):
        idx = np.clip(i.astype(np.int64) - 1 + k, 0, S - 1)
        np.add.at(m, (rows, idx), c.astype(dt))
    return m


# Resampling whose backward is not its forward's transpose: mode='nearest' (PyTorch's backward maps output to input
# indices its own way: the 2-d kernel's same-size and double-size shortcuts, in every dim count) and antialiasing
# (the forward copies a dim of unchanged size, the backward applies its weights for the scale given). Two
# primitives, each the other's VJP, as PyTorch's upsample_* / upsample_*_backward: ``mats`` (one (L, S) matrix per
# spatial dim) forward, the transposes of ``bmats`` backward. ``node``: the forward node's name (the double
# backward's is derived from it); output_size and scales are what the node shows (grad_fn._saved_output_size,
# _saved_scales_h, ...), as PyTorch's.
resample_p = defprim(
    "resample", "UpsampleNearest2DBackward0",
    lambda xp, x, mats, bmats, output_size, scales, node: xp.resample(x, mats, bmats, node),
    vjp=lambda xp, g, out, x, mats, bmats, output_size, scales, node: xp.resample_backward(g, mats, bmats, node),
    jvp="linear")
resample_backward_p = defprim(
    "resample_backward", "UpsampleNearest2DBackwardBackward0",
    lambda xp, g, mats, bmats, node: xp.resample_backward(g, mats, bmats, node),
    vjp=lambda xp, gg, out, g, mats, bmats, node: xp.resample(gg, mats, bmats, node),
    jvp="linear")
graph("resample", lambda x, mats, bmats, node, output_size=None, scales=None: apply(
    resample_p, (x,), {"mats": tuple(mats), "bmats": tuple(bmats), "output_size": output_size, "scales": scales,
                       "node": node}, _upsample_node(node)))
graph("resample_backward", lambda g, mats, bmats, node: apply(
    resample_backward_p, (g,), {"mats": tuple(mats), "bmats": tuple(bmats), "node": node},
    _upsample_node(node.replace("Backward0", "BackwardBackward0"))))


def _resample(input, mats, bmats, out_size, scales, node):
    return apply(resample_p, (input,), {"mats": mats, "bmats": bmats, "output_size": tuple(out_size),
                                        "scales": None if scales is None else tuple(scales), "node": node},
                 _upsample_node(node))


def _scale_attr(i):
    def get(node):
        sc = node._params["scales"]
        return None if sc is None or sc[i] is None else float(sc[i])
    return property(get)


_upsample_node("UpsampleNearest1DBackward0")._saved_scales = _scale_attr(0)
_upsample_node("UpsampleNearestExact1DBackward0")._saved_scales = _scale_attr(0)
for _name, _d in (("UpsampleNearest2DBackward0", 2), ("UpsampleNearest3DBackward0", 3),
                  ("UpsampleNearestExact2DBackward0", 2), ("UpsampleNearestExact3DBackward0", 3),
                  ("UpsampleBilinear2DAaBackward0", 2), ("UpsampleBicubic2DAaBackward0", 2),
                  ("UpsampleLanczos2DAaBackward0", 2)):
    for _i, _c in enumerate("dhw"[3 - _d:]):
        setattr(_upsample_node(_name), f"_saved_scales_{_c}", _scale_attr(_i))

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


@register(module=False, submodule=_NN)
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *S) by ``size`` or ``scale_factor``: nearest, nearest-exact, linear,
    bilinear, bicubic, trilinear (ATen's index formulas) or area (adaptive average pooling)."""
    check_tensor(input, "interpolate", "input", 1)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            if not all(isinstance(s, int) and not isinstance(s, bool) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                                f"int], but got size with types {[type(s) for s in size]}")
            out_size = list(size)
        else:
            out_size = [size] * dim
    elif scale_factor is not None:
        out_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 "format and scale_factor in (s1, s2, ...,sK) format.")
            scales = list(scale_factor)
        else:
            scales = [scale_factor] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out_size is None:
        recompute_scale_factor = True
    if out_size is None:
        out_size = [int(math.floor(float(s) * float(f))) for s, f in zip(input.shape[2:], scales)]
        if recompute_scale_factor:
            scales = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    want = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2, "bicubic": 2,
            "trilinear": 3, "lanczos": 2}
    modes = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
    if mode not in want:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: {modes} (got {mode})")
    if not 1 <= dim <= 3 or (want[mode] is not None and want[mode] != dim):
        if want[mode] is not None and 1 <= dim <= 3 and mode != "lanczos":
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want[mode] + 2}D input")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: {modes} (got {mode})")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode == "area":
        fn = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[dim]
        return fn(input, out_size if dim > 1 else out_size[0])
    if any(s <= 0 for s in out_size) or any(s <= 0 for s in input.shape[2:]):
        def sizes(v):
            return ", ".join(f"{n}: {x}" for n, x in zip("DHW"[3 - dim:], v))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({sizes(input.shape[2:])})"
                           f"{' and' if dim == 1 else ''} output ({sizes(out_size)})")
    if input.shape[1] == 0:   # an empty batch is computed, no channels is refused
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
                           f"{_size_str(input.shape)}")
    if antialias:
        return _interpolate_aa(input, mode, out_size, scales, align_corners)
    if input._data.dtype == np.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        return make(_interpolate_uint8(input._data, mode, out_size, scales, align_corners, dim))
    if input._data.dtype.kind != "f":
        name = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}.get(mode, f"upsample_{mode}")
        raise NotImplementedError(f'"{name}{dim}d_out_frame" not implemented for '
                                  f'\'{_TYPE_NAMES[str(input._data.dtype)]}\'')
    dt = input._data.dtype.type
    kind = "linear" if mode in ("linear", "bilinear", "trilinear") else mode
    # PyTorch 2.13's CPU kernels: nearest uses the scale_factor given; the 2-d kernel for small outputs (out height +
    # width <= 128, its channels-last kernel) computes indices in float32 and, mode 'nearest', copies a dim of the
    # same size and doubles one of twice the size whatever the scale; 1-d, 3-d and larger 2-d outputs go through
    # the generic kernel (indices in the input's precision). The backward always takes the small kernel's way.
    small = dim == 2 and sum(out_size) <= 128
    mats = tuple(_interp_matrix(kind, S, L, None if scales is None else scales[i], align_corners, dt,
                                mode == "nearest" and small, not small)
                 for i, (S, L) in enumerate(zip(input.shape[2:], out_size)))
    node = {"nearest": f"UpsampleNearest{dim}DBackward0", "nearest-exact": f"UpsampleNearestExact{dim}DBackward0",
            "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
            "bicubic": "UpsampleBicubic2DBackward0", "trilinear": "UpsampleTrilinear3DBackward0"}[mode]
    if mode in ("nearest", "nearest-exact"):
        bmats = tuple(_interp_matrix(kind, S, L, None if scales is None else scales[i], align_corners, dt,
                                     mode == "nearest")
                      for i, (S, L) in enumerate(zip(input.shape[2:], out_size)))
        return _resample(input, mats, bmats, out_size, scales, node)
    return apply(dim_matrices_p, (input,), {"mats": mats}, _upsample_node(node))


def _aa_filter(x, mode):
    """The antialiasing filters (Pillow's): triangle, Keys cubic with a = -0.5, Lanczos-3."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1.0 - x, 0.0)
    if mode == "bicubic":
        a = -0.5
        return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                        np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))
    px = np.pi * np.where(x == 0, 1.0, x)
    sinc = np.where(x == 0, 1.0, np.sin(px) / px)
    sinc3 = np.where(x == 0, 1.0, np.sin(px / 3) / (px / 3))
    return np.where(x < 3, sinc * sinc3, 0.0)


def _aa_matrix(mode, S, L, scale, align_corners, dt):
    """The (L, S) weights of antialiased resizing along one dim, ATen's: each output averages the inputs under
    the filter stretched by the downsampling factor (support n/2 * scale), centred at scale * (i + 0.5), the
    weights normalised to sum 1. A dim of unchanged size is copied."""
    n = {"bilinear": 2, "bicubic": 4, "lanczos": 6}[mode]
    if align_corners:
        sc = (S - 1) / (L - 1) if L > 1 else 0.0
    else:
        sc = 1.0 / scale if scale is not None and scale > 0 else S / L
    support = n * 0.5 * sc if sc >= 1.0 else n * 0.5
    width = int(math.ceil(support)) * 2 + 1
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    center = sc * (np.arange(L) + 0.5)
    xmin = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)   # C++ casts truncate
    xsize = np.clip(np.minimum(np.trunc(center + support + 0.5).astype(np.int64), S) - xmin, 0, width)
    j = np.arange(width)
    inside = j[None, :] < xsize[:, None]
    w = np.where(inside, _aa_filter((j[None, :] + xmin[:, None] - center[:, None] + 0.5) * inv, mode), 0.0)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1.0), w)
    m = np.zeros((L, S))
    rows, taps = np.nonzero(inside)
    m[rows, xmin[rows] + taps] = w[rows, taps]
    return m.astype(dt)


def _interpolate_aa(input, mode, out_size, scales, align_corners):
    """interpolate(antialias=True) for float (N, C, H, W): separable, one weight matrix per dim (linear, so the
    gradient is the transposed matrices), under PyTorch's Aa node names."""
    if input._data.dtype == np.uint8:
        from ..devices.cpu.nn_resample import _uint8_resize_weights
        if tuple(input.shape[2:]) == tuple(out_size):
            return make(input._data.copy())
        return make(_uint8_resize_weights(input._data, tuple(
            _aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), np.float64)
            for i, (S, L) in enumerate(zip(input.shape[2:], out_size)))))
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"ember: interpolate(antialias=True) on {_TYPE_NAMES[str(input._data.dtype)]} "
                                  "tensors is not implemented (float and uint8 only)")
    dt = input._data.dtype.type
    bmats = tuple(_aa_matrix(mode, S, L, None if scales is None else scales[i], bool(align_corners), dt)
                  for i, (S, L) in enumerate(zip(input.shape[2:], out_size)))
    # the forward copies a dim whose size is unchanged; the backward applies the weights all the same
    mats = tuple(np.eye(L, dtype=dt) if S == L else b for S, L, b in zip(input.shape[2:], out_size, bmats))
    node = {"bilinear": "UpsampleBilinear2DAaBackward0", "bicubic": "UpsampleBicubic2DAaBackward0",
            "lanczos": "UpsampleLanczos2DAaBackward0"}[mode]
    return _resample(input, mats, bmats, out_size, scales, node)


def _interpolate_uint8(x, mode, out_size, scales, align_corners, dim):
    """uint8 images (no gradient): nearest picks as the float kernels do (indices in float32); bilinear and bicubic
    are PyTorch's fixed-point separable passes (nn_resample._uint8_resize)."""
    from ..devices.cpu.nn_resample import _uint8_resize
    if mode in ("bilinear", "bicubic"):
        return _uint8_resize(x, tuple(out_size), scales, bool(align_corners), mode == "bicubic")
    small = dim == 2 and sum(out_size) <= 128   # as interpolate's; uint8 indices are computed in float32
    mats = tuple(_interp_matrix(mode, S, L, None if scales is None else scales[i], None, np.float32,
                                mode == "nearest" and small, not small)
                 for i, (S, L) in enumerate(zip(x.shape[2:], out_size)))
    return _dim_matrices_raw(x.astype(np.float64), mats).round().astype(np.uint8)


@register(module=False, submodule=_NN)
def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


@register(module=False, submodule=_NN)
def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


@register(module=False, submodule=_NN)
def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----- lp pooling, max unpooling -------------------------------------------------------------------------------

@register(module=False, submodule=_NN)
def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: (sum over the window of x^p)^(1/p), as PyTorch composes it from avg_pool1d."""
    if isinstance(norm_type, (int, float)) and abs(norm_type) == float("inf"):
        if norm_type > 0:
            return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    check_tensor(input, "lp_pool1d", "input", 1)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    from .elementwise import abs as _abs, relu as _relu, sign as _sign
    return (_sign(out) * _relu(_abs(out))).mul(kernel_size).pow(1.0 / norm_type)


@register(module=False, submodule=_NN)
def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling (PyTorch's composition of avg_pool2d, sign, relu and pow)."""
    if isinstance(norm_type, (int, float)) and abs(norm_type) == float("inf"):
        if norm_type > 0:
            return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    check_tensor(input, "lp_pool2d", "input", 1)
    kw, kh = _ntuple(kernel_size, 2, "kernel_size", "lp_pool2d")
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    from .elementwise import abs as _abs, relu as _relu, sign as _sign
    return (_sign(out) * _relu(_abs(out))).mul(kw * kh).pow(1.0 / norm_type)


max_unpool_p = defprim(
    "max_unpool", "MaxUnpool2DBackward0",
    lambda xp, x, indices, shape, sd: xp.pool_scatter(x, indices, shape, sd, True),
    vjp=lambda xp, g, out, x, indices, shape, sd: xp.pool_gather(g, indices, sd),
    jvp="linear")


def _max_unpool(op, d, input, indices, kernel_size, stride, padding, output_size):
    check_tensor(input, op, "input", 1)
    check_tensor(indices, op, "indices", 2)
    kernel = _ntuple(kernel_size, d, "kernel_size", op)
    st = kernel if stride is None else _ntuple(stride, d, "stride", op)
    pad = _ntuple(padding, d, "padding", op)
    default = [(input.shape[-d + i] - 1) * st[i] + kernel[i] - 2 * pad[i] for i in range(d)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) == d + 2:
            size = size[2:]
        if len(size) != d:
            raise ValueError(f"output_size should be a sequence containing {d} or {d + 2} elements, but it has a "
                             f"length of '{len(size)}'")
        for i in range(d):
            if not default[i] - st[i] < size[i] < default[i] + st[i]:
                raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between '
                                 f"{default[i] - st[i]} and {default[i] + st[i]})")
    for i in range(d):
        if size[i] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{i}]={size[i]}")
    return size


def _unpool_apply(input, indices, size, node):
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_dtype_name(indices)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_size_str(input.shape)}) but got indices tensor with shape: "
                           f"{_size_str(indices.shape)}")
    k = len(size)
    idx = indices._data
    total = math.prod(size)
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = int(idx.max() if idx.max() >= total else idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    shape = tuple(input.shape[:input.ndim - k]) + tuple(size)
    return apply(max_unpool_p, (input,), {"indices": idx, "shape": shape, "sd": k}, _upsample_node(node))


def _dtype_name(t: Tensor) -> str:
    return _TYPE_NAMES.get(str(t._data.dtype), str(t._data.dtype))


@register(module=False, submodule=_NN)
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: each value put back at its index, zeros elsewhere."""
    size = _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    return _unpool_apply(input, indices, size, "MaxUnpool2DBackward0")


@register(module=False, submodule=_NN)
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool3d."""
    size = _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    return _unpool_apply(input, indices, size, "MaxUnpool3DBackward0")


@register(module=False, submodule=_NN)
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool1d (as PyTorch: 2-d unpooling over (L, 1))."""
    size = _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.ndim + 1} dimensions.")
    return _unpool_apply(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1], "MaxUnpool2DBackward0").squeeze(-1)


# ----- affine_grid -----------------------------------------------------------------------------------------------

affine_grid_p = defprim(
    "affine_grid", "AffineGridGeneratorBackward0",
    lambda xp, theta, size, align_corners: xp.affine_grid(theta, size, align_corners),
    vjp=lambda xp, g, out, theta, size, align_corners: xp.affine_grid_backward(g, size, align_corners),
    jvp="linear")
affine_grid_backward_p = defprim(
    "affine_grid_backward", "AffineGridGeneratorBackwardBackward0",
    lambda xp, g, size, align_corners: xp.affine_grid_backward(g, size, align_corners),
    vjp=lambda xp, g, out, gy, size, align_corners: xp.affine_grid(g, size, align_corners),
    jvp="linear")
graph("affine_grid", lambda theta, size, align_corners: apply(
    affine_grid_p, (theta,), {"size": tuple(size), "align_corners": align_corners}))
graph("affine_grid_backward", lambda g, size, align_corners: apply(
    affine_grid_backward_p, (g,), {"size": tuple(size), "align_corners": align_corners}))


@register(module=False, submodule=_NN)
def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3) (or (N, 3, 4))
    over an output of ``size``, in normalised [-1, 1] coordinates (for grid_sample)."""
    check_tensor(theta, "affine_grid", "theta", 1)
    if align_corners is None:
        align_corners = False
    if theta._data.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"torch.Size({size}). Got {_size_str(theta.shape).join(('torch.Size(', ')'))}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"torch.Size({size}). Got {_size_str(theta.shape).join(('torch.Size(', ')'))}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size torch.Size({size}).")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got torch.Size({size})")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta's batch size {theta.shape[0]} to match size[0]={size[0]}")
    return apply(affine_grid_p, (theta,), {"size": tuple(size), "align_corners": bool(align_corners)})


# ----- grid_sample (2-d: bilinear, nearest; zeros, border, reflection padding) ---------------------------------
# The sampling position along each axis is a piecewise-affine function of the grid (unnormalise, then clip or
# reflect: ATen's GridSampler.h): pixel = A * grid + B with A, B constant on each piece, read from the grid's
# values. The rules rebuild the corner weights from the grid with xp arithmetic (so they are differentiable
# in the grid), and read and write the input through pool_gather / pool_scatter (differentiable too): the
# gradients are differentiable again, as PyTorch's GridSampler2DBackwardBackward0.

def _raw(a):
    return a._data if isinstance(a, Tensor) else a


def _const(xp, arr):
    """A constant array in the rule's namespace (a Tensor under create_graph)."""
    return make(np.ascontiguousarray(arr)) if type(xp).__name__ == "SimpleNamespace" else arr


def _gs_axis(coord, size, padding, align):
    """(pixel position, A, B) along one axis for normalised coordinates ``coord`` (pixel = A*coord + B)."""
    dt = coord.dtype.type
    scale = dt((size - 1) / 2) if align else dt(size / 2)
    shift = dt((size - 1) / 2)
    c = coord * scale + shift
    a = np.ones_like(c)
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            c = np.zeros_like(c)
            a = np.zeros_like(c)
        else:
            mn, span = dt(lo2 / 2), dt((hi2 - lo2) / 2)
            t = c - mn
            s1 = np.where(t < 0, dt(-1), dt(1))
            t = np.abs(t)
            extra = np.fmod(t, span)
            even = np.floor(t / span) % 2 == 0
            c = np.where(even, extra + mn, span - extra + mn)
            a = np.where(even, s1, -s1)
    if padding in ("border", "reflection"):
        inside = (c > 0) & (c < size - 1)
        a = np.where(inside, a, dt(0))
        c = np.clip(c, 0, size - 1)
    A = (a * scale).astype(coord.dtype)
    return c.astype(coord.dtype), A, (c - A * coord).astype(coord.dtype)


def _gs_plan(inp_shape, grid, mode, padding, align):
    """The corners: (flat index (N, C, *out), in-bounds mask (N, *out), offsets) per corner, the offsets (0 or 1
    per grid component x, y[, z]) from floor (bilinear) or None (nearest); and the axis maps (A, B, floor) per
    component. Component k addresses spatial dim d-1-k (x the width); corners run with x fastest, as PyTorch sums
    them (nw, ne, sw, se; then the bottom plane in 3-d)."""
    sizes = tuple(inp_shape[2:])
    d = len(sizes)
    g = _raw(grid)
    axes = [_gs_axis(g[..., k], sizes[d - 1 - k], padding, align) for k in range(d)]
    if mode == "nearest":
        bases = [(tuple(np.rint(c) for c, _, _ in axes), None)]
    else:
        floors = [np.floor(c) for c, _, _ in axes]
        bases = [(tuple(f + o for f, o in zip(floors, offs[::-1])), offs[::-1])
                 for offs in itertools.product((0, 1), repeat=d)]
    N, C = inp_shape[:2]
    corners = []
    for pos, offs in bases:
        mask = np.ones(g.shape[:-1], dtype=bool)
        flat = 0
        for k, p in enumerate(pos):
            S = sizes[d - 1 - k]
            mask &= (p >= 0) & (p <= S - 1)
            p = np.where(p == p, p, 0)   # a nan position is masked off; its index only has to be valid
            flat = flat + np.clip(p, 0, S - 1).astype(np.int64) * math.prod(sizes[d - k:])
        idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
        corners.append((idx, mask.astype(g.dtype), offs))
    maps = [(A, B, np.floor(c) if mode != "nearest" else None) for c, A, B in axes]
    return corners, maps


def _gs_weights(xp, grid, maps):
    """The fractional offsets w_k = pixel_k - floor(pixel_k) per grid component, differentiable in the grid."""
    return [xp.getitem(grid, (Ellipsis, k)) * _const(xp, A) + _const(xp, B - f) for k, (A, B, f) in enumerate(maps)]


def _gs_corner_weight(ws, offs, skip=None):
    """The corner's weight: the product over components of w_k (offset 1) or 1 - w_k (offset 0); ``skip``: leave
    that component out (its derivative is +-1)."""
    out = None
    for k, (w, o) in enumerate(zip(ws, offs)):
        if k == skip:
            continue
        f = w if o else 1 - w
        out = f if out is None else out * f
    return out


# bicubic (2-d): 4 x 4 taps around floor(pixel), each tap's coordinate padded on its own (PyTorch's
# get_value_bounded: the source position is never clipped, a tap past the border reads the border or its mirror,
# or zero), weights the cubic convolution coefficients (A = -0.75) of the fractional offsets, rows first.

def _gs_tap(coord, size, padding, align):
    """A tap's integer coordinate after padding (reflect, then clip; or clip) and its in-bounds mask."""
    if padding == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            coord = np.zeros_like(coord)
        else:
            mn, span = lo2 / 2, (hi2 - lo2) / 2
            t = np.abs(coord - mn)
            extra = np.fmod(t, span)
            coord = np.where(np.floor(t / span) % 2 == 0, extra + mn, span - extra + mn)
    if padding in ("border", "reflection"):
        coord = np.clip(coord, 0, size - 1)
    ic = np.trunc(coord)   # C++'s cast to int64 truncates
    return ic, (ic >= 0) & (ic <= size - 1)


def _gs_bicubic_plan(inp_shape, grid, padding, align):
    """The 16 taps as (flat index (N, C, Ho, Wo), mask (N, Ho, Wo), i, j) (i the x tap, j the y tap) and the
    maps (A, B - floor) of the fractional offsets t = A * grid + (B - floor) for x and y."""
    N, C, H, W = inp_shape
    g = _raw(grid)
    maps, floors = [], []
    for k, size in ((0, W), (1, H)):
        c, A, B = _gs_axis(g[..., k], size, "zeros", align)   # unnormalised, never clipped
        f = np.floor(c)
        floors.append(f)
        maps.append((A, B - f))
    taps = []
    for j in range(4):
        yy, my = _gs_tap(floors[1] - 1 + j, H, padding, align)
        for i in range(4):
            xx, mx = _gs_tap(floors[0] - 1 + i, W, padding, align)
            mask = mx & my
            yy, xx = np.where(yy == yy, yy, 0), np.where(xx == xx, xx, 0)   # nan: masked off, any valid index
            flat = np.clip(yy, 0, H - 1).astype(np.int64) * W + np.clip(xx, 0, W - 1).astype(np.int64)
            idx = np.ascontiguousarray(np.broadcast_to(flat[:, None], (N, C) + flat.shape[1:]))
            taps.append((idx, mask.astype(g.dtype), i, j))
    return taps, maps


def _cubic_coeffs(t):
    """PyTorch's cubic convolution coefficients (A = -0.75) of the 4 taps at offsets -1, 0, 1, 2 from floor."""
    A = -0.75

    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_coeffs_grad(t):
    """d/dt of _cubic_coeffs."""
    A = -0.75

    def dnear(x):
        return (3 * (A + 2) * x - 2 * (A + 3)) * x

    def dfar(x):
        return (3 * A * x - 10 * A) * x + 8 * A
    return [dfar(t + 1), dnear(t), -dnear(1 - t), -dfar(2 - t)]


def _gs_bicubic_offsets(xp, grid, maps):
    return [xp.getitem(grid, (Ellipsis, k)) * _const(xp, A) + _const(xp, B) for k, (A, B) in enumerate(maps)]


def _gs_bicubic(xp, inp, grid, padding_mode, align_corners, want):
    """The forward (``want`` 'out'), or the pieces of the grid gradient: d out / d tx and d out / d ty per
    channel ('grid')."""
    taps, maps = _gs_bicubic_plan(inp.shape, grid, padding_mode, align_corners)
    tx, ty = _gs_bicubic_offsets(xp, grid, maps)
    cx, cy = _cubic_coeffs(tx), _cubic_coeffs(ty)
    if want == "grid":
        dx, dy = _cubic_coeffs_grad(tx), _cubic_coeffs_grad(ty)
    rows, drows = [], []
    for j in range(4):
        row = drow = None
        for idx, mask, i, jj in taps[4 * j:4 * j + 4]:
            v = xp.pool_gather(inp, idx, 2) * _const(xp, mask[:, None])
            term = v * xp.unsqueeze(cx[i], 1)
            row = term if row is None else row + term
            if want == "grid":
                dterm = v * xp.unsqueeze(dx[i], 1)
                drow = dterm if drow is None else drow + dterm
        rows.append(row)
        drows.append(drow)
    if want == "out":
        out = None
        for j in range(4):
            term = rows[j] * xp.unsqueeze(cy[j], 1)
            out = term if out is None else out + term
        return out
    dtx = dty = None
    for j in range(4):
        a = drows[j] * xp.unsqueeze(cy[j], 1)
        b = rows[j] * xp.unsqueeze(dy[j], 1)
        dtx = a if dtx is None else dtx + a
        dty = b if dty is None else dty + b
    return dtx, dty, maps


def _grid_sample_fwd(xp, inp, grid, mode, padding_mode, align_corners):
    if mode == "bicubic":
        return _gs_bicubic(xp, inp, grid, padding_mode, align_corners, "out")
    corners, maps = _gs_plan(inp.shape, grid, mode, padding_mode, align_corners)
    sd = inp.ndim - 2
    if mode == "nearest":
        idx, mask, _ = corners[0]
        return xp.pool_gather(inp, idx, sd) * mask[:, None]
    ws = _gs_weights(xp, grid, maps)
    out = 0
    for idx, mask, offs in corners:
        out = out + xp.pool_gather(inp, idx, sd) * (_gs_corner_weight(ws, offs) * mask)[:, None]
    return out


def _grid_sample_vjp_input(xp, g, out, inp, grid, mode, padding_mode, align_corners):
    shape = tuple(inp.shape)
    if mode == "bicubic":
        taps, maps = _gs_bicubic_plan(shape, grid, padding_mode, align_corners)
        tx, ty = _gs_bicubic_offsets(xp, grid, maps)
        cx, cy = _cubic_coeffs(tx), _cubic_coeffs(ty)
        res = None
        for idx, mask, i, j in taps:
            part = xp.pool_scatter(g * xp.unsqueeze(cx[i] * cy[j] * _const(xp, mask), 1), idx, shape, 2)
            res = part if res is None else res + part
        return res
    corners, maps = _gs_plan(inp.shape, grid, mode, padding_mode, align_corners)
    sd = len(shape) - 2
    if mode == "nearest":   # piecewise constant: connected to the grid (zero derivative) as PyTorch's
        idx, mask, _ = corners[0]
        return xp.grad_link_zero(xp.pool_scatter(g * _const(xp, mask[:, None]), idx, shape, sd), inp, grid,
                                 f"GridSampler{sd}DBackwardBackward0")
    ws = _gs_weights(xp, grid, maps)
    res = None
    for idx, mask, offs in corners:
        w = _gs_corner_weight(ws, offs) * _const(xp, mask)
        part = xp.pool_scatter(g * xp.unsqueeze(w, 1), idx, shape, sd)
        res = part if res is None else res + part
    return res


def _grid_sample_vjp_grid(xp, g, out, inp, grid, mode, padding_mode, align_corners):
    if mode == "nearest":   # piecewise constant in the grid: zeros (connected as PyTorch's, no derivative)
        return xp.grad_link(xp.zeros_like(grid), inp, grid, f"GridSampler{inp.ndim - 2}DBackwardBackward0")
    if mode == "bicubic":
        dtx, dty, maps = _gs_bicubic(xp, inp, grid, padding_mode, align_corners, "grid")
        return xp.stack([xp.sum(g * dtx, 1) * _const(xp, maps[0][0]), xp.sum(g * dty, 1) * _const(xp, maps[1][0])],
                        -1)
    corners, maps = _gs_plan(inp.shape, grid, mode, padding_mode, align_corners)
    sd = inp.ndim - 2
    ws = _gs_weights(xp, grid, maps)
    parts = [None] * sd
    for idx, mask, offs in corners:
        v = xp.pool_gather(inp, idx, sd) * _const(xp, mask[:, None])
        for k in range(sd):   # d(corner weight)/d(pixel_k): the other components' factors, signed
            wk = _gs_corner_weight(ws, offs, skip=k)
            p = v * xp.unsqueeze(wk if offs[k] else -wk, 1)
            parts[k] = p if parts[k] is None else parts[k] + p
    return xp.stack([xp.sum(g * parts[k], 1) * _const(xp, maps[k][0]) for k in range(sd)], -1)


grid_sample_p = defprim(
    "grid_sampler_2d", "GridSampler2DBackward0",
    lambda xp, inp, grid, mode, padding_mode, align_corners:
    _grid_sample_fwd(xp, inp, grid, mode, padding_mode, align_corners),
    vjp=(_grid_sample_vjp_input, _grid_sample_vjp_grid), saves=(0, 1),
    saved_names={0: "input", 1: "grid"})
grid_sample3d_p = defprim(
    "grid_sampler_3d", "GridSampler3DBackward0",
    lambda xp, inp, grid, mode, padding_mode, align_corners:
    _grid_sample_fwd(xp, inp, grid, mode, padding_mode, align_corners),
    vjp=(_grid_sample_vjp_input, _grid_sample_vjp_grid), saves=(0, 1),
    saved_names={0: "input", 1: "grid"})
save_always(grid_sample_p, grid_sample3d_p)   # PyTorch's grid_sampler_*_backward: one formula for both inputs
# PyTorch shows the modes as its enums' ints
_GS_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GS_PADDING = {"zeros": 0, "border": 1, "reflection": 2}
for _p in (grid_sample_p, grid_sample3d_p):
    _p.node_cls._saved_interpolation_mode = property(lambda node: _GS_MODES[node._params["mode"]])
    _p.node_cls._saved_padding_mode = property(lambda node: _GS_PADDING[node._params["padding_mode"]])


@register(module=False, submodule=_NN)
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) at the normalised [-1, 1] positions of ``grid`` (N, Ho, Wo, 2), or (N, C, D, H, W) at
    ``grid`` (N, Do, Ho, Wo, 3): bilinear or nearest (and bicubic in 2-d), with zeros, border or reflection
    padding."""
    check_tensor(input, "grid_sample", "input", 1)
    check_tensor(grid, "grid_sample", "grid", 2)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        align_corners = False
    if input._data.dtype != grid._data.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(input)} but found {_dtype_name(grid)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {_size_str(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        want = "4D" if input.ndim == 4 else "5D"   # PyTorch's wording: any other rank is "5D"
        raise RuntimeError(f"grid_sampler(): expected {want} input and grid with same number of dimensions, but "
                           f"got input with sizes {_size_str(input.shape)} and grid with sizes {_size_str(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {_size_str(input.shape)} and grid with sizes {_size_str(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {_size_str(input.shape)} with dimension {i} being empty")
    if mode == "bicubic":
        if input.ndim == 5:
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input._data.dtype.kind != "f":
        if input.ndim == 5:
            raise NotImplementedError(f'"grid_sampler3d_cpu" not implemented for \'{_dtype_name(input)}\'')
        raise RuntimeError(f'"grid_sampler_2d_cpu" not implemented for \'{_dtype_name(input)}\'')
    if input.ndim == 5:
        return apply(grid_sample3d_p, (input, grid), {"mode": mode, "padding_mode": padding_mode,
                                                       "align_corners": bool(align_corners)})
    return apply(grid_sample_p, (input, grid), {"mode": mode, "padding_mode": padding_mode,
                                                 "align_corners": bool(align_corners)})


# ----- pooling with indices (always a pair), lp_pool3d ----------------------------------------------------------
# F.max_poolNd_with_indices and F.adaptive_max_poolNd_with_indices return (values, indices) whatever
# return_indices says, as PyTorch's; torch.max_pool1d_with_indices and torch.adaptive_max_pool1d are the
# same pair without the flag.

@register(module=False, submodule=_NN, name="max_pool1d_with_indices")
def _f_max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                               ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """1-d max pooling: (values, indices)."""
    check_tensor(input, "max_pool1d_with_indices", "input", 1)
    _ntuple(kernel_size, 1, "kernel_size", "max_pool1d_with_indices")
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@register(name="max_pool1d_with_indices")
def _max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                             ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """torch.max_pool1d_with_indices: 1-d max pooling, (values, indices)."""
    check_tensor(input, "max_pool1d_with_indices", "input", 1)
    _ntuple(kernel_size, 1, "kernel_size", "max_pool1d_with_indices")
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _torch_max_pool(d):
    def fn(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
        f = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[d]
        return f(input, kernel_size, stride, padding, dilation, ceil_mode)
    fn.__name__ = fn.__qualname__ = f"max_pool{d}d"
    fn.__doc__ = f"torch.max_pool{d}d: {d}-d max pooling, the values only (F.max_pool{d}d's positional order)."
    return fn


for _d in (1, 2, 3):
    register(_torch_max_pool(_d), name=f"max_pool{_d}d")


@register(module=False, submodule=_NN)
def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """2-d max pooling: (values, indices)."""
    return _max_pool("max_pool2d_with_indices", 2, input, kernel_size, stride, padding, dilation, ceil_mode, True)


@register(module=False, submodule=_NN)
def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """3-d max pooling: (values, indices)."""
    return _max_pool("max_pool3d_with_indices", 3, input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _adaptive_max1d_pair(input, output_size):
    check_tensor(input, "adaptive_max_pool1d", "input", 1)
    if output_size is None or isinstance(output_size, (str, bool, float)):
        raise TypeError(f"adaptive_max_pool1d(): argument 'output_size' (position 2) must be tuple of ints, not "
                        f"{type(output_size).__name__}")
    return adaptive_max_pool1d(input, output_size, True)


@register(module=False, submodule=_NN, name="adaptive_max_pool1d_with_indices")
def _f_adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                        ) -> tuple[Tensor, Tensor]:
    """1-d adaptive max pooling: (values, indices)."""
    return _adaptive_max1d_pair(input, output_size)


@register(name="adaptive_max_pool1d")
def _torch_adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """torch.adaptive_max_pool1d: 1-d adaptive max pooling, (values, indices) (F's returns the values only)."""
    return _adaptive_max1d_pair(input, output_size)


@register(module=False, submodule=_NN)
def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                     ) -> tuple[Tensor, Tensor]:
    """2-d adaptive max pooling: (values, indices)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)


@register(module=False, submodule=_NN)
def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False
                                     ) -> tuple[Tensor, Tensor]:
    """3-d adaptive max pooling: (values, indices)."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, True)


@register(module=False, submodule=_NN)
def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """3-d power-average pooling (PyTorch's composition of avg_pool3d, sign, relu and pow)."""
    if isinstance(norm_type, (int, float)) and abs(norm_type) == float("inf"):
        if norm_type > 0:
            return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    check_tensor(input, "lp_pool3d", "input", 1)
    kd, kw, kh = _ntuple(kernel_size, 3, "kernel_size", "lp_pool3d")
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    from .elementwise import abs as _abs, relu as _relu, sign as _sign
    return (_sign(out) * _relu(_abs(out))).mul(kd * kw * kh).pow(1.0 / norm_type)


# ----- fractional max pooling ------------------------------------------------------------------------------------
# Windows of a fixed size at pseudo-random starts (one uniform sample per plane and dim, drawn as PyTorch's
# F draws them: torch.rand(N, C, d, dtype=input.dtype), so the same seed gives PyTorch's windows). The result is
# max pooling at the indices found, so the gradient is max pooling's scatter, recorded under PyTorch's node.

_FRACTIONAL_NODES = {d: _node(f"FractionalMaxPool{d}DBackward0") for d in (2, 3)}
_DIM_WORDS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(d, input, kernel_size, output_size, output_ratio, _random_samples):
    from ..devices.cpu.nn_resample import _fractional_max_indices
    op = f"fractional_max_pool{d}d"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if d == 2 and len(output_ratio) > 2:   # len() of a bare float raises PyTorch's TypeError too
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        # PyTorch's _pair/_triple: an iterable as it is, a number repeated
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * d
        if len(ratio) < d:
            raise IndexError("tuple index out of range")
        output_size = [int(input.shape[i - d] * ratio[i]) for i in range(d)]
    if input.ndim < d + 1:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {-(d + 1)})")
    samples = _random_samples
    if samples is None:
        from .random import rand
        samples = rand(1 if input.ndim == d + 1 else input.shape[0], input.shape[-d - 1], d, dtype=input.dtype)
    check_tensor(samples, op, "random_samples", 4)
    three = "" if d == 2 else " three"
    for name, v in (("kernel_size", kernel_size), ("output_size", output_size)):
        if isinstance(v, (list, tuple)) and len(v) != d:   # (a 1-tuple too: PyTorch passes it on as it is)
            if len(v):
                _ntuple(v[:1], d, name, op)   # element types first, as PyTorch's parser
            raise RuntimeError(f"{op}: {name} must either be a single Int or tuple of{three} Ints")
    kernel = _ntuple(kernel_size, d, "kernel_size", op)
    size = _ntuple(output_size, d, "output_size", op)
    where = op if d == 2 else f"{op}_out"
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"{where}(): Expected {d + 1}D or {d + 2}D tensor, but got: {_size_str(input.shape)}")
    for i in range(1, input.ndim):   # as PyTorch: from dim 1 (an unbatched input may have no channels)
        if input.shape[i] == 0:
            raise RuntimeError(f"{where}(): Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{_size_str(input.shape)} with dimension {i} being empty.")
    if samples._data.dtype != input._data.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batched = input.ndim == d + 2
    N, C = (input.shape[0], input.shape[1]) if batched else (1, input.shape[0])
    if samples.shape[0] < N:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != d:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {d}; got {samples.shape[2]}.")
    if any(o < 0 for o in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{_size_str(input.shape[:input.ndim - d] + size)}")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"ember: {op}(): kernel_size must be greater than zero, but got {list(kernel)}")
    for word, S, L, k in zip(_DIM_WORDS[d], input.shape[-d:], size, kernel):
        if L + k - 1 > S or (d == 3 and L + k - 1 == S):   # ATen's 3-d check is strict, its 2-d one not
            raise RuntimeError(f"{where}(): pool {word} {k} too large relative to input {word} {S}")
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f'"{op}_out_frame" not implemented for \'{_TYPE_NAMES[str(input._data.dtype)]}\'')
    x = input._data if batched else input._data[None]
    order = (1, 0) if d == 2 else (0, 1, 2)
    idx = _fractional_max_indices(x, kernel, size, samples._data, order)
    if not batched:
        idx = idx[0]
    out = apply(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": False}, _FRACTIONAL_NODES[d])
    return out, make(idx)


@register(module=False, submodule=_NN)
def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """2-d fractional max pooling (Graham, 2014): (values, indices)."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)


@register(module=False, submodule=_NN)
def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-d fractional max pooling over (N, C, H, W) or (C, H, W): windows of ``kernel_size`` at random starts,
    ``output_size`` or ``output_ratio`` of the input; ``_random_samples`` (N, C, 2) fixes the starts."""
    out = _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


@register(module=False, submodule=_NN)
def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """3-d fractional max pooling: (values, indices)."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)


@register(module=False, submodule=_NN)
def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-d fractional max pooling over (N, C, T, H, W) or (C, T, H, W); ``_random_samples`` (N, C, 3)."""
    out = _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


# PyTorch's max-pooling nodes show the indices they saved as _saved_result1 (ember's nodes hold them as a parameter)
for _cls in (_POOL_NODES["MaxPool2DWithIndicesBackward0"], _POOL_NODES["MaxPool3DWithIndicesBackward0"],
             _POOL_NODES["AdaptiveMaxPool2DBackward0"], _POOL_NODES["AdaptiveMaxPool3DBackward0"],
             *_FRACTIONAL_NODES.values()):
    _cls._saved_result1 = property(lambda node: make(node._params["indices"]), doc="PyTorch's grad_fn._saved_result1")


# ----- what PyTorch's nodes show (grad_fn._saved_*) ------------------------------------------------------------

def _conv_transposed(node) -> bool:
    return node._prim is conv_transpose_p


def _conv_padding(node) -> tuple:
    return tuple(lo for lo, _ in node._params["pads"])   # symmetric: 'same' pads an odd remainder first


def _conv_output_padding(node) -> tuple:
    """A transposed convolution's output_padding: its output size less the size its other arguments give."""
    if not _conv_transposed(node):
        return (0,) * len(node._params["stride"])
    p = node._params
    x_shape, w_shape = node._in[0].shape, node._in[1].shape
    return tuple(o - ((L - 1) * s - 2 * lo + dl * (k - 1) + 1) for o, L, s, (lo, _), dl, k in
                 zip(p["size"], x_shape[2:], p["stride"], p["pads"], p["dilation"], w_shape[2:]))


def _conv_bias_sizes(node) -> tuple:
    b = node._in[2]
    return tuple(b.shape) if type(b) is Unsaved else (0,)   # PyTorch shows [0] for no bias


# PyTorch's ConvolutionBackward0 shows its call's arguments; stride, dilation, groups, input and weight come from
# the primitives' parameters and saves, these from what the node holds
for _name, _fn in (("_saved_transposed", _conv_transposed), ("_saved_padding", _conv_padding),
                   ("_saved_output_padding", _conv_output_padding), ("_saved_bias_sym_sizes_opt", _conv_bias_sizes)):
    setattr(conv_p.node_cls, _name, property(_fn, doc=f"PyTorch's grad_fn.{_name}"))
