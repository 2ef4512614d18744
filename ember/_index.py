"""An index PyTorch applies in two steps, which NumPy would apply in one differently."""
from __future__ import annotations


class SplitIndex(tuple):
    """``(first, rest)``: ``x[first][rest]``. PyTorch applies integer indices as selects before advanced
    indexing; NumPy broadcasts them with the index arrays, which moves the result's dims. ``first``
    holds only basic indices, so ``x[first]`` is a view and writes through it reach ``x``."""

    __slots__ = ()


def split(idx: tuple):
    """``idx`` unchanged, or a SplitIndex when it mixes integers with advanced (array) indices."""
    import numpy as np
    if not any(type(ix) is int for ix in idx) or not any(isinstance(ix, np.ndarray) for ix in idx):
        return idx
    first, rest = [], []
    for ix in idx:
        if type(ix) is int:
            first.append(ix)
        elif ix is None or isinstance(ix, np.bool_):
            rest.append(ix)
        elif ix is Ellipsis:
            first.append(ix)
            rest.append(ix)
        else:
            first.extend([slice(None)] * (ix.ndim if isinstance(ix, np.ndarray) and ix.dtype == np.bool_ else 1))
            rest.append(ix)
    return SplitIndex((tuple(first), tuple(rest)))


def view_of(x, index):
    """``(array, index)`` such that ``array[index]`` addresses ``x[index]`` with PyTorch's meaning."""
    if type(index) is SplitIndex:
        return x[index[0]], index[1]
    return x, index
