"""Convolution and pooling windows are C functions of the native module (native_gen/conv.py):
unfold (im2col), fold (col2im), max-pooling's index and value in one pass, and its gradient
read straight from the index and the incoming gradient. Each is checked against eager to the
bit over geometries (kernel, stride, padding, dilation, odd sizes), with NaN windows, float64,
strided inputs, and on the CNN training step (W6) at batch 4, whose graph must hold no
library call of these ops any more."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import native_build
from eager.nn import functional as F
from gmops.conv import FOLD, UNFOLD

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "workloads"))

import w6_cnn  # noqa: E402

GEOMETRIES = [  # (kernel, stride, padding (top, bottom, left, right), dilation)
    ((3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1)),
    ((2, 2), (1, 1), (0, 0, 0, 0), (2, 2)),  # the offsets gcc's AVX-512 loop got wrong (conv.py _add_loop)
    ((3, 2), (2, 3), (1, 1, 0, 2), (1, 2)),
    ((1, 3), (3, 1), (0, 0, 1, 1), (2, 1)),
]


def _geometry(g):
    kernel, stride, padding, dilation = g
    return dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)


def _source(fn, *args) -> str:
    """The generated driver and C++ of fn's forward for these arguments."""
    lowered = static.compile(fn, backend="native").lower(*args)
    return lowered.compile().as_text()


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unfold_and_fold_equal_eagers_bits(geometry, dtype):
    geo = _geometry(geometry)
    rng = np.random.default_rng(0)
    x = eager.from_numpy(rng.standard_normal((2, 3, 9, 11)).astype(dtype))
    cols = UNFOLD(x, pad_value=0.0, **geo)
    got = static.compile(lambda t: UNFOLD(t, pad_value=0.0, **geo), backend="native")(x)
    np.testing.assert_array_equal(got.numpy(), cols.numpy())
    c = eager.from_numpy(rng.standard_normal(tuple(cols.shape)).astype(dtype))
    want = FOLD(c, size=(9, 11), **geo)
    fold = static.compile(lambda t: FOLD(t, size=(9, 11), **geo), backend="native")
    np.testing.assert_array_equal(fold(c).numpy(), want.numpy())
    text = _source(lambda t: FOLD(t, size=(9, 11), **geo), c)
    assert "gm_window" in text and "_rt.forward('fold'" not in text


def test_unfold_reads_a_strided_view_in_place():
    rng = np.random.default_rng(1)
    x = eager.from_numpy(rng.standard_normal((3, 2, 8, 7)).astype(np.float32))
    geo = _geometry(GEOMETRIES[0])

    def f(t):
        return UNFOLD(t.permute(1, 0, 2, 3), pad_value=0.0, **geo)
    np.testing.assert_array_equal(static.compile(f, backend="native")(x).numpy(), f(x).numpy())


@pytest.mark.parametrize("kernel, stride, padding, dilation", [
    (2, 2, 0, 1), (3, 2, 1, 1), (3, 1, 1, 1), (2, 1, 0, 2), ((2, 3), (1, 2), (1, 0), 1)])
def test_max_pooling_and_its_gradient_equal_eagers_bits(kernel, stride, padding, dilation):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 9, 10)).astype(np.float32)
    x[0, 1, 2:4, 2:5] = 0.5  # ties: the first maximum wins
    x[1, 2, 0, :3] = np.nan  # NaN wins its windows, as NumPy's argmax
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)

    def loss(t, weight):
        z = F.max_pool2d(F.conv2d(t, weight, padding=1), kernel, stride, padding, dilation)
        return (z.nan_to_num() ** 2).sum(), z

    te, we = (eager.from_numpy(a.copy()).requires_grad_() for a in (x, w))
    le, ze = loss(te, we)
    le.backward()
    tc, wc = (eager.from_numpy(a.copy()).requires_grad_() for a in (x, w))
    lc, zc = static.compile(loss, backend="native")(tc, wc)
    lc.backward()
    np.testing.assert_array_equal(zc.detach().numpy(), ze.detach().numpy())
    np.testing.assert_array_equal(tc.grad.numpy(), te.grad.numpy())
    # eager's conv2d is one node (eager/nn/_fused_conv.py) whose dW sums the images' products
    # in its own order: equal to rounding, not to the bit; an element that cancels (1.4 among
    # sums of about 1600) is off by float32's rounding of the large terms, so the absolute
    # bound scales with the largest element
    we_grad = we.grad.numpy()
    np.testing.assert_allclose(wc.grad.numpy(), we_grad, rtol=1e-5, atol=1e-6 * float(np.nanmax(np.abs(we_grad))))


