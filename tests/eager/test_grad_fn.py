"""grad_fn nodes: PyTorch's names, next_functions, AccumulateGrad, and the tensor reprs."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager


def _x(*shape):
    return eager.randn(*shape, requires_grad=True)


def _pos(*shape):
    return eager.rand(*shape).add_(0.5).requires_grad_()


NAMES = [
    ("AddBackward0", lambda: _x(3) + _x(3)),
    ("AddBackward0", lambda: _x(3) + 2),
    ("AddBackward0", lambda: 2 + _x(3)),
    ("SubBackward0", lambda: _x(3) - _x(3)),
    ("SubBackward0", lambda: _x(3) - 2),
    ("RsubBackward1", lambda: 2 - _x(3)),
    ("MulBackward0", lambda: _x(3) * _x(3)),
    ("MulBackward0", lambda: 2 * _x(3)),
    ("DivBackward0", lambda: _x(3) / 2),
    ("DivBackward0", lambda: 2 / _x(3)),
    ("NegBackward0", lambda: -_x(3)),
    ("PowBackward0", lambda: _x(3) ** 2),
    ("PowBackward1", lambda: _pos(3) ** _x(3)),
    ("PowBackward2", lambda: 2 ** _x(3)),
    ("ExpBackward0", lambda: _x(3).exp()),
    ("LogBackward0", lambda: eager.log(_pos(3))),
    ("SqrtBackward0", lambda: _pos(3).sqrt()),
    ("SinBackward0", lambda: eager.sin(_x(3))),
    ("CosBackward0", lambda: eager.cos(_x(3))),
    ("AbsBackward0", lambda: _x(3).abs()),
    ("SumBackward0", lambda: _x(3).sum()),
    ("SumBackward1", lambda: _x(2, 3).sum(dim=1)),
    ("SumBackward1", lambda: _x(2, 3).sum(0, keepdim=True)),
    ("MeanBackward0", lambda: _x(3).mean()),
    ("MeanBackward1", lambda: _x(2, 3).mean(1)),
    ("MmBackward0", lambda: _x(2, 3) @ _x(3, 4)),
    ("MmBackward0", lambda: eager.mm(_x(2, 3), _x(3, 4))),
    ("MvBackward0", lambda: _x(2, 3) @ _x(3)),
    ("DotBackward0", lambda: _x(3) @ _x(3)),
    ("BmmBackward0", lambda: eager.bmm(_x(2, 2, 3), _x(2, 3, 4))),
    ("UnsafeViewBackward0", lambda: eager.matmul(_x(2, 2, 3), _x(2, 3, 4))),  # PyTorch's matmul folds the batch
    ("TanhBackward0", lambda: _x(3).tanh()),
    ("SigmoidBackward0", lambda: eager.sigmoid(_x(3))),
    ("ReluBackward0", lambda: eager.relu(_x(3))),
    ("ViewBackward0", lambda: _x(2, 3).view(6)),
    ("ViewBackward0", lambda: _x(2, 3).reshape(3, 2)),
    ("ViewBackward0", lambda: _x(2, 3).flatten()),
    ("TransposeBackward0", lambda: _x(2, 3).transpose(0, 1)),
    ("TBackward0", lambda: _x(2, 3).t()),
    ("PermuteBackward0", lambda: _x(2, 3, 4).permute(2, 0, 1)),
    ("ExpandBackward0", lambda: _x(3, 1).expand(3, 4)),
    ("UnsqueezeBackward0", lambda: _x(3).unsqueeze(0)),
    ("SqueezeBackward0", lambda: _x(3, 1).squeeze()),
    ("SqueezeBackward1", lambda: _x(3, 1).squeeze(1)),
    ("SelectBackward0", lambda: _x(3, 2)[0]),
    ("SliceBackward0", lambda: _x(4)[1:3]),
    ("IndexBackward0", lambda: _x(4)[eager.tensor([0, 2])]),
    ("CatBackward0", lambda: eager.cat([_x(2), _x(3)])),
    ("StackBackward0", lambda: eager.stack([_x(2), _x(2)])),
    ("CloneBackward0", lambda: _x(3).clone()),
    ("ToCopyBackward0", lambda: _x(3).double()),
    ("MaxBackward1", lambda: _x(3).max()),
    ("MaxBackward0", lambda: _x(2, 3).max(dim=1)[0]),
    ("SoftmaxBackward0", lambda: eager.softmax(_x(2, 3), dim=1)),
    ("LogSoftmaxBackward0", lambda: eager.log_softmax(_x(2, 3), dim=1)),
    ("WhereBackward0", lambda: eager.where(eager.tensor([True, False]), _x(2), _x(2))),
    ("MaximumBackward0", lambda: eager.maximum(_x(3), _x(3))),
    ("ClampBackward1", lambda: _x(3).clamp(-0.5, 0.5)),
    ("NllLossBackward0", lambda: eager.nn.functional.cross_entropy(_x(4, 5), eager.tensor([1, 0, 2, 3]))),
    ("NllLossBackward0", lambda: eager.nn.functional.cross_entropy(_x(4, 5), eager.tensor([1, 0, 2, 3]),
                                                                   ignore_index=0, reduction="sum")),
    ("NllLossBackward0", lambda: eager.nn.functional.nll_loss(_x(4, 5), eager.tensor([1, 0, 2, 3]), reduction="none")),
]


@pytest.mark.parametrize("name, make", NAMES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NAMES)])
def test_grad_fn_names(name, make):
    out = make()
    assert out.grad_fn.name() == name
    assert repr(out.grad_fn).startswith(f"<{name} object at 0x")


def test_leaves_and_constants_in_next_functions():
    a = _x(3)
    b = _x(3)
    c = a * b
    (f0, n0), (f1, n1) = c.grad_fn.next_functions
    assert f0.name() == "torch::autograd::AccumulateGrad" and f1.name() == "torch::autograd::AccumulateGrad"
    assert f0.variable is a and f1.variable is b and n0 == 0 and n1 == 0
    assert repr(f0).startswith("<AccumulateGrad object at 0x")
    assert (a * 2).grad_fn.next_functions[1] == (None, 0)
    assert (a * eager.ones(3)).grad_fn.next_functions[1] == (None, 0)
    # one AccumulateGrad per leaf, shared by all its uses
    assert (a + 1).grad_fn.next_functions[0][0] is f0
    assert f0.next_functions == ()


def test_next_functions_chain_the_graph():
    """The tutorial's graph: d = w3*b + w4*c with b = w1*a, c = w2*a."""
    a, w1, w2, w3, w4 = (_x(3, 3) for _ in range(5))
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    L = 10 - d
    assert L.grad_fn.name() == "RsubBackward1"
    add = L.grad_fn.next_functions[0][0]
    assert add is d.grad_fn and add.name() == "AddBackward0"
    m1, m2 = (f for f, _ in add.next_functions)
    assert m1.name() == m2.name() == "MulBackward0"
    assert m1.next_functions[1][0] is b.grad_fn
    assert b.grad_fn.next_functions[1][0].variable is a
    assert c.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]


