"""Rematerialization leaves ops whose record says they are costly (erf, exact gelu) to the
forward: the backward reads their saved result and never computes them again."""
import numpy as np
import pytest
from test_pass_remat_memory import _joint

import eager
from eager.nn import functional as F
from static.passes import optimize_joint
from static.passes.remat import _recomputable


def _fused_ops(graph) -> list:
    ops = []
    for n in graph.nodes:
        ops += _fused_ops(n.body) if n.body is not None else [n.op]
    return ops


@pytest.mark.parametrize("fn", [lambda x, w: (F.gelu(x) * w).sum(), lambda x, w: (eager.erf(x) * w).sum()],
                         ids=["gelu", "erf"])
def test_costly_ops_run_in_the_forward_only(fn):
    joint, primal, seeds = _joint(fn, (1000,), (1000,))
    split, stats = optimize_joint(joint, primal, seeds, 1, [])
    backward_ops = _fused_ops(split.backward)
    assert "gelu" not in backward_ops and "erf" not in backward_ops, backward_ops


def test_costly_flag_is_what_stops_recomputation():
    joint, _, _ = _joint(lambda x: F.gelu(x).sum(), (10,))
    gelu = next(n for n in joint.nodes if n.op == "gelu")
    assert not _recomputable(gelu)
    tanh_gelu = _joint(lambda x: eager.tanh(x).sum(), (10,))[0]
    assert _recomputable(next(n for n in tanh_gelu.nodes if n.op == "tanh"))


def test_compiled_gelu_gradient_matches_eager():
    import static

    x = eager.tensor(np.linspace(-3, 3, 50), requires_grad=True)
    w = eager.tensor(np.cos(np.arange(50.0)))

    def f(x, w):
        return (F.gelu(x) * w).sum()

    f(x, w).backward()
    expected = x.grad.numpy().copy()
    x.grad = None
    static.compile(f)(x, w).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_a_convolution_backward_reads_the_saved_windows():
    """A convolution's unfold (kh*kw copies of its image) is saved, not run again by the
    backward: recomputing it is a pass writing the whole copy, which the forward already
    wrote (W6's drop-in fwd+bwd, eager/compiled 0.87 -> 0.93x). A reshape or a permute, no
    larger than what it reads, is still recomputed."""
    joint, primal, seeds = _joint(lambda x, w: (F.conv2d(x, w, padding=1) ** 2).sum(), (2, 3, 6, 6), (4, 3, 3, 3))
    split, _ = optimize_joint(joint, primal, seeds, 1, [])
    assert "unfold" in _fused_ops(split.forward)
    assert "unfold" not in _fused_ops(split.backward), _fused_ops(split.backward)
    unfold = next(n for n in joint.nodes if n.op == "unfold")
    assert not _recomputable(unfold)
    permute = next((n for n in joint.nodes if n.op in ("permute", "transpose")), None)
    if permute is not None:
        assert _recomputable(permute)
