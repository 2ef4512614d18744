"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` new processes, as torch.multiprocessing.

Each child reports an exception by writing its formatted traceback (pickled) to a file of its own and exiting
with status 1; the parent waits on the processes' sentinels, and at the first failure stops the others (SIGTERM,
then SIGKILL after the grace period) and raises ``ProcessRaisedException`` (with the child's traceback) or
``ProcessExitedException`` (exit status or signal), with PyTorch's messages.

A function that makes a process group (``init_process_group`` with ``world_size`` > 1) cannot run in children of
``multiprocessing`` (they are not MPI processes): such a child exits with a marker, and the parent starts the whole
spawn again as one MPI job (``_mpi_spawn.py``); later spawns of the same parent go to MPI at once
(``EMBER_SPAWN_MPI=1`` in the environment: always, ``0``: never).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from typing import Callable

from . import _mpi_spawn

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
           "SpawnContext", "start_processes"]

log = logging.getLogger(__name__)


class ProcessException(Exception):
    """A spawned process failed: which one (``error_index``) and its pid (``error_pid``)."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero status (``exit_code``) or was killed by a signal (``signal_name``)."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _die_with_parent() -> None:
    """Linux: the child gets SIGINT when its parent dies (prctl PR_SET_PDEATHSIG), so no orphan keeps running."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGINT), 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_NEEDS_MPI_EXIT = 94   # a child's exit status when its function needs MPI (with the marker file beside error_file)


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The child's entry point: ``fn(i, *args)``; an exception's traceback goes to ``error_file``, status 1 (an
    ``init_process_group`` that needs MPI: the marker ``error_file + '.mpi'``, status 94)."""
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass   # the parent stopped us (SIGINT)
    except Exception as e:
        if getattr(e, "ember_needs_mpi", False) and os.environ.get("EMBER_SPAWN_MPI", "") != "0":
            open(error_file + ".mpi", "wb").close()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(_NEEDS_MPI_EXIT)
        partial = error_file + ".part"   # renamed when complete: a parent polling for it never reads half
        with open(partial, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        os.replace(partial, error_file)
        sys.exit(1)


def _signal_name(exitcode: int) -> str:
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"<Unknown signal {-exitcode}>"


class ProcessContext:
    """The processes ``start_processes(..., join=False)`` started: ``join()`` them, read their ``pids()``."""

    def __init__(self, processes: list, error_files: list):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}
        self._relaunch: Callable | None = None   # starts the job again on MPI (set by start_processes)
        self._mpi = None                         # that job's MPIProcessContext, once started

    def pids(self) -> list:
        if self._mpi is not None:
            return self._mpi.pids()
        return [int(p.pid) for p in self.processes]

    def _wait_all(self, seconds: float) -> None:
        """Joins every process, all within ``seconds`` together."""
        deadline = time.monotonic() + seconds
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Waits (up to ``timeout`` seconds) for a process to end. True when all have ended well; False when some
        still run. A failed process stops the others (after ``grace_period``, SIGTERM, then SIGKILL) and raises
        ``ProcessRaisedException`` or ``ProcessExitedException`` for it."""
        if self._mpi is not None:
            return self._mpi.join(timeout, grace_period)
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        if self._relaunch is not None and os.path.exists(self.error_files[failed] + ".mpi"):
            self._stop_all(5.0)   # the others stop at the same call (or are stopped): start again on MPI
            for path in self.error_files:
                if os.path.exists(path + ".mpi"):
                    os.unlink(path + ".mpi")
            self._mpi = self._relaunch()
            return self._mpi.join(timeout, grace_period)
        self._stop_all(grace_period)
        self._raise_for(failed)

    def _stop_all(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._wait_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", p.pid)
                p.terminate()
        self._wait_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via SIGKILL", p.pid)
                p.kill()
            p.join()

    def _raise_for(self, index: int) -> None:
        proc, path = self.processes[index], self.error_files[index]
        if not os.access(path, os.R_OK):   # no traceback written: it exited or was killed
            code = proc.exitcode
            if code < 0:
                name = _signal_name(code)
                raise ProcessExitedException(f"process {index:d} terminated with signal {name}", error_index=index,
                                             error_pid=proc.pid, exit_code=code, signal_name=name)
            raise ProcessExitedException(f"process {index:d} terminated with exit code {code:d}", error_index=index,
                                         error_pid=proc.pid, exit_code=code)
        with open(path, "rb") as f:
            trace = pickle.load(f)
        os.unlink(path)
        raise ProcessRaisedException(f"\n\n-- Process {index:d} terminated with the following error:\n{trace}",
                                     index, proc.pid)


class SpawnContext(ProcessContext):
    """The old name of ProcessContext (deprecated, with PyTorch's warning)."""

    def __init__(self, processes: list, error_files: list):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def _error_file() -> str:
    """A fresh path for a child's traceback (the file exists only if the child raised)."""
    with tempfile.NamedTemporaryFile(prefix="pytorch-errorfile-", suffix=".pickle", delete=False) as f:
        path = f.name
    os.unlink(path)
    return path


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Starts ``nprocs`` processes (``start_method``: 'spawn', 'fork' or 'forkserver') running ``fn(i, *args)``
    for i in 0..nprocs-1; with ``join`` waits for them all (raising for the first that fails), else returns
    their ProcessContext."""
    mode = os.environ.get("EMBER_SPAWN_MPI", "")
    if nprocs > 0 and (mode == "1" or (mode != "0" and _State.needs_mpi)):
        context = ProcessContext([], [])
        context._mpi = _mpi_spawn.start(fn, args, nprocs, _ERRORS)
        return _joined(context, join)

    def relaunch():
        _State.needs_mpi = True
        return _mpi_spawn.start(fn, args, nprocs, _ERRORS)
    ctx = multiprocessing.get_context(start_method)
    processes, files = [], []
    for i in range(nprocs):
        files.append(_error_file())
        p = ctx.Process(target=_wrap, args=(fn, i, args, files[-1]), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, files)
    context._relaunch = relaunch
    return _joined(context, join)


_ERRORS = (ProcessRaisedException, ProcessExitedException)


class _State:
    needs_mpi = False   # a spawn of this process needed MPI: the next ones start on MPI at once


def _joined(context: ProcessContext, join: bool) -> ProcessContext | None:
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """``start_processes`` with the 'spawn' start method (another ``start_method`` is ignored, with PyTorch's
    FutureWarning): ``fn(i, *args)`` in ``nprocs`` fresh interpreters; ``fn`` must be importable (module level)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t torch.multiprocessing.start_processes(...)",
                      FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")

