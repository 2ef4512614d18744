"""Decompositions: cholesky, qr, eigh / eigvalsh, svd / svdvals, and LU (lu_factor, lu_factor_ex, lu, lu_unpack,
the legacy lu), with the legacy forms torch.cholesky, torch.qr and torch.svd.

A decomposition with several outputs is one primitive per output, each computing the decomposition
(PyTorch's backward is linear in the output gradients, so the per-output VJPs add up to it); linalg.svd's
three outputs then share one node (_SvdNode, PyTorch's LinalgSvdBackward0), as its backward checks gU and gVh
together. Rules call
the decompositions again through ``xp`` (``xp.linalg_eigh``), which under ``create_graph`` are the
differentiable public functions: every derivative is differentiable again.
"""
from __future__ import annotations

from ...autograd import _batching

import warnings

from ...devices import NAMESPACES
from ..._tensor import Tensor, _new, make
from ...autograd.graph import NODE_OBSERVERS, Node, _seq, modified_message
from ..._state import fwd_state as _fwd_state, track_tangent
from ...autograd._primitive import FREED, FREED_MESSAGE, _tangent_holder, apply, apply_saving, defprim, graph_ns
from .._registry import graph_raw, register
from ..._util import check_bool, check_tensor, dtype_word, return_type
from ..shape import cat
from ..sorting import _NOT_YET, _no_derivative
from ._common import (_bf16_kernel, _check_float, _check_matrix, _diag_embed, _diagonal, _eye, _i_imag, _is_cx, _mH, _mT, _no_out,
                      _node, raise_info)


# ======================================================================================================
# cholesky
# ======================================================================================================

def _chol_vjp(xp, g, out, a, upper):
    L, gL = (_mT(xp, out), _mT(xp, g)) if upper else (out, g)
    phi = xp.tri_mask(xp.matmul(_mT(xp, L), gL), False, 0.5)
    x = xp.solve_triangular(_mT(xp, L), phi, upper=True)                 # L^-T phi
    ga = xp.solve_triangular(L, x, upper=False, left=False)             # L^-T phi L^-1
    return (ga + _mT(xp, ga)) * 0.5


def _chol_jvp(xp, t, out, a, upper):
    L = _mT(xp, out) if upper else out
    x = xp.solve_triangular(L, t, upper=False)                          # L^-1 dA
    x = xp.solve_triangular(_mT(xp, L), x, upper=True, left=False)      # L^-1 dA L^-T
    dL = xp.matmul(L, xp.tri_mask(x, False, 0.5))
    return _mT(xp, dL) if upper else dL


def _chol_vjp_cx(xp, g, out, a, upper):
    """PyTorch's cholesky_backward for complex A = L L^H: L^-H (Phi + tril(Phi, -1)^H) / 2 L^-1, Phi = tril(L^H gL)."""
    L, gL = (_mH(xp, out), _mH(xp, g)) if upper else (out, g)
    phi = xp.tril(xp.matmul(_mH(xp, L), gL))
    phi = 0.5 * (phi + _mH(xp, xp.tril(phi, -1)))
    x = xp.solve_triangular(_mH(xp, L), phi, upper=True)
    return xp.solve_triangular(L, x, upper=False, left=False)


def _chol_jvp_cx(xp, t, out, a, upper):
    # PyTorch's cholesky_jvp: dL = L tril_half(L^-1 dA L^-H)
    L = _mH(xp, out) if upper else out
    x = xp.solve_triangular(L, t, upper=False)
    x = xp.solve_triangular(_mH(xp, L), x, upper=True, left=False)
    dL = xp.matmul(L, xp.tri_mask(x, False, 0.5))
    return _mH(xp, dL) if upper else dL


_CHOL_CX = (_chol_vjp_cx, _chol_jvp_cx)

cholesky_p = defprim("cholesky", lambda xp, a, upper: xp.linalg_cholesky(a, upper),
                     node="LinalgCholeskyExBackward0", vjp=_chol_vjp, jvp=_chol_jvp, saves_out=True, batch=True,
                     complex=_CHOL_CX)


@register(submodule="linalg", module=False, name="cholesky", graph="linalg_cholesky")
def linalg_cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """Cholesky factor L (A = L L^T) of a symmetric positive-definite matrix, reading A's lower triangle;
    ``upper=True`` returns L^T."""
    _no_out(out, "linalg.cholesky")
    _check_matrix(A, "linalg.cholesky")
    upper = check_bool(upper, "linalg.cholesky", "upper")
    return apply(cholesky_p, (A,), {"upper": upper})


cholesky_ex_p = defprim("cholesky_ex", lambda xp, a, upper: xp.linalg_cholesky_ex(a, upper)[0],
                        node="LinalgCholeskyExBackward0", vjp=_chol_vjp, jvp=_chol_jvp, saves_out=True, batch=True,
                        complex=_CHOL_CX)
graph_raw("linalg_cholesky_ex")
CholeskyExResult = return_type("linalg_cholesky_ex", ("L", "info"))


@register(submodule="linalg", module=False, name="cholesky_ex")
def linalg_cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out=None):
    """(L, info): ``linalg.cholesky`` with info 0, or the order of the first leading minor that is not
    positive-definite (that matrix's L is LAPACK's partial factor) instead of an error unless ``check_errors``."""
    _no_out(out, "linalg.cholesky_ex")
    _check_matrix(A, "linalg.cholesky_ex")
    upper = check_bool(upper, "linalg_cholesky_ex", "upper")
    check_errors = check_bool(check_errors, "linalg_cholesky_ex", "check_errors")
    info = NAMESPACES[type(A._data)].linalg_cholesky_ex(A._data, upper)[1]
    if check_errors:
        raise_info(info, "linalg.cholesky_ex", lambda k: f"The factorization could not be completed because the "
                   f"input is not positive-definite (the leading minor of order {k} is not positive-definite).")
    return CholeskyExResult(apply(cholesky_ex_p, (A,), {"upper": upper}), make(info))


