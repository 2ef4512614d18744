"""Custom differentiable functions: subclass ``Function`` with ``forward``/``backward`` staticmethods.

The ``ctx`` passed to both is the graph node itself (as in PyTorch), named ``<ClassName>Backward``.
Two styles, as PyTorch: ``forward(ctx, *args)``, or a ctx-free ``forward(*args)`` with
``setup_context(ctx, inputs, output)``. ``jvp(ctx, *tangents)`` gives forward mode.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from .._device import NAMESPACES, backend_of
from .._dtype import _FROM_NP
from .._origin import warn_user
from .._state import fwd_state, track_tangent
from .._tensor import Tensor, make, zeros_of
from .._util import broadcast_shape
from . import _batching
from . import grad_mode as _gm
from ._primitive import INFERENCE_SAVE_MESSAGE
from ._views import _rebase_view, check_inplace, edge_of
from .anomaly_mode import record_stack
from .graph import (FREED, FREED_MESSAGE, HOOKS_ON, NODE_OBSERVERS, Node, SavedTensor, current_hooks,
                    modified_message, node_class, pack_saved, set_saved_tangent)

_NO_JVP = ("You must implement the jvp function for custom autograd.Function to use it with forward mode AD.")


class FunctionCtx:
    """What ``forward`` can tell ``backward``: saved tensors and any attributes set on ``ctx``."""

    def save_for_backward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of "
                                f"type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; but got {i}th argument "
                                f"of type {type(t).__name__}")
        self._for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        """The inputs ``forward`` modified in place (and must return)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        """False: ``backward`` gets None (not zeros) for outputs that received no gradient."""
        self._materialize = value

    @property
    def saved_tensors(self) -> tuple:
        d = self.__dict__
        if d.get("_in_jvp"):
            return tuple(d.get("_for_forward", ()))
        saved = d.get("_saved")
        if saved is None:
            return tuple(d.get("_to_save", ()))
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
                raise RuntimeError(modified_message(t, v, saver=self))
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    _forward_cls = None

    def __repr__(self) -> str:
        return f"<torch.autograd.function.{type(self).__name__} object at {hex(id(self))}>"

    def __getattr__(self, name):
        # ctx attributes that held this node's own outputs are kept without their grad_fn (see
        # _detach_output_attrs) and rebuilt on access; only reached when normal lookup fails.
        held = self.__dict__.get("_output_attrs")
        if held is not None and name in held:
            return held[name].unpack(self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        # ``del ctx.result`` of an attribute kept by _detach_output_attrs (a value set again since shadows it:
        # both go, so that the attribute is gone)
        held = self.__dict__.get("_output_attrs")
        if held is not None and name in held:
            del held[name]
            self.__dict__.pop(name, None)
            return
        super().__delattr__(name)

    @property
    def num_outputs(self) -> int:
        return len(self.__dict__.get("_out_meta", ()))

    def _release(self) -> None:
        if "_saved" in self.__dict__:
            self._saved = FREED

    def _user_backward(self):
        cls = self._forward_cls
        if cls.vjp is not Function.vjp and cls.backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        return cls.vjp if cls.vjp is not Function.vjp else cls.backward

    def apply(self, grads, create_graph, needed):
        name = type(self).__name__
        materialize = self.__dict__.get("_materialize", True)
        gts = []
        for i, meta in enumerate(self._out_meta):
            g = grads[i] if i < len(grads) else None
            if g is None:
                if meta is not None and materialize:
                    z = make(self._backend.zeros(meta[0], meta[1]))
                    gts.append(z)
                else:
                    gts.append(None)
            else:
                gts.append(g if create_graph else make(g))
        with _gm.set_grad_enabled(create_graph):
            res = self._user_backward()(self, *gts)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._in_meta)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {name} returned an incorrect number of gradients (expected {n}, "
                                   f"got {len(res)})")
        out = []
        for i, r in enumerate(res):
            meta = self._in_meta[i]
            if r is not None and meta is None:
                raise RuntimeError(f"function {name} returned a gradient different than None at position {i + 1}, "
                                   "but the corresponding forward input was not a Variable")
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if meta is None:
                continue   # a non-tensor input has no edge
            node = self.next_functions[len(out)][0]
            if r is None:
                out.append(None)
                continue
            if node is None:
                # as PyTorch: node hooks still see what backward returned for an input that needs no gradient
                out.append(r if create_graph else r._data)
                continue
            out.append(self._fit(name, i, r, meta, create_graph))
        return out

    @staticmethod
    def _fit(name, i, r, meta, create_graph):
        """Gradient ``r`` for input ``i`` summed to its shape and cast to its dtype, as PyTorch's engine does."""
        shape, dt = meta
        got = r._data.shape
        if got != shape:
            # A broadcast (larger) gradient is summed back to the input's shape; the input's shape
            # must expand to it.
            try:
                ok = broadcast_shape((shape, got)) == tuple(got)
            except RuntimeError:
                ok = False
            if not ok:
                raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got {list(got)} "
                                   f"but expected shape compatible with {list(shape)}")
            r = r.sum_to_size(shape) if create_graph else make(NAMESPACES[type(r._data)].sum_to(r._data, shape))
        if r._data.dtype != dt:
            r = r.to(_FROM_NP[dt]) if create_graph else make(r._data.astype(dt))
        return r if create_graph else r._data


