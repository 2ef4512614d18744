"""safetensors files for ember tensors, through the ``safetensors`` package (an optional extra).

``save_safetensors``/``load_safetensors`` behave as ``safetensors.torch.save_file``/``load_file``: a
flat ``{name: tensor}`` dict, contiguous tensors only, tensors that overlap in memory refused with
safetensors' own error, optional ``{str: str}`` metadata. The arrays go through ``safetensors.numpy``,
so a file written by PyTorch's ``safetensors.torch.save_file`` loads here and the other way round.
"""
from __future__ import annotations

import os
import struct
from typing import Any, BinaryIO, Union

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, make

__all__ = ["save_safetensors", "load_safetensors"]

# safetensors' dtype codes that ember has (BF16 with ml_dtypes, which safetensors' NumPy reader uses for it)
_EMBER_CODES = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64"} | \
    ({"BF16"} if isinstance(D.bfloat16.np, np.dtype) else set())


def _import():
    try:
        import safetensors.numpy
    except ImportError:
        raise ImportError("the safetensors format needs the 'safetensors' package: pip install "
                          "'ember[checkpoints]' (or pip install safetensors)") from None
    return safetensors.numpy


def _span(a: np.ndarray) -> tuple[int, int]:
    start = a.__array_interface__["data"][0]
    if a.size == 0:
        return start, start
    return start, start + a.itemsize + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0)


def _check_tensors(tensors) -> dict[str, np.ndarray]:
    """safetensors.torch's checks, in its words: a dict of tensors, none sharing memory, contiguous."""
    from . import _root_of

    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    groups: dict[int, list] = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received {type(v)}")
        if not isinstance(k, str):
            raise TypeError(f"safetensors keys must be str, got {type(k).__name__} ({k!r})")
        if v._data.size:
            groups.setdefault(id(_root_of(v._data)), []).append((*_span(v._data), k))
    failing = []
    for areas in groups.values():
        # names whose memory overlaps form one group (safetensors' _filter_shared_not_shared)
        areas.sort()
        current, last_stop = {areas[0][2]}, areas[0][1]
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                if len(current) > 1:
                    failing.append(current)
                current = {name}
            else:
                current.add(name)
            last_stop = max(last_stop, stop)
        if len(current) > 1:
            failing.append(current)
    if failing:
        raise RuntimeError(
            f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)
    arrays = {}
    for k, v in tensors.items():
        if not v._data.flags.c_contiguous:
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It either means you"
                " are trying to save tensors which are reference of each other in which case it's recommended to save"
                " only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to"
                " pack it before saving.")
        arrays[k] = v._data
    return arrays


def save_safetensors(tensors: dict[str, Tensor], filename: Union[str, os.PathLike, BinaryIO],
                     metadata: dict[str, str] | None = None) -> None:
    """Save a ``{name: tensor}`` dict to ``filename`` (a path or a writable binary file) as safetensors."""
    sn = _import()
    arrays = _check_tensors(tensors)
    if hasattr(filename, "write"):
        filename.write(sn.save(arrays, metadata=metadata))
    else:
        sn.save_file(arrays, filename, metadata=metadata)


def _check_header(raw: bytes) -> bool:
    """Check the dtypes a header names; True when one is bfloat16."""
    import json

    header = json.loads(raw)
    if not isinstance(header, dict):
        raise ValueError("load_safetensors: the header is not a JSON object")
    codes = {k: v.get("dtype") if isinstance(v, dict) else None for k, v in header.items() if k != "__metadata__"}
    _check_dtypes(codes)
    return "BF16" in codes.values()


def _check_dtypes(codes: dict) -> None:
    for k, code in codes.items():
        if code not in _EMBER_CODES:
            raise TypeError(f"load_safetensors: tensor '{k}' has dtype {code}, which ember does not have "
                            f"(ember reads {', '.join(sorted(_EMBER_CODES))})")


def load_safetensors(filename: Union[str, os.PathLike, BinaryIO, bytes], device: Any = "cpu") -> dict[str, Tensor]:
    """Load a safetensors file (a path, a readable binary file, or its bytes) as a ``{name: tensor}`` dict."""
    from .._device import check_device

    check_device(device)
    sn = _import()
    if isinstance(filename, (bytes, bytearray)) or hasattr(filename, "read"):
        data = bytes(filename) if isinstance(filename, (bytes, bytearray)) else filename.read()
        if len(data) < 8:
            raise ValueError("load_safetensors: the data is too short to be a safetensors file")
        n = struct.unpack("<Q", data[:8])[0]
        if n > len(data) - 8:
            raise ValueError(f"load_safetensors: the header declares {n} bytes, more than the data holds")
        if _check_header(data[8:8 + n]):   # safetensors.numpy.load(bytes) has no bfloat16: its file reader has
            import tempfile
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "t.safetensors")
                with open(path, "wb") as f:
                    f.write(data)
                return load_safetensors(path)
        return {k: make(np.array(v)) for k, v in sn.load(data).items()}
    from safetensors import safe_open

    with safe_open(filename, framework="np") as f:
        names = list(f.keys())
        _check_dtypes({k: f.get_slice(k).get_dtype() for k in names})
        return {k: make(np.array(f.get_tensor(k))) for k in names}
