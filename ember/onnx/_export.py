"""torch.onnx.export for ember: trace one forward call (``_trace``), translate each op (``_symbolic``), build the
ModelProto with the ``onnx`` package (an optional extra, imported on first export).

The model runs a second time on inputs that differ: the elements in reverse order, floats scaled and shifted, one
more element along each dynamic axis (if other values take another path, the same values at the new sizes; with
neither, the first run serves). The two op sequences must agree; parameters of ops that change between them are the
sizes that follow the dynamic axes (reshape targets, slice bounds, ``arange`` ends), which the translations write as
ONNX's 0 / -1 / "to the end" or read from the graph's shapes (``Builder.size_of``); a constant or a parameter that
changes (a tensor made in ``forward`` from the input outside the recorded ops, an index computed from its values) is
an error naming the op that reads it.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
from typing import Any

from .. import _dtype as D
from .._device import backend_of
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd._primitive import observe_results
from . import _symbolic as S
from ._state import exporting as _exporting
from ._trace import CRef, Op, Tracer, VRef, flat_tensors
from .errors import OnnxExporterError, UnsupportedOperatorError

DEFAULT_OPSET = 18   # as PyTorch's default (dynamo) exporter
MIN_OPSET, MAX_OPSET = 17, 21   # LayerNormalization is opset 17


# ----- what is wrapped while tracing -----------------------------------------------------------------------------

# Tensor methods and operators recorded as one op (they make no graph node, or lose what ONNX needs)
_TENSOR_METHODS = {"__gt__": "gt", "__lt__": "lt", "__ge__": "ge", "__le__": "le", "__eq__": "eq", "__ne__": "ne",
                   "gt": "gt", "lt": "lt", "ge": "ge", "le": "le", "eq": "eq", "ne": "ne",
                   "greater": "gt", "less": "lt", "argmax": "argmax", "argmin": "argmin",
                   "logical_not": "logical_not", "logical_and": "logical_and", "logical_or": "logical_or",
                   "masked_fill": "masked_fill", "masked_fill_": "masked_fill_", "__or__": "bitwise_or",
                   "__and__": "bitwise_and", "__xor__": "bitwise_xor", "__invert__": "bitwise_not",
                   "bitwise_or": "bitwise_or", "bitwise_and": "bitwise_and", "bitwise_xor": "bitwise_xor",
                   "bitwise_not": "bitwise_not", "new_zeros": "new_zeros", "new_ones": "new_ones",
                   "new_full": "new_full", "new_empty": "new_empty", "max": "max", "min": "min", "topk": "topk",
                   "sort": "sort", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
                   "isposinf": "isposinf", "isneginf": "isneginf", "__setitem__": "setitem"}
# the same as torch.<name> functions (the user's namespace: ``sys.modules['ember']``, looked up while exporting,
# never imported from here)
_ROOT_FUNCTIONS = ("gt", "lt", "ge", "le", "eq", "ne", "greater", "less", "argmax", "argmin", "logical_not",
                   "logical_and", "logical_or", "masked_fill", "bitwise_or", "bitwise_and", "bitwise_xor",
                   "bitwise_not", "arange", "zeros_like", "ones_like", "full_like", "empty_like",
                   "max", "min", "topk", "sort", "isnan", "isinf", "isfinite", "isposinf", "isneginf",
                   "where")
_MODULE_CLASSES = ("LSTM", "GRU", "RNN")
_MISSING = object()


@contextlib.contextmanager
def _patched(tracer: Tracer):
    from ..nn import functional as F
    from ..nn.modules import pooling, rnn
    saved = []

    def put(owner, attr, value):
        saved.append((owner, attr, owner.__dict__.get(attr, _MISSING) if isinstance(owner, type)
                      else getattr(owner, attr)))
        setattr(owner, attr, value)

    wrapped_fns = {}
    for name in S.FUNCTIONS:
        fn = getattr(F, name, None)
        if fn is not None:
            wrapped_fns[id(fn)] = tracer.wrap("fn", name, fn)
            put(F, name, wrapped_fns[id(fn)])
    for cls in vars(pooling).values():   # pooling modules keep their function as a class attribute
        if isinstance(cls, type) and isinstance(cls.__dict__.get("_fn"), staticmethod):
            w = wrapped_fns.get(id(cls.__dict__["_fn"].__func__))
            if w is not None:
                put(cls, "_fn", staticmethod(w))
    for attr, name in _TENSOR_METHODS.items():
        orig = getattr(Tensor, attr, None)
        if orig is not None:
            put(Tensor, attr, tracer.wrap("fn", name, orig))
    from ..ops import creation
    root = sys.modules.get(__name__.split(".")[0])
    for owner in (root, creation):   # (layers call the creation module's functions by attribute)
        for name in _ROOT_FUNCTIONS if owner is not None else ():
            fn = getattr(owner, name, None)
            if fn is not None:
                put(owner, name, tracer.wrap("fn", _TENSOR_METHODS.get(name, name), fn))
    for cname in _MODULE_CLASSES:
        cls = getattr(rnn, cname)
        put(cls, "forward", tracer.wrap("module", cname, cls.forward, module_arg=True))
    try:
        yield
    finally:
        for owner, attr, old in reversed(saved):
            if old is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, old)


def _trace(model, args: tuple, kwargs: dict, named: dict) -> tuple[Tracer, Any, list]:
    """Run ``model(*args, **kwargs)`` once, recorded. ``named``: parameters and buffers (name -> tensor)."""
    tracer = Tracer()
    inputs = flat_tensors((args, kwargs))
    in_keys = [tracer.add_value(t) for t in inputs]
    for t in named.values():
        if id(t) not in tracer._vals:
            tracer.add_value(t)
    with grad_mode.no_grad(), _patched(tracer), observe_results(tracer.on_result):
        out = model(*args, **kwargs)
    outs = flat_tensors(out)
    out_refs = [tracer.ref(t, "output") for t in outs]
    return tracer, out, in_keys + [out_refs]


# ----- the graph builder ------------------------------------------------------------------------------------------

def _dtype(d) -> D.dtype:
    return getattr(D, d) if isinstance(d, str) else d


class Builder:
    """The ONNX nodes being written, with helpers for the translations."""

    def __init__(self, onnx, opset: int, tracer: Tracer, names: dict) -> None:
        self.onnx = onnx
        self.opset = opset
        self.tracer = tracer
        self.nodes: list = []
        self.names: dict[int, str] = dict(names)   # value key -> ONNX name
        self.producers: dict[int, "OpView"] = {}
        self._count = 0
        self._consts: dict = {}

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"/{hint}_{self._count}"

    def node(self, op_type: str, inputs: list, n: int = 1, **attrs):
        outs = [f"{self.fresh(op_type)}_output_{i}" for i in range(n)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), outs, name=outs[0].rsplit("_output", 1)[0],
                                                     **attrs))
        return outs[0] if n == 1 else outs

    def onnx_type(self, dtype) -> int:
        dt = _dtype(dtype)
        if dt is D.bfloat16:
            return self.onnx.TensorProto.BFLOAT16
        return self.onnx.helper.np_dtype_to_tensor_dtype(dt.np)

    def _constant(self, arr, key=None) -> str:
        if key is not None and key in self._consts:
            return self._consts[key]
        name = self.fresh("Constant") + "_output_0"
        self.nodes.append(self.onnx.helper.make_node(
            "Constant", [], [name], name=name.rsplit("_output", 1)[0],
            value=self.onnx.numpy_helper.from_array(arr)))
        if key is not None:
            self._consts[key] = name
        return name

    def _small(self, vals: list, dims: list, dtype, key) -> str:
        """A Constant from Python numbers (no array library: onnx.helper packs them)."""
        if key in self._consts:
            return self._consts[key]
        name = self.fresh("Constant") + "_output_0"
        t = self.onnx.helper.make_tensor(name + "_value", self.onnx_type(dtype), dims, vals)
        self.nodes.append(self.onnx.helper.make_node("Constant", [], [name], name=name.rsplit("_output", 1)[0],
                                                     value=t))
        self._consts[key] = name
        return name

    def scalar(self, value, dtype) -> str:
        dt = _dtype(dtype)
        if dt.is_floating_point:
            value = float(value)
        elif dt is D.bool:
            value = bool(value)
        else:
            value = int(value)
        return self._small([value], [], dt, ("s", value, str(dt)))

    def ints(self, values, scalar: bool = False) -> str:
        values = [int(v) for v in values]
        return self._small(values[:1] if scalar else values, [] if scalar else [len(values)], D.int64,
                           ("i", tuple(values), scalar))

    def const_full(self, shape, value, dtype) -> str:
        n = 1
        for s in shape:
            n *= int(s)
        dt = _dtype(dtype)
        return self._small([value] * n, list(shape), dt, ("full", tuple(shape), value, str(dt)))

    def const_array(self, arr, dtype=None) -> str:
        """A raw array parameter of a primitive (index arrays) as a Constant: its host copy."""
        host = backend_of(arr).to_numpy(arr)
        if dtype is not None:
            host = host.astype(_dtype(dtype).np)
        return self._constant(host)

    def const_tensor(self, t: Tensor) -> str:
        return self._constant(t.numpy(force=True))

    def param_name(self, t: Tensor) -> str:
        r = self.tracer.ref(t)
        return self.names[r.key] if isinstance(r, VRef) else self.const_tensor(r.tensor)

    def size_of(self, s1: int, s2: int) -> str | None:
        """A 1-element int64 tensor holding a size that is ``s1`` in the first trace and ``s2`` in the second:
        read from the latest value of the graph that has it along some axis (None when none has)."""
        t2 = self.tracer2
        for key in reversed(list(self.names)):
            sh1, sh2 = self.tracer.meta[key][0], t2.meta[key][0] if key in t2.meta else None
            if sh2 is None or len(sh1) != len(sh2):
                continue
            for ax, (a, c) in enumerate(zip(sh1, sh2)):
                if a == s1 and c == s2:
                    return self.node("Gather", [self.node("Shape", [self.names[key]]), self.ints([ax])], axis=0)
        return None

    def producer_of(self, ref) -> "OpView | None":
        return self.producers.get(ref.key) if isinstance(ref, VRef) else None


class OpView:
    """An op as a translation sees it."""

    def __init__(self, op: Op, b: Builder, op2: Op | None) -> None:
        self.op, self.b, self.op2 = op, b, op2
        self.name, self.kind, self.module = op.name, op.kind, op.module
        self.args, self.kwargs = op.args, op.kwargs
        self.dyn = op.dyn
        self.read_dyn: set = set()

    def p(self, key):
        return self.kwargs.get(key)

    def a(self, i: int, key: str, default=None):
        if i < len(self.args):
            return self.args[i]
        return self.kwargs.get(key, default)

    def dyn_a(self, i: int, key: str):
        """A function's argument (by position ``i`` or keyword ``key``) in the second trace, where it changed."""
        return self.dyn_p(i if i < len(self.args) else key)

    def dyn_p(self, key):
        self.read_dyn.add(key)
        return self.dyn.get("params", {}).get(key)

    def _meta(self, ref):
        if isinstance(ref, VRef):
            return self.b.tracer.meta[ref.key]
        if isinstance(ref, CRef):
            return tuple(ref.tensor.shape), ref.tensor.dtype
        return None, None

    def shape_in(self, i: int):
        return self._meta(self.args[i])[0]

    def dtype_in(self, i: int):
        return self._meta(self.args[i])[1]

    def shape_in2(self, i: int):
        if self.op2 is None:
            return None
        r = self.op2.args[i]
        if isinstance(r, VRef):
            return self.dyn["tracer2"].meta[r.key][0]
        return self.shape_in(i)

    def out_shape(self, k: int = 0):
        return self.b.tracer.meta[self.op.outs[k]][0]

    def out_dtype(self, k: int = 0):
        return self.b.tracer.meta[self.op.outs[k]][1]

    def common_dtype(self):
        dts = [self._meta(a)[1] for a in self.args if isinstance(a, (VRef, CRef))]
        floats = [d for d in dts if d.is_floating_point]
        if floats:
            return max(floats, key=lambda d: d.itemsize)
        if any(isinstance(a, float) for a in self.args):
            return D.float32
        return dts[0]

    def name_of(self, ref, dtype=None) -> str:
        b = self.b
        if isinstance(ref, VRef):
            name, have = b.names[ref.key], b.tracer.meta[ref.key][1]
        elif isinstance(ref, CRef):
            name, have = b.const_tensor(ref.tensor), ref.tensor.dtype
        elif hasattr(ref, "shape") and hasattr(ref, "dtype") and not isinstance(ref, Tensor):
            name, have = b.const_array(ref), D.from_numpy_dtype(ref.dtype)   # a raw array parameter: constant
        elif isinstance(ref, (bool, int, float)):
            return b.scalar(ref, dtype if dtype is not None else (
                D.bool if isinstance(ref, bool) else D.int64 if isinstance(ref, int) else D.float32))
        else:
            raise OnnxExporterError(f"ember.onnx.export: '{self.name}' reads {type(ref).__name__} where a tensor is "
                                    "expected")
        if dtype is not None and _dtype(dtype) is not have:
            name = b.node("Cast", [name], to=b.onnx_type(dtype))
        return name

    def x(self, i: int, dtype=None) -> str:
        return self.name_of(self.args[i], dtype)

    def unsupported(self) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(f"aten::{self.name}", self.b.opset, None)


