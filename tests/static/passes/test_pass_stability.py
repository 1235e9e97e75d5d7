"""Stability rewrites, and that they make a float32 computation finite."""
import numpy as np
import pytest
from passcheck import check, run

import eager
import static


@pytest.mark.parametrize("body,expected", [
    ("%0 = softmax %x {dim = 0} : f32[4]\n  %1 = log %0 : f32[4]", "log_softmax %x {dim = 0}"),
    ("%0 = exp %x : f32[4]\n  %s = sum %0 {dims = [0], keepdim = true} : f32[1]\n  %1 = log %s : f32[1]",
     "logsumexp %x {dims = [0], keepdim = true}"),
    ("%0 = sigmoid %x : f32[4]\n  %1 = log %0 : f32[4]", "softplus"),
    ("%0 = add %x, 1.0 : f32[4]\n  %1 = log %0 : f32[4]", "log1p %x"),
    ("%0 = exp %x : f32[4]\n  %1 = sub %0, 1 : f32[4]", "expm1 %x"),
])
def test_rewrite(body, expected):
    result_type = "f32[1]" if "sum" in body else "f32[4]"
    out, stats = run("stability", f"func @f(%x: f32[4]) -> {result_type} {{\n  {body}\n  return %1\n}}")
    assert stats["rewritten"] == 1
    check(out, f"CHECK: {expected}")


def naive_log_softmax(x):
    e = eager.exp(x)
    return eager.log(e / e.sum(0, keepdim=True))


def naive_log_sigmoid(x):
    return eager.log(eager.sigmoid(x))


@pytest.mark.parametrize("fn", [naive_log_softmax, naive_log_sigmoid, lambda x: eager.log(eager.softmax(x, 0))])
def test_compiled_is_finite_where_naive_is_not(fn):
    x = np.array([-200.0, 0.5, 90.0], dtype=np.float32)
    with np.errstate(all="ignore"):
        naive = fn(eager.tensor(x)).numpy()
    assert not np.all(np.isfinite(naive))
    compiled = static.compile(fn)(x)
    assert np.all(np.isfinite(compiled))
    grad = static.grad(lambda v: fn(v).sum())(x)
    assert np.all(np.isfinite(grad))
    # against float64 eager, where the naive form is still fine
    ref = fn(eager.tensor(x.astype(np.float64)))
    finite = np.isfinite(ref.numpy())
    assert np.allclose(compiled[finite], ref.numpy()[finite], rtol=1e-5, atol=1e-5)