@register(method=True)
def cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """Deprecated form of ``linalg.cholesky`` (with PyTorch's warning)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    _no_out(out, "cholesky")
    _check_matrix(input, "linalg.cholesky")
    upper = check_bool(upper, "cholesky", "upper")
    return apply(cholesky_p, (input,), {"upper": upper}, _node("CholeskyBackward0"))


# ======================================================================================================
# qr
# ======================================================================================================

def _copyltu(xp, m):
    # the symmetric (Hermitian, with the real part of the diagonal) matrix with m's lower triangle
    if _is_cx(m):
        low = xp.tri_mask(m, False, 0.0)
        d = xp.real(_diagonal(xp, m))
        return low + _mH(xp, low) + _diag_embed(xp, xp.make_complex(d, xp.zeros_like(d)))
    low = xp.tri_mask(m, False, 1.0)
    return low + _mT(xp, xp.tri_mask(m, False, 0.0))


def _qr_vjp_tall(xp, gq, gr, q, r):
    """m >= n: gA = (gQ + Q copyltu(M)) R^-H with M = R gR^H - gQ^H Q."""
    m = 0
    if gr is not None:
        m = xp.matmul(r, _mH(xp, gr))
    if gq is not None:
        m = m - xp.matmul(_mH(xp, gq), q)
    b = xp.matmul(q, _copyltu(xp, m))
    if gq is not None:
        b = b + gq
    return xp.solve_triangular(_mH(xp, r), b, upper=False, left=False)


def _qr_vjp(xp, gq, gr, a, mode):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    m, n = a.shape[-2:]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    q, r = xp.linalg_qr(a, mode)
    if m >= n:
        return _qr_vjp_tall(xp, gq, gr, q, r)
    # m < n: A = [X | Y], R = [U | V] with X = Q U square
    u = xp.getitem(r, (Ellipsis, slice(None), slice(0, m)))
    gy = None
    if gr is not None:
        gu = xp.getitem(gr, (Ellipsis, slice(None), slice(0, m)))
        gv = xp.getitem(gr, (Ellipsis, slice(None), slice(m, None)))
        y = xp.getitem(a, (Ellipsis, slice(None), slice(m, None)))
        gy = xp.matmul(q, gv)
        extra = xp.matmul(y, _mH(xp, gv))
        gq = extra if gq is None else gq + extra
    else:
        gu = None
    gx = _qr_vjp_tall(xp, gq, gu, q, u)
    if gy is None:
        gy = xp.zeros_like(xp.getitem(a, (Ellipsis, slice(None), slice(m, None))))
    return xp.cat([gx, gy], -1)


def _qr_jvp_square(xp, da, q, r):
    """m >= n: (dQ, dR) with C = Q^H dA R^-1, Omega = tril(C,-1) - tril(C,-1)^H (+ i Im diag(C): R's diagonal is
    real), dR = (C - Omega) R."""
    dar = xp.solve_triangular(r, da, upper=True, left=False)            # dA R^-1
    c = xp.matmul(_mH(xp, q), dar)
    low = xp.tri_mask(c, False, 0.0)
    omega = low - _mH(xp, low)
    if _is_cx(c):
        omega = omega + _diag_embed(xp, _i_imag(xp, _diagonal(xp, c)))
    dr = xp.matmul(c - omega, r)
    dq = dar - xp.matmul(q, c - omega)
    return dq, dr


def _qr_jvp(xp, t, a, mode, which):
    m, n = a.shape[-2:]
    q, r = xp.linalg_qr(a, mode)
    if m >= n:
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        return _qr_jvp_square(xp, t, q, r)[which]
    u = xp.getitem(r, (Ellipsis, slice(None), slice(0, m)))
    v = xp.getitem(r, (Ellipsis, slice(None), slice(m, None)))
    dx = xp.getitem(t, (Ellipsis, slice(None), slice(0, m)))
    dy = xp.getitem(t, (Ellipsis, slice(None), slice(m, None)))
    dq, du = _qr_jvp_square(xp, dx, q, u)
    if which == 0:
        return dq
    dv = xp.matmul(_mH(xp, q), dy - xp.matmul(dq, v))
    return xp.cat([du, dv], -1)


qr_q_p = defprim("qr_Q", lambda xp, a, mode: xp.linalg_qr(a, mode)[0],
                 node="LinalgQrBackward0", vjp=lambda xp, g, out, a, mode: _qr_vjp(xp, g, None, a, mode),
                 jvp=lambda xp, t, out, a, mode: _qr_jvp(xp, t, a, mode, 0), saves=(0,), complex="own")
qr_r_p = defprim("qr_R", lambda xp, a, mode: xp.linalg_qr(a, mode)[1],
                 node="LinalgQrBackward0", vjp=lambda xp, g, out, a, mode: _qr_vjp(xp, None, g, a, mode),
                 jvp=lambda xp, t, out, a, mode: _qr_jvp(xp, t, a, mode, 1), saves=(0,), batch=True, complex="own")

QRResult = return_type("linalg_qr", ("Q", "R"))
QRLegacy = return_type("qr", ("Q", "R"))


@register(submodule="linalg", module=False, name="qr", graph="linalg_qr")
def linalg_qr(A: Tensor, mode: str = "reduced", *, out=None):
    """QR decomposition (Householder, LAPACK's signs); ``mode`` 'reduced', 'complete' or 'r'."""
    _no_out(out, "linalg.qr")
    _check_matrix(A, "linalg.qr", square=False, later=True)
    if not isinstance(mode, str):
        raise TypeError(f"linalg_qr(): argument 'mode' (position 2) must be str, not {type(mode).__name__}")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    _bf16_kernel(A, "qr")
    return QRResult(apply(qr_q_p, (A,), {"mode": mode}), apply(qr_r_p, (A,), {"mode": mode}))


@register(method=True)
def qr(input: Tensor, some: bool = True, *, out=None):
    """Deprecated form of ``linalg.qr`` (``some=False`` is mode 'complete')."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.", UserWarning, stacklevel=2)
    check_tensor(input, "qr")
    some = check_bool(some, "qr", "some")
    return QRLegacy(*linalg_qr(input, "reduced" if some else "complete", out=out))


# ======================================================================================================
# eigh, eigvalsh
# ======================================================================================================

def _eigh_gap(xp, lam):
    # E_ij = lambda_j - lambda_i, with ones on the diagonal (so dividing by it leaves the diagonal alone)
    e = xp.unsqueeze(lam, -2) - xp.unsqueeze(lam, -1)
    return e + _eye(xp, e)


def _phase_check(xp, vhgv, op, what="eigenvectors", tail="depends on this quantity, so it is ill-defined"):
    """PyTorch's check that a loss does not depend on the phases of complex eigen/singular vectors:
    Im(diag(V^H gV)) close to 0 (allclose, rtol = atol = 1e-2: a NaN fails it)."""
    d = vhgv._data if isinstance(vhgv, Tensor) else vhgv
    raw = NAMESPACES[type(d)]
    if not bool(raw.all(raw.abs(raw.imag(raw.diagonal(d, 0, d.ndim - 2, d.ndim - 1))) <= 1e-2)):
        raise RuntimeError(f"{op}: The {what} in the complex case are specified up to multiplication by e^{{i phi}}. "
                           f"The specified loss function {tail}.")


def _eigh_vjp(xp, gl, gv, a, uplo, v=None):
    # v: the saved eigenvectors (the V node's rule), so that under create_graph a second-order gradient reaches the
    # forward's V node whole, as PyTorch's (its share is gauge-invariant only whole: the phase check below)
    if v is None:
        lam, v = xp.linalg_eigh(a, uplo)
    else:
        lam = xp.linalg_eigh(a, uplo)[0]
    if gv is None:
        if _is_cx(v) and not _is_cx(gl):   # real eigenvalues' gradient (a real node's, under create_graph)
            gl = xp.make_complex(gl, xp.zeros_like(gl))
        inner = _diag_embed(xp, gl)
    else:
        vhgv = xp.matmul(_mH(xp, v), gv)
        if _is_cx(vhgv):
            _phase_check(xp, vhgv, "linalg_eigh_backward")
        inner = (vhgv - _mH(xp, vhgv)) * 0.5 / _eigh_gap(xp, lam)
        if gl is not None:
            inner = inner + _diag_embed(xp, gl)
    return xp.matmul(xp.matmul(v, inner), _mH(xp, v))


def _eigh_jvp(xp, t, a, uplo, which):
    lam, v = xp.linalg_eigh(a, uplo)
    p = xp.matmul(xp.matmul(_mH(xp, v), t), v)
    if which == 0:
        return xp.real(_diagonal(xp, p)) if _is_cx(p) else _diagonal(xp, p)
    off = p / _eigh_gap(xp, lam)
    off = off - off * _eye(xp, off)
    return xp.matmul(v, off)


eigh_vals_p = defprim("eigh_L", lambda xp, a, uplo: xp.linalg_eigh(a, uplo)[0],
                      node="LinalgEighBackward0", vjp=lambda xp, g, out, a, uplo: _eigh_vjp(xp, g, None, a, uplo),
                      jvp=lambda xp, t, out, a, uplo: _eigh_jvp(xp, t, a, uplo, 0), saves=(0,), batch=True,
                      complex="own")
eigh_vecs_p = defprim("eigh_V", lambda xp, a, uplo: xp.linalg_eigh(a, uplo)[1],
                      node="LinalgEighBackward0", vjp=lambda xp, g, out, a, uplo: _eigh_vjp(xp, None, g, a, uplo, out),
                      jvp=lambda xp, t, out, a, uplo: _eigh_jvp(xp, t, a, uplo, 1), saves=(0,), saves_out=True,
                      batch=True,
                      complex="own")

EighResult = return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))


def _check_uplo(UPLO, op):
    if not isinstance(UPLO, str):
        raise TypeError(f"{op}(): argument 'UPLO' (position 2) must be str, not {type(UPLO).__name__}")
    if UPLO.upper() not in ("L", "U") or len(UPLO) != 1:
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


@register(submodule="linalg", module=False, name="eigh", graph="linalg_eigh")
def linalg_eigh(A: Tensor, UPLO: str = "L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix, reading one triangle."""
    _no_out(out, "linalg.eigh")
    _check_matrix(A, "linalg.eigh")
    uplo = _check_uplo(UPLO, "linalg_eigh")
    return EighResult(apply(eigh_vals_p, (A,), {"uplo": uplo}), apply(eigh_vecs_p, (A,), {"uplo": uplo}))


@register(submodule="linalg", module=False, name="eigvalsh")
def linalg_eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    """Eigenvalues (ascending) of a symmetric matrix."""
    _no_out(out, "linalg.eigvalsh")
    _check_matrix(A, "linalg.eigvalsh")
    return apply(eigh_vals_p, (A,), {"uplo": _check_uplo(UPLO, "linalg_eigvalsh")})


# ======================================================================================================
# eig, eigvals: general square matrices, complex results (PyTorch's linalg_eig_backward / linalg_eig_jvp)
# ======================================================================================================

def _eig_vjp(xp, gl, gv, a, v=None):
    """gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H, E_ij = L_j - L_i; each output's
    node gives its own share (v: the V node's saved eigenvectors, see _eigh_vjp)."""
    if v is None:
        lam, v = xp.linalg_eig(a)
    else:
        lam = xp.linalg_eig(a)[0]
    vh = _mH(xp, v)
    if gv is None:
        ret = _diag_embed(xp, gl)
    else:
        vhgv = xp.matmul(vh, gv)
        _phase_check(xp, vhgv, "linalg_eig_backward")
        # onto the tangent space of matrices with columns of norm 1
        vhgv = vhgv - xp.matmul(vh, v * xp.unsqueeze(xp.real(_diagonal(xp, vhgv)), -2))
        lc = xp.conj(lam)
        e = xp.unsqueeze(lc, -2) - xp.unsqueeze(lc, -1)
        ret = vhgv / (e + _eye(xp, e))
    return xp.linalg_solve(vh, xp.matmul(ret, vh))


def _eig_jvp(xp, t, a, which):
    lam, v = xp.linalg_eig(a)
    if not _is_cx(t):
        t = xp.make_complex(t, xp.zeros_like(t))
    dp = xp.linalg_solve(v, xp.matmul(t, v))                              # V^-1 dA V
    if which == 0:
        return _diagonal(xp, dp)
    e = xp.unsqueeze(lam, -2) - xp.unsqueeze(lam, -1)
    x = dp / (e + _eye(xp, e))
    dv = xp.matmul(v, x - x * _eye(xp, x))
    # keep the columns' norm 1 (to first order)
    return dv - v * xp.unsqueeze(xp.real(_diagonal(xp, xp.matmul(_mH(xp, v), dv))), -2)


eig_vals_p = defprim("eig_L", lambda xp, a: xp.linalg_eig(a)[0], node="LinalgEigBackward0",
                     vjp=lambda xp, g, out, a: _eig_vjp(xp, g, None, a),
                     jvp=lambda xp, t, out, a: _eig_jvp(xp, t, a, 0), saves=(0,), complex="own")
eig_vecs_p = defprim("eig_V", lambda xp, a: xp.linalg_eig(a)[1], node="LinalgEigBackward0",
                     vjp=lambda xp, g, out, a: _eig_vjp(xp, None, g, a, out),
                     jvp=lambda xp, t, out, a: _eig_jvp(xp, t, a, 1), saves=(0,), saves_out=True, complex="own")

EigResult = return_type("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check_eig(A, op):
    check_tensor(A, op.split(".")[-1], "A")
    k = A._data.dtype
    if k.kind in "iub":
        raise RuntimeError(f"Unknown Complex ScalarType for {dtype_word(k)}")
    _check_matrix(A, op)


@register(submodule="linalg", module=False, name="eig", graph="linalg_eig")
def linalg_eig(A: Tensor, *, out=None):
    """Eigenvalues and eigenvectors of a general square matrix, complex (LAPACK's geev: eigenvectors of norm 1
    whose largest component is real; their order and phase are LAPACK's)."""
    _no_out(out, "linalg.eig")
    _check_eig(A, "linalg.eig")
    raw = NAMESPACES[type(A._data)]
    if not bool(raw.all(raw.isfinite(A._data))):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    return EigResult(apply(eig_vals_p, (A,)), apply(eig_vecs_p, (A,)))


@register(submodule="linalg", module=False, name="eigvals")
def linalg_eigvals(A: Tensor, *, out=None) -> Tensor:
    """The eigenvalues of a general square matrix, complex."""
    _no_out(out, "linalg.eigvals")
    _check_eig(A, "linalg.eigvals")
    return apply(eig_vals_p, (A,))



# ======================================================================================================
# svd, svdvals
# ======================================================================================================

def _svd_phase_check(uhgu, vhgv) -> None:
    """PyTorch's svd_backward check that the loss does not depend on the phases of the complex singular vectors
    (invariant under (U, V) -> (U L, V L), L = diag(e^{i theta})): Im diag(skew(U^H gU)) allclose to
    -Im diag(skew(V^H gV)), rtol = atol = 1e-2 (a NaN fails it). Either may be None (its output got no
    gradient: zeros)."""
    ims = []
    for x in (uhgu, vhgv):
        if x is not None:
            d = x._data if isinstance(x, Tensor) else x
            raw = NAMESPACES[type(d)]
            ims.append(raw.imag(raw.diagonal(d, 0, d.ndim - 2, d.ndim - 1)))
    a = ims[0] if uhgu is not None else 0.0
    b = -ims[-1] if vhgv is not None else 0.0
    raw = NAMESPACES[type(ims[0])]
    if not bool(raw.all(raw.abs(a - b) <= 1e-2 + 1e-2 * raw.abs(b + raw.zeros_like(ims[0])))):
        raise RuntimeError("svd_backward: The singular vectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
                           "making it ill-defined.")


def _svd_vjp(xp, gu, gs, gvh, a, full, usv=None):
    """PyTorch's svd_backward: the gradient through U, S and Vh of the reduced SVD (complex: conjugate
    transposes, U's phase term diag(skew(U^H gU)) / 2S, and the check that the loss does not depend on the
    singular vectors' phases, which needs gU and gVh together: see _SvdNode). ``usv``: the forward's outputs
    (else the SVD is computed again)."""
    m, n = a.shape[-2:]
    k = min(m, n)
    if usv is None:
        u, s, vh = xp.linalg_svd(a, False)
    else:
        u, s, vh = usv
        if full:
            u = xp.getitem(u, (Ellipsis, slice(None), slice(0, k)))
            vh = xp.getitem(vh, (Ellipsis, slice(0, k), slice(None)))
    if full:
        if gu is not None:
            gu = xp.getitem(gu, (Ellipsis, slice(None), slice(0, k)))
        if gvh is not None:
            gvh = xp.getitem(gvh, (Ellipsis, slice(0, k), slice(None)))
    if gu is None and gvh is None:
        return xp.matmul(u * xp.unsqueeze(gs, -2), vh)
    v = _mH(xp, vh)
    gv = None if gvh is None else _mH(xp, gvh)
    s2 = s * s
    e = xp.unsqueeze(s2, -2) - xp.unsqueeze(s2, -1)
    e = e + _eye(xp, e)
    ret = 0
    uhgu = vhgv = None
    if gu is not None:
        uhgu = xp.matmul(_mH(xp, u), gu)
        uhgu = uhgu - _mH(xp, uhgu)
        ret = uhgu * xp.unsqueeze(s, -2)
    if gv is not None:
        vhgv = xp.matmul(_mH(xp, v), gv)
        vhgv = vhgv - _mH(xp, vhgv)
        ret = ret + xp.unsqueeze(s, -1) * vhgv
    if _is_cx(u):
        _svd_phase_check(uhgu, vhgv)
    ret = ret / e
    if gu is not None and _is_cx(uhgu):   # in the real case diag(U^H gU - gU^H U) = 0
        ret = ret + _diag_embed(xp, _diagonal(xp, uhgu) / (2 * s))
    if gs is not None:
        ret = ret + _diag_embed(xp, gs)
    if m > n and gu is not None:
        ga = xp.matmul(u, ret)
        gusinv = gu / xp.unsqueeze(s, -2)
        ga = ga + gusinv - xp.matmul(u, xp.matmul(_mH(xp, u), gusinv))
        return xp.matmul(ga, vh)
    if m < n and gv is not None:
        ga = xp.matmul(ret, vh)
        gvsinv = gv / xp.unsqueeze(s, -2)
        ga = ga + _mH(xp, gvsinv) - xp.matmul(xp.matmul(_mH(xp, gvsinv), v), vh)
        return xp.matmul(u, ga)
    return xp.matmul(xp.matmul(u, ret), vh)


def _svd_jvp(xp, t, a, full, which):
    m, n = a.shape[-2:]
    if full and m != n and which != 1:
        raise NotImplementedError("linalg.svd: forward-mode AD of full_matrices=True is not supported for "
                                  "non-square matrices; use full_matrices=False")
    u, s, vh = xp.linalg_svd(a, False)
    v = _mH(xp, vh)
    dp = xp.matmul(xp.matmul(_mH(xp, u), t), v)
    cx = _is_cx(dp)
    if which == 1:
        return xp.real(_diagonal(xp, dp)) if cx else _diagonal(xp, dp)
    s2 = s * s
    e = xp.unsqueeze(s2, -2) - xp.unsqueeze(s2, -1)
    f_inv = e + _eye(xp, e)
    sr = xp.unsqueeze(s, -2)   # S on the right: X * sr == X @ diag(S)
    sl = xp.unsqueeze(s, -1)
    if which == 0:
        x = (dp * sr + sl * _mH(xp, dp)) / f_inv
        x = x - x * _eye(xp, x)
        if cx:   # U's phase: i Im(diag(dP)) / S (V's is held fixed, as PyTorch's)
            x = x + _diag_embed(xp, _i_imag(xp, _diagonal(xp, dp)) / s)
        du = xp.matmul(u, x)
        if m > n:
            proj = xp.matmul(t, v) - xp.matmul(u, xp.matmul(_mH(xp, u), xp.matmul(t, v)))
            du = du + proj / sr
        return du
    x = (sl * dp + _mH(xp, dp) * sr) / f_inv
    x = x - x * _eye(xp, x)
    dv = xp.matmul(v, x)
    if n > m:
        tu = xp.matmul(_mH(xp, t), u)
        dv = dv + (tu - xp.matmul(v, xp.matmul(vh, tu))) / sr
    return _mH(xp, dv)


# U's and Vh's own VJP rules never run (the shared node runs the joint rule, row by row under
# is_grads_batched); svd_S's also serves svdvals.
svd_u_p = defprim("svd_U", lambda xp, a, full: xp.linalg_svd(a, full)[0],
                  node="LinalgSvdBackward0", vjp=lambda xp, g, out, a, full: _svd_vjp(xp, g, None, None, a, full),
                  jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, full, 0), saves=(0,), complex="own")
svd_s_p = defprim("svd_S", lambda xp, a, full: xp.linalg_svdvals(a),
                  node="LinalgSvdBackward0", vjp=lambda xp, g, out, a, full: _svd_vjp(xp, None, g, None, a, False),
                  jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, False, 1), saves=(0,), batch=True, complex="own")