def _translate(op: Op, b: Builder, op2: Op | None) -> list:
    table = {"prim": S.PRIMS, "fn": S.FUNCTIONS, "module": S.MODULES}[op.kind]
    fn = table.get(op.name)
    o = OpView(op, b, op2)
    if fn is None:
        raise o.unsupported()
    outs = fn(b, o)
    changed = set(op.dyn.get("params", {})) - o.read_dyn
    if changed:
        raise OnnxExporterError(
            f"ember.onnx.export: the argument(s) {sorted(changed)} of '{op.name}' depend on the input's values or "
            "on the dynamic axes; the exporter can only write them as constants.")
    if len(outs) != len(op.outs):
        raise OnnxExporterError(f"ember.onnx.export: '{op.name}' made {len(op.outs)} results, its translation "
                                f"{len(outs)}")
    for key, name in zip(op.outs, outs):
        b.names[key] = name
        b.producers[key] = o
    return outs


# ----- the second trace -----------------------------------------------------------------------------------------

def _same(a, b) -> bool:
    if isinstance(a, CRef) and isinstance(b, CRef):
        return _same_tensor(a.tensor, b.tensor)
    if isinstance(a, VRef) or isinstance(b, VRef):
        return isinstance(a, VRef) and isinstance(b, VRef)
    if hasattr(a, "shape") and hasattr(a, "tolist"):   # a raw array parameter (index arrays)
        return hasattr(b, "shape") and a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _same_tensor(x: Tensor, y: Tensor) -> bool:
    """Same shape, dtype and values (NaN equal to NaN)."""
    if tuple(x.shape) != tuple(y.shape) or x.dtype is not y.dtype:
        return False
    if x.equal(y):
        return True
    if not x.dtype.is_floating_point:
        return False
    return x.isnan().equal(y.isnan()) and x.nan_to_num(0.0).equal(y.nan_to_num(0.0))


