"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, expand, slicing and splitting, joining,
flips and rolls, repeats, triangles and diagonals, meshgrid/combinations, clone, casts.

View ops (reshape when it can, permute, expand, slice, select, diagonal, unfold) return tensors that share
memory and the version counter with their input; their forwards return NumPy views, so that
``view_replay`` can re-run them on the base. Everything else returns new memory, as in PyTorch.
"""
from __future__ import annotations

import itertools
import math
import warnings

from . import creation as C
from .. import _dtype as D
from .._util import broadcast_shape as _broadcast_shape
from .._dtype import (_CL_ORDER, _is_contiguous_as, channels_last, channels_last_3d, contiguous_format,  # noqa: F401
                      memory_format, memory_format_type, preserve_format)
from .._device import NAMESPACES, check_device, move
from .._device import device as _device_type
from .._state import track_tangent
from .._tensor import Size, Tensor, _new, make, wrap_dim
from ..autograd import grad_mode as _gm
from ..autograd.graph import NODE_OBSERVERS, Node, _seq, node_class
from ..autograd._primitive import PrimNode, apply, batch_rule, defprim, graph_ns, install_saved_attrs
from ._registry import graph, method, register
from ..autograd import _batching
from . import _batch_public as _bp
from ._schema import schema
from .elementwise import is_int as _is_int
from ..autograd._views import apply_inplace, check_inplace, relayout
from .._util import check_tensor, holds, no_out

# ----- primitives --------------------------------------------------------------------------------

reshape_p = defprim("reshape", lambda xp, a, shape: xp.reshape(a, shape),
                    node="ViewBackward0",
                    vjp=lambda xp, g, out, a, shape: xp.reshape(g, a.shape), jvp="linear", is_view=True)

permute_p = defprim("permute", lambda xp, a, dims: xp.permute(a, dims),
                    vjp=lambda xp, g, out, a, dims: xp.permute(g, _inverse(dims)), jvp="linear", is_view=True)

expand_p = defprim("expand", lambda xp, a, shape: xp.expand(a, shape),
                   vjp=lambda xp, g, out, a, shape: xp.sum_to(g, a.shape), jvp="linear", is_view=True)

# narrow, tensor_split, split's pieces: a range along one dim (SliceBackward0); select: one index (a dim less).
slice_p = defprim("slice",
                  lambda xp, a, dim, start, stop, step: xp.slice_dim(a, dim, start, stop, step),
                  vjp=lambda xp, g, out, a, dim, start, stop, step: xp.slice_scatter_zeros(g, dim, start, stop, step,
                                                                                           a.shape),
                  jvp="linear", is_view=True)
slice_scatter_p = defprim("slice_scatter_zeros",
                          lambda xp, g, dim, start, stop, step, shape: xp.slice_scatter_zeros(g, dim, start, stop,
                                                                                              step, shape),
                          node="SliceBackwardBackward0",
                          vjp=lambda xp, g, out, a, dim, start, stop, step, shape: xp.slice_dim(g, dim, start, stop,
                                                                                                step),
                          jvp="linear")
select_p = defprim("select", lambda xp, a, dim, index: xp.select_dim(a, dim, index),
                   vjp=lambda xp, g, out, a, dim, index: xp.select_scatter_zeros(g, dim, index, a.shape),
                   jvp="linear", is_view=True)
select_scatter_p = defprim("select_scatter_zeros",
                           lambda xp, g, dim, index, shape: xp.select_scatter_zeros(g, dim, index, shape),
                           node="SelectBackwardBackward0",
                           vjp=lambda xp, g, out, a, dim, index, shape: xp.select_dim(g, dim, index), jvp="linear")

diagonal_p = defprim("diagonal",
                     lambda xp, a, offset, dim1, dim2: xp.diagonal(a, offset, dim1, dim2),
                     vjp=lambda xp, g, out, a, offset, dim1, dim2: xp.diag_scatter_zeros(g, offset, dim1, dim2,
                                                                                         a.shape),
                     jvp="linear", is_view=True)
# diag(2-d) copies the diagonal (PyTorch: diagonal_copy, whose node carries the _copy suffix).
diagonal_copy_p = defprim("diagonal_copy",
                          lambda xp, a, offset, dim1, dim2: xp.clone(xp.diagonal(a, offset, dim1, dim2)),
                          node="DiagonalBackward0_copy", vjp=diagonal_p.vjps, jvp="linear")
diag_embed_p = defprim("diag_embed",
                       lambda xp, a, offset, dim1, dim2, shape: xp.diag_scatter_zeros(a, offset, dim1, dim2, shape),
                       vjp=lambda xp, g, out, a, offset, dim1, dim2, shape: xp.diagonal(g, offset, dim1, dim2),
                       jvp="linear")
trace_p = defprim("trace", lambda xp, a: xp.trace(a),
                  vjp=lambda xp, g, out, a: xp.diag_scatter_zeros(xp.expand(g, (min(a.shape),)), 0, 0, 1, a.shape),
                  jvp="linear")

unfold_p = defprim("unfold",
                   lambda xp, a, dimension, size, step: xp.unfold(a, dimension, size, step),
                   vjp=lambda xp, g, out, a, dimension, size, step: xp.unfold_backward(g, a.shape, dimension, size,
                                                                                       step),
                   jvp="linear", is_view=True)
unfold_backward_p = defprim("unfold_backward",
                            lambda xp, g, shape, dimension, size, step: xp.unfold_backward(g, shape, dimension, size,
                                                                                           step),
                            vjp=lambda xp, g, out, a, shape, dimension, size, step: xp.unfold(g, dimension, size, step),
                            jvp="linear")

flip_p = defprim("flip", lambda xp, a, dims: xp.flip(a, dims),
                 vjp=lambda xp, g, out, a, dims: xp.flip(g, dims), jvp="linear")
roll_p = defprim("roll", lambda xp, a, shifts, dims: xp.roll(a, shifts, dims),
                 vjp=lambda xp, g, out, a, shifts, dims: xp.roll(g, _negate(shifts), dims), jvp="linear")
rot90_p = defprim("rot90", lambda xp, a, k, dims: xp.rot90(a, k, dims),
                  vjp=lambda xp, g, out, a, k, dims: xp.rot90(g, -k, dims), jvp="linear")
tril_p = defprim("tril", lambda xp, a, diagonal: xp.tril(a, diagonal),
                 vjp=lambda xp, g, out, a, diagonal: xp.tril(g, diagonal), jvp="linear", batch=True)
triu_p = defprim("triu", lambda xp, a, diagonal: xp.triu(a, diagonal),
                 vjp=lambda xp, g, out, a, diagonal: xp.triu(g, diagonal), jvp="linear", batch=True)


def _repeat_vjp(xp, g, out, a, sizes):
    # out is a grid of copies of a (padded with leading 1-dims): split each dim into (copies, size), sum copies
    padded = (1,) * (len(sizes) - a.ndim) + tuple(a.shape)
    g = xp.reshape(g, tuple(itertools.chain.from_iterable(zip(sizes, padded))))
    return xp.reshape(xp.sum(g, tuple(range(0, 2 * len(sizes), 2)), False), a.shape)


repeat_p = defprim("repeat", lambda xp, a, sizes: xp.repeat(a, sizes), vjp=_repeat_vjp,
                   jvp="linear")

# index_select along one dim (repeat_interleave with a tensor of repeats, combinations)
gather_rows_p = defprim("gather_rows", lambda xp, a, dim, index: xp.gather_rows(a, dim, index),
                        node="IndexSelectBackward0",
                        vjp=lambda xp, g, out, a, dim, index: xp.scatter_rows_zeros(g, dim, index, a.shape),
                        jvp="linear")
scatter_rows_p = defprim("scatter_rows_zeros",
                         lambda xp, g, dim, index, shape: xp.scatter_rows_zeros(g, dim, index, shape),
                         node="IndexAddBackward0",
                         vjp=lambda xp, g, out, a, dim, index, shape: xp.gather_rows(g, dim, index), jvp="linear")

clone_p = defprim("clone", lambda xp, a: xp.clone(a), vjp=lambda xp, g, out, a: g, jvp="linear", batch=True)

# The engine casts every gradient back to its input's dtype, so a cast's own rules are identities. A copy to
# another device (``to('strict')``, params ``device`` and ``source``) is the same op, as in PyTorch; its gradient
# is copied back.
def _moved(g, device: str, source: str):
    """``g`` copied from device ``source`` to ``device``: a raw array, or a Tensor (differentiably)."""
    if isinstance(g, Tensor):
        return apply(cast_p, (g,), {"dtype": g._data.dtype, "device": device, "source": source})
    return move(g, device)


cast_p = defprim("to",
                 lambda xp, a, dtype, device=None, source=None:
                     xp.cast(a, dtype) if device is None else move(xp.cast(a, dtype), device),
                 node="ToCopyBackward0", vjp=lambda xp, g, out, a, dtype, device=None, source=None:
                     g if device is None else _moved(g, source, device), jvp="linear", batch=True)


def _inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def _negate(shifts):
    return tuple(-s for s in shifts) if isinstance(shifts, tuple) else -shifts


def _cat_vjp(i):
    def rule(xp, g, out, *inputs, dim, bounds, legacy):
        gi = xp.slice_dim(g, dim, bounds[i], bounds[i + 1], 1)
        return xp.reshape(gi, (0,)) if i in legacy else gi   # a skipped legacy (0,) input
    return rule


def _stack_vjp(i):
    return lambda xp, g, out, *inputs, dim: xp.select_dim(g, dim, i)


def _node(name):
    return node_class(name, PrimNode)


# ----- split / chunk / unbind: one node, several outputs ------------------------------------------

class _MultiViewNode(Node):
    """The one backward node of split/chunk/unbind (PyTorch's SplitBackward0, UnbindBackward0): the pieces'
    gradients, zeros for the pieces that got none, joined back along ``dim``."""

    __slots__ = ("_dim", "_bounds", "_shape", "_dtype")

    @property
    def num_outputs(self) -> int:
        return len(self._bounds) - 1 if self._bounds is not None else self._shape[self._dim]

    def apply(self, grads, create_graph, needed):
        n = self.num_outputs
        grads = list(grads) + [None] * (n - len(grads))
        if create_graph:
            return [graph_ns.split_backward(grads, self._dim, self._bounds, self._shape, self._dtype)]
        xp = NAMESPACES[type(next(g for g in grads if g is not None))]
        return [xp.split_backward(grads, self._dim, self._bounds, self._shape, self._dtype)]


_MULTI = {name: type(name, (_MultiViewNode,), {"__slots__": ()})
          for name in ("SplitBackward0", "SplitWithSizesBackward0", "UnbindBackward0")}


def _split_backward_graph(grads, dim, bounds, shape, dtype):
    like = next(g for g in grads if g is not None)   # the missing gradients are zeros on its device

    def zeros(s):
        return C.zeros(s, dtype=D.from_numpy_dtype(dtype), device=like.device)
    if bounds is None:
        piece = shape[:dim] + shape[dim + 1:]
        return stack([g if g is not None else zeros(piece) for g in grads], dim)
    parts = []
    for i, g in enumerate(grads):
        parts.append(g if g is not None else zeros(shape[:dim] + (bounds[i + 1] - bounds[i],) + shape[dim + 1:]))
    return cat(parts, dim)


graph("split_backward", _split_backward_graph)


def _multi_view(input: Tensor, prim, params: list, node_name: str, dim: int, bounds) -> tuple:
    """The pieces (views of ``input``), sharing one backward node as PyTorch's multi-output view ops do."""
    pieces = tuple(apply(prim, (input,), p) for p in params)
    if pieces and pieces[0].grad_fn is not None:
        node = _new(_MULTI[node_name])
        node.next_functions = pieces[0].grad_fn.next_functions
        node._seq = next(_seq)
        node._dim, node._bounds = dim, bounds
        node._shape, node._dtype = input._data.shape, input._data.dtype
        op = node_name[:-len("Backward0")]
        for i, p in enumerate(pieces):
            p.grad_fn, p._output_nr = node, i
            # PyTorch refuses in-place ops on these views while recording ("Output 0 of Split is a view and is
            # being modified inplace..."); ember/autograd/_views.check_inplace reads this mark.
            p._multi_view_op = op
        for observe in NODE_OBSERVERS:   # ember.viz.record(): the node's outputs
            observe(node, pieces)
    return pieces


# ----- argument parsing ----------------------------------------------------------------------------

def _int(v, op: str, arg: str) -> int:
    if isinstance(v, Tensor) and v._data.ndim == 0 and v._data.dtype.kind in "iu":
        return int(v._data)
    if not _is_int(v):
        raise TypeError(f"{op}(): argument '{arg}' must be int, not {type(v).__name__}")
    return int(v)


def _int_list(v, op: str, arg: str) -> tuple:
    """An int or a sequence of ints (PyTorch's IntArrayRef) as a tuple."""
    if isinstance(v, (tuple, list)):
        return tuple(_int(x, op, arg) for x in v)
    if isinstance(v, Tensor) and v._data.ndim == 1 and v._data.dtype.kind in "iu":
        return tuple(int(x) for x in v._data)
    return (_int(v, op, arg),)


def _shape_arg(shape, op="view", arg="size"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if isinstance(s, Tensor) and s._data.ndim == 0 and s._data.dtype.kind in "iu":
            s = s.item()
        if not _is_int(s):
            raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, but found element of type "
                            f"{type(s).__name__}")
        out.append(int(s))
    return tuple(out)


def _viewable(shape: tuple, strides: tuple, new: tuple) -> bool:
    """Whether an array of ``shape`` and ``strides`` can be viewed as ``new`` without a copy (PyTorch's
    computeStride: each run of dims contiguous with each other must be split or merged whole)."""
    view_d = len(new) - 1
    base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                base = strides[d - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


def _infer_shape(shape, numel):
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               f"unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return tuple(numel // known if s == -1 else s for s in shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _dim_kw(dim, axis, op, default=0):
    """``dim`` or its NumPy-style alias ``axis`` (PyTorch accepts either)."""
    if axis is not None:
        if dim is not None and dim is not default:
            raise TypeError(f"{op}() got multiple values for argument 'dim'")
        return axis
    return default if dim is None else dim


# ----- reshape, view, flatten ------------------------------------------------------------------------

@register(method=True, graph=True)
def reshape(input: Tensor, *shape) -> Tensor:
    """``input`` with the given shape (a view when the memory layout allows, else a copy)."""
    check_tensor(input, "reshape")   # no schema: its wrapper would forward *shape (a tuple more than this call)
    if not shape:
        raise TypeError('reshape() missing 1 required positional arguments: "shape"')
    shape = _infer_shape(_shape_arg(shape, "reshape", "shape"), input._data.size)
    node = None if input._data.flags.c_contiguous else _node("UnsafeViewBackward0")
    return apply(reshape_p, (input,), {"shape": shape}, node)


def _view_dtype(input: Tensor, dtype: D.dtype) -> Tensor:
    # A reinterpretation of the bits: PyTorch records no history (the result does not require grad).
    a = input._data
    old, new = a.dtype.itemsize, dtype.itemsize
    src, dst = D.type_word(a.dtype), D.type_word(dtype.np)
    if old != new:
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {src} as {dst} (different element sizes)")
        if a.strides[-1] != a.itemsize and a.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {src} as {dst} (different element sizes), but "
                               f"got {a.strides[-1] // a.itemsize}")
        if new > old and (a.shape[-1] * old) % new:
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} to view {src} as {dst} (different "
                               f"element sizes), but got {a.shape[-1]}")
    t = make(a.view(dtype.np))
    t._vc = input._vc
    return t


