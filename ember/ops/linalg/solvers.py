"""Solvers and inverses: solve, solve_triangular (and the legacy triangular_solve), cholesky_solve, lu_solve (and the
legacy lu_solve), lstsq, inv / inverse, pinv / pinverse."""
from __future__ import annotations

from ...autograd import _batching

import math
import numbers
import warnings

from ...devices import NAMESPACES
from ..._tensor import Tensor, make
from ...autograd._primitive import apply, defprim
from .._registry import graph, graph_raw, register
from ..._util import check_bool, check_tensor, dtype_word, holds, return_type
from ._common import (LinAlgError, _bf16_kernel, _broadcast, _broadcastable, _check_float, _check_matrix, _check_same_dtype,
                      _mH, _mT, _no_out, _node, raise_info)


# ======================================================================================================
# inv, inverse
# ======================================================================================================

inv_p = defprim("inv", lambda xp, a: xp.linalg_inv(a),
                complex=True, node="LinalgInvExBackward0",
                vjp=lambda xp, g, out, a: -xp.matmul(xp.matmul(_mT(xp, out), g), _mT(xp, out)),
                jvp=lambda xp, t, out, a: -xp.matmul(xp.matmul(out, t), out), saves_out=True, batch=True)


@register(submodule="linalg", module=False, name="inv", graph="linalg_inv")
def linalg_inv(A: Tensor, *, out=None) -> Tensor:
    """Inverse of a (batch of) square matrices; a singular one raises ``linalg.LinAlgError``."""
    _no_out(out, "linalg.inv")
    _check_matrix(A, "linalg.inv")
    return apply(inv_p, (A,))


@register(method=True)
def inverse(input: Tensor, *, out=None) -> Tensor:
    """Alias of ``linalg.inv``."""
    check_tensor(input, "inverse")
    return linalg_inv(input, out=out)


# ======================================================================================================
# inv_ex, solve_ex: the (result, info) forms; info from the LU factorization (LAPACK's getrf)
# ======================================================================================================

InvExResult = return_type("linalg_inv_ex", ("inverse", "info"))
SolveExResult = return_type("linalg_solve_ex", ("result", "info"))


def _lu_info(A):
    """getrf's info of each matrix of A: 0, or the 1-based index of the first zero pivot."""
    return NAMESPACES[type(A._data)].linalg_lu_factor_ex(A._data)[2]


def _any_nonzero(info) -> bool:
    return NAMESPACES[type(info)].any(info != 0)


def _singular_inv(i):
    return (f"The diagonal element {i} is zero, the inversion could not be completed because the input matrix is "
            f"singular.")


def _lu_solve_all(A, B, left):
    """The solve through A's LU for a batch with singular matrices: what LAPACK's getrs gives there (inf/nan)."""
    from .decompositions import linalg_lu_factor_ex
    LU, piv, _ = linalg_lu_factor_ex(A)
    return linalg_lu_solve(LU, piv, B, left=left)


@register(submodule="linalg", module=False, name="inv_ex")
def linalg_inv_ex(A: Tensor, *, check_errors: bool = False, out=None):
    """(inverse, info) of a (batch of) square matrices: info 0, or the index of the first zero pivot of A's LU
    factorization (the inverse of such a matrix is inf/nan); ``check_errors`` raises for it instead."""
    _no_out(out, "linalg.inv_ex")
    _check_matrix(A, "linalg.inv_ex")
    check_errors = check_bool(check_errors, "linalg_inv_ex", "check_errors")
    info = _lu_info(A)
    if check_errors:
        raise_info(info, "linalg.inv_ex", _singular_inv)
    if holds(_any_nonzero, info):
        from ..creation import eye
        n = A._data.shape[-1]
        inv = _lu_solve_all(A, eye(n, dtype=A.dtype, device=A.device).expand(*A._data.shape), True)
    else:
        inv = apply(inv_p, (A,))
    return InvExResult(inv, make(info))


# ======================================================================================================
# solve, solve_triangular, triangular_solve, cholesky_solve
# ======================================================================================================

