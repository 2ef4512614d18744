"""Device neutrality: only ember/devices/ calls an array library.

Everything else reaches arrays through the namespace of their device (``xp``, ``backend_of(array)``). Host-side code
(files, pictures, collating host data, the demo) may use NumPy on host data. A NumPy use anywhere else fails, unless
BUDGET (per file, which may only shrink) allows it: BUDGET held the work left while the ops were moved into the
devices (issue 17), and is empty now.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ember"

# Host side: may use NumPy on host data. _formatting.py formats the host copy Tensor.__repr__ takes
# (backend.to_numpy). _dtype.py describes ember's dtypes by NumPy dtype objects (metadata: names, sizes, ranges,
# promotion), which a device translates to its own at its boundary; it computes on no array.
HOST = ("serialization/", "viz/", "demo/", "__main__.py", "utils/data/", "utils/tensorboard", "_formatting.py",
        "_dtype.py")

# Not yet device-neutral: NumPy uses (attribute reads of the numpy module, names imported from it) per file.
BUDGET = {
}


def _exempt(tree) -> set:
    """Nodes that are type checks at the host boundary, not array work: the classes in ``isinstance(x, ...)``
    (a user may pass NumPy scalars as arguments), and annotations."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            out.update(id(n) for n in ast.walk(node.args[1]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anns = [a.annotation for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs]
            anns += [node.returns]
            out.update(id(n) for a in anns if a is not None for n in ast.walk(a))
        elif isinstance(node, ast.AnnAssign):
            out.update(id(n) for n in ast.walk(node.annotation))
    return out


def numpy_uses(path: Path) -> int:
    """How many times ``path`` reads something from NumPy: ``np.x`` for every alias the module binds to numpy
    (at any level), and every use of a name imported ``from numpy import ...``; type checks and annotations
    excepted (see ``_exempt``)."""
    tree = ast.parse(path.read_text(), str(path))
    exempt = _exempt(tree)
    aliases, names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "numpy" or a.name.startswith("numpy."):
                    aliases.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "numpy":
            names.update(a.asname or a.name for a in node.names)
    count = 0
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            count += 1
        elif isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            count += 1
    return count


def _files() -> dict:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("devices/") or rel.startswith(HOST):
            continue
        n = numpy_uses(path)
        if n:
            out[rel] = n
    return out


def test_numpy_only_in_devices_and_host_code():
    uses = _files()
    over = {f: (n, BUDGET.get(f, 0)) for f, n in uses.items() if n > BUDGET.get(f, 0)}
    assert not over, ("NumPy used outside ember/devices/ (file: uses, budget). Reach arrays through the device "
                      "namespace instead (see README, 'How to add a device'):\n"
                      + "\n".join(f"  {f}: {n} > {b}" for f, (n, b) in sorted(over.items())))


def test_budget_is_kept_tight():
    """A file whose NumPy uses went down lowers its budget, so the count can only go one way."""
    uses = _files()
    slack = {f: (uses.get(f, 0), b) for f, b in BUDGET.items() if uses.get(f, 0) < b}
    assert not slack, "lower these budgets in tests/test_device_neutral.py (file: uses, budget):\n" + "\n".join(
        f"  {f}: {n} < {b}" for f, (n, b) in sorted(slack.items()))


def test_the_counter_sees_aliases_and_imported_names(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import numpy as xp\nfrom numpy import zeros as z\n"
                 "def f(a: xp.ndarray) -> xp.ndarray:\n    import numpy\n    if isinstance(a, (int, xp.integer)):\n"
                 "        return a\n    return xp.sum(a) + numpy.ones(2) + z(3)\n")
    assert numpy_uses(p) == 3
