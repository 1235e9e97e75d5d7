"""index_copy, index_reduce, masked_scatter, put, select/slice/diagonal_scatter and
as_strided / as_strided_ against PyTorch: values, dtypes, shapes, errors, gradients
(finite differences in float64) and a few traced under static.compile."""
import numpy as np
import pytest

import eager
import static
from eager._tensor import METADATA_VERSION

torch = pytest.importorskip("torch")
from torch_compare import E, raises_like, same  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")


G = torch.Generator().manual_seed(0)
X = torch.randn(4, 5, dtype=torch.float64, generator=G)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_copy_values_and_gradients(dim):
    n = X.shape[dim]
    idx = torch.tensor([n - 1, 0])
    shape = list(X.shape)
    shape[dim] = 2
    src = torch.randn(*shape, dtype=torch.float64, generator=G)
    same(eager.index_copy(E(X), dim, E(idx), E(src)), torch.index_copy(X, dim, idx, src))
    same(E(X).index_copy(dim, E(idx), E(src)), X.index_copy(dim, idx, src))
    a = E(X)
    a.index_copy_(dim, E(idx), E(src))
    same(a, X.clone().index_copy_(dim, idx, src))
    assert eager.autograd.gradcheck(lambda x, s: eager.index_copy(x, dim, E(idx), s), (E(X, True), E(src, True)))
    assert type(eager.index_copy(E(X, True), dim, E(idx), E(src)).grad_fn).__name__ == "IndexCopyBackward0"


def test_index_copy_scalars_and_errors():
    x0, s0 = torch.tensor(1.0), torch.tensor(5.0)
    same(eager.index_copy(E(x0), 0, E(torch.tensor([0])), E(s0)), torch.index_copy(x0, 0, torch.tensor([0]), s0))
    x = torch.zeros(3, 4)
    for args in [(0, torch.tensor([0.0]), torch.ones(1, 4)), (0, torch.tensor([0, 1]), torch.ones(1, 4)),
                 (0, torch.tensor([5]), torch.ones(1, 4)), (0, torch.tensor([0]), torch.ones(1, 4).double()),
                 (0, torch.tensor(1), torch.ones(4)), (0, torch.tensor([[0]]), torch.ones(1, 4)),
                 (0, torch.tensor([0]), torch.ones(1, 3))]:
        raises_like(lambda a=args: eager.index_copy(E(x), a[0], E(a[1]), E(a[2])),
                    lambda a=args: torch.index_copy(x, *a))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    idx = torch.tensor([0, 2, 0, 3])
    src = torch.randn(4, 5, dtype=torch.float64, generator=G)
    want = X.index_reduce(0, idx, src, reduce, include_self=include_self)
    same(eager.index_reduce(E(X), 0, E(idx), E(src), reduce, include_self=include_self), want)
    a = E(X)
    a.index_reduce_(0, E(idx), E(src), reduce, include_self=include_self)
    same(a, want)
    xi = torch.randint(-5, 5, (4, 3), generator=G)
    si = torch.randint(-5, 5, (2, 3), generator=G)
    same(eager.index_reduce(E(xi), 0, E(torch.tensor([1, 1])), E(si), reduce, include_self=include_self),
         xi.index_reduce(0, torch.tensor([1, 1]), si, reduce, include_self=include_self))
    if reduce in ("mean", "prod"):
        assert eager.autograd.gradcheck(
            lambda x, s: eager.index_reduce(x, 0, E(idx), s, reduce, include_self=include_self),
            (E(X, True), E(src, True)))


