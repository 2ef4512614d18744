"""Process-wide switches PyTorch scripts set: thread counts, deterministic algorithms, float32 matmul
precision. ember computes with NumPy on the CPU, so most are remembered rather than acted on (see each)."""
from __future__ import annotations

import builtins
import os

_state = {"threads": None, "interop": None, "deterministic": False, "warn_only": False,
          "precision": "highest"}


def _check_threads(n, op: str) -> builtins.int:
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int):
        raise RuntimeError(f"{op} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{op} expects a positive integer")
    return n


def set_num_threads(int: builtins.int) -> None:
    """Threads for intra-op work. ember's heavy work is NumPy's BLAS: when ``threadpoolctl`` is installed
    its thread pools are limited to ``int``; otherwise the number is only remembered (and returned by
    ``get_num_threads``)."""
    n = _check_threads(int, "set_num_threads")
    _state["threads"] = n
    try:
        import threadpoolctl
    except ImportError:
        return
    threadpoolctl.threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> builtins.int:
    """The number set by ``set_num_threads``, else the number of CPUs (PyTorch's default)."""
    n = _state["threads"]
    return n if n is not None else (os.cpu_count() or 1)


def set_num_interop_threads(int: builtins.int) -> None:
    """Threads for inter-op parallelism; ember runs ops one after another, so this is only remembered."""
    _state["interop"] = _check_threads(int, "set_num_interop_threads")


def get_num_interop_threads() -> builtins.int:
    n = _state["interop"]
    return n if n is not None else (os.cpu_count() or 1)


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    """Remembered only: every ember op is already deterministic (NumPy on one device)."""
    if not isinstance(mode, builtins.bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, builtins.bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, mode and warn_only


def are_deterministic_algorithms_enabled() -> builtins.bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    return _state["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """'highest', 'high' or 'medium'. Remembered only: NumPy's float32 matmul is always 'highest'.
    As in PyTorch, 'high'/'medium' also turn on ``backends.cuda.matmul.allow_tf32``; an unknown value
    is ignored with PyTorch's warning."""
    if precision not in ("highest", "high", "medium"):
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["precision"] = precision
    from .backends import cuda
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision() -> str:
    return _state["precision"]


def set_deterministic_debug_mode(debug_mode: str | builtins.int) -> None:
    """PyTorch's shorthand for ``use_deterministic_algorithms``: 0/'default' off, 1/'warn' on with
    ``warn_only``, 2/'error' on."""
    if not isinstance(debug_mode, (builtins.int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> builtins.int:
    """0 (off), 1 (warn only) or 2 (error), from ``use_deterministic_algorithms``'s state."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_warn_always(b: builtins.bool) -> None:
    """PyTorch's switch to repeat its once-per-process warnings every time. Remembered only: ember's warnings go
    through Python's ``warnings`` module, whose filters decide repetition."""
    _state["warn_always"] = builtins.bool(b)


def is_warn_always_enabled() -> builtins.bool:
    return _state.get("warn_always", False)


def set_flush_denormal(mode: builtins.bool) -> builtins.bool:
    """PyTorch sets the CPU's flush-denormals-to-zero flag and returns True where the CPU supports it. NumPy has
    no such switch, so ember changes nothing and returns False (PyTorch's answer on a CPU without the flag)."""
    return False


def init_num_threads() -> None:
    """PyTorch initialises its OpenMP pool for the calling thread; ember has no pool of its own."""


def compiled_with_cxx11_abi() -> builtins.bool:
    """True, as every PyTorch 2.x build (a fact about PyTorch's C++ library; ember has none)."""
    return True
