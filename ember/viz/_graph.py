"""Walking an autograd graph: nodes, edges, saved tensors, leaves, module tags.

Only the graph API that PyTorch has too is read (``grad_fn``, ``next_functions``, ``variable``,
``_saved_<name>``, ``metadata``), so these helpers also walk a ``torch`` graph. Every walk is iterative:
a graph may be a chain of a million nodes.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable

MODULE_KEY = "ember.viz.module"   # node.metadata key holding the qualified name of the module that made it
PARAM_KEY = "ember.viz.param"     # an AccumulateGrad's metadata: its parameter's qualified name ("0.weight")
_SAVED = "_saved_"
_CO_OPTIMIZED = 0x1   # inspect.CO_OPTIMIZED: a function's frame (fast locals)


def is_tensor(obj: Any) -> bool:
    """A tensor of ember or of torch (duck-typed: viz never imports torch)."""
    return hasattr(obj, "grad_fn") and hasattr(obj, "requires_grad") and hasattr(obj, "shape")


def as_list(outputs: Any) -> list:
    """One tensor, or a tuple/list/dict of them, as a list of tensors."""
    if is_tensor(outputs):
        return [outputs]
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    out = list(outputs)
    for t in out:
        if not is_tensor(t):
            raise TypeError(f"ember.viz: expected tensors as outputs, got {type(t).__name__}")
    return out


def node_name(fn: Any) -> str:
    """The node's class name, as PyTorch names it (``MulBackward0``, ``AccumulateGrad``)."""
    return type(fn).__name__


def is_leaf_node(fn: Any) -> bool:
    return hasattr(fn, "variable")


def next_nodes(fn: Any) -> list:
    """The nodes ``fn`` sends gradients to, with the input position: ``[(k, node), ...]``."""
    out = []
    for k, edge in enumerate(getattr(fn, "next_functions", ()) or ()):
        if edge is not None and edge[0] is not None:
            out.append((k, edge[0]))
    return out


def collect(roots: Iterable[Any]) -> list:
    """Every node reachable from ``roots`` (grad_fn nodes), each once, in depth-first discovery order."""
    seen: set = set()
    order: list = []
    stack = [r for r in reversed(list(roots)) if r is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        order.append(fn)
        for _, nxt in reversed(next_nodes(fn)):
            if id(nxt) not in seen:
                stack.append(nxt)
    return order


def topo_inputs_first(nodes: list) -> list:
    """``nodes`` ordered so that every node comes after the nodes it reads from (its next_functions)."""
    index = {id(n): n for n in nodes}
    done: set = set()
    order: list = []
    for start in nodes:
        if id(start) in done:
            continue
        stack = [(start, False)]
        while stack:
            fn, expanded = stack.pop()
            if expanded:
                if id(fn) not in done:
                    done.add(id(fn))
                    order.append(fn)
                continue
            if id(fn) in done:
                continue
            stack.append((fn, True))
            for _, nxt in next_nodes(fn):
                if id(nxt) in index and id(nxt) not in done:
                    stack.append((nxt, False))
    return order


def sequence_nr(fn: Any) -> int:
    """When the node was made (ember: ``_seq``; torch: ``_sequence_nr()``); -1 when unknown."""
    s = getattr(fn, "_seq", None)
    if s is None and hasattr(fn, "_sequence_nr"):
        try:
            s = fn._sequence_nr()
        except Exception:   # noqa: BLE001 - an exotic node: order it first
            s = None
    return -1 if s is None else s


_saved_attr_names: dict = {}


def saved_entries(fn: Any) -> list:
    """``[(name, value)]`` for what ``fn`` saved for backward: tensors, tuples of tensors, and the
    non-tensor attributes (sizes, exponents...). Entries that cannot be read (not saved by this node,
    or freed by a backward) are left out."""
    cls = type(fn)
    names = _saved_attr_names.get(cls)
    if names is None:
        names = _saved_attr_names[cls] = [a for a in dir(cls) if a.startswith(_SAVED)
                                          and not callable(getattr(cls, a, None))]
        if not names:   # torch's C++ nodes keep their attributes off the class: read the instance
            names = _saved_attr_names[cls] = [a for a in dir(fn) if a.startswith(_SAVED)]
    out = []
    for attr in names:
        try:
            val = getattr(fn, attr)
        except (AttributeError, RuntimeError):
            continue
        if callable(val) and not is_tensor(val):
            continue
        out.append((attr[len(_SAVED):], val))
    return out


def tensor_bytes(t: Any) -> int:
    n = 1
    for s in t.shape:
        n *= int(s)
    return n * int(t.element_size())


def size_str(shape: Any) -> str:
    """torchviz's size format: ``(3, 3)``, ``()`` for a 0-d tensor."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def dtype_str(t: Any) -> str:
    return str(t.dtype).replace("torch.", "").replace("ember.", "")


def caller_names(depth: int = 2) -> dict:
    """``{id(object): name}`` for the tensors and grad_fn nodes held by variables of a caller's frame, so
    pictures can say ``x`` and ``y`` (a leaf by its tensor, a result by its grad_fn)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return {}
    local = frame.f_locals
    names = names_in(local)
    if (sys.version_info < (3, 13) and frame.f_code.co_flags & _CO_OPTIMIZED and type(local) is dict
            and local is not frame.f_globals):
        # A function's frame on Python < 3.13 caches this snapshot of its fast locals on the frame: it
        # would keep the caller's tensors (and their graphs) alive after a `del`. Only there is the dict a
        # copy (the next read refills it); a class body's, a module's or exec's locals dict *is* the
        # variables, and 3.13's proxy writes through: those are never touched.
        local.clear()
    del local, frame
    return names


def names_in(namespace: dict) -> dict:
    names: dict = {}
    for k, v in list(namespace.items()):
        if k.startswith("_") or not is_tensor(v):
            continue
        fn = v.grad_fn
        key = id(v) if fn is None else id(fn)
        names.setdefault(key, k)
    return names


def param_names(params: Any) -> dict:
    """``{id(tensor): name}`` from a dict of named tensors, an iterable of (name, tensor) pairs, or a
    module (its ``named_parameters()``)."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters"):
        params = dict(params.named_parameters())
    items = params.items() if isinstance(params, dict) else params
    return {id(v): k for k, v in items}


def module_of(fn: Any) -> str | None:
    """The qualified name of the module whose forward made ``fn`` (see ``record_modules``)."""
    try:
        md = fn.metadata
    except (AttributeError, RuntimeError):
        return None
    return md.get(MODULE_KEY) if md else None


def param_name_of(fn: Any) -> str | None:
    """The qualified parameter name ``record_modules`` gave a leaf's AccumulateGrad node, if any."""
    try:
        md = fn.metadata
    except (AttributeError, RuntimeError):
        return None
    return md.get(PARAM_KEY) if md else None
