"""Op database entries of the recurrent functions: ``torch.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu`` (ATen's
flat-weight signatures, padded and packed) and the cells (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
``rnn_relu_cell``). In ember each direction of a layer is one fused node (ember/ops/rnn.py) over the time loop of
ember/devices/cpu/nn_rnn.py; tests/test_nn_rnn.py checks the modules, bit-identity with the composite and the
fallbacks."""
from __future__ import annotations

from op_db import OpInfo, XFail

OPS: list = []
HYP_BINARY: list = []
HYP_UNARY: list = []

T, B, I, H, P = 3, 2, 3, 2, 1   # sequence, batch, input, hidden, projection sizes


def _weights(gates: int, layers: int = 1, dirs: int = 1, bias: bool = True, proj: int = 0) -> list:
    """ATen's flat weight list's shapes: per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr]."""
    out = []
    real = proj or H
    for layer in range(layers):
        for _ in range(dirs):
            inp = I if layer == 0 else real * dirs
            out += [(gates * H, inp), (gates * H, real)]
            if bias:
                out += [(gates * H,), (gates * H,)]
            if proj:
                out += [(proj, H)]
    return out


def _layer(fn: str, n_states: int):
    """``m.<fn>(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``; with
    ``batch_sizes`` the packed form ``m.<fn>(data, batch_sizes, hx, params, ...)``."""
    def op(m, x, *rest, layers=1, bidirectional=False, batch_first=False, bias=True, batch_sizes=None):
        hx = rest[:n_states]
        h = tuple(hx) if n_states == 2 else hx[0]
        params = list(rest[n_states:])
        if batch_sizes is not None:
            return getattr(m, fn)(x, m.tensor(batch_sizes), h, params, bias, layers, 0.0, False, bidirectional)
        return getattr(m, fn)(x, h, params, bias, layers, 0.0, False, bidirectional, batch_first)
    return op


def _layer_samples(gates: int, lstm: bool):
    def states(layers, dirs, batch, proj=0):
        hs = [(layers * dirs, batch, proj or H)]
        return hs + [(layers * dirs, batch, H)] if lstm else hs
    cases = [
        ([(T, B, I)] + states(1, 1, B) + _weights(gates), {}),
        ([(B, T, I)] + states(2, 2, B) + _weights(gates, 2, 2), {"layers": 2, "bidirectional": True,
                                                                "batch_first": True}),
        ([(T, B, I)] + states(1, 1, B) + _weights(gates, bias=False), {"bias": False}),
        ([(B, T, I)] + states(1, 1, B) + _weights(gates), {"batch_first": True}),
        # packed: lengths 3, 1 (batch sizes 2, 1, 1), both directions
        ([(4, I)] + states(1, 2, B) + _weights(gates, 1, 2), {"bidirectional": True, "batch_sizes": [2, 1, 1]}),
    ]
    if lstm:
        cases.append(([(T, B, I)] + states(1, 2, B, P) + _weights(gates, 1, 2, proj=P), {"bidirectional": True}))
    return cases


def _cell(fn: str, n_states: int):
    def op(m, x, *rest):
        hx = rest[:n_states]
        return getattr(m, fn)(x, tuple(hx) if n_states == 2 else hx[0], *rest[n_states:])
    return op


def _cell_samples(gates: int, n_states: int):
    return [([(B, I)] + [(B, H)] * n_states + [(gates * H, I), (gates * H, H), (gates * H,), (gates * H,)], {}),
            ([(B, I)] + [(B, H)] * n_states + [(gates * H, I), (gates * H, H)], {})]


# one node per layer and direction (per cell step): its edges go to the gate projection, the states and the weights,
# where PyTorch's output nodes (StackBackward0, MulBackward0, ...) have the composite's per-step ops below them
_FUSED = (XFail("structure", "one fused node per layer and direction: the nodes below it are the input projection, "
                             "the states and the weights, not PyTorch's per-step ops"),)

for _name, _gates, _n in (("lstm", 4, 2), ("gru", 3, 1), ("rnn_tanh", 1, 1), ("rnn_relu", 1, 1)):
    OPS.append(OpInfo(_name, _layer(_name, _n), _layer_samples(_gates, _name == "lstm"), "nonzero", xfails=_FUSED))
    OPS.append(OpInfo(f"{_name}_cell", _cell(f"{_name}_cell", _n), _cell_samples(_gates, _n), "nonzero",
                      xfails=_FUSED))
