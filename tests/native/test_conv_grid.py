"""The stride-1 convolution products on the padded image's grid (gm_sgemm_grid and
gm_sgemm_grid_t in gmnative/csrc/gm_gemm.cpp, called image by image from
gmnative/csrc/eager_conv_grid.cpp): the forward and the input gradient must keep the bits of the
batch-major path (im2col2d_batch_major + gemm_batched, the same routed sgemm; the fold's
order), whatever the geometry (dilation, uneven padding, windows wider than the padding, a
grid whose positions are not whole vectors), the thread count and the values (NaN,
infinities, signed zeros); the weight gradient is the batch's sum to rounding, and an image
with a non-finite value must not turn the thrown-away grid positions' terms (x * 0) into NaN."""
from __future__ import annotations

import numpy as np
import pytest

from gmnative import build as native_build
from gmnative import conv_kernels as ck
from gmnative import gemm
from gmnative import kernels as native_kernels

pytestmark = pytest.mark.skipif(native_kernels.kernels() is None or native_kernels.blas_gemm() is None,
                                reason="eager's native kernels or NumPy's cblas symbol are not available")

# (N, C, H, W), (O, KH, KW), (top, left) padding, dilation, (OH, OW); stride 1. The forward runs
# on the grid where C KH KW >= 64 (conv_kernels.OWN_MIN_DEPTH), the input gradient where O >= 64
GEOMETRIES = [
    ((4, 16, 14, 14), (32, 3, 3), (1, 1), (1, 1), (14, 14)),  # W6's second layer
    ((3, 8, 9, 11), (7, 3, 3), (1, 1), (1, 1), (9, 11)),  # a grid of 9 x 13: not whole vectors
    ((2, 3, 8, 8), (13, 5, 5), (2, 2), (1, 1), (8, 8)),  # 5x5 "same", 13 output channels (edge rows)
    ((2, 8, 10, 7), (6, 3, 3), (2, 1), (2, 1), (10, 7)),  # dilated rows
    ((2, 8, 7, 6), (5, 3, 3), (1, 0), (1, 1), (7, 4)),  # no left padding: OW < W
    ((2, 11, 6, 9), (4, 2, 3), (1, 2), (1, 1), (6, 10)),  # uneven padding: a column past the right
    ((3, 8, 12, 12), (9, 3, 3), (0, 0), (1, 1), (10, 10)),  # no padding
    ((2, 3, 9, 9), (64, 3, 3), (1, 1), (1, 1), (9, 9)),  # the input gradient on the grid
    ((2, 8, 7, 9), (70, 3, 3), (1, 1), (2, 1), (5, 9)),  # both, 70 rows (edge tiles), dilated
]


def _data(shape_x, shape_w, out, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape_x).astype(dtype)
    w = rng.standard_normal(shape_w).astype(dtype)
    b = rng.standard_normal(shape_w[0]).astype(dtype)
    g = rng.standard_normal((shape_x[0], shape_w[0]) + out).astype(dtype)
    return x, w, b, g


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_grid_products_keep_the_batch_major_paths_bits(geometry):
    (n, c, h, w_), (o, kh, kw), pad, dil, out = geometry
    x, w, b, g = _data((n, c, h, w_), (o, c, kh, kw), out)
    flat = g.reshape(-1)  # (specials in the gradient: its thrown-away positions must add +0)
    flat[::5] = -0.0
    flat[3], flat[8], flat[13] = np.inf, -np.inf, np.nan
    cols = ck.im2col2d_batch_major(x, (kh, kw), out, (1, 1), pad, dil)
    for bias in (b, None):
        want = ck.gemm_batched(w.reshape(o, -1), cols, bias=bias).reshape((n, o) + out)
        got = ck.conv2d_images(x, w, bias, out, (1, 1), pad, dil)
        np.testing.assert_array_equal(got, want)
    dx, dw, _ = ck.conv2d_images_backward(g, x, w, (1, 1), pad, dil, True, True)
    dcols = ck.gemm_batched(w.reshape(o, -1).T, g.reshape(n, o, -1))
    dx_want = ck.fold2d_batch_major(dcols, (h, w_), c, (kh, kw), out, (1, 1), pad, dil)
    np.testing.assert_array_equal(dx, dx_want)
    assert np.array_equal(np.signbit(dx), np.signbit(dx_want))
    g2 = _data((n, c, h, w_), (o, c, kh, kw), out, seed=1)[3]
    dw = ck.conv2d_images_backward(g2, x, w, (1, 1), pad, dil, False, True)[1]
    dw_want = np.einsum("nol,nkl->ok", g2.reshape(n, o, -1).astype(np.float64), cols.astype(np.float64))
    np.testing.assert_allclose(dw, dw_want.reshape(w.shape), rtol=1e-4, atol=1e-4)