def _is_vec(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


def _solve_vjp_b(xp, g, out, a, b, left):
    return xp.linalg_solve(_mT(xp, a), g, left=left)


def _solve_vjp_a(xp, g, out, a, b, left):
    gb = xp.linalg_solve(_mT(xp, a), g, left=left)
    if _is_vec(a, b):
        return -xp.unsqueeze(gb, -1) * xp.unsqueeze(out, -2)
    return -xp.matmul(gb, _mT(xp, out)) if left else -xp.matmul(_mT(xp, out), gb)


def _solve_jvp_a(xp, t, out, a, b, left):
    if _is_vec(a, b):
        return xp.linalg_solve(a, -xp.squeeze(xp.matmul(t, xp.unsqueeze(out, -1)), -1))
    return xp.linalg_solve(a, -xp.matmul(t, out)) if left else xp.linalg_solve(a, -xp.matmul(out, t), left=False)


solve_p = defprim("solve", lambda xp, a, b, left: xp.linalg_solve(a, b, left=left),
                  complex=True, node="LinalgSolveExBackward0", vjp=(_solve_vjp_a, _solve_vjp_b),
                  jvp=(_solve_jvp_a, lambda xp, t, out, a, b, left: xp.linalg_solve(a, t, left=left)),
                  saves=(0,), saves_out=True)


def _check_solve_shapes(A, B, op, left=True):
    a, b = A._data.shape, B._data.shape
    vec = _is_vec(A._data, B._data)
    if vec and not left:
        raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not supported for left=False. In "
                           f"this case {op} is equivalent to B / A.squeeze(-1)")
    if vec:
        if b[-1] != a[-1]:
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B ({a[-2]}x{a[-1]} and "
                               f"{b[-1]}x1)")
        batch_b = b[:-1]
    else:
        if B._data.ndim < 2:
            raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
        n = b[-2] if left else b[-1]
        if n != a[-1]:
            eq = "AX = B" if left else "XA = B"
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} ({a[-2]}x{a[-1]} and "
                               f"{b[-2]}x{b[-1]})")
        batch_b = b[:-2]
    if not _broadcastable(a[:-2], batch_b):
        raise RuntimeError(f"The size of tensor a must match the size of tensor b at non-singleton dimensions: "
                           f"{list(a[:-2])} and {list(batch_b)}")


@register(submodule="linalg", module=False, name="solve", graph="linalg_solve")
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """X with A X = B (``left=False``: X A = B); B may be a vector, batch dims broadcast."""
    _no_out(out, "linalg.solve")
    _check_matrix(A, "linalg.solve", later=True)
    check_tensor(B, "solve", "B", 2)
    left = check_bool(left, "linalg.solve", "left")
    _check_same_dtype(A, B, "linalg.solve")
    _check_solve_shapes(A, B, "linalg.solve", left)
    _bf16_kernel(A, "solve")
    return apply(solve_p, (A, B), {"left": left})


@register(submodule="linalg", module=False, name="solve_ex")
def linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None):
    """(X, info) with A X = B (``left=False``: X A = B); info as ``inv_ex``'s, of each matrix of A."""
    _no_out(out, "linalg.solve_ex")
    _check_matrix(A, "linalg.solve_ex", later=True)
    check_tensor(B, "solve_ex", "B", 2)
    left = check_bool(left, "linalg.solve_ex", "left")
    check_errors = check_bool(check_errors, "linalg_solve_ex", "check_errors")
    _check_same_dtype(A, B, "linalg.solve_ex")
    _check_solve_shapes(A, B, "linalg.solve_ex", left)
    _bf16_kernel(A, "solve_ex")
    info = _lu_info(A)
    xp = NAMESPACES[type(info)]
    if check_errors:
        raise_info(info, "torch.linalg.solve_ex", lambda i: _SINGULAR)
    if not holds(_any_nonzero, info):
        try:
            return SolveExResult(apply(solve_p, (A, B), {"left": left}), make(info))
        except LinAlgError:   # the device's solver met an exact zero pivot where A's LU (info) has none
            pass
    return SolveExResult(_lu_solve_all(A, B, left), make(info))


_SINGULAR = "The solver failed because the input matrix is singular."


# ======================================================================================================
# tensorinv, tensorsolve: inv and solve of the tensors reshaped to matrices (PyTorch's composites)
# ======================================================================================================

