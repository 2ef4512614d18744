"""The one registration point of the op table.

A family file declares each public op once, with the names PyTorch gives it::

    @register(method=True, inplace=...)          # ember.exp and Tensor.exp
    def exp(input): ...

From these declarations come ember's module-level exports (``EXPORTS``), the Tensor methods and
operators (``METHODS``), the differentiable namespace derivative rules run on (``GRAPH``, copied into
``graph_ns``) and the op database's coverage list. Nothing else needs editing to add an op.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Callable

EXPORTS: dict[str, Callable] = {}   # ember.<name>
SUBMODULES: dict[str, dict[str, Callable]] = {"linalg": {}, "special": {}, "nn.functional": {}, "fft": {}}   # ember.linalg.<name>, ...
METHODS: dict[str, Callable] = {}   # Tensor.<name>, operators included
GRAPH: dict[str, Callable] = {}     # graph_ns.<name>: what rules call as xp.<name> under create_graph


def _put(table: dict, name: str, fn: Callable, public: str | None = None) -> None:
    """``table[name] = fn``; ``public``: the name users call it by ('sum', 'Tensor.sum', 'linalg.det'), for
    which ``fn`` gets PyTorch's argument errors (see ``_argument_errors``)."""
    if public is not None:
        if public.startswith("Tensor."):   # a schema's checks numbered for methods (ops/_schema.py)
            m = getattr(fn, "_ember_method", None)
            fn = m if m is not None and getattr(m, "_ember_function", None) is fn else fn
        fn = _argument_errors(fn, public)
    if name in table and table[name] is not fn:
        raise AssertionError(f"ember: {name!r} is registered twice ({table[name]!r} and {fn!r})")
    table[name] = fn


# ----- PyTorch's argument errors ------------------------------------------------------------------------
# A call that does not bind (an unknown keyword, too many or missing arguments) raises Python's TypeError
# in the caller's frame, before the op runs: "sum() got an unexpected keyword argument 'dims'". PyTorch
# says the same for most ops (under its own name), but for ops its argument parser reads it lists the
# signatures: "sum() received an invalid combination of arguments - got (dims=int, ), but expected one
# of: ...". So each public name gets, once, here:
# * ops PyTorch's parser reads (ops/_torch_signatures.py, generated from PyTorch): a wrapper that only
#   forwards; its try costs nothing until a TypeError is raised, and the message is built then;
# * ops whose function has another name (ember.subtract is sub, Tensor.clip is clamp): a copy of the
#   function under the public name (same code, closure and defaults), so Python's own message names it,
#   at no cost per call;
# * the rest: the function itself.
_PUBLIC: dict[tuple[int, str], Callable] = {}


