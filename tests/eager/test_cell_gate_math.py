"""The fused cells' float32 sigmoid and tanh (computed inline in the native gate pass,
gmnative/csrc/eager_kernels.cpp: gm_cell_sigmoid, gm_cell_tanh) against the exact values in
float64: within 2.5 ulp over the range a gate sees, the limits at +-inf, NaN passed on.

The gate pass is fed products that isolate each function: with zero biases, a zero hidden
product and a zero state, the saved gates are r = sigmoid(gi_r), z = sigmoid(gi_z) and
n = tanh(gi_n)."""
from __future__ import annotations

import numpy as np
import pytest

from gmnative import build as native_build
from gmnative import cell_kernels

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

f32 = np.float32


def _gates(values: np.ndarray) -> tuple:
    """(sigmoid(values), sigmoid(-values), tanh(values)) through the native GRU gate pass."""
    b = values.size
    gi = np.stack([values, -values, values]).astype(f32)  # (3K, B) with K = 1
    got = cell_kernels.gru_cell(gi, np.zeros_like(gi), np.zeros(3, f32), np.zeros(3, f32), np.zeros((b, 1), f32))
    if got is None:
        pytest.skip("eager's native kernels are off here")
    saved = got[1]
    return saved[0, 0], saved[1, 0], saved[2, 0]


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    step = np.spacing(np.abs(exact.astype(f32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / step


def test_sigmoid_and_tanh_within_2_5_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-30, 30, 6001), rng.standard_normal(4000) * 3,
                        np.linspace(-0.7, 0.7, 2001)]).astype(f32)
    r, z, n = _gates(x)
    x64 = x.astype(np.float64)
    assert _ulps(r, 1 / (1 + np.exp(-x64))).max() <= 2.5
    assert _ulps(z, 1 / (1 + np.exp(x64))).max() <= 2.5
    assert _ulps(n, np.tanh(x64)).max() <= 2.5
    assert r.dtype == n.dtype == f32


def test_limits_and_nan():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, 200.0, -200.0, -90.0], f32)
    r, _, n = _gates(x)
    np.testing.assert_array_equal(r[[0, 1, 3, 4, 5]], np.array([1.0, 0.0, 0.5, 1.0, 0.0], f32))
    np.testing.assert_array_equal(n[[0, 1, 3, 4, 5]], np.array([1.0, -1.0, 0.0, 1.0, -1.0], f32))
    assert np.isnan(r[2]) and np.isnan(n[2])
    assert 0.0 <= r[6] < 1e-38  # exp(-90) underflows: at most a subnormal's worth off


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_pass_split_across_threads_gives_the_same_bits(monkeypatch, dtype):
    """From 8192 gate elements the passes run on the kernels' threads: each element and each
    bias sum is computed by one thread in one order, so one thread and two agree exactly."""
    from gmnative import kernels

    k = kernels.kernels()
    if k is None:
        pytest.skip("eager's native kernels are off here")
    rng = np.random.default_rng(3)
    b, units = 24, 128  # 3 * 128 * 24 = 9216 gate elements
    gi, gh = (rng.standard_normal((3 * units, b)).astype(dtype) for _ in range(2))
    bi, bh = (rng.standard_normal(3 * units).astype(dtype) for _ in range(2))
    h, g = (rng.standard_normal((b, units)).astype(dtype) for _ in range(2))
    runs = []
    for threads in (1, 2):
        monkeypatch.setattr(k, "threads", lambda threads=threads: threads)
        out, saved = cell_kernels.gru_cell(gi, gh, bi, bh, h)
        runs.append((out, saved, *cell_kernels.gru_cell_backward(g, h, saved)))
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)
