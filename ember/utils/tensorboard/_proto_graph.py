"""The graph plugin's ``NodeDef`` for one node of a module's graph (see _ember_graph.py)."""
from __future__ import annotations

from typing import Sequence

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto


def tensor_shape_proto(outputsize: Sequence[int]) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d) for d in outputsize])


def attr_value_proto(dtype: object, shape: Sequence[int] | None, s: str | None) -> dict[str, AttrValue]:
    """A node's attributes as the graph plugin reads them: its arguments as text under "attr", its output shape
    under "_output_shapes" (``dtype`` is not shown by the plugin and is ignored)."""
    attrs = {}
    if s is not None:
        attrs["attr"] = AttrValue(s=s.encode("utf_8"))
    if shape is not None:
        attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[tensor_shape_proto(shape)]))
    return attrs


def node_proto(name: str, op: str = "UnSpecified", input: list[str] | str | None = None,   # noqa: A002
               dtype: object = None, shape: tuple[int, ...] | None = None, outputsize: Sequence[int] | None = None,
               attributes: str = "") -> NodeDef:
    """One node: ``input`` names the nodes feeding it; ``outputsize`` is its output's shape (``shape`` is unused,
    as in PyTorch)."""
    inputs = [] if input is None else input if isinstance(input, list) else [input]
    return NodeDef(name=name.encode("utf_8"), op=op, input=inputs, attr=attr_value_proto(dtype, outputsize, attributes))
