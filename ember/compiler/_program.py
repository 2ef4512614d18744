"""A finished trace turned into programs: the forward as generated straight-line code over the device's kernels,
the backward as one ``CompiledFunctionBackward`` node running the recorded VJP rules in decreasing ``_seq`` order
(the order the engine runs them in eager mode, so every gradient sum associates as in eager mode).
"""
from __future__ import annotations

import sys

from .._device import NAMESPACES, fp_quiet as _fp_quiet, fp_restore as _fp_restore
from .._tensor import Tensor, make
from ..autograd._primitive import _ndarray, _NoneSaved, _NP_NS, _OUT_NOT_SAVED, _wrong_shape
from .._hooks import HOOK_COUNT
from ..autograd.graph import FREED, FREED_MESSAGE, Node, _tls, accumulate_leaves, hooked_leaves, modified_message
from ..ops import random as _random
from ..ops.shape import _MultiViewNode
from ._trace import ARRAY, TraceFailed, Tracer, _plain, _template_refs, tensor_edge
from . import _inline

_ASARRAY = _NP_NS.backend.asarray
DOUBLE_BACKWARD = "torch.compile with aot_autograd does not currently support double backward"


def generator_state():
    g = _random.default_generator
    st = g._state
    return (g._seed, None if st is None else bytes(g.get_state()._data))


# ----- after the trace: what can be replayed -----------------------------------------------------

