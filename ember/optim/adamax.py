"""Adamax: Adam with the infinity norm (Kingma & Ba, section 7): PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _bump, _check_capturable, _check_lr_betas_eps_wd, _grad, _lerp_, _to_scalar,
                        _upgrade_steps)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adam's first moment over a running maximum of gradient magnitudes."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr: float | Tensor = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr_betas_eps_wd(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One Adamax step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = _to_scalar(group["lr"]), group["weight_decay"], group["eps"]
            for p in self._params_with_grad(group):
                state = self._lazy_state(p, "exp_avg", "exp_inf")
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"], wd)
                state["step"]._data += 1
                m, u = state["exp_avg"]._data, state["exp_inf"]._data
                _lerp_(m, g, 1 - beta1)
                u *= beta2
                xp = NAMESPACES[type(u)]
                u[...] = xp.maximum(u, xp.abs(g) + eps)
                clr = lr / (1 - beta1 ** float(state["step"]._data))
                a += -clr * m / u
                _bump(p)
        return loss
