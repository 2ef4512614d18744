"""An ONNX model file as a GraphDef for the graph plugin (``SummaryWriter.add_onnx_graph``; needs ``onnx``)."""
from __future__ import annotations

from itertools import chain
from typing import Any

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def load_onnx_graph(fname: str) -> GraphDef:
    import onnx
    return parse(onnx.load(fname).graph)


def parse(graph: Any) -> GraphDef:
    """The graph's inputs and outputs become "Variable" nodes (element type and shape as attributes); each op a
    node named after its first output, so that edges (by tensor name) connect the ops that make and use it."""
    nodes = []
    for value in chain(graph.input, graph.output):
        kind = value.type.tensor_type
        dims = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value) for d in kind.shape.dim])
        nodes.append(NodeDef(name=value.name.encode("utf_8"), op="Variable", input=[],
                             attr={"dtype": AttrValue(type=kind.elem_type), "shape": AttrValue(shape=dims)}))
    for op in graph.node:
        # each ONNX attribute as "name = value", the fields it sets joined
        described = ", ".join(" = ".join(str(field[1]) for field in a.ListFields()) for a in op.attribute)
        nodes.append(NodeDef(name=op.output[0].encode("utf_8"), op=op.op_type, input=op.input,
                             attr={"parameters": AttrValue(s=described.encode("utf_8"))}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))   # PyTorch's producer version
