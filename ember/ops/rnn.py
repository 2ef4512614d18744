"""Recurrent layers as one graph node per layer and direction: the time loop of ``torch.lstm``, ``gru``,
``rnn_tanh`` and ``rnn_relu`` (and of their cells) runs over raw arrays.

The recurrences were composites of ember ops (``linear``, ``sigmoid``, ``tanh``, ``chunk``, ``cat``, ``stack``):
about fifteen recorded ops per time step. ``run_direction`` now runs one direction of one layer as a single
node: the forward loop calls the device's kernels (``xp.addprod``, ``xp.sigmoid``...) in the composite's order,
keeps the activations backward needs, and the node's backward runs the reverse loop with the very kernels the
composite's derivative rules call, accumulating in the order ember's engine accumulated the composite's
gradients: values and gradients are the composite's to the last bit. The node carries PyTorch's name for the
tensor a user sees (``StackBackward0`` for a padded sequence, ``CatBackward0`` for packed data, the last op's name
for a cell). Under ``create_graph`` the node's backward recomputes the composite from its saved inputs and
differentiates that, so second derivatives are the composite's too. Where the loop does not apply (forward-mode
tangents, float16/bfloat16/complex, devices other than the CPU, vmap and torch.func transforms, saved-tensor
hooks, graph observers) the composite runs as before.

The composite (``_lstm_step``, ``_gru_step``, ``_rnn_tanh_step``, ``_rnn_relu_step``, ``composite_direction``)
lives here too: the nn layers call it through ``run_direction``.
"""
from __future__ import annotations

from .._state import fwd_state, func_depth
from .._tensor import Tensor, make
from ..autograd import grad_mode as _gm
from ..autograd._primitive import _NO_EDGE, _NP_NS, _ndarray
from ..autograd.anomaly_mode import _anomaly
from ..autograd.graph import (FREED, FREED_MESSAGE, HOOKS_ON, NODE_OBSERVERS, Node, grad_accumulator,
                              modified_message, node_class)
from .linalg.products import _matmul_grad_a, _matmul_grad_b, addprod_p
from .nn_activation import linear
from .shape import permute_p

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
    if packed_of(xg, sizes):
        return cat(outs, 0), state
    return stack(outs, 0), state


def packed_of(xg, sizes) -> bool:
    return xg.dim() == 2


# ----- the fused loop: forward ---------------------------------------------------------------------------------

_ADDMM = {"eq": "ij,jk->ik", "beta": 1, "alpha": 1}
_T = {"dims": (1, 0)}


def _hidden(xp, h, wt, b_hh):
    """The composite's ``linear(h, w_hh, b_hh)``: addmm (or mm) with ``w_hh.t()``."""
    if b_hh is not None:
        return xp.addprod(b_hh, h, wt, "ij,jk->ik", 1, 1)
    return xp.matmul_forward(h, wt)


def _fwd_step(xp, mode, x, state, wt, b_hh, wrt, H):
    """One step on raw arrays, in the composite's order of operations; returns the new state and what the
    backward step reads."""
    h = state[0]
    hg = _hidden(xp, h, wt, b_hh)
    if mode == "LSTM":
        c = state[1]
        gates = x + hg
        i, f, g, o = gates[:, :H], gates[:, H:2 * H], gates[:, 2 * H:3 * H], gates[:, 3 * H:]
        fs = xp.sigmoid(f)
        a = fs * c
        is_ = xp.sigmoid(i)
        gt = xp.tanh(g)
        c_new = a + is_ * gt
        os_ = xp.sigmoid(o)
        tc = xp.tanh(c_new)
        hp = os_ * tc
        h_new = xp.matmul_forward(hp, wrt) if wrt is not None else hp
        return (h_new, c_new), (h, c, fs, is_, gt, os_, tc, hp)
    if mode == "GRU":
        x_r, x_z, x_n = x[:, :H], x[:, H:2 * H], x[:, 2 * H:]
        h_r, h_z, h_n = hg[:, :H], hg[:, H:2 * H], hg[:, 2 * H:]
        r = xp.sigmoid(h_r + x_r)
        z = xp.sigmoid(h_z + x_z)
        n = xp.tanh(x_n + h_n * r)
        d = h - n
        return (d * z + n,), (h, h_n, r, z, n, d)
    pre = x + hg
    out = xp.tanh(pre) if mode == "RNN_TANH" else xp.relu(pre)
    return (out,), (h, out)


