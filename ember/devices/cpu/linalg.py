"""NumPy kernels of the 'linalg' family for the raw 'cpu' namespace (re-exported by ember.devices.cpu.namespace).

Every name in ``__all__`` has a twin of the same name in ``graph_ns`` (registered in ``ember/ops/linalg/``:
differentiable, or for the few that are not the kernel run on the tensors' data), so derivative rules and
public functions can call ``xp.<name>`` in plain and in graph mode.
Decompositions return tuples of arrays in PyTorch's order (``linalg_svd`` gives U, S, Vh).
"""
from __future__ import annotations

import math

import numpy as np

from .reduced import BF16 as _BF16, F8 as _F8, F32 as _F32, REDUCED as _REDUCED, to_float8 as _to_float8
__all__ = ["geqrf", "einsum", "matmul_forward", "addprod", "cross", "tri_mask", "eye_like", "linalg_inv", "linalg_det",
           "linalg_slogdet", "linalg_solve", "linalg_cholesky", "linalg_cholesky_ex", "cholesky_solve", "linalg_qr",
           "linalg_eigh", "linalg_eig", "linalg_svd", "linalg_svdvals", "linalg_pinv", "matrix_exp", "solve_triangular", "linalg_lu_factor_ex",
           "linalg_lu", "lu_unpack", "linalg_lu_solve", "det_backward", "slogdet_backward",
           # not differentiable (as PyTorch's): the LDL^T factorization and its solve
           "linalg_ldl_factor_ex", "linalg_ldl_solve",
           # not differentiable: layout, singularity and rank questions the public functions and rules ask
           "grad_in_own_layout", "near_singular", "lstsq_rank", "matrix_rank_of"]


class LinAlgError(RuntimeError):
    """ember.linalg.LinAlgError: a RuntimeError, as PyTorch's torch.linalg.LinAlgError."""


LinAlgError.__module__ = "ember.linalg"


# ----- einsum -------------------------------------------------------------------------------------

def einsum(eq: str, *ops, sizes=None):
    """``np.einsum`` on an explicit equation (letters only, with '->'), extended so the derivative
    rules can use it: an output letter may repeat (the result is zero off that diagonal) or appear in
    no input (the result is broadcast along it; ``sizes`` gives its size)."""
    if ops[0].dtype is _BF16:   # NumPy's einsum has no bfloat16 loop: float32 sums, rounded once (as PyTorch's)
        if len(ops) > 2 and sizes is None:
            return _einsum_bf16_chain(eq, ops)
        return einsum(eq, *(o.astype(_F32) for o in ops), sizes=sizes).astype(_BF16)
    ins, out = eq.split("->")
    subs = ins.split(",")
    present = set(ins)
    uniq = "".join(dict.fromkeys(out))
    core = "".join(c for c in uniq if c in present)
    optimize = len(ops) > 2 or (len(ops) == 2 and ops[0].size * ops[1].size > 4096)
    r = None
    if len(ops) == 2 and (optimize or ops[0].dtype in _LOOPED):
        # small batched products: PyTorch's einsum is a bmm, whose plain loop ember repeats (see _bmm_sums)
        r = _as_matmul(ins, core, *ops, blas=optimize)
    if r is None and not all(o.size for o in ops):
        # an empty operand: every sum is empty, zeros made here (a CI run once got NaN from NumPy's einsum for
        # linear's (4, 0) x (0, 2), uninitialized memory, not reproduced since)
        dims: dict = {}
        for s, op in zip(subs, ops):
            for c, n in zip(s, op.shape):
                if dims.get(c, 1) == 1:
                    dims[c] = n
        r = np.zeros([dims[c] for c in core], dtype=np.result_type(*ops))
    if r is None:
        with np.errstate(all="ignore"):
            r = np.einsum(ins + "->" + core, *ops, optimize="greedy" if optimize else False)
    if core == out:
        # C order, as PyTorch's results: the optimized path can return a transposed layout, and layout decides
        # which element each random draw lands on (dropout after a Linear)
        return r if r.ndim < 2 or r.flags.c_contiguous else np.ascontiguousarray(r)
    dim = dict(sizes or {})
    for s, op in zip(subs, ops):
        for c, n in zip(s, op.shape):
            if n != 1 or c not in dim:
                dim[c] = n
    full = np.zeros([dim[c] for c in out], dtype=r.dtype)
    view = np.einsum(out + "->" + uniq, full)   # a writeable view of the (diagonal) positions
    view[...] = r.reshape([dim[c] if c in present else 1 for c in uniq])
    return full



def _einsum_bf16_chain(eq: str, ops):
    """bfloat16 einsum of three or more operands as PyTorch's (without opt_einsum): the operands contracted
    left to right, each pair's product summed in float32 and rounded to bfloat16, a letter summed out as soon as
    no later operand or the output has it."""
    ins, out = eq.split("->")
    subs = ins.split(",")
    cur, cur_s = ops[0], subs[0]
    for k in range(1, len(ops)):
        later = set("".join(subs[k + 1:]) + out)
        keep = "".join(c for c in dict.fromkeys(cur_s + subs[k]) if c in later)
        cur = einsum(f"{cur_s},{subs[k]}->{keep}", cur, ops[k])
        cur_s = keep
    return cur if cur_s == out else einsum(f"{cur_s}->{out}", cur)


def _halve(p):
    """Pairwise sum over the last axis, halving each time (PyTorch's vector-register reductions)."""
    n = p.shape[-1]
    while n > 1:
        n //= 2
        p = p[..., :n] + p[..., n:2 * n]
    return p[..., 0]


