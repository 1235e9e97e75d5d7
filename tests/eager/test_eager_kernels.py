"""The native kernels eager runs for layer_norm and GELU (codegen.eager_kernels) against the
ops' NumPy code, which runs where no compiler is found: the same results to rounding,
position-independent elementwise results, thread-order determinism, and the switch."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from codegen import eager_kernels, native_build
from eager.ops import conv, elementwise

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-45, 3.0, -3.0, 9.5, -9.5, 40.0, -40.0])


def _numpy_path(fn, *args):
    """fn(*args) with the native kernels switched off."""
    import os

    os.environ["GRAPHMODE_EAGER_NATIVE"] = "0"
    eager_kernels.reset()
    try:
        return fn(*args)
    finally:
        del os.environ["GRAPHMODE_EAGER_NATIVE"]
        eager_kernels.reset()


def _ulps(a, b, x, dtype):
    """Largest distance of a from b in units in the last place of b, with an absolute floor
    of one ulp of |x|: where GELU's tails cancel (1 + erf(x) for very negative x) both
    computations lose everything below eps * |x|, so neither has relative accuracy there.
    nan against nan counts 0, nan against a number infinity."""
    a, b, x = (np.asarray(v, np.float64) for v in (a, b, x))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    unit = np.maximum(np.spacing(np.abs(b).astype(dtype)).astype(np.float64),
                      np.spacing(np.maximum(np.abs(x), 1.0).astype(dtype)).astype(np.float64))
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(a - b) / unit)
    return float(np.max(np.where(np.isnan(err), np.inf, err)))


def _inputs(dtype):
    rng = np.random.default_rng(0)
    body = np.concatenate([rng.standard_normal(5000) * s for s in (1e-3, 1.0, 4.0)])
    return np.concatenate([EDGES, body]).astype(dtype)


# The kernels compute erf and tanh through the vectorized C math functions
# (codegen.c_helpers.MATH), the NumPy code through eager's own erf and NumPy's tanh. Measured
# on these inputs: 1 ulp apart in float32 and float64, 2 for tanh-GELU in float64.
ULP_BOUND = 2.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_its_numpy_code(dtype, approximate):
    x = _inputs(dtype)
    with np.errstate(all="ignore"):  # -inf * 0 in the tails: eager's dispatch silences these too
        native = elementwise._gelu(np, x, approximate)
        reference = _numpy_path(elementwise._gelu, np, x, approximate)
    assert eager_kernels.gelu(x, approximate) is not None  # the kernel did run
    assert native.dtype == reference.dtype == dtype
    assert _ulps(native, reference, x, dtype) <= ULP_BOUND


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_grad_matches_its_numpy_code(dtype):
    x = _inputs(dtype)
    with np.errstate(all="ignore"):
        native = elementwise._gelu_grad(np, x)
        reference = _numpy_path(elementwise._gelu_grad, np, x)
    assert eager_kernels.gelu_grad(x) is not None
    assert _ulps(native, reference, x, dtype) <= ULP_BOUND


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_an_elements_result_does_not_depend_on_its_position(approximate):
    """Every element goes through the same vector code (the tail block is padded): a slice,
    one element, or a 0-d array give the same bits as the whole array."""
    x = _inputs(np.float32)[:517]
    whole = eager_kernels.gelu(x, approximate)
    for start in (0, 3, 64, 500):
        part = eager_kernels.gelu(np.ascontiguousarray(x[start:start + 17]), approximate)
        np.testing.assert_array_equal(part.view(np.uint32), whole[start:start + 17].view(np.uint32))
    for i in (0, 5, 130, 516):
        one = eager_kernels.gelu(np.array(x[i]), approximate)
        assert one.shape == () and one.view(np.uint32) == whole[i:i + 1].view(np.uint32)[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (7, 64), (300, 129)])
def test_layer_norm_and_its_gradient_match_the_numpy_code(dtype, shape):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 3.0 + 2.0).astype(dtype)
    w, b = rng.standard_normal(shape[-1]).astype(dtype), rng.standard_normal(shape[-1]).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    assert eager_kernels.layer_norm(x, w, b, 1e-5) is not None
    native = conv._layer_norm(np, x, w, b, 1, 1e-5)
    reference = _numpy_path(conv._layer_norm, np, x, w, b, 1, 1e-5)
    np.testing.assert_allclose(native, reference, **tol)
    native_grads = conv._layer_norm_backward(np, g, x, w, 1, 1e-5)
    reference_grads = _numpy_path(conv._layer_norm_backward, np, g, x, w, 1, 1e-5)
    for got, want in zip(native_grads, reference_grads):
        assert got.dtype == want.dtype == dtype
        np.testing.assert_allclose(got, want, **tol)


def test_layer_norm_gradient_is_the_same_on_every_call():
    """Per-thread column sums are added in thread order: no timing dependence."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4096, 48)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w = rng.standard_normal(48).astype(np.float32)
    first = eager_kernels.layer_norm_backward(g, x, w, 1e-5)
    for _ in range(5):
        again = eager_kernels.layer_norm_backward(g, x, w, 1e-5)
        for a, b in zip(first, again):
            np.testing.assert_array_equal(a, b)


