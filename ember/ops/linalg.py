"""Linear algebra: matrix products (matmul and its family, einsum, tensordot, kron, cross) and the
decompositions and solvers of ``torch.linalg`` (det, slogdet, inv, solve, cholesky, qr, eigh, svd, pinv,
matrix_exp, lstsq, solve_triangular, lu_factor, lu, lu_solve, ...).

Products are one primitive each (``matmul``, ``einsum``, ``addprod``); the node PyTorch records depends on
the op and on its internal path (``MmBackward0``, ``BmmBackward0``, ``UnsafeViewBackward0``...), so each
public function names the node it creates.

A decomposition with several outputs is one primitive per output, each computing the decomposition
(PyTorch's backward is linear in the output gradients, so the per-output VJPs add up to it). Rules call
the decompositions again through ``xp`` (``xp.linalg_eigh``), which under ``create_graph`` are the
differentiable public functions: every derivative is differentiable again. Real dtypes only.
"""
from __future__ import annotations

import math
import numbers
import warnings

from ..devices import NAMESPACES
from .._dtype import c_type_name
from ..devices.cpu.linalg import LinAlgError
from .._tensor import Tensor, make
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode, apply, batch_rule, batch_safe, broadcast_error, defprim, graph_ns
from ._registry import SUBMODULES, graph, graph_raw, method, register
from .._util import check_bool, check_tensor, dtype_word, no_out, return_type, scalar_or_tensor
from ..autograd._views import apply_inplace
from .shape import _broadcast_shape

register(LinAlgError, name="LinAlgError", module=False, submodule="linalg")


def _node(name: str) -> type:
    return node_class(name, PrimNode)


def _mT(xp, x):
    return xp.transpose(x, -1, -2)


_return_type = return_type


# ======================================================================================================
# matmul, mm, bmm, mv, dot, vdot
# ======================================================================================================

def _matmul_grad_a(xp, g, out, a, b):
    if b.ndim == 1:
        if a.ndim == 1:
            return g * b
        return xp.unsqueeze(g, -1) * b                          # (..., n, 1) * (m,)
    if a.ndim == 1:
        return xp.squeeze(xp.matmul(b, xp.unsqueeze(g, -1)), -1)  # (..., n), summed to (n,) by the engine
    return xp.matmul(g, _mT(xp, b))


def _matmul_grad_b(xp, g, out, a, b):
    if a.ndim == 1:
        if b.ndim == 1:
            return g * a
        return xp.unsqueeze(a, -1) * xp.unsqueeze(g, -2)        # (n, 1) * (..., 1, m)
    if b.ndim == 1:
        return xp.squeeze(xp.matmul(_mT(xp, a), xp.unsqueeze(g, -1)), -1)
    return xp.matmul(_mT(xp, a), g)


# float16: PyTorch sums in float32 in its own order and rounds once (see xp.matmul_forward); other dtypes: BLAS.
matmul_p = defprim("matmul", "MmBackward0", lambda xp, a, b: xp.matmul_forward(a, b),
                   vjp=(_matmul_grad_a, _matmul_grad_b), jvp="multilinear", saves=(0, 1),
                   saved_names=("self", "mat2"))


def _same_dtype(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c_type_name(a._data.dtype)} != "
                           f"{c_type_name(b._data.dtype)}")


def _no_bool(a, kernel):
    if a._data.dtype.kind == "b":
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _matmul_node(a: Tensor, b: Tensor) -> str:
    """The node PyTorch's matmul records: it follows ``_matmul_impl`` (LinearAlgebra.cpp), whose path
    depends on the ranks, on which input requires grad and on the output's shape."""
    na, nb = a._data.ndim, b._data.ndim
    if na == 1 and nb == 1:
        return "DotBackward0"
    if na == 2 and nb == 1:
        return "MvBackward0"
    if na == 1 and nb == 2:
        return "SqueezeBackward4"
    if na == 2 and nb == 2:
        return "MmBackward0"
    if _should_fold(a, b):
        if nb > na and na == 2:
            # (t2^T @ t1^T)^T: the transpose is made contiguous, a copy unless it already is
            n, p = a._data.shape[0], b._data.shape[-1]
            contiguous = n == 1 or p == 1 or a._data.size * b._data.size == 0 or \
                math.prod(b._data.shape[:-2]) * n * p == 0
            return "TransposeBackward0" if contiguous else "CloneBackward0"
        return "UnsafeViewBackward0"
    if na == 3 and nb == 3 and a._data.shape[0] != b._data.shape[0]:
        if a._data.shape[0] == 1 and a._requires_grad:
            return _matmul_node(_Squeezed(a), b)
        if b._data.shape[0] == 1 and b._requires_grad:
            return _matmul_node(a, _Squeezed(b))
    return "UnsafeViewBackward0"


class _Squeezed:
    """What ``_matmul_node`` needs of ``t.squeeze(0)``: its array and requires_grad."""

    def __init__(self, t):
        self._data = t._data[0]
        self._requires_grad = t._requires_grad


def _should_fold(a, b) -> bool:
    na, nb = a._data.ndim, b._data.ndim
    larger = na >= nb
    dim_t1, dim_t2 = (na, nb) if larger else (nb, na)
    if not (dim_t1 >= 3 and dim_t2 <= 2):
        return False
    if (b if larger else a)._requires_grad:
        return True
    if na == 2:
        return False
    t1 = a._data if larger else NAMESPACES[type(b._data)].transpose(b._data, -1, -2)
    if t1.size == 0:
        return True
    # t1 folds into a matrix without a copy when its leading dims are contiguous (ember's arrays are
    # C-contiguous, so only a transposed t1 can fail); PyTorch's strides count in elements
    shape = t1.shape
    strides = [s // t1.itemsize for s in t1.strides]
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _check_matmul(a, b, op):
    na, nb = a._data.ndim, b._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to {op} need to be at least 1D, but they are {na}D and {nb}D")
    sa, sb = a._data.shape, b._data.shape
    if na == 1 and nb == 1:
        _matmul_dtypes(a, b)   # dot checks dtypes first, the others after the shapes
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] to have the "
                               f"same number of elements, but got {sa[0]} and {sb[0]} elements respectively")
        return
    if nb == 1:
        if sa[-1] != sb[0]:
            raise RuntimeError(f"size mismatch, got input ({sa[-2]}), mat ({sa[-2]}x{sa[-1]}), vec ({sb[0]})")
        _matmul_dtypes(a, b)
        return
    k = sa[-1]
    if (na > 2 or nb > 2) and not _broadcastable(sa[:-2], sb[:-2]):
        ba, bb = sa[:-2], sb[:-2]
        n = max(len(ba), len(bb))
        pa, pb = (1,) * (n - len(ba)) + tuple(ba), (1,) * (n - len(bb)) + tuple(bb)
        i = next(i for i in range(n - 1, -1, -1) if pa[i] != pb[i] and 1 not in (pa[i], pb[i]))
        raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                           f"non-singleton dimension {i}")
    if sb[-2] != k:
        if nb > 2:
            # PyTorch's bmm of the broadcast batches reports the batched shapes
            batch = _broadcast(sa[:-2], sb[:-2]) or sa[:-2]
            nbat = math.prod(batch)
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{nbat}, {k}] but "
                               f"got: [{nbat}, {sb[-2]}].")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_rows(sa)}x{k} and {sb[-2]}x{sb[-1]})")
    _matmul_dtypes(a, b)


def _matmul_dtypes(a, b) -> None:
    """matmul's dtype-mismatch message is that of the kernel it folds to: dot, mv, mm or bmm."""
    da, db = a._data.dtype, b._data.dtype
    if da == db:
        return
    na, nb = a._data.ndim, b._data.ndim
    if na == 1 and nb == 1:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {dtype_word(da)} and "
                           f"{dtype_word(db)}")
    if nb == 1:   # mv's result takes the vector's dtype, and its message lists that first
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {dtype_word(db)}, "
                           f"{dtype_word(da)}, and {dtype_word(db)}")
    if nb >= 3:   # folds to bmm
        raise RuntimeError(f"expected scalar type {dtype_word(da)} but found {dtype_word(db)}")
    _same_dtype(a, b)


