"""The README says what the code does: its quick examples print what it shows, and its table
of environment variables names every GRAPHMODE_* variable the packages read."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks_after(heading: str) -> list[str]:
    """The fenced code blocks of the README section that starts at `heading`."""
    start = README.index(heading)
    end = README.find("\n## ", start + len(heading))
    section = README[start:end if end != -1 else None]
    return re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)


def _run(code: str, filename: str = "README.md") -> tuple[str, dict]:
    """What the README's code prints, and the names it defines (run as if from `filename`)."""
    out, namespace = io.StringIO(), {"__name__": "readme_example"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, filename, "exec"), namespace)  # noqa: S102  (the README's own code)
    return out.getvalue(), namespace


def test_every_graphmode_environment_variable_is_in_the_readme_table():
    used = set()
    for package in ("gmbase", "gmnative", "gmops", "eager", "static", "codegen", "graphmode"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(re.findall(r"GRAPHMODE_[A-Z_]*[A-Z]", path.read_text(encoding="utf-8")))
    table = README[README.index("## Environment variables"):]
    table = table[:table.find("\n## ", 1)]
    documented = set(re.findall(r"^\| `(GRAPHMODE_[A-Z_]+)`", table, flags=re.M))
    assert used, "no GRAPHMODE_ variable found: the scan is broken"
    assert used <= documented, f"not in the README's table: {sorted(used - documented)}"


def test_the_eager_example_prints_what_the_readme_shows():
    (code,) = _blocks_after("## Eager in five lines")[:1]
    shown = next(line[2:] for line in code.splitlines() if line.startswith("# tensor("))
    assert _run(code)[0].strip() == shown


def test_the_static_example_prints_the_ir_the_readme_shows(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "0")
    code, ir, generated = _blocks_after("## Static in five lines")[:3]
    # run from a file loss.py, as the generated code's comments show
    printed, names = _run(code.replace("print(loss(x, w))", "loss(x, w)").replace("print(loss.source(x, w))", ""),
                          "loss.py")
    assert printed.strip() == ir.strip()
    source = names["loss"].source(names["x"], names["w"])
    assert generated.strip() in source, source


# -- the figures of the README's output blocks, timings aside ------------------------------------------
_TIMING = [
    (re.compile(r"\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s)\b"), "T"),  # a time
    (re.compile(r"±\d+%"), "±P"),  # its spread
    (re.compile(r"\d+\.\d+x"), "Rx"),  # a speedup
    (re.compile(r"\d(?:\.\d+)?e[+-]\d\d"), "E"),  # an error: rounding differs by backend and machine
]


def _figures(text: str) -> list[str]:
    """Lines with timings masked and table layout (rules, padding) ignored."""
    out = []
    for line in text.splitlines():
        for pattern, mask in _TIMING:
            line = pattern.sub(mask, line)
        line = " ".join(line.replace("─", "").split())
        if line:
            out.append(line)
    return out


def _block_after(marker: str) -> str:
    """The first fenced block after `marker` in the README."""
    start = README.index(marker)
    return re.search(r"```[a-z]*\n(.*?)```", README[start:], flags=re.S).group(1)


def _auto_backend() -> str:
    from static.compare import resolved_backend

    return resolved_backend("auto", "cpu")


def test_the_demo_output_shows_the_readmes_figures(capsys, monkeypatch):
    from graphmode import cli

    monkeypatch.setenv("COLUMNS", "80")
    shown = _block_after("Its first output\nlooks like this")
    code = cli.main(["compare", str(ROOT / "examples/workloads/w2_gelu.py"), "--sizes", "1e4,1e6", "--repeat", "5"])
    printed = capsys.readouterr().out
    assert code == 0
    # the README shows the default path with a C++ compiler; the suite may run "auto" on NumPy
    expected = shown.replace("native on cpu", f"{_auto_backend()} on cpu")
    assert _figures(printed) == _figures(expected)


def test_the_compare_report_shows_the_readmes_figures(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "0")  # as the README's label says
    code, _ir, _generated = _blocks_after("## Static in five lines")[:3]
    _, names = _run(code.replace("print(", "(").replace("loss.source(x, w)", "None"), "loss.py")
    snippet = _block_after("The same measurement from Python returns a report object")
    assert snippet.startswith("report = static.compare(loss, x, w, repeat=5)")
    report = names["static"].compare(names["loss"], names["x"], names["w"], repeat=5)
    shown = _block_after("\nprints\n")
    assert _figures(str(report)) == _figures(shown)


def test_cache_info_prints_the_readmes_lines(capsys, monkeypatch, tmp_path):
    from graphmode import cli

    shown = _block_after("### `graphmode cache`")
    info = shown.split("$ graphmode cache clear")[0].splitlines()[1:]
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path))
    assert cli.main(["cache", "info"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == [line.split(":")[0] for line in info]
    assert printed[2:3] == info[2:3] and printed[4] == info[4]  # "disk cache: on", the bound


def test_the_errors_the_readme_shows(capsys):
    from graphmode import cli

    shown = _block_after("measured, e.g.")
    pairs = re.findall(r"^\$ graphmode (.*)\n(graphmode: error: .*)$", shown, flags=re.M)
    assert len(pairs) == 2
    for command, message in pairs:
        argv = [a if not a.endswith(".py") else str(ROOT / a) for a in command.split()]
        code = cli.main(argv)
        err = capsys.readouterr().err.strip()
        assert code == cli.USAGE_ERROR and err == message


def test_the_explain_sections_the_readme_names_exist():
    import eager
    import static

    @static.compile
    def loss(x, w):
        return (eager.tanh(x * x) * w).sum()

    text = loss.explain(eager.randn(64), eager.randn(64, requires_grad=True))
    headers = [line[3:].split(" ==")[0] for line in text.splitlines() if line.startswith("== ")]
    table = README[README.index("## Reading `explain`"):README.index("`graphmode ir TARGET --stage NAME`")]
    names = re.findall(r"^\| `([^`]+)`", table, flags=re.M)
    assert headers[0] == "summary" and names[0] == "summary"
    for name in names:
        stem = re.split(r" \(| \.\.\.", name)[0].rstrip(": .")
        assert any(h == stem or h.startswith(stem) or h.endswith(": " + stem) for h in headers), (name, headers)


def test_the_trace_errors_the_readme_tabulates():
    import eager
    import static

    table = README[README.index("| you write, inside a compiled function |"):]
    table = table[:table.index("\n\n")]
    rows = re.findall(r"^\| `([^`]+)`.*?\| `TraceError: f\.py:\d+: (.*?)(?: \.\.\.)?` ", table, flags=re.M)
    assert len(rows) == 3
    bodies = {"if x.sum() > 0:": lambda x: (x * 2).sum() if x.sum() > 0 else x.sum(),
              "x.sum().item()": lambda x: x.sum().item() * x.sum(),
              "x[x > 0]": lambda x: x[x > 0].sum()}
    for code, message in rows:
        with pytest.raises(static.TraceError) as info:
            static.compile(bodies[code])(eager.randn(8))
        text = str(info.value)
        assert re.match(r"\S+\.py:\d+: ", text)
        assert text.split(": ", 1)[1].startswith(message.split(" ...")[0]), (code, text)


def test_the_performance_tables_graph_figures_are_the_current_trees():
    """IR nodes traced -> optimized, fused kernels and planned peak memory of each row of
    the Performance table (NumPy backend): what `graphmode compare` prints, without timing."""
    from graphmode.ir_commands import _compiled_for
    from graphmode.workload import load_workload, parse_size
    from static import trace
    from static.compare import count_fused, format_bytes

    files = {"W1 seed": "w1_seed.py", "W2 gelu": "w2_gelu.py", "W3 mlp": "w3_mlp.py", "W4 scalar": "w4_scalar.py",
             "MLP step": "mlp_step.py"}
    table = README[README.index("| workload | size | eager | compiled | speedup | compile cold / warm |"):]
    rows = re.findall(r"^\| (W\d \w+|MLP step) \| (\S+)[^|]*\|(?:[^|]*\|){4} (\d+) → (\d+) \| (\d+) \| ([^|]+) \|",
                      table[:table.index("\n\n")], flags=re.M)
    assert len(rows) == 11
    for name, size, before, after, fused, peak in rows:
        workload = load_workload(str(ROOT / "examples" / "workloads" / files[name]))
        fn, args = workload.build(parse_size(size), size)
        compiled, plain = _compiled_for(fn, args, "numpy")
        final = compiled.ir(*plain)
        plan = final.memory_plan
        got = (len(trace(compiled, *plain).nodes), len(final.nodes), count_fused(final),
               format_bytes(plan.peak_bytes if plan is not None else None))
        assert got == (int(before), int(after), int(fused), peak.strip()), (name, size)
