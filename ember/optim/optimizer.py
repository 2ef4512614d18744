"""The base ``Optimizer``: parameter groups, state, state dicts in PyTorch's layout, step hooks.

The optimizers update their parameters in place on the raw arrays (no graph is ever built), with the kernels of
the arrays' device (``NAMESPACES[type(array)]``: ``fma`` for PyTorch's fused multiply-adds, ``sqrt``, ...) and bump
each parameter's version counter once per in-place op PyTorch's single-tensor kernels run, so autograd's
"modified by an inplace operation" checks see an optimizer step exactly as they would in PyTorch.
"""
from __future__ import annotations

import functools
import threading
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .. import _dtype as D
from .._device import fp_quiet, fp_restore
from .._hooks import RemovableHandle
from .._tensor import Tensor, make
from ..autograd import _profiling
from ..autograd._primitive import broadcast_error
from ..devices import NAMESPACES, backend_of
from ..ops.creation import tensor
from ..ops.shape import broadcast_shapes

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]

_global_optimizer_pre_hooks: dict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: dict[int, Callable] = OrderedDict()


class _RequiredParameter:
    """Marks a hyperparameter without a default: every param group must give it."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj) -> str:
    """``torch.typename``: 'torch.FloatTensor' for tensors, 'module.Qualname' for other objects."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    if not hasattr(obj, "__qualname__"):
        module = type(obj).__module__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _get_scalar_dtype(is_fused: bool | None = None) -> D.dtype:
    """The dtype of scalar state (``step``, ``mu_product``, ...): float32 unless the default dtype is float64."""
    if is_fused:
        return D.float32
    return D.float64 if D.get_default_dtype() == D.float64 else D.float32


def _scalar(value: float, dtype: D.dtype | None = None) -> Tensor:
    """A 0-d state tensor on the CPU (PyTorch keeps ``step`` and friends as tensors, not Python numbers)."""
    return tensor(value, dtype=dtype if dtype is not None else _get_scalar_dtype())


def _zeros_like(p: Tensor) -> Tensor:
    """Zeros of p's shape and dtype on p's device (C-contiguous, whatever p's strides)."""
    a = p._data
    return make(backend_of(a).zeros(a.shape, dtype=a.dtype))


def _full_like(p: Tensor, value: float) -> Tensor:
    a = p._data
    return make(backend_of(a).full(a.shape, value, dtype=a.dtype))


def _to_scalar(x):
    """A hyperparameter as a Python number (a 1-element Tensor lr is read once per step)."""
    if isinstance(x, Tensor):
        return x.item()
    return x


def _bump(t: Tensor, n: int = 1) -> None:
    """Count ``n`` in-place changes of ``t`` (shared with its views), as PyTorch's in-place ops do."""
    t._vc[0] += n


# PyTorch's CPU kernels for add(alpha=), addcmul and lerp use a fused multiply-add (x*y + z rounded once); the
# device's ``fma`` kernel gives the same bits (see ember/devices/cpu/optim.py).
def _fma(x, y, z, out=None):
    """``x * y + z`` rounded once, by the kernel of ``z``'s device."""
    return NAMESPACES[type(z)].fma(x, y, z, out)


def _add_scaled(a, alpha: float, x):
    """``a.add(x, alpha=alpha)``: a new array."""
    return _fma(alpha, x, a)


def _add_scaled_(a, alpha: float, x) -> None:
    """``a.add_(x, alpha=alpha)`` in place."""
    _fma(alpha, x, a, out=a)


def _addcmul(a, t1, t2, value: float):
    """``a.addcmul(t1, t2, value=value)``: ``a + (value * t1) * t2``, a new array."""
    return _fma(value * t1, t2, a)


def _addcmul_(a, t1, t2, value: float) -> None:
    """``a.addcmul_(t1, t2, value=value)`` in place."""
    _fma(value * t1, t2, a, out=a)


# PyTorch's C++ names of the dtypes: what its kernels' dtype errors print (c10's toString and ScalarType names)
_CPP_NAMES = {"float32": ("float", "Float"), "float64": ("double", "Double"), "float16": ("c10::Half", "Half"),
              "bfloat16": ("c10::BFloat16", "BFloat16"), "complex64": ("c10::complex<float>", "ComplexFloat"),
              "complex128": ("c10::complex<double>", "ComplexDouble")}