def _compare_traces(t1: Tracer, t2: Tracer) -> None:
    if [(o.kind, o.name) for o in t1.ops] != [(o.kind, o.name) for o in t2.ops]:
        raise OnnxExporterError(
            "ember.onnx.export: the model runs other operations when the inputs' values or the dynamic axes' sizes "
            "change (control flow on values, or a number of ops that follows a size: a Python loop over x.size(0), "
            "unbind/split/chunk along a dynamic axis); it cannot be exported as one graph.")
    for o1, o2 in zip(t1.ops, t2.ops):
        o1.dyn = {"tracer2": t2, "op2": o2}
        for i, (a1, a2) in enumerate(zip(o1.args, o2.args)):
            for r1, r2 in zip(_flat_refs(a1), _flat_refs(a2)):
                if isinstance(r1, CRef) and not _same(r1, r2):
                    raise OnnxExporterError(
                        f"ember.onnx.export: input {i} of '{o1.name}' is a tensor made inside forward from the "
                        "input's values or sizes outside the recorded operations (torch.arange(x.size(0)), "
                        "x.new_zeros(...), a comparison through a function ember does not record); it would be "
                        "frozen as a constant. Make it from recorded tensor operations, or export without "
                        "dynamic_axes.")
        params = {k: v for k, v in o2.kwargs.items() if not _same(o1.kwargs.get(k), v)}
        params.update({i: a2 for i, (a1, a2) in enumerate(zip(o1.args, o2.args))
                       if not any(isinstance(r, (VRef, CRef)) for r in _flat_refs(a1)) and not _same(a1, a2)})
        if params:
            o1.dyn["params"] = params


