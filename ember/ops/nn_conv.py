"""The op table, torch.nn.functional: convolution.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_conv.py``.

Convolution is three bilinear primitives, N-d generic, each the others' derivatives:
  * ``convolution``    y = conv(x, w) + b                      (PyTorch's ConvolutionBackward0)
  * ``conv_transpose`` x' = conv_transpose(y, w) + b           (the input gradient of conv; ConvolutionBackward0
                                                                for F.conv_transpose*d)
  * ``conv_weight``    w' = conv_weight(x, y)                  (the weight gradient of conv)
Their VJPs call each other through ``xp``, so gradients of any order are convolutions again.
Pooling, padding and shuffles, resampling and grid sampling are in nn_pool.py, nn_pad.py, nn_resample.py and
nn_grid.py; what they share with this file (argument parsing, PyTorch's messages) in _nn_spatial.py.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, Unsaved, apply, defprim
from .._util import check_tensor
from ._nn_spatial import _NN, _dtype_name, _dtype_word, _ntuple, _size_str
from ._registry import graph, register
from ..autograd import _batching
from .nn_pad import constant_pad_p

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
    "grad_link",
    lambda xp, g, a, b: xp.clone(g),
    node="ConvolutionBackwardBackward0",
    vjp=(lambda xp, gg, out, g, a, b: gg, lambda xp, gg, out, g, a, b: None, lambda xp, gg, out, g, a, b: None),
    jvp=(lambda xp, t, out, g, a, b: t, lambda xp, t, out, g, a, b: None, lambda xp, t, out, g, a, b: None),
    complex=True)
graph("grad_link", lambda g, a, b, node: apply(grad_link_p, (g, a, b), {}, node_class(node, PrimNode)))
# the same, with a zero derivative (not None) for ``b`` (nearest grid_sample's input gradient and its grid)
grad_link_zero_p = defprim(
    "grad_link_zero",
    lambda xp, g, a, b: xp.clone(g),
    node="GridSampler2DBackwardBackward0", vjp=(lambda xp, gg, out, g, a, b: gg, lambda xp, gg, out, g, a, b: None,
         lambda xp, gg, out, g, a, b: xp.zeros_like(b)),
    jvp=(lambda xp, t, out, g, a, b: t, lambda xp, t, out, g, a, b: None, lambda xp, t, out, g, a, b: None),
    saves={2: (2,)})
graph("grad_link_zero", lambda g, a, b, node: apply(grad_link_zero_p, (g, a, b), {}, node_class(node, PrimNode)))


def _bias_tangent(xp, t, out):
    return xp.expand(xp.reshape(t, (1, t.shape[0]) + (1,) * (out.ndim - 2)), tuple(out.shape))


conv_p = defprim(
    "convolution",
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
    saves=(0, 1), saved_names=("input", "weight", "bias"), complex=True)   # multilinear


def _crop_to(xp, r, shape):
    """The input gradient of a transposed convolution whose output_padding reaches past a stride (allowed when
    dilation > stride): the convolution of the gradient is larger than the input; the extra rows had no input."""
    if tuple(r.shape) == tuple(shape):
        return r
    return xp.getitem(r, (slice(None), slice(None)) + tuple(slice(0, s) for s in shape[2:]))


conv_transpose_p = defprim(
    "conv_transpose",
    lambda xp, x, w, b, stride, pads, dilation, groups, size:
    xp.conv_transpose_nd(x, w, b, stride, pads, dilation, groups, size),
    node="ConvolutionBackward0", vjp=(lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         _crop_to(xp, xp.conv_nd(g, w, None, stride, pads, dilation, groups), x.shape),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_weight_nd(g, x, tuple(w.shape), stride, pads, dilation, groups),
         lambda xp, g, out, x, w, b, stride, pads, dilation, groups, size: _bias_grad(xp, g, x, w)),
    jvp=(lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(t, w, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size:
         xp.conv_transpose_nd(x, t, None, stride, pads, dilation, groups, size),
         lambda xp, t, out, x, w, b, stride, pads, dilation, groups, size: _bias_tangent(xp, t, out)),
    saves=(0, 1), saved_names=("input", "weight", "bias"), complex=True)   # multilinear

conv_weight_p = defprim(
    "conv_weight",
    lambda xp, x, gy, wshape, stride, pads, dilation, groups:
    xp.conv_weight_nd(x, gy, wshape, stride, pads, dilation, groups),
    node="ConvolutionBackwardBackward0", vjp=(lambda xp, g, out, x, gy, wshape, stride, pads, dilation, groups:
         xp.conv_transpose_nd(gy, g, None, stride, pads, dilation, groups, tuple(x.shape[2:])),
         lambda xp, g, out, x, gy, wshape, stride, pads, dilation, groups:
         xp.conv_nd(x, g, None, stride, pads, dilation, groups)),
    jvp="multilinear", saves={0: (1,), 1: (0,)})


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

def _check_dtypes(input: Tensor, weight: Tensor, bias) -> None:
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({_tensor_type(input)}) and weight type ({_tensor_type(weight)}) should "
                           "be the same")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_scalar_word(input)}) and bias type ({_scalar_word(bias)}) should be the "
                           "same")


def _tensor_type(t: Tensor) -> str:
    """PyTorch's tensor type name of ``t`` ('torch.FloatTensor', ...)."""
    return f"torch.{_dtype_name(t)}Tensor"


