"""torch.func's module helpers: ``functional_call`` (run a module with other parameters and buffers) and
``stack_module_state``."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]

_MISSING: Any = object()


def _swap_tensor(module, name: str, tensor):
    """Put ``tensor`` at ``module.name`` (in _parameters/_buffers as-is, bypassing the Parameter check, as
    PyTorch's NamedMemberAccessor does) and return what was there (_MISSING if nothing)."""
    prefix, _, attr = name.rpartition(".")
    mod = module.get_submodule(prefix)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for store in (mod._parameters, mod._buffers):
        if attr in store:
            orig = store[attr]
            if tensor is _MISSING:
                del store[attr]
            else:
                store[attr] = tensor
            return orig
    orig = getattr(mod, attr) if hasattr(mod, attr) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{attr}`: {orig} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(mod, attr, tensor)
    elif hasattr(mod, attr):
        delattr(mod, attr)
    return orig


def _untie(module, given: dict[str, Tensor]) -> dict[str, Tensor]:
    """Tied weights (one tensor under several names): a value given for one name goes to all of them."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    by_tensor: dict[int, set[str]] = {}
    for name, t in named.items():
        by_tensor.setdefault(id(t), set()).add(name)
    tied = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given_tied = [n for n in given if n in tied]
    for n in given_tied:
        names = tied[n]
        if len(names.intersection(given_tied)) > 1 and len({id(given[m]) for m in names if m in given}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
    out = dict(given)
    for n in given_tied:
        for m in tied[n]:
            out[m] = given[n]
    return out


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers: dict[str, Tensor], tie_weights: bool = False,
                          strict: bool = False):
    values = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                  "\n\t".join(msgs)))
    originals: dict[str, Any] = {}
    try:
        for name, t in values.items():
            originals[name] = _swap_tensor(module, name, t)
        yield
    finally:
        for name, t in reversed(list(originals.items())):
            _swap_tensor(module, name, t)


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the parameters and buffers named in ``parameter_and_buffer_dicts``
    (one dict, or a sequence of dicts with distinct keys) in place of the module's own; the module is left
    unchanged afterwards. Gradients flow to the tensors passed in."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, values, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def stack_module_state(models) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters and buffers of same-class models stacked along a new first dim (for vmap-style use)."""
    from ..ops.public import stack
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        all_rg = all(t.requires_grad for t in tensors)
        if not all_rg and any(t.requires_grad for t in tensors):
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = stack(tensors)
        return result.detach().requires_grad_() if all_rg else result

    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: stacked(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    buffers = {k: stacked(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers
