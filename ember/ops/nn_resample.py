"""The op table, torch.nn.functional: resampling (interpolate and the deprecated upsample functions).

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_resample.py``. Every mode but 'area' (adaptive average pooling) is separable: one
(out, in) matrix per spatial dim, made by a device kernel (ATen's index formulas, UpSample.h), applied with the
dim_matrices primitive (its VJP applies the transposed matrices) and recorded under PyTorch's node name; nearest
and antialiased resizing, whose backward is not the forward's transpose, are the resample pair. uint8 images are
resized by device kernels directly, PyTorch's way, with no gradient.
"""
from __future__ import annotations

from ..autograd import _batching

import math
import warnings

from .._device import NAMESPACES
from .. import _dtype as D
from .._tensor import Tensor, make
from ..autograd._primitive import apply, defprim
from .._util import check_tensor
from ._nn_spatial import _NN, _dtype_name, _node, _size_str, not_differentiable
from ._registry import graph, register
from .nn_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, dim_matrices_p

not_differentiable("interpolate_matrices", "interpolate_aa_matrices", "interpolate_uint8", "interpolate_aa_uint8")


# Resampling whose backward is not its forward's transpose: mode='nearest' (PyTorch's backward maps output to input
# indices its own way: the 2-d kernel's same-size and double-size shortcuts, in every dim count) and antialiasing
# (the forward copies a dim of unchanged size, the backward applies its weights for the scale given). Two
# primitives, each the other's VJP, as PyTorch's upsample_* / upsample_*_backward: ``mats`` (one (L, S) matrix per
# spatial dim) forward, the transposes of ``bmats`` backward. ``node``: the forward node's name (the double
# backward's is derived from it); output_size and scales are what the node shows (grad_fn._saved_output_size,
# _saved_scales_h, ...), as PyTorch's.
resample_p = defprim(
    "resample",
    lambda xp, x, mats, bmats, output_size, scales, node: xp.resample(x, mats, bmats, node),
    node="UpsampleNearest2DBackward0",
    vjp=lambda xp, g, out, x, mats, bmats, output_size, scales, node: xp.resample_backward(g, mats, bmats, node),
    jvp="linear")
resample_backward_p = defprim(
    "resample_backward",
    lambda xp, g, mats, bmats, node: xp.resample_backward(g, mats, bmats, node),
    node="UpsampleNearest2DBackwardBackward0",
    vjp=lambda xp, gg, out, g, mats, bmats, node: xp.resample(gg, mats, bmats, node),
    jvp="linear")
graph("resample", lambda x, mats, bmats, node, output_size=None, scales=None: apply(
    resample_p, (x,), {"mats": tuple(mats), "bmats": tuple(bmats), "output_size": output_size, "scales": scales,
                       "node": node}, _node(node)))
graph("resample_backward", lambda g, mats, bmats, node: apply(
    resample_backward_p, (g,), {"mats": tuple(mats), "bmats": tuple(bmats), "node": node},
    _node(node.replace("Backward0", "BackwardBackward0"))))


def _resample(input, mats, bmats, out_size, scales, node):
    return apply(resample_p, (input,), {"mats": mats, "bmats": bmats, "output_size": tuple(out_size),
                                        "scales": None if scales is None else tuple(scales), "node": node},
                 _node(node))


def _scale_attr(i):
    def get(node):
        sc = node._params["scales"]
        return None if sc is None or sc[i] is None else float(sc[i])
    return property(get)


_node("UpsampleNearest1DBackward0")._saved_scales = _scale_attr(0)
_node("UpsampleNearestExact1DBackward0")._saved_scales = _scale_attr(0)
for _name, _d in (("UpsampleNearest2DBackward0", 2), ("UpsampleNearest3DBackward0", 3),
                  ("UpsampleNearestExact2DBackward0", 2), ("UpsampleNearestExact3DBackward0", 3),
                  ("UpsampleBilinear2DAaBackward0", 2), ("UpsampleBicubic2DAaBackward0", 2),
                  ("UpsampleLanczos2DAaBackward0", 2)):
    for _i, _c in enumerate("dhw"[3 - _d:]):
        setattr(_node(_name), f"_saved_scales_{_c}", _scale_attr(_i))

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
    xp = NAMESPACES[type(input._data)]
    if input.dtype is D.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        return make(xp.interpolate_uint8(input._data, mode, out_size, scales, align_corners))   # no gradient
    if not input.dtype.is_floating_point:
        name = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}.get(mode, f"upsample_{mode}")
        raise NotImplementedError(f'"{name}{dim}d_out_frame" not implemented for '
                                  f'\'{_dtype_name(input)}\'')
    kind = "linear" if mode in ("linear", "bilinear", "trilinear") else mode
    # PyTorch 2.13's CPU kernels: nearest uses the scale_factor given; the 2-d kernel for small outputs (out height +
    # width <= 128, its channels-last kernel) computes indices in float32 and, mode 'nearest', copies a dim of the
    # same size and doubles one of twice the size whatever the scale; 1-d, 3-d and larger 2-d outputs go through
    # the generic kernel (indices in the input's precision). The backward always takes the small kernel's way.
    small = dim == 2 and sum(out_size) <= 128
    mats = xp.interpolate_matrices(input._data, kind, out_size, scales, align_corners, mode == "nearest" and small,
                                   not small)
    node = {"nearest": f"UpsampleNearest{dim}DBackward0", "nearest-exact": f"UpsampleNearestExact{dim}DBackward0",
            "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
            "bicubic": "UpsampleBicubic2DBackward0", "trilinear": "UpsampleTrilinear3DBackward0"}[mode]
    if mode in ("nearest", "nearest-exact"):
        bmats = xp.interpolate_matrices(input._data, kind, out_size, scales, align_corners, mode == "nearest")
        return _resample(input, mats, bmats, out_size, scales, node)
    # bfloat16: PyTorch's kernel (taps, not matrices; see dim_matrices), its 2-d bilinear one aside (not matched)
    low = ("interp", kind, None if scales is None else tuple(scales), bool(align_corners)) \
        if mode != "bilinear" else None
    return apply(dim_matrices_p, (input,), {"mats": mats, "low": low}, _node(node))


def _interpolate_aa(input, mode, out_size, scales, align_corners):
    """interpolate(antialias=True) for float (N, C, H, W): separable, one weight matrix per dim (linear, so the
    gradient is the transposed matrices), under PyTorch's Aa node names; uint8 images PyTorch's way, no gradient."""
    xp = NAMESPACES[type(input._data)]
    if input.dtype is D.uint8:
        return make(xp.interpolate_aa_uint8(input._data, mode, out_size, scales, align_corners))
    if input.dtype is D.bfloat16:   # PyTorch's antialiasing weights have no bfloat16 kernel
        raise NotImplementedError("\"compute_index_ranges_weights\" not implemented for 'BFloat16'")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"ember: interpolate(antialias=True) on {_dtype_name(input)} "
                                  "tensors is not implemented (float and uint8 only)")
    # the forward copies a dim whose size is unchanged; the backward applies the weights all the same
    mats, bmats = xp.interpolate_aa_matrices(input._data, mode, out_size, scales, align_corners)
    node = {"bilinear": "UpsampleBilinear2DAaBackward0", "bicubic": "UpsampleBicubic2DAaBackward0",
            "lanczos": "UpsampleLanczos2DAaBackward0"}[mode]
    return _resample(input, mats, bmats, out_size, scales, node)


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


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("fallback", "resample", why="its parameters are matrices for the input's (N, C, ...) layout")
_batching.by_name("fallback", "resample_backward", why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")
