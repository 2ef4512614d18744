"""Views and in-place ops: the version-counter checks, CopySlices, and rebuilding a view's history.

A view records the view ops that lead from its base to it (``_view_steps``). When the base's memory
changes in place, through the view or directly, the view's history is rebuilt from the base's
(PyTorch's AsStridedBackward0), and an in-place op on a view gives the base a CopySlices node.
"""
from __future__ import annotations

import weakref

from .. import _dtype as D
from .._device import backend_of
from .._state import track_tangent
from .._tensor import Tensor, make, zeros_of
from .anomaly_mode import _anomaly, record_inplace
from .graph import grad_accumulator, type_name_of
from ._primitive import (VIEW_REFRESH, _EMPTY, KEEP_DTYPE, Primitive, _record, _state, apply, defprim, fwd_state,
                         save_extra)


def edge_of(t) -> tuple:
    """The graph edge a gradient for tensor ``t`` flows into."""
    if t._base is not None and t._vc[0] != t._view_v:
        refresh_view(t)   # a view whose base changed in place: rebuild its history first
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad and not (t._base is not None and t._view_nograd):
        return (grad_accumulator(t), 0)
    return (None, 0)


# ----- in-place ops --------------------------------------------------------------------------

def check_inplace(self: Tensor, recording: bool) -> None:
    """The errors PyTorch raises before an in-place op that autograd could not record correctly."""
    if self._inference and not _state.inference:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")
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
        if self._multi_view_op is not None:
            raise RuntimeError(f"Output {self._output_nr} of {self._multi_view_op} is a view and is being modified "
                               "inplace. This view is the output of a function that returns multiple views. Such "
                               "functions do not allow the output views to be modified inplace. You should replace "
                               "the inplace operation by an out-of-place one.")
        custom = getattr(self, "_custom_fn_view", None)
        if custom is not None:
            raise RuntimeError(f"Output {custom[1]} of {custom[0]} is a view and is being modified inplace. This view "
                               "was created inside a custom Function (or because an input was returned as-is) and "
                               "the autograd logic to handle view+inplace would override the custom backward "
                               "associated with the custom Function, leading to incorrect gradients. This behavior "
                               "is forbidden. You can fix this by cloning the output of the custom Function.")
        if base.grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def apply_inplace(prim: Primitive, self: Tensor, others: tuple, params: dict = _EMPTY,
                  node_cls=None, dtype=None, saved: tuple = ()) -> Tensor:
    """``self.op_(*others)``: write the result into self's memory and rebase self's history; ``saved``: tensors
    the node keeps beside its inputs (``save_extra``: an index tensor its params read)."""
    if dtype is None and prim.promote is not None:
        dtype = prim.promote((self,) + tuple(others))
    recording = _state.enabled and (self._requires_grad or any(
        isinstance(o, Tensor) and o._requires_grad for o in others))
    check_inplace(self, recording)
    is_view = self._base is not None
    if recording and is_view and self._vc[0] != self._view_v:
        refresh_view(self)
    if dtype is not None and dtype is not KEEP_DTYPE and D.from_numpy_dtype(dtype)._cat > self.dtype._cat:
        raise RuntimeError(f"result type {type_name_of(dtype)} can't be cast to the desired output type "
                           f"{type_name_of(self._data.dtype)}")
    src = self
    # a complex computation runs its complex twin's rules, which may read other inputs than the real ones
    saves = prim.cx.saves if prim.cx is not None and self._data.dtype.kind == "c" else prim.saves
    if recording and 0 in saves:
        # The rule needs self's value from before the write: save a snapshot with self's history.
        src = make(self._data.copy())
        src.grad_fn, src._output_nr, src._requires_grad = self.grad_fn, self._output_nr, self._requires_grad
        src._fw_grad = self._fw_grad
    r = apply(prim, (src,) + tuple(others), params, node_cls, KEEP_DTYPE if dtype is None else dtype)
    if saved and r.grad_fn is not None:
        save_extra(r.grad_fn, saved)   # at their versions before the write (self may be one of them)
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(r._data.shape)}")
    backend_of(self._data).copyto(self._data, r._data)
    self._vc[0] += 1
    if _anomaly.enabled:
        record_inplace(self._vc)   # so a version error can name this line
    old_fn, old_nr = self.grad_fn, self._output_nr
    if recording and is_view:
        _rebase_view(self, r)
    elif r.grad_fn is not None:
        node = r.grad_fn
        self.grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
        if node._prim.saves_out:
            # the saved output is r's own copy; a later write to self still invalidates it
            node._out_vc = self._vc
            node._out_v = self._vc[0]
    m = self._meta
    if m is not None and m.retains_grad and self.grad_fn is not old_fn:
        # retain_grad() follows the tensor to its new history, as in PyTorch.
        if old_fn is not None and old_fn._retained:
            old_fn._retained.pop(old_nr, None)
        self.grad_fn._retain_grad(self._output_nr, weakref.ref(self))
    if fwd_state.level:
        _inplace_tangent(self, r, is_view)
    return self


