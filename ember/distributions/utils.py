"""Helpers of ``torch.distributions.utils``: broadcasting parameters, logits <-> probs, ``lazy_property``, and the
lower-triangle packing that the matrix distributions and transforms use."""
from __future__ import annotations

from functools import update_wrapper
from typing import Any, Callable

from ..ops import public as torch
from .._tensor import Size, Tensor
from ..nn import functional as F

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

_Number = (int, float, bool)


def _is_tensor_like(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "__torch_function__")


def broadcast_all(*values) -> tuple[Tensor, ...]:
    """Broadcast tensors and numbers together; numbers become tensors of the first tensor's dtype and device
    (of the default dtype when every value is a number)."""
    if not all(_is_tensor_like(v) or isinstance(v, _Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(_is_tensor_like(v) for v in values):
        options: dict[str, Any] = dict(dtype=torch.get_default_dtype())
        for value in values:
            if isinstance(value, Tensor):
                options = dict(dtype=value.dtype, device=value.device)
                break
        values = tuple(v if _is_tensor_like(v) else torch.tensor(v, **options) for v in values)
    return torch.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device) -> Tensor:
    """Standard normal draws of ``shape`` (``empty(...).normal_()``: PyTorch's random stream)."""
    return torch.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: a sigmoid of log-odds (binary) or a softmax over the last dimension."""
    if is_binary:
        return torch.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp probabilities into ``[eps, 1 - eps]`` (eps of the dtype), the open interval (0, 1)."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities: log-odds (binary) or log-probabilities."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return torch.log(ps_clamped) - torch.log1p(-ps_clamped)
    return torch.log(ps_clamped)


class lazy_property:
    """A non-data descriptor that computes the value on first access (with grad enabled) and stores it on the
    instance, replacing itself (``probs`` of a distribution built from ``logits``)."""

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What the class attribute looks like: a property to documentation tools, a lazy_property to validation."""

    def __init__(self, wrapped: Callable) -> None:
        property.__init__(self, wrapped)


def _tril_mask(n: int, diag: int, device) -> Tensor:
    arange = torch.arange(n, device=device)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular elements (below diagonal ``diag``) of a (batch of) square matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: a (batch of) ``D x D`` lower-triangular matrices."""
    # the positive root of D**2 + (1 + 2*diag)*D - |diag|*(diag + 1) - 2*len = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = torch.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + Size((n, n)))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
