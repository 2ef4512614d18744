"""Helpers for vmap's public-op rules (``_batching.PUBLIC_RULES``) of the indexing, sorting and reduction families.

A public-op rule sees the op's arguments as the user passed them (batched tensors among them) and the highest vmap
level among them. The rules here run the op once on the physical tensors of that level, every batch dim first
(an input not batched there is expanded, no copy), with dims shifted by one, and wrap the result at that level.
They call the public function itself (not ``orig``), so that inputs batched at lower levels meet its rule again.
"""
from __future__ import annotations

import inspect

from .._tensor import Tensor, wrap_dim
from ..autograd import _batching
from ..autograd import grad_mode as _gm
from ..autograd._batching import BatchedTensor

INPLACE_UNBATCHED = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
                     "extra_args that has more elements than `self`. This happened due to `other` being vmapped over "
                     "but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead "
                     "of {op}. If said operator is being called inside the PyTorch framework, please file a bug "
                     "report instead.")


def batch_size(level: int) -> int:
    return _batching.frame_of(level).size


def is_batched(t, level: int) -> bool:
    """Whether ``t`` is a tensor mapped over at ``level``."""
    return type(t) is BatchedTensor and _batching.batched_at(t, level)


def front(t: Tensor, level: int) -> Tensor:
    """The physical tensor of ``t`` at ``level``, batch dim first (``t`` expanded when not batched there)."""
    if not _batching.batched_at(t, level):
        t = _batching.add_level(t, _batching.frame_of(level))
    return _batching._moved(t._phys, t._bdim)


def wrap_out(out, level: int):
    """A physical result (a tensor, or a tuple of them) with its batch dims first, seen at ``level``."""
    return _batching._wrap_all(out, level)


_SIGNATURES: dict = {}


def signature(fn) -> inspect.Signature:
    """``fn``'s signature, read once outside vmap (while vmap runs, a public function's code is its entry's)."""
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


def bind(fn, args, kwargs) -> dict | None:
    """``fn``'s parameters bound to ``args``/``kwargs`` (by name; defaults left out), or None when they do not
    bind (the op itself then raises its own error). ``fn``'s signature must have been read (``signature``)."""
    sig = _SIGNATURES[fn]
    try:
        return dict(sig.bind(*args, **kwargs).arguments)
    except TypeError:
        return None


def as_dim(dim, ndim: int) -> int | None:
    """``dim`` of an example of ``ndim`` dims wrapped to a non-negative dim (0 for a 0-d example), or None when
    it is not a valid one (the op then raises its own error)."""
    if type(dim) is not int:
        return None
    try:
        return wrap_dim(dim, ndim, "")
    except (IndexError, RuntimeError):
        return None


def unsqueeze_scalar(p: Tensor, example_ndim: int) -> Tensor:
    """A physical tensor whose examples are 0-d as (B, 1): the ops that read a 0-d tensor as size [1]."""
    return p.unsqueeze(-1) if example_ndim == 0 else p


def inplace_rule(out_of_place, op: str):
    """The rule of an in-place op ``op`` (self first) from its out-of-place public function: the result computed
    batched, then copied into self's examples. A self not batched where another input is: PyTorch's error."""
    def rule(orig, args, kwargs, level):
        self = args[0] if args else kwargs.get("self", kwargs.get("input"))
        if not isinstance(self, Tensor):
            return own(orig, args, kwargs, level)
        if not _batching.batched_at(self, level):
            raise RuntimeError(INPLACE_UNBATCHED.format(op=op))
        kwargs = dict(kwargs)
        if "self" in kwargs:
            kwargs["input"] = kwargs.pop("self")
        if _recording(args, kwargs):
            # The out-of-place op's node may save its input, the physical tensor that copy_ then writes: it gets
            # a snapshot of self instead (as PyTorch's in-place ops save the original self), so that backward,
            # forward-over-reverse (hessian) among them, finds the saved version unchanged.
            if args:
                args = (self.clone(),) + tuple(args[1:])
            else:
                kwargs["input"] = self.clone()
        result = out_of_place(*args, **kwargs)
        self.copy_(result)
        return self
    return rule


