"""PyTorch's torch.nn.modules._functions: autograd Functions of modules whose backward is written by hand (a
Function here, as in PyTorch, so the node carries PyTorch's name: ``CrossMapLRN2dBackward``)."""
from __future__ import annotations

from ...autograd.function import Function
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
