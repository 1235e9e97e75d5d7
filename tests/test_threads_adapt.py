"""The kernels' team under a load that comes and goes (gmbase.threads.available): it shrinks
as soon as other processes keep a core busy and grows back only once they have clearly
stopped, so a flickering load does not wake (and spin) the workers every other sample; and
threads_bench's report of CPU time and team sizes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gmbase import threads as _threads

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def two_cores(monkeypatch):
    """Adaptation on (conftest turns it off), two usable cores, every call a fresh sample,
    and a scripted run queue: `load.append(x)` sets what the next sample reads."""
    load = [0.0]
    monkeypatch.setenv("GRAPHMODE_ADAPT_THREADS", "1")
    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(_threads, "others_running", lambda: load[-1])
    monkeypatch.setattr(_threads, "SAMPLE_SECONDS", 0.0)
    _threads.reset_adaptation()
    yield load
    _threads.reset_adaptation()


def _sample(load: list, value: float) -> int:
    load.append(value)
    _threads._load["at"] = -1.0  # the next call samples, whatever the clock says
    return _threads.available(2)


def test_a_steady_busy_core_shrinks_the_team_within_two_samples(two_cores):
    assert _sample(two_cores, 0.0) == 2
    assert [_sample(two_cores, 1.0) for _ in range(3)] == [1, 1, 1]  # estimate 0.5, 0.75, 0.875
    assert _sample(two_cores, 0.0) == 1 and _sample(two_cores, 0.0) == 2  # 0.44, then 0.22: free again


def test_a_flickering_load_keeps_the_team_shrunk(two_cores):
    assert _sample(two_cores, 1.0) == 1
    teams = [_sample(two_cores, value) for value in (0.0, 1.0) * 6]
    assert teams == [1] * 12  # the estimate swings between ~0.33 and ~0.67: never clearly free


def test_the_team_grows_back_once_the_load_has_gone(two_cores):
    assert _sample(two_cores, 1.0) == 1
    teams = [_sample(two_cores, 0.0) for _ in range(4)]  # estimate 0.5, 0.25, 0.125, ...
    assert teams == [1, 2, 2, 2]


def test_more_cores_shrink_and_grow_by_the_same_rule(monkeypatch):
    assert _threads._next_free(8, 3.0, None) == 5            # first sample: as it reads
    assert _threads._next_free(8, 2.5, 5) == 5               # 2.5 busy: not below 3 - 0.3, keeps 5
    assert _threads._next_free(8, 2.2, 5) == 6               # clearly fewer than 3: one more
    assert _threads._next_free(8, 3.7, 6) == 4               # 3.7 reaches 4 - 0.3: shrinks at once
    assert _threads._next_free(2, 5.0, 2) == 1               # never below one thread


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import threads_bench  # noqa: PLC0415

    return threads_bench


def test_threads_bench_counts_the_kernels_team_sizes(monkeypatch):
    from gmnative import build as native_build  # noqa: PLC0415

    bench = _bench()
    answers = iter([2, 1, 1])
    monkeypatch.setattr(native_build, "threads", lambda: next(answers))
    teams = bench._count_teams()
    assert [native_build.threads() for _ in range(3)] == [2, 1, 1]
    assert teams == {2: 1, 1: 2}
    assert bench._teams_cell(teams) == "1:67% 2:33%"
    assert bench._teams_cell({}) == "-"


def test_threads_bench_table_has_cpu_ratio_and_teams():
    bench = _bench()
    chosen = [("A", "B"), ("B", None)]
    wall = {"A": {"quiet": [0.010], "busy": [0.013]}, "B": {"quiet": [0.020], "busy": [0.020]}}
    cpu = {"A": {"quiet": [0.012], "busy": [0.009]}, "B": {"quiet": [0.02], "busy": [0.02]}}
    teams = {"A": {"quiet": {2: 10}, "busy": {1: 10}}, "B": {"quiet": {}, "busy": {}}}
    text = bench._table(chosen, wall, cpu, teams)
    header, _rule, row_a, _row_b = text.splitlines()
    assert "cpu busy/quiet" in header and "teams" in header
    assert "1.30x" in row_a and "0.75x" in row_a and "2:100% / 1:100%" in row_a


def test_a_large_product_runs_on_the_caller_under_contention(two_cores, monkeypatch):
    """With a core busy elsewhere the kernels' OpenMP team is one thread and their gemm declines;
    a product of MATMUL_SPLIT_MIN multiply-adds or more is not split on the Python pool either
    (its helper queued behind the busy process made the caller wait: codegen.runtime.matmul)."""
    import numpy as np  # noqa: PLC0415

    from codegen import native_build, runtime  # noqa: PLC0415

    monkeypatch.setattr(runtime, "_blas_threads", [1])
    monkeypatch.setattr(runtime.CONFIG, "threads", 2)
    two_cores.append(1.0)
    _threads._load["at"] = -1.0
    assert native_build.threads() == 1  # the OpenMP team shrank
    seen: list = []
    real = np.matmul

    def counting(a, b, **kw):
        seen.append(a.shape)
        return real(a, b, **kw)

    monkeypatch.setattr(runtime.np, "matmul", counting)
    own = runtime.own_product

    def counting_own(a, b, out=None):  # float32 products run on the project's own sgemm (gmnative.gemm)
        got = own(a, b, out)
        if got is not None:
            seen.append(a.shape)
        return got

    monkeypatch.setattr(runtime, "own_product", counting_own)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((256, 256)).astype(np.float32), rng.standard_normal((256, 160)).astype(np.float32)
    got = runtime.matmul(a, b)  # 256 * 256 * 160 multiply-adds: above MATMUL_SPLIT_MIN
    assert seen == [(256, 256)]
    np.testing.assert_allclose(got, real(a, b), rtol=1e-5, atol=1e-4)
    seen.clear()
    small = runtime.matmul(a[:64], b)  # below MATMUL_SPLIT_MIN: one call in the caller
    assert seen == [(64, 256)] and small.shape == (64, 160)
