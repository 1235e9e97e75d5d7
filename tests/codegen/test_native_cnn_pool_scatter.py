"""The max-pooling gradient's scatter in batch norm's gradient region (pool_fusion.scatter_lines):
windows two cells wide tiling float32 rows write each plane row whole (a window's two cells
one 64-bit word, pool_fusion._paired_rows; whole vectors of lanes, the lanes past a row
written over by the next row); other windows and float64 keep the scalar scatter. Each
form checked on a training step against eager (check=True), with the form asserted from
the generated source: rows left below the windows, windows three rows high, a column left
over, float64. And the forward's fused pooling (pool_fusion.pool_lines), a row's windows
pooled as whole vectors of lanes (POOL_LANES), the lanes past the row dropped."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

import eager
import static
from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

SCATTER = "max-pooling's gradient, image nn's plane"
PAIRED = "gm_pair* r0"


def _block(pool: nn.Module, dtype) -> nn.Module:
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), pool)
    return m.to(eager.float64) if dtype == np.float64 else m


@pytest.mark.parametrize("pool, shape, dtype, paired", [
    (nn.MaxPool2d(2), (2, 1, 7, 16), np.float32, True),  # a row below the windows: zero
    (nn.MaxPool2d((3, 2)), (2, 1, 9, 18), np.float32, True),  # windows three rows high
    (nn.MaxPool2d(2), (2, 1, 6, 17), np.float32, False),  # a column left over: the scalar scatter
    (nn.MaxPool2d(2), (2, 1, 6, 6), np.float32, True),  # 3 windows a row: 8 lanes, 5 past the row
    (nn.MaxPool2d(2), (2, 1, 6, 16), np.float64, False),
])
def test_the_pooled_gradient_scatter_equals_eager(pool, shape, dtype, paired):
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    src = compiled_step_source(lambda: _block(pool, dtype), lambda model, t: model(t).square().mean(), x, steps=2)
    assert SCATTER in src and (PAIRED in src) == paired
    if paired:  # the scalar lines stay for big-endian targets
        assert "#else" in src and "__ORDER_LITTLE_ENDIAN__" in src


@pytest.mark.parametrize("pool, shape, lanes", [
    (nn.MaxPool2d(2), (2, 1, 14, 14), 8),  # 7 windows a row pooled as 8 lanes, the last row's past the plane
    (nn.MaxPool2d(3, stride=2), (2, 1, 11, 11), 8),  # overlapping windows: 5 a row
    (nn.MaxPool2d(2), (2, 1, 8, 32), None),  # 16 a row: no lanes over
])
def test_the_fused_pooling_rows_padded_to_whole_vectors_equal_eager(pool, shape, lanes):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    x[1, 0, 3, 4] = np.nan  # NaN wins its window, in the padded rows too
    model = _block(pool, np.float32)

    def fwd(t):
        return model(t)
    f = static.compile(fwd, backend="native")
    t = eager.from_numpy(x)
    got = f(t).detach().numpy()
    want = model(t).detach().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-5, atol=1e-6)
    src = f._entry_for((t,), {})[3].forward._loaded.source
    assert "max-pooling: first maximum" in src
    assert (f"float bests[{lanes}]" in src) if lanes else ("float bests[" not in src)
