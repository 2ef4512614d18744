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