def test_index_reduce_errors():
    raises_like(lambda: eager.index_reduce(E(X), 0, E(torch.tensor([0])), E(X[:1]), "sum"),
                lambda: X.index_reduce(0, torch.tensor([0]), X[:1], "sum"))
    x, x3 = torch.zeros(3, 4), torch.zeros(3, 4, 5)
    for t, dim, index, src in [(x, 0, torch.tensor([[0]]), torch.ones(1, 4)), (x, 0, torch.tensor([0.0]), torch.ones(1, 4)),
                               (x, 0, torch.tensor([7]), torch.ones(1, 4)), (x, 0, torch.tensor([0, 1]), torch.ones(1, 4)),
                               (x, 0, torch.tensor([0]), torch.ones(1, 3)), (x, 0, torch.tensor([0]), torch.ones(4)),
                               (x, 0, torch.tensor([0]), torch.ones(1, 4).double()),
                               (x3, 1, torch.tensor([0, 1]), torch.ones(3, 2))]:
        raises_like(lambda a=(t, dim, index, src): eager.index_reduce(E(a[0]), a[1], E(a[2]), E(a[3]), "amax"),
                    lambda a=(t, dim, index, src): a[0].index_reduce(a[1], a[2], a[3], "amax"))
    i32 = torch.tensor([2, 0], dtype=torch.int32)  # index_reduce takes int32 indices too
    same(eager.index_reduce(E(x3), 1, E(i32), E(torch.ones(3, 2, 5)), "amax"),
         x3.index_reduce(1, i32, torch.ones(3, 2, 5), "amax"))


def test_masked_scatter():
    mask = torch.rand(4, 5, generator=G) > 0.4
    src = torch.randn(20, dtype=torch.float64, generator=G)
    same(eager.masked_scatter(E(X), E(mask), E(src)), X.masked_scatter(mask, src))
    row = mask[1]  # broadcast over the rows
    same(E(X).masked_scatter(E(row), E(src)), X.masked_scatter(row, src))
    a = E(X)
    a.masked_scatter_(E(mask), E(src))
    same(a, X.clone().masked_scatter_(mask, src))
    assert eager.autograd.gradcheck(lambda x, s: eager.masked_scatter(x, E(mask), s), (E(X, True), E(src, True)))
    x = torch.zeros(3, 4)
    raises_like(lambda: eager.masked_scatter(E(x), E(torch.ones(3, 4, dtype=torch.bool)), E(torch.ones(5))),
                lambda: x.masked_scatter(torch.ones(3, 4, dtype=torch.bool), torch.ones(5)))
    raises_like(lambda: eager.masked_scatter(E(x), E(torch.ones(3, 4)), E(torch.ones(15))),
                lambda: x.masked_scatter(torch.ones(3, 4), torch.ones(15)))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    idx = torch.tensor([[1, -1], [7, 1]]) if accumulate else torch.tensor([[1, -1], [7, 3]])
    src = torch.randn(2, 2, dtype=torch.float64, generator=G)
    same(eager.put(E(X), E(idx), E(src), accumulate), torch.put(X, idx, src, accumulate))
    a = E(X)
    a.put_(E(idx), E(src), accumulate=accumulate)
    same(a, X.clone().put_(idx, src, accumulate=accumulate))
    assert eager.autograd.gradcheck(lambda x, s: eager.put(x, E(idx), s, accumulate), (E(X, True), E(src, True)))
    raises_like(lambda: eager.put(E(X), E(torch.tensor([20])), E(torch.ones(1).double())),
                lambda: X.put(torch.tensor([20]), torch.ones(1).double()))
    raises_like(lambda: eager.put(E(X), E(torch.tensor([1, 2])), E(torch.ones(3).double())),
                lambda: X.put(torch.tensor([1, 2]), torch.ones(3).double()))


