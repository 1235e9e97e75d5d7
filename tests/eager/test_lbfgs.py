"""optim.LBFGS against PyTorch's, step by step: the parameters, the returned loss and the
closure-call count after each step, with a fixed step and with the strong-Wolfe line
search, in float64 and float32, and state_dict round trips."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _problem(lib, dtype: str, seed: int = 0, rosenbrock: bool = True):
    """Two parameters of a small least-squares + Rosenbrock-like objective, and the loss."""
    rng = np.random.default_rng(seed)
    A, y = rng.standard_normal((12, 4)), rng.standard_normal(12)
    w0, b0 = rng.standard_normal(4) * 0.5, np.array([1.5, -0.7])
    dt = getattr(lib, dtype)
    w = lib.tensor(w0, dtype=dt, requires_grad=True)
    b = lib.tensor(b0, dtype=dt, requires_grad=True)
    At, yt = lib.tensor(A, dtype=dt), lib.tensor(y, dtype=dt)

    def loss_fn():
        r = At @ w + b.sum() - yt
        loss = (r * r).mean() + (1 - b[0]) ** 2
        return loss + 100 * (b[1] - b[0] ** 2) ** 2 if rosenbrock else loss + (b[1] - b[0]) ** 2

    return [w, b], loss_fn


def _closure(opt, loss_fn, calls: list):
    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    return closure


def _run(lib, dtype: str, steps: int, rosenbrock: bool = True, **kw):
    params, loss_fn = _problem(lib, dtype, rosenbrock=rosenbrock)
    opt = lib.optim.LBFGS(params, **kw)
    calls: list = []
    closure = _closure(opt, loss_fn, calls)
    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        out.append((float(loss.detach()), len(calls), np.concatenate([p.detach().numpy().ravel() for p in params])))
    return out, opt


def _compare(e, t, rtol):
    for (le, ce, pe), (lt, ct, pt) in zip(e, t):
        assert ce == ct
        np.testing.assert_allclose(le, lt, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(pe, pt, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("kw", [dict(lr=0.1, max_iter=5), dict(lr=1, max_iter=4, history_size=3),
                                dict(line_search_fn="strong_wolfe"),
                                dict(line_search_fn="strong_wolfe", max_iter=7, history_size=2, lr=0.8)],
                         ids=["fixed", "fixed-short-history", "strong_wolfe", "strong_wolfe-short-history"])
def test_lbfgs_matches_pytorch_step_by_step_float64(kw):
    e, opt_e = _run(eager, "float64", 6, **kw)
    t, opt_t = _run(torch, "float64", 6, **kw)
    _compare(e, t, 1e-9)
    se, st = opt_e.state[opt_e._params[0]], opt_t.state[opt_t._params[0]]
    assert se["func_evals"] == st["func_evals"] and se["n_iter"] == st["n_iter"]
    assert len(se["old_dirs"]) == len(st["old_dirs"])


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_matches_pytorch_in_float32(ls):
    # a well-conditioned problem stopped by max_iter well before convergence: float32
    # rounding (reduction order) then changes no branch, and the iterates agree to float32
    # precision (near the optimum the tolerance tests compare last bits)
    kw = dict(line_search_fn=ls, lr=0.5 if ls is None else 1, max_iter=3)
    e, _ = _run(eager, "float32", 2, False, **kw)
    t, _ = _run(torch, "float32", 2, False, **kw)
    assert all(p.dtype == np.float32 for _, _, p in e)
    _compare(e, t, 2e-4)


def test_strong_wolfe_converges_on_the_problem():
    e, _ = _run(eager, "float64", 8, line_search_fn="strong_wolfe")
    assert e[-1][0] < 0.5 * e[0][0]


def test_lbfgs_state_dict_round_trip_continues_the_same_iterates():
    whole, _ = _run(eager, "float64", 4, line_search_fn="strong_wolfe", history_size=5)
    params, loss_fn = _problem(eager, "float64")
    opt = eager.optim.LBFGS(params, line_search_fn="strong_wolfe", history_size=5)
    for _ in range(2):
        opt.step(_closure(opt, loss_fn, []))
    saved = opt.state_dict()
    assert saved["param_groups"][0]["line_search_fn"] == "strong_wolfe"
    params2, loss_fn2 = _problem(eager, "float64")
    with eager.no_grad():
        for p, q in zip(params2, params):
            p.copy_(q)
    opt2 = eager.optim.LBFGS(params2, line_search_fn="strong_wolfe", history_size=5)
    opt2.load_state_dict(saved)
    for i in range(2, 4):
        loss = opt2.step(_closure(opt2, loss_fn2, []))
        np.testing.assert_allclose(float(loss), whole[i][0], rtol=1e-12)
    np.testing.assert_allclose(np.concatenate([p.detach().numpy().ravel() for p in params2]), whole[3][2],
                               rtol=1e-12)


def test_lbfgs_rejects_what_pytorch_rejects():
    w = eager.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="per-parameter options"):
        eager.optim.LBFGS([{"params": [w]}, {"params": [eager.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        eager.optim.LBFGS([w], lr=-1)
    opt_bad = eager.optim.LBFGS([w], line_search_fn="backtracking")

    def closure():
        opt_bad.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="strong_wolfe"):
        opt_bad.step(closure)
    with pytest.raises(TypeError):
        opt_bad.step()  # type: ignore[call-arg]


def test_lbfgs_stops_at_once_at_an_optimum():
    w = eager.ones(3, requires_grad=True)
    opt_here = eager.optim.LBFGS([w])
    calls = []

    def closure():
        calls.append(1)
        opt_here.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    assert float(opt_here.step(closure)) == 0.0
    assert len(calls) == 1
