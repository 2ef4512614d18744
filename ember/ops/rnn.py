"""Recurrent layers as one graph node per layer and direction: the time loop of ``torch.lstm``, ``gru``,
``rnn_tanh`` and ``rnn_relu`` (and of their cells) runs over raw arrays.

The recurrences were composites of ember ops (``linear``, ``sigmoid``, ``tanh``, ``chunk``, ``cat``, ``stack``):
about fifteen recorded ops per time step. ``run_direction`` runs one direction of one layer as a single node:
the device namespace's ``rnn_forward`` (ember/devices/cpu/nn_rnn.py) steps through time with the kernels the
composite called, in its order, and keeps the activations backward needs; the node's backward is the
namespace's ``rnn_backward``, the reverse loop with the kernels the composite's derivative rules call, each sum
formed in the order ember's engine formed the composite's: values and gradients are the composite's to the last
bit. The input projection ``linear(x, w_ih, b_ih)`` stays an op of its own (one matmul for every step, as
PyTorch's). The node carries PyTorch's name for the tensor a user sees (``StackBackward0`` for a padded
sequence, ``MkldnnRnnLayerBackward0`` for a float32 LSTM, ``CatBackward0`` for packed data, the last op's name for
a cell). Under ``create_graph`` the node's backward recomputes the composite from its saved inputs and
differentiates that, so second derivatives are the composite's too. Where the loop does not apply (forward-mode
tangents, float16/bfloat16/complex, the 'meta' device, vmap and torch.func transforms, saved-tensor hooks, graph
observers and tracers, anomaly mode) the composite runs as before.

The composite (``_lstm_step``, ``_gru_step``, ``_rnn_tanh_step``, ``_rnn_relu_step``, ``composite_direction``)
lives here too: the nn layers call it through ``run_direction`` and ``run_cell``.
"""
from __future__ import annotations

from .._device import NAMESPACES
from .._dtype import float32, float64
from .._state import fwd_state, func_depth
from .._tensor import Tensor, make
from ..autograd import _primitive as _P
from ..autograd import grad_mode as _gm
from ..autograd._primitive import _NO_EDGE, _ndarray
from ..autograd.anomaly_mode import _anomaly
from ..autograd.graph import FREED, FREED_MESSAGE, HOOKS_ON, NODE_OBSERVERS, Node, grad_accumulator, modified_message
from .nn_activation import linear

__all__ = ["run_direction", "run_cell", "composite_direction", "STEPS"]


# ----- the composite: one step of each recurrence --------------------------------------------------------------
# ``xg`` is the input's projection W_ih x + b_ih (already computed for every step), ``h``/``c`` the state.

