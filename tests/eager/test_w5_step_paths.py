"""The paths a small GPT's training step (W5) takes that the op records do not show: the fused
linear's products split across the kernels' threads (gmnative.kernels.matmul) and masked_fill
with a mask of the scores' trailing dims through the native select."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_linear
from gmnative import build as native_build
from gmnative import kernels as eager_kernels
from gmops import selection

needs_compiler = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


@needs_compiler
@pytest.mark.parametrize("transpose_a", [False, True])
def test_split_products_match_numpy(transpose_a):
    """The row-split product of W5's shapes (a transposed weight; dW's transposed gradient)
    against NumPy's matmul on the same operands, with two threads whatever the load."""
    if eager_kernels.blas_gemm() is None:
        pytest.skip("NumPy's BLAS exports no cblas gemm here")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 512) if transpose_a else (512, 64)).astype(np.float32)
    b = rng.standard_normal((64, 192)).astype(np.float32) if not transpose_a else \
        rng.standard_normal((512, 64)).astype(np.float32)
    a_op = a.T.copy().T if transpose_a else a  # (a Fortran-ordered view: G.T in the backward)
    w = rng.standard_normal((192, 64)).astype(np.float32)
    b_op = b if transpose_a else w.T  # (the forward's W.T)
    got = eager_kernels.gemm(a_op, b_op, 2)
    assert got is not None
    # (float32 products the project computes with its own sgemm, gmnative.gemm, round in
    # another order than NumPy's BLAS: each is held to the exact product, and to NumPy's error)
    exact = a_op.astype(np.float64) @ b_op.astype(np.float64)
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-6 * np.abs(exact).max())
    assert np.abs(got - exact).max() <= 2 * np.abs((a_op @ b_op) - exact).max()


def test_the_fused_linear_asks_for_the_split_product(monkeypatch):
    """Forward and both weight-side gradients go through kernels.matmul from GEMM_SPLIT_MIN
    multiply-adds (None there: NumPy's product), and the values are the op path's."""
    calls = []

    def spy(a, b):
        calls.append((a.shape, b.shape))
        return None

    monkeypatch.setattr(eager_kernels, "matmul", spy)
    rng = np.random.default_rng(1)
    x = eager.tensor(rng.standard_normal((512, 64)).astype(np.float32), requires_grad=True)
    lin = eager.nn.Linear(64, 256)
    y = lin(x)
    y.backward(eager.ones_like(y))
    assert calls == [((512, 64), (64, 256)), ((512, 256), (256, 64)), ((256, 512), (512, 64))]
    ref = x.detach().numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    small = eager.nn.Linear(8, 4)
    calls.clear()
    small(eager.randn(3, 8))
    assert calls == []  # below GEMM_SPLIT_MIN: no split asked
    assert _fused_linear._SPLIT_MIN == eager_kernels.GEMM_SPLIT_MIN


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_fill_with_a_trailing_mask_matches_numpy(dtype):
    rng = np.random.default_rng(2)
    scores = rng.standard_normal((16, 4, 32, 32)).astype(dtype)
    mask = ~np.tri(32, dtype=bool)
    got = selection._where(np, mask, float("-inf"), scores)
    np.testing.assert_array_equal(got, np.where(mask, dtype(-np.inf), scores))
    assert got.dtype == dtype
    back = selection._where(np, mask, 0.0, scores)  # the gradient's where
    np.testing.assert_array_equal(back, np.where(mask, dtype(0), scores))
    t = eager.tensor(scores, requires_grad=True)
    out = t.masked_fill(eager.tensor(mask), float("-inf"))
    np.testing.assert_array_equal(out.detach().numpy(), np.where(mask, dtype(-np.inf), scores))
    out.backward(eager.ones_like(out))
    np.testing.assert_array_equal(t.grad.numpy(), np.broadcast_to(~mask, scores.shape).astype(dtype))


def test_a_mask_that_is_not_trailing_keeps_numpys_broadcast():
    x = np.arange(2 * 3 * 40 * 200, dtype=np.float32).reshape(2, 3, 40, 200)
    mask = np.zeros((3, 1, 1), bool)
    mask[1] = True
    np.testing.assert_array_equal(selection._where(np, mask, 0.0, x), np.where(mask, np.float32(0), x))
