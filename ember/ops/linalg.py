"""Matrix products: matmul (1-d, 2-d, batched), mm, mv, dot, bmm, outer."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd.graph import node_class
from ._primitive import PrimNode, apply, defprim
from .._dtype import c_type_name
from ._registry import method, register
from ._util import check_tensor


def _matmul_grad_a(xp, g, out, a, b):
    if b.ndim == 1:
        if a.ndim == 1:
            return g * b
        return xp.unsqueeze(g, -1) * b                          # (..., n, 1) * (m,)
    if a.ndim == 1:
        return xp.squeeze(xp.matmul(b, xp.unsqueeze(g, -1)), -1)  # (..., n), summed to (n,) by the engine
    return xp.matmul(g, xp.transpose(b, -1, -2))


def _matmul_grad_b(xp, g, out, a, b):
    if a.ndim == 1:
        if b.ndim == 1:
            return g * a
        return xp.unsqueeze(a, -1) * xp.unsqueeze(g, -2)        # (n, 1) * (..., 1, m)
    if b.ndim == 1:
        return xp.squeeze(xp.matmul(xp.transpose(a, -1, -2), xp.unsqueeze(g, -1)), -1)
    return xp.matmul(xp.transpose(a, -1, -2), g)


matmul_p = defprim("matmul", "MmBackward0", lambda xp, a, b: xp.matmul(a, b),
                   vjp=(_matmul_grad_a, _matmul_grad_b), jvp="multilinear", saves=(0, 1))



def _check_matmul(a, b, op):
    na, nb = a._data.ndim, b._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to {op} need to be at least 1D, but they are {na}D and {nb}D")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c_type_name(a._data.dtype)} != "
                           f"{c_type_name(b._data.dtype)}")
    sa, sb = a._data.shape, b._data.shape
    if na == 1 and nb == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have the "
                               f"same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
        return "DotBackward0"
    if nb == 1:
        if sa[-1] != sb[0]:
            raise RuntimeError(f"size mismatch, got input ({sa[-2]}), mat ({sa[-2]}x{sa[-1]}), vec ({sb[0]})")
        return "MvBackward0" if na == 2 else "UnsafeViewBackward0"
    k = sa[-1]
    if sb[-2] != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_rows(sa)}x{k} and {sb[-2]}x{sb[-1]})")
    if na > 2 or nb > 2:
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({sa[-3] if na > 2 else 1}) must match the size of tensor b "
                               f"({sb[-3] if nb > 2 else 1}) at non-singleton dimension 0") from None
        return "UnsafeViewBackward0"
    if na == 1:
        return "SqueezeBackward4"
    return "MmBackward0"


def _rows(shape):
    n = 1
    for s in shape[:-1]:
        n *= s
    return n


@register(method=True, graph=True)
def matmul(input, other):
    check_tensor(input, "matmul")
    check_tensor(other, "matmul", "other", 2)
    name = _check_matmul(input, other, "matmul")
    if input._data.dtype.kind == "b":
        kernel = "dot" if input._data.ndim == other._data.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    return apply(matmul_p, (input, other), {}, node_class(name, PrimNode))


@register(method=True)
def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"{'self' if input.ndim != 2 else 'mat2'} must be a matrix")
    return matmul(input, mat2)


@register(method=True)
def mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got " f"{input.ndim}, {vec.ndim}")
    return matmul(input, vec)


@register(method=True)
def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


@register(method=True)
def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor")
    return matmul(input, mat2)


@register(method=True, aliases=("ger",))
def outer(input, vec2):
    """``input[:, None] * vec2`` (PyTorch composes it the same way: its grad_fn is MulBackward0)."""
    check_tensor(input, "outer")
    check_tensor(vec2, "outer", "vec2", 2)
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    return input.unsqueeze(1) * vec2


def _rmatmul(self, other):
    if isinstance(other, Tensor):
        return matmul(other, self)
    return NotImplemented


def _matmul_op(self, other):
    if isinstance(other, Tensor):
        return matmul(self, other)
    return NotImplemented


method("__matmul__", _matmul_op)
method("__rmatmul__", _rmatmul)