def _broadcastable(a, b) -> bool:
    return broadcast_error((a, b)) is None


def _broadcast(a, b) -> tuple | None:
    """The shape two shapes broadcast to, None where they do not."""
    return _broadcast_shape((a, b)) if _broadcastable(a, b) else None


def _rows(shape):
    return math.prod(shape[:-1])


def _mm_like(a, b, node):
    return apply(matmul_p, (a, b), {}, _node(node))


@register(method=True, graph=True)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules for 1-d operands and broadcast batch dimensions."""
    check_tensor(input, "matmul")
    check_tensor(other, "matmul", "other", 2)
    _check_matmul(input, other, "matmul")
    if input._data.dtype.kind == "b":
        kernel = "dot" if input._data.ndim == other._data.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    return _mm_like(input, other, _matmul_node(input, other))


@register(method=True)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two matrices (no broadcasting)."""
    check_tensor(input, "mm")
    check_tensor(mat2, "mm", "mat2", 2)
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    sa, sb = input._data.shape, mat2._data.shape
    if sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")
    _same_dtype(input, mat2)
    _no_bool(input, "addmm_impl_cpu_")
    return _mm_like(input, mat2, "MmBackward0")


@register(method=True)
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-d tensors with equal batch sizes (PyTorch does not broadcast)."""
    check_tensor(input, "bmm")
    check_tensor(mat2, "bmm", "mat2", 2)
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    sa, sb = input._data.shape, mat2._data.shape
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] but "
                           f"got: [{sb[0]}, {sb[1]}].")
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"expected scalar type {dtype_word(input._data.dtype)} but found "
                           f"{dtype_word(mat2._data.dtype)}")
    _no_bool(input, "bmm")
    return _mm_like(input, mat2, "BmmBackward0")


@register(method=True)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    check_tensor(input, "mv")
    check_tensor(vec, "mv", "vec", 2)
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}")
    sa, sb = input._data.shape, vec._data.shape
    if sa[1] != sb[0]:
        raise RuntimeError(f"size mismatch, got input ({sa[0]}), mat ({sa[0]}x{sa[1]}), vec ({sb[0]})")
    _matmul_dtypes(input, vec)
    _no_bool(input, "addmv_impl_cpu")
    return _mm_like(input, vec, "MvBackward0")


def _dot_args(input, other, op):
    check_tensor(input, op)
    check_tensor(other, op, "other", 2)
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found "
                           f"{dtype_word(input._data.dtype)} and {dtype_word(other._data.dtype)}")
    n, m = input._data.shape[0], other._data.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    _no_bool(input, op)


@register(method=True)
def dot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-d tensors."""
    _dot_args(input, other, "dot")
    return _mm_like(input, other, "DotBackward0")


@register(method=True)
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Inner product of two 1-d tensors, conjugating the first (the same as dot for real tensors)."""
    _dot_args(input, other, "vdot")
    return _mm_like(input, other, "VdotBackward0")


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


# ======================================================================================================
# einsum: one primitive per number of operands; its VJP is another einsum
# ======================================================================================================

def _einsum_vjp(k):
    def rule(xp, g, out, *ops, eq, sizes):
        ins, o = eq.split("->")
        subs = ins.split(",")
        others = subs[:k] + subs[k + 1:]
        present = set("".join(others) + o)
        # letters only operand k has are summed in the forward: the gradient is broadcast along them
        sz = {c: n for c, n in zip(subs[k], ops[k].shape) if c not in present}
        args = ops[:k] + ops[k + 1:] + (g,)
        op = ops[k]
        if xp.grad_in_own_layout(op, g, len(o)) and not sz and len(set(subs[k])) == 2:
            # a transposed operand (Linear's weight.t()) gets its gradient in its own layout, as PyTorch's
            # mm_mat1/mat2_backward: the weight's gradient then comes out C-contiguous, like the weight
            return xp.einsum(",".join(others + [o]) + "->" + subs[k][::-1], *args).T
        return xp.einsum(",".join(others + [o]) + "->" + subs[k], *args, sizes=sz or None)
    return rule


_EINSUM_PRIMS: dict = {}


def _einsum_prim(n: int):
    p = _EINSUM_PRIMS.get(n)
    if p is None:
        p = _EINSUM_PRIMS[n] = defprim(
            "einsum", "EinsumBackward0", lambda xp, *ops, eq, sizes: xp.einsum(eq, *ops, sizes=sizes),
            vjp=tuple(_einsum_vjp(k) for k in range(n)), jvp="multilinear", saves=tuple(range(n)))
    return p


def _einsum_apply(eq: str, ops: tuple, node: str | None = None, sizes=None) -> Tensor:
    return apply(_einsum_prim(len(ops)), tuple(ops), {"eq": eq, "sizes": sizes},
                 None if node is None else _node(node))


graph("einsum", lambda eq, *ops, sizes=None: _einsum_apply(eq, ops, sizes=sizes))

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(equation: str, ops: tuple) -> tuple:
    """PyTorch's einsum equation as an explicit one (letters only, '->', no ellipsis) and the size of
    each letter; raises PyTorch's errors."""
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->", 1)
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) > len(ops):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(ops):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    for c in eq:
        if not (c.isalpha() and c.isascii()) and c not in ".,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in the equation string, "
                               f"subscripts must be in [a-zA-Z]")
    free = [c for c in _LETTERS if c not in used]
    ell_dims = 0
    parsed = []
    for i, (t, op) in enumerate(zip(terms, ops)):
        nd = op._data.ndim
        if "..." in t:
            if t.count("...") > 1 or "." in t.replace("...", "", 1):
                raise RuntimeError("einsum(): found '.' for operand " f"{i} that is not part of any ellipsis")
            letters = len(t) - 3
            if letters > nd:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) is more than the "
                                   f"number of dimensions ({nd}) for operand {i}")
            ell_dims = max(ell_dims, nd - letters)
            parsed.append((t, nd - letters))
        else:
            if "." in t:
                raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any ellipsis")
            if len(t) != nd:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match the "
                                   f"number of dimensions ({nd}) for operand {i} and no ellipsis was given")
            parsed.append((t, 0))
    ell = "".join(free[:ell_dims])
    subs = [t.replace("...", ell[ell_dims - k:] if k else "") for t, k in parsed]
    if rhs is None:
        counts = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        has_ell = any("..." in t for t in terms)
        out = (ell if has_ell else "") + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        if rhs.count("...") > 1 or "." in rhs.replace("...", "", 1):
            raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
        if "..." in rhs and not any("..." in t for t in terms):
            raise RuntimeError("einsum(): ellipsis (...) is found in the output but not in any operand")
        out = rhs.replace("...", ell)
        seen = set()
        for c in rhs.replace("...", ""):
            if c in seen:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            seen.add(c)
            if not any(c in s for s in subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   f"operand")
    sizes: dict = {}
    for i, (s, op) in enumerate(zip(subs, ops)):
        shape = op._data.shape
        seen_in = {}
        for c, n in zip(s, shape):
            if c in seen_in and seen_in[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't match, "
                                   f"{seen_in[c]} != {n}")
            seen_in[c] = n
            m = sizes.get(c)
            if m is None or m == 1:
                sizes[c] = n
            elif n != 1 and n != m:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped): "
                                   f"subscript {c} has size {n} for operand {i} which does not broadcast with "
                                   f"previously seen size {m}")
    return ",".join(subs) + "->" + out, subs, out, sizes


def _einsum_node(subs, out) -> str:
    """The node PyTorch's einsum ends with (its internal path of permutes, sums, bmm and views)."""
    if len(subs) == 1:
        s = subs[0]
        if len(set(s)) == len(s) and set(s) == set(out):
            return "PermuteBackward0" if s != out else "AliasBackward0"
        if set(out) < set(s) and len(set(s)) == len(s) or len(set(s)) != len(s) and set(s) != set(out):
            return "SumBackward1"
        return "PermuteBackward0"
    contracted = set("".join(subs)) - set(out)
    if not contracted:
        return "MulBackward0"
    return "ViewBackward0"


