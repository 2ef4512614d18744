"""Recurrent layers: RNN (tanh/relu), LSTM (with projections), GRU, and their single-step cells.

The recurrences are written with ember ops (linear, sigmoid, tanh, chunk, cat, stack), so backward, double
backward and forward mode come from the op table. Each layer projects its whole input through ``weight_ih`` in one
matmul, then steps through time; a packed batch is stepped the same way, the batch shrinking (forward direction)
or growing (reverse direction) as sequences end, as PyTorch's kernels do. Dropout between layers draws from
ember's generator exactly as PyTorch's ``at::dropout`` does, layer after layer.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ...ops import creation as _creation
from ..._state import module_break as _module_break
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .. import _aten_rnn
from .._aten_rnn import _gru_step, _lstm_step, _rnn_relu_step, _rnn_tanh_step
from ..utils.rnn import PackedSequence
from .module import Module

_MODES = {_rnn_tanh_step: "RNN_TANH", _rnn_relu_step: "RNN_RELU", _lstm_step: "LSTM", _gru_step: "GRU"}

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return tensor.index_select(dim, permutation)


class RNNBase(Module):
    """What RNN, LSTM and GRU share: PyTorch's parameters (``weight_ih_l{k}[_reverse]``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}``, ``weight_hr_l{k}``), their initialisation, checks and repr."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gates is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gates * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    params += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for name, shape in params:
                    full = f"{name}_l{layer}{suffix}"
                    setattr(self, full, Parameter(_creation.empty(shape, **kw)))
                    names.append(full)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    def __getstate__(self) -> dict:
        # PyTorch's RNNBase keeps the list of weights in its state (its __setstate__ reads it): a pickle of
        # ember's module carries it too, so torch.load builds a working torch module from it.
        state = self.__dict__.copy()
        state["_flat_weights"] = self._flat_weights
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        state.pop("_flat_weights", None)          # ember derives them from the names (a property)
        state.pop("_flat_weight_refs", None)
        if "all_weights" in state:                # PyTorch's state before 1.x named the list this way
            state["_all_weights"] = state.pop("all_weights")
        state.setdefault("proj_size", 0)
        super().__setstate__(state)

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch packs the weights for cuDNN here)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        w0 = self._flat_weights[0]
        if input.dtype != w0.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w0.dtype}). Convert "
                             f"input: input.to({w0.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # -- shared forward machinery --

    def _run(self, input: Tensor, batch_sizes: Tensor | None, hx: tuple[Tensor, ...]):
        """Runs the layers on (T, B, I) input or packed data through the torch-level function of the mode
        (``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh``, ``torch.rnn_relu``), as PyTorch's modules call
        ``_VF.lstm``...: so that autocast sees the call as PyTorch's dispatcher does."""
        fn = {"LSTM": _aten_rnn.lstm, "GRU": _aten_rnn.gru, "RNN_TANH": _aten_rnn.rnn_tanh,
              "RNN_RELU": _aten_rnn.rnn_relu}[self.mode]
        h = hx if self.mode == "LSTM" else hx[0]
        rest = (self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional)
        out, *hidden = (fn(input, h, *rest, self.batch_first) if batch_sizes is None else
                        fn(input, batch_sizes, h, *rest))
        return out, tuple(hidden)

    def _zeros(self, input: Tensor, batch: int, size: int) -> Tensor:
        num_directions = 2 if self.bidirectional else 1
        return _creation.zeros((self.num_layers * num_directions, batch, size), dtype=input.dtype,
                               device=input.device)

    def _forward_single(self, input, hx, name: str):
        """forward of RNN and GRU (a single hidden state)."""
        orig_input = input
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(input, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                tail = " tensor instead" if name == "RNN" else " instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D "
                                           "tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = self._zeros(input, max_batch_size, self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        output, (hidden,) = self._run(input, batch_sizes, (hx,))
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) (or relu)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        if _module_break[0] is not None:
            _module_break[0](self)
        return self._forward_single(input, hx, "RNN")


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o), with an optional projection of the hidden state
    (``proj_size``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: tuple[Tensor, Tensor],  # type: ignore[override]
                           batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: tuple[Tensor, Tensor], permutation: Tensor | None):  # type: ignore[override]
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx: tuple[Tensor, Tensor] | None = None):
        if _module_break[0] is not None:   # ember.compile: PyTorch's graph break (see compiler._rnn_break)
            _module_break[0](self)
        orig_input = input
        batch_sizes = None
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                batch = int(batch_sizes[0])   # PyTorch's IndexError for an empty PackedSequence
                hx = (self._zeros(input, batch, real_hidden_size), self._zeros(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = (self._zeros(input, max_batch_size, real_hidden_size),
                      self._zeros(input, max_batch_size, self.hidden_size))
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                           f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run(input, batch_sizes, tuple(hx))
        if isinstance(orig_input, PackedSequence):
            return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
                self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
        return output, self.permute_hidden(hidden, unsorted_indices)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn)))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx: Tensor | None = None):
        if _module_break[0] is not None:
            _module_break[0](self)
        return self._forward_single(input, hx, "GRU")


# ----- cells -------------------------------------------------------------------------------------------------

class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_creation.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(_creation.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(_creation.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _step(self, step, input: Tensor, state: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        return _aten_rnn._cell(_MODES[step], input, state, self.weight_ih, self.weight_hh, self.bias_ih,
                               self.bias_hh)

    def _check_dims(self, name: str, input: Tensor, hx: Tensor | None) -> bool:
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        return input.dim() == 2

    def _check_sizes(self, input: Tensor, hs: tuple[Tensor, ...]) -> None:
        # (PyTorch's kernels check these, naming the argument)
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for i, h in enumerate(hs):
            if h.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                                   f"{h.size(0)}")
            if h.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, expected "
                                   f"{self.hidden_size}")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._check_dims("RNNCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _creation.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        if self.nonlinearity == "tanh":
            step = _rnn_tanh_step
        elif self.nonlinearity == "relu":
            step = _rnn_relu_step
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._check_sizes(input, (hx,))
        (ret,) = self._step(step, input, (hx,))
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _creation.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else tuple(hx)
        self._check_sizes(input, hx)
        h, c = self._step(_lstm_step, input, hx)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched = self._check_dims("GRUCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _creation.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        self._check_sizes(input, (hx,))
        (ret,) = self._step(_gru_step, input, (hx,))
        return ret if is_batched else ret.squeeze(0)
