"""Grad modes: no_grad, enable_grad, set_grad_enabled (context and decorator), thread-locality."""
from __future__ import annotations

import threading

import pytest

import eager


def _x():
    return eager.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_records_nothing_and_restores():
    x = _x()
    assert eager.is_grad_enabled()
    with eager.no_grad():
        assert not eager.is_grad_enabled()
        y = x * 2
    assert eager.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    z = x * 2
    assert z.requires_grad


def test_no_grad_restores_after_an_exception():
    with pytest.raises(ValueError):
        with eager.no_grad():
            raise ValueError("boom")
    assert eager.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = _x()
    with eager.no_grad():
        with eager.enable_grad():
            assert eager.is_grad_enabled()
            y = x * 2
        assert not eager.is_grad_enabled()
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"


def test_no_grad_and_enable_grad_as_decorators():
    x = _x()

    @eager.no_grad()
    def infer(t):
        assert not eager.is_grad_enabled()
        return t * 2

    @eager.enable_grad()
    def train(t):
        return t * 2

    assert not infer(x).requires_grad
    with eager.no_grad():
        assert train(x).requires_grad
        assert not eager.is_grad_enabled()
    assert infer.__name__ == "infer"


def test_no_grad_decorator_without_parentheses():
    @eager.no_grad
    def infer(t):
        return t * 2

    assert not infer(_x()).requires_grad
    assert eager.is_grad_enabled()


def test_set_grad_enabled_as_function_context_and_decorator():
    x = _x()
    eager.set_grad_enabled(False)
    try:
        assert not eager.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        eager.set_grad_enabled(True)
    assert eager.is_grad_enabled()

    with eager.set_grad_enabled(False):
        assert not eager.is_grad_enabled()
        with eager.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not eager.is_grad_enabled()
    assert eager.is_grad_enabled()

    @eager.set_grad_enabled(False)
    def f(t):
        assert not eager.is_grad_enabled()
        return t * 2

    assert eager.is_grad_enabled()  # decorating does not change the mode
    assert not f(x).requires_grad
    assert eager.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = eager.is_grad_enabled()
        seen["requires_grad"] = (_x() * 2).requires_grad
        with eager.no_grad():
            seen["inner"] = eager.is_grad_enabled()

    with eager.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not eager.is_grad_enabled()
    assert seen == {"enabled": True, "requires_grad": True, "inner": False}
    assert eager.is_grad_enabled()


def test_backward_works_on_a_graph_built_before_no_grad():
    x = _x()
    y = (x * x).sum()
    with eager.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_inference_mode_is_accepted():
    x = _x()
    with eager.inference_mode():
        assert not (x * 2).requires_grad
    assert eager.is_grad_enabled()


def test_no_grad_in_a_training_loop_update():
    w = eager.tensor([0.0], requires_grad=True)
    for _ in range(50):
        loss = ((w - 3.0) ** 2).sum()
        loss.backward()
        with eager.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
    assert w.item() == pytest.approx(3.0, abs=1e-3)
    assert w.is_leaf and w.requires_grad
