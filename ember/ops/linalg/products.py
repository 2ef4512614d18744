"""Matrix products and matrix functions: matmul, mm, bmm, mv, dot, vdot (and ``@``), einsum, inner, tensordot, kron,
linalg.multi_dot, chain_matmul, outer, the fused addmm / addmv / addr / addbmm / baddbmm, cross, matrix_exp and
matrix_power.

Products are one primitive each (``matmul``, ``einsum``, ``addprod``); the node PyTorch records depends on
the op and on its internal path (``MmBackward0``, ``BmmBackward0``, ``UnsafeViewBackward0``...), so each
public function names the node it creates.
"""
from __future__ import annotations

from ...autograd import _batching

import math
import numbers
import warnings

from ...devices import NAMESPACES
from ... import _dtype as D
from ..._dtype import c_type_name
from ..._tensor import Tensor
from ...autograd._primitive import apply, batch_rule, defprim
from .._registry import graph, method, register
from ..._util import check_tensor, dtype_word, scalar_or_tensor
from ...autograd._views import apply_inplace
from ._common import _broadcast, _broadcastable, _check_float, _check_matrix, _mT, _no_out, _node
from .solvers import linalg_inv


# ======================================================================================================
# matmul, mm, bmm, mv, dot, vdot
# ======================================================================================================

def _product(xp, x, y, bmm):
    """A product of the backward: where the forward was PyTorch's bmm, so are its gradients' products (each the
    same contraction * rows * cols, so small ones take the same plain loop)."""
    return xp.matmul_forward(x, y, bmm=True) if bmm else xp.matmul(x, y)


def _matmul_grad_a(xp, g, out, a, b, bmm=False):
    if b.ndim == 1:
        if a.ndim == 1:
            return g * b
        return xp.unsqueeze(g, -1) * b                          # (..., n, 1) * (m,)
    if a.ndim == 1:
        return xp.squeeze(_product(xp, b, xp.unsqueeze(g, -1), bmm), -1)  # (..., n), summed to (n,) by the engine
    return _product(xp, g, _mT(xp, b), bmm)


def _matmul_grad_b(xp, g, out, a, b, bmm=False):
    if a.ndim == 1:
        if b.ndim == 1:
            return g * a
        return xp.unsqueeze(a, -1) * xp.unsqueeze(g, -2)        # (n, 1) * (..., 1, m)
    if b.ndim == 1:
        return xp.squeeze(_product(xp, _mT(xp, a), xp.unsqueeze(g, -1), bmm), -1)
    return _product(xp, _mT(xp, a), g, bmm)


