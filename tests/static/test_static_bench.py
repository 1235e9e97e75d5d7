"""The static benchmark runs end to end with few repeats (a smoke test, not a timing test):
every row has its times, the joint graphs have the expected sizes, and JSON is written."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(monkeypatch, name: str):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_static_bench_quick_rows_and_json(monkeypatch, tmp_path, capsys):
    bench = _load(monkeypatch, "static_bench")
    out = tmp_path / "static.json"
    result = bench.main(["--quick", "--repeats", "1", "--json", str(out)])
    w3, w4 = result["front_end"]
    assert (w3["workload"], w4["workload"]) == ("W3", "W4")
    assert w4["forward ops"] == 400 and w4["joint ops"] > 400
    for row in result["front_end"]:
        assert row["forward trace+verify s"] > 0 and row["trace+autodiff+verify s"] > 0  # no ordering: noise
    for row in result["call_overhead"]:
        assert row["call path (no-op executable) us"] > 0 and row["full call us"] > 0
    saved = json.loads(out.read_text())
    assert saved["front_end"] == result["front_end"] and saved["machine"]["numpy"]
    assert "trace + verify + autodiff" in capsys.readouterr().out
