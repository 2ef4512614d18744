"""The torch-level recurrent functions nn.RNN, LSTM, GRU and their cells call in PyTorch: ``torch.rnn_tanh``,
``rnn_relu``, ``lstm``, ``gru`` (ATen's signatures: a flat list of weights, both the padded ``input`` and the
packed ``data, batch_sizes`` forms) and ``rnn_tanh_cell``, ``rnn_relu_cell``, ``lstm_cell``, ``gru_cell``, and the
recurrences they run (the layers of ``nn/modules/rnn.py`` call these functions too, as PyTorch's call ``_VF.lstm``,
so values, gradients and dropout's random draws are the layers', and autocast sees the calls PyTorch's sees)."""
from __future__ import annotations

from .._tensor import Tensor
from . import functional as F

__all__ = ["rnn_tanh", "rnn_relu", "lstm", "gru", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


# ----- one step of each recurrence ---------------------------------------------------------------------------
# ``xg`` is the input's projection W_ih x + b_ih (already computed for every step), ``h``/``c`` the state.

def _hidden_gates(h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    # F.linear, as PyTorch's cells (CellParams::linear_hh): under autocast it is the op that runs in lower precision
    return F.linear(h, w_hh, b_hh)


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


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _run_direction(step, xg_steps: list[Tensor], sizes: list[int], state0: tuple[Tensor, ...], w_hh, b_hh, w_hr,
                   reverse: bool) -> tuple[list[Tensor], tuple[Tensor, ...]]:
    """Steps one direction of one layer through time. ``sizes[t]`` rows of the batch are running at step ``t``
    (the batch is sorted by decreasing length). Returns the outputs of each step (in time order) and the final
    state of every sequence (each taken at that sequence's last step)."""
    from ..ops.public import cat
    outs: list[Tensor] = [None] * len(xg_steps)   # type: ignore[list-item]
    if not reverse:
        state = state0
        done: list[tuple[Tensor, ...]] = []   # the finished rows, last batch rows first
        for t, (xg, bs) in enumerate(zip(xg_steps, sizes)):
            if bs < state[0].shape[0]:
                done.append(tuple(s[bs:] for s in state))
                state = tuple(s[:bs] for s in state)
            state = step(xg, state, w_hh, b_hh, w_hr)
            outs[t] = state[0]
        if done:
            state = tuple(cat([state[k]] + [d[k] for d in reversed(done)]) for k in range(len(state)))
        return outs, state
    n = sizes[-1] if sizes else state0[0].shape[0]
    state = tuple(s[:n] for s in state0)
    for t in range(len(xg_steps) - 1, -1, -1):
        bs = sizes[t]
        if bs > n:   # sequences that start (at their last step) here join with their initial state
            state = tuple(cat([s, s0[n:bs]]) for s, s0 in zip(state, state0))
            n = bs
        state = step(xg_steps[t], state, w_hh, b_hh, w_hr)
        outs[t] = state[0]
    return outs, state


def _rnn_layers(mode: str, input: Tensor, sizes: list[int] | None, hx: tuple[Tensor, ...],
                weights: list[list[Tensor | None]], num_layers: int, dropout: float, training: bool,
                bidirectional: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """The multi-layer recurrence. ``input`` is (T, B, I) with ``sizes`` None, or packed data (N, I) with the batch
    sizes. ``hx`` holds the initial states, each (layers * directions, B, H). ``weights[layer * D + d]`` is
    [w_ih, w_hh, b_ih, b_hh, w_hr] (absent ones None). Returns the last layer's output (same layout as the
    input) and the final states, stacked like ``hx``."""
    from ..ops.public import cat, stack
    step = _STEPS[mode]
    dirs = 2 if bidirectional else 1
    finals: list[tuple[Tensor, ...]] = []
    layer_input = input
    for layer in range(num_layers):
        outputs = []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[layer * dirs + d]
            xg = F.linear(layer_input, w_ih, b_ih)   # PyTorch's CellParams::linear_ih, on every step at once
            if sizes is None:
                xg_steps = list(xg.unbind(0))
                run_sizes = [xg.shape[1]] * xg.shape[0]
            else:
                xg_steps = list(xg.split(sizes, 0))
                run_sizes = sizes
            state0 = tuple(h[layer * dirs + d] for h in hx)
            outs, state = _run_direction(step, xg_steps, run_sizes, state0, w_hh, b_hh, w_hr, reverse=d == 1)
            finals.append(state)
            if sizes is None:
                outputs.append(stack(outs, 0) if outs else xg.new_zeros(tuple(xg.shape[:2]) + (state[0].shape[-1],)))
            else:
                outputs.append(cat(outs, 0))
        layer_input = outputs[0] if dirs == 1 else cat(outputs, -1)
        if dropout != 0 and training and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, tuple(stack([f[k] for f in finals], 0) for k in range(len(hx)))



def _cell(mode: str, input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor, b_ih, b_hh) -> tuple:
    xg = F.linear(input, w_ih, b_ih)
    return _STEPS[mode](xg, hx, w_hh, b_hh, None)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """``tanh(input W_ih^T + b_ih + hx W_hh^T + b_hh)``."""
    return _cell("RNN_TANH", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    return _cell("RNN_RELU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    return _cell("GRU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(h', c') from ``hx = (h, c)``."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to contain two tensors, but got {len(hx)}")
    return _cell("LSTM", input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def _weights(params, has_biases: bool, num_layers: int, bidirectional: bool, proj: bool) -> list:
    """ATen's flat weight list, per layer and direction: w_ih, w_hh[, b_ih, b_hh][, w_hr]."""
    per = 2 + 2 * has_biases + proj
    n = num_layers * (2 if bidirectional else 1)
    params = list(params)
    if len(params) != n * per:
        raise RuntimeError(f"Expected {n * per} weights for {num_layers} layer(s), got {len(params)}")
    out = []
    for i in range(n):
        p = params[i * per:(i + 1) * per]
        w_ih, w_hh = p[0], p[1]
        b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
        out.append([w_ih, w_hh, b_ih, b_hh, p[-1] if proj else None])
    return out


def _run(mode: str, args: tuple, n_states: int):
    """Both ATen overloads: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) and the packed (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)."""
    # the hidden state is a Tensor (a pair for LSTM) where the packed form has batch_sizes
    packed = isinstance(args[1], Tensor) and (mode == "LSTM" or isinstance(args[2], Tensor))
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
        sizes, batch_first, input = [int(v) for v in batch_sizes.tolist()], False, data
    else:
        input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        sizes = None
    hx = tuple(hx) if n_states == 2 else (hx,)
    proj = mode == "LSTM" and hx[0].shape[-1] != hx[1].shape[-1]
    weights = _weights(params, has_biases, num_layers, bidirectional, proj)
    if sizes is None and batch_first:
        input = input.transpose(0, 1)
    if sizes is None and input.shape[0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    out, states = _rnn_layers(mode, input, sizes, hx, weights, num_layers, dropout, train, bidirectional)
    if sizes is None and batch_first:
        out = out.transpose(0, 1)
    return (out, *states)


def rnn_tanh(*args) -> tuple[Tensor, Tensor]:
    """(output, h_n) of a multi-layer tanh RNN (the weights as ATen's flat list)."""
    return _run("RNN_TANH", args, 1)


def rnn_relu(*args) -> tuple[Tensor, Tensor]:
    return _run("RNN_RELU", args, 1)


def gru(*args) -> tuple[Tensor, Tensor]:
    return _run("GRU", args, 1)


def lstm(*args) -> tuple[Tensor, Tensor, Tensor]:
    """(output, h_n, c_n); ``hx = (h_0, c_0)``; projections (w_hr) when h_0's size differs from c_0's."""
    return _run("LSTM", args, 2)
