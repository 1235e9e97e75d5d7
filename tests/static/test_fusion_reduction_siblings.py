"""fusion joins an elementwise reader of an input to an earlier reduction of that input (one
pass: batch norm's bias gradient sum(g) beside g * w and sum(g * xhat)), but only where every
reduction downstream of the reader reduces alike (static/passes/fusion.py, Fuser._reduces_alike)."""
from __future__ import annotations

import numpy as np

import eager
import static


def _fused(c, *args) -> list:
    return [n for n in c.ir(*args).nodes if n.op == "fused"]


def test_a_sum_and_its_sibling_chain_over_one_input_run_as_one_region():
    def f(g, w, xhat):
        return g.sum((0, 2)), g * w, (g * xhat).sum((0, 2))

    rng = np.random.default_rng(0)
    g, w, xhat = (eager.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((4, 3, 5), (1, 3, 1), (4, 3, 5)))
    c = static.compile(f, backend="numpy")
    for got, want in zip(c(g, w, xhat), f(g, w, xhat)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert len(_fused(c, g, w, xhat)) == 1
    assert not any(n.op == "sum" for n in c.ir(g, w, xhat).nodes)  # sum(g) inside the region, not a pass of its own


def test_sums_along_other_axes_keep_their_own_regions():
    def f(x):
        return x.sum(0), (x * 2.5).tanh().sum(1)

    x = eager.from_numpy(np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32))
    c = static.compile(f, backend="numpy")
    for got, want in zip(c(x), f(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    regions = _fused(c, x)
    # the chain and its own sum in one region: nothing of the chain's full size is written out
    assert any({n.op for n in r.body.nodes} >= {"mul", "tanh", "sum"} for r in regions)
