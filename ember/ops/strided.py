"""Strides and storage: ``as_strided`` and its family, ``empty_strided``/``empty_permuted``, and the storage side of
a tensor (``untyped_storage``, ``storage_offset``, ``set_``, ``resize_``, ...).

``as_strided`` has PyTorch's meaning: its strides and offset count elements from the start of the input's
*storage* (the array that owns its memory, see ember/_storage.py), not from the input. Its primitive records the
input's own layout in the storage (``in_stride``, ``in_offset``) with the result's, so that it can be replayed on
the values of a gradient or of a stand-in array (the device kernel then gathers instead of viewing), and its
gradient is PyTorch's as_strided_backward (positions the result repeats add up).
"""
from __future__ import annotations

from ..autograd import _batching

import math
import re
import warnings

from .. import _dtype as D
from .._device import NAMESPACES, backend_of, has_data
from ..devices.order import insertion_order
from .._storage import TypedStorage, UntypedStorage, _share, is_storage, warn_typed_storage  # noqa: F401
from .._state import track_tangent
from .._tensor import Size, Tensor, _sizes_from_args, make, wrap_dim
from ..autograd import grad_mode as _gm
from ..autograd._primitive import apply, defprim, graph_ns, install_saved_attrs
from ..autograd._views import check_inplace
from ._registry import graph, method, register
from .creation import _check_bool, _check_device, _check_dtype, _finish
from . import creation as C
from . import shape as S
from . import _batch_public as _bp

# ----- primitives ---------------------------------------------------------------------------------------------

as_strided_p = defprim(
    "as_strided",
    lambda xp, a, size, stride, storage_offset, in_stride, in_offset: xp.as_strided(
        a, size, stride, storage_offset, in_stride, in_offset),
    node="AsStridedBackward0",
    vjp=lambda xp, g, out, a, size, stride, storage_offset, in_stride, in_offset: xp.as_strided_backward(
        g, tuple(a.shape), in_stride, in_offset, size, stride, storage_offset),
    jvp="linear", is_view=True)

# its gradient, linear in g: its own gradient reads the output's layout back out of the input's
as_strided_backward_p = defprim(
    "as_strided_backward",
    lambda xp, g, in_size, in_stride, in_offset, size, stride, storage_offset: xp.as_strided_backward(
        g, in_size, in_stride, in_offset, size, stride, storage_offset),
    node="AsStridedBackward0",
    vjp=lambda xp, h, out, g, in_size, in_stride, in_offset, size, stride, storage_offset: xp.as_strided(
        h, size, stride, storage_offset, in_stride, in_offset),
    jvp="linear")

graph("as_strided", lambda x, size, stride, offset, in_stride, in_offset: apply(
    as_strided_p, (x,), {"size": tuple(size), "stride": tuple(stride), "storage_offset": offset,
                         "in_stride": tuple(in_stride), "in_offset": in_offset}))
graph("as_strided_backward", lambda g, in_size, in_stride, in_offset, size, stride, offset: apply(
    as_strided_backward_p, (g,), {"in_size": tuple(in_size), "in_stride": tuple(in_stride), "in_offset": in_offset,
                                  "size": tuple(size), "stride": tuple(stride), "storage_offset": offset}))

# x with src written where the view ``steps`` select (slice_scatter, select_scatter, diagonal_scatter,
# as_strided_scatter: each op's node is named by the op)
view_scatter_p = defprim(
    "view_scatter", lambda xp, a, src, steps: xp.view_scatter(a, src, steps),
    vjp=(lambda xp, g, out, a, src, steps: xp.view_scatter(g, xp.zeros_like(xp.view_replay(g, steps)), steps),
         lambda xp, g, out, a, src, steps: xp.view_replay(g, steps)),
    jvp="linear")
graph("view_scatter", lambda a, src, steps: apply(view_scatter_p, (a, src), {"steps": steps}))


# ----- helpers ------------------------------------------------------------------------------------------------

def _ints(v, op: str, name: str, pos: int) -> tuple:
    if isinstance(v, Tensor) or not isinstance(v, (tuple, list, Size)):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, not {type(v).__name__}")
    for i, s in enumerate(v):
        if isinstance(s, bool) or not isinstance(s, int) and not hasattr(s, "__index__"):
            raise TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
    return tuple(int(s) for s in v)


def _storage_of(t: Tensor):
    """(backend, root array, storage offset of ``t``) of a tensor."""
    be = backend_of(t._data)
    if not has_data(be):
        return be, t._data, 0
    return be, be.storage_root(t._data), be.storage_offset(t._data)


