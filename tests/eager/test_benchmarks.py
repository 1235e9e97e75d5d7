"""The eager benchmark runs end to end on tiny settings (a smoke test, not a timing test):
both implementations agree, every row has its medians and ratios, JSON is written, and
run_all finds the script."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(monkeypatch, name: str):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_eager_bench_quick_rows_and_json(monkeypatch, tmp_path, capsys):
    bench = _load(monkeypatch, "eager_bench")
    out = tmp_path / "eager.json"
    rows = bench.main(["--quick", "--only", "W1,W3,W4", "--repeats", "1", "--malloc", "default",
                       "--json", str(out)])
    assert [r["workload"].split()[0] for r in rows] == ["W1", "W1", "W3", "W4"]
    for row in rows:
        assert row["eager_fwd_bwd_s"] > 0 and row["numpy_fwd_bwd_s"] > 0
        assert row["fwd_bwd_ratio"] == row["eager_fwd_bwd_s"] / row["numpy_fwd_bwd_s"]
        assert row["max_rel_grad_diff"] < 1e-3
    assert "eager_us_per_op_fwd_bwd" in rows[-1]
    if bench.TORCH is not None:  # the PyTorch eager column, W4's per-op cost included
        assert all(r["eager_vs_torch_fwd_bwd"] == r["eager_fwd_bwd_s"] / r["torch_fwd_bwd_s"] for r in rows)
        assert rows[-1]["torch_us_per_op_fwd_bwd"] == rows[-1]["torch_fwd_bwd_s"] / 400 * 1e6
    saved = json.loads(out.read_text())
    assert saved["results"] == rows and saved["machine"]["numpy"]
    assert "f+b ratio" in capsys.readouterr().out


def test_models_bench_reports_the_median_ratio_and_spread_over_runs(monkeypatch, capsys):
    bench = _load(monkeypatch, "models_bench")
    rows = bench.main(["--quick", "--no-steps", "--only", "layer_norm", "--runs", "2", "--repeats", "1",
                       "--malloc", "default"])
    (row,) = rows
    assert row["runs"] == 2 and len(row["eager_run_medians_s"]) == 2
    if "ratio" in row:
        assert row["ratio_min"] <= row["ratio"] <= row["ratio_max"] and len(row["run_ratios"]) == 2
    assert "min-max over runs" in capsys.readouterr().out


def test_gelu_baselines_agree_with_eager(monkeypatch):
    bench = _load(monkeypatch, "eager_bench")
    rng = bench.np.random.default_rng(0)
    for cube in ("pow", "mul"):
        assert bench.check(bench.w2(1000, rng, cube)) < 1e-4


def test_run_all_discovers_the_bench_scripts():
    listed = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--list"], capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0
    assert "eager_bench.py" in listed.stdout.split()
