"""``to_html``: one self-contained page to step through a graph's forward and backward passes.

The page needs no network: the layout is computed here (longest-path layers, then barycentric ordering
within each layer), the picture is inline SVG, and a small inline script steps through what was recorded.
The backward steps are the engine's own run, logged through node hooks (``register_prehook`` /
``register_hook``): nothing here re-implements the engine.
"""
from __future__ import annotations

import html as _html
import json
import keyword
from typing import Any

from ._graph import (as_list, caller_names, collect, is_leaf_node, is_tensor, module_of, next_nodes, node_name,
                     param_name_of, saved_entries, sequence_nr, topo_inputs_first)
from ._page import CSS, JS
from ._record import Recorder, current_recorders, snap

__all__ = ["to_html"]

ACCUMULATION_RUNS = 3
_W, _H, _BW, _BH = 190, 84, 150, 60   # layer spacing, row spacing, box width and height (px)


def _layout(nodes: list) -> dict:
    """``{id(node): (x, y)}``: inputs on the left, outputs on the right."""
    order = topo_inputs_first(nodes)
    layer: dict = {}
    for fn in order:
        ins = [layer[id(n)] for _, n in next_nodes(fn) if id(n) in layer]
        layer[id(fn)] = 1 + max(ins) if ins else 0
    layers: dict = {}
    for fn in sorted(nodes, key=sequence_nr):
        layers.setdefault(layer[id(fn)], []).append(fn)
    pos: dict = {}
    for li in sorted(layers):
        row = layers[li]
        if li:   # barycentric ordering: a node sits near the mean row of its inputs
            def bary(fn, i):
                ys = [pos[id(n)] for _, n in next_nodes(fn) if id(n) in pos]
                return (sum(ys) / len(ys) if ys else i, i)
            row.sort(key=lambda fn, _i={id(f): i for i, f in enumerate(row)}: bary(fn, _i[id(fn)]))
        for i, fn in enumerate(row):
            pos[id(fn)] = i
    height = max(len(r) for r in layers.values())
    xy = {}
    for li, row in layers.items():
        off = (height - len(row)) * _H / 2
        for i, fn in enumerate(row):
            xy[id(fn)] = (20 + li * _W, 20 + off + i * _H)
    return xy


_NODE_HOOKS = ("_hooks", "_pre_hooks", "_tensor_hooks", "_retained")


class _Unhooked:
    """The page's own backward runs must not touch what the user sees: while this is entered, the user's
    node hooks, tensor hooks, retained-grad entries and post-accumulate hooks on the graph (``record()``'s
    hooks among them) are taken off, and each leaf's ``.grad`` starts from None; on exit every one is put
    back as it was (the same objects, so the user's handles still work) and whatever was registered
    meanwhile is dropped."""

    def __init__(self, nodes: list) -> None:
        self.nodes = nodes
        self.kept: list = []

    def __enter__(self) -> "_Unhooked":
        for fn in self.nodes:
            d = getattr(fn, "__dict__", None)
            if d is not None:
                self.kept.append((d, {a: d.pop(a) for a in _NODE_HOOKS if a in d}))
            if is_leaf_node(fn):
                m = fn.variable._get_meta()
                self.kept.append((m, (m.grad, m.hooks, m.post_acc_hooks)))
                m.grad = m.hooks = m.post_acc_hooks = None
        return self

    def __exit__(self, *exc) -> None:
        for obj, was in reversed(self.kept):
            if isinstance(was, dict):
                for a in _NODE_HOOKS:
                    obj.pop(a, None)
                obj.update(was)
            else:
                obj.grad, obj.hooks, obj.post_acc_hooks = was
        self.kept = []


def _own_backward(outputs: list, nodes: list, runs: int, grads: list | None = None, hooked: bool = True) -> tuple:
    """Run backward ``runs`` times (retain_graph) on the graph with the user's hooks off and each leaf's
    ``.grad`` from None (see ``_Unhooked``): the first run logged through node hooks of our own (when
    ``hooked``), and each leaf's ``.grad`` read after every run. Nothing the user can see changes: no user
    hook fires, no ``.grad`` (of a leaf or a retained non-leaf) changes, no hook is left behind.
    Returns (the first run or None, [{id(leaf): .grad after run k}])."""
    from ..autograd import backward
    rec = Recorder(max_runs=1)
    leaves = [fn.variable for fn in nodes if is_leaf_node(fn)]
    if grads is None:
        grads = [ones_like_for(t) for t in outputs]
    after: list = []
    with _Unhooked(nodes):
        rec.active = hooked
        handles = [h for fn in nodes for h in rec.hook(fn)] if hooked else []
        try:
            for _ in range(runs):
                backward(outputs, grads, retain_graph=True)
                rec.active = False
                after.append({id(t): snap(t.grad) for t in leaves})
        except RuntimeError as e:
            if "second time" in str(e):
                raise RuntimeError("to_html: the graph was already freed by a backward() without "
                                   "retain_graph=True; call to_html before backward, or run the program inside "
                                   "`with ember.viz.record():` so that its backward is recorded") from None
            raise
        finally:
            rec.active = False
            for h in handles:
                h.remove()
    return (rec.runs[0] if rec.runs else None), after


