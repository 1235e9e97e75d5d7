"""The post-trace cache: a second compile of the same traced graph skips passes and codegen."""
import numpy as np
import pytest

import eager
import static
import static.passes
from static import trace_cache

X = eager.tensor(np.random.default_rng(0).standard_normal((4, 3)))
W = eager.tensor(np.random.default_rng(1).standard_normal((3, 2)), requires_grad=True)


def f(x):
    return (eager.tanh(x @ W) * 2.0).sum()


@pytest.fixture
def count_passes(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GRAPHMODE_CACHE", "1")
    trace_cache.clear_memory()
    calls = []
    real = static.passes.run_passes

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(static.passes, "run_passes", counting)
    yield calls
    trace_cache.clear_memory()


@pytest.mark.parametrize("with_grad", [False, True])
def test_a_fresh_compiled_object_of_the_same_function_runs_no_passes(count_passes, with_grad):
    W.requires_grad_(with_grad)
    try:
        first = static.compile(f)
        expected = first(X)
        assert count_passes  # built: the passes ran
        count_passes.clear()
        second = static.compile(f)
        got = second(X)
        assert count_passes == []  # an in-memory hit
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy())
        if with_grad:
            got.backward()
            g = W.grad.numpy().copy()
            W.grad = None
            expected.backward()
            np.testing.assert_allclose(g, W.grad.numpy())
            W.grad = None
        trace_cache.clear_memory()  # a new process: the disk part answers
        third = static.compile(f)
        out = third(X)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy())
        assert count_passes == []
        assert trace_cache.STATS["disk_hits"] >= 1
        if with_grad:  # the backward parsed back from the disk record runs as built
            out.backward()
            np.testing.assert_allclose(W.grad.numpy(), g)
    finally:
        W.requires_grad_(True)
        W.grad = None


def test_other_options_are_another_key(count_passes):
    W.requires_grad_(False)
    try:
        static.compile(f)(X)
        count_passes.clear()
        static.compile(f, opt_level=1)(X)
        assert count_passes  # built again: the options are part of the key
    finally:
        W.requires_grad_(True)