@register(module=False, method=True)
def view(input: Tensor, *shape, size=None) -> Tensor:
    """A view of ``input`` with another shape (``view(dtype)``: the same bits as another dtype)."""
    if size is not None:
        if shape:
            raise TypeError("view() got multiple values for argument 'size'")
        shape = (size,)
    if not shape:
        raise TypeError("view() received an invalid combination of arguments - got (), but expected one of:\n"
                        " * (torch.dtype dtype)\n * (tuple of ints size)")
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return _view_dtype(input, shape[0])
    shape = _infer_shape(_shape_arg(shape, "view"), input._data.size)
    if not input._data.flags.c_contiguous and input._data.size > 1:
        if not _viewable(input._data.shape, input._data.strides, shape):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return apply(reshape_p, (input,), {"shape": shape})


@register(module=False, method=True)
@schema("view_as(Tensor input, Tensor other)")
def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other._data.shape)


@register(module=False, method=True)
@schema("reshape_as(Tensor input, Tensor other)")
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other._data.shape)


@register(method=True)
@schema("flatten(Tensor input, int start_dim, int end_dim)")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims ``start_dim`` to ``end_dim`` merged into one."""
    nd = input._data.ndim
    s, e = wrap_dim(start_dim, nd, "flatten"), wrap_dim(end_dim, nd, "flatten")
    if nd == 0:
        return reshape(input, 1)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (-1,) + shp[e + 1:])


@register(method=True)
@schema("unflatten(Tensor input, int dim, sizes)")
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    nd = input._data.ndim
    d = wrap_dim(dim, nd, "unflatten")
    sizes = _shape_arg((sizes,), "unflatten", "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input._data.shape[d] if nd else 1
    known = math.prod(s for s in sizes if s != -1)
    if sizes.count(-1) > 1 or (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({n}) in the input tensor")
    shp = input._data.shape
    return view(input, shp[:d] + sizes + shp[d + 1:])


@register(method=True)
@schema("ravel(Tensor input)")
def ravel(input: Tensor) -> Tensor:
    """``input`` as 1-d (a view when contiguous, else a copy)."""
    return apply(reshape_p, (input,), {"shape": (input._data.size,)})


# ----- squeeze, unsqueeze ----------------------------------------------------------------------------

def _squeeze_like(input, shape, name):
    return apply(reshape_p, (input,), {"shape": shape}, _node(name))


_ALL = object()   # squeeze's default: every size-1 dim (an explicit dim=None is PyTorch's TypeError)


@register(method=True, graph=True)
@schema("squeeze(Tensor input, dim, *, axis)")
def squeeze(input: Tensor, dim=_ALL, *, axis=_ALL) -> Tensor:
    """``input`` without its size-1 dims (or those of ``dim``, an int or a tuple)."""
    if axis is not _ALL:
        if dim is not _ALL:
            raise TypeError("squeeze() got multiple values for argument 'dim'")
        dim = axis
    shp = input._data.shape
    if dim is _ALL:
        return _squeeze_like(input, tuple(s for s in shp if s != 1), "SqueezeBackward0")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (_int(dim, "squeeze", "dim"),)
    dims = {wrap_dim(d._data.item() if isinstance(d, Tensor) and d._data.ndim == 0 and d._data.dtype.kind in "iu"
                     else d, len(shp), "squeeze") for d in dims}
    new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    return _squeeze_like(input, new, "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else
                         "SqueezeBackward2")


@register(method=True, graph=True)
@schema("unsqueeze(Tensor input, int? dim, *, axis)")
def unsqueeze(input: Tensor, dim: int = None, *, axis=None) -> Tensor:
    """``input`` with a size-1 dim inserted at ``dim``."""
    if dim is None and axis is None:
        raise TypeError('unsqueeze() missing 1 required positional arguments: "dim"')
    dim = _dim_kw(dim, axis, "unsqueeze", None)
    shp = input._data.shape
    d = wrap_dim(dim, len(shp) + 1, "unsqueeze")
    return _squeeze_like(input, shp[:d] + (1,) + shp[d:], "UnsqueezeBackward0")


# ----- permute, transpose, movedim ---------------------------------------------------------------------

@register(method=True)
def permute(input: Tensor, *dims) -> Tensor:
    """``input`` with its dims reordered."""
    check_tensor(input, "permute")   # no schema: its wrapper would forward *dims (a tuple more than this call)
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims, "permute", "dims")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
                           f"to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _permute(input, dims, None)


def _permute(input, dims, node):
    return apply(permute_p, (input,), {"dims": dims}, node)


@register(method=True, aliases=("swapaxes", "swapdims"), graph=True)
@schema("transpose(Tensor input, int dim0, int dim1)")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``input`` with dims ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    if nd == 0:
        wrap_dim(dim0, 0, "transpose"), wrap_dim(dim1, 0, "transpose")
        return _permute(input, (), _node("TransposeBackward0"))
    d0, d1 = wrap_dim(dim0, nd, "transpose"), wrap_dim(dim1, nd, "transpose")
    dims = list(range(nd))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute(input, tuple(dims), _node("TransposeBackward0"))


@register(method=True, aliases=("moveaxis",))
@schema("movedim(Tensor input, source, destination)")
def movedim(input: Tensor, source, destination) -> Tensor:
    """Dims ``source`` moved to positions ``destination`` (ints or sequences), the others keeping their order."""
    nd = input._data.ndim
    seq = isinstance(source, (tuple, list))
    if seq != isinstance(destination, (tuple, list)):
        raise TypeError(f"movedim() received an invalid combination of arguments - got (Tensor, "
                        f"{type(source).__name__}, {type(destination).__name__}), but expected one of: "
                        f"(Tensor input, int source, int destination) or (Tensor input, tuple of ints source, "
                        f"tuple of ints destination)")
    src = tuple(_int(d, "movedim", "source") for d in source) if seq else (_int(source, "movedim", "source"),)
    dst = (tuple(_int(d, "movedim", "destination") for d in destination) if seq else
           (_int(destination, "movedim", "destination"),))
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    src = tuple(wrap_dim(d, nd, "movedim") for d in src)
    dst = tuple(wrap_dim(d, nd, "movedim") for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source) if isinstance(source, (list, tuple)) else [source]})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` "
                           f"({list(destination) if isinstance(destination, (list, tuple)) else [destination]})")
    if nd == 0:
        return apply(reshape_p, (input,), {"shape": ()}, _node("AliasBackward0"))
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = tuple(o if o is not None else next(rest) for o in order)
    return _permute(input, order, None)


@register(method=True)
@schema("t(Tensor input)")
def t(input: Tensor) -> Tensor:
    """A matrix transposed (0-d and 1-d tensors as they are)."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _permute(input, tuple(range(nd))[::-1], _node("TBackward0"))