def test_layouts_and_dtypes_the_kernels_do_not_take_run_the_numpy_code():
    x = np.random.default_rng(3).standard_normal((6, 8))
    assert eager_kernels.gelu(x.T, "none") is None  # not C-contiguous
    assert eager_kernels.gelu(x.astype(np.float16), "none") is None
    assert eager_kernels.gelu(np.zeros(0), "none") is None
    assert eager_kernels.layer_norm(x, np.ones(8, np.float32), np.zeros(8), 1e-5) is None  # mixed dtypes
    t = eager.tensor(x.T.astype(np.float32), requires_grad=True)
    y = eager.nn.functional.gelu(t)
    np.testing.assert_allclose(y.detach().numpy(), elementwise._gelu(np, np.ascontiguousarray(x.T.astype(np.float32))),
                               rtol=1e-6, atol=1e-7)
    y.sum().backward()
    assert t.grad is not None and t.grad.shape == t.shape


def test_the_switch_turns_the_kernels_off(numpy_eager_kernels):
    assert eager_kernels.kernels() is None
    x = np.linspace(-3, 3, 11, dtype=np.float32)
    assert eager_kernels.gelu(x, "none") is None
    np.testing.assert_allclose(elementwise._gelu(np, x), 0.5 * x * (1 + _erf(x / np.sqrt(2))),
                               rtol=1e-6, atol=1e-7)


def _erf(x):
    import math

    return np.array([math.erf(float(v)) for v in x], dtype=np.float64)


def test_eager_layer_norm_module_trains_the_same_with_and_without_the_kernels():
    """A LayerNorm + GELU stack: forward and all gradients agree between the two paths."""
    def run():
        eager.manual_seed(0)
        model = eager.nn.Sequential(eager.nn.Linear(16, 32), eager.nn.LayerNorm(32), eager.nn.GELU(),
                                    eager.nn.Linear(32, 4))
        x = eager.randn(64, 16)
        loss = model(x).square().mean()
        loss.backward()
        return [loss.item()] + [p.grad.numpy().copy() for p in model.parameters()]

    native = run()
    reference = _numpy_path(run)
    np.testing.assert_allclose(native[0], reference[0], rtol=1e-5)
    for a, b in zip(native[1:], reference[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name,dtype", [("tanh", np.float32), ("tanh", np.float64), ("exp", np.float32)])
def test_tanh_and_exp_of_large_arrays_are_as_accurate_as_numpys(name, dtype):
    """Against a float64 (float64: a long double) reference, the kernel's worst error is
    within one ulp of NumPy's own worst error on the same arguments."""
    rng = np.random.default_rng(4)
    x = np.concatenate([EDGES, rng.standard_normal(40000) * 4, rng.uniform(-88, 88, 4000)]).astype(dtype)
    assert x.size >= eager_kernels.LARGE
    with np.errstate(all="ignore"):
        got = eager_kernels.math(name, x)
        numpy_result = getattr(np, name)(x)
        wide = np.longdouble if dtype == np.float64 else np.float64
        reference = getattr(np, name)(x.astype(wide))
    assert got is not None and got.dtype == dtype
    finite = np.isfinite(reference)
    np.testing.assert_array_equal(got[~finite], numpy_result[~finite])  # inf, nan as NumPy gives them

    def worst(values):
        err = np.abs(values[finite].astype(wide) - reference[finite])
        return float(np.max(err / np.spacing(np.abs(reference[finite]).astype(dtype)).astype(wide)))

    assert worst(got) <= worst(numpy_result) + 1.0
    eager_result = getattr(eager, name)(eager.tensor(x)).numpy()  # the op uses the kernel
    np.testing.assert_array_equal(eager_result, got)


def test_small_arrays_keep_numpys_tanh():
    x = np.linspace(-3, 3, 100, dtype=np.float32)
    assert eager_kernels.math("tanh", x) is None
    np.testing.assert_array_equal(eager.tanh(eager.tensor(x)).numpy(), np.tanh(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 1, 3), (4, 3, 5, 5), (32, 16, 7, 7), (3, 2, 2, 2, 2)])
def test_batch_norm_statistics_normalization_and_gradient_match_the_numpy_code(dtype, shape):
    from eager.ops import reductions

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 2.0 + 0.5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    dims = (0,) + tuple(range(2, len(shape)))
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert eager_kernels.channel_normalize(x, 1e-5) is not None
    for fn, args in ((conv._normalize, (np, x, dims, 1e-5)), (conv._normalize_backward, (np, g, x, dims, 1e-5)),
                     (reductions._var, (np, x, dims, 1, True)), (reductions._var, (np, x, dims, 0, False))):
        got, want = fn(*args), _numpy_path(fn, *args)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)


