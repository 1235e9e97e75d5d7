"""The image-by-image convolution's backward (gmnative.conv_kernels.conv2d_images_backward):
its input gradient, whose fold of W^T G[n] takes a shifted-plane road for stride-1 layers
with output rows as long as the image's, must keep the bits of the batch-major path's fold
(fold2d_batch_major, which adds the cells row by row), infinities, NaN and signed zeros
included; its float32 weight gradient, on the project's own sgemm where that is built, must
stay the batch's sum of G[n] cols[n]^T."""
from __future__ import annotations

import numpy as np
import pytest

from gmnative import conv_kernels as ck
from gmnative import kernels as native_kernels

pytestmark = pytest.mark.skipif(native_kernels.kernels() is None or native_kernels.blas_gemm() is None,
                                reason="eager's native kernels or NumPy's cblas symbol are not available")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [
    # (N, C, H, W), (O, KH, KW), (top, left) padding, dilation h, (OH, OW): stride 1, OW == W
    ((3, 4, 14, 14), (8, 3, 3), (1, 1), 1, (14, 14)),  # "same" 3x3 (W6's layers)
    ((2, 3, 7, 9), (5, 5, 5), (2, 2), 1, (7, 9)),  # 5x5 "same"
    ((2, 2, 6, 5), (3, 3, 1), (0, 0), 2, (2, 5)),  # a column kernel, dilated rows, no padding: OH < H
    ((2, 2, 5, 6), (3, 2, 3), (1, 1), 1, (6, 6)),  # uneven padding: OH > H (a row past the bottom)
    ((2, 1, 3, 4), (2, 7, 3), (3, 1), 1, (3, 4)),  # windows taller than the image
    ((2, 2, 4, 1), (3, 3, 1), (1, 0), 1, (4, 1)),  # one column
])
def test_the_shifted_fold_keeps_the_row_by_row_folds_bits(dtype, geometry):
    (n, c, h, w_), (o, kh, kw), pad, dil_h, out = geometry
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, c, h, w_)).astype(dtype)
    w = rng.standard_normal((o, c, kh, kw)).astype(dtype)
    g = rng.standard_normal((n, o) + out).astype(dtype)
    flat = g.reshape(-1)  # specials, so that the wrapped cells' +0 must change nothing
    flat[::7] = -0.0
    flat[5] = np.inf
    flat[11] = -np.inf
    flat[17] = np.nan
    got = ck.conv2d_images_backward(g, x, w, (1, 1), pad, (dil_h, 1), True, True)
    assert got is not None
    dx, dw, _ = got
    gm = g.reshape(n, o, -1)
    dcols = ck.gemm_batched(w.reshape(o, -1).T, gm)
    want = ck.fold2d_batch_major(dcols, (h, w_), c, (kh, kw), out, (1, 1), pad, (dil_h, 1))
    np.testing.assert_array_equal(dx, want)
    assert np.array_equal(np.signbit(dx), np.signbit(want))
    # the weight gradient (finite inputs): the batch's sum of G[n] cols[n]^T
    g2 = rng.standard_normal((n, o) + out).astype(dtype)
    dw = ck.conv2d_images_backward(g2, x, w, (1, 1), pad, (dil_h, 1), False, True)[1]
    cols = ck.im2col2d_batch_major(x, (kh, kw), out, (1, 1), pad, (dil_h, 1))
    dw_want = np.einsum("nol,nkl->ok", g2.reshape(n, o, -1).astype(np.float64), cols.astype(np.float64))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dw, dw_want.reshape(w.shape), rtol=tol, atol=tol)


def test_an_image_whose_fold_is_all_zero_gradient_stays_positive_zero():
    """A zero (or negative-zero) output gradient folds to +0 everywhere, as the row-by-row fold's."""
    x = np.ones((2, 2, 5, 5), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    g = np.full((2, 3, 5, 5), -0.0, np.float32)
    dx = ck.conv2d_images_backward(g, x, w, (1, 1), (1, 1), (1, 1), True, False)[0]
    assert not np.signbit(dx).any() and not dx.any()