def _T(self):
    nd = self._data.ndim
    if nd not in (0, 2):
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                      "deprecated and it will throw an error in a future release. Consider `x.mT` to transpose "
                      "batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                      "dimensions of a tensor.", UserWarning, stacklevel=2)
    return _permute(self, tuple(range(nd))[::-1], None)


def _mT(self):
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


def _conj_if_complex(t):
    if t._data.dtype.kind != "c":
        return t
    return graph_ns.conj(t)   # complex.py's conj (which imports this module: reached through the namespace)


def _mH(self):
    """The conjugate transpose of the last two dims (the transpose of a real tensor)."""
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return _conj_if_complex(transpose(self, -2, -1))


def _H(self):
    """The conjugate transpose of a matrix (the transpose of a real one)."""
    nd = self._data.ndim
    if nd not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if nd > 2 else ""))
    if nd == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return _conj_if_complex(self)
    return _conj_if_complex(transpose(self, 0, 1))   # PyTorch's TransposeBackward0


# ----- in-place view ops: t_, transpose_, squeeze_, unsqueeze_ -------------------------------------------

def _inplace_view(self: Tensor, fn, node_name: str, *args, inverse=None) -> Tensor:
    """``self`` becomes ``fn(self, *args)`` (a view of itself with new sizes): PyTorch's in-place view ops.
    ``inverse``: the view step from the new layout back to the old one (default: a permute's inverse, or a
    reshape)."""
    if type(self) is _batching.BatchedTensor:   # inside vmap: self becomes the batched view
        r = fn(self, *args)
        self._phys, self._bdim, self._data = r._phys, r._bdim, r._data
        return self
    recording = _gm._state.enabled and self._requires_grad
    check_inplace(self, recording)
    old_shape = tuple(self._data.shape)
    r = fn(self, *args)
    self._data = r._data
    self._vc[0] += 1
    if self._base is None and r._base is self:
        # the views made of self so far reach it through the inverse of this step first
        prim, params = r._view_steps[-1]
        relayout(self, inverse if inverse is not None else (permute_p, {"dims": _inverse(params["dims"])})
                 if prim is permute_p else (reshape_p, {"shape": old_shape}))
    if self._base is not None and r._base is not None:
        self._view_steps, self._view_v = r._view_steps, self._vc[0]
    if r.grad_fn is not None:
        cls = r.grad_fn.__class__ = _node(node_name)   # PyTorch names the in-place variant's node apart (TBackward1)
        install_saved_attrs(r.grad_fn._prim, cls)   # its grad_fn._saved_* properties
        self.grad_fn, self._output_nr = r.grad_fn, 0
    self._fw_grad = r._fw_grad
    if r._fw_grad is not None:
        track_tangent(self)
    return self


@register(module=False, method=True)
@schema("t_(Tensor input)")
def t_(self: Tensor) -> Tensor:
    return _inplace_view(self, t, "TBackward1")


@register(module=False, method=True, aliases=("swapaxes_", "swapdims_"))
@schema("transpose_(Tensor input, int dim0, int dim1)")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _inplace_view(self, transpose, "TransposeBackward1", dim0, dim1)


@register(module=False, method=True)
@schema("squeeze_(Tensor input, dim)")
def squeeze_(self: Tensor, dim=_ALL) -> Tensor:
    if dim is None:
        raise TypeError("squeeze_(): argument 'dim' must be int or tuple of ints, not NoneType")
    name = "SqueezeBackward3" if dim is _ALL else "SqueezeBackward5" if isinstance(dim, (tuple, list)) else \
        "SqueezeBackward4"
    return _inplace_view(self, squeeze, name, dim)


@register(module=False, method=True)
@schema("unsqueeze_(Tensor input, int dim)")
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _inplace_view(self, unsqueeze, "UnsqueezeBackward1", dim)


# ----- expand, broadcast ----------------------------------------------------------------------------------

@register(module=False, method=True)
def expand(input: Tensor, *sizes) -> Tensor:
    """A view of ``input`` with size-1 dims repeated (no copy); -1 keeps a size."""
    check_tensor(input, "expand")   # no schema: its wrapper would forward *sizes (a tuple more than this call)
    return _expand(input, sizes, "expand")


