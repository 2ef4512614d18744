"""Recording what a picture needs while the program runs.

``record_modules(model)``: forward pre-hooks and hooks tag each graph node with the qualified name of the
module whose forward made it (``node.metadata``), for ``make_dot(..., group_modules=True)``.

``record()``: while active, each op node made is told to the recorder (the forward value of its result,
copied while small) and gets node hooks, so every backward run through it is logged in the engine's own
order (``node.register_prehook`` / ``register_hook``), gradients included.
"""
from __future__ import annotations

import collections
import weakref
from typing import Any

import numpy as np

from ._graph import MODULE_KEY, PARAM_KEY, is_leaf_node, is_tensor, next_nodes, sequence_nr

SMALL = 64   # tensors with at most this many elements are shown with their values


# ----- values as the page shows them ---------------------------------------------------------------

def fmt_array(a: np.ndarray) -> str:
    if a.size == 1:
        v = a.reshape(()).item()
        return f"{v:g}" if isinstance(v, float) else str(v)
    return np.array2string(a, precision=4, separator=", ", threshold=SMALL, max_line_width=72,
                           suppress_small=True)


def snap(t: Any) -> dict | None:
    """Shape, dtype and (for a small tensor) its values as text, taken now (later in-place ops on the
    tensor do not change what was recorded)."""
    if t is None:
        return None
    shape = [int(s) for s in t.shape]
    out = {"shape": shape, "dtype": str(t.dtype).replace("torch.", "").replace("ember.", "")}
    n = int(np.prod(shape)) if shape else 1
    if n <= SMALL:
        data = getattr(t, "_data", None)
        if data is None:   # a torch tensor
            data = t.detach().cpu().numpy()
        out["text"] = fmt_array(np.asarray(data))
    return out


# ----- module grouping -------------------------------------------------------------------------------

def _next_seq() -> int:
    from ..autograd import graph
    return next(graph._seq)   # the next node made gets a larger number (gaps are harmless)


def _flat_tensors(obj: Any) -> list:
    out, stack = [], [obj]
    while stack:
        o = stack.pop()
        if is_tensor(o):
            out.append(o)
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, dict):
            stack.extend(o.values())
    return out


class record_modules:
    """Tag the graph nodes each submodule's forward makes with the module's qualified name (``"0"``,
    ``"encoder.layer1"``), through forward pre-hooks and hooks. A handle: ``.remove()``, or use it as a
    context manager around the forward. The root module gets no tag (it is the whole picture)."""

    def __init__(self, model: Any) -> None:
        self.handles: list = []
        self._starts: dict = collections.defaultdict(list)
        for qual, m in model.named_modules():
            if not qual:
                continue
            own = {id(p): f"{qual}.{n}" for n, p in m.named_parameters(recurse=False)}
            self.handles.append(m.register_forward_pre_hook(self._pre_hook(m)))
            self.handles.append(m.register_forward_hook(self._hook(m, qual, own)))

    def _pre_hook(self, m):
        def pre(module, args):
            self._starts[id(m)].append(_next_seq())
        return pre

    def _hook(self, m, qual: str, own: dict):
        def hook(module, args, output):
            starts = self._starts[id(m)]
            if not starts:
                return None
            start = starts.pop()
            stack = [t.grad_fn for t in _flat_tensors(output) if t.grad_fn is not None]
            seen: set = set()
            while stack:
                fn = stack.pop()
                if id(fn) in seen:
                    continue
                seen.add(id(fn))
                leaf = is_leaf_node(fn)
                if leaf and id(fn.variable) not in own:
                    continue   # the caller's input (its AccumulateGrad is made at first use): not this module's
                if not leaf and sequence_nr(fn) < start:
                    continue   # made before this forward: not this module's
                md = fn.metadata
                md.setdefault(MODULE_KEY, qual)   # an inner module tagged it first: keep the innermost
                if leaf and id(fn.variable) in own:
                    md[PARAM_KEY] = own[id(fn.variable)]
                if not leaf:
                    stack.extend(n for _, n in next_nodes(fn))
            return None
        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []

    def __enter__(self) -> "record_modules":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# ----- forward values and backward runs ----------------------------------------------------------------

class Run:
    """One backward run as the engine did it: ``events`` in order, each ``(phase, node, data)``."""

    def __init__(self, task_id: int) -> None:
        self.task_id = task_id
        self.events: list = []
        self.root_grads: dict = {}   # root node -> the gradients it was given (tensors)

    def executed(self) -> list:
        return [n for phase, n, _ in self.events if phase == "post"]

    def roots(self) -> list:
        """The nodes the run started from: executed nodes no other executed node sends gradients to."""
        nodes = self.executed()
        reached = {id(m) for n in nodes for _, m in next_nodes(n)}
        return [n for n in nodes if id(n) not in reached]