def finish(tr: Tracer, flat_out: list, n_out_refs: int):
    """Check the finished trace and make its Recording (raises TraceFailed with the reason when it cannot be
    replayed exactly). ``flat_out``: the output structure's leaves."""
    if tr.fail is not None:
        raise TraceFailed(tr.fail)
    _check_escapes(tr, flat_out)   # (first: the loops below hold references of their own)
    tr.vc_moved = {}   # id(version counter) -> how far it moved during the call (since first seen)
    for t, v, w, fn, rg in tr.seen_vc:
        # (a recorded write that counts no version, as batch norm's running statistics, moves it less)
        if t._vc[0] - v > tr.writes.get(id(t._vc), 0) - w:
            raise TraceFailed("an in-place change the recording did not see (a version counter moved)")
        tr.vc_moved.setdefault(id(t._vc), t._vc[0] - v)
    steps = tr.steps
    for t, v, w, fn, rg in tr.seen_vc[:len(tr.inputs)] + [e for e in tr.seen_vc if tr.ref[id(e[0])][0] == "cap"]:
        if t.grad_fn is not fn or t._requires_grad != rg:
            raise TraceFailed("an in-place op on an input or captured tensor under autograd (its history changes)")
    for s in steps:   # a saved tensor changed in place after it was saved: eager's backward raises
        node = s.node
        if node is None:
            continue
        for e in node._saved or ():
            if e is not None and e[0]._vc[0] != e[1]:
                raise TraceFailed("a tensor saved for backward is changed in place later (backward would raise)")
        if node._out is not None and node._out_vc[0] != node._out_v:
            raise TraceFailed("an output saved for backward is changed in place later (backward would raise)")
    out_refs = []
    out_grad = {}
    out_vc = {}
    view_bases = set()
    for leaf in flat_out:
        if isinstance(leaf, Tensor):
            r = tr.ref.get(id(leaf))
            if r is None or r[0] not in ("in", "cap", "step"):
                raise TraceFailed("an output tensor is not computed by a traced op (a factory or outside value)")
            if r[0] == "step" and leaf._base is not None and tr.ref.get(id(leaf._base), ("",))[0] in ("in", "cap"):
                # a view of an input or captured tensor: made again at each replay by the same view ops on it,
                # eagerly, so that it shares its base's memory, version and history as eager's does
                br = tr.ref[id(leaf._base)]
                vsteps = leaf._view_steps
                if leaf.__dict__ or getattr(leaf, "_origin", None) is not None or not all(
                        all(_plain(v) for v in p.values()) for _, p in vsteps):
                    raise TraceFailed("an output is a view of an input that the replay cannot make again")
                out_refs.append(("view", br, vsteps, leaf.grad_fn is not None))
                continue
            if r[0] == "step":
                s = steps[r[1]]
                if leaf._base is not None:
                    # a view of an intermediate nobody else sees (logits.view(...)): returned as a tensor of its
                    # own (what differs: ._base, and in-place changes to it rebase as for a non-view)
                    b = tr.ref.get(id(leaf._base))
                    if b is None or b[0] != "step" or any(o is leaf._base for o in flat_out) or \
                            id(leaf._base) in view_bases:
                        raise TraceFailed("an output is a view of an input, a captured tensor or another output")
                    view_bases.add(id(leaf._base))
                fn = leaf.grad_fn
                if fn is None:
                    if leaf._requires_grad:
                        raise TraceFailed("an output requires grad without a node")
                    out_grad[r[1]] = None
                else:
                    k = tr.node_step.get(id(fn))
                    if k is None or leaf._output_nr != 0:
                        raise TraceFailed("an output's grad_fn is no recorded node (a multi-output op)")
                    out_grad[r[1]] = k
                out_vc[r[1]] = leaf._vc[0]
                if getattr(leaf, "_origin", None) is not None or leaf.__dict__:
                    raise TraceFailed("an output carries state beyond its value (hooks, names, origin)")
            out_refs.append(r)
        elif isinstance(leaf, (int, float, bool, str, type(None), complex)):
            out_refs.append(("py", leaf))
        else:
            raise TraceFailed(f"the function returns a {type(leaf).__name__}")
    node_step = tr.node_step
    groups = {}   # id(node) -> index of its pseudo step: the one node of split/chunk/unbind's pieces
    for j in range(len(steps)):
        s = steps[j]
        if s.kind == "prim" and s.node is not None and s.tensor.grad_fn is not s.node:
            fn = s.tensor.grad_fn
            if isinstance(fn, _MultiViewNode) and type(fn).apply is _MultiViewNode.apply:
                if id(fn) not in groups:
                    g = tr._pseudo("group", None, (s.args[0],))
                    groups[id(fn)] = g
                    steps[g].node = fn
                    steps[g].seq = fn._seq
                    steps[g].in_meta = ()
                    steps[g].saved = None
                    steps[g].saves_out = False
                    steps[g].n_out = fn.num_outputs
                    tr.node_step_groups = groups

    def map_edge(fn, nr, r, what):
        if fn is None:
            return None
        jj = node_step.get(id(fn))
        if jj is not None:
            return ("int", jj)
        jg = groups.get(id(fn))
        if jg is not None:
            return ("grp", jg, nr)
        if r[0] not in ("in", "cap"):
            raise TraceFailed(f"an edge of '{what}' leads outside the recording")
        src = tr.inputs[r[1]] if r[0] == "in" else tr.captured[r[1]]
        if tensor_edge(src) != (fn, nr):
            raise TraceFailed(f"an edge of '{what}' does not match its input's")
        return ("ext", r)
    for s in steps:
        if s.kind == "group":
            s.edges = [(0, map_edge(fn, nr, s.args[0], s.node.name())) for fn, nr in s.node.next_functions]
    for j, s in enumerate(steps):
        t = s.tensor
        if s.kind != "prim":
            continue
        if s.node is not None:
            node = s.node
            if t.grad_fn is not node and id(t.grad_fn) not in node_step and id(t.grad_fn) not in groups:
                # (in-place ops rebase onto their nodes; split's pieces share one node)
                raise TraceFailed(f"the node of '{s.prim.name}' was replaced (a multi-output op)")
            if node._intercept or node.__dict__.get("_anomaly_stack") is not None:
                raise TraceFailed("a hook or retain_grad on a tensor inside the function")
            saved = node._saved
            s.extra = ()
            if type(saved) is _NoneSaved:   # declared saves that no gradient needed: nothing saved
                saved = list(saved)
            if saved is not None and type(saved) is not list:
                # save_extra's entries after the inputs' (index tensors: checked for in-place changes only)
                n_in = len(node._in)
                if type(saved).__name__ != "_Hooked" or any(
                        e is not None and not isinstance(e[0], Tensor) for e in saved):
                    raise TraceFailed(f"'{s.prim.name}' saves through saved-tensor hooks")
                extra = []
                for e in saved[n_in:]:
                    r = tr.ref.get(id(e[0])) or tr.ref_of(e[0])
                    if r is None or tr.fail is not None:
                        raise TraceFailed(f"'{s.prim.name}' saves a tensor made outside the traced primitives")
                    extra.append(r)
                s.extra = tuple(extra)
                saved = list(saved[:n_in])
            s.saved = None if saved is None else tuple(e is not None for e in saved)
            s.saves_out = node._out is not None
            s.seq = node._seq
            s.in_meta = list(node._in)
            s.in_meta_shape = [(m.shape, m.dtype) if hasattr(m, "dtype") and hasattr(m, "shape") else None
                               for m in node._in]
            s.node_prim = node._prim
            s.node_params = node._params
            pos = node._prim.edge_pos
            edges = []
            for k, (fn, nr) in enumerate(node.next_functions):
                i = k if pos is None else pos[k]
                edges.append((i, map_edge(fn, nr, s.args[i], s.prim.name)))
            s.edges = edges
        elif t._requires_grad:
            raise TraceFailed(f"'{s.prim.name}' gives a result that requires grad without a node")
    # whose version counter each recorded tensor shares (views share their base's)
    owner = {}
    for k, t in enumerate(tr.inputs):
        owner.setdefault(id(t._vc), ("in", k))
    for k, t in enumerate(tr.captured):
        owner.setdefault(id(t._vc), ("cap", k))
    vc_owner = {}
    for j, s in enumerate(steps):
        if s.tensor is not None:
            vc_owner[j] = owner.setdefault(id(s.tensor._vc), ("step", j))
    _prune(steps, out_refs)
    rec = Recording(tr, out_refs, vc_owner, out_grad, out_vc)
    return rec


_PURE = ("xcall", "unpack", "expand", "reshape", "opcall")


