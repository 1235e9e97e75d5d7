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
            results.append((exe, compiled(x).numpy()))  # exe holds its module alive
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results[0][0]._loaded["numpy"].module is results[1][0]._loaded["numpy"].module  # loaded once
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


# -- who may have written the code that runs ---------------------------------------------------
def _planted(cache_dir, tmp_path, scale="2.0"):
    """A correctly sealed cache file for _graph(scale) whose code also leaves a marker: what
    someone able to write into the cache could plant, re-sealing it (the header is a checksum)."""
    exe = codegen.build(_graph(scale), "numpy")
    (path,) = cache_dir.glob("gm_numpy_*.py")
    marker = tmp_path / "executed"
    source = cache.unseal(path.read_text()) + f"\nopen({str(marker)!r}, 'w').write('ran')\n"
    path.write_text(cache.seal(source))
    loader.forget()
    del exe
    return path, marker


def _cache_warnings(record):
    return [w for w in record if issubclass(w.category, cache.CodeCacheWarning)]


def _build_twice_and_check(scale="2.0"):
    """Two compiles (one warning at most) whose results are right."""
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    for _ in range(2):
        exe = codegen.build(_graph(scale), "numpy")
        np.testing.assert_allclose(exe.run([x])[0], np.tanh(x) * float(scale), rtol=1e-6)
        loader.forget()
    return exe


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=["group", "others", "everyone"])
def test_directory_writable_by_others_is_not_used(cache_dir, tmp_path, mode):
    path, marker = _planted(cache_dir, tmp_path)
    os.chmod(cache_dir, mode)
    with pytest.warns(cache.CodeCacheWarning, match="writable by its group or by others") as record:
        exe = _build_twice_and_check()
    assert len(_cache_warnings(record)) == 1
    assert not marker.exists()
    assert exe._loaded["numpy"].path is None  # kept in memory
    os.chmod(cache_dir, 0o700)


def test_file_writable_by_others_is_not_run(cache_dir, tmp_path):
    path, marker = _planted(cache_dir, tmp_path)
    os.chmod(path, 0o666)
    with pytest.warns(cache.CodeCacheWarning, match="writable by its group or by others") as record:
        _build_twice_and_check()
        codegen.build(_graph("4.0"), "numpy")  # the directory is no longer used in this process
    assert len(_cache_warnings(record)) == 1
    assert not marker.exists()
    assert not list(cache_dir.glob("gm_numpy_*.py"))[1:]  # nothing new written there


def test_directory_of_another_user_is_not_used(cache_dir, tmp_path, monkeypatch):
    path, marker = _planted(cache_dir, tmp_path)
    real = os.getuid()
    monkeypatch.setattr(cache.os, "getuid", lambda: real + 1)
    with pytest.warns(cache.CodeCacheWarning, match="not by the current user"):
        _build_twice_and_check()
    assert not marker.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a file's owner needs root")
def test_file_of_another_user_is_not_run(cache_dir, tmp_path):
    path, marker = _planted(cache_dir, tmp_path)
    os.chown(path, 65534, 65534)
    with pytest.warns(cache.CodeCacheWarning, match="owned by uid 65534"):
        _build_twice_and_check()
    assert not marker.exists()


def test_symlinked_cache_file_is_not_followed(cache_dir, tmp_path):
    path, marker = _planted(cache_dir, tmp_path)
    elsewhere = tmp_path / "elsewhere.py"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    with pytest.warns(cache.CodeCacheWarning, match="cannot be opened safely"):
        _build_twice_and_check()
    assert not marker.exists()


def test_hash_is_checked_on_the_bytes_read(cache_dir):
    """A file whose line ends were changed to CRLF is not the file that was sealed: text-mode
    reading would translate it back and pass the check; the loader checks the raw bytes."""
    codegen.build(_graph(), "numpy")
    (path,) = cache_dir.glob("gm_numpy_*.py")
    good = path.read_bytes()
    head, _, rest = good.partition(b"\n")
    path.write_bytes(head + b"\n" + rest.replace(b"\n", b"\r\n"))
    loader.forget()
    assert _origin(codegen.build(_graph(), "numpy")) == "generated"
    assert path.read_bytes() == good