def _task():
    from ..autograd.graph import current_task
    return current_task()


def _task_id() -> int:
    task = _task()
    return -1 if task is None else task.id


class Recorder:
    """Forward values and backward runs of the graph nodes made while it is active (see ``record``)."""

    def __init__(self, max_runs: int = 8) -> None:
        self.values: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        # AccumulateGrad -> [(sequence number of the node that read it, version, value)]
        self.leaf_values: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self.runs: collections.deque = collections.deque(maxlen=max_runs)
        self.active = False
        self._hooked: "weakref.WeakSet" = weakref.WeakSet()

    # forward: told by ember's op recorder (autograd.graph.NODE_OBSERVERS)
    def observe(self, node, t) -> None:
        """``t``: the new node's output, or a tuple of its outputs (multi-output views, custom Functions)."""
        if not self.active:
            return
        self.values[node] = [snap(o) if is_tensor(o) else None for o in t] if isinstance(t, (tuple, list)) \
            else snap(t)
        if node not in self._hooked:
            self.hook(node)
        seq = sequence_nr(node)
        for _, n in next_nodes(node):   # leaves' AccumulateGrad, custom Functions' nodes
            if n not in self._hooked:
                self.hook(n)
            if is_leaf_node(n):
                self._leaf_seen(n, seq)

    def _leaf_seen(self, acc, seq: int) -> None:
        """The leaf's value as this forward reads it: a new snapshot only when its version changed (an
        optimizer step between forwards), so a page shows the value its graph was computed from."""
        var = acc.variable
        vc = getattr(var, "_vc", None)
        version = vc[0] if vc is not None else None
        hist = self.leaf_values.get(acc)
        if hist is None:
            hist = self.leaf_values[acc] = []
        elif hist[-1][1] == version:
            return
        hist.append((seq, version, snap(var)))

    def leaf_value(self, acc, first_use: int) -> dict | None:
        """The leaf's recorded value at the first node (``first_use``: its sequence number) that read it."""
        hist = self.leaf_values.get(acc)
        if not hist:
            return None
        best = hist[0][2]
        for seq, _, s in hist:
            if seq <= first_use:
                best = s
        return best

    def hook(self, node) -> tuple:
        """Log every backward run through ``node`` (a no-op once the recorder is stopped). Returns the
        two hook handles."""
        self._hooked.add(node)
        ref = weakref.ref(self)

        def pre(grad_outputs):
            rec = ref()
            if rec is not None and rec.active:
                rec._event("pre", node, {"grad_outputs": [snap(g) for g in grad_outputs]})
                task = _task()
                if task is not None and node in (task._roots or ()):
                    # the gradient the run started from, so the page's own runs can use the same one
                    rec.runs[-1].root_grads[node] = [None if g is None else g.detach().clone()
                                                     for g in grad_outputs]

        def post(grad_inputs, grad_outputs):
            rec = ref()
            if rec is not None and rec.active:
                data = {"grad_inputs": [snap(g) for g in grad_inputs]}
                if is_leaf_node(node):
                    data["grad"] = snap(node.variable.grad)   # .grad after this accumulation
                rec._event("post", node, data)

        return node.register_prehook(pre), node.register_hook(post)

    def _event(self, phase: str, node, data: dict) -> None:
        tid = _task_id()
        if not self.runs or self.runs[-1].task_id != tid:
            self.runs.append(Run(tid))
        self.runs[-1].events.append((phase, node, data))

    def last_run(self, roots: list | None = None) -> Run | None:
        """The latest run that executed all of ``roots`` (any run when None)."""
        for run in reversed(self.runs):
            done = {id(n) for n in run.executed()}
            if roots is None or all(id(r) in done for r in roots):
                return run
        return None

    def start(self) -> "Recorder":
        from ..autograd.graph import NODE_OBSERVERS
        self.active = True
        NODE_OBSERVERS.append(self.observe)
        _recorders.append(self)
        return self

    def stop(self) -> None:
        from ..autograd.graph import NODE_OBSERVERS
        self.active = False
        if self.observe in NODE_OBSERVERS:
            NODE_OBSERVERS.remove(self.observe)
        if self in _recorders:
            _recorders.remove(self)
        global _last
        _last = self

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_recorders: list = []
_last: Recorder | None = None


def record() -> Recorder:
    """Context manager: remember the forward value of every op node made inside it and log each backward
    run through those nodes, for ``to_html`` (which otherwise shows intermediate results by shape only and
    runs its own backward)."""
    return Recorder()


def current_recorders() -> list:
    """Recorders to look in: the active ones, newest first, then the last one stopped."""
    out = [r for r in reversed(_recorders) if r.active]
    if _last is not None and _last not in out:
        out.append(_last)
    return out
