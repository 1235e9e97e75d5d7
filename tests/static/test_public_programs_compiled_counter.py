"""`torch._dynamo.testing.CompileCounter` across `torch._dynamo.reset()`, as PyTorch's tests use
it: the counter only grows (a reset forgets the compiled entries, not what was counted), the
next compile adds to it, and clear() starts again from zero."""
from __future__ import annotations

import eager
from eager._dynamo.testing import CompileCounter


def test_reset_keeps_what_the_counter_counted():
    counter = CompileCounter()
    f = eager.compile(lambda x: x.sin() + 1, backend=counter)
    f(eager.ones(2))
    frames, ops = counter.frame_count, counter.op_count
    assert frames == 1 and ops > 0
    eager._dynamo.reset()
    assert (counter.frame_count, counter.op_count) == (frames, ops)
    f(eager.ones(2))  # traced again after the reset: one more frame
    assert (counter.frame_count, counter.op_count) == (2 * frames, 2 * ops)
    counter.clear()
    assert (counter.frame_count, counter.op_count) == (0, 0)
    f(eager.ones(2, 3))
    assert counter.frame_count == 1


def test_fullgraph_failure_is_torch_dynamo_exc_unsupported():
    import pytest  # noqa: PLC0415

    def branchy(x):
        if x.sum() > 0:  # a branch on data: no single graph
            return x * 2
        return x

    with pytest.raises(eager._dynamo.exc.Unsupported) as info:
        eager.compile(branchy, fullgraph=True)(eager.ones(2))
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, eager._dynamo.exc.TorchDynamoException)
    assert "branch" in str(info.value)