_EINSUM_ARGS = ("einsum(): must specify the equation string and at least one operand, or at least one operand "
                "and its subscripts list")


def _einsum_subscript(n) -> str:
    """One subscript of einsum's sublist format as a letter (0-25: A-Z, 26-51: a-z), as PyTorch's einsum."""
    if n is Ellipsis:
        return "..."
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"einsum(): subscripts in a subscript list must be int or Ellipsis, not {type(n).__name__}")
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def _einsum_sublist(s) -> str:
    try:
        items = list(s)
    except TypeError:
        raise TypeError(f"einsum(): a subscript list must be a sequence of ints, not {type(s).__name__}") from None
    return "".join(_einsum_subscript(n) for n in items)


@register
def einsum(*args) -> Tensor:
    """Einstein summation (PyTorch's equations: implicit or explicit output, ellipsis, repeated
    subscripts for diagonals, broadcasting of size-1 dims); 3+ operands contract in an optimised order.
    ``einsum(op0, sublist0, op1, sublist1, ..., [out_sublist])`` is the sublist format."""
    if len(args) < 2:
        raise ValueError(_EINSUM_ARGS)
    if isinstance(args[0], Tensor):      # sublist format: operands interleaved with their subscript lists
        equation = ",".join(_einsum_sublist(s) for s in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + _einsum_sublist(args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        return einsum(equation, *operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {type(equation).__name__}")
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): argument 'tensors' must be tuple of Tensors, but found element of type "
                            f"{type(op).__name__} at pos {i}")
    if len({op._data.dtype for op in operands}) > 1:
        raise RuntimeError(f"expected scalar type {dtype_word(operands[0]._data.dtype)} but found "
                           f"{dtype_word(next(o._data.dtype for o in operands if o._data.dtype != operands[0]._data.dtype))}")
    eq, subs, out, sizes = _parse_einsum(equation, operands)
    return _einsum_apply(eq, operands, _einsum_node(subs, out))


# ----- einsum-built products: inner, tensordot, kron, multi_dot ---------------------------------------------

@register(method=True)
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dimension of both; a 0-d operand scales the other."""
    check_tensor(input, "inner")
    check_tensor(other, "inner", "other", 2)
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    sa, sb = input._data.shape, other._data.shape
    if sa[-1] != sb[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(sa)} and {list(sb)}")
    _same_dtype(input, other)
    la, lb = _LETTERS[:input._data.ndim - 1], _LETTERS[input._data.ndim - 1:input._data.ndim + other._data.ndim - 2]
    return _einsum_apply(f"{la}z,{lb}z->{la}{lb}", (input, other), "ViewBackward0")


@register
def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Contract the last ``dims`` dims of ``a`` with the first of ``b``, or the listed pairs of dims."""
    check_tensor(a, "tensordot", "a")
    check_tensor(b, "tensordot", "b", 2)
    if out is not None:
        raise NotImplementedError("ember: tensordot(out=...) is not supported")
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(na - dims, na)), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    else:
        raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
    from .._tensor import wrap_dim
    da = [wrap_dim(d, na, "tensordot") for d in da]
    db = [wrap_dim(d, nb, "tensordot") for d in db]
    _same_dtype(a, b)
    sa = list(_LETTERS[:na])
    sb = list(_LETTERS[na:na + nb])
    for i, j in zip(da, db):
        if a._data.shape[i] != b._data.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a._data.shape[i]} in dim "
                               f"{i} and second has size {b._data.shape[j]} in dim {j}")
        sb[j] = sa[i]
    out_s = "".join(c for k, c in enumerate(sa) if k not in da) + "".join(c for k, c in enumerate(sb) if k not in db)
    return _einsum_apply("".join(sa) + "," + "".join(sb) + "->" + out_s, (a, b), "ViewBackward0")


@register(method=True)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block (i, j) of the result is ``input[i, j] * other``."""
    from .shape import reshape_p
    check_tensor(input, "kron")
    check_tensor(other, "kron", "other", 2)
    _same_dtype(input, other)
    n = max(input._data.ndim, other._data.ndim)
    a = input.reshape((1,) * (n - input._data.ndim) + input._data.shape) if input._data.ndim < n else input
    b = other.reshape((1,) * (n - other._data.ndim) + other._data.shape) if other._data.ndim < n else other
    la, lb = _LETTERS[:n], _LETTERS[n:2 * n]
    r = _einsum_apply(f"{la},{lb}->" + "".join(x + y for x, y in zip(la, lb)), (a, b))
    shape = tuple(x * y for x, y in zip(a._data.shape, b._data.shape))
    return apply(reshape_p, (r,), {"shape": shape}, _node("UnsafeViewBackward0"))


def _multi_dot(tensors, op):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    n = len(tensors)
    if n < 2 and op == "linalg.multi_dot":
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, but found element of type "
                            f"{type(t).__name__} at pos {i}")
    if op == "chain_matmul":
        for t in tensors:
            if t._data.ndim != 2:
                raise RuntimeError(f"Tensor dimension is {t._data.ndim}, expected 2 instead.")
        if n == 1:
            return tensors[0].clone()
    first, last = tensors[0]._data.ndim, tensors[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t._data.ndim}D")
    dt = tensors[0]._data.dtype
    for t in tensors[1:]:
        if t._data.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{dtype_word(dt)} and tensor {tensors.index(t)} {dtype_word(t._data.dtype)}")
    subs = []
    letters = iter(_LETTERS)
    prev = next(letters)
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if i == 0 and nd == 1:
            cur = next(letters)
            subs.append(cur)
            prev = cur
            continue
        if i > 0:
            p = tensors[i - 1]._data.shape[-1]
            if t._data.shape[0] != p:
                sa, sb = list(tensors[i - 1]._data.shape), list(t._data.shape)
                raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {sa} and {sb} cannot be "
                                   f"multiplied")
        if nd == 1:
            subs.append(prev)
        else:
            cur = next(letters)
            subs.append(prev + cur)
            prev = cur
    counts: dict = {}
    for s in subs:
        for c in s:
            counts[c] = counts.get(c, 0) + 1
    out = "".join(c for c in dict.fromkeys("".join(subs)) if counts[c] == 1)
    return _einsum_apply(",".join(subs) + "->" + out, tuple(tensors), "ViewBackward0")


@register(submodule="linalg", module=False, name="multi_dot")
def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices (first/last may be vectors), in the cheapest order."""
    if out is not None:
        raise NotImplementedError("ember: linalg.multi_dot(out=...) is not supported")
    return _multi_dot(tensors, "linalg.multi_dot")


