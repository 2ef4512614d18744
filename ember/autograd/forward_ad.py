"""Forward-mode AD with dual tensors: ``with dual_level(): make_dual(x, t) ... unpack_dual(y)``.

Every primitive's JVP rule propagates tangents; the tangent computation itself is recorded for
reverse mode, so forward-over-reverse and reverse-over-forward both work.
"""
from __future__ import annotations

from collections import namedtuple

from .._tensor import Tensor
from .grad_mode import fwd_state

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_duals: list = []


class dual_level:
    """Context manager: tangents live while it is open (only one level, as in PyTorch's default)."""

    def __enter__(self) -> int:
        fwd_state.level += 1
        return fwd_state.level - 1

    def __exit__(self, *exc) -> None:
        fwd_state.level -= 1
        if fwd_state.level == 0:
            for ref in _duals:
                ref._fw_grad = None
            _duals.clear()


def enter_dual_level() -> int:
    return dual_level().__enter__()


def exit_dual_level(*, level=None) -> None:
    dual_level().__exit__(None, None, None)


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient."""
    if fwd_state.level == 0:
        raise RuntimeError("To create a dual Tensor, you must be inside a dual_level context: "
                           "use `with forward_ad.dual_level():`")
    if not isinstance(tangent, Tensor) or tangent._data.shape != tensor._data.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the "
                           f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
                           f"while the given forward gradient is of size {list(getattr(tangent, 'shape', []))}.")
    if not tensor._data.dtype.kind == "f":
        raise ValueError(f"Expected primal to be floating point, but got: {tensor.dtype}")
    dual = tensor.view_as(tensor)
    if tangent._data.dtype != tensor._data.dtype:
        tangent = tangent.to(tensor.dtype)
    dual._fw_grad = tangent
    _duals.append(dual)
    return dual


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)``; the tangent is None outside a dual level or for plain tensors."""
    tangent = tensor._fw_grad if fwd_state.level else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)
