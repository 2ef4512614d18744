"""Adafactor (Shazeer & Stern) as PyTorch 2.13 builds it: factored second moments for matrices, a relative
step size, update clipping by ``d``: PyTorch's single-tensor rule."""
from __future__ import annotations

from collections.abc import Callable

from .. import _dtype as D
from .._tensor import Tensor, make
from ..devices import NAMESPACES
from ..ops.shape import broadcast_shapes
from .optimizer import Optimizer, _add_scaled_, _bump, _inplace_error, _lerp_, _scalar, _to_scalar

__all__ = ["Adafactor"]


def _norm(xp, x, dim=None, keepdim: bool = False):
    """The 2-norm of raw ``x`` (over ``dim``) with the kernels of its device ``xp``."""
    return xp.sqrt(xp.sum(x * x, dim, keepdim))


class Adafactor(Optimizer):
    """Memory-light Adam-like optimizer: a matrix keeps only row and column second-moment statistics."""

    _setstate_defaults = dict(foreach=None)

    def __init__(self, params, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _upgrade_state(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0 and not isinstance(st["step"], Tensor):
                    st["step"] = _scalar(float(st["step"]))

    def _expected_state_shape(self, p: Tensor, key, value: Tensor) -> tuple | None:
        """Factored second moments: a row and a column of the last two dimensions for matrices."""
        shape = tuple(p.shape)
        if key == "row_var" and len(shape) > 1:
            return shape[:-1] + (1,)
        if key == "col_var" and len(shape) > 1:
            return shape[:-2] + (1, shape[-1])
        return super()._expected_state_shape(p, key, value)

    def _state_shape_error(self) -> Exception | None:
        """PyTorch's error in its order of updates: row_var and col_var in place, then their product times
        the gradient, then the parameter."""
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state.get(p, {})
                if p.grad is None or len(p.shape) < 2 or not {"row_var", "col_var"} <= state.keys():
                    continue
                shape, row, col = tuple(p.shape), tuple(state["row_var"].shape), tuple(state["col_var"].shape)
                err = _inplace_error(row, shape[:-1] + (1,)) or _inplace_error(col, shape[:-2] + (1, shape[-1]))
                if err is None and len(row) >= 2 and len(col) >= 2:
                    est = tuple(broadcast_shapes(row[:-2], col[:-2])) + (row[-2], col[-1])   # row_var @ col_var
                    err = _inplace_error(est, shape) or _inplace_error(shape, est)
                if err is not None:
                    return err
        return super()._state_shape_error()

    def step(self, closure: Callable | None = None):
        """One Adafactor step over every parameter that has a gradient."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd, d = _to_scalar(group["lr"]), group["weight_decay"], group["d"]
            beta2_decay = group["beta2_decay"]
            eps1, eps2 = group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                g = p.grad._data
                xp = NAMESPACES[type(g)]
                if len(state) == 0:
                    state["step"] = _scalar(0.0)
                    if g.ndim > 1:
                        state["row_var"] = make(xp.backend.zeros(g.shape[:-1] + (1,), dtype=g.dtype))
                        state["col_var"] = make(xp.backend.zeros(g.shape[:-2] + (1, g.shape[-1]), dtype=g.dtype))
                    else:
                        state["variance"] = make(xp.zeros_like(g))
                a = p._data
                g = -g if group["maximize"] else g
                e1 = D.finfo(p.dtype).eps if eps1 is None else eps1
                state["step"]._data += 1
                step = float(state["step"]._data)
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, float(_norm(xp, a)) / a.size ** 0.5) * rho_t
                if wd != 0:
                    a *= 1 - lr * wd
                    _bump(p)
                if g.ndim > 1:
                    if "row_var" not in state or "col_var" not in state:   # a state loaded for a vector
                        raise AssertionError("row_var and col_var should be defined when grad is multidimensional")
                    row_var, col_var = state["row_var"]._data, state["col_var"]._data
                    _lerp_(row_var, _norm(xp, g, -1, True) ** 2 / g.shape[-1], one_minus_beta2_t)
                    _lerp_(col_var, _norm(xp, g, -2, True) ** 2 / g.shape[-2], one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate /= xp.maximum(xp.mean(row_var, -2, True), e1)
                else:
                    if "variance" not in state:
                        raise AssertionError("variance should be defined when grad is a vector")
                    variance = state["variance"]._data
                    _lerp_(variance, g * g, one_minus_beta2_t)
                    var_estimate = xp.clone(variance)
                update = 1 / xp.sqrt(xp.maximum(var_estimate, e1 * e1))
                update *= g
                denom = max(1.0, float(_norm(xp, update)) / (update.size ** 0.5 * d))
                _add_scaled_(a, -alpha / denom, update)
                _bump(p)
        return loss
