"""What each MPI process of a ``spawn`` started on MPI runs (``_mpi_spawn.start``): prepare as a spawned child of
``multiprocessing`` does, then ``fn(rank, *args)`` (loading this package registered the tensor reducers that
unpickling the arguments needs)."""
from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pickle
import sys

from .spawn import _wrap

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def _child(workdir: str) -> None:
    """An MPI child: prepare as multiprocessing's spawned children do, then run ``fn(rank, *args)``."""
    rank = next(int(os.environ[v]) for v in _RANK_VARS if v in os.environ)
    with open(os.path.join(workdir, f"pid{rank}"), "w") as f:
        f.write(str(os.getpid()))
    with open(os.path.join(workdir, "prep.pickle"), "rb") as f:
        _mp_spawn.prepare(pickle.load(f))
    with open(os.path.join(workdir, f"payload{rank}.pickle"), "rb") as f:
        fn, args = pickle.load(f)
    try:
        _wrap(fn, rank, args, os.path.join(workdir, f"error{rank}.pickle"))
    except SystemExit as e:   # fn failed: leave without MPI_Finalize, which could wait for the other ranks
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(e.code if isinstance(e.code, int) else 1)


if __name__ == "__main__":
    _child(sys.argv[1])
