"""Soundness of eager against PyTorch 2.13: values, gradients, dtypes and error types that
used to be wrong or to crash. Expected values are PyTorch's (or exact by hand, or finite
differences); torch itself is not needed."""
import math
import warnings

import numpy as np
import pytest

import eager as torch
from eager.autograd.functional import hessian


@pytest.fixture
def no_warnings():
    """Every warning raised inside the test is an error (PyTorch is silent there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- tensors hold arrays, never NumPy scalars ---------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: torch.randn(()),
    lambda: torch.rand(()),
    lambda: torch.randn_like(torch.tensor(1.0)),
    lambda: torch.rand_like(torch.tensor(1.0)),
    lambda: torch.randint(0, 5, ()),
    lambda: torch.zeros(()),
    lambda: torch.tensor(np.float32(2.0)),
    lambda: torch.from_numpy(np.array(2.0)),
    lambda: torch.tensor([1.0, 2.0]).sum(),
    lambda: torch.tensor([[1.0, 2.0]])[0, 1],
    lambda: torch.tensor(3.0).to(torch.float16),
])
def test_a_0d_tensor_holds_a_0d_array(make):
    t = make()
    assert type(t._data) is np.ndarray and t.shape == ()
    assert t.device == torch.device("cpu")
    assert isinstance(t.numpy(), np.ndarray)
    # ops with other tensors see one device
    assert (t + torch.ones(3)).shape == (3,)
    assert (torch.ones(2) * t).shape == (2,)


def test_a_0d_random_tensor_takes_in_place_writes():
    t = torch.randn(())
    t.add_(1.0)
    t.zero_()
    assert t.item() == 0.0 and t._version == 2


# -- NumPy's floating-point warnings do not leak ------------------------------------------------
@pytest.mark.parametrize("compute", [
    lambda: torch.log(torch.tensor([0.0, -1.0])),
    lambda: torch.sqrt(torch.tensor([-1.0])),
    lambda: torch.tensor([0.0, 1.0]) / 0,
    lambda: torch.tensor([0.0]) / torch.tensor([0.0]),
    lambda: torch.exp(torch.tensor([1000.0])),
    lambda: torch.tensor([1e30], dtype=torch.float32) * 1e30,
    lambda: torch.tensor([1e5]).half(),
    lambda: torch.tensor([float("inf")]) - float("inf"),
    lambda: torch.tensor([3e38, 3e38]).sum(),
    lambda: torch.zeros(0).mean(),
    lambda: torch.log(torch.tensor([[0.0, 1.0]], dtype=torch.float64)).sum(1),
])
def test_forwards_do_not_warn(no_warnings, compute):
    compute()


def test_in_place_writes_do_not_warn(no_warnings):
    x = torch.ones(3, dtype=torch.float16)
    x.add_(1e5)
    x[0] = 1e6
    assert math.isinf(x[0].item())


def test_backward_through_log_of_zero_does_not_warn(no_warnings):
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    torch.log(x).sum().backward()
    assert math.isinf(x.grad[0].item())


def test_printing_float16_does_not_warn(no_warnings):
    assert "60000." in repr(torch.tensor([1.0, 2.0, 6e4], dtype=torch.float16))
    repr(torch.tensor([1e-5, 6e4], dtype=torch.float16))


def test_the_users_numpy_error_state_is_untouched():
    before = np.geterr()
    torch.log(torch.tensor([0.0]))
    assert np.geterr() == before
    with np.errstate(divide="raise"):
        torch.log(torch.tensor([0.0]))  # eager is still silent...
        with pytest.raises(FloatingPointError):
            np.log(np.array([0.0]))  # ...while the user's own NumPy raises as asked


# -- a view's history follows in-place writes to its base (PyTorch regenerates its grad_fn) --------
def _x():
    return torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)


def test_a_view_taken_before_an_in_place_write_to_its_base_sees_the_write():
    x = _x()
    y = x * 1
    z = y[1]
    y.mul_(2)
    assert z.grad_fn.name() == "AsStridedBackward0"
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [10, 10]])  # PyTorch 2.13


def test_a_view_sees_a_write_through_a_sibling_view_and_an_index_assignment():
    x = _x()
    y = x * 1
    z = y[1]
    w = y[0]
    w.mul_(2)
    y[1] = 0
    assert z.tolist() == [0.0, 0.0]
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [0, 0]])  # PyTorch 2.13


@pytest.mark.parametrize("view, expected", [
    (lambda y: y[1].expand(3, 2), [[0, 0], [30, 30]]),
    (lambda y: y.t(), [[10, 10], [10, 10]]),
    (lambda y: y.reshape(4)[2:], [[0, 0], [10, 10]]),
    (lambda y: y.split(1)[1], [[0, 0], [10, 10]]),
])
def test_views_of_views_and_multi_output_views_follow_the_write(view, expected):
    x = _x()
    y = x * 1
    z = view(y)
    y.mul_(2)
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)  # PyTorch 2.13


def test_a_copy_made_by_advanced_indexing_keeps_its_history():
    x = _x()
    y = x * 1
    z = y[[1]]  # a copy, not a view
    y.mul_(2)
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [5, 5]])  # PyTorch 2.13


def test_results_computed_before_the_write_keep_their_history():
    x = _x()
    y = x * 1
    z = y[1]
    y.mul_(2)
    z2 = z * 5
    y.mul_(3)
    z2.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [10, 10]])  # PyTorch 2.13


def test_a_view_of_a_plain_tensor_requires_grad_after_a_write_that_requires_grad():
    x = _x()
    y = torch.zeros(2, 2)
    z = y[1]
    y.add_(x)
    assert z.requires_grad and z.grad_fn.name() == "AsStridedBackward0"
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [1, 1]])


def test_views_of_a_weight_are_not_tracked_and_dead_views_are_dropped():
    w = torch.ones(3, 3, requires_grad=True)
    for _ in range(100):
        w.t()
    assert w._views is None  # a leaf requiring grad never takes a recorded write
    y = w * 1
    for _ in range(1000):
        y.t()
    assert len(y._views) < 64


# -- second (and third) derivatives through prod ---------------------------------------------------
def _prod_hessian(v):
    """The exact hessian of prod(v): entry (i, k), i != k, is the product of the others."""
    n = len(v)
    h = np.zeros((n, n))
    for i in range(n):
        for k in range(n):
            if i != k:
                h[i, k] = np.prod([v[j] for j in range(n) if j not in (i, k)])
    return h


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [1.5, -2.0, 0.5, 4.0], [2.0]])
def test_hessian_of_prod_is_exact_with_and_without_zeros(values):
    x = torch.tensor(values, dtype=torch.float64)
    h = hessian(lambda t: t.prod(), x)
    np.testing.assert_allclose(h.numpy(), _prod_hessian(values), atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda t: t.prod(1).sum(),
    lambda t: (t.prod(dim=0, keepdim=True) * t).sum(),
    lambda t: t.prod(),
])
def test_prod_second_and_third_derivatives_match_finite_differences(fn):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    a[1, 2] = 0.0  # a zero in a group: no division by it anywhere
    x = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(fn, (x,))

    v = torch.tensor(rng.standard_normal((3, 4)))

    def hessian_times_v(t):
        with torch.enable_grad():
            (g,) = torch.autograd.grad(fn(t), t, create_graph=True)
            (hv,) = torch.autograd.grad((g * v).sum(), t, create_graph=True)
        return hv

    assert torch.autograd.gradcheck(hessian_times_v, (x,))  # third order


def test_prod_except_self_is_differentiable():
    x = torch.tensor(np.random.default_rng(1).standard_normal((2, 3, 2)), requires_grad=True, dtype=torch.float64)
    from eager.ops.reductions import PROD_EXCEPT_SELF

    assert torch.autograd.gradcheck(lambda t: PROD_EXCEPT_SELF(t, dims=(0, 2)), (x,))
    assert torch.autograd.gradgradcheck(lambda t: PROD_EXCEPT_SELF(t, dims=None), (x,))
