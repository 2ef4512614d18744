"""Argument type checks declared with the op, in PyTorch's schema vocabulary (native_functions.yaml).

A public op says what its arguments are once, beside its declaration::

    @register(method=True, graph=True)
    @schema("cumsum(Tensor input, int dim, *, ScalarType? dtype)")
    def cumsum(input, dim, *, dtype=None): ...     # the body trusts the types

``schema`` generates, once at import, a checking wrapper with exactly the function's Python signature
(names, defaults, keyword-only ones: Python's own binding errors and ``inspect.signature`` stay the
function's). Each declared argument costs one inline test (``type(dim) is int`` first, the slower
accepted forms after it); a wrong one raises PyTorch's TypeError:

    cumsum(): argument 'dim' (position 2) must be int, not str

PyTorch names the position of an argument given by position, none for one given by keyword. A wrapper with
the exact signature cannot see which it was, so the message takes a required argument as given by position
and one with a default as given by keyword, as calls mostly give them (``cumsum(x, "a")``,
``x.sum(keepdim="a")``); keyword-only arguments never have one. For the ops PyTorch's parser reads, the
registry's wrapper (``_registry._argument_errors``), which sees the call, puts the exact one. Tensor
methods count positions after ``self`` (``x.atan2(1)``: position 1): ``schema`` also generates the checks
with that numbering, which the registry installs as the method (``fn._ember_method``).

An op with ``*args`` (``reshape(*shape)``, ``flip(*dims)``) keeps its explicit check: a wrapper would forward
the tuple again, which costs more than the check.

Only types belong here; values (a dim out of range, shapes that do not broadcast) stay in the body. Types (what
each accepts is what ember's bodies accept, so declaring one refuses nothing that passed):

    Tensor        a Tensor                           Scalar        bool, int, float, a NumPy scalar
    int           int (no bool), a NumPy integer,    float         int or float (no bool), a NumPy one
                  a 0-d integer Tensor
    int[]         a tuple or list (torch.Size)       int[1]        int[] or an int
    bool          bool (PyTorch refuses numpy.bool_) str           str
    ScalarType    a torch.dtype                      Tensor[]      a tuple or list
    T?            T or None                          name          (no type) not checked: the body reads it
"""
from __future__ import annotations

import functools
import inspect
import linecache
import os
import re
import types
from typing import Callable

from .._dtype import dtype as _dtype
from .._tensor import Tensor

# type -> (the word in PyTorch's message, the inline test of a value ``{v}`` with its fast form first)
_TYPES: dict[str, tuple[str, str]] = {
    "Tensor": ("Tensor", "isinstance({v}, Tensor)"),
    "Scalar": ("Number", "type({v}) in _NUMBERS or _is_scalar({v})"),
    "int": ("int", "type({v}) is int or _is_int({v})"),
    "float": ("float", "type({v}) is float or _is_real({v})"),
    "int[]": ("tuple of ints", "isinstance({v}, (tuple, list))"),
    "int[1]": ("tuple of ints", "isinstance({v}, (tuple, list)) or type({v}) is int or _is_int({v})"),
    "bool": ("bool", "type({v}) is bool"),
    "str": ("str", "type({v}) is str"),
    "ScalarType": ("torch.dtype", "type({v}) is _dtype"),
    "Tensor[]": ("tuple of Tensors", "isinstance({v}, (tuple, list))"),
}
_NUMBERS = (bool, int, float, complex)


def _item(v):
    """An array library's scalar (``np.int64(3)``: has ``.item()`` but no length) as its Python number."""
    return v.item() if hasattr(v, "item") and not hasattr(v, "__len__") else v


def _is_scalar(v) -> bool:
    return type(_item(v)) in _NUMBERS


def _is_int(v) -> bool:
    if isinstance(v, Tensor):   # a 0-d integer tensor, as PyTorch's parser takes it (the body reads it)
        return v._data.ndim == 0 and v._data.dtype.kind in "iu"
    v = _item(v)
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v) -> bool:
    v = _item(v)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_NAMESPACE = {"Tensor": Tensor, "_dtype": _dtype, "_NUMBERS": _NUMBERS, "_is_scalar": _is_scalar,
              "_is_int": _is_int, "_is_real": _is_real}
_ACCEPTS = {t: eval("lambda _v: " + test.format(v="_v"), _NAMESPACE) for t, (_, test) in _TYPES.items()}


class Schema:
    """One op's parsed schema: its name in messages and, per parameter, (name, type or None, keyword-only)."""
    __slots__ = ("op", "params", "required")

    def __init__(self, text: str):
        m = re.fullmatch(r"\s*([\w.]+)\((.*)\)\s*", text, re.S)
        if m is None:
            raise ValueError(f"schema: cannot read {text!r}; write it as 'name(Type arg, ..., *, Type arg)'")
        self.op, self.params, self.required, kw_only = m.group(1), [], (), False
        for part in (p.strip() for p in m.group(2).split(",") if p.strip()):
            if part == "*":
                kw_only = True
                continue
            typ, _, name = part.rpartition(" ")
            base = typ[:-1] if typ.endswith("?") else typ
            if typ and base not in _TYPES:
                raise ValueError(f"schema {self.op}: unknown type {typ!r} (known: {', '.join(_TYPES)}, each with ?)")
            self.params.append((name.lstrip("*"), typ or None, kw_only or name.startswith("*")))
            kw_only = kw_only or name.startswith("*")      # after ``*args``, keyword-only

    def message(self, i: int, value, method: bool, positional: bool | None = None) -> str:
        """PyTorch's TypeError for parameter ``i`` given ``value`` (``positional``: whether the call gave it by
        position; None: not known, then as the module's docstring says)."""
        from ._registry import _typename

        name, typ, kw_only = self.params[i]
        positional = self.required[i] if positional is None else positional
        # a method's self is no argument of PyTorch's (Tensor.t_(1) is Python's error there): no position
        pos = f" (position {i + (0 if method else 1)})" if positional and not kw_only and (i or not method) else ""
        return f"{self.op}(): argument '{name}'{pos} must be {_TYPES[typ.rstrip('?')][0]}, not {_typename(value)}"


