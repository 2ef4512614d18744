"""``torch._dynamo.exc``: the errors ``torch.compile(..., fullgraph=True)`` raises (defined in ember.compiler)."""
from __future__ import annotations

from ..compiler._exc import BackendCompilerFailed, TorchDynamoException, Unsupported, UserError

__all__ = ["BackendCompilerFailed", "TorchDynamoException", "Unsupported", "UserError"]