def test_multi_output_next_functions_carry_the_output_number():
    x = _x(6)
    parts = x.split(2)
    y = parts[2] * 2
    assert y.grad_fn.next_functions[0] == (parts[0].grad_fn, 2)
    assert parts[0].grad_fn is parts[2].grad_fn


def test_no_grad_fn_without_requires_grad_or_under_no_grad():
    assert (eager.ones(3) * 2).grad_fn is None
    x = _x(3)
    with eager.no_grad():
        assert (x * 2).grad_fn is None
        assert not (x * 2).requires_grad
    assert (x > 0).grad_fn is None and not (x > 0).requires_grad
    assert x.argmax().grad_fn is None


# -- reprs ----------------------------------------------------------------------------------------
def test_reprs_show_grad_fn_and_requires_grad():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    y = x * 2
    assert repr(y) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(y.sum()) == "tensor(6., grad_fn=<SumBackward0>)"
    assert repr(y.detach()) == "tensor([2., 4.])"
    assert str(y) == repr(y)


@pytest.mark.parametrize("t, text", [
    (lambda: eager.tensor([0.5, 1.25]), "tensor([0.5000, 1.2500])"),
    (lambda: eager.tensor(3.5), "tensor(3.5000)"),
    (lambda: eager.tensor([1, 2]), "tensor([1, 2])"),
    (lambda: eager.tensor([True, False]), "tensor([ True, False])"),
    (lambda: eager.tensor([1.0, 2.0], dtype=eager.float64), "tensor([1., 2.], dtype=eager.float64)"),
    (lambda: eager.zeros(2, 2), "tensor([[0., 0.],\n        [0., 0.]])"),
    (lambda: eager.tensor([1, 2], dtype=eager.int32), "tensor([1, 2], dtype=eager.int32)"),
    (lambda: eager.tensor([-1.5, 2.0]), "tensor([-1.5000,  2.0000])"),
    (lambda: eager.tensor([]), "tensor([])"),
])
def test_value_reprs(t, text):
    assert repr(t()) == text


def test_repr_of_the_tutorial_loss():
    x = eager.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    loss = x ** 2 - 5
    assert loss.grad_fn.name() == "SubBackward0"
    assert repr(loss) == "tensor([-4., -1.,  4., 11., 20.], grad_fn=<SubBackward0>)"
    assert re.fullmatch(r"<SubBackward0 object at 0x[0-9a-f]+>", repr(loss.grad_fn))


def test_grad_fn_is_the_node_the_engine_runs():
    x = _x(3)
    y = x.exp()
    seen = []
    y.grad_fn.register_prehook(lambda grads: seen.append(grads))
    y.sum().backward()
    assert len(seen) == 1 and isinstance(seen[0], tuple) and len(seen[0]) == 1
    assert seen[0][0].tolist() == [1.0, 1.0, 1.0]
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-6)


def test_node_hooks_see_and_may_replace_gradients():
    x = _x(3)
    y = x * 2
    calls = []
    h = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: calls.append((gi, go)))
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]
    (gi,), (go,) = calls[0][0][:1], calls[0][1]
    assert gi.tolist() == [20.0] * 3 and go.tolist() == [10.0] * 3
    h.remove()
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_view_and_reshape_to_the_same_shape_make_new_nodes():
    x = _x(2, 3)
    for y in (x.view(2, 3), x.reshape(2, 3), x.expand(2, 3)):
        assert y is not x and not y.is_leaf
    assert x.view(2, 3).grad_fn.name() == "ViewBackward0"
    assert x.expand(2, 3).grad_fn.name() == "ExpandBackward0"
    assert x.T.grad_fn.name() == "PermuteBackward0" and x.mT.grad_fn.name() == "TransposeBackward0"