# -- an unusable directory falls back to memory --------------------------------------------------
def _unusable(kind, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    if kind == "a file":
        return blocker
    if kind == "a path under a file":
        return blocker / "sub" / "cache"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    os.chmod(locked, 0o500)  # ours, private, but not writable
    return locked / "cache"


@pytest.mark.parametrize("kind", ["a file", "a path under a file", "no permission"])
def test_unusable_directory_falls_back_to_memory_with_one_warning(kind, tmp_path, monkeypatch):
    if kind == "no permission" and hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("permissions do not bind root")
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(_unusable(kind, tmp_path)))
    loader.forget()
    with pytest.warns(cache.CodeCacheWarning, match="not using the code cache") as record:
        exe = _build_twice_and_check("3.0")
        f = static.compile(lambda x: eager.exp(x) * 2.0, backend="numpy")
        np.testing.assert_allclose(f(eager.ones(3)).numpy(), np.exp(np.ones(3, np.float32)) * 2, rtol=1e-6)
    assert len(_cache_warnings(record)) == 1
    assert exe._loaded["numpy"].path is None


def test_read_only_directory_of_ours_falls_back_to_memory(tmp_path, monkeypatch):
    """As root permissions do not bind; a read-only directory is what os.access reports."""
    d = tmp_path / "ro"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(d))
    monkeypatch.setattr(cache.os, "access", lambda *a, **k: False)
    loader.forget()
    with pytest.warns(cache.CodeCacheWarning, match="not readable and writable") as record:
        _build_twice_and_check("3.5")
    assert len(_cache_warnings(record)) == 1
    assert not list(d.iterdir())


# -- lifetime and size ---------------------------------------------------------------------------
@pytest.mark.parametrize("disk", [True, False])
def test_modules_of_dropped_functions_are_freed(cache_dir, monkeypatch, disk):
    import gc
    import linecache

    from static import trace_cache

    if not disk:
        monkeypatch.setenv("GRAPHMODE_CACHE", "0")
    trace_cache.clear_memory()  # entries other tests left alive
    gc.collect()
    before = loader.live()
    x = eager.ones(4)
    functions = [static.compile(lambda t, i=i: eager.tanh(t) * float(i + 0.5), backend="numpy") for i in range(200)]
    for f in functions:
        f(x)
    assert loader.live() >= before + 200
    del functions, f  # the post-trace cache holds entries weakly: nothing else keeps the modules
    gc.collect()
    assert loader.live() == before
    assert not [name for name in linecache.cache if name.startswith("<graphmode graphmode_generated")]


def test_disk_cache_is_bounded_least_recently_used_first(cache_dir, monkeypatch):
    graphs = [_graph(f"{i}.5") for i in range(6)]
    built = [codegen.build(g, "numpy") for g in graphs]
    files = {b._loaded["numpy"].path: b for b in built}
    assert len(files) == 6
    size = max(p.stat().st_size for p in files)
    ordered = [b._loaded["numpy"].path for b in built]
    for age, path in enumerate(ordered):  # file 0 the oldest ... file 5 the newest
        os.utime(path, ns=(10**18 + age * 10**9,) * 2)
    loader.forget()
    codegen.build(graphs[0], "numpy")  # a load makes file 0 the most recently used
    monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", str(3.5 * size / 2**20))
    codegen.build(_graph("9.5"), "numpy")  # a write evicts down to the bound
    left = set(cache_dir.glob("gm_numpy_*.py"))
    assert sum(p.stat().st_size for p in left) <= 3.5 * size
    assert ordered[0] in left  # recently loaded: kept
    assert ordered[1] not in left and ordered[2] not in left  # least recently used: gone
    assert len(left) == 3


def test_bad_size_bound_warns_and_uses_the_default(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", "lots")
    with pytest.warns(cache.CodeCacheWarning, match="GRAPHMODE_CACHE_MAX_MB"):
        assert cache.max_bytes() == int(cache.DEFAULT_MAX_MB * 2**20)
