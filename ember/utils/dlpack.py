"""torch.utils.dlpack: ``to_dlpack`` and ``from_dlpack`` (zero-copy exchange with NumPy on the CPU and, on
'cuda', with CuPy, torch.cuda and JAX), and the ``DLDeviceType`` codes."""
from __future__ import annotations

import enum

from ..ops.utility import from_dlpack, to_dlpack  # noqa: F401  (re-exported: PyTorch's names)

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (dlpack.h)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
