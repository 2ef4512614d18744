"""vmap's machinery: batched tensors, levels, and the batching rule of each primitive.

Inside ``vmap`` a tensor mapped over is a ``BatchedTensor``: a Tensor whose ``_data`` is a ``Logical`` (the
per-example shape and dtype, no values) and which holds the physical tensor (``_phys``, with the batch dimension
at ``_bdim``) and the ``_level`` of the vmap that made it. Nested vmaps nest wrappers: the physical tensor of a
level-3 BatchedTensor may be a level-2 one (JAX's tracers, functorch's BatchedTensor).

While any vmap runs, ``apply`` (the one place every primitive runs, autograd/_primitive.py) is swapped for
``_run``: a primitive with a BatchedTensor input runs its batching rule on the physical tensors of the highest
level among its inputs, and the result is wrapped at that level. The rule calls ``apply`` again on the physical
tensors, so lower levels batch in turn, and the physical call is recorded by autograd as any op: there is one
autograd graph, on physical tensors, and the transforms of ember.func differentiate on it (see ember/func).

Rules are declared with the primitives (``batching``, called by the op families): by kind where they can be
("elementwise": inputs broadcast together; "dims": a parameter names dimensions to shift; "leading": the op maps
over leading dimensions as it is), by hand where not. A primitive on the explicit ``FALLBACK`` list (or any op
whose Python wrapper needs values, e.g. to compute indices) runs once per example and warns, as PyTorch's
fallback. Nothing here costs anything outside vmap: the swaps happen when the first vmap level opens.
"""
from __future__ import annotations

import types
import warnings

from .. import _dtype as _D
from .._device import NAMESPACES
from .._state import code_swaps as _code_swaps, func_depth as _func_depth, fwd_state as _fwd, \
    track_tangent as _track_tangent
from .._tensor import Tensor, _new, make as _make
from . import _levels, _primitive, _views
from . import grad_mode as _gm
from ._primitive import KEEP_DTYPE, Primitive

# ----- what a batched tensor's _data is ----------------------------------------------------------------------

DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We "
                  "don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")
ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
        "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
        "inside PyTorch internals, please file a bug report.")


MEMORY_FORMAT = "NYI: querying is_contiguous inside of vmap for memory_format other than torch.contiguous_format"
INPLACE = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in "
           "extra_args that has more elements than `self`. This happened due to `other` being vmapped over but `self` "
           "not being vmapped over in a vmap. Please try to use out-of-place operators instead of inplace arithmetic. "
           "If said operator is being called inside the PyTorch framework, please file a bug report instead.")


def dynamic_shape(aten: str) -> RuntimeError:
    return RuntimeError(f"vmap: We do not support batching operators that can output dynamic shape. Attempted to "
                        f"vmap over aten::{aten}. Please file an issue at https://github.com/pytorch/pytorch/issues "
                        "if you need this feature.")


class NeedsValues(RuntimeError):
    """Code read the values of a batched tensor's ``_data`` (which has none). Inside a public op this sends the
    op to the per-example fallback; anywhere else it reaches the user as PyTorch's data-dependent error."""


class _Flags:
    """A Logical's ``flags``: what ember's op wrappers read of an array's layout."""

    __slots__ = ("c_contiguous",)
    f_contiguous = False
    writeable = True

    def __init__(self, c_contiguous: bool) -> None:
        self.c_contiguous = c_contiguous

    def __getitem__(self, key):
        return getattr(self, key.lower())


_CONTIGUOUS, _NOT_CONTIGUOUS = _Flags(True), _Flags(False)


def _is_c_contiguous(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """PyTorch's is_contiguous (and NumPy's c_contiguous): row-major steps, dims of size 1 skipped, an empty
    tensor contiguous."""
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1:
            if s != step:
                return False
            step *= n
    return True


class Logical:
    """A batched tensor's ``_data``: the per-example ``shape`` and ``dtype``, no values. What ember's op wrappers
    read of an array's metadata works; anything that needs values raises ``NeedsValues``. Its layout is the
    physical tensor's without the batch dim (PyTorch's: an example of ``in_dims=1`` over a (3, 4) tensor has
    stride (4,), is not contiguous), read from ``phys`` (the physical tensor, whose ``_data`` may be a Logical
    of a lower level) when asked."""

    __slots__ = ("shape", "dtype", "_phys", "_bdim")

    def __init__(self, shape: tuple, dtype, phys=None, bdim: int = 0) -> None:
        self.shape = shape
        self.dtype = dtype
        self._phys = phys
        self._bdim = bdim

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        if self._phys is not None:
            st = self._phys._data.strides
            return st[:self._bdim] + st[self._bdim + 1:]
        st, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            st.insert(0, step)
            step *= max(n, 1)
        return tuple(st)

    @property
    def flags(self) -> _Flags:
        if self._phys is None or _is_c_contiguous(self.shape, self.strides, self.dtype.itemsize):
            return _CONTIGUOUS
        return _NOT_CONTIGUOUS

    def __getattr__(self, name):
        raise NeedsValues(DATA_DEPENDENT)

    def _refuse(self, *args, **kwargs):
        raise NeedsValues(DATA_DEPENDENT)

    __array__ = __array_ufunc__ = __array_function__ = __getitem__ = __setitem__ = __iter__ = __len__ = _refuse
    __bool__ = __float__ = __int__ = __index__ = __complex__ = __neg__ = __pos__ = __abs__ = __invert__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __floordiv__ = __mod__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __and__ = __or__ = __xor__ = _refuse
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<batched: per-example shape {self.shape}, {self.dtype}>"


class _NoValuesBackend:
    """The 'namespace' of a Logical: a cpu device type for metadata, values nowhere."""

    device_type = "cpu"
    has_data = True

    def __getattr__(self, name):
        raise NeedsValues(DATA_DEPENDENT)


class _NoValuesNamespace:
    backend = _NoValuesBackend()

    def __getattr__(self, name):
        raise NeedsValues(DATA_DEPENDENT)


NAMESPACES[Logical] = _NoValuesNamespace()


# ----- the batched tensor ------------------------------------------------------------------------------------

class BatchedTensor(Tensor):
    """A tensor inside vmap: per-example shape, dtype and methods; its physical tensor holds every example."""

    __slots__ = ("_phys", "_bdim", "_level")

    def __repr__(self) -> str:
        inner = repr(self._phys).replace("\n", "\n    ")
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n    {inner}\n)"

    __str__ = __repr__

    # (NeedsValues is a RuntimeError: inside an op's wrapper it sends the op to the per-example fallback)
    def item(self):
        raise NeedsValues(ITEM)

    def tolist(self):
        raise NeedsValues("Cannot access data pointer of Tensor that doesn't have storage")

    def __bool__(self) -> bool:
        raise NeedsValues(DATA_DEPENDENT)

    def __float__(self) -> float:
        raise NeedsValues(ITEM)

    def __int__(self) -> int:
        raise NeedsValues(ITEM)

    def __index__(self) -> int:
        raise NeedsValues(ITEM)

    def numpy(self, *, force: bool = False):
        raise NeedsValues(DATA_DEPENDENT)

    @property
    def device(self):
        return self._phys.device

    # As PyTorch's BatchedTensor, a batched tensor does not require grad: the autograd graph below vmap is the
    # physical tensors' (autograd.grad of a batched output raises PyTorch's "does not require grad"; torch.func's
    # transforms differentiate inside vmap)
    @property
    def grad_fn(self):
        return None

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        if value is not None:
            raise RuntimeError("ember: a BatchedTensor records no graph of its own (its physical tensor does)")

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def is_contiguous(self, *, memory_format=None) -> bool:
        if memory_format is None or memory_format is _D.contiguous_format:
            return self._data.flags.c_contiguous
        if isinstance(memory_format, _D.memory_format):   # (anything else: Tensor's TypeError)
            raise RuntimeError(MEMORY_FORMAT)
        return super().is_contiguous(memory_format=memory_format)

    def storage_offset(self) -> int:
        return self._phys.storage_offset()   # (PyTorch's: the physical tensor's, the same for every example)

    # sharing the data: the physical tensor's, seen at the same level
    def detach(self):
        return wrap(self._phys.detach(), self._bdim, self._level)

    def detach_(self):
        self._phys.detach_()
        self._requires_grad = False
        return self

    @property
    def data(self):
        return wrap(self._phys.data, self._bdim, self._level)

    @data.setter
    def data(self, value) -> None:
        raise RuntimeError("vmap: setting .data of a batched tensor is not supported")

    @property
    def _view_steps(self):   # (code that replays a view's steps from its base: once per example)
        raise NeedsValues(DATA_DEPENDENT)

    @property
    def grad(self):
        g = self._phys.grad
        return None if g is None else wrap(g, self._bdim, self._level)


