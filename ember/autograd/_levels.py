"""What autograd sees inside torch.func's differentiating transforms (PyTorch's rules for mixing the two).

functorch gives every transform a level with an autograd graph of its own: inside ``grad(f)``, ``f``'s input is a
leaf of the transform's level, and a tensor captured from outside (or computed from captured tensors only) is a
constant there, whatever it requires at the levels below. So ``autograd.grad`` inside ``f`` differentiates only
through what depends on the transform's inputs: a captured tensor "appears to not have been used in the graph", an
output computed from captured tensors only "does not require grad" (and ``requires_grad`` says False), and
``backward()``, ``requires_grad_()`` and ``retain_grad()`` are refused. Writing in place into the transform's input
is writing into a leaf that requires grad; into a captured tensor, PyTorch refuses ("would mutate a captured Tensor").

ember has one physical graph. A ``Level`` (pushed by grad/vjp/jvp in ember/func/_eager.py while their function
runs) holds its ``leaves``: the physical tensors of its inputs and those made to require grad inside it. The graph a
level sees is the part of the physical graph that reaches them, cut there (nodes below a leaf belong to the levels
outside): ``autograd.grad`` inside a transform runs on that part only (``grad_at_level``), and ``requires_grad``
asks whether a tensor reaches them (``requires_grad``, memoised per level). Tensors made while a level runs carry
``_made_in`` (the level's ``ident``, set by vmap's interceptor in _batching.py on every op's results): a tensor
without it, or with an older one, was captured. Nothing here runs outside transforms.
"""
from __future__ import annotations

import itertools

from .. import _state
from .._device import backend_of
from .._tensor import Tensor, make
from . import graph as _graph
from ._views import edge_of


class Level:
    """One running differentiating transform: ``kind`` "grad" (grad, vjp: a reverse-mode level) or "jvp";
    ``leaves`` the physical tensors that are its leaves; ``vmaps`` how many vmap levels ran when it began (a vmap
    begun inside it is the innermost level while it runs); ``start``: graph nodes numbered from it were made inside
    it; ``ident``: tensors made inside it (or inside a level begun later) carry ``_made_in`` >= it."""

    __slots__ = ("kind", "leaves", "roots", "vmaps", "start", "ident", "reach", "_leaf_nodes")

    def __init__(self, kind: str, vmaps: int) -> None:
        self.kind, self.vmaps = kind, vmaps
        self.leaves: list = []
        self.roots: list = []   # the memory of its inputs (jvp's duals share their primals'): writable inside
        self.start = next(_graph._seq)
        self.ident = next(_idents)
        self.reach: dict = {}   # node -> whether it reaches the level's leaves (a node's edges never change)
        self._leaf_nodes = (0, set())

    def leaf_nodes(self) -> set:
        n, nodes = self._leaf_nodes
        if n != len(self.leaves):
            nodes = {edge_of(t)[0] for t in self.leaves}
            self._leaf_nodes = (len(self.leaves), nodes)
        return nodes


_idents = itertools.count(1)


LEVELS: list = []   # the running differentiating transforms, outermost first

# Every leaf a transform made (its inputs, tensors made to require grad inside it) is marked ``_own_leaf``: a graph
# reaching only these reaches nothing the levels outside differentiate.

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
CAPTURED_INPLACE = ("During a grad (vjp, jvp, grad, etc) transform, the function provided attempted to call in-place "
                    "operation ({}) that would mutate a captured Tensor. This is not supported; please rewrite the "
                    "function being transformed to explicitly accept the mutated Tensor(s) as inputs.")
VIEW_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def push(kind: str, vmaps: int) -> Level:
    lv = Level(kind, vmaps)
    LEVELS.append(lv)
    return lv


def pop(lv: Level) -> None:
    if LEVELS[-1] is lv:
        LEVELS.pop()
    else:
        LEVELS.remove(lv)