svd_vh_p = defprim("svd_Vh", lambda xp, a, full: xp.linalg_svd(a, full)[2],
                   node="LinalgSvdBackward0", vjp=lambda xp, g, out, a, full: _svd_vjp(xp, None, None, g, a, full),
                   jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, full, 2), saves=(0,), complex="own")

class _SvdNode(Node):
    """The one backward node of linalg.svd's three outputs, as PyTorch's LinalgSvdBackward0: svd_backward gets
    gU, gS and gVh together (its phase check needs them together). Recording, saving and forward mode are the
    three primitives' (svd_U, svd_S, svd_Vh); this node runs the joint rule on what they saved. Under
    create_graph the rule reads the forward's U, S, Vh (kept as data and versions, ``_outs``), so that a second
    derivative reaches this node again with everything it gets, as PyTorch's (the phase check holds only for
    the whole)."""

    __slots__ = ("_parts", "_outs")
    num_outputs = 3

    def apply(self, grads, create_graph, needed):
        if needed is not None and not needed[0]:
            return [None]
        gu, gs, gvh = (list(grads) + [None] * 3)[:3]
        part = self._parts[0]
        if part._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        a = part._args(create_graph)[0]
        g = next(x for x in (gu, gs, gvh) if x is not None)
        full = part._params["full"]
        outs = self._outputs()   # (checked even when not read: PyTorch's node saves them)
        if not create_graph:
            return [_svd_vjp(NAMESPACES[type(g)], gu, gs, gvh, a, full)]
        return [_svd_vjp(graph_ns, gu, gs, gvh, a, full, outs)]

    def _outputs(self) -> tuple:
        """U, S, Vh as Tensors of this node (PrimNode._unpack_out's way for a saved output); PyTorch's error if
        one was changed in place since."""
        res = []
        for i, (data, vc, v, fw) in enumerate(self._outs):
            if vc[0] != v:   # a saved output: PyTorch names its node and its output number
                raise RuntimeError(modified_message(None, v, data, vc[0], self).replace(
                    "which is output 0 of", f"which is output {i} of", 1))
            t = make(data)
            t.grad_fn, t._output_nr, t._requires_grad = self, i, True
            if fw is not None and fw._fw_grad is not None and _fwd_state.level:
                # forward-over-reverse: the saved output comes back with its tangent (held apart: no cycle)
                t._fw_grad = fw._fw_grad
                track_tangent(t)
            res.append(t)
        return tuple(res)

    def _release(self) -> None:
        for p in self._parts:
            p._release()
        self._outs = ()


