"""torch.svd_lowrank and torch.pca_lowrank: PyTorch's randomized low-rank SVD (Halko et al., 2009, Algorithm 5.1),
as torch/_lowrank.py writes it, on ember's randn (PyTorch's stream: the same seed gives the same basis), matmul,
linalg.qr and linalg.svd; dense tensors only (ember has no sparse layout). Differentiable through those ops."""
from __future__ import annotations

from ... import _dtype as D
from ..._tensor import Tensor
from .._registry import SUBMODULES
from ..random import randn

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating(A: Tensor) -> D.dtype:
    """The random basis' dtype: A's when floating or complex (PyTorch's), else float32."""
    return A.dtype if A.dtype in (D.float16, D.float32, D.float64) or A.dtype.is_complex else D.float32


def _H(t: Tensor) -> Tensor:
    """The conjugate transpose (the transpose of a real tensor: its node as before)."""
    return t.mH if t.dtype.is_complex else t.mT


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    qr = SUBMODULES["linalg"]["qr"]
    R = randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    X = A.matmul(R)
    if M is not None:
        X = X - M.matmul(R)
    Q = qr(X).Q
    for _ in range(niter):
        X = _H(A).matmul(Q)
        if M is not None:
            X = X - _H(M).matmul(Q)
        Q = qr(X).Q
        X = A.matmul(Q)
        if M is not None:
            X = X - M.matmul(Q)
        Q = qr(X).Q
    return Q


def _svd_lowrank(A: Tensor, q: int | None, niter: int, M: Tensor | None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = _H(A)
        if M is not None:
            M = _H(M)
    Q = _approximate_basis(A, q, 2 if niter is None else niter, M)
    B = _H(Q).matmul(A)
    if M is not None:
        B = B - _H(Q).matmul(M)
    U, S, Vh = SUBMODULES["linalg"]["svd"](B, full_matrices=False)
    V = _H(Vh)
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """(U, S, V) with A ~ U diag(S) V^H of rank ``q`` (of A - M when ``M`` is given), from ``niter`` subspace
    iterations on a random basis."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """(U, S, V) of the low-rank SVD of A with its column means subtracted (``center``): the principal
    directions are V's columns."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)
