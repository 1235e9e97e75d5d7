"""Compiled code keeps eager's edge cases: relu keeps a -0.0 operand and passes NaN, as PyTorch's does, in every backend
(NumPy's maximum returns either operand on a tie of zeros, by its loop; the C helper tests x < 0)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build

BACKENDS = ["interpret", "numpy"] + (["native"] if native_build.availability()[0] else [])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [eager.float32, eager.float64])
def test_relu_of_negative_zero_is_negative_zero_compiled_as_eager(backend, dtype):
    x = eager.tensor([-0.0, 0.0, -1.5, 2.0, float("nan")] * 40, dtype=dtype)  # long enough for a vector loop
    want = eager.relu(x).numpy()
    assert np.signbit(want[0]) and not np.signbit(want[1]) and np.isnan(want[4])
    got = static.compile(lambda t: eager.relu(t * 1.0), backend=backend)(x).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


def test_relu_matches_pytorch_on_signed_zeros():
    torch = pytest.importorskip("torch")
    v = [-0.0, 0.0, -3.0, 3.0]
    np.testing.assert_array_equal(np.signbit(eager.relu(eager.tensor(v)).numpy()),
                                  np.signbit(torch.relu(torch.tensor(v)).numpy()))


@pytest.mark.parametrize("backend", BACKENDS[1:])
@pytest.mark.parametrize("fn", [lambda a, c: a // c, lambda a, c: eager.fmod(a, c), lambda a, c: a % c,
                                lambda a, c: eager.div(a, c, rounding_mode="floor")])
def test_integer_division_by_zero_raises_compiled_as_eager(backend, fn):
    """Integer floor division, fmod and remainder by zero raise in eager (PyTorch's
    ZeroDivisionError); compiled code must not return NumPy's 0 instead."""
    x, zero_somewhere = eager.tensor([5, 7]), eager.tensor([0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(x, zero_somewhere)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        static.compile(fn, backend=backend)(x, zero_somewhere)
    ok = eager.tensor([2, 3])
    assert static.compile(fn, backend=backend)(x, ok).tolist() == fn(x, ok).tolist()