def _svd_node(outs):
    """Give the three outputs one node (PyTorch's), when they were recorded."""
    parts = tuple(o.grad_fn for o in outs)
    if parts[0] is None:
        return outs
    node = _new(_SvdNodeClass)
    node.next_functions = parts[0].next_functions
    node._seq = next(_seq)
    node._parts = parts
    node._outs = tuple((o._data, o._vc, o._vc[0], None if o._fw_grad is None else _tangent_holder(o)) for o in outs)
    for i, o in enumerate(outs):
        o.grad_fn, o._output_nr = node, i
    for observe in NODE_OBSERVERS:   # ember.viz.record(): the node's outputs
        observe(node, outs)
    return outs


_SvdNodeClass = type("LinalgSvdBackward0", (_SvdNode,), {"__slots__": ()})

SVDResult = return_type("linalg_svd", ("U", "S", "Vh"))
SVDLegacy = return_type("svd", ("U", "S", "V"))


@register(submodule="linalg", module=False, name="svd", graph="linalg_svd")
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """Singular value decomposition A = U diag(S) Vh (LAPACK's signs), S descending."""
    _no_out(out, "linalg.svd")
    _check_matrix(A, "linalg.svd", square=False)
    full = check_bool(full_matrices, "linalg_svd", "full_matrices")
    p = {"full": full}
    return SVDResult(*_svd_node((apply(svd_u_p, (A,), p), apply(svd_s_p, (A,), p), apply(svd_vh_p, (A,), p))))