def _half_dot_rows(x, w):
    """``x @ w.T`` for float16 x (m, K), w (n, K), in float32 as PyTorch's fp16 dot kernel sums (AVX2 build):
    64 float lanes accumulate by fused multiply-add (exact products of halves), reduced pairwise; then a
    16-wide tail into 8 lanes, reduced pairwise; then the rest one by one. Rows go in blocks to bound memory."""
    f32 = np.float32
    m, k = x.shape
    n = w.shape[0]
    x, w = x.astype(f32), w.astype(f32)
    out = np.empty((m, n), f32)
    la, lv = k - k % 64, k - k % 16
    step = max(1, (1 << 22) // max(1, n * 64))
    for r in range(0, m, step):
        xb = x[r:r + step]
        acc = np.zeros((xb.shape[0], n, 64), f32)
        for j in range(0, la, 64):
            acc += xb[:, None, j:j + 64] * w[None, :, j:j + 64]
        tail = np.zeros((xb.shape[0], n, 8), f32)
        for j in range(la, lv, 16):
            tail += xb[:, None, j:j + 8] * w[None, :, j:j + 8]
            tail += xb[:, None, j + 8:j + 16] * w[None, :, j + 8:j + 16]
        s = _halve(acc) + _halve(tail)
        for j in range(lv, k):
            s = s + xb[:, None, j] * w[None, :, j]
        out[r:r + step] = s
    return out


def _half_ilp4(a, b):
    """``a @ b`` (batch dims broadcast) for float16 in float32 as PyTorch's generic gemm sums: four partial
    sums over k mod 4 (the rest into the first), added in order."""
    f32 = np.float32
    k = a.shape[-1]
    x, w = a.astype(f32), b.astype(f32)
    nd = max(x.ndim, w.ndim)   # equal ranks, so the k axis moved to the front broadcasts batch against batch
    x, w = x.reshape((1,) * (nd - x.ndim) + x.shape), w.reshape((1,) * (nd - w.ndim) + w.shape)
    shape = np.broadcast_shapes(x.shape[:-2], w.shape[:-2]) + (x.shape[-2], w.shape[-1])
    part = np.zeros((4,) + shape, f32)
    full = k - k % 4
    for i in range(0, full, 4):
        part += np.moveaxis(x[..., :, i:i + 4], -1, 0)[..., None] * np.moveaxis(w[..., i:i + 4, :], -2, 0)[..., None, :]
    for i in range(full, k):
        part[0] += x[..., :, i, None] * w[..., None, i, :]
    return ((part[0] + part[1]) + part[2]) + part[3]


def _half_product32(a, b):
    """float16 ``np.matmul(a, b)`` as PyTorch's CPU kernels sum it, still in float32: the dot-product kernel
    where PyTorch's column-major gemm sees a transposed operand (``b`` a transposed matrix, as Linear's
    ``weight.t()``, and matrix-vector products), the generic gemm otherwise."""
    if a.ndim == 1 and b.ndim == 1:
        return _half_dot_rows(a[None], b[None])[0, 0]
    rows = math.prod(a.shape[:-1])   # not reshape(-1, k): k may be 0
    if b.ndim == 1:
        k = a.shape[-1]
        return _half_dot_rows(np.ascontiguousarray(a).reshape(rows, k), b[None])[:, 0].reshape(a.shape[:-1])
    if a.ndim == 1:
        return _half_product32(a[None], b)[..., 0, :]
    if b.ndim == 2 and b.strides[0] < b.strides[1]:   # a transposed matrix: PyTorch's dot-product path
        k = a.shape[-1]
        r = _half_dot_rows(np.ascontiguousarray(a).reshape(rows, k), np.ascontiguousarray(b.T))
        return r.reshape(a.shape[:-1] + (b.shape[-1],))
    return _half_ilp4(a, b)


# (An identity test: NumPy's dtypes are singletons, and comparing a dtype with a type is slow.)
_F16 = np.dtype(np.float16)


def _product32(a, b):
    """The float32 sums of a float16 or bfloat16 ``np.matmul(a, b)``: float16 in PyTorch's order
    (``_half_product32``); bfloat16 by BLAS in float32 (PyTorch's bfloat16 gemm is oneDNN's, whose order is its
    own: a bfloat16 result rarely depends on it)."""
    return _half_product32(a, b) if a.dtype is _F16 else np.matmul(a.astype(_F32), b.astype(_F32))


def half_matmul(a, b):
    """float16 or bfloat16 ``np.matmul`` rounded once from float32 sums."""
    return _product32(a, b).astype(a.dtype)


# PyTorch's bmm/baddbmm (bmm_out_or_baddbmm_, LinearAlgebra.cpp) skip BLAS when contraction * rows * cols < 400:
# baddbmm_cpu_kernel sums each element in a plain loop. The dtypes ember repeats it for (complex: PyTorch's loop
# rounds otherwise than NumPy's complex products; integers: any order gives the same sums).
_SMALL_BMM = 400
_LOOPED = frozenset(d for d in (np.dtype(np.float32), np.dtype(np.float64), *_REDUCED))


def _loops(a, b) -> bool:
    """Whether PyTorch's bmm of ``a`` (..., n, k) and ``b`` (..., k, p) runs its plain loop."""
    return a.dtype in _LOOPED and b.dtype == a.dtype and a.shape[-1] * a.shape[-2] * b.shape[-1] < _SMALL_BMM


def _bmm_sums(a, b):
    """The sums of PyTorch's plain bmm loop (baddbmm_cpu_kernel), vectorised over batch, rows and columns:
    ``acc = 0; acc += a[i, k] * b[k, j]`` for k in order, each product and sum rounded in the op-math type
    (float32 for float16/bfloat16, whose products are exact there). Batch axes broadcast (matmul expands
    before its bmm). Returns the op-math array."""
    if a.dtype in _REDUCED:
        a, b = a.astype(_F32), b.astype(_F32)
    n, m, p = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = math.prod(batch)
    with np.errstate(all="ignore"):
        if count < 64 or n * p == 0:
            acc = np.zeros(batch + (n, p), a.dtype)
            for k in range(m):
                acc += a[..., k:k + 1] * b[..., k:k + 1, :]
            return acc
        # many small matrices: the batch as the innermost (contiguous) axis, so each step is one long loop
        at = np.broadcast_to(a, batch + (n, m)).reshape(count, n, m).transpose(2, 1, 0).copy()   # (m, n, count)
        bt = np.broadcast_to(b, batch + (m, p)).reshape(count, m, p).transpose(1, 2, 0).copy()   # (m, p, count)
        acc = np.zeros((n, p, count), a.dtype)
        prod = np.empty_like(acc)
        for k in range(m):
            np.multiply(at[k][:, None, :], bt[k][None, :, :], out=prod)
            acc += prod
    return np.ascontiguousarray(acc.transpose(2, 0, 1)).reshape(batch + (n, p))


def matmul_forward(a, b, bmm: bool = False):
    """matmul's forward: BLAS; float16 as PyTorch sums it, in float32 in its own order, rounded once (bfloat16:
    float32 sums, rounded once). ``bmm``: PyTorch's path is a bmm (bmm, or matmul of batched operands that it
    does not fold into an mm): small products then take its plain loop (``_bmm_sums``)."""
    if bmm and a.dtype in _LOOPED:
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if _loops(a2, b2):
            r = _bmm_sums(a2, b2).astype(a.dtype, copy=False)
            return r[..., 0] if b.ndim == 1 else r[..., 0, :] if a.ndim == 1 else r
    if a.dtype in _F8:   # float8 (2-d only: PyTorch's addmm): float32 sums, converted once as PyTorch converts
        return _to_float8(np.matmul(a.astype(np.float32), b.astype(np.float32)), a.dtype)
    return half_matmul(a, b) if a.dtype in _REDUCED else np.matmul(a, b)


_HALF_EQS = {"ij,jk->ik": "mm", "ij,j->i": "mv", "bij,bjk->bik": "bmm"}


def addprod_half(c, a, b, eq: str, beta, alpha):
    """float16 (or bfloat16) ``beta * c + alpha * product(a, b)`` rounded as PyTorch's CPU kernels round it.
    addmm/addmv/baddbmm: the product summed in float32 (see ``_product32``), ``alpha * prod + beta * c``
    formed in float32 and rounded once. addr: element by element in float16 (each operation rounded, as
    ``Half`` arithmetic). addbmm: ``beta * c`` rounded, then one rounded float32 addmm per batch, in order."""
    f16, f32 = a.dtype.type, np.float32
    if eq == "i,j->ij":
        prod = (a * f16(alpha))[:, None] * b[None, :]
        return prod.astype(f16) if beta == 0 else (c * f16(beta) + prod).astype(f16)
    if eq == "bij,bjk->ik":
        shape = (a.shape[1], b.shape[2])
        r = np.zeros(shape, f16) if beta == 0 else np.broadcast_to(c.astype(f32) * f32(beta), shape).astype(f16)
        for i in range(a.shape[0]):   # one rounding per batch: PyTorch adds each batch's product in turn
            r = (r.astype(f32) + f32(alpha) * _product32(a[i], b[i])).astype(f16)
        return r
    prod = _product32(a, b) if eq in _HALF_EQS else einsum(eq, a.astype(f32), b.astype(f32))
    if alpha != 1:
        prod = prod * f32(alpha)
    if beta == 0:
        return prod.astype(f16)
    return (prod + c.astype(f32) * f32(beta)).astype(f16)


def addprod(c, a, b, eq: str, beta, alpha):
    """``beta * c + alpha * einsum(eq, a, b)``: the forward of addmm, addmv, addr, addbmm and baddbmm (float16 as
    PyTorch rounds it, see ``addprod_half``). ``beta == 0`` ignores ``c`` (its nan and inf do not propagate)."""
    if eq == "bij,bjk->bik" and _loops(a, b):   # PyTorch's baddbmm loop, alpha and beta in the op-math type
        acc = _bmm_sums(a, b)
        op = acc.dtype.type
        r = acc * op(alpha) if beta == 0 else c.astype(op, copy=False) * op(beta) + op(alpha) * acc
        return r.astype(a.dtype, copy=False)
    if a.dtype in _REDUCED:
        return addprod_half(c, a, b, eq, beta, alpha)
    prod = einsum(eq, a, b)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + np.zeros_like(prod)
    c = c * beta if beta != 1 else c
    if type(prod) is np.ndarray and type(c) is np.ndarray and prod.dtype == c.dtype and c.ndim <= prod.ndim \
            and all(n == 1 or n == m for n, m in zip(c.shape[::-1], prod.shape[::-1])):
        prod += c   # the product is einsum's own new array: no second result-sized array (Linear's bias)
        return prod
    return prod + c


def grad_in_own_layout(x, g, ndim: int) -> bool:
    """Whether ``x`` is a 2-d array laid out as a transposed C array (Linear's ``weight.t()``) and ``g`` an array
    of ``ndim`` dims: einsum's VJP then computes ``x``'s gradient in ``x``'s own layout, as PyTorch's
    mm_mat1/mat2_backward, so that the weight's gradient comes out C-contiguous like the weight."""
    return type(x) is np.ndarray and x.ndim == 2 and x.flags.f_contiguous and not x.flags.c_contiguous \
        and type(g) is np.ndarray and g.ndim == ndim


_PLANS: dict = {}


def _plan(ins: str, out: str):
    """How a two-operand contraction is one batched matmul: the operands' axis orders (batch, free, contracted),
    the sizes of each group and the result's axis order; None when it is not one (a letter repeated or summed
    within one operand)."""
    s1, s2 = ins.split(",")
    if len(set(s1)) != len(s1) or len(set(s2)) != len(s2) or len(set(out)) != len(out):
        return None
    b = [c for c in out if c in s1 and c in s2]
    i = [c for c in s1 if c in out and c not in s2]
    k = [c for c in s2 if c in out and c not in s1]
    j = [c for c in s1 if c in s2 and c not in out]
    if set(s1) != set(b + i + j) or set(s2) != set(b + j + k) or set(out) != set(b + i + k):
        return None
    res = b + i + k
    return ([s1.index(c) for c in b + i + j], [s2.index(c) for c in b + j + k], [res.index(c) for c in out],
            len(b), len(i), len(j))


def _best_plan(ins: str, out: str):
    """``_plan`` of the operands in the order whose product comes out in the result's axis order (so no
    transposed copy is needed afterwards: ``g @ W`` rather than ``(W.T @ g.T).T``, as PyTorch's mm backward
    computes it), and whether that order swaps them."""
    plan = _plan(ins, out)
    if plan is None:
        return None
    if plan[2] != sorted(plan[2]):
        s1, s2 = ins.split(",")
        other = _plan(s2 + "," + s1, out)
        if other is not None and other[2] == sorted(other[2]):
            return other, True
    return plan, False


def _as_matmul(ins: str, out: str, x, y, blas: bool = True):
    """``einsum(ins->out, x, y)`` as one BLAS matmul (NumPy's optimized einsum gets there with more overhead),
    or as PyTorch's plain bmm loop where it is a small batched product (``_bmm_sums``); None where the equation
    is no plain (batched) product, or (``blas`` False) where it is no small batched one."""
    key = (ins, out)
    entry = _PLANS.get(key, False)
    if entry is False:
        entry = _PLANS[key] = _best_plan(ins, out)
    if entry is None:
        return None
    (pa, pb, po, nb, ni, nj), swap = entry
    if swap:
        x, y = y, x
    a, b = x.transpose(pa), y.transpose(pb)
    batch = a.shape[:nb]
    if b.shape[:nb] != batch:   # size-1 batch axes against longer ones: einsum's business
        return None
    free_a, inner, free_b = a.shape[nb:nb + ni], a.shape[nb + ni:], b.shape[nb + nj:]
    m, n, q = math.prod(free_a), math.prod(inner), math.prod(free_b)
    if nb and x.dtype in _LOOPED and y.dtype == x.dtype and m * n * q < _SMALL_BMM:
        r = _bmm_sums(a.reshape(batch + (m, n)), b.reshape(batch + (n, q))).astype(x.dtype, copy=False)
    elif not blas:
        return None
    else:
        with np.errstate(all="ignore"):
            r = np.matmul(a.reshape(batch + (m, n)), b.reshape(batch + (n, q)))
    r = r.reshape(batch + free_a + free_b).transpose(po)
    return r if r.flags.c_contiguous else np.ascontiguousarray(r)


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

def _bf16_empty(fn):
    """``fn`` for bfloat16 arrays in float32, its floating outputs rounded back (pivots and info kept). PyTorch's
    LAPACK kernels refuse bfloat16; the ops refuse it in front of them but return an empty input's result, which is
    what reaches these kernels in bfloat16."""
    def k(a, *args, **kwargs):
        if a.dtype is not _BF16:
            return fn(a, *args, **kwargs)
        args = tuple(x.astype(_F32) if getattr(x, "dtype", None) is _BF16 else x for x in args)
        r = fn(a.astype(_F32), *args, **kwargs)
        back = lambda x: x.astype(_BF16) if x.dtype == _F32 else x   # noqa: E731
        return tuple(back(x) for x in r) if isinstance(r, tuple) else back(r)
    k.__name__, k.__doc__ = fn.__name__, fn.__doc__
    return k


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


@_bf16_empty
def linalg_det(a):
    with np.errstate(all="ignore"):
        return np.linalg.det(a)


def linalg_slogdet(a):
    with np.errstate(all="ignore"):
        return np.linalg.slogdet(a)


def _is_vector_rhs(a, b) -> bool:
    # PyTorch's rule: B is a (batch of) vector(s) if it is 1-d, or has one dim less than A and A's batch shape.
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


@_bf16_empty
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


def _mH(x):
    # the conjugate transpose (the transpose of a real x)
    t = np.swapaxes(x, -1, -2)
    return np.conj(t) if t.dtype.kind == "c" else t


@_bf16_empty
def linalg_cholesky(a, upper=False):
    if upper and a.dtype.kind == "c":   # U^H U from A's upper triangle: L L^H of A^H's lower one
        return _mH(linalg_cholesky(_mH(a)))
    with np.errstate(all="ignore"):
        try:
            L = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input is "
                              f"not positive-definite (the leading minor of order {_not_pd(a)} is not "
                              f"positive-definite).") from None
    return np.swapaxes(L, -1, -2) if upper else L


