"""NumPy kernels of the 'fft' family: PyTorch's three FFT primitives ``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r``
(re-exported by ember.devices.cpu.namespace), on NumPy's pocketfft (``numpy.fft``; NumPy 2 computes complex64 in
single precision, as PyTorch's CPU FFT does).

``normalization`` is PyTorch's ``fft_norm_mode``: 0 none, 1 by 1/sqrt(n), 2 by 1/n, whatever the direction (n: the
product of the signal sizes of the transformed dims). ``_NUMPY_NORM`` turns it into NumPy's direction-dependent
``norm`` names, so the scaling happens inside pocketfft as in PyTorch's.
"""
from __future__ import annotations

import numpy as np

__all__ = ["fft_c2c", "fft_r2c", "fft_c2r"]

# fft_norm_mode -> (NumPy's norm for a forward transform, for an inverse one)
_NUMPY_NORM = {0: ("backward", "forward"), 1: ("ortho", "ortho"), 2: ("forward", "backward")}


def fft_c2c(a, dim: tuple, normalization: int, forward: bool):
    """The complex-to-complex transform of ``a`` over ``dim`` (forward: exp(-2 pi i jk/n); else exp(+...))."""
    if forward:
        return np.fft.fftn(a, axes=dim, norm=_NUMPY_NORM[normalization][0])
    return np.fft.ifftn(a, axes=dim, norm=_NUMPY_NORM[normalization][1])


def fft_r2c(a, dim: tuple, normalization: int, onesided: bool):
    """The forward transform of a real ``a`` over ``dim``; ``onesided``: the last dim of ``dim`` keeps only its
    n // 2 + 1 non-redundant frequencies."""
    norm = _NUMPY_NORM[normalization][0]
    if onesided:
        return np.fft.rfftn(a, axes=dim, norm=norm)
    return np.fft.fftn(a, axes=dim, norm=norm)


def fft_c2r(a, dim: tuple, normalization: int, last_dim_size: int):
    """The inverse transform over ``dim`` of a Hermitian-symmetric signal given by its onesided half (the last dim
    of ``dim``): a real array whose last transformed dim has ``last_dim_size`` points."""
    s = [a.shape[d] for d in dim[:-1]] + [last_dim_size]
    return np.fft.irfftn(a, s=s, axes=dim, norm=_NUMPY_NORM[normalization][1])
