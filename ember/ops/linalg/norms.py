"""Norms and other properties of a matrix: linalg.norm and cond (on the reduction family's vector_norm and
matrix_norm), matrix_rank, det, slogdet and logdet."""
from __future__ import annotations

from ...autograd import _batching

import numbers

from ...devices import NAMESPACES
from ... import _dtype as D
from ..._tensor import Tensor, make, wrap_dim
from ...autograd._primitive import apply, defprim, graph_ns
from .._registry import SUBMODULES, graph, graph_raw, register
from ..._util import check_bool, check_tensor, dtype_word, return_type
from ._common import _check_float, _check_matrix, _eye, _i_imag, _mT, _no_out
from .decompositions import linalg_svdvals
from .solvers import _tol, linalg_inv, linalg_solve


# ======================================================================================================
# det, slogdet, logdet
# ======================================================================================================

def _inv_T(xp, a):
    return _mT(xp, xp.linalg_inv(a))


def _det_jvp(xp, t, out, a):
    # tr(adj(A) dA); PyTorch's forward mode gives 0 where det(A) is exactly 0 (its LU with eps pivots times 0)
    d = xp.sum(xp.det_backward(xp.ones_like(out), out, a) * t, (-2, -1))
    return xp.where(out == 0, 0.0, d)


# The VJP is xp.det_backward: in plain backward PyTorch's no-grad formula (g det A^-T from the LU, a zero
# pivot replaced by eps: an exactly singular A gets a zero gradient), under create_graph its grad-mode one
# (a solve, or the adjugate through the SVD where |det| < 100 eps), so both match PyTorch.
det_p = defprim("det", lambda xp, a: xp.linalg_det(a),
                complex=True, node="LinalgDetBackward0",
                vjp=lambda xp, g, out, a: xp.det_backward(g, out, a), jvp=_det_jvp, saves=(0,), saves_out=True)


def _eye_times(xp, v, a):
    # v[..., None, None] * I
    return xp.unsqueeze(xp.unsqueeze(v, -1), -1) * _eye(xp, a)


graph_raw("near_singular")


@graph("det_backward")
def _det_backward_graph(g, det, a):
    """PyTorch's linalg_det_backward with grad mode on (differentiable): solve(A^T, g det I) where
    |det| >= 100 eps, else the adjugate U diag(prod_{j != i} s_j) Vh det(U) det(Vh) g from the SVD."""
    from ..reduction import _prod_others
    xp = graph_ns
    if a._data.size == 0:
        return xp.zeros_like(a)
    raw = NAMESPACES[type(det._data)]
    g = g + xp.zeros_like(det)   # the batch shape of det
    mask = raw.near_singular(det._data)

    def non_singular(a, d, g):
        return xp.linalg_solve(_mT(xp, a), _eye_times(xp, g * d, a))

    def singular(a, d, g):
        u, s, vh = xp.linalg_svd(a)
        alpha = xp.linalg_det(u) * xp.linalg_det(vh) * g
        dd = xp.unsqueeze(alpha, -1) * _prod_others(xp, s, s.ndim - 1)
        return xp.matmul(u * xp.unsqueeze(dd, -2), vh)

    if not raw.any(mask):
        return non_singular(a, det, g)
    if raw.all(mask):
        return singular(a, det, g)
    # a batch with both kinds: each formula on its own elements, written into place (PyTorch's masked_fmap,
    # whose index_put_ the result's node is)
    m, nm = make(mask), make(~mask)
    out = xp.zeros_like(a).index_put((m,), singular(a[m], det[m], g[m]))
    return out.index_put((nm,), non_singular(a[nm], det[nm], g[nm]))


def _tr_inv(xp, t, a):
    # tr(A^-1 dA)
    return xp.sum(_inv_T(xp, a) * t, (-2, -1))


# Complex A (PyTorch's slogdet_backward / slogdet_jvp): d logabsdet = Re tr(A^-1 dA), d sign = sign i Im tr(A^-1 dA);
# the adjoint of both together is (g_abs - i Im(conj(g_sign) sign)) A^-H, each output's share given here by its own
# node (slogdet_backward on conj(A) is the solve with A^H).
slogdet_sign_p = defprim("slogdet_sign", lambda xp, a: xp.linalg_slogdet(a)[0],
                         node="LinalgSlogdetBackward0", vjp=lambda xp, g, out, a: None, jvp=lambda xp, t, out, a: None,
                         batch=True,
                         complex=(lambda xp, g, out, a: xp.slogdet_backward(-_i_imag(xp, xp.conj(g) * out), xp.conj(a)),
                                  lambda xp, t, out, a: out * _i_imag(xp, _tr_inv(xp, t, a)), (0,), True))
