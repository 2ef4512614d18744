"""Adam (Kingma & Ba) with amsgrad, maximize, L2 or decoupled weight decay: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .. import _dtype as D
from .._tensor import Tensor
from ..devices import NAMESPACES
from .optimizer import (Optimizer, _add_scaled, _addcmul_, _adam_weight_decay, _bump, _check_capturable,
                        _check_fused_flags, _check_lr_betas_eps_wd, _Flat, _flat_split, _fused_check,
                        _fused_state_check, _grad, _lerp_, _scalar, _to_scalar, _upgrade_steps, _zeros_like)

__all__ = ["Adam"]


def _step_tensor(group: dict) -> Tensor:
    """A fresh ``step`` counter: float32 for fused/capturable kernels, else the scalar dtype."""
    if group.get("capturable") or group.get("fused"):
        return _scalar(0.0, D.float32)
    return _scalar(0.0)


def _step_scalars(step: float, beta1, beta2, lr) -> tuple:
    """``(step_size, bias_correction2_sqrt)`` of PyTorch's single-tensor Adam at ``step``."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    return lr / bias_correction1, bias_correction2 ** 0.5


class Adam(Optimizer):
    """Adam: bias-corrected first and second moment estimates of the gradient."""

    _setstate_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False, fused=None)

    def __init__(self, params, lr: float | Tensor = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
        _check_lr_betas_eps_wd(lr, betas, eps, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor):
                if not capturable and foreach:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if betas[i].numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() != 0 else b for b in betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused_flags(self, fused, foreach, differentiable)

    _upgrade_state = _upgrade_steps

    def step(self, closure: Callable | None = None):
        """One Adam step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = (_to_scalar(b) for b in group["betas"])
            lr, wd, eps = _to_scalar(group["lr"]), _to_scalar(group["weight_decay"]), group["eps"]
            params = self._params_with_grad(group)
            if not (group["fused"] or group["capturable"]):
                # (those two check each parameter as its state is made: the per-parameter path only)
                keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
                for p in params:
                    self._init_state(group, p)
                split = _flat_split(self, params, keys, step=True)
                if split is not None:
                    flat, params = split
                    self._flat_step(group, flat, keys, beta1, beta2, lr, wd, eps)
            for p in params:
                self._single_step(group, p, beta1, beta2, lr, wd, eps)
        return loss

    def _init_state(self, group: dict, p: Tensor) -> dict:
        state = self.state[p]
        if len(state) == 0:
            if group["fused"]:
                _fused_check(p)
            state["step"] = _step_tensor(group)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    def _single_step(self, group: dict, p: Tensor, beta1, beta2, lr, wd, eps) -> None:
        """PyTorch's single-tensor Adam update of one parameter."""
        state = self._init_state(group, p)
        _check_capturable(group["capturable"])
        a = p._data
        g = _grad(p, group["maximize"])
        m, v = state["exp_avg"]._data, state["exp_avg_sq"]._data
        state["step"]._data += 1
        if group["fused"]:
            _fused_state_check(p, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"))
        g = _adam_weight_decay(p, g, lr, wd, group["decoupled_weight_decay"])
        vmax = state["max_exp_avg_sq"]._data if group["amsgrad"] else None
        step = float(state["step"]._data)
        if self._kernel_update(a, g, m, v, vmax, step, beta1, beta2, lr, eps) is None:
            a += self._update(g, m, v, vmax, step, beta1, beta2, lr, eps)
        _bump(p)

    def _flat_step(self, group: dict, flat: _Flat, keys, beta1, beta2, lr, wd, eps) -> None:
        """The same update of several small parameters at once, on their gathered arrays."""
        states = [self.state[p] for p in flat.params]
        for st in states:
            st["step"]._data += 1
        g = flat.gather(flat.grads)
        if group["maximize"]:
            g = -g
        if wd != 0:
            if group["decoupled_weight_decay"]:
                for p, a in zip(flat.params, flat.arrays):
                    a *= 1 - lr * wd
                    _bump(p)
            else:
                g = _add_scaled(g, wd, flat.gather(flat.arrays))
        bufs = [[st[k]._data for st in states] for k in keys]
        m, v, *vmax = (flat.gather(b) for b in bufs)
        step, vm = float(states[0]["step"]._data), vmax[0] if vmax else None
        upd = self._kernel_update(None, g, m, v, vm, step, beta1, beta2, lr, eps)
        if upd is None:
            upd = self._update(g, m, v, vm, step, beta1, beta2, lr, eps)
        for b, f in zip(bufs, (m, v, *vmax)):
            flat.scatter(f, b)
        flat.add_into_params(upd)
        for p in flat.params:
            _bump(p)

    @staticmethod
    def _kernel_update(a, g, m, v, vmax, step: float, beta1, beta2, lr, eps):
        """``_update`` by the device's fused Adam kernel where it has one (the cpu device: block by block, the
        same operations on each element), added into ``a`` (returned), or where a is None returned as a new array;
        None where the kernel does not apply. The hyperparameters must be Python numbers: NumPy scalars would
        change the arithmetic's dtype."""
        xp = NAMESPACES[type(m)]
        kernel = getattr(xp, "adam_step_", None)   # (the array-API namespaces' declines: None)
        if kernel is None or g.dtype != m.dtype or not all(type(h) in (float, int) for h in (beta1, beta2, lr, eps)):
            return None
        step_size, bias_correction2_sqrt = _step_scalars(step, beta1, beta2, lr)
        return kernel(a, g, m, v, vmax, 1 - beta1, beta2, 1 - beta2, bias_correction2_sqrt, eps, -step_size, xp.sqrt)

    @staticmethod
    def _update(g, m, v, vmax, step: float, beta1, beta2, lr, eps):
        """Update the moments ``m``, ``v`` (and ``vmax``) in place; return what is added to the parameter."""
        xp = NAMESPACES[type(m)]
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        _addcmul_(v, g, g, 1 - beta2)
        step_size, bias_correction2_sqrt = _step_scalars(step, beta1, beta2, lr)
        if vmax is not None:
            vmax[...] = xp.maximum(vmax, v)
            denom = xp.sqrt(vmax) / bias_correction2_sqrt + eps
        else:
            denom = xp.sqrt(v) / bias_correction2_sqrt + eps
        return -step_size * m / denom
