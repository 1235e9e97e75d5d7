"""Behaviours checked against PyTorch 2.13 (CPU) by a differential run; the expected values
are PyTorch's, hard-coded, so these tests do not need torch installed."""
import math

import numpy as np
import pytest

import eager as torch


def test_integer_cast_of_a_grad_tensor_does_not_require_grad():
    # PyTorch 2.13: x.int() of a float leaf with requires_grad is a plain int tensor, and
    # float ops on it record nothing
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    assert x.int().requires_grad is False
    assert x.int().grad_fn is None
    assert x.long().float().requires_grad is False
    assert (x.int() / 2).requires_grad is False
    assert x.bool().requires_grad is False


def test_empty_dim_list_reduces_every_dim():
    # PyTorch 2.13: x.sum(()) and x.mean(()) reduce over all dims (SumBackward1 / MeanBackward1)
    x = torch.arange(6.0).reshape(2, 3).requires_grad_()
    s = x.sum(())
    assert tuple(s.shape) == () and s.item() == 15.0
    assert s.grad_fn.name() == "SumBackward1"
    m = x.mean(())
    assert tuple(m.shape) == () and m.item() == 2.5
    m.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1 / 6))
    # ...while squeeze(()) squeezes nothing
    assert tuple(torch.zeros(2, 1, 3).squeeze(()).shape) == (2, 1, 3)


def test_reductions_of_a_0d_tensor_along_dim_0():
    # PyTorch 2.13: a 0-d tensor has one dim for reductions (dim 0 or -1)
    x = torch.tensor(2.0, requires_grad=True)
    assert x.sum(0).item() == 2.0 and x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.mean(-1).item() == 2.0
    assert x.var(0, correction=0).item() == 0.0
    assert math.isnan(x.std(0).item())
    assert torch.logsumexp(x, 0).item() == 2.0
    assert x.softmax(0).item() == 1.0 and x.log_softmax(0).item() == 0.0
    assert x.amax(0).item() == 2.0
    assert tuple(x.sum(0, keepdim=True).shape) == ()
    p = x.prod(0)
    assert p.grad_fn.name() == "ProdBackward1"
    p.backward()
    assert x.grad.item() == 1.0


def test_std_gradient_of_a_constant_group_is_zero():
    # PyTorch 2.13 masks d std where std == 0: grad 0, not NaN
    x = torch.tensor([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], requires_grad=True)
    x.std(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 0.0, 0.0], [-0.5, 0.0, 0.5]])


def test_mean_and_prod_of_an_empty_tensor_backward():
    # PyTorch 2.13: mean() of an empty tensor is nan, prod() is 1, both differentiate to an empty grad
    x = torch.zeros(0, 3, requires_grad=True)
    assert math.isnan(x.mean().item())
    assert x.prod().item() == 1.0
    x.mean().backward()
    x.prod().backward()
    assert tuple(x.grad.shape) == (0, 3)


def test_invert_is_bitwise_on_integers():
    # PyTorch 2.13: ~ is bitwise not on integer tensors, logical not on bool, TypeError on float
    np.testing.assert_array_equal((~torch.tensor([5, 3, -1])).numpy(), [-6, -4, 0])
    np.testing.assert_array_equal((~torch.tensor([0, 255], dtype=torch.uint8)).numpy(), [255, 0])
    assert (~torch.tensor([5])).dtype == torch.int64
    np.testing.assert_array_equal((~torch.tensor([True, False])).numpy(), [False, True])
    with pytest.raises(TypeError):
        ~torch.tensor([1.0])


def test_and_of_bools_and_refusals():
    # PyTorch 2.13: bool & bool is a logical and (either side may be a Python bool); & of a
    # float tensor raises NotImplementedError; int & int is bit by bit (5 & 3 == 1).
    m = torch.tensor([True, False])
    np.testing.assert_array_equal((m & torch.tensor([True, True])).numpy(), [True, False])
    np.testing.assert_array_equal((True & m).numpy(), [True, False])
    with pytest.raises(NotImplementedError):
        torch.tensor([1.0]) & m
    np.testing.assert_array_equal((torch.tensor([5]) & torch.tensor([3])).numpy(), [5 & 3])


@pytest.mark.parametrize("expr", [
    lambda a, m: a - m, lambda a, m: m - a, lambda a, m: m - m, lambda a, m: a - True,
    lambda a, m: True - a, lambda a, m: torch.sub(a, m), lambda a, m: torch.rsub(m, a),
    lambda a, m: -m, lambda a, m: torch.neg(m), lambda a, m: a.clone().sub_(m),
])
def test_subtraction_and_negation_of_bools_raise(expr):
    # PyTorch 2.13: RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported...")
    with pytest.raises(RuntimeError):
        expr(torch.tensor([1.0, 2.0]), torch.tensor([True, False]))


def test_rsub_backward_names():
    # PyTorch 2.13: rsub(tensor, tensor) -> RsubBackward0, 2 - tensor -> RsubBackward1
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    assert torch.rsub(a, a * 2).grad_fn.name() == "RsubBackward0"
    assert (2 - a).grad_fn.name() == "RsubBackward1"


def test_max_and_min_along_a_dim_of_a_0d_tensor():
    # PyTorch 2.13: tensor(2.).max(0) -> (tensor(2.), tensor(0)), 0-d results, keepdim or not
    x = torch.tensor(2.0, requires_grad=True)
    values, indices = x.max(0)
    assert values.shape == () and indices.shape == () and values.item() == 2.0 and indices.item() == 0
    values.backward()
    assert x.grad.item() == 1.0
    values, indices = torch.tensor(3.0).min(-1, keepdim=True)
    assert values.shape == () and indices.item() == 0


@pytest.mark.parametrize("make_key,shape", [
    (lambda i: (0, slice(None), i), (3, 2)),      # NumPy would give (2, 3)
    (lambda i: (0, i), (2, 4)),
    (lambda i: (slice(None), 1, i), (2, 2)),
    (lambda i: (1, i, 2), (2,)),
])
def test_integer_indices_apply_before_tensor_indices(make_key, shape):
    # PyTorch 2.13 selects the integer-indexed dims first, then applies the tensor indices
    x = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()
    y = x[make_key(torch.tensor([0, 2]))]
    assert tuple(y.shape) == shape
    assert y.grad_fn.name() == "IndexBackward0"
    y.sum().backward()
    assert x.grad.sum().item() == np.prod(shape)


def test_select_then_index_values():
    x = torch.arange(24.0).reshape(2, 3, 4)
    assert x[0, :, torch.tensor([0, 2])].tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