def _required_bytes(size, stride, offset, itemsize) -> int:
    """The storage bytes a layout needs (PyTorch's computeStorageNbytes)."""
    if 0 in size:
        return 0
    return (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * itemsize


def _check_geometry(size, stride, offset, itemsize, nbytes, op: str = "as_strided") -> None:
    """PyTorch's checks of a layout in a storage of ``nbytes``."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    need = _required_bytes(size, stride, offset, itemsize)
    if need > nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {need} are out of bounds for storage of "
                           f"size {nbytes}")


_AS_STRIDED_PARAMS = ("size", "stride", "storage_offset", "in_stride", "in_offset")


def _link_view(r: Tensor, input: Tensor, params: dict) -> Tensor:
    """``r`` = as_strided(input) (or slice_inverse): a view of input's storage whose step from input is that
    as_strided, even where its memory lies outside input's own (the op machinery links a view only where the two
    overlap)."""
    step = (as_strided_p, {k: params[k] for k in _AS_STRIDED_PARAMS})
    if r._base is None:
        base = input if input._base is None else input._base
        r._vc, r._view_v, r._base = input._vc, input._vc[0], base
        r._view_nograd = (input._base is not None and input._view_nograd) or \
            (not _gm._state.enabled and input._requires_grad)
        if input._inference:
            r._inference = True
    r._view_steps = (() if input._base is None else input._view_steps) + (step,)
    return r


# ----- as_strided and its family --------------------------------------------------------------------------------

def _as_strided_params(input: Tensor, size, stride, storage_offset, op: str) -> dict:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    size = _ints(size, op, "size", 2)
    stride = _ints(stride, op, "stride", 3)
    be, root, in_offset = _storage_of(input)
    offset = in_offset if storage_offset is None else int(storage_offset)
    # ('meta' has no storage to bound the layout: PyTorch's meta tensors keep one; ember checks the rest)
    _check_geometry(size, stride, offset, input._data.itemsize, UntypedStorage._of(root).nbytes() if has_data(be) else
                    1 << 62, op)
    return {"size": size, "stride": stride, "storage_offset": offset, "in_stride": tuple(input.stride()),
            "in_offset": in_offset}


@register(method=True)
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with sizes ``size``, strides ``stride`` and offset ``storage_offset`` (all in
    elements, counted from the storage's start; the offset defaults to input's own)."""
    params = _as_strided_params(input, size, stride, storage_offset, "as_strided")
    return _link_view(apply(as_strided_p, (input,), params), input, params)


