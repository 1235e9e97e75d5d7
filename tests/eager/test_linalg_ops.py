"""eager.linalg.inv / solve / det (the op-level checks - finite differences, the interpreter and
every backend - run over their registry samples with every op): the public functions'
shapes and rules, their errors, and PyTorch where installed."""
import numpy as np
import pytest

import eager
import static

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
B = RNG.standard_normal((2, 3, 2))
V = RNG.standard_normal((2, 3))


def test_values_against_numpy():
    np.testing.assert_allclose(eager.linalg.inv(eager.tensor(A)).numpy(), np.linalg.inv(A), rtol=1e-12)
    np.testing.assert_allclose(eager.linalg.det(eager.tensor(A)).numpy(), np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(eager.linalg.solve(eager.tensor(A), eager.tensor(B)).numpy(), np.linalg.solve(A, B),
                               rtol=1e-12)
    # a batch of vectors (B has A's shape without its last dim), and one vector for every matrix
    np.testing.assert_allclose(eager.linalg.solve(eager.tensor(A), eager.tensor(V)).numpy(),
                               np.linalg.solve(A, V[..., None])[..., 0], rtol=1e-12)
    np.testing.assert_allclose(eager.linalg.solve(eager.tensor(A), eager.tensor(V[0])).numpy(),
                               np.linalg.solve(A, V[0][:, None])[..., 0], rtol=1e-12)
    np.testing.assert_allclose(eager.inverse(eager.tensor(A[0])).numpy(), np.linalg.inv(A[0]), rtol=1e-12)
    np.testing.assert_allclose(eager.tensor(A).det().numpy(), np.linalg.det(A), rtol=1e-12)


def test_broadcast_batches_get_summed_gradients():
    a = eager.tensor(A[0], requires_grad=True)  # one matrix for a batch of right-hand sides
    eager.linalg.solve(a, eager.tensor(B)).sum().backward()
    expected = sum(-np.linalg.solve(A[0].T, np.ones((3, 2))) @ np.linalg.solve(A[0], B[k]).T for k in range(2))
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-10)


def test_errors():
    with pytest.raises(RuntimeError, match="the input matrix is singular"):
        eager.linalg.inv(eager.zeros(2, 2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="the input matrix is singular"):
        eager.linalg.solve(eager.zeros(2, 2, dtype=eager.float64), eager.ones(2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are 2 by 3"):
        eager.linalg.inv(eager.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point tensor"):
        eager.linalg.det(eager.ones(2, 2, dtype=eager.int64))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        eager.linalg.solve(eager.tensor(A), eager.ones(2, 4, 1, dtype=eager.float64))
    with pytest.raises(NotImplementedError, match="left=False"):
        eager.linalg.solve(eager.tensor(A), eager.tensor(B), left=False)


def test_a_singular_matrix_inside_a_compiled_function_raises_the_same_error():
    f = static.compile(lambda m: eager.linalg.inv(m).sum(), backend="numpy")
    with pytest.raises(RuntimeError, match="the input matrix is singular"):
        f(np.zeros((2, 2)))


def test_match_pytorch():
    torch = pytest.importorskip("torch")
    cases = [(lambda la, a, b, v: la.inv(a)), (lambda la, a, b, v: la.det(a)),
             (lambda la, a, b, v: la.solve(a, b)), (lambda la, a, b, v: la.solve(a, v))]
    for fn in cases:
        e_in = [eager.tensor(x, requires_grad=True) for x in (A, B, V)]
        t_in = [torch.tensor(x, requires_grad=True) for x in (A, B, V)]
        e, t = fn(eager.linalg, *e_in), fn(torch.linalg, *t_in)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = RNG.standard_normal(tuple(t.shape))
        (e * eager.tensor(w)).sum().backward()
        (t * torch.tensor(w)).sum().backward()
        for x, y in zip(e_in, t_in):
            if y.grad is not None:
                np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-9, atol=1e-12)
