"""geometric_, log_normal_ and cauchy_ (their distributions, dtypes, argument errors, a
compiled function drawing afresh each call) and torch.norm's p='nuc' against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static


def test_the_fills_draw_their_distributions():
    eager.manual_seed(0)
    g = eager.empty(200000).geometric_(0.3)
    assert g.min().item() == 1.0 and abs(g.mean().item() - 1 / 0.3) < 0.03
    assert np.array_equal(g.numpy(), np.round(g.numpy()))
    logs = eager.empty(200000, dtype=eager.float64).log_normal_(0.5, 0.25).log()
    assert abs(logs.mean().item() - 0.5) < 0.01 and abs(logs.std().item() - 0.25) < 0.01
    c = eager.empty(200000).cauchy_(1.0, 2.0)
    assert abs(c.median().item() - 1.0) < 0.05 and abs((c - 1).abs().median().item() - 2.0) < 0.05
    t = eager.zeros(4, dtype=eager.float64)
    assert t.cauchy_() is t and t.dtype is eager.float64


def test_the_fills_check_their_arguments():
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in"):
        eager.empty(2).geometric_(1.5)
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        eager.empty(2).log_normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        eager.empty(2).cauchy_(0.0, 0.0)


def test_a_compiled_fill_draws_afresh_each_call():
    f = static.compile(lambda x: x.clone().cauchy_() + x.clone().log_normal_() + x.clone().geometric_(0.5))
    a, b = f(eager.zeros(5)), f(eager.zeros(5))
    assert not np.array_equal(a.numpy(), b.numpy())


def test_nuclear_norm_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    for dim, keepdim in (((1, 2), False), ((0, 2), True)):
        ours = eager.norm(eager.from_numpy(x), p="nuc", dim=dim, keepdim=keepdim)
        theirs = torch.norm(torch.from_numpy(x), p="nuc", dim=dim, keepdim=keepdim)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eager.norm(eager.from_numpy(x[0]), p="nuc").item(),
                               torch.norm(torch.from_numpy(x[0]), p="nuc").item(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="two dims"):
        eager.norm(eager.from_numpy(x), p="nuc")
