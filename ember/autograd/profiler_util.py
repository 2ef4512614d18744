"""torch.autograd.profiler_util: the profiler's results. ``FunctionEvent`` (one recorded op, node or region),
``FunctionEventAvg`` (their sums per key), ``EventList`` (``table`` in PyTorch's exact layout, ``key_averages``,
``total_average``, ``export_chrome_trace``, ``export_stacks``), as PyTorch's Python classes define them: the
times ember measures differ from PyTorch's, the layout and the arithmetic of self and total times do not.
"""
from __future__ import annotations

import bisect
import enum
import itertools
import json
import math
from collections import defaultdict
from operator import attrgetter
from typing import NamedTuple

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel", "MemRecordsAcc", "DeviceType",
           "MEMORY_EVENT_NAME"]

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"


class DeviceType(enum.IntEnum):
    """torch.autograd.DeviceType (PyTorch's c10::DeviceType numbering)."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20

    def __str__(self) -> str:   # PyTorch's pybind enum prints as DeviceType.CPU
        return f"DeviceType.{self.name}"


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """The interval's length in microseconds."""
        return self.end - self.start


class Kernel(NamedTuple):
    name: str
    device: int
    duration: int


def _format_time(time_us) -> str:
    """Format a time in microseconds as PyTorch does ('1.234ms')."""
    if time_us >= 1000.0 * 1000.0:
        return f"{time_us / (1000.0 * 1000.0):.3f}s"
    if time_us >= 1000.0:
        return f"{time_us / 1000.0:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us) -> str:
    if total_time_us == 0:
        if time_us != 0:
            raise AssertionError(f"Expected time_us == 0 but got {time_us}")
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes) -> str:
    """Format a byte count as PyTorch does ('1.50 KB')."""
    KB = 1024
    MB = 1024 * KB
    GB = 1024 * MB
    if abs(nbytes) >= GB:
        return f"{nbytes * 1.0 / GB:.2f} GB"
    if abs(nbytes) >= MB:
        return f"{nbytes * 1.0 / MB:.2f} MB"
    if abs(nbytes) >= KB:
        return f"{nbytes * 1.0 / KB:.2f} KB"
    return str(nbytes) + " B"


def _attr_formatter(name):
    return property(lambda self: _format_time(getattr(self, name)))


class FormattedTimesMixin:
    """The times of an event as strings (``cpu_time_str``, ...) and the per-call averages."""

    cpu_time_str = _attr_formatter("cpu_time")
    device_time_str = _attr_formatter("device_time")
    cpu_time_total_str = _attr_formatter("cpu_time_total")
    device_time_total_str = _attr_formatter("device_time_total")
    self_cpu_time_total_str = _attr_formatter("self_cpu_time_total")
    self_device_time_total_str = _attr_formatter("self_device_time_total")

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else 1.0 * self.device_time_total / self.count


