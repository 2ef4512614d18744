"""NumPy kernels of the nn normalisation family (part of the raw namespace ``ember.devices.cpu.namespace``)."""
from __future__ import annotations

import numpy as np

__all__ = ["norm_xhat", "row_pairs"]

_add = np.add.reduce


def norm_xhat(x, view, axes, eps):
    """``((x - mean) * rstd, rstd)`` over ``axes`` of ``x`` viewed as ``view`` (None: as it is), in x's dtype.

    Sums accumulate in float64 without a float64 copy of ``x``, and the mean is removed in two steps: first its
    rounding to x's dtype (the subtraction is exact for values near it), then the small remainder. So an input
    with a large offset (mean 1e4 in float32) keeps its precision, as if computed in float64."""
    xg = x if view is None else x.reshape(view)
    with np.errstate(all="ignore"):
        if xg.size == 0:   # nothing to normalise: NaN statistics, as PyTorch's, without NumPy's warning
            shape = tuple(1 if i in axes else s for i, s in enumerate(xg.shape))
            rstd = np.full(shape, np.nan, dtype=x.dtype)
            return xg * rstd, rstd
        # np.mean(..., dtype=float64) is this sum divided by the count in place: the same bits, less Python
        m = _add(xg, axis=axes, dtype=np.float64, keepdims=True)
        n = xg.size // m.size   # the count each sum is over
        m /= n
        xc = xg - m.astype(x.dtype)
        d = _add(xc, axis=axes, dtype=np.float64, keepdims=True)
        d /= n
        var = _add(np.square(xc), axis=axes, dtype=np.float64, keepdims=True)
        var /= n
        var -= d * d
        rstd = (1.0 / np.sqrt(np.maximum(var, 0.0) + eps)).astype(x.dtype)
        xc -= d.astype(x.dtype)   # (xc is this call's own: the result is written over it)
        xc *= rstd
        return xc, rstd


def row_pairs(x) -> tuple:
    """The pairs ``(i, j)``, ``i < j``, of the rows of the 2-d ``x`` in row-major order (pdist's): two int64 index
    vectors. Not differentiable."""
    return np.triu_indices(x.shape[0], 1)
