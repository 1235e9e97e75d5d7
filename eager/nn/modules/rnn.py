"""torch.nn.modules.rnn: the classes PyTorch defines in that file, each defined once in
eager.nn and re-exported here (so pickles, safe_globals lists and isinstance checks that
name torch.nn.modules.rnn.<Class> find eager's class)."""
from __future__ import annotations

from ..rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]
from ..rnn import RNNBase, RNNCellBase  # noqa: E402,F401

__all__ += ["RNNBase", "RNNCellBase"]
