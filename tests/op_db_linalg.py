"""Op database entries of the 'linalg' family (collected into op_db.OP_DB).

Products take random inputs. Decompositions take well-conditioned ones: matrices near the identity for
det/inv/solve, symmetric positive-definite ones for cholesky, spectra with distinct eigen/singular values
for eigh/svd. Their outputs are made gauge-invariant where the decomposition is not unique (eigenvectors
and singular vectors get the sign that makes their first entry positive), as PyTorch's own tests do, so
values, gradients and central differences are comparable. Samples torch rejects live in the ``*_errors``
entries (forward test only: ember must raise torch's exception type).
"""
from __future__ import annotations

import numpy as np  # noqa: F401

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

NO_GRAD = dict(supports_grad=False, supports_gradgrad=False, supports_fwd=False)
F_I = FLOAT + ("int64",)


def _shapes(*cases):
    """Samples from (shapes, kwargs) pairs (kwargs optional), values from the 'real' domain."""
    def make(rng):
        out = []
        for c in cases:
            shapes, kw = (c if isinstance(c, tuple) and len(c) == 2 and isinstance(c[1], dict) else (c, {}))
            out.append(Sample(tuple(draw(rng, s) for s in shapes), dict(kw)))
        return out
    return make


def _errors(name, op, cases, dtypes=FLOAT):
    return OpInfo(name, op, _shapes(*cases), dtypes=dtypes, **NO_GRAD)


# ----- products ------------------------------------------------------------------------------------

def _einsum(m, *ts, eq):
    return m.einsum(eq, *ts)


EINSUM_CASES = [
    (((3, 4), (4, 5)), {"eq": "ij,jk->ik"}),
    (((2, 3, 4), (2, 4, 5)), {"eq": "bij,bjk->bik"}),
    (((3, 3),), {"eq": "ii->i"}),
    (((3, 3),), {"eq": "ii"}),                                   # trace, implicit output
    (((3, 4),), {"eq": "ij->ji"}),
    (((3, 4),), {"eq": "ij->"}),
    (((4,), (4,)), {"eq": "i,i->"}),
    (((3,), (4,)), {"eq": "i,j->ij"}),
    (((3, 4), (3, 4)), {"eq": "ij,ij->ij"}),
    (((2, 3, 4), (4, 5), (5, 2)), {"eq": "bij,jk,kl->bil"}),    # three operands: contraction order
    (((2, 3, 4), (4, 3)), {"eq": "...ij,jk->...ik"}),
    (((2, 3, 4), (3, 4)), {"eq": "...ij,...ij->..."}),
    (((1, 3), (4, 3)), {"eq": "ij,ij->ij"}),                    # a size-1 dim broadcasts
    (((2, 2, 3),), {"eq": "iij->j"}),
    (((3, 2, 3),), {"eq": "iji->ij"}),
    (((0, 3), (3, 2)), {"eq": "ij,jk->ik"}),
    (((), (3,)), {"eq": ",i->i"}),
    (((3, 4), (4, 5)), {"eq": "ij,jk"}),                        # implicit: 'ik'
    (((2, 3), (3, 4), (4, 2)), {"eq": "ij,jk,ki->"}),
    (((2, 3, 0), (2, 0, 4)), {"eq": "bij,bjk->bik"}),            # an empty contracted dimension
    (((3, 0),), {"eq": "ij->i"}),
    (((0, 0),), {"eq": "ii"}),
]

EINSUM_ERRORS = [
    (((3, 4), (5, 6)), {"eq": "ij,jk->ik"}),
    (((3, 3),), {"eq": "ii->ii"}),
    (((3, 4),), {"eq": "ijk->i"}),
    (((3, 4),), {"eq": "ij->k"}),
    (((3, 4), (4, 2)), {"eq": "ij->i"}),
    (((3, 4),), {"eq": "ij,jk->ik"}),
    (((3, 4),), {"eq": "i1->i"}),
]


def _tensordot(m, a, b, dims):
    return m.tensordot(a, b, dims=dims)


def _mm_fns(name):
    return lambda m, a, b: getattr(m, name)(a, b)


def _addprod(name, method=False, inplace=False, **kw):
    def op(m, c, a, b):
        if inplace:
            return getattr(c.clone(), name + "_")(a, b, **kw)
        return getattr(c, name)(a, b, **kw) if method else getattr(m, name)(c, a, b, **kw)
    return op


def _multi_dot(m, *ts):
    return m.linalg.multi_dot(list(ts))


def _chain_matmul(m, *ts):
    return m.chain_matmul(*ts)


def _cross(m, a, b, dim=None, linalg=False):
    if linalg:
        return m.linalg.cross(a, b) if dim is None else m.linalg.cross(a, b, dim=dim)
    return m.cross(a, b, dim=dim)


