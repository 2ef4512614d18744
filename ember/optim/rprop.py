"""Rprop (resilient backpropagation): per-coordinate step sizes from gradient signs only."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _bump, _check_capturable, _check_lr, _full_like, _grad, _scalar, _to_scalar,
                        _upgrade_steps, _zeros_like)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Grow a coordinate's step by ``etas[1]`` while its gradient keeps its sign, shrink it by ``etas[0]``
    when the sign flips (and skip that coordinate's update once)."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _state_first = False     # PyTorch's Rprop starts with grad.mul(prev)

    def _shape_error(self, state: tuple, param: tuple) -> Exception:
        err = super()._shape_error(state, param)
        if len(state) == len(param) and "broadcast shape" in str(err) and \
                all(s == q or q == 1 for s, q in zip(state, param)):
            # the sign (state-shaped) then masks the parameter-shaped gradient: PyTorch's indexing error
            i = next(k for k, (s, q) in enumerate(zip(state, param)) if s != q)
            return IndexError(f"The shape of the mask {list(state)} at index {i} does not match the shape of the "
                              f"indexed tensor {list(param)} at index {i}")
        return err

    def __init__(self, params, lr: float | Tensor = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One Rprop step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["prev"] = _zeros_like(p)
                    state["step_size"] = _full_like(p.grad, _to_scalar(group["lr"]))
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"])
                prev, step_size = state["prev"]._data, state["step_size"]._data
                state["step"]._data += 1
                xp = NAMESPACES[type(a)]
                # PyTorch's sign: 0 for NaN (an inf gradient times a zero ``prev`` must not poison the step size);
                # a copy, to assign into (0-d inputs give NumPy scalars)
                sign = xp.backend.copy(xp.sign(g * prev))
                sign[sign > 0] = etaplus
                sign[sign < 0] = etaminus
                sign[sign == 0] = 1
                step_size *= sign
                step_size[...] = xp.minimum(xp.maximum(step_size, step_size_min), step_size_max)
                g = xp.backend.copy(g)
                g[sign == etaminus] = 0
                a += -1 * xp.sign(g) * step_size
                _bump(p)
                prev[...] = g
        return loss
