"""nn.Parameter (a leaf tensor that requires grad by default) and nn.Buffer (a tensor marked as module state)."""
from __future__ import annotations

from ..ops.creation import empty
from .._tensor import Tensor, _init, _new


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Parameter(Tensor):
    """A tensor registered as a learnable parameter when assigned to a Module; it shares ``data``'s memory."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        p = _new(cls)
        _init(p, data._data)
        p._vc = data._vc
        p._set_requires_grad(requires_grad)
        return p

    def __init__(self, *args, **kwargs):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


class _BufferMeta(type):
    # isinstance(t, Buffer) holds for any tensor Buffer(...) marked, as PyTorch's Buffer.
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as module state: assigned to a Module attribute, it becomes a buffer (``persistent``
    decides whether it is saved in ``state_dict``). ``Buffer(t)`` returns a detached plain tensor."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)   # (refused inside torch.func's transforms, as PyTorch's)
        t.persistent = persistent
        t._is_buffer = True
        return t
