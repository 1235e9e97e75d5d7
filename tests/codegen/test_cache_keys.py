"""Every sealed cache artifact names the key it was made for, and the size bound counts
every file codegen writes: generated modules swapped on disk are regenerated (never run for
the other graph), and native sources and shared objects are evicted like modules."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import codegen
import static
from codegen import cache, loader

IR = """func @keyed(%x: f32[5]) -> f32[5] {
  %1 = tanh %x : f32[5]
  %2 = mul %1, %SCALE : f32[5]
  return %2
}"""
X = np.linspace(-1, 1, 5, dtype=np.float32)


def _graph(scale):
    return static.parse_ir(IR.replace("%SCALE", scale))


def _module_for(directory, before):
    (path,) = set(directory.glob("gm_numpy_*.py")) - before
    return path


def test_swapped_modules_are_regenerated_not_run(cache_dir):
    codegen.build(_graph("2.0"), "numpy")
    path_a = _module_for(cache_dir, set())
    codegen.build(_graph("3.0"), "numpy")
    path_b = _module_for(cache_dir, {path_a})
    text_a, text_b = path_a.read_text(), path_b.read_text()
    assert cache.unseal(text_a) is not None and cache.unseal(text_b) is not None  # both whole
    path_a.write_text(text_b)  # swapped on disk: each passes its hash check
    path_b.write_text(text_a)
    loader.forget()  # as the next process
    exe_a = codegen.build(_graph("2.0"), "numpy")
    np.testing.assert_allclose(exe_a.run([X])[0], np.tanh(X) * 2.0, rtol=1e-6)
    assert exe_a._loaded["numpy"].origin == "generated"  # detected, rebuilt
    exe_b = codegen.build(_graph("3.0"), "numpy")
    np.testing.assert_allclose(exe_b.run([X])[0], np.tanh(X) * 3.0, rtol=1e-6)
    assert path_a.read_text() == text_a and path_b.read_text() == text_b  # rewritten under their own keys
    loader.forget()
    assert codegen.build(_graph("2.0"), "numpy")._loaded["numpy"].origin == "disk cache"


def test_read_checks_the_key(cache_dir):
    cache_dir.mkdir(mode=0o700, exist_ok=True)
    path = cache_dir / "gm_test_one.py"
    cache.write(path, cache.seal("x = 1\n", "k1"))
    assert cache.read(path, "k1") is not None and cache.body(cache.read(path, "k1")) == "x = 1\n"
    assert cache.read(path, "k2") is None
    assert cache.read(path) is not None  # no key asked: the hash alone
    cache.write(path, cache.seal("x = 1\n"))  # a file sealed without a key answers no key
    assert cache.read(path, "k1") is None
    with pytest.raises(ValueError, match="whitespace"):
        cache.seal("x", "a key")


def test_swapped_trace_records_are_misses(cache_dir):
    import eager  # noqa: PLC0415

    f = static.compile(lambda x: eager.tanh(x) * 2.0, backend="numpy")
    g = static.compile(lambda x: eager.tanh(x) * 3.0, backend="numpy")
    x = eager.tensor(X)
    f(x)
    first = set(cache_dir.glob("gm_trace_*.py"))
    g(x)
    second = set(cache_dir.glob("gm_trace_*.py")) - first
    if len(first) != 1 or len(second) != 1:
        pytest.skip("the post-trace cache did not write one record per function here")
    (ra,), (rb,) = first, second
    ta, tb = ra.read_text(), rb.read_text()
    ra.write_text(tb)
    rb.write_text(ta)
    loader.forget()
    f2 = static.compile(lambda x: eager.tanh(x) * 2.0, backend="numpy")
    np.testing.assert_allclose(f2(x).numpy(), np.tanh(X) * 2.0, rtol=1e-6)


def _fill(directory, name, size, age_s=0.0):
    path = directory / name
    path.write_bytes(b"\0" * size)
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def test_the_bound_counts_every_file_codegen_writes(cache_dir, monkeypatch):
    cache_dir.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", "1")
    old = [_fill(cache_dir, "gm_native_old_0123.so.sealed", 600_000, 100),
           _fill(cache_dir, "gm_native_old_0123.cpp", 500_000, 90),
           _fill(cache_dir, "gm_native_probe_x.json", 1000, 80),
           _fill(cache_dir, "gm_trace_aaaa.py", 1000, 70)]
    other = _fill(cache_dir, "notes.txt", 2_000_000, 200)  # not ours: never touched
    stale = _fill(cache_dir, ".tmp-abc.py", 10, cache.STALE_TMP_S + 60)
    fresh_tmp = _fill(cache_dir, ".tmp-def.py", 10, 0)
    new = _fill(cache_dir, "gm_native_new_4567.so.sealed", 700_000, 0)
    removed = cache.evict(cache_dir, keep=new)
    assert set(removed) >= {old[0], old[1], stale}
    assert new.exists() and other.exists() and fresh_tmp.exists()
    total = sum(p.stat().st_size for p in cache_dir.iterdir() if p.name.startswith(("gm_", ".tmp-")))
    assert total <= cache.max_bytes()


def test_a_module_write_evicts_native_files(cache_dir, monkeypatch):
    cache_dir.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", "0.5")
    big = _fill(cache_dir, "gm_native_big_89ab.so.sealed", 600_000, 100)
    codegen.build(_graph("5.0"), "numpy")
    assert not big.exists()


def test_native_builds_are_bounded(cache_dir, monkeypatch):
    from codegen import native_build  # noqa: PLC0415

    if isinstance(native_build._probe(), str):
        pytest.skip("no C++ compiler")
    cache_dir.mkdir(mode=0o700, exist_ok=True)
    big = _fill(cache_dir, "gm_native_big_89ab.so.sealed", 600_000, 100)
    monkeypatch.setenv("GRAPHMODE_CACHE_MAX_MB", "0.5")
    source = 'extern "C" int gm_answer_keys() { return 42; }\n'
    lib = native_build.load_library(source, stem="gm_native_keys_test")
    assert not big.exists()
    assert lib.path is not None and lib.path.exists()


def test_a_compiler_probe_record_names_its_own_file(cache_dir):
    from codegen import native_build  # noqa: PLC0415

    found = native_build._probe()
    if isinstance(found, str):
        pytest.skip("no C++ compiler")
    native_build._probe_once.cache_clear()  # probe again, keeping the record in this test's cache
    assert native_build._probe_once() == found
    command = native_build._find_compiler()
    record = native_build._probe_record_path(command)
    if record is None or not record.exists():
        pytest.skip("the probe record is not kept here")
    assert native_build._read_probe(record) == found
    other = record.with_name("gm_native_probe_" + "0" * 32 + ".json")
    other.write_bytes(record.read_bytes())  # copied under another probe's name
    assert native_build._read_probe(other) is None
    for garbage in (b"[1, 2]", b"\"text\"", b"{}", b"not json"):
        other.write_bytes(garbage)
        assert native_build._read_probe(other) is None