_levels.BATCHED[0] = BatchedTensor


def wrap(phys: Tensor, bdim: int, level: int) -> BatchedTensor:
    """``phys`` seen at ``level`` with its dimension ``bdim`` mapped over."""
    t = _new(BatchedTensor)
    d = phys._data
    shape = d.shape
    t._data = Logical(shape[:bdim] + shape[bdim + 1:], d.dtype, phys, bdim)
    t._phys = phys
    t._bdim = bdim
    t._level = level
    t._requires_grad = False
    t._output_nr = 0
    t._vc = phys._vc
    t._base = None
    return t


# ----- levels --------------------------------------------------------------------------------------------

class Frame:
    """One vmap level while it runs: its level number (increasing with nesting), batch size and randomness, and
    how many differentiating transforms were running when it started (``TRANSFORMS``: a rule can tell a transform
    inside it, which differentiates each example, from one around it, which differentiates the physical tensors)."""

    __slots__ = ("level", "size", "randomness", "transforms")

    def __init__(self, level: int, size: int, randomness: str) -> None:
        self.level, self.size, self.randomness = level, size, randomness
        self.transforms = TRANSFORMS[0]


FRAMES: list = []       # the vmap levels running, outermost first
_levels.FRAMES = FRAMES
_counter = [0]
_LEVELS: dict = {}      # level -> its Frame, while it runs
# How many differentiating transforms (grad, vjp, jvp, jacrev, ...) are running: backward() inside one is refused,
# and a transform inside another keeps the graph of what it computes (create_graph) so the outer one can go on.
TRANSFORMS = [0]
BACKWARD_INSIDE = ("backward() called inside a functorch transform. This is not supported, please use "
                   "functorch.grad or functorch.vjp instead or call backward() outside of functorch transforms.")


def push(size: int, randomness: str) -> Frame:
    _func_depth[0] += 1
    _counter[0] += 1
    f = Frame(_counter[0], size, randomness)
    if _idle():
        _install()
    FRAMES.append(f)
    _LEVELS[f.level] = f
    return f


def pop(f: Frame) -> None:
    _func_depth[0] -= 1
    FRAMES.remove(f)
    del _LEVELS[f.level]
    if _idle():
        _uninstall()


HOLDS = [0]   # spans that keep the swaps installed without being a transform (jacrev's whole computation)


def _idle() -> bool:
    return not FRAMES and not TRANSFORMS[0] and not HOLDS[0]


def hold() -> None:
    if _idle():
        _install()
    HOLDS[0] += 1


def release() -> None:
    HOLDS[0] -= 1
    if _idle():
        _uninstall()


def enter_transform() -> None:
    if _idle():
        _install()
    TRANSFORMS[0] += 1
    _func_depth[0] += 1


def exit_transform() -> None:
    TRANSFORMS[0] -= 1
    _func_depth[0] -= 1
    if _idle():
        _uninstall()


def frame_of(level: int) -> Frame:
    f = _LEVELS.get(level)
    if f is None:
        raise RuntimeError("vmap: a batched tensor was used outside the vmap that made it (it escaped its vmap "
                           "through a global, a closure or a returned object); return it from the vmapped "
                           "function instead")
    return f


# ----- moving between physical and logical ----------------------------------------------------------------

def peel(t) -> tuple:
    """``(chain, plain)``: the wrappers of ``t`` from the outside in, as (level, bdim), and its plain tensor."""
    chain = []
    while type(t) is BatchedTensor:
        chain.append((t._level, t._bdim))
        t = t._phys
    return chain, t


def rewrap(p: Tensor, chain: list):
    """``peel``'s inverse: wrap ``p`` in ``chain``'s wrappers (outermost first in the chain)."""
    for level, bdim in reversed(chain):
        p = wrap(p, bdim, level)
    return p


def batched_at(t, level: int) -> bool:
    while type(t) is BatchedTensor:
        if t._level == level:
            return True
        if t._level < level:
            return False
        t = t._phys
    return False


def add_level(t, frame: Frame):
    """``t`` made batched at ``frame``'s level (every example the same; an expanded view, no copy), keeping
    its wrappers at other levels. A dual whose tangent is batched at that level gets the tangent's examples as
    its rows (see ``tangent_at``)."""
    chain, p = peel(t)
    if _fwd.level and p._fw_grad is not None and batched_at(p._fw_grad, frame.level):
        return _add_level_dual(chain, p, frame)
    inner = [(lv, bd) for lv, bd in chain if lv < frame.level]
    outer = [(lv, bd) for lv, bd in chain if lv > frame.level]
    base = rewrap(p, inner)
    phys = base.unsqueeze(0).expand((frame.size,) + tuple(base._data.shape))
    return rewrap(wrap(phys, 0, frame.level), outer)


# ----- forward-mode tangents batched at levels their primal is not ---------------------------------------------
#
# jvp under vmap batches only what is batched: a primal not batched at a level L at which its tangent is (jacfwd's
# basis) stays one physical tensor, and its dual's tangent is a BatchedTensor at L whose per-example shape is the
# primal's physical shape; the tangent arithmetic then runs through the batching rules, the primal's once. Such a
# dual means "the same primal in every example of L, example b's tangent". It must never meet a physical tensor
# that carries L's batch dim explicitly (a rule's input at L, a per-example slice at L): its tangent would be
# broadcast over the examples of L twice (perturbation confusion). Every such meeting goes through
# ``add_level`` first (``_run``, ``_public_runner``, ``_slice``, materialize/to_front, vmap's outputs), which
# makes the dual batched at L with row b's tangent example b's. Only while tangents propagate (``fwd_state``):
# inside tangent arithmetic a primal is a constant and broadcasts as any.

def tangent_at(t, level: int) -> bool:
    """Whether ``t`` (not batched at ``level``) is a dual whose tangent is batched at ``level``."""
    while type(t) is BatchedTensor:
        t = t._phys
    g = t._fw_grad
    return g is not None and type(g) is BatchedTensor and batched_at(g, level)


def _add_level_dual(chain: list, p: Tensor, frame: Frame):
    """``add_level`` of the dual ``p`` (seen through ``chain``), its tangent batched at ``frame``'s level: the
    primal expanded, the tangent with that level's dim first as a plain dim (example b's tangent is row b)."""
    level = frame.level
    saved, _fwd.level = _fwd.level, 0   # (the expand's own tangent would be the broadcast one)
    try:
        phys = p.unsqueeze(0).expand((frame.size,) + tuple(p._data.shape))
        tchain, q = peel(p._fw_grad)
        bd = next(b for lv, b in tchain if lv == level)
        tan = _moved(rewrap(q, [c for c in tchain if c[0] < level]), bd)
        tan = rewrap(tan, [(lv, b + 1) for lv, b in tchain if lv > level])   # (their dims: one more in front)
    finally:
        _fwd.level = saved
    phys._fw_grad = tan
    _track_tangent(phys)
    # the wrappers below the level index p's dims: one more in front now
    t = wrap(rewrap(phys, [(lv, b + 1) for lv, b in chain if lv < level]), 0, level)
    return rewrap(t, [c for c in chain if c[0] > level])


def diag_args(args, level: int):
    """``args`` (tensors, lists/tuples/dicts of them) with each dual not batched at ``level`` whose tangent is
    made batched at it (``add_level``): what a rule at ``level`` may then meet (see ``tangent_at``)."""
    if type(args) in (list, tuple):
        new = None
        for i, a in enumerate(args):
            b = diag_args(a, level)
            if b is not a:
                if new is None:
                    new = list(args)
                new[i] = b
        if new is None:
            return args
        return type(args)(*new) if hasattr(args, "_fields") else type(args)(new)
    if type(args) is dict:
        new = {k: diag_args(v, level) for k, v in args.items()}
        return args if all(new[k] is args[k] for k in args) else new
    if _fwd.level and isinstance(args, Tensor) and not batched_at(args, level) and tangent_at(args, level):
        return add_level(args, frame_of(level))
    return args


def materialize(t, frames=None):
    """``t`` batched at every running level (``frames``: those levels only)."""
    for f in (FRAMES if frames is None else frames):
        if not batched_at(t, f.level):
            t = add_level(t, f)
    return t


