"""Host-side NumPy copies of what a writer logs (tensors, arrays, Python scalars), as PyTorch's ``make_np``."""
from __future__ import annotations

from typing import Any

import numpy as np   # host-side: event files are written from NumPy copies, as in PyTorch

from ..._tensor import Tensor
from ...ops import public as torch


def make_np(x: Any) -> np.ndarray:
    """A NumPy array of ``x``: a tensor detached and copied to the host (bfloat16, which NumPy lacks, as
    float16), an array as is, a Python or NumPy scalar as a 1-element array."""
    if isinstance(x, Tensor):
        if x.device.type == "meta":   # no values to copy: PyTorch logs one random number
            return np.random.randn(1)
        x = x.detach()
        return (x.to(torch.float16) if x.dtype == torch.bfloat16 else x).cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")
