"""static.compile(model) for an eager.nn.Module, and compiled functions that call modules:
parameters and buffers are implicit inputs read at call time (optimizer steps, rebinding,
load_state_dict), gradients reach them through CompiledFunctionBackward, and the training
mode is part of the signature."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

nn = pytest.importorskip("eager.nn")
optim = pytest.importorskip("eager.optim")


def _mlp(seed=0):
    eager.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


X = eager.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))
T = eager.tensor([0, 1, 2, 0, 1, 2])


def test_compiled_module_forward_equals_eager_and_parameters_are_named_inputs():
    model = _mlp()
    cm = static.compile(model)
    np.testing.assert_allclose(cm(X).detach().numpy(), model(X).detach().numpy(), rtol=1e-6)
    names = [v.name for v in cm.ir(X).inputs]
    assert names == ["input", "0.weight", "0.bias", "2.weight", "2.bias"]
    assert str(static.parse_ir(str(cm.ir(X)))) == str(cm.ir(X))


def test_compiled_module_in_an_eager_training_loop_matches_eager():
    losses = {}
    finals = {}
    for mode in ("eager", "compiled"):
        model = _mlp(1)
        run = static.compile(model) if mode == "compiled" else model
        opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        losses[mode] = []
        for _ in range(4):
            opt.zero_grad()
            loss = loss_fn(run(X), T)
            loss.backward()
            opt.step()
            losses[mode].append(loss.item())
        finals[mode] = [p.detach().numpy().copy() for p in model.parameters()]
        if mode == "compiled":
            assert run.retraces == [] and len(run._cache) == 1  # optimizer steps are in place: no retrace
    np.testing.assert_allclose(losses["compiled"], losses["eager"], rtol=1e-5)
    for a, b in zip(finals["compiled"], finals["eager"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_compiled_loss_function_calling_a_global_module():
    model = _mlp(2)

    onehot = eager.tensor(np.eye(3, dtype=np.float32)[T.numpy()])

    def cross_entropy(logits, target):
        return -(target * eager.log_softmax(logits, dim=1)).sum(1).mean()

    @static.compile
    def loss(x, t):
        return cross_entropy(model(x), t)

    out = loss(X, onehot)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    cross_entropy(model(X), onehot).backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_frozen_parameters_get_no_gradient():
    model = _mlp(3)
    cm = static.compile(model)
    cm(X).sum().backward()
    model.zero_grad()
    model[0].weight.requires_grad_(False)
    cm(X).sum().backward()
    assert model[0].weight.grad is None and model[2].weight.grad is not None
    assert len(cm._cache) == 1  # same signature; a second split for the new set of differentiated inputs


def test_parameters_rebound_or_loaded_are_read_at_call_time():
    model = _mlp(4)
    cm = static.compile(model)
    cm(X)
    other = _mlp(5)
    model.load_state_dict(other.state_dict())
    np.testing.assert_allclose(cm(X).detach().numpy(), other(X).detach().numpy(), rtol=1e-6)
    model[2].bias = nn.Parameter(eager.full((3,), 7.0))  # a new Parameter object
    with eager.no_grad():
        expected = model(X).numpy()
    np.testing.assert_allclose(cm(X).detach().numpy(), expected, rtol=1e-6)
    assert cm.retraces == []


def test_parameter_update_inside_the_compiled_function_is_written_back():
    model = _mlp(6)
    params = list(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    loss_fn(model(X), T).backward()
    expected = [(p - 0.5 * p.grad).detach().numpy() for p in params]

    @static.compile
    def sgd_step(lr):
        with eager.no_grad():
            for p in model.parameters():
                p -= lr * p.grad

    sgd_step(0.5)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-6)


class Counter(nn.Module):
    """A module with a buffer updated in forward (like running statistics)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("seen", eager.zeros(()))

    def forward(self, x):
        with eager.no_grad():
            self.seen += x.shape[0]
        return self.lin(x)


def test_buffer_updates_in_forward_are_written_back():
    m = Counter()
    cm = static.compile(m)
    cm(eager.ones(3, 2))
    cm(eager.ones(3, 2))
    assert m.seen.item() == 6.0
    assert "seen" in [v.name for v in cm.ir(eager.ones(3, 2)).inputs]


def test_training_mode_is_part_of_the_signature_and_dropout_must_not_be_frozen():
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    cm = static.compile(model)
    eager.manual_seed(1)
    expected = model(X).detach().numpy()
    eager.manual_seed(1)
    np.testing.assert_allclose(cm(X).detach().numpy(), expected, rtol=1e-6)  # the mask eager draws, per call
    model.eval()
    np.testing.assert_allclose(cm(X).detach().numpy(), model(X).detach().numpy(), rtol=1e-6)
    model.train()
    model[1].p = 0.0
    cm(X)
    assert cm.retraces == ["the module's training mode changed", "attribute 'p' of module Dropout changed 0.5 -> 0.0"]


def test_cross_entropy_with_a_traced_target():
    model = _mlp(7)
    static.compile(lambda x, t: nn.functional.cross_entropy(model(x), t))(X, T)
