"""index_fill / index_fill_ and fill_diagonal_ as PyTorch defines them: values, dtypes,
the errors PyTorch raises, gradients (finite differences and PyTorch's), and a trace."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck


def _torch():
    return pytest.importorskip("torch")


CASES = [((3, 4), 1, [0, 2], 5.0), ((3, 4), 0, [2], -1.5), ((3, 4), -1, [-1, 0, 0], 2.0), ((5,), 0, 3, 7.0),
         ((2, 3, 4), 2, [1, 3], 0.5), ((), 0, [0], 2.5)]


@pytest.mark.parametrize("shape, dim, index, value", CASES)
def test_index_fill_matches_pytorch(shape, dim, index, value):
    torch = _torch()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = eager.from_numpy(x).index_fill(dim, eager.tensor(index), value)
    theirs = torch.from_numpy(x).index_fill(dim, torch.tensor(index), value)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    inplace = eager.from_numpy(x.copy())
    assert inplace.index_fill_(dim, eager.tensor(index), value) is inplace
    np.testing.assert_array_equal(inplace.numpy(), theirs.numpy())


def test_index_fill_dtypes_and_tensor_value():
    torch = _torch()
    for dtype, value in (("int64", 2.5), ("int32", -3), ("bool", True), ("float64", 1e-3)):
        x = np.zeros(4, dtype)
        ours = eager.from_numpy(x).index_fill(0, eager.tensor([1, 3]), value)
        theirs = torch.from_numpy(x).index_fill(0, torch.tensor([1, 3]), value)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours = eager.zeros(2, 3).index_fill(1, eager.tensor(2), eager.tensor(4.0))
    assert ours.tolist() == [[0.0, 0.0, 4.0], [0.0, 0.0, 4.0]]
    assert eager.index_fill(eager.ones(2), 0, eager.tensor([0]), 0.0).tolist() == [0.0, 1.0]


def test_index_fill_errors_as_pytorch():
    x = eager.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 4"):
        x.index_fill(1, eager.tensor([5]), 1.0)
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.index_fill(1, eager.tensor([1.0]), 1.0)
    with pytest.raises(RuntimeError, match="Index has to be a vector/scalar"):
        x.index_fill(1, eager.tensor([[1]]), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.index_fill(1, eager.tensor([1]), eager.tensor([1.0]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.index_fill(2, eager.tensor([1]), 1.0)
    assert x.tolist() == [[0.0] * 4] * 3  # nothing written by a refused call


def test_index_fill_gradients():
    torch = _torch()
    a = eager.ones(3, 4, requires_grad=True)
    v = eager.tensor(2.0, requires_grad=True)
    y = a.index_fill(1, eager.tensor([0, 0, 3]), v)
    assert type(y.grad_fn).__name__ == "IndexFillBackward1"
    assert type(a.index_fill(1, eager.tensor([0]), 1.0).grad_fn).__name__ == "IndexFillBackward0"
    (y * eager.arange(12.0).reshape(3, 4)).sum().backward()
    ta = torch.ones(3, 4, requires_grad=True)
    tv = torch.tensor(2.0, requires_grad=True)
    (ta.index_fill(1, torch.tensor([0, 0, 3]), tv) * torch.arange(12.0).reshape(3, 4)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    assert float(v.grad) == float(tv.grad)
    x = eager.randn(3, 4, dtype=eager.float64, requires_grad=True)
    w = eager.tensor(0.3, dtype=eager.float64, requires_grad=True)
    assert gradcheck(lambda x, w: x.index_fill(0, eager.tensor([2, 0]), w), (x, w))


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((3, 5), False), ((7, 3), False), ((7, 3), True),
                                         ((3, 3, 3), False), ((2, 2, 2, 2), True)])
def test_fill_diagonal_matches_pytorch(shape, wrap):
    torch = _torch()
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours = eager.from_numpy(x.copy())
    assert ours.fill_diagonal_(-1.0, wrap=wrap) is ours
    np.testing.assert_array_equal(ours.numpy(), torch.from_numpy(x.copy()).fill_diagonal_(-1.0, wrap=wrap).numpy())


def test_fill_diagonal_errors_and_gradient():
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        eager.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        eager.zeros(2, 3, 3).fill_diagonal_(1)
    b = eager.ones(3, 4, requires_grad=True)
    c = b * 1
    c.fill_diagonal_(3.0)
    c.sum().backward()
    assert b.grad.tolist() == [[0.0, 1, 1, 1], [1, 0.0, 1, 1], [1, 1, 0.0, 1]]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        eager.ones(2, 2, requires_grad=True).fill_diagonal_(0.0)


def test_index_fill_compiles_to_the_same_values():
    import static

    @static.compile
    def f(x, i):
        return x.index_fill(1, i, 3.0) * 2

    x, i = eager.randn(3, 4), eager.tensor([0, 3])
    np.testing.assert_array_equal(f(x, i).numpy(), (x.index_fill(1, i, 3.0) * 2).numpy())
