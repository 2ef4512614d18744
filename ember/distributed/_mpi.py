"""The MPI transport under ember.distributed: communicators, waits against a deadline, fault reports.

Every transfer is a non-blocking MPI request polled against the process group's ``timeout`` (MPI's blocking calls
would wait forever for a rank that died). While it waits, a process answers the "are you alive?" pings of its peers
(on a duplicate of COMM_WORLD kept for that) and watches the processes of its own machine (their pids are exchanged
at start-up): a peer that died is named at once; at the deadline the peers that do not answer a ping are named.

Before a collective moves data, the ranks exchange a small signature of what they pass (the collective, the root,
the reduction, the dtype and shape; per-peer counts for all_to_all): one allgather of 16 + 2 * world_size int64s.
A mismatch raises the same RuntimeError on every rank instead of corrupting data or hanging. ``EMBER_DIST_CHECK=0``
in the environment skips it.

mpi4py is imported only when a process group is made (importing it starts MPI).
"""
from __future__ import annotations

import array
import os
import sys
import time
import zlib
from typing import Any, Callable, Sequence

from ._errors import DistBackendError

MPI: Any = None          # mpi4py.MPI once started
_PING, _PONG, _NOTICE = 31001, 31002, 31003
_YIELD_S = float(os.environ.get("EMBER_DIST_YIELD_S", "0.01"))   # see Comm.wait
_MAXDIM = 8
_faulted = False         # a transport fault happened: the process exits without MPI_Finalize (it could hang)


def launched_by_mpi() -> bool:
    """Whether an MPI launcher (Open MPI's mpiexec/prterun, MPICH's hydra, Slurm's PMI) started this process."""
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"))


def start() -> Any:
    """Import mpi4py (which initialises MPI) once; return COMM_WORLD with errors returned, not fatal."""
    global MPI
    if MPI is None:
        os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")   # oversubscribed ranks yield the core
        from mpi4py import MPI as _MPI
        MPI = _MPI
        import atexit
        atexit.register(_exit_after_fault)
        hook = sys.excepthook

        def _uncaught(*exc_info):   # a rank dying of an exception leaves at once (its peers see it die)
            global _faulted
            _faulted = True
            hook(*exc_info)
        sys.excepthook = _uncaught
    MPI.COMM_WORLD.Set_errhandler(MPI.ERRORS_RETURN)
    return MPI.COMM_WORLD


def _exit_after_fault() -> None:
    """After a transport fault or an uncaught exception, MPI_Finalize may wait forever for a peer (or make the
    peers wait for this one): leave without it."""
    if _faulted:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