def test_batch_norm_layer_trains_the_same_with_and_without_the_kernels():
    def run():
        eager.manual_seed(0)
        model = eager.nn.Sequential(eager.nn.Conv2d(2, 4, 3, padding=1), eager.nn.BatchNorm2d(4), eager.nn.ReLU())
        x = eager.randn(8, 2, 6, 6)
        loss = model(x).square().mean()
        loss.backward()
        bn = model[1]
        return ([loss.item()] + [p.grad.numpy().copy() for p in model.parameters()]
                + [bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()])

    native = run()
    reference = _numpy_path(run)
    for a, b in zip(native, reference):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("x_layout,g_layout", [("cnhw", "nchw"), ("cnhw", "cnhw"), ("nchw", "cnhw")])
def test_batch_norm_kernels_read_a_convolutions_channel_major_output_in_place(x_layout, g_layout):
    """A convolution's output is (N, C, H, W) over channel-major memory: read as it is; the
    result is C-contiguous (what the compiled kernels and NumPy calls after it want)."""
    rng = np.random.default_rng(6)
    shape = (6, 4, 5, 3)

    def laid_out(layout):
        a = rng.standard_normal(shape).astype(np.float32)
        return np.ascontiguousarray(a.swapaxes(0, 1)).swapaxes(0, 1) if layout == "cnhw" else a

    x, g = laid_out(x_layout), laid_out(g_layout)
    dims = (0, 2, 3)
    out = eager_kernels.channel_normalize(x, 1e-5)
    assert out is not None and out.flags.c_contiguous
    np.testing.assert_allclose(out, _numpy_path(conv._normalize, np, x, dims, 1e-5), rtol=2e-5, atol=2e-6)
    gx = eager_kernels.channel_normalize_backward(g, x, 1e-5)
    assert gx is not None and gx.flags.c_contiguous
    np.testing.assert_allclose(gx, _numpy_path(conv._normalize_backward, np, g, x, dims, 1e-5), rtol=2e-5, atol=2e-6)
    strided = np.zeros((6, 4, 10, 3), np.float32)[:, :, ::2]  # spatial dims not one block: NumPy code
    assert eager_kernels.channel_normalize(strided, 1e-5) is None
    np.testing.assert_allclose(conv._normalize(np, strided + x, dims, 1e-5), conv._normalize(np, x, dims, 1e-5),
                               rtol=2e-5, atol=2e-6)


