"""torch.distributed.nn.functional: collectives that return new tensors and carry gradients back across ranks.

* ``all_reduce(tensor, op=SUM)``: every rank's output is the reduction of every rank's input, so the gradient of
  one rank's input is the all-reduction (SUM) of the ranks' output gradients (AVG: their average). Other
  reductions have no gradient here (PyTorch gives them none either).
* ``all_gather(tensor)``: one output per rank; rank r's input feeds output r on every rank, so its gradient is the
  sum over ranks of their gradient of output r: a reduce-scatter of the output gradients.
* ``broadcast(tensor, src)``: the gradient of src's input is the sum of every rank's output gradient (a reduce to
  src); the other ranks' inputs get zeros.
"""
from __future__ import annotations

from typing import Any

from ...autograd.function import Function
from ...ops.shape import stack
from .. import distributed_c10d as c10d

__all__ = ["all_reduce", "all_gather", "broadcast"]


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone().contiguous()
        c10d.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        if ctx.op not in (c10d.ReduceOp.SUM, c10d.ReduceOp.AVG):
            raise RuntimeError(f"all_reduce: no gradient for {ctx.op} (only SUM and AVG are differentiable)")
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        n = c10d.get_world_size(group)
        outs = [tensor.new_empty(tensor.shape) for _ in range(n)]
        c10d.all_gather(outs, tensor.contiguous(), group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        g = grads[0].new_empty(grads[0].shape)
        c10d.reduce_scatter_tensor(g, stack([x.contiguous() for x in grads]), group=ctx.group)
        return None, g


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone().contiguous()
        c10d.broadcast(out, src=src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.clone().contiguous()
        c10d.reduce(g, dst=ctx.src, group=ctx.group)
        if c10d.get_rank() != ctx.src:
            g = g.zero_()
        return None, None, g


def all_reduce(tensor: Any, op: Any = c10d.ReduceOp.SUM, group: Any = None) -> Any:
    """The reduction of every rank's ``tensor`` (a new tensor; differentiable for SUM and AVG)."""
    return _AllReduce.apply(op, group, tensor)


def all_gather(tensor: Any, group: Any = None) -> tuple:
    """Every rank's ``tensor``, as a tuple indexed by rank (differentiable)."""
    return _AllGather.apply(group, tensor)


def broadcast(tensor: Any, src: int, group: Any = None) -> Any:
    """Rank ``src``'s ``tensor`` on every rank (a new tensor; differentiable)."""
    return _Broadcast.apply(src, group, tensor)
