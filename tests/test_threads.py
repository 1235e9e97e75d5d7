"""Threads without environment variables (eager._threads): the kernels' team follows
set_num_threads, GRAPHMODE_THREADS and OMP_NUM_THREADS; NumPy's BLAS is put on one thread
unless the user chose its count; a kernel call's team shrinks while other processes keep
the cores busy, and not under use_deterministic_algorithms."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import eager
from eager import _threads

ROOT = Path(__file__).resolve().parents[1]
_CLEAN = ("OMP_NUM_THREADS", "GRAPHMODE_THREADS", "GRAPHMODE_ADAPT_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
          *_threads.BLAS_VARIABLES)


def _python(code: str, **env: str) -> str:
    """Run code in a fresh interpreter with no thread variable but those given; its stdout."""
    base = {k: v for k, v in os.environ.items() if k not in _CLEAN}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**base, "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.fixture
def adapting(monkeypatch):
    """Adaptation on (the suite turns it off in conftest), with a fresh estimate."""
    monkeypatch.setenv("GRAPHMODE_ADAPT_THREADS", "1")
    _threads.reset_adaptation()
    yield
    _threads.reset_adaptation()


@pytest.mark.parametrize("env, expected", [
    ({"GRAPHMODE_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "5"}, 5),
    ({"OMP_NUM_THREADS": "4,2"}, 4),                          # OpenMP's nested list: the first level
    ({"OMP_NUM_THREADS": "5", "GRAPHMODE_THREADS": "2"}, 2),  # the library's own variable first
    ({"OMP_NUM_THREADS": "zero"}, None),                      # not a count: the usable cores
])
def test_the_default_team_follows_the_environment(monkeypatch, env, expected):
    for name in ("GRAPHMODE_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _threads.default_threads() == (expected if expected is not None else _threads.usable_cores())


def test_usable_cores_follow_the_affinity_mask():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity masks on this OS")
    assert _threads.usable_cores() == len(os.sched_getaffinity(0)) <= (os.cpu_count() or 1)


def test_omp_num_threads_reaches_the_kernels_and_set_num_threads_overrides_it():
    code = ("import eager; from codegen import native_build\n"
            "print(eager.get_num_threads(), native_build.threads())\n"
            "eager.set_num_threads(2); print(eager.get_num_threads(), native_build.threads())")
    assert _python(code, OMP_NUM_THREADS="3", GRAPHMODE_ADAPT_THREADS="0").splitlines() == ["3 3", "2 2"]


def _blas_found() -> bool:
    return _threads.query_blas_threads() is not None


def test_blas_runs_one_thread_by_default_and_products_are_split_by_the_kernels():
    """With nothing exported the library puts BLAS on one thread the first time its matmul
    asks, so BLAS's pool never fights the kernels' team."""
    code = ("from eager import _threads; from codegen import runtime\n"
            "before = _threads.query_blas_threads()\n"
            "print(before, runtime.blas_threads(), _threads.query_blas_threads(), _threads.blas_set_by_library())")
    before, decided, after, ours = _python(code, GRAPHMODE_THREADS="2").split()
    if before == "None":
        pytest.skip("no BLAS library that ctypes or threadpoolctl can size")
    assert decided == after == "1"
    assert ours == ("True" if before != "1" else "False")


@pytest.mark.parametrize("name", ["OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"])
def test_a_blas_count_the_user_exported_is_kept(name):
    code = ("from eager import _threads; from codegen import runtime\n"
            "print(runtime.blas_threads(), _threads.blas_set_by_library())")
    decided, ours = _python(code, **{name: "2"}).split()
    assert ours == "False"
    assert decided in ("2", "None") or name != "OPENBLAS_NUM_THREADS"


def test_set_blas_threads_rejects_what_is_not_a_count():
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="set_blas_threads expects a positive integer"):
            _threads.set_blas_threads(bad)


def test_the_team_shrinks_to_the_free_cores(adapting, monkeypatch):
    monkeypatch.setattr(_threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(_threads, "others_running", lambda: 3.0)
    assert _threads.available(4) == 1          # three cores busy elsewhere: one thread
    assert _threads.available(1) == 1
    monkeypatch.setattr(_threads, "others_running", lambda: 0.0)
    _threads.reset_adaptation()
    assert _threads.available(4) == 4          # quiet: the whole team
    assert _threads.available(3) == 3
    monkeypatch.setattr(_threads, "others_running", lambda: 2.0)
    _threads._load["at"] = -1.0                # the next call samples again
    assert _threads.available(4) == 3          # smoothed: half of two busy cores is one


def test_the_estimate_is_sampled_rarely(adapting, monkeypatch):
    seen = []
    monkeypatch.setattr(_threads, "others_running", lambda: seen.append(1) or 0.0)
    for _ in range(1000):
        _threads.available(2)
    assert len(seen) == 1  # a thousand calls within SAMPLE_SECONDS look once


def test_no_adaptation_when_switched_off_or_deterministic(monkeypatch):
    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(_threads, "others_running", lambda: 2.0)
    monkeypatch.setenv("GRAPHMODE_ADAPT_THREADS", "0")
    _threads.reset_adaptation()
    assert _threads.available(2) == 2
    monkeypatch.setenv("GRAPHMODE_ADAPT_THREADS", "1")
    try:
        eager.use_deterministic_algorithms(True)
        assert _threads.available(2) == 2
        eager.use_deterministic_algorithms(False)
        assert _threads.available(2) == 1
    finally:
        eager.use_deterministic_algorithms(False)
        _threads.reset_adaptation()


def test_busy_ticks_count_the_usable_cores_busy_time_only():
    stat = ("cpu  900 0 90 9000 9 0 9 0 0 0\n"
            "cpu0 100 5 20 4000 7 1 2 3 40 0\n"    # busy: 100 + 5 + 20 + 1 + 2 + 3 (guest inside user)
            "cpu1 200 0 30 3000 0 0 0 0 0 0\n"
            "cpu2 999 0 0 0 0 0 0 0 0 0\n"          # a core this process may not run on
            "intr 12345 1 2 3\n")
    assert _threads.busy_ticks(stat, {0, 1}) == 131 + 230
    assert _threads.busy_ticks(stat, {1}) == 230
    assert _threads.busy_ticks(stat, set()) == 0


def test_other_processes_load_is_busy_time_less_our_own(monkeypatch):
    """Cores kept busy by others over the interval between two samples: the usable cores' busy
    seconds less this process's own CPU seconds, over the wall time; the first sample (nothing
    to take a difference from) reads the run queue instead."""
    readings = iter([(10.0, 1.0, 100.0), (10.3, 1.1, 100.2), (10.5, 1.5, 100.4)])  # busy, own, wall
    now: dict = {}

    def step():
        now["busy"], now["own"], now["wall"] = next(readings)
        return now["busy"]
    monkeypatch.setattr(_threads, "_busy_seconds", step)
    monkeypatch.setattr(_threads.time, "process_time", lambda: now["own"])
    monkeypatch.setattr(_threads.time, "monotonic", lambda: now["wall"])
    monkeypatch.setattr(_threads, "_runnable_now", lambda: 7.0)
    _threads.reset_adaptation()
    try:
        assert _threads.others_running() == 7.0                           # the first: the run queue
        assert _threads.others_running() == pytest.approx((0.3 - 0.1) / 0.2)  # one core busy elsewhere
        assert _threads.others_running() == 0.0  # our own threads' time is not others' (never below 0)
    finally:
        _threads.reset_adaptation()


def test_the_run_queue_sample_counts_other_processes_only():
    if not os.path.exists("/proc/loadavg"):
        pytest.skip("no /proc/loadavg on this OS")
    found = _threads._runnable_now()
    assert found is not None and 0 <= found <= 10_000
    assert _threads._own_running() >= 1  # this thread is running while it asks


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="the load is read from /proc")
def test_a_busy_sibling_shrinks_the_team_of_a_kernel_call(adapting, monkeypatch):
    """End to end: with one of two cores kept busy by a spinning process, the kernels' team
    is one thread."""
    from codegen import native_build, runtime  # noqa: PLC0415

    monkeypatch.setattr(_threads, "usable_cores", lambda: 2)  # as on a two-core machine: one spinner will do
    monkeypatch.setattr(runtime.CONFIG, "threads", 2)
    monkeypatch.setattr(_threads, "SAMPLE_SECONDS", 0.0)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    try:
        import time  # noqa: PLC0415

        deadline = time.monotonic() + 20
        while native_build.threads() != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert native_build.threads() == 1
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def test_blas_decision_is_made_once(monkeypatch):
    calls = []
    monkeypatch.setattr(_threads, "_blas", {})
    monkeypatch.setattr(_threads, "user_chose_blas_threads", lambda: True)
    monkeypatch.setattr(_threads, "query_blas_threads", lambda: calls.append(1) or 3)
    assert _threads.blas_threads() == 3 and _threads.blas_threads() == 3
    assert calls == [1] and not _threads.blas_set_by_library()


def test_products_give_numpy_values_with_blas_on_one_thread():
    """The split product (one BLAS call per row block) equals NumPy's."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, 256)).astype(np.float32), rng.standard_normal((256, 200)).astype(np.float32)
    got = (eager.tensor(a) @ eager.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)


def test_a_cgroup_quota_limits_the_usable_cores(monkeypatch):
    """cgroup v2's cpu.max and v1's cfs quota, rounded up to whole cores; no quota: the mask."""
    assert _threads.quota_from("200000 100000", None, None) == 2
    assert _threads.quota_from("150000 100000\n", None, None) == 2   # 1.5 cores' time: 2 threads
    assert _threads.quota_from("max 100000", "50000", "100000") is None  # v2 says none (v1 not read)
    assert _threads.quota_from(None, "-1", "100000") is None
    assert _threads.quota_from(None, "300000", "100000") == 3
    assert _threads.quota_from(None, None, None) is None
    assert _threads.quota_from("garbage", None, None) is None
    monkeypatch.setattr(_threads, "affinity_cores", lambda: 64)
    monkeypatch.setattr(_threads, "quota_cores", lambda: 2)
    assert _threads.usable_cores() == 2
    assert _threads.others_running() == 0.0  # the quota is ours: the host's load is not read
    monkeypatch.setattr(_threads, "quota_cores", lambda: None)
    assert _threads.usable_cores() == 64