@register(submodule="linalg", module=False, name="tensorinv")
def linalg_tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of A for ``tensordot(.., ind)``: A reshaped to a prod(shape[:ind]) square matrix, inverted,
    reshaped to shape[ind:] + shape[:ind]."""
    from ..shape import reshape, reshape_p
    _no_out(out, "linalg.tensorinv")
    check_tensor(A, "tensorinv", "A")
    if not ind > 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A._data.shape)
    end, start = math.prod(shape[ind:]), math.prod(shape[:ind])
    if end != start:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {end} != {start}")
    inv, info = linalg_inv_ex(reshape(A, start, end))
    raise_info(info._data, "inv", _singular_inv)
    # PyTorch's inverse is column-major, so its reshape is a strided alias (ReshapeAliasBackward0)
    return apply(reshape_p, (inv,), {"shape": shape[ind:] + shape[:ind]}, _node("ReshapeAliasBackward0"))


@register(submodule="linalg", module=False, name="tensorsolve")
def linalg_tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B: A (its ``dims`` moved last) reshaped to a square matrix, B flattened."""
    from ..shape import flatten, movedim, reshape
    _no_out(out, "linalg.tensorsolve")
    check_tensor(A, "tensorsolve", "A")
    check_tensor(B, "tensorsolve", "B", 2)
    nd = A._data.ndim
    if dims is not None:
        dims = list(dims)
        A = movedim(A, dims, list(range(nd - len(dims), nd)))
    rshape = tuple(A._data.shape[B._data.ndim:])
    rprod, oprod = math.prod(rshape), math.prod(B._data.shape)
    if rprod != oprod:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {rprod} != {oprod}")
    return reshape(linalg_solve(reshape(A, rprod, rprod), flatten(B)), *rshape)


def _soltri_vjp_b(xp, g, out, a, b, upper, left, unitriangular):
    return xp.solve_triangular(_mT(xp, a), g, upper=not upper, left=left, unitriangular=unitriangular)


def _soltri_vjp_a(xp, g, out, a, b, upper, left, unitriangular):
    gb = xp.solve_triangular(_mT(xp, a), g, upper=not upper, left=left, unitriangular=unitriangular)
    ga = -xp.matmul(gb, _mT(xp, out)) if left else -xp.matmul(_mT(xp, out), gb)
    return xp.tri_mask(ga, upper, 0.0 if unitriangular else 1.0)


def _soltri_jvp_a(xp, t, out, a, b, upper, left, unitriangular):
    ta = xp.tri_mask(t, upper, 0.0 if unitriangular else 1.0)
    rhs = -xp.matmul(ta, out) if left else -xp.matmul(out, ta)
    return xp.solve_triangular(a, rhs, upper=upper, left=left, unitriangular=unitriangular)


solve_tri_p = defprim("solve_triangular",
                      lambda xp, a, b, upper, left, unitriangular: xp.solve_triangular(a, b, upper, left, unitriangular),
                      complex=True, node="LinalgSolveTriangularBackward0", vjp=(_soltri_vjp_a, _soltri_vjp_b),
                      jvp=(_soltri_jvp_a, lambda xp, t, out, a, b, upper, left, unitriangular:
                           xp.solve_triangular(a, t, upper=upper, left=left, unitriangular=unitriangular)),
                      saves=(0,), saves_out=True, batch=True)


@register(submodule="linalg", module=False, name="solve_triangular", graph="solve_triangular")
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False,
                     out=None) -> Tensor:
    """X with A X = B (or X A = B) for a triangular A; only A's triangle is read."""
    _no_out(out, "linalg.solve_triangular")
    op = "linalg.solve_triangular"
    _check_matrix(A, op)
    check_tensor(B, "solve_triangular", "B", 2)
    upper = check_bool(upper, op, "upper")
    left = check_bool(left, op, "left")
    unitriangular = check_bool(unitriangular, op, "unitriangular")
    if B._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    _check_same_dtype(A, B, op)
    _check_solve_shapes(A, B, op, left)
    return apply(solve_tri_p, (A, B), {"upper": upper, "left": left, "unitriangular": unitriangular})


TriangularSolveResult = return_type("triangular_solve", ("solution", "cloned_coefficient"))


