"""Sampling code of public programs under `torch.compile`: nanoGPT's top-k filter and
`torch.multinomial` inside a generate loop of growing length. The function breaks at its
first statement (a Python check on a traced value), so no compiled piece comes before the
break: the call's arguments must still reach the Python piece bound by name, with defaults,
as the function binds them (they once arrived in call order where the piece wanted them
sorted by name). Compared with eager under the same seed on the NumPy and native backends."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F


def _sample(logits, top_k=3, temperature=1.0):
    v, _ = eager.topk(logits, min(top_k, logits.size(-1)))
    logits = logits / temperature
    logits[logits < v[:, [-1]] / temperature] = -float("inf")
    probs = F.softmax(logits, dim=-1)
    return eager.multinomial(probs, num_samples=1)


def _generate(sample, steps=6):
    eager.manual_seed(0)
    table = eager.randn(7, 7)
    idx = eager.zeros(2, 1, dtype=eager.long)
    for i in range(steps):
        logits = table[idx[:, -1]] * (i + 1)
        nxt = sample(logits) if i % 2 else sample(logits, 2, temperature=0.8)
        idx = eager.cat([idx, nxt], dim=1)  # the sequence grows each step
    return idx.tolist()


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_topk_multinomial_generate_loop_matches_eager(backend):
    want = _generate(_sample)
    got = _generate(eager.compile(_sample, backend=backend))
    assert got == want


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_break_at_the_first_statement_binds_arguments_by_name(backend):
    def f(z, a, scale=2.0):
        if a.sum() > 0:  # breaks at once: nothing compiled before it
            return z * scale - a
        return z + a

    compiled = eager.compile(f, backend=backend)
    z, a = eager.arange(3.0), eager.ones(3)
    np.testing.assert_array_equal(compiled(z, a).numpy(), f(z, a).numpy())
    np.testing.assert_array_equal(compiled(z, -a, 0.5).numpy(), f(z, -a, 0.5).numpy())
    np.testing.assert_array_equal(compiled(z, a, scale=3.0).numpy(), f(z, a, scale=3.0).numpy())
