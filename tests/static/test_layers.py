"""Layers import one way, backends never fall back silently, and each declares what it can do.

The whole import order is checked over the source by tests/test_import_contracts.py; this
file keeps the fresh-interpreter checks of what the packages load, the backend registry and
the backends' capabilities (static.executable.Capabilities).

`import static.ir` (what codegen needs) loads the IR alone; `import codegen` loads nothing
of static but the IR; nothing below the product imports the `graphmode` package. Each
check runs in a fresh interpreter so that what earlier tests imported does not count."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import eager
import static
from static import executable

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, *, path: list[str] = (), cwd: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*path, str(ROOT)])
    env.pop("GRAPHMODE_LOGS", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=cwd or str(ROOT), timeout=120, check=False)


def _loaded_after(statement: str) -> list[str]:
    proc = _python(f"""
        import json, sys
        {statement}
        print(json.dumps(sorted(m for m in sys.modules
                                if m.split('.')[0] in ('static', 'codegen', 'graphmode', 'rich', 'matplotlib'))))
    """)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_static_ir_loads_the_ir_only():
    loaded = _loaded_after("import static.ir")
    assert all(m == "static" or m.startswith(("static.ir", "static.errors")) for m in loaded), loaded


def test_import_codegen_imports_nothing_of_static_but_the_ir():
    loaded = _loaded_after("import codegen")
    static_modules = [m for m in loaded if m.split(".")[0] == "static"]
    assert all(m == "static" or m.startswith(("static.ir", "static.errors")) for m in static_modules), loaded
    assert not [m for m in loaded if m.split(".")[0] in ("graphmode", "rich", "matplotlib")], loaded


@pytest.mark.parametrize("statement", ["import eager", "import static; static.compile", "import codegen",
                                       "import static; static.compare"])
def test_the_library_never_imports_the_product_package(statement):
    loaded = _loaded_after(statement)
    assert not [m for m in loaded if m.split(".")[0] in ("graphmode", "rich", "matplotlib")], loaded


def test_public_names_resolve_lazily_and_trace_stays_the_function():
    proc = _python("""
        import sys, static
        assert 'static.api' not in sys.modules
        import static.trace_function, static.compare      # static.compare's submodule shares its name
        assert callable(static.trace) and static.trace.__module__ == 'static.tracing.function', static.trace
        assert static.compare.__module__ == 'static.compare' and callable(static.compare)
        assert static.compile.__module__ == 'static.jit.compiled'
        import static.tracing.tracer, static.jit.executable   # the modules' homes: tracing/ and jit/
        assert static.tracer is static.tracing.tracer and static.executable is static.jit.executable
        assert sys.modules['static.trace_function'] is static.tracing.function  # old names: the same objects
        assert static.passes.__name__ == 'static.passes'   # submodules still reachable as attributes
        assert set(static.__all__) <= set(dir(static))
        try:
            static.no_such_name
        except AttributeError as exc:
            assert 'no_such_name' in str(exc)
        else:
            raise SystemExit('no AttributeError')
        print('ok')
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# -- the backend registry --------------------------------------------------------------------------
_USE_BACKEND = """
    import warnings
    import eager, static
    warnings.simplefilter('always')
    def f(x):
        return (x * x).sum()
    x = eager.ones(4)
    for backend in BACKENDS:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                value = float(static.compile(f, backend=backend)(x))
                value += 10 * float(static.compile(lambda x: (x + x).sum(), backend=backend)(x))
            print(backend, 'ok', value, '|'.join(f'{w.category.__name__}: {w.message}' for w in caught))
        except Exception as exc:
            print(backend, 'error', type(exc).__name__, exc)
"""


def _run_backends(tmp_path: Path, fake_codegen: str, backends: tuple[str, ...]) -> dict[str, str]:
    (tmp_path / "codegen.py").write_text(fake_codegen)
    proc = _python(f"BACKENDS = {backends!r}\n" + textwrap.dedent(_USE_BACKEND), path=[str(tmp_path)],
                   cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in proc.stdout.strip().splitlines()}


def test_a_shadowing_codegen_module_is_an_error_naming_it(tmp_path):
    out = _run_backends(tmp_path, "# a user's script that happens to be called codegen.py\n", ("numpy", "cupy"))
    for backend in ("numpy", "cupy"):
        assert out[backend].startswith("error BackendError"), out
        assert "codegen.py" in out[backend] and "shadowing" in out[backend], out[backend]


def test_a_codegen_that_fails_to_import_is_an_error_naming_the_cause(tmp_path):
    out = _run_backends(tmp_path, "import jinja2_that_is_missing\n", ("numpy",))
    assert out["numpy"].startswith("error BackendError"), out
    assert "jinja2_that_is_missing" in out["numpy"], out