class Comm:
    """One process group's communicator, with the world's ranks of its members and its timeout (seconds)."""

    def __init__(self, comm: Any, world: "World", timeout: float):
        self.comm = comm
        self.world = world
        self.timeout = timeout
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        group, wgroup = comm.Get_group(), world.comm.Get_group()
        self.world_ranks = list(MPI.Group.Translate_ranks(group, list(range(self.size)), wgroup))

    # ----- waiting ------------------------------------------------------------------------------------------
    def wait(self, requests: Sequence[Any], what: str, timeout: float | None = None,
             statuses: list | None = None) -> None:
        """Wait for ``requests`` (MPI requests) to complete, at most ``timeout`` (default: the group's) seconds;
        a peer that died or does not answer ends it with DistBackendError naming the rank."""
        reqs = [r for r in requests if r is not None]
        if not reqs:
            return
        if MPI.Request.Testall(reqs, statuses):
            return
        t0 = time.monotonic()
        test = MPI.Request.Testall
        # Spin on MPI's progress for 0.5 ms (a collective among running peers completes here, at MPI's latency),
        # then yield the core for _YIELD_S (10 ms; EMBER_DIST_YIELD_S), then sleep 50 us growing to 1 ms (a rank
        # waiting long frees the core; a non-blocking collective progresses only when tested, so long sleeps
        # would slow the transfer of large messages).
        while time.monotonic() - t0 < 5e-4:
            if test(reqs, statuses):
                return
        deadline = t0 + (self.timeout if timeout is None else timeout)
        next_check = t0 + 0.2
        pause = 0.0
        while True:
            if test(reqs, statuses):
                return
            now = time.monotonic()
            if pause or now >= next_check:
                self.world.serve()
            if now >= next_check:
                dead = self.world.culprits(self.world.dead_peers())
                if dead:
                    self._fail(reqs, what, f"rank{_names(dead)} died (its process is gone)", dead)
                next_check = now + 0.2
            if now >= deadline:
                silent = self.world.culprits(self.world.silent_peers(self.world_ranks))
                why = (f"rank{_names(silent)} did not respond (dead, hung, or not in this collective)" if silent
                       else "every rank responds: they called different collectives or waited on something else")
                self._fail(reqs, what, f"timed out after {now - t0:.1f} s; {why}", silent)
            if now - t0 > _YIELD_S:
                pause = min(1e-3, pause * 2 or 5e-5)
            time.sleep(pause)

    def _fail(self, reqs: list, what: str, why: str, culprits: list) -> None:
        global _faulted
        _faulted = True
        self.world.notify(culprits)
        for r in reqs:
            try:
                r.Cancel()
            except Exception:   # noqa: BLE001  (a collective cannot be cancelled: it is abandoned)
                pass
        raise DistBackendError(f"ember.distributed: {what} on rank {self.world.rank}: {why}")

    def run(self, start: Callable[[], Any], what: str) -> Any:
        """``start()`` (an MPI call that returns a request or a list of them), with MPI's errors as RuntimeError."""
        try:
            return start()
        except MPI.Exception as e:
            raise RuntimeError(f"ember.distributed: {what} failed in MPI: {e.Get_error_string()}") from None

    # ----- the signature check -----------------------------------------------------------------------------
    def check(self, kind: str, sig: Sequence[int], describe: Callable[[list], str | None]) -> None:
        """Exchange ``(kind, *sig)`` (ints) and the per-rank rows; ``describe(rows)`` returns a message when they
        disagree (every rank sees the same rows, so every rank raises the same error)."""
        if self.size == 1 or os.environ.get("EMBER_DIST_CHECK", "1") == "0":
            return
        width = 16 + 2 * self.size
        row = [zlib.crc32(kind.encode())] + [int(v) for v in sig]
        row = (row + [0] * width)[:width]
        mine = array.array("q", row)
        every = array.array("q", bytes(8 * width * self.size))
        req = self.run(lambda: self.comm.Iallgather([mine, MPI.INT64_T], [every, MPI.INT64_T]), kind)
        self.wait([req], kind)
        rows = [list(every[i * width:(i + 1) * width]) for i in range(self.size)]
        if any(r[0] != rows[0][0] for r in rows):
            per = "; ".join(f"rank {i}: {_KINDS.get(r[0], '?')}" for i, r in enumerate(rows))
            raise RuntimeError(f"ember.distributed: the ranks called different collectives at the same time ({per})")
        msg = describe([r[1:] for r in rows])
        if msg:
            raise RuntimeError(f"ember.distributed: {kind}: {msg}")


# the collectives' names by their signature code (for the message when ranks call different ones)
_KINDS = {zlib.crc32(k.encode()): k for k in (
    "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier", "monitored_barrier",
    "broadcast_object_list", "all_gather_object", "gather_object")}


def tensor_sig(dtype: Any, shape: Sequence[int], extra: Sequence[int] = ()) -> list:
    """A tensor's signature: dtype code, ndim, shape (8 dims; a longer shape's tail as a hash), then ``extra``."""
    shape = list(shape)
    ndim = len(shape)
    if ndim > _MAXDIM:
        shape = shape[:_MAXDIM - 1] + [zlib.crc32(repr(shape).encode())]
    shape = shape + [-1] * (_MAXDIM - len(shape))
    return [dtype_code(dtype), ndim] + shape + list(extra)


def dtype_code(dtype: Any) -> int:
    return zlib.crc32(str(dtype).encode())