def test_the_bits_do_not_depend_on_the_thread_count(monkeypatch):
    """Each image's forward and input gradient are its own products: any split of the batch
    gives the same bits; the weight gradient's partials (one a run) stay within rounding."""
    x, w, b, g = _data((5, 16, 14, 14), (32, 16, 3, 3), (14, 14))
    results = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(native_build, "threads", lambda t=threads: t)
        ck._CONV_PLANS.clear()
        y = ck.conv2d_images(x, w, b, (14, 14), (1, 1), (1, 1), (1, 1))
        dx, dw, _ = ck.conv2d_images_backward(g, x, w, (1, 1), (1, 1), (1, 1), True, True)
        results.append((y, dx, dw))
    ck._CONV_PLANS.clear()
    for y, dx, dw in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(dx, results[0][1])
        np.testing.assert_allclose(dw, results[0][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_a_non_finite_image_value_leaves_the_weight_gradient_it_does_not_reach_finite(value):
    """x's first column holds `value`: the window rows that never read it (kw = 2 reads columns
    1.., past the padding) keep finite gradients, though a thrown-away grid position of theirs
    lies on the cell (the next row's first column): the weight gradient sums the kept positions
    only. The rows that read it are inf or NaN as the sums over the compact columns are."""
    n, c, h, w_, o = 2, 3, 6, 6, 4
    x, w, _, g = _data((n, c, h, w_), (o, c, 3, 3), (h, w_))
    x[1, 2, 3, 0] = value
    dw = ck.conv2d_images_backward(g, x, w, (1, 1), (1, 1), (1, 1), False, True)[1]
    cols = ck.im2col2d_batch_major(x, (3, 3), (h, w_), (1, 1), (1, 1), (1, 1)).astype(np.float64)
    gm = g.reshape(n, o, -1).astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = np.einsum("nol,nkl->ok", gm, cols).reshape(w.shape)
    assert np.isfinite(dw[:, :2]).all() and np.isfinite(dw[:, 2, :, 2]).all()
    np.testing.assert_array_equal(np.isfinite(dw), np.isfinite(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(dw[finite], want[finite], rtol=1e-4, atol=1e-4)


def test_a_product_routed_to_numpys_blas_leaves_the_grid():
    """A result wider than the own sgemm's columns (a 20 x 20 image: 400 positions) goes to
    NumPy's BLAS through the routed sgemm; the grid product declines it, so the image-by-image
    path still gives gemm_batched's bits."""
    x, w, b, g = _data((2, 3, 20, 20), (8, 3, 3, 3), (20, 20))
    cols = ck.im2col2d_batch_major(x, (3, 3), (20, 20), (1, 1), (1, 1), (1, 1))
    want = ck.gemm_batched(w.reshape(8, -1), cols, bias=b).reshape(2, 8, 20, 20)
    np.testing.assert_array_equal(ck.conv2d_images(x, w, b, (20, 20), (1, 1), (1, 1), (1, 1)), want)
    dx = ck.conv2d_images_backward(g, x, w, (1, 1), (1, 1), (1, 1), True, False)[0]
    dcols = ck.gemm_batched(w.reshape(8, -1).T, g.reshape(2, 8, -1))
    want_dx = ck.fold2d_batch_major(dcols, (20, 20), 3, (3, 3), (20, 20), (1, 1), (1, 1), (1, 1))
    np.testing.assert_array_equal(dx, want_dx)


def test_the_grid_products_against_float64():
    """gm_sgemm_grid itself: C = op(A) B with B's rows at offsets (overlapping, as a padded image's
    window rows), the kept lanes' values and the +0 of the others; either A layout."""
    if not gemm.own_sgemm():
        pytest.skip("the own sgemm is not the table's")
    import ctypes  # noqa: PLC0415

    k = native_kernels.kernels()
    fn = ctypes.CFUNCTYPE(ctypes.c_int, *([ctypes.c_longlong] * 3), ctypes.c_void_p, ctypes.c_longlong,
                          ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                          ctypes.c_void_p, ctypes.c_longlong)(k.address("gm_sgemm_grid"))
    rng = np.random.default_rng(5)
    m, p, depth = 13, 48, 150  # (rows past whole tiles, two depth blocks)
    base = rng.standard_normal(4096).astype(np.float32)
    off = rng.integers(0, 4096 - p, depth).astype(np.int64)
    bmat = np.stack([base[j:j + p] for j in off]).astype(np.float64)
    keep = (rng.random(p) < 0.7).astype(np.uint8)
    for transposed in (False, True):
        a = rng.standard_normal((depth, m) if transposed else (m, depth)).astype(np.float32)
        ars, acs = (1, m) if transposed else (depth, 1)
        c = np.full((m, p), np.nan, np.float32)
        assert fn(m, p, depth, a.ctypes.data, ars, acs, base.ctypes.data, off.ctypes.data, c.ctypes.data, p,
                  keep.ctypes.data, 64) == 1
        want = (a.T if transposed else a).astype(np.float64) @ bmat
        np.testing.assert_allclose(c[:, keep == 1], want[:, keep == 1], rtol=1e-4, atol=1e-4)
        assert (c[:, keep == 0] == 0).all() and not np.signbit(c[:, keep == 0]).any()
    assert fn(m, p, depth, a.ctypes.data, ars, acs, base.ctypes.data, off.ctypes.data, c.ctypes.data, p,
              keep.ctypes.data, 4096) == 0  # (a width the routing hands to NumPy's BLAS)
