"""Views on a device made from an array-API library: which arrays alias which, and writes that reach them all.

A library that follows the standard may copy where NumPy makes a view, and its arrays may be immutable, so a
``DeviceArray`` (array.py) owns its library array, and aliasing is kept here instead. The namespace's view kernels
(``VIEW_KERNELS``: the ones ember's view primitives call) link their result to the array they viewed: a ``View``
names the root array (the one that owns the memory), the steps that lead from the root to the view (replayed to
rebuild it), and the strides NumPy would give it, in elements, so that contiguity, ``stride()``, ``view()``'s
checks and the choice between a view and a copy in ``reshape`` are the CPU's. An array written in place
(``DeviceArray.store``) then writes back: a view scatters the values written into its root (at the flat positions
that replaying its steps on ``arange`` selects), and every live view of that root is rebuilt from it. Roots hold
their views weakly; a view holds its root. Nothing here runs on the cpu, whose arrays are NumPy's own views.

The layout rules follow NumPy's (the CPU kernels are NumPy's views) for arrays made by a view kernel; any other
result is fresh and C-contiguous here, where NumPy may keep its input's layout (``(x.t() * 2)`` is F-ordered on
the CPU, so ``reshape`` copies it there and makes a view here).
"""
from __future__ import annotations

import weakref

from ..cpu.shape import _diag_geometry
from ..index import SplitIndex


def c_strides(shape: tuple) -> tuple:
    """The strides (in elements) of a C-contiguous array of ``shape`` (a dim of 0 counts as 1, as NumPy's)."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _contiguous(shape: tuple, strides: tuple) -> bool:
    """NumPy's C-contiguity of a layout (dims of size 1 do not count; an empty array is contiguous)."""
    if 0 in shape:
        return True
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != step:
                return False
            step *= n
    return True


class View:
    """What makes a DeviceArray a view: its ``root`` array, the ``steps`` (namespace function, args, kwargs) that
    rebuild it from the root, and its NumPy layout (``strides`` in elements, and the ``flags`` NumPy would give
    it: a View is its array's ``flags``)."""

    __slots__ = ("root", "steps", "strides", "writeable", "c_contiguous", "f_contiguous")

    def __init__(self, root, steps: tuple, shape: tuple, strides: tuple, writeable: bool):
        self.root, self.steps, self.strides, self.writeable = root, steps, strides, writeable
        self.c_contiguous = _contiguous(shape, strides)
        self.f_contiguous = _contiguous(shape[::-1], strides[::-1])


def replay(x, steps: tuple):
    """The view ``steps`` lead to from array ``x``."""
    for fn, args, kwargs in steps:
        x = fn(x, *args, **kwargs)
    return x


def write_back(w, written=None) -> None:
    """After DeviceArray ``w`` was written in place (``written``: where only part of it was, a bool library array of
    its shape): its root holds its new values (where ``w`` is a view), and every live view of that root is rebuilt
    from the root. Only the elements written reach the root: of a view whose elements overlap (``unfold``), an
    element left alone must not undo a write to another one at the same place."""
    view = w._view
    if view is not None:
        root = view.root
        kit = root._kit

        def positions(lin):   # the root's flat positions of w's elements: the view's steps replayed on arange
            pos = replay(type(w)(lin), view.steps).a
            return pos if written is None else kit.xp.where(written, pos, -1)   # -1: writes nothing
        root.a = kit.scatter_set(root.a, positions, w.a)
    else:
        root = w
    views = root._views
    if views:
        for v in list(views.values()):
            v.a = replay(root, v._view.steps).a


def _strides_of(x) -> tuple:
    """A DeviceArray's strides in elements (C order for any array that is no view)."""
    v = x._view
    return c_strides(x.shape) if v is None else v.strides


# ----- the layout of each view kernel's result (NumPy's; None where NumPy copies) ----------------------------------
# Each rule takes the input's shape and strides (in elements) and the result's shape (positional only: a kernel's
# argument may be named ``shape``), then the kernel's arguments after the array.

