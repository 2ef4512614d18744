"""The backward engine: iterative, dependency-counted, ordered like PyTorch's (newest node first).

No recursion anywhere, so a 1,000,000-node chain back-propagates. Gradient buffers are popped as
soon as their node runs, and saved values are released unless ``retain_graph``.
Gradients flow as raw arrays in plain backward and as Tensors under ``create_graph``.
"""
from __future__ import annotations

import functools
import heapq
from contextlib import nullcontext


from .._device import backend_of
from .._origin import warn_once
from .._tensor import Tensor, make
from . import _batching, _levels, _profiling
from . import grad_mode as _gm
from ._views import edge_of
from .anomaly_mode import _anomaly, run_node_checked
from ._primitive import PrimNode
from .graph import ACCUMULATE_LOCK, GraphTask, _task_ids, _tls, check_hook_value, check_hook_values, leaf_grad_cast


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _wrap(g, create_graph):
    return g if create_graph else make(g)


def _root_grads(tensors, grad_tensors, create_graph, op, batched=False):
    roots = []
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    else:
        if not isinstance(grad_tensors, (list, tuple)):
            grad_tensors = (grad_tensors,)
        for g in grad_tensors:
            if g is not None and not isinstance(g, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if len(grad_tensors) != len(tensors):
            raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            # PyTorch's own (Python-level) assertion, hence its exception type
            raise AssertionError(f"{op}(): expected output {i} to be a Tensor, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if t._data.dtype.kind == "c":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            if batched:
                # PyTorch makes ones_like(output) and then fails to map over its dimension 0.
                raise ValueError(f"vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that "
                                 f"input is a Tensor of dimensionality {t._data.ndim} so expected in_dim to "
                                 f"satisfy 0 <= in_dim < {t._data.ndim}." if t._data.ndim == 0 else
                                 "ember: autograd.grad(is_grads_batched=True) needs a batched grad_output for "
                                 f"output {i}")
            if _profiling.NODE_HOOK is None:
                g = make(backend_of(t._data).ones_like(t._data))
            else:   # a profiler records: PyTorch's aten::ones_like
                g = _profiling.span("ones_like", _profiling.ONES_LIKE, (t,),
                                    lambda t=t: make(backend_of(t._data).ones_like(t._data)))
        elif batched:
            if g._data.ndim == 0:
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
            if g._data.shape[1:] != t._data.shape:
                raise RuntimeError(
                    "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
                    "batch dimension. The sizes of the remaining dimensions are expected to match the shape of "
                    f"corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of "
                    f"{g[0].shape} and output[{i}] has a shape of {t.shape}. If you only want some tensors in "
                    "`grad_output` to be considered batched, consider using vmap.")
        elif g._data.shape != t._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                               f"has a shape of {t.shape}.")
        if g._data.dtype != t._data.dtype:
            g = g.to(t.dtype)
        roots.append((edge_of(t), g if create_graph else g._data))
    return roots


def _topo_order(root_nodes, with_order: bool = True):
    """Dependency counts of every node reachable from the roots, and (``with_order``) one topological order."""
    deps = {}
    order = []
    seen = set(root_nodes)
    stack = list(seen)
    push = stack.append
    while stack:
        n = stack.pop()
        if with_order:
            order.append(n)
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            d = deps.get(nxt)
            if d is None:   # first edge into nxt: deps doubles as the seen-set of every non-root node
                deps[nxt] = 1
                if nxt not in seen:
                    push(nxt)
            else:
                deps[nxt] = d + 1
    return deps, order


def _needed_nodes(order, deps, targets):
    """Nodes that lie on a path to a target (the graph is pruned to these for autograd.grad)."""
    # Kahn's algorithm gives parents before children; walk it backwards.
    indeg = dict(deps)
    ready = [n for n in order if indeg.get(n, 0) == 0]
    topo = []
    while ready:
        n = ready.pop()
        topo.append(n)
        for nxt, _ in n.next_functions:
            if nxt is not None:
                indeg[nxt] -= 1
                if indeg[nxt] == 0:
                    ready.append(nxt)
    needed = set()
    add = needed.add
    for n in reversed(topo):   # children first: a node is needed if it is a target or feeds a needed node
        if n in targets:
            add(n)
            continue
        for nxt, _ in n.next_functions:
            if nxt is not None and nxt in needed:
                add(n)
                break
    return needed


def _store_retained(t: Tensor, g, create_graph: bool) -> None:
    gt = g.clone() if create_graph else make(backend_of(g).copy(g))
    with ACCUMULATE_LOCK:
        m = t._get_meta()
        m.grad = gt if m.grad is None else m.grad + gt


def run_backward(roots, retain_graph: bool, create_graph: bool, targets=None, accumulate=True, batched=False,
                 record=None):
    """Back-propagate ``roots`` [((node, nr), grad)]. With ``targets`` [(node, nr)], return the
    gradients arriving at those edges, computing only what they need; leaves are then left alone
    unless ``accumulate``. ``batched`` (with ``targets`` only): every gradient has a leading batch
    dimension (``autograd.grad(is_grads_batched=True)``). ``record`` (with ``create_graph``): whether the rules'
    operations are recorded (default: yes; torch.func's vjp runs the rules on batched cotangents unrecorded)."""
    root_nodes = [e[0] for e, _ in roots if e[0] is not None]
    # Nodes run in decreasing sequence number (the newest first, PyTorch's order): every edge leads from a node to
    # an older one (a node is made after the nodes of its inputs), so when a node comes up, every node that can still
    # send it a gradient has run: no dependency counts, no pass over the graph before it. A node that no gradient
    # reaches is never visited (PyTorch visits it and finds nothing to do). Only autograd.grad's pruning to what its
    # targets need walks the graph first.
    deps = needed = captured = target_nodes = None
    if targets is not None:
        deps, order = _topo_order(root_nodes)
        target_nodes = {n for n, _ in targets}
        needed = _needed_nodes(order, deps, target_nodes)
        captured = {}

    buffers = {}
    for (node, nr), g in roots:
        if node is None:
            continue
        buf = buffers.setdefault(node, [])
        if len(buf) <= nr:
            buf.extend([None] * (nr + 1 - len(buf)))
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    heap = [(-n._seq, n) for n in set(root_nodes)]
    heapq.heapify(heap)
    heappop, heappush, pop_buffer = heapq.heappop, heapq.heappush, buffers.pop
    # Rules compute masked-off inf/nan on purpose (PyTorch's where-formulas); NumPy must not warn.
    g0 = roots[0][1] if roots else None
    if g0 is not None and type(g0) is _batching.BatchedTensor:   # (torch.func's vjp: cotangents batched by vmap)
        g0 = _batching.peel(g0)[1]
    quiet = backend_of(g0._data if create_graph else g0).quiet() if g0 is not None else nullcontext()
    # Anomaly mode sends every node through _run_node, wrapped in its checks, and a recording profiler through its
    # ranges (one test per backward call, none per node); off, the loop is as before.
    profiling = _profiling.NODE_HOOK
    plain = needed is None and not _anomaly.enabled and profiling is None
    run_node = functools.partial(run_node_checked, _run_node) if _anomaly.enabled else _run_node
    if profiling is not None:
        run_node = functools.partial(profiling, run_node)
    # What hooks may ask about this backward (register_multi_grad_hook, checkpoint): set per run, not per node.
    task = GraphTask.__new__(GraphTask)
    task.id, task._deps, task._roots, task._needed = next(_task_ids), deps, root_nodes, needed
    task._accumulate = accumulate
    task._batched = batched
    task._callbacks = None
    # A node that can see the heap empty in a plain run knows that only the nodes it routes to run after it: the
    # compiled node then accumulates into its leaves itself (``CompiledFunctionBackward``), as AccumulateGrad would.
    task._heap = heap if plain else None
    outer_task, _tls.task = getattr(_tls, "task", None), task
    with _gm.set_grad_enabled(create_graph if record is None else record), quiet, _TaskScope(outer_task):
        node = heappop(heap)[1] if heap else None
        grads = pop_buffer(node, None)
        while node is not None:
            out = g = None   # (the last routed gradient must not stay referenced: AccumulateGrad steals lone ones)
            if plain and not node._intercept:
                out = node.apply(grads, create_graph, None)   # the common case: nothing to intercept
            else:
                out = run_node(node, grads, create_graph, needed, target_nodes, captured, accumulate, batched)
            if not retain_graph:
                node._release()
            # Route the gradients. The newest node this one reaches first (``new``) may run next without the heap
            # and its gradients without the buffer dict (``new_grads``) while no other node holds a newer place.
            new = new_grads = None
            if out:
                i = 0
                n_out = len(out)
                for nxt, nr in node.next_functions:
                    if i == n_out:
                        break
                    g = out[i]
                    i += 1
                    if nxt is None or g is None:
                        continue
                    if nxt is new:
                        buf = new_grads
                    else:
                        buf = buffers.get(nxt)
                        if buf is None:   # its first gradient
                            if nxt._seq >= node._seq:
                                raise RuntimeError(_ORDER_BROKEN.format(node.name(), nxt.name()))
                            if nr == 0:
                                buf = [g]
                            else:
                                buf = [None] * (nr + 1)
                                buf[nr] = g
                            if new is None:
                                new, new_grads = nxt, buf
                            elif nxt._seq > new._seq:
                                buffers[new] = new_grads
                                heappush(heap, (-new._seq, new))
                                new, new_grads = nxt, buf
                            else:
                                buffers[nxt] = buf
                                heappush(heap, (-nxt._seq, nxt))
                            continue
                    if len(buf) <= nr:
                        buf.extend([None] * (nr + 1 - len(buf)))
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
            if new is not None and (not heap or new._seq > -heap[0][0]):
                node, grads = new, new_grads
            else:
                if new is not None:
                    buffers[new] = new_grads
                    heappush(heap, (-new._seq, new))
                if heap:
                    node = heappop(heap)[1]
                    grads = pop_buffer(node)
                else:
                    node = None
        new = new_grads = grads = None
        if task._callbacks is not None:   # queue_callback: after the graph, in order (a callback may queue more)
            callbacks = task._callbacks
            i = 0
            while i < len(callbacks):
                callbacks[i]()
                i += 1
    return captured


_ORDER_BROKEN = ("ember internal error: backward node {} has an edge to {}, which is newer; the engine runs nodes from "
                 "the newest down and cannot order this graph")


class _TaskScope:
    """Restores the enclosing backward's task when this one ends (backward may run inside backward)."""

    __slots__ = ("outer",)

    def __init__(self, outer):
        self.outer = outer

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _tls.task = self.outer


def _run_node(node, grads, create_graph, needed, target_nodes, captured, accumulate, batched=False):
    th = node._tensor_hooks
    if th:
        for nr, hooks in th.items():
            if nr < len(grads) and grads[nr] is not None:
                for fn in list(hooks.values()):
                    if batched:   # as under PyTorch's vmap, a hook sees one row's gradient
                        grads[nr] = _by_rows(lambda g: _hook_grad(fn, g, create_graph), grads[nr], create_graph)
                        continue
                    r = fn(_wrap(grads[nr], create_graph))
                    if r is not None:
                        grads[nr] = check_hook_value(fn, grads[nr], r, create_graph)
    if node._retained and not batched:   # (PyTorch leaves a batched retained .grad unusable; ember skips it)
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and nr < len(grads) and grads[nr] is not None:
                _store_retained(t, grads[nr], create_graph)
    mask = None
    if target_nodes is not None and node in target_nodes:
        # As PyTorch: the gradient of a target is captured after tensor hooks, before node pre-hooks,
        # and the node itself runs only if it accumulates (and backward accumulates) or some other target
        # lies below it.
        for nr, g in enumerate(grads):
            captured[(node, nr)] = g
        mask = tuple(n is not None and n in needed for n, _ in node.next_functions)
        if not any(mask) and not (accumulate and node.accumulates):
            return None
    if node._pre_hooks:
        n = node.num_outputs   # as PyTorch, pre-hooks see one gradient per output of the node (None: none came)
        if len(grads) < n:
            grads = list(grads) + [None] * (n - len(grads))
        for fn in list(node._pre_hooks.values()):
            if batched:
                grads = _rows_apply(lambda gs: _pre_hook_grads(fn, gs, create_graph), grads, create_graph)
                continue
            r = fn(tuple(None if g is None else _wrap(g, create_graph) for g in grads))
            if r is not None:
                grads = check_hook_values(fn, grads, r, create_graph)
    if needed is not None and node not in needed:
        return None
    if needed is not None and mask is None:
        mask = tuple(n is not None and n in needed for n, _ in node.next_functions)
    if all(g is None for g in grads):
        return None
    out = _apply_batched(node, grads, create_graph, mask) if batched else node.apply(grads, create_graph, mask)
    if node._hooks:
        for fn in list(node._hooks.values()):
            if batched:
                out = _rows_apply2(lambda o, gs: _post_hook_grads(fn, o, gs, create_graph), out, grads, create_graph)
                continue
            r = fn(tuple(None if g is None else _wrap(g, create_graph) for g in out),
                   tuple(None if g is None else _wrap(g, create_graph) for g in grads))
            if r is not None:
                out = check_hook_values(fn, out, r, create_graph)
    return out


def _hook_grad(fn, g, create_graph):
    r = fn(_wrap(g, create_graph))
    return g if r is None else check_hook_value(fn, g, r, create_graph)


def _pre_hook_grads(fn, grads, create_graph):
    r = fn(tuple(None if g is None else _wrap(g, create_graph) for g in grads))
    return grads if r is None else check_hook_values(fn, grads, r, create_graph)


def _post_hook_grads(fn, out, grads, create_graph):
    r = fn(tuple(None if g is None else _wrap(g, create_graph) for g in out),
           tuple(None if g is None else _wrap(g, create_graph) for g in grads))
    return out if r is None else check_hook_values(fn, out, r, create_graph)


# ----- batched gradients (autograd.grad(is_grads_batched=True)) ------------------------------

def _apply_batched(node, grads, create_graph, mask):
    """A node on batched gradients: all rows at once where it has a batched rule (``apply_batched``),
    else this node alone runs once per row (always correct: the fallback for custom Functions, nodes
    that override ``apply`` and primitives not declared batch-safe)."""
    apply_batched = getattr(node, "apply_batched", None)
    out = NotImplemented if apply_batched is None else apply_batched(grads, create_graph, mask)
    if out is NotImplemented and isinstance(node, PrimNode):
        out = _batching.node_batched(node, grads, create_graph, mask)   # its rules under vmap
    if out is NotImplemented:
        out = _rows_apply(lambda gs: node.apply(gs, create_graph, mask), grads, create_graph)
    return out


def _row(g, b):
    return None if g is None else g[b]


def _stack_rows(rows, create_graph):
    """One batched gradient from per-row gradients (None rows are zeros; all None stays None)."""
    like = next((r for r in rows if r is not None), None)
    if like is None:
        return None
    if create_graph:
        from ._primitive import graph_ns
        return graph_ns.stack([r if r is not None else graph_ns.zeros_like(like) for r in rows], 0)
    from .._device import NAMESPACES
    xp = NAMESPACES[type(like)]
    return xp.stack([r if r is not None else xp.zeros_like(like) for r in rows], 0)


def _batch_size(grads, create_graph) -> int:
    g = next(g for g in grads if g is not None)
    return (g._data if create_graph else g).shape[0]


def _by_rows(fn, g, create_graph):
    return _stack_rows([fn(g[b]) for b in range(_batch_size((g,), create_graph))], create_graph)


def _rows_apply(fn, grads, create_graph):
    """``fn`` (gradients of one row -> a list of gradients) run on each row, its results stacked."""
    outs = [fn([_row(g, b) for g in grads]) for b in range(_batch_size(grads, create_graph))]
    n = max((len(o) for o in outs), default=0)
    return [_stack_rows([o[i] if i < len(o) else None for o in outs], create_graph) for i in range(n)]


def _rows_apply2(fn, out, grads, create_graph):
    outs = [fn([_row(g, b) for g in out], [_row(g, b) for g in grads])
            for b in range(_batch_size(grads, create_graph))]
    n = max((len(o) for o in outs), default=0)
    return [_stack_rows([o[i] if i < len(o) else None for o in outs], create_graph) for i in range(n)]


# ----- public entry points -------------------------------------------------------------------

def _check_flag(value, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")


def _check_inputs(inputs) -> None:
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient "
    "which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you "
    "have to use this function, make sure to reset the .grad fields of your parameters to None after use to break "
    "the cycle and avoid the leak.")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate d(tensors)/d(leaves), weighted by ``grad_tensors``, into the leaves' ``.grad``."""
    if _batching.FRAMES or _batching.TRANSFORMS[0]:
        raise RuntimeError(_batching.BACKWARD_INSIDE)   # as PyTorch: use grad or vjp inside torch.func transforms
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if grad_tensors is not None and isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if retain_graph is None:
        retain_graph = create_graph
    _check_flag(retain_graph, "retain_graph")
    _check_flag(create_graph, "create_graph")
    roots = _root_grads(tensors, grad_tensors, create_graph, "backward")
    if create_graph:
        warn_once("create_graph", _CREATE_GRAPH_WARNING)
    if inputs is None:
        run_backward(roots, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _check_inputs(inputs)
    edges = []
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append(edge_of(t))
    for t in inputs:
        if t.grad_fn is not None:
            t.retain_grad()  # as PyTorch: a non-leaf input's gradient lands in its (retained) .grad
    run_backward(roots, retain_graph, create_graph, targets=edges, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False) -> tuple:
    """d(outputs)/d(inputs), weighted by ``grad_outputs``, returned instead of accumulated.

    ``is_grads_batched=True``: dimension 0 of every grad_output is a batch of B vectors, and the result is
    the B vector-Jacobian products stacked, from one backward pass: primitives declared batch-safe run once
    on the whole batch, any other node (and hooks, custom Functions) once per row, seeing one row's gradient
    as under PyTorch's vmap."""
    if _levels.LEVELS:   # inside torch.func's grad/vjp/jvp: the graph the innermost transform's level sees
        lv = _levels.innermost(len(_batching.FRAMES))
        if lv is not None:
            return _levels.grad_at_level(
                lv, graph_grad, _batching.peel, _batching.rewrap, _batching.to_front, _batching.frame_of, outputs,
                inputs, grad_outputs, dict(retain_graph=retain_graph, create_graph=create_graph,
                                           allow_unused=allow_unused, is_grads_batched=is_grads_batched,
                                           materialize_grads=materialize_grads))
    return graph_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs, allow_unused,
                      is_grads_batched, materialize_grads)


def graph_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
               allow_unused=None, is_grads_batched=False, materialize_grads=False) -> tuple:
    """``grad`` on the whole physical graph (what torch.func's transforms differentiate, whatever level runs)."""
    if _batching.FRAMES and _batching.any_batched(outputs, inputs, grad_outputs):   # inside vmap
        return _batching.grad_inside(graph_grad, outputs, inputs, grad_outputs, dict(
            retain_graph=retain_graph, create_graph=create_graph, allow_unused=allow_unused,
            is_grads_batched=is_grads_batched, materialize_grads=materialize_grads))
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    if retain_graph is None:
        retain_graph = create_graph
    _check_flag(retain_graph, "retain_graph")
    _check_flag(create_graph, "create_graph")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    _check_inputs(inputs)
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    is_grads_batched = bool(is_grads_batched)
    roots = _root_grads(outputs, grad_outputs, create_graph, "grad", is_grads_batched)
    if is_grads_batched:
        _check_batch_sizes(roots, create_graph)
    edges = [edge_of(t) for t in inputs]
    if is_grads_batched:   # (nodes may run their rules under vmap: its swaps installed once for the pass)
        _batching.hold()
    try:
        captured = run_backward(roots, retain_graph, create_graph, targets=edges, accumulate=False,
                                batched=is_grads_batched)
    finally:
        if is_grads_batched:
            _batching.release()
    result = []
    for i, (t, e) in enumerate(zip(inputs, edges)):
        g = captured.get(e)
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            result.append(make(backend_of(t._data).zeros_like(t._data)) if materialize_grads else None)
        else:
            dt = t._data.dtype
            if t.grad_fn is None and t._meta is not None:   # a leaf's grad_dtype (PyTorch casts these too)
                g = leaf_grad_cast(t, g, create_graph)
                dt = (g._data if create_graph else g).dtype
            result.append(g if create_graph else make(backend_of(g).copy(g, dt)))
    return tuple(result)


def _check_batch_sizes(roots, create_graph) -> None:
    """All batched grad_outputs share one batch size, which is not 0 (PyTorch's vmap errors)."""
    sizes = [(g._data if create_graph else g).shape[0] for _, g in roots]
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    if sizes and sizes[0] == 0:
        raise IndexError("index 0 is out of bounds for dimension 0 with size 0")


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Compute the gradient of this tensor w.r.t. graph leaves (see ``ember.autograd.backward``)."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


Tensor.backward = _tensor_backward
