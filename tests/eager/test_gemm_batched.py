"""gmnative.conv_kernels.gemm_batched: a batch of products split across the kernels' threads,
each image one BLAS call (the fused conv2d's forward, input gradient and weight gradient)."""
from __future__ import annotations

import numpy as np
import pytest

from gmnative import conv_kernels as ck
from gmnative import kernels as native_kernels

pytestmark = pytest.mark.skipif(native_kernels.kernels() is None or native_kernels.blas_gemm() is None,
                                reason="eager's native kernels or NumPy's cblas symbol are not available")


def _data(dtype, *shapes):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_each_image_is_its_own_blas_product(dtype, threads):
    w, cols, g = _data(dtype, (6, 12), (5, 12, 9), (5, 6, 9))
    tol = 1e-5 if dtype == np.float32 else 1e-13
    # a broadcast weight (stride 0), a transposed (Fortran-ordered) weight, transposed batches,
    # a 2-d right operand; each image's bits the same whatever the thread count
    for a, b in ((w, cols), (w.T, g), (g, cols.transpose(0, 2, 1)), (cols.transpose(0, 2, 1), w.T)):
        got = ck.gemm_batched(a, b, threads=threads)
        assert got.shape == np.matmul(a, b).shape and got.dtype == dtype
        np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=tol, atol=tol)
        np.testing.assert_array_equal(got, ck.gemm_batched(a, b, threads=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_batch_sum_is_the_weight_gradient_and_fixed_by_the_thread_count(dtype):
    g, cols = _data(dtype, (7, 4, 30), (7, 10, 30))
    ref = np.einsum("nol,nkl->ok", g.astype(np.float64), cols.astype(np.float64))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for threads in (1, 2, 3, 8):  # more threads than images: one image a run
        got = ck.gemm_batched(g, cols.transpose(0, 2, 1), sum_batch=True, threads=threads)
        assert got.shape == (4, 10) and got.dtype == dtype
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
        again = ck.gemm_batched(g, cols.transpose(0, 2, 1), sum_batch=True, threads=threads)
        np.testing.assert_array_equal(got, again)
    # one thread: the images accumulated in order, as a running sum of the products
    running = np.zeros((4, 10), dtype)
    one = ck.gemm_batched(g, cols.transpose(0, 2, 1), sum_batch=True, threads=1)
    for x, c in zip(g, cols):
        running = running + x @ c.T
    np.testing.assert_allclose(one, running, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_bias_is_added_to_each_image_as_a_pass_after_would(dtype):
    w, cols, bias = _data(dtype, (6, 12), (5, 12, 9), (6,))
    for threads in (1, 2):
        want = ck.gemm_batched(w, cols, threads=threads)
        want += bias.reshape(6, 1)
        np.testing.assert_array_equal(ck.gemm_batched(w, cols, bias=bias, threads=threads), want)
    assert ck.gemm_batched(w, cols, bias=bias[:5]) is None  # one per row of the product
    assert ck.gemm_batched(w, cols, bias=bias[::-1]) is None  # a strided bias
    assert ck.gemm_batched(w, cols, bias=bias, sum_batch=True) is None


def test_what_it_cannot_take_is_none():
    a, b = _data(np.float32, (3, 4, 5), (3, 5, 6))
    assert ck.gemm_batched(a, b[:2]) is None  # batch sizes differ
    assert ck.gemm_batched(a, b[:, :4]) is None  # inner sizes differ
    assert ck.gemm_batched(a, b.astype(np.float64)) is None  # dtypes differ
    assert ck.gemm_batched(a[0], b[0]) is None  # no batch
    assert ck.gemm_batched(a[:, :, ::2], b[:, :3]) is None  # a strided layout
    assert ck.gemm_batched(a.astype(np.int64), b.astype(np.int64)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [
    # (N, C, H, W), (O, KH, KW), stride, (top, left) padding, dilation, (OH, OW)
    ((4, 3, 9, 7), (5, 3, 3), (1, 1), (1, 1), (1, 1), (9, 7)),
    ((3, 2, 10, 9), (4, 3, 2), (2, 1), (1, 0), (1, 2), (5, 7)),  # strides, dilation, uneven padding
    ((2, 1, 8, 8), (3, 3, 3), (1, 1), (0, 0), (1, 1), (6, 6)),  # one input channel, no padding
    ((3, 4, 6, 6), (2, 3, 3), (1, 1), (1, 1), (1, 1), (7, 7)),  # bottom/right padding past the top/left's
])
def test_image_by_image_conv_gives_the_batch_major_paths_values(dtype, geometry):
    (n, c, h, w_), (o, kh, kw), stride, pad, dil, out = geometry
    x, w, b, g = _data(dtype, (n, c, h, w_), (o, c, kh, kw), (o,), (n, o) + out)
    cols = ck.im2col2d_batch_major(x, (kh, kw), out, stride, pad, dil)
    want = ck.gemm_batched(w.reshape(o, -1), cols, bias=b).reshape((n, o) + out)
    np.testing.assert_array_equal(ck.conv2d_images(x, w, b, out, stride, pad, dil), want)
    want_nb = ck.gemm_batched(w.reshape(o, -1), cols).reshape((n, o) + out)
    np.testing.assert_array_equal(ck.conv2d_images(x, w, None, out, stride, pad, dil), want_nb)
    gm = g.reshape(n, o, -1)
    dx_want = ck.fold2d_batch_major(ck.gemm_batched(w.reshape(o, -1).T, gm), (h, w_), c, (kh, kw), out, stride, pad,
                                    dil)
    dw_want = np.einsum("nol,nkl->ok", gm.astype(np.float64), cols.astype(np.float64)).reshape(w.shape)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for want_dx, want_dw in ((True, True), (True, False), (False, True)):
        dx, dw, db = ck.conv2d_images_backward(g, x, w, stride, pad, dil, want_dx, want_dw, want_dx)
        assert (dx is None) != want_dx and (dw is None) != want_dw and (db is None) != want_dx
        if want_dx:  # (the bias gradient asked for with dx here)
            np.testing.assert_allclose(db, g.astype(np.float64).sum((0, 2, 3)), rtol=tol, atol=tol)
            assert db.dtype == dtype and db.shape == (o,)
        if want_dx:
            np.testing.assert_array_equal(dx, dx_want)  # (each image's own products and fold)
        if want_dw:
            assert dw.shape == w.shape and dw.dtype == dtype
            np.testing.assert_allclose(dw, dw_want, rtol=tol, atol=tol)
    # what they do not take
    assert ck.conv2d_images(x, w.astype(np.float16), b, out, stride, pad, dil) is None
    assert ck.conv2d_images(x, w, b[:-1], out, stride, pad, dil) is None
    assert ck.conv2d_images_backward(g[:, :, ::-1], x, w, stride, pad, dil, True, True) is None


@pytest.mark.parametrize("h, w, kh, kw, top, left, bottom, right, dil_h", [
    (5, 7, 3, 3, 1, 1, 1, 1, 1),  # "same" 3x3: the shifted-plane copy
    (8, 5, 5, 5, 2, 2, 2, 2, 2),  # a dilated row offset
    (3, 1, 3, 1, 1, 0, 1, 0, 1),  # one column
    (4, 6, 2, 3, 0, 2, 1, 0, 1),  # uneven padding, still rows as long as the image's
    (2, 4, 5, 3, 3, 1, 3, 1, 1),  # windows taller than the image
    (6, 6, 3, 3, 0, 0, 0, 0, 1),  # no padding (shorter rows: the row-by-row copy)
])
def test_im2col_columns_are_the_padded_images_windows(h, w, kh, kw, top, left, bottom, right, dil_h):
    x = _data(np.float32, (2, 3, h, w))[0]
    oh, ow = h + top + bottom - dil_h * (kh - 1), w + left + right - (kw - 1)
    got = ck.im2col2d_batch_major(x, (kh, kw), (oh, ow), (1, 1), (top, left), (dil_h, 1))
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    want = np.stack([padded[:, :, a * dil_h:a * dil_h + oh, b:b + ow] for a in range(kh) for b in range(kw)], 2)
    np.testing.assert_array_equal(got, want.reshape(got.shape))


@pytest.mark.parametrize("fold", [True, False])
def test_the_conv_node_without_the_image_kernels_gives_the_same_gradients(monkeypatch, fold):
    """The fused conv2d node's batch-major path (the columns of the whole batch, kept for dW;
    where the fold kernel is missing too, the op's own fold) where conv2d_images cannot run."""
    import eager

    x, w, b, g = _data(np.float64, (3, 2, 7, 6), (4, 2, 3, 3), (4,), (3, 4, 4, 2))

    def grads():
        ts = [eager.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = eager.nn.functional.conv2d(ts[0], ts[1], ts[2], stride=(2, 2), padding=1, dilation=(1, 2))
        assert y.grad_fn.name() == "ConvolutionBackward0"
        y.backward(eager.tensor(g))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts]

    assert ck.conv2d_images(x, w, b, (4, 2), (2, 2), (1, 1), (1, 2)) is not None  # (what ran for `want`)
    want = grads()
    monkeypatch.setattr(ck, "conv2d_images", lambda *a, **k: None)
    if not fold:
        monkeypatch.setattr(ck, "fold2d_batch_major", lambda *a: None)
    for got, ref in zip(grads(), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
