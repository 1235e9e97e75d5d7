"""Lazy modules against PyTorch: before the first call the weights are
UninitializedParameters an optimizer can already hold; the first call infers the input
size, draws the initial weights as the full layer would, keeps the same Parameter objects
and turns the module into that layer (class, repr, state_dict)."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _net(lib):
    nn = lib.nn
    return nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(),
                         nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2, bias=False))


def test_lazy_network_becomes_the_layers_pytorch_makes():
    summary = []
    for lib in (eager, torch):
        net = _net(lib)
        before = [type(p).__name__ for p in net.parameters()]
        assert repr(net[4]) == "LazyLinear(in_features=0, out_features=3, bias=True)"
        opt = lib.optim.SGD(net.parameters(), lr=0.1)
        held = [id(p) for g in opt.param_groups for p in g["params"]]
        y = net(lib.ones(2, 3, 5, 5))
        after = [type(m).__name__ for m in net]
        assert held == [id(p) for p in net.parameters()]  # the same objects, now materialized
        y.sum().backward()
        opt.step()
        summary.append((before, after, [tuple(p.shape) for p in net.parameters()], repr(net),
                        sorted(net.state_dict().keys()), tuple(y.shape)))
    assert summary[0] == summary[1]


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.LazyConv1d(3, 2, stride=2, bias=False), (2, 4, 9)),
    (lambda nn: nn.LazyConv3d(2, 2), (1, 3, 4, 4, 4)),
    (lambda nn: nn.LazyConvTranspose2d(3, 3, stride=2), (2, 4, 5, 5)),
    (lambda nn: nn.LazyConv2d(2, 3), (3, 6, 6)),  # unbatched: channels from dim 0
    (lambda nn: nn.LazyBatchNorm1d(affine=False), (4, 3)),
])
def test_each_lazy_layer_infers_its_size_like_pytorch(make, shape):
    got = []
    for lib in (eager, torch):
        m = make(lib.nn)
        y = m(lib.ones(*shape))
        got.append((type(m).__name__, repr(m), tuple(y.shape), [tuple(p.shape) for p in m.parameters()]))
    assert got[0] == got[1]


def test_lazy_linear_draws_like_linear():
    eager.manual_seed(3)
    lazy = eager.nn.LazyLinear(4)
    lazy(eager.ones(2, 5))
    eager.manual_seed(3)
    full = eager.nn.Linear(5, 4)
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), full.weight.detach().numpy())
    assert isinstance(eager.nn.UninitializedParameter(), eager.nn.Parameter)
    assert eager.nn.parameter.UninitializedParameter is eager.nn.UninitializedParameter
