"""torch.cuda: the GPU that CuPy sees (``ember/devices/cuda``), or, without CuPy or a GPU, what a CPU-only PyTorch
does: seeding and cache calls are harmless no-ops, queries of a device raise its AssertionError.

ember builds one GPU (cuda:0, CuPy's current device). Memory figures are CuPy's default pool's: ``memory_allocated``
is the bytes in use, ``memory_reserved`` the bytes the pool holds, ``max_memory_allocated`` the peak since the
last ``reset_peak_memory_stats``.
"""
from __future__ import annotations

from typing import Any

from .._device import check_device, device as _device_type, no_cuda
from ..devices import cuda as _dev


def is_available() -> bool:
    return _dev.is_available()


def device_count() -> int:
    return _dev.device_count()


def is_initialized() -> bool:
    return _dev.is_available() and check_device("cuda") is not None


def init() -> None:
    check_device("cuda")


def _index(device=None, optional: bool = True) -> int:
    """The GPU index of a ``device`` argument (None: the current device), checked; AssertionError without CUDA."""
    if not _dev.is_available():
        raise no_cuda()
    if device is None:
        return _dev.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device if device >= 0 else _dev.current_device()
    d = device if isinstance(device, _device_type) else _device_type(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return _dev.current_device() if d.index is None else d.index


def _checked(device=None) -> int:
    i = _index(device)
    if not 0 <= i < _dev.device_count():
        raise AssertionError("Invalid device id")
    return i


def manual_seed(seed: int) -> None:
    """Seed CuPy's generator; a no-op without CUDA, as in PyTorch (which defers it until CUDA starts). ember's
    random ops on 'cuda' draw PyTorch's CPU stream (``torch.manual_seed``) and move the samples."""
    if _dev.is_available():
        _dev.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    """No-op without CUDA, as in PyTorch."""


def seed_all() -> None:
    """No-op without CUDA, as in PyTorch."""


def empty_cache() -> None:
    """Free the cached blocks of CuPy's memory pool (no-op without CUDA)."""
    if _dev.is_available():
        _dev.empty_cache()


def set_rng_state(new_state, device="cuda") -> None:
    """No-op without CUDA, as in PyTorch (which defers it until CUDA starts)."""


def set_rng_state_all(new_states) -> None:
    """No-op without CUDA, as in PyTorch."""


def get_rng_state_all() -> list:
    return []


def memory_allocated(device=None) -> int:
    return _dev.memory_allocated() if _dev.is_available() else 0


def max_memory_allocated(device=None) -> int:
    return _dev.max_memory_allocated() if _dev.is_available() else 0


def memory_reserved(device=None) -> int:
    return _dev.memory_reserved() if _dev.is_available() else 0


def max_memory_reserved(device=None) -> int:
    return _dev.memory_reserved() if _dev.is_available() else 0


def reset_peak_memory_stats(device=None) -> None:
    if not _dev.is_available():
        raise AttributeError("module 'torch._C' has no attribute '_cuda_resetPeakMemoryStats'")
    _dev.reset_peak_memory_stats()


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False   # CuPy has no bfloat16 arrays


def synchronize(device=None) -> None:
    """Wait for every kernel queued on the GPU."""
    _dev.synchronize(_checked(device))


def current_device() -> int:
    return _index(None)


def set_device(device) -> None:
    """Make ``device`` current (a negative index is a no-op, as in PyTorch); ember builds cuda:0 only."""
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    _dev.set_device(_checked(device))


def get_device_name(device=None) -> str:
    return _dev.device_name(_checked(device))


def get_device_capability(device=None) -> tuple:
    p = _dev.device_properties(_checked(device))
    return p["major"], p["minor"]


class _CudaDeviceProperties:
    """``get_device_properties``'s answer: name, total_memory (bytes), major, minor, multi_processor_count."""

    def __init__(self, props: dict):
        self.__dict__.update(props)

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2 ** 20}MB, multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    return _CudaDeviceProperties(_dev.device_properties(_checked(device)))


def mem_get_info(device=None) -> tuple:
    _checked(device)
    return _dev.mem_get_info()


def _needs_cuda(*args, **kwargs):
    raise no_cuda()


# Without CUDA, PyTorch raises AssertionError("Torch not compiled with CUDA enabled") for these too.
get_rng_state = initial_seed = ipc_collect = _needs_cuda


class device:
    """``with torch.cuda.device(0):``: the current GPU inside the block (None or a negative index: no change)."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _index_or_neg(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            if not _dev.is_available():
                raise RuntimeError("PyTorch was compiled without CUDA support")
            self.prev_idx = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc) -> bool:
        if self.prev_idx >= 0:
            set_device(self.prev_idx)
        return False


def _index_or_neg(d) -> int:
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    d = d if isinstance(d, _device_type) else _device_type(d)
    return 0 if d.index is None else d.index


class Stream:
    """A CUDA stream (CuPy's): ``synchronize``, ``query``, ``wait_stream``, ``record_event``; ``with
    torch.cuda.stream(s):`` makes it current."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        if not _dev.is_available():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        self._s = kwargs.pop("_stream", None) or _dev.stream(non_blocking=True)
        self.device = _device_type("cuda", 0)
        self.priority = priority

    def synchronize(self) -> None:
        self._s.synchronize()

    def query(self) -> bool:
        return bool(self._s.query())

    def wait_stream(self, stream: Stream) -> None:
        stream.synchronize()   # (CuPy's wait_event would not block the host; this is the simple correct form)

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        event.synchronize()

    @property
    def cuda_stream(self) -> int:
        return int(getattr(self._s, "ptr", 0))

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self._s is other._s

    def __hash__(self) -> int:
        return hash(id(self._s))

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x}>"


class StreamContext:
    """``torch.cuda.stream(s)``: ``s`` is CuPy's current stream inside the block (None: no change)."""

    def __init__(self, stream: Stream | None):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            self.stream._s.__enter__()
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self.stream is not None:
            self.stream._s.__exit__(*exc)
        return False


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)


def current_stream(device=None) -> Stream:
    _checked(device)
    return Stream(_stream=_dev.current_stream())


default_stream = current_stream


class Event:
    """A CUDA event (CuPy's): ``record``, ``synchronize``, ``query``, ``wait``, ``elapsed_time`` (ms, needs
    ``enable_timing=True`` on both)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if not _dev.is_available():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self.enable_timing = enable_timing
        self._e = _dev.event(enable_timing, blocking)

    def record(self, stream: Stream | None = None) -> None:
        self._e.record(None if stream is None else stream._s)

    def synchronize(self) -> None:
        self._e.synchronize()

    def query(self) -> bool:
        return bool(self._e.query())

    def wait(self, stream: Stream | None = None) -> None:
        self._e.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        end_event._e.synchronize()   # (CUDA refuses the time of an event not reached yet)
        return _dev.elapsed_ms(self._e, end_event._e)


from . import amp  # noqa: E402,F401  (torch.cuda.amp, PyTorch's deprecated alias of torch.amp)
