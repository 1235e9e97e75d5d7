"""eager.utils.checkpoint: the same values and gradients as without it (dropout's masks
included), PyTorch's reentrant and non-reentrant rules, and the compiled mode."""
import warnings

import numpy as np
import pytest

import eager
import static
from eager import nn
from eager.utils.checkpoint import checkpoint, checkpoint_sequential


def _block():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.3), nn.Linear(8, 4))


def _run(block, x, how):
    block.zero_grad()
    x.grad = None
    eager.manual_seed(1)
    y = block(x) if how is None else checkpoint(block, x, use_reentrant=how)
    (y * eager.arange(4.0)).sum().backward()
    return [y.detach().numpy(), x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in block.parameters()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_same_values_and_gradients_as_without_it(use_reentrant):
    block = _block()
    x = eager.randn(5, 4, requires_grad=True)
    plain, checkpointed = _run(block, x, None), _run(block, x, use_reentrant)
    for a, b in zip(plain, checkpointed):
        np.testing.assert_array_equal(a, b)  # the recomputation replays the same dropout draws


def test_the_forward_keeps_no_graph_inside_the_segment():
    block = _block()
    y = checkpoint(block, eager.randn(5, 4, requires_grad=True), use_reentrant=False)
    assert "_Checkpoint" in y.grad_fn.name()
    below = [f for f, _ in y.grad_fn.next_functions if f is not None]  # the input and the anchor only:
    assert all(f.name() == "torch::autograd::AccumulateGrad" for f in below)  # no Linear or GELU nodes


def test_reentrant_and_non_reentrant_rules_for_inputs_that_need_no_grad():
    block = _block()
    x = eager.randn(5, 4)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        assert not checkpoint(block, x, use_reentrant=True).requires_grad
    y = checkpoint(block, x, use_reentrant=False)
    y.sum().backward()
    assert all(p.grad is not None for p in block.parameters())
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(block, eager.randn(5, 4, requires_grad=True))


def test_keyword_arguments_and_sequential():
    def scaled(a, factor=1.0):
        return a * factor

    x = eager.randn(3, requires_grad=True)
    checkpoint(scaled, x, use_reentrant=False, factor=3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    eager.manual_seed(0)
    seq = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)])
    x = eager.randn(2, 4, requires_grad=True)
    expected = seq(x)
    got = checkpoint_sequential(seq, 3, x, use_reentrant=False)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    got.sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    expected.sum().backward()
    np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-6)


def test_inside_a_compiled_function_it_is_the_function_itself():
    block = _block().eval().requires_grad_(False)  # a function of x alone
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)

    def loss(v):
        return checkpoint(block, v, use_reentrant=False).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: it traces
        value, grad = static.value_and_grad(loss)(x)
    t = eager.tensor(x, requires_grad=True)
    expected = loss(t)
    expected.backward()
    assert float(value) == pytest.approx(expected.item(), rel=1e-6)
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-5, atol=1e-6)
