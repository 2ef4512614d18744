"""The one form of index every device's kernels receive (made by ``ember/ops/_index.py`` from a PyTorch index).

PyTorch applies an index in two steps (the basic part gives a view, the advanced part indexes it); NumPy-like
libraries apply both at once. A mixed index therefore arrives as a ``SplitIndex``: ``x[first][rest]``.
"""
from __future__ import annotations


class SplitIndex(tuple):
    """``(first, rest)``: ``x[first][rest]``. ``first`` holds only basic indices (ending with an
    Ellipsis, so that ``x[first]`` is always a view, even a 0-d one), and writes through it reach ``x``."""

    __slots__ = ()


def view_of(x, index):
    """``(array, index)`` such that ``array[index]`` addresses ``x[index]`` with PyTorch's meaning."""
    if type(index) is SplitIndex:
        return x[index[0]], index[1]
    return x, index
