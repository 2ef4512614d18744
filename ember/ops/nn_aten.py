"""The torch-level (ATen) spellings of ops that ember declares in its nn and norm families: ``torch.kl_div``,
``torch.embedding``, ``torch.convolution``, ``torch.constant_pad_nd``, ``torch.frobenius_norm``, ... PyTorch exports
its native functions under these names with their ATen signatures (a reduction is an int: 0 none, 1 mean,
2 sum; ``embedding`` takes the weight first); each one here checks and converts its arguments and calls the op
that ``nn.functional`` (or ``linalg``) uses, so values, gradients and nodes are that op's."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from .._tensor import Tensor, make
from .._util import check_tensor
from ._registry import SUBMODULES, invalid_arguments, register
from ._schema import schema
from ..autograd import grad_mode as _gm
from . import nn_activation as _act, nn_conv as _conv, nn_grid as _grid, nn_loss as _loss, nn_pad as _pad
from .reduction import norm as _norm
from .shape import permute

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
_UNSET = object()


def _reduction(reduction, op: str) -> str:
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{op}(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return _REDUCTIONS.get(reduction, "none")   # PyTorch's apply_loss_reduction: any other value reduces nothing


# ----- losses ---------------------------------------------------------------------------------------------------

@register()
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: int = 1) -> Tensor:
    return _loss.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                                  reduction=_reduction(reduction, "binary_cross_entropy_with_logits"))


@register()
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    return _loss.cosine_embedding_loss(input1, input2, target, margin,
                                       reduction=_reduction(reduction, "cosine_embedding_loss"))


@register()
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1) -> Tensor:
    return _loss.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


@register()
def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *, log_target: bool = False) -> Tensor:
    """``target * (log target - input)`` reduced (a mean over every element for 1: nn.functional's warning about
    'batchmean' is not given here, as PyTorch's torch.kl_div gives none)."""
    red = _reduction(reduction, "kl_div")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _loss.kl_div(input, target, reduction=red, log_target=log_target)


@register()
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    return _loss.margin_ranking_loss(input1, input2, target, margin,
                                     reduction=_reduction(reduction, "margin_ranking_loss"))


@register()
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    return _loss.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                  reduction=_reduction(reduction, "poisson_nll_loss"))


@register()
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: int = 1) -> Tensor:
    return _loss.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                     reduction=_reduction(reduction, "triplet_margin_loss"))


@register()
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    return _loss.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                          reduction=_reduction(reduction, "ctc_loss"), zero_infinity=zero_infinity)


# ----- embedding, padding, convolution, channel shuffle ----------------------------------------------------------

@register()
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """``weight[indices]`` (ATen's argument order); ``padding_idx`` -1: none."""
    return _act.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}
_FAST_SUM = frozenset(("float32", "float16", "bfloat16"))


@register()
@schema("embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, "
        "Tensor? per_sample_weights, bool include_last_offset, int? padding_idx)")
def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> tuple:
    """ATen's ``(output, offset2bag, bag_size, max_indices)``: the output of nn.functional.embedding_bag (mode 0
    sum, 1 mean, 2 max); the bag of each index (empty where PyTorch's CPU sum takes its fast path: float32,
    float16 or bfloat16 rows with unit stride and no padding_idx); per bag, the indices counted (sum: zeros of
    ``offsets``' shape); and max's argmax rows (other modes: bag_size again). Integer results have int32 when
    indices and offsets both have it, else int64."""
    from .creation import zeros
    if mode not in _BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    name = _BAG_MODES[mode]
    if per_sample_weights is not None and name != "sum":
        raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
    n = weight.shape[0] if isinstance(weight, Tensor) and weight.ndim else 0
    if padding_idx is not None and not -n <= padding_idx < n:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, but got "
                           f"{padding_idx}")
    out, bags, keep, argmax, nb = _act._embedding_bag(
        indices, weight, offsets, None, 2, scale_grad_by_freq, name, sparse, per_sample_weights,
        include_last_offset, padding_idx)
    both32 = indices.dtype == offsets.dtype and str(indices.dtype) == "torch.int32"
    itype = indices.dtype if both32 else D.int64
    dev = weight.device
    if name == "sum":
        fast = padding_idx is None and str(weight.dtype)[6:] in _FAST_SUM and weight.stride(1) == 1
        offset2bag = zeros(0, dtype=itype, device=dev) if fast else make(bags).to(itype)
        bag_size = zeros(tuple(offsets.shape), dtype=itype, device=dev)
        return out, offset2bag, bag_size, bag_size.clone()
    offset2bag = make(bags).to(itype)
    kept = make(keep).to(itype)
    bag_size = zeros(nb, dtype=itype, device=dev).index_add_(0, offset2bag.to(D.int64), kept)
    if name == "mean":
        return out, offset2bag, bag_size, bag_size.clone()
    max_indices = zeros(tuple(out.shape), dtype=itype, device=dev)
    bag, col, row = argmax
    max_indices[make(bag), make(col)] = make(row).to(itype)
    return out, offset2bag, bag_size, max_indices


