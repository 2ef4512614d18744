"""Op database entries of torch.nn.functional: activations, softmax family, linear/bilinear/embedding/one_hot, dropout."""
from __future__ import annotations

OPS: list = []
HYP_BINARY: list = []
HYP_UNARY: list = []
