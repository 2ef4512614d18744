"""ember's devices: the only package that calls an array library.

A device is a name ('cpu') and a raw array namespace: the module of functions derivative rules call as
``xp.*`` on raw arrays, with a ``backend`` object for what the machinery needs beyond the rules (moving data in
and out of its arrays, the floating-point error state). ``cpu/`` is NumPy's. The registry below maps each array
type to the namespace of its device, so a tensor's device follows from its array's type.
"""
from __future__ import annotations

from .cpu import namespace as _cpu

# NumPy's floating-point exceptions silent while ember computes, the caller's error state back after (PyTorch never
# warns about overflow or 0/0; see cpu/namespace.py): ``token = fp_quiet()`` ... ``fp_restore(token)``, or
# ``@quietly``. Only NumPy warns, so its switch serves every device.
fp_quiet = _cpu.backend.fp_quiet
fp_restore = _cpu.backend.fp_restore
quietly = _cpu.backend.quietly

# The device types torch.device accepts; a registered device adds its own.
DEVICE_TYPES = ["cpu", "cuda", "meta", "mps"]

# Array type -> the raw namespace of its device. A CuPy device adds {cupy.ndarray: its namespace}.
# NumPy scalars count too: raw gradients of 0-d tensors can come back as np.float32 and kin.
NAMESPACES = {t: _cpu for t in _cpu.backend.scalar_types}


def register_backend(namespace) -> None:
    """Make ``namespace`` (a module like ``ember.devices.cpu.namespace`` with a ``backend``) the raw namespace of
    the array types it declares: tensors holding such arrays then run on it (a CuPy backend calls this)."""
    for t in namespace.backend.array_types:
        NAMESPACES[t] = namespace
    if namespace.backend.device_type not in DEVICE_TYPES:
        DEVICE_TYPES.append(namespace.backend.device_type)


def cpu_backend():
    """The backend of device 'cpu' (where the legacy constructors and host data land)."""
    return _cpu.backend


def backend_of(array):
    """The device backend of a raw array (see ``cpu.namespace._Backend``)."""
    return NAMESPACES[type(array)].backend


def device_type_of(array) -> str:
    """The device type ('cpu', ...) a raw array lives on."""
    return NAMESPACES[type(array)].backend.device_type