@register(submodule="linalg", module=False, name="svdvals", graph="linalg_svdvals")
def linalg_svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of A, descending."""
    _no_out(out, "linalg.svdvals")
    _check_matrix(A, "linalg.svdvals", square=False)
    return apply(svd_s_p, (A,), {"full": False})


@register(method=True)
def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None):
    """Legacy SVD: (U, S, V) with V, not Vh; ``some=False`` gives full U and V."""
    _no_out(out, "svd")
    check_tensor(input, "svd")
    some = check_bool(some, "svd", "some")
    compute_uv = check_bool(compute_uv, "svd", "compute_uv")
    _check_matrix(input, "linalg.svd", square=False, arg="A")
    if not compute_uv:
        s = linalg_svdvals(input)
        m, n = input._data.shape[-2:]
        b = input._data.shape[:-2]
        zeros = NAMESPACES[type(input._data)].backend.zeros
        z = make(zeros(b + ((m, m) if not some else (m, min(m, n))), input._data.dtype))
        zv = make(zeros(b + ((n, n) if not some else (n, min(m, n))), input._data.dtype))
        return SVDLegacy(z, s, zv)
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return SVDLegacy(u, s, vh.mH if vh._data.dtype.kind == "c" else vh.mT)


# ======================================================================================================
# LU: lu_factor, lu_factor_ex, lu, lu_unpack (and the legacy lu)
# ======================================================================================================
# The factorization is the kernel's (LAPACK's getrf pivots, devices.cpu.linalg.linalg_lu_factor_ex). Outputs
# that carry a gradient (the packed LU; L and U) are one primitive each whose rules are PyTorch's
# (FunctionsManual.cpp: lu_factor_ex_backward/_jvp, linalg_lu_backward/_jvp, lu_unpack_backward); pivots, info
# and P are integer or constant outputs without history. lu_solve is in solvers.py.

def _narrow(xp, x, dim, n):
    # the first n entries along dim (dim is -1 or -2)
    return x if x.shape[dim] == n else xp.slice_dim(x, x.ndim + dim, 0, n)


def _pad(xp, x, dim, size):
    # x followed by zeros along dim, up to size
    if x.shape[dim] == size:
        return x
    shape = tuple(x.shape)
    shape = shape[:dim] + (size,) + (shape[dim + 1:] if dim == -2 else ())
    return xp.slice_scatter_zeros(x, x.ndim + dim, 0, x.shape[dim], 1, shape)


def _lu_vjp(xp, gL, gU, P, L, U, pivot):
    """PyTorch's linalg_lu_backward: the gradient of A = P L U from those of L (m x k) and U (k x n)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    LH, UH = _mT(xp, L), _mT(xp, U)
    if m == n:
        ga = None if gL is None else xp.tril(xp.matmul(LH, gL), -1)
        if gU is not None:
            t = xp.triu(xp.matmul(gU, UH))
            ga = t if ga is None else ga + t
        ga = xp.solve_triangular(UH, ga, upper=False, left=False)
        ga = xp.solve_triangular(LH, ga, upper=True, unitriangular=True)
    elif m < n:   # wide: A = P L (U1 | U2)
        ga = None if gL is None else xp.matmul(LH, gL)
        if gU is not None:
            t = xp.matmul(xp.triu(gU), UH)
            ga = -t if ga is None else ga - t
        ga = xp.solve_triangular(_mT(xp, _narrow(xp, U, -1, k)), xp.tril(ga, -1), upper=False, left=False)
        if gU is not None:
            ga = xp.cat([ga + xp.triu(_narrow(xp, gU, -1, k)), xp.slice_dim(gU, gU.ndim - 1, k, n)], -1)
        ga = xp.solve_triangular(LH, ga, upper=True, unitriangular=True)
        if gU is None:
            ga = _pad(xp, ga, -1, n)
    else:         # tall: A = P (L1 ; L2) U
        ga = None if gU is None else xp.matmul(gU, UH)
        if gL is not None:
            t = xp.matmul(LH, xp.tril(gL, -1))
            ga = -t if ga is None else ga - t
        ga = xp.solve_triangular(_mT(xp, _narrow(xp, L, -2, k)), xp.triu(ga), upper=True, unitriangular=True)
        if gL is not None:
            ga = xp.cat([ga + xp.tril(_narrow(xp, gL, -2, k), -1), xp.slice_dim(gL, gL.ndim - 2, k, m)], -2)
        ga = xp.solve_triangular(UH, ga, upper=False, left=False)
        if gL is None:
            ga = _pad(xp, ga, -2, m)
    return xp.matmul(P, ga) if pivot else ga


def _lu_jvp(xp, dA, P, L, U, pivot):
    """PyTorch's linalg_lu_jvp: (dL, dU) for the tangent dA."""
    m, n = dA.shape[-2:]
    k = min(m, n)
    pda = xp.matmul(_mT(xp, P), dA) if pivot else dA
    L1, U1 = _narrow(xp, L, -2, k), _narrow(xp, U, -1, k)
    dK = xp.solve_triangular(L1, _narrow(xp, _narrow(xp, pda, -2, k), -1, k), upper=False, unitriangular=True)
    dK = xp.solve_triangular(U1, dK, upper=True, left=False)            # L1^-1 P^T dA1 U1^-1
    low, up = xp.tril(dK, -1), xp.triu(dK)
    dL, dU = xp.matmul(L1, low), xp.matmul(up, U1)
    if m < n:
        dU2 = xp.solve_triangular(L1, xp.slice_dim(pda, pda.ndim - 1, k, n), upper=False, unitriangular=True) - \
            xp.matmul(low, xp.slice_dim(U, U.ndim - 1, k, n))
        dU = xp.cat([dU, dU2], -1)
    elif m > n:
        dL2 = xp.solve_triangular(U1, xp.slice_dim(pda, pda.ndim - 2, k, m), upper=True, left=False) - \
            xp.matmul(xp.slice_dim(L, L.ndim - 2, k, m), up)
        dL = xp.cat([dL, dL2], -2)
    return dL, dU


def _lu_factor_vjp(xp, g, out, a, pivot):
    lu, piv, _ = xp.linalg_lu_factor_ex(a, pivot=pivot)
    P, L, U = xp.lu_unpack(lu, piv, True, pivot)
    k = min(a.shape[-2:])
    return _lu_vjp(xp, _narrow(xp, g, -1, k), _narrow(xp, g, -2, k), P, L, U, pivot)