def _recording(args, kwargs) -> bool:
    """Whether autograd records an op on these arguments: grad mode on and some tensor's physical tensor (at the
    lowest level) requires grad."""
    if not _gm.is_grad_enabled():
        return False
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            a = _batching.peel(a)[1]
            if a._requires_grad:
                return True
    return False


def public_rule(fn, rule) -> None:
    """Register ``rule`` for the public op ``fn`` and its in-place form ``fn_``. The runner looks rules up by the
    public name with underscores stripped, so ``scatter_`` finds ``scatter``'s: the original function's own name
    (``orig.__name__``) tells them apart, and the in-place one runs ``inplace_rule``."""
    name = fn.__name__
    signature(fn)
    inplace = inplace_rule(fn, name + "_")

    def run(orig, args, kwargs, level):
        if orig.__name__ == name + "_":
            return inplace(orig, args, kwargs, level)
        return rule(orig, args, kwargs, level)
    _batching.PUBLIC_RULES[name.strip("_")] = run   # (any_ is the public any)


def dim_rule(fn, signature_of=None, default_dim=-1):
    """The rule of a one-tensor op along one ``dim`` (sort, topk, max(dim), cummax, ...): the op on the physical
    input with the dim shifted past the batch dim. ``default_dim`` None: without a dim the op is another
    (a reduction over every dim), which runs as it is (its primitive's rule). 0-d examples run as (B, 1)."""
    sig_fn = signature_of or fn
    names = list(signature(sig_fn).parameters)
    first = names[0]

    def rule(orig, args, kwargs, level):
        bound = bind(sig_fn, args, kwargs)
        if bound is None:
            return own(orig, args, kwargs, level)
        x = bound.get(first)
        key = "axis" if "axis" in bound and "dim" not in bound else "dim"
        dim = bound.get(key, default_dim)
        if not isinstance(x, Tensor) or not is_batched(x, level) or type(dim) is not int:
            return own(orig, args, kwargs, level)   # another overload (max(x), max(x, other)): its primitives batch
        nd = x._data.ndim
        d = as_dim(dim, nd)
        if d is None:
            return own(orig, args, kwargs, level)   # its own error
        call = {k: v for k, v in bound.items() if k not in (first, "dim", "axis")}
        out = fn(unsqueeze_scalar(front(x, level), nd), **call, **{key: d + 1})
        if nd == 0:   # the example's result is 0-d too
            size = batch_size(level)
            out = type(out)(*[o.reshape(size) for o in out]) if isinstance(out, tuple) else out.reshape(size)
        return wrap_out(out, level)
    return rule


def per_example(fn, args, kwargs, level: int):
    """The op once per example of ``level`` (PyTorch's fallback, with its warning), for forms a rule does not
    batch. ``fn``: the public function (inputs batched at lower levels meet its rule again)."""
    _batching.fallback_warning(fn.__name__.strip("_"))
    rows = [fn(*_batching._slice(args, level, b), **_batching._slice(kwargs, level, b))
            for b in range(batch_size(level))]
    return _batching._stack_results(rows, level)


def own(orig, args, kwargs, level: int):
    """The op as it is, for arguments a rule leaves to it (its own errors, another overload); if its wrapper then
    needs values of a batched input, once per example."""
    try:
        return orig(*args, **kwargs)
    except _batching.NeedsValues:
        return per_example(orig, args, kwargs, level)


def dims_public(fn, dims: tuple):
    """The rule of an op whose parameters ``dims`` name dims of its first tensor's example (slice_scatter, ...):
    every tensor argument batched (expanded where not), batch dim first, those dims (their defaults too) shifted
    by one."""
    sig = signature(fn)
    first = next(iter(sig.parameters))

    def rule(orig, args, kwargs, level):
        bound = bind(fn, args, kwargs)
        if bound is None or not isinstance(bound.get(first), Tensor):
            return own(orig, args, kwargs, level)
        nd = bound[first]._data.ndim
        new = {k: front(v, level) if isinstance(v, Tensor) else v for k, v in bound.items()}
        for name in dims:
            d = as_dim(bound.get(name, sig.parameters[name].default), nd)
            if d is None:
                return own(orig, args, kwargs, level)   # its own error
            new[name] = d + 1
        return wrap_out(fn(**new), level)
    return rule


