"""NumPy scalars as arguments are 0-d arrays of their dtype: traced as inputs (a new value
does not retrace) and promoted as 0-d tensors are."""
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


def test_numpy_scalar_promotes_like_a_zero_dim_tensor():
    f = static.compile(lambda s, v: s * v)
    out = f(np.float64(2.0), np.ones(3, np.float32))
    assert out.dtype == np.float32 and np.all(out == 2.0)


def test_grad_of_numpy_scalar():
    g = static.grad(step)(np.float32(0.3))
    x = eager.tensor(np.float32(0.3), requires_grad=True)
    step(x).backward()
    assert np.allclose(g, x.grad.numpy(), rtol=1e-6)
