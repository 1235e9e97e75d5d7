"""A fused max-pooling's index stored as int8 (native_gen/pool_fusion.narrow_indices): where
the pooling runs in batch norm's normalization pass and its gradient in batch norm's gradient
region, nothing else reading the index, the window cell (0..kh*kw-1) is written as one byte
instead of eight. Checked on training steps against eager (check=True), and the cases that
keep int64: windows of more than 127 cells, a pooling left to its own functions."""
from __future__ import annotations

import re

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _int8_arrays(text: str) -> int:
    """How many int8 arrays the module's C functions take (an index narrowed to a byte)."""
    return len(re.findall(r"(?<!un)signed char\* __restrict__", text))


def _step_source(pool: nn.Module, shape: tuple, dtype) -> str:
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    return compiled_step_source(
        lambda: nn.Sequential(nn.Conv2d(shape[1], 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), pool),
        lambda model, t: model(t).square().mean(), x, steps=3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fused_pooling_index_is_one_byte_and_the_step_equals_eager(dtype):
    text = _step_source(nn.MaxPool2d(2), (2, 2, 7, 6), dtype)
    assert "max-pooling's gradient, image nn's plane" in text  # both halves fused
    assert _int8_arrays(text) == 2  # written by the normalization, read by the gradient region


def test_windows_of_more_than_127_cells_keep_the_int64_index():
    text = _step_source(nn.MaxPool2d(12), (2, 1, 24, 24), np.float32)
    assert "in the normalization's pass" in text
    assert _int8_arrays(text) == 0


def test_an_index_read_by_an_unfused_gradient_keeps_int64():
    # overlapping windows: the gradient is the fold's own function, which reads the index
    text = _step_source(nn.MaxPool2d(3, stride=2), (2, 1, 9, 9), np.float32)
    assert "in the normalization's pass" in text and "max-pooling's gradient, image nn's plane" not in text
    assert _int8_arrays(text) == 0
