"""Argument helpers shared by the layers (torch.nn.modules.utils)."""
from __future__ import annotations

import collections
from itertools import repeat


def _ntuple(n: int, name: str = "parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """(a, b) -> (b, b, a, a) for n=2: F.pad's order (last dim first) from a per-dim tuple."""
    return tuple(x for x in reversed(t) for _ in range(n))
