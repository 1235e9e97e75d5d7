"""relu's forward on large float arrays: one threaded native pass (gmnative.conv_kernels.relu)
with PyTorch's values: x unless x < 0, so -0.0 and NaN are kept; other layouts and dtypes
take NumPy's code with the same values."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from gmnative import conv_kernels as ck
from gmops import conv as C


def _with_specials(dtype, shape=(4, 16, 33, 31)):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:6] = [-0.0, np.nan, 0.0, -np.inf, np.inf, -np.nan]
    flat[-3:] = [-0.0, np.nan, -1.0]  # (the vector loop's tail)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_relu_keeps_negative_zero_and_nan(dtype):
    if C.conv_native() is None or ck.relu(np.zeros(4, dtype)) is None:
        pytest.skip("eager's native kernels cannot be built here (no C++ compiler)")
    x = _with_specials(dtype)
    want = np.where(x < 0, np.zeros((), dtype), x)
    got = ck.relu(x)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert ck.relu(x[:, :, ::2]) is None and ck.relu(x.astype(np.float16)) is None


@pytest.mark.parametrize("dtype", [eager.float32, eager.float64, eager.float16])
@pytest.mark.parametrize("strided", [False, True])
def test_eager_relu_of_a_large_tensor_matches_pytorch(dtype, strided):
    torch = pytest.importorskip("torch")
    x = _with_specials(np.dtype(str(dtype).split(".")[-1]))
    e, t = eager.tensor(x), torch.tensor(x)
    if strided:
        e, t = e.transpose(1, 3), t.transpose(1, 3)
    got, want = eager.relu(e).float().numpy(), torch.relu(t).float().numpy()
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