def _lu_factor_jvp(xp, t, out, a, pivot):
    lu, piv, _ = xp.linalg_lu_factor_ex(a, pivot=pivot)
    P, L, U = xp.lu_unpack(lu, piv, True, pivot)
    dL, dU = _lu_jvp(xp, t, P, L, U, pivot)
    m, n = a.shape[-2:]
    # the packed tangent: dL below the diagonal, dU on and above it
    return dL + _pad(xp, dU, -2, m) if m >= n else dU + _pad(xp, dL, -1, n)


lu_factor_p = defprim("lu_factor",
                      lambda xp, a, pivot: xp.linalg_lu_factor_ex(a, pivot)[0],
                      complex=True, node="LinalgLuFactorExBackward0", vjp=_lu_factor_vjp, jvp=_lu_factor_jvp, saves=(0,), batch=True)


def _lu_L_vjp(xp, g, out, a, pivot):
    P, L, U = xp.linalg_lu(a, pivot=pivot)
    return _lu_vjp(xp, g, None, P, L, U, pivot)


def _lu_U_vjp(xp, g, out, a, pivot):
    P, L, U = xp.linalg_lu(a, pivot=pivot)
    return _lu_vjp(xp, None, g, P, L, U, pivot)


def _lu_out_jvp(which):
    def rule(xp, t, out, a, pivot):
        P, L, U = xp.linalg_lu(a, pivot=pivot)
        return _lu_jvp(xp, t, P, L, U, pivot)[which]
    return rule


lu_L_p = defprim("lu_L", lambda xp, a, pivot: xp.linalg_lu(a, pivot)[1],
                 complex=True, node="LinalgLuBackward0", vjp=_lu_L_vjp, jvp=_lu_out_jvp(0), saves=(0,), batch=True)
lu_U_p = defprim("lu_U", lambda xp, a, pivot: xp.linalg_lu(a, pivot)[2],
                 complex=True, node="LinalgLuBackward0", vjp=_lu_U_vjp, jvp=_lu_out_jvp(1), saves=(0,), batch=True)


def _unpack_L_vjp(xp, g, out, lu):
    # PyTorch's lu_unpack_backward: L reads LU's strict lower triangle (of its first k columns)
    return _pad(xp, xp.tril(g, -1), -1, lu.shape[-1])


def _unpack_U_vjp(xp, g, out, lu):
    return _pad(xp, xp.triu(g), -2, lu.shape[-2])


unpack_L_p = defprim("lu_unpack_L", lambda xp, lu: xp.lu_unpack(lu, None, True, False)[1],
                     complex=True, node="LuUnpackBackward0", vjp=_unpack_L_vjp,
                     jvp=lambda xp, t, out, lu: xp.tril(_narrow(xp, t, -1, min(lu.shape[-2:])), -1), batch=True)
unpack_U_p = defprim("lu_unpack_U", lambda xp, lu: xp.lu_unpack(lu, None, True, False)[2],
                     complex=True, node="LuUnpackBackward0",
                     vjp=_unpack_U_vjp, jvp=lambda xp, t, out, lu: xp.triu(_narrow(xp, t, -2, min(lu.shape[-2:]))),
                     batch=True)


LUFactorResult = return_type("linalg_lu_factor", ("LU", "pivots"))
LUFactorExResult = return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LUResult = return_type("linalg_lu", ("P", "L", "U"))
LUUnpackResult = return_type("lu_unpack", ("P", "L", "U"))
LUWithInfo = return_type("_lu_with_info", ("LU", "pivots", "info"))


def _check_lu_input(A, op, arg="A"):
    check_tensor(A, op.split(".")[-1], arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"torch.{op.split('.')[-1] if op.startswith('linalg.lu_factor') else op}: Expected tensor "
                           f"with 2 or more dimensions. Got size: {list(A._data.shape)} instead")
    k = A._data.dtype
    if k.kind not in "fcV" or dtype_word(k) == "Half":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{dtype_word(k)}'")
    _bf16_kernel(A, "lu")


def _check_pivot(pivot, op):
    if not check_bool(pivot, op, "pivot"):
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return True


def _lu_factor_ex(A, pivot, op):
    """(LU tensor, pivots tensor, info array) for the checked input."""
    check_bool(pivot, op.replace(".", "_"), "pivot")   # argument types first, as PyTorch's binding
    _check_lu_input(A, "linalg.lu_factor" if op != "linalg.lu" else op)
    pivot = _check_pivot(pivot, op.replace(".", "_"))
    _, piv, info = NAMESPACES[type(A._data)].linalg_lu_factor_ex(A._data, pivot)
    pivots = make(piv)   # saved by the node, as PyTorch's: a change to them in place is an error at backward
    return apply_saving(lu_factor_p, (A,), {"pivot": pivot}, None, (pivots,)), pivots, info


@register(submodule="linalg", module=False, name="lu_factor_ex", graph="linalg_lu_factor_ex")
def linalg_lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    """LU factorization with partial pivoting, packed: (LU, pivots (1-based, int32), info (0, or the first
    zero pivot's 1-based index)); a singular matrix is not an error unless ``check_errors``."""
    _no_out(out, "linalg.lu_factor_ex")
    lu, piv, info = _lu_factor_ex(A, pivot, "linalg.lu_factor_ex")
    if check_bool(check_errors, "linalg_lu_factor_ex", "check_errors"):
        _raise_lu_info(info, "torch.linalg.lu_factor_ex")
    return LUFactorExResult(lu, piv, make(info))


def _raise_lu_info(info, op):
    xp = NAMESPACES[type(info)]
    flat = xp.reshape(info, (-1,))
    bad = xp.nonzero_tuple(flat)[0]
    if bad.shape[0]:
        b = int(bad[0])
        i = int(flat[b])
        where = f"(Batch element {b}): " if info.ndim else ""
        raise RuntimeError(f"{op}: {where}U[{i},{i}] is zero and using it on lu_solve would result in a division by "
                           f"zero. If you still want to perform the factorization, consider calling "
                           f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@register(submodule="linalg", module=False, name="lu_factor")
def linalg_lu_factor(A: Tensor, *, pivot: bool = True, out=None):
    """LU factorization with partial pivoting, packed: (LU, pivots); an exactly singular A (a zero pivot)
    raises, as PyTorch."""
    _no_out(out, "linalg.lu_factor")
    lu, piv, info = _lu_factor_ex(A, pivot, "linalg.lu_factor")
    _raise_lu_info(info, "torch.linalg.lu_factor")
    return LUFactorResult(lu, piv)


@register(submodule="linalg", module=False, name="lu", graph="linalg_lu")
def linalg_lu(A: Tensor, *, pivot: bool = True, out=None):
    """A = P L U with partial pivoting: P a permutation matrix, L (m x k) unit lower triangular, U (k x n)
    upper triangular, k = min(m, n)."""
    _no_out(out, "linalg.lu")
    check_bool(pivot, "linalg_lu", "pivot")
    _check_lu_input(A, "linalg.lu")
    pivot = _check_pivot(pivot, "linalg_lu")
    P = make(NAMESPACES[type(A._data)].linalg_lu(A._data, pivot)[0])
    p = {"pivot": pivot}
    # P is saved (PyTorch's LinalgLuBackward0 saves it): changed in place, backward refuses it
    return LUResult(P, apply_saving(lu_L_p, (A,), p, None, (P,)), apply_saving(lu_U_p, (A,), p, None, (P,)))


@register(name="lu_unpack", graph="lu_unpack")
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *,
              out=None):
    """(P, L, U) from a packed LU factorization and its pivots (what is not unpacked is empty)."""
    _no_out(out, "lu_unpack")
    check_tensor(LU_data, "lu_unpack", "LU_data")
    check_tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    unpack_data = check_bool(unpack_data, "lu_unpack", "unpack_data")
    unpack_pivots = check_bool(unpack_pivots, "lu_unpack", "unpack_pivots")
    a = LU_data._data
    if a.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {list(a.shape)} "
                           f"instead")
    m, n = a.shape[-2:]
    k = min(m, n)
    piv = LU_pivots._data
    if unpack_pivots:
        if dtype_word(piv.dtype) != "Int":
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                               "dtype.\nNote: this function is intended to be used with the output produced by "
                               "torch.linalg.lu_factor")
        if piv.shape != a.shape[:-2] + (k,) or not NAMESPACES[type(piv)].in_range(piv, 1, m + 1):
            raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                               "properly pass the result of lu_factor?")
    xp = NAMESPACES[type(a)]
    P = xp.lu_unpack(a, piv, False, unpack_pivots)[0]
    empty = make(xp.backend.zeros((0,), a.dtype))
    if not unpack_data:
        return LUUnpackResult(make(P), empty, empty)
    return LUUnpackResult(make(P), apply(unpack_L_p, (LU_data,)), apply(unpack_U_p, (LU_data,)))


