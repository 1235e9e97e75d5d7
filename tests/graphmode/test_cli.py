"""The `graphmode` command line: compare (table, JSON, plot, peers, agreement), ir, graph,
and every error a user can make, in process through graphmode.cli.main and as a real
subprocess (python -m graphmode)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import eager
from graphmode import cli, draw

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "examples" / "workloads"

SMALL = textwrap.dedent('''
    """Tiny seed graph: L = sum(10 - (w3*w1*a + w4*w2*a))."""
    import numpy as np
    import eager

    SIZES = ("64", "256")

    def seed_loss(a, w1, w2, w3, w4):
        return (10 - (w3 * (w1 * a) + w4 * (w2 * a))).sum()

    def workload(size):
        rng = np.random.default_rng(0)
        return seed_loss, tuple(eager.from_numpy(rng.standard_normal(size).astype(np.float32)).requires_grad_()
                                for _ in range(5))

    def peer(library, size):
        return seed_loss
''')

WRONG = textwrap.dedent('''
    import eager

    def sneaky(x):
        traced = type(x).__name__ == "Tracer"
        return (x * (2.0 if traced else 1.0)).sum()

    def workload(size):
        return sneaky, (eager.ones(size, requires_grad=True),)
''')


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Generated modules of `ir` and `graph` go to a scratch cache, not the user's."""
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small_workload.py"
    path.write_text(SMALL)
    return path


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """cli.main in this process; compare leaves the test process's allocator settings alone
    (--malloc default) unless a test asks otherwise."""
    argv = [str(a) for a in argv]
    if argv[:1] == ["compare"] and "--malloc" not in argv:
        argv += ["--malloc", "default"]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- compare ----------------------------------------------------------------------------------------
def test_compare_prints_a_table_with_every_column_and_size(capsys, small):
    code, out, err = run_main(capsys, "compare", small, "--sizes", "64,1e3", "--repeat", "2")
    assert code == 0, err
    for header in ("size", "check", "eager", "compiled", "speedup", "compile cold", "compile warm", "IR nodes",
                   "fused", "peak mem"):
        assert header in out
    assert "eager vs compiled fwd+bwd" in out
    rows = [line for line in out.splitlines() if re.match(r"^\W*(64|1e3)\b", line)]
    assert len(rows) == 4 and sum(bool(re.match(r"^\W*(64|1e3)\s+ok \d", row)) for row in rows) == 2, out
    assert re.search(r"\d+ -> \d+", out) and "agreement:" in out and "Tiny seed graph" in out


def test_compare_json_holds_every_sample_and_the_schema(capsys, small, tmp_path):
    out_file = tmp_path / "result.json"
    code, out, err = run_main(capsys, "compare", small, "--sizes", "64,4x8", "--repeat", "3", "--json", out_file)
    # 4x8 is a shape: the tiny workload makes a (4, 8) array from it
    assert code == 0, err
    data = json.loads(out_file.read_text())
    assert data["schema"] == "graphmode-compare/1"
    for key in ("graphmode_version", "workload", "target", "backend", "device", "repeat", "tolerance", "malloc",
                "machine"):
        assert key in data
    assert [r["size"] for r in data["results"]] == ["64", "4x8"]
    assert data["results"][1]["size_value"] == [4, 8]
    for result in data["results"]:
        for mode in ("eager", "compiled"):
            assert len(result[mode]["samples_s"]) == 3 and result[mode]["median_s"] > 0
            assert result[mode]["spread_s"] >= 0
        assert set(result["compile"]) == {"cold_s", "warm_s"}
        assert set(result["ir"]) == {"nodes_before", "nodes_after", "fused_kernels"}
        assert result["ok"] is True and result["max_rel_error"] <= result["tolerance"]
        assert result["ratio"] > 0 and result["peak_bytes"] >= 0 and result["input_elements"] > 0


def test_compare_fails_loudly_when_results_disagree(capsys, tmp_path):
    path = tmp_path / "wrong.py"
    path.write_text(WRONG)
    code, out, err = run_main(capsys, "compare", path, "--sizes", "8", "--repeat", "1")
    assert code == 1
    assert "FAIL" in out
    assert err.strip().splitlines() == [err.strip()] and "disagree at size 8" in err and "tolerance" in err


