"""x[rows, cols] and its gradient in the native module (codegen/native_gen/pair_index.py): the
values are NumPy's to the bit (repeated places accumulate in np.add.at's order, negative
indices wrap), an index outside its axis raises NumPy's IndexError and message as the NumPy
backend does, and the C function is what runs (its name is in the source)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static


def _t(v, dtype=np.int64):
    return eager.tensor(np.array(v, dtype=dtype))


def _pick(x, a, b):
    return x[a, b]


def _pick_grad(x, a, b):
    return static.grad(lambda x: (x[a, b] * eager.tensor(np.linspace(-2.0, 3.0, 7, dtype=np.float32))).sum())(x)


X = eager.tensor((np.arange(20, dtype=np.float32).reshape(4, 5) - 7.5) / 3.0)
A = [0, 3, -1, 2, 0, 0, 1]
B = [4, 0, 2, -5, 4, 4, 3]  # (0, 4) three times: its gradient accumulates


@pytest.mark.parametrize("f", [_pick, _pick_grad])
def test_pair_index_is_numpys_values_and_runs_in_c(f):
    native = static.compile(f, backend="native")
    ref = static.compile(f, backend="numpy")
    args = (X, _t(A), _t(B))
    got, want = native(*args), ref(*args)
    assert got.numpy().tobytes() == want.numpy().tobytes()
    assert "gm_pick" in native.source(*args)


@pytest.mark.parametrize("f", [_pick, _pick_grad])
def test_pair_index_out_of_range_raises_numpys_error(f):
    native = static.compile(f, backend="native")
    ref = static.compile(f, backend="numpy")
    native(X, _t(A), _t(B))
    for bad in ([0, 0, 0, 0, 0, 0, 5], [0, 0, -6, 0, 0, 0, 0]):
        with pytest.raises(IndexError) as theirs:
            ref(X, _t(A), _t(bad))
        with pytest.raises(IndexError) as ours:
            native(X, _t(A), _t(bad))
        assert str(ours.value) == str(theirs.value)
        with pytest.raises(IndexError) as ours_rows:
            native(X, _t(bad), _t(B))
        with pytest.raises(IndexError) as theirs_rows:
            ref(X, _t(bad), _t(B))
        assert str(ours_rows.value) == str(theirs_rows.value)