def ones_like_for(t: Any):
    from .. import ones_like   # a non-scalar output is given a gradient of ones
    return ones_like(t)


def _edges(fn: Any) -> list:
    """``[(k, (node, slot)), ...]``: the nodes ``fn`` sends gradients to, with the output slot of that
    node the gradient is for (a multi-output node receives one gradient per output)."""
    out = []
    for k, edge in enumerate(getattr(fn, "next_functions", ()) or ()):
        if edge is not None and edge[0] is not None:
            out.append((k, (edge[0], int(edge[1]))))
    return out


def _text(s: dict | None, fallback: str = "") -> str:
    if s is None:
        return fallback
    return s.get("text") or f"{tuple(s['shape'])} {s['dtype']}"


def build(roots: list, out_snaps: dict, names: dict, run, accum: list, inputs: dict | None = None,
          note: str = "", outputs: list | None = None) -> dict:
    """The page's data: nodes with positions and what to show, edges, forward and backward steps."""
    nodes = collect(roots)
    xy = _layout(nodes)
    recs = current_recorders()
    idx = {id(fn): i for i, fn in enumerate(nodes)}
    shapes: dict = {}
    if run is not None:
        for phase, fn, data in run.events:
            if phase == "pre" and data["grad_outputs"] and id(fn) not in shapes:
                shapes[id(fn)] = [None if g is None else g["shape"] for g in data["grad_outputs"]]
    first_use: dict = {}   # a leaf's node -> the sequence number of the first node here that reads it
    for fn in nodes:
        for _, n in next_nodes(fn):
            if is_leaf_node(n):
                first_use[id(n)] = min(first_use.get(id(n), sequence_nr(fn)), sequence_nr(fn))
    jn: list = []
    for i, fn in enumerate(nodes):
        x, y = xy[id(fn)]
        leaf = is_leaf_node(fn)
        if leaf:
            var = fn.variable
            label = names.get(id(var)) or param_name_of(fn) or "leaf"
            # its value when the forward read it (an optimizer may have changed it since), else now
            value = next((v for r in recs if (v := r.leaf_value(fn, first_use.get(id(fn), -1))) is not None),
                         None) or snap(var)
        else:
            label = node_name(fn)
            value = out_snaps.get(id(fn))
            if value is None:
                value = next((r.values.get(fn) for r in recs if r.values.get(fn) is not None), None)
        if isinstance(value, list):   # a multi-output node: one value per output
            value = {"text": "\n".join(f"output {k}: {_text(v, '(not recorded)')}" for k, v in enumerate(value)),
                     "shape": None}
        saved = []
        if not leaf:
            for k, v in saved_entries(fn):
                if is_tensor(v):
                    saved.append([k, _text(snap(v))])
                elif not isinstance(v, (tuple, list)) or not any(is_tensor(u) for u in v):
                    saved.append([k, str(v)[:60]])
        known = shapes.get(id(fn))
        shape = value["shape"] if value else (known[0] if known and len(known) == 1 else None)
        if value is None and known and len(known) > 1:
            value = {"text": "\n".join(f"output {k}: {'?' if sh is None else tuple(sh)}, value not recorded"
                                       for k, sh in enumerate(known)), "shape": None}
        jn.append({"id": i, "leaf": leaf, "label": label, "var": None if leaf else names.get(id(fn)),
                   "out": fn in roots, "x": x, "y": y, "value": _text(value, "(not recorded)" if shape is None
                                                                       else f"{tuple(shape)}, value not recorded"),
                   "shape": shape, "saved": saved, "module": module_of(fn), "seq": sequence_nr(fn)})
    edges = []
    edge_of: dict = {}
    for fn in nodes:
        for k, (nxt, slot) in _edges(fn):
            edge_of[(id(fn), k)] = len(edges)
            edges.append({"from": idx[id(nxt)], "to": idx[id(fn)], "k": k, "slot": slot})
    # forward: leaves are there from the start; ops in the order they were made (execution order)
    fwd = [idx[id(fn)] for fn in sorted(nodes, key=sequence_nr) if not is_leaf_node(fn)]
    bwd = []
    if run is not None:
        incoming: dict = {}
        for phase, fn, data in run.events:
            if id(fn) not in idx:
                continue
            i = idx[id(fn)]
            if phase == "pre":
                # one gradient per output of the node (split, unbind, custom Functions have several)
                incoming[i] = [_text(g, "None") for g in data["grad_outputs"]] or ["None"]
                continue
            flows = {}
            for k, g in enumerate(data["grad_inputs"]):
                e = edge_of.get((id(fn), k))
                if e is not None and g is not None:
                    flows[e] = _text(g)
            grads = incoming.get(i, [""])
            step = {"n": i, "grad": grads[0] if len(grads) == 1 else
                    "; ".join(f"output {k}: {g}" for k, g in enumerate(grads)), "flows": flows}
            if len(grads) > 1:
                step["grads"] = grads
            if "grad" in data:
                step["leafgrad"] = _text(data["grad"], "None")
            bwd.append(step)
    acc = []
    for after in accum:
        acc.append({idx[id(fn)]: _text(after.get(id(fn.variable)), "None") for fn in nodes if is_leaf_node(fn)})
    extra = []
    if inputs:
        in_graph = {id(fn.variable) for fn in nodes if is_leaf_node(fn)}
        for name, t in inputs.items():
            if id(t) in in_graph:   # backward reaches it: its .grad is on the page
                continue
            extra.append({"label": name, "why": _explain(t, name, outputs, names)})
    return {"nodes": jn, "edges": edges, "fwd": fwd, "bwd": bwd, "acc": acc, "extra": extra, "note": note}


