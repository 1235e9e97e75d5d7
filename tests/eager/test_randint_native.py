"""randint's common draw runs NumPy's bounded-integer algorithm natively on the Generator's
own bit generator (gmnative.index_kernels.bounded_int64): the numbers and the generator's
state after must be NumPy's Generator.integers', so eager's random stream is unchanged."""
import numpy as np
import pytest

import eager
from gmnative import index_kernels

RANGES = [(0, 27), (0, 20000), (-5, 5), (7, 8), (0, 2**31), (0, 2**32), (0, 2**32 + 1), (3, 2**40),
          (-2**63, 2**63 - 1), (-2**63, 2**63)]


@pytest.mark.parametrize("low, high", RANGES)
def test_the_draws_and_the_state_are_numpys(low, high):
    for seed in range(4):
        for n in (0, 1, 3, 32, 33):
            ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
            for g in (ours, numpys):  # a float32 draw leaves half of a 64-bit output buffered
                g.random(seed % 3, dtype=np.float32)
            got = index_kernels.bounded_int64(ours, low, high, n)
            if got is None:
                pytest.skip("no native kernels on this host")
            np.testing.assert_array_equal(got, numpys.integers(low, high, n))
            assert got.dtype == np.int64
            assert ours.bit_generator.state == numpys.bit_generator.state


def test_eager_randint_follows_manual_seed_and_numpys_stream():
    eager.manual_seed(7)
    a = [eager.randint(0, 20000, (32,)), eager.randint(5, 9, (3, 4)), eager.randint(10, (7,)),
         eager.randint(-3, 3, ())]
    g = np.random.default_rng(7)
    want = [g.integers(0, 20000, (32,)), g.integers(5, 9, (3, 4)), g.integers(0, 10, (7,)), g.integers(-3, 3, ())]
    for t, w in zip(a, want):
        assert t.dtype == eager.int64 and tuple(t.shape) == w.shape
        np.testing.assert_array_equal(t.numpy(), w)
    eager.manual_seed(7)
    np.testing.assert_array_equal(eager.randint(0, 20000, (32,)).numpy(), a[0].numpy())


@pytest.mark.parametrize("low, high, size", [(5, 5, (3,)), (5, 3, (2,)), (5, 5, (0,))])
def test_empty_ranges_raise_as_pytorch(low, high, size):
    with pytest.raises(RuntimeError, match=f"^random_ expects 'from' to be less than 'to', but got from={low} >= "
                                           f"to={high}$"):
        eager.randint(low, high, size)
