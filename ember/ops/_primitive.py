"""The primitive machinery: how an op declared once runs forward, backward (VJP) and forward-mode (JVP).

A primitive is declared with
  * ``forward(xp, *arrays, **params)`` on raw arrays,
  * one VJP rule per input, ``vjp_i(xp, g, out, *inputs, **params) -> grad for input i``,
  * one JVP rule per input, ``jvp_i(xp, t_i, out, *inputs, **params) -> tangent contribution``.

Rules are written against the namespace ``xp``. Plain ``backward()`` calls them with the raw
namespace of the tensors' device (``ember._numpy_ns`` for 'cpu', looked up in ``_device.NAMESPACES``) on
raw arrays: NumPy speed, no graph.
``create_graph=True`` and forward-mode AD call the very same rules with ``graph_ns`` (ember's
own differentiable functions) on Tensors, so every derivative is itself differentiable.

Broadcasting is undone in one place (``sum_to`` in ``PrimNode.apply``), as is casting a
gradient back to its input's dtype. A rule returning ``None`` means a zero gradient.
"""
from __future__ import annotations

import types
import weakref

import numpy as np

from .. import _dtype as D
from .._device import NAMESPACES
from .._tensor import Tensor, _new, make
from ..autograd import grad_mode as _gm
from ..autograd.graph import FREED_MESSAGE, Node, _seq, grad_accumulator, modified_message, node_class, type_name_of

_ndarray = np.ndarray
_state = _gm._state
_EMPTY: dict = {}

# ember's own namespace of differentiable functions, mirroring the raw namespaces name for name; filled by
# ember.ops once every family is imported.
graph_ns = types.SimpleNamespace()


class _ForwardADState:
    level = 0   # > 0 inside forward_ad.dual_level(): ops then propagate tangents


fwd_state = _ForwardADState()

_FREED = ("freed",)


class Primitive:
    """One differentiable op: forward, per-input VJP and JVP rules, and what backward must save."""

    __slots__ = ("name", "node_cls", "forward", "vjps", "jvps", "saves", "saves_out", "is_view", "no_args")

    def __init__(self, name, node_name, forward, vjp, jvp=None, saves=(), saves_out=False, is_view=False):
        self.name = name
        self.node_cls = node_class(node_name, PrimNode)
        self.forward = forward
        self.vjps = vjp if isinstance(vjp, tuple) else (vjp,)
        self.jvps = jvp if isinstance(jvp, tuple) or jvp is None else (jvp,)
        self.saves = frozenset(saves)
        self.saves_out = saves_out
        self.is_view = is_view  # output may alias input 0's memory (then it shares its version counter)
        self.no_args = (None,) * len(self.vjps)  # what rules see as inputs when nothing was saved

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


def defprim(name, node_name, forward, vjp, jvp=None, saves=(), saves_out=False, is_view=False) -> Primitive:
    return Primitive(name, node_name, forward, vjp, jvp, saves, saves_out, is_view)


