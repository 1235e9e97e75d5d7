"""Messages never send a user to an API that does not exist: every `static.NAME` and
`eager.NAME` written in the library's string literals resolves."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import eager
import static

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"\b(static|eager)\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")


def _resolves(module, dotted: str) -> bool:
    """Whether module.dotted names something: an attribute, or a submodule that imports (a
    lazily imported module is not an attribute of its package until something imports it, so
    the answer must not depend on which tests ran first)."""
    obj, path = module, module.__name__
    for part in dotted.split("."):
        path = f"{path}.{part}"
        if not hasattr(obj, part):
            try:
                obj = importlib.import_module(path)
            except ImportError:
                return False
            continue
        obj = getattr(obj, part)
    return True


def test_every_api_named_in_a_message_exists():
    missing = []
    for package in ("static", "eager", "codegen", "graphmode"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                          and node.body and isinstance(node.body[0], ast.Expr)
                          and isinstance(node.body[0].value, ast.Constant)}
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
                    continue
                for top, dotted in NAMED.findall(node.value):
                    name = dotted.rstrip(".")
                    if not _resolves(static if top == "static" else eager, name):
                        missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {top}.{name}")
    assert not missing, "messages name APIs that do not exist:\n" + "\n".join(missing)


def test_static_grad_of_a_vector_output_says_what_to_do():
    import pytest  # noqa: PLC0415

    def f(x):
        return x * 2

    with pytest.raises(TypeError, match=r"must return a scalar floating point value \(got \[3\]\); reduce the output"):
        static.compile(static.grad(f))(eager.ones(3))