def to_front(t, frames=None):
    """The plain tensor of ``t`` (made batched at every level of ``frames``, default all running ones) with its
    batch dims first, lowest level first, and those levels."""
    t = materialize(t, frames)
    chain, p = peel(t)
    n = p._data.ndim
    free = list(range(n))   # the physical dims not yet claimed by a wrapper (a wrapper's bdim indexes these)
    order = []
    for level, bdim in reversed(chain):   # innermost wrapper first: its bdim is a dim of p itself
        order.append((level, free.pop(bdim)))
    order.sort()
    perm = [pos for _, pos in order]
    perm += [d for d in range(n) if d not in perm]
    if perm != list(range(n)):
        p = p.permute(perm)
    return p, [lv for lv, _ in order]


def from_front(p: Tensor, levels: list):
    """``to_front``'s inverse: ``p``'s leading dims mapped over at ``levels`` (lowest first)."""
    for level in levels:   # the lowest level wraps innermost; then the next level's dim is dim 0 again
        p = wrap(p, 0, level)
    return p


# ----- rules ----------------------------------------------------------------------------------------------

FALLBACK: dict = {}   # primitive name -> why it runs example by example


class NoRule(Exception):
    """Raised instead of the per-example fallback while ``STRICT[0]`` (a backward node tried under vmap, which
    the engine then runs row by row)."""


STRICT = [0]


def fallback_warning(name: str) -> None:
    warnings.warn(f"There is a performance drop because we have not yet implemented the batching rule for "
                  f"{name}. Please file us an issue on GitHub so that we can prioritize its implementation.",
                  UserWarning, stacklevel=4)


def _moved(p: Tensor, bdim: int) -> Tensor:
    """``p`` with dim ``bdim`` moved to the front."""
    if bdim == 0:
        return p
    n = p._data.ndim
    return p.permute([bdim] + [d for d in range(n) if d != bdim])


def rows(p: Tensor, size: int) -> Tensor:
    """``p.reshape(size, -1)`` (``p``'s batch dim first), also for an empty batch, where -1 is ambiguous."""
    if size:
        return p.reshape(size, -1)
    n = 1
    for s in p._data.shape[1:]:
        n *= s
    return p.reshape(0, n)


def _front_and_pad(p: Tensor, bdim: int, rank: int, size: int) -> Tensor:
    """A batched physical tensor with its batch dim first and its example padded with size-1 dims on the left to
    ``rank`` dims, so that it broadcasts against the other inputs as its example does."""
    p = _moved(p, bdim)
    lr = p._data.ndim - 1
    if lr < rank:
        p = p.reshape((size,) + (1,) * (rank - lr) + tuple(p._data.shape[1:]))
    return p


def elementwise(call, args, bdims, params, size):
    """Inputs broadcast together: batched ones get their batch dim first (and size-1 dims to the example's
    rank); unbatched ones broadcast over the batch as they are."""
    rank = 0
    for a, bd in zip(args, bdims):
        if isinstance(a, Tensor):
            r = a._data.ndim - (bd is not None)
            if r > rank:
                rank = r
    for v in params.values():   # (an unbatched array parameter broadcasts too: where's condition)
        r = getattr(v, "ndim", 0)
        if type(r) is int and r > rank:
            rank = r
    new = [a if bd is None else _front_and_pad(a, bd, rank, size) for a, bd in zip(args, bdims)]
    return call(new, params), 0


def leading(call, args, bdims, params, size):
    """Ops that map over leading dimensions as they are (linear algebra on the last two dims, ...): every tensor
    input batched, batch dim first."""
    new = []
    for a, bd in zip(args, bdims):
        if isinstance(a, Tensor):
            if bd is None:
                a = a.unsqueeze(0).expand((size,) + tuple(a._data.shape))
            else:
                a = _moved(a, bd)
        new.append(a)
    return call(new, params), 0


def dims_rule(*names, all_when_none=False):
    """A one-tensor op (input 0 batched) whose params ``names`` hold dimensions (an int, or a tuple of ints,
    of the example): they shift by one, with the batch dim first. ``all_when_none``: None means every dim."""
    def rule(call, args, bdims, params, size):
        x = args[0]
        nd = x._data.ndim - (bdims[0] is not None)
        if nd == 0:   # a 0-d example: its dim 0 / -1 is a size-1 dim of its own, dropped again after
            new = {k: (1 if params.get(k) is not None and not isinstance(params[k], (tuple, list)) else
                       (1,) if params.get(k) is not None or all_when_none and k in params else params[k])
                   if k in names else v for k, v in params.items()}
            rest = [(_moved(a, bd) if bd is not None else a.unsqueeze(0).expand((size,) + tuple(a._data.shape)))
                    .reshape((size, 1)) if isinstance(a, Tensor) else a for a, bd in zip(args, bdims)]
            return call(rest, new).reshape((size,)), 0
        new = dict(params)
        for k in names:
            v = params.get(k)
            if v is None:
                if all_when_none and k in params:
                    new[k] = tuple(range(1, nd + 1))
                continue
            if isinstance(v, (tuple, list)):
                new[k] = type(v)((d % nd if nd else 0) + 1 if d < 0 else d + 1 for d in v)
            else:
                new[k] = (v % nd if nd else 0) + 1 if v < 0 else v + 1
        rest = [(_moved(a, bd) if bd is not None else a.unsqueeze(0).expand((size,) + tuple(a._data.shape)))
                if isinstance(a, Tensor) else a for a, bd in zip(args, bdims)]
        return call(rest, new), 0
    return rule


def rows_rule(prim: Primitive, **params):
    """A reduction over every dim of the example (max(), median(), ...), batched as ``prim`` (the same reduction
    of the last dim, with ``params``) on the examples flattened to rows."""
    def rule(call, args, bdims, _params, size):
        flat = rows(_moved(args[0], bdims[0]), size)
        return _primitive.apply(prim, (flat,), params), 0
    return rule


def zero_batch_error(name: str) -> RuntimeError:
    return RuntimeError(f"Batching rule not implemented for aten::{name}. The fallback path does not support vmap "
                        "over dims of size 0.")


def _stand_in(a, bd: int):
    """A plain tensor of zeros shaped as one example of ``a`` (its dim ``bd`` mapped over): what a per-example
    fallback runs on when the batch is empty, to learn its results' shapes and dtypes."""
    shape = tuple(a._data.shape)
    return peel(a)[1].new_zeros(shape[:bd] + shape[bd + 1:])


def _replay(x: Tensor, bdim: int, steps, size: int):
    """A view's recorded ``steps`` replayed on a batched physical tensor, each by its primitive's rule:
    ``(view, its batch dim)``."""
    for prim, p in steps:
        rule = prim.vmap
        if rule is None:
            return None, None
        x, bdim = rule(lambda a, q, prim=prim: _primitive.apply(prim, tuple(a), q), [x], [bdim], p, size)
        if bdim is None:
            return None, None
    return x, bdim


def view_replay_rule(call, args, bdims, params, size):
    """view_replay (the tangent of a view whose base changed in place, under jacfwd): its steps' rules."""
    out, bdim = _replay(args[0], bdims[0], params["steps"], size)
    return (out, bdim) if out is not None else loop(call, args, bdims, params, size)


def copy_slices_rule(call, args, bdims, params, size):
    """copy_slices (a base's tangent after an in-place write through a view of it): a copy of the base with the
    view's region, replayed by its steps' rules, overwritten by the new values."""
    base, r = args
    base = base.unsqueeze(0).expand((size,) + tuple(base._data.shape)) if bdims[0] is None else \
        _moved(base, bdims[0])
    out = base.clone()
    region, bdim = _replay(out, 0, params["steps"], size)
    if region is None or (region._base is not out and region._base is not out._base) or out._base is not None:
        return loop(call, args, bdims, params, size)   # (a step that copies: nothing to write through)
    r = r.unsqueeze(0).expand((size,) + tuple(r._data.shape)) if bdims[1] is None else _moved(r, bdims[1])
    if bdim != 0:
        r = r.movedim(0, bdim)
    region.copy_(r)
    return out, 0


def loop(call, args, bdims, params, size):
    """The fallback: the primitive once per example, the results stacked. An empty batch has no example to run:
    the primitive runs once on a stand-in example of zeros for the result's shape and dtype (PyTorch's batching
    rules run on the empty physical tensors; where the stand-in fails, PyTorch's fallback error)."""
    if not size:
        try:
            one = call([a if bd is None else _stand_in(a, bd) for a, bd in zip(args, bdims)], params)
        except Exception:   # noqa: BLE001  (zeros are no valid example for this op: PyTorch's fallback refuses)
            raise zero_batch_error(getattr(call, "prim_name", "this operator")) from None
        return one.unsqueeze(0)[:0], 0
    rows = []
    for b in range(size):
        rows.append(call([a if bd is None else a.select(bd, b) for a, bd in zip(args, bdims)], params))
    return _primitive.graph_ns.stack(rows, 0), 0


