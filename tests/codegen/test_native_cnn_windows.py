"""The window functions' faster forms (native_gen/conv.py): unfold and fold through a padded
plane on the stack (constant trip counts; the bounded loops when the plane is too large),
and max-pooling's gradient as a scatter of each window's gradient to its chosen cell when no
two windows share one. Each is checked to eager's bits on the shapes that take the odd
paths: one channel, a batch of one, float64, stride 2, padding on one side, windows that do
not reach the image's last rows (floor) or reach past it (ceil_mode), planes too large for
the stack, overlapping pooling windows (the fold path), NaN windows."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from codegen.native_gen import conv
from eager.nn import functional as F
from gmops.conv import FOLD, UNFOLD

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

# (input shape, kernel, stride, padding (top, bottom, left, right), dilation)
CASES = [
    ((1, 1, 7, 9), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),  # batch 1, channel 1, stride 2
    ((2, 3, 10, 5), (2, 3), (1, 2), (0, 2, 1, 0), (2, 1)),  # padding on one side, dilation
    ((3, 2, 6, 6), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 1x1 kernel
    ((2, 2, 9, 8), (3, 3), (3, 3), (0, 0, 0, 0), (1, 1)),  # windows miss the last rows/columns
    ((1, 2, 150, 120), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # plane past PLANE_BYTES: bounded loops
]


def _geo(case):
    _, kernel, stride, padding, dilation = case
    return dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)


def _text(fn, *args) -> str:
    return static.compile(fn, backend="native").lower(*args).compile().as_text()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_padded_plane_unfold_and_fold_equal_eagers_bits(case, dtype):
    geo = _geo(case)
    rng = np.random.default_rng(0)
    x = eager.from_numpy(rng.standard_normal(case[0]).astype(dtype))
    for pad_value in (0.0, float("-inf")):
        want = UNFOLD(x, pad_value=pad_value, **geo)
        got = static.compile(lambda t, v=pad_value: UNFOLD(t, pad_value=v, **geo), backend="native")(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    size = tuple(case[0][2:])
    cols = eager.from_numpy(rng.standard_normal(tuple(want.shape)).astype(dtype))
    got = static.compile(lambda t: FOLD(t, size=size, **geo), backend="native")(cols)
    np.testing.assert_array_equal(got.numpy(), FOLD(cols, size=size, **geo).numpy())
    text = _text(lambda t: FOLD(t, size=size, **geo), cols)
    oh, ow = want.shape[4:]
    small = conv._padded_extent((*geo["kernel"], *geo["stride"], 0, 0, *geo["dilation"]), oh, ow,
                                "float" if dtype == np.float32 else "double") is not None
    assert ("padded plane" in text) == small


def test_padded_fold_keeps_a_negative_zero_sum_positive():
    """The plane starts at +0 as the library's sum does: a cell whose addends are all -0.0
    sums to +0.0, not -0.0."""
    geo = dict(kernel=(2, 2), stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1))
    cols = eager.from_numpy(np.full((1, 2, 2, 1, 3, 3), -0.0, np.float32))
    got = static.compile(lambda t: FOLD(t, size=(4, 4), **geo), backend="native")(cols).numpy()
    want = FOLD(cols, size=(4, 4), **geo).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# (input shape, kernel, stride, padding, dilation, ceil_mode): disjoint windows take the scatter
POOLS = [
    ((1, 1, 9, 9), 2, 2, 0, 1, False),  # last row and column in no window
    ((2, 3, 9, 7), 2, 2, 0, 1, True),  # ceil_mode: windows reaching past the image
    ((1, 2, 8, 10), 3, 3, 1, 1, False),  # padded windows
    ((2, 1, 11, 11), 2, 3, 1, 2, True),  # dilation 2 and stride 3: disjoint, gaps between windows
    ((2, 2, 8, 8), 3, 2, 1, 1, False),  # overlapping windows: the fold path
]


@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, ceil_mode", POOLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pooling_gradient_scatter_equals_eagers_bits(shape, kernel, stride, padding, dilation, ceil_mode, dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0, 1:3, 1:4] = 0.25  # ties: the first maximum wins
    x[-1, -1, 0, :2] = np.nan  # NaN wins its windows
    g = rng.standard_normal(F.max_pool2d(eager.from_numpy(x), kernel, stride, padding, dilation,
                                         ceil_mode=ceil_mode).shape).astype(dtype)

    def loss(t, gw):
        z = F.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode=ceil_mode)
        return (z.nan_to_num() * gw).sum(), z

    te = eager.from_numpy(x.copy()).requires_grad_()
    le, ze = loss(te, eager.from_numpy(g))
    le.backward()
    tc = eager.from_numpy(x.copy()).requires_grad_()
    f = static.compile(loss, backend="native")
    lc, zc = f(tc, eager.from_numpy(g))
    lc.backward()
    np.testing.assert_array_equal(zc.detach().numpy(), ze.detach().numpy())
    np.testing.assert_array_equal(tc.grad.numpy(), te.grad.numpy())
    geometry = (kernel, kernel, stride, stride, padding, padding, dilation, dilation)
    text = f.source(eager.from_numpy(x.copy()).requires_grad_(), eager.from_numpy(g))
    assert ("share no cell" in text) == conv._disjoint(geometry)


def test_a_module_compiled_as_a_drop_in_scatters_through_the_mask():
    """A compiled forward saves the pooling's mask for its backward: the scatter then reads the
    mask (one offset chosen per window) and gives eager's gradient."""
    rng = np.random.default_rng(6)
    model = eager.nn.Sequential(eager.nn.Conv2d(1, 3, 3, padding=1), eager.nn.ReLU(), eager.nn.MaxPool2d(2))
    x = eager.from_numpy(rng.standard_normal((2, 1, 9, 8)).astype(np.float32))
    compiled = static.compile(model, backend="native")
    compiled(x).square().sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).square().sum().backward()
    for a, p in zip(got, model.parameters()):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [CASES[1], CASES[4]])
