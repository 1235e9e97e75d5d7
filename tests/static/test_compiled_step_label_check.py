"""A compiled classifier training step (forward, cross-entropy, backward, SGD with momentum:
the W5/W6 shape of step) checks its labels: an out-of-range label raises eager's IndexError
with eager's message from the compiled step on both CPU backends, before any parameter or
optimizer state is written, and a step with good labels after it gives eager's values.

Why a test of its own: the label chain of a compiled step (the ignore mask, the range check,
the gather of the picked log-probabilities and the one-hot scatter of their gradient) is what
the generators fuse and reorder for speed; the check must survive every such change."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn

N, D, C = 6, 5, 4
MESSAGE = r"^Target out of bounds: class indices must lie in \[0, 4\)$"


def _setup(seed: int = 0):
    eager.manual_seed(seed)
    model = nn.Sequential(nn.Linear(D, 8), nn.ReLU(), nn.Linear(8, C))
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, step


def _batch(labels):
    x = eager.tensor(np.linspace(-1.0, 1.0, N * D, dtype=np.float32).reshape(N, D))
    return x, eager.tensor(np.array(labels, dtype=np.int64))


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("bad", [[0, 1, 2, 3, 4, 0], [0, -1, 2, 3, 1, 0], [-7, 9, 0, 0, 0, 0]])
def test_out_of_range_label_raises_from_compiled_step(backend, bad):
    model, step = _setup()
    ref_model, ref_step = _setup()
    compiled = static.compile(step, backend=backend)
    good = [0, 1, 2, 3, 1, 0]
    for _ in range(2):  # traced, then the cached compiled call
        got, want = compiled(*_batch(good)), ref_step(*_batch(good))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    with pytest.raises(IndexError, match=MESSAGE):
        ref_step(*_batch(bad))
    with pytest.raises(IndexError, match=MESSAGE):
        compiled(*_batch(bad))
    for p, b in zip(model.parameters(), before):  # the failed step wrote no parameter
        np.testing.assert_array_equal(p.detach().numpy(), b)
    got = compiled(*_batch(good))  # and the next good step is eager's
    ref_params = [p.detach().numpy().copy() for p in ref_model.parameters()]
    for p, b in zip(before, ref_params):
        np.testing.assert_allclose(p, b, rtol=1e-5, atol=1e-6)
    want = ref_step(*_batch(good))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_native_step_checks_labels_in_c_and_raises_only_on_its_flag():
    """The native module checks the labels in one C pass (codegen/native_gen/range_check.py),
    called with the region that makes them; the op's runtime function (NumPy's min and max)
    runs only under the flag's test, where it raises eager's error."""
    _, step = _setup()
    compiled = static.compile(step, backend="native")
    x, y = _batch([0, 1, 2, 3, 1, 0])
    compiled(x, y)
    src = compiled.source(x, y)
    assert "gm_check" in src
    lines = src.splitlines()
    calls = [i for i, line in enumerate(lines) if "_rt.check_index_range(" in line and not line.lstrip().startswith("#")]
    assert calls, "the raising branch is missing"
    for i in calls:
        assert lines[i - 1].lstrip().startswith("if ") and "_bad" in lines[i - 1], lines[i - 1]
