"""Recording one forward call as a list of ops, for the ONNX exporter.

ember runs eagerly: the tracer watches the call run. Three levels are recorded:
  * primitives: every op result ``apply`` makes (``autograd._primitive.observe_results``, which costs nothing when
    nobody observes);
  * functions whose primitives lose what ONNX needs (pooling computes its window indices outside the graph,
    embedding takes its indices as a parameter, comparisons make no graph node at all): the public function is
    wrapped while tracing (``FUNCTIONS``, ``METHODS``), and what runs inside it is not recorded;
  * modules ONNX has one op for (LSTM, GRU, RNN): the class's ``forward`` is wrapped the same way.
A tensor an op reads that the tracer did not see made (a ``zeros`` made in ``forward``, an ``arange``) is a constant
of the graph. Parameters, buffers and the inputs are registered before the call. An in-place op is followed: its
result becomes the tensor's new value (the version counter tells which op wrote it).
"""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from .errors import OnnxExporterError


# functions recorded even without tensor inputs: their numbers may be sizes read from the input (arange(x.size(1)))
SIZED = frozenset({"arange"})
# functions that write into their first argument and return None: it is their result
WRITES_INPUT = frozenset({"setitem"})


class VRef:
    """An op's tensor input that is a value of the graph (input, parameter, buffer or an op's result)."""
    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key


class CRef:
    """An op's tensor input that is a constant: its value now (a copy)."""
    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


class Op:
    """One recorded call: ``kind`` 'prim' (a primitive), 'fn' (a wrapped function) or 'module' (a wrapped
    module class's forward); ``args``/``kwargs`` with tensors as VRef/CRef; ``outs``: keys of its tensor results
    (flattened)."""
    __slots__ = ("kind", "name", "args", "kwargs", "outs", "module", "dyn")

    def __init__(self, kind, name, args, kwargs, outs, module=None) -> None:
        self.kind, self.name, self.args, self.kwargs, self.outs, self.module = kind, name, args, kwargs, outs, module
        self.dyn: dict = {}   # what changed in the second trace (other input sizes): {'params': {...}}

    def __repr__(self) -> str:
        return f"Op({self.kind}:{self.name})"


def flat_tensors(obj: Any) -> list:
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in flat_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in flat_tensors(o)]
    return []


class Tracer:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.meta: dict[int, tuple] = {}    # key -> (shape, dtype) of the value
        self._vals: dict[int, tuple] = {}   # id(tensor) -> (key, version)
        self._first: dict[int, tuple] = {}  # id(tensor) -> (its version, result key) of the last op reading it first
        self._keep: list = []               # the tensors seen (so their ids stay theirs)
        self._data: dict[int, int] = {}     # id(tensor._data) -> key: a primitive given a value's array as a
        #                                     parameter (where's condition, gather's index) reads that value
        self.depth = 0                      # > 0 inside a wrapped function or module: nothing recorded

    def add_value(self, t: Tensor) -> int:
        key = len(self.meta)
        self.meta[key] = (tuple(t.shape), t.dtype)
        self._vals[id(t)] = (key, t._vc[0])
        self._data[id(t._data)] = key
        self._keep.append(t)
        return key

    def ref(self, a: Any, op_name: str = "") -> Any:
        """What an op's argument is in the graph (tensors inside lists and tuples too)."""
        if isinstance(a, Tensor):
            e = self._vals.get(id(a))
            if e is None:
                return CRef(a.detach().clone())
            key, version = e
            if a._vc[0] == version:
                return VRef(key)
            f = self._first.get(id(a))
            if f is not None and f[0] == a._vc[0] - 1 and self.meta[f[1]][0] == tuple(a.shape) and \
                    f[2].dtype == a.dtype and f[2].equal(a):
                self._vals[id(a)] = (f[1], a._vc[0])   # written in place by that op's result (its values now)
                return VRef(f[1])
            raise OnnxExporterError(
                f"ember.onnx.export: a tensor read by '{op_name}' was modified in place by an operation the "
                "exporter cannot follow (an in-place write through a view, or an op outside the recorded graph). "
                "Write the computation out of place.")
        if isinstance(a, (tuple, list)) and any(isinstance(x, (Tensor, tuple, list)) for x in a):
            return type(a)(self.ref(x, op_name) for x in a)
        key = self._data.get(id(a))
        if key is not None and hasattr(a, "shape"):
            return VRef(key)
        return a

    def _record(self, kind, name, args, kwargs, out, module=None, refs=None) -> None:
        """Record one op; ``refs``: its arguments as taken before it ran (a function that writes into its input)."""
        self.depth += 1   # the copies of constants made here are no ops of the model
        try:
            rargs, rkw = refs if refs is not None else self.refs(name, args, kwargs)
            self._record_op(kind, name, args, rargs, rkw, out, module)
        finally:
            self.depth -= 1

    def refs(self, name, args, kwargs) -> tuple:
        return [self.ref(a, name) for a in args], {k: self.ref(v, name) for k, v in kwargs.items()}

    def _record_op(self, kind, name, args, rargs, rkw, out, module) -> None:
        def has_value(r):
            return isinstance(r, VRef) or isinstance(r, (tuple, list)) and any(has_value(x) for x in r)
        if not any(has_value(r) for r in rargs) and not any(has_value(r) for r in rkw.values()) and \
                module is None and name not in SIZED:
            return   # computed from constants only: its result is a constant too
        outs = [self.add_value(t) for t in flat_tensors(out)]
        self.ops.append(Op(kind, name, rargs, rkw, outs, module))
        if args and isinstance(args[0], Tensor) and outs and isinstance(out, Tensor):
            self._first[id(args[0])] = (args[0]._vc[0], outs[0], out)

    # the primitive observer (autograd._primitive.observe_results)
    def on_result(self, prim, args: tuple, params: dict, t: Tensor) -> None:
        if self.depth:
            return
        self._record("prim", prim.name, args, params, t)

    def wrap(self, kind: str, name: str, fn, module_arg: bool = False):
        """``fn`` recorded as one op while tracing (what runs inside it is not)."""
        tracer = self

        def wrapped(*args, **kwargs):
            if tracer.depth:
                return fn(*args, **kwargs)
            tracer.depth += 1
            try:
                own = args[1:] if module_arg else args
                refs = tracer.refs(name, own, kwargs)   # before it runs: it may write into an input
                out = fn(*args, **kwargs)
            finally:
                tracer.depth -= 1
            result = own[0] if name in WRITES_INPUT else out   # x[i] = v returns None: x is the result
            tracer._record(kind, name, own, kwargs, result, module=args[0] if module_arg else None, refs=refs)
            return out
        wrapped.__wrapped__ = fn
        return wrapped