KINDS = {"elementwise": elementwise, "leading": leading}


def shape_rule(key: str, pad: bool = False):
    """A one-tensor op whose param ``key`` is a target shape (reshape, expand): the batch dim first and the
    batch size prepended to the shape (``pad``: the example padded with size-1 dims to the shape's rank first)."""
    def rule(call, args, bdims, params, size):
        x = _moved(args[0], bdims[0])
        shape = tuple(params[key])
        if pad:
            x = _front_and_pad(x, 0, len(shape), size)
        new = dict(params)
        new[key] = (size,) + shape
        return call([x] + list(args[1:]), new), 0
    return rule


def flatten_rule(key: str):
    """A one-tensor op whose param ``key`` = None reduces every dim (prod): with None, the example is flattened
    and reduced along dim 1; with a dim, the dim shifts."""
    shifted = dims_rule(key)

    def rule(call, args, bdims, params, size):
        if params.get(key) is not None:
            return shifted(call, args, bdims, params, size)
        x = rows(_moved(args[0], bdims[0]), size)
        new = dict(params)
        new[key] = 1
        return call([x], new), 0
    return rule


def by_name(rule, *names: str, why: str | None = None) -> None:
    """``batching`` for the primitives named ``names`` (every primitive of each name declared so far)."""
    found = [p for p in _primitive.PRIMITIVES if p.name in names]
    missing = set(names) - {p.name for p in found}
    if missing:
        raise ValueError(f"batching: no primitive named {sorted(missing)}")
    batching(rule, *found, why=why)


def batching(rule, *prims: Primitive, why: str | None = None) -> None:
    """Declare the batching rule of ``prims``: a kind ("elementwise", "leading"), a rule function
    ``rule(call, args, bdims, params, size) -> (physical result, its batch dim or None)`` (``call(args, params)``
    runs the primitive on physical tensors; ``bdims[i]``: input i's batch dim, None when unbatched), or
    "fallback" with ``why``: the primitive runs once per example, with PyTorch's performance warning."""
    if rule == "fallback":
        if not why:
            raise ValueError("batching('fallback', ...) needs why=")
        for p in prims:
            p.vmap = None
            FALLBACK[p.name] = why
        return
    fn = KINDS[rule] if isinstance(rule, str) else rule
    for p in prims:
        p.vmap = fn
        FALLBACK.pop(p.name, None)


# ----- the interceptor ------------------------------------------------------------------------------------

_orig = {}   # what the swaps replaced: the original functions, callable


def _level_of(args) -> int:
    level = 0
    for a in args:
        if type(a) is BatchedTensor and a._level > level:
            level = a._level
        elif type(a) in (list, tuple):
            for b in a:
                if type(b) is BatchedTensor and b._level > level:
                    level = b._level
    return level


def _refuse_logical_params(params) -> None:
    for v in params.values():
        if type(v) is Logical:
            raise NeedsValues(DATA_DEPENDENT)
        if type(v) in (tuple, list) and any(type(x) is Logical for x in v):
            raise NeedsValues(DATA_DEPENDENT)


def _run(prim, args, params=_primitive._EMPTY, node_cls=None, dtype=None):
    """``apply`` while vmap or torch.func's transforms run (see ``_run_batched``); inside grad/vjp/jvp the
    results are marked as made inside the innermost one's level."""
    if not _levels.LEVELS:
        return _run_batched(prim, args, params, node_cls, dtype)
    r = _run_batched(prim, args, params, node_cls, dtype)
    if isinstance(r, Tensor):
        _levels.stamp(peel(r)[1])
    elif type(r) in (tuple, list):
        for t in r:
            if isinstance(t, Tensor):
                _levels.stamp(peel(t)[1])
    return r


def _run_batched(prim, args, params=_primitive._EMPTY, node_cls=None, dtype=None):
    """``apply`` while vmap runs: the batching rule for inputs batched at some level, else apply itself."""
    level = _level_of(args)
    apply = _orig["apply"]
    if not level:
        return apply(prim, args, params, node_cls, dtype)
    frame = frame_of(level)
    _refuse_logical_params(params)
    if _fwd.level:
        args = diag_args(args, level)
    if dtype is None and prim.promote is not None:
        dtype = prim.promote(args)   # on the examples (a 0-d input promotes as a scalar, as PyTorch's)
        if dtype is None:
            dtype = KEEP_DTYPE
    phys = []
    bdims = []
    for a in args:
        if type(a) is BatchedTensor and a._level == level:
            phys.append(a._phys)
            bdims.append(a._bdim)
        elif type(a) in (list, tuple) and any(type(b) is BatchedTensor and b._level == level for b in a):
            # a list input (cat, stack): every member batched, batch dim first
            phys.append(type(a)(_moved(b._phys, b._bdim) if batched_at(b, level) and type(b) is BatchedTensor
                                and b._level == level else
                                b.unsqueeze(0).expand((frame.size,) + tuple(b._data.shape)) for b in a))
            bdims.append(0)
        else:
            phys.append(a)
            bdims.append(None)

    def call(new_args, new_params=params):
        return _primitive.apply(prim, tuple(new_args), new_params, node_cls, dtype)

    rule = getattr(prim, "vmap", None)
    if rule is None:
        if STRICT[0]:
            raise NoRule(prim.name)
        fallback_warning(prim.name)
        rule = loop
        if not frame.size:
            call.prim_name = prim.name
    out, bdim = rule(call, phys, bdims, params, frame.size)
    if bdim is None:
        return out
    d = out._data
    if d.size == 0 and d.ndim == 1 and d.shape[0] == 0 and frame.size:
        return out   # an empty placeholder output (qr's Q in mode 'r'): unbatched, as PyTorch's
    if d.ndim <= bdim or d.shape[bdim] != frame.size:
        # the primitive ignored its batched input (addmm with beta=0, qr's empty Q in mode 'r'): the same result
        # for every example
        out = out.unsqueeze(0).expand((frame.size,) + tuple(d.shape))
        bdim = 0
    return wrap(out, bdim, level)


def _inplace_error(prim, self, others, level) -> RuntimeError:
    """PyTorch's error for a batched value written into a tensor not batched at ``level``: add_'s batching rule
    words it as a broadcast, the others as vmap's in-place refusal."""
    if prim.name in ("add", "add_scalar"):
        shapes = [tuple(self._data.shape)] + [tuple(o._data.shape) for o in others if isinstance(o, Tensor)]
        n = max(len(sh) for sh in shapes)
        out = [max((sh[len(sh) - n + i] if len(sh) - n + i >= 0 else 1) for sh in shapes) for i in range(n)]
        return RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                            f"{[frame_of(level).size] + out}")
    return RuntimeError(INPLACE)


def _run_inplace(prim, self, others, params=_primitive._EMPTY, node_cls=None, dtype=None, saved=()):
    """``apply_inplace`` while vmap runs: the out-of-place result (batched) written into self's examples."""
    if _levels.LEVELS:   # a write the program asked for: into a public op's first argument, or a direct one
        p = peel(self)[1]
        if not _IN_LEVEL_OP[0]:
            _levels.check_inplace_own(p, False)
            _levels.check_captured(p, lambda: _aten_inplace(prim.name + "_", False, (self,) + tuple(others), {}))
        elif _LEVEL_SELF[0] is not None and _LEVEL_SELF[0][0] is p:
            _, ip_name, setitem, a, kw = _LEVEL_SELF[0]
            _levels.check_inplace_own(p, setitem)
            _levels.check_captured(p, lambda: _aten_inplace(ip_name, setitem, a, kw))
    level = _level_of((self,) + tuple(others))
    if not level or (type(self) is not BatchedTensor and not batched_at(self, level)):
        if level:   # a batched value written into an unbatched tensor
            raise _inplace_error(prim, self, others, level)
        return _orig["apply_inplace"](prim, self, others, params, node_cls, dtype, saved)
    if self._level != level:   # self batched at a lower level only than some input: as above
        raise _inplace_error(prim, self, others, level)
    src_self = self
    if self._phys._requires_grad and _gm._state.enabled:
        # (the rule's node saves what it computed from; the write below would change it under the node)
        src_self = wrap(self._phys.clone(), self._bdim, level)
    r = _primitive.apply(prim, (src_self,) + tuple(others), params, node_cls, dtype)
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(r._data.shape)}")
    if r._data.dtype != self._data.dtype:
        r = r.to(self.dtype)
    if type(r) is not BatchedTensor or r._level != level:
        r = add_level(r, frame_of(level))
    src = r._phys
    if r._bdim != self._bdim:
        n = src._data.ndim
        perm = [d for d in range(n) if d != r._bdim]
        perm.insert(self._bdim, r._bdim)
        src = src.permute(perm)
    self._phys.copy_(src)
    return self


