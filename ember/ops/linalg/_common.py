"""What the linear algebra modules share: PyTorch's argument checks (floating, square, same dtype), shape
broadcasting, the identity and triangle masks the decompositions' rules use, and ``linalg.LinAlgError``."""
from __future__ import annotations

from ...devices import NAMESPACES
from ...devices.cpu.linalg import LinAlgError
from ...autograd.graph import node_class
from ..._tensor import Tensor
from ...autograd._primitive import PrimNode, apply, broadcast_error, defprim
from .._registry import graph, graph_raw, register
from ..._util import check_tensor, dtype_word, holds, no_out
from ..shape import _broadcast_shape


register(LinAlgError, name="LinAlgError", module=False, submodule="linalg")


def _node(name: str) -> type:
    return node_class(name, PrimNode)


def _mT(xp, x):
    return xp.transpose(x, -1, -2)


def _is_cx(x) -> bool:
    """Whether a rule's argument (a raw array or a Tensor) is complex."""
    return (x._data if isinstance(x, Tensor) else x).dtype.kind == "c"


def _mH(xp, x):
    # the conjugate transpose; the transpose of a real x (no conj node under create_graph)
    t = xp.transpose(x, -1, -2)
    return xp.conj(t) if _is_cx(t) else t


def _i_imag(xp, w):
    # i * Im(w)
    im = xp.imag(w)
    return xp.make_complex(xp.zeros_like(im), im)


# ----- shapes ------------------------------------------------------------------------------------------

def _broadcastable(a, b) -> bool:
    return broadcast_error((a, b)) is None


def _broadcast(a, b) -> tuple | None:
    """The shape two shapes broadcast to, None where they do not."""
    return _broadcast_shape((a, b)) if _broadcastable(a, b) else None


# ----- the triangles and the identity of the decompositions' rules ----------------------------------------

tri_mask_p = defprim("tri_mask", lambda xp, x, upper, diag: xp.tri_mask(x, upper, diag),
                     node="TrilBackward0",
                     vjp=lambda xp, g, out, x, upper, diag: xp.tri_mask(g, upper, diag), jvp="linear")
graph("tri_mask", lambda x, upper, diag=1.0: apply(tri_mask_p, (x,), {"upper": upper, "diag": diag}))
graph_raw("eye_like")


def _eye(xp, x):
    return xp.eye_like(x)


def _diag_embed(xp, v):
    # (..., n) -> (..., n, n) with v on the diagonal
    return xp.unsqueeze(v, -2) * _eye(xp, v)


def _diagonal(xp, x):
    return xp.sum(x * _eye(xp, x), -1)


# ----- argument checks ----------------------------------------------------------------------------------

# bfloat16: the functions whose PyTorch CPU kernel has no bfloat16 loop (NotImplementedError naming the kernel);
# vecdot and matrix_exp run it; the others refuse it as float16 ("Low precision dtypes").
_BF16_KERNELS = {"det": "lu_cpu", "solve": "lu_cpu", "solve_ex": "lu_cpu", "lu_factor": "lu_cpu",
                 "lu_factor_ex": "lu_cpu", "lu": "lu_cpu", "lu_solve": "linalg.lu_solve_cpu",
                 "cholesky": "cholesky_cpu", "cholesky_ex": "cholesky_cpu", "qr": "geqrf_cpu",
                 "svd": "linalg_svd_cpu", "svdvals": "linalg_svd_cpu",
                 "eigh": "linalg_eigh_cpu", "eigvalsh": "linalg_eigh_cpu", "eig": "linalg_eig_out_cpu",
                 "eigvals": "linalg_eig_out_cpu", "householder_product": "orgqr_cpu",
                 "solve_triangular": "triangular_solve_cpu", "triangular_solve": "triangular_solve_cpu",
                 "ldl_factor": "ldl_factor_kernel_cpu", "ldl_factor_ex": "ldl_factor_kernel_cpu",
                 "ldl_solve": "ldl_solve_kernel_cpu", "vecdot": None, "matrix_exp": None}
# ... of which these return before their kernel for an empty input (PyTorch computes the empty bfloat16 result)
_BF16_EMPTY_OK = {"det", "solve", "solve_ex", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "cholesky",
                  "cholesky_ex", "svd", "svdvals", "eigh", "eigvalsh", "ldl_factor", "ldl_factor_ex", "ldl_solve"}


def _check_float(A, op, later: bool = False):
    """PyTorch's dtype check of a linalg input; ``later``: the caller refuses bfloat16 itself by
    ``_bf16_kernel`` after its other argument checks (where PyTorch's kernel is reached)."""
    k = A._data.dtype
    if k.kind not in "fcV":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {dtype_word(k)}")
    word = dtype_word(k)
    if word == "BFloat16" and op.split(".")[-1] in _BF16_KERNELS:
        if not later:
            _bf16_kernel(A, op)
        return
    if word in ("Half", "BFloat16"):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {word}")


def _bf16_kernel(A, op) -> None:
    """The refusal of a bfloat16 ``A`` by the LAPACK kernel of ``op`` (NotImplementedError naming it), unless A is
    empty and PyTorch returns before that kernel."""
    name = op.split(".")[-1]
    kernel = _BF16_KERNELS.get(name)
    if kernel is None or dtype_word(A._data.dtype) != "BFloat16" or (A._data.size == 0 and name in _BF16_EMPTY_OK):
        return
    raise NotImplementedError(f"\"{kernel}\" not implemented for 'BFloat16'")


def _check_matrix(A, op, square=True, arg="A", later: bool = False):
    check_tensor(A, op.split(".")[-1], arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {arg} must have at least 2 dimensions.")
    if square and A._data.shape[-1] != A._data.shape[-2]:
        m, n = A._data.shape[-2:]
        raise RuntimeError(f"{op}: {arg} must be batches of square matrices, but they are {m} by {n} matrices")
    _check_float(A, op, later)


def _check_same_dtype(A, B, op, a="A", b="B"):
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"{op}: Expected {b} to have the same dtype as {a}, but got {b}.dtype = "
                           f"{dtype_word(B._data.dtype)} and {a}.dtype = {dtype_word(A._data.dtype)}")


_no_out = no_out


def raise_info(info, op: str, what, exc: type = LinAlgError) -> None:
    """PyTorch's _linalg_check_errors: ``op: [(Batch element b): ]what(i)`` for the first nonzero ``info``."""
    xp = NAMESPACES[type(info)]
    if not holds(lambda i: NAMESPACES[type(i)].any(i != 0), info):
        return
    flat = xp.reshape(info, (-1,))
    bad = xp.nonzero_tuple(flat)[0]
    if bad.shape[0]:
        b = int(bad[0])
        where = f"(Batch element {b}): " if info.ndim else ""
        raise exc(f"{op}: {where}{what(int(flat[b]))}")
