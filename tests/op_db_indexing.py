"""Op database entries of the 'indexing' family (collected into op_db.OP_DB).

Index tensors travel in the keyword arguments as NumPy arrays (``_T`` makes them tensors of the module
under test), so only the differentiable inputs are drawn. Samples cover repeated indices (gradients
accumulate), 0-d inputs and indices, empty indices, negative dims and indices, broadcasting of masks and
values, non-contiguous inputs, method and function forms. Each op has an ``*_errors`` entry (forward
only) whose samples make torch raise: ember must raise the same exception type.

Ties (amax/amin) and zeros (prod) of scatter_reduce/index_reduce have their own entries: at a 2-way tie
the central difference is the even share PyTorch gives, so gradcheck still holds there, but forward-mode
finite differences do not (the function has a kink), hence ``supports_fwd=False``; two zeros reduced to
one position make torch's double backward refuse (a DelayedError), hence ``supports_gradgrad=False``.
"""
from __future__ import annotations

import numpy as np

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)
I = np.array   # an index array (int64)


def _T(m, x):
    """A kwarg index for module ``m``: arrays become tensors (int32 arrays stay int32; 0-d arrays 0-d
    tensors), also inside tuples and slice bounds; lists stay Python lists."""
    if isinstance(x, np.ndarray):
        return m.tensor(x)
    if isinstance(x, tuple):
        return tuple(_T(m, v) for v in x)
    if isinstance(x, slice):
        return slice(_T(m, x.start), _T(m, x.stop), _T(m, x.step))
    return x


# ----- x[index] and x[index] = v: the forms the base entries in op_db.py do not cover ----------------------

def _getitem(m, a, index):
    return a[_T(m, index)]


GETITEM_MORE = [
    ((3, 4), dict(index=(I([0, 1]), None, I([1, 2])))),         # None between arrays: result dims in front
    ((3, 4), dict(index=(True, I([0, 2])))),                   # a bool is an unsqueeze plus an index
    ((3, 4), dict(index=(False,))),
    ((3, 4), dict(index=(Ellipsis, Ellipsis))),                # later Ellipses take no dims
    ((2, 3, 4), dict(index=(0, Ellipsis, I([1, 3])))),
    ((2, 3, 4), dict(index=(slice(None), 1, I([3, 0, 3])))),   # a select before the array: PyTorch's order
    ((2, 3, 4), dict(index=(I([1, 0]), slice(None), I([2, 2])))),   # arrays apart: result dims in front
    ((3, 4), dict(index=(slice(1, None), I([0, 2, 2])))),
    ((3, 4), dict(index=slice(I(1), I(3)))),                    # 0-d tensors as slice bounds
    ((3, 4), dict(index=I(2))),                                 # a 0-d int tensor is a select
    ((3, 4), dict(index=I(True))),                              # a 0-d bool tensor: unsqueeze plus index
    ((3, 4), dict(index=[[0, 1], [1, 2]])),                     # a list of lists is a tuple of indices
    ((3, 4), dict(index=[0.7, 2.2])),                           # floats in a list truncate to longs
    ((3, 4), dict(index=[True, False, True])),
    ((3, 4), dict(index=[[]])),
    ((3, 4), dict(index=(I([-1, -3]), I([[0], [-4]])))),
    ((4, 3), dict(index=(I([[True, False, True, False]] * 3),), nc=True)),
    ((), dict(index=True)),
    ((3, 4), dict(index=I([1, 0, 2], dtype=np.int32))),
]


def _getitem_nc(m, a, index, nc=False):
    return _getitem(m, a.mT if nc else a, index)


def _setitem(m, a, v, index):
    y = a * 1
    y[_T(m, index)] = v
    return y


SETITEM_MORE = [
    (((3, 4), (1, 1, 4)), dict(index=0)),                       # leading 1s of the value are dropped
    (((3, 4), (1, 2, 4)), dict(index=I([2, 0]))),
    (((3, 4), (2, 1)), dict(index=(I([0, 1]), None, I([1, 2])))),
    (((2, 3, 4), (3,)), dict(index=(slice(None), 1, I([3, 0, 2])))),
    (((3, 4), (4,)), dict(index=(True, 1))),
    (((3, 4), ()), dict(index=(Ellipsis, 2, Ellipsis))),
    (((3, 4), (2, 4)), dict(index=slice(I(1), None))),
    (((3, 4), (4,)), dict(index=I(1))),
    (((3, 4), ()), dict(index=I([1, 1, 0]))),                   # repeated: the value's gradient counts each
    (((), ()), dict(index=True)),
]
SETITEM_ERRORS = [
    (((3, 4),), dict(index=0, vshape=(2, 4))),
    (((3, 4),), dict(index=I([0, 1]), vshape=(3,))),
    (((3, 4),), dict(index=(slice(None), 1), vshape=(4,))),
    (((3, 4),), dict(index=I([0, 5]), vshape=())),
    (((3, 4),), dict(index=(0, 0, 0), vshape=())),
    (((3, 4),), dict(index=(Ellipsis, Ellipsis, 2), vshape=())),
    (((3, 4),), dict(index=I([0, 1]), vshape=(4,), vdtype="float64")),
    (((3, 4),), dict(index=(True, 1), vshape=(), vdtype="int64")),
]


