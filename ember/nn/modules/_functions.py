"""PyTorch's torch.nn.modules._functions: autograd Functions of modules whose backward is written by hand (a
Function here, as in PyTorch, so the node carries PyTorch's name: ``CrossMapLRN2dBackward``)."""
from __future__ import annotations

from ...autograd.function import Function
from ...ops import creation as _creation
from ...ops import shape as _shape
from ..._tensor import Tensor


class CrossMapLRN2d(Function):
    """PyTorch's torch.nn.modules._functions.CrossMapLRN2d: the forward keeps a running sum of squares across
    channels (add the next channel, drop the one ``pre_pad`` back), and the backward is PyTorch's hand-written one
    (a symmetric window of ``size`` channels), which is not the exact derivative of that forward: ember gives
    PyTorch's gradients."""

    @staticmethod
    def forward(ctx, input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        channels = input.size(1)
        square = input.pow(2)
        pre_pad = int((size - 1) / 2 + 1)
        scale = square.select(1, 0)
        for c in range(1, min(pre_pad, channels)):
            scale = scale + square.select(1, c)
        scales = [scale]
        for c in range(1, channels):
            if c < channels - pre_pad + 1:
                scale = scale + square.select(1, c + pre_pad - 1)
            if c > pre_pad:
                scale = scale - square.select(1, c - pre_pad)
            scales.append(scale)
        scale = _shape.stack(scales, 1) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.scale = scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        input, output = ctx.saved_tensors
        size, channels = ctx.size, input.size(1)
        inverse_pre_pad = int(size - (size - 1) / 2)
        if inverse_pre_pad + channels > channels + size - 1:        # PyTorch's narrow fails here (size 1)
            raise RuntimeError(f"start ({inverse_pre_pad}) + length ({channels}) exceeds dimension size "
                               f"({channels + size - 1}).")
        grad_input = ctx.scale.pow(-ctx.beta) * grad_output
        ratio = grad_output * output / ctx.scale
        n, _, h, w = input.shape
        padded = _shape.cat([ratio.new_zeros((n, inverse_pre_pad, h, w)), ratio,
                             ratio.new_zeros((n, size - 1 - inverse_pre_pad, h, w))], 1)
        accum = padded.narrow(1, 0, channels)           # channel c sums padded[c : c + size]
        for j in range(1, size):
            accum = accum + padded.narrow(1, j, channels)
        grad_input = grad_input - (2 * ctx.alpha * ctx.beta / size) * input * accum
        return grad_input, None, None, None, None


class SyncBatchNorm(Function):
    """Batch normalisation over the whole batch spread across a process group (PyTorch's
    torch.nn.modules._functions.SyncBatchNorm): each rank's per-channel mean, biased variance and count travel in
    one all_gather and combine into the global statistics; the backward all-reduces each channel's sums of
    ``grad_output`` and ``grad_output * (x - mean)``, which the input gradient needs from every rank. The weight
    and bias gradients stay local (DistributedDataParallel averages them)."""

    @staticmethod
    def forward(ctx, input: Tensor, weight, bias, running_mean, running_var, eps: float, momentum: float,
                process_group, world_size: int) -> Tensor:
        from ...distributed import distributed_c10d as c10d   # (loaded on first use; nothing else needs it)
        c = input.size(1)
        count = input.numel() // c
        if count == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {count}")
        dims = [0] + list(range(2, input.dim()))
        if input.numel() > 0:
            mean, var = input.mean(dims), input.var(dims, correction=0)
        else:
            mean = var = _creation.zeros(c, dtype=input.dtype)
        local = _shape.cat([mean, var, _creation.full((1,), count, dtype=input.dtype)])
        rows = _creation.empty(world_size * local.numel(), dtype=input.dtype)
        c10d.all_gather_into_tensor(rows, local, group=process_group)
        rows = rows.reshape(world_size, -1)
        means, variances, counts = rows[:, :c], rows[:, c:2 * c], rows[:, 2 * c:]
        total = counts.sum()
        mean = (means * counts).sum(0) / total
        var = ((variances + (means - mean) ** 2) * counts).sum(0) / total
        invstd = (var + eps).rsqrt()
        n = float(total)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_((var * (n / max(n - 1, 1))).to(running_var.dtype) * momentum)
        shape = [1, c] + [1] * (input.dim() - 2)
        out = (input - mean.reshape(shape)) * invstd.reshape(shape)
        if weight is not None:
            out = out * weight.reshape(shape)
        if bias is not None:
            out = out + bias.reshape(shape)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.process_group, ctx.total, ctx.has_bias = process_group, n, bias is not None
        return out

    @staticmethod
    def backward(ctx, grad_output: Tensor):
        from ...distributed import distributed_c10d as c10d
        input, weight, mean, invstd = ctx.saved_tensors
        c = input.size(1)
        dims = [0] + list(range(2, input.dim()))
        shape = [1, c] + [1] * (input.dim() - 2)
        xmu = input - mean.reshape(shape)
        sum_dy = grad_output.sum(dims)
        sum_dy_xmu = (grad_output * xmu).sum(dims)
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[1]:
            grad_weight = sum_dy_xmu * invstd
        if ctx.needs_input_grad[2]:
            grad_bias = sum_dy
        if ctx.needs_input_grad[0]:
            combined = _shape.cat([sum_dy, sum_dy_xmu])
            c10d.all_reduce(combined, group=ctx.process_group)
            mean_dy = (combined[:c] / ctx.total).reshape(shape)
            mean_dy_xmu = (combined[c:] / ctx.total).reshape(shape)
            scale = invstd.reshape(shape) if weight is None else (invstd * weight).reshape(shape)
            grad_input = (grad_output - mean_dy - xmu * (invstd.reshape(shape) ** 2) * mean_dy_xmu) * scale
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None
