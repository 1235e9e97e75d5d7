"""The fast paths a transformer's training step takes in eager (the W5 GPT's backward), each
checked to run where it should and to give what the general path gives."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_dropout
from eager.nn import functional as F
from gmnative import build as native_build

needs_compiler = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


@needs_compiler
def test_dropout_stays_fused_once_static_is_imported():
    # importing static installs eager's draw hook for good: outside a trace the hook does not
    # answer, so dropout keeps its one native pass and node
    import static  # noqa: F401

    x = eager.randn(8, 16, requires_grad=True)
    y = F.dropout(x, 0.25)
    assert type(y.grad_fn) is _fused_dropout._MulCtx
    assert y.grad_fn.name() == "MulBackward0"


@needs_compiler
def test_dropout_inside_a_trace_is_still_replayed_per_call():
    import static

    x = eager.ones(64, 32)
    fn = static.compile(lambda t: F.dropout(t, 0.5), backend="numpy")
    eager.manual_seed(3)
    a = fn(x).numpy()
    b = fn(x).numpy()
    assert not np.array_equal(a, b)  # a draw per call, not a mask frozen into the graph
    eager.manual_seed(3)
    first = F.dropout(x, 0.5).numpy()  # eager draws the same first mask from the same seed
    np.testing.assert_array_equal(a, first)