def _setitem_error(m, a, index, vshape, vdtype=None):
    a[_T(m, index)] = m.ones(vshape, dtype=a.dtype if vdtype is None else getattr(m, vdtype))
    return a


def _multi(cases, domain="real"):
    """Samples of several inputs: ``[(shapes, kwargs), ...]``."""
    def gen(rng):
        return [Sample(tuple(draw(rng, s, domain) for s in shapes), kw) for shapes, kw in cases]
    return gen


def _fixed(cases):
    """Samples with explicit values (ties, zeros): ``[(arrays, kwargs), ...]``."""
    def gen(rng):
        return [Sample(tuple(np.array(a, dtype=np.float64) for a in arrays), kw) for arrays, kw in cases]
    return gen


def _errors(name, op, samples, dtypes=("float32",)):
    return OpInfo(name + "_errors", op, samples, dtypes=dtypes, **NO_GRAD)


def _one(cases):
    """One-input samples: ``[(shape, kwargs), ...]`` as the op database's ``((shape,), kwargs)``."""
    return [((shape,), kw) for shape, kw in cases]


def _nc(a, nc):
    return a.mT if nc else a


# ----- gather / scatter --------------------------------------------------------------------------------

def _gather(m, a, dim, index, meth=False, nc=False):
    a = _nc(a, nc)
    return a.gather(dim, _T(m, index)) if meth else m.gather(a, dim, _T(m, index))


GATHER = [
    ((3, 4), dict(dim=0, index=I([[0, 1, 2, 0], [2, 2, 1, 0]]))),          # repeated: gradients accumulate
    ((3, 4), dict(dim=1, index=I([[3, 0], [1, 1], [2, 3]]), meth=True)),
    ((3, 4), dict(dim=-1, index=I([[1, 2, 0], [3, 3, 0]]))),               # smaller than the input
    ((2, 3, 4), dict(dim=1, index=I([[[0, 2, 1, 1], [2, 2, 0, 1]]] * 2))),
    ((4, 3), dict(dim=0, index=I([[0, 2, 1], [2, 2, 0]]), nc=True)),       # non-contiguous input
    ((), dict(dim=0, index=I(0))),
    ((5,), dict(dim=0, index=I(3))),                                       # 0-d index of a 1-d input
    ((), dict(dim=-1, index=I([0, 0]))),
    ((3, 4), dict(dim=0, index=np.zeros((0, 4), np.int64))),
    ((3, 4), dict(dim=1, index=I([[1], [0]], dtype=np.int32))),
]


def _scatter(m, a, s, dim, index, meth=True):
    return a.scatter(dim, _T(m, index), s) if meth else m.scatter(a, dim, _T(m, index), s)


SCATTER = [   # indices distinct along dim: which write wins is not specified by PyTorch
    (((3, 4), (2, 4)), dict(dim=0, index=I([[0, 1, 2, 0], [2, 0, 1, 1]]))),
    (((3, 4), (3, 2)), dict(dim=1, index=I([[0, 3], [1, 2], [3, 0]]), meth=False)),
    (((2, 3, 4), (2, 2, 4)), dict(dim=-2, index=I([[[0, 2, 1, 1], [2, 1, 0, 0]]] * 2))),
    (((), ()), dict(dim=0, index=I(0))),
    (((3, 4), (0, 4)), dict(dim=0, index=np.zeros((0, 4), np.int64))),
    (((5,), (2,)), dict(dim=0, index=I([4, 0]))),
]


def _scatter_add(m, a, s, dim, index, meth=True):
    return a.scatter_add(dim, _T(m, index), s) if meth else m.scatter_add(a, dim, _T(m, index), s)


SCATTER_ADD = [
    (((3, 4), (3, 4)), dict(dim=0, index=I([[0, 1, 2, 0], [2, 2, 1, 0], [0, 0, 0, 0]]))),
    (((3, 4), (3, 2)), dict(dim=1, index=I([[0, 0], [1, 3], [3, 3]]), meth=False)),
    (((2, 3, 4), (2, 3, 1)), dict(dim=2, index=I([[[1], [1], [0]], [[3], [2], [3]]]))),
    (((), ()), dict(dim=0, index=I(0))),
    (((3, 4), (0, 4)), dict(dim=0, index=np.zeros((0, 4), np.int64))),
    (((5,), (3,)), dict(dim=0, index=I([4, 4, 0]))),
]


def _scatter_reduce(m, a, s, dim, index, reduce, include_self=True, meth=True):
    if meth:
        return a.scatter_reduce(dim, _T(m, index), s, reduce, include_self=include_self)
    return m.scatter_reduce(a, dim, _T(m, index), s, reduce=reduce, include_self=include_self)


_SR_INDEX = I([[0, 1, 2, 0], [2, 2, 1, 0], [0, 0, 1, 0]])   # column 3 gets all three, row 1 of col 0 none
SCATTER_REDUCE = [(((3, 4), (3, 4)), dict(dim=0, index=_SR_INDEX, reduce=r, include_self=inc))
                  for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)] + [
    (((2, 3, 4), (2, 3, 2)), dict(dim=2, index=I([[[1, 1], [0, 3], [2, 2]]] * 2), reduce="mean", meth=False)),
    (((2, 3), (2, 3)), dict(dim=-1, index=I([[2, 2, 2], [0, 1, 0]]), reduce="amax", include_self=False)),
    (((), ()), dict(dim=0, index=I(0), reduce="prod")),
    (((3, 4), (0, 4)), dict(dim=0, index=np.zeros((0, 4), np.int64), reduce="amin")),
]

