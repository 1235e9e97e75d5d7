"""Uniform draws (rand, rand_like, uniform_, dropout's masks) are made in the result's own
precision, so they stay inside [a, b): a float64 draw rounded to float32 would be 1.0 about
once in 2**25 draws."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import _factories


class _TopOfTheRange:
    """A generator stand-in (CuPy RandomState's method name) whose every draw is the largest
    value below 1 in the asked dtype."""

    def random_sample(self, shape, dtype=np.float64):
        t = np.dtype(dtype).type
        return np.full(shape, np.nextafter(t(1), t(0)), t)


@pytest.mark.parametrize("np_dtype", [np.float16, np.float32, np.float64])
def test_the_largest_draw_stays_below_one(np_dtype):
    u = _factories._uniform(_TopOfTheRange(), 0.0, 1.0, (3,), np.dtype(np_dtype))
    assert u.dtype == np_dtype and (u < 1).all() and (u > 0.99).all()


def test_narrow_floats_are_cut_to_their_own_grid():
    u = _factories._uniform(np.random.default_rng(0), 0.0, 1.0, (10_000,), np.dtype(np.float16))
    assert u.dtype == np.float16 and u.min() >= 0 and u.max() < 1
    assert np.array_equal(u.astype(np.float64) * 2**11, np.floor(u.astype(np.float64) * 2**11))


@pytest.mark.parametrize("dtype", [eager.float32, eager.float64, eager.float16])
def test_rand_is_drawn_in_its_own_precision_and_is_reproducible(dtype):
    eager.manual_seed(3)
    a = eager.rand(4096, dtype=dtype)
    eager.manual_seed(3)
    b = eager.rand(4096, dtype=dtype)
    assert a.dtype == dtype and np.array_equal(a.numpy(), b.numpy())
    assert float(a.min()) >= 0 and float(a.max()) < 1 and 0.45 < float(a.double().mean()) < 0.55
    if dtype is eager.float32:  # the generator's own float32 stream, not a rounded float64 one
        assert np.array_equal(a.numpy(), np.random.default_rng(3).random(4096, dtype=np.float32))


def test_uniform_in_place_scales_to_its_range():
    eager.manual_seed(1)
    x = eager.empty(10_000).uniform_(-2.0, 3.0)
    assert x.dtype == eager.float32 and float(x.min()) >= -2 and float(x.max()) < 3
    eager.manual_seed(1)
    expected = np.random.default_rng(1).random(10_000, dtype=np.float32) * np.float32(5.0) + np.float32(-2.0)
    assert np.array_equal(x.numpy(), expected)