def _prune(steps: list, out_refs: list) -> None:
    """Kernel calls whose results nothing reads (a fast path's own kernels, a check's intermediate) are dropped."""
    used = {r[1] for r in out_refs if r[0] == "step"}
    for j in range(len(steps) - 1, -1, -1):
        s = steps[j]
        if s.kind in _PURE and j not in used:
            s.dead = True
            continue
        for r in s.args:
            if r[0] == "step":
                used.add(r[1])
        if s.param_refs:
            refs = set()
            for tpl in s.param_refs.values():
                _template_refs(tpl, refs)
            used.update(r[1] for r in refs if r[0] == "step")
        for r in s.extra:
            if r[0] == "step":
                used.add(r[1])


def _check_escapes(tr: Tracer, flat_out: list) -> None:
    """A tensor made inside the call and kept somewhere else (a global list, an attribute of an object) would hold
    the trace's value at every replay: count its references against those the recording explains."""
    expected = {}
    for s in tr.steps:
        if s.tensor is not None:
            # keep, seen_vc's entry, Step.tensor, the local t, getrefcount's argument (and keep again: born first)
            expected[id(s.tensor)] = 6 if s.kind == "opcall" else 5
    for leaf in flat_out:
        if id(leaf) in expected:
            expected[id(leaf)] += 2   # the output structure and the flattened list
    leaf = None
    for s in tr.steps:
        t = s.tensor
        if t is not None and t._base is not None and id(t._base) in expected:
            expected[id(t._base)] += 1
        t = None
        node = s.node
        if node is not None and node._saved is not None:
            for e in node._saved:
                if e is not None and id(e[0]) in expected:
                    expected[id(e[0])] += 1
    for s in tr.steps:
        t = s.tensor
        if t is not None and sys.getrefcount(t) > expected[id(t)]:
            raise TraceFailed(f"the result of '{s.prim.name if s.prim else s.kind}' is kept outside the function (stored in outside "
                              "state): the replay could not update it")


class Recording:
    """One trace, ready to replay: forward program, backward description."""

    def __init__(self, tr: Tracer, out_refs: list, vc_owner: dict, out_grad: dict, out_vc: dict):
        steps = tr.steps
        self.n_in = len(tr.inputs)
        self.in_arrays = [type(t._data) is _ndarray for t in tr.inputs]   # (their data: NumPy arrays)
        self.captured = tr.captured
        self.cap_meta = [(c._data.shape, c._data.dtype, c._requires_grad, c._data.strides) for c in tr.captured]
        self.cap_datas = [c._data for c in tr.captured]   # the arrays the last call's guard found (see __call__)
        self.cap_rg = [c._requires_grad for c in tr.captured]
        self.consts = tr.consts
        self.hoisted = tr.hoisted
        self.cache_casts = [(k, leaf, c.dtype) for k, (c, leaf) in tr.cache_casts.items()]
        self.out_refs = out_refs
        # the outputs that are step results: one Tensor each (an output twice is one Tensor twice)
        out_steps = []
        for r in out_refs:
            if r[0] == "step" and r[1] not in out_steps:
                out_steps.append(r[1])
        self.out_steps = out_steps
        self.out_grad = out_grad
        self.out_vc = out_vc
        grad_steps = []
        for j in out_steps:
            k = out_grad.get(j)
            if k is not None and k not in grad_steps:
                grad_steps.append(k)
        self.grad_steps = grad_steps
        # in-place writes: constants written into are copied at the start of each replay; inputs' and captured
        # tensors' version counters move as eager's did
        self.written_consts = sorted(r[1] for r in tr.written if r[0] == "const")
        bumps = {}
        for r in tr.written:
            if r[0] in ("in", "cap"):
                t = tr.ref_tensor(r)
                bumps[id(t._vc)] = (r, tr.vc_moved.get(id(t._vc), tr.writes[id(t._vc)]))
        self.vc_bumps = [b for b in bumps.values() if b[1]]
        # backward: the nodes reachable from the outputs with grad, newest first
        reach = set()
        todo = list(self.grad_steps)
        while todo:
            j = todo.pop()
            if j in reach:
                continue
            reach.add(j)
            for _, e in steps[j].edges:
                if e is not None and e[0] in ("int", "grp"):
                    todo.append(e[1])
        self.bwd_steps = sorted(reach, key=lambda j: -steps[j].seq)
        # which arrays the backward reads: saved inputs (uncast, as the node's _args give them) and saved outputs
        need = set()
        for j in self.bwd_steps:
            s = steps[j]
            if s.saved is not None:
                for i, sv in enumerate(s.saved):
                    if sv:
                        need.add(s.args[i])
            if s.saves_out:
                need.add(("step", j))
            if s.param_refs:
                for tpl in s.param_refs.values():
                    _template_refs(tpl, need)
        self.need = sorted(need, key=lambda r: (r[0], r[1]))
        self.need_arrays = [r[0] == "step" or r[0] == "in" and self.in_arrays[r[1]] or
                            r[0] == "cap" and type(tr.captured[r[1]]._data) is _ndarray or
                            r[0] == "const" and type(tr.consts[r[1]]) is _ndarray for r in self.need]
        check_refs = set(need)
        for j in self.bwd_steps:
            check_refs.update(steps[j].extra)
        # external edges, in the order the engine would have routed them (node by node, newest first)
        ext = []
        for j in self.bwd_steps:
            for i, e in steps[j].edges:
                if e is not None and e[0] == "ext":
                    ext.append(e[1])
        self.ext = ext
        # a leaf read by several ops gets several gradients: the engine sums them in edge order, then accumulates
        first = {}
        for i, r in enumerate(ext):
            first.setdefault(r, []).append(i)
        self.ext_dups = [(ix[0], ix[1:]) for ix in first.values() if len(ix) > 1]
        self.ext_in = [i for i, r in enumerate(ext) if r[0] == "in"]
        self.leaves_clean = -1   # the hook count at which the captured leaves had no hooks
        # version counters the backward checks: the input/captured tensors it reads (an internal tensor nobody else
        # can reach cannot change; an output's own counter is checked through its Tensor)
        checks = []
        for r in sorted(check_refs, key=lambda r: (r[0], r[1])):
            o = vc_owner.get(r[1], ("step", -1)) if r[0] == "step" else r   # (a kernel call's array: internal)
            if o[0] in ("in", "cap") or (o[0] == "step" and o[1] in out_steps):
                if o not in checks:
                    checks.append(o)
        self.checks = checks
        self.steps = steps
        self.forward = _gen_forward(self, steps)
        self.backward_code = None
        for s in steps:   # drop the trace's tensors: the recording keeps only what replays
            s.tensor = None

    def run_backward(self, grads, vals):
        code = self.backward_code
        if code is not None:
            for g, s in zip(grads, self.root_steps):
                if g is not None and (type(g) is not _ndarray or g.dtype != s.out_dtype):
                    break
            else:
                return code(grads, vals)
        if self.need_loose:   # (the interpreted rules get the arrays eager's nodes saved)
            vals = list(vals)
            for k in self.need_loose:
                vals[k] = _ASARRAY(vals[k])
        if code is not None:
            return run_backward(self, grads, vals, None)
        fixes = {}
        ext = run_backward(self, grads, vals, fixes)
        self.root_steps = [self.steps[j] for j in self.grad_steps]
        if all(type(g) is _ndarray and g.dtype == s.out_dtype for g, s in zip(grads, self.root_steps)
               if g is not None):
            self.backward_code = _gen_backward(self, fixes)
        return ext