def _inplace_tangent(self: Tensor, r: Tensor, is_view: bool) -> None:
    """Forward mode after ``self`` was overwritten by ``r``: self's tangent is r's, and a view's base gets
    its tangent with the view's region replaced (the tangent of CopySlices), so that the base and every
    other view of it see the change."""
    rt = r._fw_grad
    if not is_view:
        if rt is not None:
            self._fw_grad = rt
            track_tangent(self)
        return
    base = self._base
    if rt is None and base._fw_grad is None:
        return
    with _primal_level():
        bt = base._fw_grad if base._fw_grad is not None else zeros_of(base)
        base._fw_grad = apply(copy_slices_p, (bt, rt if rt is not None else zeros_of(r)),
                              {"steps": current_steps(self)})
    track_tangent(base)
    self._fw_grad = rt if rt is not None else _view_tangent(self)
    track_tangent(self)


class _primal_level:
    """Tangent arithmetic runs without tangents of its own (as _primitive._forward_tangent does)."""

    def __enter__(self):
        self.level, fwd_state.level = fwd_state.level, 0

    def __exit__(self, *exc):
        fwd_state.level = self.level


def _view_tangent(v: Tensor):
    with _primal_level():
        return apply(view_replay_p, (v._base._fw_grad,), {"steps": current_steps(v)})


# ----- rebuilding a view's history --------------------------------------------------------------

view_replay_p = defprim(
    "view_replay", lambda xp, a, steps: xp.view_replay(a, steps),
    node="AsStridedBackward0", jvp="linear",
    vjp=lambda xp, g, out, a, steps: view_scatter_add_p(xp, g, steps=steps, shape=tuple(a.shape)))

# the gradient of replaying a view: an expanded view's repeated positions sum
view_scatter_add_p = defprim(
    "view_scatter_add",
    lambda xp, g, steps, shape: xp.view_scatter_add(g, steps, shape),
    node="AsStridedScatterBackward0", vjp=lambda xp, g, out, a, steps, shape: xp.view_replay(g, steps), jvp="linear")

view_scatter_zeros_p = defprim(
    "view_scatter_zeros",
    lambda xp, g, steps, shape: xp.view_scatter_zeros(g, steps, shape),
    node="AsStridedScatterBackward0", vjp=lambda xp, g, out, a, steps, shape: xp.view_replay(g, steps), jvp="linear")


def _outside_view(xp, g, steps):
    # g with the view's region zeroed: that part of the base was overwritten.
    return g - xp.view_scatter_zeros(xp.view_replay(g, steps), steps, g.shape)


copy_slices_p = defprim(
    "copy_slices",
    lambda xp, base, r, steps: _outside_view(xp, base, steps) + xp.view_scatter_zeros(r, steps, base.shape),
    node="CopySlices", vjp=(lambda xp, g, out, base, r, steps: _outside_view(xp, g, steps),
         lambda xp, g, out, base, r, steps: xp.view_replay(g, steps)),
    jvp="linear")


# ----- in-place view ops on a base ----------------------------------------------------------------

def relayout(base: Tensor, inverse: tuple) -> None:
    """An in-place view op (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``) changed ``base``'s sizes: the
    views made of it before replay their steps after ``inverse``, the view step that takes the new layout back to
    the old (PyTorch regenerates them with as_strided on the base's memory, which has no layout)."""
    base.__dict__.setdefault("_relayouts", []).append((base._vc[0], inverse))


def current_steps(v: Tensor) -> tuple:
    """``v._view_steps`` brought up to its base's current layout (see ``relayout``), and returned."""
    rel = v._base.__dict__.get("_relayouts")
    if rel is not None:
        since = max(v._view_v, v.__dict__.get("_steps_v", -1))   # the version the steps were made for
        if rel[-1][0] > since:
            v._view_steps = tuple(s for ver, s in reversed(rel) if ver > since) + v._view_steps
        v.__dict__["_steps_v"] = v._vc[0]
    return v._view_steps


def refresh_view(v: Tensor) -> None:
    """Rebuild view ``v``'s history from its base's current history."""
    base = v._base
    current_steps(v)
    v._view_v = v._vc[0]
    if base._requires_grad:
        stand_in = make(v._data)
        _record(stand_in, view_replay_p, (base,), {"steps": v._view_steps}, None)
        v.grad_fn, v._output_nr, v._requires_grad = stand_in.grad_fn, 0, True
    if fwd_state.level and base._fw_grad is not None:
        v._fw_grad = _view_tangent(v)   # the base's tangent changed with its values
        track_tangent(v)


def refresh_tangent(v: Tensor) -> None:
    """Forward mode without recording: a stale view's tangent follows its base's (its history is left
    to be rebuilt when grad mode records again)."""
    current_steps(v)
    if v._base._fw_grad is not None:
        v._fw_grad = _view_tangent(v)
        track_tangent(v)


def _rebase_view(v: Tensor, r: Tensor) -> None:
    """After ``v``'s memory was overwritten with ``r``: the base's new value is its old value with the
    view's region replaced by ``r`` (CopySlices), and ``v`` is that region of the new base."""
    base = v._base
    stand_in = make(base._data)
    _record(stand_in, copy_slices_p, (base, r), {"steps": current_steps(v)}, None)
    base.grad_fn, base._output_nr, base._requires_grad = stand_in.grad_fn, 0, True
    refresh_view(v)


VIEW_REFRESH.history = refresh_view
VIEW_REFRESH.tangent = refresh_tangent
VIEW_REFRESH.steps = current_steps
