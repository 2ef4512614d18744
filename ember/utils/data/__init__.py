"""``torch.utils.data``: datasets, samplers, ``DataLoader`` and batch collation.

Random sampling draws from ember's PyTorch-exact generator in PyTorch's order: with the same seed, a
shuffled ``DataLoader``, ``RandomSampler``, ``random_split`` and ``WeightedRandomSampler`` give PyTorch's
indices and leave the generator where PyTorch leaves it. ``num_workers > 0`` loads in worker processes
seeded as PyTorch seeds its workers.
"""
from .dataloader import DataLoader, _DatasetKind, default_collate, default_convert, get_worker_info  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
