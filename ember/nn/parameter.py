"""nn.Parameter: a leaf tensor that requires grad by default."""
from __future__ import annotations

from .._creation import empty
from .._tensor import Tensor, _init, _new


class Parameter(Tensor):
    """A tensor registered as a learnable parameter; it shares ``data``'s memory."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        p = _new(cls)
        _init(p, data._data)
        p._vc = data._vc
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, *args, **kwargs):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
