"""The raw arrays and the backend of device 'cuda' (loaded when the device is built, see __init__.py)."""
from __future__ import annotations

import numpy as np

from ..common.array import DeviceArray
from ..common.namespace import _Backend
from ._copies import COPIES


class CudaArray(DeviceArray):
    """A CuPy array as ember's core sees it. PyTorch lets 0-d cpu tensors join cuda ops, and names the device
    ``cuda:0`` in its errors; data reaches the host through ``cupy.asnumpy`` (CuPy refuses NumPy's conversions)."""

    __slots__ = ()
    cpu_scalars = True
    cupy = None   # set by make()

    @staticmethod
    def _name(kind: str) -> str:
        return "cuda:0" if kind == "cuda" else kind

    @classmethod
    def mixed(cls, found: str, expected: str) -> RuntimeError:
        # PyTorch names the op's device (its first operand's) first: cuda_x + cpu_y -> "cuda:0 and cpu"
        return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                            f"{cls._name(expected)} and {cls._name(found)}!")

    def mixed_on_host(self) -> RuntimeError:
        return self.mixed("cuda", "cpu")   # cpu_y + cuda_x: the op runs on the cpu, "cpu and cuda:0"

    def host(self) -> np.ndarray:
        COPIES["d2h"] += 1
        return self.cupy.asnumpy(self.a)

    # DLPack: the CuPy array's own (zero-copy for arrays that are not views; a view exports its values)
    def __dlpack__(self, *args, **kwargs):
        return self.a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class CudaBackend(_Backend):
    """The cuda backend: host data moves with ``cupy.asarray`` (one copy, no Python lists)."""

    index = 0   # the device index tensors report (cuda:0)

    def asarray(self, x):
        if type(x) is self._arr:
            return x
        if isinstance(x, DeviceArray):
            raise self._arr.mixed(x.device_type, self.device_type)
        host = np.asarray(x)
        if host.dtype not in self._arr._to_lib:   # bfloat16, float8: CuPy has none
            raise TypeError(f"device 'cuda' has no {host.dtype} (CuPy lacks it)")
        COPIES["h2d"] += 1
        return self._arr(self._arr.cupy.asarray(host))

    def from_dlpack(self, obj):
        """A CudaArray on the GPU memory of ``obj`` (an object with ``__dlpack__``: a CuPy array, a torch.cuda or
        JAX tensor), shared, not copied."""
        return self._arr(self._arr.cupy.from_dlpack(obj))

    def to_dlpack(self, x):
        """A DLPack capsule of the array's GPU memory (torch.utils.dlpack.to_dlpack)."""
        return x.a.__dlpack__()
