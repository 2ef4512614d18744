"""What the spatial nn.functional families share (convolution, pooling, padding and shuffles, resampling, grid
sampling): their registry submodule, PyTorch's int-tuple arguments, and the wording of PyTorch's messages."""
from __future__ import annotations

from .._device import NAMESPACES
from .._tensor import Tensor
from ..autograd.graph import node_class
from ..autograd._primitive import PrimNode
from ._registry import graph

_NN = "nn.functional"


def _node(name: str) -> type:
    """The node class PyTorch names ``name`` (made once)."""
    return node_class(name, PrimNode)


def _ntuple(v, d: int, name: str, op: str) -> tuple:
    """An int or a sequence of ``d`` ints (a 1-sequence repeats), as PyTorch's int[d] arguments."""
    if isinstance(v, bool) or v is None:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")
    if isinstance(v, int):
        return (v,) * d
    if isinstance(v, Tensor) and v.ndim == 0:
        return (int(v.item()),) * d
    try:
        vals = tuple(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not {type(v).__name__}") from None
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in vals):
        raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                        f"{type(next(i for i in vals if not isinstance(i, int) or isinstance(i, bool))).__name__}")
    if len(vals) == 1:
        return vals * d
    if len(vals) != d:
        raise RuntimeError(f"{op}(): argument '{name}' expected {d} ints, got {len(vals)}")
    return vals


def _size_str(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "bfloat16": "BFloat16",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _dtype_word(t: Tensor) -> str:
    """``t``'s dtype as ember names it ('float32', 'int64', ...)."""
    return str(t.dtype).rpartition(".")[2]


def _dtype_name(t: Tensor) -> str:
    """PyTorch's scalar type name of ``t`` ('Float', 'Long', ...)."""
    word = _dtype_word(t)
    return _TYPE_NAMES.get(word, word)



def _raw_twin(name: str):
    def twin(*args, **kwargs):
        raw = tuple(a._data if isinstance(a, Tensor) else a for a in args)
        arr = next(a for a in raw if type(a) in NAMESPACES)
        return getattr(NAMESPACES[type(arr)], name)(*raw, **kwargs)
    twin.__name__ = twin.__qualname__ = name
    return twin


def not_differentiable(*names: str) -> None:
    """graph_ns's twins of raw kernels that only the public functions call, on their inputs' data, before (or
    instead of) recording a primitive: window indices, weight matrices, the integer and uint8 paths. Nothing there
    is differentiated; the twin runs the device's raw kernel on the data of its Tensor arguments, so that both
    namespaces export the same names."""
    for name in names:
        graph(name, _raw_twin(name))
