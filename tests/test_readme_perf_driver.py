"""benchmarks/readme_perf.py renders the README's Performance tables from its JSON: the
rendering and the README rewrite are checked here on a small made-up results file (no
benchmark runs)."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import readme_perf as rp  # noqa: E402


def _compare_run(eager: float, compiled: float, torch_eager: float | None = None) -> dict:
    """What `graphmode compare --json` writes, cut to the fields the driver reads."""
    peers = []
    if torch_eager is not None:
        peers = [{"library": "torch", "available": True, "note": "eager and torch.compile",
                  "eager": {"median_s": torch_eager}, "compiled": {"median_s": torch_eager / 2}, "compile_s": 5.0},
                 {"library": "jax", "available": True, "note": "op by op and jax.jit",
                  "eager": {"median_s": 4e-3}, "compiled": None, "compile_s": None}]
    return {"results": [{"size": "1e4", "eager": {"median_s": eager}, "compiled": {"median_s": compiled},
                         "ratio": eager / compiled, "compile": {"cold_s": 0.05, "warm_s": 0.0015},
                         "ir": {"nodes_before": 29, "nodes_after": 1, "fused_kernels": 1}, "peak_bytes": 80004,
                         "max_rel_error": 1e-7, "peers": peers}]}


def fake_result() -> dict:
    runs = [rp.compare_rows(_compare_run(e, c, t), "W2 gelu")
            for e, c, t in ((200e-6, 50e-6, 300e-6), (220e-6, 40e-6, 330e-6), (210e-6, 45e-6, 360e-6))]
    compare = rp.merge_runs(runs)
    part = {"commands": [], "load_before": [0.5, 0.4, 0.3], "load_after": [1.25, 0.6, 0.4], "seconds": 1.0}
    return {
        "schema": rp.SCHEMA, "started": "2026-11-29T09:55:00+00:00", "quick": False, "runs": 3,
        "git": {"commit": "0" * 40, "short": "abc1234", "subject": "", "modified_files": []},
        "host": {"cpu_model": "Test CPU", "cores": 2, "vector_isa": "AVX-512", "vector_bits": 512,
                 "compiled_for": ["AVX-512", 512], "copy_bandwidth_GBps": 30.04, "platform": "Linux",
                 "python": "3.11.7", "versions": {"numpy": "2.4.6", "torch": "2.13.0", "jax": None},
                 "thread_variables_removed": []},
        "parts": {
            "main": {**part, "data": compare},
            "peers": {**part, "data": compare},
            "threads": {**part, "data": {
                "results": {"W3 large native": {"quiet": [0.004, 0.005, 0.006], "busy": [0.008, 0.01, 0.012]},
                            "W3 large hand-numpy": {"quiet": [0.008, 0.01, 0.01], "busy": [0.01, 0.01, 0.012]}},
                "cpu": {"W3 large native": {"quiet": [0.008, 0.01, 0.01], "busy": [0.009, 0.011, 0.011]},
                        "W3 large hand-numpy": {"quiet": [0.01], "busy": []}},
                "peers": {"W3 large native": "W3 large hand-numpy", "W3 large hand-numpy": None}}},
            "eager-models": {**part, "data": {"times": {"W5": {"eager": [0.02, 0.021, 0.022],
                                                               "torch": [0.02, 0.02, 0.02]}},
                                              "ratios": {"W5": [1.0, 1.05, 1.1]}}},
            "repeated": {**part, "data": {
                "native_bench": {"rows": [{"case": "W2 n=8e+06", "runs": [
                    {"native": 0.01, "native / numpy (hand)": 0.5, "native / floor": 2.0},
                    {"native": 0.012, "native / numpy (hand)": 0.6, "native / floor": 2.2}]}],
                    "compile_w3_seconds": {"cold (probed): compile": {"median": 0.25, "min": 0.2, "max": 0.3},
                                           "cold (probed): both": {"median": 0.3, "min": 0.25, "max": 0.35}}},
                "call_overhead_bench": {"backends": {"native": {"compiled call": [2.6e-6, 2.7e-6],
                                                                "generated code": [1e-6, 1e-6],
                                                                "overhead": [1.6e-6, 1.7e-6]}}},
                "eager_bench": {"runs": [[{"eager_vs_torch_fwd_bwd": 0.9, "eager_us_per_op_fwd_bwd": 7.0}],
                                         [{"eager_vs_torch_fwd_bwd": 1.0, "eager_us_per_op_fwd_bwd": 7.5}]]},
            }},
        },
    }


def test_cells_give_the_median_and_the_spread_in_the_medians_unit():
    assert rp.time_cell([107e-6, 105e-6, 1.1e-3]) == "107 us (105-1100)"
    assert rp.time_cell([2.5e-3]) == "2.5 ms"
    assert rp.time_cell([]) == "-"
    assert rp.ratio_cell([5.43, 5.2, 5.61], bold=True) == "**5.43x** (5.2-5.61)"
    assert rp.ratio_cell([None]) == "-"
    assert rp.ms_cell([0.004, 0.006, 0.0051]) == "5.1 (4-6)"


def test_main_and_peer_tables_from_three_compare_runs():
    result = fake_result()
    blocks = rp.render(result)
    main = blocks["main"].splitlines()
    assert main[2] == ("| workload | size | eager | compiled | speedup | compile cold / warm | IR nodes | fused | peak mem "
                       "| max rel err |")  # the header tests/test_readme.py finds the table by
    assert main[4] == ("| W2 gelu | 1e4 | 210 us (200-220) | 45 us (40-50) | **4.67x** (4-5.5) | 50 ms / 1.5 ms | "
                       "29 → 1 | 1 | 78.1 kB | 1.0e-07 |")
    peers = blocks["peers"].splitlines()
    row = next(line for line in peers if line.startswith("| W2 gelu"))
    assert row == ("| W2 gelu | 1e4 | 210 us (200-220) | **45 us** (40-50) | 330 us (300-360) | 165 us (150-180) | "
                   "4 ms (4-4) | - |")
    assert "per shape (median): torch.compile 5 s." in blocks["peers"]


def test_a_peer_cell_not_re_measured_says_so():
    run = rp.compare_rows(_compare_run(2e-3, 5e-5, 2.5e-3), "W4 scalar")
    run[0]["peers"]["torch"] = {"eager_s": 2.5e-3, "compiled_s": None, "compile_s": None, "note": rp.SLOW_CELL_NOTE}
    rows = rp.merge_runs([run])
    row = next(line for line in rp.render_peers(rows).splitlines() if line.startswith("| W4 scalar"))
    assert row.split(" | ")[4:6] == ["2.5 ms", "not re-measured (*)"]
    assert f"(*) torch.compile on W4: {rp.SLOW_CELL_NOTE}" in rp.peer_compile_note(rows)


def test_the_host_line_states_command_settings_width_bandwidth_and_load():
    line = rp.render(fake_result())["threads"].splitlines()[0]
    for part in ("`python benchmarks/readme_perf.py --only threads`", "commit `abc1234`", "Test CPU", "AVX-512 (512-bit",
                 "copy bandwidth 30.0 GB/s", "`benchmarks/native_bench.py --small`", "load average 0.50 before, 1.25 after",
                 "no thread variable set", "median (min-max) of 3 fresh processes"):
        assert part in line, part


def test_the_host_line_says_when_the_tree_had_uncommitted_changes():
    result = fake_result()
    assert "uncommitted" not in rp.render(result)["main"].splitlines()[0]
    result["git"]["modified_files"] = ["eager/_tensor.py", "README.md"]  # the README's own edits do not count
    assert "commit `abc1234` (with uncommitted changes to 1 file) on" in rp.render(result)["main"].splitlines()[0]


def test_threads_eager_models_and_repeated_tables():
    blocks = rp.render(fake_result())
    assert "| W3 large native | 5 (4-6) | 0.5x (0.5-0.6) | 10 (8-12) | 1x (0.8-1) | 2.00x | 1.10x | " \
           "W3 large hand-numpy |" in blocks["threads"]
    assert "| W3 large hand-numpy | 10 (8-10) | - | 10 (10-12) | - | 1.00x | - |  |" in blocks["threads"]
    assert "| W5 tiny GPT (AdamW) | 21 (20-22) | 20 (20-20) | 1.05x (1-1.1) |" in blocks["eager-models"]
    rep = blocks["repeated"]
    assert "| W2 n=8e+06 | 11 ms (10-12) | 0.55 (0.5-0.6) | - | - | - | 2.1 (2-2.2) |" in rep
    assert "| W3 large compile (native), cold (probed) | 250 ms (200-300) |" in rep
    assert "| compiled call at n=1, native: call / generated code alone / overhead | 2.65 us (2.6-2.7) / 1 us (1-1) / " \
           "1.65 us (1.6-1.7) |" in rep
    assert "W4 per op (forward + backward), eager 7.25 us (7-7.5) per op | 0.95 (0.9-1) |" in rep


def test_a_part_asked_for_but_not_finished_replaces_its_table_with_a_note():
    result = fake_result()
    result["requested"] = ["main", "threads", "repeated"]
    result["parts"]["threads"]["data"] = None  # its script failed
    del result["parts"]["repeated"]["data"]["eager_bench"]  # cut short before the last script
    blocks = rp.render(result)
    assert set(blocks) == {"main", "threads", "repeated"}  # peers and eager-models: not asked for, left alone
    assert blocks["threads"].startswith("Not re-measured at commit `abc1234` on 2026-11-29")
    assert "|" not in blocks["threads"]
    assert blocks["repeated"].endswith("Not re-measured in this run (cut short, or the script failed): "
                                       "`training_step_bench.py`, `models_bench.py`, `eager_bench.py`.")
    result["parts"]["repeated"]["data"] = {}  # every script skipped
    assert rp.render(result)["repeated"].startswith("Not re-measured at commit")


def test_a_graph_figure_that_differs_between_runs_is_flagged():
    one = rp.compare_rows(_compare_run(1e-4, 5e-5), "W2 gelu")
    other = rp.compare_rows(_compare_run(1e-4, 5e-5), "W2 gelu")
    other[0]["nodes_after"] = 2
    assert "graph_differs" not in rp.merge_runs([one, one])[0]
    assert rp.merge_runs([one, other])[0]["graph_differs"] is True


def test_update_readme_rewrites_only_the_marked_blocks():
    blocks = rp.render(fake_result())
    text = (f"intro\n\n{rp.begin_marker('main')}\nstale table\n{rp.end_marker('main')}\n\nafter\n"
            f"{rp.begin_marker('threads')}\nstale\n{rp.end_marker('threads')}\n")
    new, missing = rp.update_readme(text, {"main": blocks["main"], "threads": blocks["threads"], "peers": "x"})
    assert missing == ["peers"]
    assert "stale" not in new and new.startswith("intro\n\n") and "\n\nafter\n" in new
    assert blocks["main"] in new and new.count(rp.end_marker("main")) == 1
    again, _ = rp.update_readme(new, {"main": blocks["main"], "threads": blocks["threads"]})
    assert again == new  # regenerating is idempotent


def test_render_and_update_from_the_command_line(tmp_path, capsys):
    results = tmp_path / "r.json"
    results.write_text(json.dumps(fake_result()), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("".join(f"{rp.begin_marker(p)}\n{rp.end_marker(p)}\n" for p in rp.PARTS), encoding="utf-8")
    assert rp.main(["--render", str(results), "--update-readme", str(readme)]) == 0
    assert "| W2 gelu | 1e4 | 210 us (200-220)" in readme.read_text(encoding="utf-8")
    results.write_text(json.dumps({"schema": "other"}), encoding="utf-8")
    with pytest.raises(SystemExit):
        rp.main(["--render", str(results)])
    assert "not a readme_perf results file" in capsys.readouterr().err


def test_the_driver_removes_every_thread_variable_threads_bench_does():
    import threads_bench

    assert set(threads_bench.THREAD_VARIABLES) <= set(rp.THREAD_VARIABLES)


def test_parts_and_environment():
    assert rp.parse_parts("main, peers") == ["main", "peers"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown part 'mains'"):
        rp.parse_parts("mains")
    env = rp.default_environ({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "2", "GRAPHMODE_THREADS": "1",
                              "MKL_NUM_THREADS": "1", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}
    assert rp.shown_command([sys.executable, str(ROOT / "benchmarks" / "x.py"), "--json", "build/a.json", "--runs", "3"]) \
        == "python benchmarks/x.py --runs 3"


def test_the_readme_has_a_marked_block_for_every_part():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Performance"):readme.index("### The native CPU backend")]
    for part in rp.PARTS:
        begin, end = section.find(rp.begin_marker(part)), section.find(rp.end_marker(part))
        assert 0 <= begin < end, part
    assert "export OPENBLAS_NUM_THREADS" not in section


def test_rows_with_fewer_runs_than_asked_are_named():
    result = fake_result()
    result["parts"]["main"]["data"] = rp.merge_runs([rp.compare_rows(_compare_run(2e-4, 5e-5), "W2 gelu")])
    assert "Fewer than 3 runs (the measurement was cut short, or a run failed): W2 gelu 1e4." in rp.render(result)["main"]
    assert "Fewer than" not in rp.render(fake_result())["main"]


def test_the_deadline_stops_what_would_run_past_it(tmp_path):
    now = datetime.datetime(2026, 11, 29, 9, 0, tzinfo=datetime.timezone.utc)
    assert rp.parse_deadline("10:20", now) == now.replace(hour=10, minute=20).timestamp()
    with pytest.raises(argparse.ArgumentTypeError, match="HH:MM"):
        rp.parse_deadline("ten past", now)
    marker = tmp_path / "ran"
    late = rp.Runner(tmp_path, dict(os.environ), deadline=time.time() - 1)
    assert late([sys.executable, "-c", f"open({str(marker)!r}, 'w')"], "late") is False
    assert not marker.exists()


def test_a_command_past_its_time_is_stopped_with_its_children(tmp_path):
    script = ("import subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "print(p.pid, flush=True)\ntime.sleep(60)\n")
    runner = rp.Runner(tmp_path, dict(os.environ))
    start = time.perf_counter()
    assert runner([sys.executable, "-c", script], "sleeper", timeout=2) is False
    assert time.perf_counter() - start < 30
    log = next((tmp_path / "logs").glob("*-sleeper.log")).read_text(encoding="utf-8")
    grandchild = int(log.splitlines()[1])
    for _ in range(50):  # SIGKILL is delivered at once; reaping by init may take a moment
        try:
            os.kill(grandchild, 0)
            with open(f"/proc/{grandchild}/stat", encoding="utf-8") as fh:
                if fh.read().split(") ")[1].startswith("Z"):  # killed, not yet reaped
                    break
        except OSError:  # gone
            break
        time.sleep(0.1)
    else:
        pytest.fail("the benchmark's child outlived it")