def test_view_scatters():
    y = torch.randn(2, 3, 4, dtype=torch.float64, generator=G)
    for dim, index in [(0, 1), (1, -1), (-1, 2)]:
        src = torch.randn_like(y.select(dim, index))
        same(eager.select_scatter(E(y), E(src), dim, index), torch.select_scatter(y, src, dim, index))
        same(E(y).select_scatter(E(src), dim, index), y.select_scatter(src, dim, index))
    for dim, start, end, step in [(0, None, None, 1), (1, 1, 3, 1), (2, 0, None, 2), (-1, -3, -1, 1)]:
        src = torch.randn_like(y.narrow(0, 0, y.shape[0])[(slice(None),) * (dim % 3) + (slice(start, end, step),)])
        same(eager.slice_scatter(E(y), E(src), dim, start, end, step), torch.slice_scatter(y, src, dim, start, end, step))
    for offset, d1, d2 in [(0, 0, 1), (1, 1, 2), (-1, 2, 1), (2, -1, 0), (5, 1, 2)]:
        src = torch.randn_like(y.diagonal(offset, d1, d2))
        same(eager.diagonal_scatter(E(y), E(src), offset, d1, d2), torch.diagonal_scatter(y, src, offset, d1, d2))
    src = torch.randn(3, 4, dtype=torch.float64, generator=G)
    assert eager.autograd.gradcheck(lambda a, b: eager.select_scatter(a, b, 0, 1), (E(y, True), E(src, True)))
    src = torch.randn(2, 3, 2, dtype=torch.float64, generator=G)
    assert eager.autograd.gradcheck(lambda a, b: eager.slice_scatter(a, b, 2, 0, None, 2), (E(y, True), E(src, True)))
    src = torch.randn(4, 2, dtype=torch.float64, generator=G)
    assert eager.autograd.gradcheck(lambda a, b: eager.diagonal_scatter(a, b, 1, 0, 1), (E(y, True), E(src, True)))
    x = torch.zeros(3, 4)
    raises_like(lambda: eager.select_scatter(E(x), E(torch.ones(3)), 0, 0),
                lambda: torch.select_scatter(x, torch.ones(3), 0, 0))
    raises_like(lambda: eager.slice_scatter(E(x), E(torch.ones(3, 3)), 1, 0, 2),
                lambda: torch.slice_scatter(x, torch.ones(3, 3), 1, 0, 2))
    raises_like(lambda: eager.diagonal_scatter(E(x), E(torch.ones(2))), lambda: torch.diagonal_scatter(x, torch.ones(2)))


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), None), ((3, 3), (1, 1), 2), ((4,), (3,), 0),
                                                ((2, 3, 2), (4, 1, 2), 1), ((0, 2), (1, 1), 0)])
def test_as_strided_values_and_gradients(size, stride, offset):
    x = torch.arange(20, dtype=torch.float64).reshape(4, 5)
    same(eager.as_strided(E(x), size, stride, offset), torch.as_strided(x, size, stride, offset))
    same(E(x).as_strided(size, stride, offset), x.as_strided(size, stride, offset))
    xt, et = x.clone().requires_grad_(), E(x, True)
    g = torch.randn(size, dtype=torch.float64, generator=G)
    xt.as_strided(size, stride, offset).backward(g)
    et.as_strided(size, stride, offset).backward(E(g))
    same(et.grad, xt.grad)  # overlapping windows sum their gradients, as_strided_backward's
    assert eager.autograd.gradcheck(lambda a: eager.as_strided(a, size, stride, offset), (E(x, True),))


def test_as_strided_of_views_reads_the_storage():
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    for view, ev in [(x[1:], E(x)[1:]), (x.t(), E(x).t()), (x[:, 1:], E(x)[:, 1:])]:
        for offset in (None, 0, 3):
            same(ev.as_strided((2, 2), (1, 2), offset), view.as_strided((2, 2), (1, 2), offset))
    xt, et = x.clone().requires_grad_(), E(x, True)
    xt[1:].as_strided((3,), (1,), 2).sum().backward()
    et[1:].as_strided((3,), (1,), 2).sum().backward()
    same(et.grad, xt.grad)  # storage positions outside the view get no gradient, as PyTorch's
    raises_like(lambda: E(x).as_strided((10,), (2,)), lambda: x.as_strided((10,), (2,)))


def test_as_strided_in_place():
    x = torch.arange(6.0).reshape(2, 3)
    a = E(x)
    before = METADATA_VERSION[0]
    out = a.as_strided_((3, 2), (1, 3))
    assert out is a and METADATA_VERSION[0] > before
    same(a, x.clone().as_strided_((3, 2), (1, 3)))
    assert a.stride() == (1, 3)


def test_scatters_trace_under_static_compile():
    idx = E(torch.tensor([2, 0]))
    src = E(torch.randn(2, 5, dtype=torch.float64, generator=G))
    mask = E(torch.rand(4, 5, generator=G) > 0.5)
    flat = E(torch.randn(20, dtype=torch.float64, generator=G))

    def f(x, s, m, v):
        return (eager.index_copy(x, 0, idx, s) + eager.masked_scatter(x, m, v)
                + eager.diagonal_scatter(x, s[0, :4], 0, 0, 1) + eager.as_strided(x, (4, 4), (5, 1)).sum())

    want = f(E(X), src, mask, flat)
    np.testing.assert_allclose(static.compile(f)(E(X), src, mask, flat).numpy(), want.numpy(), rtol=1e-12)
