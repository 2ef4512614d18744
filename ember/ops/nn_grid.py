"""The op table, torch.nn.functional: affine_grid and grid_sample.

Registered with ``submodule="nn.functional"`` (``ember.nn.functional.<name>``); kernels in
``ember/devices/cpu/nn_grid.py``. affine_grid is linear in theta (affine_grid_backward its transpose);
grid_sample's rules are written with ``xp`` (see below), so its gradients are differentiable again.
"""
from __future__ import annotations

from ..autograd import _batching

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor, make
from ..autograd._primitive import apply, defprim
from .._util import bf16_in_float32, check_tensor
from ._nn_spatial import _NN, _dtype_name, _size_str
from ._registry import graph, register


# ----- affine_grid -----------------------------------------------------------------------------------------------

affine_grid_p = defprim(
    "affine_grid",
    lambda xp, theta, size, align_corners: xp.affine_grid(theta, size, align_corners),
    node="AffineGridGeneratorBackward0",
    vjp=lambda xp, g, out, theta, size, align_corners: xp.affine_grid_backward(g, size, align_corners),
    jvp="linear")
affine_grid_backward_p = defprim(
    "affine_grid_backward",
    lambda xp, g, size, align_corners: xp.affine_grid_backward(g, size, align_corners),
    node="AffineGridGeneratorBackwardBackward0",
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
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    return _affine_grid(theta, size, align_corners)


def _affine_grid(theta: Tensor, size, align_corners: bool) -> Tensor:
    """affine_grid after its dtype check (torch.affine_grid_generator, ATen's, takes complex theta too)."""
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


# ----- grid_sample (bilinear, nearest, 2-d bicubic; zeros, border, reflection padding) ----------------------------
# The sampling position along each axis is a piecewise-affine function of the grid (unnormalise, then clip or
# reflect: ATen's GridSampler.h): pixel = A * grid + B with A, B constant on each piece. The device's
# grid_sample_plan reads the pieces off the grid's values (which input positions each output reads, in-bounds
# masks, A and B - floor(pixel)); it is not differentiable, and under graph_ns its constants come as Tensors. The
# rules rebuild the corner weights from the grid with xp arithmetic (so they are differentiable in the grid), and
# read and write the input through pool_gather / pool_scatter (differentiable too): the gradients are
# differentiable again, as PyTorch's GridSampler2DBackwardBackward0.

def _plan_twin(inp_shape, grid, mode, padding_mode, align_corners):
    """graph_ns's grid_sample_plan: the raw plan of the grid's data, its masks and maps as constant Tensors (the
    flat indices stay raw: they are parameters of pool_gather / pool_scatter)."""
    points, maps = NAMESPACES[type(grid._data)].grid_sample_plan(inp_shape, grid._data, mode, padding_mode,
                                                                 align_corners)
    return ([(idx, make(mask)) + tuple(rest) for idx, mask, *rest in points],
            [tuple(make(a) for a in m) for m in maps])


graph("grid_sample_plan", _plan_twin)


def _gs_weights(xp, grid, maps):
    """The fractional offsets w_k = pixel_k - floor(pixel_k) = A * grid_k + (B - floor) per grid component,
    differentiable in the grid (bilinear: the corner weights; bicubic: t, the cubic coefficients' argument)."""
    return [xp.getitem(grid, (Ellipsis, k)) * A + B for k, (A, B) in enumerate(maps)]


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


def _gs_bicubic(xp, inp, grid, padding_mode, align_corners, want):
    """The forward (``want`` 'out'), or the pieces of the grid gradient: d out / d tx and d out / d ty per
    channel ('grid')."""
    taps, maps = xp.grid_sample_plan(inp.shape, grid, "bicubic", padding_mode, align_corners)
    tx, ty = _gs_weights(xp, grid, maps)
    cx, cy = _cubic_coeffs(tx), _cubic_coeffs(ty)
    if want == "grid":
        dx, dy = _cubic_coeffs_grad(tx), _cubic_coeffs_grad(ty)
    rows, drows = [], []
    for j in range(4):
        row = drow = None
        for idx, mask, i, jj in taps[4 * j:4 * j + 4]:
            v = xp.pool_gather(inp, idx, 2) * mask[:, None]
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
    if mode == "nearest" and grid.dtype == D.bfloat16.np:
        # PyTorch computes a bfloat16 grid's source positions in bfloat16, every step rounded (the plan does too)
        idx, mask, _ = xp.grid_sample_plan(inp.shape, grid, mode, padding_mode, align_corners)[0][0]
        return xp.pool_gather(inp, idx, inp.ndim - 2) * mask[:, None]
    if mode == "bilinear" and grid.dtype == D.bfloat16.np and inp.dtype == D.bfloat16.np:
        # PyTorch's bilinear kernels compute in bfloat16 here, every product and sum rounded (bfloat16 arrays)
        corners, weights = xp.grid_sample_plan(inp.shape, grid, "bilinear_bf16", padding_mode, align_corners)
        out = None
        for (idx, mask, _), w in zip(corners, weights):
            term = xp.pool_gather(inp, idx, inp.ndim - 2) * mask[:, None] * w[:, None]
            out = term if out is None else out + term
        return out
    if mode == "bicubic" and grid.dtype == D.bfloat16.np and inp.dtype == D.bfloat16.np:
        taps, (cx, cy) = xp.grid_sample_plan(inp.shape, grid, "bicubic_bf16", padding_mode, align_corners)
        out = None
        for j in range(4):
            row = None
            for idx, mask, i, _ in taps[4 * j:4 * j + 4]:
                term = xp.unsqueeze(cx[i], 1) * (xp.pool_gather(inp, idx, 2) * mask[:, None])
                row = term if row is None else row + term
            term = xp.unsqueeze(cy[j], 1) * row
            out = term if out is None else out + term
        return out
    return _grid_sample_fwd32(xp, inp, grid, mode, padding_mode, align_corners)


@bf16_in_float32
def _grid_sample_fwd32(xp, inp, grid, mode, padding_mode, align_corners):
    if mode == "bicubic":
        return _gs_bicubic(xp, inp, grid, padding_mode, align_corners, "out")
    corners, maps = xp.grid_sample_plan(inp.shape, grid, mode, padding_mode, align_corners)
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
        taps, maps = xp.grid_sample_plan(shape, grid, mode, padding_mode, align_corners)
        tx, ty = _gs_weights(xp, grid, maps)
        cx, cy = _cubic_coeffs(tx), _cubic_coeffs(ty)
        res = None
        for idx, mask, i, j in taps:
            part = xp.pool_scatter(g * xp.unsqueeze(cx[i] * cy[j] * mask, 1), idx, shape, 2)
            res = part if res is None else res + part
        return res
    corners, maps = xp.grid_sample_plan(inp.shape, grid, mode, padding_mode, align_corners)
    sd = len(shape) - 2
    if mode == "nearest":   # piecewise constant: connected to the grid (zero derivative) as PyTorch's
        idx, mask, _ = corners[0]
        return xp.grad_link_zero(xp.pool_scatter(g * mask[:, None], idx, shape, sd), inp, grid,
                                 f"GridSampler{sd}DBackwardBackward0")
    ws = _gs_weights(xp, grid, maps)
    res = None
    for idx, mask, offs in corners:
        w = _gs_corner_weight(ws, offs) * mask
        part = xp.pool_scatter(g * xp.unsqueeze(w, 1), idx, shape, sd)
        res = part if res is None else res + part
    return res


def _grid_sample_vjp_grid(xp, g, out, inp, grid, mode, padding_mode, align_corners):
    if mode == "nearest":   # piecewise constant in the grid: zeros (connected as PyTorch's, no derivative)
        return xp.grad_link(xp.zeros_like(grid), inp, grid, f"GridSampler{inp.ndim - 2}DBackwardBackward0")
    if mode == "bicubic":
        dtx, dty, maps = _gs_bicubic(xp, inp, grid, padding_mode, align_corners, "grid")
        return xp.stack([xp.sum(g * dtx, 1) * maps[0][0], xp.sum(g * dty, 1) * maps[1][0]], -1)
    corners, maps = xp.grid_sample_plan(inp.shape, grid, mode, padding_mode, align_corners)
    sd = inp.ndim - 2
    ws = _gs_weights(xp, grid, maps)
    parts = [None] * sd
    for idx, mask, offs in corners:
        v = xp.pool_gather(inp, idx, sd) * mask[:, None]
        for k in range(sd):   # d(corner weight)/d(pixel_k): the other components' factors, signed
            wk = _gs_corner_weight(ws, offs, skip=k)
            p = v * xp.unsqueeze(wk if offs[k] else -wk, 1)
            parts[k] = p if parts[k] is None else parts[k] + p
    return xp.stack([xp.sum(g * parts[k], 1) * maps[k][0] for k in range(sd)], -1)


grid_sample_p = defprim(
    "grid_sampler_2d",
    lambda xp, inp, grid, mode, padding_mode, align_corners:
    _grid_sample_fwd(xp, inp, grid, mode, padding_mode, align_corners),
    node="GridSampler2DBackward0", vjp=(_grid_sample_vjp_input, _grid_sample_vjp_grid), saves=(0, 1),
    saved_names={0: "input", 1: "grid"})
grid_sample3d_p = defprim(
    "grid_sampler_3d",
    lambda xp, inp, grid, mode, padding_mode, align_corners:
    _grid_sample_fwd(xp, inp, grid, mode, padding_mode, align_corners),
    node="GridSampler3DBackward0", vjp=(_grid_sample_vjp_input, _grid_sample_vjp_grid), saves=(0, 1),
    saved_names={0: "input", 1: "grid"})
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
    if input.dtype is not grid.dtype:
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
    if not input.dtype.is_floating_point:
        if input.ndim == 5:
            raise NotImplementedError(f'"grid_sampler3d_cpu" not implemented for \'{_dtype_name(input)}\'')
        if input.dtype.is_complex:   # PyTorch's complex refusal comes from its kernel's dispatch
            raise NotImplementedError(f'"grid_sampler_2d_cpu_kernel_impl" not implemented for '
                                      f'\'{_dtype_name(input)}\'')
        raise RuntimeError(f'"grid_sampler_2d_cpu" not implemented for \'{_dtype_name(input)}\'')
    if input.ndim == 5:
        return apply(grid_sample3d_p, (input, grid), {"mode": mode, "padding_mode": padding_mode,
                                                       "align_corners": bool(align_corners)})
    return apply(grid_sample_p, (input, grid), {"mode": mode, "padding_mode": padding_mode,
                                                 "align_corners": bool(align_corners)})


# ----- vmap -------------------------------------------------------------------------------------------------


def _front(t, bd, size):
    return _batching._moved(t, bd) if bd is not None else t.unsqueeze(0).expand((size,) + tuple(t._data.shape))


def _grid_sample_rule(call, args, bdims, params, size):
    """grid_sample's input (N, C, ...) and grid (N, ...): both folded into N (B*N) and the result viewed back."""
    x, g = (_front(t, bd, size) for t, bd in zip(args, bdims))
    n = x._data.shape[1]
    out = call([x.reshape((size * n,) + tuple(x._data.shape[2:])), g.reshape((size * n,) + tuple(g._data.shape[2:]))],
               params)
    return out.reshape((size, n) + tuple(out._data.shape[1:])), 0


def _affine_grid_rule(call, args, bdims, params, size):
    """affine_grid's theta (N, 2|3, 3|4) folded into N, and the size's N with it."""
    theta = _front(args[0], bdims[0], size)
    n = theta._data.shape[1]
    new = dict(params)
    new["size"] = (size * n,) + tuple(params["size"][1:])
    out = call([theta.reshape((size * n,) + tuple(theta._data.shape[2:]))], new)
    return out.reshape((size, n) + tuple(out._data.shape[1:])), 0


_batching.by_name(_grid_sample_rule, "grid_sampler_2d", "grid_sampler_3d")
_batching.by_name(_affine_grid_rule, "affine_grid")
_batching.by_name("fallback", "affine_grid_backward", why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")