def add_leaf(t: Tensor) -> None:
    """``t`` (physical, requiring grad) is a leaf of the innermost transform."""
    t.__dict__["_own_leaf"] = True
    if LEVELS:
        LEVELS[-1].leaves.append(t)
        LEVELS[-1].roots.append(t)


def _new_leaf(t: Tensor) -> None:
    """A tensor made a leaf that requires grad inside a transform (a factory's ``requires_grad=True``,
    ``t.requires_grad = True``): a leaf of the innermost differentiating level, as in functorch."""
    if LEVELS:
        add_leaf(t)


_state.func_new_leaf[0] = _new_leaf


def stamp(p: Tensor) -> None:
    """``p`` (physical) was made inside the innermost running level (kept if it was made earlier: an op that
    returns its input)."""
    d = p.__dict__
    if "_made_in" not in d:
        d["_made_in"] = LEVELS[-1].ident


def check_captured(p: Tensor, aten) -> None:
    """PyTorch's error for an in-place write into a tensor (or a view of one) that the innermost transform did not
    make: captured from outside, it is a constant of the level (``aten``: a function giving the op's aten name)."""
    root = p if p._base is None else p._base
    lv = LEVELS[-1]
    if root.__dict__.get("_made_in", 0) < lv.ident and not any(r is root for r in lv.roots):
        raise RuntimeError(CAPTURED_INPLACE.format(aten()))


def _is_running_leaf(t) -> bool:
    """``t`` is a leaf of the innermost level (an outer level's leaf is captured there)."""
    return t is not None and any(x is t for x in LEVELS[-1].leaves)


def check_inplace_own(p: Tensor, setitem: bool) -> None:
    """PyTorch's error for an in-place write into the innermost transform's leaf (an input) or a view of one
    (``setitem``: ``x[i] = v``, which PyTorch writes through the view ``x[i]``); autograd's, so none under
    no_grad."""
    if not _state._state.enabled:
        return
    if _is_running_leaf(p):
        raise RuntimeError(VIEW_INPLACE if setitem else LEAF_INPLACE)
    if _is_running_leaf(p._base):
        raise RuntimeError(VIEW_INPLACE)


def _level_nodes(roots, leaf_nodes) -> set:
    """The nodes reachable from ``roots`` that reach one of ``leaf_nodes`` (the graph the level sees); the walk
    stops at the leaves."""
    reach: dict = {}
    stack = [(n, False) for n in roots if n is not None]
    while stack:
        n, done = stack.pop()
        if n in reach:
            continue
        if n in leaf_nodes:
            reach[n] = True
            continue
        if done:
            reach[n] = any(reach.get(c, False) for c, _ in n.next_functions if c is not None)
            continue
        stack.append((n, True))
        for c, _ in n.next_functions:
            if c is not None and c not in reach:
                stack.append((c, False))
    return {n for n, r in reach.items() if r}


FRAMES: list = []   # vmap's running levels and its BatchedTensor class (ember/autograd/_batching.py puts them here)
BATCHED: list = [None]


def _reaches(lv: Level, root) -> bool:
    """Whether graph node ``root`` reaches one of ``lv``'s leaves (memoised on the level: a node made before a
    leaf cannot reach it, so no answer goes stale)."""
    reach, leaves = lv.reach, lv.leaf_nodes()
    stack = [(root, False)]
    while stack:
        n, done = stack.pop()
        if done:
            reach[n] = any(reach[c] for c, _ in n.next_functions if c is not None)
        elif n not in reach:
            if n in leaves:
                reach[n] = True
                continue
            stack.append((n, True))
            stack.extend((c, False) for c, _ in n.next_functions if c is not None and c not in reach)
    return reach[root]


