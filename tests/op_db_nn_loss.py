"""Op database entries of torch.nn.functional: losses."""
from __future__ import annotations

OPS: list = []
HYP_BINARY: list = []
HYP_UNARY: list = []