@register
def chain_matmul(*matrices, out=None) -> Tensor:
    """Deprecated form of ``linalg.multi_dot`` (2-d tensors only), with PyTorch's warning."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                  "multiple parameters.", UserWarning, stacklevel=2)
    if out is not None:
        raise NotImplementedError("ember: chain_matmul(out=...) is not supported")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    return _multi_dot(list(matrices), "chain_matmul")


@register(method=True, aliases=("ger",))
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[:, None] * vec2`` (PyTorch composes it the same way: its grad_fn is MulBackward0)."""
    check_tensor(input, "outer")
    check_tensor(vec2, "outer", "vec2", 2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return input.unsqueeze(1) * vec2


# ======================================================================================================
# addmm, addmv, addr, addbmm, baddbmm: beta * input + alpha * product, one node
# ======================================================================================================

def _addprod_fwd(xp, c, a, b, eq, beta, alpha):
    # beta == 0 ignores input, as PyTorch; float16 is rounded as PyTorch's kernels round it (see xp.addprod)
    return xp.addprod(c, a, b, eq, beta, alpha)


def _addprod_vjp_c(xp, g, out, c, a, b, eq, beta, alpha):
    return g if beta == 1 else g * beta   # as add's rule: g itself (the engine copies before writing into one)


def _addprod_vjp_ab(k):
    rule = _einsum_vjp(k)

    def vjp(xp, g, out, c, a, b, eq, beta, alpha):
        r = rule(xp, g, out, a, b, eq=eq, sizes=None)
        return r * alpha if alpha != 1 else r
    return vjp


def _addprod_jvp_c(xp, t, out, c, a, b, eq, beta, alpha):
    return t * beta


def _addprod_jvp_a(xp, t, out, c, a, b, eq, beta, alpha):
    return xp.einsum(eq, t, b) * alpha


def _addprod_jvp_b(xp, t, out, c, a, b, eq, beta, alpha):
    return xp.einsum(eq, a, t) * alpha


graph("matmul_forward", lambda a, b: matmul(a, b))
graph("addprod", lambda c, a, b, eq, beta, alpha: apply(addprod_p, (c, a, b), {"eq": eq, "beta": beta, "alpha": alpha}))

addprod_p = defprim("addprod", "AddmmBackward0", _addprod_fwd,
                    vjp=(_addprod_vjp_c, _addprod_vjp_ab(0), _addprod_vjp_ab(1)),
                    jvp=(_addprod_jvp_c, _addprod_jvp_a, _addprod_jvp_b), saves=(1, 2),
                    saved_names=("self", "mat1", "mat2"))

_ADD_OPS = {   # op: (equation, node, (name of arg 1, arg 2), their ranks)
    "addmm": ("ij,jk->ik", "AddmmBackward0", ("mat1", "mat2"), (2, 2)),
    "addmv": ("ij,j->i", "AddmvBackward0", ("mat", "vec"), (2, 1)),
    "addr": ("i,j->ij", "AddrBackward0", ("vec1", "vec2"), (1, 1)),
    "addbmm": ("bij,bjk->ik", "AddbmmBackward0", ("batch1", "batch2"), (3, 3)),
    "baddbmm": ("bij,bjk->bik", "BaddbmmBackward0", ("batch1", "batch2"), (3, 3)),
}


def _check_scalar(v, op, arg):
    if isinstance(v, Tensor) and v._data.ndim == 0:
        v = v.item()
    try:
        v = scalar_or_tensor(v, op, arg)   # NumPy's scalars as Python's
    except TypeError:
        pass
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{op}(): argument '{arg}' must be Number, not {type(v).__name__}")
    return v


def _addprod_dtypes(op, input, a, b):
    """Each op's own dtype-mismatch message (PyTorch's kernels word them differently)."""
    di, da, db = input._data.dtype, a._data.dtype, b._data.dtype
    if di == da == db:
        return
    if op in ("addmm", "addbmm"):
        if di != db:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {dtype_word(di)} and "
                               f"{dtype_word(db)}")
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {dtype_word(da)} and {dtype_word(db)}")
    if op == "addmv":
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {dtype_word(di)}, "
                           f"{dtype_word(da)}, and {dtype_word(db)}")
    raise RuntimeError(f"Input dtypes must be the same, got: input {c_type_name(di)}, batch1: {c_type_name(da)}, "
                       f"batch2: {c_type_name(db)}")


def _addprod_args(op, input, a, b, beta, alpha):
    eq, node, (n1, n2), (r1, r2) = _ADD_OPS[op]
    check_tensor(input, op)
    check_tensor(a, op, n1, 2)
    check_tensor(b, op, n2, 3)
    beta = _check_scalar(beta, op, "beta")
    alpha = _check_scalar(alpha, op, "alpha")
    if op in ("addmm", "baddbmm"):   # these check dtypes before shapes
        _addprod_dtypes(op, input, a, b)
    if a._data.ndim != r1 or b._data.ndim != r2:
        bad, r, name = (a, r1, n1) if a._data.ndim != r1 else (b, r2, n2)
        if op == "addr":
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {bad._data.ndim}-D")
        if op == "baddbmm" and b._data.ndim < 3:
            nd = b._data.ndim
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got 2)")
        if op in ("addbmm", "baddbmm"):
            raise RuntimeError(f"{name} must be a 3D tensor")
        if op == "addmv":
            raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, {a._data.ndim}, "
                               f"{b._data.ndim}")
        raise RuntimeError(f"{name} must be a matrix, got {bad._data.ndim}-D tensor")
    sa, sb = a._data.shape, b._data.shape
    if op == "addmm" and sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")
    if op == "addmv" and sa[1] != sb[0]:
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0] if input._data.ndim else 1}), mat "
                           f"({sa[0]}x{sa[1]}), vec ({sb[0]})")
    if op == "addbmm" and sb[0] != sa[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {sa[0]} and {sb[0]}")
    if op == "addbmm" and sb[1] != sa[2]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({sa[1]}x{sa[2]} and {sb[1]}x{sb[2]})")
    if op in ("addbmm", "baddbmm") and (sb[0] != sa[0] or sb[1] != sa[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] but "
                           f"got: [{sb[0]}, {sb[1]}].")
    prod_shape = _prod_shape(eq, a, b)
    if _broadcast(input._data.shape, prod_shape) != prod_shape:
        raise RuntimeError(f"The expanded size of the tensor ({prod_shape[-1]}) must match the existing size "
                           f"({input._data.shape[-1] if input._data.ndim else 1}) at non-singleton dimension "
                           f"{len(prod_shape) - 1}.  Target sizes: {list(prod_shape)}.  Tensor sizes: "
                           f"{list(input._data.shape)}")
    if op in ("addmv", "addbmm"):   # these check dtypes after shapes
        _addprod_dtypes(op, input, a, b)
    kind = input._data.dtype.kind
    if kind == "b":
        raise NotImplementedError(f"\"{op}_impl_cpu_\" not implemented for 'Bool'")
    if kind in "iu":
        if op == "addr":
            for v, n in ((beta, "beta"), (alpha, "alpha")):
                if isinstance(v, float):
                    raise RuntimeError(f"For integral input tensors, argument {n} must not be a floating point "
                                       f"number.")
        else:   # PyTorch's integral kernels truncate a float beta/alpha
            inner = sa[0] * sa[2] if op == "addbmm" else sa[-1]
            if op != "addmv" and inner == 0 and 0 not in prod_shape and isinstance(beta, float) and beta != 0:
                # an empty contraction: PyTorch's kernel scales the input in place by the float beta
                raise RuntimeError(f"result type Float can't be cast to the desired output type "
                                   f"{dtype_word(input._data.dtype)}")
            beta, alpha = int(beta), int(alpha)
    return eq, node, beta, alpha


def _addprod(op):
    def fn(input: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
        if out is not None:
            raise NotImplementedError(f"ember: {op}(out=...) is not supported")
        if op == "addr" and all(isinstance(t, Tensor) for t in (input, a, b)) and \
                not input._data.dtype == a._data.dtype == b._data.dtype:
            # addr is an elementwise kernel: it promotes its operands as PyTorch's addition does
            from .._dtype import result_type
            dt = result_type(input, a, b)
            input, a, b = input.to(dt), a.to(dt), b.to(dt)
        eq, node, beta, alpha = _addprod_args(op, input, a, b, beta, alpha)
        return apply(addprod_p, (input, a, b), {"eq": eq, "beta": beta, "alpha": alpha}, _node(node))

    def inplace(self: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1) -> Tensor:
        eq, node, beta, alpha = _addprod_args(op, self, a, b, beta, alpha)
        if self._data.shape != _broadcast(self._data.shape, _prod_shape(eq, a, b)):
            raise RuntimeError(f"The expanded size of the tensor does not match the size of {op}_'s self "
                               f"{list(self._data.shape)}")
        return apply_inplace(addprod_p, self, (a, b), {"eq": eq, "beta": beta, "alpha": alpha}, _node(node))

    n1, n2 = _ADD_OPS[op][2]
    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"``beta * input + alpha * product({n1}, {n2})``, recorded as one node (PyTorch's {_ADD_OPS[op][1]})."
    inplace.__name__ = inplace.__qualname__ = op + "_"
    register(fn, method=True)
    register(inplace, method=True, module=op == "addmv")
    return fn


def _prod_shape(eq, a, b):
    ins, out = eq.split("->")
    dim = dict(zip(ins.split(",")[0], a._data.shape))
    dim.update(zip(ins.split(",")[1], b._data.shape))
    return tuple(dim[c] for c in out)


addmm = _addprod("addmm")
addmv = _addprod("addmv")
addr = _addprod("addr")
addbmm = _addprod("addbmm")
baddbmm = _addprod("baddbmm")


# ======================================================================================================
# cross
# ======================================================================================================

cross_p = defprim("cross", "LinalgCrossBackward0", lambda xp, a, b, dim: xp.cross(a, b, dim),
                  vjp=(lambda xp, g, out, a, b, dim: xp.cross(b, g, dim),
                       lambda xp, g, out, a, b, dim: xp.cross(g, a, dim)),
                  jvp="multilinear", saves=(0, 1))

graph("cross", lambda a, b, dim: apply(cross_p, (a, b), {"dim": dim}))


def _cross(input, other, dim, op):
    from .._tensor import wrap_dim
    check_tensor(input, op)
    check_tensor(other, op, "other", 2)
    if input._data.ndim != other._data.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"{op}: expected input and other to have the same dtype, but got "
                           f"{dtype_word(input._data.dtype)} and {dtype_word(other._data.dtype)}")
    if not _broadcastable(input._data.shape, other._data.shape):
        raise RuntimeError("The size of tensor a must match the size of tensor b")
    shape = _broadcast(input._data.shape, other._data.shape)
    if dim is None:   # the legacy torch.cross default: the first dim of size 3
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, len(shape), op)
    if input._data.shape[d] != 3 or other._data.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {input._data.shape[d]} and "
                           f"{other._data.shape[d]}")
    if input._data.dtype.kind == "b":
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    return apply(cross_p, (input, other), {"dim": d})


