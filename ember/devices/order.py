"""PyTorch's insertion sort of dimensions with ambiguous comparisons (TensorIterator's reorder_dimensions and the
logical-to-physical permutation of torch._prims_common), shared by the cpu kernels and Tensor.dim_order."""
from __future__ import annotations

from typing import Callable


def insertion_order(ndim: int, should_swap: Callable[[int, int], int]) -> list:
    """The dims ``ndim-1 .. 0`` insertion-sorted by ``should_swap(d0, d1)`` (> 0: swap, < 0: keep, 0: undecided,
    which moves on), as PyTorch sorts them: the result lists the dims fastest first."""
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm
