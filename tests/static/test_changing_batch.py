"""A batch dimension that changes: the last, smaller batch of an epoch compiles one more
signature (at most two for a whole training run), and a size that keeps changing stops at the
retrace limit with a warning naming the dimension and the remedy."""
import warnings

import numpy as np
import pytest
from training_steps import mse, training_step

import eager
import eager.nn as nn
import static


def _batches(n: int, batch: int, epochs: int = 2):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = rng.standard_normal((n, 1)).astype(np.float32)
    for _ in range(epochs):
        for i in range(0, n, batch):  # the last batch holds the rest (DataLoader's drop_last=False)
            yield eager.tensor(x[i:i + batch]), eager.tensor(y[i:i + batch])


def test_the_last_smaller_batch_of_each_epoch_compiles_once_more():
    eager.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = eager.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = static.compile(training_step(model, opt, mse))
    eager.manual_seed(0)
    ref = nn.Linear(4, 1)
    ref_step = training_step(ref, eager.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9), mse)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no retrace warning in a whole run
        for x, y in _batches(100, 32, epochs=3):  # 32, 32, 32, 4 per epoch
            np.testing.assert_allclose(step(x, y).item(), ref_step(x, y).item(), rtol=1e-5)
    assert len(step._cache) == 2
    assert step.retraces == ["argument leaf 0 changed shape (32, 4) -> (4, 4) (dimension 0: 32 -> 4)"]


def test_a_length_that_keeps_changing_warns_naming_the_dimension_and_the_remedy():
    f = static.compile(lambda x: (x * 2).sum(), max_retraces=2, dynamic=False)  # automatic: one symbolic trace
    for t in (3, 4, 5):
        f(eager.ones(2, t))
    with pytest.warns(RuntimeWarning) as record:
        f(eager.ones(2, 6))
    message = str(record[0].message)
    assert "dimension 1: 5 -> 6" in message
    assert "pad" in message and "drop_last" in message
