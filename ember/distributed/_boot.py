"""What each process of ``python -m ember.distributed.run`` runs: torchrun's per-process environment from MPI's
(RANK, LOCAL_RANK, ROLE_RANK), then the script as ``__main__`` (or a module with -m, an executable with
--no-python)."""
from __future__ import annotations

import os
import runpy
import sys

from . import _MPI_ENV


def _set_env() -> None:
    for var in ("RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "WORLD_SIZE"):
        for n in _MPI_ENV[var]:
            if n in os.environ:
                os.environ[var] = os.environ[n]
                break
    os.environ["ROLE_RANK"] = os.environ.get("RANK", "0")


def main(argv: list) -> None:
    _set_env()
    mode = None
    if argv and argv[0] in ("-m", "--no-python"):
        mode, argv = argv[0], argv[1:]
    target, args = argv[0], argv[1:]
    if mode == "--no-python":
        os.execvp(target, [target, *args])
    sys.argv = [target, *args]
    if mode == "-m":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
