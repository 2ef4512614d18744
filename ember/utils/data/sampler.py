"""Samplers (``torch.utils.data.sampler``): iterables of dataset indices, or of lists of them.

The random samplers draw from ember's PyTorch-exact generator in PyTorch's order, lazily (each one is a
generator function, so nothing is drawn until the first index is asked for): with the same seed they
yield PyTorch's indices and leave the generator in PyTorch's state.
"""
from __future__ import annotations

import itertools
from typing import Generic, Iterable, Iterator, Sequence, Sized, TypeVar

from ...ops import public as _torch   # the torch namespace of the op layer (the root imports this package)
from ...ops.random import Generator

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _is_positive_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


class Sampler(Generic[_T_co]):
    """Base class of samplers: ``__iter__`` yields indices (or batches of them); ``__len__`` is optional.

    No default ``__len__`` on purpose: ``len()`` of a sampler without one raises ``TypeError``, and
    ``list(sampler)`` falls back to iterating, as for PyTorch's.
    """

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator() -> Generator:
    # PyTorch seeds a private generator from one int64 draw of the default generator
    seed = int(_torch.empty((), dtype=_torch.int64).random_().item())
    return Generator().manual_seed(seed)


def _skip_randperm(n: int, gen) -> bool:
    """Advance ``gen`` exactly as ``_torch.randperm(n, generator=gen)`` does without building the permutation
    (its Fisher-Yates path draws ``n - 1`` words, nothing for n < 2); False where that path does not apply."""
    if type(gen) is not Generator or not 0 <= n < _RANDPERM_WORDS_LIMIT:
        return False
    if n > 1:
        gen._words(n - 1)
    return True


_RANDPERM_WORDS_LIMIT = (2 ** 32 - 1) // 20   # _torch.randperm's bound between its two paths


class RandomSampler(Sampler[int]):
    """Indices in random order: a permutation (repeated if ``num_samples`` exceeds the length), or, with
    ``replacement``, ``num_samples`` independent draws (in chunks of 32, as PyTorch draws them)."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        # read each time: the dataset may grow or shrink between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        gen = _fresh_generator() if self.generator is None else self.generator
        total = self.num_samples
        if self.replacement:
            full, rest = divmod(total, 32)
            for _ in range(full):
                yield from _torch.randint(high=n, size=(32,), dtype=_torch.int64, generator=gen).tolist()
            # PyTorch draws this last chunk even when it is empty
            yield from _torch.randint(high=n, size=(rest,), dtype=_torch.int64, generator=gen).tolist()
        else:
            for _ in range(total // n):
                yield from _torch.randperm(n, generator=gen).tolist()
            # ... and this last permutation even when no index of it is used
            rest = total % n
            if rest or not _skip_randperm(n, gen):
                yield from _torch.randperm(n, generator=gen).tolist()[:rest]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices, in a random order (one permutation per pass)."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _torch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``weights`` drawn with probability proportional to the weight
    (``torch.multinomial`` on the float64 weights), with or without replacement."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = _torch.as_tensor(weights, dtype=_torch.double)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = _torch.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter, or dropped
    with ``drop_last``)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        # no isinstance check on sampler: anything iterable will do, as in PyTorch
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        if self.drop_last:
            # zip over batch_size references to one iterator: full batches only
            for batch in zip(*([it] * self.batch_size)):
                yield list(batch)
        else:
            while batch := list(itertools.islice(it, self.batch_size)):
                yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
