"""Indexing: ``x[index]`` and ``x[index] = value``, and the scatter ops their gradients need."""
from __future__ import annotations

import numpy as np

from .._index import SplitIndex, split as split_index, view_of
from .._tensor import Tensor
from ..autograd.graph import node_class
from ._primitive import PrimNode, _state, apply, defprim, fwd_state
from ._registry import graph, method, register
from ._views import apply_inplace, check_inplace
from ._util import scalar_or_tensor


def _getitem(xp, a, index):
    return xp.getitem(a, index)


def _getitem_vjp(xp, g, out, a, index):
    return xp.index_put_zeros(g, index, a.shape)


# Basic indexing (ints, slices, None, Ellipsis) gives a view; advanced indexing a copy. Same rules.
getitem_view_p = defprim("getitem", "SliceBackward0", _getitem, _getitem_vjp, jvp="linear", is_view=True)
getitem_p = defprim("index", "IndexBackward0", _getitem, _getitem_vjp, jvp="linear")

index_put_zeros_p = defprim(
    "index_put_zeros", "IndexPutBackward0",
    lambda xp, g, index, shape: xp.index_put_zeros(g, index, shape),
    vjp=lambda xp, g, out, a, index, shape: xp.getitem(g, index), jvp="linear")

fill_index_p = defprim(
    "fill_index", "IndexFillBackward0",
    lambda xp, a, index, value: xp.fill_index(a, index, value),
    vjp=lambda xp, g, out, a, index, value: xp.fill_index(g, index, 0.0), jvp="elementwise")

# x[index] = v as an op of (x, v): x's gradient is zero where it was overwritten.
index_put_p = defprim(
    "index_put", "CopySlices",
    lambda xp, a, v, index: xp.fill_index(a, index, v),
    vjp=(lambda xp, g, out, a, v, index: xp.fill_index(g, index, 0.0),
         lambda xp, g, out, a, v, index: xp.getitem(g, index)),
    jvp="linear")

# zero_() and fill_(): the old values are overwritten, so their gradient is zero.
fill_p = defprim("fill", "FillBackward2", lambda xp, a, value: xp.fill_index(a, Ellipsis, value),
                 vjp=lambda xp, g, out, a, value: xp.fill_index(g, Ellipsis, 0.0), jvp="elementwise")

_NAMES = {int: "SelectBackward0", slice: "SliceBackward0", type(None): "UnsqueezeBackward0"}


