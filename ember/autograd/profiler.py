"""torch.autograd.profiler: ``profile`` (the profiler ``torch.profiler.profile`` is built on), ``record_function``,
``emit_nvtx``/``emit_itt`` (no-ops: ember has no NVTX or ITT), ``KinetoStepTracker``, and the result classes of
``profiler_util``.

What it records (see ``_profiling``): every op ember runs (its primitives, named as PyTorch's ATen ops:
``aten::addmm``, ``aten::relu``...), every backward node as PyTorch's engine names it
(``autograd::engine::evaluate_function: AddmmBackward0`` around ``AddmmBackward0``), and ``record_function``
regions, each with its times, thread, input shapes (``record_shapes``), the memory its arrays take and give back
(``profile_memory``) and the Python stack (``with_stack``). Nothing runs per op while no profiler records.
"""
from __future__ import annotations

import enum
import json
import os
import socket
import time
import warnings
from collections import defaultdict
from contextlib import ContextDecorator
from typing import Any

from .._tensor import Tensor
from . import _profiling
from .profiler_util import (DeviceType, EventList, FunctionEvent, FunctionEventAvg, MemRecordsAcc,
                            MEMORY_EVENT_NAME)

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "EnforceUnique", "KinetoStepTracker", "EventList",
           "FunctionEvent", "FunctionEventAvg", "MemRecordsAcc", "DeviceType", "ProfilerActivity", "ProfilerState",
           "ProfilerConfig", "kineto_available"]