def sig_text(row: Sequence[int], names: dict) -> str:
    """A signature row back as 'torch.float32 [2, 3]' (names: dtype code -> name)."""
    ndim = row[1]
    return f"{names.get(row[0], '?')} {list(row[2:2 + min(ndim, _MAXDIM)])}"


def _names(ranks: Sequence[int]) -> str:
    """' 1' or 's 0, 2' (after the word 'rank')."""
    return (" " if len(ranks) == 1 else "s ") + ", ".join(str(r) for r in ranks)


class World:
    """COMM_WORLD and what fault reports need: a duplicate for pings, every rank's host and pid."""

    def __init__(self, comm: Any):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.health = comm.Dup()
        self.health.Set_errhandler(MPI.ERRORS_RETURN)
        import socket
        me = (socket.gethostname(), os.getpid())
        self.where = comm.allgather(me)
        self._ping_buf = bytearray(1)
        self._blamed: dict = {}   # rank -> the ranks it said it failed because of

    def serve(self) -> None:
        """Answer the peers' pings (a waiting process is alive)."""
        while True:
            status = MPI.Status()
            if not self.health.Iprobe(source=MPI.ANY_SOURCE, tag=_PING, status=status):
                return
            self.health.Recv([self._ping_buf, MPI.BYTE], source=status.Get_source(), tag=_PING)
            self.health.Isend([b"\x01", MPI.BYTE], dest=status.Get_source(), tag=_PONG)

    def notify(self, culprits: list) -> None:
        """Tell every peer that this rank fails because of ``culprits`` (so that a peer seeing this rank exit next
        names the culprits, not this rank)."""
        msg = array.array("q", culprits or [-1])
        for r in range(self.size):
            if r != self.rank:
                try:
                    self.health.Isend([msg, MPI.INT64_T], dest=r, tag=_NOTICE)
                except Exception:   # noqa: BLE001  (a dead peer)
                    pass
        self._sent = msg   # kept alive until the process ends

    def culprits(self, ranks: list) -> list:
        """``ranks`` (dead or silent) less those that failed because of others, plus those others."""
        while True:
            status = MPI.Status()
            if not self.health.Iprobe(source=MPI.ANY_SOURCE, tag=_NOTICE, status=status):
                break
            buf = array.array("q", bytes(status.Get_count(MPI.BYTE)))
            self.health.Recv([buf, MPI.INT64_T], source=status.Get_source(), tag=_NOTICE)
            self._blamed[status.Get_source()] = [r for r in buf if r >= 0]
        blamed = self._blamed
        out = set()
        for r in ranks:
            if r in blamed and blamed[r]:
                out.update(c for c in blamed[r] if c != self.rank)
            else:
                out.add(r)
        return sorted(out)

    def dead_peers(self) -> list:
        """The ranks on this machine whose process is gone (or a zombie)."""
        host = self.where[self.rank][0]
        dead = []
        for r, (h, pid) in enumerate(self.where):
            if r == self.rank or h != host:
                continue
            try:
                os.kill(pid, 0)
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        dead.append(r)
            except ProcessLookupError:
                dead.append(r)
            except OSError:
                pass
        return dead

    def silent_peers(self, ranks: Sequence[int], grace: float = 2.0) -> list:
        """The ranks among ``ranks`` that do not answer a ping within ``grace`` seconds."""
        peers = [r for r in ranks if r != self.rank]
        bufs = {r: bytearray(1) for r in peers}
        recvs = {r: self.health.Irecv([bufs[r], MPI.BYTE], source=r, tag=_PONG) for r in peers}
        for r in peers:
            self.health.Isend([b"\x01", MPI.BYTE], dest=r, tag=_PING)
        end = time.monotonic() + grace
        while time.monotonic() < end and not all(q.Test() for q in recvs.values()):
            self.serve()
            time.sleep(1e-3)
        silent = []
        for r, q in recvs.items():
            if not q.Test():
                silent.append(r)
                try:
                    q.Cancel()
                except Exception:   # noqa: BLE001
                    pass
        return silent
