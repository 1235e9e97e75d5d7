"""Native steps of eager's attention-sized ops that must keep the op path's NumPy bits:
softmax's forward around NumPy's exp (gmnative.softmax_kernels.softmax) over row lengths
on either side of NumPy's pairwise-summation blocks (8 partial sums, halves above 128), and
the same bits (forward and gradient) with the rows split across threads."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from gmnative import softmax_kernels
from gmops import REGISTRY

needs_kernel = pytest.mark.skipif(not softmax_kernels.available(), reason="no native compiler (the op path runs)")


@needs_kernel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c", [1, 2, 7, 8, 9, 16, 17, 32, 33, 127, 128, 129, 200, 256, 257, 1031])
def test_softmax_forward_has_the_op_paths_bits(dtype, c):
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((23, c)) * rng.choice([0.1, 1.0, 40.0], (23, 1))).astype(dtype)
    x[2, : c // 2] = -np.inf  # masked positions (a causal attention's), the row still finite
    got = softmax_kernels.softmax(x)
    want = REGISTRY["softmax"].forward(np, x, dim=1)
    assert got is not None and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    # through eager's softmax of a 4-d tensor, the node's output too
    x4 = x[:20].reshape(2, 2, 5, c)
    t = eager.tensor(x4, requires_grad=True)
    np.testing.assert_array_equal(eager.softmax(t, -1).detach().numpy(), REGISTRY["softmax"].forward(np, x4, dim=3))


@needs_kernel
@pytest.mark.parametrize("bad", [-np.inf, np.inf, np.nan])
def test_softmax_rows_whose_maximum_is_not_finite_take_the_op_path(bad):
    x = np.random.default_rng(0).standard_normal((4, 9)).astype(np.float32)
    x[1, :] = -np.inf
    x[1, 3] = bad
    assert softmax_kernels.softmax(x) is None
    with np.errstate(invalid="ignore"):  # (inf - inf: NaN rows, as PyTorch's)
        want = REGISTRY["softmax"].forward(np, x, dim=1)
        got = eager.softmax(eager.tensor(x), -1).numpy()
    np.testing.assert_array_equal(got, want)


@needs_kernel
@pytest.mark.parametrize("team", [2, 3])
def test_softmax_rows_split_across_threads_keep_their_bits(team, monkeypatch):
    from gmnative import build

    rng = np.random.default_rng(11)
    x = (rng.standard_normal((16, 4, 32, 33)) * 4).astype(np.float32)  # above ROWS_SPLIT_MIN elements
    x[:, :, :, 20:] = -np.inf
    g = rng.standard_normal(x.shape).astype(np.float32)
    assert x.size >= softmax_kernels.ROWS_SPLIT_MIN
    y1 = softmax_kernels.softmax(x)
    gx1 = softmax_kernels.backward(g, y1, False)
    monkeypatch.setattr(build, "threads", lambda: team)
    y = softmax_kernels.softmax(x)
    np.testing.assert_array_equal(y, REGISTRY["softmax"].forward(np, x, dim=3))
    np.testing.assert_array_equal(y, y1)
    np.testing.assert_array_equal(softmax_kernels.backward(g, y, False), gx1)
    x[0, 0, 0, :] = -np.inf  # a row with no finite maximum: the op path, whatever the team
    assert softmax_kernels.softmax(x) is None


@needs_kernel
@pytest.mark.parametrize("team", [2, 3, 5])
@pytest.mark.parametrize("shape", [(512, 192), (300, 17), (64, 513), (2048, 16)])
def test_column_sums_split_across_threads_keep_numpys_bits(team, shape, monkeypatch):
    from gmnative import build

    rng = np.random.default_rng(12)
    g = (rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * 4)).astype(np.float32)
    monkeypatch.setattr(build, "threads", lambda: team)
    np.testing.assert_array_equal(softmax_kernels.column_sum(g), g.sum(0))
