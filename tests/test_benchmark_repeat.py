"""benchmarks/repeat.py: a benchmark run N times in fresh processes, its ratios read from the
JSON each run writes and reported as median and min-max spread; a script with its own --runs
is handed the count instead."""
from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a stand-in benchmark: each run measures the next ratio of a fixed list (a counter file
# tells the runs apart) and writes it in the nested shape the real scripts use
FAKE = textwrap.dedent("""
    import argparse, json, pathlib
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    counter = pathlib.Path(__file__).with_suffix(".count")
    k = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(k + 1))
    ratios = [1.0, 3.0, 2.0, 10.0][k]
    rows = [{"case": "W2 n=1e6", "compiled/numpy": ratios, "compiled": 0.001 * (k + 1)},
            {"workload": "W4", "size": 100, "fwd_ratio": 2 * ratios}]
    print("table the script prints")
    with open(args.json, "w") as fh:
        json.dump({"machine": {"cpu_count": 2}, "quick": args.quick, "rows": rows, "speedup": 5.0}, fh)
""")


@pytest.fixture
def repeat():
    spec = importlib.util.spec_from_file_location("repeat_bench", ROOT / "benchmarks" / "repeat.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ratios_are_summarized_across_fresh_processes(repeat, tmp_path, capsys):
    script = tmp_path / "fake_bench.py"
    script.write_text(FAKE)
    out = tmp_path / "summary.json"
    assert repeat.main([str(script), "--runs", "3", "--json", str(out), "--", "--quick"]) == 0
    printed = capsys.readouterr().out
    assert "fake_bench.py --quick: 3 runs" in printed
    summary = {r["measurement"]: r for r in json.loads(out.read_text())["summary"]}
    # the ratios only (not the seconds, not the machine), named by their rows
    assert set(summary) == {"rows[W2 n=1e6].compiled/numpy", "rows[W4 100].fwd_ratio", "speedup"}
    ratio = summary["rows[W2 n=1e6].compiled/numpy"]
    assert ratio["values"] == [1.0, 3.0, 2.0]  # three separate processes, in order
    assert (ratio["median"], ratio["min"], ratio["max"]) == (2.0, 1.0, 3.0)
    assert ratio["spread"] == pytest.approx(1.0)
    assert summary["rows[W4 100].fwd_ratio"]["median"] == 4.0
    line = next(ln for ln in printed.splitlines() if ln.startswith("rows[W2 n=1e6].compiled/numpy"))
    assert line.split()[-5:] == ["2", "1", "3", "100.0%", "3"]


def test_keys_selects_other_measurements(repeat, tmp_path, capsys):
    script = tmp_path / "fake_bench.py"
    script.write_text(FAKE)
    assert repeat.main([str(script), "--runs", "2", "--keys", "^compiled$"]) == 0
    printed = capsys.readouterr().out
    assert "rows[W2 n=1e6].compiled " in printed and "fwd_ratio" not in printed


def test_a_script_with_its_own_runs_option_gets_the_count(repeat, tmp_path, capfd):
    script = tmp_path / "self_bench.py"
    script.write_text(textwrap.dedent("""
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("--runs", type=int)
        ap.add_argument("--json")
        print("own runs:", ap.parse_args().runs)
    """))
    assert repeat.main([str(script), "--runs", "4"]) == 0
    captured = capfd.readouterr()
    assert "own runs: 4" in captured.out and "has its own --runs" in captured.err


def test_a_script_without_json_and_a_failing_run_are_reported(repeat, tmp_path, capfd):
    no_json = tmp_path / "plain_bench.py"
    no_json.write_text("import argparse; argparse.ArgumentParser().parse_args()\n")
    assert repeat.main([str(no_json)]) == 2
    assert "takes no --json FILE option" in capfd.readouterr().err
    failing = tmp_path / "failing_bench.py"
    failing.write_text("import argparse, sys\nap = argparse.ArgumentParser(); ap.add_argument('--json')\n"
                       "ap.parse_args(); sys.exit(3)\n")
    assert repeat.main([str(failing), "--runs", "2"]) == 1
    assert "run 1 of failing_bench.py failed (exit status 3, no JSON written)" in capfd.readouterr().err


def test_bad_arguments_fail_before_running(repeat, tmp_path):
    with pytest.raises(SystemExit, match="no benchmark script 'nope'"):
        repeat.main(["nope"])
    with pytest.raises(SystemExit):
        repeat.main(["compiled_bench", "--runs", "0"])
    with pytest.raises(SystemExit):
        repeat.main(["compiled_bench", "--json", str(tmp_path / "missing" / "x.json")])


def test_every_benchmark_script_takes_json_or_runs(repeat):
    """repeat.py can drive every script of benchmarks/ (each takes --json or repeats itself with --runs)."""
    lacking = [p.name for p in sorted((ROOT / "benchmarks").glob("*_bench.py"))
               if "--json" not in (text := repeat.options_of(p)) and "--runs" not in text]
    assert lacking == [], lacking
