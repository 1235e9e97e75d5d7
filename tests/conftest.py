"""Suite-wide settings: randomized tests are deterministic, and no test reads or writes
the user's code cache.

Hypothesis runs under the "deterministic" profile unless GRAPHMODE_HYPOTHESIS_PROFILE names
another: examples are derived from each test's name (derandomize), no example database is
replayed, no deadline and no too-slow health check (timings on a loaded machine vary), so
`make test` and CI (CI=true) give the same result on every run. The "explore" profile draws
fresh random examples, for looking for new failures locally:
    GRAPHMODE_HYPOTHESIS_PROFILE=explore python -m pytest tests/static
"""
from __future__ import annotations

import os

# "auto" compiles native C code when a C++ compiler is found; the suite pins it to NumPy
# code (one C++ compile per test graph would cost minutes). Tests of the native backend ask
# for backend="native", which this does not affect. Set before graphmode is imported.
os.environ.setdefault("GRAPHMODE_NATIVE", "0")
# the verifier runs after every pass in the tests (static.passes.manager.verify_each_pass)
os.environ.setdefault("GRAPHMODE_VERIFY", "each")
# a kernel call's team is the configured thread count, not shrunk to the cores other
# processes leave free (eager._threads.available): a reduction's bits depend on the team, and
# a test that compares two calls must see one team; tests/test_threads.py turns it back on
os.environ.setdefault("GRAPHMODE_ADAPT_THREADS", "0")

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "deterministic", derandomize=True, database=None, deadline=None, max_examples=50,
    suppress_health_check=[HealthCheck.too_slow], print_blob=True,
)
settings.register_profile("explore", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("GRAPHMODE_HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(autouse=True)
def _private_code_cache(tmp_path_factory, monkeypatch):
    """Each test gets an empty private code-cache directory and the default cache settings,
    whatever the environment says: a test never runs code another test or the user left."""
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path_factory.mktemp("code-cache")))
    monkeypatch.delenv("GRAPHMODE_CACHE", raising=False)
    monkeypatch.delenv("GRAPHMODE_CACHE_MAX_MB", raising=False)


@pytest.fixture
def numpy_eager_kernels(monkeypatch):
    """Eager's ops run their NumPy code, not the native kernels of codegen.eager_kernels (for
    tests that compare against a NumPy composition bit for bit)."""
    from codegen import eager_kernels

    monkeypatch.setenv("GRAPHMODE_EAGER_NATIVE", "0")
    eager_kernels.reset()
    yield
    monkeypatch.delenv("GRAPHMODE_EAGER_NATIVE")
    eager_kernels.reset()
