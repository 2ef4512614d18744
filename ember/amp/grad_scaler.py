"""torch.amp.grad_scaler: GradScaler (dynamic loss scaling), as PyTorch 2.13's, with the two ATen ops it runs on
(``torch._amp_foreach_non_finite_check_and_unscale_`` and ``torch._amp_update_scale_``) written on ember's ops,
so that they run on any device."""
from __future__ import annotations

import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum
from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import creation
from ..ops.elementwise import isfinite

__all__ = ["OptState", "GradScaler"]


# ----- the two ATen ops --------------------------------------------------------------------------------------

def _amp_foreach_non_finite_check_and_unscale_(scaled_grads: list, found_inf: Tensor, inv_scale: Tensor) -> None:
    """Multiply each gradient by ``inv_scale`` in place (not when it is 1) and set ``found_inf`` to 1.0 if any
    holds an inf or NaN. As PyTorch's CPU kernel: the product is taken in the gradient's op-math dtype (float32
    for float16/bfloat16) and rounded once."""
    with no_grad():
        for g in scaled_grads:
            if not bool(isfinite(g).all()):
                found_inf.fill_(1.0)
            if float(inv_scale) != 1.0:
                low = g.dtype not in (_dtype.float32, _dtype.float64)
                opmath = _dtype.float32 if low else g.dtype
                g.copy_(g.to(opmath) * inv_scale.to(opmath))


def _amp_update_scale_(current_scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                       backoff_factor: float, growth_interval: int) -> Tensor:
    """PyTorch's _amp_update_scale_ (CPU kernel): back off on inf/NaN, else count the step and grow the scale every
    ``growth_interval`` successful steps, unless growing would overflow float32."""
    with no_grad():
        scale = float(current_scale)
        if float(found_inf):
            current_scale.fill_(scale * backoff_factor)   # float * double, rounded to float32
            growth_tracker.fill_(0)
        else:
            successful = int(growth_tracker) + 1
            if successful == growth_interval:
                # float * double, rounded to float32 (inf past its range: then the scale stays)
                new_scale = creation.full((), scale * growth_factor, dtype=_dtype.float64).to(_dtype.float32)
                if bool(isfinite(new_scale)):
                    current_scale.copy_(new_scale)
                growth_tracker.fill_(0)
            else:
                growth_tracker.fill_(successful)
    return current_scale


# ----- GradScaler ----------------------------------------------------------------------------------------------

class _MultiDeviceReplicator:
    """Lazily serves copies of a tensor to requested devices (copies are cached per device)."""

    def __init__(self, master_tensor: Tensor) -> None:
        self.master = master_tensor
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        retval = self._per_device_tensors.get(device, None)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Dynamic loss scaling: ``scale(loss)`` multiplies the loss by the scale factor, ``step(optimizer)`` unscales
    the gradients and skips ``optimizer.step()`` if any is inf/NaN, ``update()`` backs the scale off after a skipped
    step or grows it after ``growth_interval`` good ones. ``enabled=False``: a pass-through. ``device='cuda'`` (the
    default) warns and disables itself, as PyTorch does without CUDA."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            if enabled:   # as amp_definitely_not_available(): ember's CUDA amp is not built (issue 21)
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False

        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")

            self._init_scale = init_scale
            self._scale: Tensor | None = None   # made lazily by the first scale()
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return (self._scale, self._growth_tracker)

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = creation.full((), self._init_scale, dtype=_dtype.float32, device=dev)
        self._growth_tracker = creation.full((), self._init_growth_tracker, dtype=_dtype.int32, device=dev)

    def scale(self, outputs):
        """Multiplies ('scales') a tensor or (nested) iterable of tensors by the scale factor; unchanged if
        disabled."""
        if not self._enabled:
            return outputs

        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash: list = []   # holds a reference that can be overwritten by apply_scale

        def apply_scale(val):
            if isinstance(val, Tensor):
                if len(stash) == 0:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> dict:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        # gradients by device and dtype, gathered in one pass
        per_device_and_dtype_grads: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if (not allow_fp16) and param.grad.dtype == _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    to_unscale = param.grad
                    per_device_and_dtype_grads[to_unscale.device][to_unscale.dtype].append(to_unscale)

            for device, per_dtype_grads in per_device_and_dtype_grads.items():
                for grads in per_dtype_grads.values():
                    _amp_foreach_non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                               per_device_inv_scale.get(device))

        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divides ("unscales") the optimizer's gradients by the scale factor (at most once per step)."""
        if not self._enabled:
            return

        self._check_scale_growth_tracker("unscale_")

        optimizer_state = self._per_optimizer_states[id(optimizer)]

        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")

        # FP32 division can be imprecise for certain compile options, so the reciprocal is taken in FP64.
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = creation.full((), 0.0, dtype=_dtype.float32, device=self._scale.device)

        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state: dict, *args: Any, **kwargs: Any):
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args: Any, **kwargs: Any):
        """``unscale_(optimizer)`` (unless already called), then ``optimizer.step(*args, **kwargs)`` if no gradient
        is inf/NaN; returns what ``optimizer.step`` returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)

        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")

        self._check_scale_growth_tracker("step")

        optimizer_state = self._per_optimizer_states[id(optimizer)]

        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")

        retval = None

        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # An optimizer with its own scale handling: it reads grad_scale and found_inf (or, in the older
            # contract, takes a grad_scaler keyword argument).
            kwargs_ = kwargs
            has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
            if has_grad_scaler_kwarg:
                warnings.warn(
                    "GradScaler is going to stop passing itself as a keyword argument to the passed "
                    "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                    "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                    FutureWarning, stacklevel=2)
                kwargs_.update({"grad_scaler": self})
            else:
                if optimizer_state["stage"] is OptState.READY:
                    self._check_inf_per_device(optimizer)
                scaler = self._get_scale_async()
                found_inf = sum([t.to(scaler.device, non_blocking=True)
                                 for t in optimizer_state["found_inf_per_device"].values()])
                optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                        if optimizer_state["stage"] == OptState.UNSCALED
                                        else scaler * getattr(optimizer, "grad_scale", 1))
                optimizer.found_inf = found_inf
            retval = optimizer.step(*args, **kwargs_)
            optimizer_state["stage"] = OptState.STEPPED
            if not has_grad_scaler_kwarg:
                del optimizer.grad_scale
                del optimizer.found_inf
            return retval

        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)

        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")

        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)

        optimizer_state["stage"] = OptState.STEPPED

        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Update the scale factor: backed off if a step was skipped, grown after ``growth_interval`` good steps;
        or set to ``new_scale``."""
        if not self._enabled:
            return

        _scale, _growth_tracker = self._check_scale_growth_tracker("update")

        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]

            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")

            found_inf_combined = found_infs[0]
            if len(found_infs) > 1:
                for i in range(1, len(found_infs)):
                    found_inf_combined += found_infs[i]

            _amp_update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                               self._backoff_factor, self._growth_interval)

        # To prepare for next iteration, clear the data collected from optimizers this iteration.
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 if scaling is disabled)."""
        if self._enabled:
            scale = self._get_scale_async()
            return self._init_scale if scale is None else scale.item()
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and ``_growth_tracker`` (an empty
        dict if disabled)."""
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load the state saved by ``state_dict`` (a no-op if disabled)."""
        if not self._enabled:
            return

        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")

        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # the scale tensors are made again lazily after unpickling
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer) -> dict:
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")

        dummy_inv_scale = creation.full((), 1.0, dtype=_dtype.float32, device=_scale.device)
        found_inf = creation.full((), 0.0, dtype=_dtype.float32, device=_scale.device)

        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = \
            self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)

        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

