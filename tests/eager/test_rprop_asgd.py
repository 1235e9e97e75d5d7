"""optim.Rprop and optim.ASGD against PyTorch's, step by step (parameters and state),
in float64 and float32, with parameter groups, maximize and a state_dict round trip."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _run(lib, name, kw, dtype, steps=15):
    rng = np.random.default_rng(0)
    A, y = rng.standard_normal((10, 4)), rng.standard_normal(10)
    dt = getattr(lib, dtype)
    w = lib.tensor(rng.standard_normal(4), dtype=dt, requires_grad=True)
    b = lib.tensor(rng.standard_normal(1), dtype=dt, requires_grad=True)
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.02}], **kw)
    At, yt = lib.tensor(A, dtype=dt), lib.tensor(y, dtype=dt)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        r = At @ w + b - yt
        loss = (r * r).mean() + (w * w).sum() * 0.01
        (-loss if kw.get("maximize") else loss).backward()
        opt.step()
        state = opt.state[w]
        extra = [state[k].detach().numpy().copy() for k in ("step_size", "prev", "ax") if k in state]
        extra += [np.float64(state[k].item()) for k in ("eta", "mu") if k in state]
        out.append([w.detach().numpy().copy(), b.detach().numpy().copy(), *extra])
    return out, opt


CASES = [("Rprop", {}), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
         ("Rprop", dict(maximize=True)), ("ASGD", {}), ("ASGD", dict(lr=0.05, t0=5, lambd=1e-2, weight_decay=0.1)),
         ("ASGD", dict(t0=3, alpha=0.5, maximize=True))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_matches_pytorch_step_by_step(name, kw, dtype):
    (e, _), (t, _) = _run(eager, name, kw, dtype), _run(torch, name, kw, dtype)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
    for se, st in zip(e, t):
        for a, b in zip(se, st):
            np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("name", ["Rprop", "ASGD"])
def test_state_dict_round_trip(name):
    _, opt = _run(eager, name, {}, "float64", steps=3)
    saved = opt.state_dict()
    _, opt2 = _run(eager, name, {}, "float64", steps=1)
    opt2.load_state_dict(saved)
    assert opt2.state_dict()["state"][0]["step"] == 3


def test_bad_arguments_raise_like_pytorch():
    w = [eager.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid eta values"):
        eager.optim.Rprop(w, etas=(1.2, 0.5))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        eager.optim.ASGD(w, lr=-1.0)


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_on_an_embedding_matches_pytorch(maximize):
    """PyTorch's SparseAdam reads Embedding(sparse=True)'s sparse gradient; eager's embedding
    gradient is dense, and SparseAdam updates the rows it touches: the same parameters."""
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((8, 3))
    batches = [np.array([[1, 3, 3], [0, 5, 1]]), np.array([[2, 2, 7]]), np.array([[1, 6, 6], [3, 3, 0]])]
    out = []
    for lib in (eager, torch):
        emb = lib.nn.Embedding(8, 3, sparse=True).double()
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w0))
        opt = lib.optim.SparseAdam(emb.parameters(), lr=0.05, maximize=maximize)
        for idx in batches * 3:
            opt.zero_grad()
            (emb(lib.tensor(idx)) ** 2).sum().backward()
            opt.step()
        state = opt.state[emb.weight]
        out.append((emb.weight.detach().numpy().copy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        eager.optim.SparseAdam([eager.zeros(2, requires_grad=True)], lr=0.0)