class _SavedOutput:
    """An output of a custom Function held by its own node without its grad_fn (no reference cycle)."""

    __slots__ = ("_data", "_vc", "_output_nr", "_fw")

    def __init__(self, t: Tensor):
        self._data, self._vc, self._output_nr = t._data, t._vc, t._output_nr
        self._fw = None   # a tensor holding the output's tangent (forward mode), cleared with its level

    def unpack(self, node) -> Tensor:
        t = make(self._data)
        t._vc = self._vc
        t.grad_fn, t._output_nr, t._requires_grad = node, self._output_nr, True
        if self._fw is not None and self._fw._fw_grad is not None and fwd_state.level:
            t._fw_grad = self._fw._fw_grad
            track_tangent(t)
        return t


class Function:
    """Base class of custom autograd functions; call them with ``MyFunction.apply(*args)``."""

    generate_vmap_rule = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # As PyTorch's FunctionMeta: each Function class has its node class, named <Name>Backward.
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,), {"_forward_cls": cls})

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(_NO_JVP)

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap "
                                  "staticmethod or set generate_vmap_rule=True.")

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, "
                      "so you should invoke them on the class itself. Instantiating an autograd function will "
                      "raise an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` without recording, then make its outputs the outputs of one graph node."""
        setup = cls.setup_context is not Function.setup_context
        if setup:
            # setup_context sees every positional input, defaults filled in (as PyTorch binds them)
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        if _batching.FRAMES or _batching.TRANSFORMS[0]:
            if not setup and not LEGACY_VMAP[0]:
                raise RuntimeError(_NEEDS_SETUP)
            if _batching.FRAMES:   # vmap's rules for Functions (ember/func/_autograd_function.py)
                return TRANSFORM_RULE[0](cls, args, kwargs)
            if kwargs:   # keyword-only arguments: PyTorch's grad/jvp rule takes none
                raise TypeError("custom_function_call_grad() got an unexpected keyword argument "
                                f"'{next(iter(kwargs))}'")
        return plain_apply(cls, args, kwargs)


# Function.apply while a vmap runs: set by ember.func (a slot, so that autograd imports nothing above it)
TRANSFORM_RULE: list = [None]
# Set while gradcheck's batched checks run (PyTorch's older vmap, under which any Function runs as it is)
LEGACY_VMAP: list = [0]
_NEEDS_SETUP = ("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, ...), it "
                "must override the setup_context staticmethod. For more details, please see "
                "https://pytorch.org/docs/main/notes/extending.func.html")


def plain_apply(cls, args: tuple, kwargs: dict):
    """``cls.apply`` on its (bound) arguments, recorded as one node of the graph they are in."""
    setup = cls.setup_context is not Function.setup_context
    node_cls = cls.__dict__.get("_backward_cls") or _backward_cls_of(cls)
    ctx = node_cls.__new__(node_cls)
    # As PyTorch: keyword arguments are inputs too, after the positional ones, in forward's order
    inputs = args + _kwarg_values(cls, kwargs) if kwargs else args
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in inputs)
    tensors = [a for a in inputs if isinstance(a, Tensor)]
    executable = _gm._state.enabled and any(t._requires_grad for t in tensors)
    tangents = fwd_state.level and any(t._fw_grad is not None for t in tensors)
    if tangents and cls.jvp is Function.jvp:
        raise NotImplementedError(_NO_JVP)
    level, fwd_state.level = fwd_state.level, 0   # forward's own ops carry no tangents
    try:
        with _gm.no_grad():
            if setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
    finally:
        fwd_state.level = level
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    wrapped = _wrap_outputs(ctx, inputs, outs, executable)
    if tangents:
        _forward_tangents(ctx, cls, inputs, wrapped)
    return wrapped[0] if single else tuple(wrapped)


