"""``torch.autograd.Function`` under torch.func's transforms.

ember's transforms differentiate one autograd graph, on physical tensors: a custom Function called inside
``grad``/``vjp``/``jvp`` with plain (physical) inputs records its node there like any op, and its ``backward`` /
``jvp`` give the transform's derivatives. What needs care is vmap, where the Function meets BatchedTensors:

* a ``vmap`` staticmethod, ``vmap(info, in_dims, *args) -> (output, out_dims)``, gets the physical tensors of the
  innermost level and their batch dims; it usually calls the Function again on them, which records the node on
  the physical graph.
* ``generate_vmap_rule = True``: a Function made for the call runs on the physical tensors; its forward,
  setup_context, backward and jvp run the user's under a vmap level of their own (the saved tensors and the
  gradients keep their batch dims), and gradients come back reduced to each input's examples.

Called by ``Function.apply`` (ember/autograd/function.py, the ``TRANSFORM_RULE`` slot) while any vmap runs.
"""
from __future__ import annotations

from typing import NamedTuple

from .._tensor import Tensor
from ..autograd import _batching as B
from ..autograd import function as _function
from ..autograd.function import Function
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten
from ._vmap import vmap

_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


class VmapInfo(NamedTuple):
    """What a Function's ``vmap`` staticmethod learns of the vmap it runs under."""

    batch_size: int
    randomness: str


def _split(t, level: int) -> tuple:
    """``(physical tensor, batch dim)`` of ``t`` at ``level``; ``(t, None)`` when not batched there."""
    if type(t) is B.BatchedTensor and t._level == level:
        return t._phys, t._bdim
    return t, None


def _unwrap_tree(tree, level: int) -> tuple:
    flat, spec = tree_flatten(tree)
    pairs = [_split(x, level) for x in flat]
    return tree_unflatten([p for p, _ in pairs], spec), tree_unflatten([d for _, d in pairs], spec)


def _top_level(args, kwargs) -> int:
    level = 0
    for x in tree_flatten((args, kwargs))[0]:
        if type(x) is B.BatchedTensor and x._level > level:
            level = x._level
    return level


# The vmap levels a Function's vmap staticmethod runs below: as in PyTorch, a Function it calls does not see them
_LOWERED: set = set()


def transform_rule(cls, args: tuple, kwargs: dict):
    """``cls.apply(*args, **kwargs)`` while a vmap runs (setup_context checked already)."""
    if all(f.level in _LOWERED for f in B.FRAMES):
        return _function.plain_apply(cls, args, kwargs)
    if _function.LEGACY_VMAP[0]:   # gradcheck's batched checks: PyTorch runs them under torch._vmap_internals'
        # vmap, no torch.func transform: every Function runs as it is, its forward on the batched inputs
        level = _top_level(args, kwargs)
        if not level:
            return _function.plain_apply(cls, args, kwargs)
        phys, in_dims = _unwrap_tree(args, level)
        return _by_generated_rule(cls, B.frame_of(level), phys, in_dims)
    if any(isinstance(v, Tensor) for v in tree_flatten(kwargs)[0]):
        raise NotImplementedError(f"Run vmap on autograd.Function with kwarg-only Tensor args. Please do not pass "
                                  f"kwarg-only Tensors to autograd.Function. Got: {kwargs}")
    own_rule = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule and own_rule:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both generate_vmap_rule=True and an "
                           "overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the "
                           f"overridden vmap staticmethod to avoid ambiguity. {_DOCS}")
    if not cls.generate_vmap_rule and not own_rule:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                           f"override and implement the vmap staticmethod or set generate_vmap_rule=True. {_DOCS}")
    level = _top_level(args, kwargs)
    if not level:   # nothing mapped over: the Function as it is (its inputs are the same for every example)
        return _function.plain_apply(cls, args, kwargs)
    frame = B.frame_of(level)
    phys, in_dims = _unwrap_tree(args, level)
    if own_rule:
        return _by_vmap_staticmethod(cls, frame, args, phys, in_dims, kwargs)
    # (as PyTorch's generated rule, keyword-only arguments are not passed on: forward gets its defaults)
    return _by_generated_rule(cls, frame, phys, in_dims)


# ----- the vmap staticmethod ---------------------------------------------------------------------------------