@_bf16_empty
def linalg_cholesky_ex(a, upper=False):
    """(L, info) as LAPACK's potrf: info 0, or the order k of the first leading minor that is not
    positive-definite; such a matrix's L has its first k-1 columns, the unrooted pivot at (k, k) and A's lower
    triangle below it (what the unblocked potf2 leaves). Complex: A = L L^H (U^H U from A's upper triangle)."""
    if upper and a.dtype.kind == "c":
        L, info = linalg_cholesky_ex(_mH(a))
        return _mH(L), info
    cx = a.dtype.kind == "c"
    with np.errstate(all="ignore"):
        try:
            L = np.linalg.cholesky(a)
            info = np.zeros(a.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            n = a.shape[-1]
            flat = _flat(a, (n, n))
            L = np.tril(flat)
            info = np.zeros(flat.shape[0], np.int32)
            for i, m in enumerate(flat):
                try:
                    L[i] = np.linalg.cholesky(m)
                    continue
                except np.linalg.LinAlgError:
                    pass
                j = _not_pd(m) - 1
                info[i] = j + 1
                if j:
                    L11 = np.linalg.cholesky(m[:j, :j])
                    L[i, :j, :j] = L11
                    if cx:   # L21 = A21 L11^-H, from A's lower triangle
                        L[i, j:, :j] = _mH(solve_triangular(L11, _mH(m[j:, :j]), upper=False))
                    else:
                        L[i, j:, :j] = np.swapaxes(solve_triangular(L11, m[:j, j:], upper=False), -1, -2)
                L[i, j, j] = m[j, j] - (np.sum(np.abs(L[i, j, :j]) ** 2) if cx else np.sum(L[i, j, :j] ** 2))
            L, info = L.reshape(a.shape), info.reshape(a.shape[:-2])
    return (np.swapaxes(L, -1, -2) if upper else L), info


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


@_bf16_empty
def linalg_eigh(a, UPLO="L"):
    with np.errstate(all="ignore"):
        return np.linalg.eigh(a, UPLO=UPLO)


_CX = {np.dtype(np.float32): np.complex64, np.dtype(np.complex64): np.complex64}


@_lapack("linalg.eig", "The algorithm failed to converge.")
def linalg_eig(a):
    """(eigenvalues, eigenvectors) of a general square matrix as LAPACK's geev: complex (complex64 for float32 and
    complex64 input), each eigenvector of unit norm with its largest component real."""
    cdt = _CX.get(a.dtype, np.complex128)
    if a.size == 0:
        return np.zeros(a.shape[:-1], cdt), np.zeros(a.shape, cdt)
    w, v = np.linalg.eig(a)
    return w.astype(cdt, copy=False), v.astype(cdt, copy=False)


@_bf16_empty
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
        return u, np.zeros(b + (k,), np.finfo(a.dtype).dtype), vh
    return np.linalg.svd(a, full_matrices=full_matrices)


@_bf16_empty
@_lapack("linalg.svd", "The algorithm failed to converge because the input matrix is ill-conditioned or has "
                       "too many repeated singular values.")
def linalg_svdvals(a):
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), np.finfo(a.dtype).dtype)
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
    return np.matmul(_mH(vh) * sinv[..., None, :], _mH(u))


