"""Custom differentiable functions: subclass ``Function`` with ``forward``/``backward`` staticmethods.

The ``ctx`` passed to both is the graph node itself (as in PyTorch), named ``<ClassName>Backward``.
"""
from __future__ import annotations

import numpy as np

from .._device import NAMESPACES, backend_of
from .._tensor import Tensor, make
from . import grad_mode as _gm
from ..ops._views import edge_of
from .graph import FREED, FREED_MESSAGE, HOOKS_ON, Node, SavedTensor, current_hooks, modified_message, pack_saved


class FunctionCtx:
    """What ``forward`` can tell ``backward``: saved tensors and any attributes set on ``ctx``."""

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {len(tensors)} is of "
                                f"type {type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value

    @property
    def saved_tensors(self) -> tuple:
        saved = self.__dict__.get("_saved")
        if saved is None:
            return tuple(self.__dict__.get("_to_save", ()))
        if saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        out = []
        for t, v in saved:
            if type(t) is SavedTensor:   # saved through saved-tensor hooks: no version check (as PyTorch)
                out.append(t.unpack(self))
                continue
            if isinstance(t, _SavedOutput):
                t = t.unpack(self)
            if t is not None and t._vc[0] != v:
                raise RuntimeError(modified_message(t, v))
            out.append(t)
        return tuple(out)




class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    _forward_cls = None

    def __repr__(self) -> str:
        return f"<torch.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    def _release(self) -> None:
        if "_saved" in self.__dict__:
            self._saved = FREED

    def apply(self, grads, create_graph, needed):
        materialize = self.__dict__.get("_materialize", True)
        shapes = self._out_meta
        gts = []
        for i, (shape, dt) in enumerate(shapes):
            g = grads[i] if i < len(grads) else None
            if g is None:
                gts.append(make(self._backend.zeros(shape, dt)) if materialize else None)
            else:
                gts.append(g if create_graph else make(g))
        with _gm.set_grad_enabled(create_graph):
            res = self._forward_cls.backward(self, *gts)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self.next_functions)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(res)})")
        out = []
        for i, (r, (node, _)) in enumerate(zip(res, self.next_functions)):
            if r is not None and self._in_meta[i] is None:
                raise RuntimeError(f"function {type(self).__name__} returned a gradient different than None at "
                                   f"position {i + 1}, but the corresponding forward input was not a Variable")
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if r is None or node is None:
                out.append(None)
                continue
            shape, dt = self._in_meta[i]
            g = r if create_graph else r._data
            if r._data.shape != shape:
                # As PyTorch: a gradient may be larger (broadcast) and is summed back to the input's
                # shape, but the input's shape must expand to it.
                try:
                    ok = np.broadcast_shapes(shape, r._data.shape) == r._data.shape
                except ValueError:
                    ok = False
                if not ok:
                    raise RuntimeError(f"Function {type(self).__name__} returned an invalid gradient at index {i} - "
                                       f"got {list(r._data.shape)} but expected shape compatible with "
                                       f"{list(shape)}")
                g = r.sum_to_size(shape) if create_graph else NAMESPACES[type(g)].sum_to(g, shape)
            out.append(g)
        return out


_node_classes: dict = {}


class Function:
    """Base class of custom autograd functions; call them with ``MyFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method.")

    @classmethod
    def _node_class(cls):
        nc = _node_classes.get(cls)
        if nc is None:
            nc = _node_classes[cls] = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                           {"_forward_cls": cls})
        return nc

    @classmethod
    def apply(cls, *args, **kwargs):
        node = cls._node_class().__new__(cls._node_class())
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        node.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        with _gm.no_grad():
            outputs = cls.forward(node, *args, **kwargs)
        recording = _gm._state.enabled and any(t._requires_grad for t in tensor_args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not recording:
            return outputs
        Node.__init__(node, tuple(edge_of(a) if isinstance(a, Tensor) else (None, 0) for a in args))
        node._in_meta = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
        to_save = node.__dict__.pop("_to_save", None)
        if to_save is not None:
            node._saved = tuple((t, t._vc[0] if t is not None else 0) for t in to_save)
        non_diff = node.__dict__.get("_non_diff", ())
        wrapped = []
        meta = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                wrapped.append(o)
                continue
            if any(o is a for a in args) and id(o) not in non_diff:
                o = o.detach() if o.grad_fn is None else o.view_as(o)
            if id(o) in non_diff or o._data.dtype.kind != "f":
                wrapped.append(o)
                meta.append((o._data.shape, o._data.dtype))
                continue
            o.grad_fn = node
            o._output_nr = i
            o._requires_grad = True
            wrapped.append(o)
            meta.append((o._data.shape, o._data.dtype))
        node._out_meta = tuple(meta)
        first = next((o for o in wrapped if isinstance(o, Tensor)), None)
        node._backend = backend_of(first._data) if first is not None else None
        saved = node.__dict__.get("_saved")
        if saved is not None:
            # A saved output must not hold its grad_fn (this node): that would be a reference cycle
            # keeping the whole graph alive until gc runs. Keep its data and rebuild it on unpack.
            outs_by_id = {id(o): o for o in wrapped if isinstance(o, Tensor) and o.grad_fn is node}
            hooks = current_hooks() if HOOKS_ON else None
            if hooks is not None:   # saved_tensors_hooks: keep pack(tensor) instead (graph.pack_saved)
                node._saved = tuple((None if t is None else pack_saved(t, id(t) in outs_by_id, hooks), v)
                                    for t, v in saved)
            elif outs_by_id:
                node._saved = tuple((_SavedOutput(t), v) if t is not None and id(t) in outs_by_id else (t, v)
                                    for t, v in saved)
        return wrapped[0] if single else tuple(wrapped)


class _SavedOutput:
    """An output of a custom Function saved for its own backward, held without its grad_fn."""

    __slots__ = ("_data", "_vc", "_output_nr")

    def __init__(self, t: Tensor):
        self._data, self._vc, self._output_nr = t._data, t._vc, t._output_nr

    def unpack(self, node) -> Tensor:
        t = make(self._data)
        t._vc = self._vc
        t.grad_fn, t._output_nr, t._requires_grad = node, self._output_nr, True
        return t