def _expand(input, sizes, op):
    if not sizes:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    sizes = _shape_arg(sizes, op)
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand({input.type()}{{{list(shp)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    new = list(sizes)
    for i, want in enumerate(sizes[:lead]):
        if want < 0:
            raise RuntimeError(f"The expanded size of the tensor ({want}) isn't allowed in a leading, non-existing "
                               f"dimension {i}")
    for i, s in reversed(tuple(enumerate(shp))):   # PyTorch reports the last mismatching dim
        want = sizes[lead + i]
        if want == -1:
            new[lead + i] = s
        elif s != 1 and want != s:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({s}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shp)}")
        elif want < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {want}: {list(sizes)}")
    return apply(expand_p, (input,), {"shape": tuple(new)})


@register(module=False, method=True)
@schema("expand_as(Tensor input, Tensor other)")
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)


@register(method=True)
@schema("broadcast_to(Tensor input, size)")
def broadcast_to(input: Tensor, size) -> Tensor:
    """``input`` expanded to ``size``."""
    return _expand(input, (size,), "broadcast_to")


@register
def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of ``shapes`` broadcast to (ints count as 1-d shapes)."""
    parsed = []
    for s in shapes:
        if s is None:
            parsed.append(())
        elif _is_int(s):
            parsed.append((int(s),))
        elif isinstance(s, (tuple, list)):
            parsed.append(tuple(_int(v, "broadcast_shapes", "shapes") for v in s))
        elif isinstance(s, str):
            raise TypeError(f"broadcast_shapes(): expected ints or sequences of ints, got {s!r}")
        else:
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got "
                               f"{s!r}")
    for s in parsed:
        for v in s:
            if v < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {v}: {list(s)}")
    return Size(_broadcast_shape(parsed))


def _tensors(args, op: str) -> tuple:
    """``f(a, b)`` or ``f([a, b])``: the tensors, each checked."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for i, x in enumerate(args):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return tuple(args)


@register
def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common shape (those already of that shape as they are)."""
    tensors = _tensors(tensors, "broadcast_tensors")
    shape = _broadcast_shape([x._data.shape for x in tensors], "broadcast_tensors")
    return tuple(x if x._data.shape == shape else apply(expand_p, (x,), {"shape": shape}) for x in tensors)


def _atleast(n: int, fn, args):
    if len(args) == 1 and isinstance(args[0], Tensor):
        return fn(args[0])
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for i, x in enumerate(args):
        if not isinstance(x, Tensor):
            raise TypeError(f"atleast_{n}d(): argument 'tensors' must be tuple of Tensors, but found element of "
                            f"type {type(x).__name__} at pos {i}")
    return tuple(fn(x) for x in args)


def _atleast_1d(x):
    return apply(reshape_p, (x,), {"shape": (1,)}) if x._data.ndim == 0 else x


def _atleast_2d(x):
    nd = x._data.ndim
    if nd == 0:
        return apply(reshape_p, (x,), {"shape": (1, 1)})
    return unsqueeze(x, 0) if nd == 1 else x


def _atleast_3d(x):
    nd = x._data.ndim
    if nd == 0:
        return apply(reshape_p, (x,), {"shape": (1, 1, 1)})
    if nd == 1:
        return unsqueeze(unsqueeze(x, 0), -1)
    return unsqueeze(x, -1) if nd == 2 else x


@register
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d ones become shape (1,))."""
    return _atleast(1, _atleast_1d, tensors)


@register
def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (new dims in front)."""
    return _atleast(2, _atleast_2d, tensors)


@register
def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (a 1-d (n,) becomes (1, n, 1), a 2-d (m, n) becomes (m, n, 1))."""
    return _atleast(3, _atleast_3d, tensors)


# ----- repeat, tile, repeat_interleave ----------------------------------------------------------------------

@register(module=False, method=True, graph=True)
def repeat(input: Tensor, *sizes) -> Tensor:
    """``input`` tiled ``sizes`` times along each dim (leading new dims for extra sizes)."""
    check_tensor(input, "repeat")   # no schema: its wrapper would forward *sizes (a tuple more than this call)
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')   # even for 0-d input
    sizes = _shape_arg(sizes, "repeat", "repeats")
    if len(sizes) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    for s in sizes:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(sizes)}")
    return apply(repeat_p, (input,), {"sizes": sizes})


@register(method=True)
@schema("tile(Tensor input, dims)")
def tile(input: Tensor, dims) -> Tensor:
    """``input`` tiled ``dims`` times (missing leading counts are 1)."""
    dims = _shape_arg((dims,), "tile", "dims")
    return repeat(input, (1,) * (input._data.ndim - len(dims)) + dims)


_COUNTS = object()   # repeat_interleave(counts): no repeats given


@register(method=True)
@schema("repeat_interleave(Tensor input, repeats, int? dim, *, output_size)")
def repeat_interleave(input: Tensor, repeats=_COUNTS, dim: int | None = None, *, output_size: int | None = None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times, one after the other.
    ``repeat_interleave(repeats_tensor)``: the indices ``0, 1, ...`` repeated (``repeats[i]`` times each)."""
    if repeats is None:
        raise TypeError("repeat_interleave(): argument 'repeats' must be Tensor or int, not NoneType")
    if repeats is _COUNTS:   # torch.repeat_interleave(counts): the indices, each repeated its count
        if input._data.ndim != 1 or input._data.dtype.kind not in "iu":
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        xp = NAMESPACES[type(input._data)]
        if not holds(lambda a: not xp.any(a < 0), input._data):
            raise RuntimeError("repeats can not be negative")
        return make(xp.repeat_index(input._data))
    if dim is None:
        input, d = reshape(input, -1), 0
    else:
        d = wrap_dim(dim, input._data.ndim, "repeat_interleave")
    if input._data.ndim == 0:
        input = reshape(input, 1)
    n = input._data.shape[d]
    if isinstance(repeats, Tensor):   # PyTorch: an index_select of the repeated indices (even for one count)
        r = repeats._data
        if r.dtype.kind not in "iu":
            raise RuntimeError("repeat_interleave: repeats must be an integral tensor")
        if r.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        xp = NAMESPACES[type(r)]
        if r.ndim == 0 or r.shape[0] == 1:
            r = xp.expand(r.reshape(-1), (n,))
        if r.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{r.shape[0]} and input.size(0) = {n}")
        if not holds(lambda r: not xp.any(r < 0), r):
            raise RuntimeError("repeats can not be negative")
        if output_size is not None and not holds(lambda r: output_size == int(xp.sum(r)), r):
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {int(xp.sum(r))} but got "
                               f"{output_size}")
        index = xp.repeat_index(r)
        return apply(gather_rows_p, (input,), {"dim": d, "index": index})
    repeats = _int(repeats, "repeat_interleave", "repeats")
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if output_size is not None and output_size != n * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {n * repeats} but got {output_size}")
    shp = input._data.shape
    # PyTorch: unsqueeze, expand, clone, then a view merging the two dims (hence ViewBackward0)
    wide = clone(expand(unsqueeze(input, d + 1), shp[:d + 1] + (repeats,) + shp[d + 1:]))
    return apply(reshape_p, (wide,), {"shape": shp[:d] + (n * repeats,) + shp[d + 1:]})


# ----- flip, roll, rot90 ---------------------------------------------------------------------------------------

@register(method=True, graph=True)
def flip(input: Tensor, *dims) -> Tensor:
    """``input`` reversed along ``dims`` (a copy)."""
    check_tensor(input, "flip")   # no schema: its wrapper would forward *dims (a tuple more than this call)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    dims = _shape_arg(dims, "flip", "dims")
    nd = input._data.ndim
    wrapped = tuple(wrap_dim(d, nd, "flip") for d in dims)
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(dims)}, but unique flip dims "
                           f"size={len(set(wrapped))}")
    return apply(flip_p, (input,), {"dims": wrapped if nd else ()})


@register(method=True)
@schema("fliplr(Tensor input)")
def fliplr(input: Tensor) -> Tensor:
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return apply(flip_p, (input,), {"dims": (1,)})


@register(method=True)
@schema("flipud(Tensor input)")
def flipud(input: Tensor) -> Tensor:
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return apply(flip_p, (input,), {"dims": (0,)})


@register(method=True, graph=True)
@schema("roll(Tensor input, shifts, dims)")
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """``input``'s elements shifted ``shifts`` places along ``dims`` (wrapping around); no dims: flattened."""
    shifts = _int_list(shifts, "roll", "shifts")
    nd = input._data.ndim
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return apply(roll_p, (input,), {"shifts": shifts[0], "dims": None})
    dims = _int_list(dims, "roll", "dims")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if nd == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = tuple(wrap_dim(d, nd, "roll") for d in dims)
    return apply(roll_p, (input,), {"shifts": shifts, "dims": dims})


@register(method=True, graph=True)
@schema("rot90(Tensor input, int k, dims)")
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the second."""
    k = _int(k, "rot90", "k")
    dims = _int_list(dims, "rot90", "dims")
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = wrap_dim(dims[0], nd, "rot90"), wrap_dim(dims[1], nd, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    return apply(rot90_p, (input,), {"k": k % 4, "dims": (d0, d1)})


# ----- narrow, select, split, chunk, unbind, tensor_split ----------------------------------------------------

def _slice(input, d, start, stop, node=None):
    return apply(slice_p, (input,), {"dim": d, "start": start, "stop": stop, "step": 1}, node)


@register(method=True)
@schema("narrow(Tensor input, int dim, int start, int length)")
def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``length`` entries of ``input`` from ``start`` along ``dim`` (a view)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd, "narrow")
    start, length = _int(start, "narrow", "start"), _int(length, "narrow", "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    n = input._data.shape[d]
    if start < -n or start > n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(input, d, start, start + length)


@register(method=True)
@schema("select(Tensor input, int dim, int index)")
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input`` at ``index`` along ``dim``, that dim removed (a view)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd, "select")
    index = _int(index, "select", "index")
    n = input._data.shape[d]
    if index < -n or index >= n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at "
                         f"dimension {d}")
    return apply(select_p, (input,), {"dim": d, "index": index + n if index < 0 else index})


def _pieces(input, d, bounds, name):
    params = [{"dim": d, "start": bounds[i], "stop": bounds[i + 1], "step": 1} for i in range(len(bounds) - 1)]
    return _multi_view(input, slice_p, params, name, d, tuple(bounds))


@register(method=True)
@schema("split(Tensor tensor, split_size_or_sections, int dim)")
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Pieces of ``split_size`` along ``dim`` (the last one smaller), or of the listed sizes (views)."""
    nd = tensor._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, nd, "split")
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = _shape_arg((split_size_or_sections,), "split_with_sizes", "split_sizes")
        for s in sizes:
            if s < 0:
                raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                                   f"split_sizes={list(sizes)}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={list(sizes)}")
        return _pieces(tensor, d, [0] + list(itertools.accumulate(sizes)), "SplitWithSizesBackward0")
    size = _int(split_size_or_sections, "split", "split_size")
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    count = max(1, -(-n // size)) if size else 1
    bounds = [min(i * size, n) for i in range(count)] + [n]
    return _pieces(tensor, d, bounds, "SplitBackward0")


@register(method=True)
@schema("chunk(Tensor input, int chunks, int dim)")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most ``chunks`` pieces of equal size along ``dim`` (the last one smaller)."""
    chunks = _int(chunks, "chunk", "chunks")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input._data.ndim, "chunk")
    n = input._data.shape[d]
    if n == 0:   # PyTorch: chunks empty pieces, from split_with_sizes
        return _pieces(input, d, [0] * (chunks + 1), "SplitWithSizesBackward0")
    return split(input, -(-n // chunks), d)


@register(method=True)
@schema("unbind(Tensor input, int dim)")
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices of ``input`` along ``dim`` (views), that dim removed."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, nd, "unbind")
    params = [{"dim": d, "index": i} for i in range(input._data.shape[d])]
    return _multi_view(input, select_p, params, "UnbindBackward0", d, None)


def _iter(self):
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


@register(method=True)
@schema("tensor_split(Tensor input, indices_or_sections, int dim)")
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """``sections`` nearly equal pieces along ``dim`` (the first ones one larger), or pieces cut at
    ``indices``: separate views (SliceBackward0 each)."""
    return _tensor_split(input, indices_or_sections, dim, "tensor_split")


def _tensor_split(input, ios, dim, op):
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, nd, op)
    n = input._data.shape[d]
    if isinstance(ios, Tensor):
        if ios._data.dtype.kind not in "iu":
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have integer dtype, but got "
                               f"{ios.dtype}")
        if ios._data.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims")
        ios = int(ios._data) if ios._data.ndim == 0 else [int(v) for v in ios._data]
    if isinstance(ios, (list, tuple)):
        idx = [_int(v, op, "indices") for v in ios]
        starts = [0] + idx
        stops = idx + [n]
        bounds = [(min(max(a + n if a < 0 else a, 0), n), min(max(b + n if b < 0 else b, 0), n))
                  for a, b in zip(starts, stops)]
    else:
        k = _int(ios, op, "sections")
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        acc = [0] + list(itertools.accumulate(sizes))
        bounds = list(zip(acc[:-1], acc[1:]))
    return tuple(_slice(input, d, a, b) for a, b in bounds)


def _split_dim(input, ios, dim, op, min_nd):
    # the argument's type is checked first, as PyTorch's argument parser does
    if isinstance(ios, (list, tuple)):
        ios = [_int(v, op, "indices") for v in ios]
    elif not isinstance(ios, Tensor):
        ios = _int(ios, op, "sections")
    nd = input._data.ndim
    if nd < min_nd:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_nd} dimension, but got a tensor with "
                           f"{nd} dimensions!")
    if _is_int(ios):
        n = input._data.shape[dim]
        if ios == 0 or n % ios:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{n} is not divisible by the split_size {ios}!")
    return _tensor_split(input, ios, dim, op)


@register(method=True)
@schema("hsplit(Tensor input, indices_or_sections)")
def hsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_dim(input, indices_or_sections, 1 if input._data.ndim > 1 else 0, "hsplit", 1)


@register(method=True)
@schema("vsplit(Tensor input, indices_or_sections)")
def vsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_dim(input, indices_or_sections, 0, "vsplit", 2)


@register(method=True)
@schema("dsplit(Tensor input, indices_or_sections)")
def dsplit(input: Tensor, indices_or_sections) -> tuple:
    return _split_dim(input, indices_or_sections, 2, "dsplit", 3)


# ----- cat, stack and friends --------------------------------------------------------------------------

def _as_tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return tuple(tensors)


class _PerInput(tuple):
    """The VJP rules of a variadic op (cat, stack): ``rules[i]`` is input i's rule, for any number of inputs, so
    one primitive serves every arity."""

    def __new__(cls, make_rule):
        self = super().__new__(cls)
        self._make = make_rule
        self._cache = {}
        return self

    def __getitem__(self, i):
        r = self._cache.get(i)
        if r is None:
            r = self._cache[i] = self._make(i)
        return r


def _cat_forward(xp, *arrays, dim, bounds, legacy):
    kept = [a for a in arrays if a.shape != (0,)]
    return xp.cat(kept if kept else list(arrays), dim)   # all legacy empties: an empty (0,) result


cat_p = defprim("cat", _cat_forward, vjp=_PerInput(_cat_vjp), jvp="linear", promote="standard")
stack_p = defprim("stack", lambda xp, *arrays, dim: xp.stack(arrays, dim), vjp=_PerInput(_stack_vjp),
                  jvp="linear", promote="standard")


@register(aliases=("concat", "concatenate"))
def cat(tensors, dim: int = 0, *, axis=None, out=None) -> Tensor:
    """The tensors joined along ``dim`` (legacy empty (0,) tensors are skipped)."""
    _no_out(out, "cat")
    tensors = _as_tensor_list(tensors, "cat")
    dim = _dim_kw(dim, axis, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch skips legacy empty 1-d tensors of shape (0,) in cat.
    ref = next((x for x in tensors if x._data.shape != (0,)), None)
    if ref is None:   # only legacy empties: PyTorch skips every shape check (dim too) and returns an empty (0,)
        if not _is_int(dim):
            wrap_dim(dim, 1, "cat")
        return apply(cat_p, tensors, {"dim": 0, "bounds": (0,) * (len(tensors) + 1), "legacy": ()})
    if ref._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim(dim, ref._data.ndim, "cat")
    for i, x in enumerate(tensors):
        if x._data.shape == (0,) and ref._data.shape != (0,):
            continue
        if x._data.ndim != ref._data.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref._data.ndim} and "
                               f"{x._data.ndim}")
        for k in range(ref._data.ndim):
            if k != d and x._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref._data.shape[k]} but got size {x._data.shape[k]} for tensor number {i} "
                                   f"in the list.")
    bounds = [0]
    for x in tensors:
        bounds.append(bounds[-1] + (x._data.shape[d] if x._data.ndim == ref._data.ndim else 0))
    legacy = tuple(i for i, x in enumerate(tensors) if x._data.ndim != ref._data.ndim)
    return apply(cat_p, tensors, {"dim": d, "bounds": tuple(bounds), "legacy": legacy})


_no_out = no_out


@register
def stack(tensors, dim: int = 0, *, axis=None, out=None) -> Tensor:
    """The tensors (all of one shape) joined along a new dim ``dim``."""
    _no_out(out, "stack")
    tensors = _as_tensor_list(tensors, "stack")
    dim = _dim_kw(dim, axis, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shp = tensors[0]._data.shape
    for i, x in enumerate(tensors):
        if x._data.shape != shp:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shp)} at entry 0 and "
                               f"{list(x._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(shp) + 1, "stack")
    return apply(stack_p, tensors, {"dim": d})


@register
def hstack(tensors, *, out=None) -> Tensor:
    """The tensors joined along dim 1 (dim 0 for 1-d tensors)."""
    _no_out(out, "hstack")
    ts = _atleast(1, _atleast_1d, (_as_tensor_list(tensors, "hstack"),))
    return cat(ts, 0 if ts and ts[0]._data.ndim == 1 else 1)


@register(aliases=("row_stack",))
def vstack(tensors, *, out=None) -> Tensor:
    """The tensors, made at least 2-d, joined along dim 0."""
    _no_out(out, "vstack")
    return cat(_atleast(2, _atleast_2d, (_as_tensor_list(tensors, "vstack"),)), 0)


@register
def dstack(tensors, *, out=None) -> Tensor:
    """The tensors, made at least 3-d, joined along dim 2."""
    _no_out(out, "dstack")
    return cat(_atleast(3, _atleast_3d, (_as_tensor_list(tensors, "dstack"),)), 2)


@register
def column_stack(tensors, *, out=None) -> Tensor:
    """0-d and 1-d tensors as columns, 2-d ones as they are, joined along dim 1."""
    _no_out(out, "column_stack")
    ts = _as_tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = tuple(apply(reshape_p, (x,), {"shape": (x._data.size, 1)}) if x._data.ndim <= 1 else x for x in ts)
    return cat(cols, 1)


# ----- triangles, diagonals, trace ----------------------------------------------------------------------

def _tri(input, diagonal, prim, op):
    if input._data.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    return apply(prim, (input,), {"diagonal": _int(diagonal, op, "diagonal")})


@register(method=True, graph=True)
@schema("tril(Tensor input, int diagonal)")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below diagonal ``diagonal``) of the last two dims; zeros above."""
    return _tri(input, diagonal, tril_p, "tril")


@register(method=True, graph=True)
@schema("triu(Tensor input, int diagonal)")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above diagonal ``diagonal``) of the last two dims; zeros below."""
    return _tri(input, diagonal, triu_p, "triu")


def _tri_(self, diagonal, prim, op):
    if self._data.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    return apply_inplace(prim, self, (), {"diagonal": _int(diagonal, op, "diagonal")})


@register(module=False, method=True)
@schema("tril_(Tensor input, int diagonal)")
def tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    return _tri_(self, diagonal, tril_p, "tril_")


@register(module=False, method=True)
@schema("triu_(Tensor input, int diagonal)")
def triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    return _tri_(self, diagonal, triu_p, "triu_")


def _diag_dims(nd, offset, dim1, dim2, op):
    offset = _int(offset, op, "offset")
    d1, d2 = wrap_dim(dim1, nd, op), wrap_dim(dim2, nd, op)
    if d1 == d2:
        raise RuntimeError(f"{op}(): dimensions must be different, but got dim1 = {d1} and dim2 = {d2}" if op ==
                           "diag_embed" else f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return offset, d1, d2


@register(method=True, graph=True)
@schema("diagonal(Tensor input, int offset, int dim1, int dim2)")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` of dims ``dim1``/``dim2``, as a new last dim (a view)."""
    nd = input._data.ndim
    offset, d1, d2 = _diag_dims(nd, offset, dim1, dim2, "diagonal")
    return apply(diagonal_p, (input,), {"offset": offset, "dim1": d1, "dim2": d2})


def _embed_shape(shape, offset, d1, d2):
    n = shape[-1] + abs(offset)
    rest = list(shape[:-1])
    out = []
    for i in range(len(shape) + 1):
        out.append(n if i in (d1, d2) else rest.pop(0))
    return tuple(out)


@register(method=True)
@schema("diag_embed(Tensor input, int offset, int dim1, int dim2)")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose diagonal ``offset`` over the new dims ``dim1``/``dim2`` holds ``input``'s last dim."""
    nd = input._data.ndim + 1
    offset, d1, d2 = _diag_dims(nd, offset, dim1, dim2, "diag_embed")
    shp = input._data.shape if input._data.ndim else (1,)
    x = input if input._data.ndim else reshape(input, 1)
    shape = _embed_shape(shp, offset, d1, d2)
    return apply(diag_embed_p, (x,), {"offset": offset, "dim1": d1, "dim2": d2, "shape": shape})


@register(method=True)
@schema("diag(Tensor input, int diagonal)")
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-d input: a matrix with it on diagonal ``diagonal``; 2-d input: that diagonal, copied."""
    nd = input._data.ndim
    diagonal = _int(diagonal, "diag", "diagonal")
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        return apply(diagonal_copy_p, (input,), {"offset": diagonal, "dim1": 0, "dim2": 1})
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@register(method=True)
@schema("diagflat(Tensor input, int offset)")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with ``input``'s elements (flattened) on diagonal ``offset``."""
    offset = _int(offset, "diagflat", "offset")
    return diag_embed(flatten(input) if input._data.ndim != 1 else input, offset, 0, 1)


@register(method=True, graph=True)
@schema("trace(Tensor input)")
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's diagonal (integer matrices give int64)."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    if input._data.dtype.kind == "b":
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    return apply(trace_p, (input,))


# ----- meshgrid, cartesian_prod, combinations -----------------------------------------------------------

@register
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Grids of coordinates from 1-d tensors: output i varies along dim i ('ij') or with the first two swapped
    ('xy')."""
    ts = _tensors(tensors, "meshgrid")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if not isinstance(indexing, str):
        raise TypeError(f"meshgrid(): argument 'indexing' must be str, not {type(indexing).__name__}")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for x in ts:
        if x._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {x}")
    dtypes = {x._data.dtype for x in ts}
    if len(dtypes) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(ts) >= 2
    order = list(range(len(ts)))
    if swap:
        order[0], order[1] = 1, 0
    sizes = [ts[i]._data.size for i in order]
    out = []
    for i, x in enumerate(ts):
        pos = order.index(i)
        shape = [1] * len(ts)
        shape[pos] = x._data.size
        out.append(apply(expand_p, (view(x, tuple(shape)),), {"shape": tuple(sizes)}))
    return tuple(out)


@register
def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-d tensor, as rows."""
    ts = _tensors(tensors, "cartesian_prod")
    for x in ts:
        if x._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(x._data.shape)}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