# ----- the backward of a batch of gradients (autograd.grad(is_grads_batched=True)) -------------------------------

def node_batched(node, grads, create_graph: bool, needed):
    """A backward node on gradients with a leading batch dimension, by vmap: its rules run once on the batch as
    tensors, every operation inside batched by its rule. ``NotImplemented`` when one of them has no rule (or
    needs values): the engine then runs the node row by row. Results in the engine's form (tensors under
    ``create_graph``, raw arrays otherwise)."""
    g0 = next((g for g in grads if g is not None), None)
    if g0 is None:
        return NotImplemented
    size = (g0._data if create_graph else g0).shape[0]
    frame = push(size, "error")
    STRICT[0] += 1
    try:
        gs = [None if g is None else wrap(g if create_graph else _make(g), 0, frame.level) for g in grads]
        out = node.apply(gs, True, needed)
        res = []
        for o in out:
            if o is None:
                res.append(None)
                continue
            p = to_front(o, [frame])[0]
            res.append(p if create_graph else p._data)
        return res
    except Exception:   # noqa: BLE001  (no rule, or one that fails: the rows, one by one, are the reference)
        return NotImplemented
    finally:
        STRICT[0] -= 1
        pop(frame)


# ----- autograd.grad inside vmap ------------------------------------------------------------------------------

def any_batched(*groups) -> bool:
    for g in groups:
        if type(g) is BatchedTensor:
            return True
        if type(g) in (list, tuple) and any(type(t) is BatchedTensor for t in g):
            return True
    return False


def grad_inside(grad_fn, outputs, inputs, grad_outputs, kwargs):
    """``autograd.grad`` inside vmap. As PyTorch's, a batched tensor does not require grad (the graph below vmap
    is the physical tensors'; differentiating inside vmap is torch.func's grad/vjp), so batched outputs or inputs
    raise autograd's errors; plain outputs with batched grad_outputs (``vmap(lambda v: autograd.grad(y, x, v))``)
    give every example's vector-Jacobian product from one backward pass."""
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    for i, t in enumerate(outputs):
        if type(t) is BatchedTensor:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if any(type(t) is BatchedTensor for t in inputs):
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    if kwargs.get("is_grads_batched"):
        raise NotImplementedError("ember: autograd.grad(is_grads_batched=True) with batched grad_outputs inside vmap "
                                  "is not supported; use torch.func.vjp")
    levels = sorted({lv for g in grad_outputs if g is not None for lv, _ in peel(g)[0]})
    return _batched_cotangents(grad_fn, outputs, inputs, grad_outputs, kwargs, [frame_of(lv) for lv in levels])


def _batched_cotangents(grad_fn, outputs, inputs, grad_outputs, kwargs, frames):
    """``autograd.grad`` of plain outputs with batched grad_outputs (``vmap(lambda v: autograd.grad(y, x, v))``):
    every example's vector-Jacobian product, from one backward pass with ``is_grads_batched``."""
    sizes = tuple(f.size for f in frames)
    n = 1
    for s in sizes:
        n *= s
    phys_go = []
    for o, g in zip(outputs, grad_outputs):
        if g is None:   # an implicit grad_output (of a scalar) is the same for every example
            if o._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            phys_go.append(_primitive.graph_ns.ones_like(o).expand((n,) + tuple(o._data.shape)))
            continue
        if tuple(g._data.shape) != tuple(o._data.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a shape "
                               f"of {o.shape}.")
        phys_go.append(to_front(g, frames)[0].reshape((n,) + tuple(o._data.shape)))
    gs = grad_fn(outputs, inputs, phys_go, **dict(kwargs, is_grads_batched=True))
    levels = [f.level for f in frames]
    return tuple(None if g is None else from_front(g.reshape(sizes + tuple(g._data.shape[1:])), levels) for g in gs)


# ----- public ops: the fallback for wrappers that read values ------------------------------------------------

def _leaves(x, out: list) -> None:
    if type(x) is BatchedTensor:
        out.append(x)
    elif type(x) in (list, tuple):
        for y in x:
            _leaves(y, out)
    elif type(x) is dict:
        for y in x.values():
            _leaves(y, out)


def _slice(x, level: int, b: int):
    """Example ``b`` at ``level`` of every batched tensor in ``x`` (a tensor, or a list/tuple/dict of them)."""
    if _fwd.level and isinstance(x, Tensor) and not batched_at(x, level) and tangent_at(x, level):
        x = add_level(x, frame_of(level))
    if type(x) is BatchedTensor:
        if not batched_at(x, level):
            return x
        chain, p = peel(x)
        inner = [c for c in chain if c[0] < level]
        bd = next(c[1] for c in chain if c[0] == level)
        # the wrappers above `level` index the examples' dims, which taking one example leaves as they are
        return rewrap(rewrap(p, inner).select(bd, b), [c for c in chain if c[0] > level])
    if type(x) in (list, tuple):
        return type(x)(_slice(y, level, b) for y in x)
    if type(x) is dict:
        return {k: _slice(v, level, b) for k, v in x.items()}
    return x


def _stand_in_at(x, level: int):
    """``_slice``'s stand-in for an empty batch: every tensor in ``x`` batched at ``level`` replaced by a plain
    tensor of zeros shaped as its example."""
    if type(x) is BatchedTensor:
        return peel(x)[1].new_zeros(tuple(x._data.shape)) if batched_at(x, level) else x
    if type(x) in (list, tuple):
        return type(x)(_stand_in_at(y, level) for y in x)
    if type(x) is dict:
        return {k: _stand_in_at(v, level) for k, v in x.items()}
    return x


def _empty_results(first, level: int):
    """The results of an op over an empty batch, shaped as ``first`` (its result on a stand-in example)."""
    if isinstance(first, Tensor):
        return wrap(first.unsqueeze(0)[:0], 0, level)
    if isinstance(first, tuple):
        made = [_empty_results(r, level) for r in first]
        return type(first)(*made) if hasattr(first, "_fields") else type(first)(made)
    if isinstance(first, list):
        return [_empty_results(r, level) for r in first]
    return first


def _empty_batch(orig, args, kwargs, level: int, name: str):
    """A public op's per-example fallback over an empty batch: the op once on stand-in examples of zeros, for the
    results' shapes and dtypes (where that fails, PyTorch's fallback error)."""
    try:
        first = orig(*_stand_in_at(args, level), **_stand_in_at(kwargs, level))
    except Exception:   # noqa: BLE001  (zeros are no valid example for this op: PyTorch's fallback refuses)
        raise zero_batch_error(name) from None
    return _empty_results(first, level)


def _stack_results(rows: list, level: int):
    """The per-example results of an op stacked into batched ones (tensors; tuples, named ones too, of them)."""
    first = rows[0]
    if isinstance(first, Tensor):
        if any(r._data.shape != first._data.shape for r in rows):
            # the examples' results differ in size (a boolean mask's selection): an enclosing op may still batch
            raise NeedsValues(DATA_DEPENDENT)
        return wrap(_primitive.graph_ns.stack(rows, 0), 0, level)
    if isinstance(first, tuple):
        made = [_stack_results([r[i] for r in rows], level) for i in range(len(first))]
        return type(first)(*made) if hasattr(first, "_fields") else type(first)(made)
    if isinstance(first, list):
        return [_stack_results([r[i] for r in rows], level) for i in range(len(first))]
    if all(r == first for r in rows):
        return first
    raise RuntimeError(DATA_DEPENDENT)


RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")
# PyTorch's random functions, by public name: how each takes vmap's randomness="different" (a draw for every
# example): "size" (a shape argument: the batch size goes first), "like" (shaped like a tensor argument), "tensor"
# (its tensor inputs' examples drawn apart: the physical call draws the whole batch at once, as PyTorch's batching
# rules do), "inplace" (fills self)
RANDOM = {**{n: "size" for n in ("rand", "randn", "randint", "randperm")},
          **{n: "like" for n in ("rand_like", "randn_like", "randint_like")},
          **{n: "tensor" for n in ("bernoulli", "multinomial", "poisson", "binomial", "_standard_gamma",
                                   "_sample_dirichlet", "normal", "dropout", "alpha_dropout", "feature_alpha_dropout",
                                   "dropout1d", "dropout2d", "dropout3d", "rrelu", "rrelu_", "gumbel_softmax",
                                   "native_dropout", "rrelu_with_noise")},
          **{n: "inplace" for n in ("uniform_", "normal_", "exponential_", "geometric_", "cauchy_", "log_normal_",
                                    "random_", "bernoulli_")}}