@register(method=True)
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Legacy form of ``linalg.solve_triangular``: (solution of A X = input, a copy of A)."""
    from ..shape import clone_p
    op = "torch.triangular_solve"
    check_tensor(input, "triangular_solve")
    check_tensor(A, "triangular_solve", "A", 2)
    if input._data.ndim < 2 or A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {'B' if input._data.ndim < 2 else 'A'} must have at least 2 "
                           f"dimensions.")
    _check_matrix(A, op)
    _check_same_dtype(A, input, op, "A", "B")
    _check_solve_shapes(A, input, op)
    node = _node("TriangularSolveBackward0")
    Ae = A.mT if transpose else A
    sol = apply(solve_tri_p, (Ae, input), {"upper": upper != transpose, "left": True,
                                           "unitriangular": unitriangular}, node)
    return TriangularSolveResult(sol, apply(clone_p, (A,), {}, node))


def _cholsolve_vjp_b(xp, g, out, b, l, upper):
    return xp.cholesky_solve(g, l, upper)


def _cholsolve_vjp_l(xp, g, out, b, l, upper):
    gb = xp.cholesky_solve(g, l, upper)
    common = xp.matmul(gb, _mT(xp, out))
    common = common + _mT(xp, common)
    return -xp.matmul(l, common) if upper else -xp.matmul(common, l)


def _cholsolve_jvp_l(xp, t, out, b, l, upper):
    # A = L L^T: dA = dL L^T + L dL^T, dX = -A^-1 dA X
    tl = xp.tri_mask(t, upper)
    lm = xp.tri_mask(l, upper)
    da = xp.matmul(_mT(xp, tl), lm) + xp.matmul(_mT(xp, lm), tl) if upper else \
        xp.matmul(tl, _mT(xp, lm)) + xp.matmul(lm, _mT(xp, tl))
    return -xp.cholesky_solve(xp.matmul(da, out), l, upper)


cholesky_solve_p = defprim("cholesky_solve",
                           lambda xp, b, l, upper: xp.cholesky_solve(b, l, upper),
                           vjp=(_cholsolve_vjp_b, _cholsolve_vjp_l),
                           jvp=(lambda xp, t, out, b, l, upper: xp.cholesky_solve(t, l, upper), _cholsolve_jvp_l),
                           saves=(1,), saves_out=True, batch=True)


@register(method=True, graph=True)
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """X with A X = input, for A = L L^T given its Cholesky factor L = input2 (U^T U if ``upper``)."""
    _no_out(out, "cholesky_solve")
    op = "cholesky_solve"
    check_tensor(input, op)
    check_tensor(input2, op, "input2", 2)
    upper = check_bool(upper, op, "upper")
    if input._data.ndim < 2 or input2._data.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input._data.ndim} dimensions instead"
                           if input._data.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {input2._data.ndim} dimensions instead")
    if input._data.dtype != input2._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{dtype_word(input._data.dtype)} and A of type {dtype_word(input2._data.dtype)} instead.")
    _check_matrix(input2, op, arg="A")
    _check_solve_shapes(input2, input, op)
    if input2._data.dtype.kind == "c":   # A = L L^H (U^H U): two triangular solves, whose rules give PyTorch's
        from ..complex import conj
        fac_h = conj(input2.mT)
        lower, upper_ = (fac_h, input2) if upper else (input2, fac_h)
        y = apply(solve_tri_p, (lower, input), {"upper": False, "left": True, "unitriangular": False})
        return apply(solve_tri_p, (upper_, y), {"upper": True, "left": True, "unitriangular": False})
    return apply(cholesky_solve_p, (input, input2), {"upper": upper})


# ======================================================================================================
# pinv, pinverse
# ======================================================================================================

def _pinv_vjp(xp, g, p, a):
    """The VJP of P = pinv(A): -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A), without the identity."""
    pt = _mH(xp, p)
    gt = _mH(xp, g)
    ga = -xp.matmul(xp.matmul(pt, g), pt)
    k = xp.matmul(gt, xp.matmul(p, pt))                                  # G^T P P^T
    ga = ga + k - xp.matmul(xp.matmul(a, p), k)
    h = xp.matmul(xp.matmul(pt, p), gt)                                  # P^T P G^T
    return ga + h - xp.matmul(xp.matmul(h, p), a)


def _pinv_jvp(xp, t, p, a):
    tt = _mH(xp, t)
    pt = _mH(xp, p)
    dp = -xp.matmul(xp.matmul(p, t), p)
    x = xp.matmul(xp.matmul(p, pt), tt)                                  # P P^T dA^T
    dp = dp + x - xp.matmul(xp.matmul(x, a), p)
    y = xp.matmul(tt, xp.matmul(pt, p))                                  # dA^T P^T P
    return dp + y - xp.matmul(xp.matmul(p, a), y)


pinv_p = defprim("pinv",
                 lambda xp, a, atol, rtol, hermitian: xp.linalg_pinv(a, atol, rtol, hermitian),
                 node="LinalgPinvBackward0", vjp=lambda xp, g, out, a, atol, rtol, hermitian: _pinv_vjp(xp, g, out, a),
                 jvp=lambda xp, t, out, a, atol, rtol, hermitian: _pinv_jvp(xp, t, out, a),
                 saves=(0,), saves_out=True, batch=True, complex="own")


def _tol(v, op, arg):
    if v is None:
        return None
    if isinstance(v, Tensor):
        if v._data.ndim:
            raise NotImplementedError(f"ember: {op}({arg}=Tensor) of more than one element is not supported")
        v = v.item()
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TypeError(f"{op}(): argument '{arg}' must be float, not {type(v).__name__}")
    return float(v)


@register(submodule="linalg", module=False, name="pinv", graph="linalg_pinv")
def linalg_pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """Moore-Penrose pseudo-inverse; singular values <= max(atol, rtol * s_max) are taken as zero."""
    _no_out(out, "linalg.pinv")
    _check_matrix(A, "linalg.pinv", square=False)
    hermitian = check_bool(hermitian, "linalg_pinv", "hermitian")
    return apply(pinv_p, (A,), {"atol": _tol(atol, "linalg_pinv", "atol"), "rtol": _tol(rtol, "linalg_pinv", "rtol"),
                                "hermitian": hermitian})


@register(method=True)
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """Legacy form of ``linalg.pinv`` with a relative tolerance ``rcond``."""
    check_tensor(input, "pinverse")
    if not isinstance(rcond, (numbers.Real, Tensor)):   # NumPy's numbers too
        raise TypeError(f"pinverse(): argument 'rcond' must be float, not {type(rcond).__name__}")
    return linalg_pinv(input, rtol=float(rcond) if isinstance(rcond, bool) else rcond)


# ======================================================================================================
# lstsq
# ======================================================================================================

def _lstsq_vjp_a(xp, g, out, a, b, vec):
    p = xp.linalg_pinv(a)
    bm = xp.unsqueeze(b, -1) if vec else b
    gm = xp.unsqueeze(g, -1) if vec else g
    return _pinv_vjp(xp, xp.matmul(gm, _mH(xp, bm)), p, a)


def _lstsq_vjp_b(xp, g, out, a, b, vec):
    gm = xp.unsqueeze(g, -1) if vec else g
    r = xp.matmul(_mH(xp, xp.linalg_pinv(a)), gm)
    return xp.squeeze(r, -1) if vec else r


def _lstsq_fwd(xp, a, b, vec):
    r = xp.matmul(xp.linalg_pinv(a), xp.unsqueeze(b, -1) if vec else b)
    return r[..., 0] if vec else r


def _lstsq_jvp_a(xp, t, out, a, b, vec):
    p = xp.linalg_pinv(a)
    r = xp.matmul(_pinv_jvp(xp, t, p, a), xp.unsqueeze(b, -1) if vec else b)
    return xp.squeeze(r, -1) if vec else r


def _lstsq_jvp_b(xp, t, out, a, b, vec):
    r = xp.matmul(xp.linalg_pinv(a), xp.unsqueeze(t, -1) if vec else t)
    return xp.squeeze(r, -1) if vec else r


graph_raw("lstsq_rank")
lstsq_p = defprim("lstsq", _lstsq_fwd, node="LinalgLstsqBackward0",
                                                               vjp=(_lstsq_vjp_a, _lstsq_vjp_b),
                  jvp=(_lstsq_jvp_a, _lstsq_jvp_b), saves={0: (0, 1), 1: (0,)}, batch=True, complex="own")

LstsqResult = return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@register(submodule="linalg", module=False, name="lstsq")
def linalg_lstsq(A: Tensor, B: Tensor, rcond=None, *, driver: str | None = None):
    """Least-squares solution of A X = B (the minimum-norm one), with PyTorch's outputs per driver."""
    op = "torch.linalg.lstsq"
    check_tensor(A, "linalg_lstsq", "self")
    check_tensor(B, "linalg_lstsq", "b", 2)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    _check_float(A, op)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{dtype_word(A._data.dtype)} and other's dtype {dtype_word(B._data.dtype)}")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vec = B._data.ndim == A._data.ndim - 1   # PyTorch's rule for lstsq (not solve's)
    m, n = A._data.shape[-2:]
    bm = B._data.shape[-1] if vec else B._data.shape[-2]
    if bm != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-{1 if vec else 2})")
    bb = B._data.shape[:-1] if vec else B._data.shape[:-2]
    if not _broadcastable(A._data.shape[:-2], bb):
        raise RuntimeError(f"The size of tensor a ({A._data.shape[0]}) must match the size of tensor b ({bb[0]}) at "
                           f"non-singleton dimension 0")
    x = apply(lstsq_p, (A, B), {"vec": vec})
    xp = NAMESPACES[type(A._data)]
    cx = A._data.dtype.kind == "c"
    dt = xp.real(A._data).dtype if cx else A._data.dtype   # residuals and singular values are real
    batch = _broadcast(A._data.shape[:-2], bb)
    s, rank = xp.lstsq_rank(A._data, rcond)
    empty = make(xp.backend.zeros((0,), dt))
    if driver == "gelsy":
        return LstsqResult(x, empty, make(xp.backend.copy(xp.expand(rank, batch))), empty)
    residuals = empty
    if m > n and bool(xp.all(rank == n)):
        from ..reduction import sum as _sum
        diff = A @ (x.unsqueeze(-1) if vec else x) - (B.unsqueeze(-1) if vec else B)
        residuals = _sum((diff * diff.conj()).real if cx else diff * diff, -2)
        if vec:
            residuals = residuals.squeeze(-1)
    if driver == "gels":
        return LstsqResult(x, residuals, make(xp.backend.zeros((0,), rank.dtype)), empty)
    return LstsqResult(x, residuals, make(xp.backend.copy(xp.expand(rank, batch))), make(xp.backend.copy(s, dt)))