class PrimNode(Node):
    """The backward node of a primitive; subclassed once per PyTorch name (``MulBackward0``).

    ``_saved`` holds ``(value, version)`` for each input the rules read (None for the others),
    or None when the rules read no input; ``_in`` holds each tensor input's (shape, dtype).
    """

    __slots__ = ("_prim", "_params", "_saved", "_in", "_out", "_out_vc", "_out_v")

    def _release(self) -> None:
        if self._saved is not None or self._out is not None:
            self._saved = _FREED
            self._out = None

    def _unpack(self, graph: bool) -> list:
        args = []
        for sv in self._saved:
            if sv is None:
                args.append(None)
                continue
            t, v = sv
            if type(v) is int:
                if t._vc[0] != v:
                    raise RuntimeError(modified_message(t, v))
                if not graph:
                    t = t._data
            args.append(t)
        return args

    def _unpack_out(self, graph: bool):
        vc = self._out_vc
        if vc[0] != self._out_v:
            raise RuntimeError(modified_message(None, self._out_v, self._out, vc[0], self))
        if not graph:
            return self._out
        t = make(self._out)
        t.grad_fn = self
        t._requires_grad = True
        return t

    def apply(self, grads, create_graph, needed):
        g = grads[0]
        prim = self._prim
        saved = self._saved
        if saved is None:
            args = prim.no_args
        elif saved is _FREED:
            raise RuntimeError(FREED_MESSAGE)
        else:
            args = self._unpack(create_graph)
        out = self._unpack_out(create_graph) if prim.saves_out else None
        params = self._params
        vjps = prim.vjps
        res = []
        if create_graph:
            xp = graph_ns
            for i, (node, _) in enumerate(self.next_functions):
                if node is None or (needed is not None and not needed[i]):
                    res.append(None)
                    continue
                gi = vjps[i](xp, g, out, *args, **params)
                if gi is not None:
                    shape, dt = self._in[i]
                    if gi._data.shape != shape:
                        gi = xp.sum_to(gi, shape)
                    if gi._data.dtype != dt:
                        gi = xp.cast(gi, dt)
                res.append(gi)
        else:
            # The same loop on raw arrays (kept apart: this is the hot path of plain backward).
            xp = NAMESPACES[type(g)]
            for i, (node, _) in enumerate(self.next_functions):
                if node is None or (needed is not None and not needed[i]):
                    res.append(None)
                    continue
                gi = vjps[i](xp, g, out, *args, **params)
                if gi is not None:
                    shape, dt = self._in[i]
                    if gi.shape != shape:
                        gi = xp.sum_to(gi, shape)
                    if gi.dtype != dt:
                        gi = gi.astype(dt)
                res.append(gi)
        return res


_NO_EDGE = (None, 0)


def apply(prim: Primitive, args: tuple, params: dict = _EMPTY, node_cls=None, dtype=None) -> Tensor:
    """Run ``prim`` on ``args`` (Tensors or Python scalars) and record it in the graph if needed.

    ``dtype`` (a NumPy dtype) is the promoted computation dtype: array inputs of another dtype
    are cast to it first, as PyTorch computes in the promoted type.
    """
    datas = []
    rg = False
    xp = None
    for a in args:
        if isinstance(a, Tensor):
            if a._base is not None and a._vc[0] != a._view_v and _state.enabled:
                refresh_view(a)
            d = a._data
            if xp is None:
                xp = NAMESPACES[type(d)]
            if dtype is not None and d.dtype != dtype:
                d = d.astype(dtype)
            datas.append(d)
            if a._requires_grad:
                rg = True
        else:
            datas.append(a)
    try:
        out = prim.forward(xp, *datas, **params)
    except (ValueError, IndexError, TypeError, np.exceptions.AxisError) as e:
        raise _forward_error(prim, args, e) from None
    if type(out) is not _ndarray:
        out = np.asarray(out)
    # make()/make_view() inlined: this runs once per op.
    t = _new(Tensor)
    t._data = out
    t._output_nr = 0
    t._meta = None
    t._fw_grad = None
    if prim.is_view and np.may_share_memory(out, datas[0]):   # reshape may have had to copy
        base = args[0]
        t._vc = base._vc
        t._view_v = base._vc[0]
        if base._base is None:
            t._base = base
            t._view_steps = ((prim, params),)
            t._view_nograd = not _state.enabled and base._requires_grad
        else:
            t._base = base._base
            t._view_steps = base._view_steps + ((prim, params),)
            t._view_nograd = base._view_nograd or (not _state.enabled and base._requires_grad)
    else:
        t._vc = [0]
        t._base = None
    if rg and _state.enabled:
        _record(t, prim, args, params, node_cls)
    else:
        t.grad_fn = None
        # PyTorch: a view made under no_grad of a tensor that requires grad requires grad too (with no
        # history: _record gives it no edge).
        t._requires_grad = rg and prim.is_view and t._base is not None
    if fwd_state.level:
        _forward_tangent(t, prim, args, params)
    return t


