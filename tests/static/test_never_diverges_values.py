"""Values inside compiled code behave as eager's: in-place random fills draw at every call the
numbers eager draws, a traced value is an eager.Tensor to isinstance and is_tensor, results
in dataclasses and plain objects come back as tensors, autograd.grad and register_hook work
inside. NumPy and native backends."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import eager
import static

BACKENDS = ["numpy", "native"]


def _same_draws(fn, backend, *args):
    cf = static.compile(fn, backend=backend)
    results = []
    for seed in (0, 1):
        eager.manual_seed(seed)
        got = cf(*args)
        eager.manual_seed(seed)
        want = fn(*args)
        np.testing.assert_allclose(got._data, want._data, rtol=1e-6, atol=1e-7)
        results.append(got._data.copy())
    assert not np.array_equal(results[0], results[1])  # drawn at each call, not once at trace time


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fill", ["normal_", "uniform_", "exponential_", "bernoulli_"])
def test_in_place_random_fills_of_a_new_tensor_draw_at_every_call(fill, backend):
    _same_draws(lambda x: x + getattr(eager.empty_like(x), fill)(), backend, eager.zeros(64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_random_fills_of_a_traced_value(backend):
    _same_draws(lambda x: x.clone().normal_(2.0, 0.5) + x.clone().uniform_(-1, 1) * x.clone().exponential_(2.0),
                backend, eager.ones(32))
    _same_draws(lambda x: x.clone().random_(0, 10) + x, backend, eager.zeros(32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_traced_value_is_a_tensor_to_isinstance_and_is_tensor(backend):
    def f(x):
        if isinstance(x, eager.Tensor) and eager.is_tensor(x) and not isinstance(x, eager.nn.Parameter):
            return x * 2
        return x * 3

    x = eager.ones(3)
    np.testing.assert_allclose(static.compile(f, backend=backend)(x)._data, f(x)._data)
