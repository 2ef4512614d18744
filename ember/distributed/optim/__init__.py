"""``torch.distributed.optim``: ZeroRedundancyOptimizer (optimizer state sharded across the ranks)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