# ======================================================================================================
# lu_solve (and the legacy lu_solve): rules after PyTorch's linalg_lu_solve_LU/_jvp
# ======================================================================================================

def _lu_solve_vjp_lu(xp, g, out, lu, piv, b, left, adjoint):
    """PyTorch's linalg_lu_solve_LU: the gradient of X = lu_solve(LU, pivots, B) with respect to LU."""
    P, L, U = xp.lu_unpack(lu, piv, True, left == adjoint)
    if left != adjoint:
        gR = xp.solve_triangular(_mT(xp, U), -xp.matmul(g if left else _mT(xp, g), _mT(xp, out) if left else out),
                                 upper=False)
        gL = xp.solve_triangular(_mT(xp, L), xp.matmul(gR, _mT(xp, U)), upper=True, unitriangular=True)
        return xp.tril(gL, -1) + xp.triu(gR)
    gR = -xp.matmul(xp.matmul(xp.matmul(_mT(xp, P), out if left else _mT(xp, out)), _mT(xp, g) if left else g), P)
    gR = xp.solve_triangular(_mT(xp, L), gR, upper=True, left=False, unitriangular=True)
    gU = xp.solve_triangular(_mT(xp, U), xp.matmul(_mT(xp, L), gR), upper=False, left=False)
    return xp.tril(gR, -1) + xp.triu(gU)


