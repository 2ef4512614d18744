"""torch.onnx: export a model to ONNX from ember's own record of one forward call.

``export(model, args, f, input_names=, output_names=, dynamic_axes=, opset_version=)`` runs ``model`` once under
a tracer (every primitive op, plus the functions and recurrent layers ONNX has one op for), translates the ops to
ONNX nodes and writes the model with the ``onnx`` package (an optional extra, imported on first export).
Parameters and buffers become initializers under their PyTorch names (``fc1.weight``); tensors made inside
``forward`` become constants. With ``dynamo=True`` (PyTorch's default) it returns an ``ONNXProgram``; with
``dynamo=False`` None, as PyTorch's TorchScript exporter. An op without a translation raises
``UnsupportedOperatorError`` naming it.
"""
from __future__ import annotations

import abc
import contextlib
import os
from typing import Callable, Collection, Mapping, Sequence

from . import errors
from ._types import JitScalarType, OperatorExportTypes, TensorProtoDataType, TrainingMode
from ._state import is_in_onnx_export
from .errors import OnnxExporterError
from ..nn.modules.module import Module

__all__ = ["export", "is_in_onnx_export", "ONNXProgram", "OnnxExporterError", "TrainingMode", "OperatorExportTypes",
           "TensorProtoDataType", "JitScalarType", "select_model_mode_for_export", "ExportableModule", "errors"]

producer_name = "pytorch"
producer_version = "2.13.0"


