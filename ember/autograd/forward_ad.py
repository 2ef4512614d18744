"""Forward-mode AD with dual tensors: ``with dual_level(): make_dual(x, t) ... unpack_dual(y)``.

Every primitive's JVP rule propagates tangents; the tangent computation itself is recorded for
reverse mode, so forward-over-reverse and reverse-over-forward both work. One level at a time, as
PyTorch: tangents vanish from every tensor when their level is exited.
"""
from __future__ import annotations

from collections import namedtuple

from .._state import fwd_state, track_tangent
from .._tensor import Tensor
from ._views import refresh_tangent
from . import grad_mode as _gm

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level() -> int:
    """Open the (single) forward-AD level; returns its index, 0."""
    if fwd_state.level:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    fwd_state.level = 1
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the level: every tangent made inside is dropped."""
    current = fwd_state.level - 1
    if level is None:
        level = current
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    fwd_state.level = 0
    for ref in fwd_state.tensors:
        t = ref()
        if t is not None:
            t._fw_grad = None
    fwd_state.tensors.clear()


class dual_level(_gm._DecoratorContextManager):
    """Context manager (and decorator) for forward AD: tangents live while it is open."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _check_level(level, what: str) -> None:
    if level is not None and level != fwd_state.level - 1:
        raise RuntimeError(f"Invalid level given to {what}")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient."""
    if fwd_state.level == 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    _check_level(level, "_make_dual")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): argument 'tangent' must be Tensor, not {type(tangent).__name__}")
    if tensor._data.dtype.kind not in "fcV":
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if tangent._data.dtype.kind not in "fcV":
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                           f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
                           f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tensor._fw_grad is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           "level 0 is not supported.")
    level_, fwd_state.level = fwd_state.level, 0
    try:
        dual = tensor.view_as(tensor)   # recorded as a view for reverse mode, as PyTorch's _make_dual
    finally:
        fwd_state.level = level_
    if tangent._data.dtype != tensor._data.dtype:
        tangent = tangent.to(tensor.dtype)
    dual._fw_grad = tangent
    track_tangent(dual)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: the primal is a view of ``tensor`` without its tangent; the tangent is None
    outside a dual level or for a tensor that has none."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    if fwd_state.level == 0:
        return UnpackedDualTensor(tensor, None)
    _check_level(level, "_unpack_dual")
    if tensor._base is not None and tensor._vc[0] != tensor._view_v:
        refresh_tangent(tensor)   # a view whose base changed in place since its tangent was made
    level_, fwd_state.level = fwd_state.level, 0
    try:
        primal = tensor.view_as(tensor)
    finally:
        fwd_state.level = level_
    return UnpackedDualTensor(primal, tensor._fw_grad)