def _convert_index(index, shape):
    """A NumPy index from a PyTorch one, and whether it is basic (so the result is a view)."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    basic = True
    last = None
    for ix in index:
        if isinstance(ix, Tensor):
            arr = ix._data
            if arr.dtype.kind == "b":
                basic = False
                out.append(arr)
            elif arr.dtype.kind in "iu":
                if arr.ndim == 0:
                    out.append(int(arr))
                    last = int
                else:
                    basic = False
                    out.append(arr)
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        elif isinstance(ix, (list, np.ndarray)):
            arr = np.asarray(ix)
            if arr.dtype.kind not in "iub" and arr.size:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            basic = False
            out.append(arr.astype(np.int64) if arr.dtype.kind != "b" and arr.size else arr.astype(
                bool if arr.dtype.kind == "b" else np.int64))
        elif isinstance(ix, (bool, np.bool_)):
            basic = False
            out.append(np.bool_(ix))
        elif isinstance(ix, (int, np.integer)):
            out.append(int(ix))
            last = int
        elif isinstance(ix, slice):
            for v in (ix.start, ix.stop, ix.step):
                if v is not None and not isinstance(v, (int, np.integer, Tensor)):
                    raise TypeError(f"slice indices must be integers or None or have an __index__ method")
            if ix.step is not None and int(ix.step) <= 0:
                raise ValueError("step must be greater than zero")
            out.append(ix)
            if ix != slice(None):
                last = slice
        elif ix is None:
            out.append(None)
            last = type(None)
        elif ix is Ellipsis:
            out.append(ix)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                             f"are valid indices (got {type(ix).__name__})")
    name = "IndexBackward0" if not basic else _NAMES.get(last, "AliasBackward0")
    if basic and Ellipsis not in out:
        # x[1] on a 1-d array gives NumPy a scalar (a copy); x[1, ...] gives a 0-d view, as PyTorch.
        out.append(Ellipsis)
    return tuple(out), basic, name


def _check_masks(idx, shape):
    """PyTorch's message for a bool mask whose shape does not match the dims it indexes (the plain
    case: no None or Ellipsis in the index, whose dims would need counting)."""
    if any(ix is None or ix is Ellipsis for ix in idx):
        return
    pos = 0
    for ix in idx:
        if isinstance(ix, np.ndarray) and ix.dtype == np.bool_:
            for j, n in enumerate(ix.shape):
                if pos + j < len(shape) and shape[pos + j] != n:
                    raise IndexError(f"The shape of the mask {list(ix.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at index {pos + j}")
            pos += ix.ndim
        elif not isinstance(ix, np.bool_):
            pos += 1


def _index_error(e, shape):
    msg = str(e).replace("axis", "dimension")
    if "boolean index did not match" in msg:
        return IndexError(f"The shape of the mask does not match the shape of the indexed tensor: {msg}")
    return IndexError(msg)


@register(name="__getitem__", module=False, method=True)
def getitem(self, index):
    idx, basic, name = _convert_index(index, self._data.shape)
    if not basic:
        _check_masks(idx, self._data.shape)
        idx = split_index(idx)
    prim = getitem_view_p if basic else getitem_p
    try:
        return apply(prim, (self,), {"index": idx}, node_class(name, PrimNode))
    except IndexError as e:
        raise _index_error(e, self._data.shape) from None


@register(name="__setitem__", module=False, method=True)
def setitem(self, index, value):
    idx, basic, _ = _convert_index(index, self._data.shape)
    if not basic:
        _check_masks(idx, self._data.shape)
        idx = split_index(idx)
    value = scalar_or_tensor(value, "__setitem__", "value")
    recording = _state.enabled and (self._requires_grad or (isinstance(value, Tensor) and value._requires_grad))
    if fwd_state.level and (self._fw_grad is not None or (isinstance(value, Tensor) and value._fw_grad is not None)):
        recording = True   # the op must run through apply_inplace to carry the tangent
    if not recording:
        check_inplace(self, False)
        try:
            view, ix = view_of(self._data, idx)
            view[ix] = value._data if isinstance(value, Tensor) else value
        except IndexError as e:
            raise _index_error(e, self._data.shape) from None
        except ValueError as e:
            raise RuntimeError(f"__setitem__: cannot assign a value of shape "
                               f"{list(np.shape(value._data if isinstance(value, Tensor) else value))} to "
                               f"the indexed region: {e}") from None
        self._vc[0] += 1
        return
    if basic and self.grad_fn is None and self._requires_grad and _state.enabled:
        # PyTorch writes x[basic index] = v through the view x[index].
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    # Mixed int/array indices write through a select view in PyTorch, hence CopySlices there too.
    node = None if basic or type(idx) is SplitIndex else node_class("IndexPutBackward0", PrimNode)
    if basic and all(ix is Ellipsis or ix == slice(None) for ix in idx) and \
            (not isinstance(value, Tensor) or not value._data.ndim):
        node = node_class("FillBackward3", PrimNode)   # x[...] = scalar fills the whole tensor
    apply_inplace(index_put_p, self, (value,), {"index": idx}, node)


@register(method=True)
def fill_(self, value):
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        value = value.item()
    return apply_inplace(fill_p, self, (), {"value": value})


@register(method=True)
def zero_(self):
    return apply_inplace(fill_p, self, (), {"value": 0}, node_class("ZeroBackward0", PrimNode))


@register(module=False, method=True)
def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    try:
        np.broadcast_shapes(src._data.shape, self._data.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must match "
                           f"the size of tensor b ({src._data.shape[-1]}) at non-singleton dimension "
                           f"{self._data.ndim - 1}") from None
    if not (_state.enabled and (self._requires_grad or src._requires_grad)) and not (
            fwd_state.level and (self._fw_grad is not None or src._fw_grad is not None)):
        check_inplace(self, False)
        np.copyto(self._data, src._data, casting="unsafe")
        self._vc[0] += 1
        return self
    return apply_inplace(index_put_p, self, (src,), {"index": (Ellipsis,)}, node_class("CopyBackwards", PrimNode))


graph("getitem", lambda x, index: apply(getitem_p, (x,), {"index": index}))
graph("index_put_zeros", lambda g, index, shape: apply(index_put_zeros_p, (g,), {"index": index, "shape": shape}))
graph("fill_index", lambda x, index, value: apply(fill_index_p, (x,), {"index": index, "value": value}))
