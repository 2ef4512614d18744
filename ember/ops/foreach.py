"""``torch._foreach_*``: one op applied to each tensor of a list (what EMA and optimizer code calls).
PyTorch fuses these into one kernel; ember loops over the list with the ordinary ops, so values,
in-place version bumps and autograd are those of the per-tensor ops (each result's grad_fn is the
per-tensor node, e.g. MulBackward0, where PyTorch shows one fused node). In-place forms return the
list, out-of-place forms a tuple, as PyTorch."""
from __future__ import annotations

import numbers
from typing import Any, Sequence

from .._tensor import Tensor
from .reduction import vector_norm

__all__: list = []


def _tensors(op: str, xs, name: str = "self") -> list:
    if isinstance(xs, Tensor) or not isinstance(xs, (list, tuple)) or \
            not all(isinstance(t, Tensor) for t in xs):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of Tensors, not {type(xs).__name__}")
    if not xs:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return list(xs)


def _others(op: str, self: list, other, name: str = "other", scalar_ok: bool = True) -> list:
    """``other`` as one entry per tensor: a Number, a list of Numbers or Tensors, or one (0-d) Tensor."""
    if isinstance(other, numbers.Number) or isinstance(other, Tensor):
        if not scalar_ok:
            raise TypeError(f"{op}(): argument '{name}' (position 2) must be tuple of Tensors, not "
                            f"{type(other).__name__}")
        return [other] * len(self)
    if not isinstance(other, (list, tuple)):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of Tensors, not {type(other).__name__}")
    if len(other) != len(self):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(self)} and {len(other)}")
    return list(other)


def _binary(name: str, method: str, scalar_ok: bool = True):
    def out_of_place(self: Sequence, other: Any, **kw) -> tuple:
        op = f"_foreach_{name}"
        xs = _tensors(op, self)
        return tuple(getattr(x, method)(o, **kw) for x, o in zip(xs, _others(op, xs, other, scalar_ok=scalar_ok)))

    def in_place(self: Sequence, other: Any, **kw) -> list:
        op = f"_foreach_{name}_"
        xs = _tensors(op, self)
        for x, o in zip(xs, _others(op, xs, other, scalar_ok=scalar_ok)):
            getattr(x, method + "_")(o, **kw)
        return self
    return out_of_place, in_place


def _unary(name: str):
    def out_of_place(self: Sequence) -> tuple:
        return tuple(getattr(x, name)() for x in _tensors(f"_foreach_{name}", self))

    def in_place(self: Sequence) -> list:
        for x in _tensors(f"_foreach_{name}_", self):
            getattr(x, name + "_")()
        return self
    return out_of_place, in_place


def _export(name: str, pair) -> None:
    f, g = pair
    f.__name__ = f.__qualname__ = f"_foreach_{name}"
    g.__name__ = g.__qualname__ = f"_foreach_{name}_"
    globals()[f.__name__] = f
    globals()[g.__name__] = g
    __all__.extend([f.__name__, g.__name__])


for _n in ("add", "sub"):
    _export(_n, _binary(_n, _n))
for _n in ("mul", "div", "pow"):
    _export(_n, _binary(_n, _n))
for _n in ("clamp_min", "clamp_max"):
    _export(_n, _binary(_n, _n))


def _extremum(name: str, clamp: str):
    """maximum/minimum: elementwise with tensors, a clamp with numbers (as PyTorch's foreach kernels)."""
    def pick(x, o, suffix=""):
        if isinstance(o, Tensor):
            r = getattr(x, name)(o)
            return x.copy_(r) if suffix else r
        return getattr(x, clamp + suffix)(o)

    def out_of_place(self: Sequence, other: Any) -> tuple:
        xs = _tensors(f"_foreach_{name}", self)
        return tuple(pick(x, o) for x, o in zip(xs, _others(f"_foreach_{name}", xs, other)))

    def in_place(self: Sequence, other: Any) -> list:
        xs = _tensors(f"_foreach_{name}_", self)
        for x, o in zip(xs, _others(f"_foreach_{name}_", xs, other)):
            pick(x, o, "_")
        return self
    return out_of_place, in_place


_export("maximum", _extremum("maximum", "clamp_min"))
_export("minimum", _extremum("minimum", "clamp_max"))
for _n in ("sqrt", "exp", "log", "abs", "neg", "sign", "sigmoid", "tanh", "reciprocal", "ceil", "floor",
           "round", "trunc", "frac", "sin", "cos", "log1p", "expm1", "rsqrt"):
    _export(_n, _unary(_n))


def _addc(name: str):
    def out_of_place(self: Sequence, tensor1: Sequence, tensor2: Sequence, value: Any = 1) -> tuple:
        op = f"_foreach_{name}"
        xs = _tensors(op, self)
        t1, t2 = _others(op, xs, tensor1, "tensor1", False), _others(op, xs, tensor2, "tensor2", False)
        vs = _others(op, xs, value, "scalars")
        return tuple(getattr(x, name)(a, b, value=v) for x, a, b, v in zip(xs, t1, t2, vs))

    def in_place(self: Sequence, tensor1: Sequence, tensor2: Sequence, value: Any = 1) -> list:
        op = f"_foreach_{name}_"
        xs = _tensors(op, self)
        t1, t2 = _others(op, xs, tensor1, "tensor1", False), _others(op, xs, tensor2, "tensor2", False)
        vs = _others(op, xs, value, "scalars")
        for x, a, b, v in zip(xs, t1, t2, vs):
            getattr(x, name + "_")(a, b, value=v)
        return self
    return out_of_place, in_place


_export("addcmul", _addc("addcmul"))
_export("addcdiv", _addc("addcdiv"))


def _lerp_pair():
    def out_of_place(self: Sequence, tensors1: Sequence, weight: Any) -> tuple:
        xs = _tensors("_foreach_lerp", self)
        ends = _others("_foreach_lerp", xs, tensors1, "tensors1", False)
        return tuple(x.lerp(e, w) for x, e, w in zip(xs, ends, _others("_foreach_lerp", xs, weight, "weight")))

    def in_place(self: Sequence, tensors1: Sequence, weight: Any) -> list:
        xs = _tensors("_foreach_lerp_", self)
        ends = _others("_foreach_lerp_", xs, tensors1, "tensors1", False)
        for x, e, w in zip(xs, ends, _others("_foreach_lerp_", xs, weight, "weight")):
            x.lerp_(e, w)
        return self
    return out_of_place, in_place


_export("lerp", _lerp_pair())


def _foreach_zero_(self: Sequence) -> list:
    for x in _tensors("_foreach_zero_", self):
        x.zero_()
    return self


def _foreach_copy_(self: Sequence, src: Sequence, non_blocking: bool = False) -> list:
    xs = _tensors("_foreach_copy_", self)
    for x, s in zip(xs, _others("_foreach_copy_", xs, src, "src", False)):
        x.copy_(s)
    return self


def _foreach_norm(self: Sequence, ord: float = 2, dtype=None) -> tuple:
    return tuple(vector_norm(x, ord, dtype=dtype) for x in _tensors("_foreach_norm", self))


__all__ += ["_foreach_zero_", "_foreach_copy_", "_foreach_norm"]
