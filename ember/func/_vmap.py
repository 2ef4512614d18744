"""``vmap``: a function of one example mapped over a batch, by batching rules (ember/autograd/_batching.py)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .._tensor import Tensor
from ..autograd import _batching as B
from ..ops.public import cat, get_rng_state, set_rng_state
from ..utils._pytree import _broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _flat_in_dims(func, in_dims, args) -> tuple[list, list, Any]:
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         "trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = _broadcast_to_and_flatten(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for arg, d in zip(flat_args, flat_dims):
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                             "but in_dim must be either an integer dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                             f"but the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if d is not None and not -arg.dim() <= d < arg.dim():
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
    flat_dims = [d if d is None or d >= 0 else d + arg.dim() for arg, d in zip(flat_args, flat_dims)]
    return flat_args, flat_dims, spec


def _batch_size(flat_args, flat_dims) -> int:
    sizes = [a.size(d) for a, d in zip(flat_args, flat_dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} "
                         "for the mapped dimension")
    return sizes[0]


def _check_out_dims(func, out_dims) -> None:
    for d in tree_flatten(out_dims)[0] if not isinstance(out_dims, int) else ():
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             "python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _unbatch(func, out, level: int, size: int, out_dim):
    """An output of the vmapped function, its batch dim at ``out_dim`` (an unbatched one expanded)."""
    name = _name(func)
    if out_dim is None:
        if isinstance(out, Tensor) and B.batched_at(out, level):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. Did you mean "
                         "to set out_dims= to None for output?")
    out = B.diag_args(out, level)   # (a dual whose tangent alone is batched here: its examples' tangents as rows)
    if B.batched_at(out, level):
        chain, p = B.peel(out)
        inner = [c for c in chain if c[0] < level]
        bd = next(c[1] for c in chain if c[0] == level)
        outer = [c for c in chain if c[0] > level]
        if outer:   # (a level above ours survives only through an escaped tensor)
            raise RuntimeError("vmap: an output is batched at a level whose vmap has already returned")
        t = B.rewrap(p, inner)
        n = t.dim()   # logical rank at the levels below, our batch dim included
        od = out_dim + n if out_dim < 0 else out_dim
        return t.movedim(bd, od) if bd != od else t
    n = out.dim() + 1
    od = out_dim + n if out_dim < 0 else out_dim
    return out.unsqueeze(od).expand(*[size if i == od else -1 for i in range(n)])


def _flat_out_dims(func, out_dims, outs):
    flat, spec = tree_flatten(outs)
    if isinstance(outs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            dims = list(out_dims)
        else:
            dims = None
    else:
        dims = _broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with "
                         f"the structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {spec}.")
    return flat, dims, spec


def _run_once(func, flat_args, flat_dims, spec, size, out_dims, randomness, kwargs):
    frame = B.push(size, randomness)
    try:
        batched = [a if d is None else B.wrap(a, d, frame.level) for a, d in zip(flat_args, flat_dims)]
        outs = func(*tree_unflatten(batched, spec), **kwargs)
        flat, dims, out_spec = _flat_out_dims(func, out_dims, outs)
        return tree_unflatten([_unbatch(func, o, frame.level, size, d) for o, d in zip(flat, dims)], out_spec)
    except B.NeedsValues as e:   # a batched tensor's values were asked for outside any op: PyTorch's RuntimeError
        if B.FRAMES[0] is not frame:
            raise
        raise RuntimeError(str(e)) from None
    finally:
        B.pop(frame)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` of one example mapped over a batch: ``vmap(f)(xs)[i] == f(xs[i])``, computed by batching rules
    (one call of each op on the whole batch), to any depth of nesting and composed with grad, vjp, jvp."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if isinstance(chunk_size, float):   # (PyTorch's own error: it multiplies a list by it)
        raise TypeError("can't multiply sequence by non-int of type 'float'")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    _check_out_dims(func, out_dims)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        flat_args, flat_dims, spec = _flat_in_dims(func, in_dims, args)
        size = _batch_size(flat_args, flat_dims)
        if chunk_size is None or chunk_size >= size:
            return _run_once(func, flat_args, flat_dims, spec, size, out_dims, randomness, kwargs)
        # chunks of the batch, one vmap each, joined on each output's out_dim (PyTorch's chunk_size)
        bounds = list(range(chunk_size, size, chunk_size))
        pieces = [a.tensor_split(bounds, dim=d) if d is not None else [a] * (len(bounds) + 1)
                  for a, d in zip(flat_args, flat_dims)]
        outs = []
        rng = get_rng_state() if randomness == "same" else None
        for chunk in zip(*pieces):
            if rng is not None:   # randomness="same": every chunk draws the same numbers, as PyTorch's
                set_rng_state(rng)
            n = next(c.size(d) for c, d in zip(chunk, flat_dims) if d is not None)
            outs.append(_run_once(func, list(chunk), flat_dims, spec, n, out_dims, randomness, kwargs))
        _, dims, out_spec = _flat_out_dims(func, out_dims, outs[0])
        flats = [tree_flatten(o)[0] for o in outs]
        joined = [flats[0][i] if d is None else cat([f[i] for f in flats], d) for i, d in enumerate(dims)]
        return tree_unflatten(joined, out_spec)
    return wrapped