class ProfilerActivity(enum.Enum):
    """torch.profiler.ProfilerActivity. ember records CPU activity; the device groups are accepted and record
    nothing (PyTorch's warning: "CUDA is not available, disabling CUDA profiling")."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerState(enum.Enum):
    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class ProfilerConfig:
    """What a profiler records (PyTorch's ``ProfilerConfig``, as ``profile.config()`` returns it)."""

    def __init__(self, state: ProfilerState = ProfilerState.KINETO, report_input_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, trace_id: str = ""):
        self.state, self.report_input_shapes, self.profile_memory = state, report_input_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.experimental_config, self.trace_id = experimental_config, trace_id


def kineto_available() -> bool:
    """Whether the Kineto-style profiler (``torch.profiler``) is available: always, on ember."""
    return True


_DEVICE_OPTIONS = ("cuda", "xpu", "mtia", "hpu")


class profile:
    """Context manager that records the ops, backward nodes and ``record_function`` regions run inside it.

    ``use_device`` (or the deprecated ``use_cuda``): accepted with PyTorch's warnings; ember records CPU activity
    only. ``record_shapes``, ``profile_memory``, ``with_stack``: as PyTorch's. The results:
    ``key_averages()``, ``table()``, ``events()``/``function_events``, ``export_chrome_trace(path)``,
    ``export_stacks(path)``, ``total_average()``, ``self_cpu_time_total``.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled: bool = enabled
        if not self.enabled:
            return
        self.use_cuda = use_cuda
        if self.use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            self.use_device: str | None = "cuda"
        else:
            self.use_device = use_device
        self._function_events: EventList | None = None
        self._old_function_events: EventList | None = None
        self._needs_processing = False
        self.entered = False
        self.record_shapes = record_shapes or with_flops
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.experimental_config = experimental_config
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.activity_filters = activity_filters or {}
        self.trace_id = ""
        self.profiling_start_time_ns = self.profiling_end_time_ns = 0
        self._session: _profiling.Session | None = None
        if self.use_device is not None:
            if self.use_device not in _DEVICE_OPTIONS:
                warnings.warn(f"The {self.use_device} is not a valid device option.", stacklevel=2)
            else:
                warnings.warn(f"{self.use_device.upper()} is not available, disabling {self.use_device.upper()} "
                              "profiling", stacklevel=2)
            self.use_device = None
            self.use_cuda = False
        if not self.use_cpu:
            if not use_kineto:
                raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")
            raise AssertionError("No activities specified for the profiler")
        if post_processing_timeout_s is not None and post_processing_timeout_s < 0:
            raise ValueError("post_processing_timeout_s must be non-negative")

    def config(self, create_trace_id: bool = False) -> ProfilerConfig:
        if create_trace_id:
            self.trace_id = (self.custom_trace_id_callback() if self.custom_trace_id_callback is not None
                             else os.urandom(16).hex().upper())
        return ProfilerConfig(ProfilerState.KINETO, self.record_shapes, self.profile_memory, self.with_stack,
                              self.with_flops, self.with_modules, self.experimental_config, self.trace_id)

    def __enter__(self):
        if not self.enabled:
            return
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self) -> None:
        self.entered = True
        self.config(create_trace_id=True)

    def _start_trace(self) -> None:
        self.entered = True
        self._session = _profiling.Session(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)
        _profiling.start(self._session)
        self.profiling_start_time_ns = self._session.start_ns

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return
        if self._function_events and self.acc_events:
            self._old_function_events = self._function_events
        self._function_events = None
        self._needs_processing = True
        if self._session is not None:   # (stopped without a start: nothing recorded; PyTorch logs it from C++)
            _profiling.stop(self._session)
            self.profiling_end_time_ns = self._session.end_ns
        if self.acc_events:
            self._ensure_function_events()
        return False

    def __repr__(self):
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self._function_events)

    def __str__(self):
        if self._needs_processing:
            self._ensure_function_events()
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self._function_events)

    def _ensure_function_events(self) -> None:
        """Turn the recorded ranges into FunctionEvents (once, on first use)."""
        if self._function_events is not None:
            return
        self._needs_processing = False
        # (while it records there are no events yet, as PyTorch's)
        done = self._session is not None and self._session.end_ns is not None
        events = _events_of(self._session, self.use_device) if done else []
        self._function_events = EventList(events, use_device=self.use_device, profile_memory=self.profile_memory,
                                          with_flops=self.with_flops)
        self._function_events._build_tree()
        if self._old_function_events and self.acc_events:
            self._function_events.extend(self._old_function_events)
            self._old_function_events = None

    @property
    def function_events(self):
        if self._function_events is None or self._needs_processing:
            self._ensure_function_events()
        return self._function_events

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        self._ensure_function_events()
        return self._function_events.table(sort_by=sort_by, row_limit=row_limit,
                                           max_src_column_width=max_src_column_width,
                                           max_name_column_width=max_name_column_width,
                                           max_shapes_column_width=max_shapes_column_width, header=header,
                                           top_level_events_only=top_level_events_only)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path, metadata=None, use_python_export=False):
        """Write the trace as PyTorch's (Kineto's) Chrome trace JSON: it opens in Perfetto and chrome://tracing."""
        write_trace(self._session, path, self.with_stack, self.trace_id, metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total"):
        self._ensure_function_events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self._function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._ensure_function_events()
        return self._function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        self._ensure_function_events()
        return self._function_events.total_average()

    total_average.__doc__ = EventList.total_average.__doc__

    @property
    def self_cpu_time_total(self):
        """The sum of the self CPU times of all events."""
        self._ensure_function_events()
        return self._function_events.self_cpu_time_total


def _events_of(session: _profiling.Session, use_device=None) -> list:
    """The FunctionEvents of a session's ranges (times in µs from the session's start), with the memory
    recorded inside each range, and a "[memory]" event for each memory record outside every range."""
    t0 = session.start_ns
    end_ns = session.end_ns if session.end_ns is not None else time.perf_counter_ns()
    acc = MemRecordsAcc(session.memory)
    seen = set()
    out = []
    for i, r in enumerate(session.ranges):
        r_end = r.end if r.end is not None else end_ns
        mem = 0
        if session.memory:
            for rec in acc.in_interval(r.start, r_end):
                if rec[2] == r.thread:
                    mem += rec[1]
                    seen.add(id(rec))
        name = "ProfilerStep*" if r.name.startswith("ProfilerStep#") else r.name   # (one key for every step)
        out.append(FunctionEvent(
            id=i, name=name, trace_name=r.name, thread=r.thread, start_us=(r.start - t0) / 1000,
            end_us=(r_end - t0) / 1000, fwd_thread=r.thread if r.scope == _profiling.BACKWARD else None,
            input_shapes=r.shapes if r.shapes is not None else [], stack=r.stack if r.stack is not None else [],
            scope=r.scope, use_device=use_device, cpu_memory_usage=mem, sequence_nr=r.seq, flops=r.flops,
            is_user_annotation=r.user))
    for rec in session.memory:
        if id(rec) not in seen:
            t = (rec[0] - t0) / 1000
            out.append(FunctionEvent(id=len(out), name=MEMORY_EVENT_NAME, trace_name=None, thread=rec[2],
                                     start_us=t, end_us=t, input_shapes=[], stack=[], use_device=use_device,
                                     cpu_memory_usage=rec[1]))
    return out


def write_trace(session, path: str, with_stack: bool = False, trace_id: str = "", metadata=None) -> None:
    """Kineto's Chrome trace layout: metadata, then process/thread names ('M'), each range as a complete event
    ('X', ``ts``/``dur`` in µs, ``cat`` cpu_op / user_annotation / python_function), each memory record as an
    instant event ('i', "[memory]")."""
    pid = os.getpid()
    wall = _profiling.WALL_BASE_NS
    base_ns = (wall // 1_000_000_000) * 1_000_000_000
    events: list = []
    start_us = ((session.start_ns if session is not None else 0) + wall - base_ns) / 1000
    events.append({"ph": "M", "name": "process_name", "ts": start_us, "pid": pid, "tid": 0,
                   "args": {"name": "python"}})
    events.append({"ph": "M", "name": "process_labels", "ts": start_us, "pid": pid, "tid": 0,
                   "args": {"labels": "CPU"}})
    threads = sorted({r.thread for r in session.ranges}) if session is not None else []
    for th in threads:
        events.append({"ph": "M", "name": "thread_name", "ts": start_us, "pid": pid, "tid": th,
                       "args": {"name": f"thread {th} (python)"}})
    end_ns = time.perf_counter_ns()
    if session is not None:
        end_ns = session.end_ns if session.end_ns is not None else end_ns
        # forward op -> its backward node: a flow arrow ("fwdbwd", 's' at the op, 'f' at the node) where both
        # were recorded, as Kineto draws them; the node's "Fwd thread id" is the forward op's thread. The op is
        # the innermost range of the sequence number (F.linear's addmm, which made the node)
        fwd = {r.seq: r for r in session.ranges if r.seq >= 0 and r.scope == _profiling.FORWARD}
        bwd = {r.seq for r in session.ranges if r.seq in fwd and r.scope == _profiling.BACKWARD}
        for i, r in enumerate(session.ranges):
            r_end = r.end if r.end is not None else end_ns
            cat = "user_annotation" if r.user else "cpu_op"
            ts = (r.start + wall - base_ns) / 1000
            args: dict = {"External id": i + 1, "Record function id": 0, "Ev Idx": i}
            if r.seq >= 0:
                args["Sequence number"] = r.seq
                backward = r.scope == _profiling.BACKWARD
                args["Fwd thread id"] = fwd[r.seq].thread if backward and r.seq in fwd else 0
            if r.shapes is not None:
                args["Input Dims"] = r.shapes
            if r.stack:
                args["Call stack"] = ";".join(r.stack)
            events.append({"ph": "X", "cat": cat, "name": r.name, "pid": pid, "tid": r.thread,
                           "ts": ts, "dur": (r_end - r.start) / 1000, "args": args})
            if r.seq in bwd and (fwd[r.seq] is r if r.scope == _profiling.FORWARD
                                 else not r.name.startswith("autograd::engine::evaluate_function: ")):
                flow = {"ph": "s", "id": r.seq + 1, "pid": pid, "tid": r.thread, "ts": ts, "cat": "fwdbwd",
                        "name": "fwdbwd"}
                if r.scope == _profiling.BACKWARD:
                    flow.update(ph="f", bp="e")
                events.append(flow)
        total = 0
        for t_ns, nbytes, th in sorted(session.memory):
            total += nbytes
            events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": MEMORY_EVENT_NAME, "pid": pid,
                           "tid": th, "ts": (t_ns + wall - base_ns) / 1000,
                           "args": {"Total Reserved": total, "Total Allocated": total, "Bytes": nbytes,
                                    "Addr": 0, "Device Type": 0, "Device Id": -1}})
    # the profiler's own span, in a process of its own, as Kineto writes it
    events.append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
                   "ts": start_us, "dur": (end_ns + wall - base_ns) / 1000 - start_us, "args": {"Op count": 0}})
    events.append({"ph": "M", "name": "process_sort_index", "ts": start_us, "pid": "Spans", "tid": 0,
                   "args": {"sort_index": 536870912}})
    trace = {"schemaVersion": 1, "deviceProperties": [], "trace_id": trace_id}
    options = {"record_shapes": getattr(session, "record_shapes", False), "with_stack": with_stack,
               "profile_memory": getattr(session, "profile_memory", False)}
    trace.update({k: 1 for k, on in options.items() if on})   # each option's key only when it is on, as Kineto
    trace.update({"host_name": socket.gethostname(), "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
                  "traceEvents": events, "traceName": str(path)})
    if metadata:
        trace.update(metadata)
    with open(path, "w") as f:
        json.dump(trace, f)


