"""W1-W4 (design.md): the generated NumPy code agrees with the interpreter and with
eager, forward and gradients, float32 and float64; sizes are not multiples of the block
size, and tiny blocks over two threads exercise the blocked, threaded path."""
from __future__ import annotations

import numpy as np
import pytest
from gm_workloads import w1, w1_inputs, w2, w2_inputs, w3_inputs, w3_loss, w3_step, w4, w4_inputs

import eager
import static

DTYPES = [np.float32, np.float64]


def _tol(dtype, scale=1.0):
    return dict(rtol=2e-5 * scale, atol=2e-5 * scale) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def _eager_grads(fn, arrays, wrt):
    ts = [eager.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    out = fn(*ts)
    out.backward()
    return out.detach().numpy(), [ts[i].grad.numpy() for i in wrt]


def _check(fn, arrays, wrt, dtype, scale=1.0):
    tensors = [eager.tensor(a) for a in arrays]
    e_val, e_grads = _eager_grads(fn, arrays, wrt)
    results = {}
    for backend in ("interpret", "numpy"):
        val, grads = static.value_and_grad(fn, argnums=wrt, backend=backend)(*tensors)
        results[backend] = (val.numpy(), [g.numpy() for g in grads])
    (vi, gi), (vn, gn) = results["interpret"], results["numpy"]
    np.testing.assert_allclose(vn, vi, **_tol(dtype, scale))
    np.testing.assert_allclose(vn, e_val, **_tol(dtype, scale))
    for a, b, c in zip(gn, gi, e_grads):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, **_tol(dtype, scale))
        np.testing.assert_allclose(a, c, **_tol(dtype, scale))
    fwd = static.compile(fn, backend="numpy")(*tensors)
    np.testing.assert_allclose(fwd.numpy(), e_val, **_tol(dtype, scale))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("n", [1, 100, 1003])
def test_w1(n, dtype, small_blocks):
    _check(w1, w1_inputs(n, dtype), (0, 1, 2, 3, 4), dtype, scale=n ** 0.5)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("n", [1, 1001])
def test_w2(n, dtype, small_blocks):
    _check(w2, w2_inputs(n, dtype), (0, 1), dtype, scale=n ** 0.5)


def test_w2_default_blocks_threaded():
    """A size above the parallel threshold and not a multiple of the default block."""
    from codegen.runtime import CONFIG

    assert 600_003 > CONFIG.parallel_min_elems
    arrays = w2_inputs(600_003, np.float32)
    _check(w2, arrays, (0, 1), np.float32, scale=800)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_w3(dtype, small_blocks):
    _check(w3_loss, w3_inputs(13, 17, 11, 5, dtype), (2, 3, 4, 5), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_w3_sgd_step(dtype, small_blocks):
    arrays = w3_inputs(9, 8, 7, 3, dtype)
    tensors = [eager.tensor(a) for a in arrays]
    got = static.compile(w3_step, backend="numpy")(*tensors)
    ref = static.compile(w3_step, backend="interpret")(*tensors)
    np.testing.assert_allclose(got[0].numpy(), ref[0].numpy(), **_tol(dtype))
    for a, b in zip(got[1], ref[1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_w4_scalar_code_is_bitwise_equal(dtype):
    """0-d arithmetic on NumPy scalars gives the interpreter's bits, forward and backward."""
    (x,) = w4_inputs(dtype)
    t = eager.tensor(x)
    for make in (static.compile, lambda f, **kw: static.value_and_grad(f, **kw)):
        got = make(w4, backend="numpy")(t)
        ref = make(w4, backend="interpret")(t)
        for a, b in zip(got if isinstance(got, tuple) else (got,), ref if isinstance(ref, tuple) else (ref,)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    e_val, (e_grad,) = _eager_grads(w4, [x], (0,))
    val, grad = static.value_and_grad(w4, backend="numpy")(t)
    np.testing.assert_allclose(val.numpy(), e_val, **_tol(dtype))
    np.testing.assert_allclose(grad.numpy(), e_grad, **_tol(dtype))


def test_w4_source_uses_numpy_scalars():
    src = static.value_and_grad(w4, backend="numpy").source(eager.tensor(w4_inputs()[0]))
    assert "= np.float32(1.0001)" in src and "[()]" in src
