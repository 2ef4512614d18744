"""torch.profiler.profiler: ``profile`` with PyTorch's schedule state machine, ``schedule``, ``ProfilerAction``,
``tensorboard_trace_handler``. The recording itself is ``ember.autograd.profiler.profile``'s."""
from __future__ import annotations

import enum
import os
import time
import warnings
from functools import partial
from typing import Any, Callable, Iterable

from ..autograd import profiler as prof
from ..autograd.profiler import ProfilerActivity

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction"]

PROFILER_STEP_NAME = "ProfilerStep"


class RecordScope(enum.Enum):
    """PyTorch's RecordScope: the kind of a recorded range (``FunctionEvent.scope``)."""

    FUNCTION = 0
    BACKWARD_FUNCTION = 1
    TORCHSCRIPT_FUNCTION = 2
    KERNEL_FUNCTION_DTYPE = 3
    CUSTOM_CLASS = 4
    BUILD_FEATURE = 5
    LITE_INTERPRETER = 6
    USER_SCOPE = 7
    STATIC_RUNTIME_OP = 8
    STATIC_RUNTIME_MODEL = 9


def is_fbcode() -> bool:
    """Whether this is Meta's internal build: never."""
    return False


def supported_activities() -> set:
    """The activities this build can record: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


_warned: set = set()


def _warn_once(msg, category=UserWarning, stacklevel=2) -> None:
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, category=category, stacklevel=stacklevel + 1)


def _parse_activities(activities) -> set:
    out: set = set()
    for item in activities:
        if isinstance(item, ProfilerActivity):
            if item in out:
                raise ValueError(f"Activity {item} specified more than once")
            out.add(item)
        elif isinstance(item, dict):
            for key in item:
                if key in out:
                    raise ValueError(f"Activity {key} specified more than once")
                out.add(key)
        else:
            raise TypeError(f"Expected ProfilerActivity or dict, got {type(item)}")
    return out


class _KinetoProfile:
    """The profiler without a schedule: ``start``/``stop`` around one recording, and its results."""

    def __init__(self, *, activities: Iterable | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        self.activities = _parse_activities(activities) if activities is not None else supported_activities()
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.post_processing_timeout_s = post_processing_timeout_s
        self.profiler: prof.profile | None = None
        self.use_device = None
        for act, dev in ((ProfilerActivity.CUDA, "cuda"), (ProfilerActivity.XPU, "xpu"),
                         (ProfilerActivity.MTIA, "mtia"), (ProfilerActivity.HPU, "hpu"),
                         (ProfilerActivity.PrivateUse1, "privateuseone")):
            if act in self.activities:
                self.use_device = dev
                break
        self.preset_metadata: dict = {}

    def start(self) -> None:
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        self.stop_trace()

    def prepare_trace(self) -> None:
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events from the current "
                       "cycle will be reported. To keep events across cycles, set acc_events=True.")
        if self.profiler is None or not self.acc_events:
            self.profiler = prof.profile(
                use_cpu=(ProfilerActivity.CPU in self.activities), use_device=self.use_device,
                record_shapes=self.record_shapes, with_flops=self.with_flops, profile_memory=self.profile_memory,
                with_stack=self.with_stack, with_modules=self.with_modules, use_kineto=True,
                experimental_config=self.experimental_config, acc_events=self.acc_events,
                custom_trace_id_callback=self.custom_trace_id_callback,
                post_processing_timeout_s=self.post_processing_timeout_s)
        self.profiler._prepare_trace()

    def start_trace(self) -> None:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start_trace()

    def stop_trace(self) -> None:
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)

    def export_chrome_trace(self, path: str, use_python_export: bool = False):
        """Write the trace as a Chrome trace JSON file (Perfetto, chrome://tracing); ``.gz``: gzip-compressed."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting chrome trace")
        if path.endswith(".gz"):
            import gzip
            import tempfile
            with tempfile.NamedTemporaryFile("w+b", suffix=".json", delete=False) as fp:
                tmp = fp.name
            try:
                self.profiler.export_chrome_trace(tmp)
                with open(tmp, "rb") as fin, gzip.open(path, "wb") as fout:
                    fout.writelines(fin)
            finally:
                os.remove(tmp)
            return None
        return self.profiler.export_chrome_trace(path, self.preset_metadata or None)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total"):
        """Write the stacks in the collapsed format flame graphs read (needs ``with_stack=True``)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before exporting stacks")
        return self.profiler.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False):
        """The events summed per name (and input shapes, stack): an EventList whose ``table()`` prints them."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.profiler.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def events(self):
        """The recorded events (an EventList of FunctionEvent)."""
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before accessing events")
        return self.profiler.function_events

    def add_metadata(self, key: str, value: str) -> None:
        """Add a string to the trace file's metadata."""
        self.preset_metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        """Add a JSON value (given as text) to the trace file's metadata."""
        import json
        self.preset_metadata[key] = json.loads(value)

    def preset_metadata_json(self, key: str, value: str) -> None:
        self.add_metadata_json(key, value)


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (the values a ``schedule`` returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    """A profiler schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle, ``warmup`` and ``active``
    recorded steps (the last one RECORD_AND_SAVE: the trace is handed to ``on_trace_ready``), ``repeat`` times
    (0: until the profiler stops)."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    """Without a schedule: record from the start, at every step."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable:
    """An ``on_trace_ready`` handler that writes each trace into ``dir_name`` as
    ``<worker_name>.<time_ns>.pt.trace.json`` (PyTorch's name, which TensorBoard's profiler plugin reads);
    ``worker_name`` defaults to ``<hostname>_<pid>``."""
    import socket

    def handler_fn(prof_) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name = file_name + ".gz"
        prof_.export_chrome_trace(os.path.join(dir_name, file_name), use_python_export=use_python_export)

    return handler_fn


class profile(_KinetoProfile):
    """torch.profiler.profile: a context manager (or ``start()``/``stop()``) that records what runs inside it.
    With a ``schedule``, ``step()`` marks each step ("ProfilerStep#<n>" regions) and ``on_trace_ready(prof)`` is
    called at the end of each active cycle, as PyTorch's state machine does."""

    def __init__(self, *, activities: Iterable | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        if activities is not None:
            activities_set = _parse_activities(activities)
        else:
            activities_set = supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                activities_set.add(ProfilerActivity.CUDA)
            elif ProfilerActivity.CUDA in activities_set:
                activities_set.remove(ProfilerActivity.CUDA)
        if len(activities_set) == 0:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities_set, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config, execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events, custom_trace_id_callback=custom_trace_id_callback,
                         post_processing_timeout_s=post_processing_timeout_s)
        if schedule:
            self.schedule = schedule
            self.record_steps = True   # step markers in the trace and the table
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn: prof.record_function | None = None
        action = self.schedule(self.step_num)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.current_action = action
        A = ProfilerAction
        # (previous action, current action) -> what to do, PyTorch's table (None: the profiler stops)
        self.action_map: dict = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }
        prof.KinetoStepTracker.init_step_count(PROFILER_STEP_NAME)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        prof.KinetoStepTracker.erase_step_count(PROFILER_STEP_NAME)

    def start(self) -> None:
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step begins: advance the schedule (start, stop, hand over the trace)."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        action = self.schedule(self.step_num + 1)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        self.step_num += 1
        self.current_action = action
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def set_custom_trace_id_callback(self, callback) -> None:
        self.custom_trace_id_callback = callback

    def get_trace_id(self):
        """The current trace's id (None before the first one starts)."""
        return None if self.profiler is None else self.profiler.trace_id

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action) -> None:
        for action in self.action_map.get((prev_action, current_action)) or ():
            action()
