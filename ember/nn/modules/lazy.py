"""LazyModuleMixin: parameters whose shapes come from the first input (or from a loaded state dict), as PyTorch's.
The Lazy* modules live beside their ordinary classes, as in PyTorch (LazyLinear in linear.py, LazyConv* in conv.py,
LazyBatchNorm* in batchnorm.py, LazyInstanceNorm* in instancenorm.py).

PyTorch marks such tensors with UninitializedParameter/UninitializedBuffer; ember keeps ordinary empty tensors and
remembers their names in ``_lazy_pending``. Shapes are filled in ("materialised") by ``load_state_dict`` (from the
checkpoint's shapes) or by the first forward, which then initialises them exactly as PyTorch does (same order of
random draws), and the module becomes its ordinary class (``cls_to_become``).
"""
from __future__ import annotations

from typing import Any

from ...ops import creation as _creation
from ..._tensor import Tensor
from ...autograd import grad_mode as _gm
from ..parameter import Parameter

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Hooks in a load_state_dict pre-hook (materialise from the checkpoint's shapes) and a forward pre-hook
    (``initialize_parameters(*args)``, then become ``cls_to_become``)."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy_pending = {}
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _make_lazy(self, name: str, buffer: bool = False, dtype=None, device=None) -> None:
        """Sets ``name`` to an empty parameter (or buffer) awaiting its shape."""
        t = _creation.empty(0, dtype=dtype, device=device)
        if buffer:
            self.register_buffer(name, t)
        else:
            setattr(self, name, Parameter(t))
        self._lazy_pending[name] = buffer

    def _materialize(self, name: str, shape: tuple) -> None:
        """Gives a pending tensor its shape (uninitialised values, as PyTorch's ``materialize``)."""
        old = getattr(self, name)
        new = _creation.empty(tuple(shape), dtype=old.dtype, device=old.device)
        if self._lazy_pending.pop(name):
            self._buffers[name] = new
        else:
            with _gm.no_grad():
                old.data = new

    def has_uninitialized_params(self) -> bool:
        """Whether some parameter or buffer still awaits its shape."""
        return bool(getattr(self, "_lazy_pending", None))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs) -> None:
        for name in list(self._lazy_pending):
            key = prefix + name
            if key in state_dict:
                value = state_dict[key]
                # an uninitialised tensor in the checkpoint leaves this one uninitialised, as PyTorch's
                if isinstance(value, Tensor) and value.numel() > 0:
                    self._materialize(name, tuple(value.shape))

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        for name in ("_initialize_hook", "_load_hook", "_lazy_pending"):
            delattr(module, name)
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def __deepcopy__(self, memo: dict):
        # PyTorch's uninitialized buffers refuse deepcopy (its uninitialized parameters copy; pickling works)
        if any(getattr(self, "_lazy_pending", {}).values()):
            raise ValueError("Attempted to use an uninitialized parameter in <function Tensor.__deepcopy__>. This "
                             "error happens when you are using a `LazyModule` or explicitly manipulating "
                             "`torch.nn.parameter.UninitializedBuffer` objects. When using LazyModules Call "
                             "`forward` with a dummy batch to initialize the parameters before calling torch "
                             "functions")
        import copy
        return copy._reconstruct(self, memo, *self.__reduce_ex__(4))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # materialise first (the pre-hook may run only inside the base method); what stays uninitialised loads
        # nothing (PyTorch skips the shape check for lazy tensors)
        if getattr(self, "_lazy_pending", None):
            self._lazy_load_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs)
        pending = [n for n in getattr(self, "_lazy_pending", {}) if prefix + n in state_dict]
        if pending:
            state_dict = {k: v for k, v in state_dict.items() if k[len(prefix):] not in pending}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        for n in pending:  # present in the checkpoint, so not missing
            if prefix + n in missing_keys:
                missing_keys.remove(prefix + n)
