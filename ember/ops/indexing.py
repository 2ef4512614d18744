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
from ._index import Index, check_value_shape, convert, raw_index
from .._tensor import Tensor, make, wrap_dim
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, _state, apply, apply_saving, broadcast_error, defprim, fwd_state
from ._registry import graph, register
from ..autograd import _batching
from .elementwise import is_array_scalar, is_real, scalar_value
from .shape import _broadcast_shape
from .._util import F8_CHARS, check_bool, check_tensor, dtype_word, refuse_shell, scalar_or_tensor
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


def _index_rule(call, args, bdims, params, size):
    """An advanced index (a basic step, then integer arrays): a leading ':' in each step. NumPy puts the
    broadcast dims of non-adjacent index arrays first, and the batch dim after them."""
    x = _batching._moved(args[0], bdims[0])
    steps = params["index"]
    if type(steps) is not tuple or not all(type(st) is tuple for st in steps):
        return _batching.loop(call, args, bdims, params, size)
    arrays = [i for st in steps for i in st if hasattr(i, "dtype")]
    if any(a.dtype.kind == "b" for a in arrays):
        return _batching.loop(call, args, bdims, params, size)
    out_bdim = 0
    new_steps = []
    for st in steps:
        pos = [k for k, i in enumerate(st) if hasattr(i, "dtype")]
        if pos and pos != list(range(pos[0], pos[0] + len(pos))):   # separated arrays: NumPy moves their dims
            out_bdim = max(a.ndim for a in (st[k] for k in pos))
        new_steps.append((slice(None),) + st)
    return call([x], {"index": tuple(new_steps)}), out_bdim


_batching.batching(_getitem_rule, getitem_view_p)
_batching.batching(_index_rule, getitem_p)
_batching.batching("elementwise", fill_p)


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("fallback", "index_put_zeros", "fill_index", "index_put", "index_add", "scatter_reduce", "scatter",
                  "masked_scatter", "take", "put", why="an index array in its parameters")
