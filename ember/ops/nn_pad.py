"""The op table, torch.nn.functional: padding, unfold / fold and the pixel and channel shuffles.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_pad.py``. Each is a linear rearrangement of the spatial dims whose VJP is its transpose:
constant padding and its crop, reflect / replicate / circular padding as index maps (``pad_gather``) and their
scatter-add, im2col and col2im, pixel_shuffle and pixel_unshuffle, each the other's VJP. As PyTorch's, reflection
and replication padding's backward takes the input as well, with a zero derivative, so a second derivative
reaches the input.
"""
from __future__ import annotations

from ..autograd import _batching
from . import _vmap_nn

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor, make
from ..autograd._primitive import apply, defprim
from .._util import check_tensor
from ._nn_spatial import _NN, _dtype_name, _node, _ntuple, _size_str, not_differentiable
from ._registry import graph, register

not_differentiable("pad_indices")


# ----- padding ---------------------------------------------------------------------------------------------

constant_pad_p = defprim(
    "constant_pad_nd",
    lambda xp, x, pads, value: xp.constant_pad(x, pads, value),
    vjp=lambda xp, g, out, x, pads, value: xp.constant_pad_backward(g, pads, tuple(x.shape)),
    jvp=lambda xp, t, out, x, pads, value: xp.constant_pad(t, pads, 0), complex=True)
constant_pad_backward_p = defprim(
    "constant_pad_backward",
    lambda xp, g, pads, shape: xp.constant_pad_backward(g, pads, shape),
    node="ConstantPadNdBackwardBackward0", vjp=lambda xp, g, out, gy, pads, shape: xp.constant_pad(g, pads, 0),
    jvp="linear")
graph("constant_pad", lambda x, pads, value: apply(constant_pad_p, (x,), {"pads": tuple(pads), "value": value}))
graph("constant_pad_backward", lambda g, pads, shape: apply(constant_pad_backward_p, (g,), {
    "pads": tuple(pads), "shape": tuple(shape)}))

pad_gather_p = defprim(
    "pad_gather",
    lambda xp, x, idx: xp.pad_gather(x, idx),
    node="ReflectionPad2DBackward0", vjp=lambda xp, g, out, x, idx: xp.pad_gather_backward(g, idx, tuple(x.shape)),
    jvp="linear")
# reflection and replication padding: the same forward, the gradient connected to the input (see max_pool_p);
# circular padding is a composition of slices in PyTorch and keeps pad_gather_p
pad_p = defprim(
    "pad",
    lambda xp, x, idx: xp.pad_gather(x, idx),
    node="ReflectionPad2DBackward0", vjp=lambda xp, g, out, x, idx: xp.pad_backward(g, x, idx),
    jvp="linear", saves=(0,))
pad_backward_p = defprim(
    "pad_backward",
    lambda xp, g, x, idx: xp.pad_gather_backward(g, idx, tuple(x.shape)),
    node="ReflectionPad2DBackwardBackward0", vjp=(lambda xp, gg, out, g, x, idx: xp.pad_gather(gg, idx),
         lambda xp, gg, out, g, x, idx: xp.zeros_like(gg)),
    jvp=(lambda xp, t, out, g, x, idx: xp.pad_gather_backward(t, idx, tuple(x.shape)),
         lambda xp, t, out, g, x, idx: None), complex=True)
graph("pad_backward", lambda g, x, idx: apply(pad_backward_p, (g, x), {"idx": tuple(idx)}))
pad_gather_backward_p = defprim(
    "pad_gather_backward",
    lambda xp, g, idx, shape: xp.pad_gather_backward(g, idx, shape),
    node="ReflectionPad2DBackwardBackward0", vjp=lambda xp, g, out, gy, idx, shape: xp.pad_gather(g, idx),
    jvp="linear")
graph("pad_gather", lambda x, idx: apply(pad_gather_p, (x,), {"idx": tuple(idx)}))
graph("pad_gather_backward", lambda g, idx, shape: apply(pad_gather_backward_p, (g,), {
    "idx": tuple(idx), "shape": tuple(shape)}))