def requires_grad(t: Tensor) -> bool:
    """``t.requires_grad`` inside a transform. Under grad/vjp/jvp, a tensor the innermost one made requires grad
    only when it depends on the level's leaves (one computed from captured tensors only is a constant of the
    level, as in functorch); a captured tensor answers for itself. A vmap's batched tensor does not, unless a
    differentiating transform runs inside that vmap (``vmap(grad(f))``: the level's tensors are batched)."""
    if type(t) is BATCHED[0]:
        if not LEVELS or len(FRAMES) > LEVELS[-1].vmaps:
            return False
        while type(t) is BATCHED[0]:
            t = t._phys
    if not t._requires_grad:
        return False
    if not LEVELS:
        return True
    lv = LEVELS[-1]
    if t.__dict__.get("_made_in", 0) < lv.ident:
        return True
    node = edge_of(t)[0]
    return node is not None and _reaches(lv, node)


_state.func_requires_grad[0] = requires_grad


def innermost(frames: int):
    """The innermost running differentiating level, or None when there is none or a vmap begun inside it runs
    (``frames``: how many vmap levels run)."""
    if not LEVELS:
        return None
    lv = LEVELS[-1]
    return None if frames > lv.vmaps else lv


def grad_at_level(lv: Level, graph_grad, peel, rewrap, to_front, frame_of, outputs, inputs, grad_outputs,
                  kwargs) -> tuple:
    """``autograd.grad`` inside the transform ``lv``: on the part of the graph its level sees (module docstring).
    ``graph_grad`` is autograd.grad on the physical graph; ``peel``/``rewrap``/``to_front``/``frame_of`` vmap's
    (inputs and outputs may be batched by vmaps running outside the transform)."""
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(outputs) if grad_outputs is None else (grad_outputs,)
    else:
        grad_outputs = tuple(grad_outputs)
    allow_unused = kwargs.get("allow_unused")
    materialize = kwargs.get("materialize_grads", False)
    if allow_unused is None:
        allow_unused = materialize
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
    phys_out, phys_go = [], []
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(grad_outputs)} tensors and {len(outputs)} gradients")
    for o, g in zip(outputs, grad_outputs):
        if not isinstance(o, Tensor):
            raise AssertionError(f"grad(): expected output {len(phys_out)} to be a Tensor, got {type(o).__name__}")
        # (o's own levels only: materializing it at a level where only a tangent is batched would cut the graph)
        po, levels = to_front(o, [frame_of(lv_) for lv_, _ in peel(o)[0]])
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if levels:   # (every example's own scalar)
                g = make(backend_of(po._data).ones_like(po._data))
        elif levels:
            g = to_front(g, [frame_of(lv_) for lv_ in levels])[0].expand(po.shape)
        phys_out.append(po)
        phys_go.append(g)
    chains, phys_in = [], []
    for t in inputs:
        chain, p = peel(t)
        chains.append(chain)
        phys_in.append(p)
    leaf_nodes = {edge_of(t)[0] for t in lv.leaves}
    seen = _level_nodes([edge_of(t)[0] for t in phys_out + phys_in], leaf_nodes)
    for i, o in enumerate(phys_out):
        if edge_of(o)[0] not in seen:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    for p in phys_in:
        fn = p.grad_fn
        if not p._requires_grad or (fn is not None and fn._seq > lv.start and fn not in seen):
            # (computed inside the transform from what its level sees as constants: a constant there)
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    live = [k for k, p in enumerate(phys_in) if edge_of(p)[0] in seen]
    res: list = [None] * len(inputs)
    if live:
        kw = dict(kwargs, allow_unused=True, materialize_grads=False)
        gs = graph_grad(phys_out, [phys_in[k] for k in live], phys_go, **kw)
        for k, g in zip(live, gs):
            res[k] = g
    for k, g in enumerate(res):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize:
                res[k] = rewrap(make(backend_of(phys_in[k]._data).zeros_like(phys_in[k]._data)), chains[k])
            continue
        res[k] = rewrap(g, chains[k])
    for g in res:
        if g is not None:
            stamp(peel(g)[1])
    return tuple(res)
