"""Batch collation (``torch.utils.data._utils.collate``): samples -> a batch of tensors.

``default_collate`` stacks a list of samples along a new first dimension, recursing into mappings,
namedtuples and sequences; ``default_convert`` (used when automatic batching is off) only turns NumPy
arrays and scalars into tensors. The output types and dtypes are PyTorch's: Python floats give float64,
Python ints int64 (bools bool), NumPy arrays and scalars keep their dtype, strings and bytes stay as they
are. Custom types can be added to ``default_collate_fn_map`` (type -> ``fn(batch, *, collate_fn_map)``).
"""
from __future__ import annotations

import collections.abc
import copy
import re
from typing import Any, Callable

import numpy as np

from ...ops import public as _torch   # the torch namespace of the op layer (the root imports this package)
from ..._tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map",
           "collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn", "collate_float_fn",
           "collate_int_fn", "collate_str_fn"]

# dtype.str codes a tensor cannot hold: byte strings, unicode, object (PyTorch's pattern)
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")

_CollateMap = dict  # type -> fn(batch, *, collate_fn_map)


def _is_numpy_value(data: Any) -> bool:
    # NumPy arrays and scalars, but not np.str_ (a str subclass, kept as text)
    t = type(data)
    return t.__module__ == "numpy" and t.__name__ not in ("str_", "string_")


def _rebuild(proto: Any, items: dict | list, kind: str) -> Any:
    """A container of ``proto``'s type holding ``items``; a plain dict/list if that type cannot be built so."""
    try:
        if kind == "map":
            if isinstance(proto, collections.abc.MutableMapping):
                out = copy.copy(proto)     # keeps extra state of dict subclasses (e.g. defaultdict's factory)
                out.update(items)
                return out
            return type(proto)(items)
        if isinstance(proto, collections.abc.MutableSequence):
            out = copy.copy(proto)
            for i, v in enumerate(items):
                out[i] = v
            return out
        return type(proto)(items)
    except TypeError:
        return items


def default_convert(data: Any) -> Any:
    """Turn NumPy arrays and scalars inside ``data`` into tensors, recursing into containers; the rest
    unchanged (tuples become lists, as PyTorch's)."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_value(data):
        if isinstance(data, np.ndarray) and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _torch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(data[k]) for k in data}, "map")
    if isinstance(data, tuple) and hasattr(data, "_fields"):        # namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(d) for d in data], "seq")
    return data


def collate(batch: list | tuple, *, collate_fn_map: dict | None = None) -> Any:
    """Collate ``batch`` (a list of samples of one structure), dispatching leaves through ``collate_fn_map``:
    first by exact type, then by the first key (in insertion order) the element is an instance of."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(elem, key):
                return fn(batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem},
                        "map")
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):        # namedtuple: field by field
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns                  # tuples collate to lists, as PyTorch's (backwards compatibility)
        return _rebuild(elem, columns, "seq")
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return _torch.stack(batch, 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_torch.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return _torch.as_tensor(batch)


def collate_float_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return _torch.tensor(batch, dtype=_torch.float64)


def collate_int_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    return _torch.tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: dict | None = None) -> list:
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}
# the map as shipped: DataLoader's TensorDataset fast path applies only while default_collate still uses it
_SHIPPED_COLLATE_FN_MAP = dict(default_collate_fn_map)


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch (``torch.utils.data.default_collate``): tensors and NumPy arrays
    gain a leading batch dimension, numbers become 1-d tensors (float -> float64, int -> int64), strings stay
    a list, and mappings, namedtuples and sequences are collated field by field (tuples give lists)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
