"""torch.lobpcg: the LOBPCG eigensolver (Knyazev's locally optimal block preconditioned conjugate gradient, in the
"basic" and "ortho" forms of Duersch et al. 2018), as torch/_lobpcg.py runs it, on ember's ops: matmul, norm,
linalg.eigh / cholesky / solve_triangular / qr and randn (PyTorch's stream: with no ``X`` the same seed gives the
same start). Dense tensors only (ember has no sparse layout).

Gradients: when A (or B) requires grad, PyTorch symmetrises A and wraps the solver in a custom Function whose
backward is the symmetric-eigenproblem adjoint (complete or partial eigenspace; B must be None), not the
derivative of the iterations; ember does the same (``LOBPCGAutogradFunction``)."""
from __future__ import annotations

import math

from ... import _dtype as D
from ..._tensor import Tensor
from ...autograd.function import Function
from .._registry import SUBMODULES
from ..creation import eye, zeros
from ..random import Generator, randn

__all__ = ["lobpcg"]


def _linalg(name: str):
    return SUBMODULES["linalg"][name]


def _floating(A: Tensor) -> D.dtype:
    return A.dtype if A.dtype in (D.float16, D.float32, D.float64) else D.float32


def _mm(A: Tensor | None, X: Tensor) -> Tensor:
    """A @ X, with A = None standing for the identity (B omitted)."""
    return X if A is None else A.matmul(X)


def _qform(A: Tensor | None, S: Tensor) -> Tensor:
    """S^T A S."""
    return S.mT.matmul(_mm(A, S))


def _symeig(A: Tensor, largest: bool | None = False) -> tuple[Tensor, Tensor]:
    """Eigenpairs of the symmetric A (upper triangle), ascending, or descending when ``largest``."""
    E, Z = _linalg("eigh")(A, UPLO="U")
    if largest:
        E, Z = E.flip(-1), Z.flip(-1)
    return E, Z


# ----- the backward of the symmetric eigenproblem (PyTorch's _symeig_backward) ------------------------------------

def _backward_complete(D_grad: Tensor, U_grad: Tensor, A: Tensor, Dv: Tensor, U: Tensor) -> Tensor:
    F = Dv.unsqueeze(-2) - Dv.unsqueeze(-1)
    F.diagonal(dim1=-2, dim2=-1).fill_(math.inf)
    F.pow_(-1)
    Ut = U.mT.contiguous()
    return U.matmul((D_grad.diag_embed() + Ut.matmul(U_grad) * F).matmul(Ut))


def _poly_from_roots(roots: Tensor) -> Tensor:
    """Coefficients (a_0, ..., a_n = 1) of prod (x - r_i), low order first."""
    order = roots.shape[-1]
    shape = list(roots.shape)
    shape[-1] += 2
    coeffs = roots.new_zeros(shape)
    coeffs[..., 0] = 1
    coeffs[..., -1] = 1
    for i in range(1, order + 1):
        new = coeffs.clone() if roots.requires_grad else coeffs
        out = new.narrow(-1, order - i, i + 1)
        out -= roots.narrow(-1, i - 1, 1) * coeffs.narrow(-1, order - i + 1, i + 1)
        coeffs = new
    return coeffs.narrow(-1, 1, order + 1)


def _horner(poly: Tensor, x: Tensor, one: Tensor, step) -> Tensor:
    res = one.clone()
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = step(res, x, poly[..., k])
    return res


def _matrix_poly(poly: Tensor, x: Tensor) -> Tensor:
    def step(val, x, c):
        res = x.matmul(val)
        res.diagonal(dim1=-2, dim2=-1).add_(c.unsqueeze(-1))
        return res
    n = x.shape[-1]
    one = eye(n, n, dtype=x.dtype, device=x.device).view(*([1] * (x.dim() - 2)), n, n)
    return _horner(poly, x, one, step)


def _vector_poly(poly: Tensor, x: Tensor) -> Tensor:
    def step(val, x, c):
        return c.unsqueeze(-1).addcmul(x, val)
    return _horner(poly, x, x.new_ones(1).expand(x.shape), step)


def _backward_partial(D_grad: Tensor, U_grad: Tensor, A: Tensor, Dv: Tensor, U: Tensor, largest: bool) -> Tensor:
    """The adjoint when U spans only k < m eigenvectors: the part orthogonal to U is solved through the
    characteristic polynomial of Dv at A on a random orthogonal complement (a fresh default-seeded generator,
    as PyTorch, so it is deterministic)."""
    Ut = U.mT.contiguous()
    proj = -U.matmul(Ut)
    proj.diagonal(dim1=-2, dim2=-1).add_(1)
    gen = Generator(A.device)
    U_ortho = proj.matmul(randn((*A.shape[:-1], A.shape[-1] - Dv.shape[-1]), dtype=A.dtype, device=A.device,
                                generator=gen))
    U_ortho_t = U_ortho.mT.contiguous()
    chr_poly = _poly_from_roots(Dv)
    projected = U_grad
    series = projected.new_zeros(projected.shape)
    for k in range(1, chr_poly.shape[-1]):
        series += projected * _vector_poly(chr_poly[..., k:], Dv).unsqueeze(-2)
        projected = A.matmul(projected)
    at_A = U_ortho_t.matmul(_matrix_poly(chr_poly, A).matmul(U_ortho))
    sign = -1 if (largest and k % 2 == 1) else 1
    L = _linalg("cholesky")(sign * at_A)
    res = _backward_complete(D_grad, U_grad, A, Dv, U)
    res -= U_ortho.matmul(sign * U_ortho_t.matmul(series).cholesky_solve(L)).matmul(Ut)
    return res