class record_function(ContextDecorator):
    """A named region in the profile (a context manager or a function decorator): recorded only while a profiler
    records, as a "user_annotation" event."""

    def __init__(self, name: str, args: str | None = None):
        self.name: str = name
        self.args: str | None = args
        self.run_callbacks_on_exit: bool = True
        self.record = None

    def __enter__(self):
        self.record = _profiling.begin(self.name, _profiling.USER) if _profiling.is_recording() else False
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any):
        if not self.run_callbacks_on_exit:
            return
        record = self.record
        if record is None:
            raise AssertionError("Expected record to be set")
        if record is not False:
            _profiling.end(record)

    def _call_end_callbacks_on_future(self, fut):
        """End the region when ``fut`` completes (PyTorch's asynchronous form); returns ``fut``."""
        if not self.run_callbacks_on_exit:
            raise RuntimeError("_call_end_callbacks_on_future can only be called once.")
        self.run_callbacks_on_exit = False
        record = self.record
        if record is None:
            raise AssertionError("Expected record to be set")
        if record is not False:
            fut.add_done_callback(lambda _: _profiling.end(record))
        return fut


class _annotations:
    """emit_nvtx / emit_itt: PyTorch marks each op for an external vendor profiler (NVIDIA Nsight, Intel VTune);
    ember has neither, so the region records nothing (it keeps PyTorch's reentrancy check)."""

    _tool = ""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return
        if self.entered:
            raise RuntimeError(f"{self._tool} annotation context manager is not reentrant")
        self.entered = True
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


