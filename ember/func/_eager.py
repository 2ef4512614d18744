"""torch.func's differentiating transforms: grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian.

Each is built on ember's one autograd graph. A transform's inputs become fresh graph nodes (a detached leaf, or an
alias of a tensor that is itself being differentiated by an outer transform), so the transform differentiates with
respect to exactly its own inputs, however deeply it is nested: ``grad(grad(f))`` and ``grad(lambda x: grad(lambda y:
x * y)(x))`` give the right answers. Inside vmap, a transform's inputs are made batched at every running vmap level
(an expanded view, no copy): every example then has its own copy of them, so the physical graph, where vmap's
batching rules record their physical ops, is block-diagonal over the examples and its gradients are the examples'
own (``vmap(grad(loss), in_dims=(None, 0))`` gives per-example gradients of unbatched parameters).

A transform keeps the graph of what it computes (``create_graph``) only when something outside can differentiate it:
an enclosing transform, inputs or captured tensors that require grad, or forward-mode tangents.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

from .._state import fwd_state, track_tangent
from .._tensor import Tensor
from ..autograd import _batching as B
from ..autograd import engine
from ..autograd import forward_ad as fwAD
from ..autograd import grad_mode as _gm
from ..autograd.graph import AccumulateGrad
from ..ops import public as torch
from ..utils._pytree import tree_flatten, tree_unflatten, tree_map
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]


# ----- inputs and outputs of a transform ---------------------------------------------------------------------

class _Input:
    """One input of a transform: the tensor the function sees and the physical leaf the graph is differentiated
    at (batched at every vmap level running when the transform started)."""

    __slots__ = ("seen", "leaf", "chain", "given_rg")

    def __init__(self, t: Tensor) -> None:
        t = B.materialize(t)
        chain, p = B.peel(t)
        self.given_rg = p._requires_grad
        if p._requires_grad:
            leaf = p.view_as(p)   # an alias: a node of its own, still attached to what p depends on
        else:
            leaf = p.detach().requires_grad_()
            if p._fw_grad is not None:   # a forward-mode tangent (jvp over this transform) stays with it
                leaf._fw_grad = p._fw_grad
                track_tangent(leaf)
        self.leaf = leaf
        self.chain = chain
        self.seen = B.rewrap(leaf, chain)

    def wrap(self, g: Tensor | None) -> Tensor:
        """A gradient of the leaf, seen as the input was (zeros when none flowed)."""
        if g is None:
            g = torch.zeros_like(self.leaf.detach())
        return B.rewrap(g, self.chain)


def _check_argnums(argnums, n: int, name: str):
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        return a % n
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError(f"{name}: argnums must be non-empty")
        return tuple(one(a) for a in argnums)
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return one(argnums)
    raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")


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
            if id(n.variable) not in own:
                return True
            continue
        for nxt, _ in n.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return False


def _keep_graph(inputs, outs_phys, extra_rg: bool = False) -> bool:
    """Whether a transform must keep the graph of its results (see the module docstring)."""
    if not _gm.is_grad_enabled():
        return False
    if extra_rg or fwd_state.level or B.TRANSFORMS[0] > 1 or any(i.given_rg for i in inputs):
        return True
    return _reaches_other_leaves([o for o in outs_phys if o._requires_grad], [i.leaf for i in inputs])


def _flat_phys(outs):
    """The plain tensors of outputs, batch dims first (made batched at every running level)."""
    return [B.to_front(o)[0] for o in outs]


class _Transform:
    """The span of one transform: backward() is refused inside it, and vmap's swaps stay installed."""

    def __enter__(self):
        B.enter_transform()
        return self

    def __exit__(self, *exc) -> None:
        B.exit_transform()


# ----- vjp -----------------------------------------------------------------------------------------------