# float16: PyTorch sums in float32 in its own order and rounds once (see xp.matmul_forward); other dtypes: BLAS,
# except PyTorch's small bmm products (params {"bmm": True}: bmm, and matmul where PyTorch's path is a bmm).
# (**params: "bmm" is no saved attribute of PyTorch's nodes)
matmul_p = defprim("matmul", lambda xp, a, b, **params: xp.matmul_forward(a, b, **params),
                   node="MmBackward0", vjp=(_matmul_grad_a, _matmul_grad_b), jvp="multilinear",
                   saves={0: (1,), 1: (0,)},
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


def _rows(shape):
    return math.prod(shape[:-1])


_BMM = {"bmm": True}
_NO_PARAMS: dict = {}


def _mm_like(a, b, node, params=_NO_PARAMS):
    return apply(matmul_p, (a, b), params, _node(node))


def _matmul_is_bmm(a: Tensor, b: Tensor) -> bool:
    """Whether PyTorch's ``_matmul_impl`` ends in a bmm (batched operands it does not fold into an mm/mv)."""
    na, nb = a._data.ndim, b._data.ndim
    if na <= 2 and nb <= 2:
        return False
    if na == 3 and nb == 3 and a._data.shape[0] != b._data.shape[0]:
        if a._data.shape[0] == 1 and a._requires_grad:
            return not _should_fold(_Squeezed(a), b)
        if b._data.shape[0] == 1 and b._requires_grad:
            return not _should_fold(a, _Squeezed(b))
    return not _should_fold(a, b)


@register(method=True, graph=True)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules for 1-d operands and broadcast batch dimensions."""
    check_tensor(input, "matmul")
    check_tensor(other, "matmul", "other", 2)
    _check_matmul(input, other, "matmul")
    if input._data.dtype.kind == "b":
        kernel = "dot" if input._data.ndim == other._data.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    return _mm_like(input, other, _matmul_node(input, other), _BMM if _matmul_is_bmm(input, other) else _NO_PARAMS)


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
    return _mm_like(input, mat2, "BmmBackward0", _BMM)


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
    if input._data.dtype.kind == "c":   # conj is eager here: a node of its own before the product
        from ..complex import conj
        input = conj(input)
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
            "einsum", lambda xp, *ops, eq, sizes: xp.einsum(eq, *ops, sizes=sizes),
            vjp=tuple(_einsum_vjp(k) for k in range(n)), jvp="multilinear", saves=tuple(range(n)))
        _batching.batching(_einsum_rule, p)
    return p


def _einsum_rule(call, args, bdims, params, size):
    """einsum of batched operands: each batched operand (batch dim first) and the result get a letter of their
    own in the equation, so the batch is one more free index."""
    eq = params["eq"]
    ins, out = eq.split("->")
    z = _free_letter(eq)
    subs = ins.split(",")
    ops = []
    for a, bd, sub in zip(args, bdims, subs):
        ops.append(a if bd is None else _batching._moved(a, bd))
    new = dict(params)
    new["eq"] = ",".join(z + sub if bd is not None else sub for sub, bd in zip(subs, bdims)) + "->" + z + out
    return call(ops, new), 0


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
    from ..._tensor import wrap_dim
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
    from ..shape import reshape_p
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
    if n > 2 and dt == D.bfloat16.np:
        return _multi_dot_chain(tensors, subs, out)
    return _einsum_apply(",".join(subs) + "->" + out, tuple(tensors), "ViewBackward0")


def _multi_dot_chain(tensors, subs, out):
    """bfloat16: PyTorch's multi_dot multiplies pairs in its cheapest order (matrix_chain_order: the first split
    of least cost), each product rounded to bfloat16, where one einsum would round once."""
    n = len(tensors)
    p = [1 if tensors[0]._data.ndim == 1 else tensors[0]._data.shape[0]]
    p += [1 if t._data.ndim == 1 else t._data.shape[-1] for t in tensors]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k

    def multiply(i, j):
        if i == j:
            return tensors[i], subs[i]
        (a, sa), (b, sb) = multiply(i, split[i][j]), multiply(split[i][j] + 1, j)
        outside = set("".join(subs[:i] + subs[j + 1:]) + out)
        keep = "".join(c for c in dict.fromkeys(sa + sb) if c in outside)
        return _einsum_apply(f"{sa},{sb}->{keep}", (a, b), "ViewBackward0" if (i, j) == (0, n - 1) else None), keep
    return multiply(0, n - 1)[0]


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


graph("matmul_forward", lambda a, b, bmm=False: matmul(a, b))
graph("addprod", lambda c, a, b, eq, beta, alpha: apply(addprod_p, (c, a, b), {"eq": eq, "beta": beta, "alpha": alpha}))

addprod_p = defprim("addprod", _addprod_fwd,
                    complex=True, node="AddmmBackward0", vjp=(_addprod_vjp_c, _addprod_vjp_ab(0), _addprod_vjp_ab(1)),
                    jvp=(_addprod_jvp_c, _addprod_jvp_a, _addprod_jvp_b), saves={1: (1, 2), 2: (1, 2)},
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
            from ..._dtype import result_type
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

cross_p = defprim("cross", lambda xp, a, b, dim: xp.cross(a, b, dim),
                  node="LinalgCrossBackward0", vjp=(lambda xp, g, out, a, b, dim: xp.cross(b, g, dim),
                       lambda xp, g, out, a, b, dim: xp.cross(g, a, dim)),
                  jvp="multilinear", saves={0: (1,), 1: (0,)})

graph("cross", lambda a, b, dim: apply(cross_p, (a, b), {"dim": dim}))


def _cross(input, other, dim, op):
    from ..._tensor import wrap_dim
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


# under create_graph the operands are tensors: the gradient is computed in the usual layout (xp.grad_in_own_layout)
graph("grad_in_own_layout", lambda x, g, ndim: False)


# ======================================================================================================
# matrix functions: matrix_exp, matrix_power
# ======================================================================================================

def _block(xp, a, b):
    # [[a, b], [0, a]]
    top = xp.cat([a, b], -1)
    bottom = xp.cat([xp.zeros_like(a), a], -1)
    return xp.cat([top, bottom], -2)


def _upper_right(xp, x, n):
    return xp.getitem(x, (Ellipsis, slice(0, n), slice(n, 2 * n)))


matrix_exp_p = defprim(
    "matrix_exp", lambda xp, a: xp.matrix_exp(a),
    complex=True, node="LinalgMatrixExpBackward0",
    vjp=lambda xp, g, out, a: _upper_right(xp, xp.matrix_exp(_block(xp, _mT(xp, a), g)), a.shape[-1]),
    jvp=lambda xp, t, out, a: _upper_right(xp, xp.matrix_exp(_block(xp, a, t)), a.shape[-1]), saves=(0,))


@register(method=True, graph=True, submodule="linalg")
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential (Padé approximant of degree 13 with scaling and squaring)."""
    _check_matrix(A, "linalg.matrix_exp")
    return apply(matrix_exp_p, (A,))