# amax/amin ties (2-way: between x and src, or two src elements), x's tie at a written position without
# include_self, and prod with zeros in x or a single zero in src at a position.
_TIE_X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
SCATTER_REDUCE_TIES = [
    (([[1.0, 2.0, 3.0]], [[1.0, 0.5, 3.0]]), dict(dim=0, index=I([[0, 0, 0]]), reduce="amax")),      # x ties src
    ((_TIE_X, [[0.5, 7.0, 7.0]]), dict(dim=1, index=I([[1, 2, 2]]), reduce="amax")),                 # src ties src
    ((_TIE_X, [[0.5, 0.7, 0.7]]), dict(dim=1, index=I([[1, 0, 0]]), reduce="amin", include_self=False)),
    ((_TIE_X, [[2.0, 9.0, 0.0]]), dict(dim=1, index=I([[1, 0, 2]]), reduce="amax", include_self=False)),
    ((_TIE_X, [[-1.0, 4.0, 0.0], [6.0, 1.0, 1.0]]), dict(dim=0, index=I([[1, 1, 0], [1, 0, 0]]), reduce="amin")),
]
SCATTER_REDUCE_ZEROS = [
    (([[0.0, 2.0, 3.0], [4.0, 0.0, 6.0]], [[0.5, 1.5, 2.0]]), dict(dim=0, index=I([[0, 1, 1]]), reduce="prod")),
    ((_TIE_X, [[0.0, 1.5, 2.0], [3.0, 0.0, 0.5]]), dict(dim=0, index=I([[0, 1, 0], [1, 0, 0]]), reduce="prod")),
    ((_TIE_X, [[0.0, 1.5, 0.0]]), dict(dim=1, index=I([[0, 0, 2]]), reduce="prod", include_self=False)),
    (([[0.0, 2.0], [1.0, 3.0]], [[2.0, 0.0]]), dict(dim=0, index=I([[1, 1]]), reduce="prod", include_self=False)),
]
SCATTER_REDUCE_TWO_ZEROS = [
    ((_TIE_X, [[0.0, 0.0, 2.0]]), dict(dim=1, index=I([[1, 1, 0]]), reduce="prod")),
    (([[0.0, 2.0, 3.0]], [[0.0, 1.0, 3.0]]), dict(dim=0, index=I([[0, 0, 0]]), reduce="prod")),
]


def _take_along(m, a, index, dim=None, meth=False):
    if meth:
        return a.take_along_dim(_T(m, index), dim)
    return m.take_along_dim(a, _T(m, index)) if dim is None else m.take_along_dim(a, _T(m, index), dim=dim)


TAKE_ALONG = [
    ((3, 4), dict(index=I([[0, 2, 1, 0]]), dim=0)),             # indices broadcast over the other dims
    ((3, 4), dict(index=I([[3], [0], [3]]), dim=-1, meth=True)),
    ((3, 1), dict(index=I([[0, 0, 0]]), dim=0)),                # the input broadcasts too
    ((3, 4), dict(index=I([11, 0, 5, 5]))),                     # dim=None: the flattened input
    ((), dict(index=I(0))),
    ((2, 3, 4), dict(index=np.zeros((2, 1, 4), np.int64), dim=1)),
]

# ----- index_* ----------------------------------------------------------------------------------------------


def _index_select(m, a, dim, index, meth=False, nc=False):
    a = _nc(a, nc)
    return a.index_select(dim, _T(m, index)) if meth else m.index_select(a, dim, _T(m, index))


INDEX_SELECT = [
    ((3, 4), dict(dim=0, index=I([2, 0, 2]))),
    ((3, 4), dict(dim=1, index=I([3]), meth=True)),
    ((3, 4), dict(dim=-1, index=I(1))),
    ((4, 3), dict(dim=0, index=I([1, 1, 0]), nc=True)),
    ((2, 3, 4), dict(dim=1, index=I([0, 2], dtype=np.int32))),
    ((), dict(dim=0, index=I([0]))),
    ((3, 4), dict(dim=0, index=np.zeros(0, np.int64))),
    ((0, 3), dict(dim=1, index=I([2, 2]))),
]


def _index_add(m, a, s, dim, index, alpha=None, meth=True):
    kw = {} if alpha is None else {"alpha": alpha}
    return a.index_add(dim, _T(m, index), s, **kw) if meth else m.index_add(a, dim, _T(m, index), s, **kw)


INDEX_ADD = [
    (((3, 4), (3, 4)), dict(dim=0, index=I([0, 2, 0]))),
    (((3, 4), (3, 2)), dict(dim=1, index=I([3, 3]), alpha=2)),
    (((3, 4), (3, 2)), dict(dim=-1, index=I([0, 3]), meth=False)),
    (((2, 3, 4), (2, 1, 4)), dict(dim=1, index=I(1))),
    (((5,), (1,)), dict(dim=0, index=I([2]))),
    (((), ()), dict(dim=0, index=I([0]))),
    (((3, 4), (0, 4)), dict(dim=0, index=np.zeros(0, np.int64))),
]


def _index_copy(m, a, s, dim, index, meth=True):
    return a.index_copy(dim, _T(m, index), s) if meth else m.index_copy(a, dim, _T(m, index), s)


