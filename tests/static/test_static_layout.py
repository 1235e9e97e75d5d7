"""static's layout by job (docs/architecture.md, "Files"): tracing/, training/, jit/, with every
module's old flat name kept as the same module object, and docs that name the files as they are.

An old name that were a copy rather than the module itself would split state (two ACTIVE trace
stacks, two backend registries) and a monkeypatch through it would miss the real global: both
are checked here by identity."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import static

ROOT = Path(__file__).resolve().parents[2]

# old name -> the module that does that job now
MOVED = {
    "static.compiled": "static.jit.compiled", "static.entry": "static.jit.entry",
    "static.signature": "static.jit.signature", "static.bridge": "static.jit.bridge",
    "static.check": "static.jit.check", "static.stages": "static.jit.stages",
    "static.executable": "static.jit.executable", "static.trace_cache": "static.jit.trace_cache",
    "static.dynamic_shapes": "static.jit.dynamic_shapes", "static.graph_breaks": "static.jit.graph_breaks",
    "static.explain_summary": "static.jit.explain_summary",
    "static.trace_state": "static.tracing.state", "static.trace_record": "static.tracing.record",
    "static.tracer": "static.tracing.tracer", "static.trace_function": "static.tracing.function",
    "static.pytree": "static.tracing.pytree", "static.symbolic": "static.tracing.symbolic",
    "static.randomness": "static.tracing.randomness", "static.side_effects": "static.tracing.side_effects",
    "static.shared_memory": "static.tracing.shared_memory", "static.reach": "static.tracing.reach",
    "static.custom_function": "static.tracing.custom_function", "static.guards": "static.tracing.guards",
    "static.update_templates": "static.training.update_templates",
}
DOCS = ("docs/architecture.md", "docs/compiled-semantics.md", "CONTRIBUTING.md", "README.md")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_name_is_the_module_itself(old):
    new = importlib.import_module(MOVED[old])
    assert importlib.import_module(old) is new
    assert sys.modules[old] is new
    assert getattr(static, old.split(".")[1]) is new  # static.<old> as an attribute, too
    assert (ROOT / Path(*MOVED[old].split("."))).with_suffix(".py").is_file()


def test_a_patch_through_an_old_name_reaches_the_global_the_code_reads(monkeypatch):
    import static.jit.lookup as lookup
    import static.tracer as old_tracer

    monkeypatch.setattr(old_tracer, "_PROBE_ATTRIBUTE", 1, raising=False)
    assert importlib.import_module("static.tracing.tracer")._PROBE_ATTRIBUTE == 1
    assert lookup.call_key is importlib.import_module("static.jit.signature").call_key


def test_the_training_package_keeps_the_names_of_the_module_it_was():
    """static.training was one module; its names used elsewhere are re-exported, the same
    objects as in the module of each job, and importing it registers the tracer's hooks."""
    import static.training as training
    from eager.optim import optimizer
    from static.tracing.tracer import BACKWARD_HOOK
    from static.training import backward, bindings, guards, step

    assert training.CallPrep is bindings.CallPrep and training.call_prep is bindings.call_prep
    assert training.traced_backward is backward.traced_backward is BACKWARD_HOOK.fn
    assert training.traced_step is step.traced_step is optimizer.TRACE_HOOK.fn
    assert training.OptimizerStateGuard is guards.OptimizerStateGuard and training.FedNumber is step.FedNumber


def test_trace_is_the_function_and_tracing_the_package():
    """`static.trace` is the public function; the tracing modules' package is static.tracing,
    reachable with every import form (a package named `trace` would make `import
    static.trace.tracer as t` hand back an attribute lookup on the function)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import static
        import static.tracing.tracer as t
        import static.jit.compiled as c
        assert callable(static.trace) and static.trace.__module__ == 'static.tracing.function'
        assert t.Tracer.__module__ == 'static.tracing.tracer' and static.tracing.tracer is t
        assert c.compile is static.compile
        print('ok')
    """)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_every_static_path_the_docs_name_exists():
    missing = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for m in re.finditer(r"`(static/[\w/.]*)`", text):
            path = m.group(1)
            if not (ROOT / path).exists():
                missing.append(f"{doc}: {path}")
    assert not missing, missing


def test_no_static_module_is_over_the_bound():
    """The split this layout came from: no module of static over 600 lines."""
    over = {str(p.relative_to(ROOT)): n for p in (ROOT / "static").rglob("*.py")
            if "__pycache__" not in p.parts and (n := len(p.read_bytes().splitlines())) > 600}
    assert not over, over


def test_the_methods_written_beside_compiled_are_named_as_its_methods():
    """Compiled's cache, call path and inspection methods live in jit/lookup.py, call.py and
    introspect.py; bound on the class they read as its own (reprs, getattr by name)."""
    from static.jit import call, introspect, lookup

    c = static.compile(lambda x: x)
    for name in ("__call__", "_lookup", "_miss", "_run", "explain", "ir", "source", "lower", "entries"):
        method = vars(static.Compiled)[name]
        assert method.__module__ in (call.__name__, introspect.__name__, lookup.__name__), name
        assert method.__qualname__ == f"Compiled.{name}" and getattr(c, method.__name__).__func__ is method


def test_the_api_pages_name_the_modules_themselves_not_their_old_names():
    """The API pages are built by reading the source (mkdocstrings), which cannot follow an
    old name registered in sys.modules at run time: they name each object's real module."""
    named = [n for page in (ROOT / "docs" / "api").glob("*.md")
             for n in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), flags=re.M)]
    through_old = [n for n in named if any(n == old or n.startswith(old + ".") for old in MOVED)]
    assert not through_old, through_old