OPS = [
    OpInfo("mm", _mm_fns("mm"), _shapes(((3, 4), (4, 5)), ((0, 3), (3, 2)), ((3, 0), (0, 2)), ((1, 1), (1, 1))),
           dtypes=F_I),
    OpInfo("mm_method", lambda m, a, b: a.mm(b), _shapes(((2, 3), (3, 4)))),
    _errors("mm_errors", _mm_fns("mm"), [((3, 4), (5, 6)), ((3,), (3, 4)), ((2, 3, 4), (4, 5))]),
    OpInfo("bmm", _mm_fns("bmm"), _shapes(((2, 3, 4), (2, 4, 5)), ((1, 2, 2), (1, 2, 3)), ((0, 2, 3), (0, 3, 1)),
                                          ((2, 3, 0), (2, 0, 4))),
           dtypes=F_I),
    _errors("bmm_errors", _mm_fns("bmm"), [((1, 2, 3), (4, 3, 2)), ((2, 2, 3), (2, 2, 2)), ((2, 3), (3, 2))]),
    OpInfo("mv", _mm_fns("mv"), _shapes(((3, 4), (4,)), ((0, 2), (2,)), ((2, 0), (0,))), dtypes=F_I),
    _errors("mv_errors", _mm_fns("mv"), [((3, 4), (3,)), ((3, 4), (4, 1))]),
    OpInfo("dot", _mm_fns("dot"), _shapes(((4,), (4,)), ((0,), (0,)), ((1,), (1,))), dtypes=F_I),
    OpInfo("vdot", lambda m, a, b: a.vdot(b), _shapes(((4,), (4,)), ((1,), (1,))), dtypes=F_I),
    _errors("dot_errors", _mm_fns("dot"), [((3,), (4,)), ((2, 2), (2, 2)), ((), ())]),
    OpInfo("inner", _mm_fns("inner"), _shapes(((4,), (4,)), ((2, 3), (4, 3)), ((2, 3), (3,)), ((), (2, 3)),
                                              ((2, 1, 3), (2, 3)), ((2, 0), (3, 0))), dtypes=F_I),
    _errors("inner_errors", _mm_fns("inner"), [((2, 3), (3, 2))]),
    OpInfo("outer_method", lambda m, a, b: a.ger(b), _shapes(((3,), (2,)))),
    OpInfo("addmm", _addprod("addmm"), _shapes(((3, 5), (3, 4), (4, 5)), ((5,), (3, 4), (4, 5)), ((), (2, 3), (3, 2)),
                                               ((1, 5), (3, 0), (0, 5))), dtypes=F_I),
    OpInfo("addmm_scaled", _addprod("addmm", beta=0.5, alpha=-2.0), _shapes(((3, 5), (3, 4), (4, 5)))),
    OpInfo("addmm_beta0", _addprod("addmm", method=True, beta=0), _shapes(((3, 5), (3, 4), (4, 5)))),
    OpInfo("addmm_", _addprod("addmm", inplace=True, alpha=2), _shapes(((3, 5), (3, 4), (4, 5)))),
    _errors("addmm_errors", _addprod("addmm"), [((3, 5), (3, 4), (5, 4)), ((2, 5), (3, 4), (4, 5)),
                                                ((3, 5), (3,), (3, 5))]),
    OpInfo("addmv", _addprod("addmv", beta=2), _shapes(((3,), (3, 4), (4,)), ((), (2, 3), (3,)), ((3,), (3, 0), (0,))),
           dtypes=F_I),
    OpInfo("addmv_", _addprod("addmv", inplace=True), _shapes(((3,), (3, 4), (4,)))),
    OpInfo("addr_", _addprod("addr", inplace=True, beta=2), _shapes(((3, 4), (3,), (4,)))),
    OpInfo("addbmm_", _addprod("addbmm", inplace=True), _shapes(((3, 5), (2, 3, 4), (2, 4, 5)))),
    OpInfo("rmatmul", lambda m, a, b: b.__rmatmul__(a), _shapes(((3, 4), (4, 2)), ((4,), (4,)))),
    OpInfo("addr", _addprod("addr", alpha=3), _shapes(((3, 4), (3,), (4,)), ((4,), (3,), (4,)), ((0, 3), (0,), (3,))),
           dtypes=F_I),
    OpInfo("addr_method", _addprod("addr", method=True), _shapes(((3, 4), (3,), (4,)))),
    OpInfo("addbmm", _addprod("addbmm", beta=0.5), _shapes(((3, 5), (2, 3, 4), (2, 4, 5)), ((5,), (2, 3, 4), (2, 4, 5)),
                                                             ((3, 5), (2, 3, 0), (2, 0, 5)), ((3, 5), (0, 3, 4), (0, 4, 5))),
           dtypes=F_I),
    OpInfo("baddbmm", _addprod("baddbmm", alpha=0.5), _shapes(((2, 3, 5), (2, 3, 4), (2, 4, 5)),
                                                              ((3, 1), (2, 3, 4), (2, 4, 5)),
                                                              ((2, 3, 5), (2, 3, 0), (2, 0, 5))), dtypes=F_I),
    OpInfo("baddbmm_", _addprod("baddbmm", inplace=True), _shapes(((2, 3, 5), (2, 3, 4), (2, 4, 5)))),
    _errors("baddbmm_errors", _addprod("baddbmm"), [((2, 3, 5), (2, 3, 4), (3, 4, 5)), ((2, 3, 5), (3, 4), (4, 5))]),
    OpInfo("einsum", _einsum, _shapes(*EINSUM_CASES), dtypes=F_I),
    _errors("einsum_errors", _einsum, EINSUM_ERRORS),
    OpInfo("einsum_list", lambda m, a, b: m.einsum("ij,jk->ik", [a, b]), _shapes(((2, 3), (3, 2)))),
    OpInfo("tensordot", _tensordot, _shapes((((3, 4), (4, 5)), {"dims": 1}), (((2, 3, 4), (3, 4, 5)), {"dims": 2}),
                                            (((2, 3), (4,)), {"dims": 0}),
                                            (((2, 3, 4), (4, 2, 3)), {"dims": ([0, 1], [1, 2])}),
                                            (((3, 4), (4, 3)), {"dims": ([1], [0])}),
                                            (((3, 0, 2), (0, 2, 4)), {"dims": 2})), dtypes=F_I),
    _errors("tensordot_errors", _tensordot, [(((3, 4), (5, 6)), {"dims": 1}), (((3, 4), (4, 5)), {"dims": -1})]),
    OpInfo("kron", _mm_fns("kron"), _shapes(((2, 3), (3, 2)), ((2,), (3,)), ((2, 2), (3,)), ((), (2,)),
                                            ((2, 1, 2), (2, 2)), ((2, 0), (3, 2))), dtypes=F_I),
    OpInfo("multi_dot", _multi_dot, _shapes(((3, 4), (4, 5)), ((3, 4), (4, 5), (5, 2)), ((4,), (4, 5), (5, 3), (3,)),
                                            ((2, 3), (3,)), ((4,), (4,)), ((3, 0), (0, 4), (4, 2)))),
    _errors("multi_dot_errors", _multi_dot, [((3, 4), (5, 2)), ((2, 3, 4), (4, 5)), ((3,),)]),
    OpInfo("chain_matmul", _chain_matmul, _shapes(((3, 4), (4, 5), (5, 2)), ((3, 4),))),
    OpInfo("cross", _cross, _shapes((((4, 3), (4, 3)), {"dim": 1}), (((3, 2), (3, 2)), {}),
                                    (((2, 3, 4), (1, 3, 4)), {"dim": -2}))),
    OpInfo("linalg_cross", lambda m, a, b, **kw: _cross(m, a, b, linalg=True, **kw),
           _shapes(((4, 3), (4, 3)), ((1, 3), (2, 3)), (((3, 2), (3, 2)), {"dim": 0}))),
    _errors("cross_errors", lambda m, a, b: m.linalg.cross(a, b), [((4, 2), (4, 2)), ((2, 3), (4, 3))]),
]

