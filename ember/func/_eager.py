"""torch.func's differentiating transforms: grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian.

Each is built on ember's one autograd graph. A transform's inputs become fresh graph nodes (a detached leaf, or an
alias of a tensor that is itself being differentiated by an outer transform), so the transform differentiates with
respect to exactly its own inputs, however deeply it is nested: ``grad(grad(f))`` and ``grad(lambda x: grad(lambda y:
x * y)(x))`` give the right answers. Inside vmap, a transform's inputs are made batched at every running vmap level
(an expanded view, no copy): every example then has its own copy of them, so the physical graph, where vmap's
batching rules record their physical ops, is block-diagonal over the examples and its gradients are the examples'
own (``vmap(grad(loss), in_dims=(None, 0))`` gives per-example gradients of unbatched parameters).

jvp is the exception, as torch.func's: where only a tangent is batched (jacfwd's basis), the primal stays one
physical tensor and its dual's tangent is batched (see _batching.tangent_at), so ``jacfwd`` and ``hessian`` run the
primal computation once; grad/vjp inside leave their inputs unbatched at such levels too (``_input_frames``).

A transform keeps the graph of what it computes (``create_graph``) only when something outside can differentiate it:
an enclosing transform, inputs or captured tensors that require grad, or forward-mode tangents.

While a transform's function runs, its level (ember/autograd/_levels.py) tells autograd inside what the transform
sees: ``autograd.grad`` and ``requires_grad`` treat captured tensors as constants, in-place writes into its inputs
or into captured tensors raise PyTorch's errors.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

from .._state import fwd_state, track_tangent
from .._tensor import Tensor
from ..autograd import _batching as B
from ..autograd import _levels
from ..autograd import engine
from ..autograd._views import edge_of
from ..autograd import forward_ad as fwAD
from ..autograd import grad_mode as _gm
from ..autograd.graph import AccumulateGrad
from ..ops import public as torch
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten, treespec_pprint
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]


# ----- inputs and outputs of a transform ---------------------------------------------------------------------

def _tensor_or_refuse(x):
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    return x


def _check_aux(aux) -> None:
    for a in tree_flatten(aux)[0]:
        if not isinstance(a, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")


class _Input:
    """One input of a transform: the tensor the function sees and the physical leaf the graph is differentiated
    at (batched at every vmap level running when the transform started)."""

    __slots__ = ("seen", "leaf", "chain", "given_rg")

    def __init__(self, t: Tensor, frames: list) -> None:
        if t._data.dtype.kind not in "fcV":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        t = B.materialize(t, frames)
        chain, p = B.peel(t)
        self.given_rg = p._requires_grad
        if p._requires_grad:
            leaf = p.view_as(p)   # an alias: a node of its own, still attached to what p depends on
            leaf._base = None     # (and a base of its own: a view of it is a view of the transform's leaf)
        else:
            leaf = p.detach()
            leaf._requires_grad = True   # (requires_grad_() is refused inside transforms, as PyTorch's)
            if p._fw_grad is not None:   # a forward-mode tangent (jvp over this transform) stays with it
                leaf._fw_grad = p._fw_grad
                track_tangent(leaf)
        self.leaf = leaf
        _levels.add_leaf(leaf)
        self.chain = chain
        self.seen = B.rewrap(leaf, chain)

    def wrap(self, g: Tensor | None) -> Tensor:
        """A gradient of the leaf, seen as the input was (zeros when none flowed)."""
        if g is None:
            g = torch.zeros_like(self.leaf.detach())
        return B.rewrap(g, self.chain)


def _input_frames(flat) -> tuple[list, list]:
    """``(frames, skipped)``: the running vmap levels a transform's inputs ``flat`` are made batched at, and the
    others. Every level, except those at which no input is batched and some input is a dual whose tangent is
    (jvp's tangent-only levels: jacfwd's basis under hessian = jacfwd(jacrev)): there the function's primal
    side runs once, unbatched, its tangents batched. Should an output come out batched at a skipped level
    after all (a random draw, a tensor batched there meeting the inputs), its gradient would be summed over
    that level's examples: ``_differentiate`` then runs the function again with every level."""
    frames = list(B.FRAMES)
    if not fwd_state.level or not frames:
        return frames, []
    keep, skipped = [], []
    for f in frames:
        lv = f.level
        if any(B.tangent_at(x, lv) for x in flat) and not any(B.batched_at(x, lv) for x in flat):
            skipped.append(f)
        else:
            keep.append(f)
    return keep, skipped


