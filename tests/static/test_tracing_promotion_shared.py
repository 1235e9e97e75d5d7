"""Promotion and the half-in-float32 rule are one function for eager and static's tracer
(eager._apply_run.half_in_float32 / needs_promotion): a traced program computes float16
mul/div beside a scalar as eager and PyTorch do, at float32 precision, rounded once."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from eager import _dispatch


def _half(values):
    return eager.tensor(np.array(values, np.float16))


@pytest.mark.parametrize("fn", [
    lambda x: x / 100000,  # 1e5 is inf in float16: divided at float32 precision it is not
    lambda x: x * 1e-5,
    lambda x: 100000 * x,
    lambda x: x / eager.tensor(1e5),  # a 0-d float32 tensor beside float16
    lambda x: x + 1e-4,  # add rounds the scalar to float16 first, in PyTorch too
])
def test_a_traced_float16_op_beside_a_scalar_gives_eagers_bits(fn):
    x = _half([1.0, 2.0, 3.0, -0.5])
    want = fn(x)
    got = static.compile(fn, backend="interpret")(x)
    assert got.dtype is eager.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_rule_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.array([1.0, 2.0, 3.0], np.float16)
    want = (torch.from_numpy(x) / 100000).numpy()
    np.testing.assert_array_equal((eager.tensor(x) / 100000).numpy(), want)
    np.testing.assert_array_equal(static.compile(lambda t: t / 100000, backend="interpret")(eager.tensor(x)).numpy(),
                                  want)


def test_eagers_general_path_applies_the_rule_too():
    # a dispatch mode that passes every op on sends it through eager.apply, not the scan
    x = _half([1.0, 2.0])
    with _dispatch.dispatch_mode(lambda op, operands, attrs: _dispatch.apply(op, operands, attrs)):
        got = x / 100000
    np.testing.assert_array_equal(got.numpy(), (x / 100000).numpy())
    assert np.all(got.numpy() > 0)


def test_one_dtype_beside_numbers_records_no_cast():
    graph = static.trace(lambda a, b: a * 2 + b, eager.ones(3, dtype=eager.int64), eager.ones(3, dtype=eager.int64))
    text = str(graph)
    assert "to_dtype" not in text and "mul" in text