def _driver_code(text: str) -> str:
    """The statements of the generated driver's forward (its comments dropped)."""
    body = text.split("def forward", 1)[1]
    return "\n".join(line for line in body.splitlines() if not line.strip().startswith("#"))


def test_max_pooling_runs_as_one_window_pass():
    x = eager.from_numpy(np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32))
    text = _source(lambda t: F.max_pool2d(t, 2), x)
    assert "max-pooling: first maximum" in text
    code = _driver_code(text)
    assert "'unfold'" not in code and "arg_reduce" not in code and "take_along" not in code


def test_the_cnn_step_runs_its_windows_natively_and_equals_eager():
    def run(compiled: bool):
        model = w6_cnn.make_model(seed=0)
        opt = w6_cnn.make_optimizer(model)

        def step(x, y):
            opt.zero_grad()
            loss = w6_cnn.loss_fn(model, (x, y))
            loss.backward()
            opt.step()
            return loss
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(*w6_cnn.make_batch(seed=s, batch=4))) for s in range(2)]
        return losses, [p.detach().numpy().copy() for p in model.parameters()], f

    want, params, _ = run(False)
    got, params_c, f = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(params_c, params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    text = f.explain(*w6_cnn.make_batch(seed=0, batch=4))
    code = _driver_code(text)
    for op in ("'unfold'", "'fold'", "arg_reduce", "take_along", "np.arange"):  # np.arange: index_mask
        assert op not in code
    assert "max-pooling: first maximum" in text and "max-pooling's gradient" in text


def test_graphmode_native_windows_0_keeps_the_library_calls(monkeypatch):
    """The switch (for measuring one against the other) changes the code and the cache key."""
    x = eager.from_numpy(np.random.default_rng(4).standard_normal((2, 3, 8, 8)).astype(np.float32))
    on = _source(lambda t: F.max_pool2d(t, 2), x)
    monkeypatch.setenv("GRAPHMODE_NATIVE_WINDOWS", "0")
    off = _source(lambda t: F.max_pool2d(t, 2), x)
    assert "max-pooling: first maximum" in on and "max-pooling" not in off and "arg_reduce" in _driver_code(off)
    np.testing.assert_array_equal(static.compile(lambda t: F.max_pool2d(t, 2), backend="native")(x).numpy(),
                                  F.max_pool2d(x, 2).numpy())


def test_a_compiled_forward_writes_the_mask_its_backward_reads():
    """A module compiled as a drop-in saves the pooling's mask for its backward (the smaller
    residual): the pooling writes the mask itself, and the backward's fold reads it."""
    model = w6_cnn.make_model(seed=0)
    compiled = static.compile(model, backend="native")
    images, labels = w6_cnn.make_batch(seed=0, batch=4)
    loss = F.cross_entropy(compiled(images), labels)
    loss.backward()
    want = w6_cnn.make_model(seed=0)
    F.cross_entropy(want(images), labels).backward()
    for a, b in zip(model.parameters(), want.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape, dtype", [((6, 4, 5, 7), np.float32), ((6, 4, 5, 7), np.float64),
                                          ((9, 5), np.float32), ((3, 4, 11), np.float32)])
def test_batch_norms_gradient_with_its_channel_sums_and_rows(shape, dtype):
    """normalize_backward over every dim but the channels, its per-channel sum and its
    channels-first rows (a convolution's bias and weight gradients) as one C function
    (batchnorm.py): the float64 values up to the dtype's rounding, a large mean included
    (eager's float32 sums, about zero, are off by more there)."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3 + 1000.0).astype(dtype)  # a large mean: the shifted sums keep the variance
    g = rng.standard_normal(shape).astype(dtype)
    dims = (0, *range(2, len(shape)))

    def f(gt, xt):
        from gmops.conv import NORMALIZE_BACKWARD
        y = NORMALIZE_BACKWARD(gt, xt, dims=dims, eps=1e-5)
        rows = y.permute(1, 0, *range(2, len(shape))).reshape(shape[1], -1)
        return y.sum(dims, keepdim=True), rows * 2.0

    args = (eager.from_numpy(g), eager.from_numpy(x))
    want = f(eager.from_numpy(g.astype(np.float64)), eager.from_numpy(x.astype(np.float64)))  # the exact values
    got = static.compile(f, backend="native")(*args)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)
    assert "batch norm's gradient" in _source(f, *args)


@pytest.mark.parametrize("shape, dtype", [((6, 4, 5, 7), np.float32), ((6, 4, 5, 7), np.float64), ((9, 5), np.float32)])
def test_batch_norms_normalization_with_the_running_variance(shape, dtype):
    """normalize over batch norm's dims and the (unbiased) variance read after it, as batch
    norm's training forward computes them, in one C function: the float64 values up to
    rounding."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 2 - 500.0).astype(dtype)
    dims = (0, *range(2, len(shape)))

    def f(xt):
        from gmops.conv import NORMALIZE
        return NORMALIZE(xt, dims=dims, eps=1e-5) * 1.5, xt.detach().var(dims, correction=1), xt.var(dims, correction=0)

    want = f(eager.from_numpy(x.astype(np.float64)))
    args = (eager.from_numpy(x),)
    got = static.compile(f, backend="native")(*args)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)
    assert "batch norm's normalization" in _source(f, *args)