def test_a_failed_build_leaves_the_ops_to_the_numpy_code(monkeypatch):
    def refuse(*args, **kwargs):
        raise native_build.NativeCompileError("the C++ compiler rejected the generated source (test)")

    eager_kernels.reset()
    monkeypatch.setattr(native_build, "load_library", refuse)
    try:
        x = np.linspace(-3, 3, 50, dtype=np.float32)
        assert eager_kernels.gelu(x, "none") is None
        got = eager.nn.functional.gelu(eager.tensor(x)).numpy()
        np.testing.assert_array_equal(got, _numpy_path(elementwise._gelu, np, x))
    finally:
        monkeypatch.undo()
        eager_kernels.reset()
    assert eager_kernels.gelu(x, "none") is not None  # and a later process (here: a reset) builds again


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((16, 4, 32, 14, 14), 1), ((7, 300), 0), ((3, 5, 70, 2), -3)])
def test_arg_reductions_along_a_middle_axis_match_numpy(name, dtype, shape, dim):
    """First index of the extreme, ties and NaN as NumPy has them (a NaN wins, the first one)."""
    from eager.ops import reductions

    rng = np.random.default_rng(8)
    x = rng.integers(-3, 4, shape).astype(dtype)  # many ties
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, max(1, flat.size // 50), replace=False)] = np.nan
    for keepdim in (False, True):
        got = eager_kernels.arg_extreme(name, x, dim % x.ndim, keepdim)
        assert got is not None and got.dtype == np.int64
        np.testing.assert_array_equal(got, getattr(np, name)(x, axis=dim, keepdims=keepdim))
        forward = reductions.ARGMAX.forward if name == "argmax" else reductions.ARGMIN.forward
        np.testing.assert_array_equal(forward(np, x, dim=dim, keepdim=keepdim), got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [
    ((16, 3, 3, 4, 28, 28), (28, 28), (1, 1), (1, 1, 1, 1), (1, 1)),   # a 3x3 "same" convolution
    ((8, 2, 2, 3, 7, 7), (14, 14), (2, 2), (0, 0, 0, 0), (1, 1)),      # a 2x2 max-pool
    ((3, 3, 2, 2, 3, 3), (5, 6), (1, 2), (1, 1, 0, 1), (1, 1)),        # uneven stride and padding
    ((2, 2, 2, 1, 2, 2), (6, 6), (2, 1), (0, 0, 0, 0), (2, 2)),        # dilation; rows no window reaches
])
def test_fold_equals_the_numpy_code_bit_for_bit(dtype, geometry):
    """col2im adds each window element in the NumPy code's order (kernel rows, then columns)."""
    shape, size, stride, padding, dilation = geometry
    cols = np.random.default_rng(10).standard_normal(shape).astype(dtype)
    kernel = shape[1:3]
    got = eager_kernels.fold2d(cols, size, kernel, stride, padding, dilation)
    assert got is not None
    want = _numpy_path(conv._fold, np, cols, size, kernel, stride, padding, dilation)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(conv._fold(np, cols, size, kernel, stride, padding, dilation), got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_along_a_middle_axis_matches_numpy(dtype):
    from eager.ops import reductions

    rng = np.random.default_rng(11)
    x = rng.standard_normal((16, 4, 32, 14, 14)).astype(dtype)
    index = rng.integers(0, 4, (16, 32, 14, 14))
    want = np.squeeze(np.take_along_axis(x, np.expand_dims(index, 1), axis=1), axis=1)
    got = eager_kernels.take_middle(x, index, 1)
    assert got is not None
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(reductions.TAKE_ALONG.forward(np, x, index, dim=1), want)
    np.testing.assert_array_equal(reductions.TAKE_ALONG.forward(np, x, np.expand_dims(index, 1), dim=1, keepdim=True),
                                  np.expand_dims(want, 1))
    assert eager_kernels.take_middle(x, index.astype(np.int32), 1) is None  # other index dtypes: NumPy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, num_weights", [(512, 65), (40, 32), (3, 100)])
def test_embedding_gradient_adds_each_row_in_order_from_zero(dtype, rows, num_weights):
    """The native embedding gradient equals NumPy's add.at to the bit (each row added in
    order, from zero: -0.0 rows give +0.0, as PyTorch's index_add_), and the op's NumPy code
    (add.at, or sorted runs summed by reduceat for many rows an index) to rounding."""
    from eager.ops import indexing

    rng = np.random.default_rng(rows)
    g = rng.standard_normal((rows, 16)).astype(dtype)
    g[0, :3] = -0.0
    idx = rng.integers(0, num_weights, rows)
    got = eager_kernels.embedding_backward(g, idx, num_weights)
    expected = np.zeros((num_weights, 16), dtype)
    np.add.at(expected, idx, g)
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    numpy_code = _numpy_path(indexing._embedding_backward, np, g, idx, num_weights, 1)
    assert not numpy_code[1].any()
    got_padded = indexing._embedding_backward(np, g, idx, num_weights, 1)
    np.testing.assert_allclose(got_padded, numpy_code, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    out_of_range = idx.copy()
    out_of_range[-1] = num_weights
    assert eager_kernels.embedding_backward(g, out_of_range, num_weights) is None  # the NumPy code raises


def test_embedding_gradient_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    g = rng.standard_normal((4096, 64)).astype(np.float32)
    idx = rng.integers(0, 50, 4096)
    k = eager_kernels.kernels()
    outs = []
    for threads in (1, 2, 3):
        out = np.empty((50, 64), np.float32)
        assert k.run("gm_eager_embedding_backward_f32", threads, (g.nbytes, idx.nbytes, -out.nbytes, 24),
                     k.formats(("float32", "int64", "float32", "int64")), g, idx.astype(np.int64), out,
                     np.array([4096, 64, 50], np.int64))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