def _cpp_name(dt, scalar_type: bool = False) -> str:
    """PyTorch's C++ name of a raw array's dtype (its ScalarType name if ``scalar_type``)."""
    names = _CPP_NAMES.get(dt.name)
    return names[scalar_type] if names else dt.name


def _fused_state_check(p: Tensor, *states: Tensor | None) -> None:
    """PyTorch's fused kernels need the state in the parameter's dtype (e.g. after ``model.double()``)."""
    for st in states:
        if st is not None and st._data.dtype != p._data.dtype:
            raise RuntimeError(f"expected scalar type {_cpp_name(p._data.dtype, True)} but found "
                               f"{_cpp_name(st._data.dtype, True)}")


def _lerp_(a, b, w: float) -> None:
    """``a.lerp_(b, w)`` with PyTorch's two-sided formula (exact at both ends). Like PyTorch's lerp, it needs
    ``b`` in ``a``'s dtype: state kept from before ``model.double()`` makes the next step raise."""
    if b.dtype != a.dtype:
        raise RuntimeError(f"expected dtype {_cpp_name(a.dtype)} for `end` but got dtype {_cpp_name(b.dtype)}")
    NAMESPACES[type(a)].fma_lerp_(a, b, w)


def _check_lr(lr: float | Tensor) -> None:
    """The learning-rate checks most optimizers start with, in PyTorch's words."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_lr_betas_eps_wd(lr, betas, eps, weight_decay) -> None:
    """The checks Adam, Adamax, NAdam and RAdam share, in PyTorch's order and words."""
    _check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_capturable(capturable: bool) -> None:
    # PyTorch's capturable kernels run only on accelerators; on the CPU its step raises this.
    if capturable:
        raise AssertionError("If capturable=True, params and state_steps must be on supported devices: "
                             "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla'].")


def _check_differentiable(group: dict) -> None:
    if group.get("differentiable", False):
        raise NotImplementedError("ember: optimizers with differentiable=True (autograd through the step) are "
                                  "not built; ember's optimizers update the parameters' arrays in place")


def _fused_check(p: Tensor) -> None:
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                           f"devices: ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] but "
                           f"{p.dtype} and {p.device.type}")


def _check_fused_flags(self: Optimizer, fused, foreach, differentiable) -> None:
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        self._step_supports_amp_scaling = True
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


_in_step = threading.local()


def _inplace_error(out: tuple, other: tuple) -> Exception | None:
    """PyTorch's error for ``out op= other`` (an in-place update), or None where it works."""
    err = broadcast_error((out, other))
    if err is not None:
        return err
    shape = tuple(broadcast_shapes(out, other))
    if shape != out:
        return RuntimeError(f"output with shape {list(out)} doesn't match the broadcast shape {list(shape)}")
    return None


