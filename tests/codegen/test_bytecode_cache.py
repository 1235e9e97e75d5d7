"""A generated module found in the disk cache is not compiled again: its code object is kept
beside it, sealed and tied to the exact source, path and Python; anything else recompiles."""
from __future__ import annotations

import numpy as np
import pytest

import codegen
import static
from codegen import cache, loader

IR = """func @bytecode(%x: f32[5]) -> f32[5] {
  %1 = tanh %x : f32[5]
  %2 = mul %1, 3.0 : f32[5]
  return %2
}"""
X = np.linspace(-1.0, 1.0, 5, dtype=np.float32)


@pytest.fixture
def compiles(tmp_path, monkeypatch):
    """The cache directory, and a list that grows by one per module compiled from source."""
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GRAPHMODE_CACHE", raising=False)
    loader.forget()
    calls = []
    real = loader._VerifiedLoader.source_to_code

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(loader._VerifiedLoader, "source_to_code", counting)
    monkeypatch.setattr(loader, "KEEP_CODE_FROM", 0)  # kept for modules of any size
    yield tmp_path, calls
    loader.forget()


def _run() -> np.ndarray:
    loader.forget()  # what a new process starts with
    return codegen.build(static.parse_ir(IR), "numpy").run([X])[0]


def test_a_disk_hit_loads_the_kept_code_object(compiles):
    directory, calls = compiles
    first = _run()
    assert calls == [1]
    (kept,) = directory.glob("gm_bytecode_*.py")
    assert cache.unseal(kept.read_text()) is not None
    second = _run()
    assert calls == [1]  # not compiled again
    np.testing.assert_allclose(second, first)
    np.testing.assert_allclose(second, np.tanh(X) * 3.0, rtol=1e-6)


@pytest.mark.parametrize("damage", ["alter", "other stamp"])
def test_a_damaged_or_foreign_code_object_is_compiled_again(compiles, damage):
    directory, calls = compiles
    _run()
    (kept,) = directory.glob("gm_bytecode_*.py")
    body = cache.unseal(kept.read_text())
    stamp, _, data = body.partition("\n")
    if damage == "alter":
        kept.write_text(kept.read_text()[:-8] + "AAAAAAAA")  # the seal no longer matches
    else:
        kept.write_text(cache.seal(f"{stamp.split()[0]} {'0' * 64} {stamp.split()[2]}\n{data}"))
    got = _run()
    assert calls == [1, 1]  # compiled from the verified source
    np.testing.assert_allclose(got, np.tanh(X) * 3.0, rtol=1e-6)


def test_a_small_module_keeps_no_code_object(compiles, monkeypatch):
    directory, calls = compiles
    monkeypatch.setattr(loader, "KEEP_CODE_FROM", 10**9)
    _run()
    _run()
    assert calls == [1, 1]
    assert not list(directory.glob("gm_bytecode_*"))
