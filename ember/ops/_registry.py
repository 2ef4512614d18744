"""The one registration point of the op table.

A family file declares each public op once, with the names PyTorch gives it::

    @register(method=True, inplace=...)          # ember.exp and Tensor.exp
    def exp(input): ...

From these declarations come ember's module-level exports (``EXPORTS``), the Tensor methods and
operators (``METHODS``), the differentiable namespace derivative rules run on (``GRAPH``, copied into
``graph_ns``) and the op database's coverage list. Nothing else needs editing to add an op.
"""
from __future__ import annotations

from typing import Callable

EXPORTS: dict[str, Callable] = {}   # ember.<name>
SUBMODULES: dict[str, dict[str, Callable]] = {"linalg": {}, "special": {}, "nn.functional": {}}   # ember.linalg.<name>, ...
METHODS: dict[str, Callable] = {}   # Tensor.<name>, operators included
GRAPH: dict[str, Callable] = {}     # graph_ns.<name>: what rules call as xp.<name> under create_graph


def _put(table: dict, name: str, fn: Callable) -> None:
    if name in table and table[name] is not fn:
        raise AssertionError(f"ember: {name!r} is registered twice ({table[name]!r} and {fn!r})")
    table[name] = fn


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
            _put(EXPORTS, n, f)
            for a in aliases:
                _put(EXPORTS, a, f)
        if method:
            _put(METHODS, n if method is True else method, f)
            for a in (aliases if method_aliases is None else method_aliases):
                _put(METHODS, a, f)
        if graph:
            _put(GRAPH, n if graph is True else graph, f)
        if submodule is not None:
            _put(SUBMODULES[submodule], submodule_name or n, f)
        return f
    return deco if fn is None else deco(fn)


def method(name: str, fn: Callable | None = None):
    """A Tensor method or operator with no module-level function of its own (``__radd__``); also usable
    as a decorator ``@method(name)``."""
    if fn is None:
        return lambda f: method(name, f)
    _put(METHODS, name, fn)
    return fn


def graph(name: str, fn: Callable | None = None):
    """A function that only derivative rules use (``xp.index_put_zeros``), differentiable; also usable
    as a decorator ``@graph(name)``."""
    if fn is None:
        return lambda f: graph(name, f)
    _put(GRAPH, name, fn)
    return fn
