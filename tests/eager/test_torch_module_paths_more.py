"""What PyTorch scripts import and call beyond the ops: the loss bases and their legacy
arguments, the private bases isinstance checks name, autograd.Variable, torch.cuda as a
package (torch.cuda.amp), torch.jit's decorators, torch.random.fork_rng and the numeric
constants; each checked against PyTorch where it is installed."""
from __future__ import annotations

import inspect
import math
import warnings

import pytest

import eager


def test_loss_modules_take_pytorchs_arguments_in_pytorchs_order():
    torch = pytest.importorskip("torch")
    for name in [n for n in dir(torch.nn) if n.endswith("Loss") and hasattr(eager.nn, n)]:
        theirs = list(inspect.signature(getattr(torch.nn, name).__init__).parameters)
        ours = list(inspect.signature(getattr(eager.nn, name).__init__).parameters)
        assert ours == theirs, name
        assert [b.__name__ for b in getattr(eager.nn, name).__mro__[1:3]] == \
            [b.__name__ for b in getattr(torch.nn, name).__mro__[1:3]], name


@pytest.mark.parametrize("size_average, reduce, expected", [(False, None, "sum"), (None, False, "none"),
                                                            (True, True, "mean")])
def test_legacy_size_average_and_reduce_decide_the_reduction_with_pytorchs_warning(size_average, reduce, expected):
    with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
        loss = eager.nn.MSELoss(size_average=size_average, reduce=reduce)
    assert loss.reduction == expected
    x, y = eager.tensor([1.0, 2.0]), eager.tensor([0.0, 0.0])
    assert loss(x, y).tolist() == {"sum": 5.0, "none": [1.0, 4.0], "mean": 2.5}[expected]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert eager.nn.CrossEntropyLoss(None, None, 3).ignore_index == 3  # positional, as PyTorch's order


def test_a_users_loss_subclasses_the_private_bases():
    from eager.nn._reduction import get_enum
    from eager.nn.modules.loss import _Loss, _WeightedLoss

    class Weighted(_WeightedLoss):
        def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
            super().__init__(weight, size_average, reduce, reduction)

        def forward(self, a, b):
            d = (a - b) ** 2 * self.weight
            return d.sum() if self.reduction == "sum" else d.mean()

    loss = Weighted(eager.tensor([1.0, 3.0]), reduction="sum")
    assert isinstance(loss, _Loss) and list(loss.state_dict()) == ["weight"]
    assert loss(eager.ones(2), eager.zeros(2)).item() == 4.0 and get_enum("sum") == 2
    assert isinstance(eager.nn.CrossEntropyLoss(), _WeightedLoss) and isinstance(eager.nn.MSELoss(), _Loss)


def test_the_private_module_bases_isinstance_checks_name():
    from eager.nn.modules.batchnorm import _BatchNorm, _NormBase
    from eager.nn.modules.conv import _ConvNd
    from eager.nn.modules.dropout import _DropoutNd
    from eager.nn.modules.instancenorm import _InstanceNorm
    from eager.nn.modules.pooling import _MaxPoolNd

    assert isinstance(eager.nn.BatchNorm2d(3), _BatchNorm) and isinstance(eager.nn.BatchNorm1d(3), _NormBase)
    assert isinstance(eager.nn.Conv2d(1, 2, 3), _ConvNd) and isinstance(eager.nn.InstanceNorm2d(2), _InstanceNorm)
    assert all(isinstance(m, _DropoutNd) for m in (eager.nn.Dropout(), eager.nn.Dropout2d()))
    assert isinstance(eager.nn.MaxPool2d(2), _MaxPoolNd)


def test_variable_wraps_as_pytorchs_does():
    from eager.autograd import Variable

    t = eager.ones(2)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and not t.requires_grad and v.grad_fn is None
    assert isinstance(t, Variable) and not isinstance([1], Variable)
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    v.data.add_(1)
    assert t.tolist() == [2.0, 2.0]  # the same memory
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1, 2])