eye_of_p = defprim("eye_of", lambda xp, a: xp.zeros_like(a) + xp.eye_like(a),
                   complex=True, node="CopyBackwards",
                   # zeros, not None: PyTorch's CopyBackwards gives a zero gradient and tangent
                   vjp=lambda xp, g, out, a: xp.zeros_like(g), jvp=lambda xp, t, out, a: xp.zeros_like(t), batch=True)


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


register(matmul, name="matmul", module=False, submodule="linalg")   # torch.linalg.matmul


# ======================================================================================================
# linalg.vecdot, linalg.vander, linalg.diagonal: composites, as PyTorch's
# ======================================================================================================

@register(submodule="linalg", module=False, name="vecdot")
def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """The dot product of vectors along ``dim`` (x conjugated; real here), batch dims broadcast: PyTorch's
    ``vdot`` for two vectors, ``(x * y).sum(dim)`` otherwise."""
    from ..reduction import sum as _sum
    _no_out(out, "linalg.vecdot")
    check_tensor(x, "vecdot", "x")
    check_tensor(y, "vecdot", "y", 2)
    if x._data.dtype.kind not in "fcV":   # float16 and bfloat16 too (autocast runs vecdot in them), unlike the decompositions
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{dtype_word(x._data.dtype)}")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{dtype_word(x._data.dtype)} and y of type {dtype_word(y._data.dtype)} instead")
    if x._data.ndim == 1 and y._data.ndim == 1 and dim in (0, -1):
        return vdot(x, y)
    if x._data.dtype.kind == "c":
        from ..complex import conj
        x = conj(x)
    return _sum(x * y, dim)


@register(submodule="linalg", module=False, name="vander")
def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of ``x`` with increasing powers x^0 ... x^(N-1) along a new last dim (PyTorch's:
    a cumulative product of the repeated x after a column of ones)."""
    from ..reduction import cumprod
    from ..shape import cat, expand, unsqueeze
    check_tensor(x, "vander", "x")
    k = x._data.dtype
    if k.kind not in "iufcV" or dtype_word(k) in ("Half", "BFloat16"):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{dtype_word(k)}")
    x_ = unsqueeze(x, -1) if x._data.ndim == 0 else x
    shape = tuple(x_._data.shape)
    n = shape[-1] if N is None else N
    if not n > 1:
        raise RuntimeError("N must be greater than 1.")
    result = cumprod(expand(unsqueeze(x_, -1), *shape, n - 1), -1)
    return cat([result.new_ones(shape + (1,)), result], -1)


@register(submodule="linalg", module=False, name="diagonal")
def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Alias of ``diagonal`` with the matrix dims last by default (keyword-only arguments)."""
    from ..shape import diagonal
    check_tensor(A, "linalg_diagonal", "A")
    return diagonal(A, offset, dim1, dim2)


# ----- autograd.grad(is_grads_batched=True): batched rules -------------------------------------------
# (primitives whose rules batch as written declare batch=True)

# matmul's rules batch as written, except for a dot product of two vectors (a 0-d output).
def _matmul_batched(rule, other):
    def batched(xp, g, out, a, b, bmm=False):
        if a.ndim == 1 and b.ndim == 1:
            return xp.unsqueeze(g, -1) * (b if other == 1 else a)
        return rule(xp, g, out, a, b, bmm)
    return batched


batch_rule(matmul_p, (_matmul_batched(_matmul_grad_a, 1), _matmul_batched(_matmul_grad_b, 0)))


# ----- vmap -------------------------------------------------------------------------------------------------