def _hidden_gates(h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    # linear, as PyTorch's cells (CellParams::linear_hh): under autocast it is the op that runs in lower precision
    return linear(h, w_hh, b_hh)


def _rnn_tanh_step(xg, state, w_hh, b_hh, w_hr):
    return ((xg + _hidden_gates(state[0], w_hh, b_hh)).tanh(),)


def _rnn_relu_step(xg, state, w_hh, b_hh, w_hr):
    return ((xg + _hidden_gates(state[0], w_hh, b_hh)).relu(),)


def _lstm_step(xg, state, w_hh, b_hh, w_hr):
    h, c = state
    i, f, g, o = (xg + _hidden_gates(h, w_hh, b_hh)).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(xg, state, w_hh, b_hh, w_hr):
    h = state[0]
    x_r, x_z, x_n = xg.chunk(3, 1)
    h_r, h_z, h_n = _hidden_gates(h, w_hh, b_hh).chunk(3, 1)
    r = (h_r + x_r).sigmoid()
    z = (h_z + x_z).sigmoid()
    n = (x_n + h_n * r).tanh()
    # (h - n) * z + n is PyTorch's arrangement of (1 - z) * n + z * h
    return ((h - n) * z + n,)


STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _steps_of(xg: Tensor, sizes: list[int] | None) -> tuple[list[Tensor], list[int]]:
    if sizes is None:
        return list(xg.unbind(0)), [xg.shape[1]] * xg.shape[0]
    return list(xg.split(sizes, 0)), sizes


def composite_direction(mode: str, xg: Tensor, sizes: list[int] | None, state0: tuple[Tensor, ...], w_hh, b_hh,
                        w_hr, reverse: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """One direction of one layer stepped through time with ember ops. ``xg`` is (T, B, G) (``sizes`` None) or
    packed (N, G) with the batch sizes (sorted by decreasing length: ``sizes[t]`` rows run at step ``t``).
    Returns the outputs (stacked, or concatenated for packed data) and the final state of every sequence (each
    taken at that sequence's last step)."""
    from .shape import cat, stack
    step = STEPS[mode]
    packed = sizes is not None
    xg_steps, sizes = _steps_of(xg, sizes)
    outs: list[Tensor] = [None] * len(xg_steps)   # type: ignore[list-item]
    if not reverse:
        state = state0
        done: list[tuple[Tensor, ...]] = []   # the finished rows, last batch rows first
        for t, (x, bs) in enumerate(zip(xg_steps, sizes)):
            if bs < state[0].shape[0]:
                done.append(tuple(s[bs:] for s in state))
                state = tuple(s[:bs] for s in state)
            state = step(x, state, w_hh, b_hh, w_hr)
            outs[t] = state[0]
        if done:
            state = tuple(cat([state[k]] + [d[k] for d in reversed(done)]) for k in range(len(state)))
    else:
        n = sizes[-1] if sizes else state0[0].shape[0]
        state = tuple(s[:n] for s in state0)
        for t in range(len(xg_steps) - 1, -1, -1):
            bs = sizes[t]
            if bs > n:   # sequences that start (at their last step) here join with their initial state
                state = tuple(cat([s, s0[n:bs]]) for s, s0 in zip(state, state0))
                n = bs
            state = step(xg_steps[t], state, w_hh, b_hh, w_hr)
            outs[t] = state[0]
    return (cat(outs, 0) if packed else stack(outs, 0)), state


# ----- the node ------------------------------------------------------------------------------------------------

class _RnnNode(Node):
    """The backward of one direction of one layer (or of one cell step): outputs (the sequence's outputs, then
    the final h[, c]); inputs the present ones of (xg, h0, c0, w_hh, b_hh, w_hr). Subclassed per PyTorch name
    (``StackBackward0``...)."""

    __slots__ = ("_spec", "_inputs", "_saved", "_out_shapes")

    @property
    def num_outputs(self) -> int:
        return len(self._out_shapes)

    def _release(self) -> None:
        self._saved = FREED
        self._inputs = ()

    def _checked_inputs(self) -> list:
        for t, v in self._inputs:
            if t is not None and t._vc[0] != v:
                raise RuntimeError(modified_message(t, v, saver=self))
        return [t for t, _ in self._inputs]

    def apply(self, grads, create_graph, needed):
        if self._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        mode, sizes, reverse, present, layout = self._spec
        inputs = self._checked_inputs()
        grads = list(grads) + [None] * (len(self._out_shapes) - len(grads))
        if create_graph:
            return self._apply_graph(inputs, grads, needed)
        xg, h0, c0, w_hh, b_hh, w_hr = (None if t is None else t._data for t in inputs)
        xp = NAMESPACES[type(xg)]
        state0 = (h0, c0) if mode == "LSTM" else (h0,)
        # (a cell's outputs are its new state; a layer's, its outputs then its final states)
        g_y, g_finals = (None, grads) if layout == "cell" else (grads[0], grads[1:])
        edges = self.next_functions
        want = [edges[k][0] is not None and (needed is None or needed[k]) for k in range(len(edges))]
        need_w = any(w for w, i in zip(want, present) if i == 3)
        gx, gh0, gw, gb, gwr = xp.rnn_backward(mode, self._saved, state0, w_hh, b_hh, w_hr, reverse, layout, g_y,
                                               g_finals, need_w)
        by_input = (gx, gh0[0], gh0[1] if len(gh0) > 1 else None, gw, gb, gwr)
        return [by_input[i] if w else None for w, i in zip(want, present)]

    def _apply_graph(self, inputs, grads, needed):
        """Under create_graph: the composite recomputed from the saved inputs and differentiated, so that the
        gradients have a graph (second derivatives are the composite's)."""
        from ..autograd.engine import grad as _grad
        mode, sizes, reverse, present, layout = self._spec
        xg, h0, c0, w_hh, b_hh, w_hr = inputs
        state0 = (h0, c0) if mode == "LSTM" else (h0,)
        with _gm.enable_grad():
            if layout == "cell":
                outs = STEPS[mode](xg, state0, w_hh, b_hh, None)
            else:
                seq, finals = composite_direction(mode, xg, sizes, state0, w_hh, b_hh, w_hr, reverse)
                outs = (seq,) + tuple(finals)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
        edges = self.next_functions
        wanted = [k for k, i in enumerate(present)
                  if edges[k][0] is not None and (needed is None or needed[k])]
        if not wanted:
            return [None] * len(present)
        res = _grad([o for o, _ in pairs], [inputs[present[k]] for k in wanted], [g for _, g in pairs],
                    retain_graph=True, create_graph=True, allow_unused=True)
        out = [None] * len(present)
        for k, g in zip(wanted, res):
            out[k] = g
        return out


def _edge(a: Tensor):
    fn = a.grad_fn
    if fn is not None:
        return (fn, a._output_nr)
    if a._requires_grad and not (a._base is not None and a._view_nograd):
        return (grad_accumulator(a), 0)
    return _NO_EDGE


def fusable(*tensors) -> bool:
    """Whether the fused loop applies to these inputs (else the composite runs): float32 or float64 tensors with
    data (not 'meta'), none empty; no forward-mode tangents, transform, saved-tensor hooks, graph observer, tracer
    (``observe_results``) or anomaly mode."""
    if fwd_state.level or func_depth[0] or HOOKS_ON or NODE_OBSERVERS or _anomaly.enabled or \
            _P._result is not _PLAIN_RESULT:   # (observe_results: a tracer wants to see every op)
        return False
    kind = None
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor):   # (Parameters pass; vmap's batched tensors come with func_depth set)
            return False
        d = t._data
        if kind is None:
            kind = (type(d), d.dtype)
            if type(d) is not _ndarray and (type(d) not in NAMESPACES or t.device.type == "meta"):
                return False
            if t.dtype not in _FLOATS:
                return False
        elif (type(d), d.dtype) != kind:   # mixed dtypes or devices: the composite's ops raise PyTorch's errors
            return False
        if 0 in d.shape:
            return False
        if t._base is not None and t._vc[0] != t._view_v:
            return False
    return True


def _outputs(node_name: str, spec, inputs: list, arrays: list, saved) -> list:
    """The output tensors; recorded under one node when grad mode is on and some input requires grad."""
    outs = [make(a) for a in arrays]
    if not (_gm._state.enabled and any(t is not None and t._requires_grad for t in inputs)):
        return outs
    present = tuple(i for i, t in enumerate(inputs) if t is not None)
    node = _new_node(node_name)
    node.next_functions = tuple(_edge(inputs[i]) for i in present)
    _numbered(node)
    mode, sizes, reverse, layout = spec
    node._spec = (mode, sizes, reverse, present, layout)
    node._inputs = [(t, t._vc[0]) if t is not None else (None, 0) for t in inputs]
    node._saved = saved
    node._out_shapes = tuple(a.shape for a in arrays)
    for i, o in enumerate(outs):
        o.grad_fn, o._output_nr, o._requires_grad = node, i, True
    return outs


def _saved_array(which: int):
    """``grad_fn._saved_<name>`` of a fused cell: activation ``which`` of its step (PyTorch's saved tensor)."""
    def get(node):
        if node._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        return make(node._saved[0][0][which])
    return property(get)


# the saved values PyTorch's node of the same name shows (grad_fn._saved_dim, ...): a cell's activations
_SAVED_ATTRS = {
    "StackBackward0": {"_saved_dim": property(lambda node: 0)},
    "CatBackward0": {"_saved_dim": property(lambda node: 0)},
    "MulBackward0": {"_saved_self": _saved_array(5), "_saved_other": _saved_array(6)},   # sigmoid(o), tanh(c')
    "TanhBackward0": {"_saved_result": _saved_array(1)},
    "ReluBackward0": {"_saved_result": _saved_array(1)},
}

_NODE_CLASSES: dict = {}
_FLOATS = (float32, float64)
_PLAIN_RESULT = _P._result


def _new_node(name: str, base: type = None) -> Node:
    """A node of class ``name`` (PyTorch's name of the tensor's grad_fn), made once per name and base."""
    base = base or _RnnNode
    cls = _NODE_CLASSES.get((name, base))
    if cls is None:
        attrs = dict(_SAVED_ATTRS.get(name, {})) if base is _RnnNode else {}
        cls = _NODE_CLASSES[name, base] = type(name, (base,), {"__slots__": (), **attrs})
    return object.__new__(cls)


def _numbered(node: Node) -> Node:
    """Give ``node`` its sequence number once its edges are set: the engine runs nodes newest first, so a node must be
    newer than every node it has an edge to (an edge may make a leaf's AccumulateGrad just now)."""
    from ..autograd.graph import _seq
    node._seq = next(_seq)
    return node


# ----- entry points --------------------------------------------------------------------------------------------

def run_direction(mode: str, xg: Tensor, sizes: list[int] | None, state0: tuple[Tensor, ...], w_hh, b_hh, w_hr,
                  reverse: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """``composite_direction``'s results, from the fused loop where it applies."""
    if not fusable(xg, *state0, w_hh, b_hh, w_hr):
        return composite_direction(mode, xg, sizes, state0, w_hh, b_hh, w_hr, reverse)
    xd = xg._data
    layout = "padded" if sizes is None else "packed"
    raw = [None if t is None else t._data for t in (w_hh, b_hh, w_hr)]
    seq, finals, saved = NAMESPACES[type(xd)].rnn_forward(mode, xd, sizes, tuple(s._data for s in state0), *raw,
                                                           reverse, layout)
    if sizes is not None:
        name = "CatBackward0"
    elif mode == "LSTM" and w_hr is None and xg.dtype is float32:
        name = "MkldnnRnnLayerBackward0"   # PyTorch's CPU LSTM in float32 runs each layer as one oneDNN op
    else:
        name = "StackBackward0"
    c0 = state0[1] if mode == "LSTM" else None
    res = _outputs(name, (mode, sizes, reverse, layout), [xg, state0[0], c0, w_hh, b_hh, w_hr], [seq, *finals],
                   saved)
    return res[0], tuple(res[1:])


class _PassNode(Node):
    """A second name for one output of a fused cell (LSTMCell's c' is PyTorch's AddBackward0 where its h' is
    MulBackward0): hands its gradient to that output of the cell's node."""

    __slots__ = ()

    def apply(self, grads, create_graph, needed):
        return [grads[0]]


_CELL_NAMES = {"LSTM": "MulBackward0", "GRU": "AddBackward0", "RNN_TANH": "TanhBackward0",
               "RNN_RELU": "ReluBackward0"}


def run_cell(mode: str, xg: Tensor, state: tuple[Tensor, ...], w_hh, b_hh) -> tuple[Tensor, ...]:
    """One step of a cell from its input projection ``xg`` (B, G): the new state, as ``STEPS[mode]`` computes
    it, from the fused step where it applies."""
    if not fusable(xg, *state, w_hh, b_hh):
        return STEPS[mode](xg, state, w_hh, b_hh, None)
    xd = xg._data
    raw = [None if t is None else t._data for t in (w_hh, b_hh)]
    _, finals, saved = NAMESPACES[type(xd)].rnn_forward(mode, xd, None, tuple(s._data for s in state), *raw, None,
                                                         False, "cell")
    c0 = state[1] if mode == "LSTM" else None
    res = _outputs(_CELL_NAMES[mode], (mode, None, False, "cell"), [xg, state[0], c0, w_hh, b_hh, None],
                   list(finals), saved)
    if mode == "LSTM" and res[1].grad_fn is not None:
        c = res[1]
        node = _new_node("AddBackward0", _PassNode)
        node.next_functions = ((c.grad_fn, 1),)
        _numbered(node)
        c2 = make(c._data)
        c2.grad_fn, c2._output_nr, c2._requires_grad = node, 0, True
        res[1] = c2
    return tuple(res)
