"""The import contracts: each layer imports only the layers below it.

Layers, lowest first (docs/architecture.md, "Layers"):

    base      gmbase: dtypes, floating-point state, threads, settings, the disk cache
    native    gmnative: C++ toolchain, shared-object cache, C caller, eager's kernels
    ops       gmops: the op records
    eager     the rest of eager: tensors, autograd, nn, optim, ...
    ir        static.ir (and static.errors, the exceptions it raises)
    static    the rest of static: tracing, autodiff, passes, compile
    codegen   code generators, loader, runtime
    tools     graphmode: the command line, reports, peers, drawings

Every import is checked, module-level or inside a function (a lazy import is still an
edge: it only moves the moment the upper layer loads), plus `importlib.import_module`
calls and `"module:attribute"` backend targets spelled as string literals. An edge to a
higher layer fails unless ALLOWED lists it with its reason. The list is the debt still owed:
shrink it, never grow it without a reason a reviewer accepts.

An old name kept as an alias of a moved module (eager.ops.* for gmops.*, eager._dtypes for
gmbase.dtypes, ...: ALIASES) is of the layer of the module it names.

A second group of tests runs fresh interpreters: `import static.ir` must load no module of
eager, `import gmops` nothing of eager, static or codegen, `import gmbase` and `import
gmnative` nothing at all, and `import codegen` nothing of static but the IR.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gmbase", "gmnative", "gmops", "eager", "static", "codegen", "graphmode")
ORDER = ("base", "native", "ops", "eager", "ir", "static", "codegen", "tools")

# Old names kept as the same module objects as their new homes (the file at the old path
# registers the alias in sys.modules): old name prefix -> new name prefix. An alias is of the
# layer of what it names.
ALIASES = {"eager.ops": "gmops", "eager._dtypes": "gmbase.dtypes", "eager._fpstate": "gmbase.fpstate",
           "eager._threads": "gmbase.threads", "codegen.cache": "gmbase.cache", "codegen.settings": "gmbase.settings",
           "codegen.native_build": "gmnative.build", "codegen.eager_kernels": "gmnative.kernels",
           "codegen.c_helpers": "gmnative.c_helpers"}


def real_name(module: str) -> str:
    """The module an old name is an alias of (the name itself when it is not one)."""
    for old, new in ALIASES.items():
        if module == old or module.startswith(old + "."):
            return new + module[len(old):]
    return module

# (importer prefix, imported prefix): upward edges that remain, each with its reason.
ALLOWED: dict[tuple[str, str], str] = {
    # eager -> static: PyTorch's own API reaches the compiler. All imports are inside functions,
    # run when the user calls them, so `import eager` loads nothing of static.
    ("eager._compile", "static"): "eager.compile is torch.compile's front door onto static.compile",
    ("eager._dynamo", "static"): "torch._dynamo's reset/explain/mark_dynamic act on static's caches and symbols",
    ("eager._higher_order_ops", "static.control_flow"): "torch.cond/while_loop/scan record one node inside a trace",
    ("eager.nn._hooks", "static.tracing.tracer"): "module hooks ask whether a trace is running",
    ("eager._logging", "static.logs"): "torch._logging.set_logs switches the compiler's logs (GRAPHMODE_LOGS)",
    # ops -> eager and above: records whose forward is itself a program
    ("gmops._batching", "eager._factories"): "a batch rule of a random op draws through eager's factories",
    ("gmops.control_flow", "eager._vmap"): "scan/cond batch rules run the body under vmap",
    ("gmops.control_flow", "static"): "scan/while/cond bodies are IR text, compiled at their first run",
    # static -> codegen: backends are registered as "module:attribute" strings and imported the
    # first time a graph asks (static.executable), so `import static` loads no generator
    ("static.jit.executable", "codegen"): "the backend registry's lazy targets and auto's choice",
    ("static.jit.compiled", "codegen.native"): "the native toolchain probe starts on a helper thread at compile",
    ("static.compare", "codegen"): "static.compare times the generated code and names auto's backend",
    ("static.jit.dynamic_shapes", "codegen"): "the checking build compares generated sources of two sizes",
    # ir -> static: a symbolic dimension's type lives with the rest of dynamic shapes
    ("static.ir.parser", "static.tracing.symbolic"): "parsing a symbolic dim makes a SymInt (a leaf module)",
}


def layer(module: str) -> str:
    """The layer of a module of the tree (by its dotted name; an alias by what it names)."""
    top = real_name(module).split(".")[0]
    if top == "gmbase":
        return "base"
    if top == "gmnative":
        return "native"
    if top == "gmops":
        return "ops"
    if top == "eager":
        return "eager"
    if top == "static":
        return "ir" if module.startswith(("static.ir", "static.errors")) else "static"
    if top == "codegen":
        return "codegen"
    return "tools"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve(importer: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file: statements at any depth,
    importlib.import_module("...") and "module:attribute" string targets. `root`: the
    directory the file's module name counts from (a probe file outside the tree)."""
    importer = _module_name(path, root)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(importer, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub if _is_module(sub) else target, node.lineno))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module":
                found.append((node.args[0].value, node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _TARGET.match(node.value):
            # "module:attribute", imported when first asked (backend factories, capabilities)
            found.append((node.value.split(":")[0], node.lineno))
    return [(m, line) for m, line in found if m.split(".")[0] in PACKAGES]


_TARGET = re.compile(r"^(?:" + "|".join(PACKAGES) + r")(?:\.\w+)*:\w+$")


def _allowed(importer: str, imported: str) -> bool:
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return any(under(importer, a) and under(imported, b) for a, b in ALLOWED)


def upward_edges() -> list[str]:
    bad = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            importer = _module_name(path)
            mine = ORDER.index(layer(importer))
            for imported, line in imports_of(path):
                if ORDER.index(layer(imported)) > mine and not _allowed(importer, imported):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {importer} ({layer(importer)}) imports "
                               f"{imported} ({layer(imported)})")
    return bad


def test_no_layer_imports_a_higher_one_outside_the_allow_list():
    bad = upward_edges()
    assert not bad, "upward imports (move the code down, or list the edge in ALLOWED with its reason):\n" + \
        "\n".join(bad)


def test_every_allowed_edge_is_still_used():
    """An entry nothing needs any more is removed, so the list stays the true debt."""
    used = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            importer = _module_name(path)
            for imported, _ in imports_of(path):
                if ORDER.index(layer(imported)) > ORDER.index(layer(importer)):
                    used |= {key for key in ALLOWED
                             if (importer == key[0] or importer.startswith(key[0] + "."))
                             and (imported == key[1] or imported.startswith(key[1] + "."))}
    assert set(ALLOWED) - used == set(), sorted(set(ALLOWED) - used)


def test_the_scanner_sees_lazy_imports_and_string_targets(tmp_path):
    """The checker itself: an import inside a function and an import_module string count."""
    source = textwrap.dedent("""
        import importlib
        def f():
            from static import api
            importlib.import_module("codegen.native")
        TARGET = "codegen.lowering:inlinable"
    """)
    path = ROOT / "gmnative" / "_contract_probe.py"
    try:
        path.write_text(source)
        found = {m for m, _ in imports_of(path)}
    finally:
        path.unlink()
    assert {"static.api", "codegen.native", "codegen.lowering"} <= found, found
    assert layer("gmnative.build") == "native" and layer("eager.ops.elementwise") == "ops" == layer("gmops._registry")
    assert layer("eager._dtypes") == "base" == layer("gmbase.cache") == layer("codegen.cache")
    assert layer("eager.ops") == "ops" and layer("eager.opsx") == "eager" and layer("codegen.native_build") == "native"
    assert layer("static.ir.core") == "ir" and layer("graphmode.cli") == "tools" and layer("eager.nn") == "eager"


# -- fresh interpreters ------------------------------------------------------------------------------
def _loaded_after(statement: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("GRAPHMODE_LOGS", None)
    code = textwrap.dedent(f"""
        import json, sys
        {statement}
        print(json.dumps(sorted(sys.modules)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT),
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_static_ir_loads_nothing_of_eager():
    """The IR reads dtypes from gmbase and TensorSpec/REGISTRY from gmops: eager (tensors,
    autograd, serialization, ...) is not a dependency of a graph."""
    loaded = _loaded_after("import static.ir")
    assert not [m for m in loaded if m.split(".")[0] in ("eager", "codegen", "graphmode")], loaded
    assert all(m == "static" or m.startswith(("static.ir", "static.errors")) for m in loaded
               if m.split(".")[0] == "static"), loaded
    assert {"gmops", "gmbase.dtypes", "static.ir.core"} <= set(loaded), loaded


def test_every_op_record_is_registered_by_gmops_alone():
    """A record defined in a higher layer is missing from a process that loads only the layers
    below it (codegen's lowering table once raised KeyError 'to_device' that way): the
    registry after `import gmops` is the registry after every package is loaded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = textwrap.dedent("""
        import json, gmops
        alone = set(gmops.REGISTRY)
        import codegen, eager, eager.distributions, eager.func, eager.linalg, eager.nn, eager.optim, eager.special
        import static, static.control_flow
        print(json.dumps(sorted(set(gmops.REGISTRY) - alone)))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT),
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_import_gmops_loads_nothing_above_the_native_layer():
    loaded = _loaded_after("import gmops")
    above = [m for m in loaded if m.split(".")[0] in PACKAGES and layer(m) not in ("base", "native", "ops")]
    assert not above, above
    assert "gmops.elementwise" in loaded, loaded


def test_import_gmbase_loads_nothing_of_graphmode():
    loaded = _loaded_after("import gmbase")
    assert [m for m in loaded if m.split(".")[0] in PACKAGES] == ["gmbase"], loaded
    # each base module on its own loads only the base layer
    loaded = _loaded_after("import gmbase.dtypes, gmbase.fpstate, gmbase.threads, gmbase.cache, gmbase.settings, "
                           "gmbase.errors, gmbase.version")
    assert {m.split(".")[0] for m in loaded if m.split(".")[0] in PACKAGES} == {"gmbase"}, loaded


def test_the_thread_count_is_one_value_in_the_base_layer():
    """eager.set_num_threads writes gmbase.threads' count without importing codegen; the native
    layer and codegen.runtime.CONFIG.threads read (and write) the same value."""
    loaded = _loaded_after("import eager; eager.set_num_threads(3); assert eager.get_num_threads() == 3; "
                           "import gmbase.threads as t; assert t.num_threads() == 3")
    assert not [m for m in loaded if m.split(".")[0] in ("codegen", "static")], loaded
    _loaded_after("import eager, gmnative.build as b, codegen.runtime as rt; "
                  "eager.set_num_threads(2); assert rt.CONFIG.threads == 2 and 1 <= b.threads() <= 2; "
                  "rt.CONFIG.threads = 1; assert eager.get_num_threads() == 1 and b.threads() == 1")
    import gmbase.threads

    with pytest.raises(RuntimeError, match="positive integer"):
        gmbase.threads.set_num_threads(0)


def test_old_names_are_the_same_module_objects():
    """eager.ops.*, eager._dtypes, codegen.cache, ... name the moved modules themselves: no
    module runs twice (a second copy of a record or of the dtype objects would break `is`)."""
    import importlib

    for old, new in ALIASES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
    import eager.ops.elementwise
    import eager.ops.views
    import gmops

    assert eager.ops.elementwise is gmops.elementwise and eager.ops.views is sys.modules["gmops.views"]
    assert eager.ops.REGISTRY is gmops.REGISTRY and eager.ops._registry.OpDef is gmops.OpDef
    loaded = _loaded_after("import eager.ops.shape_ops, eager._dtypes, gmops.shape_ops; import sys; "
                           "assert sys.modules['eager.ops.shape_ops'] is sys.modules['gmops.shape_ops']")
    assert "eager.ops.shape_ops" in loaded


def test_pickles_naming_the_old_paths_load(tmp_path):
    """A pickle written before the move names eager.ops._registry / eager._dtypes: it loads
    to the moved classes and objects."""
    import pickle

    import eager
    import gmbase.dtypes
    import gmops

    spec = gmops.TensorSpec((2, 3), gmbase.dtypes.float32)
    old = pickle.dumps(spec, protocol=2).replace(b"gmops._registry", b"eager.ops._registry")
    assert b"eager.ops._registry" in old
    assert pickle.loads(old) == spec
    assert pickle.loads(pickle.dumps(eager.float32)) is eager.float32


def test_import_eager_loads_the_training_api_on_first_use():
    loaded = _loaded_after("import eager; eager.tensor([1.0]).exp()")
    assert not [m for m in loaded if m.split(".")[:2] in (["eager", "nn"], ["eager", "optim"])], loaded
    assert not [m for m in loaded if m.split(".")[0] in ("static", "codegen", "graphmode")], loaded


def test_import_gmnative_loads_nothing():
    loaded = _loaded_after("import gmnative")
    assert [m for m in loaded if m.split(".")[0] in PACKAGES] == ["gmnative"], loaded


@pytest.mark.parametrize("statement", ["import eager.nn", "from eager import nn, optim",
                                       "import eager; eager.nn.Linear; eager.optim.SGD; eager.utils.data"])
def test_lazy_subpackages_still_import_every_way(statement):
    loaded = _loaded_after(statement)
    assert "eager.nn" in loaded, loaded


def test_lazy_subpackages_are_listed_and_unknown_names_raise():
    import eager

    assert {"nn", "optim", "utils", "viz", "distributions"} <= set(dir(eager))
    with pytest.raises(AttributeError, match="no_such_name"):
        eager.no_such_name  # noqa: B018


def test_the_architecture_document_lists_the_layers_in_this_order():
    """docs/architecture.md's layer table is the order checked here, row for row."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1].strip() for line in text.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip() in ORDER]
    assert tuple(rows) == ORDER, rows


MOVED = {"codegen.native_build": "gmnative.build", "codegen.eager_kernels": "gmnative.kernels",
         "codegen.c_helpers": "gmnative.c_helpers"}


def test_the_packages_import_the_native_layer_by_its_own_names():
    """codegen.native_build, eager_kernels and c_helpers stay as the same module objects for
    scripts and tests; the packages (and generated modules' templates) name gmnative."""
    bad = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if _module_name(path) in MOVED:
                continue
            bad += [f"{path.relative_to(ROOT)}:{line}: {m}" for m, line in imports_of(path) if m in MOVED]
    for template in sorted((ROOT / "codegen" / "templates").glob("*.j2")):
        text = template.read_text(encoding="utf-8")
        bad += [f"{template.relative_to(ROOT)}: {old}" for old in MOVED
                if f"from codegen import {old.split('.')[1]}" in text]
    assert not bad, bad
    import codegen.native_build
    import gmnative.build

    assert codegen.native_build is gmnative.build


def _alias_modules() -> dict[str, str]:
    """Every old name kept as an alias, found in the source, with the module it names: a
    module whose top level assigns `sys.modules[__name__] = X`, X bound by an import
    (eager/ops/__init__.py, eager/_dtypes.py, codegen/cache.py, static/tracer.py, ...), so a
    new alias is covered without being listed here. A package alias covers its submodules'
    old names too (eager.ops.views is gmops.views)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            name = _module_name(path)
            bound: dict[str, str] = {}
            for node in tree.body:
                if isinstance(node, ast.Import):
                    bound.update({a.asname or a.name: a.name for a in node.names})
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(name, path.name == "__init__.py", node.level, node.module)
                    bound.update({a.asname or a.name: f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base
                                  for a in node.names})
                elif isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Name) and t.slice.id == "__name__"
                        and ast.unparse(t.value).endswith("sys.modules") for t in node.targets):
                    found[name] = bound.get(ast.unparse(node.value), "?")
    return found


def old_path_imports(paths: list[Path], aliases: dict[str, str], root: Path = ROOT) -> list[str]:
    """Imports (at any depth, import_module strings and "module:attribute" targets included)
    of a module by an old alias path, in the given package files."""
    bad = []
    for path in paths:
        if _module_name(path, root) in aliases:  # the alias itself imports what it names
            continue
        for imported, line in imports_of(path, root):
            old = [a for a in aliases if imported == a or imported.startswith(a + ".")]
            if old:
                real = aliases[old[0]] + imported[len(old[0]):]
                bad.append(f"{path.relative_to(root)}:{line}: {imported} (an old name of {real}; import that)")
    return bad


def test_the_packages_import_no_module_by_an_old_alias_path():
    """The old names (eager.ops.*, eager._dtypes, codegen.cache, static.tracer, ...) are kept
    for users' scripts, tests and pickles; the packages import the real modules, so the type
    checker sees every import (pyproject.toml types nothing of an old path as Any) and the
    aliases can be removed one day without touching the packages."""
    aliases = _alias_modules()
    assert {"eager.ops": "gmops", "eager._dtypes": "gmbase.dtypes", "eager._fpstate": "gmbase.fpstate",
            "eager._threads": "gmbase.threads", "codegen.cache": "gmbase.cache", "codegen.settings": "gmbase.settings",
            "codegen.native_build": "gmnative.build", "static.tracer": "static.tracing.tracer"}.items() \
        <= aliases.items(), aliases
    assert all(_is_module(new) for new in aliases.values()), aliases
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    bad = old_path_imports(paths, aliases)
    assert not bad, "imports by an old alias path:\n" + "\n".join(bad)


def test_the_old_path_scanner_sees_every_form(tmp_path):
    """The checker itself: module-level, relative, lazy (inside a function), import_module and
    "module:attribute" imports of an old path are each reported; the real paths are not."""
    source = textwrap.dedent("""
        import importlib
        from . import _dtypes
        from .ops import elementwise
        import gmops.elementwise
        from gmbase import dtypes
        def f():
            from eager.ops.views import VIEW  # noqa
            import codegen.cache
            importlib.import_module("static.tracer")
        TARGET = "codegen.settings:SETTINGS"
    """)
    # written outside the tree (as eager/_old_path_probe.py under tmp_path): a file in the
    # package would be seen by the other tests scanning it while they run beside this one
    path = tmp_path / "eager" / "_old_path_probe.py"
    path.parent.mkdir()
    path.write_text(source)
    found = old_path_imports([path], _alias_modules(), root=tmp_path)
    assert sorted(f.split(": ", 1)[1].split(" ")[0] for f in found) == sorted([
        "eager._dtypes", "eager.ops", "eager.ops.views", "codegen.cache", "static.tracer", "codegen.settings"]), found
    assert any("static.tracer (an old name of static.tracing.tracer;" in f for f in found), found
