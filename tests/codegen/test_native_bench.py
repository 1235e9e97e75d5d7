"""native_bench's measurement plumbing (not its timings): both sides of a comparison draw
the same seeded inputs, a peer's child gets this process's thread settings but not the
native backend's own wait policy, ratios come from one run's medians, and a torch child
answers the line protocol with the inputs' digests and one sample set per "run"."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
SMALL = {"W1": [1, 100], "W2": [64], "W3": [(4, 8, 8, 3)]}


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("native_bench", BENCH / "native_bench.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "native_bench", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_cases_are_seeded_and_digests_tell_inputs_apart(bench):
    first, second = bench.cases(SMALL, None), bench.cases(SMALL, None)
    assert [c.name for c in first] == ["W1 n=1e+00", "W1 n=1e+02", "W2 n=6e+01", "W3 (4, 8, 8, 3)",
                                       "W4 per op (0-d, 100 steps)"]
    assert [bench.digest(c.arrays) for c in first] == [bench.digest(c.arrays) for c in second]
    changed = [a.copy() for a in first[1].arrays]
    changed[0][0] += 1
    assert bench.digest(changed) != bench.digest(first[1].arrays)
    # --only keeps each row's inputs only if the draws before it are skipped the same way on both sides
    only = bench.cases(SMALL, {"W2"})
    assert [c.name for c in only] == ["W2 n=6e+01"]
    assert bench.digest(only[0].arrays) == bench.digest(bench.cases(SMALL, {"W2"})[0].arrays)


def test_thread_env_same_threads_without_the_backends_wait_policy(bench, monkeypatch):
    from codegen import native_build

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("GOMP_SPINCOUNT", "30000")  # as the native backend sets it for its own pool
    monkeypatch.setattr(native_build, "wait_policy_set", {"GOMP_SPINCOUNT": "30000"})
    env = bench.thread_env(2)
    assert env["GRAPHMODE_THREADS"] == "2" and env["OMP_NUM_THREADS"] == "2"
    assert env["OPENBLAS_NUM_THREADS"] == "1" and "GOMP_SPINCOUNT" not in env
    monkeypatch.setattr(native_build, "wait_policy_set", {})  # the user's own setting travels
    assert bench.thread_env(2)["GOMP_SPINCOUNT"] == "30000"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert bench.thread_env(2)["OMP_NUM_THREADS"] == "3"
    assert "xla_cpu_multi_thread_eigen=false" in bench.thread_env(1)["XLA_FLAGS"]


def test_sample_of_ratios_from_one_runs_medians(bench):
    case = bench.Case("W2", "W2", [], per=2, floor_bytes=800.0)
    sample = bench.sample_of(case, {"native": 4.0, "numpy (hand)": 8.0, "torch.compile": 2.0}, bandwidth=400.0)
    assert sample["native"] == 2.0 and sample["torch.compile"] == 1.0
    assert sample["native / numpy (hand)"] == 0.5 and sample["native / torch.compile"] == 2.0
    assert sample["memory floor"] == 2.0 and sample["native / floor"] == 2.0
    row = bench.summarize("W2", [sample, {**sample, "native / torch.compile": 4.0},
                                 {**sample, "native / torch.compile": 1.0}])
    assert row["native / torch.compile"] == 2.0 and row["native / torch.compile spread"] == (1.0, 4.0)


@pytest.mark.slow  # a torch import and a torch.compile in a child process
def test_torch_child_answers_with_the_same_inputs(bench):
    pytest.importorskip("torch")
    sizes, only = {"W1": [1], "W2": [], "W3": []}, {"W1"}
    expect = [bench.digest(c.arrays) for c in bench.cases(sizes, only)]
    peer = bench.PeerProcess("torch", sizes, only, repeats=1, threads=1, expect=expect)
    try:
        assert peer.name == "torch.compile" and peer.version
        for _ in range(2):
            got = peer.sample()
            assert set(got) == {"W1 n=1e+00"} and got["W1 n=1e+00"] > 0
    finally:
        peer.close()
    assert peer.proc.returncode == 0
    with pytest.raises(RuntimeError, match="inputs differ"):
        bench.PeerProcess("torch", sizes, only, repeats=1, threads=1, expect=["0" * 16])