def _template_value(tpl, env):
    kind = tpl[0]
    if kind == "ref":
        return env[tpl[1]]
    if kind in ("expand", "reshape"):
        return getattr(_NP_NS, kind)(env[tpl[1]], tpl[2])
    if kind == "plain":
        return tpl[1]
    items = [_template_value(t, env) for t in tpl[1]]
    return tuple(items) if kind == "tuple" else items


def _const_in(g: dict):
    def const(v):
        n = f"Q{len([k for k in g if k.startswith('Q')])}"
        g[n] = v
        return n
    return const


def _param_args(params: dict, param_refs: dict, name: str, g: dict, expr, const) -> list:
    """A generated call's keyword arguments: the params fixed at trace time bound as ``**name`` in the program's
    globals ``g``, those read from arrays of the recording (``param_refs`` templates) as expressions."""
    if not param_refs:
        if not params:
            return []
        g[name] = params
        return [f"**{name}"]
    out = []
    static = {k: v for k, v in params.items() if k not in param_refs}
    if static:
        g[name] = static
        out.append(f"**{name}")
    for k, tpl in param_refs.items():
        out.append(f"{k}={_template_expr(tpl, expr, const)}")
    return out


def _template_expr(tpl, expr, const) -> str:
    kind = tpl[0]
    if kind == "ref":
        return expr(tpl[1])
    if kind in ("expand", "reshape"):
        return f"_{kind.upper()}({expr(tpl[1])}, {const(tpl[2])})"
    if kind == "plain":
        return const(tpl[1])
    items = "".join(_template_expr(t, expr, const) + ", " for t in tpl[1])
    return f"({items})" if kind == "tuple" else f"[{items}]"


class GuardFailed(Exception):
    """A replayed check on values gave another answer than at the trace: the call runs eagerly."""


def _expect(got, want) -> None:
    if not (got is want or (type(got) is type(want) and (got == want or (got != got and want != want)))):
        raise GuardFailed


def _binder(g: dict):
    """``bind(key)``: the name of a constant of a generated program (made once per key)."""
    names = {}

    def bind(key):
        n = names.get(key)
        if n is None:
            kind = key[0]
            if kind == "weak":
                v = _NP_NS.weak_number(_NP_NS.backend.zeros((), key[1]), key[2])
            elif kind == "weak_scalar":
                v = _inline.weak_scalar(key[1], key[2])
            elif kind == "attr":
                v = getattr(key[1], key[2])
            elif kind == "xattr":
                v = getattr(_NP_NS, key[1])
            else:
                raise ValueError(key)
            n = names[key] = f"B{len(names)}"
            g[n] = v
        return n
    return bind