def _flat_refs(a) -> list:
    if isinstance(a, (tuple, list)):
        return [r for x in a for r in _flat_refs(x)]
    return [a]


def _second_inputs(args: tuple, kwargs: dict, in_names: list, dyn: dict, perturb: bool = True) -> tuple:
    """The inputs of the second trace: one more element along each dynamic axis, the elements in reverse order (so
    an argmax moves), floats also scaled and shifted."""
    from ..ops import shape as SH
    i = [0]

    def change(t: Tensor) -> Tensor:
        name = in_names[i[0]]
        i[0] += 1
        for axis in sorted(dyn.get(name, {})):
            t = SH.cat([t, SH.narrow(t, axis, 0, 1)], axis)
        if perturb and t.ndim:
            t = SH.flip(t, list(range(t.ndim)))
        if perturb and t.dtype.is_floating_point:
            t = t * 0.75 + 0.125
        return t

    def walk(obj):
        if isinstance(obj, Tensor):
            return change(obj)
        if isinstance(obj, (tuple, list)):
            return type(obj)(walk(o) for o in obj)
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        return obj
    return walk(args), walk(kwargs)


# ----- export -----------------------------------------------------------------------------------------------------

def _dynamic_axes(spec, names: list) -> dict:
    """{value name: {axis: dim name}} from PyTorch's two forms (a dict per name, or a list of axes)."""
    out = {}
    for name, axes in (spec or {}).items():
        if name not in names:
            raise OnnxExporterError(f"ember.onnx.export: dynamic_axes names '{name}', which is not among the "
                                    f"input and output names {names}")
        if isinstance(axes, dict):
            out[name] = {int(a): str(n) for a, n in axes.items()}
        else:
            out[name] = {int(a): f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
    return out


def _input_names(model, args: tuple, kwargs: dict, given) -> list:
    n = len(flat_tensors((args, kwargs)))
    names = list(given or [])
    if len(names) > n:
        raise OnnxExporterError(f"ember.onnx.export: {len(names)} input names for {n} tensor inputs")
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
    auto = []
    for k, a in enumerate(args):
        base = params[k] if k < len(params) else f"input_{k}"
        cnt = len(flat_tensors(a))
        auto += [base] if cnt == 1 else [f"{base}_{j}" for j in range(cnt)]
    for k, v in kwargs.items():
        cnt = len(flat_tensors(v))
        auto += [k] if cnt == 1 else [f"{k}_{j}" for j in range(cnt)]
    return names + auto[len(names):]


def export_model(model, args, f=None, *, kwargs=None, input_names=None, output_names=None, opset_version=None,
                 dynamic_axes=None, export_params: bool = True, keep_initializers_as_inputs: bool = False,
                 training=None, operator_export_type=None, verbose=None):
    """Trace, translate and build; returns the ModelProto (and writes ``f`` when given)."""
    try:
        import onnx
    except ImportError:
        raise OnnxExporterError("ember.onnx.export needs the 'onnx' package (pip install onnx, or ember's 'onnx' "
                                "extra)") from None
    from ._types import OperatorExportTypes, TrainingMode
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxExporterError(f"ember.onnx.export writes opset versions {MIN_OPSET} to {MAX_OPSET}; got "
                                f"{opset_version}")
    if operator_export_type not in (None, OperatorExportTypes.ONNX):
        raise OnnxExporterError("ember.onnx.export writes standard ONNX operators only "
                                "(operator_export_type=OperatorExportTypes.ONNX)")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict) and not kwargs:   # PyTorch: a trailing dict holds keyword arguments
        args, kwargs = args[:-1], dict(args[-1])
    named = {}
    if hasattr(model, "named_parameters"):
        for n, p in model.named_parameters():
            named.setdefault(n, p)
        for n, t in model.named_buffers():
            named.setdefault(n, t)
    in_names = _input_names(model, args, kwargs, input_names)

    mode = TrainingMode.EVAL if training is None else training
    _exporting[0] = True
    try:
        with _mode(model, mode):
            if any(getattr(m, "training", False) for m in (model.modules() if hasattr(model, "modules") else ())):
                raise OnnxExporterError(
                    "ember.onnx.export writes inference graphs: export with training=TrainingMode.EVAL (the default), "
                    "or PRESERVE with the model in eval mode (dropout and batch statistics of training mode are not "
                    "exported)")
            tracer, out, keys = _trace(model, args, kwargs, named)
            out_refs = keys.pop()
            n_out = len(out_refs)
            out_names = list(output_names or [])
            if len(out_names) > n_out:
                raise OnnxExporterError(f"ember.onnx.export: {len(out_names)} output names for {n_out} outputs")
            out_names += ["output" if n_out == 1 else f"output_{k}" for k in range(len(out_names), n_out)]
            dyn = _dynamic_axes(dynamic_axes, in_names + out_names)
            # the second run: other values and sizes; where other values take another path (a mask compared
            # with a causal one), the same values at the new sizes; without dynamic axes, the first run itself
            for perturb in (True, False):
                if not perturb and not dyn:
                    tracer2, keys2, out_refs2 = tracer, keys, out_refs
                    break
                args2, kwargs2 = _second_inputs(args, kwargs, in_names, dyn, perturb)
                tracer2, _, keys2 = _trace(model, args2, kwargs2, named)
                out_refs2 = keys2.pop()
                if [(o.kind, o.name) for o in tracer.ops] == [(o.kind, o.name) for o in tracer2.ops]:
                    break
    finally:
        _exporting[0] = False
    _compare_traces(tracer, tracer2)
    for k, (r1, r2) in enumerate(zip(out_refs, out_refs2)):
        if isinstance(r1, CRef) and not _same(r1, r2):
            raise OnnxExporterError(
                f"ember.onnx.export: output {k} was computed from the input outside the recorded operations (an "
                "operation ember does not record); it would be frozen as a constant.")

    # names of the values that exist before any op: inputs, parameters, buffers
    names = {k: n for k, n in zip(keys, in_names)}
    param_key = {}
    for n, t in named.items():
        key = tracer._vals[id(t)][0]
        if key not in names:
            names[key] = n
            param_key[key] = t
    b = Builder(onnx, opset, tracer, names)
    b.tracer2 = tracer2
    for op, op2 in zip(tracer.ops, tracer2.ops):
        _translate(op, b, op2)

    # outputs: the producing node writes the output's name (or an Identity where a name is used twice, or the
    # output is an input or a parameter)
    outputs_info = []
    renames = {}
    used = set()
    # an output size that follows an input's dynamic axis (the same sizes in both traces) takes its name
    follow = {}
    for key, name in zip(keys, in_names):
        for axis, dim in dyn.get(name, {}).items():
            follow.setdefault((tracer.meta[key][0][axis], tracer2.meta[keys2[keys.index(key)]][0][axis]), dim)
    for k, (r, name) in enumerate(zip(out_refs, out_names)):
        src = b.names[r.key] if isinstance(r, VRef) else b.const_tensor(r.tensor)
        producer_is_node = isinstance(r, VRef) and r.key not in names
        if producer_is_node and src not in used and src not in renames:
            renames[src] = name
        else:
            b.nodes.append(onnx.helper.make_node("Identity", [renames.get(src, src)], [name],
                                                 name=f"/Identity_out_{k}"))
        used.add(src)
        shape, dtype = (tracer.meta[r.key] if isinstance(r, VRef) else (tuple(r.tensor.shape), r.tensor.dtype))
        r2 = out_refs2[k]
        shape2 = tracer2.meta[r2.key][0] if isinstance(r2, VRef) else tuple(r2.tensor.shape)
        outputs_info.append((name, dtype, _dims(shape, shape2, dyn.get(name, {}), name, follow)))
    for node in b.nodes:
        node.output[:] = [renames.get(o, o) for o in node.output]
        node.input[:] = [renames.get(i, i) for i in node.input]

    nodes, needed = _live_nodes(b.nodes, [n for n, _, _ in outputs_info])
    inputs_info = []
    for key, name in zip(keys, in_names):
        shape, dtype = tracer.meta[key]
        inputs_info.append((name, dtype, _dims(shape, shape, dyn.get(name, {}), name)))
    initializers, param_inputs = [], []
    for key, t in param_key.items():
        n = names[key]
        if n not in needed:
            continue
        if export_params:
            initializers.append(onnx.numpy_helper.from_array(t.detach().numpy(force=True), name=n))
        if not export_params or keep_initializers_as_inputs:
            param_inputs.append((n, t.dtype, list(t.shape)))

    def info(name, dtype, dims):
        return onnx.helper.make_tensor_value_info(name, b.onnx_type(dtype), dims)
    graph = onnx.helper.make_graph(
        nodes, "main_graph", [info(*i) for i in inputs_info] + [info(*i) for i in param_inputs],
        [info(*o) for o in outputs_info], initializer=initializers)
    proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="ember", producer_version=_version())
    # the IR version of the opset, as PyTorch writes (opset 17 -> IR 8): older runtimes read the file
    proto.ir_version = onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        if isinstance(f, (str, os.PathLike)):
            onnx.save_model(proto, os.fspath(f))
        else:
            f.write(proto.SerializeToString())
    return proto