def _argument_errors(fn: Callable, public: str) -> Callable:
    from ._torch_signatures import SIGNATURES

    short = public.rpartition(".")[2]
    if not inspect.isfunction(fn) or getattr(fn, "_ember_public", None) is not None or short.startswith("__"):
        return fn       # not a Python function, already done, or an operator (Python's syntax binds those)
    key = (id(fn), public)
    w = _PUBLIC.get(key)
    if w is not None:
        return w
    if public in SIGNATURES:
        def w(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except TypeError as e:
                if not _is_binding_error(e, fn):
                    if getattr(e, "_ember_schema", None) is not None:
                        _schema_position(e, fn, public, args)
                    raise
                err = _torch_argument_error(public, fn, args, kwargs, e)
                err._ember_argument_error = True
            raise err from None      # outside the except: no "during handling" chain

        functools.update_wrapper(w, fn)
    elif fn.__qualname__ != short or getattr(fn, "_ember_function", None) is not None:
        # (a schema's method variant, see _put, is copied too: pickle finds it in ember._tensor_methods)
        w = types.FunctionType(fn.__code__, fn.__globals__, short, fn.__defaults__, fn.__closure__)
        w.__kwdefaults__ = fn.__kwdefaults__
        functools.update_wrapper(w, fn)        # the docstring, attributes and __wrapped__ (for introspection)
    else:
        return fn
    w.__name__ = w.__qualname__ = short
    # where pickle finds it again by name: ember.<name>, ember.<submodule>.<name>, or for a Tensor method
    # ember._tensor_methods.<name> (Python's messages use the bare name, so Tensor.<name> cannot be it)
    if public.startswith("Tensor."):
        w.__module__ = _METHODS_MODULE.__name__
        setattr(_METHODS_MODULE, short, w)
    else:
        w.__module__ = "ember" + ("." + public.rpartition(".")[0] if "." in public else "")
    w._ember_public = public
    _PUBLIC[key] = w
    return w


_METHODS_MODULE = types.ModuleType("ember._tensor_methods", "Tensor methods with PyTorch's argument errors, by "
                                   "name: where pickle finds them (see ember/ops/_registry.py).")
sys.modules[_METHODS_MODULE.__name__] = _METHODS_MODULE


def _is_binding_error(e: TypeError, fn: Callable) -> bool:
    """``e`` was raised by the call to ``fn`` itself (or by a ``functools.wraps`` wrapper's call to the
    function it wraps) binding its arguments, not inside the op."""
    if getattr(e, "_ember_argument_error", False):     # already PyTorch's, from an op called inside
        return False
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    code, f = tb.tb_frame.f_code, fn
    while True:      # the innermost frame is ours or one of the wrappers the op is built from
        inner = getattr(f, "__wrapped__", None)
        if inner is None:
            return code is _WRAPPER_CODE
        if code is getattr(f, "__code__", None):
            return True
        f = inner


def _schema_position(e: TypeError, fn: Callable, public: str, args: tuple) -> None:
    """A schema's TypeError (ops/_schema.py) raised by ``fn``'s own checks for this call names the argument's
    position as PyTorch does: only where it was given by position, counted after ``self`` for a method."""
    spec, i, value = e._ember_schema
    tb, f = e.__traceback__.tb_next, fn
    while tb is not None and f is not None and tb.tb_frame.f_code is getattr(f, "__code__", None):
        if tb.tb_next is None:     # raised by f itself: f must be the schema's check of this op
            if getattr(f, "_ember_schema", None) is spec:
                e.args = (spec.message(i, value, public.startswith("Tensor."), i < len(args)),)
            return
        tb, f = tb.tb_next, getattr(f, "__wrapped__", None)


def _typename(v) -> str:
    """PyTorch's name for an argument's type in its messages."""
    from .._device import device
    from .._dtype import dtype
    from .._tensor import Size, Tensor

    if isinstance(v, Tensor):
        return type(v).__name__ if type(v).__name__ == "Parameter" else "Tensor"
    for cls, name in ((dtype, "torch.dtype"), (device, "torch.device"), (Size, "torch.Size")):
        if isinstance(v, cls):
            return name
    t = type(v)
    return t.__name__ if t.__module__ in ("builtins", "__main__") else f"{t.__module__.split('.')[0]}.{t.__name__}"


def _torch_argument_error(public: str, fn: Callable, args: tuple, kwargs: dict, e: TypeError) -> TypeError:
    from ._torch_signatures import SIGNATURES

    if public not in SIGNATURES:     # PyTorch's message is Python's: under the op's public name
        msg, own, short = str(e), f"{fn.__qualname__}()", public.rpartition(".")[2]
        return TypeError(f"{short}(){msg[len(own):]}" if msg.startswith(own) else msg)
    lacking = _lacking_keywords(public, fn, kwargs)
    if lacking:   # PyTorch takes it, ember does not (yet): say so rather than list signatures that name it
        return TypeError(f"{public.rpartition('.')[2]}(): ember does not support the argument "
                         f"{', '.join(repr(k) for k in lacking)} yet (PyTorch's {public} takes it)")
    return invalid_arguments(public, args[1:] if public.startswith("Tensor.") else args, kwargs)


def _lacking_keywords(public: str, fn: Callable, kwargs: dict) -> list[str]:
    """The keywords of a call that one of PyTorch's signatures of ``public`` names but ``fn`` does not take."""
    from ._torch_signatures import SIGNATURES

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    torch_names = {name for line in SIGNATURES[public].splitlines() if line.startswith(" * (")
                   for name, _, _ in _parse_signature(line[4:-1])}
    return [k for k in kwargs if k in torch_names and k not in params]


def invalid_arguments(public: str, args: tuple, kwargs: dict) -> TypeError:
    """PyTorch's TypeError for arguments none of its signatures of op ``public`` ('sum', 'Tensor.to')
    takes (``args`` without self): the one plausible signature's own error where PyTorch's parser finds
    one, else "received an invalid combination of arguments" with the signatures. Ops that read their
    arguments themselves (``Tensor.to``) raise it too."""
    from ._torch_signatures import SIGNATURES

    tail, short = SIGNATURES[public], public.rpartition(".")[2]
    # PyTorch's parser: where one signature alone takes this many arguments, that signature's own error
    sigs = [_parse_signature(line[4:-1]) for line in tail.splitlines() if line.startswith(" * (")]
    n = len(args) + len(kwargs)
    plausible = [p for p in sigs if sum(not opt for _, _, opt in p) <= n <= len(p)]
    if len(plausible) == 1:
        msg = _signature_error(short, plausible[0], args, kwargs)
        if msg is not None:
            return TypeError(msg)
    pos = [_typename(a) for a in args]
    kw = [f"{k}={_typename(v)}" for k, v in sorted(kwargs.items())]
    got = ", ".join(pos + kw) if pos else "".join(k + ", " for k in kw)
    return TypeError(f"{short}() received an invalid combination of arguments - got ({got}), but expected {tail}")


def _parse_signature(text: str) -> list[tuple[str, bool, bool]]:
    """(name, keyword-only, optional) for each parameter of a PyTorch signature line."""
    out, kw_only = [], False
    for part in text.split(", ") if text else []:
        if part == "*":
            kw_only = True
            continue
        decl, _, default = part.partition(" = ")
        out.append((decl.rsplit(" ", 1)[-1], kw_only, bool(default)))
    return out


def _signature_error(short: str, params: list, args: tuple, kwargs: dict) -> str | None:
    """PyTorch's message when ``args``/``kwargs`` fail to bind to its one plausible signature (the arguments'
    types are not checked here)."""
    positional = [p for p in params if not p[1]]
    if len(args) > len(positional):
        # PyTorch's extra_args: its min_args counts required keyword-only ones too ("takes from 1 to 0 ...")
        lo = sum(not opt for _, _, opt in params)
        hi = len(positional)
        takes = f"{hi} positional argument{'s' if hi != 1 else ''}" if lo == hi else \
            f"from {lo} to {hi} positional arguments"
        return f"{short}() takes {takes} but {len(args)} {'was' if len(args) == 1 else 'were'} given"
    names = {name for name, _, _ in params}
    for i, (name, kw_only, optional) in enumerate(params):
        given = (not kw_only and i < len(args)) or name in kwargs
        if not given and not optional:
            return f'{short}() missing 1 required positional arguments: "{name}"'
    for k in kwargs:
        if k not in names:
            return f"{short}() got an unexpected keyword argument '{k}'"
    return None


def _wrapper_code() -> object:
    from . import _torch_signatures

    _torch_signatures.SIGNATURES["_probe"] = ""
    try:
        return _argument_errors(lambda: None, "_probe").__code__
    finally:
        del _torch_signatures.SIGNATURES["_probe"]
        _PUBLIC.clear()


_WRAPPER_CODE = _wrapper_code()


def register(fn: Callable | None = None, *, name: str | None = None, module: bool = True,
             method: bool | str = False, aliases: tuple = (), method_aliases: tuple | None = None,
             graph: bool | str = False, submodule: str | None = None, submodule_name: str | None = None):
    """Declare a public op.

    ``name``: its name (default: the function's); ``module``: export it as ``ember.<name>``;
    ``method``: also ``Tensor.<name>`` (or the given method name); ``aliases``: further names for
    both (``absolute`` for ``abs``); ``method_aliases``: method-only names (defaults to ``aliases``);
    ``graph``: rules may call it as ``xp.<name>`` (or the given name) under ``create_graph``;
    ``submodule``: also ``ember.<submodule>.<submodule_name or name>`` (``ember.linalg.det``); with
    ``module=False`` only there.
    """
    def deco(f: Callable) -> Callable:
        n = name or f.__name__
        if module:
            _put(EXPORTS, n, f, n)
            for a in aliases:
                _put(EXPORTS, a, f, a)
        if method:
            m = n if method is True else method
            _put(METHODS, m, f, f"Tensor.{m}")
            for a in (aliases if method_aliases is None else method_aliases):
                _put(METHODS, a, f, f"Tensor.{a}")
        if graph:
            _put(GRAPH, n if graph is True else graph, f)
        if submodule is not None:
            sn = submodule_name or n
            _put(SUBMODULES[submodule], sn, f, f"{submodule}.{sn}")
        return f
    return deco if fn is None else deco(fn)


def method(name: str, fn: Callable | None = None):
    """A Tensor method or operator with no module-level function of its own (``__radd__``); also usable
    as a decorator ``@method(name)``."""
    if fn is None:
        return lambda f: method(name, f)
    _put(METHODS, name, fn, f"Tensor.{name}")
    return fn


def graph(name: str, fn: Callable | None = None):
    """A function that only derivative rules use (``xp.index_put_zeros``), differentiable; also usable
    as a decorator ``@graph(name)``."""
    if fn is None:
        return lambda f: graph(name, f)
    _put(GRAPH, name, fn)
    return fn


def graph_raw(*names: str) -> None:
    """The graph twins of raw kernels that are not differentiable (indices, counts, searches): each runs the
    device's kernel ``xp.<name>`` on its tensor arguments' data and makes tensors of the arrays it returns
    (in a tuple too), so that both namespaces export the name."""
    from .._tensor import Tensor, make
    from ..devices import NAMESPACES

    def wrap(r):
        if isinstance(r, tuple):
            return tuple(wrap(x) for x in r)
        return make(r) if type(r) in NAMESPACES else r

    def namespace(a):
        # Under vmap a batched tensor's data has no values (a Logical): the kernel runs on its device's namespace
        # with the per-example shape and dtype, so a kernel of metadata only (eye_like) gives the constant every
        # example shares, and one that reads values raises NeedsValues as any such read does.
        while isinstance(a, Tensor) and hasattr(a, "_phys"):
            a = a._phys
        return NAMESPACES.get(type(a._data if isinstance(a, Tensor) else a))

    def twin_of(name):
        def twin(*args, **kwargs):
            raw = [a._data if isinstance(a, Tensor) else a for a in args]
            xp = next(x for x in map(namespace, args) if x is not None)
            return wrap(getattr(xp, name)(*raw, **kwargs))
        twin.__name__ = twin.__qualname__ = name
        return twin

    for name in names:
        _put(GRAPH, name, twin_of(name))
