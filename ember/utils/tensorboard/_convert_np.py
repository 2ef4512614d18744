"""Host-side NumPy copies of what a writer logs (tensors, arrays, Python scalars), as PyTorch's ``make_np``."""
from __future__ import annotations

import numpy as np   # host-side: event files are written from NumPy copies, as in PyTorch

from ..._tensor import Tensor
from ...ops import public as torch


def make_np(x) -> np.ndarray:
    """A NumPy array of ``x``: an array as is, a scalar as a 1-element array, a tensor detached (bfloat16 as
    float16, as PyTorch's; a 'meta' tensor, which has no values, as one random number, as PyTorch's)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)
        if x.dtype == torch.bfloat16:
            x = x.to(torch.float16)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")
