"""static.compare: eager and compiled runs of one function, their agreement, timings,
compile times (cold and warm disk cache), IR statistics; and the training example."""
from __future__ import annotations

import importlib.util
import math
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import eager
import static
from static.compare import CompareReport, Timing, max_relative_error, resolved_backend, time_interleaved

ROOT = Path(__file__).resolve().parents[2]


def seed_loss(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return (10 - d).sum()


def seed_args(n: int = 256, requires_grad: bool = True) -> list:
    rng = np.random.default_rng(0)
    return [eager.from_numpy(rng.standard_normal(n).astype(np.float32)).requires_grad_(requires_grad)
            for _ in range(5)]


def test_compare_is_exported_and_reports_every_field(tmp_path):
    report = static.compare(seed_loss, *seed_args(), repeat=3, cache_dir=str(tmp_path))
    assert isinstance(report, CompareReport) and report.mode == "forward+backward"
    assert len(report.eager.samples) == len(report.compiled.samples) == 3
    for value in (report.eager_median_s, report.compiled_median_s, report.compile_cold_s, report.compile_warm_s):
        assert value > 0
    assert report.eager_spread_s >= 0 and report.compiled_spread_s >= 0
    assert math.isclose(report.ratio, report.eager_median_s / report.compiled_median_s)
    assert report.nodes_before > report.nodes_after >= 1
    assert report.fused_kernels >= 1 and report.peak_bytes > 0
    assert report.ok and report.max_rel_error <= 1e-6
    assert report.input_elements == 5 * 256
    text = str(report)
    for word in ("seed_loss", "eager", "compiled", "speedup", "cold", "warm", "IR nodes", "fused", "peak mem",
                 "agree"):
        assert word in text
    data = report.to_dict()
    assert data["compile"]["cold_s"] == report.compile_cold_s and data["ir"]["nodes_after"] == report.nodes_after
    assert len(data["eager"]["samples_s"]) == 3


def test_cold_compile_fills_the_given_cache_dir_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", "somewhere-else")
    static.compare(seed_loss, *seed_args(64), repeat=1, cache_dir=str(tmp_path))
    assert os.environ["GRAPHMODE_CACHE_DIR"] == "somewhere-else"
    if importlib.util.find_spec("codegen") is not None:
        assert list(tmp_path.glob("gm_numpy_*.py")), "the cold compile writes generated modules to cache_dir"


def test_without_gradients_the_forward_alone_is_compared():
    report = static.compare(seed_loss, *seed_args(64, requires_grad=False), repeat=2)
    assert report.mode == "forward" and report.ok


def test_a_compiled_result_that_differs_is_reported_not_hidden():
    def sneaky(x):
        traced = type(x).__name__ == "Tracer"
        return (x * (2.0 if traced else 1.0)).sum()

    report = static.compare(sneaky, eager.ones(16, requires_grad=True), repeat=1)
    assert not report.ok and report.max_rel_error > 0.5
    assert "DISAGREE" in str(report)


def test_a_compiled_function_is_compared_with_its_eager_self():
    calls = []

    def counted(*args):
        calls.append(1)  # compiled code runs without calling back into Python; eager calls it every time
        return seed_loss(*args)

    report = static.compare(static.compile(counted), *seed_args(64), repeat=3)
    assert report.ok and report.name == "counted"
    assert len(calls) >= 3 * report.eager.calls_per_sample + 2


def test_interpret_backend_is_measured_too():
    report = static.compare(seed_loss, *seed_args(32), repeat=1, backend="interpret")
    assert report.backend == "interpret" and report.ok
    assert resolved_backend("auto", "cpu") == "numpy"


def test_max_relative_error_is_relative_to_each_arrays_scale():
    a = np.array([100.0, 0.0, -50.0])
    assert max_relative_error([a], [a]) == 0.0
    assert max_relative_error([a], [a + np.array([0, 1e-3, 0])]) == pytest.approx(1e-5)
    assert max_relative_error([a], [a[:2]]) == math.inf
    assert max_relative_error([a], [np.array([np.nan, 0.0, -50.0])]) == math.inf
    assert max_relative_error([a, a], [a]) == math.inf


def test_timing_median_and_interquartile_spread():
    t = Timing([1.0, 2.0, 3.0, 4.0, 100.0])
    assert t.median == 3.0 and t.spread == 2.0
    calls = []
    a, b = time_interleaved(lambda: calls.append("a"), lambda: calls.append("b"), repeat=4)
    assert len(a.samples) == len(b.samples) == 4 and a.calls_per_sample >= 1
    assert calls[:2] == ["a", "b"]  # warm-up alternates too


def test_compare_refuses_zero_repeats():
    with pytest.raises(ValueError, match="repeat"):
        static.compare(seed_loss, *seed_args(8), repeat=0)


def test_progress_names_each_step_as_it_begins(tmp_path):
    steps = []
    static.compare(seed_loss, *seed_args(16), repeat=2, cache_dir=str(tmp_path), progress=steps.append)
    assert steps == ["compiling (empty cache)", "compiling (from the disk cache)", "checking that results agree",
                     "warming up", "timing: sample 1/2", "timing: sample 2/2"]
    assert len(steps) == static.compare.__globals__["progress_steps"](2)


def test_a_loss_over_parameters_that_are_not_arguments_says_why_only_the_forward_is_timed(tmp_path):
    model = eager.nn.Linear(4, 1)

    def loss(x):
        return model(x).sum()

    report = static.compare(loss, eager.ones(8, 4), repeat=1, cache_dir=str(tmp_path))
    assert report.mode == "forward" and "not arguments" in report.note and "nn.Module" in report.note
    assert "note" in str(report) and report.to_dict()["note"] == report.note
    plain = static.compare(seed_loss, *seed_args(8, requires_grad=False), repeat=1, cache_dir=str(tmp_path))
    assert plain.mode == "forward" and plain.note == ""


def test_compare_training_example_reaches_the_same_losses_both_ways(capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("compare_training", ROOT / "examples" / "compare_training.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "compare_training", module)
    spec.loader.exec_module(module)
    result = module.main(["--epochs", "6", "--points", "200", "--log-every", "2"])
    out = capsys.readouterr().out
    assert result.max_loss_difference < 1e-4
    assert len(result.eager_losses) == len(result.compiled_losses) == 6
    assert result.eager_losses[-1] < result.eager_losses[0]
    assert re.search(r"time per epoch: eager .* compiled", out)