@register(method=True)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3, deprecated)."""
    return _cross(input, other, dim, "linalg.cross")


@register(module=False, submodule="linalg", name="cross")
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim``, with broadcasting."""
    return _cross(input, other, dim, "linalg.cross")


# ======================================================================================================
# helpers of the decompositions: triangles, identity
# ======================================================================================================

tri_mask_p = defprim("tri_mask", "TrilBackward0", lambda xp, x, upper, diag: xp.tri_mask(x, upper, diag),
                     vjp=lambda xp, g, out, x, upper, diag: xp.tri_mask(g, upper, diag), jvp="linear")
graph("tri_mask", lambda x, upper, diag=1.0: apply(tri_mask_p, (x,), {"upper": upper, "diag": diag}))
graph_raw("eye_like", "near_singular", "lstsq_rank", "matrix_rank_of")
# under create_graph the operands are tensors: the gradient is computed in the usual layout
graph("grad_in_own_layout", lambda x, g, ndim: False)


def _eye(xp, x):
    return xp.eye_like(x)


def _diag_embed(xp, v):
    # (..., n) -> (..., n, n) with v on the diagonal
    return xp.unsqueeze(v, -2) * _eye(xp, v)


def _diagonal(xp, x):
    return xp.sum(x * _eye(xp, x), -1)


# ----- argument checks ----------------------------------------------------------------------------------

def _check_float(A, op):
    k = A._data.dtype
    if k.kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {dtype_word(k)}")
    if dtype_word(k) == "Half":
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got Half")


def _check_matrix(A, op, square=True, arg="A"):
    check_tensor(A, op.split(".")[-1], arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A._data.shape[-1] != A._data.shape[-2]:
        m, n = A._data.shape[-2:]
        raise RuntimeError(f"{op}: {arg} must be batches of square matrices, but they are {m} by {n} matrices")
    _check_float(A, op)


def _check_same_dtype(A, B, op, a="A", b="B"):
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{op}: Expected {b} to have the same dtype as {a}, but got {b}.dtype = "
                           f"{dtype_word(B._data.dtype)} and {a}.dtype = {dtype_word(A._data.dtype)}")


_no_out = no_out


# ======================================================================================================
# det, slogdet, logdet, inv
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
det_p = defprim("det", "LinalgDetBackward0", lambda xp, a: xp.linalg_det(a),
                vjp=lambda xp, g, out, a: xp.det_backward(g, out, a), jvp=_det_jvp, saves=(0,), saves_out=True)


def _eye_times(xp, v, a):
    # v[..., None, None] * I
    return xp.unsqueeze(xp.unsqueeze(v, -1), -1) * _eye(xp, a)


@graph("det_backward")
def _det_backward_graph(g, det, a):
    """PyTorch's linalg_det_backward with grad mode on (differentiable): solve(A^T, g det I) where
    |det| >= 100 eps, else the adjugate U diag(prod_{j != i} s_j) Vh det(U) det(Vh) g from the SVD."""
    from .reduction import _prod_others
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


slogdet_sign_p = defprim("slogdet_sign", "LinalgSlogdetBackward0", lambda xp, a: xp.linalg_slogdet(a)[0],
                         vjp=lambda xp, g, out, a: None, jvp=lambda xp, t, out, a: None)
# VJP: g A^-T, from the LU in plain backward (no singularity check: inf/nan, as PyTorch), through a solve
# under create_graph (a singular A raises, as PyTorch's linalg.solve).
slogdet_abs_p = defprim("slogdet", "LinalgSlogdetBackward0", lambda xp, a: xp.linalg_slogdet(a)[1],
                        vjp=lambda xp, g, out, a: xp.slogdet_backward(g, a),
                        jvp=lambda xp, t, out, a: xp.sum(_inv_T(xp, a) * t, (-2, -1)), saves=(0,))
graph("slogdet_backward", lambda g, a: linalg_solve(_mT(graph_ns, a), _eye_times(graph_ns, g, a)))

inv_p = defprim("inv", "LinalgInvExBackward0", lambda xp, a: xp.linalg_inv(a),
                vjp=lambda xp, g, out, a: -xp.matmul(xp.matmul(_mT(xp, out), g), _mT(xp, out)),
                jvp=lambda xp, t, out, a: -xp.matmul(xp.matmul(out, t), out), saves_out=True)


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


SlogdetResult = _return_type("linalg_slogdet", ("sign", "logabsdet"))
SlogdetLegacy = _return_type("slogdet", ("sign", "logabsdet"))


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
    """log(det(A)): nan for a negative determinant, -inf for a singular matrix."""
    from .elementwise import where
    _check_matrix(input, "logdet")
    sign, logabs = linalg_slogdet(input)
    return where(sign == -1, float("nan"), logabs)


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
# solve, solve_triangular, triangular_solve, cholesky, cholesky_solve
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