@register(method=True, name="lu")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """Deprecated: (LU, pivots) as ``linalg.lu_factor`` but never raising on a singular A; with
    ``get_infos``, (LU, pivots, info)."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    _no_out(out, "lu")
    lu_, piv, info = _lu_factor_ex(A, pivot, "linalg.lu_factor")
    if check_bool(get_infos, "lu", "get_infos"):
        return LUWithInfo(lu_, piv, make(info))
    return lu_, piv


# ----- autograd.grad(is_grads_batched=True): the primitives whose VJP rules batch as written (see products.py)


# ======================================================================================================
# householder_product (LAPACK's orgqr), composed of differentiable ops
# ======================================================================================================

def _hh_reflectors(xp, a):
    """V: A's columns below the diagonal with 1 on it (the reflectors' vectors v_i, column i)."""
    k = a.shape[-1]
    return xp.tri_mask(a, False, 0.0) + xp.eye_like(_mT(xp, a))[:, :k]


def _hh_chain(xp, a, tau):
    """[Q_0, ..., Q_m] with Q_m the first k columns of I and Q_i = H_i Q_(i+1), H_i = I - tau_i v_i v_i^H
    (m = tau.shape[-1]); Q_0 is the product. One reflector at a time, from the last (LAPACK's org2r order)."""
    V = _hh_reflectors(xp, a)
    k = a.shape[-1]
    Q = xp.eye_like(_mT(xp, a))[:, :k] + xp.zeros_like(a)
    qs = [Q]
    for i in reversed(range(tau.shape[-1])):
        v = V[..., :, i:i + 1]
        Q = Q - xp.matmul(xp.unsqueeze(tau[..., i:i + 1], -1) * v, xp.matmul(_mH(xp, v), Q))
        qs.append(Q)
    return V, qs[::-1]


def _hh_vjp_a(xp, g, out, a, tau):
    return _hh_vjp(xp, g, a, tau)[0]


def _hh_vjp_tau(xp, g, out, a, tau):
    return _hh_vjp(xp, g, a, tau)[1]


def _hh_vjp(xp, g, a, tau):
    """Back through Q_i = H_i Q_(i+1): g_(i+1) = H_i^H g_i; d tau_i = -v^H g_i Q_(i+1)^H v;
    d v_i = -(conj(tau_i) g_i Q_(i+1)^H + tau_i Q_(i+1) g_i^H) v (its part below the diagonal is A's column i)."""
    V, qs = _hh_chain(xp, a, tau)
    gv, gt = [], []
    for i in range(tau.shape[-1]):
        v, t, q = V[..., :, i:i + 1], xp.unsqueeze(tau[..., i:i + 1], -1), qs[i + 1]
        tc = xp.conj(t) if _is_cx(t) else t
        gq_v = xp.matmul(_mH(xp, q), v)                       # Q^H v
        g_v = xp.matmul(_mH(xp, g), v)                        # g^H v
        gt.append(-xp.sum(_mH(xp, g_v) * _mT(xp, gq_v), -1))   # -v^H g Q^H v
        if tc is t:
            gv.append(-t * (xp.matmul(g, gq_v) + xp.matmul(q, g_v)))
        else:
            gv.append(-(tc * xp.matmul(g, gq_v) + t * xp.matmul(q, g_v)))
        g = g - xp.matmul(tc * v, xp.matmul(_mH(xp, v), g))   # H_i^H g
    k = a.shape[-1]
    m = len(gv)
    gV = xp.cat(gv + [xp.zeros_like(a[..., :, m:])], -1) if m < k else xp.cat(gv, -1)
    return xp.tri_mask(gV, False, 0.0), xp.cat(gt, -1) if gt else xp.zeros_like(tau)


def _hh_jvp(xp, ta, ttau, a, tau):
    """d Q_i = d H_i Q_(i+1) + H_i d Q_(i+1), d H_i = -(d tau_i v v^H + tau_i (dv v^H + v dv^H))."""
    V, qs = _hh_chain(xp, a, tau)
    dV = xp.tri_mask(ta, False, 0.0) if ta is not None else None
    dq = None
    for i in reversed(range(tau.shape[-1])):
        v, t, q = V[..., :, i:i + 1], xp.unsqueeze(tau[..., i:i + 1], -1), qs[i + 1]
        vq = xp.matmul(_mH(xp, v), q)
        d = None
        if ttau is not None:
            d = -xp.matmul(xp.unsqueeze(ttau[..., i:i + 1], -1) * v, vq)
        if dV is not None:
            dv = dV[..., :, i:i + 1]
            e = -t * (xp.matmul(dv, vq) + xp.matmul(v, xp.matmul(_mH(xp, dv), q)))
            d = e if d is None else d + e
        if dq is not None:
            hdq = dq - xp.matmul(t * v, xp.matmul(_mH(xp, v), dq))
            d = hdq if d is None else d + hdq
        dq = d
    return dq if dq is not None else xp.zeros_like(qs[0])


householder_p = defprim("householder_product", lambda xp, a, tau: _hh_chain(xp, a, tau)[1][0],
                        node="LinalgHouseholderProductBackward0", vjp=(_hh_vjp_a, _hh_vjp_tau),
                        saves=(0, 1), saves_out=True, saved_names=("input", "tau"),
                        jvp=(lambda xp, t, out, a, tau: _hh_jvp(xp, t, None, a, tau),
                             lambda xp, t, out, a, tau: _hh_jvp(xp, None, t, a, tau)), complex="own")


@register(submodule="linalg", module=False, name="householder_product")
def linalg_householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of A below the diagonal
    and 1 on it (k = tau.shape[-1]); composed of differentiable ops, one reflector at a time from the last."""
    op = "torch.linalg.householder_product"
    _no_out(out, "linalg.householder_product")
    check_tensor(A, "householder_product", "input")
    check_tensor(tau, "householder_product", "tau", 2)
    a, t = A._data, tau._data
    if a.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if a.shape[-2] < a.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if t.ndim and a.shape[-1] < t.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if t.ndim != a.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{t.ndim} and input.ndim is equal to {a.ndim}")
    if tuple(t.shape[:-1]) != tuple(a.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(t.shape[:-1])}")
    if t.dtype != a.dtype:
        raise RuntimeError(f"{op}: tau dtype {dtype_word(t.dtype)} does not match input dtype {dtype_word(a.dtype)}")
    _check_float(A, "linalg.householder_product")
    return apply(householder_p, (A, tau))


# ======================================================================================================
# ldl_factor_ex, ldl_factor (LAPACK's sytrf: Bunch-Kaufman pivoting, the lower triangle); not differentiable
# ======================================================================================================

graph_raw("linalg_ldl_factor_ex")
LDLFactorExResult = return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
LDLFactorResult = return_type("linalg_ldl_factor", ("LD", "pivots"))
# PyTorch records LD (not pivots, info) under a NotImplemented node whose backward raises
ldl_factor_p = _no_derivative("linalg_ldl_factor_ex", "NotImplemented", RuntimeError,
                              "derivative for aten::linalg_ldl_factor_ex is not implemented", "aten::linalg_ldl_factor_ex")


def _ldl_factor_ex(A, hermitian, check_errors, op):
    _check_matrix(A, "torch.linalg.ldl_factor_ex")
    hermitian = check_bool(hermitian, op.replace(".", "_"), "hermitian")   # real: the same as symmetric
    ld, piv, info = NAMESPACES[type(A._data)].linalg_ldl_factor_ex(A._data, hermitian)
    if check_errors:   # PyTorch reports sytrf's info > 0 (an exactly zero block of D) as an unknown error code
        raise_info(info, f"torch.{op}", lambda i: f"Unknown error code: {i}.", RuntimeError)
    return apply(ldl_factor_p, (A,), {"value": ld}), make(piv), make(info)


@register(submodule="linalg", module=False, name="ldl_factor_ex")
def linalg_ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """(LD, pivots, info): A = P L D L^T P^T with Bunch-Kaufman pivoting (LAPACK's sytrf, lower triangle): L's
    unit-diagonal columns below D's 1x1 and 2x2 blocks; pivots 1-based (a 2x2 block's two are negative); info
    the index of D's first exactly zero diagonal block (0 if none). Not differentiable, as PyTorch's."""
    _no_out(out, "linalg.ldl_factor_ex")
    check = check_bool(check_errors, "linalg_ldl_factor_ex", "check_errors")
    return LDLFactorExResult(*_ldl_factor_ex(A, hermitian, check, "linalg.ldl_factor_ex"))


@register(submodule="linalg", module=False, name="ldl_factor")
def linalg_ldl_factor(A: Tensor, *, hermitian: bool = False, out=None):
    """(LD, pivots) of ``ldl_factor_ex``; a zero block of D raises (as PyTorch)."""
    _no_out(out, "linalg.ldl_factor")
    return LDLFactorResult(*_ldl_factor_ex(A, hermitian, True, "linalg.ldl_factor")[:2])


# ----- geqrf: LAPACK's Householder QR (the form orgqr and ormqr take); PyTorch has no derivative for it -----------

graph_raw("geqrf")
GeqrfResult = return_type("geqrf", ("a", "tau"))
geqrf_p = _no_derivative("geqrf", "GeqrfBackward0", NotImplementedError,
                         "the derivative for 'geqrf' is not implemented.", "geqrf", _NOT_YET)


@register(method=True)
def geqrf(input: Tensor, *, out=None):
    """``(a, tau)``: R on and above the diagonal of ``a``, the Householder vectors below it, and their scales
    (LAPACK's ?geqrf); both outputs are recorded under GeqrfBackward0, whose backward raises, as PyTorch's."""
    _no_out(out, "geqrf")
    check_tensor(input, "geqrf")
    x = input._data
    if x.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if x.dtype.kind not in "fcV" or dtype_word(x.dtype) in ("Half", "BFloat16"):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{dtype_word(x.dtype)}'")
    h, tau = NAMESPACES[type(x)].geqrf(x)
    return GeqrfResult(apply(geqrf_p, (input,), {"value": h}), apply(geqrf_p, (input,), {"value": tau}))


# ----- orgqr, ormqr: the Q of geqrf's Householder form, and products with it (PyTorch's LAPACK orgqr/ormqr), on
# householder_product; ormqr is composed of differentiable ops, so its node is MmBackward0 (PyTorch's: OrmqrBackward0)

@register(method=True)
def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """``torch.linalg.householder_product``."""
    check_tensor(input, "orgqr")
    check_tensor(tau, "orgqr", "input2", 2)
    return linalg_householder_product(input, tau)


@register(method=True)
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False, *,
          out=None) -> Tensor:
    """``Q @ other`` (``other @ Q`` if not ``left``; Q^T if ``transpose``), Q = H_1 ... H_k the m x m product of the
    Householder reflectors in ``input`` and ``tau`` (geqrf's form)."""
    _no_out(out, "ormqr")
    op = "torch.ormqr"
    check_tensor(input, "ormqr")
    check_tensor(tau, "ormqr", "input2", 2)
    check_tensor(other, "ormqr", "input3", 3)
    a, t, c = input._data, tau._data, other._data
    if a.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if c.ndim < 2:
        raise RuntimeError(f"{op}: other must have at least 2 dimensions.")
    cond = -2 if left else -1
    m = c.shape[cond]
    if a.shape[-2] != m:
        raise RuntimeError(f"{op}: other.shape[{cond}] must be equal to input.shape[-2]")
    if t.ndim == 0 or min(m, a.shape[-1]) != t.shape[-1]:
        raise RuntimeError(f"{op}: tau.shape[-1] must be equal to min(other.shape[{cond}], input.shape[-1])")
    if a.ndim - t.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{t.ndim} and input.ndim is equal to {a.ndim}")
    if a.ndim != c.ndim:
        raise RuntimeError(f"{op}: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {c.ndim} and input.ndim is equal to {a.ndim}")
    k = min(a.shape[-1], m)
    full = input[..., :k]
    if k < m:   # zero columns and zero taus: identity reflectors, so the product is the m x m Q
        full = cat((full, input.new_zeros((*a.shape[:-1], m - k))), -1)
    taus = tau
    if t.shape[-1] < m:
        taus = cat((tau, tau.new_zeros((*t.shape[:-1], m - t.shape[-1]))), -1)
    q = linalg_householder_product(full, taus)
    if transpose:
        q = q.mT
    return q @ other if left else other @ q


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("leading", "cholesky", "cholesky_ex", "qr_Q", "qr_R", "eigh_L", "eigh_V", "eig_L", "eig_V",
                  "svd_U", "svd_S", "svd_Vh", "lu_factor", "lu_L", "lu_U", "lu_unpack_L", "lu_unpack_U",
                  "householder_product", "tri_mask")
_batching.by_name("leading", *[n for n in ("linalg_ldl_factor_ex", "geqrf")
                              if any(p.name == n for p in _batching._primitive.PRIMITIVES)])


def _svd_rule(orig, args, kwargs, level):
    """linalg.svd and the legacy svd under vmap (both named "svd" in the public tables): their wrappers give the
    three outputs one backward node, so they run on the physical matrix, batch dim first (they map over leading
    dims) (``_batching.PUBLIC_RULES``)."""
    from ..shape import vmap_front
    fn = {"linalg_svd": (linalg_svd, SVDResult), "svd": (svd, SVDLegacy)}.get(orig.__code__.co_name)
    if fn is None or not args or not isinstance(args[0], Tensor) or args[0]._data.ndim < 2:
        return orig(*args, **kwargs)
    outs = fn[0](vmap_front(args[0], level), *args[1:], **kwargs)
    return fn[1](*(_batching.wrap(t, 0, level) for t in outs))


_batching.PUBLIC_RULES["svd"] = _svd_rule
