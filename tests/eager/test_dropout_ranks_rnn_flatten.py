"""Dropout1d/2d/3d's input-rank rules against PyTorch (which ranks raise, which warn, and
which dims one draw covers: a 2-D input to Dropout2d drops single elements), and
RNN/LSTM/GRU.flatten_parameters() as PyTorch's CPU no-op."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

RANKS = {"dropout1d": [1, 2, 3, 4], "dropout2d": [1, 2, 3, 4, 5], "dropout3d": [2, 3, 4, 5, 6]}
CASES = [(name, rank) for name, ranks in RANKS.items() for rank in ranks]


def _outcome(lib, name, rank):
    """(error type or None, warning texts, the set of dims one draw spans, scale of kept values)."""
    shape = (3, 4, 5, 2, 3, 2)[:rank]
    x = lib.ones(shape, dtype=lib.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lib.manual_seed(0)
            y = getattr(lib.nn.functional, name)(x, 0.5, True)
        except Exception as exc:  # noqa: BLE001 (the type is what is compared)
            return type(exc).__name__, [str(w.message)[:60] for w in caught], None, None
    y = y.numpy()
    # dims a draw spans: along such a dim every slice of y is the same pattern
    shared = {d for d in range(rank) if np.all(y == y.take([0], axis=d))}
    kept = np.unique(y[y != 0])
    return None, [str(w.message)[:60] for w in caught], shared, kept.tolist()


@pytest.mark.parametrize("name,rank", CASES)
def test_feature_dropout_rank_rules_match_pytorch(name, rank):
    e, t = _outcome(eager, name, rank), _outcome(torch, name, rank)
    assert e[0] == t[0] and e[1] == t[1]
    if e[0] is None:
        # one draw spans the same dims (the draws themselves come from another generator)
        assert e[2] == t[2] and e[3] == t[3] == [2.0]


def test_dropout2d_on_a_2d_input_drops_elements_not_rows():
    eager.manual_seed(0)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = eager.nn.Dropout2d(0.5)(eager.ones(64, 64)).numpy()
    rows_mixed = np.mean([(r == 0).any() and (r != 0).any() for r in y])
    assert rows_mixed > 0.9  # element-wise: almost every row has kept and dropped entries


def test_dropout2d_on_a_4d_input_drops_whole_channels():
    eager.manual_seed(0)
    y = eager.nn.Dropout2d(0.5)(eager.ones(8, 16, 3, 3)).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all(per_channel == per_channel[..., :1])
    assert 0 < (per_channel[..., 0] == 0).mean() < 1


def test_dropout_nd_identity_in_eval_and_errors():
    x = eager.randn(2, 3, 4)
    m = eager.nn.Dropout1d(0.3).eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        eager.nn.functional.dropout2d(x, 1.5)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        eager.nn.Dropout1d()(eager.randn(2, 3, 4, 5))
    assert (eager.nn.functional.dropout3d(eager.ones(2, 3, 2, 2, 2), 1.0).numpy() == 0).all()


def test_dropout_nd_inplace_writes_the_input():
    x = eager.ones(4, 6, 3, 3)
    eager.manual_seed(1)
    y = eager.nn.Dropout2d(0.5, inplace=True)(x)
    assert np.array_equal(x.numpy(), y.numpy()) and (x.numpy() == 0).any()


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_is_a_no_op_and_weights_are_listed_like_pytorch(cls):
    def run(lib):
        lib.manual_seed(0)
        m = getattr(lib.nn, cls)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        before = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
        assert m.flatten_parameters() is None
        after = {k: v.detach().numpy() for k, v in m.state_dict().items()}
        assert all(np.array_equal(before[k], after[k]) for k in before)
        return m._flat_weights_names, [[tuple(p.shape) for p in layer] for layer in m.all_weights]

    assert run(eager) == run(torch)


def test_lstm_runs_after_flatten_parameters():
    m = eager.nn.LSTM(3, 5, batch_first=True)
    m.flatten_parameters()
    out, (h, c) = m(eager.randn(2, 7, 3))
    assert out.shape == (2, 7, 5) and h.shape == (1, 2, 5)