# Padé approximant of degree 13 with scaling and squaring (Higham 2005), computed in float64.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    if a.size == 0:
        return a.copy()
    w = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    n = w.shape[-1]
    norm = np.max(np.sum(np.abs(w), axis=-2)) if w.size else 0.0
    s = 0 if not np.isfinite(norm) or norm <= _THETA13 else int(np.ceil(np.log2(norm / _THETA13)))
    w = w / 2.0 ** s
    b = _PADE13
    eye = np.eye(n, dtype=w.dtype)
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


# ----- LU with partial pivoting (NumPy has none) ------------------------------------------------------

def _flat(x, tail):
    """``x`` as (batch, *tail) with the batch dims flattened (works for empty shapes too)."""
    return x.reshape((int(np.prod(x.shape[:x.ndim - len(tail)], dtype=np.int64)),) + tuple(tail))


# Each output of an LU op is its own primitive and the rules refactor A: the last few factorizations are
# kept (keyed by A's bytes, so an in-place change of A misses), so one op call factors A once.
_LU_CACHE: dict = {}


@_bf16_empty
def linalg_lu_factor_ex(a, pivot=True):
    """``_lu_factor_ex`` through a small cache of recent results (copies are returned)."""
    key = (a.dtype.str, a.shape, bool(pivot), a.tobytes())
    hit = _LU_CACHE.get(key)
    if hit is None:
        hit = _lu_factor_ex(a, pivot)
        if len(_LU_CACHE) >= 4:
            _LU_CACHE.clear()
        _LU_CACHE[key] = hit
    return tuple(x.copy() for x in hit)