def _fwd_loop(xp, mode, xs, sizes, state0, w_hh, b_hh, w_hr, reverse):
    """The forward of ``composite_direction`` on raw arrays: per-step outputs, final states, per-step saves and
    the batch operations (slices, joins) backward must undo."""
    H = state0[-1].shape[1] if mode == "LSTM" else state0[0].shape[1]
    wt = xp.permute(w_hh, (1, 0))
    wrt = xp.permute(w_hr, (1, 0)) if w_hr is not None else None
    T = len(xs)
    outs = [None] * T
    saves = [None] * T
    events = [None] * T   # per step: None, ("slice", bs) (forward: rows bs: finished) or ("join", n, bs)
    if not reverse:
        state = state0
        done = []
        for t in range(T):
            bs = sizes[t]
            if bs < state[0].shape[0]:
                done.append(tuple(s[bs:] for s in state))
                state = tuple(s[:bs] for s in state)
                events[t] = ("slice", bs, done[-1])
            state, saves[t] = _fwd_step(xp, mode, xs[t], state, wt, b_hh, wrt, H)
            outs[t] = state[0]
        if done:
            state = tuple(xp.cat([state[k]] + [d[k] for d in reversed(done)], 0) for k in range(len(state)))
    else:
        n = sizes[-1] if sizes else state0[0].shape[0]
        state = tuple(s[:n] for s in state0)
        for t in range(T - 1, -1, -1):
            bs = sizes[t]
            if bs > n:
                state = tuple(xp.cat([s, s0[n:bs]], 0) for s, s0 in zip(state, state0))
                events[t] = ("join", n, bs)
                n = bs
            state, saves[t] = _fwd_step(xp, mode, xs[t], state, wt, b_hh, wrt, H)
            outs[t] = state[0]
    return outs, state, saves, events


# ----- the fused loop: backward --------------------------------------------------------------------------------

def _add(a, b):
    return b if a is None else a if b is None else a + b


def _bwd_step(xp, mode, gh, gc, sv, wrt, w_hr_grads):
    """One step's backward from the gradients of its new state (``gc`` may be None). Returns the gradient of the
    gate pre-activations as the input projection sees it (``gx``) and as the hidden projection sees it (``ghg``),
    the old ``h``'s gradient that does not pass the hidden projection (GRU's ``h - n``) and the old ``c``'s."""
    if mode == "LSTM":
        h, c, fs, is_, gt, os_, tc, hp = sv
        if wrt is not None:   # h = hp @ w_hr.t(): matmul's rules
            w_hr_grads.append(_matmul_grad_b(xp, gh, None, hp, wrt))
            gh = _matmul_grad_a(xp, gh, None, hp, wrt)
        g_os = gh * tc
        gc = _add(gc, xp.tanh_backward(gh * os_, tc))
        g_o = xp.sigmoid_backward(g_os, os_)
        g_g = xp.tanh_backward(gc * is_, gt)
        g_i = xp.sigmoid_backward(gc * gt, is_)
        g_f = xp.sigmoid_backward(gc * c, fs)
        g = xp.cat([g_i, g_f, g_g, g_o], 1)
        return g, g, None, gc * fs
    if mode == "GRU":
        h, h_n, r, z, n, d = sv
        g_sub = gh * z
        g_np = xp.tanh_backward(gh + -g_sub, n)   # n's gradient: the final add's, then h - n's
        g_zp = xp.sigmoid_backward(gh * d, z)
        g_rp = xp.sigmoid_backward(g_np * h_n, r)
        return xp.cat([g_rp, g_zp, g_np], 1), xp.cat([g_rp, g_zp, g_np * r], 1), g_sub, None
    out = sv[1]
    g = xp.tanh_backward(gh, out) if mode == "RNN_TANH" else xp.threshold_backward(gh, out, 0)
    return g, g, None, None


