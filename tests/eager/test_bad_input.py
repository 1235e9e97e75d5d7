"""Bad input: each error names what is wrong, and afterwards grad mode, data, versions,
requires_grad and gradients are exactly as they were."""
from __future__ import annotations

import re

import numpy as np
import pytest
from autograd_functions import FailingBackward

import eager


class Snapshot:
    """What an error must not change: grad mode and each tensor's observable state."""

    def __init__(self, *tensors):
        self.tensors = tensors
        self.mode = eager.is_grad_enabled()
        self.state = [self._state(t) for t in tensors]

    @staticmethod
    def _state(t):
        grad = None if t._grad is None else t._grad.detach().numpy().copy()
        return (t.detach().numpy().copy(), t._version, t.requires_grad, t.grad_fn, t.dtype, tuple(t.shape), grad)

    def assert_unchanged(self):
        assert eager.is_grad_enabled() == self.mode
        for t, before in zip(self.tensors, self.state):
            after = self._state(t)
            np.testing.assert_array_equal(after[0], before[0])
            assert after[1:6] == before[1:6]
            if before[6] is None:
                assert after[6] is None
            else:
                np.testing.assert_array_equal(after[6], before[6])


@pytest.fixture
def xs():
    a = eager.randn(2, 3, requires_grad=True)
    b = eager.randn(4, requires_grad=True)
    (a.sum() + b.sum()).backward()  # give them a .grad to watch
    return a, b


@pytest.mark.parametrize("call, pattern", [
    (lambda a, b: a + b, r"^add: The size of tensor a \(3\) must match the size of tensor b \(4\) at "
                         r"non-singleton dimension 1 \(shapes \(2, 3\) and \(4,\)\)"),
    (lambda a, b: a * b, r"^mul: .*\(shapes \(2, 3\) and \(4,\)\)"),
    (lambda a, b: a - b, r"^sub: .*\(shapes \(2, 3\) and \(4,\)\)"),
    (lambda a, b: a / b, r"^div: .*\(shapes \(2, 3\) and \(4,\)\)"),
    (lambda a, b: eager.maximum(a, b), r"^maximum: .*\(shapes \(2, 3\) and \(4,\)\)"),
    (lambda a, b: a @ b, r"^matmul: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x1\); "
                         r"shapes \(2, 3\) @ \(4,\)"),
    (lambda a, b: eager.mm(a, a), r"^matmul: mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"),
    (lambda a, b: eager.cat([a, b]), r"^cat: Sizes of tensors must match except in dimension 0. "
                                     r"Got shapes \(2, 3\) and \(4,\)"),
    (lambda a, b: a.view(4), r"reshape: shape '\[4\]' is invalid for input of size 6"),
    (lambda a, b: a.expand(3, 3), r"expand: The expanded size of the tensor \(3\) must match the existing "
                                  r"size \(2\) at non-singleton dimension 0"),
])
def test_shape_mismatch_names_op_and_shapes(xs, call, pattern):
    a, b = xs
    snap = Snapshot(a, b)
    with pytest.raises(RuntimeError, match=pattern):
        call(a, b)
    snap.assert_unchanged()


def test_shape_mismatch_inside_no_grad_keeps_the_mode(xs):
    a, b = xs
    with eager.no_grad():
        snap = Snapshot(a, b)
        with pytest.raises(RuntimeError, match="shapes"):
            a + b
        snap.assert_unchanged()
        assert not eager.is_grad_enabled()
    assert eager.is_grad_enabled()


def test_in_place_shape_mismatch_changes_nothing():
    y = eager.randn(3, requires_grad=True) * 1
    snap = Snapshot(y)
    with pytest.raises(RuntimeError, match=r"add: .*\(shapes \(3,\) and \(4,\)\)"):
        y.add_(eager.ones(4))
    snap.assert_unchanged()
    with pytest.raises(RuntimeError, match=re.escape("output with shape [3] doesn't match the broadcast shape [2, 3]")):
        y.add_(eager.ones(2, 3))
    snap.assert_unchanged()


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda i, f: i.mean(), RuntimeError, r"mean\(\): could not infer output dtype. Input dtype must be either "
                                          "a floating point or complex dtype. Got: Long"),
    (lambda i, f: f.sum(dtype="float128"), TypeError, "unknown dtype 'float128'"),
    (lambda i, f: f[f], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda i, f: eager.where(i, f, f), RuntimeError, "where expected condition to be a boolean tensor, but got a "
                                                      "tensor with dtype Long"),
    (lambda i, f: f @ i.double(), RuntimeError, "matmul: expected m1 and m2 to have the same dtype, but got: "
                                                "float != double"),
    (lambda i, f: f @ i, RuntimeError, "matmul: expected m1 and m2 to have the same dtype, but got: float != long int"),
    (lambda i, f: i.mul_(1.5), RuntimeError, "result type Float can't be cast to the desired output type Long"),
])
def test_wrong_dtypes(call, exc, pattern):
    i = eager.tensor([1, 0, 1])
    f = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    snap = Snapshot(i, f)
    with pytest.raises(exc, match=pattern):
        call(i, f)
    snap.assert_unchanged()