def _gen_forward(rec: Recording, steps: list):
    """The forward as Python source: ``v{j} = f{j}(x{j}, ...)`` for each step, then the outputs and the arrays the
    backward reads."""
    g = {"_fp_quiet": _fp_quiet, "_fp_restore": _fp_restore, "_EXPAND": _NP_NS.expand, "_RESHAPE": _NP_NS.reshape}
    lines = ["def forward(I, C, K):", "    fp = _fp_quiet()", "    try:", "        pass"]
    consts = {}

    def const(v):
        k = consts.get(id(v))
        if k is None:
            k = consts[id(v)] = f"c{len(consts)}"
            g[k] = v
        return k
    bind = _binder(g)

    # 0-d float chains run on NumPy scalars (``_inline.loose_line``): ``loose`` steps' v{j} hold scalars, made
    # arrays (w{j}, as eager's asarray makes them) where anything else reads them; ``scal``: the scalar taken from
    # a 0-d array once for the loose ops that read it. (Not where the program writes into arrays: a scalar taken
    # before a write would be stale after it.)
    loose_ok = not rec.hoisted and not rec.written_consts and not any(s.kind == "write" for s in steps)
    loose = set()
    wrapped = set()
    scal = {}

    def expr(r):
        kind = r[0]
        if kind == "in":
            return f"I[{r[1]}]"
        if kind == "cap":
            return f"C[{r[1]}]"
        if kind == "const":
            return f"k{r[1]}" if r[1] in written else f"K[{r[1]}]"
        if kind == "step":
            j = r[1]
            if j in loose:
                if j not in wrapped:
                    wrapped.add(j)
                    lines.append(f"        w{j} = _A(v{j})")
                return f"w{j}"
            return f"v{j}"
        if kind == "gen":
            return "G._st()"
        return const(r[1])

    def sexpr(r):
        """The scalar of array ref ``r`` (a 0-d array of the op's dtype), or None where ``r`` is no NumPy array."""
        if r[0] == "step" and r[1] in loose:
            return f"v{r[1]}"
        kind = r[0]
        if not (kind == "step" or kind == "in" and rec.in_arrays[r[1]] or
                kind == "cap" and type(rec.captured[r[1]]._data) is _ndarray or
                kind == "const" and type(rec.consts[r[1]]) is _ndarray):
            return None
        n = scal.get(r)
        if n is None:
            n = scal[r] = f"s{len(scal)}"
            lines.append(f"        {n} = {expr(r)}[()]")
        return n
    g["_A"] = _NP_NS.backend.asarray
    written = set(rec.written_consts)
    g["G"] = _random.default_generator
    for k in rec.written_consts:   # a constant the program writes into: a fresh copy per replay
        lines.append(f"        k{k} = K[{k}].copy()")
    hoisted = sorted(rec.hoisted)
    for j, s in [(j, steps[j]) for j in hoisted] + [(j, s) for j, s in enumerate(steps) if j not in rec.hoisted]:
        g[f"f{j}"] = s.forward
        if s.kind == "group" or s.dead:
            continue
        if s.kind in ("xcall", "guard"):
            kw = s.params["kw"]
            ex = [expr(r) for r in s.args]
            n = len(ex) - len(kw)
            call = f"f{j}({', '.join(ex[:n] + [f'{k}={e}' for k, e in zip(kw, ex[n:])])})"
            if s.kind == "xcall":
                lines.append(f"        v{j} = {call}")
            else:
                g["_expect"] = _expect
                lines.append(f"        _expect({call}, {const(s.params['expect'])})")
            continue
        if s.kind == "unpack":
            lines.append(f"        v{j} = {expr(s.args[0])}[{s.params['k']}]")
            continue
        if s.kind in ("expand", "reshape"):
            lines.append(f"        v{j} = _{s.kind.upper()}({expr(s.args[0])}, {const(s.params['shape'])})")
            continue
        if s.kind == "guard_parts":
            g["_expect"] = _expect
            parts = ", ".join(f"{expr(s.args[0])}[{k}]" for k in s.params["parts"])
            lines.append(f"        _expect(({parts},), {const(s.params['expect'])})")
            continue
        if s.kind == "write":
            lines.append(f"        f{j}({expr(s.args[0])}, {expr(s.args[1])})")
            continue
        if s.kind == "copy":
            lines.append(f"        v{j} = {expr(s.args[0])}.copy()")
            continue
        if s.kind == "opcall":
            kw = s.params["kw"]
            g["_mk"] = make
            ex = [f"_mk({expr(r)})" if is_t else expr(r) for r, is_t in zip(s.args, s.params["tensor"])]
            n = len(ex) - len(kw)
            ex = ex[:n] + [f"{k}={e}" for k, e in zip(kw, ex[n:])]
            lines.append(f"        v{j} = f{j}({', '.join(ex)})._data")
            continue
        if s.kind == "call":
            kw = s.params["kw"]
            ex = [expr(r) for r in s.args]
            n = len(ex) - len(kw)
            ex = ex[:n] + [f"{k}={e}" for k, e in zip(kw, ex[n:])]
            lines.append(f"        v{j} = f{j}({', '.join(ex)})")
            continue
        g[f"x{j}"] = s.xp
        if s.asarray and loose_ok and s.xp is _NP_NS:
            line = _inline.loose_line(s, sexpr, bind, _NP_NS.backend.scalar_orders())
            if line is not None:
                lines.append(f"        v{j} = {line}")
                loose.add(j)
                continue
        args = []
        for r, c in zip(s.args, s.casts):
            e = expr(r)
            if c is not None:
                e = f"{e}.astype({const(c)})"
            args.append(e)
        line = _inline.forward_line(s, args, bind, const)
        if line is not None:
            lines.append(f"        v{j} = {line}" if not s.asarray else f"        v{j} = _A({line})")
            continue
        args += _param_args(s.params, s.param_refs, f"p{j}", g, expr, const)
        lines.append(f"        v{j} = f{j}(x{j}, {', '.join(args)})")
        if s.asarray:
            g[f"a{j}"] = s.xp.backend.asarray
            lines.append(f"        v{j} = a{j}(v{j})")
    outs = ", ".join(expr(("step", j)) for j in rec.out_steps)   # (outputs become Tensors: arrays)
    # the backward gets loose steps' scalars (``need_loose``: their positions)
    need = ", ".join(f"v{r[1]}" if r[0] == "step" and r[1] in loose else expr(r) for r in rec.need)
    rec.need_loose = [k for k, r in enumerate(rec.need) if r[0] == "step" and r[1] in loose]
    lines.append("    finally:")
    lines.append("        _fp_restore(fp)")
    lines.append(f"    return ({outs}{',' if rec.out_steps else ''}), ({need}{',' if rec.need else ''})")
    src = "\n".join(lines) + "\n"
    exec(compile(src, "<ember.compile forward>", "exec"), g)
    fn = g["forward"]
    fn.source = src
    return fn


