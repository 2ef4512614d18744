"""Averaged SGD (Polyak & Juditsky): PyTorch's single-tensor rule, ``eta`` and ``mu`` kept as scalar tensors."""
from __future__ import annotations

from collections.abc import Callable

from .. import _dtype as D
from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _add_scaled_, _bump, _check_capturable, _check_lr, _grad, _scalar, _to_scalar,
                        _zeros_like)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """SGD with a decaying step ``eta`` and a running average ``ax`` of the iterates."""

    _setstate_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr: float | Tensor = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _upgrade_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0:
                    for key in ("step", "eta", "mu"):
                        if not isinstance(st[key], Tensor):
                            st[key] = _scalar(float(st[key]))

    def step(self, closure: Callable | None = None):
        """One ASGD step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd = _to_scalar(group["lr"]), group["weight_decay"]
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    state["eta"] = _scalar(lr)
                    state["mu"] = _scalar(1.0)
                    state["ax"] = _zeros_like(p)
                _check_capturable(group["capturable"])
                a = p._data
                g = _grad(p, group["maximize"], wd)
                state["step"]._data += 1
                eta_value = float(state["eta"]._data)
                a *= 1 - lambd * eta_value
                _add_scaled_(a, -eta_value, g)
                _bump(p, 2)
                ax, mu = state["ax"]._data, state["mu"]._data
                if float(mu) != 1:
                    ax += (a - ax) * mu
                else:
                    ax[...] = a
                step = float(state["step"]._data)
                # PyTorch makes each new value a tensor of the default dtype (torch.as_tensor) before copying it
                # into the state, so it is rounded to float32 even when a loaded state holds float64.
                dflt = D.get_default_dtype().np
                for key, value in (("eta", lr / (1 + lambd * lr * step) ** alpha), ("mu", 1 / max(1, step - t0))):
                    st = state[key]._data
                    be = NAMESPACES[type(st)].backend
                    be.copyto(st, be.asarray(value, dtype=dflt))
        return loss
