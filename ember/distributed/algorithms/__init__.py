"""torch.distributed.algorithms: ``Join`` for uneven inputs (``join``), DistributedDataParallel's communication
hooks (``ddp_comm_hooks``)."""
from .join import Join, JoinHook, Joinable

__all__ = ["Join", "JoinHook", "Joinable"]
