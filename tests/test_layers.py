"""The house: ember's modules form layers, and every import points down.

    devices -> core -> autograd -> ops -> nn, optim, utils, func -> serialization, viz, demo, the package root

Every import statement of every module counts, the ones inside functions too, and importing ``a.b.c`` also imports
the packages ``a`` and ``a.b`` (Python runs their ``__init__`` first). An import may point into its own layer or a
lower one, never up, and the modules form no cycle, not even within a layer.

One thing is allowed that is not an import statement: a package's module ``__getattr__`` (PEP 562) may load one of
the package's own submodules on first access (``ember.autograd.functional``), as PyTorch's lazy attributes do. The
loaded module then imports its own dependencies, which this test checks like any other.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "ember"

# Module-name prefixes to layers (the longest matching prefix wins). Lower numbers are lower layers.
LAYERS = [
    ("devices", ["ember.devices"]),
    ("core", ["ember._dtype", "ember._state", "ember._device", "ember._hooks", "ember._origin", "ember._formatting",
              "ember._tensor", "ember._storage", "ember._util", "ember._settings", "ember._malloc", "ember.backends",
              "ember.futures"]),
    ("autograd", ["ember.autograd"]),
    ("ops", ["ember.ops", "ember.linalg", "ember.special"]),
    ("library", ["ember.nn", "ember.optim", "ember.utils", "ember.func", "ember.cuda", "ember.cpu", "ember.amp",
                 "ember.distributed", "ember.multiprocessing",
                 "ember.autograd.functional", "ember.autograd.gradcheck", "ember.autograd._explain",
                 "ember.autograd.profiler", "ember.profiler"]),
    ("host", ["ember.serialization", "ember.viz", "ember.demo",
              "ember.__main__", "ember"]),
]


def _modules() -> dict:
    mods = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def layer_of(mod: str) -> int:
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    assert best is not None, f"{mod} is in no layer: add it to LAYERS in {__file__}"
    return best


def _targets(mod: str, node, is_pkg: bool) -> list:
    """The ember modules an import statement in ``mod`` loads (with their parent packages). A package named
    explicitly (``import ember``, ``from .. import abs``: names read from the package) counts even when it is
    one of ``mod``'s own packages; the packages a submodule import runs implicitly do not (they are already
    being imported when ``mod`` runs)."""
    explicit, loaded = set(), set()
    if isinstance(node, ast.Import):
        explicit = {a.name for a in node.names}
    else:
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            b = ".".join(base + ([node.module] if node.module else []))
        else:
            b = node.module or ""
        subs = {f"{b}.{a.name}" for a in node.names if f"{b}.{a.name}" in MODULES}
        explicit = subs | ({b} if len(subs) < len(node.names) else set())
    own = mod.split(".")
    ancestors = {".".join(own[:k]) for k in range(1, len(own) + (1 if is_pkg else 0))}
    out = set()
    for n in explicit:
        if not (n == "ember" or n.startswith("ember.")):
            continue
        while n not in MODULES and "." in n:
            n = n.rsplit(".", 1)[0]
        out.add(n)
        parts = n.split(".")
        for k in range(1, len(parts)):   # the packages above run first
            p = ".".join(parts[:k])
            if p not in ancestors:
                out.add(p)
    return sorted(out - {mod})


def _edges() -> dict:
    edges = defaultdict(dict)   # module -> {target: line}
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(mod, node, path.name == "__init__.py"):
                    edges[mod].setdefault(t, node.lineno)
    return edges


EDGES = _edges()


def test_every_module_has_a_layer():
    for mod in MODULES:
        layer_of(mod)


def test_no_import_points_up_a_layer():
    bad = []
    for mod, targets in EDGES.items():
        for t, line in targets.items():
            if layer_of(t) > layer_of(mod):
                bad.append(f"{MODULES[mod].relative_to(ROOT.parent)}:{line}: {mod} ({LAYERS[layer_of(mod)][0]}) "
                           f"imports {t} ({LAYERS[layer_of(t)][0]})")
    assert not bad, "imports that point up a layer:\n" + "\n".join(sorted(bad))


def _cycles() -> list:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):   # Tarjan's strongly connected components, iteratively
        work = [(v, iter(sorted(EDGES.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(EDGES.get(w, ())))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    cycles = _cycles()
    lines = []
    for comp in cycles:
        members = set(comp)
        lines.append(f"{len(comp)} modules: " + ", ".join(comp))
        for m in comp:
            for t, line in sorted(EDGES[m].items()):
                if t in members:
                    lines.append(f"    {MODULES[m].relative_to(ROOT.parent)}:{line}: {m} -> {t}")
    assert not cycles, "import cycles:\n" + "\n".join(lines)


def test_the_checker_sees_function_level_and_parent_package_imports(tmp_path):
    src = "def f():\n    from ..ops import creation\n"
    tree = ast.parse(src)
    node = tree.body[0].body[0]
    assert _targets("ember.autograd.engine", node, False) == ["ember.ops", "ember.ops.creation"]
    root = ast.parse("from .. import abs").body[0]   # a name read from the package root: the root counts
    assert _targets("ember.ops.nn_conv", root, False) == ["ember"]
    assert layer_of("ember.ops.creation") > layer_of("ember.autograd.engine")


@pytest.mark.parametrize("name", ["functional", "gradcheck"])
def test_lazy_submodules_of_autograd_still_resolve(name):
    import ember
    assert getattr(ember.autograd, name) is not None


def test_every_module_imports():
    """Modules loaded on first use (nn.utils, the optimizers, viz) import cleanly, not only ``import ember``."""
    import importlib
    for mod in sorted(MODULES):
        if not mod.endswith("__main__"):
            importlib.import_module(mod)
