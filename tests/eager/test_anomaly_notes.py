"""What anomaly mode adds to an error (the failing node and its forward line) reaches the user
on every supported Python: as a note where the traceback printer shows notes (3.11+), folded
into the message on 3.10, whose printer does not show `__notes__`."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eager.autograd import anomaly

ROOT = Path(__file__).resolve().parents[2]

FAILING = textwrap.dedent("""
    import eager
    from eager.autograd import detect_anomaly

    with detect_anomaly():
        x = eager.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()  # the forward line of the failing node
        y.add_(1.0)
        y.sum().backward()
""")


def test_an_uncaught_anomaly_error_prints_the_failing_node_and_its_forward_line(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "GRAPHMODE_NATIVE": "0", "PATH": ""})
    assert run.returncode == 1
    assert "modified by an inplace operation" in run.stderr
    assert "Error detected in ExpBackward0" in run.stderr
    assert "y = x.exp()  # the forward line of the failing node" in run.stderr


class _NoAddNote(RuntimeError):
    """An exception as Python 3.10 makes them: no add_note."""

    def __getattribute__(self, name: str):
        if name == "add_note":
            raise AttributeError(name)
        return super().__getattribute__(name)


class _Node:
    _trace = None

    def name(self) -> str:
        return "ExpBackward0"


def test_without_add_note_the_note_is_kept_and_folded_into_the_message():
    exc = _NoAddNote("one of the variables needed for gradient computation has been modified")
    anomaly.annotate(exc, _Node())
    assert len(exc.__notes__) == 1 and exc.__notes__[0].startswith("Error detected in ExpBackward0")
    assert str(exc).startswith("one of the variables needed")
    assert "Error detected in ExpBackward0" in str(exc)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exceptions have add_note from Python 3.11")
def test_with_add_note_the_message_stays_pytorchs():
    exc = RuntimeError("the message")
    anomaly.annotate(exc, _Node())
    assert str(exc) == "the message"
    assert exc.__notes__[0].startswith("Error detected in ExpBackward0")