def _by_vmap_staticmethod(cls, frame, args, phys, in_dims, kwargs):
    _LOWERED.add(frame.level)
    try:
        result = cls.vmap(VmapInfo(frame.size, frame.randomness), in_dims, *phys, **kwargs)
    finally:
        _LOWERED.discard(frame.level)
    head = ("Expected the vmap staticmethod to have two returns, an output and out_dims with pytree structure "
            "compatible with the output. ")
    if not isinstance(result, tuple):
        raise RuntimeError(head + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(head + f"Got {len(result)} returns instead")
    output, out_dims = result
    flat, spec = tree_flatten(output)
    dims = _broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise RuntimeError(f"The autograd.Function's vmap staticmethod returned an incompatible (output, out_dims) "
                           f"tuple. Expected out_dims={out_dims} to be compatible with the structure of `output`. "
                           f"out_dims has structure {tree_flatten(out_dims)[1]} but output has structure {spec}. "
                           f"{_DOCS}")
    # an input handed back as it is stays the caller's tensor (mark_dirty's in-place Functions rely on it)
    given = {id(p): a for p, a in zip(tree_flatten(phys)[0], tree_flatten(args)[0])}
    made = []
    for o, d in zip(flat, dims):
        if isinstance(o, Tensor) and id(o) in given:
            made.append(given[id(o)])
        elif isinstance(o, Tensor) and d is not None:
            made.append(B.wrap(o, d % o.dim() if o.dim() else d, frame.level))
        else:
            made.append(o)
    return tree_unflatten(made, spec)


# ----- generate_vmap_rule=True ----------------------------------------------------------------------------------

class _Rebatch:
    """A ctx attribute that held a tensor batched at the level setup_context ran under: its physical tensor and
    batch dim, seen batched again at the level that backward or jvp runs under."""

    __slots__ = ("phys", "bdim")

    def __init__(self, phys: Tensor, bdim: int) -> None:
        self.phys, self.bdim = phys, bdim


class _CtxView:
    """The ctx the user's setup_context, backward and jvp see when ember runs them under a level of their own:
    tensors saved or stored on it are kept physical with their batch dims, and come back batched."""

    __slots__ = ("_ctx", "_level", "_given")

    def __init__(self, ctx, level: int, saved: tuple | None = None) -> None:
        object.__setattr__(self, "_ctx", ctx)
        object.__setattr__(self, "_level", level)
        object.__setattr__(self, "_given", saved)

    def __getattr__(self, name: str):
        v = getattr(self._ctx, name)
        if type(v) is _Rebatch:
            return B.wrap(v.phys, v.bdim, self._level)
        return v

    def __setattr__(self, name: str, value) -> None:
        p, d = _split(value, self._level)
        setattr(self._ctx, name, value if d is None else _Rebatch(p, d))

    def _unbatch(self, tensors) -> tuple:
        pairs = [_split(t, self._level) for t in tensors]
        return tuple(p for p, _ in pairs), tuple(d for _, d in pairs)

    def save_for_backward(self, *tensors) -> None:
        phys, dims = self._unbatch(tensors)
        self._ctx.save_for_backward(*phys)
        self._ctx._vmap_saved_dims = dims

    def save_for_forward(self, *tensors) -> None:
        phys, dims = self._unbatch(tensors)
        self._ctx.save_for_forward(*phys)
        self._ctx._vmap_forward_dims = dims

    def mark_dirty(self, *tensors) -> None:
        self._ctx.mark_dirty(*self._unbatch(tensors)[0])

    def mark_non_differentiable(self, *tensors) -> None:
        self._ctx.mark_non_differentiable(*self._unbatch(tensors)[0])

    @property
    def saved_tensors(self) -> tuple:
        return self._ctx.saved_tensors if self._given is None else self._given


def _under_level(frame_size: int, randomness: str, values: list, dims: list, fn):
    """``fn(*values)`` with ``values[i]`` batched along ``dims[i]`` (None: as it is) under a vmap level of its own;
    returns ``(whether fn returned one value, the physical tensors of what it returned, their batch dims)``."""
    frame = B.push(frame_size, randomness)
    try:
        seen = [v if d is None or not isinstance(v, Tensor) else B.wrap(v, d, frame.level)
                for v, d in zip(values, dims)]
        out = fn(frame.level, seen)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        pairs = [_split(o, frame.level) for o in outs]
    finally:
        B.pop(frame)
    return single, [p for p, _ in pairs], [d for _, d in pairs]


def _to_dim(g, gdim, want, size: int, example_shape=None):
    """A physical gradient/tangent ``g`` (batch dim ``gdim``) made to have its batch dim at ``want``: summed over
    the batch when ``want`` is None, expanded when ``g`` is the same for every example, and (``example_shape``)
    each example summed to the input's shape, as autograd does for a broadcast gradient."""
    if g is None or (gdim is None and want is None):
        return g
    if want is None:
        return g.sum(gdim)
    if gdim is None:
        g = g.unsqueeze(0).expand((size,) + tuple(g.shape))
        gdim = 0
    g = g.movedim(gdim, 0)
    if example_shape is not None and tuple(g.shape[1:]) != tuple(example_shape):
        g = vmap(lambda e: e.sum_to_size(example_shape))(g)   # (errors then name the examples' shapes)
    return g.movedim(0, want)


def _by_generated_rule(cls, frame, phys, in_dims):
    size, randomness = frame.size, frame.randomness
    n_in = len(phys)
    box: dict = {}   # the forward's output structure, for the call below

    def example_shapes(ctx, inputs) -> None:
        # each input's example shape: a gradient for it is summed to that shape, example by example
        ctx._vmap_example_shapes = tuple(
            None if not isinstance(x, Tensor) else
            tuple(x.shape) if d is None else tuple(s for k, s in enumerate(x.shape) if k != d)
            for x, d in zip(inputs, in_dims))

    def run_forward(fn, operands):
        single, outs, dims = _under_level(size, randomness, list(operands), list(in_dims), fn)
        box["single"] = single
        box["out_dims"] = tuple(dims)
        return (*outs, tuple(dims))

    def forward(*operands):
        return run_forward(lambda lv, xs: cls.forward(*xs), operands)

    def forward_with_ctx(ctx, *operands):   # a Function without setup_context (legacy vmap only)
        example_shapes(ctx, operands)
        return run_forward(lambda lv, xs: cls.forward(_CtxView(ctx, lv), *xs), operands)

    def setup_context(ctx, inputs, output):
        outs, out_dims = list(output[:-1]), output[-1]
        example_shapes(ctx, inputs)

        def run(level, xs):
            ins, outs_b = xs[:n_in], xs[n_in:]
            o = outs_b[0] if box["single"] else tuple(outs_b)
            cls.setup_context(_CtxView(ctx, level), tuple(ins), o)
        _under_level(size, randomness, list(inputs) + outs, list(in_dims) + list(out_dims), run)

    def backward(ctx, *grads):
        grads = list(grads[:-1])   # (the out_dims output gets no gradient)
        out_dims = box["out_dims"]
        saved = list(ctx.saved_tensors)
        sdims = list(ctx.__dict__.get("_vmap_saved_dims", (None,) * len(saved)))
        gdims = [None if g is None else d for g, d in zip(grads, out_dims)]
        k = len(saved)

        user = cls.vjp if cls.vjp is not Function.vjp else cls.backward

        def run(level, xs):
            return user(_CtxView(ctx, level, tuple(xs[:k])), *xs[k:])
        _, gs, dims = _under_level(size, randomness, saved + grads, sdims + gdims, run)
        if len(gs) > n_in and all(g is None for g in gs[n_in:]):
            gs, dims = gs[:n_in], dims[:n_in]
        if len(gs) != n_in:
            return tuple(gs)   # the engine reports the wrong count, as for any Function
        shapes = ctx._vmap_example_shapes
        return tuple(_to_dim(g, gd, want, size, shp) if isinstance(g, Tensor) else g
                     for g, gd, want, shp in zip(gs, dims, in_dims, shapes))

    def jvp(ctx, *tangents):
        out_dims = box["out_dims"]
        saved = list(ctx.__dict__.get("_for_forward", ()))
        sdims = list(ctx.__dict__.get("_vmap_forward_dims", (None,) * len(saved)))
        tdims = [None if t is None else d for t, d in zip(tangents, in_dims)]
        k = len(saved)

        def run(level, xs):
            return cls.jvp(_CtxView(ctx, level, tuple(xs[:k])), *xs[k:])
        _, ts, dims = _under_level(size, randomness, saved + list(tangents), sdims + tdims, run)
        made = tuple(_to_dim(t, td, want, size) if isinstance(t, Tensor) else t
                     for t, td, want in zip(ts, dims, out_dims))
        return (*made, None)

    body = {"backward": staticmethod(backward), "jvp": staticmethod(jvp), "generate_vmap_rule": True}
    if cls.setup_context is Function.setup_context:
        body["forward"] = staticmethod(forward_with_ctx)
    else:
        body.update(forward=staticmethod(forward), setup_context=staticmethod(setup_context))
    generated = type(f"Vmapped{cls.__name__}", (Function,), body)
    res = generated.apply(*phys)
    outs, out_dims = res[:-1], res[-1]
    made = [o if d is None or not isinstance(o, Tensor) else B.wrap(o, d, frame.level) for o, d in zip(outs, out_dims)]
    return made[0] if box["single"] else tuple(made)


_function.TRANSFORM_RULE[0] = transform_rule