@register
@schema("combinations(Tensor input, int r, bool with_replacement)")
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The ``r``-element combinations of a 1-d tensor's elements, as rows (in order)."""
    r = _int(r, "combinations", "r")
    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._data.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    xp = NAMESPACES[type(input._data)]
    if r == 0:
        return make(xp.backend.zeros((0,), dtype=input._data.dtype))
    n = input._data.shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    combos = list(gen(range(n), r))   # host data, then to the device, one int64 column per position
    columns = [xp.cast(xp.backend.asarray([c[k] for c in combos]), D.int64.np) for k in range(r)]
    return stack([apply(gather_rows_p, (input,), {"dim": 0, "index": col}) for col in columns], 1)


# ----- unfold, clone, contiguous ------------------------------------------------------------------------

@register(module=False, method=True, graph=True)
@schema("unfold(Tensor input, int dimension, int size, int step)")
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim (a view)."""
    nd = input._data.ndim
    d = wrap_dim(dimension, nd, "unfold")
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    n = input._data.shape[d] if nd else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return apply(unfold_p, (input,), {"dimension": d, "size": size, "step": step})


# memory formats live with the layouts in the core (ember/_dtype.py): Tensor.is_contiguous needs them




def _check_memory_format(input, fmt, op):
    """None for the default layouts, else the channels-last format asked for (its rank checked)."""
    if fmt is None or fmt is preserve_format or fmt is contiguous_format:
        return None
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")
    rank = len(_CL_ORDER[fmt._name])
    if input._data.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return fmt


def _relayout(t: Tensor, fmt) -> Tensor:
    """``t`` (a fresh copy nothing else refers to) rewritten in channels-last order: the same values, strided
    as PyTorch's channels-last tensors (NumPy keeps that order through elementwise ops)."""
    relayout = getattr(NAMESPACES[type(t._data)], "channels_last_copy", None)
    if relayout is None:
        raise NotImplementedError(f"ember: memory_format={fmt!r} is built for the NumPy backend only")
    t._data = relayout(t._data)
    return t