def _error(spec: Schema, i: int, value, method: bool) -> TypeError:
    e = TypeError(spec.message(i, value, method))
    # PyTorch's already, and no binding error of the call (the registry's wrapper only refines the position)
    e._ember_argument_error = True
    e._ember_schema = (spec, i, value)
    return e


def _generate(fn: Callable, sig: inspect.Signature, spec: Schema, method: bool) -> Callable:
    names = [p.name for p in sig.parameters.values()]
    # PyTorch's name of a Tensor method's self is input (torch.exp_(input)): a schema may say so
    if len(names) != len(spec.params) or any(s != n and (s, n) != ("input", "self")
                                             for (s, _, _), n in zip(spec.params, names)):
        raise ValueError(f"schema {spec.op}: names {[p[0] for p in spec.params]} are not {fn.__qualname__}'s {names}")
    for (name, _, kw_only), p in zip(spec.params, sig.parameters.values()):
        if kw_only != (p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)):
            raise ValueError(f"schema {spec.op}: '{name}' is keyword-only in one of schema and function only")
    spec.required = tuple(p.default is p.empty for p in sig.parameters.values())
    params, call, checks, defaults = [], [], [], {}
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not any(q.startswith("*") for q in params):
            params.append("*")
        text = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name
        if p.default is not p.empty:
            defaults[f"_d_{p.name}"] = p.default
            text += f"=_d_{p.name}"
        params.append(text)
        call.append(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else
                    ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name)
    if any(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values()):
        raise ValueError(f"schema {spec.op}: positional-only parameters are not supported")
    for i, ((_, typ, _), p) in enumerate(zip(spec.params, sig.parameters.values())):
        if typ is None:
            continue
        name = p.name
        test = _TYPES[typ.rstrip("?")][1].format(v=name)
        cond = f"{name} is not None and not ({test})" if typ.endswith("?") else f"not ({test})"
        if p.default is not p.empty and not (typ.endswith("?") and p.default is None) and \
                not _ACCEPTS[typ.rstrip("?")](p.default):
            cond = f"{name} is not _d_{name} and {cond}"    # a sentinel default (``dim=_NO_DIM``) is no error
        checks.append(f"    if {cond}:\n        raise _error(_spec, {i}, {name}, _method)")
    src = (f"def _f({', '.join(params)}):\n" + "\n".join(checks) + f"\n    return _body({', '.join(call)})\n")
    # a file name inside the package, so that ember/_origin.py counts its frames as ember's (anomaly mode's
    # "modified at" line is the user's call, not the wrapper); linecache shows its source in tracebacks
    filename = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"<schema {spec.op}{' method' * method}>")
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    code = _CODE.get(src)
    if code is None:    # compiled once per distinct text (most ops share theirs: "(Tensor input)", ...)
        scratch = dict(defaults)
        exec(compile(src, "<schema>", "exec"), scratch)
        code = _CODE[src] = scratch["_f"].__code__
    code = code.replace(co_name=fn.__name__, co_filename=filename)
    w = types.FunctionType(code, dict(_NAMESPACE, _body=fn, _spec=spec, _error=_error, _method=method, **defaults), fn.__name__,
                           fn.__defaults__)
    w.__kwdefaults__ = fn.__kwdefaults__      # the function's own defaults: the same signature
    w = functools.update_wrapper(w, fn)       # name, qualname, docstring, __wrapped__ (the signature)
    w._ember_schema = spec
    return w


_CODE: dict[str, types.CodeType] = {}


def method_variant(fn: Callable, method_fn: Callable) -> Callable:
    """Record ``method_fn`` as what ``Tensor.<name>`` installs for ``fn`` (its checks number positions after
    ``self``). A wrapper put over a schema'd function (``functools.wraps`` copies the attribute) passes it
    on by wrapping the method variant too; the registry takes it only where it was made for that very
    function (``_ember_function``), so a wrapper that does not pass it on keeps the function's numbering."""
    fn._ember_method = method_fn
    method_fn._ember_function = fn
    return fn


def schema(text: str) -> Callable[[Callable], Callable]:
    """Declare the types of a public op's arguments (see the module's docstring); the decorated function
    checks them before its body runs. Goes under ``@register`` (and under wrappers that rename keywords,
    such as reduction's ``_np_aliases``)."""
    def deco(fn: Callable) -> Callable:
        spec = Schema(text)
        sig = inspect.signature(fn)
        return method_variant(_generate(fn, sig, spec, method=False), _generate(fn, sig, spec, method=True))
    return deco
