"""The op table, torch.nn.functional: pooling (max, average, adaptive, power-average, fractional; max unpooling).

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_pool.py``.

``max_pool`` picks the input at indices found in the forward by a device kernel (its gradient scatters back
through ``pool_backward``, whose own gradient is ``pool_gather``); ``avg_pool`` is linear (one matrix per spatial
dim, made by a device kernel), its gradient ``avg_pool_backward`` is linear too and each is the other's VJP. As
PyTorch's, these backward ops take the input as well, with a zero derivative, so a second derivative reaches the
input. Integer inputs are pooled by device kernels directly, with no gradient.
"""
from __future__ import annotations

from ..autograd import _batching
from . import _vmap_nn

import math

from .._device import NAMESPACES
from .. import _dtype as D
from .._tensor import Tensor, make
from ..autograd._primitive import apply, apply_saving, defprim
from .._util import check_tensor
from ._nn_spatial import _NN, _dtype_name, _node, _ntuple, _size_str, not_differentiable
from ._registry import graph, register
from .elementwise import abs as _abs, relu as _relu, sign as _sign
from .complex import view_as_complex
from .random import rand

not_differentiable("max_pool_indices", "adaptive_max_indices", "fractional_max_indices", "avg_pool_matrices",
                   "avg_pool_integer", "adaptive_avg_matrices")


# ----- pooling primitives ---------------------------------------------------------------------------------

# max pooling: the input read at the indices of each window's maximum (found before, in the public function)
# As PyTorch's, the input gradients of max/avg pooling and reflection/replication padding take the input itself
# (max_pool2d_with_indices_backward(grad, self, ...)), so under create_graph the gradient is connected to the
# input, whose derivative there is zero: a second derivative with respect to the input is zeros, not "unused".
# The input is saved for that (PyTorch saves it too).
max_pool_p = defprim(
    "max_pool",
    lambda xp, x, indices, sd, unique: xp.pool_gather(x, indices, sd),
    node="MaxPool2DWithIndicesBackward0",
    vjp=lambda xp, g, out, x, indices, sd, unique: xp.pool_backward(g, x, indices, sd, unique),
    jvp="linear", saves=(0,))
pool_backward_p = defprim(
    "pool_backward",
    lambda xp, g, x, indices, sd, unique: xp.pool_scatter(g, indices, tuple(x.shape), sd, unique),
    node="MaxPool2DWithIndicesBackwardBackward0",
    vjp=(lambda xp, gg, out, g, x, indices, sd, unique: xp.pool_gather(gg, indices, sd, unique),
         lambda xp, gg, out, g, x, indices, sd, unique: xp.zeros_like(gg)),
    jvp=(lambda xp, t, out, g, x, indices, sd, unique: xp.pool_scatter(t, indices, tuple(x.shape), sd, unique),
         lambda xp, t, out, g, x, indices, sd, unique: None))
graph("pool_backward", lambda g, x, indices, sd, unique=False: apply(
    pool_backward_p, (g, x), {"indices": indices, "sd": sd, "unique": unique}))
pool_scatter_p = defprim(
    "pool_scatter",
    lambda xp, g, indices, shape, sd, unique: xp.pool_scatter(g, indices, shape, sd, unique),
    node="MaxPool2DWithIndicesBackwardBackward0",
    vjp=lambda xp, g, out, gy, indices, shape, sd, unique: xp.pool_gather(g, indices, sd, unique),
    jvp="linear")
graph("pool_gather", lambda x, indices, sd, unique=False: apply(
    max_pool_p, (x,), {"indices": indices, "sd": sd, "unique": unique}))
graph("pool_scatter", lambda g, indices, shape, sd, unique=False: apply(
    pool_scatter_p, (g,), {"indices": indices, "shape": tuple(shape), "sd": sd, "unique": unique}))

# separable linear pooling (avg_pool, adaptive_avg_pool): one matrix per spatial dim; the VJP is the same
# op with the transposed matrices
dim_matrices_p = defprim(
    "dim_matrices",
    lambda xp, x, mats, low=None: xp.dim_matrices(x, mats, low),
    node="AvgPool2DBackward0", vjp=lambda xp, g, out, x, mats, low=None: xp.dim_matrices(g, tuple(a.T for a in mats)),
    jvp="linear")
graph("dim_matrices", lambda x, mats: apply(dim_matrices_p, (x,), {"mats": tuple(mats)}))
# average pooling: the same forward, the gradient connected to the input as PyTorch's (see max_pool_p)
avg_pool_p = defprim(
    "avg_pool",
    lambda xp, x, mats, low="once": xp.dim_matrices(x, mats, low),
    node="AvgPool2DBackward0", vjp=lambda xp, g, out, x, mats, low="once": xp.avg_pool_backward(g, x, mats),
    jvp="linear", saves=(0,))
avg_pool_backward_p = defprim(
    "avg_pool_backward",
    lambda xp, g, x, mats: xp.dim_matrices(g, tuple(a.T for a in mats)),
    node="AvgPool2DBackwardBackward0", vjp=(lambda xp, gg, out, g, x, mats: xp.dim_matrices(gg, mats),
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
    if input.dtype is D.bool:
        raise RuntimeError(f'"max_pool{d}d" not implemented for \'Bool\'')
    if input.dtype.is_complex:
        raise NotImplementedError(f'"max_pool{d}d" not implemented for \'{_dtype_name(input)}\'')
    idx = NAMESPACES[type(x)].max_pool_indices(x, kernel, stride, pads, dil, out_size)
    if not batched:
        idx = idx[0]
    # non-overlapping windows: no index repeats, the gradient is a plain assignment
    unique = all(s >= dl * (k - 1) + 1 for s, dl, k in zip(stride, dil, kernel))
    # the indices returned are saved by the node (as PyTorch's): a change to them in place is an error at backward
    indices = make(idx) if return_indices else None
    out = apply_saving(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": unique},
                       _POOL_NODES[f"MaxPool{max(d, 2)}DWithIndicesBackward0"], (indices,) if return_indices else ())
    return (out, indices) if return_indices else out


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
    if not input.dtype.is_floating_point and not return_indices:
        raise NotImplementedError(f'"max_pool1d_impl" not implemented for \'{_dtype_name(input)}\'')
    res = _max_pool("max_pool1d", 2, input.unsqueeze(-2), _as_2d(kernel_size, 1), _as_2d(stride, 1),
                    _as_2d(padding, 0), _as_2d(dilation, 1), ceil_mode, True, invalid_1d=not return_indices)
    out, ind = res[0].squeeze(-2), res[1].squeeze(-2)
    return (out, ind) if return_indices else out


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
    xp = NAMESPACES[type(input._data)]
    geometry = (size, out_size, kernel, stride, pad, count_include_pad, divisor_override)
    if d == 3 and input.dtype is D.bfloat16:   # PyTorch's avg_pool3d kernel has no bfloat16
        raise NotImplementedError("\"avg_pool3d_out_frame\" not implemented for 'BFloat16'")
    if not input.dtype.is_floating_point:
        if input.dtype is D.bool:
            raise RuntimeError(f'"avg_pool{d}d" not implemented for \'Bool\'')
        if input.dtype.is_complex:
            kernel = "avg_pool2d" if d == 2 else "avg_pool3d_out_frame"
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(input)}\'')
        return make(xp.avg_pool_integer(input._data, *geometry))   # integer pooling: no gradient
    mats = xp.avg_pool_matrices(input._data, *geometry)
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
    # an output of ones is a mean, which PyTorch computes for complex inputs too
    if not input.dtype.is_floating_point and not (input.dtype.is_complex and all(L == 1 for L in out_size)):
        kernel = "adaptive_avg_pool2d" if d == 2 else "adaptive_avg_pool3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(input)}\'')
    if all(L == 1 for L in out_size):   # PyTorch computes this case as a mean (MeanBackward1)
        return input.mean(tuple(range(-d, 0)), keepdim=True)
    mats = NAMESPACES[type(input._data)].adaptive_avg_matrices(input._data, out_size)
    # (PyTorch's 3-d kernel sums and divides in bfloat16 itself, its 2-d one in float32)
    return apply(avg_pool_p, (input,), {"mats": mats, "low": "steps" if d == 3 else "each"},
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
    if not input.dtype.is_floating_point:
        kernel = "adaptive_max_pool2d" if d == 2 else "adaptive_max_pool3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(input)}\'')
    idx = NAMESPACES[type(x)].adaptive_max_indices(x, out_size)
    if not batched:
        idx = idx[0]
    indices = make(idx) if return_indices else None
    out = apply_saving(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": False},
                       _POOL_NODES[f"AdaptiveMaxPool{max(d, 2)}DBackward0"], (indices,) if return_indices else ())
    return (out, indices) if return_indices else out


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
    return (_sign(out) * _relu(_abs(out))).mul(kw * kh).pow(1.0 / norm_type)


max_unpool_p = defprim(
    "max_unpool",
    lambda xp, x, indices, shape, sd: xp.pool_scatter(x, indices, shape, sd, True),
    node="MaxUnpool2DBackward0", vjp=lambda xp, g, out, x, indices, shape, sd: xp.pool_gather(g, indices, sd),
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
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_dtype_name(indices)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_size_str(input.shape)}) but got indices tensor with shape: "
                           f"{_size_str(indices.shape)}")
    k = len(size)
    if input.dtype.is_complex:
        raise NotImplementedError(f'"max_unpool{k}d" not implemented for \'{_dtype_name(input)}\'')
    idx = indices._data
    total = math.prod(size)
    xp = NAMESPACES[type(idx)]
    if not xp.in_range(idx, 0, total):
        top = int(xp.amax(idx))
        bad = top if top >= total else int(xp.amin(idx))
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    shape = tuple(input.shape[:input.ndim - k]) + tuple(size)
    return apply_saving(max_unpool_p, (input,), {"indices": idx, "shape": shape, "sd": k}, _node(node), (indices,))


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
    return (_sign(out) * _relu(_abs(out))).mul(kd * kw * kh).pow(1.0 / norm_type)


