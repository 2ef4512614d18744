"""A module's graph for TensorBoard's graph plugin, built from ember's own autograd graph of one forward call.

PyTorch traces the module with TorchScript; ember has no TorchScript, so it runs the forward once (in eval mode,
with the floating-point inputs as fresh leaves that require grad, so that every op on them is recorded) and reads
the autograd graph back: each node made during the call is one op node, named by PyTorch's ATen op name
(``AddmmBackward0`` -> ``aten::addmm``), scoped by the module whose forward made it as PyTorch scopes it
(``Net/Linear[fc1]/3``); parameters are ``prim::GetAttr`` nodes in their module's scope, scalar arguments
``prim::Constant`` nodes, inputs and outputs ``IO Node``s (``input/x``, ``output/output.1``).
Ops on tensors that need no gradient (integer indices, buffers) are not recorded, so they are not shown.
"""
from __future__ import annotations

import contextlib
import inspect
import re
from typing import Any

from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ..._tensor import Tensor
from ...autograd import enable_grad
from ...autograd.graph import NODE_OBSERVERS
from ._proto_graph import node_proto

__all__ = ["graph"]

_ATEN = re.compile(r"Backward\d+$")      # an ATen op's node: AddmmBackward0
_PYTHON_OP = re.compile(r"Backward$")   # a custom autograd.Function's node: MyFnBackward


def _op_kind(node: Any) -> str:
    """PyTorch's op name for the forward op that made ``node``."""
    name = type(node).__name__ if not callable(getattr(node, "name", None)) else node.name()
    if _ATEN.search(name):
        camel = re.sub(r"(\d)D", r"\1d", _ATEN.sub("", name))   # MaxPool2DWithIndices -> max_pool2d_with_indices
        return "aten::" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", camel).lower()
    if _PYTHON_OP.search(type(node).__name__):
        return "prim::PythonOp"
    return name


def _attributes(params: dict) -> str:
    """The node's arguments as the graph plugin shows them (PyTorch replaces quotes: they upset TensorBoard)."""
    return str({k: v for k, v in params.items()}).replace("'", " ") if params else "{}"


class _Recorder:
    """Module scopes by forward (pre-)hooks; each op node made during the call with its scope and output shapes
    (through autograd.graph.NODE_OBSERVERS, the recorder's hook that ember.viz uses too)."""

    def __init__(self, model: Any) -> None:
        self.root = type(model).__name__
        self.scopes: dict[int, str] = {}
        self.params: dict[int, tuple[str, str]] = {}   # id(parameter) -> (module scope, attribute name)
        by_name: dict[str, str] = {}
        modules = list(model.named_modules()) if hasattr(model, "named_modules") else []
        for qual, m in modules:
            if id(m) in self.scopes:
                continue
            scope = self.root if not qual else \
                f"{by_name[qual.rpartition('.')[0]]}/{type(m).__name__}[{qual.rpartition('.')[2]}]"
            by_name[qual] = self.scopes[id(m)] = scope
            for pname, p in m.named_parameters(recurse=False):
                self.params.setdefault(id(p), (scope, pname))
        self.modules = [m for _, m in modules]
        self.stack = [self.root]
        self.nodes: dict[int, tuple[Any, str, list]] = {}   # id(node) -> (node, scope, output shapes)
        self.handles: list = []

    def observe(self, node: Any, out: Any) -> None:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        shapes = [None if o is None else [int(s) for s in o.shape] for o in outs]
        self.nodes[id(node)] = (node, self.stack[-1], shapes)

    def _leave(self, module: Any, args: Any, out: Any) -> None:
        self.stack.pop()   # (a hook's return value would replace the module's output: return None)

    def __enter__(self) -> "_Recorder":
        for m in self.modules:
            scope = self.scopes[id(m)]
            self.handles.append(m.register_forward_pre_hook(lambda mod, args, s=scope: self.stack.append(s)))
            self.handles.append(m.register_forward_hook(self._leave))
        NODE_OBSERVERS.append(self.observe)
        return self

    def __exit__(self, *exc) -> None:
        NODE_OBSERVERS.remove(self.observe)
        for h in self.handles:
            h.remove()


def _input_names(model: Any, n: int) -> list[str]:
    """The forward's parameter names, as TorchScript names the graph's inputs."""
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"input.{i + 1}" for i in range(len(names), n)]


def _flat_outputs(out: Any) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_outputs(o)]
    return []