def _symeig_backward(D_grad, U_grad, A, Dv, U, largest):
    if U.shape[-1] == U.shape[-2]:
        return _backward_complete(D_grad, U_grad, A, Dv, U)
    return _backward_partial(D_grad, U_grad, A, Dv, U, largest)


class LOBPCGAutogradFunction(Function):
    """lobpcg with the symmetric-eigenproblem gradient (PyTorch's LOBPCGAutogradFunction)."""

    @staticmethod
    def forward(ctx, A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
                tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
        A = A.contiguous()
        B = None if B is None else B.contiguous()
        E, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                       ortho_bparams)
        ctx.save_for_backward(A, B, E, U)
        ctx.largest = largest
        return E, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A, B, E, U = ctx.saved_tensors
        if A.dtype.is_complex or (B is not None and B.dtype.is_complex):
            raise ValueError("lobpcg.backward does not support complex input yet. Note that lobpcg.forward does "
                             "though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        largest = True if ctx.largest is None else ctx.largest
        grads = [None] * 14
        grads[0] = _symeig_backward(D_grad, U_grad, A, E, U, largest)
        return tuple(grads)


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None, n: int | None = None,
           iK: Tensor | None = None, niter: int | None = None, tol: float | None = None,
           largest: bool | None = None, method: str | None = None, tracker=None,
           ortho_iparams: dict | None = None, ortho_fparams: dict | None = None,
           ortho_bparams: dict | None = None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest, ``largest=False``) eigenpairs of the symmetric generalized problem
    A x = lambda B x (B positive definite, the identity when None), by LOBPCG from the start ``X`` (m x n, random
    normal when None), preconditioner ``iK``, at most ``niter`` steps (1000; -1 for no limit) to the relative
    residual ``tol``. ``method``: "ortho" (default) or "basic". ``tracker(worker)`` is called after each step.
    Returns (E, X): eigenvalues (k,) and eigenvectors (m, k), batched over A's leading dimensions."""
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return LOBPCGAutogradFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method, tracker,
                                            ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                   ortho_bparams)


