"""Adagrad (Duchi et al.) with lr decay, an initial accumulator, weight decay and maximize."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _addcmul_, _bump, _check_fused_flags, _check_lr, _fused_check, _fused_state_check,
                        _full_like, _get_scalar_dtype, _grad, _scalar, _to_scalar)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Per-coordinate learning rates from the sum of squared gradients (state made at construction)."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self, params, lr: float | Tensor = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p: Tensor, group: dict) -> None:
        state = self.state[p]
        state["step"] = _scalar(0.0, _get_scalar_dtype(is_fused=group["fused"]))
        state["sum"] = _full_like(p, self.defaults["initial_accumulator_value"])

    def _upgrade_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0 and not isinstance(st["step"], Tensor):
                    st["step"] = _scalar(float(st["step"]), _get_scalar_dtype(is_fused=group["fused"]))

    def share_memory(self) -> None:
        """Moves the accumulated squared gradients to shared memory (processes training one model share them)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def step(self, closure: Callable | None = None):
        """One Adagrad step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd, lr_decay, eps = _to_scalar(group["lr"]), group["weight_decay"], group["lr_decay"], group["eps"]
            for p in self._params_with_grad(group):
                if group["fused"]:
                    _fused_check(p)
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(p, group)
                a = p._data
                state["step"]._data += 1
                if group["fused"]:
                    _fused_state_check(p, state["sum"])
                step = float(state["step"]._data)
                g = _grad(p, group["maximize"], wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                s = state["sum"]._data
                _addcmul_(s, g, g, 1)
                std = NAMESPACES[type(s)].sqrt(s) + eps
                a += -clr * g / std
                _bump(p)
        return loss
