"""The differential suite's access to PyTorch, the oracle.

PyTorch is never a dependency of graphmode: without it these tests skip, except under
CI=true, where `.ci/run` installs the pinned CPU build and a missing torch fails the run
(a skipped oracle would pass CI without comparing anything)."""
from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def torch():
    try:
        import torch as real_torch  # noqa: PLC0415
    except ImportError as exc:
        if in_ci():
            pytest.fail(f"CI=true but PyTorch cannot be imported ({exc}): the oracle suite must run in CI; "
                        ".ci/run installs it with `pip install torch==2.13.0`", pytrace=False)
        pytest.skip("PyTorch is not installed; the differential suite needs it (pip install torch==2.13.0)")
    return real_torch