@register(method=True)
def as_strided_(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """``input`` itself becomes ``as_strided(input, ...)``."""
    old = {"size": tuple(input._data.shape), "stride": tuple(input.stride()), "storage_offset": _storage_of(input)[2]}
    params = _as_strided_params(input, size, stride, storage_offset, "as_strided_")
    # the views of input made so far reach it through the step back from the new layout to the old one
    inverse = (as_strided_p, {**old, "in_stride": params["stride"], "in_offset": params["storage_offset"]})
    return S._inplace_view(input, lambda t: _link_view(apply(as_strided_p, (t,), params), t, params),
                           "AsStridedBackward1", inverse=inverse)


def _outside_slice(xp, g, dim, start, end, step):
    """``g`` with its slice ``start:end:step`` along ``dim`` zeroed."""
    steps = ((S.slice_p, {"dim": dim, "start": start, "stop": end, "step": step}),)
    return xp.view_scatter(g, xp.zeros_like(xp.view_replay(g, steps)), steps)


def _slice_inverse_jvp(t, src, params):
    """The tangent (forward mode only: graph tensors): PyTorch's linear formula slice_inverse(input_t, src_t). Its
    values are input_t's storage viewed as src (beyond input_t's own elements), but their gradient outside the
    slice goes to src_t, as the primal's does to src: with input_t alone (an as_strided of it) reverse over forward
    would miss that part (input_t's storage beyond its view is not on its graph)."""
    src_t = src._fw_grad if isinstance(src, Tensor) else None
    if type(t) is _batching.BatchedTensor or type(src_t) is _batching.BatchedTensor:
        # tangents batched by vmap (jacfwd's) have no storage to read beyond t: src_t's values outside the slice,
        # t's inside (the same values where input is a view of src, as slice_inverse is meant for)
        d, a, b, st = params["dim"], params["start"], params["end"], params["step"]
        shape = tuple(src._data.shape)
        inside = graph_ns.slice_scatter_zeros(t, d, a, b, st, shape)
        if src_t is None:
            return inside
        return src_t - graph_ns.slice_scatter_zeros(graph_ns.slice_dim(src_t, d, a, b, st), d, a, b, st, shape) + inside
    return apply(slice_inverse_p, (t, src_t if src_t is not None else graph_ns.zeros_like(src)), params)


# slice_inverse(input, src): input viewed as src is laid out (src is differentiable too: PyTorch's node takes it)
slice_inverse_p = defprim(
    "slice_inverse",
    lambda xp, a, src, size, stride, storage_offset, in_stride, in_offset, dim, start, end, step: xp.as_strided(
        a, size, stride, storage_offset, in_stride, in_offset),
    vjp=(lambda xp, g, out, a, src, size, stride, storage_offset, in_stride, in_offset, dim, start, end, step:
         xp.slice_dim(g, dim, start, end, step),
         lambda xp, g, out, a, src, size, stride, storage_offset, in_stride, in_offset, dim, start, end, step:
         _outside_slice(xp, g, dim, start, end, step)),
    jvp=(lambda xp, t, out, a, src, **params: _slice_inverse_jvp(t, src, params),
         # (src gives the layout only: its tangent adds no values, as PyTorch's linear formula has it)
         lambda xp, t, out, a, src, size, stride, storage_offset, in_stride, in_offset, dim, start, end, step:
         xp.zeros_like(t)),
    is_view=True, complex=True)   # linear: its rules hold for complex values


@register(method=True)
def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """The inverse of ``input = src.slice(dim, start, end, step)``: ``input`` viewed with ``src``'s sizes, strides
    and storage offset (PyTorch's definition), a view of ``input``'s storage."""
    if not isinstance(src, Tensor):
        raise TypeError(f"slice_inverse(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    params = _as_strided_params(input, tuple(src._data.shape), tuple(src.stride()), _storage_of(src)[2],
                                "slice_inverse")
    d = wrap_dim(dim, src._data.ndim, "slice_inverse")
    start, end, _ = slice(start, end, step).indices(src._data.shape[d])
    params.update(dim=d, start=start, end=end, step=step)
    return _link_view(apply(slice_inverse_p, (input, src), params), input, params)


def c_strides(shape: tuple) -> tuple:
    """A contiguous tensor's strides (PyTorch's: a dim of size 0 or 1 counts as 1)."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _dense(t: Tensor) -> bool:
    """Whether ``t``'s elements fill its memory without gaps or repeats (PyTorch's non-overlapping and dense: a
    copy keeps its strides; the device kernel view_scatter copies by the same test)."""
    step = 1
    for s, n in sorted((s, n) for s, n in zip(t.stride(), t._data.shape) if n != 1):
        if s != step:
            return False
        step *= n
    return True


# ----- the *_copy functions: a view op's result copied, under its node's name with "_copy" -----------------------

_COPY_NODES: dict = {}


def _as_copy(r, node_name: str):
    """``r`` (a view op's result, or a tuple of them) as new tensors holding copies of their values, with the view
    op's node renamed ``node_name`` (PyTorch's ViewBackward0_copy, UnsafeSplitBackward0, ...)."""
    if isinstance(r, (tuple, list)):
        return tuple(_as_copy(p, node_name) for p in r)
    if type(r) is _batching.BatchedTensor:   # under vmap: a batched copy (nodes are the physical graph's)
        return r.clone()
    d = r._data
    out = make(backend_of(d).copy(d))
    node = r.grad_fn
    if node is not None:
        cls = _COPY_NODES.get((type(node), node_name))
        if cls is None:
            if isinstance(node, S._MultiViewNode):
                cls = type(node_name, (S._MultiViewNode,), {"__slots__": ()})
            else:
                cls = S._node(node_name)
                install_saved_attrs(node._prim, cls)
            _COPY_NODES[(type(node), node_name)] = cls
        node.__class__ = cls
        out.grad_fn, out._output_nr, out._requires_grad = node, r._output_nr, True
    if r._fw_grad is not None:
        # a copy of the tangent on the graph (a detached one would cut reverse over forward off the inputs)
        out._fw_grad = apply(S.clone_p, (r._fw_grad,))
        track_tangent(out)
    return out


def _named(fn, name: str):
    """``fn`` (a view op's composite) raising under ``name``: a Tensor check first, and the op's name at the start of
    the view op's argument errors (``view(): ...`` from view_copy says ``view_copy(): ...``, as PyTorch's)."""
    def op(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        try:
            return fn(input, *args, **kwargs)
        except (TypeError, RuntimeError, IndexError, ValueError) as e:
            msg = str(e)
            head = re.match(r"(\w+)\(\)", msg)
            if head is None or head.group(1) == name:
                raise
            raise type(e)(name + msg[len(head.group(1)):]) from None
    op.__name__ = op.__qualname__ = name
    op.__doc__ = fn.__doc__
    return op


def _copy_of(view_fn, name: str, node: str | None = None):
    """``<view op>_copy`` from the view op ``view_fn`` (its arguments and errors); ``node``: its node's name where
    it is not the view op's with "_copy"."""
    def fn(input, *args, **kwargs):
        r = view_fn(input, *args, **kwargs)
        first = r[0] if isinstance(r, (tuple, list)) and r else r
        fn_node = getattr(first, "grad_fn", None)
        return _as_copy(r, node or (type(fn_node).__name__ + "_copy" if fn_node is not None else ""))
    fn.__doc__ = f"A copy of ``{view_fn.__name__.lstrip('_')}(input, ...)`` (not a view), with its gradient."
    return _named(fn, name)


def _alias(input: Tensor) -> Tensor:
    return S.view(input, tuple(input._data.shape))


def _detach(input: Tensor) -> Tensor:
    return input.detach()


register(_copy_of(_alias, "alias_copy", "AliasBackward0_copy"))
for _view_fn, _name in ((S.view, "view_copy"), (S.expand, "expand_copy"),
                        (S.permute, "permute_copy"), (S.select, "select_copy"), (S.squeeze, "squeeze_copy"),
                        (S.t, "t_copy"), (S.transpose, "transpose_copy"), (S.unbind, "unbind_copy"),
                        (S.unfold, "unfold_copy"), (S.unsqueeze, "unsqueeze_copy"), (S.diagonal, "diagonal_copy"),
                        (S.split, "split_copy"), (_detach, "detach_copy"), (as_strided, "as_strided_copy")):
    register(_copy_of(_view_fn, _name))


