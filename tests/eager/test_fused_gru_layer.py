"""nn.GRU's fused layer (eager/nn/_fused_rnn.py: one node per direction over the sequence)
against PyTorch and against the step-by-step loop it replaces: outputs, final states and
every gradient, uni- and bidirectional, stacked, batch_first, without biases, float32 and
float64; finite differences and second derivatives through it; where the loop still runs."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_cells, _fused_rnn
from gmnative import build as native_build

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

CASES = [  # (bidirectional, layers, batch_first, bias, dtype)
    (False, 1, True, True, np.float64),
    (True, 2, False, True, np.float64),
    (False, 2, True, False, np.float32),
    (True, 1, True, True, np.float32),
]


def _data(batch_first, layers, dirs, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 6, 5) if batch_first else (6, 3, 5)).astype(dtype)
    h0 = rng.standard_normal((layers * dirs, 3, 7)).astype(dtype)
    return x, h0


def _run(m, x, h0, g, gh):
    ex, eh = eager.tensor(x, requires_grad=True), eager.tensor(h0, requires_grad=True)
    out, hn = m(ex, eh)
    eager.autograd.backward([out, hn], [eager.tensor(g), eager.tensor(gh)])
    grads = [ex.grad.numpy(), eh.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    return out, [out.detach().numpy(), hn.detach().numpy()], grads


@pytest.mark.parametrize("bidirectional, layers, batch_first, bias, dtype", CASES)
def test_fused_gru_layer_matches_pytorch_and_the_step_loop(monkeypatch, bidirectional, layers, batch_first, bias,
                                                           dtype):
    torch = pytest.importorskip("torch")
    eager.manual_seed(0)
    m = eager.nn.GRU(5, 7, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias)
    m = m.double() if dtype == np.float64 else m
    tm = torch.nn.GRU(5, 7, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias)
    tm = tm.to(torch.float64 if dtype == np.float64 else torch.float32)
    tm.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in m.state_dict().items()})
    dirs = 2 if bidirectional else 1
    x, h0 = _data(batch_first, layers, dirs, dtype)
    rng = np.random.default_rng(2)
    out_shape = (3, 6, 7 * dirs) if batch_first else (6, 3, 7 * dirs)
    g = rng.standard_normal(out_shape).astype(dtype)
    gh = rng.standard_normal(h0.shape).astype(dtype)

    calls = []
    real = _fused_rnn.GRULayerFunction.apply
    monkeypatch.setattr(_fused_rnn.GRULayerFunction, "apply", lambda *a: calls.append(1) or real(*a))
    _, got, got_grads = _run(m, x, h0, g, gh)
    assert len(calls) == layers * dirs, "the fused layer did not run"
    monkeypatch.setattr(_fused_rnn, "eligible", lambda *a: False)
    _, loop, loop_grads = _run(m, x, h0, g, gh)

    tx, th = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    tout, thn = tm(tx, th)
    torch.autograd.backward([tout, thn], [torch.tensor(g), torch.tensor(gh)])
    want = [tout.detach().numpy(), thn.detach().numpy()]
    want_grads = [tx.grad.numpy(), th.grad.numpy()] + [p.grad.numpy() for p in tm.parameters()]

    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    for a, b, c in zip(got + got_grads, loop + loop_grads, want + want_grads):
        assert a.dtype == dtype and a.shape == c.shape
        np.testing.assert_allclose(a, b, **tol)
        np.testing.assert_allclose(a, c, **tol)


def test_fused_gru_layer_gradients_match_finite_differences_and_second_order():
    eager.manual_seed(1)
    m = eager.nn.GRU(3, 4, batch_first=True).double()
    x = eager.tensor(np.random.default_rng(3).standard_normal((2, 4, 3)), requires_grad=True)
    h0 = eager.tensor(np.random.default_rng(4).standard_normal((1, 2, 4)), requires_grad=True)
    assert eager.autograd.gradcheck(lambda a, b: m(a, b)[0], (x, h0))
    assert eager.autograd.gradcheck(lambda a, b: m(a, b)[1], (x, h0))
    assert eager.autograd.gradgradcheck(lambda a, b: m(a, b)[1], (x, h0))


def test_the_step_loop_runs_where_the_fused_layer_cannot(monkeypatch):
    eager.manual_seed(2)
    m = eager.nn.GRU(3, 4)
    x = eager.randn(5, 2, 3)
    monkeypatch.setattr(_fused_cells, "_native_cells", False)  # no native kernels
    assert not _fused_rnn.eligible(x[:, 0:1], eager.zeros(1, 4), m.weight_ih_l0)
    out, h = m(x)
    assert tuple(out.shape) == (5, 2, 4) and tuple(h.shape) == (1, 2, 4)
    monkeypatch.undo()
    unbatched_out, _ = m(x[:, 0])  # (T, E): no batch dimension
    np.testing.assert_allclose(unbatched_out.detach().numpy(), m(x)[0][:, 0].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not _fused_rnn.eligible(x.double(), eager.zeros(2, 4), m.weight_ih_l0)  # mixed dtypes