INDEX_COPY = [
    (((3, 4), (2, 4)), dict(dim=0, index=I([2, 0]))),
    (((3, 4), (3, 1)), dict(dim=1, index=I([3]), meth=False)),
    (((2, 3, 4), (2, 3, 2)), dict(dim=-1, index=I([1, 0]))),
    (((5,), ()), dict(dim=0, index=I([2]))),
    (((3, 4), (0, 4)), dict(dim=0, index=np.zeros(0, np.int64))),
]


def _index_fill(m, a, dim, index, value, meth=True):
    return a.index_fill(dim, _T(m, index), value) if meth else m.index_fill(a, dim, _T(m, index), value)


INDEX_FILL = [
    ((3, 4), dict(dim=0, index=I([2, 0, 2]), value=1.5)),
    ((3, 4), dict(dim=1, index=I([-1]), value=-2, meth=False)),
    ((2, 3, 4), dict(dim=2, index=I(1), value=0.0)),
    ((), dict(dim=0, index=I([0]), value=3.0)),
    ((3, 4), dict(dim=0, index=np.zeros(0, np.int64), value=1.0)),
]


def _index_fill_t(m, a, v, dim, index):
    return a.index_fill(dim, _T(m, index), v)


INDEX_FILL_T = [
    (((3, 4), ()), dict(dim=0, index=I([2, 0, 2]))),   # a repeated index counts once in the value's gradient
    (((2, 3, 4), ()), dict(dim=-1, index=I([3, 1]))),
    (((), ()), dict(dim=0, index=I([0]))),
]


def _index_reduce(m, a, s, dim, index, reduce, include_self=True):
    return a.index_reduce(dim, _T(m, index), s, reduce, include_self=include_self)


INDEX_REDUCE = [(((3, 4), (3, 3)), dict(dim=1, index=I([0, 2, 0]), reduce=r, include_self=inc))
                for r in ("prod", "mean", "amax", "amin") for inc in (True, False)] + [
    (((2, 3, 4), (2, 3, 4)), dict(dim=0, index=I([1, 1]), reduce="mean")),
    (((5,), (2,)), dict(dim=-1, index=I([4, 0]), reduce="amax", include_self=False)),
]
INDEX_REDUCE_TIES = [
    ((_TIE_X, [[3.0, 0.5], [0.2, 6.0]]), dict(dim=1, index=I([2, 1]), reduce="amax")),
    ((_TIE_X, [[0.0, 2.0], [5.0, 0.5]]), dict(dim=1, index=I([0, 0]), reduce="prod")),
    ((_TIE_X, [[9.0, 2.0], [5.0, 0.5]]), dict(dim=1, index=I([1, 0]), reduce="amin", include_self=False)),
]


def _index_put(m, a, v, indices, accumulate=False, fn=False):
    ix = tuple(m.tensor(i) for i in indices)
    return m.index_put(a, ix, v, accumulate) if fn else a.index_put(ix, v, accumulate=accumulate)


INDEX_PUT = [
    (((3, 4), (2, 4)), dict(indices=(I([2, 0]),))),
    (((3, 4), (3,)), dict(indices=(I([0, 2, 1]), I([1, 1, 3])), fn=True)),
    (((3, 4), ()), dict(indices=(I([[0], [2]]), I([1, 3])))),                  # broadcast value and indices
    (((3, 4), (2, 4)), dict(indices=(I([1, 1]),), accumulate=True)),           # repeated, accumulated
    (((3, 4), (4,)), dict(indices=(I([0, 2, 0]),), accumulate=True, fn=True)),
    (((2, 3), ()), dict(indices=(np.array([[True, False, True], [False, True, True]]),))),
    (((3, 4), (4,)), dict(indices=(I(1),))),                                   # a 0-d index tensor is advanced
    (((3, 4), (4,)), dict(indices=(np.zeros(0, np.int64),))),
]

# ----- masked_* ----------------------------------------------------------------------------------------------


def _masked_fill(m, a, mask, value, meth=True):
    mk = m.tensor(mask)
    return a.masked_fill(mk, value) if meth else m.masked_fill(a, mk, value)


def _mask(rng, shape):
    return rng.random(shape) > 0.5


def _masked_fill_samples(rng):
    out = []
    for sa, sm, v, meth in [((3, 4), (3, 4), 1.5, True), ((3, 4), (4,), -2, False), ((4,), (3, 4), 0.0, True),
                            ((), (), 2.5, True), ((2, 1, 3), (1, 4, 1), 1.0, False), ((0, 3), (3,), 1.0, True)]:
        out.append(Sample((draw(rng, sa),), dict(mask=_mask(rng, sm), value=v, meth=meth)))
    out.append(Sample((draw(rng, (3, 4)),), dict(mask=np.ones((3, 4), bool), value=True)))
    return out


def _masked_fill_t(m, a, v, mask):
    return a.masked_fill(m.tensor(mask), v)


def _masked_fill_t_samples(rng):
    return [Sample((draw(rng, sa), draw(rng, ())), dict(mask=_mask(rng, sm)))
            for sa, sm in [((3, 4), (3, 4)), ((3, 4), (4,)), ((3,), (2, 3)), ((), ())]]


def _masked_scatter(m, a, s, mask, meth=True):
    mk = m.tensor(mask)
    return a.masked_scatter(mk, s) if meth else m.masked_scatter(a, mk, s)


