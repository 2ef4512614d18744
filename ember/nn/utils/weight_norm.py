"""The deprecated hook-based ``nn.utils.weight_norm``: ``<name>_g`` and ``<name>_v`` parameters and a forward
pre-hook recomputing ``<name>``. Prefer ``nn.utils.parametrizations.weight_norm``."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, TypeVar

from ..parameter import Parameter

if TYPE_CHECKING:   # nn.utils imports this file eagerly: keep it light
    from ..modules.module import Module

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook: sets ``module.<name> = g * v / ||v||`` before each forward."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Any:
        from .parametrizations import _weight_norm
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        from .parametrizations import _norm_except_dim
        weight = getattr(module, name)
        # the weight leaves _parameters; g and v replace it, and the weight becomes a plain attribute
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


T_module = TypeVar("T_module", bound="Module")


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Deprecated (FutureWarning): split ``module.<name>`` into a magnitude ``<name>_g`` and a direction
    ``<name>_v``, recombined by a forward pre-hook. ``dim=None`` takes the norm of the whole tensor."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold ``<name>_g`` and ``<name>_v`` back into one parameter ``<name>`` and drop the hook."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
