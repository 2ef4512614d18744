"""RAdam (Liu et al.): Adam with a rectified adaptive learning rate: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _adam_weight_decay, _addcmul_, _bump, _check_capturable, _check_lr_betas_eps_wd,
                        _grad, _lerp_, _to_scalar, _upgrade_steps)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Adam whose adaptive step is switched on (and rectified) once its variance is tractable."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                              capturable=False)

    def __init__(self, params, lr: float | Tensor = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr_betas_eps_wd(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One RAdam step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = _to_scalar(group["lr"]), group["weight_decay"], group["eps"]
            for p in self._params_with_grad(group):
                state = self._lazy_state(p, "exp_avg", "exp_avg_sq")
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"])
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                state["step"]._data += 1
                step = float(state["step"]._data)
                g = _adam_weight_decay(p, g, lr, wd, group["decoupled_weight_decay"])
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
                    adaptive_lr = (1 / (NAMESPACES[type(v)].sqrt(v) + eps)) * bias_correction2 ** 0.5
                    a -= bias_corrected_exp_avg * lr * adaptive_lr * rect
                else:
                    a -= bias_corrected_exp_avg * lr
                _bump(p)
        return loss
