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
    namespace: dict = {}
    code: int | None = None   # the script's own exit status (sys.exit), or None when it ran to its end
    failed: BaseException | None = None
    try:
        with record() as rec:
            try:
                namespace = runpy.run_path(a.script, run_name="__main__")
            except SystemExit as e:   # `sys.exit(main())`: still write the page, then exit with its code
                code = _exit_code(e)
            except Exception as e:  # noqa: BLE001 - write the page for what ran, then re-raise
                failed = e
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
    run = rec.last_run()
    if run is None:
        print(f"ember.viz: {a.script} ran no backward through an ember graph: nothing to show", file=sys.stderr)
        if failed is not None:
            raise failed
        return code if code else 1
    roots = run.roots()
    out_snaps = {id(r): rec.values.get(r) for r in roots}
    names = names_in(namespace)
    note = ("Made by `python -m ember.viz`: the script's backward freed the graph, so the accumulation mode "
            "is not available here; call ember.viz.to_html(loss, path) in the script (before backward) for it.")
    write_page(a.out, build(roots, out_snaps, names, run, [], None, note))
    print(f"ember.viz: wrote {a.out} ({len(run.executed())} nodes in the last backward)")
    if failed is not None:
        raise failed
    return code or 0


def _exit_code(e: SystemExit) -> int:
    """The status ``sys.exit(arg)`` exits with: None is 0, an int itself, anything else is printed and is 1."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
