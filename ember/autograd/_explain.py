"""``autograd.explain(tensor, output=None)``: why a tensor's ``.grad`` is None, in a few plain lines.

ember's own addition (PyTorch has no such function). It reads only what the graph already holds, plus
two cheap marks made when a tensor is cut from the graph: ``detach()``/``.data`` remember the user's
file and line, and an op run under ``no_grad``/``inference_mode`` on an input that requires grad
remembers which op it was (not the line: finding it would slow every such op). Under anomaly mode,
each graph node also knows the line that made it, and explain quotes it.
"""
from __future__ import annotations

import sys

from .. import _dtype as D
from .._device import backend_of
from .._origin import created_at, site
from .._tensor import Tensor
from ._primitive import Unsaved

__all__ = ["explain", "Explanation"]

_MAX_LISTED = 5


class Explanation(str):
    """explain()'s answer: a plain string whose repr is itself, so a REPL or notebook shows the lines."""

    def __repr__(self) -> str:
        return str(self)


def explain(tensor: Tensor, output: Tensor | None = None) -> Explanation:
    """Why ``tensor.grad`` is (or will be) None, and, with ``output``, whether and why ``output``'s
    gradient cannot reach ``tensor``. Returns the explanation as a string (``print()`` it, or just
    evaluate it in a REPL)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"explain(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if output is not None and not isinstance(output, Tensor):
        raise TypeError(f"explain(): argument 'output' must be Tensor or None, not {type(output).__name__}")
    names = _Names(sys._getframe(1))
    me = names.of(tensor, "the tensor")
    lines = [f"{me}: {_summary(tensor)}"]
    lines += _about_tensor(tensor, me, names)
    if output is not None:
        lines += _about_output(tensor, output, me, names)
    return Explanation("\n".join(lines))


# ----- the tensor on its own -----------------------------------------------------------------------

def _summary(t: Tensor) -> str:
    kind = "leaf" if t.grad_fn is None else f"non-leaf, grad_fn=<{t.grad_fn.name()}>"
    return (f"shape {list(t._data.shape)}, {t.dtype}, {kind}, requires_grad={t._requires_grad}, "
            f".grad is {'None' if _grad(t) is None else 'set'}")


def _grad(t: Tensor):
    m = t._meta
    return None if m is None else m.grad


def _about_tensor(t: Tensor, me: str, names) -> list:
    if not t._requires_grad:
        return _why_no_grad(t, me)
    if t.grad_fn is not None:
        if t.retains_grad:
            return ["It retains its gradient (retain_grad()): .grad is filled when a backward reaches it."]
        at = created_at(t.grad_fn)
        out = [f"It is not a leaf{' (made at ' + at + ')' if at else ''}: backward() fills .grad only on leaf "
               f"tensors. Call {_call(me, 'retain_grad()')} before backward() to keep its gradient, or read the "
               ".grad of the leaf it was computed from."]
        leaves = _leaves_of(t.grad_fn)
        if leaves:
            listed = ", ".join(names.of(v, f"a leaf of shape {list(v._data.shape)}") for v in leaves[:_MAX_LISTED])
            more = f" and {len(leaves) - _MAX_LISTED} more" if len(leaves) > _MAX_LISTED else ""
            out.append(f"It was computed from {'these leaves' if len(leaves) > 1 else 'the leaf'} that "
                       f"require{'' if len(leaves) > 1 else 's'} grad: {listed}{more}.")
        return out
    if t._base is not None and t._view_nograd:
        return ["It is a view made under torch.no_grad() of a tensor that requires grad: it has no history, so "
                "no gradient reaches it or its base through it."]
    if _grad(t) is None:
        return ["It is a leaf that requires grad: its .grad is None until a backward() reaches it (or after "
                "zero_grad() set it to None)."]
    return [f"It is a leaf that requires grad and its .grad holds a gradient of shape {list(_grad(t).shape)}."]


def _why_no_grad(t: Tensor, me: str) -> list:
    dt = t._data.dtype
    if dt.kind not in "fcV":
        word = "a boolean" if dt.kind == "b" else "an integer"
        return [f"It is {word} tensor ({t.dtype}): only floating point and complex tensors can require "
                "gradients, so it never gets a .grad. Results of argmax, comparisons, round-to-int casts and "
                "indices carry no gradient; a float result computed from it can require grad only through "
                "other, float, inputs."]
    origin = getattr(t, "_origin", None)
    if isinstance(origin, tuple):
        how, where = origin
        at = f" at {site(*where)}" if where else ""
        return [f"It was made by {how}{at}: that returns a tensor with no history that does not require grad, "
                "so no gradient reaches it and none flows through it to the original. Use the original tensor "
                f"instead (or call {_call(me, 'requires_grad_()')} to make it a new leaf of its own)."]
    if origin is not None:   # a Primitive: computed with gradient recording off
        return [f"It was computed by '{origin.name}' with gradient recording off (inside torch.no_grad(), "
                "torch.inference_mode() or set_grad_enabled(False)) from an input that requires grad: ops there "
                "record no graph, so it does not require grad. Compute it outside that block if its gradient "
                "is needed (ember does not record the line, to keep no_grad ops fast)."]
    if t._inference:
        return ["It is an inference tensor, made inside torch.inference_mode(): it can never require grad or "
                "join a graph. Make it outside the mode, or clone() it outside the mode."]
    return [f"It does not require grad: a tensor made without requires_grad=True (call "
            f"{_call(me, 'requires_grad_()')} before computing anything from it), or the result of ops none of "
            "whose inputs required grad."]


def _call(name: str, method: str) -> str:
    return f"{name}.{method}" if name.isidentifier() else f"tensor.{method}"


# ----- the tensor and an output ------------------------------------------------------------------------

def _node_of(t: Tensor):
    """The node a gradient for ``t`` would flow into, without making one (None: t is in no graph)."""
    if t.grad_fn is not None:
        return t.grad_fn
    if not t._requires_grad or (t._base is not None and t._view_nograd):
        return None
    m = t._meta
    return m.acc() if m is not None and m.acc is not None else None


def _reachable(root) -> list:
    """Every node of ``root``'s graph, root first (a loop over a stack: no recursion)."""
    seen = {root}
    order = [root]
    stack = [root]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
                stack.append(nxt)
    return order


