"""Indexing: ``x[index]``, ``x[index] = value``, gather/scatter, the index_* and masked_* ops, take/put.

Every op here is one of a few primitives over a NumPy index (a param, never a tensor input, so the
backward node's inputs are PyTorch's): the index is built and checked in Python first (``ember/_index``
for ``x[...]``; ``_grid_index`` for gather/scatter, whose index tensor addresses one element per entry;
``_dim_index`` for the index_* ops, which address whole slices along a dim), then

  getitem_p        x[ix]                    gather, index_select, masked_select, take, x[adv]
  index_put_p      x with x[ix] = v         scatter(src), index_copy, index_put, masked_fill(tensor), x[..] = v
  fill_index_p     x with x[ix] = scalar    scatter(value), index_fill, masked_fill
  index_add_p      x with v added at ix     scatter_add, index_add, index_put(accumulate), put(accumulate)
  scatter_reduce_p x reduced with v at ix   scatter_reduce, index_reduce

each with PyTorch's node name for the op. Repeated indices accumulate in every gradient (``np.add.at``).
"""
from __future__ import annotations

import warnings

from .. import _dtype as D
from .._device import NAMESPACES, device_of
from ..devices.index import SplitIndex
from ._index import Index, _as_sequence_tuple, check_value_shape, convert, raw_index
from .._tensor import Tensor, make, wrap_dim
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, _state, apply, apply_saving, broadcast_error, defprim, fwd_state
from ._registry import graph, register
from ..autograd import _batching
from . import _batch_public as _bp
from .elementwise import is_array_scalar, is_real, scalar_value, where
from .shape import _broadcast_shape
from .._util import F8_CHARS, check_bool, check_tensor, dtype_word, promote, refuse_shell, scalar_or_tensor
from ..autograd._views import apply_inplace, check_inplace

_FULL = slice(None)


def _node(name: str) -> type:
    return node_class(name, PrimNode)


# ----- primitives ----------------------------------------------------------------------------------

def _getitem(xp, a, index):
    return xp.getitem(a, index)


def _getitem_vjp(xp, g, out, a, index):
    return xp.index_put_zeros(g, index, a.shape)


# Basic indexing (ints, slices, None, Ellipsis) gives a view; advanced indexing a copy. Same rules.
getitem_view_p = defprim("getitem", _getitem, _getitem_vjp, node="SliceBackward0",
                                                                              jvp="linear", is_view=True)
getitem_p = defprim("index", _getitem, _getitem_vjp, jvp="linear")

index_put_zeros_p = defprim(
    "index_put_zeros",
    lambda xp, g, index, shape: xp.index_put_zeros(g, index, shape),
    node="IndexPutBackward0", vjp=lambda xp, g, out, a, index, shape: xp.getitem(g, index), jvp="linear")

fill_index_p = defprim(
    "fill_index",
    lambda xp, a, index, value: xp.fill_index(a, index, value),
    node="IndexFillBackward0", vjp=lambda xp, g, out, a, index, value: xp.fill_index(g, index, 0.0), jvp="elementwise",
    complex=True)

# x[index] = v as an op of (x, v): x's gradient is zero where it was overwritten.
def _whole(index) -> bool:
    """Whether a basic ``index`` selects everything (x[...] = v, x.copy_(v))."""
    return all(i is Ellipsis or (type(i) is slice and i == slice(None)) for i in index)


index_put_p = defprim(
    "index_put",
    lambda xp, a, v, index: xp.fill_index(a, index, v),
    # overwriting all of a: PyTorch's gradient is zeros_like(grad), a constant (not connected to grad)
    node="CopySlices",
    vjp=(lambda xp, g, out, a, v, index: xp.zeros_like(g) if _whole(index) else xp.fill_index(g, index, 0.0),
         lambda xp, g, out, a, v, index: xp.getitem(g, index)),
    jvp="linear")

# float16/bfloat16: PyTorch's scatter kernels (scatter_add, scatter_reduce, scatter(reduce=), and index_add where it
# calls scatter_add) reduce into a float32 buffer and round once (``acc=True``); its index_put_/put_ with accumulate
# and index_reduce add (multiply, ...) one index at a time in the tensor's dtype, rounding each step, as NumPy's
# ufunc.at does (``acc=False``).
_F32 = D.float32.np


def _buffered(a, acc: bool) -> bool:
    return acc and a.dtype.itemsize == 2 and a.dtype.kind in "fV"


def _index_add_forward(xp, a, v, index, alpha, acc=False):
    if _buffered(a, True):
        if acc:   # (alpha is 1 there)
            return xp.cast(xp.index_put_add(xp.cast(a, _F32), index, xp.cast(v, _F32)), a.dtype)
        if alpha != 1:
            # PyTorch's add per index (its scalar loop: short rows): alpha in the tensor's dtype, the product
            # rounded, then the sum (rows of 2 vectors or more take its fused multiply-add: not matched)
            al = xp.cast(xp.backend.full((), alpha, a.dtype), _F32)
            return xp.index_put_add(a, index, xp.cast(xp.cast(v, _F32) * al, a.dtype))
    return xp.index_put_add(a, index, v if alpha == 1 else v * alpha)


# x with alpha * v added at index (linear in x and v together).
index_add_p = defprim(
    "index_add", _index_add_forward,
    vjp=(lambda xp, g, out, a, v, index, alpha, acc=False: g,
         lambda xp, g, out, a, v, index, alpha, acc=False: xp.getitem(g, index) if alpha == 1 else
         xp.getitem(g, index) * alpha),
    jvp="linear")

# zero_() and fill_(): the old values are overwritten, so their gradient is zero.
fill_p = defprim("fill", lambda xp, a, value: xp.fill_index(a, Ellipsis, value),
                 node="FillBackward2",
                 vjp=lambda xp, g, out, a, value: xp.zeros_like(g), jvp="elementwise",
                 batch=True, complex=True)   # PyTorch's zeros_like(grad)


# scatter_reduce / index_reduce. The derivative of out[p] with respect to x[p] (``cx``, x's shape) and to
# each src element (``cs``, src's shape), following PyTorch's scatter_reduce_backward: prod divides out the
# factor, with zeros handled explicitly (a single zero's gradient is the product of the others, two zeros
# give 0); amax/amin share the gradient evenly among the elements equal to the result (x's included);
# mean divides by the count. Without include_self, x's value at a written position does not count.

def _reduce_coeffs(xp, out, a, s, index, reduce, include_self, acc=False):
    if reduce == "sum":
        cx, cs = xp.ones_like(a), xp.ones_like(s)
    elif reduce == "mean":
        n = xp.index_put_zeros(xp.ones_like(s), index, a.shape)
        if include_self:
            n = n + 1
        n = xp.where(n == 0, 1.0, n)
        cx = 1 / n
        cs = xp.getitem(cx, index)
    elif reduce in ("amax", "amin"):
        value = xp.getitem(out, index)
        self_is = a == out
        src_is = s == value
        # ties share: x's own value counts too (as bool * ones: the count in the inputs' dtype)
        n = self_is * xp.ones_like(a) + xp.index_put_zeros(src_is * xp.ones_like(s), index, a.shape)
        cx = self_is / n
        cs = src_is * xp.getitem(1 / n, index)
    else:   # prod
        self_zero = a == 0
        masked_self = xp.where(self_zero, 1.0, a)
        cx = xp.scatter_reduce(masked_self, s, index, "prod", include_self) / masked_self
        src_zero = s == 0
        zeros_at = xp.getitem(xp.index_put_zeros(src_zero * xp.ones_like(s), index, a.shape), index)
        single = src_zero & (zeros_at == 1)
        others = xp.scatter_reduce(a, xp.where(single, 1.0, s), index, "prod", include_self)
        cs = xp.where(single, xp.getitem(others, index), xp.getitem(out, index) / xp.where(src_zero, 1.0, s))
    if not include_self:
        cx = xp.fill_index(cx, index, 0.0)
    return cx, cs


def _reduce_vjp_x(xp, g, out, a, s, index, reduce, include_self, acc=False):
    return g * _reduce_coeffs(xp, out, a, s, index, reduce, include_self)[0]


def _reduce_vjp_s(xp, g, out, a, s, index, reduce, include_self, acc=False):
    return xp.getitem(g, index) * _reduce_coeffs(xp, out, a, s, index, reduce, include_self)[1]


def _reduce_jvp_x(xp, t, out, a, s, index, reduce, include_self, acc=False):
    return t * _reduce_coeffs(xp, out, a, s, index, reduce, include_self)[0]


def _reduce_jvp_s(xp, t, out, a, s, index, reduce, include_self, acc=False):
    return xp.index_put_zeros(t * _reduce_coeffs(xp, out, a, s, index, reduce, include_self)[1], index, a.shape)


def _scatter_reduce_forward(xp, a, s, index, reduce, include_self, acc=False):
    if not _buffered(a, acc):
        return xp.scatter_reduce(a, s, index, reduce, include_self)
    a32 = xp.cast(a, _F32)
    s32 = xp.cast(s, _F32) if not isinstance(s, (int, float)) else s
    out = xp.cast(xp.scatter_reduce(a32, s32, index, "sum" if reduce == "mean" else reduce, include_self), a.dtype)
    if reduce == "mean":   # the rounded sum divided by the count, as PyTorch's div_ in the tensor's dtype
        count = xp.scatter_reduce(xp.ones_like(a32), xp.ones_like(s32), index, "sum", include_self)
        out = xp.cast(xp.cast(out, _F32) / count, a.dtype)
    return out


scatter_reduce_p = defprim(
    "scatter_reduce", _scatter_reduce_forward,
    vjp=(_reduce_vjp_x, _reduce_vjp_s), jvp=(_reduce_jvp_x, _reduce_jvp_s), saves=(0, 1), saves_out=True,
    # complex (sum, prod, mean; amax/amin refuse them): out of place PyTorch refuses to differentiate
    # (_complex_reduce_checks); in place (and in forward mode) it runs its real formulas as written, without
    # conjugates (g * out / x for prod), so these do too
    complex=((_reduce_vjp_x, _reduce_vjp_s), (_reduce_jvp_x, _reduce_jvp_s)))


def _not_implemented(*args, **kwargs):
    raise RuntimeError("derivative for aten::scatter is not implemented")


# scatter(..., reduce='add'|'multiply'): PyTorch records a node that refuses to differentiate.
scatter_legacy_p = defprim(
    "scatter",
    lambda xp, a, s, index, reduce, acc=False: _scatter_reduce_forward(xp, a, s, index, reduce, True, acc),
    node="NotImplemented", vjp=(_not_implemented, _not_implemented), jvp=(_not_implemented, _not_implemented),
    complex=True)

