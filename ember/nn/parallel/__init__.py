"""ember.nn.parallel: DataParallel (wraps the module and calls it, as PyTorch does with no GPU) and
DistributedDataParallel (needs a process group, which ember does not have yet: PyTorch's error)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