@register()
@schema("constant_pad_nd(Tensor input, int[] pad, Scalar value)")
def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    return _pad.pad(input, list(pad), "constant", value)


@register()
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, transposed: bool,
                output_padding, groups: int) -> Tensor:
    """The convolution every nn.functional.conv*d calls: 1-3 spatial dimensions from the weight's, transposed or
    not. Complex inputs are refused, as PyTorch's (conv*d split a complex convolution into real ones first)."""
    check_tensor(input, "convolution")
    check_tensor(weight, "convolution", "weight", 2)
    d = weight.ndim - 2
    if not 1 <= d <= 3:
        raise RuntimeError(f"Expected 3D, 4D or 5D (batch mode) tensor for input to convolution, but got weight of "
                           f"{weight.ndim} dimensions")
    op = f"conv{'_transpose' if transposed else ''}{d}d"
    if transposed:
        return _conv._conv_transpose(op, d, input, weight, bias, list(stride), list(padding), list(output_padding),
                                     groups, list(dilation), aten=True)
    return _conv._conv(op, d, input, weight, bias, list(stride), list(padding), list(dilation), groups, aten=True)


@register(submodule="nn.functional")
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-d convolution of a (time, batch, channels) sequence with a (kernel width, in, out) weight: conv1d on
    the permuted tensors (PyTorch's node is ConvTbcBackward0; here the conv1d's and permutes' nodes)."""
    check_tensor(input, "conv_tbc")
    check_tensor(weight, "conv_tbc", "weight", 2)
    check_tensor(bias, "conv_tbc", "bias", 3)
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.dtype is D.bfloat16:
        return _conv_tbc_taps(input, weight, bias, pad)
    out = _conv.conv1d(permute(input, (1, 2, 0)), permute(weight, (2, 1, 0)), bias, 1, pad)
    return permute(out, (2, 0, 1))


def _conv_tbc_taps(input: Tensor, weight: Tensor, bias: Tensor, pad: int) -> Tensor:
    """PyTorch's conv_tbc kernel step for step (bfloat16 rounds after each): the output starts as the bias, then
    each kernel tap k adds its rows' product, O.addmm_(I, W[k]) (in float32, rounded once per tap)."""
    from .linalg.products import addmm
    from .shape import cat
    ilen, batch, cin = input.shape
    kw, cout = weight.shape[0], weight.shape[2]
    olen = ilen - kw + 1 + 2 * pad
    real_pad = (olen - ilen + kw - 1) // 2
    out = bias.expand(olen, batch, cout)
    for k in range(kw):
        i_shift, o_shift = max(0, k - real_pad), max(0, real_pad - k)
        t = min(ilen + real_pad - k, olen) - o_shift
        if t > 0:
            rows = addmm(out[o_shift:o_shift + t].reshape(t * batch, cout),
                         input[i_shift:i_shift + t].reshape(t * batch, cin), weight[k])
            out = cat((out[:o_shift], rows.reshape(t, batch, cout), out[o_shift + t:]))
    return out


@register(submodule="nn.functional")
@schema("native_channel_shuffle(Tensor input, int groups)")
def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``nn.functional.channel_shuffle`` (differentiable here; PyTorch's raises at backward)."""
    return _pad.channel_shuffle(input, groups)


# ----- deprecated norms PyTorch keeps for TorchScript ------------------------------------------------------------

def _deprecated(name: str, instead: str) -> None:
    warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  f"future PyTorch release. Please use `{instead}` instead", UserWarning, stacklevel=3)


@register()
@schema("frobenius_norm(Tensor input, int[1] dim, bool keepdim)")
def frobenius_norm(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """Deprecated (PyTorch's warning): ``torch.norm(input, 2, dim, keepdim)`` over at most two dimensions."""
    _deprecated("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    return _norm(input, 2, dim, keepdim)


@register()
def nuclear_norm(input: Tensor, dim=_UNSET, keepdim: bool = False) -> Tensor:
    """Deprecated (PyTorch's warning): ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``; ``nuclear_norm(input,
    keepdim)`` as in PyTorch's first overload."""
    check_tensor(input, "nuclear_norm")
    if dim is not _UNSET and not isinstance(dim, (bool, list, tuple)) or not isinstance(keepdim, bool):
        raise invalid_arguments("nuclear_norm", (dim,) if dim is not _UNSET else (), {"keepdim": keepdim})
    _deprecated("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if dim is _UNSET or isinstance(dim, bool):
        dim, keepdim = None, keepdim if dim is _UNSET else dim
    return SUBMODULES["linalg"]["matrix_norm"](input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


@register()
@schema("norm_except_dim(Tensor v, int pow, int dim)")
def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm over every dimension but ``dim`` (kept with size 1 elsewhere), as weight_norm uses it;
    ``dim`` -1: the norm of everything."""
    check_tensor(v, "norm_except_dim", "v")
    if dim == -1:
        return _norm(v, pow)
    if dim == 0:
        return _norm(v.contiguous().view(v.shape[0], -1), pow, 1).view(v.shape[0], *([1] * (v.ndim - 1)))
    if dim == v.ndim - 1:
        return _norm(v.contiguous().view(-1, v.shape[-1]), pow, 0).view(*([1] * (v.ndim - 1)), v.shape[-1])
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


# ----- affine grids and grid sampling (ATen's integer modes), embedding_renorm_ ------------------------------------

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


@register()
@schema("affine_grid_generator(Tensor theta, int[] size, bool align_corners)")
def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``nn.functional.affine_grid`` (AffineGridGeneratorBackward0); complex theta too, without a backward (as
    PyTorch's: its forward mode works)."""
    check_tensor(theta, "affine_grid_generator", "theta")
    if theta.dtype.is_complex:
        _act._no_complex_autograd("affine_grid_generator", theta)
        return _grid._affine_grid(theta, list(size), align_corners)
    return _grid.affine_grid(theta, list(size), align_corners)


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, ndim=None):
    if ndim is not None and (input.ndim != ndim or grid.ndim != ndim):
        raise RuntimeError(f"grid_sampler(): expected {ndim}D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode} or padding mode "
                           f"{padding_mode}")
    return _grid.grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode], align_corners)


@register()
@schema("grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)")
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``nn.functional.grid_sample`` with ATen's mode numbers (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
    2 reflection)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


@register()
@schema("grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)")
def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 4)


@register()
@schema("grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners)")
def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 5)


@register()
@schema("embedding_renorm_(Tensor input, Tensor indices, float max_norm, float norm_type)")
def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale the rows of ``input`` that ``indices`` names whose ``norm_type``-norm exceeds ``max_norm`` down to
    ``max_norm``, in place and unrecorded (what ``embedding(max_norm=...)`` does first)."""
    if input.requires_grad and input.grad_fn is None and _gm.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    _act._embedding_renorm_(input, indices._data, max_norm, norm_type)
    return input


# ----- linear_cross_entropy (nn.functional, new in PyTorch 2.13) -------------------------------------------------

@register(module=False, submodule="nn.functional")
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``: PyTorch's reference path, with its
    checks. ``options`` (PyTorch's chunked, memory-saving evaluation) is accepted and not used: ember always runs
    the reference computation, whose values the chunked one approximates."""
    check_tensor(input, "linear_cross_entropy")
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, ({'N'}, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if out_features:
        n = classes
        for f in out_features:
            n *= f
        linear_weight = linear_weight.reshape(n, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(n)
    logits = _act.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return _loss.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                               label_smoothing=label_smoothing)