@register(method=True, graph=True)
@schema("clone(Tensor input, *, memory_format)")
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy of ``input`` with its own memory (gradients flow back unchanged)."""
    fmt = _check_memory_format(input, memory_format, "clone")
    if fmt is not None and type(input) is _batching.BatchedTensor:
        raise RuntimeError(f"NYI: Tensor.clone(memory_format) inside vmap is only supported with memory_format "
                           f"torch.preserve_format or torch.contiguous_format (got "
                           f"{''.join(w.capitalize() for w in fmt._name.split('_'))})")
    out = apply(clone_p, (input,))
    return out if fmt is None else _relayout(out, fmt)


@register(module=False, method=True)
def contiguous(input: Tensor, memory_format=None) -> Tensor:
    fmt = _check_memory_format(input, memory_format, "contiguous")
    if fmt is not None:
        # (the method: a batched tensor's refuses channels-last formats, as PyTorch's inside vmap)
        return input if input.is_contiguous(memory_format=fmt) else _relayout(apply(clone_p, (input,)), fmt)
    if input._data.flags.c_contiguous:
        return input
    return apply(clone_p, (input,))


def to_dtype(input, dtype: D.dtype, copy=False, device: str | None = None):
    """``input`` cast to ``dtype`` (and copied onto device type ``device``, where given)."""
    if device is None:
        if dtype is input.dtype and not copy:
            return input
        if input._data.dtype.kind == "c" and not dtype.is_complex:
            warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
        r = apply(cast_p, (input,), {"dtype": dtype.np})
    else:
        r = apply(cast_p, (input,), {"dtype": dtype.np, "device": device, "source": input.device.type})
    if dtype._cat < D._FLOAT:   # integral results are not differentiable: no history, as PyTorch
        r.grad_fn, r._requires_grad, r._fw_grad = None, False, None
    return r


graph("expand", lambda x, shape: expand(x, shape))
graph("permute", lambda x, dims: permute(x, dims))
graph("channels_last_copy", lambda a: NAMESPACES[type(a)].channels_last_copy(a))   # raw array in and out
graph("cast", lambda x, dtype: apply(cast_p, (x,), {"dtype": dtype}))
graph("cat", lambda xs, dim: cat(xs, dim))
graph("stack", lambda xs, dim: stack(xs, dim))
graph("slice_dim", lambda x, dim, start, stop, step=1: apply(slice_p, (x,), {"dim": dim, "start": start,
                                                                             "stop": stop, "step": step}))
graph("slice_scatter_zeros", lambda g, dim, start, stop, step, shape: apply(
    slice_scatter_p, (g,), {"dim": dim, "start": start, "stop": stop, "step": step, "shape": shape}))
graph("select_dim", lambda x, dim, index: apply(select_p, (x,), {"dim": dim, "index": index}))
graph("select_scatter_zeros", lambda g, dim, index, shape: apply(select_scatter_p, (g,), {"dim": dim, "index": index,
                                                                                           "shape": shape}))
graph("diag_scatter_zeros", lambda g, offset, dim1, dim2, shape: apply(
    diag_embed_p, (g,), {"offset": offset, "dim1": dim1, "dim2": dim2, "shape": shape}))
graph("unfold_backward", lambda g, shape, dimension, size, step: apply(
    unfold_backward_p, (g,), {"shape": shape, "dimension": dimension, "size": size, "step": step}))
graph("gather_rows", lambda x, dim, index: apply(gather_rows_p, (x,), {"dim": dim, "index": index}))
graph("scatter_rows_zeros", lambda g, dim, index, shape: apply(scatter_rows_p, (g,), {"dim": dim, "index": index,
                                                                                       "shape": shape}))
# not differentiable: the device's kernel on the counts' data
graph("repeat_index", lambda counts: make(NAMESPACES[type(counts._data)].repeat_index(counts._data)))
method("T", property(_T))
method("mT", property(_mT))
method("H", property(_H))
method("mH", property(_mH))
method("__iter__", _iter)


# ----- conversions -------------------------------------------------------------------------------

def _legacy_types() -> dict:
    return {C.FloatTensor: D.float32, C.DoubleTensor: D.float64, C.HalfTensor: D.float16, C.LongTensor: D.int64,
            C.IntTensor: D.int32, C.BoolTensor: D.bool, C.ByteTensor: D.uint8, C.CharTensor: D.int8,
            C.ShortTensor: D.int16}


_TYPE_NAMES = {f"torch.{D.type_word(d.np)}Tensor": d for d in (D.float32, D.float64, D.float16, D.int64, D.int32,
                                                               D.bool, D.int16, D.int8, D.uint8, D.bfloat16)}


_TO_KEYS = ({"device", "dtype", "non_blocking", "copy", "memory_format"},    # to(device, dtype, ...)
            {"non_blocking", "copy", "memory_format"},                       # to(dtype, ...), to(tensor, ...)
            {"dtype", "non_blocking", "copy", "memory_format"})              # to(non_blocking=, ...): dtype=


def parse_to(args: tuple, kwargs: dict) -> tuple:
    """(device, dtype, non_blocking, copy, memory_format) from the arguments of PyTorch's three ``to``
    signatures: (device=None, dtype=None, non_blocking=False, copy=False), (dtype, non_blocking=False,
    copy=False), (tensor, non_blocking=False, copy=False), each with ``*, memory_format=None``; anything
    else is PyTorch's "invalid combination of arguments" TypeError (Module.to parses with it too)."""
    if len(args) == 1 and not kwargs:   # the common calls, to(dtype) and to(device), without the parse below
        first = args[0]
        if isinstance(first, D.dtype):
            return None, first, False, False, None
        if isinstance(first, (str, _device_type)):
            return first, None, False, False, None
    from ._registry import invalid_arguments

    def bad():
        return invalid_arguments("Tensor.to", args, kwargs)

    def as_dtype(v):
        if isinstance(v, D.dtype):
            return v
        if v in (float, int, bool):     # PyTorch takes the Python types as dtypes
            return {float: D.float64, int: D.int64, bool: D.bool}[v]
        raise bad()

    rest = list(args)
    device = dtype = None
    first = rest[0] if rest else None
    if rest and (isinstance(first, D.dtype) or first in (float, int, bool)):
        dtype, names, allowed = as_dtype(rest.pop(0)), ("non_blocking", "copy"), _TO_KEYS[1]
    elif rest and isinstance(first, Tensor):
        t = rest.pop(0)
        device, dtype, names, allowed = t.device, t.dtype, ("non_blocking", "copy"), _TO_KEYS[1]
    else:
        names, allowed = ("device", "dtype", "non_blocking", "copy"), _TO_KEYS[0]
    if len(rest) > len(names) or not set(kwargs) <= allowed:
        raise bad()
    given = dict(zip(names, rest))
    if set(given) & set(kwargs):
        raise bad()
    given.update(kwargs)
    if "device" in given:
        device = given["device"]
        if device is not None and not isinstance(device, (str, int, _device_type)):
            raise bad()
    if given.get("dtype") is not None:
        dtype = as_dtype(given["dtype"])
    non_blocking, copy = given.get("non_blocking", False), given.get("copy", False)
    fmt = given.get("memory_format")
    if not isinstance(non_blocking, bool) or not isinstance(copy, bool) or \
            (fmt is not None and not isinstance(fmt, memory_format)):
        raise bad()
    return device, dtype, non_blocking, copy, fmt


