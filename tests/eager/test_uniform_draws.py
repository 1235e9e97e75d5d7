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


# -- large draws on the native kernels' threads: NumPy's PCG64, bit for bit --------------------
def _native_uniform():
    from codegen import eager_kernels

    k = eager_kernels.kernels()
    if k is None or k.address("gm_eager_uniform_f32") is None:
        pytest.skip("the native kernels are not built here (no compiler, or switched off)")
    return eager_kernels


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [8192, 8193, 40_001, 1 << 17])
@pytest.mark.parametrize("leftover", [0, 1, 2])
def test_native_draws_equal_numpys_numbers_and_final_state(np_dtype, n, leftover):
    """The same numbers as Generator.random and the same state after, including a float32
    draw that starts from (or leaves) the half of a 64-bit output NumPy keeps for later."""
    ek = _native_uniform()
    for seed in (0, 12345):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        ours.random(leftover, dtype=np.float32)
        numpys.random(leftover, dtype=np.float32)
        got = ek.uniform(ours, (n,), np_dtype)
        assert got is not None and got.dtype == np_dtype
        np.testing.assert_array_equal(got, numpys.random(n, dtype=np_dtype))
        assert ours.bit_generator.state == numpys.bit_generator.state
        np.testing.assert_array_equal(ours.random(5, dtype=np.float32), numpys.random(5, dtype=np.float32))


def test_native_draws_do_not_depend_on_the_thread_count():
    ek = _native_uniform()
    k = ek.kernels()
    draws = []
    for threads in (1, 2, 3):
        g = np.random.default_rng(7)
        p = np.array([0] * 7, np.uint64)
        s, inc = g.bit_generator.state["state"]["state"], g.bit_generator.state["state"]["inc"]
        p[:] = [s >> 64, s & (2**64 - 1), inc >> 64, inc & (2**64 - 1), 0, 0, 50_000]
        out = np.empty(50_000, np.float32)
        assert k.run("gm_eager_uniform_f32", threads, (-out.nbytes, -p.nbytes), k.formats(("float32", "uint64")), out, p)
        draws.append(out)
    np.testing.assert_array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(draws[0], draws[2])


def test_native_draws_decline_what_they_do_not_reproduce():
    """Other bit generators, small draws and other dtypes stay NumPy's."""
    ek = _native_uniform()
    assert ek.uniform(np.random.Generator(np.random.Philox(0)), (1 << 14,), np.float32) is None
    assert ek.uniform(np.random.default_rng(0), (16,), np.float32) is None
    assert ek.uniform(np.random.default_rng(0), (1 << 14,), np.float16) is None


def test_eager_rand_draws_the_numbers_numpy_draws_for_the_seed():
    eager.manual_seed(3)
    got = eager.rand(1 << 15).numpy()
    np.testing.assert_array_equal(got, np.random.default_rng(3).random(1 << 15, dtype=np.float32))
