"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (PyTorch's update rule)."""
from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor, make
from ..devices import backend_of
from .optimizer import (Optimizer, _add_scaled, _add_scaled_, _bump, _check_fused_flags, _Flat, _flat_split,
                        _fused_check, _fused_state_check, _grad, _to_scalar)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent: ``p -= lr * (momentum buffer or gradient)``."""

    _setstate_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

    def __init__(self, params, lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float | Tensor = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)

    def step(self, closure: Callable | None = None):
        """One SGD step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            wd = _to_scalar(group["weight_decay"])
            params = self._params_with_grad(group)
            momentum = group["momentum"]
            if not group["fused"] and (momentum == 0 or all(self.state[p].get("momentum_buffer") is not None
                                                            for p in params)):
                split = _flat_split(self, params, ("momentum_buffer",) if momentum != 0 else ())
                if split is not None:
                    flat, params = split
                    self._flat_step(group, flat, lr, wd)
            for p in params:
                self._single_step(group, p, lr, wd)
        return loss

    def _single_step(self, group: dict, p: Tensor, lr, wd) -> None:
        """PyTorch's single-tensor SGD update of one parameter."""
        momentum, dampening = group["momentum"], group["dampening"]
        if group["fused"]:
            _fused_check(p)
        a = p._data
        g = _grad(p, group["maximize"], wd)
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = make(backend_of(g).copy(g, dtype=a.dtype))
            else:
                if group["fused"]:
                    _fused_state_check(p, buf)
                b = buf._data
                b *= momentum
                _add_scaled_(b, 1 - dampening, g)
                _bump(buf, 2)
            state["momentum_buffer"] = buf
            g = _add_scaled(g, momentum, buf._data) if group["nesterov"] else buf._data
        _add_scaled_(a, -lr, g)
        _bump(p)

    def _flat_step(self, group: dict, flat: _Flat, lr, wd) -> None:
        """The same update of several small parameters at once, on their gathered arrays (momentum buffers made)."""
        momentum = group["momentum"]
        g = flat.gather(flat.grads)
        if group["maximize"]:
            g = -g
        a = flat.gather(flat.arrays)
        if wd != 0:
            g = _add_scaled(g, wd, a)
        if momentum != 0:
            bufs = [self.state[p]["momentum_buffer"] for p in flat.params]
            raw = [b._data for b in bufs]
            b = flat.gather(raw)
            b *= momentum
            _add_scaled_(b, 1 - group["dampening"], g)
            flat.scatter(b, raw)
            for t in bufs:
                _bump(t, 2)
            g = _add_scaled(g, momentum, b) if group["nesterov"] else b
        _add_scaled_(a, -lr, g)
        flat.scatter(a, flat.arrays)
        for p in flat.params:
            _bump(p)
