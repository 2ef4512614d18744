"""vmap for the nn families' public functions whose wrappers read values (indices, targets, pooling windows):
whole-function batching rules, registered in ``_batching.PUBLIC_RULES`` by the family files.

Most of these ops take an (N, C, ...) input: the simplest correct rule folds the vmap batch into N (an input
(B, N, C, ...) runs as (B*N, C, ...), and the result is viewed back as (B, N, ...)); an example given without
N runs with the vmap batch as N. Losses run with ``reduction='none'`` on the folded batch and reduce each
example's part. A case a rule does not cover (a batched weight where one shared by the batch is needed, ranks
the op refuses) runs once per example with PyTorch's performance warning, as any public op whose wrapper needs
values does, so the op's own checks report bad input.

A rule sees the highest vmap level among its inputs; what it calls on the physical tensors goes through
``again``, which applies the rule at the next lower level still batched (nested vmap).
"""
from __future__ import annotations

import inspect

from .._tensor import Tensor
from ..autograd import _batching
from ..autograd._batching import BatchedTensor


def at(x, level: int) -> bool:
    """``x`` is a tensor mapped over at ``level`` (the highest level running in a rule: its outermost wrapper)."""
    return type(x) is BatchedTensor and x._level == level


def front(x: Tensor, level: int, size: int) -> Tensor:
    """The tensor of ``x`` at ``level`` with its batch dim first: the physical one, or ``x`` expanded over the
    batch (a view) when it is not mapped at ``level``."""
    if at(x, level):
        return _batching._moved(x._phys, x._bdim)
    return x.unsqueeze(0).expand((size,) + tuple(x.shape))


def fold(p: Tensor, has_n: bool) -> Tensor:
    """(B, N, ...) -> (B*N, ...) when the example has its own N; else (B, ...) as it is (B is N)."""
    if not has_n:
        return p
    s = tuple(p.shape)
    return p.reshape((s[0] * s[1],) + s[2:])


def unfold(out, size: int, has_n: bool, level: int):
    """``fold``'s inverse on a result (a tensor, or a tuple of them), wrapped at ``level`` (batch dim 0)."""
    if isinstance(out, tuple):
        made = [unfold(o, size, has_n, level) for o in out]
        return type(out)(*made) if hasattr(out, "_fields") else type(out)(made)
    if not isinstance(out, Tensor):
        return out
    if has_n:
        s = tuple(out.shape)
        out = out.reshape((size, s[0] // size if size else 0) + s[1:])
    return _batching.wrap(out, 0, level)


def again(orig, name: str, args, kwargs):
    """``orig`` on physical tensors: through its rule at the next level still mapped, else as it is."""
    found: list = []
    _batching._leaves(args, found)
    _batching._leaves(kwargs, found)
    if found:
        return _batching.PUBLIC_RULES[name](orig, tuple(args), dict(kwargs), max(t._level for t in found))
    return orig(*args, **kwargs)


def per_example(orig, name: str, args, kwargs, level: int):
    """The fallback: ``orig`` once per example at ``level``, with PyTorch's performance warning."""
    _batching.fallback_warning(name)
    rows = [again(orig, name, _batching._slice(tuple(args), level, b), _batching._slice(dict(kwargs), level, b))
            for b in range(_batching.frame_of(level).size)]
    return _batching._stack_results(rows, level)


_SIGNATURES: dict = {}
_ATEN = __name__.rsplit(".", 1)[0] + ".nn_aten"


def _signature(orig) -> inspect.Signature:
    sig = _SIGNATURES.get(orig.__code__)
    if sig is None:
        fn = orig
        # a decorator's forwarding wrapper (*args, **kwargs): the signature of the function it wraps
        while fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) and fn.__closure__:
            inner = [c.cell_contents for c in fn.__closure__ if inspect.isfunction(c.cell_contents)]
            if not inner:
                break
            fn = inner[0]
        sig = _SIGNATURES[orig.__code__] = inspect.signature(fn)
    return sig


def public_rule(body, *names: str) -> None:
    """Register ``body(orig, name, bound, level, size)`` as the vmap rule of the public functions ``names``:
    ``bound`` is the call's ``inspect.BoundArguments`` (defaults applied), to edit and run with ``again(orig,
    name, bound.args, bound.kwargs)``; the body returns the batched result, or NotImplemented for the
    per-example fallback."""
    def make(name):
        def rule(orig, args, kwargs, level):
            if orig.__globals__.get("__name__") == _ATEN:
                # ATen's spellings (torch.embedding, torch.binary_cross_entropy_with_logits, ...) convert their
                # arguments and call nn.functional's, whose rule batches them
                return orig(*args, **kwargs)
            try:
                bound = _signature(orig).bind(*args, **kwargs)
            except TypeError:   # the op's own argument error, from a per-example call
                return per_example(orig, name, args, kwargs, level)
            bound.apply_defaults()
            out = body(orig, name, bound, level, _batching.frame_of(level).size)
            if out is NotImplemented:
                return per_example(orig, name, args, kwargs, level)
            return out
        return rule
    for name in names:
        _batching.PUBLIC_RULES[name] = make(name)


def folding(has_n, tensors=("input",)):
    """A public rule for ops on (N, C, ...) inputs: ``has_n(name, bound, example_rank)`` says whether the
    example has its own N (True), has none (False), or that its rank is not the op's (None: per example, so the
    op reports it). The arguments ``tensors`` are folded alike; any other tensor mapped over: per example."""
    def body(orig, name, bound, level, size):
        a = bound.arguments
        names = [k for k in tensors if isinstance(a.get(k), Tensor)]
        if not names:
            return NotImplemented
        for k, v in a.items():
            if k not in names and (at(v, level) or (type(v) in (list, tuple) and any(at(x, level) for x in v))):
                return NotImplemented
        n = has_n(name, bound, a[names[0]].ndim)
        if n is None or any(a[k].ndim != a[names[0]].ndim for k in names):
            return NotImplemented
        for k in names:
            a[k] = fold(front(a[k], level, size), n)
        return unfold(again(orig, name, bound.args, bound.kwargs), size, n, level)
    return body


def spatial(d: int):
    """``has_n`` of a ``d``-dimensional spatial op: the example is (N, C, *d dims) or (C, *d dims)."""
    def has_n(name, bound, rank):
        return True if rank == d + 2 else False if rank == d + 1 else None
    return has_n


def fold_rule(plain_rank):
    """A primitive rule for one-input ops on (N, C, ...) (or (C, ...) when the example's rank is ``plain_rank``;
    None: the example always has N): the vmap batch folded into N and the result viewed back."""
    def rule(call, args, bdims, params, size):
        x = _batching._moved(args[0], bdims[0])
        s = tuple(x._data.shape)
        if plain_rank is not None and len(s) - 1 == plain_rank:
            return call([x] + list(args[1:]), params), 0
        out = call([x.reshape((size * s[1],) + s[2:])] + list(args[1:]), params)
        return out.reshape((size, s[1]) + tuple(out._data.shape[1:])), 0
    return rule