def _lu_solve_jvp_lu(xp, t, out, lu, piv, b, left, adjoint):
    """PyTorch's linalg_lu_solve_jvp for the tangent of LU (that of B is a solve)."""
    if left != adjoint:
        R = xp.solve_triangular(lu, xp.tril(t, -1), upper=False, unitriangular=True)
        U = xp.triu(lu)
        R = -xp.solve_triangular(U, xp.triu(t) + xp.matmul(R, U), upper=True)
        return xp.matmul(R, out) if left else xp.matmul(out, _mT(xp, R))
    P, L, U = xp.lu_unpack(lu, piv)
    V = _mT(xp, out) if left else out
    R = xp.solve_triangular(U, xp.matmul(L, xp.triu(t)), upper=True, left=False) + xp.tril(t, -1)
    R = xp.matmul(xp.solve_triangular(L, -xp.matmul(xp.matmul(V, P), R), upper=False, left=False,
                                      unitriangular=True), _mT(xp, P))
    return _mT(xp, R) if left else R


lu_solve_p = defprim(
    "lu_solve",
    lambda xp, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, b, left=left, adjoint=adjoint),
    complex=True, node="LinalgLuSolveBackward0", vjp=(_lu_solve_vjp_lu, lambda xp, g, out, lu, piv, b, left, adjoint: None,
         lambda xp, g, out, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, g, left=left, adjoint=not adjoint)),
    jvp=(_lu_solve_jvp_lu, None,
         lambda xp, t, out, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, t, left=left, adjoint=adjoint)),
    saves={0: (0, 2), 1: (0, 2)}, saves_out=True, batch=True)