def _explain(t: Any, name: str, outputs: list | None, names: dict) -> str:
    """``autograd.explain``'s reason, worded with the user's names (explain reads them from its caller's
    variables: here a namespace holding the tensor and the output under those names)."""
    try:
        from ..autograd import explain
        out = outputs[0] if outputs else None
        oname = names.get(id(out.grad_fn)) if out is not None else None
        ok = lambda s: bool(s) and s.isidentifier() and not keyword.iskeyword(s)  # noqa: E731
        ns = {"_explain": explain, "_t": t, "_o": out}
        call = "_explain(_t, _o)"
        if ok(name):
            ns[name] = t
        if ok(oname) and oname != name:
            ns[oname] = out
        return str(eval(call, ns))   # noqa: S307 - a fixed expression over our own namespace
    except Exception as e:  # noqa: BLE001 - the page still shows the leaf
        return f"(explain failed: {e})"


def _svg(data: dict) -> str:
    nodes = data["nodes"]
    w = max((n["x"] for n in nodes), default=0) + _BW + 40
    h = max((n["y"] for n in nodes), default=0) + _BH + 40
    parts = [f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">',
             '<defs><marker id="arr" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker></defs>']
    for i, e in enumerate(data["edges"]):
        a, b = nodes[e["from"]], nodes[e["to"]]
        x1, y1 = a["x"] + _BW, a["y"] + _BH / 2
        x2, y2 = b["x"], b["y"] + _BH / 2
        mx = (x1 + x2) / 2
        parts.append(f'<path id="e{i}" class="edge" d="M{x1},{y1} C{mx},{y1} {mx},{y2} {x2},{y2}" '
                     f'marker-end="url(#arr)"/>')
        parts.append(f'<text id="eg{i}" class="eg" x="{mx}" y="{(y1 + y2) / 2 - 4}"></text>')
    for n in nodes:
        cls = "node leaf" if n["leaf"] else "node op"
        if n["out"]:
            cls += " out"
        title = n["label"] if n["leaf"] or not n["var"] else f'{n["var"]} ({n["label"]})'
        name = n["label"] if n["leaf"] else (n["var"] or "")
        op = "" if n["leaf"] else n["label"]
        parts.append(f'<g id="n{n["id"]}" class="{cls}" data-i="{n["id"]}" transform="translate({n["x"]},{n["y"]})">'
                     f'<title>{_html.escape(title)}</title>'
                     f'<rect width="{_BW}" height="{_BH}" rx="8"/>'
                     f'<text x="8" y="16" class="nm">{_html.escape(name or op)}</text>'
                     f'<text x="8" y="16" class="opn" text-anchor="end" dx="{_BW - 16}">'
                     f'{_html.escape(op if name else "")}</text>'
                     f'<text x="8" y="34" id="v{n["id"]}" class="val"></text>'
                     f'<text x="8" y="51" id="g{n["id"]}" class="grad"></text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _json_for_script(data: dict) -> str:
    """JSON safe inside <script>: no "</script>", "<!--" or "<script" can close or confuse the element
    (each "<", ">", "&" written as a \\u escape, which JSON.parse reads back), nor U+2028/U+2029."""
    text = json.dumps(data, separators=(",", ":"))
    for c, e in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, e)
    return text