class emit_nvtx(_annotations):
    """torch.autograd.profiler.emit_nvtx: a no-op on ember (no NVTX ranges: ember does not run on CUDA)."""

    _tool = "NVTX"


class emit_itt(_annotations):
    """torch.autograd.profiler.emit_itt: a no-op on ember (no Intel ITT ranges)."""

    _tool = "ITT"


class EnforceUnique:
    """Raises an error if a key is seen more than once."""

    def __init__(self):
        self.seen: set = set()

    def see(self, *key):
        """Observe a key and raise an error if it is seen multiple times."""
        if key in self.seen:
            raise RuntimeError("duplicate key: " + str(key))
        self.seen.add(key)


class KinetoStepTracker:
    """The global step count that profiler steps and optimizer steps advance (PyTorch's bookkeeping: one
    count per requester, the global step is their maximum)."""

    _current_step = 0
    _step_dict: dict = defaultdict(int)

    @classmethod
    def init_step_count(cls, requester: str):
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            delta = new_step - cls._current_step
            if delta > 1:
                warnings.warn("Profiler step count has increased more than 1 - "
                              f"current_step = {cls._current_step} step dict =  {cls._step_dict}", stacklevel=2)
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        return cls._current_step


# ----- the public ops: recorded under PyTorch's names while a profiler records ------------------------------------
# torch.nn.functional.linear records aten::linear, inside which PyTorch's composite records aten::t and aten::addmm;
# ember's public functions are swapped (their __code__, as autocast does) for an entry that records the call and
# runs the original, so the same nesting appears. A primitive recorded inside an op of the same name merges into it
# (EventList._remove_dup_nodes, PyTorch's rule).

