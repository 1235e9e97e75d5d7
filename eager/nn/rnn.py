"""Recurrent layers: RNN, LSTM, GRU and their cells, with PyTorch's parameter names
(weight_ih_l{k}[_reverse], ...), gate order (LSTM: i, f, g, o; GRU: r, z, n), init
U(-1/sqrt(hidden), 1/sqrt(hidden)), batch_first, num_layers, dropout between layers and
bidirectional. The time loop is Python over steps; each step is a few matmuls."""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from typing import Any

from .. import _functional as _F
from .._factories import empty, zeros
from .._tensor import Tensor
from . import _fused_cells as _fused
from . import _fused_rnn, init
from . import functional as F
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence


def _rnn_tanh_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return _F.tanh(F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh))


def _rnn_relu_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    return _F.relu(F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh))


def _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh):
    h, c = state
    if _fused.eligible(x, h, c, w_ih, w_hh, b_ih, b_hh):  # one node, not ~40 (nn/_fused_cells.py)
        return _fused.LSTMCellFunction.apply(x, h, c, w_ih, w_hh, b_ih, b_hh)
    return _lstm_cell_flat(x, h, c, w_ih, w_hh, b_ih, b_hh)


def _lstm_cell_flat(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """The LSTM cell op by op (what a trace records, and what the fused cell differentiates
    when a backward records a graph)."""
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = _F.chunk(gates, 4, -1)
    c = _F.sigmoid(f) * c + _F.sigmoid(i) * _F.tanh(g)
    h = _F.sigmoid(o) * _F.tanh(c)
    return h, c


def _lstm_proj_cell(x, state, w_ih, w_hh, b_ih, b_hh, w_hr):
    """An LSTM cell with a projection (proj_size): h = W_hr (o * tanh(c)), op by op (h and c
    differ in size, which the fused cell does not take)."""
    h, c = _lstm_cell_flat(x, state[0], state[1], w_ih, w_hh, b_ih, b_hh)
    return F.linear(h, w_hr), c


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    if _fused.eligible(x, h, w_ih, w_hh, b_ih, b_hh):  # one node, not ~45 (nn/_fused_cells.py)
        return _fused.node_apply(_fused.GRUCellFunction, x, h, w_ih, w_hh, b_ih, b_hh)
    return _gru_cell_ops(x, h, w_ih, w_hh, b_ih, b_hh)


def _gru_cell_ops(x, h, w_ih, w_hh, b_ih, b_hh):
    """The GRU cell op by op (what a trace records, and what the fused cell differentiates
    when a backward records a graph)."""
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = _F.chunk(gi, 3, -1)
    h_r, h_z, h_n = _F.chunk(gh, 3, -1)
    r = _F.sigmoid(i_r + h_r)
    z = _F.sigmoid(i_z + h_z)
    n = _F.tanh(i_n + r * h_n)
    return (1.0 - z) * n + z * h


class RNNCellBase(Module):
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(empty(g, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(g, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(g, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(g, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _zeros(self, input: Tensor) -> Tensor:
        lead = (input.shape[0],) if input.ndim == 2 else ()
        return zeros(*lead, self.hidden_size, dtype=input.dtype, device=input.device)

    def _params(self):
        """(weight_ih, weight_hh, bias_ih, bias_hh), read from the parameter registry where they
        are registered there (a recurrent step asks every time step, and each attribute read
        through Module.__getattr__ first fails the ordinary lookup: 2 us apiece); through the
        attributes otherwise (a parametrization or a deleted and reassigned weight)."""
        found = self.__dict__["_parameters"]
        try:
            return found["weight_ih"], found["weight_hh"], found["bias_ih"], found["bias_hh"]
        except KeyError:
            return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _check_input(self, input: Tensor) -> None:
        """PyTorch's errors for an input of the wrong rank or width."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}" + ("" if self.bias is True else f", bias={self.bias}")
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        return s + ("" if nonlinearity == "tanh" else f", nonlinearity={nonlinearity}")


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check_input(input)
        h = self._zeros(input) if hx is None else hx
        cell = _rnn_tanh_cell if self.nonlinearity == "tanh" else _rnn_relu_cell
        return cell(input, h, *self._params())


class LSTMCell(RNNCellBase):
    _gates = 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        self._check_input(input)
        state = (self._zeros(input), self._zeros(input)) if hx is None else hx
        return _lstm_cell(input, state, *self._params())


class GRUCell(RNNCellBase):
    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        self._check_input(input)
        h = self._zeros(input) if hx is None else hx
        return _gru_cell(input, h, *self._params())


class RNNBase(Module):
    _gates = 1
    _lstm = False

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and not self._lstm:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size and proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=3)
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        g = self._gates * hidden_size
        out_size = proj_size or hidden_size  # the size of h (the cell state c keeps hidden_size)
        for layer in range(num_layers):
            width = input_size if layer == 0 else out_size * dirs
            for suffix in ([""] + (["_reverse"] if bidirectional else [])):
                setattr(self, f"weight_ih_l{layer}{suffix}", Parameter(empty(g, width, device=device, dtype=dtype)))
                setattr(self, f"weight_hh_l{layer}{suffix}",
                        Parameter(empty(g, out_size, device=device, dtype=dtype)))
                if bias:
                    setattr(self, f"bias_ih_l{layer}{suffix}", Parameter(empty(g, device=device, dtype=dtype)))
                    setattr(self, f"bias_hh_l{layer}{suffix}", Parameter(empty(g, device=device, dtype=dtype)))
                if proj_size:
                    setattr(self, f"weight_hr_l{layer}{suffix}",
                            Parameter(empty(proj_size, hidden_size, device=device, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _layer_params(self, layer: int, suffix: str):
        def get(name):
            return getattr(self, f"{name}_l{layer}{suffix}") if self.bias or "weight" in name else None

        params = get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")
        return params + (get("weight_hr"),) if self.proj_size else params

    def _cell(self):
        raise NotImplementedError

    def flatten_parameters(self) -> None:
        """A no-op, as PyTorch's on CPU: it packs the weights into one cuDNN buffer, and no
        kernel here reads such a buffer. Scripts call it after moving or loading a model."""

    @property
    def _flat_weights_names(self) -> list[str]:
        """The parameter names in PyTorch's order: per layer and direction, w_ih, w_hh, b_ih, b_hh."""
        names = []
        for layer in range(self.num_layers):
            for suffix in ([""] + (["_reverse"] if self.bidirectional else [])):
                kinds = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if self.bias else []) + \
                    (["weight_hr"] if self.proj_size else [])
                names += [f"{k}_l{layer}{suffix}" for k in kinds]
        return names

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list]:
        """The parameters grouped per layer and direction, as PyTorch's `all_weights`."""
        per = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        flat = self._flat_weights
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def forward(self, input: Tensor, hx: Any = None):
        width = (input.data if isinstance(input, PackedSequence) else input).shape[-1]
        if width != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {width}")
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        T, N = x.shape[0], x.shape[1]
        dirs = 2 if self.bidirectional else 1
        h0, c0 = self._initial_state(hx, N, dirs, x, batched)
        cell = self._cell()
        h_n: list[Any] = []
        c_n: list[Any] = []
        for layer in range(self.num_layers):
            outs = []
            for state, params, steps in self._directions(layer, dirs, h0, c0, T):
                if self._gates == 3 and _fused_rnn.eligible(x, state, *params):  # GRU: one node a direction
                    w_ih, w_hh, b_ih, b_hh = params
                    states, state = _fused_rnn.gru_layer(x, state, w_ih, w_hh, b_ih, b_hh, steps.step < 0)
                    outs.append(states)
                    self._keep_final(state, h_n, c_n)
                    continue
                seq = [None] * T
                for t in steps:
                    state = cell(x[t], state, *params)
                    seq[t] = state[0] if self._lstm else state
                outs.append(_F.stack(seq, 0))
                self._keep_final(state, h_n, c_n)
            x = outs[0] if dirs == 1 else _F.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        h = _F.stack(h_n, 0)
        if not batched:
            h = h.squeeze(1)
        if self._lstm:
            c = _F.stack(c_n, 0)
            return out, (h, c.squeeze(1) if not batched else c)
        return out, h

    def _directions(self, layer: int, dirs: int, h0: Any, c0: Any, T: int) -> Iterator[tuple]:
        """(initial state, weights, time steps in order) of each direction of `layer`: forward,
        then (bidirectional) reverse from the last step; the padded and packed loops' one rule."""
        for d, suffix in enumerate([""] + (["_reverse"] if self.bidirectional else [])):
            k = layer * dirs + d
            state = (h0[k], c0[k]) if self._lstm else h0[k]
            yield state, self._layer_params(layer, suffix), (range(T - 1, -1, -1) if d == 1 else range(T))

    def _keep_final(self, state: Any, h_n: list, c_n: list) -> None:
        """A direction's final state into h_n (and an LSTM's cell state into c_n)."""
        if self._lstm:
            h_n.append(state[0])
            c_n.append(state[1])
        else:
            h_n.append(state)

    def _forward_packed(self, packed: PackedSequence, hx: Any):
        """The layers over a PackedSequence, as PyTorch's: at step t only the batch_sizes[t]
        longest sequences (a prefix, as they are sorted) advance, the others keep their
        state, so each final state is the one after the sequence's own last step (the reverse
        direction starts each sequence at its own last step). `hx` and the final states are
        in the caller's order (sorted_indices / unsorted_indices)."""
        sizes = [int(v) for v in packed.batch_sizes.tolist()]
        data = packed.data
        N, dirs = sizes[0], 2 if self.bidirectional else 1
        if hx is not None and packed.sorted_indices is not None:
            if self._lstm:
                hx = tuple(h.index_select(1, packed.sorted_indices) for h in hx)
            else:
                hx = hx.index_select(1, packed.sorted_indices)
        h0, c0 = self._initial_state(hx, N, dirs, data, True)
        cell = self._cell()
        offsets = [0]
        for bs in sizes:
            offsets.append(offsets[-1] + bs)
        xs = [data[offsets[t]:offsets[t + 1]] for t in range(len(sizes))]
        T = len(sizes)

        def rows(state, bs):
            return (state[0][:bs], state[1][:bs]) if self._lstm else state[:bs]

        def merge(new, state, bs):
            if bs == N:
                return new
            if self._lstm:
                return (_F.cat([new[0], state[0][bs:]], 0), _F.cat([new[1], state[1][bs:]], 0))
            return _F.cat([new, state[bs:]], 0)

        h_n: list[Any] = []
        c_n: list[Any] = []
        for layer in range(self.num_layers):
            outs = []
            for state, params, steps in self._directions(layer, dirs, h0, c0, T):
                seq: list[Any] = [None] * T
                for t in steps:
                    bs = sizes[t]
                    new = cell(xs[t], rows(state, bs), *params)
                    seq[t] = new[0] if self._lstm else new
                    state = merge(new, state, bs)
                outs.append(seq)
                self._keep_final(state, h_n, c_n)
            xs = outs[0] if dirs == 1 else [_F.cat([a, b], -1) for a, b in zip(outs[0], outs[1])]
            if self.dropout and self.training and layer < self.num_layers - 1:
                flat = F.dropout(_F.cat(xs, 0), self.dropout, True)
                xs = [flat[offsets[t]:offsets[t + 1]] for t in range(T)]
        out = PackedSequence(_F.cat(xs, 0), packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        h = _F.stack(h_n, 0)
        if packed.unsorted_indices is not None:
            h = h.index_select(1, packed.unsorted_indices)
        if self._lstm:
            c = _F.stack(c_n, 0)
            if packed.unsorted_indices is not None:
                c = c.index_select(1, packed.unsorted_indices)
            return out, (h, c)
        return out, h

    def _initial_state(self, hx, N, dirs, x, batched):
        shape = (self.num_layers * dirs, N, self.proj_size or self.hidden_size)
        if hx is None:
            z = zeros(*shape, dtype=x.dtype, device=x.device)
            if self.proj_size:  # the cell state keeps hidden_size
                return z, zeros(self.num_layers * dirs, N, self.hidden_size, dtype=x.dtype, device=x.device)
            return z, z
        if self._lstm:
            h, c = hx
        else:
            h, c = hx, None
        if not batched:
            h = h.unsqueeze(1)
            c = c.unsqueeze(1) if c is not None else None
        if tuple(h.shape) != shape:
            raise RuntimeError(f"Expected hidden size {shape}, got {tuple(h.shape)}")
        return h, c

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"  # (PyTorch's fields, in its order)
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    def __init__(self, *args: Any, nonlinearity: str = "tanh", **kwargs: Any) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(*args, **kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "nonlinearity" and "_parameters" not in self.__dict__:
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)

    def _cell(self):
        return _rnn_tanh_cell if self.nonlinearity == "tanh" else _rnn_relu_cell


class LSTM(RNNBase):
    _gates = 4
    _lstm = True

    def _cell(self):
        return _lstm_proj_cell if self.proj_size else _lstm_cell


class GRU(RNNBase):
    _gates = 3

    def _cell(self):
        return _gru_cell


_RNNBase = RNNBase  # (the names these bases had before)
_CellBase = RNNCellBase