# ----- fractional max pooling ------------------------------------------------------------------------------------
# Windows of a fixed size at pseudo-random starts (one uniform sample per plane and dim, drawn as PyTorch's
# F draws them: torch.rand(N, C, d, dtype=input.dtype), so the same seed gives PyTorch's windows). The result is
# max pooling at the indices found, so the gradient is max pooling's scatter, recorded under PyTorch's node.

_FRACTIONAL_NODES = {d: _node(f"FractionalMaxPool{d}DBackward0") for d in (2, 3)}
_DIM_WORDS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _fractional(d, input, kernel_size, output_size, output_ratio, _random_samples):
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
        shape = (1 if input.ndim == d + 1 else input.shape[0], input.shape[-d - 1], d)
        if input.dtype.is_complex:   # PyTorch's complex uniform_: real and imaginary parts drawn interleaved
            samples = view_as_complex(rand(*shape, 2, dtype=input.dtype.to_real()))
        else:
            samples = rand(*shape, dtype=input.dtype)
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
    if samples.dtype is not input.dtype:
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
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{op}_out_frame" not implemented for \'{_dtype_name(input)}\'')
    x = input._data if batched else input._data[None]
    order = (1, 0) if d == 2 else (0, 1, 2)
    idx = NAMESPACES[type(x)].fractional_max_indices(x, kernel, size, samples._data, order)
    if not batched:
        idx = idx[0]
    indices = make(idx)
    out = apply_saving(max_pool_p, (input,), {"indices": idx, "sd": d, "unique": False}, _FRACTIONAL_NODES[d],
                       (indices,))
    return out, indices


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


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("fallback", "max_pool", "max_unpool", "avg_pool", "dim_matrices",
                  why="its parameters are index arrays or matrices for the input's (N, C, ...) layout (the public pooling "
                      "functions have whole-function rules below, which fold the vmap batch into N)")
_batching.by_name("fallback", "pool_backward", "pool_scatter", "avg_pool_backward", why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")

# whole-function rules (the wrappers find each window's maximum, or build the pooling matrices, from the input):
# the vmap batch folded into N (ember/ops/_vmap_nn.py)
for _d in (1, 2, 3):
    _vmap_nn.public_rule(_vmap_nn.folding(_vmap_nn.spatial(_d)), f"max_pool{_d}d", f"max_pool{_d}d_with_indices",
                         f"avg_pool{_d}d", f"adaptive_avg_pool{_d}d", f"adaptive_max_pool{_d}d",
                         f"adaptive_max_pool{_d}d_with_indices", f"lp_pool{_d}d")



def _unpool_rule(d: int):
    """max_unpool: input and indices folded alike (an output_size with N and C: its spatial part)."""
    body = _vmap_nn.folding(_vmap_nn.spatial(d), tensors=("input", "indices"))

    def rule(orig, name, bound, level, size):
        out = bound.arguments["output_size"]
        if out is not None and len(out) == d + 2:
            bound.arguments["output_size"] = tuple(out)[2:]
        return body(orig, name, bound, level, size)
    return rule


for _d in (1, 2, 3):
    _vmap_nn.public_rule(_unpool_rule(_d), f"max_unpool{_d}d")