# ----- decompositions and solvers -------------------------------------------------------------------------

def _near_eye(rng, shape, scale=0.3, flip=False):
    """A (batch of) well-conditioned matrices: the identity times 2 plus small noise (flip: det < 0)."""
    n = shape[-1]
    a = draw(rng, shape) * scale + 2 * np.eye(n)
    if flip and n:
        a[..., 0, :] *= -1
    return a


def _mats(*cases, flip=False):
    """(shape of A, other shapes..., kwargs): A near the identity, the others from 'real'."""
    def make(rng):
        out = []
        for c in cases:
            kw = c[-1] if isinstance(c[-1], dict) else {}
            shapes = c[:-1] if kw or isinstance(c[-1], dict) else c
            out.append(Sample((_near_eye(rng, shapes[0], flip=flip),) + tuple(draw(rng, s) for s in shapes[1:]),
                              dict(kw)))
        return out
    return make


def _spd(m, a):
    # a symmetric (Hermitian) positive-definite matrix made of any square a
    return a @ a.mH + a.shape[-1] * m.eye(a.shape[-1], dtype=a.dtype)


def _sym(m, a):
    return (a + a.mH) / 2


def _sign_fix(m, v):
    # the sign making each column's first entry positive: the loss is then invariant to LAPACK's choice
    # (complex: the phase making it real and positive)
    if v.dtype.is_complex:
        return m.sgn(v[..., :1, :]).conj()
    return m.sign(v[..., :1, :])


def _eigh(m, a, UPLO="L"):
    lam, v = m.linalg.eigh(_sym(m, a), UPLO)
    return lam, v * _sign_fix(m, v)


def _eig(m, a):
    lam, v = m.linalg.eig(a)
    return lam, v * _sign_fix(m, v)


def _svd(m, a):
    u, s, vh = m.linalg.svd(a, full_matrices=False)
    sg = _sign_fix(m, u)
    return u * sg, s, vh * (sg.mT.conj() if sg.dtype.is_complex else sg.mT)


def _svd_full(m, a):
    u, s, vh = m.linalg.svd(a)
    return u.abs(), s, vh.abs()


def _legacy_svd(m, a):
    u, s, v = m.svd(a)
    sg = _sign_fix(m, u)
    return u * sg, s, v * sg


def _qr(m, a, mode="reduced"):
    return tuple(m.linalg.qr(a, mode=mode))


def _chol_solve(m, b, a, upper=False):
    return m.cholesky_solve(b, m.linalg.cholesky(_spd(m, a), upper=upper), upper=upper)


def _solve_tri(m, a, b, **kw):
    return m.linalg.solve_triangular(a, b, **kw)


def _matrix_exp_samples(rng):
    return [Sample((draw(rng, s) * k,)) for s, k in [((3, 3), 0.5), ((2, 2, 2), 0.5), ((4, 4), 3.0), ((1, 1), 1.0),
                                                     ((0, 0), 1.0)]]


def _lstsq(m, a, b, **kw):
    r = m.linalg.lstsq(a, b, **kw)
    return r.solution


SVD_SHAPES = [((3, 3),), ((4, 2),), ((2, 4),), ((2, 3, 2),)]