def _hooked_step(func: Callable) -> Callable:
    """Wrap a ``step`` so the step pre- and post-hooks run around it (once, also when a subclass's step
    calls its parent's)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        active = getattr(_in_step, "ids", None)
        if active is None:
            active = _in_step.ids = set()
        if id(self) in active:
            return func(*args, **kwargs)
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        active.add(id(self))
        # a recording profiler shows the step as PyTorch's region "Optimizer.step#SGD.step"
        rec = _profiling.begin(f"Optimizer.step#{type(self).__name__}.step", _profiling.USER) \
            if _profiling.is_recording() else None
        fp = fp_quiet()   # inf/nan gradients make inf - inf or 0/0: silently, as in PyTorch
        try:
            out = func(*args, **kwargs)
        except (ValueError, IndexError) as e:
            # NumPy's broadcast errors from a state loaded for parameters of other shapes: PyTorch's error
            # instead (diagnosed only on failure: nothing is checked on a normal step)
            err = self._state_shape_error()
            if err is None:
                raise
            raise err from None
        finally:
            fp_restore(fp)
            active.discard(id(self))
            if rec is not None:
                _profiling.end(rec)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class Optimizer:
    """Base class of all optimizers: ``params`` (tensors, ``(name, tensor)`` pairs or dicts of param groups)
    and ``defaults`` (the hyperparameters a group gets when it does not name them)."""

    # Hyperparameters later PyTorch versions added: __setstate__ fills them in on groups loaded without them.
    _setstate_defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: dict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state: defaultdict[Tensor, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        # Groups saved before a hyperparameter existed get PyTorch's default for it, in PyTorch's key order.
        if self._setstate_defaults:
            for group in self.param_groups:
                for key, value in self._setstate_defaults.items():
                    group.setdefault(key, value)
        self._upgrade_state()

    def _upgrade_state(self) -> None:
        """Convert per-parameter state that older versions saved as numbers (overridden where any was)."""

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ----- hooks ---------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``, run before ``step``."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None``, run after ``step``."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    @staticmethod
    def _register(store: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(store)
        store[handle.id] = hook
        if prepend:
            store.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None``, run before ``state_dict``."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict or None``, run after ``state_dict``."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> state_dict or None``, run before ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None``, run after ``load_state_dict``."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ----- state dicts ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``, PyTorch's layout.

        The state tensors are shared with the optimizer, not copied (as in PyTorch)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Tensor, param_id, param_groups,
                                                  key=None) -> Tensor:
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            # A step stays in its saved dtype, except for fused/capturable kernels that need float32.
            return value.to(dtype=D.float32) if (capturable or fused) else value
        if param.is_floating_point():
            return value.to(dtype=param.dtype)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()`` (of this optimizer or PyTorch's, same layout)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups,
                                                                          key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state: defaultdict[Tensor, dict] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ----- gradients and groups ------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros in place."""
        if _profiling.is_recording():   # PyTorch's region "Optimizer.zero_grad#SGD.zero_grad"
            rec = _profiling.begin(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad", _profiling.USER)
            try:
                self._zero_grad(set_to_none)
            finally:
                _profiling.end(rec)
        else:
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        g.zero_()

    def step(self, closure: Callable[[], float] | None = None):
        """Perform one optimisation step (and return ``closure()``'s loss when given)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own hyperparameters) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter "
                                 f"{name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set: set[Tensor] = set()
        for group in self.param_groups:
            param_set.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ----- shared by the subclasses --------------------------------------------------------------
    # The state's per-element tensors meet the gradient before the parameter is updated: PyTorch names the
    # state as tensor a and the gradient as b (Rprop reads the gradient first and sets this False).
    _state_first = True

    def _expected_state_shape(self, p: Tensor, key, value: Tensor) -> tuple | None:
        """The shape ``state[p][key]`` must have for ``p``; None where it need not match (0-d counters)."""
        return None if value._data.ndim == 0 else tuple(p.shape)

    def _state_shape_error(self) -> Exception | None:
        """PyTorch's error for the first parameter whose loaded state does not fit its shape, or None."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                for key, value in self.state.get(p, {}).items():
                    if not isinstance(value, Tensor):
                        continue
                    want = self._expected_state_shape(p, key, value)
                    have = tuple(value.shape)
                    if want is not None and have != want:
                        return self._shape_error(have, want)
        return None

    def _shape_error(self, state: tuple, param: tuple) -> Exception:
        """PyTorch's error for a ``state`` tensor updated in place with ``param``-shaped operands, then the
        parameter updated with ``state``-shaped ones."""
        if self._state_first:
            return _inplace_error(state, param) or _inplace_error(param, state)
        return broadcast_error((param, state)) or _inplace_error(state, param) or _inplace_error(param, state)

    def _closure_loss(self, closure):
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad
        with enable_grad():
            return closure()

    @staticmethod
    def _params_with_grad(group: dict) -> list[Tensor]:
        """The group's parameters that have a gradient (PyTorch skips the others)."""
        _check_differentiable(group)
        return [p for p in group["params"] if p.grad is not None]

    def _lazy_state(self, p: Tensor, *zero_keys: str) -> dict[str, Any]:
        """p's state; on its first step a zero ``step`` counter, then a zero tensor like p for each key."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar(0.0)
            for key in zero_keys:
                state[key] = _zeros_like(p)
        return state


def _upgrade_steps(opt: Optimizer) -> None:
    """State dicts from old PyTorch versions kept ``step`` as a number; make it a tensor (an optimizer's
    ``_upgrade_state`` where ``step`` is its only such entry)."""
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p, [])
            if len(st) != 0 and not isinstance(st["step"], Tensor):
                # Only optimizers with a ``fused`` option (Adam, AdamW) give fused groups the float32 step.
                fast = group.get("capturable") or ("fused" in opt.defaults and group.get("fused"))
                st["step"] = _scalar(float(st["step"]), _get_scalar_dtype(is_fused=group.get("fused")) if fast
                                     else None)


def _grad(p: Tensor, maximize: bool, weight_decay: float = 0):
    """p's gradient as the update uses it: negated under ``maximize``, then plus ``weight_decay * p`` (L2)."""
    g = p.grad._data
    g = -g if maximize else g
    if weight_decay != 0:
        g = _add_scaled(g, weight_decay, p._data)
    return g


# Multi-tensor steps (PyTorch's ``_foreach`` idea): a group's small float32 parameters, their gradients and their
# state are gathered into one flat array per quantity, updated there with the very operations of the
# per-parameter step (all elementwise, with the group's scalars: the same numbers), and scattered back. That
# replaces a dozen kernel calls per parameter by a dozen per group. Parameters above ``_FLAT_MAX`` elements keep
# the per-parameter path, where the copies would cost more than the calls they save (nanoGPT 4x128: AdamW
# step 6.9 ms per parameter, 6.2 flat up to 16384 elements, 7.5 up to 65536).
_FLAT_MAX = 1 << 14


class _Flat:
    """Small parameters of one group gathered for a multi-tensor step: ``params``, their raw arrays ``arrays``,
    gradients ``grads`` and ``slices`` (each parameter's span in the flat arrays)."""

    __slots__ = ("params", "arrays", "grads", "slices", "xp")

    def __init__(self, params: list[Tensor], xp) -> None:
        self.params, self.xp = params, xp
        self.arrays = [p._data for p in params]
        self.grads = [p.grad._data for p in params]
        self.slices, i = [], 0
        for a in self.arrays:
            self.slices.append(slice(i, i + a.size))
            i += a.size

    def gather(self, arrays: list):
        """One flat array of ``arrays`` (one per parameter, each of its parameter's shape), in order."""
        xp = self.xp
        return xp.cat([xp.reshape(a, (-1,)) for a in arrays], 0)

    def scatter(self, flat, arrays: list) -> None:
        """Write the parts of ``flat`` back into ``arrays``."""
        xp = self.xp
        for a, sl in zip(arrays, self.slices):
            a[...] = xp.reshape(flat[sl], a.shape)

    def add_into_params(self, flat) -> None:
        """``p += part`` for every parameter (no version bump)."""
        xp = self.xp
        for a, sl in zip(self.arrays, self.slices):
            a += xp.reshape(flat[sl], a.shape)


def _flat_split(self: Optimizer, params: list[Tensor], keys: tuple[str, ...] = (), step: bool = False):
    """``(_Flat of the small parameters, the other parameters)`` for a multi-tensor step of ``params`` (all with a
    gradient and, for ``keys``, initialised state), or None where every parameter takes the per-parameter path:
    fewer than two small ones, or anything but float32 arrays of one device with gradients and ``keys`` state of
    the parameter's shape and dtype, each in memory of its own, and (``step``) one step count."""
    if len(params) < 2:
        return None
    kind = type(params[0]._data)
    f32 = D.float32
    storage_root = backend_of(params[0]._data).storage_root
    roots, counts, small, large = set(), set(), [], []
    for p in params:
        a, gt = p._data, p.grad
        g = gt._data
        if (type(a) is not kind or type(g) is not kind or p.dtype is not f32 or gt.dtype is not f32
                or g.shape != a.shape):
            return None
        arrays = [a, g]
        if keys or step:
            st = self.state[p]
            for k in keys:
                t = st[k]
                v = t._data
                if type(v) is not kind or t.dtype is not f32 or v.shape != a.shape:
                    return None
                arrays.append(v)
            if step:
                counts.add(float(st["step"]._data))
        for v in arrays:
            r = id(storage_root(v))
            if r in roots:
                return None
            roots.add(r)
        (small if a.size <= _FLAT_MAX else large).append(p)
    if len(small) < 2 or len(counts) > 1:
        return None
    return _Flat(small, NAMESPACES[kind]), large


def _adam_weight_decay(p: Tensor, g, lr: float, weight_decay: float, decoupled: bool):
    """The Adam family's weight decay: decoupled (AdamW) shrinks p in place, else L2 adds ``weight_decay * p``
    to the gradient; returns the gradient the moments use."""
    if weight_decay != 0:
        if decoupled:
            a = p._data
            a *= 1 - lr * weight_decay
            _bump(p)
        else:
            g = _add_scaled(g, weight_decay, p._data)
    return g