def _slice_view(input: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input[..., start:end:step, ...]`` along ``dim`` (aten::slice, SliceBackward0)."""
    d = wrap_dim(dim, input._data.ndim, "slice")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return input[(slice(None),) * d + (slice(start, end, step),)]


register(_copy_of(_slice_view, "slice_copy"))


def _split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """Pieces of the listed sizes along ``dim`` (views)."""
    if not isinstance(split_sizes, (list, tuple, Size)):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                        f"{type(split_sizes).__name__}")
    return S.split(input, list(split_sizes), dim)


split_with_sizes = register(_named(_split_with_sizes, "split_with_sizes"), method=True)


register(_copy_of(_split_with_sizes, "split_with_sizes_copy"))


def _unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` whose pieces are new tensors (PyTorch's UnsafeSplitBackward0)."""
    return _as_copy(S.split(input, split_size, dim), "UnsafeSplitBackward0")


unsafe_split = register(_named(_unsafe_split, "unsafe_split"), method=True)


def _unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes`` whose pieces are new tensors (UnsafeSplitWithSizesBackward0)."""
    return _as_copy(_split_with_sizes(input, split_sizes, dim), "UnsafeSplitWithSizesBackward0")


unsafe_split_with_sizes = register(_named(_unsafe_split_with_sizes, "unsafe_split_with_sizes"), method=True)


def _unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` whose pieces are new tensors (PyTorch's unsafe_split underneath: UnsafeSplitBackward0)."""
    pieces = S.chunk(input, chunks, dim)
    return _as_copy(pieces, "UnsafeSplitBackward0" if pieces and pieces[0].grad_fn is not None and
                    type(pieces[0].grad_fn).__name__ == "SplitBackward0" else "UnsafeSplitWithSizesBackward0")


unsafe_chunk = register(_named(_unsafe_chunk, "unsafe_chunk"), method=True)


def _narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``narrow(input, dim, start, length)`` (NarrowCopyBackward0)."""
    return _as_copy(S.narrow(input, dim, start, length), "NarrowCopyBackward0")


narrow_copy = register(_named(_narrow_copy, "narrow_copy"), method=True)


# ----- the scatters: a copy of the input with src written at a view of it ---------------------------------------

def _scatter(input: Tensor, src: Tensor, view: Tensor, op: str, what: str, node: str) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    if tuple(src._data.shape) != tuple(view._data.shape):
        raise RuntimeError(f"expected src to have a size equal to the {what} of self. src size = "
                           f"{list(src._data.shape)}, {what} size = {list(view._data.shape)}")
    # (the view was made of input.detach(), a tensor of no base: its steps start at input's layout)
    return apply(view_scatter_p, (input, src), {"steps": view._view_steps}, S._node(node))


def _view_for_scatter(input: Tensor, op: str, fn, *args) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    with _gm.no_grad():
        return fn(input.detach(), *args)   # only its steps are wanted


@register(method=True)
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input[..., start:end:step, ...]`` along ``dim``."""
    view = _view_for_scatter(input, "slice_scatter", _slice_view, dim, start, end, step)
    return _scatter(input, src, view, "slice_scatter", "slice", "SliceScatterBackward0")


@register(method=True)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input.select(dim, index)``."""
    view = _view_for_scatter(input, "select_scatter", S.select, dim, index)
    return _scatter(input, src, view, "select_scatter", "slice", "SelectScatterBackward0")


@register(method=True)
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on its diagonal ``offset`` of ``dim1``/``dim2``."""
    view = _view_for_scatter(input, "diagonal_scatter", S.diagonal, offset, dim1, dim2)
    if tuple(src._data.shape) != tuple(view._data.shape) if isinstance(src, Tensor) else False:
        raise RuntimeError(f"expected src to have a size equal to the diagonal of the input.Got "
                           f"{list(src._data.shape)} for a diagonal of shape {list(view._data.shape)}")
    return _scatter(input, src, view, "diagonal_scatter", "diagonal", "DiagonalScatterBackward0")


def _as_strided_scatter_params(input, src, size, stride, storage_offset) -> dict:
    """as_strided_scatter's checks, and the as_strided step (of a copy of input) that src is written to."""
    if not isinstance(input, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    size = _ints(size, "as_strided_scatter", "size", 3)
    stride = _ints(stride, "as_strided_scatter", "stride", 4)
    offset = 0 if storage_offset is None else int(storage_offset)
    shape = tuple(input._data.shape)
    in_stride = tuple(input.stride()) if _dense(input) else c_strides(shape)
    _check_geometry(size, stride, offset, input._data.itemsize,
                    _required_bytes(shape, in_stride, 0, input._data.itemsize), "as_strided_scatter")
    if (input._requires_grad or getattr(src, "_requires_grad", False)) and _gm._state.enabled and \
            not input.is_contiguous():
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous inputs")
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    if tuple(src._data.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(size)}")
    return {"size": size, "stride": stride, "storage_offset": offset, "in_stride": in_stride, "in_offset": 0}


@register(method=True)
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` (its layout kept where it is dense) with ``src`` written at ``as_strided(size, stride,
    storage_offset)`` of the copy's storage (the offset defaults to 0)."""
    params = _as_strided_scatter_params(input, src, size, stride, storage_offset)
    return apply(view_scatter_p, (input, src), {"steps": ((as_strided_p, params),)},
                 S._node("AsStridedScatterBackward0"))


# ----- strided creation --------------------------------------------------------------------------------------------

def _strided_empty(size: tuple, stride: tuple, npd, be):
    """An array of ``size`` with strides ``stride`` over a new zeroed storage of the bytes they need."""
    if 0 in size:
        return be.zeros(size, npd)
    itemsize = D.from_numpy_dtype(npd).itemsize
    root = be.zeros((_required_bytes(size, stride, 0, itemsize) // itemsize,), npd)
    return NAMESPACES[type(root)].as_strided(root, size, stride, 0, (1,), 0)


@register()
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                  requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` with strides ``stride`` (in elements) over new memory (zeros in ember)."""
    size = _ints(size, "empty_strided", "size", 1)
    stride = _ints(stride, "empty_strided", "stride", 2)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    _check_geometry(size, stride, 0, 1, 1 << 62, "empty_strided")
    npd = _check_dtype(dtype, "empty_strided", D._default_float).np
    rg = _check_bool(requires_grad, "empty_strided")
    be = _check_device(device, "empty_strided")
    D.check_layout(layout, "empty_strided")
    return _finish(_strided_empty(size, stride, npd, be), rg, device)


@register()
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """An empty tensor of ``size`` whose memory holds its dims in the order ``physical_layout``."""
    size = _ints(size, "empty_permuted", "size", 1)
    perm = _ints(physical_layout, "empty_permuted", "physical_layout", 2)
    if len(perm) != len(size):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError("Duplicate dim not allowed" if len(set(perm)) != len(perm) else
                           f"Dimension out of range (expected to be in range of [{-len(size)}, {len(size) - 1}], "
                           f"but got {max(perm)})")
    phys = c_strides(tuple(size[p] for p in perm))
    stride = [0] * len(size)
    for i, p in enumerate(perm):
        stride[p] = phys[i]
    return empty_strided(size, tuple(stride), dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


@method("new_empty_strided")
def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None, pin_memory: bool = False,
                      requires_grad: bool = False) -> Tensor:
    """``empty_strided`` with ``self``'s dtype and device unless given."""
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype, layout=layout,
                         device=self.device if device is None else device, requires_grad=requires_grad)


# ----- the storage side of a tensor ----------------------------------------------------------------------------------

@method("storage_offset")
def storage_offset(self: Tensor) -> int:
    """Where the tensor's first element sits in its storage, in elements."""
    return _storage_of(self)[2]


@method("untyped_storage")
def untyped_storage(self: Tensor) -> UntypedStorage:
    """The tensor's memory (shared by its views) as bytes."""
    if type(self) is _batching.BatchedTensor:   # (an example inside vmap: PyTorch's refusal)
        raise NotImplementedError("Cannot access storage of BatchedTensorImpl")
    return UntypedStorage._of(_storage_of(self)[1])


@method("storage")
def storage(self: Tensor) -> TypedStorage:
    """The tensor's memory as elements of its dtype (``TypedStorage``: deprecated, with PyTorch's warning)."""
    warn_typed_storage()
    return TypedStorage(untyped_storage(self), self.dtype)


_STORAGE_TYPES: dict = {}


@method("storage_type")
def storage_type(self: Tensor) -> type:
    """The legacy storage class of the tensor's dtype (``torch.FloatStorage``, ...)."""
    name = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(self.dtype._name, "Typed")
    cls = _STORAGE_TYPES.get(name)
    if cls is None:
        cls = _STORAGE_TYPES[name] = type(f"{name}Storage", (TypedStorage,), {"__slots__": (), "__module__": "torch"})
    return cls


method("nbytes", property(lambda self: self._data.size * self._data.itemsize,
                          doc="The bytes of the tensor's elements (numel * itemsize)."))
method("itemsize", property(lambda self: self._data.itemsize, doc="The bytes of one element."))


@method("is_shared")
def is_shared(self: Tensor) -> bool:
    """Whether the tensor's storage is in shared memory (``share_memory_()``, or received from another process)."""
    return untyped_storage(self).is_shared()


@method("share_memory_")
def share_memory_(self: Tensor) -> Tensor:
    """Moves the tensor's storage to shared memory (a no-op if it is there), with every tensor viewing it:
    processes that receive the tensor (``ember.multiprocessing``) read and write the same elements."""
    _share(_storage_of(self)[1], self)
    return self


@method("is_pinned")
def is_pinned(self: Tensor, device=None) -> bool:
    return self.__dict__.get("_pinned", False)


@method("pin_memory")
def pin_memory(self: Tensor, device=None) -> Tensor:
    """A copy in page-locked memory, for faster copies to the GPU; without one PyTorch raises (as here). ember
    marks the copy pinned (``is_pinned()``); its copies to the GPU are plain ones."""
    from ..devices.cuda import is_available   # (CuPy is imported on first use only)
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if is_pinned(self):
        return self
    out = self.clone()
    out.__dict__["_pinned"] = True
    return out


@method("is_set_to")
def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same storage with the same offset, sizes and strides."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    if type(self) is _batching.BatchedTensor or type(tensor) is _batching.BatchedTensor:
        raise RuntimeError("Batching rule not implemented for aten::is_set_to. We could not generate a fallback.")
    a, b = _storage_of(self), _storage_of(tensor)
    return a[1] is b[1] and a[2] == b[2] and self.shape == tensor.shape and self.stride() == tensor.stride()


def _set_data(self: Tensor, data) -> Tensor:
    """``self`` now holds ``data`` (another layout or memory): an in-place change of its metadata."""
    check_inplace(self, _gm._state.enabled and self._requires_grad)
    if self._requires_grad and self.grad_fn is None and _gm._state.enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    self._data = data
    self._vc[0] += 1
    return self


@method("set_")
def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """``self`` views ``source``'s memory: a tensor's (its layout too), or a storage's at ``storage_offset`` with
    ``size`` and ``stride`` (contiguous by default); no source: an empty tensor."""
    if source is None:
        return _set_data(self, backend_of(self._data).zeros((0,), self._data.dtype))
    if isinstance(source, Tensor):
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(f"Could not set tensor of type {D.type_word(source._data.dtype)} to a tensor of "
                               f"type {D.type_word(self._data.dtype)}")
        return _set_data(self, source._data)
    if isinstance(source, TypedStorage):
        source = source.untyped()
    if not isinstance(source, UntypedStorage):
        raise TypeError(f"set_(): argument 'source' must be Storage or Tensor, not {type(source).__name__}")
    isz = self._data.itemsize
    size = (source.nbytes() // isz,) if size is None else _ints(size, "set_", "size", 3)
    stride = c_strides(size) if stride is None else _ints(stride, "set_", "stride", 4)
    _check_geometry(size, stride, int(storage_offset), isz, source.nbytes(), "set_")
    root = source._root
    flat = backend_of(root).storage_bytes(root)   # the storage's bytes as one array, then as self's dtype
    elems = flat[:flat.shape[0] - flat.shape[0] % isz].view(self._data.dtype)
    return _set_data(self, NAMESPACES[type(root)].as_strided(elems, size, stride, int(storage_offset), (1,), 0))


@method("resize_")
def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """``self`` with sizes ``sizes`` (contiguous) over its storage from its offset; the storage grows (its bytes
    kept) when it is too small."""
    size = _sizes_from_args(sizes, "resize_")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    be, root, offset = _storage_of(self)
    isz = self._data.itemsize
    need = _required_bytes(size, c_strides(size), offset, isz)
    flat = be.storage_bytes(root)
    if need > flat.shape[0]:
        grown = be.zeros((need,), flat.dtype)
        be.copyto(grown[:flat.shape[0]], flat)
        flat = grown
    elems = flat[:flat.shape[0] - flat.shape[0] % isz].view(self._data.dtype)
    return _set_data(self, NAMESPACES[type(elems)].as_strided(elems, size, c_strides(size), offset, (1,), 0))


@register(method=True)
def resize_as_(self: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    return resize_(self, *the_template.shape)


@method("resize")
def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: a view of ``self`` with ``sizes`` (the same number of elements)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, _sizes_from_args(sizes, "resize"))


def _resize_view(self: Tensor, size: tuple) -> Tensor:
    if math.prod(size) != self._data.size:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, size))} ({math.prod(size)} elements in total), "
                           f"but the given tensor has a size of {'x'.join(map(str, self._data.shape))} "
                           f"({self._data.size} elements). autograd's resize can only change the shape of a given "
                           "tensor, while preserving the number of elements. ")
    return S.reshape(self, size)


