"""F.ctc_loss / nn.CTCLoss against PyTorch: values for every reduction, padded and
concatenated targets, repeated labels, impossible alignments (inf, or 0 with
zero_infinity), float32, unbatched input, and the gradients of both the log-probabilities
(PyTorch's convention) and the logits under them."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
T, N, C = 12, 4, 6
LOGITS = RNG.standard_normal((T, N, C))
TARGETS = RNG.integers(1, C, (N, 5))
TARGETS[1, 2] = TARGETS[1, 1]  # a repeated label needs a blank between its copies
INPUT_LENGTHS = [12, 10, 7, 3]
TARGET_LENGTHS = [5, 3, 2, 3]
TARGETS[3, :3] = [2, 2, 2]  # three equal labels need 5 steps: impossible in 3 (infinite loss)


def _run(lib, reduction, zero_infinity, concatenated=False, dtype="float64", module=False):
    x = lib.tensor(LOGITS, dtype=getattr(lib, dtype), requires_grad=True)
    lp = x.log_softmax(2)
    lp.retain_grad()
    if concatenated:
        targets = lib.tensor(np.concatenate([TARGETS[k, :TARGET_LENGTHS[k]] for k in range(N)]))
    else:
        targets = lib.tensor(TARGETS)
    args = (lp, targets, lib.tensor(INPUT_LENGTHS), lib.tensor(TARGET_LENGTHS))
    if module:
        loss = lib.nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(*args)
    else:
        loss = lib.nn.functional.ctc_loss(*args, reduction=reduction, zero_infinity=zero_infinity)
    finite = loss.sum() if zero_infinity else loss[:3].sum() if reduction == "none" else None
    if finite is not None:
        finite.backward()
        return loss.detach().numpy(), x.grad.numpy(), lp.grad.numpy()
    return loss.detach().numpy(), None, None


@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_pytorch(reduction, zero_infinity, concatenated):
    e = _run(eager, reduction, zero_infinity, concatenated)
    t = _run(torch, reduction, zero_infinity, concatenated)
    for a, b in zip(e, t):
        if a is None or b is None:
            assert a is b
            continue
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_ctc_loss_float32_and_module_match_pytorch():
    e = _run(eager, "mean", True, dtype="float32", module=True)
    t = _run(torch, "mean", True, dtype="float32", module=True)
    assert e[0].dtype == np.float32
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_ctc_loss_unbatched_matches_pytorch():
    out = []
    for lib in (eager, torch):
        x = lib.tensor(LOGITS[:, 0], requires_grad=True)
        loss = lib.nn.functional.ctc_loss(x.log_softmax(1), lib.tensor(TARGETS[0]), (12,), (5,))
        loss.backward()
        out.append((loss.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_ctc_loss_checks_the_lengths():
    lp = eager.tensor(LOGITS).log_softmax(2)
    with pytest.raises(RuntimeError, match="input_lengths to have value at most 12"):
        eager.nn.functional.ctc_loss(lp, eager.tensor(TARGETS), [13, 1, 1, 1], TARGET_LENGTHS)
