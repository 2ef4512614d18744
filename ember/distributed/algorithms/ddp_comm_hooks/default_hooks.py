"""PyTorch's default communication hooks for ``DistributedDataParallel.register_comm_hook``.

``ddp.register_comm_hook(process_group_or_None, allreduce_hook)`` reduces as DDP does without a hook (the bucket
divided by the group's size, then all-reduced); ``fp16_compress_hook``/``bf16_compress_hook`` send the bucket as
float16/bfloat16 (half the bytes) and write the sum back in the gradients' dtype; ``fp16_compress_wrapper(hook)``
runs another hook on the bucket cast to float16. bfloat16 runs on MPI here (PyTorch's refuses it without NCCL).
The annotations are evaluated (no ``from __future__ import annotations``): ``register_comm_hook`` checks them.
"""
from typing import Any, Callable

from ... import distributed_c10d as dist
from ...._dtype import bfloat16, float16
from ...._tensor import Tensor
from ....futures import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group(process_group: Any) -> Any:
    return process_group if process_group is not None else dist._default_pg()


def _mean_of(process_group: Any, tensor: Tensor) -> Future[Tensor]:
    """All-reduce ``tensor`` divided by the group's size first (so float16 does not overflow), in place: a future
    of it."""
    group = _group(process_group)
    tensor.div_(group.size())
    return dist.all_reduce(tensor, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group: Any, bucket: dist.GradBucket) -> Future[Tensor]:
    """The average over the group of the bucket's gradients (what DDP does without a hook)."""
    return _mean_of(process_group, bucket.buffer())


def _compressed(dtype: Any, process_group: Any, bucket: dist.GradBucket) -> Future[Tensor]:
    buffer = bucket.buffer()
    low = buffer.to(dtype)
    sent = _mean_of(process_group, low)

    def back(fut: Future) -> Tensor:   # the mean, in the buffer's own dtype, written over the buffer
        buffer.copy_(fut.value())
        return buffer
    return sent.then(back)


def fp16_compress_hook(process_group: Any, bucket: dist.GradBucket) -> Future[Tensor]:
    """The average all-reduced in float16, written back into the gradients' dtype."""
    return _compressed(float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: dist.GradBucket) -> Future[Tensor]:
    """The average all-reduced in bfloat16, written back into the gradients' dtype."""
    return _compressed(bfloat16, process_group, bucket)


def _wrapper(dtype: Any, hook: Callable) -> Callable:
    def wrapped(hook_state: Any, bucket: dist.GradBucket) -> Future[Tensor]:
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))

        def back(fut: Future) -> Tensor:
            original.copy_(fut.value())
            return original
        return hook(hook_state, bucket).then(back)
    return wrapped


def fp16_compress_wrapper(hook: Callable) -> Callable:
    """``hook`` run on the bucket cast to float16; its result cast back to the gradients' dtype."""
    out = _wrapper(float16, hook)
    out.__name__ = out.__qualname__ = "fp16_compress_wrapper_hook"
    return out


def bf16_compress_wrapper(hook: Callable) -> Callable:
    """``hook`` run on the bucket cast to bfloat16; its result cast back to the gradients' dtype."""
    out = _wrapper(bfloat16, hook)
    out.__name__ = out.__qualname__ = "bf16_compress_wrapper_hook"
    return out