_IN_RANDOM = [0]
PUBLIC_RULES: dict = {}


def _refuse_dynamic(aten: str):
    def rule(orig, args, kwargs, level):
        raise dynamic_shape(aten)
    return rule


# operators whose output's size depends on the values: PyTorch refuses them under vmap
PUBLIC_RULES.update({"unique": _refuse_dynamic("_unique2"), "unique_consecutive": _refuse_dynamic("unique_consecutive"),
                     "nonzero": _refuse_dynamic("nonzero")})


def _per_example(orig, args, kwargs, level):
    """The fallback, asked for by name: ops that call an op refused under vmap on each example's values
    (nonzero_static calls nonzero) but have a fixed output size."""
    frame = frame_of(level)
    if not frame.size:
        return _empty_batch(orig, args, kwargs, level, orig.__name__)
    rows = [orig(*_slice(args, level, b), **_slice(kwargs, level, b)) for b in range(frame.size)]
    return _stack_results(rows, level)


PUBLIC_RULES.update({"nonzero_static": _per_example, "argwhere": _per_example})


def _like(orig, args, kwargs, level):
    """zeros_like and kin: the physical tensor's like, seen as the argument is."""
    x = args[0]
    if type(x) is not BatchedTensor:
        return orig(*args, **kwargs)
    chain, p = peel(x)
    return rewrap(orig(p, *args[1:], **kwargs), chain)


PUBLIC_RULES.update({n: _like for n in ("zeros_like", "ones_like", "empty_like", "full_like")})   # public name -> rule(orig, args, kwargs) for the ops whose wrappers batch as a whole


def _random_call(orig, name: str, args, kwargs, depth: int | None = None, ex_ndim: int = 0):
    """A random function under vmap, as functorch's layers take it: the innermost level applies its randomness
    and hands the call, on its physical tensors, to the level around it, down to the plain draw. So a 'different'
    level puts its batch dim in front of the shape the levels inside it ask for (one draw of (outer, inner,
    *example) for 'different' over 'different'), and a 'same' level asks the levels around it for one example."""
    if depth is None:
        depth = len(FRAMES) - 1
        ex_ndim = args[0]._data.ndim if args and isinstance(args[0], Tensor) else 0
    frame = FRAMES[depth]
    if depth:
        def lower(*a, **k):   # the same call at the level around this one
            return _random_call(orig, name, a, k, depth - 1, ex_ndim)
    elif name in _FEATURE_DROPOUTS:
        def lower(*a, **k):
            return _feature_dropout_rows(orig, name, ex_ndim, a, k)
    else:
        lower = orig
    mode = frame.randomness
    kind = RANDOM[name]
    level = frame.level
    found: list = []
    _leaves(args, found)
    _leaves(kwargs, found)
    if kind == "tensor" and not _draws(name, args, kwargs) and (
            mode == "error" or not any(batched_at(t, level) for t in found)):
        # dropout with p=0 or in eval, rrelu in eval: no draw. With no input batched at this level the op runs as it
        # is, on its input as it is (adding the level, as for a draw, would drop a dual input's batched tangent:
        # vmap over a jvp); a batched input runs on the physical tensors below, as a draw does.
        return orig(*args, **kwargs)
    if mode == "error":
        raise RuntimeError(RANDOM_ERROR)
    if mode == "same":
        if kind == "inplace" and found and batched_at(args[0], level):
            # one draw of an example's shape (a fresh tensor, unbatched at every level: a 'different' level around
            # this one refuses it, as PyTorch's), the same in every example
            self = args[0]
            one = _unbatched_like(self)
            lower(one, *args[1:], **kwargs)
            self.copy_(one)
            return self
        if kind == "tensor" and name in _DROPOUTS and found and batched_at(args[0], level):
            return _same_dropout(lower, name, args, kwargs, level)
        if found and kind in ("tensor", "inplace") and any(batched_at(t, level) for t in found):
            raise RuntimeError("Vmap does not currently support same randomness with a batched tensor input. Please "
                               "file an issue with functorch")
        if kind == "like" and batched_at(args[0], level):
            return lower(_example(args[0], level), *args[1:], **kwargs)
        return lower(*args, **kwargs)
    # different
    if kind == "size":
        if name == "randperm":   # one permutation per example, drawn in turn
            return wrap(_primitive.graph_ns.stack([lower(*args, **kwargs) for _ in range(frame.size)], 0), 0, level)
        return _random_sized(lower, name, args, kwargs, frame)
    if kind == "like":
        x = args[0]
        if not isinstance(x, Tensor):
            return lower(*args, **kwargs)
        if not batched_at(x, level):
            x = add_level(x, frame)
        # (the physical tensor as it lies: the draw fills it in its memory order, as PyTorch's like functions)
        return wrap(lower(x._phys, *args[1:], **kwargs), x._bdim, level)
    if kind == "inplace":
        self = args[0]
        if not batched_at(self, level):
            raise RuntimeError("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
                               "appear like same randomness. If this is necessary for your usage, please file an "
                               "issue with functorch.")
        lower(self._phys, *args[1:], **kwargs)
        return self
    # "tensor": every tensor input's examples at this level (unbatched ones expanded), batch dim first, then the op
    # once on the whole batch
    rank = max(t._data.ndim for t in found) if found else 0
    if not any(batched_at(t, level) for t in found):
        if not any(isinstance(a, Tensor) for a in args):
            return lower(*args, **kwargs)
        i = next(k for k, a in enumerate(args) if isinstance(a, Tensor))
        args = args[:i] + (add_level(args[i], frame),) + args[i + 1:]
        rank = max(rank, args[i]._data.ndim)

    def phys_of(a):
        if isinstance(a, Tensor):
            if not batched_at(a, level):
                a = add_level(a, frame)
            return _front_and_pad(a._phys, a._bdim, rank, frame.size)
        return a
    new_args = [phys_of(a) for a in args]
    new_kwargs = {k: phys_of(v) for k, v in kwargs.items()}
    if name == "multinomial" and not depth and new_args[0]._data.ndim > 2:
        # (levels inside this one left their batch dims in front: the rows are drawn in turn, as one 2-d call)
        probs = new_args[0]
        lead = tuple(probs._data.shape[:-1])
        out = lower(probs.reshape(-1, probs._data.shape[-1]), *new_args[1:], **new_kwargs)
        return _wrap_all(out.reshape(lead + tuple(out._data.shape[-1:])), level)
    return _wrap_all(lower(*new_args, **new_kwargs), level)


_DROPOUTS = ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d")


# channel-wise dropouts: the rank at which each reads its input's dim 0 as samples (None: every rank; an example of
# another rank is one sample, (C, ...))
_FEATURE_DROPOUTS = {"dropout1d": 3, "dropout3d": 5, "dropout2d": None, "feature_alpha_dropout": None}


def _feature_dropout_rows(orig, name: str, ex_ndim: int, args, kwargs):
    """A channel-wise dropout on the physical tensor of every level (their batch dims in front of an example of
    ``ex_ndim`` dims): the batch dims, and the example's own samples dim where it has one, become the samples of
    one call (padded with size-1 dims to the rank the op reads samples at), so that each example's channels are
    drawn as the example's own call draws them."""
    x = args[0]
    if not isinstance(x, Tensor) or x._data.ndim <= ex_ndim:
        return orig(*args, **kwargs)
    k = x._data.ndim - ex_ndim
    if name == "dropout1d" and ex_ndim not in (2, 3):   # (its rank check, on an example: PyTorch's error)
        return orig(x.new_empty(tuple(x._data.shape[k:])), *args[1:], **kwargs)
    rank = _FEATURE_DROPOUTS[name]
    own = rank is None or ex_ndim == rank
    m = k + own   # the leading dims that become samples
    shape = tuple(x._data.shape)
    n = 1
    for s in shape[:m]:
        n *= s
    rows = (n,) + shape[m:]
    if not own and len(rows) < rank:
        rows += (1,) * (rank - len(rows))
    if rows == shape:
        return orig(*args, **kwargs)
    return orig(x.reshape(rows), *args[1:], **kwargs).reshape(shape)


