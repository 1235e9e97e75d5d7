"""The in-place methods that change a tensor's shape or storage (t_, transpose_, swapdims_,
swapaxes_, squeeze_, unsqueeze_, resize_, resize_as_, set_) against PyTorch: shapes, values,
grad_fn names, gradients (through a view of the reshaped tensor too), errors, and a trace."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")

CALLS = [("unsqueeze_", (0,), (2, 3)), ("unsqueeze_", (-1,), (2, 3)), ("squeeze_", (), (2, 1, 3)),
         ("squeeze_", (1,), (2, 1, 3)), ("squeeze_", ((0, 1),), (1, 1, 3)), ("t_", (), (2, 3)), ("t_", (), (4,)),
         ("transpose_", (0, 2), (2, 3, 4)), ("swapdims_", (0, 1), (2, 3)), ("swapaxes_", (1, 0), (2, 3))]


@pytest.mark.parametrize("name, args, shape", CALLS)
def test_in_place_views_match_pytorch(name, args, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    w = np.random.default_rng(1).standard_normal(np.prod(shape)).astype(np.float32)
    a, ta = eager.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(x.copy()).requires_grad_()
    b, tb = a * 1, ta * 1
    assert getattr(b, name)(*args) is b
    getattr(tb, name)(*args)
    assert tuple(b.shape) == tuple(tb.shape)
    np.testing.assert_array_equal(b.detach().numpy(), tb.detach().numpy())
    assert type(b.grad_fn).__name__ == type(tb.grad_fn).__name__
    (b * eager.from_numpy(w).reshape(tuple(b.shape))).sum().backward()
    (tb * torch.from_numpy(w).reshape(tuple(tb.shape))).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    plain = eager.from_numpy(x.copy())  # no autograd: the same memory, reshaped
    getattr(plain, name)(*args)
    assert tuple(plain.shape) == tuple(tb.shape) and plain.grad_fn is None


def test_a_base_reshaped_under_its_views_keeps_their_gradients():
    for lib in (eager, torch):
        a = lib.ones(2, 3, requires_grad=True)
        g = a * 1
        row = g[0]
        g.t_()
        row.mul_(2)  # a write through the old view reaches the reshaped tensor
        (g * lib.arange(6.0).reshape(3, 2)).sum().backward()
        if lib is eager:
            ours = (g.detach().numpy(), a.grad.numpy())
        else:
            theirs = (g.detach().numpy(), a.grad.numpy())
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_a_view_reshaped_in_place_stays_a_view_of_its_base():
    e = eager.arange(6.0)
    v = e[1:]
    v.unsqueeze_(0)
    assert tuple(v.shape) == (1, 5) and v._base is e
    v.mul_(10)
    assert e.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]


def test_leaves_and_bad_dims_are_refused_as_pytorch():
    a = eager.ones(2, 3, requires_grad=True)
    for call in (lambda: a.unsqueeze_(0), lambda: a.t_(), lambda: a.squeeze_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            call()
    assert tuple(a.shape) == (2, 3)
    with eager.no_grad():
        a.unsqueeze_(0)
    assert tuple(a.shape) == (1, 2, 3)
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        eager.ones(2, 3, 4).t_()
    with pytest.raises(IndexError):
        eager.ones(2, 3).transpose_(0, 5)


def test_resize_keeps_the_storage_as_pytorch():
    for lib in (eager, torch):
        c = lib.arange(6.0)
        c.resize_(2, 2)
        first = c.clone()
        c.resize_(3, 3)
        kept = c.flatten()[:6].clone()
        t = lib.arange(6.0).reshape(2, 3).t()
        t.resize_(2, 2)
        out = [first.tolist(), kept.tolist(), t.tolist(), tuple(c.shape)]
        if lib is eager:
            ours = out
        else:
            theirs = out
    assert ours == theirs
    r = eager.zeros(2, 3)
    assert r.resize_as_(eager.ones(3, 1)) is r and tuple(r.shape) == (3, 1)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        eager.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        eager.ones(2).resize_(-1, 2)


def test_set_shares_the_source():
    d, src = eager.zeros(2, 3), eager.ones(4)
    assert d.set_(src) is d and tuple(d.shape) == (4,)
    src.add_(1)
    assert d.tolist() == [2.0] * 4 and d._version == src._version
    assert tuple(eager.ones(3).set_().shape) == (0,)
    with pytest.raises(RuntimeError, match="Could not set tensor"):
        eager.zeros(2).set_(eager.zeros(2, dtype=eager.float64))


def test_in_place_views_trace_to_eagers_values_and_gradients():
    def f(x):
        y = x * 2
        y.unsqueeze_(0)
        y.squeeze_(0)
        y.t_()
        return (y * eager.arange(6.0).reshape(3, 2)).sum()

    x = eager.randn(2, 3, requires_grad=True)
    f(x).backward()
    want = x.grad.clone()
    x.grad = None
    static.compile(f)(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), want.numpy(), rtol=1e-6)

    @static.compile
    def g(x):
        v = x[0]
        v.unsqueeze_(0)
        return v

    with pytest.raises(static.TraceError, match="changes the shape of a view in place"):
        g(eager.ones(2, 3) * 1)
