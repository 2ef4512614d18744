"""torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks: ``noop_hook`` (no communication: each rank keeps
its own gradients; to measure what the reduction costs)."""
from typing import Any

from ... import distributed_c10d as dist
from ...._tensor import Tensor
from ....futures import Future

__all__ = ["noop_hook"]


def noop_hook(_: Any, bucket: dist.GradBucket) -> Future[Tensor]:
    """The bucket's own gradients, unreduced."""
    fut = Future()
    fut.set_result(bucket.buffer())
    return fut