# Indices reaching these from rules are NumPy indices; a tensor in one is read as public indexing reads it.
graph("getitem", lambda x, index: apply(getitem_p, (x,), {"index": raw_index(index)}))
graph("index_put_zeros", lambda g, index, shape: apply(index_put_zeros_p, (g,), {"index": raw_index(index),
                                                                                 "shape": shape}))
graph("fill_index", lambda x, index, value: apply(fill_index_p, (x,), {"index": raw_index(index), "value": value}))
graph("index_put_add", lambda x, index, v: apply(index_add_p, (x, v), {"index": raw_index(index), "alpha": 1}))
graph("scatter_reduce", lambda x, s, index, reduce, include_self: apply(
    scatter_reduce_p, (x, s), {"index": raw_index(index), "reduce": reduce, "include_self": include_self}))
# not differentiable: the device's kernel on the tensor's data
graph("nonzero_tuple", lambda x: tuple(make(i) for i in NAMESPACES[type(x._data)].nonzero_tuple(x._data)))
graph("mask_count", lambda mask: NAMESPACES[type(mask._data)].mask_count(mask._data))
graph("in_range", lambda idx, lo, hi: NAMESPACES[type(idx._data)].in_range(idx._data, lo, hi))
graph("grid_index", lambda idx, dim: NAMESPACES[type(idx)].grid_index(idx, dim))   # raw index in and out


# ----- x[index] and x[index] = value ---------------------------------------------------------------

_NAMES = {int: "SelectBackward0", slice: "SliceBackward0", type(None): "UnsqueezeBackward0"}


def _index_tensors(index, tensors_advanced: bool = False) -> tuple:
    """The tensors of an advanced ``index`` whose data its NumPy index holds (the node saves them, as PyTorch
    saves its indices): a tensor index, or the tensors in a tuple or list index; a 0-d integer tensor is an int
    (a select) unless ``tensors_advanced``."""
    if type(index) is Tensor:   # the common case first
        return (index,) if tensors_advanced or index._data.ndim else ()
    items = index if isinstance(index, (tuple, list)) else (index,)
    return tuple(t for t in items if isinstance(t, Tensor) and (tensors_advanced or t._data.ndim))


# ----- uint8 masks: deprecated (PyTorch's IndexingUtils.h), and a write of one value through one is masked_fill_'s

_UINT8 = D.uint8.np
_UINT8_INDEX = "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."
_UINT8_FILL = "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"


def _byte_masks(index, tensors_advanced: bool = False) -> bool:
    """Whether an advanced index holds uint8 masks (a 0-d one in ``x[t]`` is read as a bool)."""
    if type(index) is Tensor:   # the common case first
        return index._data.dtype == _UINT8 and (tensors_advanced or index._data.ndim > 0)
    return isinstance(index, (tuple, list)) and any(
        isinstance(t, Tensor) and t._data.dtype == _UINT8 and (tensors_advanced or t._data.ndim) for t in index)


def _byte_mask_write(index, value, tensors_advanced: bool = False, stacklevel: int = 3) -> None:
    """A write through an advanced index holding uint8 masks: PyTorch's index_put_ hands a one-element value
    written through one mask and no other advanced index to masked_fill_, which refuses uint8; any other
    such index is deprecated (its warning)."""
    items = index if isinstance(index, tuple) else (index,)
    advanced = sum(1 for t in items if (isinstance(t, Tensor) and (tensors_advanced or t._data.ndim))
                   or isinstance(t, (list, range)) or (not isinstance(t, Tensor) and hasattr(t, "__array__")))
    one_value = not isinstance(value, Tensor) or value._data.size == 1
    if one_value and advanced == 1 and not isinstance(index, list):
        raise RuntimeError(_UINT8_FILL)
    warnings.warn(_UINT8_INDEX, UserWarning, stacklevel=stacklevel)


@register(name="__getitem__", module=False, method=True)
def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: a view for basic indices, a copy (IndexBackward0) for advanced ones."""
    ix = convert(index, self._data.shape)
    if ix.basic:
        return apply(getitem_view_p, (self,), {"index": ix.np_index}, _node(_NAMES.get(ix.last, "AliasBackward0")))
    if _byte_masks(index):
        warnings.warn(_UINT8_INDEX, UserWarning, stacklevel=2)
    return apply_saving(getitem_p, (self,), {"index": ix.np_index}, None, _index_tensors(index))


def _assign_value(value, self: Tensor):
    if isinstance(value, Tensor) or type(value) in (bool, int, float, complex):
        return value
    if is_array_scalar(value) and type(value.item()) in (bool, int, float, complex):   # np.float32(2.0) and kin
        return value.item()
    raise TypeError(f"can't assign a {type(value).__name__} to a {self.type()}")


def _fit_value(value, ix: Index, strip: bool = True):
    """A tensor value checked to broadcast to the indexed region, with its leading 1s dropped (``x[i] = v``
    strips them; ``index_put`` does not)."""
    if not isinstance(value, Tensor):
        return value
    vs = check_value_shape(value._data.shape, ix, strip)
    return value.reshape(vs) if vs != value._data.shape else value


def _needs_graph(self: Tensor, *others) -> bool:
    """Whether an in-place write must be recorded (grad mode or forward mode sees one of the tensors)."""
    ts = (self,) + tuple(o for o in others if isinstance(o, Tensor))
    if _state.enabled and any(t._requires_grad for t in ts):
        return True
    return bool(fwd_state.level) and any(t._fw_grad is not None for t in ts)


@register(name="__setitem__", module=False, method=True)
def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: the value broadcasts to the indexed region and is cast to self's dtype."""
    ix = convert(index, self._data.shape)
    if not ix.basic and _byte_masks(index):
        _byte_mask_write(index, value)
    value = _fit_value(_assign_value(value, self), ix)
    if not isinstance(value, Tensor) and (self._data.dtype.kind in "iu" or type(value) is complex):
        value = D.checked_scalar(value, self._data.dtype)   # y[0] = inf: PyTorch's RuntimeError (floats take inf)
    if not ix.basic and isinstance(value, Tensor) and value._data.dtype != self._data.dtype and not (
            isinstance(index, Tensor) and index._data.dtype.kind == "b" and not value._data.ndim):
        # an advanced index writes with index_put_, which takes no other dtype (a mask and a 0-d value
        # are masked_fill_, which casts)
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_word(self)} for the "
                           f"destination and {_word(value)} for the source.")
    if not _needs_graph(self, value):
        check_inplace(self, False)
        NAMESPACES[type(self._data)].backend.set_index(self._data, ix.np_index,
                                                       value._data if isinstance(value, Tensor) else value)
        self._vc[0] += 1
        return
    if ix.basic and self.grad_fn is None and self._requires_grad and _state.enabled:
        # PyTorch writes x[basic index] = v through the view x[index].
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    # An advanced index after a basic one writes through the basic view in PyTorch, hence CopySlices there too.
    node = None if ix.basic or type(ix.np_index) is SplitIndex else _node("IndexPutBackward0")
    idx = ix.np_index
    if ix.basic and all(i is Ellipsis or i == _FULL for i in idx) and \
            (not isinstance(value, Tensor) or not value._data.ndim):
        node = _node("FillBackward3")   # x[...] = scalar fills the whole tensor
    apply_inplace(index_put_p, self, (value,), {"index": idx}, node, saved=() if ix.basic else _index_tensors(index))