def _dims(shape, shape2, named: dict, value: str, follow: dict | None = None) -> list:
    dims = []
    follow = follow or {}
    for i, s in enumerate(shape):
        if i in named:
            dims.append(named[i])
        elif shape2 is not None and i < len(shape2) and shape2[i] != s:
            dims.append(follow.get((s, shape2[i]), f"{value}_dim_{i}"))   # follows an input's dynamic axis
        else:
            dims.append(int(s))
    for i in named:
        if not -len(shape) <= i < len(shape):
            raise OnnxExporterError(f"ember.onnx.export: dynamic axis {i} of '{value}', which has {len(shape)} "
                                    "dimensions")
    return dims


def _live_nodes(nodes: list, outputs: list) -> tuple[list, set]:
    """The nodes the outputs need, in order (and every name they read)."""
    needed = set(outputs)
    keep = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    keep.reverse()
    return keep, needed


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("ember")
    except Exception:
        return "0"


@contextlib.contextmanager
def _mode(model, mode):
    from ._types import TrainingMode
    was = getattr(model, "training", None)
    if was is not None and mode != TrainingMode.PRESERVE:
        model.train(mode == TrainingMode.TRAINING)
    try:
        yield
    finally:
        if was is not None and mode != TrainingMode.PRESERVE:
            model.train(was)