def _bwd_loop(xp, mode, saves, events, sizes, state0, w_hh, b_hh, w_hr, reverse, g_outs, g_finals, need_w):
    """The reverse loop of ``_fwd_loop``: the gradients of the per-step gate inputs, the initial states, w_hh,
    b_hh and w_hr, each sum formed in the order ember's engine formed the composite's (a state's gradient is its
    output's plus what the next step sends; GRU's three terms: (output + h - n's) + hidden projection's)."""
    wt = xp.permute(w_hh, (1, 0))
    wrt = xp.permute(w_hr, (1, 0)) if w_hr is not None else None
    T = len(saves)
    ns = len(state0)
    gxs = [None] * T
    gw = gb = gwr = None
    w_hr_grads: list = []
    order = list(range(T)) if reverse else list(range(T - 1, -1, -1))   # backward's order of the steps
    if reverse:
        pend = list(g_finals)   # (the state after step 0 has every row)
    else:
        last = sizes[T - 1]
        pend = [None if g is None else g[:last] for g in g_finals]
    with_out = False   # whether pend[0] already holds the output's gradient of the step that made the state
    gh0 = [None] * ns
    for k, t in enumerate(order):
        sv = saves[t]
        gh = pend[0] if with_out else _add(pend[0], g_outs[t])
        if gh is None:
            gh = xp.zeros_like(sv[0])
        gx, ghg, g_direct, g_c = _bwd_step(xp, mode, gh, pend[1] if ns == 2 else None, sv, wrt, w_hr_grads)
        gxs[t] = gx
        h_prev = sv[0]
        if b_hh is not None:
            gb = _add(gb, xp.sum_to(addprod_p.vjps[0](xp, ghg, None, b_hh, h_prev, wt, **_ADDMM), b_hh.shape))
            g_h = addprod_p.vjps[1](xp, ghg, None, b_hh, h_prev, wt, **_ADDMM)
            g_wt = addprod_p.vjps[2](xp, ghg, None, b_hh, h_prev, wt, **_ADDMM) if need_w else None
        else:
            g_h = _matmul_grad_a(xp, ghg, None, h_prev, wt)
            g_wt = _matmul_grad_b(xp, ghg, None, h_prev, wt) if need_w else None
        if g_wt is not None:
            gw = _add(gw, permute_p.vjps[0](xp, g_wt, None, None, **_T))
        ev = events[t]
        s = order[k + 1] if k + 1 < T else None   # the step that made this step's old state
        with_out = False
        if mode == "GRU" and ev is None and s is not None:
            pend = [_add(_add(g_outs[s], g_direct), g_h)]
            with_out = True
            continue
        contrib = [g_h if g_direct is None else g_direct + g_h] + ([g_c] if ns == 2 else [])
        if ev is not None and not reverse:   # rows [bs:] had finished: their final states' gradients
            bs, done = ev[1], ev[2]
            pend = [xp.cat([contrib[j], xp.zeros_like(done[j]) if g_finals[j] is None else
                            g_finals[j][bs:bs + done[j].shape[0]]], 0) for j in range(ns)]
        elif ev is not None:   # rows [n:bs] joined from the initial state here
            _, n, bs = ev
            for j in range(ns):
                gh0[j] = _rows_into(xp, gh0[j], contrib[j][n:bs], n, state0[j])
            pend = [g[:n] for g in contrib]
        else:
            pend = contrib
        if s is None:   # the initial state (its first rows, for the reverse direction)
            for j in range(ns):
                gh0[j] = pend[j] if not reverse and gh0[j] is None else _rows_into(xp, gh0[j], pend[j], 0, state0[j])
    for g in w_hr_grads:
        gwr = _add(gwr, permute_p.vjps[0](xp, g, None, None, **_T))
    return gxs, gh0, gw, gb, gwr


def _rows_into(xp, acc, rows, start, like):
    """``acc`` (zeros like ``like`` if None) with ``rows`` written at ``start``: a slice's gradient, padded."""
    if acc is None:
        acc = xp.zeros_like(like)
    acc[start:start + rows.shape[0]] = rows
    return acc


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

    def _checked_inputs(self) -> list:
        for t, v in self._inputs:
            if t is not None and t._vc[0] != v:
                raise RuntimeError(modified_message(t, v, saver=self))
        return [t for t, _ in self._inputs]

    def apply(self, grads, create_graph, needed):
        if self._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        mode, sizes, reverse, present, cell = self._spec
        inputs = self._checked_inputs()
        grads = list(grads) + [None] * (len(self._out_shapes) - len(grads))
        if create_graph:
            return self._apply_graph(inputs, grads, needed)
        g0 = next(g for g in grads if g is not None)
        xp = _NP_NS if type(g0) is _ndarray else None
        xg, h0, c0, w_hh, b_hh, w_hr = (None if t is None else t._data for t in inputs)
        saves, events = self._saved
        state0 = (h0, c0) if mode == "LSTM" else (h0,)
        g_seq, g_finals = (None, grads) if cell else (grads[0], grads[1:])   # (a cell's outputs: its new state)
        T = len(saves)
        if g_seq is None:
            g_outs = [None] * T
        elif sizes is None:
            g_outs = [g_seq[t] for t in range(T)]
        else:
            g_outs, at = [], 0
            for bs in sizes:
                g_outs.append(g_seq[at:at + bs])
                at += bs
        edges = self.next_functions
        want = [needed is None or needed[k] for k in range(len(edges))]
        pos = {i: k for k, i in enumerate(present)}
        need_w = 3 in pos and want[pos[3]] and edges[pos[3]][0] is not None
        run_sizes = sizes if sizes is not None else [xg.shape[0 if cell else 1]] * T
        gxs, gh0, gw, gb, gwr = _bwd_loop(xp, mode, saves, events, run_sizes, state0, w_hh, b_hh, w_hr, reverse,
                                          g_outs, g_finals, need_w)
        if cell:
            gx = gxs[0]
        elif sizes is None:
            gx = xp.stack(gxs, 0)
        else:
            gx = xp.cat(gxs, 0)
        by_input = {0: gx, 1: gh0[0], 2: gh0[1] if len(gh0) > 1 else None, 3: gw, 4: gb, 5: gwr}
        return [by_input[i] if want[k] and edges[k][0] is not None else None for k, i in enumerate(present)]

    def _apply_graph(self, inputs, grads, needed):
        """Under create_graph: the composite recomputed from the saved inputs and differentiated, so that the
        gradients have a graph (second derivatives are the composite's)."""
        from ..autograd.engine import grad as _grad
        mode, sizes, reverse, present, cell = self._spec
        xg, h0, c0, w_hh, b_hh, w_hr = inputs
        state0 = (h0, c0) if mode == "LSTM" else (h0,)
        with _gm.enable_grad():
            if cell:
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
    """Whether the fused loop applies to these inputs (else the composite runs): plain CPU tensors of float32 or
    float64, no forward-mode tangents, no transform, no saved-tensor hooks or graph observers, no anomaly mode."""
    if fwd_state.level or func_depth[0] or HOOKS_ON or NODE_OBSERVERS or _anomaly.enabled:
        return False
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor):   # (Parameters pass; vmap's batched tensors come with func_depth set)
            return False
        d = t._data
        if type(d) is not _ndarray or d.dtype.char not in "fd" or d.size == 0:
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
    mode, sizes, reverse, cell = spec
    node._spec = (mode, sizes, reverse, present, cell)
    node._inputs = [(t, t._vc[0]) if t is not None else (None, 0) for t in inputs]
    node._saved = saved
    node._out_shapes = tuple(a.shape for a in arrays)
    for i, o in enumerate(outs):
        o.grad_fn, o._output_nr, o._requires_grad = node, i, True
    return outs