def test_auto_falls_back_to_the_interpreter_and_warns_once(tmp_path):
    (tmp_path / "codegen.py").write_text("raise ImportError('no code generator here')\n")
    proc = _python("BACKENDS = ('auto', 'auto', 'interpret')\n" + textwrap.dedent(_USE_BACKEND),
                   path=[str(tmp_path)], cwd=str(tmp_path))
    lines = proc.stdout.strip().splitlines()
    assert [line.split()[1:3] for line in lines] == [["ok", "84.0"]] * 3, proc.stdout + proc.stderr
    first, second, interp = lines
    assert "BackendFallbackWarning" in first and "no code generator here" in first, first
    assert first.count("Warning") == 1 and "Warning" not in second and "Warning" not in interp, lines


def test_the_real_codegen_is_what_numpy_runs():
    compiled = static.compile(lambda x: (x * 2.0).sum(), backend="numpy")
    x = eager.arange(4.0)
    assert float(compiled(x)) == 12.0
    assert "backend: numpy" in compiled.explain(x)


def test_registering_a_backend_is_one_call():
    calls = []

    class Doubled:
        def __init__(self, graph):
            self.inner = executable.InterpretedGraph(graph)

        def run(self, arrays):
            calls.append(len(arrays))
            return self.inner.run(arrays)

    executable.register_backend("test-fake", lambda graph, name, **options: Doubled(graph))
    try:
        assert "test-fake" in executable.backend_names()
        graph = static.trace(lambda x: (x * x).sum(), eager.ones(3))
        exe = executable.build_executable(graph, "test-fake")
        (result,) = exe.run([np.ones(3, np.float32)])
        assert float(result) == 3.0 and calls == [1]
        with pytest.raises(ValueError, match="already registered"):
            executable.register_backend("test-fake", lambda graph, name, **options: None)
    finally:
        executable.unregister_backend("test-fake")
    with pytest.raises(static.BackendError, match="unknown backend 'test-fake'"):
        executable.build_executable(graph, "test-fake")


def test_a_lazy_backend_target_is_checked_when_first_used():
    executable.register_backend("test-missing", "no_such_module_for_graphmode:build")
    try:
        assert not executable.backend_available("test-missing")
        graph = static.trace(lambda x: x.sum(), eager.ones(2))
        with pytest.raises(static.BackendError, match="no_such_module_for_graphmode"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                executable.build_executable(graph, "test-missing")
    finally:
        executable.unregister_backend("test-missing")
    with pytest.raises(TypeError, match="module:attribute"):
        executable.register_backend("test-bad", "not a target")


# -- capabilities: what a backend can spell is the backend's fact, not the op's ---------------------
def test_an_op_without_a_c_expression_is_fusible_and_each_backend_declares_what_it_inlines():
    from eager.ops import REGISTRY

    # remainder keeps no C expression: integer division by zero must raise, which a kernel cannot
    remainder = REGISTRY["remainder"]
    assert remainder.fusible and remainder.pointwise  # a fact of the op
    assert executable.capabilities("native").row_regions and not executable.capabilities("numpy").row_regions
    assert executable.inline_predicate("interpret") is None
    for backend in ("numpy", "native", "cupy"):
        inline = executable.inline_predicate(backend)
        assert inline is not None and not inline(remainder) and inline(REGISTRY["exp"]), backend

    def f(x):
        return (eager.remainder(x * 1.5, 2.0) + 1.0).sum()

    x = eager.arange(12.0).reshape(3, 4)
    numpy_graph = static.compile(f, backend="numpy")
    assert float(numpy_graph(x)) == float(f(x))
    assert "remainder (elementwise) is not inlined by this backend" in numpy_graph.explain(x)

    executable.register_backend("test-inlines-all", lambda graph, name, **options: executable.InterpretedGraph(graph))
    executable.declare_capabilities("test-inlines-all", executable.Capabilities(inline=None))
    try:
        graph = static.trace(f, x)
        assert float(executable.build_executable(graph, "test-inlines-all").run([x.numpy()])[0]) == float(f(x))
        from static.passes import run_pipeline

        fused = run_pipeline(graph, [], backend="test-inlines-all")
        body_ops = [n.op for node in fused.nodes if node.body is not None for n in node.body.nodes]
        assert "remainder" in body_ops, fused
        not_fused = run_pipeline(graph, [], backend="numpy")
        assert "remainder" not in [n.op for node in not_fused.nodes if node.body is not None for n in node.body.nodes]
    finally:
        executable.unregister_backend("test-inlines-all")
        executable._CAPABILITIES.pop("test-inlines-all", None)