def page(data: dict, title: str = "ember graph") -> str:
    """The HTML text for ``data`` (see ``build``)."""
    payload = _json_for_script(data)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_html.escape(title)}</title>'
            f'<style>{CSS}</style></head><body>'
            '<header><b>ember</b> autograd graph'
            '<span class="modes"><button id="mode-steps" class="on">Forward / backward</button>'
            '<button id="mode-acc">Gradient accumulation</button></span></header>'
            '<nav><button id="reset" title="Reset (Home)">Reset</button>'
            '<button id="prev" title="Previous (&larr;)">&#x25C0; Prev</button>'
            '<button id="play" title="Play / pause (space)">&#x25B6; Play</button>'
            '<button id="next" title="Next (&rarr;)">Next &#x25B6;</button>'
            '<span id="phase">Phase: Idle</span></nav>'
            '<main><div id="canvas">' + _svg(data) + '</div>'
            '<aside><div id="status"></div><div id="details">Click a node to see its op, inputs, saved tensors, '
            'value and gradient.</div><div id="extra"></div></aside></main>'
            f'<script id="data" type="application/json">{payload}</script><script>{JS}</script></body></html>')


def to_html(outputs: Any, path: str, inputs: Any = None) -> str:
    """Write one self-contained HTML page (no network needed) for the graph of ``outputs`` to ``path``
    and return the path.

    The page steps through the forward pass (each node's value: its shape, and its values when small)
    and then the backward pass in the engine's real order, each gradient flowing along its edge and the
    contributions reaching a shared leaf shown as a sum, then each leaf's ``.grad``; a second mode runs
    the same graph backward several times without zeroing, ``.grad`` growing each time. Controls: next,
    previous, play/pause, reset, arrow keys and space; clicking a node shows its details.

    The backward shown is the last one recorded by ``ember.viz.record()`` through these outputs, else one
    run here (``retain_graph=True``). The page's own runs (that one, and the accumulation mode's) leave
    the program alone: the user's hooks on the graph (tensor hooks, node hooks, post-accumulate hooks,
    recorders) do not fire, and no ``.grad`` changes, of leaves or of retained non-leaves; so its numbers
    are those of the graph without the hooks. Intermediate values, and leaves' values as the forward read
    them, are known when the forward ran inside ``record()``; otherwise intermediate results show as
    shapes and leaves as they are now. A node with several outputs (split, unbind, a custom Function)
    shows one value and one incoming gradient per output.
    ``inputs``: tensors (a dict by name, or a list) whose ``.grad`` you expect: those that stay None are
    marked with ``autograd.explain``'s reason."""
    outs = as_list(outputs)
    names = caller_names(2)
    if isinstance(inputs, dict):
        names.update({id(t): k for k, t in inputs.items()})
    elif inputs is not None:
        inputs = {names.get(id(t), f"input {i}"): t for i, t in enumerate(as_list(inputs))}
    return _write(outs, path, names, inputs)


def _write(outs: list, path: str, names: dict, inputs: dict | None = None, run=None, note: str = "") -> str:
    roots = []
    for t in outs:
        if t.grad_fn is None:
            raise ValueError("to_html: an output has no grad_fn (it does not require grad, or is a leaf): "
                             "there is no graph to show")
        roots.append(t.grad_fn)
    nodes = collect(roots)
    out_snaps: dict = {}
    for t in outs:
        nr = getattr(t, "_output_nr", 0)
        if nr == 0 and not isinstance(out_snaps.get(id(t.grad_fn)), list):
            out_snaps[id(t.grad_fn)] = snap(t)
        else:   # outputs of one multi-output node: one value per output
            was = out_snaps.get(id(t.grad_fn))
            vals = was if isinstance(was, list) else [was]
            vals += [None] * (nr + 1 - len(vals))
            vals[nr] = snap(t)
            out_snaps[id(t.grad_fn)] = vals
    for t in outs:
        names.setdefault(id(t.grad_fn), names.get(id(t), None) or "output")
    if run is None:
        for r in current_recorders():
            run = r.last_run(roots)
            if run is not None:
                break
    accum: list = []
    if run is None:
        run, accum = _own_backward(outs, nodes, ACCUMULATION_RUNS)
    else:
        # the accumulation mode starts from the gradients the recorded backward was given
        grads = None
        rg = [run.root_grads.get(t.grad_fn) for t in outs]
        if all(g is not None and len(g) > t._output_nr and g[t._output_nr] is not None for g, t in zip(rg, outs)):
            grads = [g[t._output_nr] for g, t in zip(rg, outs)]
        try:
            _, accum = _own_backward(outs, nodes, ACCUMULATION_RUNS, grads, hooked=False)
        except RuntimeError:
            note = note or ("The accumulation mode needs the graph, which the program's backward freed "
                            "(run it with retain_graph=True to see it).")
    return write_page(path, build(roots, out_snaps, names, run, accum, inputs, note, outs))


def write_page(path: str, data: dict) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(page(data))
    return path
