"""Integer with floating point promotes to the floating dtype (PyTorch), not to float64 as
NumPy would; clamp bounds promote like Python scalars. Eager and compiled agree."""
import numpy as np
import pytest

import eager
import static


@pytest.mark.parametrize("a,b,expected", [
    (eager.int32, eager.float32, eager.float32),
    (eager.int64, eager.float16, eager.float16),
    (eager.uint8, eager.float64, eager.float64),
    (eager.bool, eager.int32, eager.int32),
    (eager.int8, eager.uint8, eager.int16),
])
def test_tensor_tensor_promotion(a, b, expected):
    x = eager.ones(3, dtype=a)
    y = eager.ones(3, dtype=b)
    assert (x + y).dtype == expected and (y * x).dtype == expected
    assert static.compile(lambda p, q: p + q)(x, y).dtype == expected


@pytest.mark.parametrize("bounds,expected", [((0.5, 2.5), eager.float32), ((0, 2), eager.int32), ((None, 1.5), eager.float32)])
def test_clamp_bounds_promote_like_scalars(bounds, expected):
    x = eager.tensor(np.arange(-3, 4, dtype=np.int32))
    got = x.clamp(*bounds)
    assert got.dtype == expected
    ref = np.clip(np.arange(-3, 4), *bounds)
    assert np.array_equal(got.numpy(), ref.astype(expected.np))
    compiled = static.compile(lambda t: t.clamp(*bounds))(x)
    assert compiled.dtype == expected and np.array_equal(compiled.numpy(), got.numpy())