@contextlib.contextmanager
def select_model_mode_for_export(model, mode: TrainingMode):
    """Set the training mode of ``model`` to ``mode`` inside the block, restoring it on exit (deprecated in
    PyTorch: set the mode before exporting)."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a torch.onnx.TrainingMode enum, but got '{type(mode)}'.")
    was = getattr(model, "training", None)
    if was is not None:
        if mode == TrainingMode.TRAINING:
            model.train(True)
        elif mode == TrainingMode.EVAL:
            model.train(False)
    try:
        yield
    finally:
        if was is not None and mode != TrainingMode.PRESERVE:
            model.train(was)


class ExportableModule(Module, abc.ABC):
    """Abstract interface for ONNX exportable modules: implement ``example_arguments()`` (``(args, kwargs or
    None)``) and optionally ``dynamic_shapes()``, ``input_names()``, ``output_names()``; then ``to_onnx()`` or
    ``export(module)`` needs no arguments."""

    @abc.abstractmethod
    def example_arguments(self) -> tuple:
        """``(positional arguments, keyword arguments or None)`` for the forward."""
        raise NotImplementedError

    def dynamic_shapes(self):
        """Dynamic sizes: ``{input name: {axis: dim name}}`` or one such dict per positional input; None: static."""
        return None

    def input_names(self) -> Sequence[str] | None:
        return None

    def output_names(self) -> Sequence[str] | None:
        return None

    def to_onnx(self, **kwargs) -> "ONNXProgram":
        """``export(self, **kwargs)``."""
        result = export(self, **kwargs)
        if result is None:
            raise AssertionError("result must be non-None")
        return result


class ONNXProgram:
    """What ``export(..., dynamo=True)`` returns: the ONNX model (``model_proto``), which it can ``save`` and run
    with onnxruntime (``program(*inputs)``)."""

    def __init__(self, model_proto, exported_program=None) -> None:
        self._proto = model_proto
        self.exported_program = exported_program
        self._session = None

    @property
    def model_proto(self):
        """The ONNX ModelProto."""
        return self._proto

    @property
    def model(self):
        return self._proto

    def __repr__(self) -> str:
        import onnx
        return f"ONNXProgram(\n    model=\n{onnx.printer.to_text(self._proto.graph)}\n)"

    def save(self, destination: str | os.PathLike, *, include_initializers: bool = True,
             keep_initializers_as_inputs: bool = False, external_data: bool | None = None) -> None:
        """Write the model to ``destination`` (with its initializers unless ``include_initializers=False``)."""
        import onnx
        proto = self._proto
        if not include_initializers or keep_initializers_as_inputs:
            proto = onnx.ModelProto()
            proto.CopyFrom(self._proto)
            if keep_initializers_as_inputs:
                have = {i.name for i in proto.graph.input}
                proto.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                                         for t in proto.graph.initializer if t.name not in have)
            if not include_initializers:
                del proto.graph.initializer[:]
        onnx.save_model(proto, os.fspath(destination), save_as_external_data=bool(external_data))

    def optimize(self) -> None:
        """Nothing to do: ember writes the graph already folded."""

    def initialize_inference_session(self, initializer: Callable | None = None) -> None:
        """Start the onnxruntime session ``__call__`` uses."""
        if initializer is not None:
            self._session = initializer(self._proto.SerializeToString())
            return
        import onnxruntime
        self._session = onnxruntime.InferenceSession(self._proto.SerializeToString(),
                                                     providers=["CPUExecutionProvider"])

    def release(self) -> None:
        """Drop the onnxruntime session."""
        self._session = None

    def __call__(self, *args, **kwargs) -> list:
        """Run the model with onnxruntime on ember tensors; a list of ember tensors."""
        from ..ops.creation import from_numpy
        from ._trace import flat_tensors
        if self._session is None:
            self.initialize_inference_session()
        names = [i.name for i in self._session.get_inputs()]
        values = [t.detach().numpy(force=True) for t in flat_tensors((args, kwargs))]
        outs = self._session.run(None, dict(zip(names, values)))
        return [from_numpy(o) for o in outs]


def export(model, args: tuple = (), f: str | os.PathLike | None = None, *, kwargs: dict | None = None,
           verbose: bool | None = None, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None, opset_version: int | None = None, dynamo: bool = True,
           external_data: bool = True, dynamic_shapes=None, custom_translation_table=None, report: bool = False,
           optimize: bool = True, verify: bool = False, profile: bool = False, dump_exported_program: bool = False,
           artifacts_dir: str | os.PathLike = ".", export_params: bool = True,
           keep_initializers_as_inputs: bool = False,
           dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
           training: TrainingMode = TrainingMode.EVAL,
           operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
           do_constant_folding: bool = True, custom_opsets: Mapping[str, int] | None = None,
           export_modules_as_functions: bool | Collection[type] = False,
           autograd_inlining: bool = True) -> ONNXProgram | None:
    """Export ``model`` called on ``args`` (and ``kwargs``) to ONNX; write it to ``f`` when given.

    ``dynamic_axes`` ({name: {axis: dim name}} or {name: [axes]}) marks sizes that may change; reshapes whose
    target follows them are written with ONNX's 0 (copy) / -1 (infer). ``dynamic_shapes`` may give the same per
    forward argument ({argument name: {axis: dim name}}, or one dict per positional argument); torch.export's
    ``Dim`` objects are not built. Returns an ``ONNXProgram`` (``dynamo=True``, PyTorch's default) or None
    (``dynamo=False``). ``custom_translation_table``, ``custom_opsets`` and ``export_modules_as_functions`` are
    refused."""
    from ._export import export_model
    if custom_translation_table or custom_opsets or export_modules_as_functions:
        raise OnnxExporterError("ember.onnx.export: custom translations, custom opsets and modules as functions "
                                "are not supported")
    if isinstance(model, ExportableModule):
        if args is None or args == ():
            args, kw = model.example_arguments()
            kwargs = kwargs if kw is None else {**kw, **(kwargs or {})}
        input_names = input_names if input_names is not None else model.input_names()
        output_names = output_names if output_names is not None else model.output_names()
        dynamic_shapes = dynamic_shapes if dynamic_shapes is not None else model.dynamic_shapes()
    if dynamic_shapes is not None:
        if dynamic_axes is not None:
            raise OnnxExporterError("ember.onnx.export: give dynamic_shapes or dynamic_axes, not both")
        dynamic_axes = _axes_from_shapes(model, args, dynamic_shapes, input_names)
    proto = export_model(model, args, f, kwargs=kwargs, input_names=input_names, output_names=output_names,
                         opset_version=opset_version, dynamic_axes=dynamic_axes, export_params=export_params,
                         keep_initializers_as_inputs=keep_initializers_as_inputs, training=training,
                         operator_export_type=operator_export_type, verbose=verbose)
    return ONNXProgram(proto) if dynamo else None


def _axes_from_shapes(model, args, dynamic_shapes, input_names) -> dict:
    """dynamic_axes from the dynamic_shapes forms ember reads: {forward argument: {axis: name}} or a sequence with
    one entry (a dict, or None) per positional argument, each argument one tensor."""
    import inspect
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
    args = (args,) if not isinstance(args, (tuple, list)) else tuple(args)
    names = list(input_names or []) + params[len(input_names or []):]
    if isinstance(dynamic_shapes, dict):
        items = [(params.index(k) if k in params else None, k, v) for k, v in dynamic_shapes.items()]
    elif isinstance(dynamic_shapes, (tuple, list)):
        items = [(i, None, v) for i, v in enumerate(dynamic_shapes)]
    else:
        raise OnnxExporterError(f"ember.onnx.export: dynamic_shapes of type {type(dynamic_shapes).__name__} is not "
                                "supported")
    out = {}
    for i, key, spec in items:
        if spec is None:
            continue
        if i is None or i >= len(names):
            raise OnnxExporterError(f"ember.onnx.export: dynamic_shapes names {key!r}, not an argument of forward")
        if not isinstance(spec, dict) or not all(isinstance(v, str) for v in spec.values()):
            raise OnnxExporterError("ember.onnx.export: dynamic_shapes entries must be {axis: dim name} dicts "
                                    "(torch.export's Dim objects are not built)")
        out[names[i]] = {int(a): v for a, v in spec.items()}
    return out
