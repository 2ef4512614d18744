"""Linear algebra, by family: ``products`` (matmul and its family, einsum, tensordot, kron, cross, the fused
addmm & co, matrix_exp, matrix_power), ``decompositions`` (cholesky, qr, eigh, svd, LU), ``solvers`` (solve,
solve_triangular, cholesky_solve, lu_solve, lstsq, inv, pinv) and ``norms`` (norm, cond, matrix_rank, det,
slogdet); ``_common`` holds their shared checks and helpers. Real dtypes only.

Every function registers itself (ember.*, Tensor methods, ``ember.linalg``, graph_ns); the kernels are the
device's (``ember/devices/cpu/linalg.py``), reached through ``xp`` or ``NAMESPACES``.
"""
from __future__ import annotations

from . import products, decompositions, solvers, norms
from .products import addmm, matmul, mm   # what the nn families call

# the modules that declare primitives (ember.ops.FAMILIES)
MODULES = (products, decompositions, solvers, norms)

__all__ = ["products", "decompositions", "solvers", "norms", "MODULES", "matmul", "mm", "addmm"]
