"""Graph nodes: the backward functions (``grad_fn``) that tensors point to.

A ``Node`` knows its ``next_functions`` (one ``(node, input_nr)`` edge per differentiable input,
``(None, 0)`` for inputs that need no gradient) and how to map gradients of its outputs to
gradients of its inputs (``apply``). Leaves that require grad end in an ``AccumulateGrad`` node.
"""
from __future__ import annotations

import itertools
import threading
import weakref

from .. import _tensor
from .._device import backend_of
from .._dtype import type_word
from .._hooks import add_hook
from .anomaly_mode import _anomaly, record_stack, version_error_hint

_seq = itertools.count()

FREED = ("freed",)   # what a node's saved values become once backward has released them
FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class Node:
    """Base class of every backward node (``MulBackward0``, ``AccumulateGrad``, custom Functions)."""

    # Hooks and metadata are rare: they default to the class attributes below and land in the
    # instance __dict__ (created on first write only), so making a node sets just two slots.
    __slots__ = ("next_functions", "_seq", "__weakref__", "__dict__")

    num_outputs = 1
    accumulates = False   # see AccumulateGrad
    _hooks = _pre_hooks = _tensor_hooks = _retained = _metadata = None
    _qualified_name = None   # name() of the nodes PyTorch implements in C++ namespaces

    def __init__(self, next_functions: tuple = ()):
        self.next_functions = next_functions
        self._seq = next(_seq)

    def name(self) -> str:
        return self._qualified_name or type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads: list, create_graph: bool, needed) -> tuple:
        """Gradients for each of ``next_functions`` from the gradients of this node's outputs.

        ``grads`` holds raw arrays (plain backward) or Tensors (``create_graph``); ``needed`` is
        None (every input) or a tuple of flags telling which input gradients are wanted.
        """
        raise NotImplementedError

    def __call__(self, *grads):
        out = self.apply([g._data if isinstance(g, _tensor.Tensor) else g for g in grads], False, None)
        return tuple(None if g is None else _tensor.make(g) for g in out)

    # ----- hooks -------------------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        return add_hook(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return add_hook(self._pre_hooks, fn)

    def _register_tensor_hook(self, output_nr: int, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return add_hook(self._tensor_hooks.setdefault(output_nr, {}), fn)

    def _retain_grad(self, output_nr: int, tensor_ref) -> None:
        if self._retained is None:
            self._retained = {}
        self._retained[output_nr] = tensor_ref

    def _release(self) -> None:
        """Free saved values after a backward without retain_graph."""


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: adds incoming gradients into ``variable.grad``.

    An ordinary node to the engine: its apply accumulates, and the leaf's tensor hooks are its tensor
    hooks (PyTorch: tensor pre-hooks of the AccumulateGrad), so the engine runs them as any node's."""

    __slots__ = ("variable",)
    _qualified_name = "torch::autograd::AccumulateGrad"
    accumulates = True   # the engine runs it for a target only when backward accumulates (not in grad())

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    @property
    def _tensor_hooks(self):
        m = self.variable._meta
        return {0: m.hooks} if m is not None and m.hooks else None

    def apply(self, grads, create_graph, needed):
        g = grads[0]
        if g is not None:
            accumulate_grad(self.variable, g, create_graph)
        return []


ACCUMULATE_LOCK = threading.Lock()   # backward may run in several threads at once; NumPy's add releases the GIL


def accumulate_grad(t, g, create_graph: bool) -> None:
    """Add gradient ``g`` (a raw array, or a Tensor under create_graph) into leaf ``t``'s ``.grad``."""
    with ACCUMULATE_LOCK:
        m = t._get_meta()
        if m.grad is None:
            if create_graph:
                m.grad = g.clone()   # its own memory: g may be shared with other leaves or a broadcast view
            else:
                m.grad = _tensor.make(backend_of(g).copy(g, t._data.dtype))
        elif create_graph:
            m.grad = m.grad + g
        else:
            gd = m.grad._data
            backend_of(gd).add_into(gd, g)
            m.grad._vc[0] += 1
    if m.post_acc_hooks:
        for fn in list(m.post_acc_hooks.values()):
            fn(t)


def grad_accumulator(t) -> AccumulateGrad:
    """The (cached) AccumulateGrad node of leaf ``t``; the leaf holds it weakly, as PyTorch does."""
    m = t._get_meta()
    acc = m.acc() if m.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.acc = weakref.ref(acc)
        if _anomaly.enabled:
            record_stack(acc)   # as PyTorch: where the leaf first joined a graph
    return acc


_node_classes: dict = {}


def node_class(name: str, base: type) -> type:
    """A Node subclass named as PyTorch names the op's backward (``MulBackward0``), made once."""
    cls = _node_classes.get(name)
    if cls is None:
        attrs = {"__slots__": ()}
        if name in ("CopySlices", "CopyBackwards"):
            attrs["_qualified_name"] = "torch::autograd::" + name
        cls = _node_classes[name] = type(name, (base,), attrs)
    return cls


type_name_of = type_word


def _type_name(arr) -> str:
    return f"torch.{type_name_of(arr.dtype)}Tensor"


def modified_message(t, expected, out_data=None, current=None, node=None, saver=None) -> str:
    """PyTorch's error for a saved tensor changed in place; it names the op (``Exp``, not ``ExpBackward0``).
    ``saver``: the node that saved ``t`` (``node`` for a saved output); beyond PyTorch, the message names it."""
    if t is not None:
        data, current, vc = t._data, t._vc[0], t._vc
        which = f", which is output {t._output_nr} of {_op_name(t.grad_fn)}," if t.grad_fn is not None else ""
    else:
        data, vc = out_data, getattr(node, "_out_vc", None)
        which = f", which is output 0 of {_op_name(node)},"
    saver = saver if saver is not None else node
    if _anomaly.enabled:
        # PyTorch's hint under anomaly mode, then the lines that saved and modified the tensor
        hint = version_error_hint(vc, expected, saver)
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        if saver is not None:
            hint += f"\nIt was saved for backward by {saver.name()}."
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{_type_name(data)} {list(data.shape)}]{which} is at version {current}; expected "
            f"version {expected} instead. " + hint)


def _op_name(node) -> str:
    name = node.name()
    i = name.rfind("Backward")
    return name[:i] if i > 0 else name