def _draws(name: str, args, kwargs) -> bool:
    """Whether a random op's call draws numbers (dropout in eval mode or with p=0 does not, nor rrelu in eval)."""
    if name in _DROPOUTS:
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        training = kwargs.get("training", args[2] if len(args) > 2 else name in ("dropout", "dropout1d",
                                                                                  "dropout2d", "dropout3d"))
        return bool(training) and p != 0
    if name in ("rrelu", "rrelu_"):
        return bool(kwargs.get("training", args[3] if len(args) > 3 else False))
    return True


RNG_STATE: list = []   # (get_rng_state, set_rng_state), filled by ember.ops


def _same_dropout(lower, name: str, args, kwargs, level: int):
    """A dropout with randomness='same' at ``level``: one mask of an example's shape for every example (batched as
    the input at the levels around). Dropouts are affine in their input (alpha dropout too), so
    out = x * (d(1) - d(0)) + d(0), with d drawn twice from the same state."""
    get_state, set_state = RNG_STATE
    x = args[0]
    state = get_state()
    size = frame_of(level).size
    if "alpha" in name and size:
        # (alpha dropout's d(0) is not 0: x * (d(1) - d(0)) + d(0) would round apart from PyTorch's x * A + B; each
        # example from the same state instead)
        rows = []
        for b in range(size):
            set_state(state)
            rows.append(lower(_slice(x, level, b), *args[1:], **kwargs))
        return wrap(_primitive.graph_ns.stack(rows, 0), 0, level)
    # (an empty batch has no example: a stand-in of its shape, which still draws the one mask, as PyTorch's)
    x0 = _example(x, level) if size else _stand_in_at(x, level)
    zero = lower(_filled_like(x0, 0), *args[1:], **kwargs)
    set_state(state)
    one = lower(_filled_like(x0, 1), *args[1:], **kwargs)
    return x * (one - zero) + zero


def _unbatched_like(a):
    """A plain tensor of ``a``'s per-example shape and dtype (a fresh tensor for an in-place draw with
    randomness='same')."""
    if type(a) is not BatchedTensor:
        return a
    chain, p = peel(a)
    return p.new_empty(tuple(a._data.shape))


def _filled_like(a, value):
    """A fresh tensor of ``value`` batched as ``a`` (at every level)."""
    chain, p = peel(a)
    return rewrap(p.new_full(tuple(p._data.shape), value), chain)


def _example(a, level: int):
    """An example of ``a`` at ``level`` (its first), still batched at the other levels: what a 'same' level draws
    like."""
    return _slice(a, level, 0)


def _random_sized(orig, name, args, kwargs, frame):
    size = kwargs.get("size")
    if name == "randint":
        # randint(high, size) / randint(low, high, size): the size is the last positional argument
        args = list(args)
        if "size" in kwargs:
            kwargs = dict(kwargs, size=(frame.size,) + tuple(kwargs["size"]))
        else:
            args[-1] = (frame.size,) + tuple(args[-1])
        return wrap(orig(*args, **kwargs), 0, frame.level)
    if size is not None:
        kwargs = dict(kwargs, size=(frame.size,) + tuple(size))
        return wrap(orig(*args, **kwargs), 0, frame.level)
    shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else tuple(args)
    return wrap(orig((frame.size,) + shape, **kwargs), 0, frame.level)


def _wrap_all(out, level):
    if isinstance(out, Tensor):
        return wrap(out, 0, level)
    if isinstance(out, tuple):
        made = [_wrap_all(o, level) for o in out]
        return type(out)(*made) if hasattr(out, "_fields") else type(out)(made)
    return out


