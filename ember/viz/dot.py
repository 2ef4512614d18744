"""``make_dot``: the autograd graph as Graphviz DOT, with torchviz's arguments and colours.

Gray boxes are backward nodes (named as ``grad_fn`` names them), blue boxes the leaves whose ``.grad``
backward fills, orange boxes saved tensors (``show_saved``), green boxes the outputs. Edges follow
``next_functions``, drawn from a node's input towards the node, as torchviz draws them.
"""
from __future__ import annotations

import shutil
import subprocess
import warnings
from typing import Any

from ._graph import (as_list, caller_names, collect, dtype_str, is_leaf_node, is_tensor, module_of, next_nodes,
                     node_name, param_name_of, param_names, saved_entries, size_str)

__all__ = ["make_dot", "DotGraph", "GraphvizNotFound"]

INSTALL_HINT = ("the Graphviz programs ('dot') are not installed or not on PATH: install them with "
                "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
                "`conda install graphviz`; the DOT text is in `.source` without them")

_NODE_ATTR = 'node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]'


class GraphvizNotFound(RuntimeError):
    """Raised when a picture is asked for and Graphviz's ``dot`` program cannot be run."""


def _q(text: str) -> str:
    """A DOT string literal (newlines become line breaks)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs_label(fn: Any, max_attr_chars: int) -> str:
    """The node's name, then its saved non-tensor attributes, one per line, values cut to
    ``max_attr_chars`` (torchviz's ``show_attrs`` label)."""
    name = node_name(fn)
    attrs = {}
    for k, v in saved_entries(fn):
        if is_tensor(v):
            attrs[k] = "[saved tensor]"
        elif isinstance(v, (tuple, list)) and any(is_tensor(x) for x in v):
            attrs[k] = "[saved tensors]"
        else:
            attrs[k] = str(v)
    if not attrs:
        return name
    width = max(max_attr_chars, 3)
    kw = max(len(k) for k in attrs)
    vw = min(max(len(v) for v in attrs.values()), width)
    cut = [(k, v if len(v) <= vw else v[:vw - 3] + "...") for k, v in attrs.items()]
    rule = "-" * max(kw + vw + 2, len(name))
    return name + "\n" + rule + "\n" + "\n".join(f"{k:<{kw}}: {v:>{vw}}" for k, v in cut)


def _tensor_label(t: Any, name: str) -> str:
    return f"{name}\n {size_str(t.shape)} {dtype_str(t)}"


def dot_source(outputs: Any, params: Any = None, show_saved: bool = False, show_attrs: bool = False,
               max_attr_chars: int = 50, group_modules: bool = False, names: dict | None = None) -> str:
    """The DOT text of ``make_dot`` (no graphviz package needed)."""
    outs = as_list(outputs)
    pnames = dict(names or {})
    pnames.update(param_names(params))
    ids: dict = {}   # id(object) -> DOT node id; the objects are kept alive in `keep` while we work
    keep: list = []
    lines: list = []
    grouped: dict = {}   # module qualified name -> node lines inside its box
    leaf_done: set = set()
    custom_saved: list = []

    def nid(obj) -> tuple[str, bool]:
        k = id(obj)
        if k in ids:
            return ids[k], False
        ids[k] = f"n{len(ids)}"
        keep.append(obj)
        return ids[k], True

    def emit(line: str, fn: Any = None) -> None:
        mod = module_of(fn) if (group_modules and fn is not None) else None
        (grouped.setdefault(mod, []) if mod else lines).append(line)

    roots, tail = [], []
    work = [(t, "darkolivegreen1") for t in outs]
    while work:   # the outputs, and (as torchviz) the base of an output that is a view, dotted
        t, colour = work.pop(0)
        tid, new = nid(t)
        if not new:
            continue
        name = pnames.get(id(t), pnames.get(id(t.grad_fn), ""))
        emit(f"{tid} [label={_q(_tensor_label(t, name))} fillcolor={colour}]")
        if t.grad_fn is not None:
            roots.append(t.grad_fn)
            tail.append((t.grad_fn, tid, ""))
        is_view = getattr(t, "_is_view", None)
        if is_view is not None and is_view() and t._base is not None:
            work.append((t._base, "darkolivegreen3"))
            tail.append((t._base, tid, " [style=dotted]"))
    nodes = collect(roots)
    for fn in nodes:
        fid, _ = nid(fn)
        if show_saved:
            for attr, val in saved_entries(fn):
                items = [(attr, val)] if is_tensor(val) else \
                    [(f"{attr}[{i}]", v) for i, v in enumerate(val) if is_tensor(v)] if isinstance(val, tuple) else []
                for label, v in items:
                    vid, new = nid(v)
                    if new:
                        emit(f"{vid} [label={_q(_tensor_label(v, label))} fillcolor=orange]", fn)
                    lines.append(f"{fid} -> {vid} [dir=none]")
        if is_leaf_node(fn):
            var = fn.variable
            vid, _ = nid(var)
            if id(var) not in leaf_done:   # also when drawn as a saved tensor already: a leaf is blue
                leaf_done.add(id(var))
                name = pnames.get(id(var)) or param_name_of(fn) or ""
                emit(f"{vid} [label={_q(_tensor_label(var, name))} fillcolor=lightblue]", fn)
            lines.append(f"{vid} -> {fid}")
        label = _attrs_label(fn, max_attr_chars) if show_attrs else node_name(fn)
        emit(f"{fid} [label={_q(label)}]", fn)
        for _, nxt in next_nodes(fn):
            lines.append(f"{nid(nxt)[0]} -> {fid}")
        for t in _function_saved(fn):   # a custom Function's ctx.save_for_backward, drawn always (torchviz)
            custom_saved.append((t, fid, fn))
    for t, fid, fn in custom_saved:
        # as torchviz: drawn after the nodes, so a saved leaf or output is redeclared orange (the last wins)
        vid, _ = nid(t)
        emit(f"{vid} [label={_q(_tensor_label(t, pnames.get(id(t), '')))} fillcolor=orange]", fn)
        lines.append(f"{vid} -> {fid} [dir=none]")
    for src, tid, style in tail:
        lines.append(f"{ids[id(src)]} -> {tid}{style}")
    if group_modules and not grouped:
        warnings.warn("make_dot(group_modules=True): no node carries a module name; run the forward inside "
                      "`with ember.viz.record_modules(model):` to draw the modules' boxes", stacklevel=3)
    body = _clusters(grouped) + lines
    # torchviz's resize_graph: 0.15 inch per node or edge statement, at least 12
    rows = len(lines) + sum(len(v) for v in grouped.values())
    size = max(12, rows * 0.15)
    graph_attr = f'graph [size="{size},{size}"]'
    return "digraph {\n\t" + graph_attr + "\n\t" + _NODE_ATTR + "\n" + "".join(f"\t{ln}\n" for ln in body) + "}\n"


def _function_saved(fn: Any) -> list:
    """The tensors a custom Function's backward node saved (``ctx.save_for_backward``); none once freed."""
    if not hasattr(type(fn), "saved_tensors"):
        return []
    try:
        vals = fn.saved_tensors
    except (AttributeError, RuntimeError):
        return []
    return [t for t in vals if t is not None and is_tensor(t)]


def _clusters(grouped: dict) -> list:
    """Nested ``subgraph cluster_*`` blocks, one per module, a module's box inside its parent's."""
    if not grouped:
        return []
    names = set(grouped)
    for q in list(names):   # boxes for parents that made no node themselves, so nesting shows
        parts = q.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts)))
    children: dict = {}
    for q in sorted(names):
        parent = q.rsplit(".", 1)[0] if "." in q else ""
        children.setdefault(parent, []).append(q)
    out: list = []
    # iterative depth-first emission: ("open", q) writes the header and pushes ("close", q) under children
    stack = [("open", q) for q in reversed(children.get("", []))]
    depth = 0
    while stack:
        what, q = stack.pop()
        if what == "close":
            depth -= 1
            out.append("\t" * depth + "}")
            continue
        pad = "\t" * depth
        cid = "cluster_" + "".join(c if c.isalnum() else "_" for c in q) + f"_{len(out)}"
        out.append(f"{pad}subgraph {cid} {{")
        out.append(f"{pad}\tlabel={_q(q)} style=rounded color=gray40 fontname=monospace fontsize=10")
        out.extend(f"{pad}\t{ln}" for ln in grouped.get(q, []))
        depth += 1
        stack.append(("close", q))
        stack.extend(("open", c) for c in reversed(children.get(q, [])))
    return out


