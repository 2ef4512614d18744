"""PyTorch's indexing rules (``x[index]``, ``x[index] = v``, ``index_put``) turned into NumPy indices.

PyTorch applies an index in two steps: the basic part (ints as selects, slices, None, Ellipsis; a Python
bool as an unsqueeze) gives a view, then the advanced part (index tensors, lists and masks) indexes that
view. NumPy applies both at once and would treat ints as advanced indices broadcast with the arrays,
which moves the result's dims (``x[0, :, [1, 2]]``). So a mixed index becomes a ``SplitIndex``: the
basic part, a view, then the advanced part (arrays and full slices only, where NumPy's placement of the
result dims is PyTorch's).

Every check happens here, before NumPy sees the index, so errors carry PyTorch's types and messages.
Index arrays from tensors stay on their device: their values are read through the device's namespace
(bounds, mask counts) or their own operators, and shapes are computed from shapes only (in Python, by
NumPy's placement rule). Python ints, slices and lists are parsed on the host.
"""
from __future__ import annotations

import operator

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor
from .._util import broadcast_shape
from ..devices.index import SplitIndex
from .creation import device_backend, tensor

# The host's (NumPy's) types: its scalars count as Python ints and bools, its arrays as index arrays.
_HOST = device_backend()
_BOOL, _INT64, _INT32, _UINT8 = D.bool.np, D.int64.np, D.int32.np, D.uint8.np

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_FULL = slice(None)


class Index:
    """A converted index: ``np_index`` (a tuple or a SplitIndex) for ``view_of``, ``basic`` (the result is
    a view), ``last`` (the kind of the last basic index, which names the view's backward node) and
    ``view_shape`` (the shape after the basic part, which the advanced part indexes)."""

    __slots__ = ("np_index", "basic", "last", "view_shape", "adv")

    def __init__(self, np_index, basic, last, view_shape, adv):
        self.np_index, self.basic, self.last, self.view_shape, self.adv = np_index, basic, last, view_shape, adv

    def result_shape(self) -> tuple:
        """The shape of ``x[index]``, from shapes only (no data is read, and device arrays stay where they are):
        NumPy's placement rule, which is PyTorch's for the advanced part. The index arrays' broadcast dims take
        their place if the arrays are adjacent, else they come first; the full slices keep their dims."""
        if self.basic:
            return self.view_shape
        shapes = []         # the index arrays' shapes (a k-dim mask: k index arrays of its count of True values)
        before, after = [], []   # the sizes of the sliced dims before the first array and after it
        gap = False         # a slice between two arrays: the broadcast dims go first
        d = 0
        for a in self.adv:
            if type(a) is slice:
                (after if shapes else before).append(self.view_shape[d])
                d += 1
                continue
            gap = gap or bool(after)
            if a.dtype == _BOOL:
                shapes.extend([(_count(a),)] * a.ndim)
                d += a.ndim
            else:
                shapes.append(a.shape)
                d += 1
        rest = list(self.view_shape[d:])
        adv = list(broadcast_shape(shapes))
        return tuple(adv + before + after + rest if gap else before + adv + after + rest)


def _xp(arr):
    """The raw namespace of an index array's device."""
    return NAMESPACES[type(arr)]


def _count(mask) -> int:
    """The number of True values of a bool index array (on its device)."""
    return _xp(mask).mask_count(mask)


def _is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def _as_sequence_tuple(index) -> bool:
    """PyTorch's (NumPy's) rule for a non-tuple sequence: it is a tuple of indices if it holds a tensor,
    a sequence, a slice, Ellipsis or None (``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``)."""
    if isinstance(index, tuple):
        return True
    if _is_tensor(index) or isinstance(index, (_HOST.host_array, str, bytes)) or not isinstance(index, (list, range)):
        return isinstance(index, str)   # a str is a sequence of strs: PyTorch treats it as a tuple too
    if len(index) >= 32:
        return False
    for obj in index:
        if _is_tensor(obj) or isinstance(obj, (list, tuple, range, _HOST.host_array, str, slice)) or obj is None \
                or obj is Ellipsis:
            return True
    return False


def _check_int(v) -> int:
    v = operator.index(v)
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    return v


def _sequence_to_array(seq):
    """A list used as an index: bools make a mask, anything numeric a long index (floats truncate, as
    PyTorch's indexing_tensor_from_data casts to long)."""
    try:
        arr = tensor(seq)._data
    except TypeError as e:
        if "str" in str(e) or isinstance(seq, str):
            raise TypeError("new(): invalid data type 'str'") from None
        raise
    return _xp(arr).cast(arr, _BOOL if arr.dtype == _BOOL or arr.dtype == _UINT8 else _INT64)