def _cmul(a, b):
    """Complex ``a * b`` as its four real products, each rounded (LAPACK's complex getrf, as PyTorch's MKL runs it,
    rounds them so; NumPy's complex multiply fuses them)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, a.dtype)
    out.real = a.real * b.real - a.imag * b.imag
    out.imag = a.real * b.imag + a.imag * b.real
    return out


def _lu_factor_ex(a, pivot=True):
    """(LU, pivots, info) as LAPACK's getrf: partial pivoting, the pivot of column j being the first row
    of largest absolute value at or below j (idamax; |re| + |im| for complex, izamax); L's unit diagonal is implicit. pivots are 1-based
    int32; info is the 1-based index of the first exactly zero pivot (0 if none). A zero column is not
    scaled and the elimination goes on, as in LAPACK, so singular matrices factor too. Computes in the
    input's dtype, one vectorised step per column for the whole batch."""
    if not pivot:
        raise LinAlgError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lu = _flat(a, (m, n)).copy()
    nb = lu.shape[0]
    piv = np.empty((nb, k), np.int32)
    info = np.zeros(nb, np.int32)
    rows = np.arange(nb)
    cx = lu.dtype.kind == "c"
    tiny = np.finfo(lu.dtype).tiny if lu.dtype.kind in "fV" else 0
    with np.errstate(all="ignore"):
        for j in range(k):
            col = lu[:, j:, j]
            col = np.abs(col.real) + np.abs(col.imag) if cx else np.abs(col)   # izamax: |re| + |im|
            # idamax: the first largest |x|; a NaN never compares larger, so it wins only in first place
            nan = np.isnan(col)
            p = j + np.where(nan[:, 0] if col.shape[1] else False, 0, np.argmax(np.where(nan, -1, col), axis=1))
            piv[:, j] = p + 1
            swap = p != j
            if swap.any():
                r, pr = rows[swap], p[swap]
                top = lu[r, j].copy()
                lu[r, j] = lu[r, pr]
                lu[r, pr] = top
            d = lu[:, j, j]
            zero = d == 0
            if zero.any():
                info[zero & (info == 0)] = j + 1
            if j + 1 < m:
                # LAPACK multiplies by the reciprocal, dividing only when it would overflow; a zero pivot
                # leaves its (all-zero) column alone
                dd = np.where(zero, 1, d)[:, None]
                col = lu[:, j + 1:, j]
                if cx:   # zscal with the reciprocal
                    lu[:, j + 1:, j] = _cmul(col, 1 / dd)
                else:
                    lu[:, j + 1:, j] = np.where(np.abs(dd) >= tiny, col * (1 / dd), col / dd)
                if j + 1 < n:
                    lu[:, j + 1:, j + 1:] -= (_cmul if cx else np.multiply)(lu[:, j + 1:, j:j + 1],
                                                                            lu[:, j:j + 1, j + 1:])
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def _perm(piv, m):
    """The row permutation the sequential swaps ``piv`` (1-based, (B, k)) make of range(m): row i of
    P^T A is row perm[i] of A."""
    nb, k = piv.shape
    perm = np.broadcast_to(np.arange(m), (nb, m)).copy()
    rows = np.arange(nb)
    for i in range(k):
        p = piv[:, i].astype(np.intp) - 1
        top = perm[rows, i].copy()
        perm[rows, i] = perm[rows, p]
        perm[rows, p] = top
    return perm