def _reshape(shape, strides, new_shape, /, *_, **_kw):
    """NumPy's reshape without a copy (``_attempt_nocopy_reshape`` in its C order), or None where it copies."""
    if new_shape == tuple(shape):
        return tuple(strides)
    if _contiguous(shape, strides):
        return c_strides(new_shape)
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    out = [0] * len(new_shape)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new_shape) and oi < len(old):
        np_, op = new_shape[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None   # these old axes cannot be merged: NumPy copies
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new_shape[k]
        ni, oi = nj, oj
        nj, oj = nj + 1, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for k in range(ni, len(new_shape)):
        out[k] = last
    return tuple(out)


def _permute(shape, strides, out_shape, /, dims):
    return tuple(strides[d] for d in dims)


def _expand(shape, strides, new_shape, /, *_, **_kw):
    lead = len(new_shape) - len(shape)
    # (NumPy gives every dim of size 1 in the input stride 0)
    return (0,) * lead + tuple(s if n == m != 1 else 0 for n, m, s in zip(shape, new_shape[lead:], strides))


def _slice_dim(shape, strides, out_shape, /, dim, start, stop, step=1):
    out = list(strides)
    out[dim] *= step if step is not None else 1
    return tuple(out)


def _select_dim(shape, strides, out_shape, /, dim, index):
    return tuple(s for d, s in enumerate(strides) if d != dim % len(shape))


def _diagonal(shape, strides, out_shape, /, offset=0, dim1=0, dim2=1):
    return _diag_geometry(shape, strides, offset, dim1, dim2)[1]


def _unfold(shape, strides, out_shape, /, dimension, size, step):
    if not shape:
        return (1,)
    return strides[:dimension] + (strides[dimension] * step,) + strides[dimension + 1:] + (strides[dimension],)


def _getitem(shape, strides, out_shape, /, index):
    """A basic index's layout (ints, slices, None, Ellipsis); None for any other (NumPy copies)."""
    if type(index) is SplitIndex:
        return None
    index = index if isinstance(index, tuple) else (index,)
    if any(not (i is None or i is Ellipsis or type(i) in (int, slice)) for i in index):
        return None   # an array, a mask or a bool: advanced indexing
    given = sum(i is not None and i is not Ellipsis for i in index)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (len(shape) - given) + index[at + 1:]
    else:
        index = index + (slice(None),) * (len(shape) - given)
    out, d = [], 0
    for i in index:
        if i is None:
            out.append(0)
            continue
        if type(i) is slice:
            out.append(strides[d] * (i.step if i.step is not None else 1))
        d += 1
    return tuple(out)


def _as_strided(shape, strides, out_shape, /, size, stride, *_):
    return tuple(stride)


VIEW_KERNELS = {"as_strided": _as_strided, "reshape": _reshape, "permute": _permute, "expand": _expand, "slice_dim": _slice_dim,
                "select_dim": _select_dim, "diagonal": _diagonal, "unfold": _unfold, "getitem": _getitem}


def aliasing(fn, rule, arr: type, readonly: bool = False):
    """The namespace function ``fn`` (a view kernel, on the device's arrays ``arr``) with its result linked as a
    view of its input where NumPy's would be one (``rule``: its layout, see VIEW_KERNELS; ``readonly``: the view
    cannot be written to, as NumPy's broadcast_to)."""

    def view_op(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        if type(x) is not arr or type(out) is not arr or out.size == 0:
            return out   # nothing to share
        strides = rule(x.shape, _strides_of(x), out.shape, *args, **kwargs)
        if strides is None or len(strides) != out.a.ndim:
            return out   # NumPy copies here (or a form of arguments the rule does not know: a copy, as before)
        step = ((fn, args, kwargs),)
        parent = x._view
        if parent is None:
            root, steps, writeable = x, step, True
        else:
            root, steps, writeable = parent.root, parent.steps + step, parent.writeable
        writeable = writeable and not readonly
        out._view = View(root, steps, out.shape, tuple(strides), writeable)
        if root._views is None:
            root._views = weakref.WeakValueDictionary()   # by id: DeviceArrays are not hashable (as NumPy's)
        root._views[id(out)] = out
        return out
    view_op.__name__ = fn.__name__
    view_op.__doc__ = fn.__doc__
    return view_op