# ----- the backward node -------------------------------------------------------------------------

class CompiledFunctionBackward(Node):
    """The one node of a compiled call's outputs: runs the recorded nodes' VJP rules, newest first.

    Where the engine runs it last in a plain backward (nothing else pending: only the nodes it routes to run after
    it) and every edge leads to the AccumulateGrad of a distinct leaf (``_direct``, decided at the replay), it adds
    the gradients into the leaves' ``.grad`` itself (``graph.accumulate_leaves``: what those nodes would do, each
    leaf getting this one gradient), unless a hook on this node, a leaf or a leaf's node must see them run."""

    __slots__ = ("_rec", "_vals", "_checks", "_direct")

    def apply(self, grads, create_graph, needed):
        ext = self._gradients(grads, create_graph)
        if self._direct and needed is None and not self._intercept:
            task = getattr(_tls, "task", None)
            if task is not None:
                heap = task._heap
                if heap is not None and not heap:
                    # the captured leaves were found without hooks at this hook count: only the inputs to check
                    rec = self._rec
                    count = HOOK_COUNT[0]
                    edges = self.next_functions
                    if rec.ext_dups:
                        ext = _sum_dups(ext, rec.ext_dups)
                    if rec.leaves_clean == count:
                        if not hooked_leaves(edges, ext, rec.ext_in) and accumulate_leaves(edges, ext, False):
                            return ()
                    elif accumulate_leaves(edges, ext):
                        rec.leaves_clean = count
                        return ()
        return ext

    def __call__(self, *grads):
        """A call by hand (``grad_fn(g)``): the gradients of the inputs, nothing accumulated."""
        out = self._gradients([g._data if isinstance(g, Tensor) else g for g in grads], False)
        return tuple(None if g is None else make(g if type(g) is _ndarray else _ASARRAY(g)) for g in out)

    def _gradients(self, grads, create_graph):
        if create_graph:
            raise RuntimeError(DOUBLE_BACKWARD)
        vals = self._vals
        if vals is FREED:
            raise RuntimeError(FREED_MESSAGE)
        for t, vc, v in self._checks:
            if vc[0] != v:
                raise RuntimeError(modified_message(t, v))
        return self._rec.run_backward(grads, vals)

    def _release(self) -> None:
        self._vals = FREED

    def apply_batched(self, grads, create_graph, needed):
        return NotImplemented


CompiledFunctionBackward.__module__ = "torch.autograd.function"


def _sum_dups(ext: list, dups: list) -> list:
    """The gradients for a leaf on several edges summed onto its first, as the engine's buffer sums them (in edge
    order, the buffer's value first), the others None."""
    ext = list(ext)
    for i0, rest in dups:
        g = ext[i0]
        for i in rest:
            gi = ext[i]
            if gi is not None:
                g = gi if g is None else g + gi
                ext[i] = None
        ext[i0] = g
    return ext