_PAD_NODES = {f"{kind}{k}DBackward0": _node(f"{kind}{k}DBackward0")
              for kind in ("ReflectionPad", "ReplicationPad") for k in (1, 2, 3)}
_PAD_NODES["circular"] = _node("CircularPadBackward0")


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
        if not (input.dtype.is_floating_point or input.dtype.is_complex) and isinstance(v, float) and v != int(v):
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
    xp = NAMESPACES[type(input._data)]
    idx = xp.pad_indices(input._data, mode, pads)
    node = _PAD_NODES["circular" if mode == "circular" else
                      f"{'ReflectionPad' if mode == 'reflect' else 'ReplicationPad'}{k}DBackward0"]
    if not (input.dtype.is_floating_point or input.dtype.is_complex) and mode != "circular":
        if input.dtype is D.bool:
            raise RuntimeError(f'"{mode}_pad{k}d" not implemented for \'Bool\'')
        return make(xp.pad_gather(input._data, idx))   # integer padding: no gradient
    return apply(pad_gather_p if mode == "circular" else pad_p, (input,), {"idx": idx}, node)


# ----- unfold / fold, pixel and channel shuffles ---------------------------------------------------------

im2col_p = defprim(
    "im2col",
    lambda xp, x, kernel, dilation, pads, stride: xp.im2col(x, kernel, dilation, pads, stride),
    node="Im2ColBackward0", vjp=lambda xp, g, out, x, kernel, dilation, pads, stride:
    xp.col2im(g, tuple(x.shape[-len(kernel):]), kernel, dilation, pads, stride),
    jvp="linear")
col2im_p = defprim(
    "col2im",
    lambda xp, x, size, kernel, dilation, pads, stride: xp.col2im(x, size, kernel, dilation, pads, stride),
    node="Col2ImBackward0",
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
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(input)}\'')


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
    "pixel_shuffle",
    lambda xp, x, upscale_factor: xp.pixel_shuffle(x, upscale_factor),
    vjp=lambda xp, g, out, x, upscale_factor: xp.pixel_unshuffle(g, upscale_factor), jvp="linear")
pixel_unshuffle_p = defprim(
    "pixel_unshuffle",
    lambda xp, x, downscale_factor: xp.pixel_unshuffle(x, downscale_factor),
    vjp=lambda xp, g, out, x, downscale_factor: xp.pixel_shuffle(g, downscale_factor), jvp="linear")
channel_shuffle_p = defprim(
    "channel_shuffle",
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


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("leading", "constant_pad_nd", "pixel_shuffle", "pixel_unshuffle")
# unfold (C, H, W) / fold (C*kh*kw, L) take an example without N as a batch of one; channel_shuffle needs N
_batching.by_name(_vmap_nn.fold_rule(3), "im2col")
_batching.by_name(_vmap_nn.fold_rule(2), "col2im")
_batching.by_name(_vmap_nn.fold_rule(None), "channel_shuffle")
_batching.by_name("fallback", "pad_gather", "pad",
                  why="its parameters index the input's dims from the left (N, C, ...) (F.pad has a whole-function rule "
                      "below, which folds the vmap batch into N)")
_batching.by_name("fallback", "constant_pad_backward", "pad_backward", "pad_gather_backward", why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")


def _pad_has_n(name, bound, rank):
    """F.pad's reflect/replicate/circular modes pad the last len(pad)/2 dims of (N, C, ...) or (C, ...)."""
    k = len(bound.arguments["pad"]) // 2
    return True if rank == k + 2 else False if rank == k + 1 else None


_fold_pad = _vmap_nn.folding(_pad_has_n)


def _pad_rule(orig, name, bound, level, size):
    # constant padding has its primitive's rule (it pads the last dims, whatever leads); the other modes'
    # wrappers index the input's dims from the left: the vmap batch folded into N
    if bound.arguments["mode"] == "constant":
        return orig(*bound.args, **bound.kwargs)
    return _fold_pad(orig, name, bound, level, size)


_vmap_nn.public_rule(_pad_rule, "pad")
