"""The suite-wide settings of tests/conftest.py: a deterministic hypothesis profile and a
private, empty code cache for every test."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from codegen import cache

_SEEN: list = []


@pytest.mark.skipif(os.environ.get("GRAPHMODE_HYPOTHESIS_PROFILE", "deterministic") != "deterministic",
                    reason="another hypothesis profile was asked for")
def test_hypothesis_profile_is_deterministic():
    current = settings()
    assert current.derandomize is True
    assert current.database is None
    assert current.deadline is None


@pytest.mark.parametrize("run", range(2))
def test_every_test_has_its_own_empty_code_cache(run, tmp_path_factory):
    where = cache.configured_dir()
    assert Path(os.environ["GRAPHMODE_CACHE_DIR"]) == where
    assert where.is_relative_to(tmp_path_factory.getbasetemp())
    assert not list(where.glob("gm_*.py"))
    assert where not in _SEEN
    _SEEN.append(where)
    (where / "gm_numpy_planted.py").write_text("# left by a test\n")  # the next test must not see it
    assert "GRAPHMODE_CACHE" not in os.environ and "GRAPHMODE_CACHE_MAX_MB" not in os.environ
