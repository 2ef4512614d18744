"""Complex-number kernels: conjugate, real and imaginary parts (views), angle, and the moves between a complex
array and its (..., 2) real view."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["conj", "real", "imag", "angle", "view_as_real", "view_as_complex", "make_complex", "polar"]

_REAL = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX = {v: k for k, v in _REAL.items()}


def conj(a):
    """The conjugate of a complex array (a new array); a real array itself."""
    return np.conjugate(a) if a.dtype.kind == "c" else a


def real(a):
    """The real parts of a complex array, as a view of it; a real array itself."""
    return a.real


def imag(a):
    """The imaginary parts of a complex array, as a view of it (complex only)."""
    return a.imag


def angle(a):
    """The argument of each element: atan2(imag, real) for complex; for real ones PyTorch's pi where negative,
    else 0 (-0.0 gives 0, nan stays nan)."""
    if a.dtype.kind == "c":
        return np.arctan2(a.imag, a.real)
    return np.where(a < 0, a.dtype.type(math.pi), np.where(a != a, a, a.dtype.type(0)))


def view_as_real(a):
    """A complex array's (..., 2) real view: the real and imaginary part of each element side by side."""
    return a[..., None].view(_REAL[a.dtype])


def view_as_complex(a):
    """A (..., 2) real array seen as complex (the last dimension contiguous; the caller checks)."""
    return a.view(_COMPLEX[a.dtype])[..., 0]


def make_complex(re, im):
    """``re + i im`` element by element (broadcast), without NumPy's inf * 1j = nan + inf j."""
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, _COMPLEX[re.dtype])
    out.real = re
    out.imag = im
    return out


def polar(r, theta):
    """``r (cos theta + i sin theta)``, as PyTorch's polar."""
    return make_complex(r * np.cos(theta), r * np.sin(theta))