def _masked_scatter_samples(rng):
    out = []
    for sa, sm, ss, meth in [((3, 4), (3, 4), (3, 4), True), ((3, 4), (4,), (2, 7), False),
                             ((4,), (2, 4), (8,), True), ((), (), (1,), True), ((2, 3), (2, 3), (6,), True)]:
        out.append(Sample((draw(rng, sa), draw(rng, ss)), dict(mask=_mask(rng, sm), meth=meth)))
    out.append(Sample((draw(rng, (2, 3)), draw(rng, (2, 3))), dict(mask=np.array([True, False, True]))))
    return out


def _masked_select(m, a, mask, meth=False):
    mk = m.tensor(mask)
    return a.masked_select(mk) if meth else m.masked_select(a, mk)


def _masked_select_samples(rng):
    out = []
    for sa, sm, meth in [((3, 4), (3, 4), False), ((3, 4), (4,), True), ((4,), (3, 4), False), ((), (), True),
                         ((2, 1, 3), (4, 1), False), ((0, 3), (3,), False)]:
        out.append(Sample((draw(rng, sa),), dict(mask=_mask(rng, sm), meth=meth)))
    out.append(Sample((draw(rng, ()),), dict(mask=np.array(True))))
    return out

# ----- take / put --------------------------------------------------------------------------------------------


def _take(m, a, index, meth=False, nc=False):
    a = _nc(a, nc)
    return a.take(_T(m, index)) if meth else m.take(a, _T(m, index))


TAKE = [
    ((3, 4), dict(index=I([0, 11, 5, 5]))),
    ((3, 4), dict(index=I([[-1, 0], [-12, 3]]), meth=True)),
    ((4, 3), dict(index=I([1, 2, 3]), nc=True)),
    ((), dict(index=I(0))),
    ((5,), dict(index=I(-2))),
    ((3, 4), dict(index=np.zeros(0, np.int64))),
]


def _put(m, a, s, index, accumulate=False, meth=True):
    if meth:
        return a.put(_T(m, index), s, accumulate)
    return m.put(a, _T(m, index), s, accumulate=accumulate)


PUT = [
    (((3, 4), (3,)), dict(index=I([0, 11, 5]))),
    (((3, 4), (2, 2)), dict(index=I([[-1, 0], [4, 3]]), meth=False)),
    (((3, 4), (4,)), dict(index=I([1, 1, 1, 0]), accumulate=True)),
    (((), ()), dict(index=I(0))),
    (((5,), (1,)), dict(index=I([-2]), accumulate=True, meth=False)),
    (((3, 4), (0,)), dict(index=np.zeros(0, np.int64))),
]

# ----- in place ----------------------------------------------------------------------------------------------


def _inplace(name):
    """``a.<name>(...)`` on a non-leaf copy of a: the op must rebase a's history."""
    def op(m, a, *rest, **kw):
        b = a * 1
        kw.pop("meth", None)
        args = [_T(m, kw.pop(k)) if k in kw else None for k in ("dim", "index")]
        args = [x for x in args if x is not None]
        return getattr(b, name)(*args, *rest, **kw)
    return op


def _inplace_entries():
    return [
        OpInfo("scatter_", _inplace("scatter_"), _multi(SCATTER[:2]), dtypes=ALL),
        OpInfo("scatter_value_", lambda m, a, dim, index, value: (a * 1).scatter_(dim, _T(m, index), value),
               _one([((3, 4), dict(dim=0, index=I([[0, 2]]), value=2.5))]), dtypes=FLOAT),
        OpInfo("scatter_add_", _inplace("scatter_add_"), _multi(SCATTER_ADD[:2]), dtypes=FLOAT + INT),
        OpInfo("scatter_reduce_", _inplace("scatter_reduce_"),
               _multi(SCATTER_REDUCE[2:4] + SCATTER_REDUCE[6:7], "distinct"), dtypes=FLOAT),
        OpInfo("index_add_", _inplace("index_add_"), _multi(INDEX_ADD[:2]), dtypes=FLOAT + INT),
        OpInfo("index_copy_", _inplace("index_copy_"), _multi(INDEX_COPY[:2]), dtypes=ALL),
        OpInfo("index_fill_", lambda m, a, dim, index, value, meth=True: (a * 1).index_fill_(dim, _T(m, index), value),
               _one(INDEX_FILL[:2]), dtypes=ALL),
        OpInfo("index_reduce_", _inplace("index_reduce_"), _multi(INDEX_REDUCE[:2], "distinct")),
        OpInfo("index_put_", lambda m, a, v, indices, accumulate=False:
               (a * 1).index_put_(tuple(m.tensor(i) for i in indices), v, accumulate),
               _multi([(s, {k: v for k, v in kw.items() if k != "fn"}) for s, kw in INDEX_PUT[:4]]), dtypes=ALL),
        OpInfo("index_put_fn_", lambda m, a, v, indices, fn=True: m.index_put_(a * 1, tuple(m.tensor(i) for i in indices), v),
               _multi([INDEX_PUT[1]]), dtypes=FLOAT),
        OpInfo("masked_fill_", lambda m, a, mask, value: (a * 1).masked_fill_(m.tensor(mask), value),
               lambda rng: [Sample((draw(rng, (3, 4)),), dict(mask=_mask(rng, s), value=1.5)) for s in ((3, 4), (4,))],
               dtypes=ALL),
        OpInfo("masked_fill_tensor_", lambda m, a, v, mask: (a * 1).masked_fill_(m.tensor(mask), v),
               lambda rng: [Sample((draw(rng, (3, 4)), draw(rng, ())), dict(mask=_mask(rng, (4,))))]),
        OpInfo("masked_scatter_", lambda m, a, s, mask: (a * 1).masked_scatter_(m.tensor(mask), s),
               lambda rng: [Sample((draw(rng, (3, 4)), draw(rng, (12,))), dict(mask=_mask(rng, s)))
                            for s in ((3, 4), (4,))], dtypes=ALL),
        OpInfo("put_", lambda m, a, s, index, accumulate=False, meth=True: (a * 1).put_(_T(m, index), s, accumulate),
               _multi(PUT[:3]), dtypes=FLOAT + INT),
    ]