def _leaves_of(root) -> list:
    return [n.variable for n in _reachable(root) if n.accumulates and getattr(n, "variable", None) is not None]


def _about_output(t: Tensor, output: Tensor, me: str, names) -> list:
    out_name = names.of(output, "the output")
    root = output.grad_fn
    if root is None:
        if not output._requires_grad:
            why = _why_no_grad(output, out_name)[0]
            return [f"{out_name} does not require grad, so no gradient flows from it at all. About {out_name}: "
                    + why]
        if output is t:
            return [f"{out_name} is the tensor itself."]
        return [f"{out_name} is a leaf: it was not computed from {me}."]
    nodes = _reachable(root)
    target = _node_of(t)
    if target is not None and target in set(nodes):
        if t.grad_fn is None:
            return [f"{out_name} depends on {me}: {out_name}.backward() accumulates into {me}.grad."]
        return [f"{out_name} depends on {me}: gradient flows through it (use {_call(me, 'retain_grad()')} "
                "to keep it)."]
    lines = [f"{out_name} does not depend on {me} through the graph: no gradient from {out_name} reaches it."]
    # A leaf of the output's graph that shares the tensor's memory: the output used a detached copy.
    for n in nodes:
        v = getattr(n, "variable", None) if n.accumulates else None
        if v is not None and v is not t and _shares_memory(v, t):
            origin = getattr(v, "_origin", None)
            how = ""
            if isinstance(origin, tuple):
                how = f", made by {origin[0]}" + (f" at {site(*origin[1])}" if origin[1] else "")
            lines.append(f"{out_name} uses {names.of(v, 'another leaf')} instead, which shares {me}'s memory{how}: "
                         f"its gradient lands in that tensor's .grad, not in {me}'s.")
            return lines
    if not t._requires_grad:
        lines.append(f"{me} does not require grad (see above), so it is no part of any graph.")
        return lines
    cuts = _cut_inputs(nodes, t, names)
    if cuts:
        lines.append(f"Inputs of {out_name}'s graph that do not require grad (the path from {me} may have been "
                     "cut there by detach(), .data, no_grad or a non-differentiable op):")
        lines += [f"  - {c}" for c in cuts[:_MAX_LISTED]]
        if len(cuts) > _MAX_LISTED:
            lines.append(f"  ... and {len(cuts) - _MAX_LISTED} more")
    else:
        lines.append(f"{me} is not used in computing {out_name}.")
    return lines


def _shares_memory(a: Tensor, b: Tensor) -> bool:
    da, db = a._data, b._data
    if type(da) is type(db):
        return bool(backend_of(da).may_share_memory(da, db))
    return False


def _saved_input(node, i: int):
    """Input ``i`` of a primitive's node, when the node saved it for backward (else None)."""
    saved = getattr(node, "_saved", None)
    if not isinstance(saved, list) or i >= len(saved) or saved[i] is None:   # (a subclass: hooked, or extras)
        return None
    v = saved[i][0]
    return v if isinstance(v, Tensor) else None


def _cut_inputs(nodes, t: Tensor, names) -> list:
    """Float inputs of the graph's ops that have no edge, same shape as ``t`` first."""
    same, other = [], []
    for n in nodes:
        metas = getattr(n, "_in", None) or getattr(n, "_in_meta", None)
        if not metas:
            continue
        pos = getattr(getattr(n, "_prim", None), "edge_pos", None)
        edges = list(n.next_functions)
        for k, (nxt, _) in enumerate(edges):
            i = k if pos is None else pos[k]
            m = metas[i] if i < len(metas) else None
            if nxt is not None:
                continue
            if type(m) is tuple:
                shape, dt = m
            elif type(m) is Unsaved:   # a primitive's record of an input it did not save
                shape, dt = m.shape, m.dtype
            else:
                continue
            if not D.from_numpy_dtype(dt).is_floating_point:
                continue
            at = created_at(n)
            text = (f"input {i} of {n.name()} (shape {list(shape)}, {D.from_numpy_dtype(dt)._name})"
                    + (f", made at {at}" if at else ""))
            v = _saved_input(n, i)
            if v is not None:   # the op kept the input itself: say what it is and how it was cut
                text += f": {names.of(v, 'a tensor')}, " + _why_no_grad(v, names.of(v, "tensor"))[0][0].lower() + \
                    _why_no_grad(v, names.of(v, "tensor"))[0][1:]
            (same if tuple(shape) == tuple(t._data.shape) else other).append(text)
    return same + other


class _Names:
    """Variable names the caller uses for tensors (its locals), to word the explanation."""

    def __init__(self, frame):
        self._vars = dict(frame.f_globals) if frame.f_locals is frame.f_globals else dict(frame.f_locals)

    def of(self, t: Tensor, default: str) -> str:
        hits = [k for k, v in self._vars.items() if v is t and not k.startswith("_")]
        return hits[0] if hits else default
