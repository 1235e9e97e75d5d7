"""The disk cache: reuse across processes, regeneration of damaged files (never run),
GRAPHMODE_CACHE=0, concurrent compiles, a private directory, tracebacks into the file."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import cache, loader

ROOT = Path(__file__).resolve().parents[2]
IR = """func @cached(%x: f32[5]) -> f32[5] {
  %1 = tanh %x : f32[5]
  %2 = mul %1, %SCALE : f32[5]
  return %2
}"""


def _graph(scale="2.0"):
    return static.parse_ir(IR.replace("%SCALE", scale))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(d))
    monkeypatch.delenv("GRAPHMODE_CACHE", raising=False)
    loader.forget()
    yield d
    loader.forget()


def _origin(exe):
    return exe._loaded["numpy"].origin


def test_directory_is_private_and_file_is_sealed(cache_dir):
    exe = codegen.build(_graph(), "numpy")
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    (path,) = cache_dir.glob("gm_numpy_*.py")
    text = path.read_text()
    assert text.startswith(cache.HEADER) and cache.unseal(text) == exe.source()
    assert not list(cache_dir.glob(".tmp-*"))  # the atomic write left no temporary file


def test_second_process_reuses_the_file(cache_dir):
    script = (
        "import static, codegen, numpy as np\n"
        f"g = static.parse_ir({IR.replace('%SCALE', '3.0')!r})\n"
        "exe = codegen.build(g, 'numpy')\n"
        "print(exe._loaded['numpy'].origin)\n"
        "print(float(exe.run([np.ones(5, np.float32)])[0][0]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRAPHMODE_CACHE_DIR": str(cache_dir)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert runs[0].stdout.split()[0] == "generated"
    assert runs[1].stdout.split()[0] == "disk"  # "disk cache"
    assert runs[0].stdout.split()[-1] == runs[1].stdout.split()[-1]
    assert len(list(cache_dir.glob("gm_numpy_*.py"))) == 1


@pytest.mark.parametrize("damage", ["truncate", "alter"])
def test_damaged_file_is_regenerated_not_run(cache_dir, tmp_path, damage):
    exe = codegen.build(_graph(), "numpy")
    (path,) = cache_dir.glob("gm_numpy_*.py")
    good = path.read_text()
    marker = tmp_path / "executed"
    if damage == "truncate":
        path.write_text(good[: len(good) // 2])
    else:
        path.write_text(good + f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    loader.forget()
    again = codegen.build(_graph(), "numpy")
    assert _origin(again) == "generated"
    assert not marker.exists()
    assert path.read_text() == good
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    np.testing.assert_array_equal(again.run([x])[0], exe.run([x])[0])


def test_cache_can_be_disabled(cache_dir, monkeypatch):
    monkeypatch.setenv("GRAPHMODE_CACHE", "0")
    exe = codegen.build(_graph("5.0"), "numpy")
    assert _origin(exe) == "generated" and exe._loaded["numpy"].path is None
    assert not cache_dir.exists() or not list(cache_dir.glob("gm_*.py"))
    assert "GRAPHMODE_CACHE=0" in exe.describe()
    x = np.ones(5, np.float32)
    np.testing.assert_allclose(exe.run([x])[0], np.tanh(x) * 5)


def test_concurrent_compiles_of_one_function(cache_dir):
    def f(x):
        return eager.tanh(x) * 7.0

    compiled = static.compile(f, backend="numpy")
    x = eager.tensor(np.linspace(-1, 1, 9, dtype=np.float32))
    results, errors = [], []
    barrier = threading.Barrier(2)

    def work():
        try:
            barrier.wait()
            exe = codegen.build(static.trace(f, x), "numpy")
            results.append((exe._loaded["numpy"].module, compiled(x).numpy()))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results[0][0] is results[1][0]  # generated and loaded once
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert len(list(cache_dir.glob("gm_numpy_*.py"))) == 2  # f's graph and its compiled twin (renumbered)


def test_key_depends_on_ir_and_backend():
    a, b = str(_graph("2.0")), str(_graph("2.5"))
    assert cache.key(a, "numpy", "1") != cache.key(b, "numpy", "1")
    assert cache.key(a, "numpy", "1") != cache.key(a, "cupy", "1")
    assert cache.key(a, "numpy", "1") != cache.key(a, "numpy", "2")


def test_traceback_points_at_the_generated_file(cache_dir):
    text = """func @oops(%x: f32[4], %i: i64[2]) -> f32[2] {
  %1 = index %x, %i {key = [["tensor", 0]], n_index = 1} : f32[2]
  return %1
}"""
    exe = codegen.build(static.parse_ir(text), "numpy")
    with pytest.raises(IndexError) as info:
        exe.run([np.zeros(4, np.float32), np.array([0, 9])])
    frames = traceback.extract_tb(info.tb)
    ours = [fr for fr in frames if fr.filename.startswith(str(cache_dir))]
    assert ours and ours[-1].line.strip() == "v1 = x[i]"


def test_compiled_function_shows_its_source(cache_dir):
    f = static.compile(lambda x: eager.exp(x) + 1.0, backend="numpy")
    x = eager.tensor(np.ones(3, np.float32))
    src = f.source(x)
    assert "def forward(x):" in src and "np.exp(" in src
    assert f.explain(x).rstrip().endswith(src.rstrip())