class FunctionEvent(FormattedTimesMixin):
    """Profiling information about a single function (an op, a backward node, a ``record_function`` region)."""

    def __init__(self, id, name, thread, start_us, end_us, overload_name=None, fwd_thread=None, input_shapes=None,
                 stack=None, scope=0, use_device=None, cpu_memory_usage=0, device_memory_usage=0, is_async=False,
                 is_remote=False, sequence_nr=-1, node_id=-1, device_type=DeviceType.CPU, device_index=0,
                 device_resource_id=None, is_legacy=False, flops=None, trace_name=None, concrete_inputs=None,
                 kwinputs=None, is_user_annotation=False, **_ignored):
        self.id: int = id
        self.node_id: int = node_id
        self.name: str = name
        self.overload_name = overload_name
        self.trace_name = trace_name
        self.time_range = Interval(start_us, end_us)
        self.thread: int = thread
        self.fwd_thread = fwd_thread
        self.kernels: list = []
        self.count: int = 1
        self.cpu_children: list = []
        self.cpu_parent = None
        self.input_shapes = input_shapes
        self.concrete_inputs = concrete_inputs
        self.kwinputs = kwinputs
        self.stack = stack
        self.scope: int = scope
        self.use_device = use_device
        self.cpu_memory_usage: int = cpu_memory_usage
        self.device_memory_usage: int = device_memory_usage
        self.is_async: bool = is_async
        self.is_remote: bool = is_remote
        self.sequence_nr: int = sequence_nr
        self.device_type = device_type
        self.device_index: int = device_index
        self.device_resource_id: int = thread if device_resource_id is None else device_resource_id
        self.is_legacy: bool = is_legacy
        self.flops = flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1

    def append_kernel(self, name, device, duration):
        self.kernels.append(Kernel(name, device, duration))

    def append_cpu_child(self, child):
        """Append a direct CPU child (for the self times)."""
        if not isinstance(child, FunctionEvent):
            raise AssertionError("Expected child to be a FunctionEvent")
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        """Set the immediate CPU parent (whose range contains this one's)."""
        if not isinstance(parent, FunctionEvent):
            raise AssertionError("Expected parent to be a FunctionEvent")
        self.cpu_parent = parent

    @property
    def self_cpu_memory_usage(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_memory_usage - sum(child.cpu_memory_usage for child in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.device_memory_usage - sum(child.device_memory_usage for child in self.cpu_children)

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us() if self.device_type == DeviceType.CPU else 0

    @property
    def self_cpu_time_total(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def device_time_total(self):
        return 0   # ember has no device kernels to time

    @property
    def self_device_time_total(self):
        return 0

    @property
    def key(self):
        return self.name

    def __repr__(self):
        device_name = self.use_device
        return (
            f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
            f"device_type={self.device_type} node_id={self.node_id} cpu_time={self.cpu_time_str} "
            f"start_us={self.time_range.start} end_us={self.time_range.end} "
            f"cpu_children={str([child.id for child in self.cpu_children])} {device_name}_time={self.device_time_str} "
            f"name={self.name} thread={self.thread} input_shapes={str(self.input_shapes)} "
            f"cpu_memory_usage={self.cpu_memory_usage} {device_name}_memory_usage={self.device_memory_usage} "
            f"is_async={self.is_async} is_remote={self.is_remote} seq_nr={self.sequence_nr} "
            f"is_legacy={self.is_legacy}>")


class FunctionEventAvg(FormattedTimesMixin):
    """Sums (and per-call averages) of the events of one key (``EventList.key_averages``)."""

    def __init__(self) -> None:
        self.key = None
        self.count: int = 0
        self.node_id: int = 0
        self.is_async: bool = False
        self.is_remote: bool = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage: int = 0
        self.device_memory_usage: int = 0
        self.self_cpu_memory_usage: int = 0
        self.self_device_memory_usage: int = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy: bool = False
        self.flops: int = 0
        self.is_user_annotation = False

    def add(self, other):
        if self.key is None:   # the first event: its fields
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        if self.flops is None:
            self.flops = other.flops
        elif other.flops is not None:
            self.flops += other.flops
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        device_name = "cuda" if not self.use_device else self.use_device
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
            f"cpu_time={self.cpu_time_str}  self_{device_name}_time={self.self_device_time_total_str} "
            f"{device_name}_time={self.device_time_str} input_shapes={str(self.input_shapes)} "
            f"cpu_memory_usage={self.cpu_memory_usage} {device_name}_memory_usage={self.device_memory_usage}>")


class MemRecordsAcc:
    """Memory records ``(time_ns, bytes, thread)`` sorted by time, to find those inside an interval."""

    def __init__(self, mem_records):
        self._mem_records = mem_records
        self._start_nses: list = []
        self._indices: list = []
        if len(mem_records) > 0:
            tmp = sorted((r[0], i) for i, r in enumerate(mem_records))
            self._start_nses, self._indices = zip(*tmp)

    def in_interval(self, start_ns, end_ns):
        """The records whose time is in [start_ns, end_ns]."""
        start_idx = bisect.bisect_left(self._start_nses, start_ns)
        end_idx = bisect.bisect_right(self._start_nses, end_ns)
        for i in range(start_idx, end_idx):
            yield self._mem_records[self._indices[i]]


class EventList(list):
    """A list of profiling events (``FunctionEvent`` or ``FunctionEventAvg``) with PyTorch's analysis methods."""

    def __init__(self, *args, **kwargs):
        use_device = kwargs.pop("use_device", None)
        profile_memory = kwargs.pop("profile_memory", False)
        with_flops = kwargs.pop("with_flops", False)
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._tree_built = False
        self._with_flops = with_flops

    def _build_tree(self):
        self._populate_cpu_children()
        self._remove_dup_nodes()
        self._set_backward_stacktraces()
        self._tree_built = True

    def __str__(self):
        return self.table()

    def _remove_dup_nodes(self):
        """Merge a child into its parent of the same name when it is the parent's only child (PyTorch's rule)."""
        while True:
            to_delete = set()
            for idx in range(len(self)):
                ev = self[idx]
                if ev.cpu_parent is not None and ev.cpu_parent.name == ev.name and len(ev.cpu_parent.cpu_children) == 1:
                    ev.cpu_parent.cpu_children = ev.cpu_children
                    ev.cpu_parent.kernels = ev.kernels
                    for ch in ev.cpu_children:
                        ch.cpu_parent = ev.cpu_parent
                    to_delete.add(idx)
            if len(to_delete) == 0:
                break
            new_evts = [ev for ind, ev in enumerate(self) if ind not in to_delete]
            self.clear()
            self.extend(new_evts)

    def _populate_cpu_children(self):
        """One event is a child of another when its range lies inside the other's, on the same thread."""
        sync_events = [evt for evt in self if not evt.is_async and evt.device_type == DeviceType.CPU]
        events = sorted(sync_events, key=attrgetter("thread"))
        threads = itertools.groupby(events, key=lambda event: (event.thread, event.node_id))
        for _thread_id, thread_events in threads:
            thread_events_ = sorted(thread_events, key=lambda event: [event.time_range.start, -event.time_range.end])
            current_events: list = []
            for event in thread_events_:
                while len(current_events) > 0:
                    parent = current_events[-1]
                    if event.time_range.start >= parent.time_range.end or event.time_range.end > parent.time_range.end:
                        current_events.pop()   # this can't be a parent
                    else:
                        parent.append_cpu_child(event)
                        if event.cpu_parent is not None:
                            raise AssertionError(f"There is already a CPU parent event for {event.key}")
                        event.set_cpu_parent(parent)
                        break
                current_events.append(event)

    def _set_backward_stacktraces(self):
        """Give the events inside a backward node the Python stack of the forward op that made the node."""
        def bw_parent(evt):
            while evt is not None and evt.scope != 1:   # BACKWARD_FUNCTION
                evt = evt.cpu_parent
            return evt

        fwd_stacks = {}
        for evt in self:
            if bw_parent(evt) is None and evt.stack is not None:
                t = (evt.sequence_nr, evt.thread)
                if t not in fwd_stacks:
                    fwd_stacks[t] = evt.stack
        for evt in self:
            p = bw_parent(evt)
            if p is not None and p.fwd_thread is not None:
                evt.stack = fwd_stacks.get((p.sequence_nr, p.fwd_thread), [])

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events as PyTorch's table. ``sort_by``: ``cpu_time``, ``cpu_time_total``, ``self_cpu_time_total``,
        ``cpu_memory_usage``, ``self_cpu_memory_usage``, ``count`` (the ``cuda``/``xpu`` keys are accepted and
        are 0 on ember); ``top_level_events_only``: only events with no parent; ``time_unit``: 's', 'ms', 'us'."""
        return _build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, with_flops=self._with_flops,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome tracing file (a JSON list of complete events), as PyTorch's EventList."""
        out = []
        for evt in self:
            if evt.trace_name is None:
                continue
            out.append({"name": evt.trace_name, "ph": "X", "ts": evt.time_range.start,
                        "dur": evt.time_range.elapsed_us(), "tid": evt.thread, "pid": "CPU functions", "args": {}})
        with open(path, "w") as f:
            json.dump(out, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str):
        """Write one line per event with a stack: its frames (outermost first, ';'-separated) and the metric, the
        "collapsed stacks" format flame-graph tools read."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        translate_table = str.maketrans(" ;\t\n", "____")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and len(evt.stack) > 0:
                    metric_value = getattr(evt, metric.replace("cuda", "device").replace("xpu", "device")
                                           .replace("privateuse1", "device"))
                    if int(metric_value) > 0:
                        stack_str = ";".join(entry.translate(translate_table) for entry in reversed(evt.stack))
                        f.write(stack_str + " " + str(int(metric_value)) + "\n")

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events summed per key (name; with ``group_by_input_shapes`` name and input shapes; with
        ``group_by_stack_n`` also the first n stack frames): an EventList of ``FunctionEventAvg``."""
        if not self._tree_built:
            raise AssertionError("Expected tree to be built before calling key_averages")
        stats: dict = defaultdict(FunctionEventAvg)

        def get_key(event) -> tuple:
            key = [str(event.key), str(event.node_id), str(event.device_type), str(event.is_legacy),
                   str(event.is_user_annotation)]
            if group_by_overload_name:
                key.append(event.overload_name)
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n]
            return tuple(key)

        for evt in self:
            stats[get_key(evt)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                             with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n] if evt.stack is not None else []
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self):
        """All events summed into one ``FunctionEventAvg`` with key "Total"."""
        total_stat = FunctionEventAvg()
        for evt in self:
            total_stat += evt
            total_stat.key = None
        total_stat.key = "Total"
        return total_stat


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
                 max_shapes_column_width=80, with_flops=False, profile_memory=False, top_level_events_only=False,
                 time_unit=None) -> str:
    """PyTorch's summary table of events (torch/autograd/profiler_util.py ``_build_table``)."""
    if len(events) == 0:
        return ""
    has_input_shapes = any((event.input_shapes is not None and len(event.input_shapes) > 0) for event in events)
    has_overload_names = any((event.overload_name is not None and len(event.overload_name) > 0) for event in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = EventList(sorted(events, key=lambda evt: getattr(evt, attr), reverse=True),
                           profile_memory=profile_memory, with_flops=with_flops)
    name_column_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_column_width = min(name_column_width, max_name_column_width)
    shapes_column_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_column_width = min(shapes_column_width, max_shapes_column_width)
    DEFAULT_COLUMN_WIDTH = 12
    flops_column_width = DEFAULT_COLUMN_WIDTH
    src_column_width = None
    stacks = [evt.stack for evt in events if evt.stack is not None and len(evt.stack) > 0]
    has_stack = len(stacks) > 0
    if has_stack:
        src_column_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_column_width = min(src_column_width, max_src_column_width)
    headers = ["Name"]
    if has_overload_names:
        headers.append("Overload Name")
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers.extend(["CPU Mem", "Self CPU Mem"])
    headers.append("# of Calls")
    append_node_id = any(evt.node_id != -1 for evt in events)
    if append_node_id:
        headers.append("Node ID")

    SPACING_SIZE = 2
    row_format = header_sep = ""
    line_length = -SPACING_SIZE

    def add_column(padding, text_dir=">"):
        nonlocal row_format, header_sep, line_length
        row_format += "{: " + text_dir + str(padding) + "}" + (" " * SPACING_SIZE)
        header_sep += "-" * padding + (" " * SPACING_SIZE)
        line_length += padding + SPACING_SIZE

    add_column(name_column_width)
    if has_overload_names:
        add_column(name_column_width)
    for _ in headers[1 + has_overload_names:]:
        add_column(DEFAULT_COLUMN_WIDTH)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_column_width)
    if has_stack:
        headers.append("Source Location")
        add_column(src_column_width, text_dir="<")
    flops_scale = 1.0
    if with_flops:
        raw_flops = [evt.flops for evt in events if evt.flops and evt.flops > 0]
        if len(raw_flops) != 0:
            log_flops = max(0, min(math.log10(min(raw_flops)) / 3, 5.0))
            flops_scale = pow(10, (math.floor(log_flops) * -3.0))
            headers.append(f"Total {['FLOPs', 'KFLOPs', 'MFLOPs', 'GFLOPs', 'TFLOPs', 'PFLOPs'][int(log_flops)]}")
            add_column(flops_column_width)
        else:
            with_flops = False   # no valid flops

    result = []

    def append(s):
        result.append(s)
        result.append("\n")   # a newline after the last line as well

    sum_self_cpu_time_total = sum(evt.self_cpu_time_total for evt in events)
    if header is not None:
        append("=" * line_length)
        append(header)
    if top_level_events_only:
        append("=" * line_length)
        append("This report only display top-level ops statistics")
    append(header_sep)
    append(row_format.format(*headers))
    append(header_sep)

    def trim_path(path, width):
        if len(path) > width:
            path = path[len(path) - width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    def in_unit(time_us, default_str):
        if time_unit == "s":
            return f"{time_us / (1000.0 * 1000.0):.3f}s"
        if time_unit == "ms":
            return f"{time_us / 1000.0:.3f}ms"
        if time_unit == "us":
            return f"{time_us:.3f}us"
        return default_str

    event_limit = 0
    for evt in events:
        if event_limit == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        event_limit += 1
        name = evt.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:(max_name_column_width - 3)] + "..."
        evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, sum_self_cpu_time_total)
        evt.total_cpu_percent = (_format_time_share(evt.cpu_time_total, sum_self_cpu_time_total)
                                 if not evt.is_async else 0)
        row_values = [name]
        if has_overload_names:
            overload_name = evt.overload_name
            if max_name_column_width is not None and len(overload_name) >= max_name_column_width - 3:
                overload_name = overload_name[:(max_name_column_width - 3)] + "..."
            row_values += [overload_name]
        row_values += [evt.self_cpu_percent, in_unit(evt.self_cpu_time_total, evt.self_cpu_time_total_str),
                       evt.total_cpu_percent, in_unit(evt.cpu_time_total, evt.cpu_time_total_str),
                       in_unit(evt.cpu_time, evt.cpu_time_str)]
        if profile_memory:
            row_values.extend([_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)])
        row_values.append(evt.count)
        if append_node_id:
            row_values.append(evt.node_id)
        if has_input_shapes:
            row_values.append(str(evt.input_shapes)[:shapes_column_width])
        if with_flops:
            row_values.append("--" if not evt.flops or evt.flops <= 0 else f"{evt.flops * flops_scale:8.3f}")
        if has_stack:
            row_values.append(trim_path(evt.stack[0], src_column_width) if len(evt.stack) > 0 else "")
        append(row_format.format(*row_values))
        if has_stack:
            empty_headers = [""] * (len(headers) - 1)
            for entry in evt.stack[1:]:
                append(row_format.format(*(empty_headers + [trim_path(entry, src_column_width)])))
            empty_headers.append("")
            append(row_format.format(*empty_headers))
    append(header_sep)
    append(f"Self CPU time total: {in_unit(sum_self_cpu_time_total, _format_time(sum_self_cpu_time_total))}")
    return "".join(result)