def _scalar_word(t: Tensor) -> str:
    """PyTorch's C++ scalar name (float, double, long, ...)."""
    word = _dtype_word(t)
    return {"float32": "float", "float64": "double", "int64": "long"}.get(word, word)


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


def _conv(op, d, input, weight, bias, stride, padding, dilation, groups, aten=False):
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
    if aten:
        plain = groups == 1 and all(v == 1 for v in stride + kernel) and not any(sum(pads, ()))
        _aten_complex(x, "slow_conv_dilated<>" if any(v != 1 for v in dilation) else
                      "slow_conv2d_cpu" if d < 3 else "slow_conv3d_cpu" if plain else "compute_columns3d")
    out = apply(conv_p, (x, weight, bias), _conv_params(stride, pads, dilation, groups))
    return out if batched else out.squeeze(0)


def _aten_complex(x: Tensor, kernel: str) -> None:
    """torch.convolution (ATen's, with no complex decomposition: conv1d/2d/3d and their transposes split a
    complex convolution into real ones, it does not) refuses a non-empty complex input in its CPU kernel."""
    if x.dtype.is_complex and x.numel():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(x)}'")


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


def _conv_transpose(op, d, input, weight, bias, stride, padding, output_padding, groups, dilation, aten=False):
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
    if aten:
        _aten_complex(x, f"slow_conv_transpose{3 if d == 3 else 2}d_out_cpu")
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


# ----- vmap -------------------------------------------------------------------------------------------------

def _conv_rule(call, args, bdims, params, size):
    """Convolutions of a batch of examples. Only the input batched: the batch joins the input's own batch dim
    N, one convolution. A batched weight (per-example weights: vmap over models, or grad's per-example copies):
    the examples become groups, each example's channels a block of them, one grouped convolution."""
    x, w, b = args
    bx, bw, bb = bdims
    if bw is None and bb is None:
        X = _batching._moved(x, bx)
        n = X._data.shape[1]
        out = call([X.reshape((size * n,) + tuple(X._data.shape[2:])), w, b])
        return out.reshape((size, n) + tuple(out._data.shape[1:])), 0
    if bx is None:
        X = x.unsqueeze(0).expand((size,) + tuple(x._data.shape))
    else:
        X = _batching._moved(x, bx)
    n, c = X._data.shape[1], X._data.shape[2]
    X = X.movedim(0, 1).reshape((n, size * c) + tuple(X._data.shape[3:]))   # (N, B*C, ...)
    W = w.unsqueeze(0).expand((size,) + tuple(w._data.shape)) if bw is None else _batching._moved(w, bw)
    W = W.reshape((size * W._data.shape[1],) + tuple(W._data.shape[2:]))
    B = b
    if b is not None:
        B = b.unsqueeze(0).expand((size,) + tuple(b._data.shape)) if bb is None else _batching._moved(b, bb)
        B = B.reshape((-1,))
    if not size:   # (the examples as groups: none; PyTorch's rule folds them the same way and refuses)
        raise RuntimeError("expected groups to be greater than 0, but got groups=0")
    new = dict(params)
    new["groups"] = params["groups"] * size
    out = call([X, W, B], new)   # (N, B*O, ...)
    out = out.reshape((n, size, out._data.shape[1] // size) + tuple(out._data.shape[2:]))
    return out.movedim(1, 0), 0


_batching.batching(_conv_rule, conv_p, conv_transpose_p)
_batching.batching("fallback", grad_link_p, grad_link_zero_p, conv_weight_p,
                   why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a "
                   "program calls it directly)")
