"""Every label names what ran: with a C++ compiler, backend="auto" runs the native backend,
and the report, the tables and the JSON say "native", not the NumPy backend "auto" falls
back to without one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import eager
from graphmode import cli
from static.compare import compare, resolved_backend

ROOT = Path(__file__).resolve().parents[2]


def _native_available() -> bool:
    try:
        from codegen import native_build
    except ImportError:
        return False
    return bool(native_build.availability()[0])


def _loss(x):
    return (x * x).tanh().sum()


def test_numpy_is_named_when_native_is_switched_off(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "0")
    assert resolved_backend("auto", "cpu") == "numpy"
    report = compare(_loss, eager.randn(64, requires_grad=True), repeat=1)
    assert report.backend == "numpy" and "(numpy backend" in str(report)


@pytest.mark.skipif(not _native_available(), reason="no C++ compiler: 'auto' runs NumPy code here")
def test_native_is_named_when_auto_picks_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "1")
    assert resolved_backend("auto", "cpu") == "native"
    report = compare(_loss, eager.randn(64, requires_grad=True), repeat=1)
    assert report.backend == "native" and "(native backend" in str(report)
    assert report.to_dict()["backend"] == "native"
    out = tmp_path / "r.json"
    code = cli.main(["compare", str(ROOT / "examples/workloads/w1_seed.py"), "--sizes", "64", "--repeat", "1",
                     "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    data = json.loads(out.read_text())
    assert data["backend"] == "native" and data["backend_requested"] == "auto"
    assert all(r["backend"] == "native" for r in data["results"])
    assert ": native on cpu" in printed


def test_an_explicit_backend_is_named_as_asked(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "1")
    report = compare(_loss, eager.randn(64, requires_grad=True), repeat=1, backend="interpret")
    assert report.backend == "interpret"
    assert compare(_loss, eager.randn(64, requires_grad=True), repeat=1, backend="numpy").backend == "numpy"


@pytest.mark.skipif(not _native_available(), reason="no C++ compiler")
def test_native_source_shows_the_kernels_first_and_the_prelude_by_reference():
    import static

    compiled = static.compile(_loss, backend="native")
    x = eager.randn(4096)
    short, full = compiled.source(x), compiled._entry_for((x,), {})[3].forward.source(full=True)
    assert len(short.splitlines()) < len(full.splitlines()) - 100
    assert "shared prelude" in short and "source(full=True)" in short
    kernel = short.index('extern "C" void gm_region0')
    assert short.index("shared prelude") < kernel < short.index("def forward")
    assert short.count("// L") <= full.count("// L")  # the kernels cite the IR; its C++ copy is not shown
    assert "gm_inf" not in short[:kernel] and "gm_inf" in full  # the helpers are in the full text only
