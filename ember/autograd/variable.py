"""``Variable``: the pre-0.4 wrapper, kept as PyTorch keeps it. ``Variable(t)`` returns a Tensor."""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from .graph import queue_callback


class _ImperativeEngine:
    """``Variable._execution_engine``: what programs reach the engine through (``queue_callback``)."""

    @staticmethod
    def queue_callback(callback) -> None:
        """Run ``callback()`` when the current backward has finished."""
        queue_callback(callback)


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)   # as PyTorch: every Tensor is a Variable


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` detached, as a Tensor."""

    _execution_engine = _ImperativeEngine()

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False, **kwargs):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = Tensor()   # empty, of the default dtype
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t.requires_grad_(requires_grad)
        return t