_NODE_CLASSES: dict = {}


def _new_node(name: str, base: type = None) -> Node:
    """A node of class ``name`` (PyTorch's name of the tensor's grad_fn), made once per name and base."""
    base = base or _RnnNode
    cls = _NODE_CLASSES.get((name, base))
    if cls is None:
        cls = _NODE_CLASSES[name, base] = type(name, (base,), {"__slots__": ()})
    node = object.__new__(cls)
    from ..autograd.graph import _seq
    node._seq = next(_seq)
    return node


# ----- entry points --------------------------------------------------------------------------------------------

def run_direction(mode: str, xg: Tensor, sizes: list[int] | None, state0: tuple[Tensor, ...], w_hh, b_hh, w_hr,
                  reverse: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """``composite_direction``'s results, from the fused loop where it applies."""
    if not fusable(xg, *state0, w_hh, b_hh, w_hr):
        return composite_direction(mode, xg, sizes, state0, w_hh, b_hh, w_hr, reverse)
    xp = _NP_NS
    xd = xg._data
    if sizes is None:
        xs = [xd[t] for t in range(xd.shape[0])]
        run_sizes = [xd.shape[1]] * xd.shape[0]
    else:
        xs, at = [], 0
        for bs in sizes:
            xs.append(xd[at:at + bs])
            at += bs
        run_sizes = sizes
    raw = [None if t is None else t._data for t in (w_hh, b_hh, w_hr)]
    outs, finals, saves, events = _fwd_loop(xp, mode, xs, run_sizes, tuple(s._data for s in state0), *raw, reverse)
    seq = xp.stack(outs, 0) if sizes is None else xp.cat(outs, 0)
    c0 = state0[1] if mode == "LSTM" else None
    if sizes is not None:
        name = "CatBackward0"
    elif mode == "LSTM" and w_hr is None and xd.dtype.char == "f":
        name = "MkldnnRnnLayerBackward0"   # PyTorch's CPU LSTM in float32 runs each layer as one oneDNN op
    else:
        name = "StackBackward0"
    res = _outputs(name, (mode, sizes, reverse, False),
                   [xg, state0[0], c0, w_hh, b_hh, w_hr], [seq, *finals], (saves, events))
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
    raw = [None if t is None else t._data for t in (w_hh, b_hh)]
    _, finals, saves, events = _fwd_loop(_NP_NS, mode, [xg._data], [xg._data.shape[0]],
                                         tuple(s._data for s in state), *raw, None, False)
    c0 = state[1] if mode == "LSTM" else None
    res = _outputs(_CELL_NAMES[mode], (mode, None, False, True), [xg, state[0], c0, w_hh, b_hh, None],
                   list(finals), (saves, events))
    if mode == "LSTM" and res[1].grad_fn is not None:
        c = res[1]
        node = _new_node("AddBackward0", _PassNode)
        node.next_functions = ((c.grad_fn, 1),)
        c2 = make(c._data)
        c2.grad_fn, c2._output_nr, c2._requires_grad = node, 0, True
        res[1] = c2
    return tuple(res)
