"""Device 'cuda': the common array-API kernels (``ember/devices/common``) on CuPy, and CuPy's runtime.

CuPy is imported here only, and only when 'cuda' is first used (``make()``, ``is_available()``); without CuPy or
without a GPU ``make()`` is None and ember behaves as a CPU-only PyTorch. One GPU is built: CuPy's current device,
which PyTorch calls ``cuda:0``. The raw arrays are ``CudaArray``s (array.py: a CuPy array plus NumPy dtype
metadata, as every array-API device's, see common/array.py); xp.py adapts CuPy's namespace to the standard. The
functions here are what ``ember.cuda`` (torch.cuda) needs from CuPy's runtime: device count, names and properties,
synchronisation, the memory pool (with a peak counter, which CuPy's pool lacks), streams and events.
"""
from __future__ import annotations

import importlib

from ._copies import COPIES  # noqa: F401  (re-exported: the tests' counter)

_state: dict = {"cupy": None, "tried": False, "peak": 0}


def cupy():
    """The CuPy module, imported on first use; None when it does not import (or finds no CUDA)."""
    if not _state["tried"]:
        _state["tried"] = True
        try:
            _state["cupy"] = importlib.import_module("cupy")
        except Exception:   # ImportError, or CuPy's own error when the CUDA libraries are missing
            _state["cupy"] = None
    return _state["cupy"]


def device_count() -> int:
    """How many GPUs CuPy sees (0 without CuPy, a driver or a GPU)."""
    cp = cupy()
    if cp is None:
        return 0
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:   # cupy_backends' CUDARuntimeError: no driver, no device
        return 0


def is_available() -> bool:
    return device_count() > 0


def reset() -> None:
    """Forget CuPy (tests swap a stand-in module in and out with this and ``ember.devices.uninstall('cuda')``)."""
    _state.update(cupy=None, tried=False, peak=0)


_DLPACK_CUDA = (2, 13)   # kDLCUDA, kDLCUDAManaged


def is_cuda_dlpack(obj) -> bool:
    """Whether ``obj`` (anything with ``__dlpack_device__``) holds GPU memory."""
    dev = getattr(obj, "__dlpack_device__", None)
    return dev is not None and int(dev()[0]) in _DLPACK_CUDA


def make():
    """The raw namespace of device 'cuda', or None without CuPy or a GPU (``ember.devices`` calls this on first
    use of 'cuda')."""
    if not is_available():
        return None
    from .array import CudaArray, CudaBackend   # here: no import of ember pays for the common kernels
    from .xp import adapt
    from ..common.namespace import make_namespace
    cp = cupy()
    ns = make_namespace("cuda", adapt(cp), array_base=CudaArray, backend_class=CudaBackend)
    ns.backend._arr.cupy = cp
    _track_peak(cp)
    return ns


# ----- the runtime: what torch.cuda needs ---------------------------------------------------------------------

def _track_peak(cp) -> None:
    """Route CuPy's allocations through its default pool with a peak counter (``max_memory_allocated``)."""
    pool = cp.get_default_memory_pool()

    def malloc(size: int):
        mem = pool.malloc(size)
        used = pool.used_bytes()
        if used > _state["peak"]:
            _state["peak"] = used
        return mem
    cp.cuda.set_allocator(malloc)


def _cp():
    cp = cupy()
    if cp is None:
        raise RuntimeError("ember: CuPy is not available")
    return cp


def device_name(index: int) -> str:
    name = _cp().cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_properties(index: int) -> dict:
    """name, total_memory, major, minor, multi_processor_count (PyTorch's field names)."""
    p = _cp().cuda.runtime.getDeviceProperties(index)
    name = p["name"]
    return {"name": name.decode() if isinstance(name, bytes) else str(name), "total_memory": int(p["totalGlobalMem"]),
            "major": int(p["major"]), "minor": int(p["minor"]),
            "multi_processor_count": int(p["multiProcessorCount"])}


def synchronize(index: int = 0) -> None:
    _cp().cuda.Device(index).synchronize()


def set_device(index: int) -> None:
    _cp().cuda.Device(index).use()


def current_device() -> int:
    return int(_cp().cuda.Device().id)


def memory_allocated() -> int:
    return int(_cp().get_default_memory_pool().used_bytes())


def memory_reserved() -> int:
    return int(_cp().get_default_memory_pool().total_bytes())


def max_memory_allocated() -> int:
    return max(_state["peak"], memory_allocated())


def reset_peak_memory_stats() -> None:
    _state["peak"] = memory_allocated()


def empty_cache() -> None:
    _cp().get_default_memory_pool().free_all_blocks()


def mem_get_info() -> tuple:
    free, total = _cp().cuda.runtime.memGetInfo()
    return int(free), int(total)


def manual_seed(seed: int) -> None:
    """Seed CuPy's generator (ember's random ops on 'cuda' draw PyTorch's CPU stream and move it: see README)."""
    _cp().random.seed(seed % (2 ** 32))


def stream(non_blocking: bool = False):
    return _cp().cuda.Stream(non_blocking=non_blocking)


def current_stream():
    return _cp().cuda.get_current_stream()


def event(enable_timing: bool = False, blocking: bool = False):
    return _cp().cuda.Event(block=blocking, disable_timing=not enable_timing)


def elapsed_ms(start, end) -> float:
    return float(_cp().cuda.get_elapsed_time(start, end))
