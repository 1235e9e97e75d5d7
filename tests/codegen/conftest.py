"""Codegen tests write their generated modules to a private temporary cache directory,
and can force tiny blocks so the blocked/threaded paths run on small arrays."""
from __future__ import annotations

import os

import pytest

from codegen import runtime


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    old = os.environ.get("GRAPHMODE_CACHE_DIR")
    os.environ["GRAPHMODE_CACHE_DIR"] = str(tmp_path_factory.mktemp("graphmode-cache"))
    yield
    if old is None:
        os.environ.pop("GRAPHMODE_CACHE_DIR", None)
    else:
        os.environ["GRAPHMODE_CACHE_DIR"] = old


@pytest.fixture
def small_blocks():
    """Blocks of 7 elements, spread over 2 threads even for tiny arrays."""
    cfg = runtime.CONFIG
    saved = (cfg.block_elems, cfg.threads, cfg.parallel_min_elems)
    cfg.block_elems, cfg.threads, cfg.parallel_min_elems = 7, 2, 1
    yield cfg
    cfg.block_elems, cfg.threads, cfg.parallel_min_elems = saved


@pytest.fixture(autouse=True)
def blocked_regions(monkeypatch):
    """These tests use small arrays to exercise the blocked region code, which the NumPy
    generator would otherwise replace by op-by-op code at these sizes (see
    test_codegen_regions.py::test_small_regions_run_op_by_op for that path)."""
    from codegen import settings

    monkeypatch.setattr(settings, "INLINE_MAX_ELEMS", 0)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh cache directory of this test's own (GRAPHMODE_CACHE_DIR, the cache on) with
    the loader's in-process modules forgotten before and after: the cache tests' start."""
    from codegen import loader  # noqa: PLC0415

    d = tmp_path / "cache"
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(d))
    monkeypatch.delenv("GRAPHMODE_CACHE", raising=False)
    loader.forget()
    yield d
    loader.forget()