@method("resize_as")
def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: ``self.resize(tensor.size())``."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, tuple(tensor.shape))


@method("const_data_ptr")
def const_data_ptr(self: Tensor) -> int:
    """``data_ptr()``: ember has no copy-on-write storage, so reading and writing pointers are the same."""
    return self.data_ptr()


@method("dim_order")
def dim_order(self: Tensor, *, ambiguity_check=False) -> tuple:
    """The dims from outermost to innermost in memory: PyTorch's insertion sort over the strides (its
    compute_elementwise_output_logical_to_physical_perm), so ambiguous layouts get the order PyTorch returns."""
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and all(isinstance(f, D.memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = tuple(self.shape), self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    ambiguous = len(set(strides)) < len(strides) or 1 in shape
    if (ambiguity_check is not False and ambiguous
            and sum(self.is_contiguous(memory_format=f) for f in formats) != 1):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    ndim = len(shape)
    if ndim < 2:
        return tuple(range(ndim))

    def ge(a: int, b: int) -> bool:
        return True if b == 0 else False if a == 0 else a >= b or a % b == 0

    def order(a: int, b: int) -> int:   # PyTorch's should_swap
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        return -1 if ge(sb, sa) else 1 if ge(sa, sb) else 0

    contiguous = self.is_contiguous()
    channels_last = ndim == 4 and self.is_contiguous(memory_format=D.channels_last) or \
        ndim == 5 and self.is_contiguous(memory_format=D.channels_last_3d)
    if contiguous and not channels_last:
        return tuple(range(ndim))
    if channels_last and not contiguous:
        return (0, *range(2, ndim), 1)
    perm = insertion_order(ndim, order)
    if ambiguity_check is not False and any(order(perm[i], perm[i + 1]) != -1 for i in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


@method("new")
def new(self: Tensor, *args, device=None) -> Tensor:
    """The legacy constructor with ``self``'s dtype and device: ``new()`` (empty), ``new(*sizes)`` (uninitialised:
    zeros here), ``new(sequence)``, ``new(tensor)`` (the same tensor's memory, dtypes matching)."""
    dev = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype is not self.dtype:
            raise TypeError(f"expected {self.dtype} (got {args[0].dtype})")
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], (UntypedStorage, TypedStorage)):
        return make(backend_of(self._data).zeros((0,), self._data.dtype)).set_(args[0])
    if len(args) == 1 and isinstance(args[0], Size):  # a torch.Size is a shape, not data (torch.Size([]) too)
        return C.zeros(args[0], dtype=self.dtype, device=dev)
    if len(args) == 1 and not isinstance(args[0], int) and not hasattr(args[0], "__index__"):
        return C.tensor(args[0], dtype=self.dtype, device=dev)
    return C.zeros(*(args or (0,)), dtype=self.dtype, device=dev)


# ----- vmap -------------------------------------------------------------------------------------------------
def _side_by_side(params: dict, in_size: tuple, n: int) -> dict:
    """as_strided's ``params`` (one example's input layout ``in_stride``/``in_offset`` of ``in_size`` and its
    result's ``size``/``stride``/``storage_offset``, in a storage of its own) for ``n`` examples laid side by side
    in one storage: each in a region past every position either layout reaches (a leading batch dim whose stride
    is that many elements, the same for input and result)."""
    size, stride, in_stride = tuple(params["size"]), tuple(params["stride"]), tuple(params["in_stride"])
    region = max(1, params["in_offset"] + _storage_size(in_size, in_stride),
                 params["storage_offset"] + _storage_size(size, stride))
    return dict(params, size=(n,) + size, stride=(region,) + stride, in_stride=(region,) + in_stride)


def _region_rule(call, args, bdims, params, size):
    """as_strided and as_strided_backward met with a batched tensor (a gradient, a tangent, a stand-in: the public
    as_strided has its own rule, ``_as_strided_rule``): their parameters are each example's layout in a storage of
    its own, so the examples go side by side."""
    x = _batching._moved(args[0], bdims[0])
    if "in_size" in params:   # as_strided_backward: the gradient is the result's example
        new = _side_by_side(params, tuple(params["in_size"]), size)
        new["in_size"] = (size,) + tuple(params["in_size"])
    else:
        new = _side_by_side(params, tuple(x._data.shape[1:]), size)
    return call([x], new), 0


def _strided_rule(call, args, bdims, params, size):
    """slice_inverse (as as_strided) reads an example's storage by its layout (``in_stride``/``in_offset`` where its
    elements sit, ``stride``/``storage_offset`` where the result's do). Where the physical tensor lays each example
    out so (the batch dim first, its other strides ``in_stride``), example b's storage starts one batch stride after
    example b - 1's: one view of the physical storage with the batch stride in front reads what each example's own
    call reads (functorch's rule for as_strided), the memory beyond an example's elements included. Otherwise (a
    lower vmap level's tensor, another layout) the examples run one by one."""
    a, bd = args[0], bdims[0]
    if bd is None or type(a) is not Tensor:
        return _batching.loop(call, args, bdims, params, size)
    a = _batching._moved(a, bd)
    st = tuple(a.stride())
    off = _storage_of(a)[2]
    start = params["storage_offset"] - params["in_offset"] + off   # example 0's result in the physical storage
    if st[1:] != tuple(params["in_stride"]) or start < 0:
        return _batching.loop(call, args, bdims, params, size)
    new = dict(params, size=(size,) + tuple(params["size"]), stride=st[:1] + tuple(params["stride"]),
               storage_offset=start, in_stride=st, in_offset=off)
    rest = []
    if "dim" in params:   # slice_inverse: src (its layout only) batched too, the slice's dim past the batch dim
        new["dim"] = params["dim"] + 1
        src, sbd = args[1], bdims[1]
        src = src.unsqueeze(0).expand((size,) + tuple(src._data.shape)) if sbd is None else _batching._moved(src, sbd)
        rest.append(src)
    return call([a, *rest], new), 0


_batching.by_name(_region_rule, "as_strided", "as_strided_backward")
_batching.by_name(_strided_rule, "slice_inverse")
_batching.by_name(_batching.view_replay_rule, "view_replay")
_batching.by_name(_batching.copy_slices_rule, "copy_slices")
_batching.by_name("fallback", "view_scatter", "view_scatter_add", "view_scatter_zeros",
                  why="a backward helper (ember differentiates the physical graph, so vmap meets it only when a program calls it directly)")


def _storage_size(size, stride) -> int:
    """The storage a layout reaches from its offset, in elements (PyTorch's storage_size_for; 0 when empty)."""
    if 0 in size:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def _check_in_example(x: Tensor, size: tuple, stride: tuple, offset: int) -> None:
    """torch.func's check of ``as_strided`` on an example ``x``: the result may read only the memory between the
    example's first and last positions (each example's view is taken at its own place in the batch)."""
    base = x.storage_offset()
    reach = _storage_size(size, stride)
    if not reach:
        return
    head = f"result = tensor.as_strided({list(size)}, {list(stride)}, {offset}) can access memory outside of `tensor`. "
    tail = ("This is not supported inside of vmap, please try to rewrite the `as_strided` call as a sequence of "
            "PyTorch view operations")
    own = _storage_size(tuple(x._data.shape), x.stride())
    if not own:
        raise RuntimeError(head + "`tensor` has no storage but the passed-in (size, stride, storage_offset) imply a "
                                  "result with some storage. " + tail)
    if reach + offset > own + base or offset < base:
        raise RuntimeError(head + f"`result` can access some memory in range [{offset}, {reach + offset}], but "
                                  f"`tensor` can only access some memory in range [{base}, {own + base}]. " + tail)


def _apart(x: Tensor, n: int, step: int) -> bool:
    """Whether each example of ``x`` fills its own memory (from its first position, no gaps, no repeats) apart
    from the others': then a view of the physical tensor reads only the example's own elements (the check above
    bounds it), and its gradient is each example's."""
    return _dense(x) and (n <= 1 or step >= x._data.size)


def _differentiated_per_example(p: Tensor, level: int) -> bool:
    """Whether reverse mode may differentiate ``p`` inside the vmap at ``level`` (grad, vjp, jacrev started
    inside it: each example's derivative). A transform around the vmap, and forward mode (its tangent a view of the
    physical tangent), differentiate the physical view, as torch.func does."""
    return _batching.peel(p)[1]._requires_grad and _gm._state.enabled and \
        _batching.TRANSFORMS[0] > _batching.frame_of(level).transforms


def _per_example_gradient(r: Tensor, p: Tensor, x: Tensor, size: tuple, stride: tuple, offset: int) -> Tensor:
    """``r`` (the physical view) with torch.func's gradient where an example's view reaches memory that is not
    its own elements (another example's, or a gap): there the view's values are the memory's, but a transform
    inside vmap differentiates each example's as_strided alone (nothing flows to positions outside its
    elements). The view's values, and the gradient of the examples' layouts taken apart (as_strided on regions
    side by side) where the example has elements; the result is a copy, not a view."""
    base = x.storage_offset()
    params = _side_by_side({"size": size, "stride": stride, "storage_offset": offset - base,
                            "in_stride": tuple(x.stride()), "in_offset": 0}, tuple(x._data.shape), p._data.shape[0])
    own = apply(as_strided_p, (p,), params)
    covered = apply(as_strided_p, (C.ones_like(p),), params) != 0
    return own.where(covered, r.detach())


def _as_strided_rule(orig, args, kwargs, level):
    """as_strided / as_strided_ under vmap, torch.func's meaning: each example's view is the example's own
    ``as_strided`` with its offset counted as if its storage started where the batch's does (the example at index
    b reads ``storage_offset + b * S``, S the batch dim's stride): one as_strided of the physical tensor with the
    batch dim kept in front. A loop over examples would differ (the offset is absolute: every example would read
    the first one's memory). as_strided_ makes the example (the batched tensor itself) that view; PyTorch 2.13's
    vmap leaves it unchanged there (its fallback changes slices of the physical tensor)."""
    inplace = orig.__name__ == "as_strided_"
    fn = as_strided_ if inplace else as_strided
    bound = _bp.bind(fn, args, kwargs)
    x = None if bound is None else bound.get("input")
    if not isinstance(x, Tensor) or not _bp.is_batched(x, level):
        return _bp.own(orig, args, kwargs, level)
    name = "as_strided_" if inplace else "as_strided"
    size = _ints(bound.get("size"), name, "size", 2)
    stride = _ints(bound.get("stride"), name, "stride", 3)
    if len(size) != len(stride):
        raise RuntimeError(f"Tensor.as_strided(size, stride, ...): size and stride must have the same length! Got "
                           f"size {list(size)} and stride {list(stride)}")
    offset = bound.get("storage_offset")
    offset = x.storage_offset() if offset is None else int(offset)
    _check_in_example(x, size, stride, offset)
    p = _batching._moved(x._phys, x._bdim)
    n = p._data.shape[0]
    step = p.stride(0)
    if step == 0 and n > 1 and not inplace:
        # every example is the same memory (an expanded input: jacfwd's primal): each example's view of it, which
        # is torch.func's result too; one view with a batch stride of 0 would give a tangent batched over the
        # examples one value per position (ember's forward mode replays the view on the tangent's values)
        return _batching.wrap(S.stack([as_strided(p.select(0, b), size, stride, offset) for b in range(n)]), 0,
                              level)
    r = as_strided(p, (n,) + size, (step,) + stride, offset)
    if not inplace and not _apart(x, n, step) and _differentiated_per_example(p, level):
        r = _per_example_gradient(r, p, x, size, stride, offset)
    if not inplace:
        return _batching.wrap(r, 0, level)
    new = _batching.wrap(r, 0, level)
    x._phys, x._bdim, x._data, x._vc = new._phys, new._bdim, new._data, new._vc
    return x


_bp.signature(as_strided)
_bp.signature(as_strided_)
_batching.PUBLIC_RULES["as_strided"] = _as_strided_rule   # (as_strided_ looks it up by this name too)


def _as_strided_scatter_rule(orig, args, kwargs, level):
    """as_strided_scatter under vmap (PyTorch 2.13's vmap has no rule for it and refuses it): each example's copy
    with its src written at the example's own as_strided (the offset counted from the example's start, as a loop
    over fresh examples gives); the examples' layouts side by side in one storage, each in its own region."""
    bound = _bp.bind(as_strided_scatter, args, kwargs)
    if bound is None:
        return _bp.own(orig, args, kwargs, level)
    input, src = bound.get("input"), bound.get("src")
    params = _as_strided_scatter_params(input, src, bound.get("size"), bound.get("stride"),
                                        bound.get("storage_offset"))
    step = _side_by_side(params, tuple(input._data.shape), _bp.batch_size(level))
    out = apply(view_scatter_p, (_bp.front(input, level), _bp.front(src, level)), {"steps": ((as_strided_p, step),)},
                S._node("AsStridedScatterBackward0"))
    return _batching.wrap(out, 0, level)


_bp.signature(as_strided_scatter)
_batching.PUBLIC_RULES["as_strided_scatter"] = _as_strided_scatter_rule


# the *_scatter ops of a view: every tensor batched, the view's dims shifted past the batch dim
_bp.public_rule(slice_scatter, _bp.dims_public(slice_scatter, ("dim",)))
_bp.public_rule(select_scatter, _bp.dims_public(select_scatter, ("dim",)))
_bp.public_rule(diagonal_scatter, _bp.dims_public(diagonal_scatter, ("dim1", "dim2")))
