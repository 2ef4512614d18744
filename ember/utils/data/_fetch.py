"""Fetching one batch from a dataset (``torch.utils.data._utils.fetch``): what the main process and the
worker processes share."""
from __future__ import annotations

from typing import Callable

from ..._device import NAMESPACES
from ..._state import fwd_state as _fwd_state
from ..._tensor import Tensor, make
from . import _collate
from ._collate import default_collate
from .dataset import Subset, TensorDataset


class _DatasetKind:
    Map = 0
    Iterable = 1


_TD_GETITEM = TensorDataset.__getitem__
_SUBSET_GETITEMS = Subset.__getitems__


def _plain_attr(obj, name: str):
    """``obj.name`` when it is a plain instance attribute (no class attribute or property of that name that
    could mean something else); None otherwise."""
    if hasattr(type(obj), name):
        return None
    d = getattr(obj, "__dict__", None)
    return d.get(name) if type(d) is dict else None


def _tensor_batch(dataset, index) -> list | None:
    """``default_collate([dataset[i] for i in index])`` for a ``TensorDataset``, built by one gather per tensor
    instead of one row view per sample and tensor then a stack; ``None`` wherever the result, or the exception
    raised, could differ in any way (the caller then takes the ordinary path).

    The gather gives what stacking the rows gives: the same values and dtype in a new C-contiguous leaf
    tensor (inference-mode flag included). It is taken only for ``TensorDataset`` itself or subclasses that
    keep its ``__getitem__``, only for a list/tuple of plain ints all in range (no IndexError to reproduce),
    only for plain tensors that do not require grad, carry no tangent and are not stale views,
    and only while ``default_collate``'s type map is the shipped one.
    """
    if type(dataset).__getitem__ is not _TD_GETITEM or _fwd_state.level:
        return None
    if set(map(type, index)) != {int}:      # also rejects an empty batch (default_collate's IndexError)
        return None
    tensors = _plain_attr(dataset, "tensors")
    if type(tensors) is not tuple or not tensors:
        return None
    lo, hi = min(index), max(index)
    for t in tensors:
        if type(t) is not Tensor or t._requires_grad or t._fw_grad is not None:
            return None
        if t._base is not None and t._vc[0] != t._view_v:
            return None
        d = t._data
        if type(d) not in NAMESPACES or d.ndim == 0 or lo < -d.shape[0] or hi >= d.shape[0]:
            return None
    if _collate.default_collate_fn_map != _collate._SHIPPED_COLLATE_FN_MAP:
        return None
    out = []
    for t in tensors:
        xp = NAMESPACES[type(t._data)]   # the rows gathered on the tensor's device, into a new array
        out.append(make(xp.gather_rows(t._data, 0, xp.backend.asarray(index))))
    return out


def _subset_tensor_batch(subset, index) -> list | None:
    """``_tensor_batch`` through a ``Subset`` whose ``__getitems__`` is ``Subset``'s own over a dataset without
    ``__getitems__``: the batch's positions mapped through ``indices`` (a list or range) first."""
    ds = subset.dataset
    if getattr(ds, "__getitems__", None) is not None:
        return None
    indices = _plain_attr(subset, "indices")
    if (type(indices) is not list and type(indices) is not range) or set(map(type, index)) != {int}:
        return None
    try:
        mapped = [indices[i] for i in index]
    except IndexError:
        return None
    return _tensor_batch(ds, mapped)


class _MapFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        dataset = self.dataset
        getitems = getattr(dataset, "__getitems__", None)
        if self.collate_fn is default_collate and (type(index) is list or type(index) is tuple):
            # one gather per tensor for TensorDataset (directly or through Subset); None: the ordinary path
            if getitems is None:
                batch = _tensor_batch(dataset, index)
            elif getattr(getitems, "__func__", None) is _SUBSET_GETITEMS and getitems.__self__ is dataset:
                batch = _subset_tensor_batch(dataset, index)
            else:
                batch = None
            if batch is not None:
                return batch
        data = getitems(index) if getitems else [dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:       # index is a batch of Nones: only its length matters
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _make_fetcher(kind: int, dataset, auto_collation: bool, collate_fn: Callable, drop_last: bool):
    cls = _MapFetcher if kind == _DatasetKind.Map else _IterableFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)