@register(module=False, method=True)
def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``; ``copy=``."""
    device, dtype, _, copy, fmt = parse_to(args, kwargs)
    if device is not None:   # (a bare int is the accelerator's index: cuda where CuPy sees a GPU)
        device = check_device(device)
    fmt = _check_memory_format(self, fmt, "to")
    if device is not None and device != self.device:   # a copy onto another device: one ToCopyBackward0
        return to_dtype(self, dtype or self.dtype, device=device.type)
    if fmt is not None and not _is_contiguous_as(self, fmt):
        # a new layout is a copy: ToCopyBackward0, as PyTorch
        return _relayout(to_dtype(self, dtype or self.dtype, copy=True), fmt)
    if dtype is None:
        return clone(self) if copy else self
    return to_dtype(self, dtype, copy)


def _caster(dtype):
    def fn(self, *, memory_format=None):
        if memory_format is not None and not isinstance(memory_format, memory_format_type):
            raise TypeError(f"{D.type_word(dtype.np).lower()}(): argument 'memory_format' must be "
                            f"torch.memory_format, not {type(memory_format).__name__}")
        return to_dtype(self, dtype)
    return fn


for _name, _dt in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("long", D.int64),
                   ("int", D.int32), ("bool", D.bool), ("short", D.int16), ("byte", D.uint8), ("char", D.int8),
                   ("cfloat", D.complex64), ("cdouble", D.complex128),
                   ("bfloat16", D.bfloat16)):
    method(_name, _caster(_dt))


@register(name="type", module=False, method=True)
def type_(self, dtype=None, non_blocking: bool = False):
    """The type's name (``'torch.FloatTensor'``), or a copy cast to ``dtype`` (a dtype, a legacy tensor type
    or its name)."""
    if dtype is None:
        return ("torch.cuda." if self.is_cuda else "torch.") + D.type_word(self._data.dtype) + "Tensor"
    if isinstance(dtype, str):
        if dtype not in _TYPE_NAMES:
            raise ValueError(f"invalid type: {dtype!r}")
        dtype = _TYPE_NAMES[dtype]
    elif not isinstance(dtype, D.dtype):
        dt = _legacy_types().get(dtype)
        if dt is None:
            raise TypeError(f"type(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        dtype = dt
    return to_dtype(self, dtype)


def _new_like(fill, name):
    def fn(self, *size, dtype=None, requires_grad=False, device=None, layout=None, pin_memory=False):
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TypeError(f"{name}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
        C._check_device(device, name)
        D.check_layout(layout, name)
        return fill(*size, dtype=dtype or self.dtype, device=self.device if device is None else device,
                    requires_grad=requires_grad)
    fn.__name__ = name
    return fn


for _name, _fill in (("new_zeros", C.zeros), ("new_ones", C.ones), ("new_empty", C.empty)):
    method(_name, _new_like(_fill, _name))


# ----- autograd.grad(is_grads_batched=True): batched rules -------------------------------------------
# (primitives whose rules batch as written declare batch=True)

# Batched rules: the same VJPs with the batch dimension named (axes >= 0 shift by one; shapes gain it).
def _bd(dim: int) -> int:
    return dim + 1 if dim >= 0 else dim


def _bshape(g, shape) -> tuple:
    return (g.shape[0],) + tuple(shape)


batch_rule(reshape_p, lambda xp, g, out, a, shape: xp.reshape(g, _bshape(g, a.shape)))
batch_rule(permute_p, lambda xp, g, out, a, dims: xp.permute(g, (0,) + tuple(d + 1 for d in _inverse(dims))))
batch_rule(expand_p, lambda xp, g, out, a, shape: g)
batch_rule(flip_p, lambda xp, g, out, a, dims: xp.flip(g, tuple(_bd(d) for d in dims)))   # the engine sums (B, shape) down to (B, a.shape)
batch_rule(slice_p, lambda xp, g, out, a, dim, start, stop, step: xp.slice_scatter_zeros(
    g, _bd(dim), start, stop, step, _bshape(g, a.shape)))
batch_rule(slice_scatter_p, lambda xp, g, out, a, dim, start, stop, step, shape: xp.slice_dim(
    g, _bd(dim), start, stop, step))
batch_rule(select_p, lambda xp, g, out, a, dim, index: xp.select_scatter_zeros(g, _bd(dim), index,
                                                                               _bshape(g, a.shape)))
batch_rule(select_scatter_p, lambda xp, g, out, a, dim, index, shape: xp.select_dim(g, _bd(dim), index))
def _cat_vjp_batched(i):
    def rule(xp, g, out, *inputs, dim, bounds, legacy):
        gi = xp.slice_dim(g, _bd(dim), bounds[i], bounds[i + 1], 1)
        return xp.reshape(gi, (g.shape[0], 0)) if i in legacy else gi
    return rule


batch_rule(cat_p, _PerInput(_cat_vjp_batched))
batch_rule(stack_p, _PerInput(lambda i: lambda xp, g, out, *inputs, dim: xp.select_dim(g, _bd(dim), i)))


# ----- issue 18: block_diag, vander, unravel_index (PyTorch's composites, built from differentiable ops) -----------

@register()
def block_diag(*tensors: Tensor) -> Tensor:
    """The block diagonal matrix of the given 0-, 1- and 2-d tensors (a 1-d tensor is one row)."""
    for i, t in enumerate(tensors):
        check_tensor(t, "block_diag", "tensors", 1)
        if t.ndim > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                               f"{i} has {t.ndim} dimensions")
    if not tensors:
        return C.empty((1, 0))
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = D.promote_types(dtype, t.dtype)
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    ncols = [b.shape[1] for b in blocks]
    total, before, rows = sum(ncols), 0, []
    for b, c in zip(blocks, ncols):
        dev = b.device
        left = C.zeros((b.shape[0], before), dtype=dtype, device=dev)
        right = C.zeros((b.shape[0], total - before - c), dtype=dtype, device=dev)
        rows.append(cat([left, b.to(dtype), right], 1))
        before += c
    return cat(rows, 0)


@register()
@schema("vander(Tensor x, int? N, bool increasing)")
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-d ``x``: columns x^(N-1), ..., x^0 (or x^0, ... when ``increasing``), by
    cumulative products as PyTorch (integral and bool inputs give int64)."""
    check_tensor(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = D.promote_types(x.dtype, D.int64)
    ones = C.ones((x.shape[0], 1 if n else 0), dtype=dtype, device=x.device)
    if n > 1:
        powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)
        result = cat([ones, powers], 1)
    else:
        result = ones
    return result if increasing else flip(result, 1)


