"""Gradient clipping: clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_ (PyTorch's
arithmetic: per-tensor norms, then the norm of those norms; the scale max_norm / (total + 1e-6) clamped to 1)."""
from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Iterable

from ...ops import creation as _creation
from ... import _dtype as D
from ..._device import fp_quiet, fp_restore
from ..._tensor import Tensor, make
from ...devices import NAMESPACES
from ...ops.elementwise import clamp
from ...ops.reduction import norm_p, vector_norm
from ...autograd import _primitive, _profiling
from ...autograd._primitive import apply
from ...ops.shape import stack
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

_tensor_or_tensors = Tensor | Iterable[Tensor]


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)
    return wrapper


@_no_grad
def get_total_norm(tensors: _tensor_or_tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated into one vector)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _creation.tensor(0.0)
    # ``foreach`` picks PyTorch's fused kernels; ember has one path, with the same arithmetic.
    xp = _plain_arrays(tensors) if norm_type == 2.0 else None
    if xp is not None:
        # the per-tensor norms by the norm primitive's own kernel, stacked as ``stack`` stacks them: the same
        # arrays as the ops below make, without a Tensor and a graph-free op call per gradient
        fp = fp_quiet()
        try:
            stacked = xp.stack([xp.vector_norm(t._data, 2, tuple(range(t._data.ndim)), False) for t in tensors], 0)
        finally:
            fp_restore(fp)
        total_norm = vector_norm(make(stacked), norm_type)
    else:
        norms = [_norm(g, norm_type) for g in tensors]
        total_norm = vector_norm(stack(_promote(norms)), norm_type)
    if error_if_nonfinite and (total_norm.isnan() | total_norm.isinf()).item():
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def _norm(g: Tensor, norm_type: float) -> Tensor:
    """``vector_norm(g, norm_type)``; the 2-norm of a plain floating tensor through the op's primitive straight (the
    checks of the public function cannot fail there, and they cost more than the norm of a small tensor)."""
    if norm_type == 2.0 and type(g) is Tensor and g.dtype.is_floating_point:
        return apply(norm_p, (g,), {"ord": 2, "dims": tuple(range(g._data.ndim)), "keepdim": False})
    return vector_norm(g, norm_type)


_PLAIN_RESULT = _primitive._result   # the op-result hook when nothing observes the ops (no tracer, no ONNX export)


def _plain_arrays(tensors: list):
    """The raw namespace of ``tensors`` when every one is a plain float32/float64 Tensor on one device with one
    dtype, that nothing requires grad of, and no profiler, tracer (``ember.compile``, ONNX export) watches the ops:
    then clipping may call the kernels of its ops itself (same arrays, same order) instead of applying the ops one
    tensor at a time. None otherwise (the ops are applied)."""
    if _profiling.NODE_HOOK is not None or _primitive._result is not _PLAIN_RESULT:
        return None
    first = tensors[0]._data
    dtype, kind = first.dtype, type(first)
    if dtype.kind != "f" or dtype.itemsize < 4 or kind not in NAMESPACES:
        return None
    for t in tensors:
        if type(t) is not Tensor or t._requires_grad or type(t._data) is not kind or t._data.dtype != dtype:
            return None
    return NAMESPACES[kind]


def _promote(norms: list[Tensor]) -> list[Tensor]:
    # PyTorch stacks the per-tensor norms, which promotes mixed dtypes
    dt = norms[0].dtype
    for n in norms[1:]:
        dt = D.promote_types(dt, n.dtype)
    return [n.to(dt) for n in norms]


@_no_grad
def clip_grads_with_norm_(parameters: _tensor_or_tensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = clamp(clip_coef, max=1.0)
    if _plain_arrays(grads) is not None and clip_coef_clamped.dtype == grads[0].dtype and all(
            g._base is None and g.grad_fn is None and getattr(g._data.flags, "writeable", True) for g in grads):
        # ``g.mul_(coef)`` of each gradient (same dtype: one rounded product an element) without an op call each;
        # the version counters move as the in-place op moves them
        c = clip_coef_clamped._data
        fp = fp_quiet()
        try:
            for g in grads:
                g._data *= c
                g._vc[0] += 1
        finally:
            fp_restore(fp)
        return
    for g in grads:
        g.mul_(clip_coef_clamped)


@_no_grad
def clip_grad_norm_(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale the gradients so that their total ``norm_type``-norm is at most ``max_norm``; returns the total
    norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: _tensor_or_tensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters: _tensor_or_tensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient to [-clip_value, clip_value] in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