# VJP: g A^-T, from the LU in plain backward (no singularity check: inf/nan, as PyTorch), through a solve
# under create_graph (a singular A raises, as PyTorch's linalg.solve).
slogdet_abs_p = defprim("slogdet", lambda xp, a: xp.linalg_slogdet(a)[1],
                        node="LinalgSlogdetBackward0", vjp=lambda xp, g, out, a: xp.slogdet_backward(g, a),
                        jvp=lambda xp, t, out, a: _tr_inv(xp, t, a), saves=(0,), batch=True,
                        complex=(lambda xp, g, out, a: xp.slogdet_backward(g, xp.conj(a)),
                                 lambda xp, t, out, a: xp.real(_tr_inv(xp, t, a)), (0,), False))
graph("slogdet_backward", lambda g, a: linalg_solve(_mT(graph_ns, a), _eye_times(graph_ns, g, a)))


@register(submodule="linalg", module=False, name="det", graph="linalg_det")
def linalg_det(A: Tensor, *, out=None) -> Tensor:
    """Determinant of a (batch of) square matrices."""
    _no_out(out, "linalg.det")
    _check_matrix(A, "linalg.det")
    return apply(det_p, (A,))


@register(method=True)
def det(input: Tensor) -> Tensor:
    """Alias of ``linalg.det``."""
    return linalg_det(input)


SlogdetResult = return_type("linalg_slogdet", ("sign", "logabsdet"))
SlogdetLegacy = return_type("slogdet", ("sign", "logabsdet"))


@register(submodule="linalg", module=False, name="slogdet", graph="linalg_slogdet")
def linalg_slogdet(A: Tensor, *, out=None):
    """(sign, log|det|) of a (batch of) square matrices."""
    _no_out(out, "linalg.slogdet")
    _check_matrix(A, "linalg.slogdet")
    return SlogdetResult(apply(slogdet_sign_p, (A,)), apply(slogdet_abs_p, (A,)))


@register(method=True)
def slogdet(input: Tensor):
    """Alias of ``linalg.slogdet`` (its result type is ``torch.return_types.slogdet``)."""
    return SlogdetLegacy(*linalg_slogdet(input))


@register(method=True)
def logdet(input: Tensor) -> Tensor:
    """log(det(A)): nan for a negative determinant, -inf for a singular matrix; complex: log(sign) + log|det|."""
    from ..elementwise import log, where
    _check_matrix(input, "logdet")
    sign, logabs = linalg_slogdet(input)
    if sign._data.dtype.kind == "c":
        return log(sign) + logabs
    return where(sign == -1, float("nan"), logabs)


# ======================================================================================================
# matrix_rank
# ======================================================================================================

_NO_TOL = object()     # matrix_rank's tol left out (an explicit tol=None is PyTorch's TypeError)
_RANK_FORMS = ("linalg_matrix_rank() received an invalid combination of arguments - got ({}), but expected one of:\n"
               " * (Tensor input, *, Tensor atol = None, Tensor rtol = None, bool hermitian = False, "
               "Tensor out = None)\n"
               " * (Tensor input, *, float atol = None, float rtol = None, bool hermitian = False, "
               "Tensor out = None)\n"
               " * (Tensor input, Tensor tol, bool hermitian = False, *, Tensor out = None)\n"
               " * (Tensor input, float tol, bool hermitian = False, *, Tensor out = None)\n")


graph_raw("matrix_rank_of")


@register(submodule="linalg", module=False, name="matrix_rank")
def linalg_matrix_rank(A: Tensor, tol=_NO_TOL, hermitian: bool = False, *, atol=None, rtol=None,
                       out=None) -> Tensor:
    """The number of singular values above max(atol, rtol * s_max) (int64)."""
    _no_out(out, "linalg.matrix_rank")
    if tol is not _NO_TOL and (tol is None or atol is not None or rtol is not None
                               or not isinstance(tol, (numbers.Real, Tensor))):
        got = ["Tensor" if isinstance(A, Tensor) else type(A).__name__, type(tol).__name__]
        got += [f"{k}={type(v).__name__}" for k, v in (("atol", atol), ("rtol", rtol)) if v is not None]
        raise TypeError(_RANK_FORMS.format(", ".join(got)))
    _check_matrix(A, "linalg.matrix_rank", square=False)
    hermitian = check_bool(hermitian, "linalg_matrix_rank", "hermitian")
    if tol is not _NO_TOL:
        atol, rtol = tol, 0.0
    atol = _tol(atol, "linalg_matrix_rank", "atol")
    rtol = _tol(rtol, "linalg_matrix_rank", "rtol")
    return make(NAMESPACES[type(A._data)].matrix_rank_of(A._data, atol, rtol, hermitian))


# ======================================================================================================
# linalg.norm and cond, on the reduction family's vector_norm and matrix_norm
# ======================================================================================================

