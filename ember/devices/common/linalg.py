"""Products and the small helpers of linear algebra and sorting rules in array-API standard operations.

``einsum`` is generic: every operand broadcast over all the equation's letters, multiplied, summed (memory of the
product of all sizes: right for the derivative rules' small equations; a library with einsum overrides it)."""
from __future__ import annotations


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

    def dim_matrices(x, mats):
        first = x.ndim - len(mats)
        for i, a in enumerate(mats):
            x = xp.moveaxis(xp.matmul(xp.moveaxis(x, first + i, -1), xp.astype(xp.matrix_transpose(a), x.dtype)),
                            -1, first + i)
        return x

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

    return {n: f for n, f in locals().items() if not n.startswith("_") and n not in ("k", "xp") and callable(f)}
