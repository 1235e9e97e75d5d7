"""The native unfold's shifted-copy form (native_gen/conv_planes.py _unfold_shifted): a
stride-1 layer whose window rows are as long as the image's rows (the "same" convolution)
writes each kernel offset's rows as one shifted copy of the image plane, the wrapped
columns then set to the padding. Checked to eager's bits on "same" 3x3 and 5x5 layers,
dilated rows, uneven padding (more rows out than in), windows taller than the image, a
column kernel, both padding values (a convolution's 0, max-pooling's -inf) and dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from gmops.conv import UNFOLD

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

# (input shape, kernel, padding (top, bottom, left, right), dilation): stride 1, OW == W
CASES = [
    ((2, 3, 14, 14), (3, 3), (1, 1, 1, 1), (1, 1)),  # W6's second layer
    ((2, 1, 9, 7), (5, 5), (2, 2, 2, 2), (1, 1)),  # 5x5 "same"
    ((2, 2, 8, 6), (3, 3), (2, 2, 1, 1), (2, 1)),  # dilated rows
    ((1, 2, 5, 6), (2, 3), (0, 2, 1, 1), (1, 1)),  # uneven padding: a row more out than in
    ((1, 2, 3, 4), (7, 3), (3, 3, 1, 1), (1, 1)),  # windows taller than the image
    ((2, 2, 6, 5), (3, 1), (1, 1, 0, 0), (1, 1)),  # a column kernel
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shifted_unfold_equals_eagers_bits(case, dtype):
    shape, kernel, padding, dilation = case
    geo = dict(kernel=kernel, stride=(1, 1), padding=padding, dilation=dilation)
    x = eager.from_numpy(np.random.default_rng(1).standard_normal(shape).astype(dtype))
    for pad_value in (0.0, float("-inf")):
        fn = static.compile(lambda t, v=pad_value: UNFOLD(t, pad_value=v, **geo), backend="native")
        want = UNFOLD(x, pad_value=pad_value, **geo)
        assert tuple(want.shape)[5] == shape[3]  # (the case takes the shifted form)
        np.testing.assert_array_equal(fn(x).numpy(), want.numpy())
    text = static.compile(lambda t: UNFOLD(t, pad_value=0.0, **geo), backend="native").lower(x).compile().as_text()
    assert "one shifted copy of the plane" in text
