"""Adadelta (Zeiler) with weight decay and maximize: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _add_scaled_, _addcmul_, _bump, _check_capturable, _check_lr, _grad, _to_scalar,
                        _upgrade_steps)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Step sizes from running averages of squared gradients and squared updates."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One Adadelta step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _to_scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            params = self._params_with_grad(group)
            if params:
                _check_capturable(group["capturable"])
            for p in params:
                state = self._lazy_state(p, "square_avg", "acc_delta")
                a = p._data
                xp = NAMESPACES[type(a)]
                state["step"]._data += 1
                g = _grad(p, group["maximize"], wd)
                sq, acc = state["square_avg"]._data, state["acc_delta"]._data
                sq *= rho
                _addcmul_(sq, g, g, 1 - rho)
                std = xp.sqrt(sq + eps)
                delta = xp.sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                _addcmul_(acc, delta, delta, 1 - rho)
                _add_scaled_(a, -lr, delta)
                _bump(p)
        return loss