def test_non_float_requires_grad_changes_nothing():
    t = eager.tensor([1, 2])
    snap = Snapshot(t)
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require gradients"):
        t.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require gradients"):
        t.requires_grad = True
    snap.assert_unchanged()
    assert not t.requires_grad


def test_backward_twice_leaves_grads_and_mode_intact():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    snap = Snapshot(x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    snap.assert_unchanged()


def test_backward_of_a_tensor_that_does_not_require_grad():
    x = eager.tensor([1.0, 2.0])
    snap = Snapshot(x)
    with pytest.raises(RuntimeError) as info:
        x.sum().backward()
    assert str(info.value) == "element 0 of tensors does not require grad and does not have a grad_fn"
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad"):
        with eager.no_grad():
            (eager.ones(1, requires_grad=True) * 2).backward()
    w = eager.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad and does not have a grad_fn$"):
        eager.autograd.backward([w * 2, x.sum()])
    assert w.grad is None
    snap.assert_unchanged()


def test_grad_of_an_output_that_does_not_require_grad():
    x = eager.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does not have a grad_fn$"):
        eager.autograd.grad(eager.ones(1).sum(), x)
    assert eager.is_grad_enabled() and x.grad is None


def test_failing_backward_inside_the_graph_restores_grad_mode():
    x = eager.tensor([1.0], requires_grad=True)
    y = (FailingBackward.apply(x) * 2).sum()
    with pytest.raises(ValueError, match="backward of FailingBackward fails"):
        y.backward(create_graph=False)
    assert eager.is_grad_enabled() and x.grad is None
    y2 = FailingBackward.apply(x).sum()
    with eager.no_grad():
        with pytest.raises(ValueError):
            y2.backward(create_graph=True)
        assert not eager.is_grad_enabled()
    assert eager.is_grad_enabled()


def test_mixed_devices_error_changes_nothing():
    if eager.cuda.is_available():
        a, b = eager.ones(2, requires_grad=True), eager.ones(2, device="cuda")
        snap = Snapshot(a)
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            a + b
        snap.assert_unchanged()
    else:
        a = eager.ones(2, requires_grad=True)
        snap = Snapshot(a)
        with pytest.raises(RuntimeError, match="Torch not compiled with CUDA enabled"):
            a + eager.ones(2, device="cuda")
        snap.assert_unchanged()


@pytest.mark.parametrize("name", ["float31", "torch.complex64", "quux", "int128"])
def test_unknown_dtype_names(name):
    t = eager.ones(2, requires_grad=True)
    snap = Snapshot(t)
    with pytest.raises(TypeError, match=f"unknown dtype '{re.escape(name)}'"):
        t.to(name)
    with pytest.raises(TypeError, match="unknown dtype"):
        eager.zeros(2, dtype=name)
    snap.assert_unchanged()


def test_leaf_in_place_error_changes_nothing(xs):
    a, b = xs
    snap = Snapshot(a, b)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        a.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        b[0] = 3.0
    snap.assert_unchanged()


def test_non_scalar_backward_error_changes_nothing(xs):
    a, b = xs
    y = a * 2
    snap = Snapshot(a, b)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    snap.assert_unchanged()
    y.sum().backward()  # the graph was not consumed by the refused call
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 3.0))


def test_wrong_requires_grad_on_non_leaf_changes_nothing(xs):
    a, b = xs
    y = a * 2
    snap = Snapshot(a, y)
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables."):
        y.requires_grad = False
    snap.assert_unchanged()


def test_bad_index_and_dims():
    x = eager.randn(2, 3, requires_grad=True)
    snap = Snapshot(x)
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in range of [-2, 1], but got 2)")):
        x.sum(dim=2)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        x[5]
    with pytest.raises(RuntimeError, match="a Tensor with 6 elements cannot be converted to Scalar"):
        x.item()
    snap.assert_unchanged()


def test_bad_factory_arguments():
    with pytest.raises(RuntimeError, match=re.escape("Trying to create tensor with negative dimension -1: [2, -1]")):
        eager.zeros(2, -1)
    with pytest.raises(TypeError, match="expected a sequence of integers for the size"):
        eager.ones(2.5)
    with pytest.raises(ValueError, match=re.escape("expected sequence of length 2 at dim 1 (got 1)")):
        eager.tensor([[1.0, 2.0], [3.0]])
    assert eager.is_grad_enabled()
