"""Products and the small helpers of linear algebra and sorting rules in array-API standard operations.

``einsum`` is generic: every operand broadcast over all the equation's letters, multiplied, summed (memory of the
product of all sizes: right for the derivative rules' small equations; a library with einsum overrides it)."""
from __future__ import annotations

import math

from ..cpu.linalg import LinAlgError


def _bshape(*shapes) -> tuple:
    """The broadcast of shapes already known to broadcast."""
    nd = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (nd - len(s)) + tuple(s) for s in shapes]):
        other = [d for d in dims if d != 1]
        out.append(other[0] if other else 1)
    return tuple(out)


def kernels(k) -> dict:
    xp = k.xp

    def _diag_letters(op, s: str):
        """``op`` with subscripts ``s`` reduced to one axis per distinct letter (the diagonal of repeats)."""
        uniq = "".join(dict.fromkeys(s))
        if len(uniq) == len(s):
            return op, s
        n = len(uniq)
        full = []
        for c, size in zip(s, op.shape):
            p = uniq.index(c)
            full.append(xp.reshape(xp.arange(size, dtype=xp.int64), (1,) * p + (size,) + (1,) * (n - p - 1)))
        return op[tuple(full)], uniq

    def einsum(eq: str, *ops, sizes=None):
        ins, out = eq.split("->")
        subs = ins.split(",")
        dim = dict(sizes or {})
        for s, op in zip(subs, ops):
            for c, n in zip(s, op.shape):
                if n != 1 or c not in dim:
                    dim[c] = n
        letters = "".join(dict.fromkeys(ins.replace(",", "")))
        prod = None
        for s, op in zip(subs, ops):
            op, s = _diag_letters(op, s)
            order = [s.index(c) for c in letters if c in s]
            t = xp.permute_dims(op, tuple(order))
            shape = tuple(op.shape[s.index(c)] if c in s else 1 for c in letters)
            t = xp.reshape(t, shape)
            prod = t if prod is None else prod * t
        uniq = "".join(dict.fromkeys(out))
        summed = tuple(i for i, c in enumerate(letters) if c not in uniq)
        r = xp.sum(prod, axis=summed, dtype=prod.dtype) if summed else prod
        kept = [c for c in letters if c in uniq]
        r = xp.broadcast_to(r, tuple(dim[c] for c in kept)) if r.ndim else r
        # to ``out``'s order; a repeated output letter is zero off its diagonal; an absent one is broadcast
        axes, mask, seen = [], None, {}
        for c in out:
            if c in seen:
                n = dim[c]
                eye = xp.arange(n)[:, None] == xp.arange(n)[None, :]
                m = xp.reshape(eye, tuple(n if d in (seen[c], len(axes)) else 1 for d in range(len(out))))
                mask = m if mask is None else mask & m
            seen.setdefault(c, len(axes))
            axes.append(c)
        firsts = [c for i, c in enumerate(out) if seen[c] == i]
        present = [c for c in firsts if c in kept]
        r = xp.permute_dims(r, tuple(kept.index(c) for c in present)) if present else r
        r = xp.reshape(r, tuple(dim[c] if (c in kept and seen[c] == i) else 1 for i, c in enumerate(out)))
        r = xp.broadcast_to(r, tuple(dim[c] for c in out))
        if mask is not None:
            r = xp.where(mask, r, xp.zeros((), dtype=r.dtype))
        return xp.asarray(r, copy=True)

    def cross(a, b, dim):
        a, b = k.promote(a, b)
        # the standard's cross takes a negative axis only
        return xp.linalg.cross(a, b, axis=dim - a.ndim if dim >= 0 else dim) if hasattr(xp, "linalg") else \
            k.unsupported("cross")

    def tri_mask(x, upper: bool, diag: float = 1.0):
        n, m = x.shape[-2:]
        i = xp.arange(n)[:, None]
        j = xp.arange(m)[None, :]
        off = xp.astype((j > i) if upper else (j < i), x.dtype)
        return x * xp.where(i == j, xp.asarray(diag, dtype=x.dtype), off)

    def eye_like(x):
        return xp.eye(x.shape[-1], dtype=x.dtype)

    def grad_link(g, a, b, node):
        return g

    def grad_link_zero(g, a, b, node):
        return g

    def gather_along(x, indices, dim, keepdim=True):
        if x.ndim == 0:
            return xp.asarray(x, copy=True)
        r = xp.take_along_axis(x, indices, axis=dim)
        return r if keepdim else xp.squeeze(r, axis=dim)

    def scatter_along_zeros(g, indices, dim, keepdim, shape):
        if len(shape) == 0:
            return xp.reshape(xp.asarray(g, copy=True), ())
        if not keepdim:
            g = xp.expand_dims(g, axis=dim)
        return k.scatter_add(shape, lambda lin: xp.take_along_axis(lin, indices, axis=dim), g, g.dtype)

    def bag_ids(n, offsets, include_last_offset):
        offs = offsets[:-1] if include_last_offset else offsets
        return xp.astype(xp.searchsorted(offs, xp.arange(n, dtype=offs.dtype), side="right"), xp.int64) - 1

    def median_all(x, ignore_nan=False):
        flat = xp.reshape(x, (-1,))
        if k.is_float(x):
            nan = xp.isnan(flat)
            if ignore_nan:
                flat = flat[~nan]
            elif bool(xp.any(nan)):
                return xp.asarray(math.nan, dtype=x.dtype)
            if flat.shape[0] == 0:
                return xp.asarray(math.nan, dtype=x.dtype)
        elif flat.shape[0] == 0:
            return xp.asarray(True if x.dtype == xp.bool else xp.iinfo(x.dtype).min, dtype=x.dtype)
        srt = xp.sort(xp.astype(flat, xp.uint8) if x.dtype == xp.bool else flat)
        return xp.astype(srt[(flat.shape[0] - 1) // 2], x.dtype)

    # ----- padding and shuffles -----------------------------------------------------------------------------
    def _pad_slices(shape, pads):
        from ..cpu.nn_pad import _pad_slices as slices   # pure slice arithmetic, shared with the cpu kernel
        return slices(shape, pads)

    def constant_pad(x, pads, value):
        lead = x.ndim - len(pads)
        shape = tuple(x.shape[:lead]) + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[lead:], pads))
        out = xp.full(shape, value, dtype=x.dtype)
        src, dst = _pad_slices(tuple(x.shape), pads)
        out[dst] = x[src]
        return out

    def constant_pad_backward(g, pads, shape):
        out = xp.zeros(tuple(shape), dtype=g.dtype)
        src, dst = _pad_slices(tuple(shape), pads)
        out[src] = g[dst]
        return out

    def pixel_shuffle(x, r):
        *lead, c_, h, w = x.shape
        c, n = c_ // (r * r), len(lead)
        y = xp.reshape(x, tuple(lead) + (c, r, r, h, w))
        y = xp.permute_dims(y, tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
        return xp.reshape(y, tuple(lead) + (c, h * r, w * r))

    def pixel_unshuffle(x, r):
        *lead, c, h_, w_ = x.shape
        h, w, n = h_ // r, w_ // r, len(lead)
        y = xp.reshape(x, tuple(lead) + (c, h, r, w, r))
        y = xp.permute_dims(y, tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
        return xp.reshape(y, tuple(lead) + (c * r * r, h, w))

    def channel_shuffle(x, groups):
        n, c = x.shape[:2]
        rest = tuple(x.shape[2:])
        y = xp.reshape(x, (n, groups, c // groups) + rest)
        order = (0, 2, 1) + tuple(range(3, y.ndim))
        return xp.reshape(xp.permute_dims(y, order), tuple(x.shape))

    def matmul_forward(a, b, bmm: bool = False):
        return xp.matmul(a, b)   # the cpu kernel's small-bmm loop (summation order only) is no concern here

    def addprod(c, a, b, eq: str, beta, alpha):
        """``beta * c + alpha * einsum(eq, a, b)``; ``beta == 0`` ignores ``c``."""
        prod = einsum(eq, a, b)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:
            return prod
        return (c * beta if beta != 1 else c) + prod

    def grad_in_own_layout(x, g, ndim: int) -> bool:
        return False   # the standard has no memory layout

    def near_singular(det):
        return xp.abs(det) < 100 * float(xp.finfo(det.dtype).eps)

    def channels_last_copy(a):
        return xp.asarray(a, copy=True)   # the standard has no memory layout: the values are the copy

    def _nonzero(x):
        return x if x.dtype == xp.bool else x != 0

    def nonzero_indices(x):
        if x.ndim == 0:
            return xp.zeros((int(bool(_nonzero(x))), 0), dtype=xp.int64)
        return xp.astype(xp.stack(xp.nonzero(x), axis=1), xp.int64)

    def nonzero_count(x, dims: tuple):
        nz = xp.astype(_nonzero(x), xp.int64)
        return xp.sum(nz, axis=tuple(dims) if x.ndim else None, dtype=xp.int64)

    def row_ids(x):
        return xp.repeat(xp.arange(x.shape[0], dtype=xp.int64), x.shape[1])

    def row_pairs(x) -> tuple:
        n = x.shape[0]
        i, j = xp.arange(n)[:, None], xp.arange(n)[None, :]
        r = xp.nonzero(xp.broadcast_to(j > i, (n, n)))
        return xp.astype(r[0], xp.int64), xp.astype(r[1], xp.int64)

    def _counts(idx, n: int):
        """How often each of 0..n-1 occurs in ``idx`` (int64), in standard operations."""
        flat = xp.reshape(idx, (-1,))
        return xp.sum(xp.astype(flat[:, None] == xp.arange(n, dtype=flat.dtype)[None, :], xp.int64), axis=0)

    def index_count_inverse(idx, n: int, dtype):
        counts = _counts(idx, n)
        return xp.astype(1.0 / xp.astype(xp.take(counts, xp.reshape(idx, (-1,))), xp.float64), k.lib(dtype)) \
            if idx.ndim <= 1 else xp.reshape(index_count_inverse(xp.reshape(idx, (-1,)), n, dtype), tuple(idx.shape))

    def bag_count_inverse(bags, keep, nbags: int, dtype):
        counts = _counts(bags[keep], nbags)
        return xp.astype(1.0 / xp.astype(xp.maximum(counts, xp.asarray(1, dtype=xp.int64)), xp.float64),
                         k.lib(dtype))

    # ----- decompositions and solvers: the standard's linalg extension ------------------------------------------
    la = getattr(xp, "linalg", None)
    _SINGULAR = "The solver failed because the input matrix is singular."
    _T = xp.matrix_transpose if hasattr(xp, "matrix_transpose") else (lambda a: xp.swapaxes(a, -1, -2))

    def _lapack(op, what):
        """The library's LinAlgError (whatever module defines it) as ember's, with PyTorch's message."""
        def deco(fn):
            def kernel(*args, **kwargs):
                if la is None:
                    k.unsupported(fn.__name__)
                try:
                    return fn(*args, **kwargs)
                except Exception as e:   # noqa: BLE001 (only LinAlgErrors are translated)
                    if type(e).__name__ == "LinAlgError":
                        raise LinAlgError(f"{op}: {what}") from None
                    raise
            kernel.__name__ = fn.__name__
            return kernel
        return deco

    def _eye(n, like):
        return xp.eye(n, dtype=like.dtype)

    @_lapack("linalg.inv", "The inversion could not be completed because the input matrix is singular.")
    def linalg_inv(a):
        return la.inv(a)

    @_lapack("linalg.det", _SINGULAR)
    def linalg_det(a):
        return la.det(a)

    @_lapack("linalg.slogdet", _SINGULAR)
    def linalg_slogdet(a):
        r = la.slogdet(a)
        return r[0], r[1]

    @_lapack("torch.linalg.solve", _SINGULAR)
    def linalg_solve(a, b, left=True):
        if b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1])):
            return la.solve(a, b[..., None])[..., 0]
        if left:
            return la.solve(a, b)
        return _T(la.solve(_T(a), _T(b)))

    def _H(a):
        return xp.conj(_T(a)) if xp.isdtype(a.dtype, "complex floating") else _T(a)

    def linalg_cholesky(a, upper=False):
        if upper and xp.isdtype(a.dtype, "complex floating"):   # U^H U from A's upper triangle
            return _H(linalg_cholesky(_H(a)))
        try:
            r = la.cholesky(a)
        except Exception as e:   # noqa: BLE001
            if type(e).__name__ != "LinAlgError":
                raise
            order = a.shape[-1]
            for j in range(1, a.shape[-1] + 1):   # the first leading minor that is not positive-definite
                try:
                    la.cholesky(a[..., :j, :j])
                except Exception:   # noqa: BLE001
                    order = j
                    break
            raise LinAlgError(f"linalg.cholesky: The factorization could not be completed because the input is "
                              f"not positive-definite (the leading minor of order {order} is not "
                              f"positive-definite).") from None
        return _T(r) if upper else r

    def linalg_cholesky_ex(a, upper=False):
        """The cpu kernel's (L, info): matrix by matrix where the batch does not factor."""
        cx = xp.isdtype(a.dtype, "complex floating")
        if upper and cx:
            r, info = linalg_cholesky_ex(_H(a))
            return _H(r), info
        try:
            r = la.cholesky(a)
            info = xp.zeros(tuple(a.shape[:-2]), dtype=xp.int32)
        except Exception as e:   # noqa: BLE001
            if type(e).__name__ != "LinAlgError":
                raise
            n = a.shape[-1]
            flat = _batched(a, (n, n))
            outs, infos = [], []
            for i in range(flat.shape[0]):
                m = flat[i, ...]
                try:
                    outs.append(la.cholesky(m))
                    infos.append(0)
                    continue
                except Exception as e2:   # noqa: BLE001
                    if type(e2).__name__ != "LinAlgError":
                        raise
                L = xp.tril(m)
                j = 0
                while j < n:
                    try:
                        L11 = la.cholesky(m[:j + 1, :j + 1])
                    except Exception:   # noqa: BLE001
                        break
                    j += 1
                rows = []
                if j:
                    if cx:   # L21 = A21 L11^-H, from A's lower triangle
                        L21 = _H(solve_triangular(L11[:j, :j], _H(m[j:, :j]), upper=False))
                        piv = m[j, j] - xp.astype(xp.sum(xp.abs(L21[0, :]) ** 2), a.dtype)
                    else:
                        L21 = _T(solve_triangular(L11[:j, :j], m[:j, j:], upper=False))
                        piv = m[j, j] - xp.sum(L21[0, :] ** 2)
                    top = xp.concat([L11[:j, :j], xp.zeros((j, n - j), dtype=a.dtype)], axis=1)
                    rows = [top]
                else:
                    L21 = xp.zeros((n, 0), dtype=a.dtype)
                    piv = m[j, j]
                rowj = xp.concat([L21[0:1, :], xp.reshape(piv, (1, 1)), xp.zeros((1, n - j - 1), dtype=a.dtype)],
                                 axis=1)
                rest = xp.concat([L21[1:, :], L[j + 1:, j:]], axis=1)
                outs.append(xp.concat(rows + [rowj, rest], axis=0))
                infos.append(j + 1)
            r = xp.reshape(xp.stack(outs), tuple(a.shape))
            info = xp.reshape(xp.asarray(infos, dtype=xp.int32), tuple(a.shape[:-2]))
        return (_T(r) if upper else r), info

    def linalg_ldl_factor_ex(a, hermitian=False):
        """The cpu kernel's (LD, pivots, info): the same sytf2 steps (``ldl_factor_one``) on this namespace."""
        from ..cpu.linalg import ldl_factor_one
        n = a.shape[-1]
        flat = _batched(a, (n, n))
        res = [ldl_factor_one(xp, flat[i, ...]) for i in range(flat.shape[0])]
        ld = xp.stack([r[0] for r in res]) if res else flat
        piv = xp.reshape(xp.asarray([r[1] for r in res], dtype=xp.int32), tuple(a.shape[:-1])) if res else \
            xp.zeros(tuple(a.shape[:-1]), dtype=xp.int32)
        info = xp.reshape(xp.asarray([r[2] for r in res], dtype=xp.int32), tuple(a.shape[:-2])) if res else \
            xp.zeros(tuple(a.shape[:-2]), dtype=xp.int32)
        return xp.reshape(ld, tuple(a.shape)), piv, info

    def linalg_ldl_solve(ld, piv, b, hermitian=False):
        """The cpu kernel's solve (``ldl_solve_one``, LAPACK's sytrs) on this namespace; batch dims broadcast."""
        from ..cpu.linalg import ldl_solve_one
        n = ld.shape[-1]
        batch = _bshape(tuple(ld.shape[:-2]), tuple(b.shape[:-2]))
        lds = _batched(xp.broadcast_to(ld, batch + (n, n)), (n, n))
        pivs = _batched(xp.broadcast_to(piv, batch + (n,)), (n,))
        bs = _batched(xp.broadcast_to(b, batch + tuple(b.shape[-2:])), tuple(b.shape[-2:]))
        out = [ldl_solve_one(xp, lds[i, ...], [int(p) for p in pivs[i, ...]], bs[i, ...]) for i in range(bs.shape[0])]
        return xp.reshape(xp.stack(out) if out else bs, batch + tuple(b.shape[-2:]))

    @_lapack("torch.cholesky_solve", _SINGULAR)
    def cholesky_solve(b, l, upper=False):
        t = tri_mask(l, upper)
        return la.solve(xp.matmul(_T(t), t) if upper else xp.matmul(t, _T(t)), b)

    @_lapack("linalg.qr", _SINGULAR)
    def linalg_qr(a, mode="reduced"):
        if mode == "r":
            return xp.zeros((0,), dtype=a.dtype), la.qr(a, mode="reduced")[1]
        q, r = la.qr(a, mode=mode)
        return q, r

    @_lapack("linalg.eigh", "The algorithm failed to converge.")
    def linalg_eigh(a, UPLO="L"):  # noqa: N803 (PyTorch's name)
        n = a.shape[-1]
        i, j = xp.arange(n)[:, None], xp.arange(n)[None, :]
        tri = (j <= i) if UPLO == "L" else (j >= i)   # read one triangle only, as LAPACK
        t = xp.where(tri, a, xp.zeros((), dtype=a.dtype))
        if xp.isdtype(a.dtype, "complex floating"):   # Hermitian: the other triangle conjugated, a real diagonal
            low = xp.where(i == j, xp.zeros((), dtype=a.dtype), t)
            d = xp.astype(xp.real(xp.where(i == j, a, xp.zeros((), dtype=a.dtype))), a.dtype)
            return la.eigh(low + xp.conj(_T(low)) + d)
        w, v = la.eigh(t + _T(t) - xp.where(i == j, a, xp.zeros((), dtype=a.dtype)))
        return w, v

    def linalg_eig(a):
        """No general (non-symmetric) eigensolver in the array API standard: refused (the cpu kernel is LAPACK's
        geev; writing one here, with LAPACK's eigenvalue order, is left to do)."""
        raise NotImplementedError("linalg.eig: this device has no general eigensolver (the array API standard "
                                  "has none)")

    _SVD = "The algorithm failed to converge because the input matrix is ill-conditioned or has too many " \
        "repeated singular values."

    @_lapack("linalg.svd", _SVD)
    def linalg_svd(a, full_matrices=True):
        if k.numel(a) == 0:
            m, n = a.shape[-2:]
            kk, b = min(m, n), tuple(a.shape[:-2])
            u = xp.broadcast_to(_eye(m, a), b + (m, m)) if full_matrices else xp.zeros(b + (m, kk), dtype=a.dtype)
            vh = xp.broadcast_to(_eye(n, a), b + (n, n)) if full_matrices else xp.zeros(b + (kk, n), dtype=a.dtype)
            return xp.asarray(u, copy=True), xp.zeros(b + (kk,), dtype=xp.real(u).dtype), xp.asarray(vh, copy=True)
        u, s_, vh = la.svd(a, full_matrices=full_matrices)
        return u, s_, vh

    @_lapack("linalg.svd", _SVD)
    def linalg_svdvals(a):
        if k.numel(a) == 0:
            return xp.zeros(tuple(a.shape[:-2]) + (min(a.shape[-2:]),), dtype=xp.real(xp.zeros((), dtype=a.dtype)).dtype)
        return la.svdvals(a)

    def linalg_pinv(a, atol=None, rtol=None, hermitian=False):
        m, n = a.shape[-2:]
        if k.numel(a) == 0:
            return xp.zeros(tuple(a.shape[:-2]) + (n, m), dtype=a.dtype)
        u, s_, vh = linalg_svd(a, full_matrices=False)
        if rtol is None:
            rtol = 0.0 if (atol is not None and atol > 0) else max(m, n) * xp.finfo(a.dtype).eps
        tol = xp.maximum(xp.asarray(atol or 0.0, dtype=s_.dtype), rtol * s_[..., :1])
        keep = s_ > tol
        sinv = xp.where(keep, 1 / xp.where(keep, s_, xp.ones_like(s_)), xp.zeros_like(s_))
        if xp.isdtype(a.dtype, "complex floating"):
            return xp.matmul(_H(vh) * xp.astype(sinv, a.dtype)[..., None, :], _H(u))
        return xp.matmul(_T(vh) * sinv[..., None, :], _T(u))

    @_lapack("linalg.solve_triangular", _SINGULAR)
    def solve_triangular(a, b, upper, left=True, unitriangular=False):
        t = tri_mask(a, upper, 0.0 if unitriangular else 1.0)
        if unitriangular:
            t = t + _eye(a.shape[-1], a)
        return la.solve(t, b) if left else _T(la.solve(_T(t), _T(b)))

    # ----- LU with partial pivoting: the cpu kernel's steps (LAPACK's getrf), so the same pivots ---------------
    def _batched(x, tail):
        """``x`` as (batch, *tail) with its batch dims flattened (empty shapes too)."""
        return xp.reshape(x, (math.prod(x.shape[:x.ndim - len(tail)]),) + tuple(tail))

    def _cmul(a, b):
        """Complex ``a * b`` as its four real products, each rounded (as the cpu kernel's)."""
        ar, ai, br, bi = xp.real(a), xp.imag(a), xp.real(b), xp.imag(b)
        one_i = xp.asarray(1j, dtype=a.dtype)
        return xp.astype(ar * br - ai * bi, a.dtype) + xp.astype(ar * bi + ai * br, a.dtype) * one_i

    def linalg_lu_factor_ex(a, pivot=True):
        """(LU, pivots, info) as getrf: the pivot of column j is the first row of largest |value| at or below j
        (idamax, |re| + |im| for complex; a NaN wins only in first place); pivots 1-based int32; info the 1-based index of the first
        exactly zero pivot (0 if none), whose column is left unscaled. One step per column for the whole batch."""
        if not pivot:
            raise LinAlgError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
        m, n = a.shape[-2:]
        kk = min(m, n)
        batch = tuple(a.shape[:-2])
        lu = xp.asarray(_batched(a, (m, n)), copy=True)
        nb = lu.shape[0]
        pivots = []
        info = xp.zeros((nb,), dtype=xp.int32)
        rows = xp.arange(m, dtype=xp.int64)[None, :]
        cx = xp.isdtype(lu.dtype, "complex floating")
        tiny = float(xp.finfo(lu.dtype).smallest_normal)
        for j in range(kk):
            col = lu[:, j:, j]
            col = xp.abs(xp.real(col)) + xp.abs(xp.imag(col)) if cx else xp.abs(col)   # izamax: |re| + |im|
            nan = xp.isnan(col)
            p = j + xp.where(nan[:, 0], 0, xp.argmax(xp.where(nan, -1.0, col), axis=1))
            pivots.append(xp.astype(p + 1, xp.int32))
            # rows j and p swapped: row r of the result is row src[r]
            p = p[:, None]
            src = xp.where(rows == j, p, xp.where(rows == p, j, rows))
            lu = xp.take_along_axis(lu, xp.broadcast_to(src[:, :, None], (nb, m, n)), axis=1)
            d = lu[:, j, j]
            zero = d == 0
            info = xp.where(zero & (info == 0), xp.asarray(j + 1, dtype=xp.int32), info)
            if j + 1 < m:
                # getrf multiplies by the reciprocal, dividing only where it would overflow
                dd = xp.where(zero, 1.0, d)[:, None]
                below = lu[:, j + 1:, j]
                if cx:   # zscal with the reciprocal
                    lu[:, j + 1:, j] = _cmul(below, 1 / dd)
                else:
                    lu[:, j + 1:, j] = xp.where(xp.abs(dd) >= tiny, below * (1 / dd), below / dd)
                if j + 1 < n:
                    lu[:, j + 1:, j + 1:] = lu[:, j + 1:, j + 1:] - (_cmul if cx else xp.multiply)(
                        lu[:, j + 1:, j:j + 1], lu[:, j:j + 1, j + 1:])
        piv = xp.stack(pivots, axis=1) if pivots else xp.zeros((nb, 0), dtype=xp.int32)
        return xp.reshape(lu, tuple(a.shape)), xp.reshape(piv, batch + (kk,)), xp.reshape(info, batch)

    def geqrf(a):
        """LAPACK's geqrf on a (batch of) matrices, as ``torch.geqrf``: R on and above the diagonal, the Householder
        vectors below it, and tau. The unblocked steps (dgeqr2/zgeqr2): per column, dlarfg/zlarfg makes the
        reflector H = I - tau [1; v] [1; v]^H that zeroes the column below the diagonal (beta real), and H^H is
        applied to the columns right of it; a column already zero below the diagonal (and real on it) gets tau = 0."""
        m, n = a.shape[-2:]
        kk = min(m, n)
        batch = tuple(a.shape[:-2])
        h = xp.asarray(_batched(a, (m, n)), copy=True)
        nb = h.shape[0]
        cx = xp.isdtype(h.dtype, "complex floating")
        conj = xp.conj if cx else (lambda z: z)
        taus = []
        for j in range(kk):
            alpha = h[:, j, j]
            ar, ai = (xp.real(alpha), xp.imag(alpha)) if cx else (alpha, None)
            x = h[:, j + 1:, j]
            xa = xp.abs(x)   # (the standard's core: a device may lack the linalg extension)
            xnorm = xp.sqrt(xp.sum(xa * xa, axis=-1)) if j + 1 < m else xp.zeros_like(ar)
            trivial = (xnorm == 0) & (ai == 0) if cx else xnorm == 0
            # beta = -sign(Re alpha) * |(alpha, x)|, Fortran's SIGN: +0 counts as positive
            hyp = xp.sqrt(ar * ar + xnorm * xnorm + (ai * ai if cx else 0))
            beta = xp.where(ar >= 0, -hyp, hyp)
            sb = xp.where(trivial, 1.0, beta)
            tau = (beta - ar) / sb
            if cx:
                tau = xp.astype(tau, h.dtype) - xp.astype(ai / sb, h.dtype) * 1j
                beta = xp.astype(beta, h.dtype)
            tau = xp.where(trivial, xp.zeros_like(tau), tau)
            one = xp.ones_like(alpha)
            v = x * xp.where(trivial, one, 1 / xp.where(trivial, one, alpha - beta))[:, None]
            h[:, j + 1:, j] = v
            h[:, j, j] = xp.where(trivial, alpha, beta)
            if j + 1 < n:
                vf = xp.concat([xp.ones((nb, 1), dtype=h.dtype), v], axis=1)[:, :, None]   # (B, m - j, 1)
                block = h[:, j:, j + 1:]
                w = xp.sum(conj(vf) * block, axis=1, keepdims=True)                     # (B, 1, n - j - 1)
                h[:, j:, j + 1:] = block - conj(tau)[:, None, None] * vf * w
            taus.append(tau)
        tau = xp.stack(taus, axis=1) if taus else xp.zeros((nb, 0), dtype=h.dtype)
        return xp.reshape(h, tuple(a.shape)), xp.reshape(tau, batch + (kk,))

    def _perm(piv, m: int):
        """The row permutation the sequential swaps ``piv`` (1-based, (B, k)) make of range(m): row i of P^T A is
        row perm[i] of A."""
        nb, kk = piv.shape
        cols = xp.arange(m, dtype=xp.int64)[None, :]
        perm = xp.broadcast_to(cols, (nb, m))
        for i in range(kk):
            p = xp.astype(piv[:, i:i + 1], xp.int64) - 1
            perm = xp.where(cols == i, xp.take_along_axis(perm, p, axis=1), xp.where(cols == p, perm[:, i:i + 1], perm))
        return perm

    def lu_unpack(lu, piv, unpack_data=True, unpack_pivots=True):
        """(P, L, U) with A = P L U from the packed LU and its pivots; what is not unpacked is empty."""
        m, n = lu.shape[-2:]
        kk = min(m, n)
        batch = tuple(lu.shape[:-2])
        P = L = U = xp.zeros((0,), dtype=lu.dtype)
        if unpack_pivots:
            perm = _perm(_batched(xp.broadcast_to(piv, batch + (kk,)), (kk,)), m)
            hit = perm[:, None, :] == xp.arange(m, dtype=xp.int64)[None, :, None]   # P[b, perm[b, i], i] = 1
            P = xp.reshape(xp.astype(hit, lu.dtype), batch + (m, m))
        if unpack_data:
            L = xp.tril(lu[..., :, :kk], k=-1) + xp.eye(m, kk, dtype=lu.dtype)
            U = xp.triu(lu[..., :kk, :])
        return P, L, U

    def linalg_lu(a, pivot=True):
        lu, piv, _ = linalg_lu_factor_ex(a, pivot)
        return lu_unpack(lu, piv)

    def _subst(t, b, lower: bool, unit: bool):
        """T^-1 B by substitution for triangular T (only its triangle read), batch dims broadcast; no singularity
        check (a zero diagonal gives inf/nan, as trsm; a zero complex one NaN, as the cpu kernel)."""
        n = t.shape[-1]
        x = xp.asarray(xp.broadcast_to(b, _bshape(t.shape[:-2], b.shape[:-2]) + tuple(b.shape[-2:])), copy=True)
        cx = xp.isdtype(x.dtype, "complex floating")
        for j in (range(n) if lower else range(n - 1, -1, -1)):
            if not unit:
                d = t[..., j, j][..., None]
                x[..., j, :] = x[..., j, :] / d
                if cx:
                    x[..., j, :] = xp.where(d == 0, xp.asarray(complex(math.nan, math.nan), dtype=x.dtype),
                                            x[..., j, :])
            rest = slice(j + 1, None) if lower else slice(0, j)
            x[..., rest, :] = x[..., rest, :] - t[..., rest, j][..., None] * x[..., j:j + 1, :]
        return x

    def linalg_lu_solve(lu, piv, b, left=True, adjoint=False):
        """X with A X = B (A^T X = B if ``adjoint``; X A = B or X A^T = B if not ``left``), A = P L U packed as
        (LU, pivots); batch dims broadcast."""
        if not left:   # X A = B  <=>  A^T X^T = B^T
            return _T(linalg_lu_solve(lu, piv, _T(b), True, not adjoint))
        n = lu.shape[-1]
        batch = _bshape(lu.shape[:-2], b.shape[:-2])
        perm = xp.reshape(_perm(_batched(piv, (n,)), n), tuple(lu.shape[:-2]) + (n,))
        if not adjoint:   # U^-1 L^-1 P^T B
            pb = xp.take_along_axis(xp.broadcast_to(b, batch + tuple(b.shape[-2:])),
                                    xp.broadcast_to(perm[..., None], batch + (n, b.shape[-1])), axis=-2)
            return _subst(lu, _subst(lu, pb, True, True), False, False)
        # A^T = U^T L^T P^T: X = P L^-T U^-T B, row perm[i] of X being row i of Z
        lt = _T(lu)
        z = _subst(lt, _subst(lt, b, True, False), False, True)
        z = xp.broadcast_to(z, batch + tuple(z.shape[-2:]))
        back = xp.argsort(perm, axis=-1)
        return xp.take_along_axis(z, xp.broadcast_to(back[..., None], tuple(z.shape)), axis=-2)

    def det_backward(g, det, a):
        """g det A^-T from the LU as PyTorch's plain backward, a zero pivot replaced by eps (an exactly singular A
        gets a zero gradient)."""
        lu, piv, _ = linalg_lu_factor_ex(a)
        n = a.shape[-1]
        diag = xp.arange(n)[:, None] == xp.arange(n)[None, :]
        lu = xp.where(diag & (lu == 0), xp.asarray(float(xp.finfo(a.dtype).eps), dtype=a.dtype), lu)
        d = (g * det)[..., None, None] * _eye(n, a)
        return linalg_lu_solve(lu, piv, d, adjoint=True)

    def slogdet_backward(g, a):
        """g A^-T from the LU as PyTorch's plain backward (a singular A gives inf/nan)."""
        lu, piv, _ = linalg_lu_factor_ex(a)
        return linalg_lu_solve(lu, piv, g[..., None, None] * _eye(a.shape[-1], a), adjoint=True)

    def lstsq_rank(a, rcond):
        """The singular values of ``a`` (descending) and its rank as gelsy, gelsd and gelss count it: the singular
        values above ``rcond`` (None: eps * max(m, n)) times the largest (int64)."""
        m, n = a.shape[-2:]
        if la is None:
            k.unsupported("lstsq_rank")
        s_ = la.svdvals(a) if k.numel(a) else xp.zeros(tuple(a.shape[:-2]) + (0,), dtype=a.dtype)
        if not s_.shape[-1]:
            return s_, xp.zeros(tuple(a.shape[:-2]), dtype=xp.int64)
        tol = (rcond if rcond is not None else float(xp.finfo(a.dtype).eps) * max(m, n)) * s_[..., :1]
        return s_, xp.sum(xp.astype(s_ > tol, xp.int64), axis=-1)

    def matrix_rank_of(a, atol, rtol, hermitian: bool):
        """The number of singular values (|eigenvalues| if ``hermitian``) above max(atol, rtol * s_max) (int64);
        ``rtol`` None: 0 if ``atol`` > 0, else eps * max(m, n)."""
        m, n = a.shape[-2:]
        if rtol is None:
            rtol = 0.0 if (atol is not None and atol > 0) else max(m, n) * float(xp.finfo(a.dtype).eps)
        if k.numel(a) == 0:
            return xp.zeros(tuple(a.shape[:-2]), dtype=xp.int64)
        if la is None:
            k.unsupported("matrix_rank_of")
        s_ = xp.abs(la.eigvalsh(a)) if hermitian else la.svdvals(a)
        thr = xp.maximum(xp.asarray(atol or 0.0, dtype=s_.dtype), rtol * xp.max(s_, axis=-1, keepdims=True))
        return xp.sum(xp.astype(s_ > thr, xp.int64), axis=-1)

    def matrix_exp(a):
        """Padé 13 with scaling and squaring (the cpu kernel's), in float64 (complex128)."""
        from ..cpu.linalg import _PADE13 as b, _THETA13
        if k.numel(a) == 0:
            return xp.asarray(a, copy=True)
        wide = xp.complex128 if xp.isdtype(a.dtype, "complex floating") else xp.float64
        w = xp.astype(a, wide)
        n = w.shape[-1]
        norm = float(xp.max(xp.sum(xp.abs(w), axis=-2)))
        s_ = 0 if not math.isfinite(norm) or norm <= _THETA13 else int(math.ceil(math.log2(norm / _THETA13)))
        w = w / 2.0 ** s_
        eye = xp.eye(n, dtype=wide)
        w2 = w @ w
        w4 = w2 @ w2
        w6 = w4 @ w2
        u = w @ (w6 @ (b[13] * w6 + b[11] * w4 + b[9] * w2) + b[7] * w6 + b[5] * w4 + b[3] * w2 + b[1] * eye)
        v = w6 @ (b[12] * w6 + b[10] * w4 + b[8] * w2) + b[6] * w6 + b[4] * w4 + b[2] * w2 + b[0] * eye
        try:
            r = la.solve(v - u, v + u)
        except Exception as e:   # noqa: BLE001
            if type(e).__name__ != "LinAlgError":
                raise
            r = xp.full(tuple(w.shape), math.nan, dtype=wide)
        for _ in range(s_):
            r = r @ r
        return xp.astype(r, a.dtype)

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp", "la") and callable(f)}
