"""RMSprop (Hinton) with centering, momentum, weight decay and maximize: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _add_scaled_, _addcmul, _addcmul_, _bump, _check_capturable, _check_lr, _grad,
                        _lerp_, _scalar, _to_scalar, _upgrade_steps, _zeros_like)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Divide the gradient by a running root mean square of recent gradients."""

    _setstate_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                              capturable=False)

    def __init__(self, params, lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One RMSprop step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd = _to_scalar(group["lr"]), group["weight_decay"]
            alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["square_avg"] = _zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = _zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = _zeros_like(p)
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"], wd)
                state["step"]._data += 1
                sq = state["square_avg"]._data
                xp = NAMESPACES[type(sq)]
                sq *= alpha
                _addcmul_(sq, g, g, 1 - alpha)
                if group["centered"]:
                    ga = state["grad_avg"]._data
                    _lerp_(ga, g, 1 - alpha)
                    avg = xp.sqrt(_addcmul(sq, ga, ga, -1))
                else:
                    avg = xp.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]._data
                    buf *= momentum
                    buf += g / avg
                    _add_scaled_(a, -lr, buf)
                else:
                    a += -lr * g / avg
                _bump(p)
        return loss