_DUNDER = {"add": "add", "radd": "add", "iadd": "add_", "sub": "sub", "rsub": "rsub", "isub": "sub_", "mul": "mul",
           "rmul": "mul", "imul": "mul_", "truediv": "div", "rtruediv": "div", "itruediv": "div_",
           "floordiv": "floor_divide", "rfloordiv": "floor_divide", "mod": "remainder", "rmod": "remainder",
           "pow": "pow", "rpow": "pow", "ipow": "pow_", "matmul": "matmul", "rmatmul": "matmul", "neg": "neg",
           "abs": "abs", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
           "and": "bitwise_and", "rand": "bitwise_and", "or": "bitwise_or", "ror": "bitwise_or",
           "xor": "bitwise_xor", "rxor": "bitwise_xor", "invert": "bitwise_not", "lshift": "__lshift__",
           "rshift": "__rshift__"}
# PyTorch's op under a public name where it differs (F.cross_entropy runs aten::cross_entropy_loss, Tensor.float
# aten::to), and None for the names that are Python functions in PyTorch (their ops are recorded, not them) or
# no op at all (storage(), share_memory_()).
_RENAMED = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd", "logsigmoid": "log_sigmoid",
            "affine_grid": "affine_grid_generator", "grid_sample": "grid_sampler",
            **{f"adaptive_max_pool{d}d_with_indices": f"adaptive_max_pool{d}d" for d in (1, 2, 3)},
            **{f"fractional_max_pool{d}d_with_indices": f"fractional_max_pool{d}d" for d in (2, 3)},
            **{n: "to" for n in ("bfloat16", "bool", "byte", "char", "double", "float", "half", "int", "long",
                                 "short", "cfloat", "cdouble", "type")},
            **{n: None for n in (
                "const_data_ptr dim_order is_shared share_memory_ storage storage_type untyped_storage new new_tensor "
                "dropout1d dropout2d dropout3d eig lstsq lu solve symeig fold gaussian_nll_loss gumbel_softmax "
                "interpolate upsample upsample_bilinear upsample_nearest linear_cross_entropy local_response_norm "
                "lp_pool1d lp_pool2d lp_pool3d max_unpool1d multi_head_attention_forward multilabel_soft_margin_loss "
                "normalize softmin softsign tanhshrink triplet_margin_with_distance_loss unique "
                "unravel_index").split()}}
_public: list | None = None   # [(function, aten name)], found once


def _entry_code(n: int):
    from ._batching import entry_code
    return entry_code(n, "_ember_profiler_run")


