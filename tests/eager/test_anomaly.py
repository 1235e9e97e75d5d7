"""Anomaly mode: a failing backward names its node and the forward line that created it;
a NaN produced in backward is an error naming the node; off, neither happens."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
from eager.autograd import detect_anomaly, set_detect_anomaly


def _notes(exc: BaseException) -> str:
    return "".join(getattr(exc, "__notes__", []))


@pytest.fixture(autouse=True)
def _anomaly_off_afterwards():
    yield
    set_detect_anomaly(False)


def _modified_saved_output():
    """exp saves its output; changing it in place makes ExpBackward0 fail in backward."""
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()  # forward line of the failing node
    y.add_(1.0)
    return y.sum()


def test_failing_backward_names_the_node_and_the_forward_line():
    with detect_anomaly():
        loss = _modified_saved_output()
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            loss.backward()
    notes = _notes(info.value)
    assert "Error detected in ExpBackward0" in notes
    assert "y = x.exp()  # forward line of the failing node" in notes
    assert "_modified_saved_output" in notes and __file__ in notes


def test_set_detect_anomaly_true_works_outside_a_with_block():
    set_detect_anomaly(True)
    assert eager.autograd.anomaly.is_anomaly_enabled()
    loss = _modified_saved_output()
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    assert "ExpBackward0" in _notes(info.value)
    set_detect_anomaly(False)
    assert not eager.autograd.anomaly.is_anomaly_enabled()


def test_set_detect_anomaly_as_a_context_restores_the_mode():
    with set_detect_anomaly(True):
        assert eager.autograd.anomaly.is_anomaly_enabled()
    assert not eager.autograd.anomaly.is_anomaly_enabled()


def test_without_anomaly_mode_there_is_no_forward_trace():
    loss = _modified_saved_output()
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        loss.backward()
    assert "Error detected in" not in _notes(info.value)


def test_nan_from_an_infinite_gradient_times_zero_names_the_node():
    # sqrt'(0) = inf; the multiplication by 0 before it turns inf into inf * 0 = nan
    x = eager.tensor(0.0, requires_grad=True)
    with detect_anomaly():
        y = (x * 0).sqrt()
        with pytest.raises(RuntimeError) as info:
            y.backward()
    # PyTorch's message; on Python 3.10 anomaly mode's note follows it on the next lines
    assert str(info.value).split("\n")[0] == "Function 'MulBackward0' returned nan values in its 0th output."
    assert "Error detected in MulBackward0" in _notes(info.value)
    assert "y = (x * 0).sqrt()" in _notes(info.value)


def test_nan_from_sqrt_of_a_negative_number_names_sqrt():
    x = eager.tensor([-1.0, 4.0], requires_grad=True)
    with detect_anomaly(), np.errstate(invalid="ignore"):
        y = x.sqrt().sum()
        with pytest.raises(RuntimeError) as info:
            y.backward()
    # PyTorch's message; on Python 3.10 anomaly mode's note follows it on the next lines
    assert str(info.value).split("\n")[0] == "Function 'SqrtBackward0' returned nan values in its 0th output."


def test_nan_passes_silently_without_anomaly_mode():
    x = eager.tensor(0.0, requires_grad=True)
    (x * 0).sqrt().backward()
    assert math.isnan(x.grad.item())


def test_detect_anomaly_as_a_decorator():
    @detect_anomaly()
    def run():
        assert eager.autograd.anomaly.is_anomaly_enabled()
        x = eager.tensor([-1.0], requires_grad=True)
        with np.errstate(invalid="ignore"):
            x.sqrt().sum().backward()

    with pytest.raises(RuntimeError, match="SqrtBackward0"):
        run()
    assert not eager.autograd.anomaly.is_anomaly_enabled()


def test_correct_graphs_are_unaffected():
    x = eager.tensor([1.0, 4.0], requires_grad=True)
    with detect_anomaly():
        (x.sqrt() * x).sum().backward()
    assert x.grad.tolist() == pytest.approx([1.5, 3.0])