def run_backward(rec: Recording, grads, vals, fixes):
    """The recorded rules (interpreted; the same calls PrimNode.apply makes, in the engine's order). ``fixes``
    (a dict, or None): filled with what each rule's gradient needed ((j, i) -> (sum_to, cast), or None when the
    rule gave no gradient), for the generated program."""
    steps = rec.steps
    env = dict(zip(rec.need, vals))
    buf = {}
    for k, j in enumerate(rec.grad_steps):
        g = grads[k] if k < len(grads) else None
        if g is not None:
            buf[j] = g
    ext = []
    for j in rec.bwd_steps:
        s = steps[j]
        g = buf.pop(j, None)
        if fixes is not None and g is not None and s.kind != "group":
            fixes[("g", j)] = type(g) is _ndarray
        if s.kind == "group":
            if g is not None:
                g = s.node.apply(g, False, None)[0]
            for i, e in s.edges:
                _route(e, g, buf, ext, steps)
            continue
        prim = s.node_prim
        if g is None:
            for i, e in s.edges:
                if e is not None and e[0] == "ext":
                    ext.append(None)
            continue
        args = s.in_meta
        if s.saved is not None:
            args = list(args)
            for i, sv in enumerate(s.saved):
                if sv:
                    args[i] = env[s.args[i]]
        out = env[("step", j)] if s.saves_out else _OUT_NOT_SAVED
        xp = _NP_NS if type(g) is _ndarray else NAMESPACES[type(g)]
        params = s.node_params
        if s.param_refs:
            params = dict(params)
            for k, tpl in s.param_refs.items():
                params[k] = _template_value(tpl, env)
        vjps = prim.vjps
        for i, e in s.edges:
            if e is None:
                continue
            gi = vjps[i](xp, g, out, *args, **params)
            if gi is not None:
                m = s.in_meta_shape[i]
                fs = gi.shape != m[0]
                if fs:
                    err = _wrong_shape(prim, i, gi.shape, m[0])
                    if err is not None:
                        raise err
                    gi = xp.sum_to(gi, m[0])
                fc = gi.dtype != m[1]
                if fc:
                    gi = xp.cast(gi, m[1])
                if fixes is not None:
                    fixes[(j, i)] = (fs, fc)
            elif fixes is not None:
                fixes[(j, i)] = None
            _route(e, gi, buf, ext, steps)
    return ext


def _route(e, gi, buf, ext, steps) -> None:
    """A gradient to its edge: a node's buffer (summed as the engine sums), or the compiled node's edge list."""
    if e is None:
        return
    if e[0] == "ext":
        ext.append(gi)
    elif gi is not None:
        t = e[1]
        if e[0] == "grp":
            slots = buf.get(t)
            if slots is None:
                slots = buf[t] = [None] * steps[t].n_out
            b = slots[e[2]]
            slots[e[2]] = gi if b is None else b + gi
        else:
            b = buf.get(t)
            buf[t] = gi if b is None else b + gi