def _fill_value(self: Tensor, value, op: str):
    if not (isinstance(value, (Tensor, bool, int, float, complex)) or is_array_scalar(value)):
        raise TypeError(f"{op}(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"{op} only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        return value.item()   # a tensor's value is cast as it is (1e5 into float16: inf); a number is checked
    return D.checked_scalar(value, self._data.dtype)


@register(method=True)
def fill_(self: Tensor, value) -> Tensor:
    """Fill ``self`` with ``value`` (a number or a 0-d tensor) in place."""
    return apply_inplace(fill_p, self, (), {"value": _fill_value(self, value, "fill_")})


@register(module=True)
def fill(input: Tensor, value) -> Tensor:
    """A tensor like ``input`` filled with ``value`` (its gradient to ``input`` is zero; a tensor ``value`` passes
    none, where PyTorch passes it the gradient's sum)."""
    check_tensor(input, "fill")
    return apply(fill_p, (input,), {"value": _fill_value(input, value, "fill")}, _node("FillBackward0"))


@register(module=False, method=True)
def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (``self[i, i, ..., i]``) with ``fill_value`` in place; ``wrap``: a tall matrix's
    diagonal starts again every ``ncols + 1`` rows. One write of the diagonal's positions (an index_put recorded
    as CopySlices, as PyTorch's fill of diagonal views; a leaf that requires grad is refused as a view of one),
    so that it reaches self on every device."""
    from .creation import arange
    if isinstance(fill_value, Tensor) and fill_value._data.ndim == 0:
        fill_value = fill_value.item()
    fill_value = scalar_value(fill_value)
    if not isinstance(fill_value, (bool, int, float)):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not "
                        f"{type(fill_value).__name__}")
    if not isinstance(wrap, bool):
        raise TypeError(f"fill_diagonal_(): argument 'wrap' (position 2) must be bool, not {type(wrap).__name__}")
    shape = self._data.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and any(n != shape[0] for n in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.grad_fn is None and self._requires_grad and _state.enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    value = D.checked_scalar(fill_value, self._data.dtype)
    height, width = shape[0], shape[1]
    if wrap and len(shape) == 2 and height > width + 1:
        # the flat positions k * (width + 1): the diagonal of each block of width + 1 rows
        flat = arange(0, height * width, width + 1, device=self.device)
        index = ((flat // width)._data, (flat % width)._data)
    else:
        index = (arange(min(shape), device=self.device)._data,) * len(shape)
    return apply_inplace(index_put_p, self, (value,), {"index": index})


@register(method=True)
def zero_(self: Tensor) -> Tensor:
    """Fill ``self`` with zeros in place."""
    return apply_inplace(fill_p, self, (), {"value": 0}, _node("ZeroBackward0"))


@register(module=False, method=True)
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast) into ``self``."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if broadcast_error((src._data.shape, self._data.shape)) is not None:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must match "
                           f"the size of tensor b ({src._data.shape[-1]}) at non-singleton dimension "
                           f"{self._data.ndim - 1}") from None
    if src._data.shape != self._data.shape and src._data.ndim > self._data.ndim:   # e.g. shape [1] into []
        out = _broadcast_shape([src._data.shape, self._data.shape])
        if out != self._data.shape:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                               f"{list(out)}")
    if device_of(src._data).type != device_of(self._data).type:   # across devices: src copied over first
        src = src.to(device_of(self._data))
    if not _needs_graph(self, src):
        check_inplace(self, False)
        NAMESPACES[type(self._data)].backend.copyto(self._data, src._data)
        self._vc[0] += 1
        return self
    return apply_inplace(index_put_p, self, (src,), {"index": (Ellipsis,)}, _node("CopyBackwards"))


# ----- argument checks shared by the ops below --------------------------------------------------------

def _word(t: Tensor) -> str:
    return D.type_word(t._data.dtype)


def _check_index_dtype(index: Tensor, op: str, allowed: tuple, message: str, kind=RuntimeError):
    """The index's raw array as int64, after the dtype check."""
    if index._data.dtype.name not in allowed:
        raise kind(message.format(word=_word(index)))
    return NAMESPACES[type(index._data)].cast(index._data, D.int64.np)


def _same_dtype(self: Tensor, other: Tensor, message: str) -> None:
    if self._data.dtype != other._data.dtype:
        raise RuntimeError(message.format(self=_word(self), other=_word(other)))


def _as_dim(dim, ndim: int, op: str) -> int:
    return wrap_dim(dim, ndim, op)


def _bounds(idx, n: int, negative: bool):
    """The first out-of-range value of ``idx`` (a device array) for a dim of size ``n``, or None."""
    lo = -n if negative else 0
    if NAMESPACES[type(idx)].in_range(idx, lo, n):
        return None
    return int(idx[(idx >= n) | (idx < lo)].reshape(-1)[0])


def _dims1(shape: tuple) -> tuple:
    return shape if shape else (1,)   # PyTorch's scatter/gather checks treat a 0-d tensor as size [1]


# ----- gather / scatter --------------------------------------------------------------------------------

def _grid_index(idx, dim: int, ndim: int):
    """The NumPy index addressing ``x[i_0, ..., idx[i], ..., i_n]`` for every position ``i`` of ``idx``
    (gather's and scatter's rule); a 0-d ``x`` is addressed as its 1-element view."""
    if ndim == 0:
        return SplitIndex(((None, Ellipsis), (idx.reshape(idx.shape),)))
    if idx.ndim == 0:
        return (idx,)
    return NAMESPACES[type(idx)].grid_index(idx, dim)


def _scatter_checks(self: Tensor, dim, index: Tensor, src, op: str, dtype_op: str = "scatter"):
    """The index of scatter/scatter_add/scatter_reduce (and gather, src=None), checked as PyTorch."""
    d = _as_dim(dim, self._data.ndim, op)
    if op == "gather":
        idx = _check_index_dtype(index, op, ("int64", "int32"), "gather(): Expected dtype int32/int64 for index")
    else:
        idx = _check_index_dtype(index, op, ("int64", "int32"), f"{dtype_op}(): Expected dtype int32/int64 for index")
    if isinstance(src, Tensor) and op != "gather":
        _same_dtype(self, src, "scatter(): Expected self.dtype to be equal to src.dtype")
    n_self, n_idx = max(self._data.ndim, 1), max(idx.ndim, 1)
    if idx.size and n_self != n_idx:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor" if op == "gather"
                           else "Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and idx.size and max(src._data.ndim, 1) != n_idx:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    si, ss = _dims1(idx.shape), _dims1(self._data.shape)
    if idx.size:
        bad_self = any(si[k] > ss[k] for k in range(len(si)) if k != d)
        if isinstance(src, Tensor):
            sv = _dims1(src._data.shape)
            if bad_self or any(si[k] > sv[k] for k in range(len(si))):
                raise RuntimeError(f"Expected index {list(si)} to be no larger than self {list(ss)} apart from "
                                   f"dimension {d} and to be no larger size than src {list(sv)}")
        elif bad_self:
            k = next(k for k in range(len(si)) if k != d and si[k] > ss[k])
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(si)} to be no larger "
                               f"than self {list(ss)} apart from dimension {d}")
    bad = _bounds(idx, ss[d], negative=False)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {ss[d]}")
    return d, idx, _grid_index(idx, d, self._data.ndim)


def _src_block(src: Tensor, idx) -> Tensor:
    """The part of ``src`` that scatter reads: its leading block of the index's shape."""
    shape = src._data.shape
    if shape == idx.shape:
        return src
    if not shape:
        return src.reshape(idx.shape)
    return src[tuple(slice(0, n) for n in _dims1(idx.shape))].reshape(idx.shape)


@register(method=True)
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` (dim 0): values along ``dim`` at ``index``."""
    check_tensor(input, "gather", "input", 1)
    check_tensor(index, "gather", "index", 3)
    check_bool(sparse_grad, "gather", "sparse_grad")
    refuse_shell(input, "gather_expanded_index", F8_CHARS)
    refuse_shell(input, "scatter_gather_tensor_cpu")
    _, _, ix = _scatter_checks(input, dim, index, None, "gather")
    return apply_saving(getitem_p, (input,), {"index": ix}, _node("GatherBackward0"), (index,))


_LEGACY = {"add": "sum", "multiply": "prod"}


def _scatter(self: Tensor, dim, index, src, value, reduce, inplace: bool, op: str) -> Tensor:
    check_tensor(self, op, "input", 1)
    refuse_shell(self, "scatter_gather_tensor_cpu")
    check_tensor(index, op, "index", 3)
    if src is not None and value is not None:
        raise TypeError(f"{op}() got multiple values for argument 'src'")
    if src is None and value is None:
        raise TypeError(f"{op}() missing 1 required positional argument: 'src' or 'value'")
    if src is not None and not isinstance(src, Tensor):
        value, src = src, None
    if value is not None:
        value = scalar_or_tensor(value, op, "value")
        if isinstance(value, Tensor):   # PyTorch takes a tensor here as src (with its ndim checks)
            src, value = value, None
    if reduce is not None and reduce not in _LEGACY:
        raise RuntimeError("reduce argument must be either add or multiply.")
    d, idx, ix = _scatter_checks(self, dim, index, src, op)
    if src is not None:
        s = _src_block(src, idx)
        if reduce is not None:
            args, prim, params, node = (s,), scatter_legacy_p, {"index": ix, "reduce": _LEGACY[reduce],
                                                                "acc": True}, None
        else:
            args, prim, params, node = (s,), index_put_p, {"index": ix}, _node("ScatterBackward0")
    elif reduce is not None:
        args, prim, params, node = (value,), scatter_legacy_p, {"index": ix, "reduce": _LEGACY[reduce]}, None
    else:
        value = D.checked_scalar(value, self._data.dtype)
        args, prim, params, node = (), fill_index_p, {"index": ix, "value": value}, _node("ScatterBackward1")
    saved = (index,) if prim is not scatter_legacy_p else ()   # (PyTorch's NotImplemented node saves nothing)
    if inplace:
        return apply_inplace(prim, self, args, params, node, saved=saved)
    return apply_saving(prim, (self,) + args, params, node, saved)


@register(method=True)
def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor) or ``value`` (a number) written at ``index`` along ``dim``
    (``reduce='add'|'multiply'`` combines instead of overwriting; PyTorch does not differentiate that)."""
    return _scatter(input, dim, index, src, value, reduce, False, "scatter")


@register(name="scatter_", module=False, method=True)
def scatter_(self: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """In-place ``scatter``."""
    return _scatter(self, dim, index, src, value, reduce, True, "scatter_")


def _scatter_add(self, dim, index, src, inplace, op):
    check_tensor(self, op, "input", 1)
    check_tensor(index, op, "index", 3)
    check_tensor(src, op, "src", 4)
    _, idx, ix = _scatter_checks(self, dim, index, src, op, "scatter_add")
    args, params = (_src_block(src, idx),), {"index": ix, "alpha": 1, "acc": True}
    node = _node("ScatterAddBackward0")
    if inplace:
        return apply_inplace(index_add_p, self, args, params, node, saved=(index,))
    return apply_saving(index_add_p, (self,) + args, params, node, (index,))


@register(method=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
    return _scatter_add(input, dim, index, src, False, "scatter_add")


@register(name="scatter_add_", module=False, method=True)
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place ``scatter_add``."""
    return _scatter_add(self, dim, index, src, True, "scatter_add_")


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _check_reduce(reduce, op: str, allowed: tuple, message: str) -> str:
    if not isinstance(reduce, str):
        raise TypeError(f"{op}(): argument 'reduce' must be str, not {type(reduce).__name__}")
    if reduce not in allowed:
        raise RuntimeError(message.format(reduce=reduce))
    return reduce


def _complex_reduce_checks(self: Tensor, src: Tensor, reduce: str, include_self: bool, inplace: bool, op: str,
                           kernel: str) -> None:
    """PyTorch on complex inputs: amax/amin have no complex kernel; out of place, a complex result is not
    differentiated (a RuntimeError when an input requires grad)."""
    if not (self.dtype.is_complex or src.dtype.is_complex):
        return
    if op == "index_reduce" and not include_self:
        word = dtype_word((self if self.dtype.is_complex else src)._data.dtype)
        raise NotImplementedError(f"\"index_reduce_func_exclude_input_init\" not implemented for '{word}'")
    if reduce in ("amax", "amin"):
        word = dtype_word((self if self.dtype.is_complex else src)._data.dtype)
        raise NotImplementedError(f"\"{kernel.format(reduce=reduce)}\" not implemented for '{word}'")
    if not inplace and _state.enabled and (self.requires_grad or src.requires_grad):
        raise RuntimeError(f"{op} does not support automatic differentiation for outputs with complex dtype.")


def _scatter_reduce(self, dim, index, src, reduce, include_self, inplace, op):
    check_tensor(self, op, "input", 1)
    check_tensor(index, op, "index", 3)
    check_tensor(src, op, "src", 4)
    reduce = _check_reduce(reduce, op, _REDUCES, "reduce argument must be either sum, prod, mean, amax or amin, "
                                                 "got {reduce}")
    include_self = check_bool(include_self, op, "include_self")
    _, idx, ix = _scatter_checks(self, dim, index, src, op, "scatter_reduce")
    _complex_reduce_checks(self, src, reduce, include_self, inplace, "scatter_reduce", "scatter_gather_tensor_cpu_reduce_{reduce}")
    args, params = (_src_block(src, idx),), {"index": ix, "reduce": reduce, "include_self": include_self,
                                             "acc": True}
    if inplace:
        return apply_inplace(scatter_reduce_p, self, args, params, saved=(index,))
    return apply_saving(scatter_reduce_p, (self,) + args, params, None, (index,))


@register(method=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``input`` with ``src`` reduced in at ``index`` along ``dim`` ('sum', 'prod', 'mean', 'amax', 'amin')."""
    return _scatter_reduce(input, dim, index, src, reduce, include_self, False, "scatter_reduce")


@register(name="scatter_reduce_", module=False, method=True)
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``."""
    return _scatter_reduce(self, dim, index, src, reduce, include_self, True, "scatter_reduce_")


@register(method=True)
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (the two broadcast elsewhere); of the flattened
    input when ``dim`` is None."""
    check_tensor(input, "take_along_dim", "input", 1)
    check_tensor(indices, "take_along_dim", "indices", 2)
    if indices._data.dtype != D.int64.np:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {_word(indices)}")
    if dim is None:
        return gather(input.view(-1), 0, indices.view(-1))   # PyTorch's view(-1): a non-viewable layout raises
    if not input._data.ndim:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _as_dim(dim, input._data.ndim, "take_along_dim")
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input._data.ndim} dimensions for input, and {indices._data.ndim} dimensions "
                           f"for indices")
    si, sx = list(indices._data.shape), list(input._data.shape)
    if si:
        si[d], sx[d] = 1, 1
        err = broadcast_error((tuple(sx), tuple(si)))
        if err is not None:
            raise err
        common = list(_broadcast_shape((sx, si)))
        xs, ins = list(common), list(common)
        xs[d], ins[d] = input._data.shape[d], indices._data.shape[d]
        if tuple(xs) != input._data.shape:
            input = input.expand(*xs)
        if tuple(ins) != indices._data.shape:
            indices = indices.expand(*ins)
    # PyTorch gathers with a copy of the indices here (broadcast_tensors): a later change to them is no error,
    # and the gradient is the one of the indices used
    return gather(input, d, indices.clone())


# ----- index_select / index_add / index_copy / index_fill / index_reduce -----------------------------------

def _dim_index(idx, dim: int, ndim: int):
    """The NumPy index of the slices ``x.select(dim, i)`` for ``i`` in ``idx`` (a vector)."""
    if ndim == 0:
        return SplitIndex(((None, Ellipsis), (idx.reshape(-1)[:1].reshape(()),)))
    return (_FULL,) * dim + (idx.reshape(-1),)


def _vector_index(self: Tensor, dim, index: Tensor, op: str, dtypes: tuple, dtype_msg: str, dtype_kind,
                  vector_msg: str, vector_kind=IndexError):
    check_tensor(index, op, "index", 3)
    d = _as_dim(dim, self._data.ndim, op)
    idx = _check_index_dtype(index, op, dtypes, dtype_msg, dtype_kind)
    if idx.ndim > 1:
        raise vector_kind(vector_msg.format(ndim=idx.ndim))
    return d, idx.reshape(-1)


@register(method=True)
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` along ``dim`` at ``index`` (a vector), in its order."""
    check_tensor(input, "index_select", "input", 1)
    refuse_shell(input, "index_select", "HILQ")   # (float8 has PyTorch's index_select)
    d, idx = _vector_index(input, dim, index, "index_select", ("int64", "int32"),
                           "index_select(): Expected dtype int32 or int64 for index", RuntimeError,
                           "index_select(): Index is supposed to be a vector")
    n = _dims1(input._data.shape)[d]
    if not input._data.ndim and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)")
    bad = _bounds(idx, n, negative=False)
    if bad is not None:
        if bad < 0:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={n}")
        raise IndexError("index out of range in self")
    return apply_saving(getitem_p, (input,), {"index": _dim_index(idx, d, input._data.ndim)},
                        _node("IndexSelectBackward0"), (index,))


def _source_checks(self: Tensor, d: int, idx, source: Tensor, op: str):
    """index_add/index_copy/index_reduce: source has self's shape but ``len(index)`` along ``dim``."""
    ss, sv = self._data.shape, source._data.shape
    n_src = sv[d] if source._data.ndim else 1
    return ss, sv, n_src