def _kwarg_values(cls, kwargs: dict) -> tuple:
    order = {name: i for i, name in enumerate(inspect.signature(cls.forward).parameters)}
    return tuple(kwargs[k] for k in sorted(kwargs, key=lambda k: order.get(k, len(order))))


def _backward_cls_of(cls):
    # a Function subclass made with type() before __init_subclass__ ran (never in practice) or Function itself
    cls._backward_cls = node_class(cls.__name__ + "Backward", BackwardCFunction)
    cls._backward_cls._forward_cls = cls
    return cls._backward_cls


def _wrap_outputs(ctx, args: tuple, outs: tuple, executable: bool) -> list:
    """The Function's outputs as PyTorch's _wrap_outputs makes them: differentiable outputs get the node
    as grad_fn, inputs returned as they are become views, dirtied inputs are rebased onto the node."""
    d = ctx.__dict__
    dirty = d.get("_dirty", ())
    dirty_ids = {id(t) for t in dirty}
    out_ids = {id(o) for o in outs}
    if any(id(t) not in out_ids for t in dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                           "The inputs that are modified inplace must all be outputs of the Function.")
    non_diff = d.get("_non_diff", ())
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    if executable:
        Node.__init__(ctx, tuple(edge_of(a) for a in args if isinstance(a, Tensor)))
        record_stack(ctx)   # anomaly mode: the forward traceback
        ctx._in_meta = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
    wrapped, meta = [], []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            wrapped.append(o)
            meta.append(None)
            continue
        differentiable = id(o) not in non_diff and o._data.dtype.kind in "fcV"
        if id(o) in dirty_ids:
            if executable and id(o) not in input_ids:
                warn_user("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have "
                          "been mutated should be passed to ctx.mark_dirty().")
            o._vc[0] += 1   # PyTorch counts the Function's in-place write once more
            if executable and differentiable:
                if o.grad_fn is None and o._requires_grad and o._base is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
                check_inplace(o, True)
                if o._base is not None:
                    stand_in = make(o._data)
                    stand_in.grad_fn, stand_in._output_nr, stand_in._requires_grad = ctx, i, True
                    _rebase_view(o, stand_in)
                else:
                    o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
        elif id(o) in input_ids:
            o = _alias(o, executable and differentiable)
            if executable and differentiable:
                o.grad_fn, o._output_nr = ctx, i
                # PyTorch's CreationMeta::IN_CUSTOM_FUNCTION: an in-place op on it while recording is refused
                # (ember/autograd/_views.check_inplace reads this mark)
                o._custom_fn_view = (type(ctx)._forward_cls.__name__, i)
        elif executable and differentiable:
            o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
        elif executable and o.grad_fn is None:
            o._requires_grad = False
        wrapped.append(o)
        meta.append((o._data.shape, o._data.dtype))   # backward gets zeros for non-differentiable ones too
    if not executable:
        return wrapped
    ctx._out_meta = tuple(meta)
    first = next((o for o in wrapped if isinstance(o, Tensor)), None)
    ctx._backend = backend_of(first._data) if first is not None else None
    own = {id(o) for o in wrapped if isinstance(o, Tensor) and o.grad_fn is ctx}
    to_save = d.pop("_to_save", None)
    if to_save is not None:
        if any(t is not None and t._inference for t in to_save):
            raise RuntimeError(INFERENCE_SAVE_MESSAGE)
        hooks = current_hooks() if HOOKS_ON else None
        if hooks is not None:   # saved_tensors_hooks: keep pack(tensor) instead (graph.pack_saved)
            ctx._saved = tuple((None, 0) if t is None else (pack_saved(t, id(t) in own, hooks), t._vc[0])
                               for t in to_save)
        else:
            # A saved output must not hold its grad_fn (this node): that would be a reference cycle keeping
            # the whole graph alive until gc runs. Keep its data and rebuild it on unpack, as PyTorch does.
            ctx._saved = tuple((None, 0) if t is None else
                               ((_SavedOutput(t) if id(t) in own else t), t._vc[0]) for t in to_save)
    _detach_output_attrs(ctx, own)
    if NODE_OBSERVERS:   # ember.viz.record(): the custom Function's outputs
        for observe in NODE_OBSERVERS:
            observe(ctx, tuple(o if isinstance(o, Tensor) and o.grad_fn is ctx else None for o in wrapped))
    return wrapped