def _run_dot(source: str, fmt: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFound(f"make_dot: cannot render to {fmt}: {INSTALL_HINT}")
    r = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"make_dot: dot -T{fmt} failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


class DotGraph:
    """What ``make_dot`` returns without the ``graphviz`` package: the DOT text in ``.source``, and
    ``pipe``/``render`` through the ``dot`` program. Shows itself as SVG in Jupyter."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __str__(self) -> str:
        return self.source

    def pipe(self, format: str = "svg") -> bytes:
        return _run_dot(self.source, format)

    def render(self, filename: str = "graph", format: str = "svg", **_: Any) -> str:
        path = f"{filename}.{format}"
        with open(path, "wb") as f:
            f.write(self.pipe(format))
        return path

    def _repr_svg_(self) -> str:
        return self.pipe("svg").decode()

    def _repr_html_(self) -> str:
        return self._repr_svg_()


def _graphviz_digraph(source: str):
    """A ``graphviz.Digraph`` holding ``source``, whose rendering errors say how to install Graphviz."""
    import graphviz

    class Digraph(graphviz.Digraph):
        def pipe(self, *args: Any, **kwargs: Any):
            try:
                return super().pipe(*args, **kwargs)
            except graphviz.ExecutableNotFound as e:
                raise GraphvizNotFound(f"make_dot: {INSTALL_HINT}") from e

        def render(self, *args: Any, **kwargs: Any):
            try:
                return super().render(*args, **kwargs)
            except graphviz.ExecutableNotFound as e:
                raise GraphvizNotFound(f"make_dot: {INSTALL_HINT}") from e

        def _repr_svg_(self) -> str:
            return self.pipe(format="svg", encoding="utf-8")

        def _repr_html_(self) -> str:
            return self._repr_svg_()

    body = source.split("\n")[1:-2]   # the lines between "digraph {" and "}"
    return Digraph(body=[ln + "\n" for ln in body])


def make_dot(output: Any, params: Any = None, show_attrs: bool = False, show_saved: bool = False,
             max_attr_chars: int = 50, *, group_modules: bool = False):
    """The autograd graph of ``output`` (a tensor, or a tuple/list of tensors) as a ``graphviz.Digraph``
    when the ``graphviz`` package is installed (the ``viz`` extra), else a ``DotGraph``; both have the DOT
    text in ``.source`` and render with ``.pipe(format=...)`` / ``.render(...)`` when Graphviz's programs
    are installed. The arguments are torchviz's, in its order (``group_modules`` is ember's, keyword-only).

    ``params``: names for leaves, a dict ``{name: tensor}`` or a module (its ``named_parameters()``);
    other leaves are named after the caller's variables holding them. ``show_saved``: the tensors each
    node saved for backward (orange). ``show_attrs``: each node's saved non-tensor attributes, values cut
    to ``max_attr_chars``. ``group_modules``: the nodes each submodule's forward made drawn inside a box
    labelled with the module's qualified name (the forward must have run under
    ``ember.viz.record_modules(model)``)."""
    names = caller_names(2)
    source = dot_source(output, params, show_saved, show_attrs, max_attr_chars, group_modules, names)
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return DotGraph(source)
    return _graphviz_digraph(source)