def _check_lu_solve(LU, pivots, B, left, adjoint, op="linalg.lu_solve"):
    check_tensor(LU, "linalg_lu_solve", "LU")
    check_tensor(pivots, "linalg_lu_solve", "pivots", 2)
    check_tensor(B, "linalg_lu_solve", "B", 3)
    left = check_bool(left, "linalg_lu_solve", "left")
    adjoint = check_bool(adjoint, "linalg_lu_solve", "adjoint")
    a, b, p = LU._data, B._data, pivots._data
    if a.ndim < 2:
        raise RuntimeError(f"torch.{op}: The input tensor A must have at least 2 dimensions.")
    if b.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: Expected LU and B to have the same dtype, but found LU of type "
                           f"{dtype_word(a.dtype)} and B of type {dtype_word(b.dtype)} instead")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"torch.{op}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    _check_float(LU, f"torch.{op}", later=True)
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    if dtype_word(p.dtype) != "Int":
        raise RuntimeError(f"{op}: pivots should be a Tensor of scalar type torch.int32")
    if p.ndim == 0 or p.shape[-1] != n:
        raise RuntimeError(f"{op}: Number of pivots per batch should be same as the dimension of the matrix")
    if p.shape != a.shape[:-1]:
        raise RuntimeError(f"{op}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape "
                           f"{list(p.shape)} instead")
    if not _broadcastable(a.shape[:-2], b.shape[:-2]):
        ba, bb = a.shape[:-2], b.shape[:-2]
        k = max(len(ba), len(bb))
        pa, pb = (1,) * (k - len(ba)) + tuple(ba), (1,) * (k - len(bb)) + tuple(bb)
        i = next(i for i in range(k - 1, -1, -1) if pa[i] != pb[i] and 1 not in (pa[i], pb[i]))
        raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                           f"non-singleton dimension {i}")
    if not NAMESPACES[type(p)].in_range(p, 1, n + 1):
        raise RuntimeError(f"{op}: pivots must be between 1 and LU.size(-2) = {n}")
    _bf16_kernel(LU, op)
    return left, adjoint


# the rules' lu_solve (the kernel's: ``adjoint`` transposes, also for complex A)
graph("linalg_lu_solve", lambda lu, piv, b, left=True, adjoint=False: apply(
    lu_solve_p, (lu, piv, b), {"left": left, "adjoint": adjoint}))


@register(submodule="linalg", module=False, name="lu_solve")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,
                    out=None) -> Tensor:
    """X with A X = B for A = P L U given as ``lu_factor``'s (LU, pivots); ``adjoint``: A^H X = B;
    ``left=False``: X A = B. Batch dims broadcast."""
    _no_out(out, "linalg.lu_solve")
    left, adjoint = _check_lu_solve(LU, pivots, B, left, adjoint)
    if adjoint and LU._data.dtype.kind == "c":
        # A^H X = B is A^T conj(X) = conj(B): the primitive's adjoint transposes (its rules are holomorphic)
        from ..complex import conj
        return conj(apply(lu_solve_p, (LU, pivots, conj(B)), {"left": left, "adjoint": True}))
    return apply(lu_solve_p, (LU, pivots, B), {"left": left, "adjoint": adjoint})


