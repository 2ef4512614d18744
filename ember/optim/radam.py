"""RAdam (Liu et al.): Adam with a rectified adaptive learning rate: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._tensor import Tensor
from .adam import _upgrade_steps
from .optimizer import (Optimizer, _add_scaled, _addcmul_, _bump, _check_capturable, _check_lr_betas_eps_wd, _lerp_,
                        _scalar, _to_scalar, _zeros_like)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Adam whose adaptive step is switched on (and rectified) once its variance is tractable."""

    def __init__(self, params, lr: float | Tensor = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr_betas_eps_wd(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("capturable", False)
        _upgrade_steps(self, fused_key=False)

    def step(self, closure: Callable | None = None):
        """One RAdam step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = _to_scalar(group["lr"]), group["weight_decay"], group["eps"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                _check_capturable(group["capturable"])
                a = p._data
                g = p.grad._data
                g = -g if group["maximize"] else g
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                state["step"]._data += 1
                step = float(state["step"]._data)
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        a *= 1 - lr * wd
                        _bump(p)
                    else:
                        g = _add_scaled(g, wd, a)
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                _addcmul_(v, g, g, 1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = m / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    # PyTorch's number / tensor is reciprocal() * number (two roundings).
                    adaptive_lr = (1 / (np.sqrt(v) + eps)) * bias_correction2 ** 0.5
                    a -= bias_corrected_exp_avg * lr * adaptive_lr * rect
                else:
                    a -= bias_corrected_exp_avg * lr
                _bump(p)
        return loss