def _vector_norm(x, ord, dim, keepdim):
    return SUBMODULES["linalg"]["vector_norm"](x, ord, dim=dim, keepdim=keepdim)


def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    # the reduction family declares linalg.matrix_norm (on this family's svdvals)
    return SUBMODULES["linalg"]["matrix_norm"](A, ord, dim, keepdim, dtype=dtype)


@register(submodule="linalg", module=False, name="norm")
def linalg_norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """A vector norm (dim an int, or 1-d input) or a matrix norm (dim a pair, or 2-d input with ``ord``)."""
    _no_out(out, "linalg.norm")
    check_tensor(A, "linalg_norm", "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A._data.ndim == 2):
        return linalg_matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim,
                                  dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dim}"
                           if dim is not None else
                           "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A._data.ndim}D.")
    if dim is None and ord is not None and A._data.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A._data.ndim}D.")
    if dtype is not None:
        A = A.to(dtype)
    return _vector_norm(A, 2 if ord is None else ord, dim, keepdim)


@register(submodule="linalg", module=False, name="cond")
def linalg_cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number in the norm ``p`` (None / 2: s_max / s_min)."""
    _no_out(out, "linalg.cond")
    check_tensor(A, "linalg_cond", "A")
    if A._data.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    word = dtype_word(A._data.dtype)
    if word not in ("Half", "BFloat16"):   # half precision: refused below by the SVD or the inverse, as PyTorch
        _check_float(A, "linalg.cond")
    if isinstance(p, str):
        _check_square_cond(A, p)
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    elif p is not None and abs(float(p)) not in (1.0, 2.0, float("inf")):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {float(p):g}")
    if A._data.size == 0:   # NumPy leaves it undefined; PyTorch returns 0 for each (empty) matrix
        xp = NAMESPACES[type(A._data)]
        a = A._data
        return make(xp.backend.zeros(a.shape[:-2], a.dtype if isinstance(p, str) or a.dtype.kind != "c"
                                     else xp.real(a).dtype))
    if word == "Half":   # PyTorch's cond has no dtype check of its own: the SVD or the inverse it calls refuses
        if p is None or p in (2, -2, "nuc"):
            raise NotImplementedError(f"\"linalg_svd_cpu\" not implemented for '{word}'")
        raise RuntimeError(f"linalg.inv: Low precision dtypes not supported. Got {word}")
    if p is None or p in (2, -2) or p == "nuc":
        if p == "nuc":
            _check_square_cond(A, p)
        s = linalg_svdvals(A)
        if p == "nuc":   # PyTorch's definition, not through matrix_norm (which refuses infinities)
            return s.sum(-1) * s.reciprocal().sum(-1)
        first, last = s[..., :1], s[..., -1:]
        return (first / last if p != -2 else last / first).squeeze(-1)
    _check_square_cond(A, p)
    inv = linalg_inv(A)
    return linalg_matrix_norm(A, p) * linalg_matrix_norm(inv, p)


def _check_square_cond(A, p) -> None:
    if A._data.shape[-1] != A._data.shape[-2]:
        m, n = A._data.shape[-2:]
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are {m} by {n} "
                           f"matrices")



# ----- renorm (PyTorch's renorm kernel: the p-norm of each slice along dim in the accumulation dtype, then a factor
# maxnorm / (norm + 1e-7) where the norm exceeds maxnorm); composed of differentiable ops, so its node is MulBackward0
# (PyTorch's: RenormBackward0), its gradient PyTorch's renorm_backward ----------------------------------------------

@register(method=True)
def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm``."""
    check_tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    ndim = input._data.ndim
    if ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {ndim} dimensions")
    dim = wrap_dim(dim, ndim)
    acc = input.dtype if input._data.dtype.itemsize >= 4 else D.float32   # toAccumulateType(..., is_cuda=true)
    norm = _vector_norm(input, p, tuple(d for d in range(ndim) if d != dim), True) if acc is input.dtype else \
        SUBMODULES["linalg"]["vector_norm"](input, p, tuple(d for d in range(ndim) if d != dim), True, dtype=acc)
    factor = (maxnorm / (norm + 1e-7)).where(norm > maxnorm, 1.0)
    if factor.dtype is not input.dtype:   # PyTorch's factor tensor has the input's dtype (bfloat16: rounded first)
        factor = factor.to(input.dtype)
    out = input * factor
    return out if out.dtype is input.dtype else out.to(input.dtype)


@register(method=True, module=False)
def renorm_(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    return input.copy_(renorm(input.clone(), p, dim, maxnorm))   # the clone is what the gradient reads


# ----- autograd.grad(is_grads_batched=True): the primitives whose VJP rules batch as written (see products.py)


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("leading", "det", "slogdet_sign", "slogdet")
