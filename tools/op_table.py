"""Print the README's op table from the op database and the registry.

    python tools/op_table.py            # the markdown table (what the README's "Op table" section holds)
    python tools/op_table.py --check    # exit 1 if README.md's table is out of date

One row per public op (module function or Tensor method, aliases merged): which of backward, double
backward and forward mode its op database entries test, and the dtypes they test it in.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import ember  # noqa: E402
from ember.ops import EXPORTS, METHODS  # noqa: E402
from ember.ops import DECLARED  # noqa: E402
from ember.ops._registry import SUBMODULES  # noqa: E402

BEGIN, END = "<!-- op-table:begin -->", "<!-- op-table:end -->"


def _submodule(dotted: str):
    """ember.<dotted> (``nn.functional`` is two levels down)."""
    obj = ember
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _op(f):
    """The op itself, not the registry's per-name argument-error wrapper or renamed copy, nor a Tensor method's
    schema numbering positions after self (ember/ops/_schema.py)."""
    f = f.__wrapped__ if getattr(f, "_ember_public", None) is not None else f
    return getattr(f, "_ember_function", f)


def _has_complex(args, kwargs) -> bool:
    for v in (*args, *kwargs.values()):
        if isinstance(v, (list, tuple)) and _has_complex(v, {}):
            return True
        if isinstance(v, ember.Tensor) and v.dtype.is_complex:
            return True
    return False


def _entries_calling():
    """({id(public function): [OpInfo, ...]}, {id(public function): complex status}): which database entries call
    each public function, and what it does on complex inputs in tests/test_complex_sweep.py's cases (the first two
    samples of each entry as complex128, where ember must do what PyTorch does): "yes" computes (and the sweep
    checks values, gradients, second order and forward mode against PyTorch), "refused" raises PyTorch's exception
    type, "gap" belongs to an entry listed in tests/complex_gaps.txt."""
    from op_db import OP_DB, complex_args
    with open(os.path.join(ROOT, "tests", "complex_gaps.txt")) as f:
        gapped = {line.split("[", 1)[1].split("-", 1)[0] for line in f if line.startswith("test_complex_")}
    calls: dict = {}
    cx: dict = {}
    complex_run = [False]
    current = [None]
    patched = []

    depth = [0]

    def recorder(f):
        def wrapper(*a, **k):
            # only the calls an entry makes itself count, not those ember makes inside them
            if current[0] is None or depth[0] > 0:
                return f(*a, **k)
            key = id(_op(f))
            on_complex = complex_run[0] and _has_complex(a, k)
            if not complex_run[0]:
                calls.setdefault(key, set()).add(current[0].name)
            depth[0] += 1
            try:
                out = f(*a, **k)
            except Exception:
                if on_complex:   # raising where PyTorch computes is the gap of a listed entry
                    cx.setdefault(key, set()).add("gap" if current[0].name in gapped else "refused")
                raise
            finally:
                depth[0] -= 1
            if on_complex:   # a listed entry's gap may lie in this call's values or gradients, or elsewhere
                cx.setdefault(key, set()).add("gap?" if current[0].name in gapped else "yes")
            return out
        return wrapper

    for name, f in METHODS.items():
        fn = f.fget if isinstance(f, property) else f
        orig = ember.Tensor.__dict__[name]
        patched.append((ember.Tensor, name, orig))
        setattr(ember.Tensor, name, property(recorder(fn)) if isinstance(f, property) else recorder(fn))
    for mod, table in [(ember, EXPORTS)] + [(_submodule(m), t) for m, t in SUBMODULES.items()]:
        for name, f in table.items():
            patched.append((mod, name, getattr(mod, name)))
            setattr(mod, name, recorder(f))
    by_name = {}
    try:
        for op in OP_DB:
            by_name[op.name] = op
            current[0] = op
            samples = op.sample_inputs()
            runs = [(False, s.args, s) for s in samples] + [(True, complex_args(op, s), s) for s in samples[:2]]
            for complex_run[0], arrays, s in runs:
                xs = [ember.tensor(a) for a in arrays]
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        op.op(ember, *xs, **s.kwargs)
                except Exception:  # noqa: BLE001 - error samples are part of the database
                    pass
    finally:
        current[0] = None
        for obj, name, orig in reversed(patched):
            setattr(obj, name, orig)
    status = {k: next(c for c in ("gap", "yes", "gap?", "refused") if c in v).rstrip("?") for k, v in cx.items()}
    return {k: [by_name[n] for n in sorted(v)] for k, v in calls.items()}, status


def rows():
    """(names, grad, gradgrad, fwd, complex, dtypes) per public function."""
    names: dict = {}
    for name, f in EXPORTS.items():
        f = _op(f)
        names.setdefault(id(f), (f, []))[1].append(f"`{name}`")
    for m, table in SUBMODULES.items():
        for name, f in table.items():
            f = _op(f)
            names.setdefault(id(f), (f, []))[1].append(f"`{m}.{name}`")
    for name, f in METHODS.items():
        f = f.fget if isinstance(f, property) else _op(f)
        names.setdefault(id(f), (f, []))[1].append(f"`Tensor.{name}`")
    entries, complex_status = _entries_calling()
    out = []
    for key, (f, ns) in names.items():
        ops = entries.get(key, [])
        flag = lambda attr: "yes" if ops and any(getattr(o, attr) for o in ops) else "-"  # noqa: E731
        dtypes = {d for o in ops for d in o.dtypes}
        if "float32" in dtypes:   # tests/test_ops.py::test_forward_bf16 runs every float32 entry in bfloat16
            dtypes.add("bfloat16")
        dtypes = sorted(dtypes)
        out.append((", ".join(ns), flag("supports_grad"), flag("supports_gradgrad"), flag("supports_fwd"),
                    complex_status.get(key, "-"),
                    " ".join(d.replace("float", "f").replace("int", "i") for d in dtypes) or "untested"))
    return sorted(out, key=lambda r: r[0].lower().replace("`", "").replace("tensor.", ""))


def table() -> str:
    rs = rows()
    n_fn = len(EXPORTS) + sum(len(t) for t in SUBMODULES.values())
    n_prims = len(DECLARED)
    lines = [f"{len(rs)} public ops ({n_fn} module-level names, {len(METHODS)} Tensor methods and operators, "
             f"aliases merged into one row), built on {n_prims} primitives. Generated by "
             "`python tools/op_table.py` from the op database: a \"yes\" means the database tests it against "
             "PyTorch and central differences; dtypes are those the forward test runs (bf16, f16/f32/f64, "
             "i8-i64, bool). The complex column is tests/test_complex_sweep.py's (the first two samples of every "
             "entry as complex128, against PyTorch): \"yes\" computes and matches PyTorch's values, gradients (the "
             "conjugate Wirtinger derivative), second order and forward mode; \"refused\" raises PyTorch's "
             "exception type, as PyTorch refuses complex there; \"gap\" differs from PyTorch somewhere "
             "(tests/complex_gaps.txt); \"-\" no complex sample reaches it.", "",
             "| op | backward | double backward | forward mode | complex | dtypes |", "|---|---|---|---|---|---|"]
    lines += [f"| {n} | {g} | {gg} | {fw} | {c} | {d} |" for n, g, gg, fw, c, d in rs]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = ap.parse_args()
    text = table()
    readme = os.path.join(ROOT, "README.md")
    with open(readme) as f:
        content = f.read()
    if args.check or args.write:
        i, j = content.find(BEGIN), content.find(END)
        if i < 0 or j < 0:
            print("README.md has no op-table markers", file=sys.stderr)
            return 1
        new = content[:i + len(BEGIN)] + "\n" + text + "\n" + content[j:]
        if args.write:
            with open(readme, "w") as f:
                f.write(new)
            return 0
        return 0 if new == content else 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