def lu_unpack(lu, piv, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from the packed LU and its pivots; what is not unpacked is empty."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    batch = lu.shape[:-2]
    empty = np.zeros((0,), lu.dtype)
    P = L = U = empty
    if unpack_pivots:
        perm = _perm(_flat(np.broadcast_to(piv, batch + (k,)), (k,)), m)
        Pf = np.zeros((perm.shape[0], m, m), lu.dtype)
        Pf[np.arange(perm.shape[0])[:, None], perm, np.arange(m)[None, :]] = 1
        P = Pf.reshape(batch + (m, m))
    if unpack_data:
        L = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
        U = np.triu(lu[..., :k, :])
    return P, L, U


@_bf16_empty
def linalg_lu(a, pivot=True):
    """(P, L, U) with A = P L U; L is m x k with a unit diagonal, U is k x n (k = min(m, n))."""
    lu, piv, _ = linalg_lu_factor_ex(a, pivot)
    return lu_unpack(lu, piv)


def _subst(t, b, lower, unit):
    """T^-1 B by substitution, for triangular T (only its triangle is read) and B broadcast together:
    no singularity check (a zero diagonal gives inf/nan, as LAPACK's trsm; a zero complex one gives NaN, as the
    BLAS's complex trsm: it multiplies by the pivot's reciprocal, whose Smith division of 1 by 0 is 0/0)."""
    n = t.shape[-1]
    x = np.array(np.broadcast_to(b, np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]))
    order = range(n) if lower else range(n - 1, -1, -1)
    for j in order:
        if not unit:
            d = t[..., j, j, None]
            x[..., j, :] /= d
            if x.dtype.kind == "c":
                x[..., j, :] = np.where(d == 0, complex(np.nan, np.nan), x[..., j, :])
        rest = slice(j + 1, None) if lower else slice(0, j)
        x[..., rest, :] -= t[..., rest, j, None] * x[..., j, None, :]
    return x


@_bf16_empty
def linalg_lu_solve(lu, piv, b, left=True, adjoint=False):
    """X with A X = B (A^T X = B if ``adjoint``; X A = B or X A^T = B if not ``left``), A = P L U given
    packed as (LU, pivots); batch dims broadcast."""
    if not left:   # X A = B  <=>  A^T X^T = B^T
        return np.swapaxes(linalg_lu_solve(lu, piv, np.swapaxes(b, -1, -2), True, not adjoint), -1, -2)
    n = lu.shape[-1]
    batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    with np.errstate(all="ignore"):
        perm = _perm(_flat(piv, (n,)), n).reshape(lu.shape[:-2] + (n,))
        if not adjoint:   # U^-1 L^-1 P^T B
            pb = np.take_along_axis(np.broadcast_to(b, batch + b.shape[-2:]),
                                    np.broadcast_to(perm, batch + (n,))[..., None], -2)
            return _subst(lu, _subst(lu, pb, True, True), False, False)
        # A^T = U^T L^T P^T: X = P L^-T U^-T B
        lt = np.swapaxes(lu, -1, -2)
        z = _subst(lt, _subst(lt, b, True, False), False, True)
        z = np.broadcast_to(z, batch + z.shape[-2:])
        x = np.empty_like(z)
        np.put_along_axis(x, np.broadcast_to(perm, batch + (n,))[..., None], z, -2)
        return x