def _index_source_checks(self: Tensor, d: int, idx, source: Tensor, name: str) -> None:
    """index_add/index_reduce: PyTorch's index_func_meta_impl checks, in its order. Its message for a wrong
    number of indices reads ``source.size(dim)``, which raises IndexError itself for a 0-d source."""
    ss, sv = self._data.shape, source._data.shape
    if d != 0 and d >= len(sv):
        raise RuntimeError(f"{name}(): Indexing dim {d} is out of bounds of the source tensor with dim {len(sv)}")
    n_src = sv[d] if sv else 1
    if idx.size != n_src:
        if not sv:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        raise RuntimeError(f"{name}(): Number of indices ({idx.size}) should be equal to source.size(dim): "
                           f"({n_src}), for dim: {d}")
    if len(sv) != len(ss) or any(a != b for k, (a, b) in enumerate(zip(ss, sv)) if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(ss)} source.shape = {list(sv)}")


_C_TYPE = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "float16": "c10::Half", "float32": "float", "float64": "double"}


def _alpha_as(alpha, dtype):
    """``alpha`` converted to ``dtype`` as PyTorch's checked_convert does: integral dtypes truncate a float alpha
    (after a range check on its value), every dtype but bool refuses a finite value out of its range."""
    if dtype.kind == "b" or isinstance(scalar_value(alpha), bool):
        return alpha
    if dtype.kind in "iu":
        info = D.iinfo(D._FROM_NP[dtype])
        if not (info.min <= alpha <= info.max):   # also nan and inf
            raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dtype.name]} without overflow")
        return int(alpha)
    if dtype.kind in "fV" and abs(alpha) > D.finfo(D._FROM_NP[dtype]).max and abs(alpha) != float("inf") \
            and alpha == alpha:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE[dtype.name]} without overflow")
    return alpha