def _detach(t: Tensor, keep: bool) -> Tensor:
    return t if keep else t.detach()


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives the vector-Jacobian products for each primal
    (``(func(*primals), vjp_fn, aux)`` with ``has_aux``)."""
    with _Transform(), _gm.enable_grad():
        flat, spec = tree_flatten(primals)
        for p in flat:
            if not isinstance(p, Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected primals to be a tuple of Tensors or a nested tuple "
                                   f"of Tensors, got type {type(p)} instead")
        inputs = [_Input(p) for p in flat]
        frames = list(B.FRAMES)
        out = func(*tree_unflatten([i.seen for i in inputs], spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                   "has_aux is True")
            out, aux = out
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has non-empty output (got "
                                   f"output = {out})" if not flat_out else
                                   f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"{type(o)}")
        outs_phys = _flat_phys(flat_out)
        keep = _keep_graph(inputs, outs_phys)
    levels = [f.level for f in frames]

    def vjp_fn(cotangents, *more, retain_graph: bool = True, create_graph: bool | None = None):
        cts = (cotangents,) + more if more else cotangents
        flat_ct, ct_spec = tree_flatten(cts)
        if ct_spec != out_spec and not (len(flat_out) == 1 and len(flat_ct) == 1):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        for c, o in zip(flat_ct, flat_out):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"vjp_fn: expected cotangents to be Tensors, got {type(c)}")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] has a "
                                   f"shape of {o.shape}")
        with _Transform(), _gm.enable_grad():
            old = [f for f in B.FRAMES if f.level in levels]
            new = [f for f in B.FRAMES if f.level not in levels and any(B.batched_at(c, f.level) for c in flat_ct)]
            sizes = [f.size for f in new]
            phys_ct = []
            for c in flat_ct:
                p, _ = B.to_front(c, new + old)   # (new levels are higher: to_front sorts old ones first)
                k = len(old)
                if new:   # the new levels' dims first (flattened: autograd.grad's batch), then the old ones'
                    n = p.dim()
                    perm = list(range(k, k + len(new))) + list(range(k)) + list(range(k + len(new), n))
                    p = p.permute(perm)
                    p = p.reshape((-1,) + tuple(p.shape[len(new):]))
                phys_ct.append(p)
            cg = keep or any(c.requires_grad for c in flat_ct) if create_graph is None else create_graph
            gs = engine.grad(outs_phys, [i.leaf for i in inputs], phys_ct, retain_graph=retain_graph,
                             create_graph=cg, allow_unused=True, is_grads_batched=bool(new))
            res = []
            for i, g in zip(inputs, gs):
                if not new:
                    res.append(i.wrap(g))
                    continue
                # (new levels: their flattened batch dim first) -> the new levels' dims, then the leaf's
                if g is None:
                    g = torch.zeros((math.prod(sizes),) + tuple(i.leaf.shape), dtype=i.leaf.dtype)
                t = _wrap_after(g.reshape(tuple(sizes) + tuple(g.shape[1:])), len(new), i.chain)
                for f in new:   # the old levels wrap innermost, then the new ones, lowest first
                    t = B.wrap(t, 0, f.level)
                res.append(t)
        return tree_unflatten(res, spec)

    primal_out = tree_unflatten([_detach(o, keep) for o in flat_out], out_spec)
    if has_aux:
        return primal_out, vjp_fn, tree_map(lambda a: _detach(a, keep) if isinstance(a, Tensor) else a, aux)
    return primal_out, vjp_fn


def _wrap_after(g: Tensor, k: int, chain: list):
    """``g`` (``k`` new batch dims first, then a leaf's physical dims) wrapped in the leaf's ``chain``: each
    wrapper's batch dim is found k dims further along, past the new dims."""
    t = g
    for level, bdim in reversed(chain):
        t = B.wrap(t, bdim + k, level)
    return t


# ----- grad ----------------------------------------------------------------------------------------------

def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """``func``'s gradient with respect to the positional arguments ``argnums``, and its value."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "grad_and_value")
        with _Transform(), _gm.enable_grad():
            chosen = tuple(args[n] for n in nums) if isinstance(nums, tuple) else args[nums]
            flat, spec = tree_flatten(chosen)
            for t in flat:
                if not isinstance(t, Tensor):
                    raise RuntimeError(f"grad_and_value(f)(*args): Expected argnums={argnums} to point to Tensors "
                                       f"(or nested structures of Tensors), got {type(t)}")
            inputs = [_Input(t) for t in flat]
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
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, "
                                       "aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            phys, _ = B.to_front(out)
            keep = _keep_graph(inputs, [phys])
            if phys._requires_grad:
                gs = engine.grad([phys], [i.leaf for i in inputs], [torch.ones_like(phys)], retain_graph=keep,
                                 create_graph=keep, allow_unused=True)
            else:
                gs = [None] * len(inputs)
            grads = tree_unflatten([i.wrap(g) for i, g in zip(inputs, gs)], spec)
        value = _detach(out, keep)
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
    if ps != ts:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {ps} and tangents with structure {ts}")
    for p, t in zip(fp, ft):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to be a tuple of Tensors, got "
                               f"{type(p if not isinstance(p, Tensor) else t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape. "
                               f"Got primal of shape {tuple(p.shape)} and tangent of shape {tuple(t.shape)}")
        if p.dtype != t.dtype:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same dtype. "
                               f"Got primal of dtype {p.dtype} and tangent of dtype {t.dtype}")
    return fp, ft, ps


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product by forward-mode AD (``(..., aux)`` with
    ``has_aux``)."""
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict is not supported yet")
    fp, ft, spec = _check_tangents(primals, tangents)
    if fwd_state.level:
        return _jvp_by_double_vjp(func, fp, ft, spec, has_aux)
    with _Transform():
        with fwAD.dual_level():
            duals = []
            for p, t in zip(fp, ft):
                pp, levels = B.to_front(p)
                tp, _ = B.to_front(t, [B.frame_of(lv) for lv in levels])
                duals.append(B.from_front(fwAD.make_dual(pp, tp), levels))
            out = func(*tree_unflatten(duals, spec))
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("jvp(f, primals, tangents): output of function f should be a tuple: (output, "
                                       "aux) if has_aux is True")
                out, aux = out
            flat_out, out_spec = tree_flatten(out)
            primal_outs, tangent_outs = [], []
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jvp(f, primals, tangents): Expected f(*primals) to return only tensors, got "
                                       f"unsupported type {type(o)}")
                po, levels = B.to_front(o)
                primal, tangent = fwAD.unpack_dual(po)
                if tangent is None:
                    tangent = torch.zeros_like(primal)
                primal_outs.append(B.from_front(primal, levels))
                tangent_outs.append(B.from_front(tangent, levels))
    res = (tree_unflatten(primal_outs, out_spec), tree_unflatten(tangent_outs, out_spec))
    return res + (aux,) if has_aux else res