def _public_ops() -> list:
    """Every public op function with PyTorch's name for it (the registry's tables), once."""
    global _public
    if _public is None:
        import types

        from ..ops._registry import EXPORTS, METHODS, SUBMODULES
        from . import _primitive
        skip = {id(f) for f in _primitive.FAST_PATHS}   # recorded as their primitive already
        found: dict = {}
        tables = [(EXPORTS, ""), (METHODS, "method"), (SUBMODULES["nn.functional"], "F")]
        tables += [(SUBMODULES[k], k) for k in ("linalg", "special", "fft")]
        for table, kind in tables:
            for name, f in table.items():
                while (isinstance(f, types.FunctionType) and getattr(f, "_ember_public", None) is not None
                       and getattr(f, "__wrapped__", None) is not None and f.__code__ is not f.__wrapped__.__code__):
                    f = f.__wrapped__
                if not isinstance(f, types.FunctionType) or id(f) in skip or id(f) in found:
                    continue
                if name.startswith("__"):
                    name = _DUNDER.get(name.strip("_"))
                elif kind in ("linalg", "special", "fft"):
                    name = f"{kind}_{name}"
                else:
                    name = _RENAMED.get(name, name)
                if name is not None:
                    found[id(f)] = (f, "aten::" + name)
        _public = list(found.values())
    return _public


def _runner(orig, name: str):
    def run(args, kwargs):
        op = _profiling.OP
        if getattr(op, "name", None) == name:   # Tensor.gt running torch.gt: one range, as PyTorch's
            return orig(*args, **kwargs)
        r = _profiling.begin(name, _profiling.FORWARD, args)
        outer, op.name = getattr(op, "name", None), name
        try:
            _profiling.scalar_cast(name, args, kwargs)
            out = orig(*args, **kwargs)
        finally:
            r.end = time.perf_counter_ns()
            op.name = outer
        if _profiling._flops:
            r.flops = _profiling.flops(name, args, out)
        if isinstance(out, Tensor) and out.grad_fn is not None:
            r.seq = getattr(out.grad_fn, "_seq", -1)
        return out
    return run


def _swap_public(saved: list) -> None:
    """Swap the public ops' code for recording entries, appending to ``saved`` what to put back.

    autocast swaps the code of the ops it casts too (ember/amp/autocast_mode.py). Its swaps are built (they keep
    each function's own code) before the profiler's first swap, so it never takes a profiler entry for the original;
    while an autocast region is active, its ops are left to it (their primitives are still recorded)."""
    import types

    from ..amp import autocast_mode as amp
    with amp._lock:
        if amp._SWAPS is None:
            amp._SWAPS = amp._build()
        busy = {id(sw.fn) for sw in amp._SWAPS} if amp._swapped[0] else set()
    for f, name in _public_ops():
        if id(f) in busy:
            continue
        code = f.__code__
        orig = types.FunctionType(code, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        orig.__kwdefaults__ = f.__kwdefaults__
        saved.append((f, code, f.__kwdefaults__))
        f.__code__ = _profiling._renamed(_entry_code(len(code.co_freevars)), code)
        f.__kwdefaults__ = {"_ember_profiler_run": _runner(orig, name)}
    for f, name, children in _profiling.FACTORIES:
        if id(f) in busy:
            continue
        code = f.__code__
        orig = types.FunctionType(code, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        orig.__kwdefaults__ = f.__kwdefaults__
        saved.append((f, code, f.__kwdefaults__))
        f.__code__ = _profiling._renamed(_entry_code(len(code.co_freevars)), code)
        f.__kwdefaults__ = {"_ember_profiler_run": _factory_runner(orig, name, children)}


def _factory_runner(orig, name: str, children: tuple):
    def run(args, kwargs):
        op = _profiling.OP
        if getattr(op, "factory", False):   # rand_like runs rand: PyTorch's rand_like records no aten::rand
            return orig(*args, **kwargs)
        outer, op.name, op.factory = getattr(op, "name", None), "aten::" + name, True
        try:
            return _profiling.span(name, children, args, lambda: orig(*args, **kwargs))
        finally:
            op.name, op.factory = outer, False
    return run


_profiling.EXTRA.append(_swap_public)