# ----- misuse: torch raises, ember must raise the same type ----------------------------------------------------


ERRORS = [
    _errors("gather", lambda m, a, case: {
        "oor": lambda: a.gather(0, m.tensor([[0, 5]])),
        "neg": lambda: a.gather(0, m.tensor([[-1, 0]])),
        "ndim": lambda: a.gather(0, m.tensor([0, 1])),
        "bigger": lambda: a.gather(0, m.zeros(3, 5, dtype=m.int64)),
        "dim": lambda: a.gather(2, m.tensor([[0]])),
        "float_index": lambda: a.gather(0, m.zeros(1, 4)),
        "list_index": lambda: m.gather(a, 0, [[0, 1]]),
        "sparse_str": lambda: m.gather(a, 0, m.tensor([[0]]), sparse_grad="no"),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("oor", "neg", "ndim", "bigger", "dim", "float_index", "list_index",
                                                "sparse_str")]),
    _errors("scatter", lambda m, a, case: {
        "dtype": lambda: a.scatter(0, m.tensor([[0, 1]]), m.ones(1, 2, dtype=m.float64)),
        "src_small": lambda: a.scatter(0, m.tensor([[0, 1, 2]]), m.ones(1, 2)),
        "oor": lambda: a.scatter(0, m.tensor([[0, 9]]), m.ones(1, 2)),
        "oor_value": lambda: a.scatter(0, m.tensor([[0, 9]]), 1.0),
        "reduce": lambda: a.scatter(0, m.tensor([[0, 1]]), m.ones(1, 2), reduce="mean"),
        "int32": lambda: a.scatter(0, m.tensor([[0, 1]], dtype=m.int32), 1.0),
        "src_str": lambda: a.scatter(0, m.tensor([[0, 1]]), "a"),
        "add_dtype": lambda: a.scatter_add(0, m.tensor([[0, 1]]), m.ones(1, 2, dtype=m.float64)),
        "add_oor": lambda: a.scatter_add(0, m.tensor([[3, 1]]), m.ones(1, 2)),
        "add_value": lambda: a.scatter_add(0, m.tensor([[0, 1]]), 1.0),
        "reduce_bad": lambda: a.scatter_reduce(0, m.tensor([[0, 1]]), m.ones(1, 2), "median"),
        "reduce_oor": lambda: a.scatter_reduce(0, m.tensor([[0, 7]]), m.ones(1, 2), "amax"),
        "reduce_self": lambda: a.scatter_reduce(0, m.tensor([[0, 1]]), m.ones(1, 2), "sum", include_self="yes"),
        "inplace_int": lambda: m.zeros(3, dtype=m.int64).scatter_(0, m.tensor([0]), m.ones(1)),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("dtype", "src_small", "oor", "oor_value", "reduce", "int32",
                                                "src_str", "add_dtype", "add_oor", "add_value", "reduce_bad",
                                                "reduce_oor", "reduce_self", "inplace_int")]),
    _errors("index_select", lambda m, a, case: {
        "2d": lambda: a.index_select(0, m.tensor([[0], [1]])),
        "oor": lambda: a.index_select(0, m.tensor([0, 5])),
        "neg": lambda: a.index_select(1, m.tensor([-1])),
        "float": lambda: a.index_select(0, m.tensor([0.0])),
        "scalar_many": lambda: m.tensor(2.0).index_select(0, m.tensor([0, 0])),
        "dim": lambda: a.index_select(2, m.tensor([0])),
        "dim_str": lambda: a.index_select("0", m.tensor([0])),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("2d", "oor", "neg", "float", "scalar_many", "dim", "dim_str")]),
    _errors("index_add", lambda m, a, case: {
        "dtype": lambda: a.index_add(0, m.tensor([0, 1]), m.ones(2, 4, dtype=m.float64)),
        "count": lambda: a.index_add(0, m.tensor([0, 1]), m.ones(3, 4)),
        "shape": lambda: a.index_add(0, m.tensor([0, 1]), m.ones(2, 5)),
        "oor": lambda: a.index_add(0, m.tensor([0, 7]), m.ones(2, 4)),
        "alpha_str": lambda: a.index_add(0, m.tensor([0, 1]), m.ones(2, 4), alpha="2"),
        "copy_count": lambda: a.index_copy(0, m.tensor([0, 1]), m.ones(3, 4)),
        "copy_oor": lambda: a.index_copy(0, m.tensor([0, 7]), m.ones(2, 4)),
        "copy_int32": lambda: a.index_copy(0, m.tensor([0, 1], dtype=m.int32), m.ones(2, 4)),
        "fill_oor": lambda: a.index_fill(0, m.tensor([0, 7]), 1.0),
        "fill_1d_value": lambda: a.index_fill(0, m.tensor([0, 1]), m.ones(2)),
        "fill_int32": lambda: a.index_fill(0, m.tensor([0], dtype=m.int32), 2.0),
        "fill_str": lambda: a.index_fill(0, m.tensor([0]), "a"),
        "reduce_sum": lambda: a.index_reduce(0, m.tensor([0, 1]), m.ones(2, 4), "sum"),
        "reduce_oor": lambda: a.index_reduce(0, m.tensor([0, 5]), m.ones(2, 4), "prod"),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("dtype", "count", "shape", "oor", "alpha_str", "copy_count", "copy_oor",
                                                "copy_int32", "fill_oor", "fill_1d_value", "fill_int32", "fill_str",
                                                "reduce_sum", "reduce_oor")]),
    _errors("index_put", lambda m, a, case: {
        "dtype": lambda: a.index_put((m.tensor([0, 1]),), m.ones(4, dtype=m.float64)),
        "float_value": lambda: a.index_put((m.tensor([0, 1]),), 1.0),
        "none": lambda: a.index_put((None, m.tensor([0, 1])), m.ones(1)),
        "shape": lambda: a.index_put((m.tensor([0, 1]),), m.ones(3)),
        "oor": lambda: a.index_put((m.tensor([0, 5]),), m.ones(4)),
        "too_many": lambda: a.index_put((m.tensor([0]),) * 3, m.ones(1)),
        "float_index": lambda: a.index_put((m.tensor([0.0]),), m.ones(4)),
        "leaf": lambda: a.requires_grad_().index_put_((m.tensor([0]),), m.ones(4)),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("dtype", "float_value", "none", "shape", "oor", "too_many",
                                                "float_index", "leaf")]),
    _errors("masked", lambda m, a, case: {
        "fill_float_mask": lambda: a.masked_fill(m.ones(3, 4), 1.0),
        "fill_uint8_mask": lambda: a.masked_fill(m.ones(3, 4, dtype=m.uint8), 1.0),
        "fill_inplace_bcast": lambda: m.ones(4).masked_fill_(m.ones(3, 4) > 0, 1.0),
        "fill_1d_value": lambda: a.masked_fill(a > 0, m.ones(2)),
        "fill_shape": lambda: a.masked_fill(m.ones(2) > 0, 1.0),
        "fill_str": lambda: a.masked_fill(a > 0, "a"),
        "fill_list_mask": lambda: a.masked_fill([True], 1.0),
        "scatter_few": lambda: a.masked_scatter(a > -10, m.ones(5)),
        "scatter_dtype": lambda: a.masked_scatter(a > 0, m.ones(12, dtype=m.float64)),
        "scatter_float_mask": lambda: a.masked_scatter(m.ones(3, 4), m.ones(12)),
        "select_float_mask": lambda: a.masked_select(m.ones(3, 4)),
        "select_shape": lambda: a.masked_select(m.ones(2) > 0),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("fill_float_mask", "fill_uint8_mask", "fill_inplace_bcast",
                                                "fill_1d_value", "fill_shape", "fill_str", "fill_list_mask",
                                                "scatter_few", "scatter_dtype", "scatter_float_mask",
                                                "select_float_mask", "select_shape")]),
    _errors("take_put", lambda m, a, case: {
        "take_oor": lambda: a.take(m.tensor([0, 12])),
        "take_neg_oor": lambda: a.take(m.tensor([-13])),
        "take_int32": lambda: a.take(m.tensor([0], dtype=m.int32)),
        "along_int32": lambda: a.take_along_dim(m.tensor([[0]], dtype=m.int32), 0),
        "along_ndim": lambda: a.take_along_dim(m.tensor([0]), 0),
        "along_bcast": lambda: m.take_along_dim(a, m.tensor([[0], [1]]), 1),
        "put_oor": lambda: a.put(m.tensor([0, 12]), m.ones(2)),
        "put_numel": lambda: a.put(m.tensor([0, 1]), m.ones(3)),
        "put_dtype": lambda: a.put(m.tensor([0, 1]), m.ones(2, dtype=m.float64)),
        "put_acc_str": lambda: a.put(m.tensor([0]), m.ones(1), accumulate="yes"),
    }[case](), [(((3, 4),), dict(case=c)) for c in ("take_oor", "take_neg_oor", "take_int32", "along_int32", "along_ndim",
                                                "along_bcast", "put_oor", "put_numel", "put_dtype", "put_acc_str")]),
]

