"""searchsorted, bucketize, cartesian_prod, combinations, Tensor.unfold, logspace and the
memory facts of a tensor (nbytes, data_ptr, storage_offset): against NumPy, finite
differences, the compiled mode and PyTorch where installed."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import static

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    seq = np.sort(RNG.standard_normal((2, 6)), 1)
    seq[0, 2] = seq[0, 3]  # a tie: left and right differ there
    values = np.concatenate([RNG.standard_normal((2, 3)), seq[:, 2:3]], 1)
    side = "right" if right else "left"
    got = eager.searchsorted(eager.tensor(seq), eager.tensor(values), right=right)
    expected = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, values)])
    np.testing.assert_array_equal(got.numpy(), expected)
    assert got.dtype == eager.int64
    assert eager.searchsorted(eager.tensor(seq[0]), eager.tensor(values), side=side, out_int32=True).dtype == \
        eager.int32
    np.testing.assert_array_equal(eager.bucketize(eager.tensor(values), eager.tensor(seq[0]), right=right).numpy(),
                                  np.searchsorted(seq[0], values, side=side))


def test_searchsorted_errors_and_traces():
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        eager.searchsorted(eager.ones(3), eager.ones(2), right=True, side="left")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        eager.searchsorted(eager.ones(2, 3), eager.ones(3, 2))
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        eager.bucketize(eager.ones(2), eager.ones(2, 2))
    with pytest.raises(static.TraceError, match="NumPy conversion of a traced value"):
        static.compile(lambda a, b: eager.searchsorted(a, b))(eager.tensor([1.0, 2.0]), eager.tensor([1.5]))


def test_cartesian_prod_and_combinations_values_and_gradients():
    a = eager.tensor([1.0, 2.0], requires_grad=True)
    b = eager.tensor([3.0, 4.0, 5.0], requires_grad=True)
    prod = eager.cartesian_prod(a, b)
    np.testing.assert_array_equal(prod.detach().numpy(), [[x, y] for x in (1, 2) for y in (3, 4, 5)])
    prod.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [2.0, 2.0, 2.0])
    v = RNG.standard_normal(4)
    weights = RNG.standard_normal((6, 2))

    def loss(x):
        return float((eager.combinations(eager.tensor(x)) * eager.tensor(weights)).sum())

    t = eager.tensor(v, requires_grad=True)
    (eager.combinations(t) * eager.tensor(weights)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), central_difference_grad(loss, v), rtol=1e-7)
    assert tuple(eager.combinations(t, 2, with_replacement=True).shape) == (10, 2)
    assert tuple(eager.combinations(t, 5).shape) == (0, 5)
    with pytest.raises(RuntimeError, match="Expect a 1D vector"):
        eager.combinations(eager.ones(2, 2))


@pytest.mark.parametrize("dim,size,step", [(1, 3, 2), (1, 2, 1), (0, 1, 1), (-1, 6, 6)])
def test_unfold_windows_overlap_in_the_gradient_and_compile(dim, size, step):
    x = RNG.standard_normal((2, 6))
    windows = eager.tensor(x).unfold(dim, size, step).numpy()
    d = dim % x.ndim
    starts = range(0, x.shape[d] - size + 1, step)
    expected = np.stack([np.take(x, range(s, s + size), axis=d) for s in starts], axis=d)  # window count at d
    np.testing.assert_array_equal(windows, np.moveaxis(expected, d + 1, -1))
    w = RNG.standard_normal(windows.shape)
    t = eager.tensor(x, requires_grad=True)
    (t.unfold(dim, size, step) * eager.tensor(w)).sum().backward()
    fd = central_difference_grad(lambda v: float((eager.tensor(v).unfold(dim, size, step) * eager.tensor(w)).sum()),
                                 x)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-7, atol=1e-9)
    value, grad = static.value_and_grad(lambda v: (v.unfold(dim, size, step) * eager.tensor(w)).sum())(x)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension"):
        eager.tensor(x).unfold(1, 7, 1)


def test_logspace_and_memory_facts():
    np.testing.assert_allclose(eager.logspace(-1, 2, 4).numpy(), [0.1, 1.0, 10.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(eager.logspace(0, 3, 4, base=2, dtype=eager.float64).numpy(), [1, 2, 4, 8])
    base = eager.arange(10.0)
    view = base[3:]
    assert view.storage_offset() == 3 and base.storage_offset() == 0
    assert view.nbytes == 7 * 4 and view.itemsize == 4
    assert view.data_ptr() == base.data_ptr() + 3 * 4


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    seq, values = np.sort(RNG.standard_normal(5)), RNG.standard_normal((2, 3))
    for right in (False, True):
        np.testing.assert_array_equal(eager.searchsorted(eager.tensor(seq), eager.tensor(values), right=right).numpy(),
                                      torch.searchsorted(torch.tensor(seq), torch.tensor(values), right=right).numpy())
    for r, wr in ((2, False), (3, True)):
        assert eager.combinations(eager.tensor([1.0, 2.0, 3.0]), r, wr).tolist() == \
            torch.combinations(torch.tensor([1.0, 2.0, 3.0]), r, wr).tolist()
    x = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(eager.tensor(x).unfold(0, 2, 1).numpy(), torch.tensor(x).unfold(0, 2, 1).numpy())
    np.testing.assert_allclose(eager.logspace(-2, 2, 9).numpy(), torch.logspace(-2, 2, 9).numpy(), rtol=1e-6)