def det_backward(g, det, a):
    """The gradient of det at A for the upstream gradient g, as PyTorch's plain backward: g det A^-T from
    the LU, a zero pivot replaced by eps (so an exactly singular A gets a zero gradient)."""
    lu, piv, _ = linalg_lu_factor_ex(a)
    eps = np.finfo(a.dtype).eps
    n = a.shape[-1]
    i = np.arange(n)
    lu[..., i, i] = np.where(lu[..., i, i] == 0, eps, lu[..., i, i])
    d = (g * det)[..., None, None] * np.eye(n, dtype=a.dtype)
    return linalg_lu_solve(lu, piv, d, adjoint=True)


def near_singular(det):
    """Where a determinant is below 100 eps of its dtype in magnitude (PyTorch's det backward takes the SVD
    there)."""
    return np.abs(det) < 100 * float(np.finfo(det.dtype).eps)


def lstsq_rank(a, rcond):
    """The singular values of ``a`` (descending) and its rank as gelsy, gelsd and gelss count it: the singular
    values above ``rcond`` (None: eps * max(m, n)) times the largest (int64)."""
    m, n = a.shape[-2:]
    dt = a.dtype
    with np.errstate(all="ignore"):
        s = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(a.shape[:-2] + (0,), dt)
    tol = (rcond if rcond is not None else np.finfo(dt).eps * max(m, n)) * (s[..., :1] if s.shape[-1] else 0)
    rank = np.sum(s > tol, axis=-1).astype(np.int64) if s.shape[-1] else np.zeros(a.shape[:-2], np.int64)
    return s, rank


def matrix_rank_of(a, atol, rtol, hermitian: bool):
    """The number of singular values (|eigenvalues| if ``hermitian``) above max(atol, rtol * s_max) (int64);
    ``rtol`` None: 0 if ``atol`` > 0, else eps * max(m, n)."""
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else max(m, n) * np.finfo(a.dtype).eps
    with np.errstate(all="ignore"):
        if a.size == 0:
            return np.zeros(a.shape[:-2], np.int64)
        s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    smax = np.max(s, axis=-1, keepdims=True)
    thr = np.maximum(atol or 0.0, rtol * smax)
    return np.sum(s > thr, axis=-1).astype(np.int64)


def slogdet_backward(g, a):
    """The gradient of log|det| at A, g A^-T, from the LU as PyTorch's plain backward (no singularity
    check: a singular A gives inf/nan)."""
    lu, piv, _ = linalg_lu_factor_ex(a)
    d = g[..., None, None] * np.eye(a.shape[-1], dtype=a.dtype)
    return linalg_lu_solve(lu, piv, d, adjoint=True)


# ----- LDL^T with Bunch-Kaufman pivoting (LAPACK's sytf2 / sytrs, lower triangle) ----------------------------
# Written once over an array namespace ``xp`` (NumPy here; the array-API kernels call them with theirs): one
# matrix at a time, one pivot step at a time, in the input's dtype.

_BK_ALPHA = (1 + math.sqrt(17)) / 8


def _swap(A, i, j, xp):
    t = xp.asarray(A[i], copy=True)
    A[i] = A[j]
    A[j] = t


def _cabs1(xp, x):
    """LAPACK's pivoting magnitude: |x| for real, |Re x| + |Im x| for complex (cabs1)."""
    if xp.isdtype(x.dtype, "complex floating"):
        return xp.abs(xp.real(x)) + xp.abs(xp.imag(x))
    return xp.abs(x)


def _imax(xp, v):
    """(index, value) of the first largest entry of the 1-d ``v`` (idamax)."""
    i = int(xp.argmax(v))
    return i, float(v[i])


def ldl_factor_one(xp, a):
    """(LD, pivots (a list, 1-based; a 2x2 block's two entries are -p), info) of one matrix as LAPACK's
    sytf2 with uplo='L': D's blocks on the diagonal (and first subdiagonal), L's unit-diagonal columns below."""
    n = a.shape[-1]
    A = xp.asarray(a, copy=True)
    piv = [0] * n
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = float(_cabs1(xp, A[k, k]))
        imax, colmax = k, 0.0
        if k < n - 1:
            i, colmax = _imax(xp, _cabs1(xp, A[k + 1:, k]))
            imax = k + 1 + i
        if max(absakk, colmax) == 0 or absakk != absakk:
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _BK_ALPHA * colmax:
                kp = k
            else:
                rowmax = _imax(xp, _cabs1(xp, A[imax, k:imax]))[1]
                if imax < n - 1:
                    rowmax = max(rowmax, _imax(xp, _cabs1(xp, A[imax + 1:, imax]))[1])
                if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif float(_cabs1(xp, A[imax, imax])) >= _BK_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:   # swap rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    _swap(A, (slice(kp + 1, None), kk), (slice(kp + 1, None), kp), xp)
                _swap(A, (slice(kk + 1, kp), kk), (kp, slice(kk + 1, kp)), xp)
                _swap(A, (kk, kk), (kp, kp), xp)
                if kstep == 2:
                    _swap(A, (k + 1, k), (kp, k), xp)
            if kstep == 1:
                if k < n - 1:
                    r1 = 1 / A[k, k]
                    x = A[k + 1:, k]
                    A[k + 1:, k + 1:] = A[k + 1:, k + 1:] + x[:, None] * (-r1 * x)[None, :]   # syr
                    A[k + 1:, k] = x * r1
            elif k < n - 2:
                d21 = A[k + 1, k]
                d11 = A[k + 1, k + 1] / d21
                d22 = A[k, k] / d21
                t = 1 / (d11 * d22 - 1)
                d21 = t / d21
                ak, ak1 = A[k + 2:, k], A[k + 2:, k + 1]
                wk = d21 * (d11 * ak - ak1)
                wkp1 = d21 * (d22 * ak1 - ak)
                A[k + 2:, k + 2:] = A[k + 2:, k + 2:] - (ak[:, None] * wk[None, :] + ak1[:, None] * wkp1[None, :])
                A[k + 2:, k] = wk
                A[k + 2:, k + 1] = wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return xp.tril(A), piv, info


