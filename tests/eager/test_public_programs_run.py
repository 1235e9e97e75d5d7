"""Public PyTorch programs (tests/eager/programs) run unchanged on eager and on PyTorch,
and what they print or compute deterministically is the same.

Each program is a ``run(torch)`` function written as its public original is; the test runs
it once with ``eager`` and once with PyTorch and compares the returned dicts. eager's dtypes
print as ``eager.float32`` where PyTorch's print ``torch.float32``: that prefix is the only
difference the comparison forgives.
"""
from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys
from types import ModuleType
from typing import Any

import pytest

import eager

# (the programs are written as published: PyTorch warns of its deprecated spellings in them)
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

HERE = pathlib.Path(__file__).parent / "programs"
NAMES = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def _load(name: str) -> ModuleType:
    """tests/eager/programs/<name>.py as a module of a package (the programs share _common.py)."""
    package = "_public_programs"
    if package not in sys.modules:
        spec = importlib.util.spec_from_file_location(package, HERE / "__init__.py",
                                                      submodule_search_locations=[str(HERE)])
        assert spec is not None and spec.loader is not None
        sys.modules[package] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[package])
    return importlib.import_module(f"{package}.{name}")


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return v.replace("eager.", "torch.")
    if isinstance(v, (list, tuple)):
        return type(v)(_norm(x) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


@pytest.mark.parametrize("name", NAMES)
def test_program_runs_on_eager(name: str) -> None:
    mod = _load(name)
    got = mod.run(eager)
    assert isinstance(got, dict) and got


@pytest.mark.parametrize("name", NAMES)
def test_program_matches_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    mod = _load(name)
    want = _norm(mod.run(torch))
    got = _norm(mod.run(eager))
    assert set(got) == set(want)
    diffs = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not diffs, f"{name}: (pytorch, eager) differ at {diffs}"
