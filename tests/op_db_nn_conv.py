"""Op database entries of torch.nn.functional: convolution, pooling, padding, interpolation, grid sampling, pixel shuffle, unfold/fold."""
from __future__ import annotations

OPS: list = []
HYP_BINARY: list = []
HYP_UNARY: list = []