OPS += [
    OpInfo("linalg_det", lambda m, a: m.linalg.det(a), _mats(((3, 3),), ((2, 2, 2),), ((1, 1),), ((4, 4),))),
    OpInfo("det_neg", lambda m, a: a.det(), _mats(((3, 3),), flip=True)),
    _errors("det_errors", lambda m, a: m.linalg.det(a), [((3,),), ((2, 3),)], dtypes=F_I),
    OpInfo("linalg_slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), _mats(((3, 3),), ((2, 2, 2),)), ),
    OpInfo("slogdet_neg", lambda m, a: tuple(m.slogdet(a)), _mats(((3, 3),), flip=True)),
    OpInfo("logdet", lambda m, a: m.logdet(a), _mats(((3, 3),), ((2, 2, 2),))),
    OpInfo("logdet_neg", lambda m, a: a.logdet(), _mats(((3, 3),), flip=True), **NO_GRAD),
    OpInfo("linalg_inv", lambda m, a: m.linalg.inv(a), _mats(((3, 3),), ((2, 2, 2),), ((1, 1),), ((0, 0),))),
    OpInfo("inverse", lambda m, a: a.inverse(), _mats(((3, 3),))),
    _errors("inv_errors", lambda m, a: m.linalg.inv(a), [((2, 3),), ((3,),)], dtypes=F_I),
    OpInfo("linalg_solve", lambda m, a, b, **kw: m.linalg.solve(a, b, **kw),
           _mats(((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3, 2)), ((2, 3, 3), (2, 3)),
                 ((3, 3), (2, 3), {"left": False}))),
    _errors("solve_errors", lambda m, a, b: m.linalg.solve(a, b), [((3, 3), (2, 2)), ((2, 3), (2,)),
                                                                    ((2, 3, 3), (3, 3, 1))]),
    OpInfo("solve_triangular", _solve_tri,
           _mats(((3, 3), (3, 2), {"upper": False}), ((3, 3), (3, 2), {"upper": True}),
                 ((2, 3, 3), (3, 1), {"upper": True, "unitriangular": True}),
                 ((3, 3), (2, 3), {"upper": False, "left": False}))),
    OpInfo("triangular_solve", lambda m, b, a, **kw: tuple(m.triangular_solve(b, a, **kw)),
           _shapes((((3, 2), (3, 3)), {}), (((3, 2), (3, 3)), {"upper": False, "transpose": True}))),
    OpInfo("linalg_cholesky", lambda m, a, **kw: m.linalg.cholesky(_spd(m, a), **kw),
           _shapes(((3, 3),), ((2, 2, 2),), (((3, 3),), {"upper": True}), ((1, 1),))),
    OpInfo("cholesky_legacy", lambda m, a: _spd(m, a).cholesky(), _shapes(((3, 3),))),
    OpInfo("cholesky_legacy_fn", lambda m, a: m.cholesky(_spd(m, a), upper=True), _shapes(((2, 2),))),
    _errors("cholesky_errors", lambda m, a: m.linalg.cholesky(a), [((2, 3),)]),
    OpInfo("cholesky_solve", lambda m, b, a, **kw: _chol_solve(m, b, a, **kw),
           _shapes(((3, 2), (3, 3)), (((3, 1), (3, 3)), {"upper": True}), ((2, 3, 2), (3, 3)))),
    OpInfo("linalg_qr", _qr, _shapes(((3, 3),), ((4, 2),), ((2, 4),), ((2, 3, 2),), (((2, 3),), {"mode": "complete"}))),
    OpInfo("linalg_qr_forward", _qr, _shapes((((4, 2),), {"mode": "complete"}), (((4, 2),), {"mode": "r"})),
           **NO_GRAD),
    OpInfo("qr_legacy", lambda m, a: tuple(a.qr()), _shapes(((3, 2),))),
    OpInfo("qr_legacy_fn", lambda m, a: tuple(m.qr(a, some=False)), _shapes(((2, 3),))),
    _errors("qr_errors", lambda m, a: m.linalg.qr(a, mode="x"), [((2, 2),)]),
    OpInfo("linalg_eigh", _eigh, _shapes(((3, 3),), ((2, 2, 2),), (((4, 4),), {"UPLO": "U"}), ((1, 1),))),
    OpInfo("linalg_eig", _eig, _shapes(((3, 3),), ((2, 3, 3),), ((1, 1),), ((4, 4),))),
    OpInfo("linalg_eigvals", lambda m, a: m.linalg.eigvals(a), _shapes(((3, 3),), ((2, 2, 2),))),
    _errors("eig_errors", lambda m, a: m.linalg.eig(a), [((2, 3),), ((3,),)], dtypes=F_I),
    _errors("eig_removed", lambda m, a: m.eig(a), [((2, 2),)]),
    _errors("eig_removed_method", lambda m, a: a.eig(eigenvectors=True), [((2, 2),)]),
    OpInfo("mH", lambda m, a: a.mH, _shapes(((2, 3, 4),), ((3, 3),))),
    OpInfo("H", lambda m, a: a.H, _shapes(((3, 4),))),
    _errors("mH_errors", lambda m, a: a.mH, [((3,),)]),
    OpInfo("linalg_eigvalsh", lambda m, a: m.linalg.eigvalsh(_sym(m, a)), _shapes(((3, 3),), ((2, 2, 2),))),
    _errors("eigh_errors", lambda m, a: m.linalg.eigh(a), [((2, 3),)], dtypes=F_I),
    OpInfo("linalg_svd", _svd, _shapes(*SVD_SHAPES)),
    OpInfo("linalg_svd_full", _svd_full, _shapes(((4, 2),), ((2, 3),), ((2, 2),)), **NO_GRAD),
    OpInfo("svd", _legacy_svd, _shapes(((3, 2),))),
    OpInfo("linalg_svdvals", lambda m, a: m.linalg.svdvals(a), _shapes(*SVD_SHAPES)),
    _errors("svd_errors", lambda m, a: m.linalg.svd(a), [((3,),)], dtypes=F_I),
    OpInfo("linalg_pinv", lambda m, a: m.linalg.pinv(a), _shapes(*SVD_SHAPES)),
    OpInfo("pinverse", lambda m, a: a.pinverse(), _shapes(((3, 2),))),
    OpInfo("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), _matrix_exp_samples),
    OpInfo("matrix_exp_method", lambda m, a: a.matrix_exp(), _shapes(((2, 2),))),
    OpInfo("matrix_power", lambda m, a, n: m.linalg.matrix_power(a, n),
           _mats(*[((3, 3), {"n": k}) for k in (0, 1, 2, 3, 5, -1, -2)], ((2, 2, 2), {"n": 4}))),
    _errors("matrix_power_errors", lambda m, a: a.matrix_power(2), [((2, 3),), ((3,),)], dtypes=F_I),
    OpInfo("linalg_lstsq", _lstsq, _shapes(((4, 3), (4, 2)), ((2, 3), (2, 2)), ((2, 4, 3), (2, 4)), ((4, 3), (4,)),
                                           ((2, 4, 3), (1, 4, 2)))),
    _errors("lstsq_errors", _lstsq, [((2, 4, 3), (4, 1)), ((4, 3), (3, 2))]),
    OpInfo("linalg_lstsq_outputs", lambda m, a, b, driver: tuple(m.linalg.lstsq(a, b, driver=driver)),
           _shapes(*[(((4, 3), (4, 2)), {"driver": d}) for d in ("gelsy", "gelsd", "gelss", "gels")]), **NO_GRAD),
    OpInfo("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), _shapes(((3, 3),), ((2, 4, 3),)), **NO_GRAD),
    OpInfo("linalg_norm", lambda m, a, **kw: m.linalg.norm(a, **kw),
           _shapes(((3, 4),), ((5,),), (((3, 4),), {"ord": "fro"}), (((3, 4),), {"ord": "nuc"}),
                   (((3, 4),), {"ord": 2}), (((2, 3, 4),), {"dim": (1, 2)}), (((2, 3, 4),), {"dim": 1}))),
    OpInfo("linalg_cond", lambda m, a, **kw: m.linalg.cond(a, **kw), _mats(((3, 3),), ((2, 3, 3),), ((3, 3), {"p": -2}))),
    # torch's own backward through cond(p='fro' / 1) fails (its inverse is modified in place): values only
    OpInfo("linalg_cond_p", lambda m, a, **kw: m.linalg.cond(a, **kw), _mats(((3, 3), {"p": "fro"}), ((3, 3), {"p": 1})),
           **NO_GRAD),
]

HYP_UNARY: list = []    # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = []   # names of entries whose two broadcasting inputs hypothesis draws shapes for

# ----- LU ---------------------------------------------------------------------------------------------------

def _pivoted(rng, shape):
    """Well-conditioned matrices that need row exchanges: 2 I (m x n) plus small noise, rows shuffled, so
    each column's pivot wins by a wide margin (the pivots are locally constant, as the derivatives assume)."""
    m, n = shape[-2:]
    a = draw(rng, shape) * 0.3 + 2 * np.eye(m, n)
    return a[..., rng.permutation(m), :]


def _lu_samples(*cases):
    """(shape of A, other shapes..., kwargs): A from _pivoted, the others from 'real'."""
    def make(rng):
        out = []
        for c in cases:
            kw = c[-1] if isinstance(c[-1], dict) else {}
            shapes = c[:-1] if isinstance(c[-1], dict) else c
            out.append(Sample((_pivoted(rng, shapes[0]),) + tuple(draw(rng, s) for s in shapes[1:]), dict(kw)))
        return out
    return make


def _lu_solve_samples(rng):
    """A packed LU (unit-lower part and upper part of a well-conditioned matrix), its pivots and B."""
    out = []
    for lu_shape, b_shape, kw in [((3, 3), (3, 2), {}), ((3, 3), (3, 2), {"adjoint": True}),
                                  ((3, 3), (2, 3), {"left": False}), ((3, 3), (2, 3), {"left": False, "adjoint": True}),
                                  ((2, 3, 3), (3, 1), {}), ((3, 3), (2, 3, 2), {"adjoint": True}),
                                  ((2, 1, 2, 2), (3, 2, 2), {"left": False}), ((1, 1), (1, 3), {}),
                                  ((0, 0), (0, 2), {})]:
        n = lu_shape[-1]
        lu = draw(rng, lu_shape) * 0.3 + 2 * np.eye(n)
        piv = np.stack([rng.integers(i, n, lu_shape[:-2]) + 1 for i in range(n)], -1).astype(np.int32) if n else \
            np.zeros(lu_shape[:-1], np.int32)
        out.append(Sample((lu, draw(rng, b_shape)), dict(kw, piv=piv)))
    return out


def _lu_solve(m, lu, b, piv, **kw):
    return m.linalg.lu_solve(lu, m.tensor(piv), b, **kw)


def _lu_solve_through_factor(m, a, b, **kw):
    LU, piv = m.linalg.lu_factor(a)
    return m.linalg.lu_solve(LU, piv, b, **kw)


def _lu_ties(m, a, op="lu_factor_ex"):
    # integer-valued matrices: ties between candidate pivots (LAPACK takes the first) and singular ones
    return tuple(getattr(m.linalg, op)(m.round(a)))


LU_SHAPES = [((3, 3),), ((2, 3, 3),), ((4, 2),), ((2, 4),), ((1, 1),), ((2, 1, 4, 3),), ((0, 2),), ((3, 0),)]

OPS += [
    OpInfo("linalg_lu_factor", lambda m, a: tuple(m.linalg.lu_factor(a)), _lu_samples(*LU_SHAPES)),
    OpInfo("linalg_lu_factor_ex", lambda m, a: tuple(m.linalg.lu_factor_ex(a)), _lu_samples(((3, 3),), ((2, 5, 3),))),
    # P has no history (torch.autograd.grad refuses it): the gradient entries take L and U
    OpInfo("linalg_lu", lambda m, a: tuple(m.linalg.lu(a))[1:], _lu_samples(*LU_SHAPES)),
    OpInfo("linalg_lu_P", lambda m, a: tuple(m.linalg.lu(a)), _lu_samples(((3, 3),), ((2, 4, 2),)), **NO_GRAD),
    OpInfo("lu_factor_ex_ties", _lu_ties, _shapes(((4, 4),), ((3, 5),), ((5, 3),), ((3, 4, 4),), ((2, 2),)), **NO_GRAD),
    OpInfo("lu_ties", lambda m, a: _lu_ties(m, a, "lu"), _shapes(((4, 4),), ((5, 3),), ((3, 3, 3),)), **NO_GRAD),
    # NaN: LAPACK's idamax skips it unless it comes first in the column
    OpInfo("lu_factor_ex_nan", lambda m, a: tuple(m.linalg.lu_factor_ex(m.where(a > 1.2, float("nan"), a))),
           _shapes(((4, 4),), ((3, 3, 3),)), **NO_GRAD),
    OpInfo("lu_factor_ex_zero", lambda m, a: tuple(m.linalg.lu_factor_ex(a * 0)), _shapes(((3, 3),), ((2, 3),)),
           **NO_GRAD),
    _errors("lu_factor_errors", lambda m, a, **kw: m.linalg.lu_factor(a, **kw),
            [((3,),), (((3, 3),), {"pivot": False}), (((2, 3),), {"pivot": 1})], dtypes=F_I),
    _errors("lu_factor_singular", lambda m, a: m.linalg.lu_factor(m.round(a) * 0), [((3, 3),), ((2, 2, 2),)]),
    _errors("lu_errors", lambda m, a, **kw: m.linalg.lu(a, **kw), [((3,),), (((3, 3),), {"pivot": False})],
            dtypes=F_I),
    OpInfo("lu_unpack", lambda m, a, **kw: tuple(m.lu_unpack(*m.linalg.lu_factor(a), **kw))[1:],
           _lu_samples(((3, 3),), ((4, 2),), ((2, 2, 4),), ((4, 2), {"unpack_pivots": False}))),
    OpInfo("lu_unpack_P", lambda m, a, **kw: tuple(m.lu_unpack(*m.linalg.lu_factor(a), **kw)),
           _lu_samples(((3, 3),), ((2, 2, 4),), ((3, 3), {"unpack_data": False})), **NO_GRAD),
    _errors("lu_unpack_errors", lambda m, a, piv: m.lu_unpack(a, m.tensor(np.array(piv, np.int32))),
            [(((3, 3),), {"piv": [4, 1, 1]}), (((3,),), {"piv": [1, 1, 1]}), (((3, 3),), {"piv": [0, 2, 3]})]),
    OpInfo("linalg_lu_solve", _lu_solve, _lu_solve_samples),
    OpInfo("lu_solve_through_factor", _lu_solve_through_factor,
           _lu_samples(((3, 3), (3, 2)), ((3, 3), (2, 3), {"left": False}), ((2, 3, 3), (3, 1), {"adjoint": True}),
                       ((3, 3), (2, 3), {"left": False, "adjoint": True}))),
    OpInfo("lu_solve_legacy", lambda m, a, b: m.lu_solve(b, *m.linalg.lu_factor(a)), _lu_samples(((3, 3), (3, 2)))),
    OpInfo("lu_solve_method", lambda m, a, b: b.lu_solve(*m.linalg.lu_factor(a)), _lu_samples(((2, 2, 2), (2, 2, 1)))),
    OpInfo("lu_legacy", lambda m, a: tuple(m.lu(a)), _lu_samples(((3, 3),), ((2, 4),))),
    OpInfo("lu_legacy_infos", lambda m, a: tuple(a.lu(get_infos=True)), _lu_samples(((4, 3),))),
    _errors("lu_solve_errors", lambda m, lu, b, **kw: _lu_solve(m, lu, b, **kw),
            [(((3, 3), (3,)), {"piv": np.array([1, 2, 3], np.int32)}),
             (((3, 3), (4, 2)), {"piv": np.array([1, 2, 3], np.int32)}),
             (((3, 3), (3, 2)), {"piv": np.array([1, 2, 3]), "left": False}),
             (((3, 3), (3, 2)), {"piv": np.array([1, 2, 3], np.int64)}),
             (((3, 3), (3, 2)), {"piv": np.array([1, 2], np.int32)}),
             (((2, 3), (3, 2)), {"piv": np.array([1, 2], np.int32)}),
             (((2, 3, 3), (3, 3, 2)), {"piv": np.ones((2, 3), np.int32)}),
             (((3, 3), (3, 2)), {"piv": np.array([1, 2, 3], np.int32), "adjoint": 1})], dtypes=F_I),
]

# ----- det / slogdet at singular matrices -------------------------------------------------------------------

def _singular(m, a):
    # a zero last row: det is exactly 0 in any elimination order (a copied row is not: rounding)
    return m.cat([a[..., :-1, :], a[..., :1, :] * 0], -2)


def _det_grad_at_singular(m, a, create_graph=False, mixed=False):
    """The gradient of det at a singular matrix made of ``a``: PyTorch's plain backward gives zero, its
    create_graph backward the adjugate (through the SVD), itself differentiable in ``a``."""
    s = _singular(m, a)
    if mixed:   # a batch with a singular and a regular matrix
        s = m.stack([s, a + 2 * m.eye(a.shape[-1], dtype=a.dtype)])
    if not s.requires_grad:
        s = s.detach().requires_grad_()
    with m.enable_grad():   # central differences evaluate the op under no_grad
        (g,) = m.autograd.grad(m.linalg.det(s).sum(), s, create_graph=create_graph)
    return g


def _slogdet_grad_at_singular(m, a):
    s = _singular(m, a).detach().requires_grad_()
    return m.autograd.grad(m.linalg.slogdet(s)[1], s)[0]


OPS += [
    OpInfo("det_singular_grad", _det_grad_at_singular, _shapes(((3, 3),), ((2, 2),), ((2, 3, 3),)), **NO_GRAD),
    # the create_graph gradient is a smooth function of a (the adjugate): its own derivatives are checked
    # (forward mode: the inner autograd.grad needs a graph, which dual inputs do not make)
    OpInfo("det_singular_grad_create_graph", lambda m, a, **kw: _det_grad_at_singular(m, a, True, **kw),
           _shapes(((3, 3),), ((2, 2),), (((3, 3),), {"mixed": True})), supports_fwd=False),
    OpInfo("slogdet_singular_grad", _slogdet_grad_at_singular, _shapes(((2, 2),)), **NO_GRAD),
]


# ----- issue 18: the (result, info) forms, vecdot, vander, diagonal, tensorinv/tensorsolve, householder_product ----

def _not_pd(m, a):
    # a batch with a matrix that is not positive-definite (its second leading minor) beside a positive-definite one
    s = _spd(m, a)
    bad = s * m.tensor(np.array([[1.0, 3.0, 1.0], [3.0, 1.0, 1.0], [1.0, 1.0, 1.0]])).to(a.dtype)
    return m.stack([bad, s])


def _singular_batch(m, a):
    return m.stack([a, m.cat([a[:-1], a[:1] * 2], 0)])


def _zero_row_col(m, a):
    # the second row and column zero: sytrf's info > 0 there
    keep = m.ones(a.shape[-1], dtype=a.dtype)
    keep[1] = 0
    return a * keep * keep.unsqueeze(-1)


def _householder(m, a, tau_len=None):
    # tau of a QR-like size: 2 / (1 + |v|^2) keeps the reflectors orthogonal-ish and the values moderate
    k = a.shape[-1] if tau_len is None else tau_len
    tau = a[..., 0, :k] * 0.5
    return m.linalg.householder_product(a, tau)


def _near_eye_like(m, a, ind=2):
    # 3 times the identity of A's matrix form (prod(shape[:ind]) square), shaped as A: keeps tensorinv/solve regular
    n = int(np.prod(a.shape[:ind]))
    return 3 * m.eye(n, dtype=a.dtype).reshape(a.shape)


OPS += [
    OpInfo("linalg_cholesky_ex", lambda m, a, **kw: tuple(m.linalg.cholesky_ex(_spd(m, a), **kw)),
           _shapes(((3, 3),), ((2, 2, 2),), (((3, 3),), {"upper": True}), ((0, 0),))),
    OpInfo("cholesky_ex_not_pd", lambda m, a, **kw: tuple(m.linalg.cholesky_ex(_not_pd(m, a), **kw)),
           _shapes(((3, 3),), (((3, 3),), {"upper": True})), **NO_GRAD),
    _errors("cholesky_ex_errors", lambda m, a: m.linalg.cholesky_ex(_not_pd(m, a), check_errors=True),
            [((3, 3),)]),
    OpInfo("linalg_inv_ex", lambda m, a: tuple(m.linalg.inv_ex(a)), _mats(((3, 3),), ((2, 2, 2),), ((0, 0),))),
    OpInfo("inv_ex_singular", lambda m, a: tuple(m.linalg.inv_ex(_singular_batch(m, a))), _mats(((3, 3),)),
           **NO_GRAD),
    _errors("inv_ex_errors", lambda m, a, **kw: m.linalg.inv_ex(a, **kw),
            [((2, 3),), (((3, 3),), {"check_errors": True})], dtypes=F_I),
    OpInfo("linalg_solve_ex", lambda m, a, b, **kw: tuple(m.linalg.solve_ex(a, b, **kw)),
           _mats(((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3), {"left": False}))),
    OpInfo("solve_ex_singular", lambda m, a, b: tuple(m.linalg.solve_ex(_singular_batch(m, a), b)),
           _mats(((3, 3), (3, 2))), **NO_GRAD),
    _errors("solve_ex_errors", lambda m, a, b, **kw: m.linalg.solve_ex(a * 0, b, **kw),
            [(((3, 3), (3, 2)), {"check_errors": True}), ((3, 3), (2, 2))]),
    OpInfo("linalg_vecdot", lambda m, x, y, **kw: m.linalg.vecdot(x, y, **kw),
           _shapes(((4,), (4,)), ((2, 3), (3,)), (((3, 2), (1, 2)), {"dim": 0}), ((2, 3, 4), (3, 4)), ((0,), (0,)))),
    _errors("vecdot_errors", lambda m, x, y: m.linalg.vecdot(x, y), [((3,), (4,)), ((2, 3), (2, 4))], dtypes=F_I),
    OpInfo("linalg_vander", lambda m, x, **kw: m.linalg.vander(x, **kw),
           _shapes(((4,),), (((2, 3),), {"N": 5}), (((3,),), {"N": 2}), (((),), {"N": 3})), dtypes=F_I),
    _errors("vander_errors", lambda m, x, **kw: m.linalg.vander(x, **kw), [(((3,),), {"N": 1})], dtypes=F_I),
    OpInfo("linalg_diagonal", lambda m, a, **kw: m.linalg.diagonal(a, **kw),
           _shapes(((3, 4),), (((2, 3, 4),), {"offset": 1}), (((2, 3, 4),), {"dim1": 0, "dim2": 2, "offset": -1})),
           dtypes=F_I),
    OpInfo("linalg_tensorinv", lambda m, a, **kw: m.linalg.tensorinv(a + _near_eye_like(m, a, **kw), **kw),
           _shapes((((4, 2, 2),), {"ind": 1}), (((2, 3, 6),), {"ind": 2}), ((2, 2, 2, 2),))),
    _errors("tensorinv_errors", lambda m, a, **kw: m.linalg.tensorinv(a, **kw),
            [(((2, 3, 6),), {"ind": 1}), (((4, 4),), {"ind": 0}), (((2, 2),), {"ind": 1})]),
    OpInfo("linalg_tensorsolve", lambda m, a, b, **kw: m.linalg.tensorsolve(a + _near_eye_like(m, a, b.ndim), b, **kw),
           _shapes(((2, 3, 6), (2, 3)), ((4, 2, 2), (4,)))),
    OpInfo("tensorsolve_dims",
           lambda m, a, b: m.linalg.tensorsolve(a + _near_eye_like(m, a.movedim(0, 2)).movedim(2, 0), b, dims=(0,)),
           _shapes(((6, 2, 3), (2, 3)))),
    _errors("tensorsolve_errors", lambda m, a, b: m.linalg.tensorsolve(a, b), [((2, 3, 6), (2, 2))]),
    OpInfo("linalg_householder_product", _householder,
           _shapes(((4, 3),), ((3, 3),), ((2, 4, 2),), (((4, 3),), {"tau_len": 2}))),
    _errors("householder_product_errors", lambda m, a, t: m.linalg.householder_product(a, t),
            [((2, 3), (2,)), ((3, 2), (3,)), ((3,), (1,)), ((3, 2), (2, 1)), ((2, 3, 2), (3, 2))]),
    # LDL^T: Bunch-Kaufman pivots as LAPACK's sytrf (1x1 and 2x2 blocks; a zero row/column gives info > 0)
    OpInfo("linalg_ldl_factor_ex", lambda m, a, **kw: tuple(m.linalg.ldl_factor_ex(_sym(m, a), **kw)),
           _shapes(((4, 4),), ((2, 5, 5),), ((1, 1),), ((0, 0),), (((3, 3),), {"hermitian": True}), ((6, 6),)),
           **NO_GRAD),
    OpInfo("ldl_factor_ex_zero_row", lambda m, a: tuple(m.linalg.ldl_factor_ex(_zero_row_col(m, _sym(m, a)))),
           _shapes(((4, 4),), ((2, 3, 3),)), **NO_GRAD),
    OpInfo("ldl_factor_2x2", lambda m, a: tuple(m.linalg.ldl_factor(_sym(m, a) * (1 - m.eye(a.shape[-1])))),
           _shapes(((4, 4),), ((5, 5),)), **NO_GRAD),
    _errors("ldl_factor_errors", lambda m, a: m.linalg.ldl_factor(a), [((2, 3),), ((3,),)], dtypes=F_I),
    _errors("ldl_factor_singular", lambda m, a: m.linalg.ldl_factor(a * 0), [((2, 2),)]),
    OpInfo("linalg_ldl_solve", lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(_sym(m, a) + 3 * m.eye(
        a.shape[-1], dtype=a.dtype)), b), _shapes(((4, 4), (4, 2)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3, 2))),
           **NO_GRAD),
    OpInfo("ldl_solve_2x2", lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(
        _sym(m, a) * (1 - m.eye(a.shape[-1])) + 0.1 * m.eye(a.shape[-1])), b), _shapes(((5, 5), (5, 2))), **NO_GRAD),
    _errors("ldl_solve_errors", lambda m, a, b, **kw: m.linalg.ldl_solve(
        a, m.tensor(np.array(kw["piv"], np.int32)), b), [(((3, 3), (3,)), {"piv": [1, 2, 3]}),
                                                          (((3, 3), (3, 1)), {"piv": [1, 2]}),
                                                          (((3, 3), (2, 1)), {"piv": [1, 2, 3]})]),
]


# ----- geqrf: LAPACK's Householder QR. ember's LAPACK (NumPy's, OpenBLAS) is another build than PyTorch's (MKL):
# the same routine, results equal to rounding (compared within the dtype's tolerance), not always bit for bit.

def _geqrf_errors(rng):
    return [Sample((draw(rng, (3, 3)),), {"case": c}) for c in ("vector", "int", "backward")]


def _geqrf_error_call(m, a, case):
    return {"vector": lambda: m.geqrf(a[0]), "int": lambda: m.geqrf(a.int()),
            "backward": lambda: m.geqrf(a.detach().requires_grad_())[0].sum().backward()}[case]()


OPS += [
    OpInfo("geqrf", lambda m, a: m.geqrf(a), [((4, 3),), ((3, 5),), ((2, 3, 3),), ((0, 3),), ((3, 0),)],
           supports_grad=False, supports_gradgrad=False, supports_fwd=False),
    OpInfo("geqrf_method", lambda m, a: a.geqrf(), [((3, 3),)], supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
    OpInfo("geqrf_errors", _geqrf_error_call, _geqrf_errors, supports_grad=False, supports_gradgrad=False,
           supports_fwd=False),
]
