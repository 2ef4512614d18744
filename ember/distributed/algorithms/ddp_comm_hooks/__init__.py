"""torch.distributed.algorithms.ddp_comm_hooks: hooks for ``DistributedDataParallel.register_comm_hook``
(``default_hooks``: allreduce_hook, fp16_compress_hook, bf16_compress_hook and their wrappers;
``debugging_hooks.noop_hook``), and ``DDPCommHookType`` with ``register_ddp_comm_hook`` to register them by name.
PowerSGD and the quantization hooks are not built."""
from enum import Enum
from typing import Any, Callable

from . import debugging_hooks, default_hooks

__all__ = ["DDPCommHookType", "register_ddp_comm_hook"]


class _Registrar:
    """An enum value that registers ``hook`` on a model (``DDPCommHookType.X.value(model=..., state=...)``)."""

    def __init__(self, hook: Callable) -> None:
        self.hook = hook

    def __call__(self, model: Any, state: Any = None) -> None:
        model.register_comm_hook(state, self.hook)

    def __repr__(self) -> str:
        return f"<register {self.hook.__name__}>"


class DDPCommHookType(Enum):
    """The hooks by name: ``register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, model)``."""
    ALLREDUCE = _Registrar(default_hooks.allreduce_hook)
    FP16_COMPRESS = _Registrar(default_hooks.fp16_compress_hook)
    BF16_COMPRESS = _Registrar(default_hooks.bf16_compress_hook)
    NOOP = _Registrar(debugging_hooks.noop_hook)


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model: Any, state: Any = None) -> None:
    """Register the hook ``comm_hook_type`` names on the DistributedDataParallel ``model`` (``state``: its process
    group, None for the default)."""
    comm_hook_type.value(model=model, state=state)