def test_fold_reads_batch_major_columns_in_place(case):
    # the column gradient of an image-by-image product is (N, K, L); permuted back to the
    # fold's (C, KH, KW, N, OH, OW) it is read where it lies (no copy), on both fold forms
    geo = _geo(case)
    n, c, h, w = case[0]
    oh, ow = UNFOLD(eager.zeros(case[0]), pad_value=0.0, **geo).shape[4:]
    k = c * geo["kernel"][0] * geo["kernel"][1]
    rng = np.random.default_rng(4)
    g = eager.from_numpy(rng.standard_normal((n, k, oh * ow)).astype(np.float32))

    def f(t):
        cols = t.permute(1, 0, 2).reshape(c, geo["kernel"][0], geo["kernel"][1], n, oh, ow)
        return FOLD(cols, size=(h, w), **geo)
    np.testing.assert_array_equal(static.compile(f, backend="native")(g).numpy(), f(g).numpy())
    text = _text(f, g)
    assert "gm_window" in text and "_c(" not in text.split("# L", 3)[-1].split("\n", 2)[1]


def test_image_by_image_conv_matches_torch_and_runs_dw_as_one_product():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 16, 14, 13)).astype(np.float32)  # K = 144: the image-by-image product
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)

    def loss(t, weight, bias):
        return (F.conv2d(t, weight, bias, padding=1, stride=(1, 2)) ** 2).sum()

    args = [eager.from_numpy(a.copy()).requires_grad_() for a in (x, w, b)]
    static.compile(loss, backend="native")(*args).backward()
    targs = [torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b)]
    (torch.nn.functional.conv2d(targs[0], targs[1], targs[2], padding=1, stride=(1, 2)) ** 2).sum().backward()
    for got, want in zip(args, targs):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-4, atol=1e-3)
    fwd_bwd = static.compile(loss, backend="native")
    fwd_bwd(*args)
    entry = fwd_bwd._entry_for(tuple(args), {})[3]
    assert entry.grad is not None
    # split into forward and backward, each half runs as the image-by-image kernels
    # (conv_images_split.py): the forward's product, and dW = sum_n G[n] cols[n]^T with the
    # columns made again per image from the saved input (not saved columns)
    assert "_rt.conv_images(" in entry.forward._loaded.source
    assert "_rt.conv_images_backward(" in entry.grad.backward._loaded.source