solve_p = defprim("solve", "LinalgSolveExBackward0", lambda xp, a, b, left: xp.linalg_solve(a, b, left=left),
                  vjp=(_solve_vjp_a, _solve_vjp_b),
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
    _check_matrix(A, "linalg.solve")
    check_tensor(B, "solve", "B", 2)
    left = check_bool(left, "linalg.solve", "left")
    _check_same_dtype(A, B, "linalg.solve")
    _check_solve_shapes(A, B, "linalg.solve", left)
    return apply(solve_p, (A, B), {"left": left})


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


solve_tri_p = defprim("solve_triangular", "LinalgSolveTriangularBackward0",
                      lambda xp, a, b, upper, left, unitriangular: xp.solve_triangular(a, b, upper, left, unitriangular),
                      vjp=(_soltri_vjp_a, _soltri_vjp_b),
                      jvp=(_soltri_jvp_a, lambda xp, t, out, a, b, upper, left, unitriangular:
                           xp.solve_triangular(a, t, upper=upper, left=left, unitriangular=unitriangular)),
                      saves=(0,), saves_out=True)


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


TriangularSolveResult = _return_type("triangular_solve", ("solution", "cloned_coefficient"))


@register(method=True)
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Legacy form of ``linalg.solve_triangular``: (solution of A X = input, a copy of A)."""
    from .shape import clone_p
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


cholesky_p = defprim("cholesky", "LinalgCholeskyExBackward0", lambda xp, a, upper: xp.linalg_cholesky(a, upper),
                     vjp=_chol_vjp, jvp=_chol_jvp, saves_out=True)


@register(submodule="linalg", module=False, name="cholesky", graph="linalg_cholesky")
def linalg_cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """Cholesky factor L (A = L L^T) of a symmetric positive-definite matrix, reading A's lower triangle;
    ``upper=True`` returns L^T."""
    _no_out(out, "linalg.cholesky")
    _check_matrix(A, "linalg.cholesky")
    upper = check_bool(upper, "linalg.cholesky", "upper")
    return apply(cholesky_p, (A,), {"upper": upper})


@register(method=True)
def cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """Deprecated form of ``linalg.cholesky`` (with PyTorch's warning)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.", UserWarning, stacklevel=2)
    _no_out(out, "cholesky")
    _check_matrix(input, "linalg.cholesky")
    upper = check_bool(upper, "cholesky", "upper")
    return apply(cholesky_p, (input,), {"upper": upper}, _node("CholeskyBackward0"))


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


cholesky_solve_p = defprim("cholesky_solve", "CholeskySolveBackward0",
                           lambda xp, b, l, upper: xp.cholesky_solve(b, l, upper),
                           vjp=(_cholsolve_vjp_b, _cholsolve_vjp_l),
                           jvp=(lambda xp, t, out, b, l, upper: xp.cholesky_solve(t, l, upper), _cholsolve_jvp_l),
                           saves=(1,), saves_out=True)


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
    return apply(cholesky_solve_p, (input, input2), {"upper": upper})


# ======================================================================================================
# qr
# ======================================================================================================

def _copyltu(xp, m):
    # the symmetric matrix with m's lower triangle (diagonal included)
    low = xp.tri_mask(m, False, 1.0)
    return low + _mT(xp, xp.tri_mask(m, False, 0.0))


def _qr_vjp_tall(xp, gq, gr, q, r):
    """m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q."""
    m = 0
    if gr is not None:
        m = xp.matmul(r, _mT(xp, gr))
    if gq is not None:
        m = m - xp.matmul(_mT(xp, gq), q)
    b = xp.matmul(q, _copyltu(xp, m))
    if gq is not None:
        b = b + gq
    return xp.solve_triangular(_mT(xp, r), b, upper=False, left=False)


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
        extra = xp.matmul(y, _mT(xp, gv))
        gq = extra if gq is None else gq + extra
    else:
        gu = None
    gx = _qr_vjp_tall(xp, gq, gu, q, u)
    if gy is None:
        gy = xp.zeros_like(xp.getitem(a, (Ellipsis, slice(None), slice(m, None))))
    return xp.cat([gx, gy], -1)


def _qr_jvp_square(xp, da, q, r):
    """m >= n: (dQ, dR) with C = Q^T dA R^-1, Omega = tril(C,-1) - tril(C,-1)^T, dR = (C - Omega) R."""
    dar = xp.solve_triangular(r, da, upper=True, left=False)            # dA R^-1
    c = xp.matmul(_mT(xp, q), dar)
    low = xp.tri_mask(c, False, 0.0)
    omega = low - _mT(xp, low)
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
    dv = xp.matmul(_mT(xp, q), dy - xp.matmul(dq, v))
    return xp.cat([du, dv], -1)


qr_q_p = defprim("qr_Q", "LinalgQrBackward0", lambda xp, a, mode: xp.linalg_qr(a, mode)[0],
                 vjp=lambda xp, g, out, a, mode: _qr_vjp(xp, g, None, a, mode),
                 jvp=lambda xp, t, out, a, mode: _qr_jvp(xp, t, a, mode, 0), saves=(0,))
qr_r_p = defprim("qr_R", "LinalgQrBackward0", lambda xp, a, mode: xp.linalg_qr(a, mode)[1],
                 vjp=lambda xp, g, out, a, mode: _qr_vjp(xp, None, g, a, mode),
                 jvp=lambda xp, t, out, a, mode: _qr_jvp(xp, t, a, mode, 1), saves=(0,))

QRResult = _return_type("linalg_qr", ("Q", "R"))
QRLegacy = _return_type("qr", ("Q", "R"))


@register(submodule="linalg", module=False, name="qr", graph="linalg_qr")
def linalg_qr(A: Tensor, mode: str = "reduced", *, out=None):
    """QR decomposition (Householder, LAPACK's signs); ``mode`` 'reduced', 'complete' or 'r'."""
    _no_out(out, "linalg.qr")
    _check_matrix(A, "linalg.qr", square=False)
    if not isinstance(mode, str):
        raise TypeError(f"linalg_qr(): argument 'mode' (position 2) must be str, not {type(mode).__name__}")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
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


def _eigh_vjp(xp, gl, gv, a, uplo):
    lam, v = xp.linalg_eigh(a, uplo)
    if gv is None:
        inner = _diag_embed(xp, gl)
    else:
        vhgv = xp.matmul(_mT(xp, v), gv)
        inner = (vhgv - _mT(xp, vhgv)) * 0.5 / _eigh_gap(xp, lam)
        if gl is not None:
            inner = inner + _diag_embed(xp, gl)
    return xp.matmul(xp.matmul(v, inner), _mT(xp, v))


def _eigh_jvp(xp, t, a, uplo, which):
    lam, v = xp.linalg_eigh(a, uplo)
    p = xp.matmul(xp.matmul(_mT(xp, v), t), v)
    if which == 0:
        return _diagonal(xp, p)
    off = p / _eigh_gap(xp, lam)
    off = off - off * _eye(xp, off)
    return xp.matmul(v, off)


eigh_vals_p = defprim("eigh_L", "LinalgEighBackward0", lambda xp, a, uplo: xp.linalg_eigh(a, uplo)[0],
                      vjp=lambda xp, g, out, a, uplo: _eigh_vjp(xp, g, None, a, uplo),
                      jvp=lambda xp, t, out, a, uplo: _eigh_jvp(xp, t, a, uplo, 0), saves=(0,))
eigh_vecs_p = defprim("eigh_V", "LinalgEighBackward0", lambda xp, a, uplo: xp.linalg_eigh(a, uplo)[1],
                      vjp=lambda xp, g, out, a, uplo: _eigh_vjp(xp, None, g, a, uplo),
                      jvp=lambda xp, t, out, a, uplo: _eigh_jvp(xp, t, a, uplo, 1), saves=(0,))

EighResult = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))


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
# svd, svdvals, pinv
# ======================================================================================================

def _svd_vjp(xp, gu, gs, gvh, a, full):
    """PyTorch's svd_backward (real case): the gradient through U, S and Vh of the reduced SVD."""
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = xp.linalg_svd(a, False)
    if full:
        if gu is not None:
            gu = xp.getitem(gu, (Ellipsis, slice(None), slice(0, k)))
        if gvh is not None:
            gvh = xp.getitem(gvh, (Ellipsis, slice(0, k), slice(None)))
    if gu is None and gvh is None:
        return xp.matmul(u * xp.unsqueeze(gs, -2), vh)
    v = _mT(xp, vh)
    gv = None if gvh is None else _mT(xp, gvh)
    s2 = s * s
    e = xp.unsqueeze(s2, -2) - xp.unsqueeze(s2, -1)
    e = e + _eye(xp, e)
    ret = 0
    if gu is not None:
        uhgu = xp.matmul(_mT(xp, u), gu)
        ret = (uhgu - _mT(xp, uhgu)) * xp.unsqueeze(s, -2)
    if gv is not None:
        vhgv = xp.matmul(_mT(xp, v), gv)
        ret = ret + xp.unsqueeze(s, -1) * (vhgv - _mT(xp, vhgv))
    ret = ret / e
    if gs is not None:
        ret = ret + _diag_embed(xp, gs)
    if m > n and gu is not None:
        ga = xp.matmul(u, ret)
        gusinv = gu / xp.unsqueeze(s, -2)
        ga = ga + gusinv - xp.matmul(u, xp.matmul(_mT(xp, u), gusinv))
        return xp.matmul(ga, vh)
    if m < n and gv is not None:
        ga = xp.matmul(ret, vh)
        gvsinv = gv / xp.unsqueeze(s, -2)
        ga = ga + _mT(xp, gvsinv) - xp.matmul(xp.matmul(_mT(xp, gvsinv), v), vh)
        return xp.matmul(u, ga)
    return xp.matmul(xp.matmul(u, ret), vh)