def _record(t: Tensor, prim: Primitive, args: tuple, params: dict, node_cls) -> None:
    node = _new(node_cls or prim.node_cls)
    edges = []
    meta = []
    for a in args:
        if isinstance(a, Tensor):
            fn = a.grad_fn
            if fn is not None:
                edges.append((fn, a._output_nr))
            elif a._requires_grad and not (a._base is not None and a._view_nograd):
                edges.append((grad_accumulator(a), 0))
            else:
                edges.append(_NO_EDGE)
            d = a._data
            meta.append((d.shape, d.dtype))
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
    node.next_functions = tuple(edges)
    node._seq = next(_seq)
    node._prim = prim
    node._params = params
    node._in = meta
    saves = prim.saves
    if saves:
        saved = []
        for i, a in enumerate(args):
            if i not in saves:
                saved.append(None)
            else:
                saved.append((a, a._vc[0]) if isinstance(a, Tensor) else (a, None))
        node._saved = saved
    else:
        node._saved = None
    if prim.saves_out:
        node._out = t._data
        node._out_vc = t._vc
        node._out_v = 0
    else:
        node._out = None
    t.grad_fn = node
    t._requires_grad = True


def _forward_tangent(t: Tensor, prim: Primitive, args: tuple, params: dict) -> None:
    if not any(isinstance(a, Tensor) and a._fw_grad is not None for a in args):
        return
    if prim.jvps is None:
        raise NotImplementedError(f"ember: forward-mode AD is not implemented for {prim.name}")
    # Tangent formulas run on the primals only: no tangents of tangents at this level.
    level, fwd_state.level = fwd_state.level, 0
    try:
        tangent = None
        primal_out = make(t._data)
        for i, a in enumerate(args):
            if isinstance(a, Tensor) and a._fw_grad is not None:
                c = prim.jvps[i](graph_ns, a._fw_grad, primal_out, *args, **params)
                if c is not None:
                    tangent = c if tangent is None else tangent + c
        if tangent is not None:
            if tangent._data.shape != t._data.shape:
                tangent = graph_ns.expand(tangent, t._data.shape)
            if tangent._data.dtype != t._data.dtype:
                tangent = graph_ns.cast(tangent, t._data.dtype)
            t._fw_grad = tangent
    finally:
        fwd_state.level = level


def _describe(args) -> str:
    parts = []
    for a in args:
        if isinstance(a, Tensor):
            parts.append(f"Tensor(shape={list(a._data.shape)}, dtype={a.dtype})")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def broadcast_error(shapes) -> RuntimeError | None:
    """PyTorch's message for two shapes that do not broadcast, or None if they do."""
    a, b = shapes
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                                f"at non-singleton dimension {i}")
    return None


def _forward_error(prim, args, e) -> Exception:
    shapes = [a._data.shape for a in args if isinstance(a, Tensor)]
    if len(shapes) == 2 and "broadcast" in str(e):
        err = broadcast_error(shapes)
        if err is not None:
            return err
    kind = IndexError if isinstance(e, IndexError) else RuntimeError
    return kind(f"{prim.name}(): {e} (arguments: {_describe(args)})")


# ----- in-place ops --------------------------------------------------------------------------

def check_inplace(self: Tensor, recording: bool) -> None:
    """The errors PyTorch raises before an in-place op that autograd could not record correctly."""
    if not self._data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if self._base is not None and self._view_nograd and _state.enabled:
        # the view's history was never recorded, so the write could not reach the base's gradient
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode "
                           "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
                           "can clarify your code by moving both the view and the inplace either both inside the "
                           "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
                           "want the inplace to be tracked).")
    if not recording:
        return
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = self._base
    if base is not None:
        if base.grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def apply_inplace(prim: Primitive, self: Tensor, others: tuple, params: dict = _EMPTY,
                  node_cls=None, dtype=None, opname: str = "") -> Tensor:
    """``self.op_(*others)``: write the result into self's memory and rebase self's history."""
    recording = _state.enabled and (self._requires_grad or any(
        isinstance(o, Tensor) and o._requires_grad for o in others))
    check_inplace(self, recording)
    is_view = self._base is not None
    if recording and is_view and self._vc[0] != self._view_v:
        refresh_view(self)
    if dtype is not None and D._FROM_NP[np.dtype(dtype)]._cat > self.dtype._cat:
        raise RuntimeError(f"result type {type_name_of(dtype)} can't be cast to the desired output type "
                           f"{type_name_of(self._data.dtype)}")
    src = self
    if recording and 0 in prim.saves:
        # The rule needs self's value from before the write: save a snapshot with self's history.
        src = make(self._data.copy())
        src.grad_fn, src._output_nr, src._requires_grad = self.grad_fn, self._output_nr, self._requires_grad
        src._fw_grad = self._fw_grad
    r = apply(prim, (src,) + tuple(others), params, node_cls, dtype)
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(r._data.shape)}")
    np.copyto(self._data, r._data, casting="unsafe")
    self._vc[0] += 1
    old_fn, old_nr = self.grad_fn, self._output_nr
    if recording and is_view:
        _rebase_view(self, r)
    elif r.grad_fn is not None:
        node = r.grad_fn
        self.grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
        if prim.saves_out:
            # the saved output is r's own copy; a later write to self still invalidates it
            node._out_vc = self._vc
            node._out_v = self._vc[0]
    m = self._meta
    if m is not None and m.retains_grad and self.grad_fn is not old_fn:
        # retain_grad() follows the tensor to its new history, as in PyTorch.
        if old_fn is not None and old_fn._retained:
            old_fn._retained.pop(old_nr, None)
        self.grad_fn._retain_grad(self._output_nr, weakref.ref(self))
    if r._fw_grad is not None:
        self._fw_grad = r._fw_grad
    return self