def test_cuda_is_a_package_answering_as_pytorchs_cpu_build():
    import eager.cuda
    import eager.cuda.amp
    from eager.cuda.amp import GradScaler, autocast  # noqa: F401

    if eager.cuda.is_available():
        pytest.skip("a GPU answers here: the CPU build's answers do not apply")
    assert eager.cuda.device_count() == 0 and eager.cuda.memory_allocated() == 0
    assert eager.cuda.max_memory_allocated() == 0 and not eager.cuda.is_initialized()
    eager.cuda.empty_cache()
    eager.cuda.manual_seed_all(0)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        eager.cuda.current_device()
    with pytest.warns(FutureWarning, match="torch.amp.autocast"):
        eager.cuda.amp.autocast(enabled=False)


def test_jit_decorators_give_the_python_back():
    @eager.jit.script
    def double(x):
        return x * 2

    assert double(eager.ones(2)).tolist() == [2.0, 2.0] and not eager.jit.is_scripting()
    model = eager.nn.Linear(2, 2)
    assert eager.jit.trace(model, eager.ones(1, 2)) is model and eager.jit.script(model) is model

    @eager.jit.ignore(drop=True)
    def helper():
        return 1

    assert helper() == 1 and eager.jit.unused(helper) is helper
    with pytest.raises(NotImplementedError, match="eager.save"):
        eager.jit.save(model, "model.pt")


def test_fork_rng_restores_the_stream_and_the_constants():
    eager.manual_seed(0)
    with eager.random.fork_rng():
        inside = eager.rand(3).tolist()
    assert eager.rand(3).tolist() == inside
    assert (eager.pi, eager.e, eager.inf) == (math.pi, math.e, math.inf) and math.isnan(eager.nan)
    assert isinstance(eager.random.seed(), int)


def test_once_differentiable_runs_once_and_refuses_a_second_differentiation():
    from eager.autograd.function import once_differentiable

    class Square(eager.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = eager.ones(2, requires_grad=True)
    Square.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    z = (Square.apply(x) * x).sum()  # the backward's incoming gradient (x) requires grad
    (g,) = eager.autograd.grad(z, x, create_graph=True)
    assert g.tolist() == [3.0, 3.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()


def test_stack_module_state_feeds_vmap_over_an_ensemble():
    models = [eager.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = eager.func.stack_module_state(models)
    assert {k: tuple(v.shape) for k, v in params.items()} == {"weight": (4, 2, 3), "bias": (4, 2)}
    assert all(v.is_leaf and v.requires_grad for v in params.values()) and buffers == {}
    base = eager.nn.Linear(3, 2)
    x = eager.randn(5, 3)
    out = eager.vmap(lambda p, x: eager.func.functional_call(base, p, (x,)), in_dims=(0, None))(params, x)
    for k, m in enumerate(models):
        assert eager.allclose(out[k], m(x), atol=1e-6)
    with pytest.raises(RuntimeError, match="same class"):
        eager.func.stack_module_state([eager.nn.Linear(3, 2), eager.nn.Identity()])


def test_save_on_cpu_keeps_the_values_and_saved_tensors_hooks_says_it_is_unsupported():
    x = eager.ones(2, requires_grad=True)
    with eager.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(NotImplementedError, match="saved_tensors_hooks"):
        eager.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


@pytest.mark.parametrize("bidirectional, layers, batch_first", [(False, 1, False), (True, 2, True)])
def test_lstm_with_a_projection_matches_pytorch(bidirectional, layers, batch_first):
    torch = pytest.importorskip("torch")
    import numpy as np

    torch.manual_seed(0)
    kw = dict(num_layers=layers, proj_size=3, bidirectional=bidirectional, batch_first=batch_first)
    theirs, ours = torch.nn.LSTM(5, 6, **kw), eager.nn.LSTM(5, 6, **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict()) and repr(ours) == repr(theirs)
    ours.load_state_dict({k: eager.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 7, 5)).astype(np.float32)
    tx, ex = torch.tensor(x, requires_grad=True), eager.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch: projections are not supported by oneDNN)
        to, (th, tc) = theirs(tx)
    eo, (eh, ec) = ours(ex)
    for a, b in ((eo, to), (eh, th), (ec, tc)):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-6)
    (to.sum() + th.sum()).backward()
    (eo.sum() + eh.sum()).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-5)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        eager.nn.LSTM(5, 6, proj_size=6)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        eager.nn.GRU(5, 6, proj_size=2)
