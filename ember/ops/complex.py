"""Complex numbers: the conjugate, real and imaginary parts, angle, ``complex``/``polar``, and the views between a
complex tensor and its real (..., 2) twin.

PyTorch's gradient of a real loss L with respect to a complex z is the conjugate Wirtinger derivative dL/dz*
(``autograd._primitive.complex_rules``). The ops here are not holomorphic, so their rules are written for
complex values directly. ``conj`` is eager: it returns a new tensor (PyTorch returns a lazily conjugated view), so
``is_conj()`` is always False and ``resolve_conj()`` returns its input; values and gradients are the same, but a
write into ``z.conj()`` does not reach ``z``.
"""
from __future__ import annotations

from ..autograd import _batching

import math
import warnings

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd._primitive import PrimNode, apply, defprim
from ..autograd.graph import node_class
from ._registry import graph, register
from ._schema import schema
from .elementwise import complex_values as _is_cx
from .shape import select


conj_p = defprim("conj", lambda xp, a: xp.conj(a), vjp=lambda xp, g, out, a: xp.conj(g), jvp="linear",
                 complex="own", batch=True)
conj_physical_p = defprim("conj_physical", lambda xp, a: xp.conj(a), vjp=lambda xp, g, out, a: xp.conj(g),
                          jvp="linear", complex="own", batch=True)
# real/imag are PyTorch's select(view_as_real(z), -1, 0 or 1): the same two nodes here
view_as_real_p = defprim("view_as_real", lambda xp, a: xp.view_as_real(a),
                         vjp=lambda xp, g, out, a: xp.view_as_complex(g), jvp="linear", is_view=True,
                         complex="own")
view_as_complex_p = defprim("view_as_complex", lambda xp, a: xp.view_as_complex(a),
                            vjp=lambda xp, g, out, a: xp.view_as_real(g), jvp="linear", is_view=True)
complex_p = defprim("complex", lambda xp, re, im: xp.make_complex(re, im),
                    vjp=(lambda xp, g, out, re, im: xp.real(g), lambda xp, g, out, re, im: xp.imag(g)),
                    jvp="linear")


def _polar_abs(xp, g, out, r, theta):
    # PyTorch's polar_backward: real(conj(g) * sgn(result))
    return xp.real(xp.conj(g) * xp.sgn(out))


def _polar_angle(xp, g, out, r, theta):
    return xp.real(xp.conj(g) * (out * 1j))


# (the tangent for r: t e^{i theta} written out, not polar(t, theta), whose derivative in its first argument
# assumes it is >= 0, which a tangent need not be: reverse over forward would flip its sign where t < 0)
polar_p = defprim("polar", lambda xp, r, theta: xp.polar(r, theta), vjp=(_polar_abs, _polar_angle),
                  jvp=(lambda xp, t, out, r, theta: xp.make_complex(t * xp.cos(theta), t * xp.sin(theta)),
                       lambda xp, t, out, r, theta: out * (t * 1j)),
                  saves=(1,), saves_out=True)


def _angle_vjp(xp, g, out, a):
    if not _is_cx(a):
        return xp.zeros_like(g)
    # PyTorch's angle_backward: g * i z / |z|^2, 0 at z = 0
    return xp.where(a == 0, 0.0, g * a / (xp.abs(a) ** 2) * 1j)


def _angle_jvp(xp, t, out, a):
    if not _is_cx(a):
        return xp.zeros_like(out)
    return xp.real(xp.conj(_angle_vjp(xp, xp.conj(t), out, a)))


angle_p = defprim("angle", lambda xp, a: xp.angle(a), vjp=_angle_vjp, jvp=_angle_jvp, saves=(0,), promote="float",
                  complex="own")


def _check_complex_dtype(input: Tensor, op: str) -> None:
    if not input.dtype.is_complex:
        raise RuntimeError(f"{op} is only supported for complex tensors.")


@register(method=True)
@schema("is_complex(Tensor input)")
def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex."""
    return input.dtype.is_complex


@register(method=True)
@schema("is_conj(Tensor input)")
def is_conj(input: Tensor) -> bool:
    """Always False: ember's ``conj`` is eager (a new tensor), never a lazily conjugated view."""
    return False


@register(method=True)
@schema("is_neg(Tensor input)")
def is_neg(input: Tensor) -> bool:
    """Always False: ember has no lazily negated views."""
    return False


@register(method=True)
@schema("resolve_conj(Tensor input)")
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself: ember's conjugates are already materialised."""
    return input


@register(method=True)
@schema("resolve_neg(Tensor input)")
def resolve_neg(input: Tensor) -> Tensor:
    return input


@register(method=True, graph=True)
@schema("conj(Tensor input)")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a new tensor: see the module docstring); a real tensor itself."""
    if not input.dtype.is_complex:
        return input
    return apply(conj_p, (input,))


@register(method=True)
@schema("conj_physical(Tensor input)")
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, always a new tensor (ConjPhysicalBackward0); a real tensor itself."""
    if not input.dtype.is_complex:
        return input
    return apply(conj_physical_p, (input,))


@register(method=True)
@schema("conj_physical_(Tensor input)")
def conj_physical_(input: Tensor) -> Tensor:
    from ..autograd._views import apply_inplace
    if not input.dtype.is_complex:
        return input
    return apply_inplace(conj_physical_p, input, (), {}, _CONJ_PHYSICAL_INPLACE)


_CONJ_PHYSICAL_INPLACE = node_class("ConjPhysicalBackward1", PrimNode)


@register(method=True, graph=True)
@schema("view_as_real(Tensor input)")
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real view with a last dimension of 2 (real, imaginary)."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(view_as_real_p, (input,))


