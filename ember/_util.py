"""Argument checking and type promotion shared by the op families."""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._dtype import type_word
from ._tensor import Tensor, wrap_dim

_SCALARS = (bool, int, float, complex)


def check_tensor(x, op: str, arg: str = "input", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return x


# The compiler's tracer while it traces (ember/compiler): it sees each check on values made by ``holds`` and each
# computation on raw arrays made by ``compute``.
RAW_OBSERVERS: list = []


def holds(pred, *arrays) -> bool:
    """``bool(pred(*arrays))``: a check on tensors' values (an index range, a target in [0, 1]) made in an op's
    wrapper, outside the primitives. ``pred`` may use only its arrays' values and what a compiled call's guards fix
    (shapes, dtypes, the call's Python arguments): a compiled replay calls it again on its own arrays and runs
    eagerly (raising eager's error) when the answer differs."""
    if RAW_OBSERVERS:
        return RAW_OBSERVERS[-1].on_check(pred, arrays)
    return bool(pred(*arrays))


def compute(fn, *args, **params):
    """``fn`` of the arrays of ``args`` (tensors, or None) and ``params``: a computation on raw arrays in an op's
    wrapper, outside the primitives (batch norm's new running statistics), giving arrays (or a tuple of arrays and
    Nones). ``fn`` may use only its arguments (``params``: plain values) and what a compiled call's guards fix: a
    compiled replay calls it again on its own arrays."""
    if RAW_OBSERVERS:
        return RAW_OBSERVERS[-1].on_compute(fn, args, params)
    return fn(*[None if a is None else a._data for a in args], **params)


def scalar_or_tensor(x, op: str, arg: str = "other"):
    """Python/NumPy scalars stay scalars (weakly typed, as PyTorch's wrapped numbers); else a Tensor."""
    if isinstance(x, Tensor) or type(x) in _SCALARS:
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (bool, int, float, complex)):
        return x
    raise TypeError(f"{op}(): argument '{arg}' must be Tensor or Number, not {type(x).__name__}")


def _operand_key(x):
    if isinstance(x, Tensor):
        return (D._FROM_NP[x._data.dtype], 0 if x._data.ndim else 1)
    return (D._scalar_dtype(x), 2)


def promote(*xs) -> D.dtype:
    """The dtype PyTorch computes ``op(*xs)`` in (tensors, 0-d tensors and scalars, by priority)."""
    return D.result_type_of(tuple(_operand_key(x) for x in xs))


def compute_dtype(a, b):
    """The NumPy dtype to cast tensor operands to before a binary op, or None if NumPy's own
    promotion (NEP 50: Python scalars are weak) already gives PyTorch's answer."""
    ta = type(b) if not isinstance(b, Tensor) else None
    if isinstance(a, Tensor) and ta is not None:
        k = a._data.dtype.kind
        if (k == "f" and ta is not complex) or (k in "iu" and ta is int) or (k == "b" and ta is bool):
            return None   # (bfloat16, kind 'V', goes on: apply makes the number a bfloat16 scalar)
    elif isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.dtype == b._data.dtype:
        return None
    return promote(a, b).np


def promote_standard(args: tuple):
    """A primitive's ``promote="standard"``: the dtype to cast tensor inputs to (PyTorch's result type
    over tensors and scalars), or None when no input needs a cast."""
    if len(args) == 2:
        return compute_dtype(args[0], args[1])
    xs = [x for x in args if x is not None]
    d = promote(*xs).np
    return d if d is _BF16 or any(isinstance(x, Tensor) and x._data.dtype != d for x in xs) else None


def promote_float(args: tuple):
    """``promote="float"``: as "standard", but integral and bool results compute in the default float
    dtype (true division, exp, sin, ...)."""
    if len(args) == 1:
        return None if args[0]._data.dtype.kind in "fcV" else D._default_float.np
    xs = [x for x in args if x is not None]
    d = promote(*xs)
    d = d.np if d._cat >= D._FLOAT else D._default_float.np
    return d if any(isinstance(x, Tensor) and x._data.dtype != d for x in xs) else None


dtype_word = type_word

# float8 and uint16/32/64: dtypes with few kernels in PyTorch (see autograd/_primitive.py SHELL_OPS)
def shell_chars(dtypes) -> str:
    """The NumPy character codes of ``dtypes`` (those with arrays: float8 needs ml_dtypes)."""
    return "".join(d.np.char for d in dtypes if not isinstance(d.np, D._Missing))