# ----- the entries ---------------------------------------------------------------------------------------------

_SELF_TIE = ("PyTorch's amax/amin backward counts x's own value among the ties even without include_self (it "
             "compares self == result before masking x out), so the source's share is halved where x equals the "
             "result; ember follows PyTorch (the grad test checks it), central differences give the full share")
_KINK = ("at a tie the VJP jumps (it is the even share only on the tie itself), so central differences of the "
         "VJP do not exist there; the grad test checks the tie against PyTorch")

OPS: list = [
    OpInfo("getitem_more", _getitem_nc, _one(GETITEM_MORE), dtypes=ALL),
    OpInfo("setitem_more", _setitem, _multi(SETITEM_MORE), dtypes=FLOAT, xfails=tuple(
        XFail(t, "x[[1, 1, 0]] = v writes v once at index 1, but PyTorch's gradient for v sums the gradient at every "
                 "index, repeated ones twice; ember follows PyTorch (the grad test checks it), so central differences "
                 "and <v, Ju> = <J^T v, u> disagree", sample="8:") for t in ("gradcheck", "fwd_ad"))),
    OpInfo("setitem_more_dtypes", _setitem, _multi(SETITEM_MORE[:2] + SETITEM_MORE[6:8]), dtypes=INT + ("bool",),
           **NO_GRAD),
    _errors("setitem", _setitem_error, SETITEM_ERRORS),
    OpInfo("gather", _gather, _one(GATHER), dtypes=ALL),
    OpInfo("scatter", _scatter, _multi(SCATTER), dtypes=ALL),
    OpInfo("scatter_src_bigger", lambda m, a, s, index: a.scatter(0, _T(m, index), s),   # torch cannot backprop
           _multi([(((3, 4), (3, 5)), dict(index=I([[0, 1, 2, 0]])))]), dtypes=FLOAT, **NO_GRAD),
    OpInfo("scatter_value", lambda m, a, dim, index, value: m.scatter(a, dim, _T(m, index), value=value),
           _one([((3, 4), dict(dim=0, index=I([[0, 2], [1, 0]]), value=2.5)),
                 ((3, 4), dict(dim=1, index=I([[3], [0], [1]]), value=-1)), ((), dict(dim=0, index=I(0), value=1.0))]),
           dtypes=ALL),
    OpInfo("scatter_legacy_reduce", lambda m, a, s, index, reduce: a.scatter(0, _T(m, index), s, reduce=reduce),
           _multi([(((3, 4), (2, 4)), dict(index=I([[0, 1, 2, 0], [0, 1, 1, 0]]), reduce=r))
                   for r in ("add", "multiply")]), dtypes=FLOAT + INT, **NO_GRAD),
    OpInfo("scatter_legacy_grad_fn", lambda m, a, s, index: a.scatter(0, _T(m, index), s, reduce="add"),
           _multi([(((3, 4), (1, 4)), dict(index=I([[0, 1, 2, 0]])))]), supports_gradgrad=False, supports_fwd=False,
           xfails=(XFail("grad", "PyTorch refuses to differentiate scatter with reduce= (RuntimeError: derivative "
                         "for aten::scatter is not implemented); ember refuses too, so the comparison cannot run"),
                   XFail("gradcheck", "not differentiable (as in PyTorch)"),
                   XFail("hygiene", "not differentiable (as in PyTorch): backward raises RuntimeError"))),
    OpInfo("scatter_add", _scatter_add, _multi(SCATTER_ADD), dtypes=FLOAT + INT),
    OpInfo("scatter_reduce", _scatter_reduce, _multi(SCATTER_REDUCE, "distinct"), dtypes=FLOAT + INT),
    OpInfo("scatter_reduce_ties", _scatter_reduce, _fixed(SCATTER_REDUCE_TIES), supports_fwd=False, xfails=(
        XFail("gradcheck", _SELF_TIE, sample="3:"),
        *(XFail("gradgrad_numeric", _KINK, sample=s) for s in ("0:", "1:")))),
    OpInfo("scatter_reduce_zeros", _scatter_reduce, _fixed(SCATTER_REDUCE_ZEROS)),
    OpInfo("scatter_reduce_two_zeros", _scatter_reduce, _fixed(SCATTER_REDUCE_TWO_ZEROS), supports_gradgrad=False),
    OpInfo("take_along_dim", _take_along, _one(TAKE_ALONG), dtypes=ALL),
    OpInfo("index_select", _index_select, _one(INDEX_SELECT), dtypes=ALL),
    OpInfo("index_add", _index_add, _multi(INDEX_ADD), dtypes=FLOAT + INT),
    OpInfo("index_copy", _index_copy, _multi(INDEX_COPY), dtypes=ALL),
    OpInfo("index_fill", _index_fill, _one(INDEX_FILL), dtypes=ALL),
    OpInfo("index_fill_tensor", _index_fill_t, _multi(INDEX_FILL_T)),
    OpInfo("index_reduce", _index_reduce, _multi(INDEX_REDUCE, "distinct"), dtypes=FLOAT + INT),
    OpInfo("index_reduce_ties", _index_reduce, _fixed(INDEX_REDUCE_TIES), supports_fwd=False, xfails=(
        XFail("gradcheck", _SELF_TIE, sample="2:"), XFail("gradgrad_numeric", _KINK, sample="0:"))),
    OpInfo("index_put", _index_put, _multi(INDEX_PUT), dtypes=ALL),
    OpInfo("masked_fill", _masked_fill, _masked_fill_samples, dtypes=ALL),
    OpInfo("masked_fill_tensor", _masked_fill_t, _masked_fill_t_samples),
    OpInfo("masked_scatter", _masked_scatter, _masked_scatter_samples, dtypes=ALL),
    OpInfo("masked_select", _masked_select, _masked_select_samples, dtypes=ALL),
    OpInfo("take", _take, _one(TAKE), dtypes=ALL),
    OpInfo("put", _put, _multi(PUT), dtypes=FLOAT + INT),
    *_inplace_entries(),
    *ERRORS,
]
HYP_UNARY: list = []    # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = []   # names of entries whose two broadcasting inputs hypothesis draws shapes for
