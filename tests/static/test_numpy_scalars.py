"""NumPy scalars as arguments are 0-d inputs of their dtype (a new value does not retrace)
that promote as Python numbers do, which is what eager does with them."""
import numpy as np

import eager
import static


def step(x):
    for _ in range(3):
        x = x * 1.0001 + 0.5 * eager.sin(x)
    return x


def test_numpy_scalar_is_an_input_not_a_constant():
    f = static.compile(step)
    a, b = f(np.float32(0.3)), f(np.float32(0.4))
    assert f.retraces == []
    ref = step(eager.tensor(np.float32(0.4))).numpy()
    assert b.dtype == np.float32 and np.allclose(b, ref, rtol=1e-6)
    assert not np.allclose(a, b)


def test_numpy_scalar_does_not_widen_a_float32_tensor():
    f = static.compile(lambda s, v: s * v)
    out = f(np.float64(2.0), np.ones(3, np.float32))
    assert out.dtype == np.float32 and np.all(out == 2.0)


def test_grad_of_numpy_scalar():
    g = static.grad(step)(np.float32(0.3))
    x = eager.tensor(np.float32(0.3), requires_grad=True)
    step(x).backward()
    assert np.allclose(g, x.grad.numpy(), rtol=1e-6)


def test_numpy_scalar_promotes_like_eager():
    x = eager.tensor([1, 2], dtype=eager.int32)
    f = lambda t, s: t * s  # noqa: E731
    eager_out = f(x, np.float64(1.5))
    compiled = static.compile(f)(x, np.float64(1.5))
    assert eager_out.dtype == compiled.dtype == eager.float32
    assert np.array_equal(eager_out.numpy(), compiled.numpy())
