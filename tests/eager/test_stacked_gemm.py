"""A stack of matrix products split across the kernels' threads (gmnative.stacked_gemm, what
eager's matmul of 3-d/4-d operands runs): equal to np.matmul bit for bit whatever the thread
count, on the views attention makes (a head split of one projection, transposes of it),
broadcast batches and a matrix by a stack; the products NumPy does not give to gemm (a
matrix times its own transpose: syrk; negative strides) are left to np.matmul."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from gmnative import build, stacked_gemm

pytestmark = pytest.mark.skipif(not build.availability()[0], reason="no C++ compiler")


@pytest.fixture(params=[2, 3])
def team(request, monkeypatch):
    """The kernels' team pinned (a loaded machine would shrink it to one: nothing to split)."""
    monkeypatch.setattr(build, "threads", lambda: request.param)
    monkeypatch.setattr(build, "blas_threads", lambda: 1)
    return request.param


def _heads(dtype, seed=0):
    qkv = np.random.default_rng(seed).standard_normal((16, 32, 192)).astype(dtype)
    return [t.reshape(16, 32, 4, 16).transpose(0, 2, 1, 3) for t in np.split(qkv, 3, axis=2)]


def _same(a, b):
    got = stacked_gemm.matmul(a, b)
    assert got is not None, (a.shape, a.strides, b.shape, b.strides)
    want = np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_products_and_their_gradients_have_numpys_bits(team, dtype):
    q, k, v = _heads(dtype)
    s = np.matmul(q, k.swapaxes(-1, -2))
    rng = np.random.default_rng(1)
    gs = rng.standard_normal(s.shape).astype(dtype)
    gy = rng.standard_normal(q.shape).astype(dtype)
    _same(q, k.swapaxes(-1, -2))  # scores
    _same(s, v)  # weighted values
    _same(gs, k)  # d q
    _same(gs.swapaxes(-1, -2), q)  # d k
    _same(gy, v.swapaxes(-1, -2))  # d att
    _same(s.swapaxes(-1, -2), gy)  # d v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_broadcast_batches_and_a_matrix_by_a_stack(team, dtype):
    rng = np.random.default_rng(2)
    _same(rng.standard_normal((8, 1, 64, 48)).astype(dtype), rng.standard_normal((5, 48, 40)).astype(dtype))
    _same(rng.standard_normal((64, 48)).astype(dtype), rng.standard_normal((40, 48, 64)).astype(dtype))
    x = rng.standard_normal((3, 70, 33, 64)).astype(dtype)
    _same(x[:, ::2], rng.standard_normal((64, 40)).astype(dtype))  # a strided stack by a matrix


def test_products_numpy_computes_otherwise_are_left_to_it(team):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 64, 64)).astype(np.float32)
    assert stacked_gemm.matmul(x, x.swapaxes(-1, -2)) is None  # syrk in NumPy
    assert stacked_gemm.matmul(x[::-1], x) is None  # a negative batch stride
    assert stacked_gemm.matmul(x[:, :, ::2], x[:, ::2]) is None  # no unit stride: not blasable
    assert stacked_gemm.matmul(x[:2, :4, :4], x[:2, :4, :4]) is None  # too small to gain
    assert stacked_gemm.matmul(x.astype(np.int64), x.astype(np.int64)) is None
    assert stacked_gemm.matmul(x[:, :1], x) is None  # a row: NumPy's gemv
    for a, b in ((x, x.swapaxes(-1, -2)), (x[::-1], x)):
        np.testing.assert_array_equal(eager.matmul(eager.tensor(a), eager.tensor(b)).numpy(), np.matmul(a, b))


def test_eager_attention_forward_and_backward_equal_numpy(team, monkeypatch):
    ran = []
    split = stacked_gemm.matmul

    def spy(a, b):
        out = split(a, b)
        ran.append(out is not None)
        return out

    monkeypatch.setattr(stacked_gemm, "matmul", spy)
    q, k, v = _heads(np.float32, seed=4)
    tq, tk, tv = (eager.tensor(np.ascontiguousarray(t), requires_grad=True) for t in (q, k, v))
    s = tq @ tk.transpose(-2, -1)
    y = s @ tv
    g = np.random.default_rng(5).standard_normal(y.shape).astype(np.float32)
    y.backward(eager.tensor(g))
    sn = np.matmul(q, k.swapaxes(-1, -2))
    np.testing.assert_array_equal(y.detach().numpy(), np.matmul(sn, v))
    gs = np.matmul(g, v.swapaxes(-1, -2))
    np.testing.assert_array_equal(tv.grad.numpy(), np.matmul(sn.swapaxes(-1, -2), g))
    np.testing.assert_array_equal(tq.grad.numpy(), np.matmul(gs, k))
    np.testing.assert_array_equal(tk.grad.numpy(), np.matmul(q.swapaxes(-1, -2), gs).swapaxes(-1, -2))
    assert ran.count(True) == 6  # two products forward, four backward
