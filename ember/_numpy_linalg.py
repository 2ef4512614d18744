"""NumPy kernels of the 'linalg' family for the raw 'cpu' namespace (re-exported by ember._numpy_ns).

Every name in ``__all__`` has a differentiable twin of the same name in ``graph_ns`` (registered in
``ember/ops/linalg.py``), so derivative rules can call ``xp.<name>`` in plain and in graph mode.
Decompositions return tuples of arrays in PyTorch's order (``linalg_svd`` gives U, S, Vh).
"""
from __future__ import annotations

import numpy as np

__all__ = ["einsum", "cross", "tri_mask", "eye_like", "linalg_inv", "linalg_det", "linalg_slogdet", "linalg_solve",
           "linalg_cholesky", "cholesky_solve", "linalg_qr", "linalg_eigh", "linalg_svd", "linalg_svdvals",
           "linalg_pinv", "matrix_exp", "solve_triangular"]


class LinAlgError(RuntimeError):
    """ember.linalg.LinAlgError: a RuntimeError, as PyTorch's torch.linalg.LinAlgError."""


LinAlgError.__module__ = "ember.linalg"


# ----- einsum -------------------------------------------------------------------------------------

def einsum(eq: str, *ops, sizes=None):
    """``np.einsum`` on an explicit equation (letters only, with '->'), extended so the derivative
    rules can use it: an output letter may repeat (the result is zero off that diagonal) or appear in
    no input (the result is broadcast along it; ``sizes`` gives its size)."""
    ins, out = eq.split("->")
    subs = ins.split(",")
    present = set(ins)
    uniq = "".join(dict.fromkeys(out))
    core = "".join(c for c in uniq if c in present)
    optimize = len(ops) > 2 or (len(ops) == 2 and ops[0].size * ops[1].size > 4096)
    with np.errstate(all="ignore"):
        r = np.einsum(ins + "->" + core, *ops, optimize="greedy" if optimize else False)
    if core == out:
        return r
    dim = dict(sizes or {})
    for s, op in zip(subs, ops):
        for c, n in zip(s, op.shape):
            if n != 1 or c not in dim:
                dim[c] = n
    full = np.zeros([dim[c] for c in out], dtype=r.dtype)
    view = np.einsum(out + "->" + uniq, full)   # a writeable view of the (diagonal) positions
    view[...] = r.reshape([dim[c] if c in present else 1 for c in uniq])
    return full


def cross(a, b, dim):
    return np.cross(a, b, axis=dim)


def tri_mask(x, upper: bool, diag: float = 1.0):
    """``x`` with everything outside its lower (upper) triangle zeroed and its diagonal times ``diag``."""
    n, m = x.shape[-2:]
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    mask = np.where(i == j, diag, ((j > i) if upper else (j < i)).astype(np.float64)).astype(x.dtype)
    return x * mask


def eye_like(x):
    """The identity matrix of the size of ``x``'s last dimension, in ``x``'s dtype (a constant)."""
    return np.eye(x.shape[-1], dtype=x.dtype)


# ----- decompositions and solvers -------------------------------------------------------------------

def _lapack(op, what):
    def deco(fn):
        def wrapped(*args, **kwargs):
            try:
                with np.errstate(all="ignore"):
                    return fn(*args, **kwargs)
            except np.linalg.LinAlgError:
                raise LinAlgError(f"{op}: {what}") from None
        wrapped.__name__ = fn.__name__
        wrapped.__doc__ = fn.__doc__
        return wrapped
    return deco


_SINGULAR = "The solver failed because the input matrix is singular."


@_lapack("linalg.inv", "The inversion could not be completed because the input matrix is singular.")
def linalg_inv(a):
    return np.linalg.inv(a)


def linalg_det(a):
    with np.errstate(all="ignore"):
        return np.linalg.det(a)


def linalg_slogdet(a):
    with np.errstate(all="ignore"):
        return np.linalg.slogdet(a)


def _is_vector_rhs(a, b) -> bool:
    # PyTorch's rule: B is a (batch of) vector(s) if it is 1-d, or has one dim less than A and A's batch shape.
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


@_lapack("torch.linalg.solve", _SINGULAR)
def linalg_solve(a, b, left=True):
    """X with A X = B (left) or X A = B; B may be a (batch of) vector(s), as in PyTorch."""
    if _is_vector_rhs(a, b):
        return np.linalg.solve(a, b[..., None])[..., 0]
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _not_pd(a):
    # the order of the first leading minor that is not positive-definite (PyTorch names it)
    for k in range(1, a.shape[-1] + 1):
        try:
            np.linalg.cholesky(a[..., :k, :k])
        except np.linalg.LinAlgError:
            return k
    return a.shape[-1]


