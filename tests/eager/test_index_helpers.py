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


def test_index_put_writes_or_accumulates_and_differentiates():
    x = np.zeros((3, 4))
    rows, cols = np.array([0, 1, 0]), np.array([2, 3, 2])
    added = eager.tensor(x).index_put((eager.tensor(rows), eager.tensor(cols)), eager.tensor([1.0, 2.0, 3.0]),
                                      accumulate=True)
    expected = np.zeros((3, 4))
    np.add.at(expected, (rows, cols), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(added.numpy(), expected)
    t = eager.tensor(x)
    t.index_put_((eager.tensor([1]),), eager.tensor(5.0))
    assert t.numpy()[1].tolist() == [5.0] * 4 and t.numpy()[[0, 2]].sum() == 0
    v = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = eager.tensor(x, requires_grad=True)
    (base.index_put((eager.tensor(rows), eager.tensor(cols)), v, accumulate=True) * eager.arange(12.0).reshape(3, 4)
     ).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [2.0, 7.0, 2.0])
    np.testing.assert_array_equal(base.grad.numpy(), np.arange(12.0).reshape(3, 4))


def test_histc():
    a = RNG.standard_normal(500)
    counts = eager.histc(eager.tensor(a), bins=8, min=-1, max=1)
    expected, _ = np.histogram(a[(a >= -1) & (a <= 1)], bins=8, range=(-1, 1))
    np.testing.assert_array_equal(counts.numpy(), expected)
    assert counts.dtype == eager.float64
    assert eager.tensor(a).histc(4).sum().item() == 500  # min = max = 0: the data's range
    assert eager.histc(eager.tensor([2.0, 2.0]), bins=2).tolist() == [0.0, 2.0]  # one value: [v - 1, v + 1]
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        eager.histc(eager.tensor(a), bins=0)


@pytest.mark.parametrize("geometry", [dict(output_size=(4, 4), kernel_size=2),
                                      dict(output_size=(5, 5), kernel_size=2, stride=2, padding=1),
                                      dict(output_size=(5, 6), kernel_size=(2, 3), dilation=(2, 1))])
def test_fold_inverts_unfolds_layout_and_differentiates(geometry):
    import eager.nn.functional as F

    x = RNG.standard_normal((2, 3, *geometry["output_size"]))
    kw = {k: v for k, v in geometry.items() if k != "output_size"}
    cols = F.unfold(eager.tensor(x), **kw)
    ones = F.fold(F.unfold(eager.ones(x.shape, dtype=eager.float64), **kw), geometry["output_size"], **kw)
    # fold(unfold(x)) is x times the number of blocks covering each pixel
    np.testing.assert_allclose(F.fold(cols, geometry["output_size"], **kw).numpy(), x * ones.numpy(), rtol=1e-12)
    c = cols.detach().numpy()
    w = RNG.standard_normal(x.shape)
    t = eager.tensor(c, requires_grad=True)
    (F.fold(t, geometry["output_size"], **kw) * eager.tensor(w)).sum().backward()
    fd = central_difference_grad(lambda v: float((F.fold(eager.tensor(v), geometry["output_size"], **kw)
                                                  * eager.tensor(w)).sum()), c)
    np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-9)
    _, grad = static.value_and_grad(lambda v: (F.fold(v, geometry["output_size"], **kw) * eager.tensor(w)).sum())(c)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="calculated number of sliding blocks"):
        F.fold(eager.tensor(c[..., :-1]), geometry["output_size"], **kw)


def test_index_put_histc_fold_match_pytorch():
    torch = pytest.importorskip("torch")
    import eager.nn.functional as F

    rows = np.array([0, 2, 0])
    values = RNG.standard_normal((3, 3))
    np.testing.assert_array_equal(
        eager.zeros(4, 3, dtype=eager.float64).index_put((eager.tensor(rows),), eager.tensor(values), True).numpy(),
        torch.zeros(4, 3, dtype=torch.float64).index_put((torch.tensor(rows),), torch.tensor(values), True).numpy())
    a = RNG.standard_normal(300)
    np.testing.assert_array_equal(eager.histc(eager.tensor(a), 7, -2, 2).numpy(),
                                  torch.histc(torch.tensor(a), 7, -2, 2).numpy())
    cols = RNG.standard_normal((2, 12, 9))
    np.testing.assert_allclose(F.fold(eager.tensor(cols), (4, 4), 2).numpy(),
                               torch.nn.functional.fold(torch.tensor(cols), (4, 4), 2).numpy(), rtol=1e-12)