def ldl_solve_one(xp, ld, piv, b):
    """X with A X = B from one matrix's ``ldl_factor_one`` (LAPACK's sytrs, uplo='L')."""
    n = ld.shape[-1]
    B = xp.asarray(b, copy=True)
    k = 0
    while k < n:   # L D X = B
        if piv[k] > 0:
            kp = piv[k] - 1
            if kp != k:
                _swap(B, (k, slice(None)), (kp, slice(None)), xp)
            if k < n - 1:
                B[k + 1:, :] = B[k + 1:, :] + ld[k + 1:, k][:, None] * (-B[k, :])[None, :]
            B[k, :] = B[k, :] * (1 / ld[k, k])
            k += 1
        else:
            kp = -piv[k] - 1
            if kp != k + 1:
                _swap(B, (k + 1, slice(None)), (kp, slice(None)), xp)
            if k < n - 2:
                B[k + 2:, :] = B[k + 2:, :] + ld[k + 2:, k][:, None] * (-B[k, :])[None, :]
                B[k + 2:, :] = B[k + 2:, :] + ld[k + 2:, k + 1][:, None] * (-B[k + 1, :])[None, :]
            akm1k = ld[k + 1, k]
            akm1 = ld[k, k] / akm1k
            ak = ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1 = B[k, :] / akm1k
            bk = B[k + 1, :] / akm1k
            B[k, :] = (ak * bkm1 - bk) / denom
            B[k + 1, :] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:   # L^T X = B
        if piv[k] > 0:
            if k < n - 1:
                B[k, :] = B[k, :] - xp.sum(B[k + 1:, :] * ld[k + 1:, k][:, None], axis=0)
            kp = piv[k] - 1
            if kp != k:
                _swap(B, (k, slice(None)), (kp, slice(None)), xp)
            k -= 1
        else:
            if k < n - 1:
                B[k, :] = B[k, :] - xp.sum(B[k + 1:, :] * ld[k + 1:, k][:, None], axis=0)
                B[k - 1, :] = B[k - 1, :] - xp.sum(B[k + 1:, :] * ld[k + 1:, k - 1][:, None], axis=0)
            kp = -piv[k] - 1
            if kp != k:
                _swap(B, (k, slice(None)), (kp, slice(None)), xp)
            k -= 2
    return B


@_bf16_empty
def linalg_ldl_factor_ex(a, hermitian=False):
    """(LD, pivots (int32), info (int32)) of each matrix of ``a`` (see ``ldl_factor_one``)."""
    n = a.shape[-1]
    flat = _flat(a, (n, n))
    with np.errstate(all="ignore"):
        res = [ldl_factor_one(np, m) for m in flat]
    ld = np.stack([r[0] for r in res]) if res else flat.copy()
    piv = np.array([r[1] for r in res], np.int32).reshape(a.shape[:-1])
    info = np.array([r[2] for r in res], np.int32).reshape(a.shape[:-2])
    return ld.reshape(a.shape), piv, info


@_bf16_empty
def linalg_ldl_solve(ld, piv, b, hermitian=False):
    """X with A X = B from ``linalg_ldl_factor_ex``'s LD and pivots; batch dims broadcast."""
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    lds = _flat(np.broadcast_to(ld, batch + ld.shape[-2:]), (n, n))
    pivs = _flat(np.broadcast_to(piv, batch + piv.shape[-1:]), (n,))
    bs = _flat(np.broadcast_to(b, batch + b.shape[-2:]), b.shape[-2:])
    with np.errstate(all="ignore"):
        out = [ldl_solve_one(np, l_, [int(p) for p in p_], b_) for l_, p_, b_ in zip(lds, pivs, bs)]
    return (np.stack(out) if out else bs.copy()).reshape(batch + b.shape[-2:])


def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK's geqrf on a (batch of) matrices, as ``torch.geqrf``: R on and above the diagonal, the Householder
    vectors below it, and tau (NumPy's ``qr(mode="raw")`` is LAPACK's ?geqrf, in the transposed layout). Not
    differentiable. The same routine as PyTorch's, but another LAPACK build (OpenBLAS's, PyTorch's MKL): the
    reflectors agree to rounding, not always to the last bit."""
    h, tau = np.linalg.qr(a, mode="raw")
    return np.swapaxes(h, -1, -2).copy(), tau