def linalg_cholesky(a, upper=False):
    with np.errstate(all="ignore"):
        try:
            L = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input is "
                              f"not positive-definite (the leading minor of order {_not_pd(a)} is not "
                              f"positive-definite).") from None
    return np.swapaxes(L, -1, -2) if upper else L


@_lapack("torch.cholesky_solve", _SINGULAR)
def cholesky_solve(b, l, upper=False):
    """X with A X = B where A = L L^T (or U^T U); only the factor's triangle is read."""
    t = tri_mask(l, upper)
    a = np.matmul(np.swapaxes(t, -1, -2), t) if upper else np.matmul(t, np.swapaxes(t, -1, -2))
    return np.linalg.solve(a, b)


def linalg_qr(a, mode="reduced"):
    """(Q, R); mode 'r' gives an empty Q, as PyTorch."""
    with np.errstate(all="ignore"):
        if mode == "r":
            return np.zeros((0,), dtype=a.dtype), np.linalg.qr(a, mode="r")
        q, r = np.linalg.qr(a, mode=mode)
    return q, r


def linalg_eigh(a, UPLO="L"):
    with np.errstate(all="ignore"):
        return np.linalg.eigh(a, UPLO=UPLO)


@_lapack("linalg.svd", "The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       "too many repeated singular values.")
def linalg_svd(a, full_matrices=True):
    if a.size == 0:
        m, n = a.shape[-2:]
        k = min(m, n)
        b = a.shape[:-2]
        e = lambda r: np.broadcast_to(np.eye(r, dtype=a.dtype), b + (r, r)).copy()   # noqa: E731
        u = e(m) if full_matrices else np.zeros(b + (m, k), a.dtype)
        vh = e(n) if full_matrices else np.zeros(b + (k, n), a.dtype)
        return u, np.zeros(b + (k,), a.dtype), vh
    return np.linalg.svd(a, full_matrices=full_matrices)


@_lapack("linalg.svd", "The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       "too many repeated singular values.")
def linalg_svdvals(a):
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype)
    return np.linalg.svd(a, compute_uv=False)


def linalg_pinv(a, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse through the SVD; singular values at most max(atol, rtol * s_max) count as 0."""
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    u, s, vh = linalg_svd(a, full_matrices=False)
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else max(m, n) * np.finfo(a.dtype).eps
    smax = s[..., :1]
    tol = np.maximum(atol or 0.0, rtol * smax)
    with np.errstate(all="ignore"):
        sinv = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0).astype(a.dtype)
    return np.matmul(np.swapaxes(vh, -1, -2) * sinv[..., None, :], np.swapaxes(u, -1, -2))


# Padé approximant of degree 13 with scaling and squaring (Higham 2005), computed in float64.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    if a.size == 0:
        return a.copy()
    w = a.astype(np.float64)
    n = w.shape[-1]
    norm = np.max(np.sum(np.abs(w), axis=-2)) if w.size else 0.0
    s = 0 if not np.isfinite(norm) or norm <= _THETA13 else int(np.ceil(np.log2(norm / _THETA13)))
    w = w / 2.0 ** s
    b = _PADE13
    eye = np.eye(n)
    w2 = w @ w
    w4 = w2 @ w2
    w6 = w4 @ w2
    u = w @ (w6 @ (b[13] * w6 + b[11] * w4 + b[9] * w2) + b[7] * w6 + b[5] * w4 + b[3] * w2 + b[1] * eye)
    v = w6 @ (b[12] * w6 + b[10] * w4 + b[8] * w2) + b[6] * w6 + b[4] * w4 + b[2] * w2 + b[0] * eye
    with np.errstate(all="ignore"):
        try:
            r = np.linalg.solve(v - u, v + u)
        except np.linalg.LinAlgError:
            r = np.full(w.shape, np.nan)
        for _ in range(s):
            r = r @ r
    return r.astype(a.dtype)


@_lapack("linalg.solve_triangular", _SINGULAR)
def solve_triangular(a, b, upper, left=True, unitriangular=False):
    """X with A X = B (left) or X A = B, reading only A's triangle (and a unit diagonal if asked)."""
    t = tri_mask(a, upper, 0.0 if unitriangular else 1.0)
    if unitriangular:
        t = t + np.eye(a.shape[-1], dtype=a.dtype)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
