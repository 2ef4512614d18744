"""The torch-level recurrent functions nn.RNN, LSTM, GRU and their cells call in PyTorch: ``torch.rnn_tanh``,
``rnn_relu``, ``lstm``, ``gru`` (ATen's signatures: a flat list of weights, both the padded ``input`` and the
packed ``data, batch_sizes`` forms) and ``rnn_tanh_cell``, ``rnn_relu_cell``, ``lstm_cell``, ``gru_cell``, and the
recurrences they run (the layers of ``nn/modules/rnn.py`` call these functions too, as PyTorch's call ``_VF.lstm``,
so values, gradients and dropout's random draws are the layers', and autocast sees the calls PyTorch's sees). Each
direction of a layer, and each cell step, runs as one fused node where it can (ember/ops/rnn.py)."""
from __future__ import annotations

from .._tensor import Tensor
from ..amp.autocast_mode import is_autocast_enabled
from ..ops.rnn import STEPS as _STEPS, composite_direction as _composite_direction, run_cell as _run_cell
from ..ops.rnn import run_direction as _run_direction
from ..ops.rnn import _gru_step, _lstm_step, _rnn_relu_step, _rnn_tanh_step   # noqa: F401 (nn.modules.rnn's)
from . import functional as F

__all__ = ["rnn_tanh", "rnn_relu", "lstm", "gru", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def _rnn_layers(mode: str, input: Tensor, sizes: list[int] | None, hx: tuple[Tensor, ...],
                weights: list[list[Tensor | None]], num_layers: int, dropout: float, training: bool,
                bidirectional: bool) -> tuple[Tensor, tuple[Tensor, ...]]:
    """The multi-layer recurrence. ``input`` is (T, B, I) with ``sizes`` None, or packed data (N, I) with the batch
    sizes. ``hx`` holds the initial states, each (layers * directions, B, H). ``weights[layer * D + d]`` is
    [w_ih, w_hh, b_ih, b_hh, w_hr] (absent ones None). Returns the last layer's output (same layout as the
    input) and the final states, stacked like ``hx``."""
    from ..ops.public import cat, stack
    dirs = 2 if bidirectional else 1
    # under autocast the composite's linears run in lower precision: the fused loop has no such path
    run = _composite_direction if is_autocast_enabled("cpu") else _run_direction
    finals: list[tuple[Tensor, ...]] = []
    layer_input = input
    for layer in range(num_layers):
        outputs = []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[layer * dirs + d]
            xg = F.linear(layer_input, w_ih, b_ih)   # PyTorch's CellParams::linear_ih, on every step at once
            state0 = tuple(h[layer * dirs + d] for h in hx)
            if sizes is None and xg.shape[0] == 0:
                outputs.append(xg.new_zeros(tuple(xg.shape[:2]) + (state0[0].shape[-1],)))
                finals.append(state0)
                continue
            out, state = run(mode, xg, sizes, state0, w_hh, b_hh, w_hr, d == 1)
            finals.append(state)
            outputs.append(out)
        layer_input = outputs[0] if dirs == 1 else cat(outputs, -1)
        if dropout != 0 and training and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, tuple(stack([f[k] for f in finals], 0) for k in range(len(hx)))



def _cell(mode: str, input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor, b_ih, b_hh) -> tuple:
    xg = F.linear(input, w_ih, b_ih)
    if is_autocast_enabled("cpu"):   # the composite's hidden linear runs in lower precision
        return _STEPS[mode](xg, hx, w_hh, b_hh, None)
    return _run_cell(mode, xg, tuple(hx), w_hh, b_hh)


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
        # PyTorch's names: its LSTM transposes the result (TransposeBackward0), the others in place (TransposeBackward1)
        out = out.transpose(0, 1) if mode == "LSTM" else out.transpose_(0, 1)
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