# ----- views and in-place ops --------------------------------------------------------------------
# A view records the view ops that lead from its base to it (``_view_steps``). When the base's memory
# changes in place, through the view or directly, the view's history is rebuilt from the base's
# (PyTorch's AsStridedBackward0), and an in-place op on a view gives the base a CopySlices node.

view_replay_p = defprim(
    "view_replay", "AsStridedBackward0", lambda xp, a, steps, shape: xp.view_replay(a, steps),
    vjp=lambda xp, g, out, a, steps, shape: xp.view_scatter_zeros(g, steps, shape),
    jvp=lambda xp, t, out, a, steps, shape: xp.view_replay(t, steps))

view_scatter_zeros_p = defprim(
    "view_scatter_zeros", "AsStridedScatterBackward0",
    lambda xp, g, steps, shape: xp.view_scatter_zeros(g, steps, shape),
    vjp=lambda xp, g, out, a, steps, shape: xp.view_replay(g, steps),
    jvp=lambda xp, t, out, a, steps, shape: xp.view_scatter_zeros(t, steps, shape))


def _outside_view(xp, g, steps, shape):
    # g with the view's region zeroed: that part of the base was overwritten.
    return g - xp.view_scatter_zeros(xp.view_replay(g, steps), steps, shape)


copy_slices_p = defprim(
    "copy_slices", "CopySlices",
    lambda xp, base, r, steps, shape: _outside_view(xp, base, steps, shape) + xp.view_scatter_zeros(r, steps, shape),
    vjp=(lambda xp, g, out, base, r, steps, shape: _outside_view(xp, g, steps, shape),
         lambda xp, g, out, base, r, steps, shape: xp.view_replay(g, steps)),
    jvp=(lambda xp, t, out, base, r, steps, shape: _outside_view(xp, t, steps, shape),
         lambda xp, t, out, base, r, steps, shape: xp.view_scatter_zeros(t, steps, shape)))


def refresh_view(v: Tensor) -> None:
    """Rebuild view ``v``'s history from its base's current history."""
    base = v._base
    v._view_v = v._vc[0]
    if base._requires_grad:
        stand_in = make(v._data)
        _record(stand_in, view_replay_p, (base,), {"steps": v._view_steps, "shape": base._data.shape}, None)
        v.grad_fn, v._output_nr, v._requires_grad = stand_in.grad_fn, 0, True


def _rebase_view(v: Tensor, r: Tensor) -> None:
    """After ``v``'s memory was overwritten with ``r``: the base's new value is its old value with the
    view's region replaced by ``r`` (CopySlices), and ``v`` is that region of the new base."""
    base = v._base
    stand_in = make(base._data)
    _record(stand_in, copy_slices_p, (base, r), {"steps": v._view_steps, "shape": base._data.shape}, None)
    base.grad_fn, base._output_nr, base._requires_grad = stand_in.grad_fn, 0, True
    refresh_view(v)
