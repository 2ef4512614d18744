"""Run a user program with real PyTorch or with ember posing as ``torch``.

    python _as_torch.py LIB SCRIPT [ARG ...]

LIB is "torch" (real PyTorch) or "ember": then ``import torch`` and ``import torch.X``
give ember and ember.X (the alias finder of tests/seed_snippets/_runner.py).  SCRIPT
runs as ``__main__`` with ``sys.argv = [SCRIPT, ARG ...]`` and its own directory first
on ``sys.path``, as ``python SCRIPT ARG ...`` would run it; the working directory is
the caller's.
"""
import importlib
import os
import runpy
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "seed_snippets"))
from _runner import _AliasFinder  # noqa: E402


def main(argv):
    lib, script, args = argv[0], os.path.abspath(argv[1]), argv[2:]
    if lib != "torch":
        sys.modules["torch"] = importlib.import_module(lib)
        sys.meta_path.insert(0, _AliasFinder(lib))
    sys.path[0] = os.path.dirname(script)
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