def _alias(t: Tensor, requires_grad: bool) -> Tensor:
    """An input returned as is: PyTorch returns a view of it (same memory and version counter)."""
    with _gm.no_grad():
        v = t.view_as(t)
    v._view_nograd = False
    v._requires_grad = requires_grad
    return v


def _detach_output_attrs(ctx, own: set) -> None:
    """ctx attributes holding this node's outputs would be reference cycles (output -> grad_fn -> ctx ->
    output): keep them without their grad_fn; ``BackwardCFunction.__getattr__`` rebuilds them."""
    if not own:
        return
    d = ctx.__dict__
    for k in [k for k, v in d.items() if isinstance(v, Tensor) and id(v) in own]:
        d.setdefault("_output_attrs", {})[k] = _SavedOutput(d.pop(k))


def _forward_tangents(ctx, cls, args: tuple, wrapped: list) -> None:
    """Forward mode: the Function's ``jvp`` maps the inputs' tangents to the outputs' tangents."""
    level, fwd_state.level = fwd_state.level, 0   # tangent arithmetic carries no tangents itself
    try:
        tin = []
        for a in args:
            if not isinstance(a, Tensor):
                tin.append(None)
            else:
                tin.append(a._fw_grad if a._fw_grad is not None else zeros_of(a))
        ctx._in_jvp = True
        try:
            res = cls.jvp(ctx, *tin)
        finally:
            ctx._in_jvp = False
    finally:
        fwd_state.level = level
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) != len(wrapped):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients (expected "
                           f"{len(wrapped)} but got {len(res)})")
    for o, t in zip(wrapped, res):
        if t is None or not isinstance(o, Tensor) or o._data.dtype.kind not in "fcV":
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"jvp of {cls.__name__} must return Tensors or None, got {type(t).__name__}")
        if t._data.shape != o._data.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the "
                               f"original Tensor, this is not supported. Tensor is of size {list(o._data.shape)} "
                               f"while the given forward gradient is of size {list(t._data.shape)}.")
        if t._data.dtype != o._data.dtype:
            t = t.to(o.dtype)
        o._fw_grad = t
        track_tangent(o)
    # saved outputs come back with their tangents (forward-over-reverse through the Function's backward)
    d = ctx.__dict__
    for s, _ in d.get("_saved", ()):
        if type(s) is SavedTensor and s._is_output and wrapped[s._output_nr]._fw_grad is not None:
            set_saved_tangent(s, wrapped[s._output_nr]._fw_grad)   # saved through saved-tensor hooks
    held = [s for s, _ in d.get("_saved", ()) if isinstance(s, _SavedOutput)]
    held += list(d.get("_output_attrs", {}).values())
    for s in held:
        o = wrapped[s._output_nr]
        if o._fw_grad is not None:
            s._fw = make(o._data)
            s._fw._fw_grad = o._fw_grad
            track_tangent(s._fw)


# ----- once_differentiable ------------------------------------------------------------------------

class _DelayedError(Node):
    """Stands where a once_differentiable backward's graph would be: differentiating it raises."""

    __slots__ = ()
    _qualified_name = "torch::autograd::Error"

    def apply(self, grads, create_graph, needed):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


_DelayedError.__name__ = _DelayedError.__qualname__ = "Error"


def once_differentiable(fn):
    """Decorate a ``backward`` that is not itself differentiable: it runs without recording, and
    differentiating its result (double backward) raises PyTorch's error instead of a wrong zero."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _gm.no_grad():
            outputs = fn(ctx, *args)
        if not _gm._state.enabled:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        fakes = []
        for o in outs:
            if isinstance(o, Tensor):
                f = o.detach()
                f._requires_grad = True
                fakes.append(f)
        node = _DelayedError(tuple(edge_of(f) for f in fakes))
        res, k = [], 0
        for o in outs:
            if isinstance(o, Tensor):
                r = make(o._data)
                r._vc = o._vc
                r.grad_fn, r._output_nr, r._requires_grad = node, k, True
                k += 1
                o = r
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class InplaceFunction(Function):
    """Kept for old code, as PyTorch keeps it: a Function with an ``inplace`` flag."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace
