"""fusion reads `expand(x)` as x where its pointwise readers broadcast it anyway
(static/passes/fusion.py _broadcast_expands, _sink_expand): no expanded copy is made, the
values are eager's, and an expand something else reads (a graph output, a reduction) stays."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_an_expanded_scalar_read_by_pointwise_ops_is_broadcast(backend):
    def f(x, s):
        return (-(s.expand(8)).exp()) * x + 1.0

    x = eager.from_numpy(np.linspace(-2, 2, 8).astype(np.float32))
    s = eager.tensor(0.25)
    c = static.compile(f, backend=backend)
    np.testing.assert_allclose(c(x, s).numpy(), f(x, s).numpy(), rtol=1e-6, atol=1e-6)  # (a fused multiply-add)
    assert not any(n.op == "expand" for n in c.ir(x, s).nodes)


def test_an_expand_returned_or_reduced_is_kept():
    def f(x, s):
        e = s.expand(4, 3)
        return e, (e * x).sum(), e.sum(0)

    x = eager.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    s = eager.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    c = static.compile(f, backend="numpy")
    for got, want in zip(c(x, s), f(x, s)):
        np.testing.assert_allclose(got.numpy(), want.numpy())
        assert got.shape == want.shape
    assert any(n.op == "expand" for n in c.ir(x, s).nodes)
