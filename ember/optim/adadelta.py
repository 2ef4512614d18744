"""Adadelta (Zeiler) with weight decay and maximize: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._tensor import Tensor
from .adam import _upgrade_steps
from .optimizer import (Optimizer, _add_scaled, _add_scaled_, _addcmul_, _bump, _check_capturable, _scalar, _to_scalar,
                        _zeros_like)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Step sizes from running averages of squared gradients and squared updates."""

    def __init__(self, params, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
        _upgrade_steps(self, fused_key=False)

    def step(self, closure: Callable | None = None):
        """One Adadelta step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _to_scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            params = self._params_with_grad(group)
            if params:
                _check_capturable(group["capturable"])
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["square_avg"] = _zeros_like(p)
                    state["acc_delta"] = _zeros_like(p)
                a = p._data
                g = p.grad._data
                state["step"]._data += 1
                g = -g if group["maximize"] else g
                if wd != 0:
                    g = _add_scaled(g, wd, a)
                sq, acc = state["square_avg"]._data, state["acc_delta"]._data
                sq *= rho
                _addcmul_(sq, g, g, 1 - rho)
                std = np.sqrt(sq + eps)
                delta = np.sqrt(acc + eps)
                delta /= std
                delta *= g
                acc *= rho
                _addcmul_(acc, delta, delta, 1 - rho)
                _add_scaled_(a, -lr, delta)
                _bump(p)
        return loss