def _matmul_rule(call, args, bdims, params, size):
    """matmul of batched operands: vectors become matrices where the batch would be mistaken for a matrix dim,
    matrices get the batch first and size-1 dims up to the other operand's rank (so the batches broadcast)."""
    a, b = args
    ba, bb = bdims
    ra = a._data.ndim - (ba is not None)
    rb = b._data.ndim - (bb is not None)
    A = a if ba is None else _batching._moved(a, ba)
    Bm = b if bb is None else _batching._moved(b, bb)
    if ra == 1 and rb == 1:   # a dot product of each example
        return (A * Bm).sum(-1), 0
    if ra == 1:   # vector @ matrix(es): a batched vector becomes a row (1, n), padded to b's rank
        if ba is None:
            return call([A, Bm]), 0
        A = A.reshape((size,) + (1,) * (rb - 1) + (A._data.shape[-1],))
        return call([A, Bm]).squeeze(-2), 0
    if rb == 1:   # matrix(es) @ vector: a batched vector becomes a column (n, 1), padded to a's rank
        if bb is None:
            return call([A, Bm]), 0
        Bm = Bm.reshape((size,) + (1,) * (ra - 2) + (Bm._data.shape[-1], 1))
        return call([A, Bm]).squeeze(-1), 0
    rank = max(ra, rb)
    if ba is not None:
        A = _batching._front_and_pad(A, 0, rank, size)
    if bb is not None:
        Bm = _batching._front_and_pad(Bm, 0, rank, size)
    return call([A, Bm]), 0


def _free_letter(eq: str) -> str:
    return next(ch for ch in "zyxwvutsrqponmlkjihgfedcba" if ch not in eq)


def _addprod_rule(call, args, bdims, params, size):
    """beta * c + alpha * einsum(eq, a, b) (addmm, addmv, addr, baddbmm, addbmm): with only the matrix a batched
    (a linear layer over a batch of inputs), the batch joins a's rows, one product; else each batched operand
    (and the result) gets a batch letter in the equation."""
    c, a, b = args
    bc, ba, bb = bdims
    eq = params["eq"]
    ins, out = eq.split("->")
    sa, sb = ins.split(",")
    if eq == "ij,jk->ik" and bb is None and ba is not None and (
            bc is not None or not isinstance(c, Tensor) or c._data.ndim < 2 or c._data.shape[0] == 1):
        A = _batching._moved(a, ba)
        rows = A._data.shape[1]
        A = A.reshape((size * rows,) + tuple(A._data.shape[2:]))
        C = c
        if bc is not None:   # each example's c broadcast to its rows
            C = _batching._front_and_pad(c, bc, 2, size)
            C = C.expand((size, rows, b._data.shape[-1])).reshape((size * rows, b._data.shape[-1]))
        r = call([C, A, b])
        return r.reshape((size, rows) + tuple(r._data.shape[1:])), 0
    if ba is None and bb is None:   # only c batched: it broadcasts over the product as it is
        if params["beta"] != 0:
            return call([_batching._front_and_pad(c, bc, len(out), size), a, b]), 0
        # beta == 0: the kernel ignores c, its shape too; an expanded a carries the batch into the result instead
        a, ba = a.unsqueeze(0).expand((size,) + tuple(a._data.shape)), 0
    z = _free_letter(eq)
    A = a if ba is None else _batching._moved(a, ba)
    Bm = b if bb is None else _batching._moved(b, bb)
    new_eq = f"{z + sa if ba is not None else sa},{z + sb if bb is not None else sb}->{z + out}"
    C = c
    if bc is not None:
        C = _batching._front_and_pad(c, bc, len(out), size)
    new = dict(params)
    new["eq"] = new_eq
    return call([C, A, Bm], new), 0


def _cross_rule(call, args, bdims, params, size):
    rank = max(a._data.ndim - (bd is not None) for a, bd in zip(args, bdims))
    d = params["dim"]
    new = dict(params)
    new["dim"] = (d % rank) + 1 if d < 0 else d + 1
    xs = [a.unsqueeze(0).expand((size,) + tuple(a._data.shape)) if bd is None
          else _batching._front_and_pad(a, bd, rank, size) for a, bd in zip(args, bdims)]
    return call(xs, new), 0


_batching.batching(_matmul_rule, matmul_p)
_batching.batching(_addprod_rule, addprod_p)
_batching.batching(_cross_rule, cross_p)
_batching.batching("leading", matrix_exp_p)
_batching.batching("fallback", eye_of_p, why="a helper of linalg's backward rules")
