"""A fused max-pooling's index stored as int8 (native_gen/pool_fusion.narrow_indices): where
the pooling runs in batch norm's normalization pass and its gradient in batch norm's gradient
region, nothing else reading the index, the window cell (0..kh*kw-1) is written as one byte
instead of eight. Checked on training steps against eager (check=True), and the cases that
keep int64: windows of more than 127 cells, a pooling left to its own functions."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _int8_arrays(text: str) -> int:
    """How many int8 arrays the module's C functions take (an index narrowed to a byte)."""
    return len(re.findall(r"(?<!un)signed char\* __restrict__", text))


def _step_source(pool: nn.Module, shape: tuple, dtype) -> str:
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(shape[1], 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), pool)
        if dtype == np.float64:
            model = model.to(eager.float64)
        opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(t, model=model, opt=opt):
            opt.zero_grad()
            loss = model(t).square().mean()
            loss.backward()
            opt.step()
            return loss
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(eager.from_numpy(x * (k + 1)))) for k in range(3)]
        runs.append((losses, [p.detach().numpy().copy() for p in model.parameters()], f))
    (want, want_p, _), (got, got_p, f) = runs
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(got, want, **tol)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, **tol)
    entry = f._entry_for((eager.from_numpy(x),), {})[3]
    return entry.forward._loaded.source


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
