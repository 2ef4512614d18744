"""ember's devices: the only package that calls an array library.

A device is a name ('cpu') and a raw array namespace: the module of functions derivative rules call as
``xp.*`` on raw arrays, with a ``backend`` object for what the machinery needs beyond the rules (moving data in
and out of its arrays, the floating-point error state). ``cpu/`` is NumPy's; ``common/`` makes a device from any
library that follows the Python array API standard (``register(name, xp)``). The registry below maps each array
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


# Device type -> the raw namespace of that device (the devices tensors can be moved to with ``.to(name)``).
DEVICES = {"cpu": _cpu}


def register_backend(namespace) -> None:
    """Make ``namespace`` (a module like ``ember.devices.cpu.namespace`` with a ``backend``) the raw namespace of
    the array types it declares: tensors holding such arrays then run on it (a CuPy backend calls this)."""
    for t in namespace.backend.array_types:
        NAMESPACES[t] = namespace
    DEVICES[namespace.backend.device_type] = namespace
    if namespace.backend.device_type not in DEVICE_TYPES:
        DEVICE_TYPES.append(namespace.backend.device_type)


def has_data(backend) -> bool:
    """Whether a device's arrays hold values: all but 'meta' (a backend that does not say has them)."""
    return getattr(backend, "has_data", True)


def cpu_backend():
    """The backend of device 'cpu' (where the legacy constructors and host data land)."""
    return _cpu.backend


# PyTorch's own device types (its "in-tree" names, which torch.utils.rename_privateuse1_backend refuses too):
# register() refuses them, so that a name never means another device in ember than in PyTorch.
RESERVED = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
            "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _make_meta():
    from . import meta   # here: building a namespace is work no import of ember should pay for
    return meta.make()


def _make_cuda():
    from . import cuda   # here: CuPy is imported on the first use of 'cuda' only
    return cuda.make()   # None without CuPy or a GPU


# The devices ember has built in but builds on first use (``device_namespace``): 'meta' always, 'cuda' where CuPy
# sees a GPU.
BUILTIN = {"meta": _make_meta, "cuda": _make_cuda}


def register(name: str, xp):
    """Make a device ``name`` from ``xp``, a namespace that follows the Python array API standard
    (``array_api_strict``, ``cupy``, ...): ``torch.device(name)`` parses, ``tensor.to(name)`` moves data there, and
    ops on its tensors run ``xp``'s functions. Returns the device's raw namespace; ``namespace.MISSING`` names the
    kernels it has no version of yet (they raise NotImplementedError). PyTorch's own device names are refused."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register(): {name!r} is not a valid device name (it must be a Python identifier)")
    if name in RESERVED:
        raise ValueError(f"register(): {name!r} is a device type PyTorch reserves for its own devices "
                         f"({', '.join(RESERVED)}); choose another name")
    from .common.namespace import make_namespace   # here: building a namespace is work no import of ember should pay for
    return _install(name, make_namespace(name, xp))


def _install(name: str, namespace):
    """Install ``namespace`` as device ``name``, replacing an earlier one of that name."""
    uninstall(name)   # registered again: the new library replaces the old one
    register_backend(namespace)
    return namespace


def uninstall(name: str) -> None:
    """Remove device ``name``'s namespace (a built-in one is built again on its next use)."""
    ns = DEVICES.pop(name, None)
    if ns is not None:
        for t in ns.backend.array_types:
            NAMESPACES.pop(t, None)


def device_namespace(name: str):
    """The raw namespace of device ``name``, or None when no such device is registered; a device ember always has
    ('meta') is built here on first use."""
    ns = DEVICES.get(name)
    if ns is None and name in BUILTIN:
        ns = BUILTIN[name]()
        if ns is not None:
            _install(name, ns)
    return ns


def move(array, device_type: str):
    """``array`` (of any registered device) copied onto device ``device_type``, through host memory."""
    src = NAMESPACES[type(array)].backend
    if src.device_type == device_type:
        return array
    dst = device_namespace(device_type).backend
    if not has_data(dst):   # onto 'meta': only the shape and dtype travel
        return dst.zeros(array.shape, array.dtype)
    return dst.asarray(src.to_numpy(array))


def backend_of(array):
    """The device backend of a raw array (see ``cpu.namespace._Backend``)."""
    return NAMESPACES[type(array)].backend


def device_type_of(array) -> str:
    """The device type ('cpu', ...) a raw array lives on."""
    return NAMESPACES[type(array)].backend.device_type
