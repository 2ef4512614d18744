"""DistributedDataParallel: data-parallel training over ember.distributed (MPI), with PyTorch's API and semantics.

Each rank holds a replica of the module. At construction the parameters and buffers are broadcast from rank 0.
During backward a post-accumulate-grad hook on every parameter marks it ready; the parameters sit in buckets
(PyTorch's: one bucket in reverse parameter order in the first iteration, then rebuilt in the order the gradients
arrived, of ``bucket_cap_mb`` with a smaller first bucket of ``dist._DEFAULT_FIRST_BUCKET_BYTES``), and as soon as all of a
bucket's gradients are there they are copied into the bucket's flat buffer, divided by the world size, and a
non-blocking all-reduce starts, so communication overlaps the rest of backward. Buckets start in the same order on
every rank (a bucket waits for the ones before it), as collectives must. A callback queued on the engine waits for
the all-reduces when backward ends and writes the averaged gradients back into ``.grad``.
"""
from __future__ import annotations

import inspect
import sys
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ... import _dtype as D
from ..._tensor import Tensor
from ...futures import Future
from ...autograd import grad_mode as _gm
from ...autograd.graph import grad_accumulator, queue_callback
from ...distributed.algorithms.join import Join, JoinHook, Joinable
from ...ops import creation as _creation
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024   # (also ember.distributed._DEFAULT_FIRST_BUCKET_BYTES)

_UNUSED_MESSAGE = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates "
    "that your module has parameters that were not used in producing loss. You can enable unused parameter "
    "detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs participate "
    "in calculating loss. \nIf you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` function. Please include the "
    "loss function and the structure of the return value of `forward` of your module when reporting this issue "
    "(e.g. list, dict, iterable).\nParameter indices which did not receive grad for rank {rank}: {indices}\n In "
    "addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out "
    "information about which particular parameters did not receive gradient on this rank as part of this error")


def _assign_buckets(params: list, order: list[int], limits: list[int], rebuilding: bool) -> list[list[int]]:
    """Parameter indices in buckets (PyTorch's ``_compute_bucket_assignment_by_size``): ``order`` walked once, one
    open bucket per dtype, closed when it reaches its size limit (a dtype's first bucket gets ``limits[0]``, the
    next ones the next limits, the last repeated). ``rebuilding`` (``order`` is the order the gradients arrived
    in): the buckets in the order they closed, then the open ones; otherwise sorted by their smallest index."""
    open_: dict = {}
    done: list[list[int]] = []
    for i in order:
        p = params[i]
        b = open_.get(p.dtype)
        if b is None:
            b = open_[p.dtype] = [[], 0, 0]   # indices, bytes, which limit
        b[0].append(i)
        b[1] += p.numel() * p.element_size()
        if b[1] >= limits[min(b[2], len(limits) - 1)]:
            done.append(b[0])
            open_[p.dtype] = [[], 0, b[2] + 1]
    pos = {i: k for k, i in enumerate(order)}
    rest = sorted((b[0] for b in open_.values() if b[0]), key=lambda idx: pos[idx[0]])
    if rebuilding:
        return done + rest
    return sorted(done + rest, key=min)


class _Bucket:
    """Parameters whose gradients travel in one all-reduce: a flat buffer, where each one's gradient sits, and how
    many are still to come in this backward."""

    __slots__ = ("indices", "offsets", "flat", "pending", "work")

    def __init__(self, params: list, indices: list[int]) -> None:
        self.indices = indices
        self.offsets = []
        n = 0
        for i in indices:
            self.offsets.append(n)
            n += params[i].numel()
        self.flat = _creation.zeros(n, dtype=params[indices[0]].dtype)
        self.pending = len(indices)
        self.work: Any = None