def _differentiate(flat, run, every: bool = False):
    """``run(inputs, frames)`` (the function called on ``_Input``s made batched at ``frames``; returns its
    flat outputs first) with the levels of ``_input_frames``; again with every running level, from the same
    random state, when an output is batched at a skipped level. Returns ``(inputs, frames, run's result)``."""
    for t in flat:
        _tensor_or_refuse(t)
    frames, skipped = (list(B.FRAMES), []) if every else _input_frames(flat)
    state = B.RNG_STATE[0]() if skipped and B.RNG_STATE else None
    with _level("grad"):
        inputs = [_Input(t, frames) for t in flat]
        res = run(inputs, frames)
    if skipped and any(isinstance(o, Tensor) and B.batched_at(o, f.level) for o in res[0] for f in skipped):
        if state is not None:
            B.RNG_STATE[1](state)
        frames = list(B.FRAMES)
        with _level("grad"):
            inputs = [_Input(t, frames) for t in flat]
            res = run(inputs, frames)
    return inputs, frames, res


def _check_argnums(argnums, n: int, name: str):
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        return a % n
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = tuple(one(a) for a in argnums)
        if len(set(nums)) != len(nums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return nums
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return one(argnums)
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _reaches_other_leaves(outs, leaves) -> bool:
    """Whether the graph of ``outs`` reaches a leaf that requires grad other than ``leaves`` (a captured tensor
    that an outer computation may differentiate)."""
    own = {id(x) for x in leaves}
    seen = set()
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if type(n) is AccumulateGrad:
            v = n.variable
            if id(v) not in own and not v.__dict__.get("_own_leaf"):   # (a transform's leaf: see _levels)
                return True
            continue
        for nxt, _ in n.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return False


def _keep_graph(inputs, outs_phys, grad_on: bool, extra_rg: bool = False) -> bool:
    """Whether a transform must keep the graph of its results (see the module docstring); ``grad_on``: grad mode
    where the transform was called."""
    if not grad_on:
        return False
    if extra_rg or fwd_state.level or B.TRANSFORMS[0] > 1 or any(i.given_rg for i in inputs):
        return True
    return _reaches_other_leaves([o for o in outs_phys if o._requires_grad], [i.leaf for i in inputs])


def _made(tree):
    """Results of a transform running inside another's level: made there (an in-place write into them inside
    it is allowed, as into anything it computed)."""
    if _levels.LEVELS:
        for t in tree_flatten(tree)[0]:
            if isinstance(t, Tensor):
                _levels.stamp(B.peel(t)[1])
    return tree


def _flat_phys(outs, frames):
    """The plain tensors of outputs, batch dims first (made batched at ``frames``, the inputs' levels)."""
    return [B.to_front(o, frames)[0] for o in outs]


class _Span:
    """A span with a start and an end: ``_Transform()`` is one transform's (backward() is refused inside it,
    vmap's swaps stay installed), ``_Held()`` a computation made of several transforms (jacrev, jacfwd: the swaps
    stay installed across them)."""

    def __init__(self, enter, exit) -> None:
        self._enter, self._exit = enter, exit

    def __enter__(self):
        self._enter()
        return self

    def __exit__(self, *exc) -> None:
        self._exit()


def _Transform() -> _Span:
    return _Span(B.enter_transform, B.exit_transform)


def _Held() -> _Span:
    return _Span(B.hold, B.release)


class _level:
    """The span of a transform's level (its inputs made and its function run): what autograd inside sees
    (ember/autograd/_levels.py)."""

    __slots__ = ("kind", "lv")

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __enter__(self):
        self.lv = _levels.push(self.kind, len(B.FRAMES))
        return self.lv

    def __exit__(self, *exc) -> None:
        _levels.pop(self.lv)


# ----- vjp -----------------------------------------------------------------------------------------------

def _detach(t: Tensor, keep: bool) -> Tensor:
    return t if keep else t.detach()


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian products for each primal
    (``(func(*primals), vjp_fn, aux)`` with ``has_aux``)."""
    return _vjp(func, primals, has_aux)


def _vjp(func: Callable, primals: tuple, has_aux: bool, every: bool = False):
    """vjp; ``every``: the inputs made batched at every running vmap level (see _input_frames)."""
    grad_on = _gm.is_grad_enabled()
    with _Transform(), _gm.enable_grad():
        flat, spec = tree_flatten(primals)

        def run(inputs, frames):
            out = func(*tree_unflatten([i.seen for i in inputs], spec))
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                       "has_aux is True")
                out, aux = out
                _check_aux(aux)
            flat_out, out_spec = tree_flatten(out)
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got "
                                       f"unsupported type {type(o)}")
                if o._data.dtype.kind not in "fcV":
                    raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                                       f"got Tensor with dtype {o.dtype}")
            return flat_out, out_spec, aux
        inputs, frames, (flat_out, out_spec, aux) = _differentiate(flat, run, every)
        skipped = {f.level for f in B.FRAMES} - {f.level for f in frames}
        outs_phys = _flat_phys(flat_out, frames)
        keep = _keep_graph(inputs, outs_phys, grad_on)
    levels = [f.level for f in frames]

    def vjp_fn(cotangents, *, retain_graph: bool = True, create_graph: bool | None = None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {treespec_pprint(ct_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        for k, (c, o) in enumerate(zip(flat_ct, flat_out)):
            if c is None:   # (autograd's implicit gradient: scalar outputs only)
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                flat_ct[k] = torch.ones_like(o)
                continue
            if not isinstance(c, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(c).__name__}")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of {c.shape} and output[{k}] has "
                                   f"a shape of {o.shape}.")
        with _Transform(), _gm.enable_grad():
            old = [f for f in B.FRAMES if f.level in levels]
            new = [f for f in B.FRAMES if f.level not in levels and any(B.batched_at(c, f.level) for c in flat_ct)]
            sizes = [f.size for f in new]
            cg = keep or any(c.requires_grad for c in flat_ct) if create_graph is None else create_graph
            if any(f.level in skipped for f in new):
                # cotangents batched at a level the graph is not (its inputs' tangents are): autograd.grad's
                # batch would be a plain dim that those tangents do not see; the rules' batching does
                res = _vjp_of_batched(outs_phys, [_batched_ct(c, old, new) for c in flat_ct], inputs,
                                      retain_graph, cg, [f.level for f in new])
                if res is None:
                    raise NotImplementedError("ember: vjp_fn with cotangents batched at a vmap level of a jvp's "
                                              "tangents, through an operation without a batching rule")
                return _made(tree_unflatten(res, spec))
            if new and not old:
                # cotangents batched by vmaps that began after vjp (jacrev's basis): the rules run on them as
                # tensors, every operation batched by its rule; when one has none, autograd.grad's batched pass
                res = _vjp_of_batched(outs_phys, flat_ct, inputs, retain_graph, cg)
                if res is not None:
                    return _made(tree_unflatten(res, spec))
            phys_ct = []
            for c in flat_ct:
                p, lvls = B.to_front(c, new + old)   # (their dims first, lowest level first)
                if new:   # the new levels' dims first (flattened: autograd.grad's batch), then the old ones'
                    pos = {lv: k for k, lv in enumerate(lvls)}
                    perm = [pos[f.level] for f in new] + [pos[f.level] for f in old]
                    perm += list(range(len(perm), p.dim()))
                    if perm != list(range(p.dim())):
                        p = p.permute(perm)
                    p = p.reshape((math.prod(sizes),) + tuple(p.shape[len(new):]))
                phys_ct.append(p)
            live = [k for k, o in enumerate(outs_phys) if o._requires_grad]   # (the others give zeros)
            if live:
                gs = engine.graph_grad([outs_phys[k] for k in live], [i.leaf for i in inputs],
                                       [phys_ct[k] for k in live], retain_graph=retain_graph, create_graph=cg,
                                       allow_unused=True, is_grads_batched=bool(new))
            else:
                gs = [None] * len(inputs)
            res = []
            for i, g in zip(inputs, gs):
                if not new:
                    res.append(i.wrap(g))
                    continue
                # (new levels: their flattened batch dim first) -> the new levels' dims, then the leaf's
                if g is None:
                    g = torch.zeros((math.prod(sizes),) + tuple(i.leaf.shape), dtype=i.leaf.dtype)
                res.append(_wrap_after(g.reshape(tuple(sizes) + tuple(g.shape[1:])), [f.level for f in new],
                                       i.chain))
        return _made(tree_unflatten(res, spec))

    primal_out = _made(tree_unflatten([_detach(o, keep) for o in flat_out], out_spec))
    if has_aux:
        return primal_out, vjp_fn, tree_map(lambda a: _detach(a, keep) if isinstance(a, Tensor) else a, aux)
    return primal_out, vjp_fn


def _batched_ct(c: Tensor, old: list, new: list) -> Tensor:
    """A cotangent seen at the graph's levels ``old`` (their dims first, as the physical outputs') and batched at
    the levels ``new``."""
    p, lvls = B.to_front(c, old + new)
    pos = {lv: k for k, lv in enumerate(lvls)}
    perm = [pos[f.level] for f in new] + [pos[f.level] for f in old]
    perm += list(range(len(perm), p.dim()))
    if perm != list(range(p.dim())):
        p = p.permute(perm)
    return B.from_front(p, [f.level for f in new])


def _vjp_of_batched(outs, cts, inputs, retain_graph: bool, record: bool, new: list | None = None):
    """The vector-Jacobian products for cotangents batched at vmap levels the graph does not have: one backward
    pass whose rules run on the batched cotangents (as under create_graph), recorded only when ``record``. None
    when an operation on the way has no batching rule (nothing has been changed: the graph is retained)."""
    live = [k for k, o in enumerate(outs) if o._requires_grad]   # (outputs that do not depend on the inputs)
    if not live:
        if new:
            return [_wrap_after(torch.zeros(tuple(B.frame_of(lv).size for lv in new) + tuple(i.leaf.shape),
                                            dtype=i.leaf.dtype), new, i.chain) for i in inputs]
        return [i.wrap(None) for i in inputs]
    roots = engine._root_grads([outs[k] for k in live], [cts[k] for k in live], True, "grad")
    edges = [edge_of(i.leaf) for i in inputs]
    B.STRICT[0] += 1
    try:
        captured = engine.run_backward(roots, True, True, targets=edges, accumulate=False, record=record)
    except (B.NoRule, B.NeedsValues):
        return None
    finally:
        B.STRICT[0] -= 1
    if not new:
        return [i.wrap(captured.get(e)) for i, e in zip(inputs, edges)]
    res = []   # (each batched at the levels ``new``, its per-example shape the leaf's physical one)
    for i, e in zip(inputs, edges):
        g = captured.get(e)
        if g is None:
            g = torch.zeros_like(i.leaf.detach())
        res.append(_wrap_after(B.to_front(g, [B.frame_of(lv) for lv in new])[0], new, i.chain))
    return res


def _wrap_after(g: Tensor, lead: list, chain: list):
    """``g`` (a dim for each of the levels ``lead`` first, then a leaf's physical dims, batched as its ``chain``
    says) seen as batched at all those levels (wrapped in level order: a lower level's wrapper inside)."""
    n = g.dim()
    k = len(lead)
    free = list(range(k, n))   # (each wrapper's bdim indexes the dims its inner wrappers left free)
    dims = list(zip(lead, range(k)))
    for level, bdim in reversed(chain):
        dims.append((level, free.pop(bdim)))
    dims.sort()
    perm = [d for _, d in dims]
    perm += [d for d in range(n) if d not in perm]
    if perm != list(range(n)):
        g = g.permute(perm)
    return B.from_front(g, [lv for lv, _ in dims])


# ----- grad ----------------------------------------------------------------------------------------------

def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the positional arguments ``argnums``, and its value."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "grad_and_value")
        grad_on = _gm.is_grad_enabled()
        with _Transform(), _gm.enable_grad():
            chosen = tuple(args[n] for n in nums) if isinstance(nums, tuple) else args[nums]
            flat, spec = tree_flatten(chosen)

            def run(inputs, frames):
                seen = tree_unflatten([i.seen for i in inputs], spec)
                new_args = list(args)
                if isinstance(nums, tuple):
                    for n, s in zip(nums, seen):
                        new_args[n] = s
                else:
                    new_args[nums] = seen
                out = func(*new_args, **kwargs)
                aux = None
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                           "(output, aux) if has_aux is True")
                    out, aux = out
                    _check_aux(aux)
                if not isinstance(out, Tensor):
                    raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                       f"{type(out)}")
                if out.dim() != 0:
                    raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                       f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                       "APIs instead?")
                if out._data.dtype.kind == "c":
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{out.dtype}")
                return [out], aux
            inputs, frames, ([out], aux) = _differentiate(flat, run)
            phys, _ = B.to_front(out, frames)
            keep = _keep_graph(inputs, [phys], grad_on)
            if phys._requires_grad:
                gs = engine.graph_grad([phys], [i.leaf for i in inputs], [torch.ones_like(phys)],
                                       retain_graph=keep, create_graph=keep, allow_unused=True)
            else:
                gs = [None] * len(inputs)
            grads = tree_unflatten([i.wrap(g) for i, g in zip(inputs, gs)], spec)
        _made(grads)
        value = _made(_detach(out, keep))
        if has_aux:
            aux = tree_map(lambda a: _detach(a, keep) if isinstance(a, Tensor) else a, aux)
            return grads, (value, aux)
        return grads, value
    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the positional arguments ``argnums`` (``func`` returns a scalar)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapper


# ----- jvp -----------------------------------------------------------------------------------------------

def _check_tangents(primals, tangents) -> tuple:
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    fp, ps = tree_flatten(primals)
    ft, ts = tree_flatten(tangents)
    if not fp:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to contain at least one Tensor.")
    for p in fp:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to only contain Tensors, got {type(p)}")
    if ps != ts:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {ps} and tangents with structure {ts}")
    for t in ft:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected tangents to only contain Tensors, got {type(t)}")
    for p, t in zip(fp, ft):
        if tuple(p.shape) != tuple(t.shape):   # (make_dual's words, with the examples' shapes)
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
    return fp, ft, ps


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product by forward-mode AD (``(..., aux)`` with
    ``has_aux``)."""
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict is not supported yet")
    fp, ft, spec = _check_tangents(primals, tangents)
    # the results keep their graph only when something outside can differentiate them
    keep = _gm.is_grad_enabled() and (B.TRANSFORMS[0] > 0 or fwd_state.level > 0 or
                                      any(x.requires_grad for x in fp + ft))
    if fwd_state.level:
        return _jvp_by_double_vjp(func, fp, ft, spec, has_aux)
    if any(lv not in {c[0] for c in B.peel(p)[0]} for p, t in zip(fp, ft) for lv, _ in B.peel(t)[0]):
        # Some tangent is batched where its primal is not: the primal side runs once, the tangents batched. An
        # operation on the way with no batching rule (a helper primitive the physical path never batched) would
        # run example by example: then the whole jvp runs again with the primals made batched (the physical
        # duals, every operation batched as a whole), from the same random state
        state = B.RNG_STATE[0]() if B.RNG_STATE else None
        B.STRICT[0] += 1
        try:
            return _jvp(func, fp, ft, spec, has_aux, keep, _dual)
        except B.NoRule:
            pass
        finally:
            B.STRICT[0] -= 1
        if state is not None:
            B.RNG_STATE[1](state)
    return _jvp(func, fp, ft, spec, has_aux, keep, _physical_dual)


def _jvp(func, fp, ft, spec, has_aux, keep, dual):
    with _Transform():
        with fwAD.dual_level():
            duals = [dual(p, t) for p, t in zip(fp, ft)]
            with _level("jvp") as lv:
                for d in duals:   # (the program may write into its inputs: into the primals, as PyTorch's)
                    p = B.peel(d)[1]
                    lv.roots.append(p if p._base is None else p._base)
                out = func(*tree_unflatten(duals, spec))
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: (output, "
                                       "aux) if has_aux is True")
                out, aux = out
                _check_aux(aux)
            flat_out, out_spec = tree_flatten(out)
            primal_outs, tangent_outs = [], []
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jvp(f, primals, tangents): expected f(*primals) to return only tensors, got "
                                       f"unsupported type {type(o)}")
                primal, tangent = _undual(o)
                primal_outs.append(primal)
                tangent_outs.append(tangent)
        if not keep:
            keep = _reaches_other_leaves([t for t in primal_outs + tangent_outs if t._requires_grad], [])
    res = _made((tree_unflatten([_detach(x, keep) for x in primal_outs], out_spec),
                 tree_unflatten([_detach(x, keep) for x in tangent_outs], out_spec)))
    if has_aux:
        return res + (tree_map(lambda a: _detach(a, keep), aux),)
    return res


def _dual(p: Tensor, t: Tensor) -> Tensor:
    """The dual of primal ``p`` and tangent ``t`` that jvp's function sees. Batched as torch.func's: at the levels
    ``p`` is batched at, both are (``t`` made batched there); at the levels only ``t`` is batched at (jacfwd's
    basis), only the tangent is: the dual is ``p``'s physical tensor, its tangent a BatchedTensor at those levels
    (per-example shape: the physical primal's), so the primal computation runs once (see _batching.tangent_at)."""
    pp, levels = B.to_front(p, [])
    q, tlevels = B.to_front(t, [B.frame_of(lv) for lv in levels])
    if len(tlevels) == len(levels):
        return B.from_front(fwAD.make_dual(pp, q), levels)
    extra = [lv for lv in tlevels if lv not in levels]
    pos = {lv: k for k, lv in enumerate(tlevels)}   # (q's leading dims: tlevels', lowest first)
    perm = [pos[lv] for lv in extra] + [pos[lv] for lv in levels] + list(range(len(tlevels), q.dim()))
    if perm != list(range(q.dim())):
        q = q.permute(perm)
    return B.from_front(fwAD.make_dual(pp, B.from_front(q, extra)), levels)


def _physical_dual(p: Tensor, t: Tensor) -> Tensor:
    """The dual of ``p`` and ``t`` both made batched at every running vmap level."""
    pp, levels = B.to_front(p)
    tp, _ = B.to_front(t, [B.frame_of(lv) for lv in levels])
    return B.from_front(fwAD.make_dual(pp, tp), levels)


def _undual(o: Tensor) -> tuple:
    """``(primal, tangent)`` of a jvp output, each seen as batched at its own levels (the tangent at the
    output's and at those only its tangent is batched at)."""
    po, levels = B.to_front(o, [])
    primal, tangent = fwAD.unpack_dual(po)
    if tangent is None or primal._data.dtype.kind not in "fcV":   # (an integer output: zeros)
        tangent = torch.zeros_like(primal)
    elif type(tangent) is B.BatchedTensor:
        q, tlevels = B.to_front(tangent, [])
        cur = tlevels + levels   # q's leading dims; the tangent's levels are not the primal's
        every = sorted(cur)
        perm = [cur.index(lv) for lv in every] + list(range(len(cur), q.dim()))
        if perm != list(range(q.dim())):
            q = q.permute(perm)
        return B.from_front(primal, levels), B.from_front(q, every)
    return B.from_front(primal, levels), B.from_front(tangent, levels)


def _jvp_by_double_vjp(func, fp, ft, spec, has_aux):
    """jvp inside another jvp (ember's forward mode has one level): J t as the vjp of u -> J^T u, a reverse pass
    over a reverse pass, which forward-mode tangents of the outer jvp flow through."""
    # (the inputs made batched at every vmap level: the second pass's batch of cotangents would otherwise meet
    # tangents batched at a level the graph is not, see _input_frames)
    res = _vjp(lambda *xs: func(*tree_unflatten(list(xs), spec)), tuple(fp), has_aux, every=True)
    out, fn = res[0], res[1]
    flat_out, out_spec = tree_flatten(out)
    zeros = [torch.zeros_like(o) for o in flat_out]
    _, fn2 = _vjp(lambda *us: fn(tree_unflatten(list(us), out_spec)), tuple(zeros), False, every=True)
    jt = fn2(tuple(ft))
    flat_jt = tree_flatten(jt)[0]
    r = (out, tree_unflatten(flat_jt, out_spec))
    return r + (res[2],) if has_aux else r


def linearize(func: Callable, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``."""
    out = func(*primals)
    flat_out, out_spec = tree_flatten(out)

    def jvp_fn(*tangents):
        fp, ps = tree_flatten(primals)
        ft, ts = tree_flatten(tangents)
        if ps != ts:
            raise RuntimeError(f"Expected the tangents {ts} to have the same argspec as the primals {ps}")
        for k, (p, t) in enumerate(zip(fp, ft)):
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(f"tangent:{k} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if p.dtype != t.dtype:
                raise RuntimeError(f"tangent:{k} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return tree_unflatten([o.detach() for o in flat_out], out_spec), jvp_fn


# ----- Jacobians ------------------------------------------------------------------------------------------

def _chosen(args, nums):
    return tuple(args[n] for n in nums) if isinstance(nums, tuple) else args[nums]


def _replace(args, nums, values):
    new = list(args)
    if isinstance(nums, tuple):
        for n, v in zip(nums, values):
            new[n] = v
    else:
        new[nums] = values
    return tuple(new)


def _basis(tensors) -> tuple:
    """The rows of the identity over all of ``tensors``' elements, cut into one batch per tensor shaped like it:
    ``(numels, [(total, *t.shape) for t])`` (jacrev's cotangents, jacfwd's tangents)."""
    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    eye = torch.eye(total, dtype=tensors[0].dtype, device=tensors[0].device)
    basis = []
    start = 0
    for t, n in zip(tensors, sizes):
        basis.append(eye[:, start:start + n].reshape((total,) + tuple(t.shape)))
        start += n
    return sizes, basis


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """``func``'s Jacobian with respect to ``argnums`` by reverse mode: one vjp per output element, batched by
    vmap (``chunk_size`` elements at a time)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _Held():   # (vmap's swaps installed once for the whole computation)
            return _jacrev(args, kwargs)

    def _jacrev(args, kwargs):
        nums = _check_argnums(argnums, len(args), "jacrev")
        chosen = _chosen(args, nums)
        res = vjp(lambda *c: func(*_replace(args, nums, c if isinstance(nums, tuple) else c[0]), **kwargs),
                  *(chosen if isinstance(nums, tuple) else (chosen,)), has_aux=has_aux)
        out, fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(out)
        flat_in = tree_flatten(chosen)[0]
        sizes, basis = _basis(flat_out)
        cols = vmap(lambda *b: tree_flatten(fn(tree_unflatten(list(b), out_spec)))[0],
                    chunk_size=chunk_size)(*basis)
        # cols[j]: (total, *input_j.shape); rows of output i are [start_i, start_i + n_i)
        in_spec = tree_flatten(chosen)[1]
        per_out = []
        start = 0
        for o, n in zip(flat_out, sizes):
            blocks = [c[start:start + n].reshape(tuple(o.shape) + tuple(x.shape)) for c, x in zip(cols, flat_in)]
            start += n
            per_out.append(tree_unflatten(blocks, in_spec))
        jac = tree_unflatten(per_out, out_spec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """``func``'s Jacobian with respect to ``argnums`` by forward mode: one jvp per input element, batched by
    vmap."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with _Held():   # (vmap's swaps installed once for the whole computation)
            return _jacfwd(args, kwargs)

    def _jacfwd(args, kwargs):
        nums = _check_argnums(argnums, len(args), "jacfwd")
        chosen = _chosen(args, nums)
        flat_in, in_spec = tree_flatten(chosen)
        sizes, basis = _basis(flat_in)
        primals = tuple(flat_in)

        def push(*tangents):
            def f(*xs):
                return func(*_replace(args, nums, tree_unflatten(list(xs), in_spec)), **kwargs)
            r = jvp(f, primals, tangents, has_aux=has_aux)
            return (r[1], r[2]) if has_aux else r[1]
        if has_aux:
            tan, aux = vmap(push, randomness=randomness, out_dims=(0, 0))(*basis)
            aux = tree_map(lambda a: a[0] if isinstance(a, Tensor) else a, aux)
        else:
            tan = vmap(push, randomness=randomness)(*basis)
        flat_tan, out_spec = tree_flatten(tan)
        per_out = []
        for t in flat_tan:
            t = t.movedim(0, -1)   # (*out.shape, total)
            blocks = []
            start = 0
            for x, n in zip(flat_in, sizes):
                blocks.append(t[..., start:start + n].reshape(tuple(t.shape[:-1]) + tuple(x.shape)))
                start += n
            per_out.append(tree_unflatten(blocks, in_spec))
        jac = tree_unflatten(per_out, out_spec)
        return (jac, aux) if has_aux else jac
    return wrapper


def hessian(func: Callable, argnums=0) -> Callable:
    """``func``'s Hessian with respect to ``argnums``: jacfwd of jacrev."""
    return jacfwd(jacrev(func, argnums), argnums)
