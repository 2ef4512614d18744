"""Devices and the raw array namespace that belongs to each (NumPy for 'cpu')."""
from __future__ import annotations

import builtins

from .devices import DEVICE_TYPES as _DEVICE_TYPES, DEVICES, NAMESPACES, backend_of, fp_quiet, fp_restore  # noqa
from .devices import move, quietly, register, register_backend  # noqa: F401 (re-exported: the core's door to devices)
from .devices import cpu_backend, device_namespace, has_data  # noqa: F401


class device:
    """A tensor's device, as ``torch.device``: ``device('cpu')``, ``device(type='cpu')``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device = "cpu", index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({builtins.type(type).__name__}), but expected one of:\n * (torch.device device)\n"
                            " * (str type, int index = -1)\n")
        if ":" in type:
            type, _, idx = type.partition(":")
            # PyTorch accepts only a plain non-negative decimal index ('cuda:01', 'cuda:a' are invalid)
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0") or ":" in idx:
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        elif index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if type not in _DEVICE_TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta, mps device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


cpu = device("cpu")


def no_cuda() -> AssertionError:
    """The error a CPU-only PyTorch raises wherever CUDA is asked for (ember has no CUDA backend yet)."""
    return AssertionError("Torch not compiled with CUDA enabled")


def check_device(d, creation: bool = False) -> device:
    """Normalise a device argument: 'cpu', 'meta', or a device registered with ``ember.devices.register``. Other
    devices raise what a CPU-only PyTorch raises: AssertionError for 'cuda', and for 'mps' a RuntimeError from ``.to`` but
    NotImplementedError from creation functions (``creation=True``)."""
    if d is None:
        return cpu
    if isinstance(d, int) and not isinstance(d, bool):   # a bare index means the accelerator
        raise RuntimeError("Cannot access accelerator device when none is available.")
    d = d if isinstance(d, device) else device(d)
    if d.type == "cpu":
        return cpu
    if d.type == "cuda":
        raise no_cuda()
    if d.type == "mps":
        if creation:
            raise NotImplementedError(
                "Could not run 'aten::empty.memory_format' with arguments from the 'MPS' backend "
                "(ember has only the 'cpu' (NumPy) backend)")
        raise RuntimeError("PyTorch is not linked with support for mps devices")
    if device_namespace(d.type) is not None:   # 'meta' is built here on first use
        return _device_named(d.type)
    raise RuntimeError(f"ember has no backend for device '{d}' yet: only 'cpu' (NumPy) is built")


_DEVICES: dict = {}


def _device_named(kind: str) -> device:
    d = _DEVICES.get(kind)
    if d is None:
        d = _DEVICES[kind] = device(kind)
    return d


def device_of(array) -> device:
    """The device a raw array lives on: a tensor's device follows from its array's type."""
    kind = NAMESPACES[type(array)].backend.device_type
    d = _DEVICES.get(kind)
    if d is None:
        d = _DEVICES[kind] = device(kind)
    return d