_INPLACE_DUNDERS = {f"__{n}__" for n in ("setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                                          "iand", "ior", "ixor", "ilshift", "irshift", "imatmul")}


def _inplace_name(own: str) -> bool:
    """Whether a public function's own name is an in-place op's (add_, __iadd__, __setitem__, ...)."""
    return own.endswith("_") and not own.endswith("__") or own in _INPLACE_DUNDERS


def _physical_duals(orig, args, kwargs):
    """``(args, kwargs)`` with each dual input whose tangent alone is batched at a running level made batched there
    too (the physical duals), or None when there is none or ``orig`` is in place. For an op that jvp's
    tangent-only batching could not run (a primitive with no batching rule on its tangent, a wrapper reading
    values): the op again, batched as a whole by its own rules. An out-of-place op has written nothing yet; an
    in-place one has, so it leaves the retry to jvp (the whole function again, on physical duals)."""
    if not _fwd.level or _inplace_name(orig.__name__):
        return None
    new_args, new_kwargs = args, kwargs
    for f in FRAMES:
        new_args, new_kwargs = diag_args(new_args, f.level), diag_args(new_kwargs, f.level)
    if new_args is args and new_kwargs is kwargs:
        return None
    return new_args, new_kwargs


def _public_runner(orig, name: str):
    """A public op while vmap runs: itself, or, when its wrapper needs the values of a batched input (indices,
    sizes, data-dependent branches), once per example of the highest level among its batched inputs. Random
    functions follow vmap's randomness; ops with a rule of their own (``PUBLIC_RULES``) run it."""
    random = name in RANDOM
    rule = PUBLIC_RULES.get(name)
    own = orig.__name__
    inplace = own.endswith("_") and not own.endswith("__") or own in _INPLACE_DUNDERS
    setitem = own == "setitem" or name.strip("_") == "setitem"
    inplace_own = inplace or setitem   # (the check below: __setitem__'s function is named setitem)
    # its in-place name, for errors when it writes into its first argument ("iclamp" is clamp_, "iadd" add_)
    ip_name = own if own.endswith("_") else _ITER_DUNDERS.get(name, name + "_")
    # whether it may write into its first argument (an in-place op under another name: "iclamp" is clamp_)
    writes = inplace_own or own == "i" + name or name in _ITER_DUNDERS

    def run(args, kwargs):
        if _levels.LEVELS and not _IN_LEVEL_OP[0]:   # a call from the program inside grad/vjp/jvp
            if writes or kwargs and kwargs.get("inplace"):
                return _level_call(body, ip_name, inplace_own, setitem, args, kwargs)
            return _level_plain(body, args, kwargs)
        return body(args, kwargs)

    def body(args, kwargs):
        if random and FRAMES and not _IN_RANDOM[0]:
            _IN_RANDOM[0] += 1   # (the random functions it calls on its physical tensors draw as they are)
            try:
                return _random_call(orig, name, args, kwargs)
            finally:
                _IN_RANDOM[0] -= 1
        if rule is not None:
            found: list = []
            _leaves(args, found)
            _leaves(kwargs, found)
            if found:
                level = max(t._level for t in found)
                if _fwd.level:
                    args, kwargs = diag_args(args, level), diag_args(kwargs, level)
                return rule(orig, args, kwargs, level)
        try:
            return orig(*args, **kwargs)
        except NoRule:
            again = _physical_duals(orig, args, kwargs)
            if again is None:
                raise
            return body(*again)
        except NeedsValues:
            found = []
            _leaves(args, found)
            _leaves(kwargs, found)
            if not found:
                raise
            if STRICT[0]:
                again = _physical_duals(orig, args, kwargs)
                if again is None:
                    raise NoRule(name) from None
                return body(*again)
            level = max(t._level for t in found)
            frame = frame_of(level)
            if inplace and not (args and isinstance(args[0], Tensor) and batched_at(args[0], level)):
                raise RuntimeError(INPLACE) from None
            fallback_warning(name)
            if not frame.size:   # no example to write into or to stack
                return args[0] if inplace else _empty_batch(orig, args, kwargs, level, name)
            rows = [orig(*_slice(args, level, b), **_slice(kwargs, level, b)) for b in range(frame.size)]
            if inplace:   # each example written through its view of self
                return args[0]
            return _stack_results(rows, level)
    return run


_IN_LEVEL_OP = [0]   # public ops running inside one called by the program (their own calls are not checked)
_LEVEL_SELF: list = [None]   # (the plain tensor of its first argument, a function giving its aten name)
_ITER_DUNDERS = {"iadd": "add_", "isub": "sub_", "imul": "mul_", "itruediv": "div_", "ipow": "pow_"}   # += ...
_TENSOR_OVERLOAD = {"add_", "sub_", "mul_", "div_", "true_divide_", "multiply_", "subtract_", "divide_"}
_SCALAR_OR_TENSOR = {"fill_": 1, "pow_": 1, "remainder_": 1, "fmod_": 1, "masked_fill_": 2}


def _aten_inplace(own: str, setitem: bool, args, kwargs) -> str:
    """PyTorch's name of an in-place op as its dispatcher calls it (``aten::mul_.Tensor``), for errors."""
    if setitem:
        index = args[1] if len(args) > 1 else None
        parts = index if type(index) is tuple else (index,)
        basic = all(p is None or p is Ellipsis or type(p) in (int, slice) for p in parts)
        return "aten::copy_" if basic else "aten::index_put_"
    name = own
    if name in _TENSOR_OVERLOAD:
        return f"aten::{name}.Tensor_mode" if kwargs.get("rounding_mode") is not None else f"aten::{name}.Tensor"
    k = _SCALAR_OR_TENSOR.get(name)
    if k is not None and len(args) > k:
        return f"aten::{name}.{'Tensor' if isinstance(args[k], Tensor) else 'Scalar'}"
    return f"aten::{name}"


def _level_call(body, ip_name: str, inplace: bool, setitem: bool, args, kwargs):
    """A public op called by the program inside torch.func's grad/vjp/jvp: PyTorch's errors for in-place writes
    into the transform's inputs or into captured tensors (here, or in ``_run_inplace`` when the op writes into
    its first argument), and its results marked as made inside the level."""
    p = None
    if args and isinstance(args[0], Tensor):
        p = args[0]
        while type(p) is BatchedTensor:
            p = p._phys
        if inplace:
            _levels.check_inplace_own(p, setitem)
            _levels.check_captured(p, lambda: _aten_inplace(ip_name, setitem, args, kwargs))
    outer = _LEVEL_SELF[0]
    _LEVEL_SELF[0] = (p, ip_name, setitem, args, kwargs)
    _IN_LEVEL_OP[0] += 1
    try:
        r = body(args, kwargs)
    finally:
        _IN_LEVEL_OP[0] -= 1
        _LEVEL_SELF[0] = outer
    if r is not p:
        _stamp_results(r, args)
    return r


def _level_plain(body, args, kwargs):
    """``_level_call`` for an op that writes into none of its arguments: its results marked as made inside."""
    _IN_LEVEL_OP[0] += 1
    try:
        r = body(args, kwargs)
    finally:
        _IN_LEVEL_OP[0] -= 1
    _stamp_results(r, args)
    return r


def _stamp_results(r, args) -> None:
    if r is None:
        return
    first = args[0] if args else None
    if isinstance(r, Tensor):
        if r is not first:
            _levels.stamp(peel(r)[1])
    elif type(r) in (tuple, list) or isinstance(r, tuple):
        for t in r:
            if isinstance(t, Tensor) and t is not first:
                _levels.stamp(peel(t)[1])


_PUBLIC: list | None = None   # (function, the entry code, its runner: put in the function's kwdefaults)


# Every public op function, filled by ember.ops from its registry (a slot, so that autograd imports nothing above it)
PUBLIC_TABLES: list = []


def _public_functions() -> list:
    seen: dict = {}
    fast = {id(f) for f in _primitive.FAST_PATHS}
    for table in PUBLIC_TABLES:
        for name, f in table.items():
            # (the argument-error wrappers only forward: swap the function they wrap)
            while (isinstance(f, types.FunctionType) and getattr(f, "_ember_public", None) is not None
                   and getattr(f, "__wrapped__", None) is not None and f.__code__ is not f.__wrapped__.__code__):
                f = f.__wrapped__
            if isinstance(f, types.FunctionType) and id(f) not in fast and id(f) not in seen:
                # (the rules are looked up by the name stripped of underscores: scatter_ finds scatter's, whose
                # rule tells the two apart by the function's own name; random functions keep theirs)
                seen[id(f)] = (f, name if name in RANDOM else name.strip("_"))
    from . import _profiling
    for f, name, _ in _profiling.FACTORIES:   # creation and random functions (rand, randn, zeros, ...)
        if isinstance(f, types.FunctionType) and id(f) not in seen:
            seen[id(f)] = (f, f.__name__)
    return list(seen.values())


_ENTRIES: dict = {}   # (number of closure cells, keyword) -> an entry's code


def entry_code(n: int, keyword: str = "_ember_vmap_run"):
    """The code of ``def entry(*args, <keyword>, **kwargs)`` with ``n`` free variables (a function's code can only
    be swapped for code with as many), calling ``<keyword>(args, kwargs)``: what vmap's and the profiler's swaps
    put in place of a public function's code."""
    code = _ENTRIES.get((n, keyword))
    if code is None:
        cells = ", ".join(f"c{i}" for i in range(n))
        src = (f"def _outer({cells}):\n"
               f"    def entry(*args, {keyword}, **kwargs):\n"
               + (f"        ({cells},)\n" if n else "") +
               f"        return {keyword}(args, kwargs)\n"
               "    return entry\n")
        ns: dict = {}
        exec(compile(src, "<ember entry>", "exec"), ns)   # noqa: S102  (a fixed template)
        code = _ENTRIES[n, keyword] = ns["_outer"](*range(n)).__code__
    return code


def _public_swaps() -> list:
    """Every public op's swap: an entry (the profiler's, with the same free variables) calling a runner that
    falls back to one call per example when the op's wrapper needs values."""
    global _PUBLIC
    if _PUBLIC is None:
        done = []
        for f, name in _public_functions():
            code = f.__code__
            orig = types.FunctionType(code, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
            orig.__kwdefaults__ = f.__kwdefaults__
            entry = entry_code(len(code.co_freevars)).replace(co_name=code.co_name)
            # The runner rides in the function's keyword defaults (its own code never reads the extra key), so that
            # installing and removing the swap is mostly one __code__ assignment each; another swapper (autocast,
            # the profiler) may put back defaults without it: each install checks
            done.append((f, entry, _public_runner(orig, name)))
        _PUBLIC = done
    return _PUBLIC


def _apply_entry(prim, args, params, node_cls, dtype, *, _ember_vmap_run):
    return _ember_vmap_run(prim, args, params, node_cls, dtype)


def _inplace_entry(prim, self, others, params, node_cls, dtype, saved, *, _ember_vmap_run):
    return _ember_vmap_run(prim, self, others, params, node_cls, dtype, saved)


_saved: list = []


def _swap(fn, entry_code, kw: dict, key: str | None = None) -> None:
    if key is not None:
        orig = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        orig.__kwdefaults__ = fn.__kwdefaults__
        _orig[key] = orig
    _saved.append((fn, fn.__code__, fn.__kwdefaults__))
    fn.__code__ = entry_code.replace(co_name=fn.__code__.co_name)
    fn.__kwdefaults__ = kw


_FAST_ENTRIES: dict = {}   # a fast path's code -> its entry under its name (False: it takes none)


def _install() -> None:
    from . import _profiling
    _INSTALLED[0] = True
    _swap(_primitive.apply, _apply_entry.__code__, {"_ember_vmap_run": _run}, "apply")
    _swap(_views.apply_inplace, _inplace_entry.__code__, {"_ember_vmap_run": _run_inplace}, "apply_inplace")
    for f in _primitive.FAST_PATHS:   # the fast paths take their general case (which calls apply)
        code = f.__code__
        entry = _FAST_ENTRIES.get(code)
        if entry is None:
            entry = _profiling._FN_ENTRY if code.co_argcount == 1 else _profiling._OP_ENTRY
            entry = _FAST_ENTRIES[code] = entry.replace(co_name=code.co_name) \
                if entry.co_freevars == code.co_freevars else False
        if entry is False:
            continue
        _saved.append((f, code, f.__kwdefaults__))
        f.__code__ = entry
    public = _public_swaps()
    if _public_epoch[0] == _code_swaps[0] and _saved_public:
        # no other swapper has run since this swap last came out: the functions hold the codes it put back and
        # the defaults that carry its runners, so swapping in is one assignment each
        for f, entry, _ in public:
            f.__code__ = entry
        return
    _saved_public[:] = [f.__code__ for f, _, _ in public]
    for f, entry, run in public:
        kw = f.__kwdefaults__
        if kw is None or kw.get("_ember_vmap_run") is not run:
            kw = dict(kw or {})
            kw["_ember_vmap_run"] = run
            f.__kwdefaults__ = kw
        f.__code__ = entry
    _public_epoch[0] = _code_swaps[0]


_saved_public: list = []   # the public functions' code while the swap is out (in _PUBLIC's order)
_public_epoch = [-1]       # _code_swaps' count when _saved_public was taken


_INSTALLED = [False]


def _uninstall() -> None:
    if _INSTALLED[0]:
        for (f, _, _), code in zip(_PUBLIC or (), _saved_public):
            f.__code__ = code
        _INSTALLED[0] = False
    while _saved:
        f, code, kw = _saved.pop()
        f.__code__, f.__kwdefaults__ = code, kw
    _orig.clear()