def _gen_backward(rec: Recording, fixes: dict):
    """The backward as Python source, made at the first backward (which showed where a gradient must be summed to
    its input's shape or cast to its dtype): one rule call per line, the buffers as locals, summed in eager's order."""
    steps = rec.steps
    g = {"X": _NP_NS, "_OUT_NOT_SAVED": _OUT_NOT_SAVED, "_fix": _fix_dynamic, "_EXPAND": _NP_NS.expand,
         "_RESHAPE": _NP_NS.reshape}
    bind = _binder(g)
    need_ix = {r: k for k, r in enumerate(rec.need)}
    lines = ["def backward(G, N):"]
    if rec.need:
        lines.append(f"    {', '.join(f'n{k}' for k in range(len(rec.need)))}, = N")
    # N holds the forward's loose (0-d) values as NumPy scalars: made arrays (na{k}) for the rules that read arrays,
    # taken as they are for mul's rules on scalars (``_inline.loose_rule``), which take other 0-d arrays' scalars
    # (ns{k}); both made once, here at the top.
    g["_A"] = _NP_NS.backend.asarray
    top = []
    loose_need = set(rec.need_loose)
    names = {}

    def need_array(r):
        k = need_ix[r]
        if k not in loose_need:
            return f"n{k}"
        n = names.get(("a", k))
        if n is None:
            n = names[("a", k)] = f"na{k}"
            top.append(f"    {n} = _A(n{k})")
        return n

    def need_scalar(r):
        k = need_ix.get(r)
        if k is None:
            return None
        if k in loose_need:
            return f"n{k}"
        if not rec.need_arrays[k]:
            return None
        n = names.get(("s", k))
        if n is None:
            n = names[("s", k)] = f"ns{k}"
            top.append(f"    {n} = n{k}[()]")
        return n
    orders = _NP_NS.backend.scalar_orders()
    tnames = {}

    def tconst(v):   # (one name per value)
        n = tnames.get(id(v))
        if n is None:
            n = tnames[id(v)] = f"T{len(tnames)}"
            g[n] = v
        return n
    n_head = len(lines)
    nG = len(rec.grad_steps)
    lines.append(f"    G = tuple(G) + (None,) * ({nG} - len(G))")
    outs = set(rec.grad_steps)
    # A node whose one gradient comes from the last edge of the node run just before it gets it in ``g`` itself
    # (a chain: no buffer; when that node did not run, g is still None and this one does not run either).
    order = list(rec.bwd_steps)
    n_into = {}
    for j in order:
        for _, edge in steps[j].edges:
            if edge is not None and edge[0] == "int":
                n_into[edge[1]] = n_into.get(edge[1], 0) + 1
    handed = set()
    for j, t in zip(order, order[1:]):
        live = [edge for _, edge in steps[j].edges if edge is not None]
        if (steps[j].kind != "group" and steps[t].kind != "group" and live and live[-1] == ("int", t)
                and n_into[t] == 1 and t not in outs):
            handed.add(t)
    for j in rec.bwd_steps:
        if steps[j].kind == "group":
            lines.append(f"    b{j} = [None] * {steps[j].n_out}")
        elif j not in outs and j not in handed:
            lines.append(f"    b{j} = None")
    for k, j in enumerate(rec.grad_steps):
        lines.append(f"    b{j} = G[{k}]")
    lines.append(f"    E = [None] * {len(rec.ext)}")
    e = 0
    fresh = {j for j in rec.bwd_steps if steps[j].kind != "group" and j not in outs}

    def route(edge, body):
        nonlocal n_ext
        if edge[0] == "ext":
            body.append(f"E[{e + n_ext}] = gi")
            n_ext += 1
        elif edge[0] == "grp":
            t, nr = edge[1], edge[2]
            body.append(f"if gi is not None: b{t}[{nr}] = gi if b{t}[{nr}] is None else b{t}[{nr}] + gi")
        else:
            t = edge[1]
            if t in handed:
                body.append("g = gi")
            elif t in fresh:   # its first contribution: the buffer is None until now (None stays None)
                fresh.discard(t)
                body.append(f"b{t} = gi")
            else:
                body.append(f"if gi is not None: b{t} = gi if b{t} is None else b{t} + gi")
    for j in rec.bwd_steps:
        s = steps[j]
        n_ext = 0
        if s.kind == "group":
            g[f"M{j}"] = s.node.apply
            lines.append(f"    g = b{j}")
            lines.append(f"    del b{j}")
            body = ["gi = M%d(g, False, None)[0]" % j]
            for _, edge in s.edges:
                if edge is not None:
                    route(edge, body)
            lines.append("    if any(x is not None for x in g):")
            lines.extend("        " + b for b in body)
            e += n_ext
            continue
        prim = s.node_prim
        args = []
        values = []
        for i, m in enumerate(s.in_meta):
            if s.saved is not None and s.saved[i]:
                args.append(need_array(s.args[i]))
                values.append(ARRAY)
            else:
                g[f"m{j}_{i}"] = m
                args.append(f"m{j}_{i}")
                values.append(m)
        out = need_array(("step", j)) if s.saves_out else "_OUT_NOT_SAVED"
        args += _param_args(s.node_params, s.param_refs, f"P{j}", g, need_array, _const_in(g))
        if j not in handed:
            lines.append(f"    g = b{j}")
            lines.append(f"    del b{j}")
        body = []
        g_array = fixes.get(("g", j))   # whether eager's gradient here is an array (None: not seen)
        for i, edge in s.edges:
            if edge is None:
                continue
            g[f"R{j}_{i}"] = prim.vjps[i]
            line = None
            if s.asarray and fixes.get((j, i)) == (False, False) and g_array is not None:
                line = _inline.loose_rule(prim, i, prim.vjps[i], s, "g[()]" if g_array else "g",
                                          lambda k: need_scalar(s.args[k]) if s.saved is not None and s.saved[k]
                                          else None, bind, orders)
            if line is None:
                line = _inline.rule_line(prim, i, prim.vjps[i], s.out_dtype, out, args[:len(s.in_meta)], values,
                                         bind, s.node_params, s.out_size, tconst)
            body.append(f"gi = {line}" if line is not None else f"gi = R{j}_{i}(X, g, {out}, {', '.join(args)})")
            f = fixes.get((j, i), "unknown")
            shape, dt = s.in_meta_shape[i]
            if f is None or f == "unknown":
                g[f"S{j}_{i}"] = (prim, i, shape, dt)
                body.append(f"if gi is not None: gi = _fix(gi, S{j}_{i})")
            else:
                if f[0]:
                    g[f"S{j}_{i}"] = shape
                    body.append(f"if gi is not None: gi = X.sum_to(gi, S{j}_{i})")
                if f[1]:
                    g[f"D{j}_{i}"] = dt
                    body.append(f"if gi is not None: gi = X.cast(gi, D{j}_{i})")
            route(edge, body)
        e += n_ext
        if len(body) >= 2 and body[-1] == "g = gi" and body[-2].startswith("gi = "):
            body[-2:] = [] if body[-2] == "gi = g" else ["g = " + body[-2][5:]]   # (the handed-over gradient)
        if body:
            lines.append("    if g is not None:")
            lines.extend("        " + b for b in body)
    lines.append("    return E")
    lines[n_head:n_head] = top
    src = "\n".join(lines) + "\n"
    exec(compile(src, "<ember.compile backward>", "exec"), g)
    fn = g["backward"]
    fn.source = src
    return fn


def _fix_dynamic(gi, spec):
    prim, i, shape, dt = spec
    if gi.shape != shape:
        err = _wrong_shape(prim, i, gi.shape, shape)
        if err is not None:
            raise err
        gi = _NP_NS.sum_to(gi, shape)
    if gi.dtype != dt:
        gi = _NP_NS.cast(gi, dt)
    return gi
