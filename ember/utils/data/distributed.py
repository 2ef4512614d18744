"""``torch.utils.data.distributed``: ``DistributedSampler``, each process's share of a dataset's indices.

The split is PyTorch's, index for index: the (optionally shuffled) indices are padded by repeating their head (or
cut, with ``drop_last``) to a multiple of ``num_replicas``, and replica ``rank`` takes every ``num_replicas``-th
one from position ``rank``. The shuffle is ``randperm`` from a generator seeded with ``seed + epoch``, drawn by
ember's PyTorch-exact generator, so the same seed and epoch give PyTorch's order on every replica.
"""
from __future__ import annotations

import math
from typing import Iterator, Sized, TypeVar

from ... import distributed as _dist
from ...ops.random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _from_process_group(ask):
    """``ask()`` (the group's world size or rank); PyTorch's error when the distributed package is missing."""
    if not _dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return ask()


class DistributedSampler(Sampler[_T_co]):
    """The indices of ``dataset`` that replica ``rank`` of ``num_replicas`` loads (``num_samples`` of them).

    ``num_replicas`` and ``rank`` default to the default process group's world size and rank. With ``shuffle``
    the order changes with ``set_epoch(epoch)`` (call it before each epoch's iterator, as in PyTorch) and is the
    same on every replica for the same ``seed``. ``drop_last`` cuts the tail instead of padding it.
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _from_process_group(_dist.get_world_size)
        if rank is None:
            rank = _from_process_group(_dist.get_rank)
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        # drop_last keeps the largest multiple of num_replicas below n (an exact multiple is kept whole)
        cut = drop_last and n % num_replicas != 0
        self.num_samples = math.ceil((n - num_replicas) / num_replicas) if cut else math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def _all_indices(self) -> list:
        """Every replica's indices in one list of ``total_size``: shuffled or in order, padded or cut."""
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            order = randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        if self.drop_last:
            return order[:self.total_size]
        missing = self.total_size - n
        # pad by repeating the order from its start, as often as needed (a tiny dataset repeats several times)
        repeats = 1 + (math.ceil(missing / n) if n and missing > 0 else 0)
        return (order * repeats)[:self.total_size] if missing > 0 else order

    def __iter__(self) -> Iterator[_T_co]:
        every = self._all_indices()
        if len(every) != self.total_size:
            raise AssertionError(f"Number of indices ({len(every)}) does not match total_size ({self.total_size})")
        mine = every[self.rank:self.total_size:self.num_replicas]
        if len(mine) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(mine)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(mine)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next iterator uses (``seed + epoch`` seeds it)."""
        self.epoch = epoch