def along_rule(call, args, bdims, params, size):
    """A primitive taking an example's raw ``indices`` array along ``dim`` (gather_along, take_along_dim's, ...;
    ``shape``: the example shape of a result made of zeros): the indices expanded over the batch (they came from
    an unbatched tensor), the dim and shape shifted past the batch dim. 0-d examples: once per example."""
    x, bd = args[0], bdims[0]
    shape = params.get("shape")
    nd = len(shape) if shape is not None else x._data.ndim - 1
    idx = params["indices"]
    if nd == 0 or getattr(idx, "ndim", 0) == 0:
        return _batching.loop(call, args, bdims, params, size)
    xp = _batching.NAMESPACES[type(idx)]
    new = dict(params)
    d = params["dim"]
    new["dim"] = (d + nd if d < 0 else d) + 1
    new["indices"] = xp.expand(xp.reshape(idx, (1,) + tuple(idx.shape)), (size,) + tuple(idx.shape))
    if shape is not None:
        new["shape"] = (size,) + tuple(shape)
    return call([_batching._moved(x, bd)], new), 0


def reduce_rule(fn):
    """The rule of a reduction computed from the values in its wrapper (any, all, argmax, argmin,
    count_nonzero): over the shifted ``dim`` (an int or a tuple), or, without one, over dim 1 of the flattened
    examples (argmax's index into the flattened example is the same). 0-d examples run as (B, 1)."""
    sig = signature(fn)
    first = next(iter(sig.parameters))
    has_keepdim = "keepdim" in sig.parameters

    def rule(orig, args, kwargs, level):
        bound = bind(fn, args, kwargs)
        x = None if bound is None else bound.get(first)
        dim = None if bound is None else bound.get("dim")
        if not is_batched(x, level) or not (dim is None or type(dim) is int or
                                            (isinstance(dim, (tuple, list)) and dim and
                                             all(type(d) is int for d in dim))):
            return own(orig, args, kwargs, level)
        nd = x._data.ndim
        size = batch_size(level)
        keepdim = bool(bound.get("keepdim", False))
        rest = {k: v for k, v in bound.items() if k not in (first, "dim", "keepdim")}
        if dim is None or nd == 0:
            if dim is not None and any(as_dim(d, nd) is None for d in (dim if isinstance(dim, (tuple, list))
                                                                        else (dim,))):
                return own(orig, args, kwargs, level)   # its own error
            out = fn(_batching.rows(front(x, level), size), dim=1, **rest, **({"keepdim": False} if has_keepdim else {}))
            if keepdim or nd == 0:
                out = out.reshape((size,) + ((1,) * nd if keepdim else ()))
            return wrap_out(out, level)
        dims = [as_dim(d, nd) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))]
        if any(d is None for d in dims):
            return own(orig, args, kwargs, level)   # its own error
        new = tuple(d + 1 for d in dims) if isinstance(dim, (tuple, list)) else dims[0] + 1
        out = fn(front(x, level), dim=new, **rest, **({"keepdim": keepdim} if has_keepdim else {}))
        return wrap_out(out, level)
    return rule


def elementwise_public(fn):
    """The rule of a non-differentiable elementwise op computed from the values in its wrapper (comparisons, the
    logical ops): the physical operands padded to one rank (batched ones (B, 1.., example), unbatched ones as
    they are) and, with two operands, cast first to the examples' common dtype (a 0-d operand promotes as one,
    not as its batch)."""
    from .._util import promote
    names = list(signature(fn).parameters)

    def rule(orig, args, kwargs, level):
        bound = bind(fn, args, kwargs)
        if bound is None or any(k not in names[:2] for k in bound):
            return own(orig, args, kwargs, level)
        vals = [bound[k] for k in names[:2] if k in bound]
        tensors = [v for v in vals if isinstance(v, Tensor)]
        if not tensors:
            return own(orig, args, kwargs, level)
        size = batch_size(level)
        rank = max(t._data.ndim for t in tensors)
        dt = promote(*vals) if len(vals) == 2 else None
        new = []
        for v in vals:
            if is_batched(v, level):
                v = _batching._front_and_pad(v._phys, v._bdim, rank, size)
            if dt is not None and isinstance(v, Tensor) and v.dtype != dt:
                v = v.to(dt)
            new.append(v)
        return wrap_out(fn(*new), level)
    return rule