@register()
def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (one tensor per dimension)."""
    if indices.dtype.is_floating_point or indices.dtype is D.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if not isinstance(shape, (int, tuple, list, Size)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in shape:
        if not isinstance(d, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=lambda a, b: a * b))))
    res = indices.unsqueeze(-1).floor_divide(C.tensor(coefs, dtype=D.int64, device=indices.device)) \
        % C.tensor(list(shape), dtype=D.int64, device=indices.device)
    return unbind(res, -1)


# ----- vmap -------------------------------------------------------------------------------------------------

def _permute_rule(call, args, bdims, params, size):
    x = _batching._moved(args[0], bdims[0])
    return call([x], {"dims": (0,) + tuple(d + 1 for d in params["dims"])}), 0


def _repeat_rule(call, args, bdims, params, size):
    sizes = tuple(params["sizes"])
    x = _batching._front_and_pad(args[0], bdims[0], len(sizes), size)
    return call([x], {"sizes": (1,) + sizes}), 0


def _list_dim_rule(extra: int):
    """cat (extra=0) and stack (extra=1) of batched and unbatched tensors: every one batched, batch dim first;
    ``dim`` shifts by one."""
    def rule(call, args, bdims, params, size):
        xs = [a.unsqueeze(0).expand((size,) + tuple(a._data.shape)) if bd is None else _batching._moved(a, bd)
              for a, bd in zip(args, bdims)]
        legacy = params.get("legacy", ())
        for i in legacy:   # cat skips legacy empty (0,) examples beside other ranks: batched, (batch, 0) is not one
            xs[i] = xs[i].reshape((0,))
        nd = next(x for i, x in enumerate(xs) if i not in legacy)._data.ndim - 1 + extra
        d = params["dim"]
        new = dict(params)
        new["dim"] = (d % nd if nd else 0) + 1 if d < 0 else d + 1
        return call(xs, new), 0
    return rule


_roll_dims = _batching.dims_rule("dims")


def _roll_rule(call, args, bdims, params, size):
    if not params.get("dims"):   # a roll of the flattened example: each example flattened, rolled along dim 1
        x = _batching._moved(args[0], bdims[0])
        shape = x._data.shape
        shifts = params["shifts"]
        out = call([_batching.rows(x, size)], {"shifts": tuple(shifts) if isinstance(shifts, (tuple, list)) else
                                           (shifts,), "dims": (1,)})
        return out.reshape(shape), 0
    return _roll_dims(call, args, bdims, params, size)


def _trace_rule(call, args, bdims, params, size):
    """The trace of each example: its diagonal summed (integral dtypes give int64, as trace)."""
    return _batching._moved(args[0], bdims[0]).diagonal(0, 1, 2).sum(1), 0


_batching.batching(_batching.shape_rule("shape"), reshape_p)
_batching.batching(_batching.shape_rule("shape", pad=True), expand_p)
_batching.batching(_permute_rule, permute_p)
_batching.batching(_repeat_rule, repeat_p)
_batching.batching(_batching.dims_rule("dim"), slice_p, select_p)
_batching.batching(_batching.dims_rule("dim1", "dim2"), diagonal_p, diagonal_copy_p)
_batching.batching(_batching.dims_rule("dimension"), unfold_p)
_batching.batching(_batching.dims_rule("dims"), flip_p, rot90_p)
_batching.batching(_roll_rule, roll_p)
_batching.batching("leading", tril_p, triu_p)
_batching.batching("elementwise", clone_p, cast_p)
_batching.batching(_list_dim_rule(0), cat_p)
_batching.batching(_list_dim_rule(1), stack_p)
_batching.batching(_trace_rule, trace_p)


def leading_broadcast(call, args, bdims, params, size):
    """The "leading" kind for ops whose inputs' leading (batch) dims broadcast against each other, each input a
    matrix or more (cdist, solve_triangular, ...): every input batched, batch dim first, padded with size-1 dims to
    the largest number of leading dims, so that the vmap dim lines up with the vmap dim (an input with a vector
    core takes the plain "leading" kind)."""
    ranks = [a._data.ndim - (bd is not None) for a, bd in zip(args, bdims) if isinstance(a, Tensor)]
    if min(ranks) < 2:
        return _batching.leading(call, args, bdims, params, size)
    rank = max(ranks)
    new = []
    for a, bd in zip(args, bdims):
        if isinstance(a, Tensor):
            if bd is None:
                a, bd = a.unsqueeze(0).expand((size,) + tuple(a._data.shape)), 0
            a = _batching._front_and_pad(a, bd, rank, size)
        new.append(a)
    return call(new, params), 0


# Public ops whose wrappers work on the tensor as a whole (they give their outputs one shared backward node, or
# change the tensor they are called on): under vmap they run on the physical tensor, batch dim first, with their
# dims shifted by one (``_batching.PUBLIC_RULES``: ``rule(orig, args, kwargs, level)``).

def vmap_front(t: Tensor, level: int) -> Tensor:
    """The physical tensor of ``t`` at vmap ``level`` (the highest level among the op's inputs), batch dim first;
    an input not batched there is expanded over the batch."""
    if not _batching.batched_at(t, level):
        t = _batching.add_level(t, _batching.frame_of(level))
    return _batching._moved(t._phys, t._bdim)


def _bound(orig, args, kwargs) -> dict:
    import inspect
    b = inspect.signature(orig).bind(*args, **kwargs)
    b.apply_defaults()
    return b.arguments


def _valid_dim(d, nd: int) -> bool:
    return isinstance(d, int) and not isinstance(d, bool) and nd > 0 and -nd <= d < nd


def _pieces_rule(fn, first: str):
    """split, chunk, unbind: the pieces of the physical tensor along the shifted dim, each batched in front."""
    def rule(orig, args, kwargs, level):
        a = _bound(orig, args, kwargs)
        x = a[first]
        if not isinstance(x, Tensor) or not _valid_dim(a["dim"], x._data.ndim):
            return orig(*args, **kwargs)   # (its own error)
        a[first] = vmap_front(x, level)
        a["dim"] = a["dim"] % x._data.ndim + 1
        return tuple(_batching.wrap(p, 0, level) for p in fn(**a))
    return rule


_batching.PUBLIC_RULES.update(split=_pieces_rule(split, "tensor"), chunk=_pieces_rule(chunk, "input"),
                              unbind=_pieces_rule(unbind, "input"))


def _shaped_rule(*keys: str):
    """A one-tensor op making a result of the example shape ``shape`` (its param) whose params ``keys`` name dims
    of that result: the batch dim first, the dims shifted by one, the batch size prepended to the shape."""
    def rule(call, args, bdims, params, size):
        shape = tuple(params["shape"])
        nd = len(shape)
        new = dict(params)
        for k in keys:
            v = params[k]
            new[k] = (v % nd if nd else 0) + 1 if v < 0 else v + 1
        new["shape"] = (size,) + shape
        return call([_batching._moved(args[0], bdims[0])], new), 0
    return rule


_batching.batching(_shaped_rule("dim"), slice_scatter_p, select_scatter_p, scatter_rows_p)
_batching.batching(_shaped_rule("dim1", "dim2"), diag_embed_p)
_batching.batching(_shaped_rule("dimension"), unfold_backward_p)
_batching.batching(_batching.dims_rule("dim"), gather_rows_p)


def _combinations_rule(orig, args, kwargs, level):
    """combinations of each example: the index combinations of range(n) (no values needed) taken from the physical
    rows at once."""
    bound = _bp.bind(combinations, args, kwargs)
    x = None if bound is None else bound.get("input")
    if not _bp.is_batched(x, level) or x._data.ndim != 1:
        return _bp.own(orig, args, kwargs, level)   # its own error
    idx = combinations(C.arange(x._data.shape[0]), bound.get("r", 2), bound.get("with_replacement", False))
    px = _bp.front(x, level)
    return _bp.wrap_out(px[:, :0].clone() if idx._data.ndim == 1 else px[:, idx], level)


_bp.public_rule(combinations, _combinations_rule)
