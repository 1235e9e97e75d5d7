"""detach/detach_/requires_grad_, custom autograd Functions, gradcheck and gradgradcheck."""
from __future__ import annotations

import re

import numpy as np
import pytest
from autograd_functions import Exp

import eager
from eager.autograd import Function, gradcheck, gradgradcheck


# -- detach --------------------------------------------------------------------------------------
def test_detach_shares_data_and_version_but_not_history():
    a = eager.rand(2, 2, requires_grad=True)
    y = a * 2
    b = y.detach()
    assert not b.requires_grad and b.grad_fn is None and b.is_leaf
    assert y.requires_grad  # the original is untouched
    z = y * y  # saves y
    b.add_(1)  # writes show through, and bump the shared counter
    assert np.array_equal(y.detach().numpy(), b.numpy())
    assert y._version == 1 and b._version == 1
    with pytest.raises(RuntimeError, match=re.escape("which is output 0 of MulBackward0, is at version 1")):
        z.sum().backward()
    np.testing.assert_allclose(b.numpy(), a.detach().numpy() * 2 + 1, rtol=1e-6)


def test_detach_of_a_leaf_and_gradients_do_not_flow_through_it():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x * x + x.detach() * 10
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_detach_in_place():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert y.detach_() is y
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    assert y.tolist() == [3.0, 6.0]
    v = (x * 1).view(2)
    with pytest.raises(RuntimeError, match=re.escape("Can't detach views in-place. Use detach() instead.")):
        v.detach_()


def test_requires_grad_method_returns_self():
    t = eager.ones(2)
    assert t.requires_grad_() is t and t.requires_grad
    assert t.requires_grad_(False) is t and not t.requires_grad


# -- custom Function -----------------------------------------------------------------------------
class MulConst(Function):
    """Non-tensor arguments get a None gradient; needs_input_grad tells which to compute."""

    @staticmethod
    def forward(ctx, x, w, k):
        ctx.save_for_backward(x, w)
        ctx.k = k
        ctx.seen = ctx.needs_input_grad
        return x * w * k

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx = grad * w * ctx.k if ctx.needs_input_grad[0] else None
        gw = grad * x * ctx.k if ctx.needs_input_grad[1] else None
        return gx, gw, None


def test_function_forward_backward_and_grad_fn():
    x = eager.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


def test_function_forward_runs_without_recording():
    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mode = eager.is_grad_enabled()
            out = x * 2
            ctx.inner_requires_grad = out.requires_grad
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = eager.tensor([1.0], requires_grad=True)
    y = Probe.apply(x)
    assert y.grad_fn.mode is False and y.grad_fn.inner_requires_grad is False


def test_needs_input_grad_and_non_tensor_arguments():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    w = eager.tensor([3.0, 4.0])
    y = MulConst.apply(x, w, 2.0)
    assert y.grad_fn.seen == (True, False, False)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 8.0] and w.grad is None


def test_function_saved_tensors_are_freed_and_version_checked():
    x = eager.tensor([1.0], requires_grad=True)
    y = Exp.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    y2 = Exp.apply(x)
    with eager.no_grad():
        y2.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.backward()


def test_function_without_grad_inputs_records_nothing():
    y = Exp.apply(eager.tensor([1.0]))
    assert not y.requires_grad and y.grad_fn is None
    with eager.no_grad():
        y = Exp.apply(eager.tensor([1.0], requires_grad=True))
    assert y.grad_fn is None


def test_mark_non_differentiable():
    class SortWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = eager.tensor(np.argsort(x.detach().numpy()))
            vals = x[idx]
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            ctx.n = x.shape[0]
            return vals, idx

        @staticmethod
        def backward(ctx, g_vals, g_idx):
            (idx,) = ctx.saved_tensors
            out = eager.zeros(ctx.n)
            out[idx] = g_vals
            return out

    x = eager.tensor([3.0, 1.0, 2.0], requires_grad=True)
    vals, idx = SortWithIndex.apply(x)
    assert vals.requires_grad and not idx.requires_grad
    (vals * eager.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [100.0, 1.0, 10.0]


def test_function_wrong_number_of_gradients():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = eager.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function TooManyBackward returned an incorrect number of gradients (expected 1, got 2)")):
        TooMany.apply(x).backward()
    assert x.grad is None


def test_function_wrong_gradient_shape():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return eager.ones(5)

    x = eager.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadShapeBackward returned an invalid gradient at index 0 - got [5] but expected shape "
            "compatible with [3]")):
        BadShape.apply(x).backward()


def test_function_gradient_for_a_non_tensor_input():
    class GradForConst(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        GradForConst.apply(eager.ones(1, requires_grad=True), 2.0).backward()


def test_function_double_backward_when_backward_uses_ops():
    x = eager.tensor([0.5, -0.2], dtype=eager.float64, requires_grad=True)
    (g,) = eager.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (gg,) = eager.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp([0.5, -0.2]))


def test_function_in_a_larger_graph_with_hooks():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x * 2)
    y.register_hook(lambda g: g * 0.5)
    (y * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([2.0, 4.0]), rtol=1e-6)


# -- gradcheck ------------------------------------------------------------------------------------
def test_gradcheck_passes_for_correct_gradients():
    x = eager.tensor(np.array([0.3, -0.8, 1.1]), requires_grad=True)
    w = eager.tensor(np.array([[0.5, 1.0, -1.0], [2.0, 0.1, 0.3]]), requires_grad=True)
    assert gradcheck(lambda x, w: (w @ x).tanh(), (x, w))
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(lambda x, w: (w @ x.sin()).sum() * x, (x, w))


class WrongExp(Exp):
    @staticmethod
    def backward(ctx, grad):
        return Exp.backward(ctx, grad) * 1.5  # wrong


def test_gradcheck_detects_a_wrong_backward():
    x = eager.tensor(np.array([0.3, -0.8]), requires_grad=True)
    assert gradcheck(WrongExp.apply, (x,), raise_exception=False) is False
    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongExp.apply, (x,))


def test_gradgradcheck_detects_a_wrong_double_backward():
    class NoDoubleGrad(Function):
        """Backward correct to first order, but built from detached values."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2

    x = eager.tensor(np.array([0.7, -1.3]), requires_grad=True)
    assert gradcheck(NoDoubleGrad.apply, (x,))
    assert gradgradcheck(NoDoubleGrad.apply, (x,), raise_exception=False) is False


def test_gradcheck_warns_for_float32_inputs():
    x = eager.tensor([0.5], requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision floating point"):
        gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2)