def _build(rec: _Recorder, inputs: dict[int, tuple[str, Tensor]], outputs: list) -> list:
    """The GraphDef's nodes: inputs, then parameters and ops in the order the forward made them, then outputs."""
    io_nodes = [node_proto("input/" + name, op="IO Node", outputsize=list(t.shape))
                for name, t in inputs.values()]
    names: dict[int, str] = {}   # id(autograd node) -> its GraphDef name
    body: list = []
    count = iter(range(1 << 62))

    def leaf_name(acc: Any) -> str:
        var = acc.variable
        if id(acc) in names:
            return names[id(acc)]
        if id(var) in inputs:
            name = "input/" + inputs[id(var)][0]
        elif id(var) in rec.params:
            scope, pname = rec.params[id(var)]
            name = f"{scope}/{pname}"
            body.append(node_proto(name, op="prim::GetAttr", outputsize=list(var.shape),
                                   attributes=_attributes({"name": pname})))
        else:   # a tensor that requires grad but is neither an input nor a parameter
            name = f"{rec.root}/{next(count)}"
            body.append(node_proto(name, op="prim::Constant", outputsize=list(var.shape)))
        names[id(acc)] = name
        return name

    for node, scope, shapes in rec.nodes.values():   # observed in creation order: inputs come first
        ins = []
        for edge in getattr(node, "next_functions", ()) or ():
            fn = edge[0] if edge else None
            if fn is None:
                continue
            if hasattr(fn, "variable"):
                ins.append(leaf_name(fn))
            elif id(fn) in names:
                ins.append(names[id(fn)])
        for value in getattr(node, "_in", None) or ():   # scalar arguments (2 in x * 2), as TorchScript's constants
            if isinstance(value, (bool, int, float, complex)):
                const = f"{scope}/{next(count)}"
                body.append(node_proto(const, op="prim::Constant", outputsize=[],
                                       attributes=f"{{ value : {value}}}"))
                ins.append(const)
        name = f"{scope}/{next(count)}"
        names[id(node)] = name
        shape = next((s for s in shapes if s is not None), None)
        body.append(node_proto(name, op=_op_kind(node), input=ins, outputsize=shape,
                               attributes=_attributes(getattr(node, "_params", None) or {})))

    out_nodes = []
    for i, t in enumerate(outputs):
        fn = t.grad_fn
        if fn is not None and id(fn) in names:
            src = [names[id(fn)]]
        elif id(t) in inputs:
            src = ["input/" + inputs[id(t)][0]]
        else:
            src = []
        out_nodes.append(node_proto(f"output/output.{i + 1}", op="IO Node", input=src, outputsize=list(t.shape)))
    # only what the outputs depend on (nodes a view or in-place op replaced while recording are dropped)
    by_name = {n.name: n for n in body}
    keep: set = set()
    stack = [i for n in out_nodes for i in n.input]
    while stack:
        name = stack.pop()
        if name not in keep and name in by_name:
            keep.add(name)
            stack.extend(by_name[name].input)
    return io_nodes + out_nodes + [n for n in body if n.name in keep]


def graph(model: Any, args: Any, verbose: bool = False, use_strict_trace: bool = True) -> tuple:
    """The GraphDef of one forward call of ``model`` on ``args`` (a tensor or a tuple of them) and the run
    metadata PyTorch's ``add_graph`` writes with it. ``use_strict_trace`` is TorchScript's and has no effect."""
    if args is None:
        args = ()
    elif not isinstance(args, (tuple, list)):
        args = (args,)
    names = _input_names(model, len(args))
    inputs: dict[int, tuple[str, Tensor]] = {}
    call_args = []
    for name, a in zip(names, args):
        if isinstance(a, Tensor):
            a = a.detach()
            if a.dtype.is_floating_point or a.dtype.is_complex:
                a.requires_grad_(True)   # a leaf of its own: every op on it is recorded
            inputs[id(a)] = (name, a)
        call_args.append(a)
    with _set_model_to_eval(model), enable_grad(), _Recorder(model) as rec:
        out = model(*call_args)
    nodes = _build(rec, inputs, _flat_outputs(out))
    graph_def = GraphDef(node=nodes, versions=VersionDef(producer=22))   # PyTorch's producer version
    if verbose:
        print(graph_def)
    # PyTorch's run metadata: always the CPU device (what TensorBoard shows; it has no bearing on the run)
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return graph_def, stepstats


@contextlib.contextmanager
def _set_model_to_eval(model: Any):
    """Eval mode for the call (as PyTorch traces), the module's own mode restored after."""
    training = getattr(model, "training", None)
    if training is None:   # a plain function
        yield
        return
    model.train(False)
    try:
        yield
    finally:
        model.train(training)