@register(method=False)
@schema("view_as_complex(Tensor input)")
def view_as_complex(input: Tensor) -> Tensor:
    """A real tensor with a last dimension of 2 as a complex view (float32 -> complex64, float64 -> complex128)."""
    d = input.dtype
    if d not in (D.float32, D.float64):
        if d is D.float16:
            raise NotImplementedError("ember: view_as_complex of a float16 tensor would be complex32, which ember "
                                      "does not have")
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {D.type_word(input._data.dtype)}")
    a = input._data
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * a.itemsize) for s in a.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return apply(view_as_complex_p, (input,))


def _floats(re, im, op: str):
    for i, (t, arg) in enumerate(((re, "real" if op == "complex" else "abs"), (im, "imag" if op == "complex"
                                                                                else "angle"))):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' (position {i + 1}) must be Tensor, not {type(t).__name__}")
    if re.dtype not in (D.float32, D.float64) or im.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{D.type_word(re._data.dtype)} and {D.type_word(im._data.dtype)}")
    if re.dtype is not im.dtype:
        raise RuntimeError(f"Expected object of scalar type {D.type_word(re._data.dtype)} but got scalar type "
                           f"{D.type_word(im._data.dtype)} for second argument")


def resize_out(out: Tensor, result: Tensor) -> Tensor:
    """``result`` written into ``out``, which is resized first where its shape differs (with PyTorch's warning when
    it had elements)."""
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=4)
        out._data = result.detach().to(out.dtype, copy=True)._data   # a new array of the result's shape
        out._vc[0] += 1
        return out
    return out.copy_(result)


def _complex_out(op: str, out, inputs: tuple, result: Tensor) -> Tensor:
    """``out=`` of complex and polar: no autograd, exactly the result's dtype (PyTorch's checks)."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if any(t.requires_grad for t in inputs):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected object of scalar type {D.type_word(result._data.dtype)} but got scalar type "
                           f"{D.type_word(out._data.dtype)} for argument 'out'")
    return resize_out(out, result)


@register(graph="make_complex")
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:
    """``real + i imag`` (float32 parts give complex64, float64 complex128)."""
    _floats(real, imag, "complex")
    return _complex_out("complex", out, (real, imag), apply(complex_p, (real, imag)))


@register(graph=True)
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:
    """``abs * (cos(angle) + i sin(angle))``."""
    _floats(abs, angle, "polar")
    return _complex_out("polar", out, (abs, angle), apply(polar_p, (abs, angle)))


@register(method=True, graph=True)
@schema("angle(Tensor input)")
def angle(input: Tensor) -> Tensor:
    """The argument of each element (radians); real inputs give 0 or pi. Integral inputs compute in the default
    float dtype."""
    return apply(angle_p, (input,))


def _real(self: Tensor) -> Tensor:
    if not self.dtype.is_complex:
        return self
    return select(view_as_real(self), -1, 0)


def _imag(self: Tensor) -> Tensor:
    if not self.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(view_as_real(self), -1, 1)


def _set_part(part):
    def setter(self: Tensor, value) -> None:
        view = part(self)
        if isinstance(value, Tensor):
            view.copy_(value)
        else:
            view.fill_(value)
    return setter


Tensor.real = property(_real, _set_part(_real), doc="The real parts (a view of a complex tensor; a real "
                                                    "tensor itself).")
Tensor.imag = property(_imag, _set_part(_imag), doc="The imaginary parts, a view (complex tensors only).")
# a rule's view_as_complex (view_as_real's gradient, contiguous as PyTorch's grad.contiguous())
graph("view_as_complex", lambda x: apply(view_as_complex_p, (x.contiguous(),)))
register(schema("real(Tensor input)")(lambda input: _real(input)), name="real", module=True)
register(schema("imag(Tensor input)")(lambda input: _imag(input)), name="imag", module=True)
graph("real", lambda x: _real(x))
graph("imag", lambda x: _imag(x))


@register(method=True)
@schema("adjoint(Tensor input)")
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (``input.mH``)."""
    return input.mH


view_as_real_copy_p = defprim("view_as_real_copy", lambda xp, a: xp.clone(xp.view_as_real(a)),
                              node="ViewAsRealBackward0_copy", vjp=view_as_real_p.vjps, jvp="linear", complex="own")


@register()
@schema("view_as_real_copy(Tensor input)")
def view_as_real_copy(input: Tensor) -> Tensor:
    """``view_as_real(input)`` as new memory (ViewAsRealBackward0_copy)."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return apply(view_as_real_copy_p, (input,))


@register()
@schema("view_as_complex_copy(Tensor input)")
def view_as_complex_copy(input: Tensor) -> Tensor:
    """``view_as_complex(input)`` as new memory."""
    return view_as_complex(input).clone()


# ----- vmap -------------------------------------------------------------------------------------------------
_batching.by_name("elementwise", "conj", "conj_physical", "angle", "complex", "polar")
_batching.by_name("leading", "view_as_real", "view_as_complex", "view_as_real_copy")


def _view_as_complex_rule(orig, args, kwargs, level):
    """view_as_complex under vmap: its wrapper checks the strides and storage offset of the example, which only
    the physical tensor (batch dim first) has (``_batching.PUBLIC_RULES``)."""
    from .shape import vmap_front
    x = args[0] if args else kwargs.get("input")
    if not isinstance(x, Tensor):
        return orig(*args, **kwargs)
    return _batching.wrap(view_as_complex(vmap_front(x, level)), 0, level)


_batching.PUBLIC_RULES["view_as_complex"] = _view_as_complex_rule
