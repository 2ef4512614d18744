"""``python -m ember.viz SCRIPT.py [--out graph.html] [-- SCRIPT ARGS]``: run a script, record its last
backward, and write the page (see ``ember.viz.to_html``)."""
from __future__ import annotations

import argparse
import os
import runpy
import sys

from ._graph import names_in
from ._record import record
from .html import build, write_page


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ember.viz",
                                 description="Run a script and write an HTML page of its last backward pass.")
    ap.add_argument("script", help="the Python script to run")
    ap.add_argument("--out", default="graph.html", help="where to write the page (default: graph.html)")
    argv = sys.argv[1:] if argv is None else list(argv)
    rest: list = []
    if "--" in argv:   # what follows "--" goes to the script
        k = argv.index("--")
        argv, rest = argv[:k], argv[k + 1:]
    a = ap.parse_args(argv)
    if not os.path.isfile(a.script):
        ap.error(f"no such script: {a.script}")
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [a.script] + rest
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    try:
        with record() as rec:
            namespace = runpy.run_path(a.script, run_name="__main__")
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    run = rec.last_run()
    if run is None:
        print(f"ember.viz: {a.script} ran no backward through an ember graph: nothing to show", file=sys.stderr)
        return 1
    roots = run.roots()
    out_snaps = {id(r): rec.values.get(r) for r in roots}
    names = names_in(namespace)
    note = ("Made by `python -m ember.viz`: the script's backward freed the graph, so the accumulation mode "
            "is not available here; call ember.viz.to_html(loss, path) in the script (before backward) for it.")
    write_page(a.out, build(roots, out_snaps, names, run, [], None, note))
    print(f"ember.viz: wrote {a.out} ({len(run.executed())} nodes in the last backward)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