def _svd_jvp(xp, t, a, full, which):
    m, n = a.shape[-2:]
    if full and m != n and which != 1:
        raise NotImplementedError("linalg.svd: forward-mode AD of full_matrices=True is not supported for "
                                  "non-square matrices; use full_matrices=False")
    u, s, vh = xp.linalg_svd(a, False)
    v = _mT(xp, vh)
    dp = xp.matmul(xp.matmul(_mT(xp, u), t), v)
    if which == 1:
        return _diagonal(xp, dp)
    s2 = s * s
    e = xp.unsqueeze(s2, -2) - xp.unsqueeze(s2, -1)
    f_inv = e + _eye(xp, e)
    sr = xp.unsqueeze(s, -2)   # S on the right: X * sr == X @ diag(S)
    sl = xp.unsqueeze(s, -1)
    if which == 0:
        x = (dp * sr + sl * _mT(xp, dp)) / f_inv
        x = x - x * _eye(xp, x)
        du = xp.matmul(u, x)
        if m > n:
            proj = xp.matmul(t, v) - xp.matmul(u, xp.matmul(_mT(xp, u), xp.matmul(t, v)))
            du = du + proj / sr
        return du
    x = (sl * dp + _mT(xp, dp) * sr) / f_inv
    x = x - x * _eye(xp, x)
    dv = xp.matmul(v, x)
    if n > m:
        tu = xp.matmul(_mT(xp, t), u)
        dv = dv + (tu - xp.matmul(v, xp.matmul(vh, tu))) / sr
    return _mT(xp, dv)


svd_u_p = defprim("svd_U", "LinalgSvdBackward0", lambda xp, a, full: xp.linalg_svd(a, full)[0],
                  vjp=lambda xp, g, out, a, full: _svd_vjp(xp, g, None, None, a, full),
                  jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, full, 0), saves=(0,))
svd_s_p = defprim("svd_S", "LinalgSvdBackward0", lambda xp, a, full: xp.linalg_svdvals(a),
                  vjp=lambda xp, g, out, a, full: _svd_vjp(xp, None, g, None, a, False),
                  jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, False, 1), saves=(0,))
svd_vh_p = defprim("svd_Vh", "LinalgSvdBackward0", lambda xp, a, full: xp.linalg_svd(a, full)[2],
                   vjp=lambda xp, g, out, a, full: _svd_vjp(xp, None, None, g, a, full),
                   jvp=lambda xp, t, out, a, full: _svd_jvp(xp, t, a, full, 2), saves=(0,))

SVDResult = _return_type("linalg_svd", ("U", "S", "Vh"))
SVDLegacy = _return_type("svd", ("U", "S", "V"))


@register(submodule="linalg", module=False, name="svd", graph="linalg_svd")
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """Singular value decomposition A = U diag(S) Vh (LAPACK's signs), S descending."""
    _no_out(out, "linalg.svd")
    _check_matrix(A, "linalg.svd", square=False)
    full = check_bool(full_matrices, "linalg_svd", "full_matrices")
    p = {"full": full}
    return SVDResult(apply(svd_u_p, (A,), p), apply(svd_s_p, (A,), p), apply(svd_vh_p, (A,), p))


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
    return SVDLegacy(u, s, vh.mT)


def _pinv_vjp(xp, g, p, a):
    """The VJP of P = pinv(A): -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A), without the identity."""
    pt = _mT(xp, p)
    gt = _mT(xp, g)
    ga = -xp.matmul(xp.matmul(pt, g), pt)
    k = xp.matmul(gt, xp.matmul(p, pt))                                  # G^T P P^T
    ga = ga + k - xp.matmul(xp.matmul(a, p), k)
    h = xp.matmul(xp.matmul(pt, p), gt)                                  # P^T P G^T
    return ga + h - xp.matmul(xp.matmul(h, p), a)


def _pinv_jvp(xp, t, p, a):
    tt = _mT(xp, t)
    pt = _mT(xp, p)
    dp = -xp.matmul(xp.matmul(p, t), p)
    x = xp.matmul(xp.matmul(p, pt), tt)                                  # P P^T dA^T
    dp = dp + x - xp.matmul(xp.matmul(x, a), p)
    y = xp.matmul(tt, xp.matmul(pt, p))                                  # dA^T P^T P
    return dp + y - xp.matmul(xp.matmul(p, a), y)


pinv_p = defprim("pinv", "LinalgPinvBackward0",
                 lambda xp, a, atol, rtol, hermitian: xp.linalg_pinv(a, atol, rtol, hermitian),
                 vjp=lambda xp, g, out, a, atol, rtol, hermitian: _pinv_vjp(xp, g, out, a),
                 jvp=lambda xp, t, out, a, atol, rtol, hermitian: _pinv_jvp(xp, t, out, a),
                 saves=(0,), saves_out=True)


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
# matrix_exp, matrix_power, lstsq, matrix_rank
# ======================================================================================================

def _block(xp, a, b):
    # [[a, b], [0, a]]
    top = xp.cat([a, b], -1)
    bottom = xp.cat([xp.zeros_like(a), a], -1)
    return xp.cat([top, bottom], -2)


def _upper_right(xp, x, n):
    return xp.getitem(x, (Ellipsis, slice(0, n), slice(n, 2 * n)))


matrix_exp_p = defprim(
    "matrix_exp", "LinalgMatrixExpBackward0", lambda xp, a: xp.matrix_exp(a),
    vjp=lambda xp, g, out, a: _upper_right(xp, xp.matrix_exp(_block(xp, _mT(xp, a), g)), a.shape[-1]),
    jvp=lambda xp, t, out, a: _upper_right(xp, xp.matrix_exp(_block(xp, a, t)), a.shape[-1]), saves=(0,))


