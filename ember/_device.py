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
    """The error a CPU-only PyTorch raises wherever CUDA is asked for (ember without CuPy or a GPU)."""
    return AssertionError("Torch not compiled with CUDA enabled")


def _cuda(d: device) -> device:
    """``d`` (of type 'cuda') checked against the GPUs CuPy sees: a CPU-only PyTorch's error without one,
    PyTorch's for an index past the last GPU; ember builds one GPU, cuda:0."""
    ns = device_namespace("cuda")   # built here on first use; None without CuPy or a GPU
    if ns is None:
        raise no_cuda()
    if d.index:
        from .devices import cuda as _cuda_dev
        if d.index >= _cuda_dev.device_count():
            raise RuntimeError("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously "
                               "reported at some other API call, so the stacktrace below might be incorrect.\n"
                               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1")
        raise NotImplementedError(f"ember: only one GPU is built (cuda:0), not {d}")
    return _device_named("cuda")


def accelerator_index(i: int) -> device:
    """A bare int as a device: PyTorch's current accelerator with that index (cuda, where CuPy sees a GPU)."""
    if device_namespace("cuda") is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if i < 0:
        raise RuntimeError("Device index must not be negative")
    return _cuda(device("cuda", i))


# torch.set_default_device's device: where creation functions put tensors given no ``device=`` (None: the cpu)
DEFAULT: list = [None]


def check_device(d, creation: bool = False) -> device:
    """Normalise a device argument: 'cpu', 'meta', 'cuda' (where CuPy sees a GPU), or a device registered with
    ``ember.devices.register``. Other devices raise what a CPU-only PyTorch raises: AssertionError for 'cuda', and
    for 'mps' a RuntimeError from ``.to`` but NotImplementedError from creation functions (``creation=True``,
    where None is the default device, ``DEFAULT``)."""
    if d is None:
        return cpu if not creation or DEFAULT[0] is None else DEFAULT[0]
    if isinstance(d, int) and not isinstance(d, bool):   # a bare index means the accelerator
        return accelerator_index(d)
    d = d if isinstance(d, device) else device(d)
    if d.type == "cpu":
        return cpu
    if d.type == "cuda":
        return _cuda(d)
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
    """The device tensors of device type ``kind`` report: its backend's index, if it has one (cuda:0)."""
    d = _DEVICES.get(kind)
    if d is None:
        d = _DEVICES[kind] = device(kind, getattr(DEVICES[kind].backend, "index", None))
    return d


def device_of(array) -> device:
    """The device a raw array lives on: a tensor's device follows from its array's type."""
    kind = NAMESPACES[type(array)].backend.device_type
    d = _DEVICES.get(kind)
    if d is None:
        d = _device_named(kind)
    return d