def _find_tensors(obj: Any) -> Iterator[Tensor]:
    """The tensors in a forward's output (tensors, lists, tuples, dicts, dataclass-like objects' fields)."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _find_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _find_tensors(x)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across the ranks of a process group (PyTorch's ``torch.nn.parallel.DistributedDataParallel``).

    ``module`` is held as ``self.module`` (state dict keys ``module.<name>``). Every rank calls the wrapper on its
    own share of the batch; after ``loss.backward()`` every rank's ``.grad`` holds the gradient averaged over the
    ranks. ``no_sync()`` skips the averaging (gradients accumulate locally, and the next synchronised backward
    averages the sum). ``find_unused_parameters=True`` finds, after each forward, the parameters its output does not
    depend on and reduces zeros for them (a parameter unused on every rank keeps its ``.grad``). ``static_graph``
    and ``gradient_as_bucket_view`` are accepted (the gradients are copies of the bucket, not views of it).
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None, skip_all_reduce_unused_params: bool = False,
                 bucket_cap_mb_list: list | None = None, batched_grad_copy: bool = False,
                 forward_sync_buffers: bool | None = None) -> None:
        Module.__init__(self)
        Joinable.__init__(self)
        from ...distributed import distributed_c10d as c10d   # (loads the distributed API on first use only)
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the "
                             "same time.")
        if process_group and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        if device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel: device_mesh is not supported by ember")
        self.process_group = c10d._default_pg() if process_group is None else process_group
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.parameters_to_ignore = ignore
        self._module_parameters = [p for n, p in module.named_parameters() if n not in ignore]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        types = {p.device.type for p in self._module_parameters}
        if len(types) != 1:
            raise ValueError("DistributedDataParallel's input module must be on the same type of devices, but "
                             f"input module parameters locate in {types}.")
        if device_ids or output_device:
            devices = {p.device for p in self._module_parameters}
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        self.device_type = self.device.type
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                              "`broadcast_buffers` is deprecated and its value is ignored when "
                              "`forward_sync_buffers` is provided.", FutureWarning, stacklevel=2)
            else:
                warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                              "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers "
                              "at init. If you rely on buffers NOT being synced at init (e.g. rank-local buffers), "
                              "keep using `broadcast_buffers=False` until `init_sync_buffers` is available.",
                              FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = bool(forward_sync_buffers)
            init_buffers = True
        else:
            self.forward_sync_buffers = init_buffers = broadcast_buffers is None or bool(broadcast_buffers)
        self.broadcast_buffers = self.forward_sync_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.mixed_precision = mixed_precision
        self.static_graph = bool(static_graph)
        cap = bucket_cap_mb if bucket_cap_mb is not None else _DEFAULT_BUCKET_CAP_MB
        if bucket_cap_mb_list:
            cap = max(bucket_cap_mb_list)
        self.bucket_bytes_cap = int(cap * _MB)
        default_caps = bucket_cap_mb is None and not bucket_cap_mb_list
        self._first_bucket_bytes = _DEFAULT_FIRST_BUCKET_BYTES if default_caps else self.bucket_bytes_cap
        self._limits = ([int(c * _MB) for c in bucket_cap_mb_list] if bucket_cap_mb_list
                        else [self._first_bucket_bytes, self.bucket_bytes_cap])
        self._c10d = c10d
        self._world = c10d.get_world_size(self.process_group)
        self._rank = c10d.get_rank(self.process_group)
        self.modules_buffers = [b for n, b in module.named_buffers() if n not in ignore]

        if init_sync and self._world > 1:   # rank 0's parameters and buffers everywhere
            states = list(self._module_parameters)
            if init_buffers:
                states += self.modules_buffers
            self._broadcast(states)

        # the reducer's state
        self._params = [p for p in self._module_parameters if p.requires_grad]
        self._buckets: list[_Bucket] = []
        self._bucket_of: list[tuple[int, int]] = []
        # PyTorch's first iteration: buckets over the parameters in order, reversed (the order gradients usually
        # arrive in); one bucket unless unused parameters are looked for. Rebuilt after it in the arrival order.
        first = ([sys.maxsize] if (self.static_graph or not find_unused_parameters) and not bucket_cap_mb_list
                 else self._limits)
        self._build_buckets(_assign_buckets(self._params, list(range(len(self._params))), first, False)[::-1])
        self._rebuilt = False
        self._rebuild_pending = False        # rebuild the buckets at the next forward (PyTorch's moment)
        self._arrival: list[int] = []
        self._ready = [False] * len(self._params)
        self._expect_hooks = False
        self._incomplete = False
        self._next_bucket = 0
        self._unused: list[int] = []
        self._unused_set: set = set()
        self._marked_unused = False
        self._callback_queued = False
        self._divide_by_initial_world_size = True
        self._join_work: Any = None          # this forward's count of the ranks still active (join)
        self._active: int | None = None      # that count, once waited for
        self._comm_hook: Any = None          # (hook, state) of register_comm_hook
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(self._params)]

    # ------------------------------------------------------------------------------------------------
    def _broadcast(self, tensors: list, src: int = 0) -> None:
        with _gm.no_grad():
            for t in tensors:
                self._c10d.broadcast(t.detach(), src, group=self.process_group)

    def _build_buckets(self, assignment: list[list[int]]) -> None:
        self._buckets = [_Bucket(self._params, idx) for idx in assignment]
        self._bucket_of = [(0, 0)] * len(self._params)
        for b, bucket in enumerate(self._buckets):
            for k, i in enumerate(bucket.indices):
                self._bucket_of[i] = (b, k)

    def _make_hook(self, i: int):
        def hook(_param: Tensor) -> None:
            if self._expect_hooks and self.require_backward_grad_sync:
                self._mark_ready(i)
        return hook

    def _mark_ready(self, i: int) -> None:
        if not self._callback_queued:
            self._callback_queued = True
            queue_callback(self._finalize_backward)
            if self._unused and not self._marked_unused:   # (PyTorch marks them at the first hook too)
                self._marked_unused = True
                for u in self._unused:
                    self._mark_ready(u)
        if self._ready[i]:
            return
        self._ready[i] = True
        if not self._rebuilt:
            self._arrival.append(i)
        b, _ = self._bucket_of[i]
        bucket = self._buckets[b]
        bucket.pending -= 1
        for earlier in self._buckets[:self._next_bucket]:   # MPI progresses non-blocking collectives when called
            if earlier.work is not None:
                earlier.work.done() if self._comm_hook else earlier.work.is_completed()
        # buckets start in order on every rank (collectives must): launch this one and any ready ones after it
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._launch(self._next_bucket)
            self._next_bucket += 1

    def _launch(self, b: int) -> None:
        """Copy bucket ``b``'s gradients (divided by the world size, PyTorch's order) into its buffer and start a
        non-blocking all-reduce of it; with a communication hook, the gradients as they are, handed to the hook."""
        bucket = self._buckets[b]
        scale = None if self._comm_hook else 1.0 / self._divisor()
        with _gm.no_grad():
            flat = bucket.flat
            for i, off in zip(bucket.indices, bucket.offsets):
                p = self._params[i]
                view = flat[off:off + p.numel()]
                if p.grad is None:
                    view.zero_()
                else:
                    view.copy_(p.grad.reshape(-1) if scale is None else p.grad.reshape(-1) * scale)
            if self._comm_hook is None:
                bucket.work = self._c10d.all_reduce(flat, group=self.process_group, async_op=True)
                return
            hook, state = self._comm_hook
            grad_bucket = self._c10d.GradBucket(b, flat, bucket.offsets, [self._params[i] for i in bucket.indices],
                                                b == len(self._buckets) - 1)
            bucket.work = hook(state, grad_bucket)
            if not isinstance(bucket.work, Future):
                raise RuntimeError("DistributedDataParallel communication hook must return a "
                                   f"torch.futures.Future[torch.Tensor], got {type(bucket.work).__name__}")

    def _finalize_backward(self) -> None:
        """End of backward: wait for the all-reduces and write the averaged gradients into ``.grad``."""
        self._callback_queued = False
        self._expect_hooks = False
        if self._next_bucket < len(self._buckets):   # some gradient never came: PyTorch's error at next forward
            self._incomplete = True
        global_unused = None
        if self.find_unused_parameters:
            used = _creation.tensor([0 if i in self._unused_set else 1 for i in range(len(self._params))],
                                    dtype=D.int32)
            self._c10d.all_reduce(used, group=self.process_group)
            global_unused = [int(v) == 0 for v in used.tolist()]
        with _gm.no_grad():
            for bucket in self._buckets[:self._next_bucket]:
                result = bucket.work.wait()
                bucket.work = None
                if self._comm_hook is not None:
                    self._hook_result(bucket, result)
                for i, off in zip(bucket.indices, bucket.offsets):
                    if global_unused is not None and global_unused[i]:
                        continue   # unused on every rank: .grad stays as it was
                    p = self._params[i]
                    value = bucket.flat[off:off + p.numel()].view(p.shape)
                    if p.grad is None:
                        p.grad = value.clone()
                    else:
                        p.grad.copy_(value)
        if not self._rebuilt and not self._incomplete:
            self._rebuilt = True
            self._rebuild_pending = self.static_graph or not self.find_unused_parameters
            if not self._rebuild_pending:
                self._arrival = []

    def _divisor(self) -> int:
        """What the gradients are divided by: the world size; inside ``join(divide_by_initial_world_size=False)``
        the number of ranks still active."""
        if self._divide_by_initial_world_size or (self._join_work is None and self._active is None):
            return self._world
        if self._active is None:   # (this iteration's count, for every bucket)
            work, self._join_work = self._join_work, None
            work.wait()
            self._active = max(1, int(work.result()[0].item()))
        return self._active

    def _drain_join_work(self) -> None:
        if self._join_work is not None:
            work, self._join_work = self._join_work, None
            work.wait()

    @staticmethod
    def _hook_result(bucket: _Bucket, result: Any) -> None:
        """A communication hook's result into the bucket's buffer, whence the gradients are written."""
        flat = bucket.flat
        if not isinstance(result, Tensor) or result.numel() != flat.numel():
            what = (f"a tensor of {result.numel()} elements" if isinstance(result, Tensor)
                    else type(result).__name__)
            raise RuntimeError("DistributedDataParallel communication hook: the future's result must be a tensor "
                               f"of the bucket's {flat.numel()} elements, got {what}")
        if result is not flat:
            flat.copy_(result.reshape(-1))

    def _rebuild_buckets(self) -> None:
        """Buckets in the order the first iteration's gradients arrived, rank 0's order on every rank (the
        buckets must be the same everywhere); kept as they are when a rank missed a gradient."""
        complete = _creation.tensor([int(len(self._arrival) == len(self._params))])
        self._c10d.all_reduce(complete, op=self._c10d.ReduceOp.MIN, group=self.process_group)
        if not int(complete):
            return
        order = _creation.tensor(self._arrival)
        self._c10d.broadcast(order, 0, group=self.process_group)
        self._build_buckets(_assign_buckets(self._params, order.tolist(), self._limits, True))

    def _maybe_rebuild_buckets(self) -> None:
        """Once, at the forward after the first complete backward (every rank the same, a collective)."""
        if self._rebuild_pending:
            self._rebuild_pending = False
            self._rebuild_buckets()
            self._arrival = []

    # ------------------------------------------------------------------------------------------------
    def _prepare_forward(self) -> None:
        if self._incomplete:
            missing = [str(i) for i in range(len(self._params)) if not self._ready[i]]
            raise RuntimeError(_UNUSED_MESSAGE.format(rank=self._rank, indices=" ".join(missing)))
        for bucket in self._buckets:
            bucket.pending = len(bucket.indices)
            bucket.work = None
        self._ready = [False] * len(self._params)
        self._next_bucket = 0
        self._callback_queued = False   # (a backward that raised never ran the callback)
        self._expect_hooks = False
        self._unused = []
        self._unused_set = set()
        self._marked_unused = False

    def _prepare_backward(self, output: Any) -> None:
        """With ``find_unused_parameters``: the parameters the output does not reach in the autograd graph."""
        self._expect_hooks = True
        if not self.find_unused_parameters:
            self._unused_set = set()
            return
        seen: set = set()
        stack = [t.grad_fn for t in _find_tensors(output) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for nxt, _ in node.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    stack.append(nxt)
        for t in _find_tensors(output):   # a parameter returned as is
            if t.grad_fn is None and t.requires_grad:
                seen.add(id(grad_accumulator(t)))
        self._unused = [i for i, p in enumerate(self._params) if id(grad_accumulator(p)) not in seen]
        self._unused_set = set(self._unused)

    def _sync_buffers(self, joined: bool = False) -> None:
        """The buffers broadcast before the forward: from rank 0, or in a join context from the highest rank
        still active."""
        if self.require_forward_param_sync and self.forward_sync_buffers and self.modules_buffers and \
                self._world > 1:
            src = self._find_common_rank(self._rank, not joined) if self._join_config.enable or joined else 0
            self._broadcast(self.modules_buffers, src)

    def _find_common_rank(self, rank: int, candidate: bool) -> int:
        """The highest rank among the candidates (a collective)."""
        t = _creation.tensor([rank if candidate else -1])
        self._c10d.all_reduce(t, op=self._c10d.ReduceOp.MAX, group=self.process_group)
        return int(t.item())

    def _global_requires_sync(self, joined: bool) -> bool:
        """Whether any active rank's backward all-reduces this iteration (a collective in a join context)."""
        t = _creation.tensor([0.0 if joined or not self.require_backward_grad_sync else 1.0])
        self._c10d.all_reduce(t, group=self.process_group)
        return bool(t.item())

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        sync = _gm.is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            self._prepare_forward()
        self._drain_join_work()
        self._active = None
        self._join_work = Join.notify_join_context(self)
        if _gm.is_grad_enabled():
            self._maybe_rebuild_buckets()
        self._sync_buffers()
        if self._join_config.enable:
            self._global_requires_sync(False)
        output = self.module(*inputs, **kwargs)
        if sync:
            self.require_forward_param_sync = True
            self._prepare_backward(output)
        else:
            self.require_forward_param_sync = False
        return output

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without all-reducing them; the first synchronised
        backward after it averages the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def will_sync_module_buffers(self) -> bool:
        return self.require_forward_param_sync and self.forward_sync_buffers and len(self.modules_buffers) > 0

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """The context for training with uneven inputs (PyTorch's): a rank that runs out of batches waits at the
        end of the ``with`` block and takes part, with zero gradients, in the all-reduces of the ranks still
        training; at the end every rank holds the parameters of the last rank to finish. Gradients are divided
        by the initial world size (``divide_by_initial_world_size=False``: by the ranks still active).
        ``throw_on_early_termination``: every rank raises once one has run out."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs: Any) -> JoinHook:
        """What a rank that has run out of inputs does (see ``join``)."""
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self) -> Any:
        return self.device

    @property
    def join_process_group(self) -> Any:
        return self.process_group

    def _shadow_backward(self) -> None:
        """A joined rank's side of one backward: each bucket's all-reduce (or communication hook) with zeros, in
        the buckets' order, and the used-parameter count of ``find_unused_parameters``."""
        with _gm.no_grad():
            pending = []
            for b, bucket in enumerate(self._buckets):
                zeros = _creation.zeros(bucket.flat.numel(), dtype=bucket.flat.dtype)
                if self._comm_hook is None:
                    pending.append(self._c10d.all_reduce(zeros, group=self.process_group, async_op=True))
                else:
                    hook, state = self._comm_hook
                    grad_bucket = self._c10d.GradBucket(b, zeros, bucket.offsets,
                                                        [self._params[i] for i in bucket.indices],
                                                        b == len(self._buckets) - 1)
                    pending.append(hook(state, grad_bucket))
            for work in pending:
                work.wait()
        if self.find_unused_parameters:
            self._c10d.all_reduce(_creation.zeros(len(self._params), dtype=D.int32), group=self.process_group)

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        """The parameters (and buffers) of the highest rank among the last to join, everywhere."""
        self._drain_join_work()
        src = self._find_common_rank(self._rank, is_last_joiner)
        self._broadcast(self._module_parameters + (self.modules_buffers if self.forward_sync_buffers else []), src)

    def register_comm_hook(self, state: object, hook: Callable) -> None:
        """Reduce the gradients with ``hook(state, bucket)`` instead of the averaging all-reduce: it gets each
        bucket (``dist.GradBucket``: ``buffer()`` holds the gradients, summed over no_sync steps, not yet divided)
        as soon as the bucket is ready, and returns a ``torch.futures.Future`` of the tensor that becomes the
        bucket's gradients (see ``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``). Once only."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        sig = inspect.signature(hook)
        bucket_type = sig.parameters["bucket"].annotation
        if bucket_type is not inspect.Parameter.empty and bucket_type != self._c10d.GradBucket:
            raise ValueError("Communication hook: bucket annotation should be dist.GradBucket.")
        if sig.return_annotation is not inspect.Signature.empty and sig.return_annotation != Future[Tensor]:
            raise ValueError("Communication hook: return annotation should be torch.futures.Future[torch.Tensor].")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_hook = (hook, state)

    def _register_builtin_comm_hook(self, comm_hook_type: Any) -> None:
        """``dist.BuiltinCommHookType.ALLREDUCE`` or ``FP16_COMPRESS``: the default hooks of that name (on the
        default group). Once only, as ``register_comm_hook``."""
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks
        hooks = {self._c10d.BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
                 self._c10d.BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_hook = (hooks[comm_hook_type], None)

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module: Module, params_and_buffers_to_ignore: Any) -> None:
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore


class _DDPJoinHook(JoinHook):
    """A joined rank's DistributedDataParallel: each round, the collectives of an active rank's iteration (bucket
    rebuild, buffer broadcast, whether to sync, the backward's all-reduces); at the end, the final parameters."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        ddp._maybe_rebuild_buckets()
        ddp._sync_buffers(joined=True)
        sync = ddp._global_requires_sync(True)
        ddp.require_forward_param_sync = sync
        if sync:
            ddp._shadow_backward()

    def post_hook(self, is_last_joiner: bool) -> None:
        self.ddp._sync_final_model(is_last_joiner)
