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
