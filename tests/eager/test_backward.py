"""backward(): implicit gradients, shape checks, accumulation, non-leaf .grad, retain_grad,
hooks, and the freeing of saved tensors."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import eager

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after "
         "they have already been freed). Saved intermediate values of the graph are freed when you call "
         ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
         "graph a second time or if you need to access saved tensors after calling backward.")


def test_implicit_gradient_only_for_scalar_outputs():
    a = eager.randn((3, 3), requires_grad=True)
    L = 10 - a * 2
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        L.backward()
    assert a.grad is None
    L.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 3), -2.0))


def test_one_element_non_scalar_output_is_accepted():
    x = eager.tensor([3.0], requires_grad=True)
    (x * x).backward()
    assert x.grad.tolist() == [6.0]


def test_backward_with_explicit_gradient_is_a_vector_jacobian_product():
    x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(eager.tensor([1.0, 0.5, 0.0]))
    assert x.grad.tolist() == [2.0, 2.0, 0.0]


def test_backward_gradient_shape_is_checked():
    x = eager.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=re.escape(
            "Mismatch in shape: grad_output[0] has a shape of eager.Size([2]) and output[0] has a shape of "
            "eager.Size([3]).")):
        y.backward(eager.ones(2))
    assert x.grad is None
    y.backward(eager.ones(3))  # the graph is intact after the refused call
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_gradient_with_ones_like_the_tutorial():
    x = eager.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    loss = x ** 2 - 5
    loss.backward(gradient=eager.ones(5))
    assert eager.equal(x.grad, 2 * x.detach())


def test_grad_accumulates_across_backward_calls():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    for k in range(1, 4):
        (x * 3).sum().backward()
        assert x.grad.tolist() == [3.0 * k, 3.0 * k]
    x.grad.zero_()
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    x.grad = None
    (x * 5).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_grad_of_leaf_is_not_an_alias_of_the_incoming_gradient():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    g = eager.tensor([1.0, 1.0])
    (x * 1).backward(g)
    (x * 1).backward(g)
    assert g.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_is_summed_over_every_use_of_a_tensor():
    a = eager.randn(3, 3, requires_grad=True)
    w = [eager.randn(3, 3, requires_grad=True) for _ in range(4)]
    b = w[0] * a
    c = w[1] * a
    d = w[2] * b + w[3] * c
    (10 - d).sum().backward()
    W = [t.detach().numpy() for t in w]
    np.testing.assert_allclose(a.grad.numpy(), -(W[2] * W[0] + W[3] * W[1]), rtol=1e-6)
    np.testing.assert_allclose(w[0].grad.numpy(), -(W[2] * a.detach().numpy()), rtol=1e-6)


def test_broadcast_gradients_are_reduced_to_the_input_shape():
    x = eager.randn(2, 3, requires_grad=True)
    b = eager.randn(3, requires_grad=True)
    s = eager.randn(1, 1, requires_grad=True)
    ((x + b) * s).sum().backward()
    assert b.grad.shape == (3,) and s.grad.shape == (1, 1)
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 2 * s.item()), rtol=1e-6)
    np.testing.assert_allclose(s.grad.item(), (x + b).sum().item(), rtol=1e-5)


def test_reading_grad_of_a_non_leaf_warns():
    x = eager.randn(3, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being "
                                         "accessed. Its .grad attribute won't be populated during "
                                         r"autograd.backward\(\)"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None  # leaves do not warn
        assert eager.ones(2).grad is None


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    z = (y * y).sum()
    z.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [18.0, 36.0]
    x.retain_grad()  # a no-op on a leaf
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has requires_grad=False$"):
        eager.ones(2).retain_grad()


def test_retain_grad_accumulates_and_sees_hooked_gradient():
    x = eager.tensor([1.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 100)  # registered after retain_grad, still runs before it
    y.backward(retain_graph=True)
    assert y.grad.tolist() == [100.0]
    y.backward()
    assert y.grad.tolist() == [200.0]
    assert x.grad.tolist() == [400.0]


# -- hooks ---------------------------------------------------------------------------------------
def test_hook_on_leaf_can_replace_the_gradient_and_be_removed():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 2

    h = x.register_hook(hook)
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [6.0, 6.0]
    h.remove()
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]] and x.grad.tolist() == [9.0, 9.0]
    h.remove()  # removing twice is harmless


def test_hook_returning_none_keeps_the_gradient_and_hooks_chain_in_order():
    x = eager.tensor([1.0], requires_grad=True)
    y = x * 2
    order = []
    y.register_hook(lambda g: order.append("first"))
    y.register_hook(lambda g: (order.append("second"), g + 1)[1])
    y.register_hook(lambda g: (order.append(g.item()), None)[1])
    y.backward()
    assert order == ["first", "second", 2.0]
    assert x.grad.item() == 4.0


def test_hook_on_non_leaf_changes_what_flows_to_the_leaves():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: eager.zeros_like(g))
    (y + x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_hook_needs_requires_grad():
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        eager.ones(2).register_hook(lambda g: g)


def test_hook_on_one_output_of_a_multi_output_op():
    x = eager.arange(4.0).requires_grad_()
    a, b = x.split(2)
    b.register_hook(lambda g: g * 10)
    (a.sum() + b.sum()).backward()
    assert x.grad.tolist() == [1.0, 1.0, 10.0, 10.0]


# -- freeing saved tensors -------------------------------------------------------------------------
def test_second_backward_raises_once_saved_tensors_are_freed():
    x = eager.randn(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value) == FREED
    np.testing.assert_array_equal(x.grad.numpy(), first)  # nothing was accumulated by the failed call


@pytest.mark.parametrize("make", [
    lambda x: x.exp().sum(),          # saves its output
    lambda x: (x * 2).sum(),          # saves the other operand
    lambda x: x.tanh().mean(),
    lambda x: (x @ x),
])
def test_freed_after_backward_for_ops_that_save(make):
    x = eager.randn(3, requires_grad=True)
    y = make(x)
    y.backward()
    with pytest.raises(RuntimeError, match=re.escape(FREED)):
        y.backward()


def test_an_op_that_saved_nothing_can_be_backpropagated_twice():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]
    z = (-x).reshape(2, 1).sum()
    z.backward()
    z.backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_retain_graph_allows_a_second_backward():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [4.0, 8.0]
    y.backward()  # the last one may free
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_freed_message_also_from_autograd_grad():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp()).sum()
    (g,) = eager.autograd.grad(y, x)
    np.testing.assert_allclose(g.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match=re.escape(FREED)):
        eager.autograd.grad(y, x)


def test_shared_subgraph_of_two_losses_needs_retain_graph():
    x = eager.randn(3, requires_grad=True)
    h = x.tanh()
    l1 = h.sum()
    l2 = (h * 2).sum()
    l1.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        l2.backward()


def test_backward_through_several_roots_at_once():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y1 = (x * 2).sum()
    y2 = (x * x).sum()
    eager.autograd.backward([y1, y2])
    assert x.grad.tolist() == [4.0, 6.0]


def test_backward_inputs_restricts_accumulation():
    x = eager.tensor([1.0], requires_grad=True)
    w = eager.tensor([2.0], requires_grad=True)
    (x * w).backward(inputs=[w])
    assert w.grad.item() == 1.0 and x.grad is None