def _tensor_index(t):
    arr = t._data
    if arr.dtype == _BOOL or arr.dtype == _UINT8:
        return _xp(arr).cast(arr, _BOOL)
    if arr.dtype == _INT64 or arr.dtype == _INT32:
        return _xp(arr).cast(arr, _INT64)
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def raw_index(index):
    """A NumPy index that may hold tensors (an index built inside a derivative rule under ``create_graph``) with
    each tensor as public indexing reads it: its data as a long or bool array (a 0-d integer one stays 0-d,
    an int to NumPy). Without this NumPy would call a one-element tensor's ``__index__`` and drop its dim."""
    if type(index) is SplitIndex:
        return index
    if _is_tensor(index):
        return _tensor_index(index)
    if type(index) is tuple and any(_is_tensor(i) for i in index):
        return tuple(_tensor_index(i) if _is_tensor(i) else i for i in index)
    return index


_PLAIN = (int, type(None))
_BAD_TYPE = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
             "indices (got {})")


def _items(index, tensors_advanced: bool) -> list:
    """The index as a list of ('int', i) / ('slice', s) / ('none',) / ('ellipsis',) / ('bool', b) /
    ('adv', array) entries, with PyTorch's conversions and type errors."""
    if not isinstance(index, tuple):
        index = tuple(index) if _as_sequence_tuple(index) else (index,)
    out = []
    for ix in index:
        t = type(ix)
        if t is int and _INT64_MIN <= ix <= _INT64_MAX:   # the common cases first
            out.append(("int", ix))
        elif t is slice and type(ix.start) in _PLAIN and type(ix.stop) in _PLAIN and ix.step is None:
            out.append(("slice", ix))
        elif ix is None:
            out.append(("none",))
        elif ix is Ellipsis:
            out.append(("ellipsis",))
        elif _is_tensor(ix):
            arr = ix._data
            if arr.ndim == 0 and not tensors_advanced and arr.dtype.kind in "iu" and arr.dtype != _UINT8:
                if arr.dtype != _INT64 and arr.dtype != _INT32:
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
                out.append(("int", int(arr)))
            elif arr.ndim == 0 and (arr.dtype == _BOOL or arr.dtype == _UINT8):   # a 0-d mask: a Python bool
                out.append(("bool", bool(arr)))
            else:
                out.append(("adv", _tensor_index(ix)))
        elif isinstance(ix, (bool, _HOST.host_bool)):
            out.append(("bool", bool(ix)))
        elif isinstance(ix, (int, _HOST.host_integer)):
            out.append(("int", _check_int(ix)))
        elif isinstance(ix, slice):
            bounds = []
            for v in (ix.start, ix.stop, ix.step):
                if v is None:
                    bounds.append(None)
                    continue
                if _is_tensor(v):
                    bounds.append(v.__index__())   # PyTorch's TypeError for float or multi-element tensors
                    continue
                try:
                    bounds.append(_check_int(v))
                except TypeError:
                    raise TypeError("slice indices must be integers or None or have an __index__ method") from None
            if bounds[2] is not None and bounds[2] == 0:
                raise ValueError("slice step cannot be zero")
            if bounds[2] is not None and bounds[2] < 0:
                raise ValueError("step must be greater than zero")
            out.append(("slice", slice(*bounds)))
        elif ix is None:
            out.append(("none",))
        elif ix is Ellipsis:
            out.append(("ellipsis",))
        elif isinstance(ix, _HOST.host_array):   # a NumPy array from the user: a host index array
            if ix.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if ix.ndim == 0 and ix.dtype.kind == "b":
                out.append(("bool", bool(ix)))
            else:
                # a copy, as a base array: a subclass index (np.memmap, np.matrix) is read as a plain array
                out.append(("adv", _HOST.base_array(ix.astype(_BOOL if ix.dtype.kind == "b" else _INT64))))
        elif isinstance(ix, (list, tuple, range, str)):
            out.append(("adv", _sequence_to_array(ix)))
        else:
            raise IndexError(_BAD_TYPE.format(type(ix).__name__))
    return out