F8_CHARS = shell_chars(D.FLOAT8)
SHELL_CHARS = F8_CHARS + "HILQ"


def refuse_shell(input, kernel: str, chars: str = SHELL_CHARS) -> None:
    """PyTorch's NotImplementedError for a tensor of a dtype (float8, uint16/32/64 by default; ``chars``: the
    dtypes' NumPy character codes) that its kernel ``kernel`` is not compiled for."""
    npd = input._data.dtype if isinstance(input, Tensor) else input.np if isinstance(input, D.dtype) and \
        input.np.__class__ is not D._Missing else None
    if npd is not None and npd.char in chars:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_word(npd)}'")
_BF16 = D.bfloat16.np   # see promote_standard


def float_dtype(x: Tensor):
    """Integer and bool inputs of floating ops compute in the default float dtype."""
    return None if x._data.dtype.kind in "fcV" else D._default_float.np


def reduced_shape(shape: tuple, dims: tuple) -> tuple:
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def check_bool(value, op: str, arg: str):
    """A bool argument (keepdim, requires_grad, ...): a string such as 'no' must not pass for True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument '{arg}' must be bool, not {type(value).__name__}")
    return bool(value)


def normalize_dims(dim, ndim: int, op: str) -> tuple:
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative axes. A 0-d tensor accepts
    dims 0 and -1 (PyTorch's convention) and has no axes to reduce: the result is then ``()``."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        dims = tuple(wrap_dim(d, ndim, op) for d in dim)
        seen = set()
        for d in dims:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
        return tuple(sorted(dims)) if ndim else ()
    d = wrap_dim(dim, ndim, op)
    return (d,) if ndim else ()


def return_type(name: str, fields: tuple = ("values", "indices")) -> type:
    """A namedtuple printing as PyTorch's ``torch.return_types.<name>(...)`` (max, sort, linalg_slogdet, ...)."""
    from collections import namedtuple
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__,
                                "__module__": "torch.return_types"})


def no_out(out, op: str) -> None:
    """``out=`` is refused with a clear error (ember always returns a new tensor)."""
    if out is not None:
        raise NotImplementedError(f"ember: {op}(out=...) is not supported; use the returned tensor")


def broadcast_shape(shapes, op: str = "broadcast_shapes") -> tuple:
    """The shape ``shapes`` broadcast to (pure shape arithmetic); PyTorch's RuntimeError where they do not."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for k, s in enumerate(shapes):
        for i, v in enumerate(s):
            j = n - len(s) + i
            if out[j] == 1:
                out[j] = v
            elif v != 1 and v != out[j]:
                raise RuntimeError(f"The size of tensor a ({out[j]}) must match the size of tensor b ({v}) at "
                                   f"non-singleton dimension {j}" if op == "broadcast_tensors" else
                                   f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                                   f"between arg {k} and a previous arg at dimension {j - n}: {v} vs {out[j]}")
    return tuple(out)


# ----- bfloat16: kernels that mix arrays with Python numbers --------------------------------------------------
_F32 = D.float32.np


def bf16_in_float32(forward):
    """A primitive's forward ``forward(xp, a, *rest, **params)`` computed in float32 when ``a`` is bfloat16 and
    rounded once to bfloat16, as PyTorch's CPU kernels compute bfloat16 (in float, their opmath type). For
    kernels of several NumPy operations with Python numbers, which NumPy would promote with bfloat16 to float32
    (other dtypes: ``forward`` itself, one identity test later)."""
    def kernel(xp, a, *rest, **params):
        if getattr(a, "dtype", None) is _BF16 or (rest and getattr(rest[0], "dtype", None) is _BF16):
            a, *rest = (xp.cast(r, _F32) if getattr(r, "dtype", None) is _BF16 else r for r in (a, *rest))
            out = forward(xp, a, *rest, **params)
            return tuple(xp.cast(o, _BF16) for o in out) if isinstance(out, tuple) else xp.cast(out, _BF16)
        return forward(xp, a, *rest, **params)
    kernel.__name__, kernel.__doc__ = getattr(forward, "__name__", "kernel"), forward.__doc__
    kernel.__wrapped__ = forward   # its signature (the names grad_fn._saved_* shows) is the forward's
    return kernel