@register(method=True, graph=True, submodule="linalg")
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential (Padé approximant of degree 13 with scaling and squaring)."""
    _check_matrix(A, "linalg.matrix_exp")
    return apply(matrix_exp_p, (A,))


eye_of_p = defprim("eye_of", "CopyBackwards", lambda xp, a: xp.zeros_like(a) + xp.eye_like(a),
                   vjp=lambda xp, g, out, a: None, jvp=lambda xp, t, out, a: None)


@register(submodule="linalg", module=False, name="matrix_power")
def linalg_matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """A to the integer power n (n < 0: of the inverse), by repeated squaring as PyTorch."""
    _no_out(out, "linalg.matrix_power")
    check_tensor(A, "matrix_power", "A")
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    n = int(n)
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        m, k = A._data.shape[-2:]
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {m} by {k} "
                           f"matrices")
    if n == 0:
        return apply(eye_of_p, (A,))
    a = A
    if n < 0:
        _check_float(A, "linalg.inv")
        a, n = linalg_inv(A), -n
        if n == 1:
            return a
    if n == 1:
        return a.clone()
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = a if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


@register(method=True)
def matrix_power(input: Tensor, n: int) -> Tensor:
    """Alias of ``linalg.matrix_power``."""
    return linalg_matrix_power(input, n)


def _lstsq_vjp_a(xp, g, out, a, b, vec):
    p = xp.linalg_pinv(a)
    bm = xp.unsqueeze(b, -1) if vec else b
    gm = xp.unsqueeze(g, -1) if vec else g
    return _pinv_vjp(xp, xp.matmul(gm, _mT(xp, bm)), p, a)


def _lstsq_vjp_b(xp, g, out, a, b, vec):
    gm = xp.unsqueeze(g, -1) if vec else g
    r = xp.matmul(_mT(xp, xp.linalg_pinv(a)), gm)
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


lstsq_p = defprim("lstsq", "LinalgLstsqBackward0", _lstsq_fwd, vjp=(_lstsq_vjp_a, _lstsq_vjp_b),
                  jvp=(_lstsq_jvp_a, _lstsq_jvp_b), saves=(0, 1))

LstsqResult = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
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
    dt = A._data.dtype
    xp = NAMESPACES[type(A._data)]
    batch = _broadcast(A._data.shape[:-2], bb)
    s, rank = xp.lstsq_rank(A._data, rcond)
    empty = make(xp.backend.zeros((0,), dt))
    if driver == "gelsy":
        return LstsqResult(x, empty, make(xp.backend.copy(xp.expand(rank, batch))), empty)
    residuals = empty
    if m > n and bool(xp.all(rank == n)):
        from .reduction import sum as _sum
        diff = matmul(A, x.unsqueeze(-1) if vec else x) - (B.unsqueeze(-1) if vec else B)
        residuals = _sum(diff * diff, -2)
        if vec:
            residuals = residuals.squeeze(-1)
    if driver == "gels":
        return LstsqResult(x, residuals, make(xp.backend.zeros((0,), rank.dtype)), empty)
    return LstsqResult(x, residuals, make(xp.backend.copy(xp.expand(rank, batch))), make(xp.backend.copy(s, dt)))


_NO_TOL = object()     # matrix_rank's tol left out (an explicit tol=None is PyTorch's TypeError)
_RANK_FORMS = ("linalg_matrix_rank() received an invalid combination of arguments - got ({}), but expected one of:\n"
               " * (Tensor input, *, Tensor atol = None, Tensor rtol = None, bool hermitian = False, "
               "Tensor out = None)\n"
               " * (Tensor input, *, float atol = None, float rtol = None, bool hermitian = False, "
               "Tensor out = None)\n"
               " * (Tensor input, Tensor tol, bool hermitian = False, *, Tensor out = None)\n"
               " * (Tensor input, float tol, bool hermitian = False, *, Tensor out = None)\n")


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
    _check_float(A, "linalg.cond")
    if p is None or p in (2, -2):
        s = linalg_svdvals(A)
        first, last = s[..., :1], s[..., -1:]
        return (first / last if p != -2 else last / first).squeeze(-1)
    if A._data.shape[-1] != A._data.shape[-2]:
        m, n = A._data.shape[-2:]
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are {m} by {n} "
                           f"matrices")
    return linalg_matrix_norm(A, p) * linalg_matrix_norm(linalg_inv(A), p)


# ======================================================================================================
# LU: lu_factor, lu_factor_ex, lu, lu_unpack, lu_solve (and the legacy lu, lu_solve)
# ======================================================================================================
# The factorization is the kernel's (LAPACK's getrf pivots, devices.cpu.linalg.linalg_lu_factor_ex). Outputs
# that carry a gradient (the packed LU; L and U) are one primitive each whose rules are PyTorch's
# (FunctionsManual.cpp: lu_factor_ex_backward/_jvp, linalg_lu_backward/_jvp, linalg_lu_solve_LU/_jvp,
# lu_unpack_backward); pivots, info and P are integer or constant outputs without history.

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


lu_factor_p = defprim("lu_factor", "LinalgLuFactorExBackward0",
                      lambda xp, a, pivot: xp.linalg_lu_factor_ex(a, pivot)[0],
                      vjp=_lu_factor_vjp, jvp=_lu_factor_jvp, saves=(0,))


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


lu_L_p = defprim("lu_L", "LinalgLuBackward0", lambda xp, a, pivot: xp.linalg_lu(a, pivot)[1],
                 vjp=_lu_L_vjp, jvp=_lu_out_jvp(0), saves=(0,))
lu_U_p = defprim("lu_U", "LinalgLuBackward0", lambda xp, a, pivot: xp.linalg_lu(a, pivot)[2],
                 vjp=_lu_U_vjp, jvp=_lu_out_jvp(1), saves=(0,))


def _unpack_L_vjp(xp, g, out, lu):
    # PyTorch's lu_unpack_backward: L reads LU's strict lower triangle (of its first k columns)
    return _pad(xp, xp.tril(g, -1), -1, lu.shape[-1])


def _unpack_U_vjp(xp, g, out, lu):
    return _pad(xp, xp.triu(g), -2, lu.shape[-2])


unpack_L_p = defprim("lu_unpack_L", "LuUnpackBackward0", lambda xp, lu: xp.lu_unpack(lu, None, True, False)[1],
                     vjp=_unpack_L_vjp,
                     jvp=lambda xp, t, out, lu: xp.tril(_narrow(xp, t, -1, min(lu.shape[-2:])), -1))
unpack_U_p = defprim("lu_unpack_U", "LuUnpackBackward0", lambda xp, lu: xp.lu_unpack(lu, None, True, False)[2],
                     vjp=_unpack_U_vjp, jvp=lambda xp, t, out, lu: xp.triu(_narrow(xp, t, -2, min(lu.shape[-2:]))))


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
    "lu_solve", "LinalgLuSolveBackward0",
    lambda xp, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, b, left=left, adjoint=adjoint),
    vjp=(_lu_solve_vjp_lu, lambda xp, g, out, lu, piv, b, left, adjoint: None,
         lambda xp, g, out, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, g, left=left, adjoint=not adjoint)),
    jvp=(_lu_solve_jvp_lu, None,
         lambda xp, t, out, lu, piv, b, left, adjoint: xp.linalg_lu_solve(lu, piv, t, left=left, adjoint=adjoint)),
    saves=(0, 1), saves_out=True)

LUFactorResult = _return_type("linalg_lu_factor", ("LU", "pivots"))
LUFactorExResult = _return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
LUResult = _return_type("linalg_lu", ("P", "L", "U"))
LUUnpackResult = _return_type("lu_unpack", ("P", "L", "U"))
LUWithInfo = _return_type("_lu_with_info", ("LU", "pivots", "info"))


def _check_lu_input(A, op, arg="A"):
    check_tensor(A, op.split(".")[-1], arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"torch.{op.split('.')[-1] if op.startswith('linalg.lu_factor') else op}: Expected tensor "
                           f"with 2 or more dimensions. Got size: {list(A._data.shape)} instead")
    k = A._data.dtype
    if k.kind != "f" or dtype_word(k) == "Half":
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{dtype_word(k)}'")


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
    return apply(lu_factor_p, (A,), {"pivot": pivot}), make(piv), info


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
    P = NAMESPACES[type(A._data)].linalg_lu(A._data, pivot)[0]
    p = {"pivot": pivot}
    return LUResult(make(P), apply(lu_L_p, (A,), p), apply(lu_U_p, (A,), p))


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
    _check_float(LU, f"torch.{op}")
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
    return left, adjoint


@register(submodule="linalg", module=False, name="lu_solve", graph="linalg_lu_solve")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,
                    out=None) -> Tensor:
    """X with A X = B for A = P L U given as ``lu_factor``'s (LU, pivots); ``adjoint``: A^T X = B;
    ``left=False``: X A = B. Batch dims broadcast."""
    _no_out(out, "linalg.lu_solve")
    left, adjoint = _check_lu_solve(LU, pivots, B, left, adjoint)
    return apply(lu_solve_p, (LU, pivots, B), {"left": left, "adjoint": adjoint})


@register(method=True, name="lu_solve")
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """Deprecated form of ``linalg.lu_solve(LU_data, LU_pivots, input)`` (with PyTorch's warning)."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                  "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                  "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
                  UserWarning, stacklevel=2)
    return linalg_lu_solve(LU_data, LU_pivots, input, out=out)


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



register(matmul, name="matmul", module=False, submodule="linalg")   # torch.linalg.matmul


# ----- autograd.grad(is_grads_batched=True) ----------------------------------------------------------
# The primitives whose VJP rules broadcast over a leading batch dimension as written (tests/test_batched_grad.py
# checks each against row-by-row backward on every op-database sample): backward runs them once for the whole
# batch. Every other primitive of this family runs row by row, which is always correct.
batch_safe(slogdet_sign_p, slogdet_abs_p, inv_p, solve_tri_p, cholesky_p, cholesky_solve_p, qr_r_p, eigh_vals_p,
           eigh_vecs_p, svd_u_p, svd_s_p, svd_vh_p, pinv_p, eye_of_p, lstsq_p, lu_factor_p, lu_L_p, lu_U_p,
           unpack_L_p, unpack_U_p, lu_solve_p)


# matmul's rules batch as written, except for a dot product of two vectors (a 0-d output).
def _matmul_batched(rule, other):
    def batched(xp, g, out, a, b):
        if a.ndim == 1 and b.ndim == 1:
            return xp.unsqueeze(g, -1) * (b if other == 1 else a)
        return rule(xp, g, out, a, b)
    return batched


batch_rule(matmul_p, (_matmul_batched(_matmul_grad_a, 1), _matmul_batched(_matmul_grad_b, 0)))