def convert(index, shape: tuple, tensors_advanced: bool = False) -> Index:
    """PyTorch's index ``index`` of a tensor of ``shape``, checked, as an ``Index``.

    ``tensors_advanced``: every tensor is an advanced index, even a 0-d one (``index_put``'s rule; ``x[t]``
    treats a 0-d integer tensor as an int).
    """
    items = _items(index, tensors_advanced)
    ndim = len(shape)
    specified = 0
    for it in items:
        if it[0] in ("int", "slice"):
            specified += 1
        elif it[0] == "adv":
            specified += it[1].ndim if it[1].dtype == _BOOL else 1
    if specified > ndim:
        if ndim == 0 and len(items) == 1 and not isinstance(index, tuple):
            if items[0][0] == "int":
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
            if items[0][0] == "slice":
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")

    basic = []          # the NumPy basic index
    view_shape = []     # the shape of x[basic]
    adv = {}            # view dim -> array
    src = 0             # the dim of x the next index applies to
    last = None
    ellipsis_seen = False
    for it in items:
        kind = it[0]
        if kind == "int":
            i = it[1]
            if src >= ndim:   # only after a second Ellipsis, which PyTorch lets skip dims again
                raise IndexError(f"index {i} is out of bounds for dimension {ndim} with size 0")
            n = shape[src]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {src} with size {n}")
            basic.append(i)
            src += 1
            last = int
        elif kind == "slice":
            if src >= ndim:
                raise IndexError(f"too many indices for tensor of dimension {ndim}")
            s = it[1]
            basic.append(s)
            view_shape.append(len(range(*s.indices(shape[src]))))
            src += 1
            if s != _FULL:
                last = slice
        elif kind == "none":
            basic.append(None)
            view_shape.append(1)
            last = type(None)
        elif kind == "bool":
            # PyTorch: unsqueeze, then index the new dim with [0] (True) or an empty index (False).
            basic.append(None)
            adv[len(view_shape)] = _HOST.zeros(1 if it[1] else 0, _INT64)
            view_shape.append(1)
        elif kind == "ellipsis":
            k = ndim - specified
            if not ellipsis_seen:
                basic.append(Ellipsis)
                view_shape.extend(shape[src:src + k])
                ellipsis_seen = True
            # PyTorch accepts more than one Ellipsis: each skips the unspecified dims again, so an index
            # after a second one points past the last dim.
            src += k
        else:
            arr = it[1]
            k = arr.ndim if arr.dtype == _BOOL else 1
            if src + k > ndim:
                raise IndexError(f"too many indices for tensor of dimension {ndim}")
            basic.extend([_FULL] * k)
            adv[len(view_shape)] = arr
            view_shape.extend(shape[src:src + k])
            src += k
    view_shape.extend(shape[min(src, ndim):])
    view_shape = tuple(view_shape)
    if not ellipsis_seen:
        basic.append(Ellipsis)   # x[1] on a 1-d array would give NumPy a scalar; x[1, ...] is a 0-d view
    basic = tuple(basic)
    if not adv:
        return Index(basic, True, last, view_shape, None)
    adv_index = _check_advanced(adv, view_shape)
    trivial = all(b is Ellipsis or b == _FULL for b in basic)   # no select/None/step before the arrays
    np_index = adv_index if trivial else SplitIndex((basic, adv_index))
    return Index(np_index, False, last, view_shape, adv_index)


def _check_advanced(adv: dict, view_shape: tuple) -> tuple:
    """The advanced part (full slices and arrays over the view's dims), checked: mask shapes, bounds,
    and that the index arrays broadcast together."""
    out = []
    shapes = []
    ordinal = 0     # PyTorch numbers the dims of an out-of-range index among the indexed dims only
    d = 0
    bad_dims = []   # (position in out, size, ordinal) of the index arrays with values out of range
    sliced_empty = False    # a dim that is not indexed has size 0
    while d < len(view_shape):
        arr = adv.get(d)
        if arr is None:
            out.append(_FULL)
            sliced_empty = sliced_empty or view_shape[d] == 0
            d += 1
            continue
        if arr.dtype == _BOOL:
            for j, n in enumerate(arr.shape):
                if view_shape[d + j] != n:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(view_shape)} at index {d + j}")
            out.append(arr)
            shapes.append((_count(arr),))
            ordinal += arr.ndim
            d += arr.ndim
            continue
        n = view_shape[d]
        if not _xp(arr).in_range(arr, -n, n):
            bad_dims.append((len(out), n, ordinal))
        out.append(arr)
        shapes.append(arr.shape)
        ordinal += 1
        d += 1
    try:
        if len(shapes) > 1:
            broadcast_shape(shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in shapes)) from None
    if bad_dims:
        # PyTorch's index kernel checks bounds as it gathers: a result without elements (an index broadcast to
        # size 0, as with a False, or a size-0 dim left) checks nothing. NumPy would, so the out-of-range
        # arrays of such an index become zeros.
        if not sliced_empty and 0 not in broadcast_shape(shapes):
            i, n, ordinal = bad_dims[0]
            arr = out[i]
            v = int(arr[(arr >= n) | (arr < -n)].reshape(-1)[0]) if arr.ndim else int(arr)
            raise IndexError(f"index {v} is out of bounds for dimension {ordinal} with size {n}")
        for i, _, _ in bad_dims:
            out[i] = out[i] * 0
    return tuple(out)


def check_value_shape(value_shape: tuple, ix: Index, strip: bool = True) -> tuple:
    """``x[index] = value``: the value's shape with its leading 1s dropped (PyTorch strips them, unless not
    ``strip``), checked to broadcast to the indexed region; PyTorch's errors otherwise."""
    vs = tuple(value_shape)
    while strip and vs and vs[0] == 1:
        vs = vs[1:]
    target = ix.result_shape()
    ok = len(vs) <= len(target) and all(v == 1 or v == t for v, t in zip(vs[::-1], target[::-1]))
    if ok:
        return vs
    if not ix.basic:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value_shape)} cannot be broadcast to "
                           f"indexing result of shape {list(target)}")
    if len(vs) > len(target):
        raise RuntimeError(f"expand(Tensor{{{list(vs)}}}, size={list(target)}): the number of sizes provided "
                           f"({len(target)}) must be greater or equal to the number of dimensions in the tensor "
                           f"({len(vs)})")
    for i in range(1, len(vs) + 1):
        if vs[-i] != 1 and vs[-i] != target[-i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({vs[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(vs)}")
    raise AssertionError("unreachable")
