"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal, built on ``parametrize``.

Each one registers a small Module as the parametrization of ``module.<name>``; the state dict then holds
``parametrizations.<name>.original`` (or ``original0``/``original1`` for weight_norm's g and v) and, for
spectral_norm, the power-iteration vectors ``parametrizations.<name>.0._u`` / ``._v``.
"""
from __future__ import annotations

from enum import Enum, auto

from ...ops import creation as _creation
from ...ops import random as _random
from ... import _dtype as D
from ... import linalg
from ..._tensor import Tensor, make
from ...autograd.grad_mode import no_grad
from ...devices import NAMESPACES
from ...ops.creation import eye
from ...ops.elementwise import allclose
from ...ops.linalg.decompositions import linalg_householder_product
from ...ops.linalg.products import matrix_exp, mv, vdot
from ...ops.reduction import vector_norm
from ...ops.shape import cat
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ----- weight norm ------------------------------------------------------------------------------------
def _norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """PyTorch's norm_except_dim: the ``pow``-norm over every dim but ``dim``, kept as size-1 dims
    (``dim=-1`` means the norm of the whole tensor, a 0-d result, as PyTorch reads it)."""
    if dim == -1:
        return vector_norm(v, pow)
    d = dim % v.ndim if v.ndim else 0
    axes = tuple(a for a in range(v.ndim) if a != d)
    if not axes:   # a 1-d v: the norm of each single element
        return v.abs()
    return vector_norm(v, pow, dim=axes, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """PyTorch's _weight_norm: ``v * (g / ||v||)``, the norm taken over every dim but ``dim``. (PyTorch runs
    a fused kernel for dim 0 or the last dim, giving the node WeightNormInterfaceBackward0; ember composes
    it, so the node is MulBackward0; values and gradients are the same.)"""
    return v * (g / _norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        weight_g = _norm_except_dim(weight, 2, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every dim but ``dim``; ``None``: the
    whole tensor). ``g`` is ``parametrizations.<name>.original0``, ``v`` is ``original1``. State dicts of
    the deprecated ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) load into it."""
    _weight_norm_mod = _WeightNorm(dim)
    parametrize.register_parametrization(module, name, _weight_norm_mod, unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        g_key = f"{prefix}{name}_g"
        v_key = f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            original0 = state_dict.pop(g_key)
            original1 = state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = original0
            state_dict[f"{prefix}parametrizations.{name}.original1"] = original1

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ----- spectral norm ----------------------------------------------------------------------------------
class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # a 1-d weight is simply normalised: no power iteration, no buffers
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            # u then v, as PyTorch draws them: the same seed gives the same vectors
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # start from good estimates of the singular vectors
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # The buffers are updated in place (PyTorch writes them with out=): a DataParallel-style replica
        # or anyone holding them sees the new vectors.
        if weight_mat.ndim <= 1:
            raise AssertionError(f"Expected weight_mat to have more than 1 dimension, got {weight_mat.ndim}")
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.H, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the next forward's in-place update must not touch what backward saved
        u = self._u.clone()
        v = self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        # any value is its own spectral normalisation's preimage up to scale; keep it
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as ``W / sigma(W)``, the largest singular value estimated by power
    iteration (``n_power_iterations`` per forward in training mode, none in eval mode). ``dim`` (default 0,
    1 for ConvTranspose) is the output-channel dim."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# ----- orthogonal -------------------------------------------------------------------------------------
def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.size(-2), Q.size(-1)
    Id = eye(k, dtype=Q.dtype)
    eps = 10.0 * n * D.finfo(Q.dtype).eps
    return allclose(Q.mH @ Q, Id, atol=eps)


def _geqrf(A: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.geqrf``: LAPACK's geqrf on a (batch of) matrices (R on and above the diagonal, the Householder
    vectors below), and tau; not differentiable."""
    a = A.detach()._data
    h, tau = NAMESPACES[type(a)].geqrf(a)
    return make(h), make(tau)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A's QR decomposition, with columns signed so that R's diagonal is positive."""
    X, _ = _geqrf(A)
    Q = linalg.qr(A.detach()).Q   # LAPACK's orgqr on the same reflectors
    return Q * X.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is now n x k with n >= k
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # the skew-symmetric A is built from the lower triangle of X (padded to n x n)
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            # the diagonal of X holds the signs of the columns (+-1), the strict lower triangle the reflectors
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg_householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                # without trivialization only householder can be assigned to: store Q's reflectors
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                              "or the Cayley parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                # the diagonal of R holds the signs of the columns; LAPACK's tau is exactly 0 where it used no
                # reflection (the column's sign then flips)
                diag = A.diagonal(dim1=-2, dim2=-1)
                diag.sign_()
                diag[tau == 0.0] *= -1
                return A.mT if transpose else A
            # trivialization: base holds an orthogonal matrix, the parameter starts at the point mapping to I
            if n == k:
                if not _is_orthogonal(Q):
                    Q = _make_orthogonal(Q)
                else:
                    Q = Q.clone()
            else:
                N = _random.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
                Q = cat([Q, N], dim=-1)
                Q = _make_orthogonal(Q)
            self.base = Q
            # X with -1 on the diagonal maps to the identity under every map
            neg_Id = _creation.zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal (orthonormal columns or
    rows), through ``matrix_exp`` (default for square), ``cayley`` or ``householder`` (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
