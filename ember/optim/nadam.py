"""NAdam (Dozat): Adam with Nesterov momentum and momentum decay: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _adam_weight_decay, _addcmul_, _bump, _check_capturable, _check_lr_betas_eps_wd,
                        _grad, _lerp_, _scalar, _to_scalar, _upgrade_steps, _zeros_like)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam with a Nesterov look-ahead; ``mu_product`` is kept in the scalar dtype, as in PyTorch."""

    _setstate_defaults = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False)

    def __init__(self, params, lr: float | Tensor = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr_betas_eps_wd(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _upgrade_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0 and not isinstance(st["mu_product"], Tensor):
                    st["mu_product"] = _scalar(st["mu_product"])
        _upgrade_steps(self)

    def step(self, closure: Callable | None = None):
        """One NAdam step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, wd, eps = _to_scalar(group["lr"]), group["weight_decay"], group["eps"]
            momentum_decay = group["momentum_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["mu_product"] = _scalar(1.0)
                    state["exp_avg"] = _zeros_like(p)
                    state["exp_avg_sq"] = _zeros_like(p)
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"])
                m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
                mu_product = state["mu_product"]._data
                state["step"]._data += 1
                step = float(state["step"]._data)
                bias_correction2 = 1 - beta2 ** step
                g = _adam_weight_decay(p, g, lr, wd, group["decoupled_weight_decay"])
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                # In the scalar dtype (float32 by default), rounded every step as in PyTorch.
                mu_product *= mu
                _lerp_(m, g, 1 - beta1)
                v *= beta2
                _addcmul_(v, g, g, 1 - beta2)
                denom = NAMESPACES[type(v)].sqrt(v / bias_correction2)
                mu_prod = float(mu_product)
                mu_product_next = mu_prod * mu_next
                denom += eps
                a += (-lr * (1.0 - mu) / (1.0 - mu_prod)) * g / denom
                a += (-lr * mu_next / (1.0 - mu_product_next)) * m / denom
                _bump(p, 2)
        return loss
