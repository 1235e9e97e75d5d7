"""A compiled function that reads a tensor's data in Python (`.item()`, `float(t)`, `.tolist()`,
NumPy's conversion) bakes what it read into the graph. Such a read of a tensor from outside the
function becomes a guard on its values (a change retraces, as Dynamo guards a Python read), and
a read of a tensor the same call has already updated in place is refused: its new value exists
only when the graph runs, and the value seen while tracing would be the one before the call."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import eager
import static
from static.errors import TraceError


def _traces(caplog) -> int:
    return sum("graphmode.recompiles" == r.name for r in caplog.records)


@pytest.mark.parametrize("read", [lambda c: c.item(), lambda c: float(c), lambda c: c.tolist(),
                                  lambda c: float(np.asarray(c)), lambda c: c.numpy().item()])
def test_a_read_of_a_captured_tensor_is_guarded_so_a_changed_value_retraces(read):
    scale = eager.tensor(2.0)

    def f(x):
        return x * read(scale)

    compiled = static.compile(f)
    x = eager.tensor([1.0, 2.0])
    assert compiled(x).tolist() == f(x).tolist() == [2.0, 4.0]
    scale.fill_(5.0)
    assert compiled(x).tolist() == f(x).tolist() == [5.0, 10.0]
    scale.copy_(eager.tensor(2.0))
    assert compiled(x).tolist() == [2.0, 4.0]


def test_an_unchanged_value_does_not_retrace_nan_included(caplog):
    for value in (3.0, float("nan")):
        c = eager.tensor(value)
        compiled = static.compile(lambda x, c=c: x + c.item())
        x = eager.ones(2)
        with caplog.at_level(logging.DEBUG, logger="graphmode.recompiles"):
            caplog.clear()
            for _ in range(3):
                compiled(x)
            first = _traces(caplog)
            compiled(x)
            assert _traces(caplog) == first  # no retrace once the value stayed the same (NaN == NaN here)


def test_a_read_after_an_in_place_update_in_the_same_call_is_refused():
    counter = eager.tensor(0.0)

    def f(x):
        counter.add_(1)
        return x * counter.item()

    with pytest.raises(TraceError, match=r"\.item\(\) of .*updated in place earlier in the same call"):
        static.compile(f)(eager.ones(2))
    assert counter.item() == 0.0  # the failed trace changed nothing


def test_a_tensor_made_inside_the_function_is_a_constant():
    def f(x):
        k = eager.tensor(3.0)
        return x * k.item()

    assert static.compile(f)(eager.ones(2)).tolist() == [3.0, 3.0]


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_batch_norm_with_a_cumulative_average_compiles_equal_to_eager(backend):
    """BatchNorm(momentum=None) averages over all batches seen: its factor 1 / num_batches_tracked
    changes every step, so the compiled step must read the count when it runs."""
    if backend == "native":
        from codegen import native_build  # noqa: PLC0415

        if not native_build.availability()[0]:
            pytest.skip("no C++ compiler")
    eager.manual_seed(0)
    compiled_bn, eager_bn = eager.nn.BatchNorm2d(3, momentum=None), eager.nn.BatchNorm2d(3, momentum=None)
    step = static.compile(lambda x: compiled_bn(x).sum(), backend=backend)
    for i in range(4):
        x = eager.randn(4, 3, 5, 5) * (i + 1) + i
        np.testing.assert_allclose(step(x).item(), eager_bn(x).sum().item(), rtol=1e-4, atol=1e-3)
    assert compiled_bn.num_batches_tracked.item() == eager_bn.num_batches_tracked.item() == 4
    np.testing.assert_allclose(compiled_bn.running_mean.numpy(), eager_bn.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(compiled_bn.running_var.numpy(), eager_bn.running_var.numpy(), rtol=1e-5)
