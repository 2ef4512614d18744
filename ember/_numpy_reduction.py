"""NumPy kernels of the 'reduction' family for the raw 'cpu' namespace (re-exported by ember._numpy_ns)."""
from __future__ import annotations

import numpy as np  # noqa: F401

__all__: list = []
