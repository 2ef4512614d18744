"""``autograd.graph.summary(output)``: what a graph holds, in numbers (ember's own addition).

Nodes by type, the tensors saved for backward and their bytes, depth, leaves, the largest saved tensors
with the node that saved them, and a hint when the graph looks like one that grows every iteration
(``total_loss += loss`` keeps each iteration's graph alive). Iterative: a graph may be a million nodes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

_LEAK_CHAIN = 8   # this many accumulating adds in a row from the output: a running total keeping graphs
_TERM_NODES = 5   # ... when each addition brings at least this many nodes on average (a forward pass)


@dataclass
class GraphSummary:
    """The figures ``summary`` returns; ``print()`` it for a table."""
    num_nodes: int
    nodes_by_type: Counter
    num_saved: int
    saved_bytes: int
    depth: int
    leaves: list = field(default_factory=list)          # (shape, dtype) of each leaf that requires grad
    largest_saved: list = field(default_factory=list)   # (bytes, node name, attribute, shape, dtype)
    add_chain: int = 0
    hints: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"graph: {self.num_nodes} nodes, depth {self.depth}, {len(self.leaves)} leaves, "
                 f"{self.num_saved} saved tensors ({_human(self.saved_bytes)})"]
        for name, n in self.nodes_by_type.most_common():
            lines.append(f"  {n:>8}  {name}")
        if self.largest_saved:
            lines.append("largest saved tensors:")
            for b, node, attr, shape, dtype in self.largest_saved:
                lines.append(f"  {_human(b):>10}  {node}.{attr}  {list(shape)} {dtype}")
        lines += [f"hint: {h}" for h in self.hints]
        return "\n".join(lines)

    __repr__ = __str__


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _saved(fn, names_cache: dict) -> list:
    cls = type(fn)
    names = names_cache.get(cls)
    if names is None:
        names = names_cache[cls] = [a for a in dir(cls) if a.startswith("_saved_")
                                    and not callable(getattr(cls, a, None))]
    out = []
    for a in names:
        try:
            v = getattr(fn, a)
        except (AttributeError, RuntimeError):   # not saved by this node, or freed by a backward
            continue
        vals = v if isinstance(v, (tuple, list)) else (v,)
        out.extend((a[7:], x) for x in vals if hasattr(x, "_data") and hasattr(x, "grad_fn"))
    if hasattr(cls, "saved_tensors"):   # a custom Function's ctx.save_for_backward
        try:
            vals = fn.saved_tensors
        except (AttributeError, RuntimeError):   # freed by a backward
            vals = ()
        out.extend((f"saved_tensors[{i}]", x) for i, x in enumerate(vals) if x is not None and hasattr(x, "_data"))
    return out


def summary(output, top: int = 5, freed_mark=None) -> GraphSummary:
    """Figures about the graph behind ``output`` (a tensor, or a tuple/list of tensors)."""
    from .._tensor import Tensor
    outs = [output] if isinstance(output, Tensor) else list(output)
    for t in outs:
        if not isinstance(t, Tensor):
            raise TypeError(f"summary(): expected Tensor outputs, got {type(t).__name__}")
    roots = [t.grad_fn for t in outs if t.grad_fn is not None]
    seen: dict = {}
    order: list = []
    stack = list(roots)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        order.append(fn)
        for e in fn.next_functions:
            if e[0] is not None and id(e[0]) not in seen:
                stack.append(e[0])
    by_type = Counter(type(fn).__name__ for fn in order)

    # depth: longest chain of nodes from an output, in reverse topological order (inputs after users)
    indeg: Counter = Counter()
    for fn in order:
        for e in fn.next_functions:
            if e[0] is not None:
                indeg[id(e[0])] += 1
    depth_of = {id(r): 1 for r in roots}
    ready = [fn for fn in order if indeg[id(fn)] == 0]
    topo: list = []   # users before their inputs
    while ready:
        fn = ready.pop()
        topo.append(fn)
        d = depth_of.get(id(fn), 1)
        for e in fn.next_functions:
            n = e[0]
            if n is None:
                continue
            if depth_of.get(id(n), 0) < d + 1:
                depth_of[id(n)] = d + 1
            indeg[id(n)] -= 1
            if indeg[id(n)] == 0:
                ready.append(n)
    depth = max(depth_of.values(), default=0)

    cache: dict = {}
    saved: dict = {}   # id of the array -> (bytes, node, attr, shape, dtype, the array kept alive)
    leaves = []
    for fn in order:
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.append((tuple(var.shape), var.dtype))
        for attr, t in _saved(fn, cache):
            key = id(t._data)
            if key not in saved:
                saved[key] = (int(t._data.nbytes), type(fn).__name__, attr, tuple(t.shape), t.dtype, t._data)
    largest = sorted((s[:5] for s in saved.values()), key=lambda s: -s[0])[:top]

    # a running total: AddBackward0 nodes, each fed by the previous one through either input
    # (total = total + loss, total = loss + total, total += loss): the longest such chain from the output
    run: dict = {}
    for fn in reversed(topo):   # inputs first
        if type(fn).__name__ == "AddBackward0":
            run[id(fn)] = 1 + max((run.get(id(e[0]), 0) for e in fn.next_functions if e[0] is not None), default=0)
    chain = run.get(id(roots[0]), 0) if len(roots) == 1 else 0
    # A sum of many small terms built in one step (t = t + (a * i).sum()) is a chain too; a running total of
    # losses carries a whole forward pass per addition, or graphs that a backward already freed.
    big_terms = len(order) >= _TERM_NODES * chain
    # whether a backward without retain_graph already released what some node saved (graph.FREED marks it)
    freed = freed_mark is not None and any(getattr(fn, "_saved", None) is freed_mark for fn in order)
    hints = []
    if chain >= _LEAK_CHAIN and (big_terms or freed):
        hints.append(f"the output ends in a chain of {chain} additions, each holding a graph of its own: this "
                     "looks like a running total (`total_loss += loss`) that keeps every iteration's graph alive; "
                     "accumulate `loss.item()` (or `loss.detach()`) instead")
    return GraphSummary(len(order), by_type, len(saved), sum(s[0] for s in saved.values()), depth, leaves,
                        largest, chain, hints)