def test_compare_defaults_to_the_workloads_sizes_and_accepts_a_module_name(capsys, small, monkeypatch):
    monkeypatch.chdir(small.parent)
    code, out, err = run_main(capsys, "compare", "small_workload", "--repeat", "1")
    assert code == 0, err
    assert re.search(r"^\W*64\b", out, re.M) and re.search(r"^\W*256\b", out, re.M)


def test_compare_peers_are_measured_or_reported_missing(capsys, small, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed: import fails
    monkeypatch.setitem(sys.modules, "jax", None)
    code, out, err = run_main(capsys, "compare", small, "--sizes", "64", "--repeat", "1", "--peers", "torch,jax")
    assert code == 0, err
    assert "torch: not installed (pip install torch)" in out and "jax: not installed (pip install jax)" in out


FAKE_JAX = textwrap.dedent('''
    """A stand-in for JAX in tests: value_and_grad through eager, jit as the identity."""
    import numpy as _np

    import eager as _eager


    class numpy:  # noqa: N801  (jax.numpy)
        asarray = staticmethod(_np.asarray)


    def value_and_grad(fn, argnums):
        def run(*args):
            ts = [_eager.from_numpy(_np.array(a)).requires_grad_(i in argnums) for i, a in enumerate(args)]
            out = fn(*ts)
            out.backward()
            return out.detach().numpy(), tuple(ts[i].grad.numpy() for i in argnums)
        return run


    def jit(fn):
        return fn


    def block_until_ready(x):
        return x
''')


def test_compare_peers_run_in_a_child_process_and_are_checked(capsys, small, tmp_path, monkeypatch):
    fake = tmp_path / "fakes"
    (fake / "jax").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text(FAKE_JAX)
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    json_file = tmp_path / "peers.json"
    code, out, err = run_main(capsys, "compare", small, "--sizes", "64", "--repeat", "2", "--peers", "jax",
                              "--json", json_file)
    assert code == 0, err
    assert re.search(r"^\W*jax\b", out, re.M), out
    peer = json.loads(json_file.read_text())["results"][0]["peers"][0]
    assert peer["library"] == "jax" and peer["available"] and peer["max_rel_error"] == 0.0
    assert len(peer["eager"]["samples_s"]) == 2 and len(peer["compiled"]["samples_s"]) == 2


def test_compare_plot_writes_a_png(capsys, small, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "runtime.png"
    code, out, err = run_main(capsys, "compare", small, "--sizes", "64,256", "--repeat", "1", "--plot", png)
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in out


def test_compare_plot_without_matplotlib_says_what_to_install(capsys, small, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "installed", lambda name: name != "matplotlib")
    code, out, err = run_main(capsys, "compare", small, "--plot", tmp_path / "x.png")
    assert code == 2 and out == ""
    assert err.strip() == "graphmode: error: --plot needs matplotlib, which is not installed: pip install " \
                          "'graphmode[plot]'"


@pytest.mark.parametrize("name,size", [("w1_seed.py", "100"), ("w2_gelu.py", "1e3"), ("w3_mlp.py", "8x16x16x4"),
                                       ("w4_scalar.py", "10"), ("mlp_step.py", "64")])
def test_every_example_workload_compares_and_agrees(capsys, name, size):
    code, out, err = run_main(capsys, "compare", WORKLOADS / name, "--sizes", size, "--repeat", "1")
    assert code == 0, err
    assert "agreement:" in out


# -- ir --------------------------------------------------------------------------------------------
def test_ir_prints_every_stage_then_the_generated_source(capsys, small):
    code, out, err = run_main(capsys, "ir", small)
    assert code == 0, err
    stages = re.findall(r"^== (.+?) ==", out, re.M)
    assert stages[:3] == ["summary", "traced", "verified"] and "fuse" in stages and "memory" in stages
    assert "func @" in out and "fused" in out


def test_ir_one_stage_and_the_source(capsys, small):
    code, out, err = run_main(capsys, "ir", small, "--stage", "fuse", "--size", "16")
    assert code == 0, err
    assert re.findall(r"^== (.+?) ==", out, re.M)[0] == "fuse" and "== traced ==" not in out
    assert "f32[16]" in out
    code, out, err = run_main(capsys, "ir", small, "--source")
    assert code == 0 and "== " not in out.splitlines()[0]
    assert "def forward(" in out or "interpreter" in out


def test_ir_unknown_stage_lists_the_stages(capsys, small):
    code, out, err = run_main(capsys, "ir", small, "--stage", "nonsense")
    assert code == 2 and out == ""
    assert err.startswith("graphmode: error: no stage named 'nonsense'; stages: summary, traced, verified") and \
        err.count("\n") == 1


# -- graph ----------------------------------------------------------------------------------------
def test_graph_static_writes_dot_with_clusters_and_saved_values(capsys, small, tmp_path):
    out_file = tmp_path / "static.dot"
    code, out, err = run_main(capsys, "graph", small, "--mode", "static", "-o", out_file, "--detail", "ops")
    assert code == 0, err
    text = out_file.read_text()
    assert text.startswith("digraph") and text.rstrip().endswith("}")
    assert "cluster_forward" in text and "cluster_backward" in text and "cluster_fused0" in text
    assert "cluster_legend" in text
    assert "gradient of %a" in text and "%w4" in text
    assert f"wrote {out_file}" in out
    code, out, err = run_main(capsys, "graph", small, "--mode", "static", "-o", out_file)  # default: regions
    assert code == 0, err
    collapsed = out_file.read_text()
    assert "cluster_fused" not in collapsed and "fused #0:" in collapsed and "gradient of %a" in collapsed


def test_graph_eager_writes_the_backward_graph(capsys, small, tmp_path):
    out_file = tmp_path / "eager.dot"
    code, out, err = run_main(capsys, "graph", small, "--mode", "eager", "-o", out_file)
    assert code == 0, err
    text = out_file.read_text()
    assert "MulBackward0" in text and "SumBackward0" in text and "AccumulateGrad" in text
    assert '"w3\\n(64,)"' in text  # leaves are named by the function's parameters


def test_graph_without_graphviz_writes_dot_and_explains(capsys, small, tmp_path, monkeypatch):
    monkeypatch.setattr(draw, "find_dot", lambda: None)
    code, out, err = run_main(capsys, "graph", small, "-o", tmp_path / "g.svg")
    # the picture asked for was not made: not a success, but not a usage error either
    assert code == cli.TOOL_MISSING == 4, err
    assert (tmp_path / "g.dot").exists() and not (tmp_path / "g.svg").exists()
    assert out == "" and err.count("\n") == 1 and "dot -Tsvg" in err and "not installed" in err


@pytest.mark.skipif(draw.find_dot() is None, reason="Graphviz is not installed")
def test_graph_renders_svg_with_graphviz(capsys, small, tmp_path):
    code, out, err = run_main(capsys, "graph", small, "-o", tmp_path / "g.svg")
    assert code == 0, err
    assert "<svg" in (tmp_path / "g.svg").read_text()


# -- errors: one line on stderr, non-zero status, no traceback -------------------------------------
def _no_workload(tmp_path: Path) -> Path:
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    return path


def _broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.py"
    path.write_text("def workload(size:\n")
    return path


def _bad_return(tmp_path: Path) -> Path:
    path = tmp_path / "bad_return.py"
    path.write_text("def workload(size):\n    return 42\n")
    return path


ERRORS = [
    (lambda t, s: ["compare", t / "missing.py"], 2, "no such file: "),
    (lambda t, s: ["compare", "no_such_module_anywhere"], 2, "no such file or module: no_such_module_anywhere"),
    (lambda t, s: ["compare", _no_workload(t)], 2, "has no workload: define workload(size) -> (fn, args)"),
    (lambda t, s: ["compare", _broken(t)], 2, "syntax error at line 1"),
    (lambda t, s: ["compare", _bad_return(t), "--sizes", "8"], 2, "workload(8) must return (fn, args)"),
    (lambda t, s: ["compare", s, "--sizes", "1e4,big"], 2, "size 'big' does not parse"),
    (lambda t, s: ["compare", s, "--sizes", "2.5"], 2, "size '2.5' does not parse"),
    (lambda t, s: ["compare", s, "--sizes", ","], 2, "no sizes given"),
    (lambda t, s: ["compare", s, "--repeat", "0"], 2, "--repeat must be at least 1"),
    (lambda t, s: ["compare", s, "--peers", "tensorflow"], 2, "unknown peer 'tensorflow'"),
    (lambda t, s: ["compare", s, "--backend", "cupy"], 2, "backend cupy runs on the GPU"),
    (lambda t, s: ["compare", s, "--device", "tpu"], 2, "invalid choice: 'tpu'"),
    (lambda t, s: ["graph", s, "-o", t / "g.bmp"], 2, "use a file ending in .svg, .png, .pdf, .dot"),
    (lambda t, s: ["graph", s, "-o", t / "nowhere" / "g.svg"], 2, "does not exist"),
    (lambda t, s: ["frobnicate"], 2, "invalid choice: 'frobnicate'"),
]

# checked before anything is measured: nothing on stdout, no table, no progress
EARLY_ERRORS = [
    (lambda t, s: ["compare", s, "--json", t / "missing" / "x.json"], "directory"),
    (lambda t, s: ["compare", s, "--json", t], "is a directory"),
    (lambda t, s: ["compare", s, "--plot", t / "chart.bmp"], "use a file ending in .png, .svg, .pdf"),
    (lambda t, s: ["compare", s, "--plot", t / "missing" / "chart.png"], "does not exist"),
    (lambda t, s: ["compare", s, "--tolerance=-1e-3"], "--tolerance must be a finite number of at least 0"),
    (lambda t, s: ["compare", s, "--tolerance", "nan"], "--tolerance must be a finite number"),
    (lambda t, s: ["compare", WORKLOADS / "w1_seed.py", "--sizes", "1e2,4x8"], "size 4x8 does not fit this workload"),
]


@pytest.mark.parametrize("make_argv,message", EARLY_ERRORS)
def test_bad_arguments_fail_before_measuring(capsys, tmp_path, small, make_argv, message, monkeypatch):
    import graphmode.cli  # noqa: PLC0415

    monkeypatch.setattr(graphmode.cli, "compare", lambda *a, **k: pytest.fail("measured before checking"))
    code, out, err = run_main(capsys, *make_argv(tmp_path, small))
    assert code == 2 and out == "", out
    assert err.startswith("graphmode: error: ") and message in err and err.count("\n") == 1, err


def test_the_internal_peer_command_is_not_suggested(capsys):
    code, out, err = run_main(capsys, "peer")
    assert code == 2 and "invalid choice" in err and "_peer" not in err and "'compare'" in err
    code, out, _ = run_main(capsys, "--help")
    assert "_peer" not in out


@pytest.mark.parametrize("make_argv,status,message", ERRORS)
def test_errors_are_one_line_with_a_status(capsys, tmp_path, small, make_argv, status, message):
    code, out, err = run_main(capsys, *make_argv(tmp_path, small))
    assert code == status
    assert err.startswith("graphmode: error: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.skipif(eager.cuda.is_available(), reason="a GPU is available here")
def test_cuda_device_that_is_not_available(capsys, small):
    code, out, err = run_main(capsys, "compare", small, "--device", "cuda")
    assert code == 2 and err.strip() == ("graphmode: error: device cuda is not available: it needs CuPy and a GPU "
                                         "(pip install 'graphmode[cuda12]')")


def test_an_error_inside_the_workload_is_one_line_unless_traceback_is_asked(capsys, tmp_path):
    path = tmp_path / "data_dependent.py"
    path.write_text(textwrap.dedent('''
        import eager

        def branchy(x):
            if x.sum() > 0:
                return (x * 2).sum()
            return x.sum()

        def workload(size):
            return branchy, (eager.ones(size, requires_grad=True),)
    '''))
    code, out, err = run_main(capsys, "compare", path, "--sizes", "4")
    assert code == cli.WORKLOAD_FAILED and err.count("\n") == 1 and "TraceError" in err and "data_dependent.py:5" in err
    with pytest.raises(Exception, match="traced value"):
        cli.main(["compare", str(path), "--sizes", "4", "--traceback"])


def test_version_and_help(capsys):
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and re.fullmatch(r"graphmode \S+\n", out)
    code, out, _ = run_main(capsys, "compare", "--help")
    assert code == 0 and "--sizes" in out and "--peers" in out and "--plot" in out
    code, out, err = run_main(capsys)
    assert code == 2 and "compare" in err


# -- a real process -------------------------------------------------------------------------------
def _subprocess(*argv: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "graphmode", *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_python_m_graphmode_runs_compare_and_reports_errors_without_traceback(small, tmp_path):
    ok = _subprocess("compare", str(small), "--sizes", "64", "--repeat", "1", "--json", str(tmp_path / "r.json"))
    assert ok.returncode == 0, ok.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert "eager vs compiled fwd+bwd" in ok.stdout and data["results"]
    if sys.platform.startswith("linux"):  # glibc: the command steadies malloc by default
        assert "malloc steady" in ok.stdout and data["malloc"].startswith("steady")
    bad = _subprocess("compare", str(tmp_path / "missing.py"))
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == f"graphmode: error: no such file: {tmp_path / 'missing.py'}\n"