@register(method=True, name="lu_solve")
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """Deprecated form of ``linalg.lu_solve(LU_data, LU_pivots, input)`` (with PyTorch's warning)."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                  "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                  "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
                  UserWarning, stacklevel=2)
    return linalg_lu_solve(LU_data, LU_pivots, input, out=out)


# ----- autograd.grad(is_grads_batched=True): the primitives whose VJP rules batch as written (see products.py)


# ======================================================================================================
# ldl_solve (LAPACK's sytrs): not differentiable, as PyTorch's
# ======================================================================================================

graph_raw("linalg_ldl_solve")


def _ldl_solve_vjp(xp, g, out, ld, b, value):
    raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


def _ldl_solve_jvp(xp, t, out, ld, b, value):
    raise NotImplementedError("Trying to use forward AD with aten::linalg_ldl_solve that does not support it.")


# PyTorch records the solution under a NotImplemented node (edges to LD and B) whose backward raises
ldl_solve_p = defprim("linalg_ldl_solve", lambda xp, ld, b, value: value, node="NotImplemented",
                      vjp=(_ldl_solve_vjp, _ldl_solve_vjp), jvp=(_ldl_solve_jvp, _ldl_solve_jvp), complex="own")


@register(submodule="linalg", module=False, name="ldl_solve")
def linalg_ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None) -> Tensor:
    """X with A X = B from ``ldl_factor``'s (LD, pivots); batch dims broadcast."""
    op = "torch.linalg.ldl_solve"
    _no_out(out, "linalg.ldl_solve")
    _check_matrix(LD, op, arg="LD", later=True)
    check_tensor(pivots, "ldl_solve", "pivots", 2)
    check_tensor(B, "ldl_solve", "B", 3)
    hermitian = check_bool(hermitian, "linalg_ldl_solve", "hermitian")
    ld, piv, b = LD._data, pivots._data, B._data
    if b.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(b.ndim, 1)}, "
                         f"{max(b.ndim, 1) - 1}], but got -2)")
    if piv.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got {dtype_word(piv.dtype)}")
    if tuple(piv.shape) != tuple(ld.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with "
                           f"shape {list(piv.shape)} instead")
    if b.shape[-2] != ld.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {ld.shape[-1]} by "
                           f"{ld.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    if b.dtype != ld.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {dtype_word(b.dtype)} and "
                           f"A of type {dtype_word(ld.dtype)} instead.")
    if not _broadcastable(ld.shape[:-2], b.shape[:-2]):
        raise RuntimeError(f"The size of tensor a must match the size of tensor b at non-singleton dimensions: "
                           f"{list(ld.shape[:-2])} and {list(b.shape[:-2])}")
    _bf16_kernel(LD, op)
    return apply(ldl_solve_p, (LD, B), {"value": NAMESPACES[type(ld)].linalg_ldl_solve(ld, piv, b, hermitian)})


# ----- cholesky_inverse: (L L^T)^-1 from the Cholesky factor, as cholesky_solve(I, L) (PyTorch: LAPACK's potri);
# composed of differentiable ops, so its node is CholeskySolveBackward0 (PyTorch's: CholeskyInverseBackward0) ------

@register(method=True)
def cholesky_inverse(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The inverse of A = L L^H (U^H U if ``upper``) given its Cholesky factor ``input``."""
    _no_out(out, "cholesky_inverse")
    check_tensor(input, "cholesky_inverse")
    upper = check_bool(upper, "cholesky_inverse", "upper")
    a = input._data
    if a.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    if a.dtype.kind not in "fc":
        raise NotImplementedError(f"\"cholesky_inverse_out_cpu\" not implemented for '{dtype_word(a.dtype)}'")
    eye = NAMESPACES[type(a)].eye_like(a)
    return cholesky_solve(make(eye), input, upper)


# ----- vmap -------------------------------------------------------------------------------------------------
from ..shape import leading_broadcast as _leading_broadcast  # noqa: E402  (the vmap rules only)
_batching.by_name(_leading_broadcast, "solve_triangular", "cholesky_solve")   # (not solve: a batch of vectors B)
_batching.by_name("leading", "solve")
_batching.by_name("leading", "inv", "pinv", "lstsq", "lu_solve",
                  "linalg_ldl_solve")