@pytest.mark.parametrize("padding", [0, 1])
def test_max_pooling_indices_with_nans_ties_and_infinities(padding):
    """The window's index is NumPy's argmax over it (the first maximum; the first NaN wins),
    whatever position the NaN, the tie or -inf takes in the window."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan  # two NaNs in one window: the first is kept
    x[0, 1, 1, 1] = np.nan  # a NaN last in its window
    x[1, 0, 2:4, 2:4] = 3.0  # a tie over a whole window
    x[1, 2, 4:6, 0:2] = -np.inf  # a window of -inf
    x[1, 1, 0, 0] = np.inf

    def f(t):
        return F.max_pool2d(t, 2, 2, padding, return_indices=True)

    xe = eager.from_numpy(x)
    (ve, ie), (vc, ic) = f(xe), static.compile(f, backend="native")(xe)
    assert "max-pooling: first maximum" in _source(f, xe)
    np.testing.assert_array_equal(ic.numpy(), ie.numpy())
    np.testing.assert_array_equal(np.isnan(vc.numpy()), np.isnan(ve.numpy()))
    np.testing.assert_array_equal(vc.numpy().view(np.uint32), ve.numpy().view(np.uint32))


_BN_RELU_GRAD_IR = """
func @bn_relu_grad(%x: f32[N,C,H,W], %g: f32[N,C,H,W], %w: f32[C], %b: f32[C]) -> (f32[1,C,1,1], f32[N,C,H,W], f32[1,C,1,1]) {
  %1 = reshape %w {shape = [1, C, 1, 1]} : f32[1,C,1,1]
  %2 = reshape %b {shape = [1, C, 1, 1]} : f32[1,C,1,1]
  %3, %4, %5 = fused %x, %1, %2, %g : f32[1,C,1,1], f32[N,C,H,W], f32[1,C,1,1] {
    ^body(%a: f32[N,C,H,W], %s: f32[1,C,1,1], %t: f32[1,C,1,1], %d: f32[N,C,H,W]):
    %6 = mul %a, %s : f32[N,C,H,W]
    %7 = add %6, %t : f32[N,C,H,W]
    %8 = relu %7 : f32[N,C,H,W]
    %9 = le %8, 0.0 : bool[N,C,H,W]
    %10 = where %9, 0.0, %d : f32[N,C,H,W]
    %11 = sum %10 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    %12 = mul %10, %s : f32[N,C,H,W]
    %13 = mul %10, %a : f32[N,C,H,W]
    %14 = sum %13 {dims = [0, 2, 3], keepdim = true} : f32[1,C,1,1]
    yield %11, %12, %14
  }
  return %3, %4, %5
}"""


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (32, 16, 28, 28), (3, 2, 1, 1)])
def test_batch_norm_relu_gradient_region_is_one_pass_per_channel(shape):
    """Batch norm's affine + ReLU gradient (the masked gradient's channel sum, its sum times
    x, and the masked gradient times the weight) runs as one function that walks each
    channel once, and gives NumPy's values on one thread and two."""
    from codegen import runtime

    n, c, h, w = shape
    text = _BN_RELU_GRAD_IR.replace("N", str(n)).replace("C", str(c)).replace("H", str(h)).replace("W", str(w))
    exe = codegen.build(static.parse_ir(text), "native")
    assert "channel sum(s) in one pass" in exe.c_source()
    rng = np.random.default_rng(7)
    x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    wt, bs = (rng.standard_normal(c).astype(np.float32) for _ in range(2))
    s, t = wt.reshape(1, c, 1, 1), bs.reshape(1, c, 1, 1)
    d = np.where(np.maximum(x * s + t, 0) <= 0, np.float32(0), g)
    dd = d.astype(np.float64)
    expected = [dd.sum((0, 2, 3), keepdims=True), d * s, (dd * x).sum((0, 2, 3), keepdims=True)]
    saved = runtime.CONFIG.threads
    try:
        for threads in (1, 2):
            runtime.CONFIG.threads = threads
            for got, e in zip(exe.run([x, g, wt, bs]), expected):
                np.testing.assert_allclose(got, e.astype(np.float32), rtol=2e-5, atol=1e-5)
    finally:
        runtime.CONFIG.threads = saved
