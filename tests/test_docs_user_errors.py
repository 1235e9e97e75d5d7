"""What a user sees when eager refuses their shapes: one traceback (no NumPy traceback
before it, no "During handling of the above exception"), their own line in it, and the
message naming the op and both shapes, as PyTorch's does."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("eager.randn(3, 4) @ eager.randn(5, 6)", "RuntimeError: matmul: mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)"),
    ("eager.randn(3) + eager.randn(4)", "RuntimeError: add: The size of tensor a (3) must match the size of tensor b (4)"),
    ("eager.randn(3, 4).view(5)", "RuntimeError: reshape: shape '[5]' is invalid for input of size 12"),
    ("eager.cat([eager.randn(2, 3), eager.randn(2, 4)])", "RuntimeError: cat: Sizes of tensors must match"),
]


@pytest.mark.parametrize("line, message", CASES, ids=[c[0] for c in CASES])
def test_a_shape_error_prints_one_traceback_with_the_users_line(tmp_path, line, message):
    script = tmp_path / "user_script.py"
    script.write_text(f"import eager\n\n\ndef step():\n    return {line}\n\n\nstep()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRAPHMODE_EAGER_NATIVE="0")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    err = proc.stderr
    assert proc.returncode == 1
    assert err.count("Traceback (most recent call last)") == 1, err
    assert "During handling of the above exception" not in err and "direct cause" not in err, err
    assert f'"{script}", line 5, in step' in err  # the user's frame
    assert err.strip().splitlines()[-1].startswith(message), err
    assert "gufunc" not in err and "operands could not be broadcast" not in err, err  # NumPy's wording is gone