def _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams, ortho_bparams):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating(A)
    if tol is None:
        tol = {D.float32: 1.2e-07, D.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    if A.dim() > 2:
        N = math.prod(A.shape[:-2])
        bA = A.reshape((N,) + tuple(A.shape[-2:]))
        bB = None if B is None else B.reshape((N,) + tuple(A.shape[-2:]))
        bX = None if X is None else X.reshape((N,) + tuple(X.shape[-2:]))
        bE = zeros((N, k), dtype=dtype, device=A.device)
        bXret = zeros((N, m, k), dtype=dtype, device=A.device)
        for i in range(N):
            X_ = randn((m, n), dtype=dtype, device=A.device) if bX is None else bX[i]
            if not (X_.dim() == 2 and tuple(X_.shape) == (m, n)):
                raise AssertionError(f"X_ shape mismatch: got {X_.shape}, expected {(m, n)}")
            iparams["batch_index"] = i
            worker = LOBPCG(bA[i], None if bB is None else bB[i], X_, iK, iparams, fparams, bparams, method, tracker)
            worker.run()
            bE[i] = worker.E[:k]
            bXret[i] = worker.X[:, :k]
        return bE.reshape(tuple(A.shape[:-2]) + (k,)), bXret.reshape(tuple(A.shape[:-2]) + (m, k))

    X = randn((m, n), dtype=dtype, device=A.device) if X is None else X
    if not (X.dim() == 2 and tuple(X.shape) == (m, n)):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    worker = LOBPCG(A, B, X, iK, iparams, fparams, bparams, method, tracker)
    worker.run()
    return worker.E[:k], worker.X[:, :k]


class LOBPCG:
    """The iteration state of one LOBPCG solve (PyTorch's worker class: a tracker sees it each step and may stop it
    with ``worker.bvars['force_stop'] = True``)."""

    def __init__(self, A, B, X, iK, iparams: dict, fparams: dict, bparams: dict, method: str, tracker) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = zeros((n,), dtype=X.dtype, device=X.device)
        self.R = zeros((m, n), dtype=X.dtype, device=X.device)
        self.S = zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars: dict = {}
        self.ivars: dict = {"istep": 0}
        self.fvars: dict = {"_": 0.0}
        self.bvars: dict = {"_": False}

    def __str__(self) -> str:
        lines = ["LOBPCG:"] + [f"  {name}={getattr(self, name)}" for name in
                               ("iparams", "fparams", "bparams", "ivars", "fvars", "bvars", "tvars", "A", "B", "iK",
                                "X", "E")]
        return "".join(line + "\n" for line in lines)

    def update(self) -> None:
        """One step (the first also measures the norms used by the convergence test)."""
        if self.ivars["istep"] == 0:
            X_norm = float(self.X.norm())
            iX_norm = X_norm ** -1
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(_mm(self.A, self.X).norm()) * iX_norm
            self.fvars["B_norm"] = float(_mm(self.B, self.X).norm()) * iX_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """The leading eigenpairs whose backward-stable relative residual is below tol (Duersch et al. 4.3)."""
        prev = self.ivars["converged_count"]
        E, X, R = self.E, self.X, self.R
        rerr = R.norm(2, (0,)) / (X.norm(2, (0,)) * (self.fvars["A_norm"] + E[:X.shape[-1]].abs()
                                                      * self.fvars["B_norm"]))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        if count < prev:
            raise AssertionError(f"the number of converged eigenpairs (was {prev}, got {count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self) -> bool:
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self) -> None:
        self.update()
        if self.tracker is not None:
            self.call_tracker()
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.call_tracker()

    def call_tracker(self) -> None:
        self.tracker(self)

    def _update_basic(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)
            self.X[:] = self.X.matmul(Ri.matmul(Z))
            self.E[:] = E
            np_ = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            W = _mm(self.iK, self.R)
        else:
            S_ = self.S[:, nc:ns]
            Ri = self._get_rayleigh_ritz_transform(S_)
            E_, Z = _symeig(_qform(_qform(self.A, S_), Ri), largest)
            self.X[:, nc:] = S_.matmul(Ri.matmul(Z[:, :n - nc]))
            self.E[nc:] = E_[:n - nc]
            P = S_.matmul(Ri.matmul(Z[:, n:2 * n - nc]))
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            self.S[:, n:n + np_] = P
            W = _mm(self.iK, self.R[:, nc:])
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _update_ortho(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            _E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)
            self.X = self.X.matmul(Ri.matmul(Z))
            self.update_residual()
            np_ = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)
        else:
            S_ = self.S[:, nc:ns]
            E_, Z = _symeig(_qform(self.A, S_), largest)
            self.X[:, nc:] = S_.matmul(Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            P = S_.matmul(Z[:, n - nc:].matmul(_linalg("qr")(Z[:n - nc, n - nc:].mT).Q))
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S: Tensor) -> Tensor:
        """Ri (upper triangular) with Ri^T S^T B S Ri = I, from the Cholesky factor of the diagonally scaled
        S^T B S: reduces S^T A S C = S^T B S C E to a standard problem."""
        SBS = _qform(self.B, S)
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = _linalg("cholesky")((SBS * d_row) * d_col, upper=True)
        return _linalg("solve_triangular")(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U: Tensor, drop: bool, tau: float) -> Tensor:
        """B-orthonormal columns spanning U's (Duersch's Algorithm 4; ``drop``: leave out the columns whose
        contribution is below tau)."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nz = (d.abs() != 0.0).nonzero().reshape(-1)
        if nz.shape[0] < d.shape[0]:
            U = U[:, nz]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        E, Z = _symeig((UBU * d_col) * d_col.mT)
        t = tau * float(E.abs().max())
        if drop:
            keep = (E > t).nonzero().reshape(-1)
            E, Z, d_col = E[keep], Z[:, keep], d_col[keep]
        else:
            E[(E < t).nonzero().reshape(-1)] = t
        return (U * d_col.mT).matmul(Z * E ** -0.5)

    def _get_ortho(self, U: Tensor, V: Tensor) -> Tensor:
        """B-orthonormal columns spanning U's part B-orthogonal to V (Duersch's Algorithm 3, or 6 with
        ortho_use_drop); empty when U lies in V's span."""
        m = self.iparams["m"]
        tau_ortho = self.fparams["ortho_tol"]
        tau_drop = self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        i_max, j_max = self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [key for key in self.fvars if key.startswith("ortho_") and key.endswith("_rerr")]:
            del self.fvars[key]
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = _mm(self.B, V).norm()
        BU = _mm(self.B, U)
        VBU = V.mT.matmul(BU)
        i = j = 0
        for i in range(i_max):
            U = U - V.matmul(VBU)
            drop, tau_svqb = False, tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)
                    drop, tau_svqb = True, tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)
                if U.numel() == 0:
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _mm(self.B, U)
                UBU = U.mT.matmul(BU)
                U_norm, BU_norm = U.norm(), BU.norm()
                R = UBU - eye(UBU.shape[-1], device=UBU.device, dtype=UBU.dtype)
                rerr = float(R.norm()) * float(BU_norm * U_norm) ** -1
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = V.mT.matmul(BU)
            rerr = float(VBU.norm()) * float(BV_norm * U.norm()) ** -1
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                if self.B is None:
                    raise AssertionError("B must not be None")
                raise ValueError(f"Overdetermined shape of U: #B-cols(={self.B.shape[-1]}) >= "
                                 f"#U-cols(={U.shape[-1]}) + #V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U