def _index_add(self, dim, index, source, alpha, inplace, op):
    check_tensor(self, op, "input", 1)
    d, idx = _vector_index(self, dim, index, op, ("int64", "int32"), "index_add_(): Expected dtype int32/int64 for "
                           "index", RuntimeError, "index_add_(): Index is supposed to be a vector")
    check_tensor(source, op, "source", 4)
    if type(alpha) not in (bool, int, float) and not (is_array_scalar(alpha) and is_real(alpha)):
        raise TypeError(f"{op}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    _same_dtype(self, source, "index_add_(): self ({self}) and source ({other}) must have the same scalar type")
    _index_source_checks(self, d, idx, source, "index_add_")
    alpha = _alpha_as(alpha, self._data.dtype)
    n = _dims1(self._data.shape)[d]
    bad = _bounds(idx, n, negative=False)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    # PyTorch runs scatter_add (see index_add_p) for alpha 1, a long index along the first or last of several
    # dims, and a source of self's shape but along dim; else an add per index
    nd = self._data.ndim
    acc = alpha == 1 and index._data.dtype == D.int64.np and nd > 1 and d in (0, nd - 1) and \
        source._data.ndim == nd and all(a == b for k, (a, b) in enumerate(zip(self._data.shape, source._data.shape))
                                        if k != d)
    params = {"index": _dim_index(idx, d, nd), "alpha": alpha, "acc": acc}
    if inplace:
        return apply_inplace(index_add_p, self, (source,), params, saved=(index,))
    return apply_saving(index_add_p, (self, source), params, None, (index,))


@register(method=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added to the slices along ``dim`` at ``index``."""
    return _index_add(input, dim, index, source, alpha, False, "index_add")


@register(name="index_add_", module=False, method=True)
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place ``index_add``."""
    return _index_add(self, dim, index, source, alpha, True, "index_add_")


def _index_copy(self, dim, index, source, inplace, op):
    check_tensor(self, op, "input", 1)
    d, idx = _vector_index(self, dim, index, op, ("int64",), "index_copy_(): Expected a long tensor for index, but "
                           "got {word}", RuntimeError, "index_copy_(): Index should have dimension 1 or 0 (got {ndim})")
    check_tensor(source, op, "source", 4)
    _same_dtype(self, source, "index_copy_(): self and source expected to have the same dtype, but got (self) "
                              "{self} and (source) {other}")
    ss, sv, n_src = _source_checks(self, d, idx, source, op)
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({n_src})")
    if source._data.ndim and self._data.ndim and (source._data.ndim != self._data.ndim or any(
            a != b for k, (a, b) in enumerate(zip(ss, sv)) if k != d)):
        raise IndexError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                         f"slice shape: {list(ss[:d] + ss[d + 1:])} at dimension {d} and source slice shape: "
                         f"{list(sv[:d] + sv[d + 1:])} at dimension 0.")
    n = _dims1(ss)[d]
    bad = _bounds(idx, n, negative=False)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {n}")
    params = {"index": _dim_index(idx, d, self._data.ndim)}
    node = _node("IndexCopyBackward0")
    if inplace:
        return apply_inplace(index_put_p, self, (source,), params, node, saved=(index,))
    return apply_saving(index_put_p, (self, source), params, node, (index,))


@register(method=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices along ``dim`` at ``index`` replaced by ``source``'s."""
    return _index_copy(input, dim, index, source, False, "index_copy")


@register(name="index_copy_", module=False, method=True)
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place ``index_copy``."""
    return _index_copy(self, dim, index, source, True, "index_copy_")


def _index_fill(self, dim, index, value, inplace, op):
    check_tensor(self, op, "input", 1)
    d, idx = _vector_index(self, dim, index, op, ("int64",), "index_fill_(): Expected dtype int64 for index.",
                           IndexError, "index_fill_(): Index is supposed to be a vector")
    value = scalar_or_tensor(value, op, "value")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value._data.ndim} dimension(s).")
    if not self.dtype.is_complex and (type(value) is complex or isinstance(value, Tensor) and value.dtype.is_complex):
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
    n = _dims1(self._data.shape)[d]
    bad = _bounds(idx, n, negative=True)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    # Filling is idempotent: the unique positions give the same result, and the value's gradient counts
    # each filled slice once (PyTorch's index_select over the unique indices).
    xp = NAMESPACES[type(idx)]
    hit = NAMESPACES[type(idx)].backend.zeros((n,), dtype=D.bool.np)
    hit[idx] = True   # negative indices wrap
    ix = _dim_index(xp.nonzero_tuple(hit)[0], d, self._data.ndim)
    if isinstance(value, Tensor):
        prim, args, params, node = index_put_p, (value,), {"index": ix}, _node("IndexFillBackward1")
    else:
        value = D.checked_scalar(value, self._data.dtype)
        prim, args, params, node = fill_index_p, (), {"index": ix, "value": value}, None
    if inplace:
        return apply_inplace(prim, self, args, params, node, saved=(index,))
    return apply_saving(prim, (self,) + args, params, node, (index,))


@register(method=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices along ``dim`` at ``index`` set to ``value`` (number or 0-d tensor)."""
    return _index_fill(input, dim, index, value, False, "index_fill")


@register(name="index_fill_", module=False, method=True)
def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place ``index_fill``."""
    return _index_fill(self, dim, index, value, True, "index_fill_")


def _index_reduce(self, dim, index, source, reduce, include_self, inplace, op):
    check_tensor(self, op, "input", 1)
    d, idx = _vector_index(self, dim, index, op, ("int64", "int32"), "index_reduce_(): Expected dtype int32/int64 "
                           "for index", RuntimeError, "index_reduce_(): Index is supposed to be a vector")
    check_tensor(source, op, "source", 4)
    reduce = _check_reduce(reduce, op, ("prod", "mean", "amax", "amin"),
                           "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    include_self = check_bool(include_self, op, "include_self")
    _same_dtype(self, source, "index_reduce_(): self ({self}) and source ({other}) must have the same scalar type")
    _index_source_checks(self, d, idx, source, "index_reduce_")
    if _bounds(idx, _dims1(self._data.shape)[d], negative=False) is not None:
        raise IndexError("index out of range in self")
    _complex_reduce_checks(self, source, reduce, include_self, inplace, "index_reduce",
                           "maximum_cpu" if reduce == "amax" else "minimum_cpu")
    params = {"index": _dim_index(idx, d, self._data.ndim), "reduce": reduce, "include_self": include_self}
    node = _node("IndexReduceBackward0")
    if inplace:
        return apply_inplace(scatter_reduce_p, self, (source,), params, node, saved=(index,))
    return apply_saving(scatter_reduce_p, (self, source), params, node, (index,))


@register(method=True)
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``input`` with ``source``'s slices reduced into the slices along ``dim`` at ``index`` ('prod', 'mean',
    'amax', 'amin')."""
    return _index_reduce(input, dim, index, source, reduce, include_self, False, "index_reduce")


@register(name="index_reduce_", module=False, method=True)
def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place ``index_reduce``."""
    return _index_reduce(self, dim, index, source, reduce, include_self, True, "index_reduce_")


# ----- index_put ------------------------------------------------------------------------------------------

_INDEX_DTYPES = (D.bool.np, D.uint8.np, D.int64.np, D.int32.np)


def _index_put(self, indices, values, accumulate, inplace, op):
    check_tensor(self, op, "input", 1)
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' (position 2) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for k, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 1, but got {type(t).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{op}(): argument 'values' (position 3) must be Tensor, not {type(values).__name__}")
    accumulate = check_bool(accumulate, op, "accumulate")
    # PyTorch's order: the number of indices, their dtypes, then the values' dtype (bounds in the kernel)
    count = sum(t._data.ndim if t._data.dtype in (D.bool.np, D.uint8.np) else 1 for t in indices)
    if count > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim} (got {count})")
    if any(t._data.dtype not in _INDEX_DTYPES for t in indices):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if self._data.dtype != values._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_word(self)} for the "
                           f"destination and {_word(values)} for the source.")
    ix = convert(tuple(indices), self._data.shape, tensors_advanced=True)
    if _byte_masks(indices, True):
        _byte_mask_write(tuple(indices), values, True, 4)
    values = _fit_value(values, ix, strip=False)
    if accumulate:
        prim, params = index_add_p, {"index": ix.np_index, "alpha": 1}
    else:
        prim, params = index_put_p, {"index": ix.np_index}
    node = _node("IndexPutBackward0")
    saved = _index_tensors(tuple(indices), True)
    if inplace:
        return apply_inplace(prim, self, (values,), params, node, saved=saved)
    return apply_saving(prim, (self, values), params, node, saved)


@register(method=True)
def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` with ``input[indices] = values`` (or ``+=`` with ``accumulate``); ``indices`` is a tuple of
    index tensors (long, int or bool), one per leading dim."""
    return _index_put(input, indices, values, accumulate, False, "index_put")


@register(method=True)
def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``index_put``."""
    return _index_put(input, indices, values, accumulate, True, "index_put_")


# ----- masked_fill / masked_scatter / masked_select ----------------------------------------------------------

def _mask(self: Tensor, mask, op: str, inplace: bool, message: str, pos: int = 2):
    """The mask as a bool array of the result's shape, and self expanded to it (out of place)."""
    check_tensor(mask, op, "mask", pos)
    if mask._data.dtype.kind != "b":
        raise RuntimeError(message.format(c=D.c_type_name(mask._data.dtype), word=_word(mask)))
    shapes = (mask._data.shape, self._data.shape)
    err = broadcast_error(shapes)
    if err is not None:
        raise err
    out_shape = _broadcast_shape(shapes)
    if out_shape != self._data.shape:
        if inplace:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                               f"{list(out_shape)}")
        self = self.expand(*out_shape)
    return self, (NAMESPACES[type(mask._data)].expand(mask._data, out_shape),)


def _masked_fill(self, mask, value, inplace, op):
    check_tensor(self, op, "input", 1)
    self, ix = _mask(self, mask, op, inplace, "masked_fill_ only supports boolean masks, but got mask with dtype {c}")
    value = scalar_or_tensor(value, op, "value")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        if value.dtype.is_complex and not self.dtype.is_complex:   # PyTorch reads it as a Scalar: checked
            D.checked_scalar(complex(value.item()), self._data.dtype)
        prim, args, params, node = index_put_p, (value,), {"index": ix}, _node("MaskedFillBackward1")
    else:
        value = D.checked_scalar(value, self._data.dtype)
        prim, args, params, node = fill_index_p, (), {"index": ix, "value": value}, _node("MaskedFillBackward0")
    if inplace:
        return apply_inplace(prim, self, args, params, node, saved=(mask,))
    return apply_saving(prim, (self,) + args, params, node, (mask,))


@register(method=True)
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``input`` with ``value`` (number or 0-d tensor) where the bool ``mask`` (broadcast) holds."""
    return _masked_fill(input, mask, value, False, "masked_fill")


@register(name="masked_fill_", module=False, method=True)
def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    """In-place ``masked_fill``."""
    return _masked_fill(self, mask, value, True, "masked_fill_")


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _masked_scatter_forward(xp, a, s, index, count):
    return xp.fill_index(a, index, xp.getitem(xp.reshape(s, (-1,)), (slice(0, count),)))


def _masked_scatter_vjp_s(xp, g, out, a, s, index, count):
    return xp.reshape(xp.index_put_zeros(xp.getitem(g, index), (slice(0, count),), (_numel(s.shape),)), s.shape)


masked_scatter_p = defprim(
    "masked_scatter", _masked_scatter_forward,
    vjp=(lambda xp, g, out, a, s, index, count: xp.fill_index(g, index, 0.0), _masked_scatter_vjp_s),
    jvp="linear")


def _masked_scatter(self, mask, source, inplace, op):
    check_tensor(self, op, "input", 1)
    self, ix = _mask(self, mask, op, inplace, "masked_scatter_ only supports boolean masks, but got mask with "
                                              "dtype {word}")
    check_tensor(source, op, "source", 3)
    if self._data.dtype != source._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got{_word(self)} and "
                           f"{_word(source)}")
    count = NAMESPACES[type(ix[0])].mask_count(ix[0])
    if count > source._data.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    params = {"index": ix, "count": count}
    if inplace:
        return apply_inplace(masked_scatter_p, self, (source,), params, saved=(mask,))
    return apply_saving(masked_scatter_p, (self, source), params, None, (mask,))


@register(method=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the positions where ``mask`` holds filled, in order, from ``source``'s elements."""
    return _masked_scatter(input, mask, source, False, "masked_scatter")


@register(name="masked_scatter_", module=False, method=True)
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place ``masked_scatter``."""
    return _masked_scatter(self, mask, source, True, "masked_scatter_")


@register(method=True)
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` holds (the two broadcast), as a 1-d tensor."""
    check_tensor(input, "masked_select", "input", 1)
    check_tensor(mask, "masked_select", "mask", 2)
    refuse_shell(input, "masked_select", "HILQ")
    if mask._data.dtype.kind != "b":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    input, ix = _mask(input, mask, "masked_select", False, "")
    if not input._data.ndim:   # NumPy's 0-d mask index would add a dim; the result is 1-d anyway
        ix = SplitIndex(((None, Ellipsis), (ix[0].reshape(1),)))
    return apply_saving(getitem_p, (input,), {"index": ix}, _node("MaskedSelectBackward0"), (mask,))


# ----- take / put --------------------------------------------------------------------------------------------

def _flat(xp, a):
    return xp.reshape(a, (-1,))


take_p = defprim(
    "take", lambda xp, a, index: xp.getitem(_flat(xp, a), (index,)),
    vjp=lambda xp, g, out, a, index: xp.reshape(xp.index_put_zeros(g, (index,), (_numel(a.shape),)), a.shape),
    jvp="linear")


def _put_forward(xp, a, s, index, accumulate):
    v = xp.reshape(s, index.shape)
    flat = xp.index_put_add(_flat(xp, a), (index,), v) if accumulate else xp.fill_index(_flat(xp, a), (index,), v)
    return xp.reshape(flat, a.shape)


def _put_vjp_x(xp, g, out, a, s, index, accumulate):
    return g if accumulate else xp.reshape(xp.fill_index(_flat(xp, g), (index,), 0.0), a.shape)


put_p = defprim(
    "put", _put_forward,
    vjp=(_put_vjp_x, lambda xp, g, out, a, s, index, accumulate: xp.reshape(xp.getitem(_flat(xp, g), (index,)),
                                                                           s.shape)),
    jvp="linear")


def _flat_index(self: Tensor, index: Tensor, op: str, bounds: bool = True):
    """The raw flat index of take/put (long only); ``bounds``: with its bounds checked now."""
    check_tensor(index, op, "index", 2)
    idx = _check_index_dtype(index, op, ("int64",), f"{op.rstrip('_')}(): Expected a long tensor for index, but got "
                                                    "{word}")
    if bounds:
        _check_flat_bounds(self, idx)
    return idx


def _check_flat_bounds(self: Tensor, idx) -> None:
    n = self._data.size
    bad = _bounds(idx, n, negative=True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


@register(method=True)
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index`` (negative indices count from the end)."""
    check_tensor(input, "take", "input", 1)
    idx = _flat_index(input, index, "take")
    return apply_saving(take_p, (input,), {"index": idx}, None, (index,))


def _put(self, index, source, accumulate, inplace, op):
    check_tensor(self, op, "input", 1)
    idx = _flat_index(self, index, "put_", bounds=False)
    check_tensor(source, op, "source", 3)
    accumulate = check_bool(accumulate, op, "accumulate")
    # PyTorch's order: the dtypes, the counts, then the bounds (in its kernel)
    if self._data.dtype != source._data.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_word(self)} and source.dtype = {_word(source)}")
    if source._data.size != idx.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._data.size}, index.numel() = {idx.size}")
    _check_flat_bounds(self, idx)
    params = {"index": idx, "accumulate": accumulate}
    if inplace:
        return apply_inplace(put_p, self, (source,), params, saved=(index,))
    return apply_saving(put_p, (self, source), params, None, (index,))


@register(method=True)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements written (or added) at the flat positions ``index``."""
    return _put(input, index, source, accumulate, False, "put")


@register(name="put_", module=False, method=True)
def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``put``."""
    return _put(self, index, source, accumulate, True, "put_")


# ----- vmap -------------------------------------------------------------------------------------------------

def _getitem_rule(call, args, bdims, params, size):
    """A basic index (ints, slices, None, Ellipsis) of each example: the batch dim first, kept by a leading ':'."""
    x = _batching._moved(args[0], bdims[0])
    return call([x], {"index": (slice(None),) + tuple(params["index"])}), 0


def _is_array(i) -> bool:
    return hasattr(i, "dtype") and hasattr(i, "ndim")


def _advanced_step(index):
    """The items of an example's raw index that its advanced part indexes with (NumPy's rules apply to them)."""
    if type(index) is SplitIndex:
        return tuple(index[1])
    return tuple(index) if type(index) is tuple else (index,)


def _phys_raw_index(index):
    """An example's raw index as the physical tensor's (batch dim first): a leading ':' in each step."""
    if type(index) is SplitIndex:
        return SplitIndex(((_FULL,) + tuple(index[0]), (_FULL,) + tuple(index[1])))
    return (_FULL,) + (tuple(index) if type(index) is tuple else (index,))


def _raw_out_bdim(index) -> int:
    """Where the batch dim lands in ``phys[_phys_raw_index(index)]``: first, unless NumPy moves the broadcast
    dims of non-adjacent advanced indices (arrays; ints among them) in front of it."""
    items = _advanced_step(index)
    arrays = [i for i in items if _is_array(i)]
    if not arrays:
        return 0
    pos = [k for k, i in enumerate(items) if _is_array(i) or (type(i) is int)]
    if pos == list(range(pos[0], pos[0] + len(pos))):
        return 0
    return max(1 if a.dtype.kind == "b" else a.ndim for a in arrays)


def _basic_rank(items, ndim: int) -> tuple:
    """(the rank of x[items] for x of ``ndim`` dims, NumPy's rules; the rank of the advanced indices' broadcast
    dims) for raw index items."""
    consumed = sum((i.ndim if i.dtype.kind == "b" else 1) if _is_array(i) else
                   (1 if type(i) is int or type(i) is slice else 0) for i in items)
    adv = max([1 if i.dtype.kind == "b" else i.ndim for i in items if _is_array(i)] or [0])
    kept = sum(1 for i in items if type(i) is slice or i is None)
    return kept + adv + (ndim - consumed), adv


def _region_rank(index, ndim: int) -> int:
    """The rank of ``x[index]`` (an example's raw index) for an example of ``ndim`` dims."""
    if type(index) is SplitIndex:
        view, _ = _basic_rank(tuple(index[0]), ndim)
        return _basic_rank(tuple(index[1]), view)[0]
    return _basic_rank(_advanced_step(index), ndim)[0]


def _region_value(v, bd, index, ndim: int, size: int, out_bdim: int):
    """A value written at an example's ``index`` as the physical region's value (batch dim at ``out_bdim``)."""
    if not isinstance(v, Tensor):
        return v
    if bd is None:
        if not out_bdim:
            return v   # broadcasts from the right
        v = v.unsqueeze(0).expand((size,) + tuple(v._data.shape))
        bd = 0
    v = _batching._front_and_pad(v, bd, _region_rank(index, ndim), size)
    if out_bdim:
        n = v._data.ndim
        v = v.permute(list(range(1, out_bdim + 1)) + [0] + list(range(out_bdim + 1, n)))
    return v


def _index_rule(call, args, bdims, params, size):
    """An advanced index of each example (a raw index param from an unbatched index): a leading ':' in each
    step; NumPy puts the broadcast dims of non-adjacent index arrays first, and the batch dim after them."""
    x = _batching._moved(args[0], bdims[0])
    index = params["index"]
    new = dict(params)
    new["index"] = _phys_raw_index(index)
    return call([x], new), _raw_out_bdim(index)


def _write_rule(call, args, bdims, params, size):
    """x with a value written (set, added, reduced) at each example's raw index: x batched (expanded if not),
    the value laid out as the physical region (batch dim where NumPy puts it)."""
    x, bx = args[0], bdims[0]
    ndim = x._data.ndim - (bx is not None)
    x = x.unsqueeze(0).expand((size,) + tuple(x._data.shape)) if bx is None else _batching._moved(x, bx)
    index = params["index"]
    out_bdim = _raw_out_bdim(index)
    rest = [_region_value(a, bd, index, ndim, size, out_bdim) for a, bd in zip(args[1:], bdims[1:])]
    new = dict(params)
    new["index"] = _phys_raw_index(index)
    return call([x] + rest, new), 0


def _put_zeros_rule(call, args, bdims, params, size):
    """zeros of the example's shape with each example's g added at its raw index."""
    index, shape = params["index"], tuple(params["shape"])
    g = _region_value(args[0], bdims[0], index, len(shape), size, _raw_out_bdim(index))
    new = dict(params)
    new["index"], new["shape"] = _phys_raw_index(index), (size,) + shape
    return call([g], new), 0


def _take_rule_prim(call, args, bdims, params, size):
    """take of each flattened example at the (unbatched) flat positions."""
    flat = _batching.rows(_batching._moved(args[0], bdims[0]), size)
    return apply(getitem_p, (flat,), {"index": (_FULL, params["index"])}), 0


def _put_rule_prim(call, args, bdims, params, size):
    """put into each flattened example at the (unbatched) flat positions: a write at (:, positions)."""
    x, s = args
    x = x.unsqueeze(0).expand((size,) + tuple(x._data.shape)) if bdims[0] is None else _batching._moved(x, bdims[0])
    idx = params["index"]
    pos = NAMESPACES[type(idx)].reshape(idx, (-1,))
    s = s.reshape(-1) if bdims[1] is None else _batching.rows(_batching._moved(s, bdims[1]), size)
    flat = _batching.rows(x, size)
    if params["accumulate"]:
        out = apply(index_add_p, (flat, s), {"index": (_FULL, pos), "alpha": 1})
    else:
        out = apply(index_put_p, (flat, s), {"index": (_FULL, pos)})
    return out.reshape(x._data.shape), 0


_batching.batching(_getitem_rule, getitem_view_p)
_batching.batching(_index_rule, getitem_p)
_batching.batching("elementwise", fill_p)


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.batching(_write_rule, fill_index_p, index_put_p, index_add_p, scatter_reduce_p, scatter_legacy_p)
_batching.batching(_put_zeros_rule, index_put_zeros_p)
_batching.batching(_take_rule_prim, take_p)
_batching.batching(_put_rule_prim, put_p)


def _masked_scatter_prim_rule(call, args, bdims, params, size):
    """masked_scatter with an unbatched mask (its raw index): each example's first ``count`` source elements
    written at the mask's positions, as an index_put of the physical (B, count) region."""
    x, s = args
    x = x.unsqueeze(0).expand((size,) + tuple(x._data.shape)) if bdims[0] is None else _batching._moved(x, bdims[0])
    count = params["count"]
    s = s.reshape(-1)[:count] if bdims[1] is None else _batching.rows(_batching._moved(s, bdims[1]), size)[:, :count]
    return apply(index_put_p, (x, s), {"index": _phys_raw_index(params["index"])}), 0


_batching.batching(_masked_scatter_prim_rule, masked_scatter_p)


# ----- vmap: public rules (the wrappers above read the values of their index tensors) ------------------------

def _bind_or_none(fn, args, kwargs, *tensors: str):
    """``fn``'s arguments by name, or None when they do not bind or one of ``tensors`` is not a tensor."""
    bound = _bp.bind(fn, args, kwargs)
    if bound is None or any(not isinstance(bound.get(k), Tensor) for k in tensors):
        return None
    return bound


def _grid_rule(fn, out_like: str):
    """gather and the scatter family: every tensor argument batched (expanded where not), batch dim first, the
    dim shifted by one; a 0-d example runs as size [1], as these ops read it. ``out_like``: the argument whose
    example shape the result has."""
    def rule(orig, args, kwargs, level):
        bound = _bind_or_none(fn, args, kwargs, "input", "index")
        d = None if bound is None else _bp.as_dim(bound.get("dim"), bound["input"]._data.ndim)
        if d is None:
            return _bp.own(orig, args, kwargs, level)   # its own error
        new = {k: _bp.unsqueeze_scalar(_bp.front(v, level), v._data.ndim) if isinstance(v, Tensor) else v
               for k, v in bound.items()}
        new["dim"] = d + 1
        out = fn(**new)
        like = bound[out_like]._data.shape
        if not like:
            out = out.reshape(_bp.batch_size(level))
        return _bp.wrap_out(out, level)
    return rule


def _slices_index(index: Tensor, level: int, px: Tensor, d: int):
    """A batched vector index of the index_* ops as gather's index into ``px`` (physical, batch dim first) along
    ``d + 1``: each example's indices repeated over the other dims."""
    size = _bp.batch_size(level)
    pi = _batching.rows(_bp.front(index, level), size)
    k = pi._data.shape[1]
    view = [size] + [1] * (px._data.ndim - 1)
    view[d + 1] = k
    full = list(px._data.shape)
    full[d + 1] = k
    return pi.reshape(view).expand(full)


def _index_select_rule(orig, args, kwargs, level):
    bound = _bind_or_none(index_select, args, kwargs, "input", "index")
    d = None if bound is None else _bp.as_dim(bound.get("dim"), bound["input"]._data.ndim)
    if d is None or bound["index"]._data.ndim > 1:
        return _bp.own(orig, args, kwargs, level)   # its own error
    x, index = bound["input"], bound["index"]
    px = _bp.unsqueeze_scalar(_bp.front(x, level), x._data.ndim)
    if _bp.is_batched(index, level):
        out = gather(px, d + 1, _slices_index(index, level, px, d))
    else:
        out = index_select(px, d + 1, index)
    if not x._data.ndim:
        out = out.reshape(_bp.batch_size(level))
    return _bp.wrap_out(out, level)


def _index_family_rule(fn, kind: str):
    """index_add / index_copy / index_fill / index_reduce: with an unbatched index (and value), the op itself along
    the shifted dim; with a batched one, scatter_add / scatter / scatter_reduce along it with each example's indices
    spread over the slices."""
    def rule(orig, args, kwargs, level):
        bound = _bind_or_none(fn, args, kwargs, "input", "index")
        d = None if bound is None else _bp.as_dim(bound.get("dim"), bound["input"]._data.ndim)
        if d is None or bound["index"]._data.ndim > 1:
            return _bp.own(orig, args, kwargs, level)   # its own error
        x, index = bound["input"], bound["index"]
        nd = x._data.ndim
        px = _bp.unsqueeze_scalar(_bp.front(x, level), nd)
        value = bound.get("value")
        if not _bp.is_batched(index, level) and not _bp.is_batched(value, level):
            new = {k: _bp.unsqueeze_scalar(_bp.front(v, level), v._data.ndim)
                   if isinstance(v, Tensor) and k not in ("index", "value") else v for k, v in bound.items()}
            new["input"], new["dim"] = px, d + 1
            out = fn(**new)
        else:
            ix = _slices_index(index, level, px, d)
            if kind == "fill":
                n = px._data.shape[d + 1]
                ix = ix.remainder(n)   # index_fill takes negative indices
                if isinstance(value, Tensor):
                    # the filled positions as a mask, then where(): a repeated index fills (and sends the value's
                    # gradient to) its slice once, as index_fill does (a scatter of the value would count it twice)
                    pv = _bp.front(value, level).to(x.dtype)
                    hit = scatter(px.new_zeros(tuple(px._data.shape)), d + 1, ix, value=1.0) != 0
                    out = where(hit, pv.reshape([pv._data.shape[0]] + [1] * nd), px)
                else:
                    out = scatter(px, d + 1, ix, value=value)
            else:
                source = bound["source"]
                src = _bp.unsqueeze_scalar(_bp.front(source, level), source._data.ndim)
                if kind == "add":
                    alpha = bound.get("alpha", 1)
                    out = scatter_add(px, d + 1, ix, src if alpha == 1 else src * alpha)
                elif kind == "reduce":
                    out = scatter_reduce(px, d + 1, ix, src, bound["reduce"],
                                         include_self=bound.get("include_self", True))
                else:
                    out = scatter(px, d + 1, ix, src)
        if not nd:
            out = out.reshape(_bp.batch_size(level))
        return _bp.wrap_out(out, level)
    return rule


def _flat_positions(index: Tensor, level: int, n: int) -> Tensor:
    """take/put's index (of the flattened example, negatives from the end) as (B, M) non-negative positions;
    its bounds checked as take's where the values are at hand."""
    pi = _bp.front(index, level)
    if type(pi) is Tensor:
        bad = _bounds(pi._data, n, negative=True)
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return pi.reshape(_bp.batch_size(level), -1).remainder(n)   # (in range: negatives from the end)


def _take_rule(orig, args, kwargs, level):
    bound = _bind_or_none(take, args, kwargs, "input", "index")
    if bound is None or bound["index"]._data.dtype != D.int64.np:
        return _bp.own(orig, args, kwargs, level)   # its own error
    x, index = bound["input"], bound["index"]
    flat = _bp.front(x, level).reshape(_bp.batch_size(level), -1)
    out = gather(flat, 1, _flat_positions(index, level, x._data.size))
    return _bp.wrap_out(out.reshape((_bp.batch_size(level),) + tuple(index._data.shape)), level)


def _put_rule(orig, args, kwargs, level):
    bound = _bind_or_none(put, args, kwargs, "input", "index", "source")
    if bound is None or bound["index"]._data.dtype != D.int64.np or \
            bound["input"]._data.dtype != bound["source"]._data.dtype or \
            bound["index"]._data.size != bound["source"]._data.size:
        return _bp.own(orig, args, kwargs, level)   # its own error
    x = bound["input"]
    size = _bp.batch_size(level)
    px = _bp.front(x, level)
    pos = _flat_positions(bound["index"], level, x._data.size)
    src = _batching.rows(_bp.front(bound["source"], level), size)
    flat = _batching.rows(px, size)
    out = scatter_add(flat, 1, pos, src) if bound.get("accumulate") else scatter(flat, 1, pos, src)
    return _bp.wrap_out(out.reshape(px._data.shape), level)


def _padded(t, level: int, rank: int):
    """A tensor argument for ops that broadcast: batched ones as (B, 1.., example) of ``rank`` example dims,
    unbatched ones as they are (they broadcast from the right)."""
    if not _bp.is_batched(t, level):
        return t
    return _batching._front_and_pad(t._phys, t._bdim, rank, _bp.batch_size(level))


def _masked_fill_rule(orig, args, kwargs, level):
    bound = _bind_or_none(masked_fill, args, kwargs, "input", "mask")
    if bound is None or bound["mask"]._data.dtype.kind != "b" or "value" not in bound:
        return _bp.own(orig, args, kwargs, level)   # its own error
    x, mask, value = bound["input"], bound["mask"], bound["value"]
    rank = max(x._data.ndim, mask._data.ndim)
    size = _bp.batch_size(level)
    px = _batching._front_and_pad(_bp.front(x, level), 0, rank, size)
    pm = _padded(mask, level, rank)
    if _bp.is_batched(value, level):
        if value._data.ndim:
            return _bp.own(orig, args, kwargs, level)   # its own error
        pv = _bp.front(value, level).to(x.dtype).reshape((size,) + (1,) * rank)
        shape = _broadcast_shape([px._data.shape, pm._data.shape])
        return _bp.wrap_out(where(pm, pv, px.expand(*shape) if shape != px._data.shape else px), level)
    return _bp.wrap_out(masked_fill(px, pm, value), level)


def _masked_scatter_rule(orig, args, kwargs, level):
    """Each example's masked positions take its source's elements in order: the k-th True of an example's
    (broadcast) mask reads its source's element k (a running count of the mask)."""
    bound = _bind_or_none(masked_scatter, args, kwargs, "input", "mask", "source")
    if bound is None or bound["mask"]._data.dtype.kind != "b" or \
            bound["input"]._data.dtype != bound["source"]._data.dtype:
        return _bp.own(orig, args, kwargs, level)   # its own error
    from .reduction import cumsum
    x, mask, source = bound["input"], bound["mask"], bound["source"]
    rank = max(x._data.ndim, mask._data.ndim)
    size = _bp.batch_size(level)
    px = _batching._front_and_pad(_bp.front(x, level), 0, rank, size)
    pm = _batching._front_and_pad(_bp.front(mask, level), 0, rank, size)
    shape = _broadcast_shape([px._data.shape, pm._data.shape])
    m = _batching.rows(pm.expand(*shape), size)
    count = cumsum(m, 1)
    n_src = source._data.size
    if type(count) is Tensor and count._data.shape[1] and n_src < int(count[:, -1].max()):   # (values at hand)
        raise RuntimeError("Number of elements of source < number of ones in mask")
    pos = (count - 1).clamp(0, max(n_src - 1, 0))
    src = _batching.rows(_bp.front(source, level), size)
    if not n_src:
        return _bp.wrap_out(px.expand(*shape).clone(), level)
    picked = gather(src, 1, pos)
    out = where(m, picked, _batching.rows(px.expand(*shape), size))
    return _bp.wrap_out(out.reshape(shape), level)


def _masked_select_rule(orig, args, kwargs, level):
    bound = _bind_or_none(masked_select, args, kwargs, "input", "mask")
    if bound is None or bound["mask"]._data.dtype.kind != "b":
        return _bp.own(orig, args, kwargs, level)   # its own error
    if _bp.is_batched(bound["mask"], level):
        raise RuntimeError("vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We cannot "
                           "support this because for each batch this would return a differently shaped Tensor. "
                           "Please file an issue at https://github.com/pytorch/pytorch/issues if you need this "
                           "feature.")
    x, mask = bound["input"], bound["mask"]
    rank = max(x._data.ndim, mask._data.ndim)
    size = _bp.batch_size(level)
    px = _batching._front_and_pad(_bp.front(x, level), 0, rank, size)
    shape = _broadcast_shape([px._data.shape, (1,) * (rank + 1 - mask._data.ndim) + tuple(mask._data.shape)])
    pm = mask.reshape((1,) * (rank + 1 - mask._data.ndim) + tuple(mask._data.shape)).expand(*shape)
    out = masked_select(px.expand(*shape) if shape != px._data.shape else px, pm)
    return _bp.wrap_out(_batching.rows(out, size), level)


def _where_rule(orig, args, kwargs, level):
    """where (its condition is a parameter of its primitive, batched or not): the physical condition and operands
    padded to one rank, cast first to the examples' result dtype (a 0-d operand promotes as one, not as its batch)."""
    if len(args) + len(kwargs) == 1 and _bp.is_batched(args[0] if args else kwargs.get("condition"), level):
        raise RuntimeError("vmap: We do not support batching operators that can output dynamic shape. Attempted to "
                           "vmap over aten::where. Please file an issue at https://github.com/pytorch/pytorch/issues "
                           "if you need this feature.")
    if len(args) + len(kwargs) != 3:
        return _bp.own(orig, args, kwargs, level)
    bound = _bind_or_none(where, args, kwargs, "condition")
    if bound is None or bound["condition"]._data.dtype.kind != "b" or "other" not in bound:
        return _bp.own(orig, args, kwargs, level)   # its own error
    cond, a, b = bound["condition"], bound["input"], bound["other"]
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):
        a = scalar_or_tensor(a, "where", "input")
        b = scalar_or_tensor(b, "where", "other")
        dt = promote(a, b)
        a, b = _tensor_of(a, dt), _tensor_of(b, dt)
    else:
        dt = promote(a, b)
    rank = max(t._data.ndim for t in (cond, a, b) if isinstance(t, Tensor))
    ops = [_padded(t, level, rank) for t in (a, b)]
    ops = [t.to(dt) if isinstance(t, Tensor) and t.dtype != dt else t for t in ops]
    return _bp.wrap_out(where(_padded(cond, level, rank), *ops), level)


def _tensor_of(v, dtype):
    from .creation import tensor as _tensor
    return _tensor(v, dtype=dtype)


# (an in-place op reaches its out-of-place twin's rule: the runner names both alike; see _bp.public_rule)
for _fn, _like in ((gather, "index"), (scatter, "input"), (scatter_add, "input"), (scatter_reduce, "input")):
    _bp.public_rule(_fn, _grid_rule(_fn, _like))
for _fn, _kind in ((index_add, "add"), (index_copy, "copy"), (index_fill, "fill"), (index_reduce, "reduce")):
    _bp.public_rule(_fn, _index_family_rule(_fn, _kind))
for _fn, _rule in ((index_select, _index_select_rule), (take, _take_rule), (put, _put_rule),
                   (masked_fill, _masked_fill_rule), (masked_scatter, _masked_scatter_rule),
                   (masked_select, _masked_select_rule), (where, _where_rule)):
    _bp.public_rule(_fn, _rule)


# ----- vmap: x[index], x[index] = value, index_put with batched tensors -------------------------------------------
#
# Each example's index (PyTorch's rules: ints select first, then the index tensors broadcast together and their
# dims take the place of the tensors if those are adjacent, else they come first) becomes one physical index with
# arange(B) in front, as an index tensor of its own: every index tensor is then advanced at the physical level,
# so the physical result is (B, broadcast dims, the sliced dims in order), permuted to the example's layout.
# Without index tensors, a leading ':' keeps basic indexing a view.

class _Plan:
    """An example's index, classified: the physical index, the rank of the broadcast dims, and how many sliced
    dims come before them in the example's result (0 when the tensors are not adjacent: they come first)."""

    __slots__ = ("phys", "rank", "pre", "sliced", "advanced")


def _index_items(index) -> tuple:
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and _as_sequence_tuple(index):
        return tuple(index)
    return (index,)


def _plan(items: tuple, ndim: int, level: int, tensors_advanced: bool = False):
    """The physical index of ``items`` (an example's index of an ``ndim``-dim tensor) at ``level``, or None for
    the forms done once per example (batched masks, bool indices, anything not understood)."""
    from .creation import arange, tensor as make_tensor
    size = _bp.batch_size(level)
    kinds = []   # per item: (kind, item); kinds: int, adv, mask, slice, none, ellipsis
    for it in items:
        if isinstance(it, (list, range)) or (not isinstance(it, Tensor) and hasattr(it, "__array__")
                                              and not isinstance(it, (bool, int, float))):
            try:
                it = make_tensor(it)
            except (TypeError, ValueError, RuntimeError):
                return None
        if isinstance(it, Tensor):
            k = it._data.dtype.kind
            if k == "b" or it._data.dtype == _UINT8:
                if not it._data.ndim or _bp.is_batched(it, level) or it._data.dtype == _UINT8:
                    return None
                kinds.append(("mask", it))
            elif k in "iu":
                kinds.append(("int" if not it._data.ndim and not tensors_advanced else "adv", it))
            else:
                return None
        elif isinstance(it, bool):
            return None
        elif isinstance(it, int) or (hasattr(it, "__index__") and not isinstance(it, (float, slice))
                                     and type(it).__module__ == "numpy"):
            kinds.append(("int", it))
        elif isinstance(it, slice):
            kinds.append(("slice", it))
        elif it is None:
            kinds.append(("none", it))
        elif it is Ellipsis:
            kinds.append(("ellipsis", it))
        else:
            return None
    consumed = sum(it._data.ndim if k == "mask" else 1 for k, it in kinds if k in ("int", "adv", "mask", "slice"))
    if consumed > ndim:
        return None
    plan = _Plan()
    plan.advanced = any(k in ("adv", "mask") for k, _ in kinds) or any(
        k == "int" and _bp.is_batched(it, level) for k, it in kinds)
    if not plan.advanced:
        plan.phys, plan.rank, plan.pre = (slice(None),) + tuple(it for _, it in kinds), 0, 0
        plan.sliced = sum(1 for k, _ in kinds if k in ("slice", "none")) + ndim - consumed
        return plan
    rank = 0
    for k, it in kinds:
        if k == "adv":
            rank = max(rank, it._data.ndim)
        elif k == "mask":
            rank = max(rank, 1)
    # the example's result: sliced dims before the run of index tensors (ints select first, so they split nothing)
    pre, sliced, run, gaps, ellipsis = 0, 0, False, False, False
    for k, it in kinds:
        dims = (ndim - consumed) * (not ellipsis) if k == "ellipsis" else (1 if k in ("slice", "none") else 0)
        ellipsis = ellipsis or k == "ellipsis"   # (a later Ellipsis takes no dims)
        if k in ("adv", "mask"):
            if run == "done":
                gaps = True
            run = True
        elif dims:
            if run is True:
                run = "done"
            if not run:
                pre += dims
        sliced += dims
    if not any(k == "ellipsis" for k, _ in kinds):
        sliced += ndim - consumed   # trailing dims not named
    phys = [arange(size).reshape((size,) + (1,) * rank)]
    for k, it in kinds:
        if isinstance(it, Tensor) and _bp.is_batched(it, level):
            it = _batching._front_and_pad(it._phys, it._bdim, rank if k != "int" else 0, size)
            if k == "int":
                it = it.reshape((size,) + (1,) * rank)
        phys.append(it)
    plan.phys, plan.rank, plan.pre, plan.sliced = tuple(phys), rank, (0 if gaps else pre), sliced
    return plan


def _to_example_layout(out: Tensor, plan) -> Tensor:
    """(B, broadcast dims, sliced dims) -> (B, the example's layout)."""
    if not plan.advanced or not plan.pre:
        return out
    r, p = plan.rank, plan.pre
    n = out._data.ndim
    return out.permute([0] + list(range(1 + r, 1 + r + p)) + list(range(1, 1 + r)) + list(range(1 + r + p, n)))


def _value_layout(value, plan, level: int, strip: bool = True):
    """A tensor value of an example's region as the physical region's value: (B, broadcast dims, sliced dims)."""
    if not isinstance(value, Tensor):
        return value
    size = _bp.batch_size(level)
    region = plan.rank + plan.sliced
    vs = tuple(value._data.shape)
    while strip and len(vs) > region and vs[0] == 1:
        vs = vs[1:]
    if not _bp.is_batched(value, level):
        if len(vs) != value._data.ndim:
            value = value.reshape(vs)
        if not plan.advanced or not plan.pre or len(vs) <= plan.sliced - plan.pre:
            return value   # broadcasts from the right as it is
        value = value.unsqueeze(0).expand((size,) + vs)
    else:
        value = _bp.front(value, level)
        if len(vs) != value._data.ndim - 1:
            value = value.reshape((size,) + vs)
    value = _batching._front_and_pad(value, 0, region, size)
    if plan.advanced and plan.pre:
        r, p = plan.rank, plan.pre
        value = value.permute([0] + list(range(1 + p, 1 + p + r)) + list(range(1, 1 + p)) +
                              list(range(1 + p + r, region + 1)))
    return value


def _getitem_public(orig, args, kwargs, level):
    if len(args) != 2 or kwargs or not isinstance(args[0], Tensor):
        return _bp.own(orig, args, kwargs, level)
    x, index = args
    plan = _plan(_index_items(index), x._data.ndim, level)
    if plan is None:
        return _bp.per_example(getitem, args, kwargs, level)
    return _bp.wrap_out(_to_example_layout(getitem(_bp.front(x, level), plan.phys), plan), level)


def _setitem_public(orig, args, kwargs, level):
    if len(args) != 3 or kwargs or not isinstance(args[0], Tensor):
        return _bp.own(orig, args, kwargs, level)
    x, index, value = args
    if not _batching.batched_at(x, level):   # (PyTorch words x[i] = v's refusal as in-place arithmetic)
        raise RuntimeError(_bp.INPLACE_UNBATCHED.format(op="inplace arithmetic"))
    plan = _plan(_index_items(index), x._data.ndim, level)
    if plan is None:
        return _bp.per_example(setitem, args, kwargs, level)
    setitem(_bp.front(x, level), plan.phys, _value_layout(value, plan, level))
    x._requires_grad = x._phys._requires_grad
    return None


def _index_put_rule(orig, args, kwargs, level):
    bound = _bind_or_none(index_put, args, kwargs, "input", "values")
    if bound is None or not isinstance(bound.get("indices"), (tuple, list)) or \
            not all(isinstance(t, Tensor) for t in bound["indices"]):
        return _bp.own(orig, args, kwargs, level)
    x = bound["input"]
    plan = _plan(tuple(bound["indices"]), x._data.ndim, level, tensors_advanced=True)
    if plan is None or not plan.advanced:
        return _bp.per_example(index_put, args, kwargs, level)
    values = _value_layout(bound["values"], plan, level, strip=False)
    out = index_put(_bp.front(x, level), plan.phys, values, bound.get("accumulate", False))
    return _bp.wrap_out(out, level)


def _copy_rule(orig, args, kwargs, level):
    """copy_ into a batched tensor: the source (broadcast to each example) copied into the physical tensor."""
    bound = _bind_or_none(copy_, args, kwargs, "self", "src")
    if bound is None:
        return _bp.own(orig, args, kwargs, level)
    self, src = bound["self"], bound["src"]
    if not _batching.batched_at(self, level):
        raise RuntimeError(_bp.INPLACE_UNBATCHED.format(op="inplace arithmetic"))   # (PyTorch's words for copy_)
    if broadcast_error((src._data.shape, self._data.shape)) is not None or (
            src._data.ndim > self._data.ndim and _broadcast_shape([src._data.shape, self._data.shape]) !=
            self._data.shape):
        return _bp.own(orig, args, kwargs, level)   # its own error
    ps = _bp.front(self, level)
    pv = _padded(src, level, self._data.ndim)
    copy_(ps, pv, bound.get("non_blocking", False))
    self._requires_grad = self._phys._requires_grad
    return self


_bp.public_rule(getitem, _getitem_public)
_bp.public_rule(setitem, _setitem_public)
_bp.public_rule(index_put, _index_put_rule)
_bp.signature(copy_)
_batching.PUBLIC_RULES["copy"] = _copy_rule   # (the runner's name for copy_)


# ----- vmap: comparisons and logical ops (the masks of indexing), which compute on the values in their wrappers ---
# (they live in ops/elementwise.py; registered here, beside where's rule)

def _register_mask_ops() -> None:
    from . import elementwise as E
    for fn in (E.eq, E.ne, E.lt, E.le, E.gt, E.ge, E.logical_and, E.logical_or, E.logical_xor, E.logical_not):
        _bp.public_rule(fn, _bp.elementwise_public(fn))


_register_mask_ops()
