"""``torch._dynamo.exc``: the errors a compiled function with ``fullgraph=True`` raises where the trace breaks."""
from __future__ import annotations


class TorchDynamoException(RuntimeError):
    """Base of the compiler's errors."""


class Unsupported(TorchDynamoException):
    """Something the trace cannot replay (PyTorch: a graph break), raised under ``fullgraph=True``."""

    def __init__(self, msg: str, *, case_name: str | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.real_stack = []
        self.case_name = case_name


class UserError(TorchDynamoException):
    """A data-dependent expression the trace cannot guard on (``.item()`` in control flow), under fullgraph."""


class BackendCompilerFailed(TorchDynamoException):
    """Never raised here: there is one compiler and it cannot fail to compile what it traced."""


for _c in (TorchDynamoException, Unsupported, UserError, BackendCompilerFailed):
    _c.__module__ = "torch._dynamo.exc"
del _c