def _jvp_by_double_vjp(func, fp, ft, spec, has_aux):
    """jvp inside another jvp (ember's forward mode has one level): J t as the vjp of u -> J^T u, a reverse pass
    over a reverse pass, which forward-mode tangents of the outer jvp flow through."""
    res = vjp(lambda *xs: func(*tree_unflatten(list(xs), spec)), *fp, has_aux=has_aux)
    out, fn = res[0], res[1]
    flat_out, out_spec = tree_flatten(out)
    zeros = [torch.zeros_like(o) for o in flat_out]
    _, fn2 = vjp(lambda *us: fn(tree_unflatten(list(us), out_spec)), *zeros)
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
            raise RuntimeError(f"Expected the tangents {ts} to have the same structure as the primals {ps}")
        for p, t in zip(fp, ft):
            if tuple(p.shape) != tuple(t.shape) or p.dtype != t.dtype:
                raise RuntimeError(f"Mismatch in tangent: expected shape {tuple(p.shape)} and dtype {p.dtype}, got "
                                   f"shape {tuple(t.shape)} and dtype {t.dtype}")
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


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """``func``'s Jacobian with respect to ``argnums`` by reverse mode: one vjp per output element, batched by
    vmap (``chunk_size`` elements at a time)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "jacrev")
        chosen = _chosen(args, nums)
        res = vjp(lambda *c: func(*_replace(args, nums, c if isinstance(nums, tuple) else c[0]), **kwargs),
                  *(chosen if isinstance(nums, tuple) else (chosen,)), has_aux=has_aux)
        out, fn = res[0], res[1]
        flat_out, out_spec = tree_flatten(out)
        flat_in = tree_flatten(chosen)[0]
        sizes = [o.numel() for o in flat_out]
        total = sum(sizes)
        ref = flat_out[0]
        eye = torch.eye(total, dtype=ref.dtype, device=ref.device)
        basis = []
        start = 0
        for o, n in zip(flat_out, sizes):
            basis.append(eye[:, start:start + n].reshape((total,) + tuple(o.shape)))
            start += n
        cols = vmap(lambda *b: tree_flatten(fn(tree_unflatten(list(b), out_spec)))[0],
                    chunk_size=chunk_size)(*basis)
        # cols[j]: (total, *input_j.shape); rows of output i are [start_i, start_i + n_i)
        per_out = []
        start = 0
        for o, n in zip(flat_out, sizes):
            blocks = [c[start:start + n].reshape(tuple(o.shape) + tuple(x.shape)) for c, x in zip(cols, flat_in)]
            start += n
            in_spec = tree_flatten(chosen)[1]
            per_out.append(tree_unflatten(blocks, in_spec))
        jac = tree_unflatten(per_out, out_spec)
        return (jac, res[2]) if has_aux else jac
    return wrapper


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """``func``'s Jacobian with respect to ``argnums`` by forward mode: one jvp per input element, batched by
    vmap."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "jacfwd")
        chosen = _chosen(args, nums)
        flat_in, in_spec = tree_flatten(chosen)
        sizes = [x.numel() for x in flat_in]
        total = sum(sizes)
        ref = flat_in[0]
        eye = torch.eye(total, dtype=ref.dtype, device=ref.device)
        basis = []
        start = 0
        for x, n in zip(flat_in, sizes):
            basis.append(eye[:, start:start + n].reshape((total,) + tuple(x.shape)))
            start += n
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
