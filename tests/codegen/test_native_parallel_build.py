"""A large translation unit compiles as parallel parts linked into one shared object
(native_build.split_source / compile_shared), and the compiler probe runs its checks at once:
the results are the same as from one compiler call."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import eager
import static
from codegen import loader, native_build
from static import trace_cache

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

_PREAMBLE = "#include <stdint.h>\nstatic inline float twice(float x) { return 2 * x; }\n"


def _kernel(k: int) -> str:
    return (f'\n// kernel {k}\nextern "C" void gm_region{k}(void* const* gm_args, int gm_nt) {{\n'
            f"    float* out = (float*)gm_args[0];\n    out[0] = twice({k}.0f);\n}}\n")


def test_split_source_keeps_every_kernel_once_after_the_preamble(monkeypatch):
    monkeypatch.setattr(native_build, "SPLIT_MIN_WEIGHT", 0)
    source = _PREAMBLE + "".join(_kernel(k) for k in range(10))
    parts = native_build.split_source(source, parts=3)
    assert len(parts) == 3
    preamble = source[:source.find('\nextern "C" void ')]  # up to the first kernel's definition
    assert all(p.startswith(preamble) for p in parts)
    bodies = "".join(p[len(preamble):] for p in parts)
    assert bodies == source[len(preamble):]  # every kernel once, in order
    assert native_build.split_source(source, parts=1) == [source]
    monkeypatch.setattr(native_build, "SPLIT_MIN_WEIGHT", 10 ** 9)
    assert native_build.split_source(source, parts=3) == [source]  # too small to be worth it


def _many_regions(x):
    """Six reductions of different pointwise chains: one kernel each."""
    return tuple(eager.tanh(x * (k + 1.5)).sum(dim=k % 2) for k in range(6))


def _build(tmp_path, fast_math: bool) -> tuple:
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    f = static.compile(_many_regions, backend="native", fast_math=fast_math)
    out = f(x)
    assert 'extern "C" void gm_region' in f.source(x)  # kernels were generated
    return out, x


def _fresh(monkeypatch, where) -> None:
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(where))
    monkeypatch.setattr(native_build, "_libraries", {})  # loaded libraries are kept per process
    trace_cache.clear_memory()
    loader.forget()


@pytest.mark.parametrize("fast_math", [False, True])
def test_a_graph_compiled_in_parallel_parts_gives_the_one_unit_results(monkeypatch, tmp_path, fast_math):
    _fresh(monkeypatch, tmp_path / "whole")
    whole, x = _build(tmp_path, fast_math)
    sources: list = []
    real = native_build._run_all

    def spy(cmds):
        sources.extend(c[c.index("-c") + 1] for c in cmds if "-c" in c)
        return real(cmds)

    monkeypatch.setattr(native_build, "_run_all", spy)
    monkeypatch.setattr(native_build, "SPLIT_MIN_WEIGHT", 0)
    monkeypatch.setattr(native_build, "_cores", lambda: 2)
    _fresh(monkeypatch, tmp_path / "parts")
    parts, _ = _build(tmp_path, fast_math)
    loader.forget()
    assert len(sources) == 2 and all("-part" in s for s in sources)  # two units compiled at once
    for a, b in zip(parts, whole):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(whole[0], np.tanh(x * 1.5).sum(0), rtol=1e-5)


def test_parts_that_do_not_build_apart_fall_back_to_one_unit(monkeypatch, tmp_path):
    """A helper defined between kernels and used by a later one: its part lacks it, the split
    build fails, and the whole unit compiles instead."""
    monkeypatch.setattr(native_build, "SPLIT_MIN_WEIGHT", 0)
    monkeypatch.setattr(native_build, "_cores", lambda: 2)
    source = (_PREAMBLE + _kernel(0) + "static inline float late(float x) { return x + 1; }\n"
              + _kernel(1).replace("twice(1.0f)", "late(1.0f)"))
    assert len(native_build.split_source(source)) == 2
    src = tmp_path / "unit.cpp"
    src.write_text(source)
    batches: list = []
    real = native_build._run_all
    monkeypatch.setattr(native_build, "_run_all", lambda cmds: batches.append(len(cmds)) or real(cmds))
    data = native_build.compile_shared(source, native_build.toolchain(), src)
    assert batches == [2, 1]  # the parts, then the whole unit
    lib_path = tmp_path / "unit.so"
    lib_path.write_bytes(data)
    lib = ctypes.CDLL(str(lib_path))
    out = np.zeros(1, np.float32)
    args = (ctypes.c_void_p * 1)(out.ctypes.data)
    lib.gm_region1(args, 1)
    assert out[0] == 2.0  # late(1.0f)


def test_the_probe_finds_what_one_compiler_call_at_a_time_found():
    found = native_build._run_probe(native_build._find_compiler())
    assert isinstance(found, native_build.Toolchain)
    assert found == native_build.toolchain()


def test_compiling_for_native_probes_the_compiler_before_the_first_call(tmp_path):
    """static.compile starts the probe on a helper thread: it overlaps the first call's trace."""
    code = """
import threading, static
from codegen import native_build
f = static.compile(lambda x: x * 2, backend="native")
probe = [t for t in threading.enumerate() if t.name == "graphmode-native-probe"]
for t in probe:
    t.join()
print(len(probe), native_build._probe_once.cache_info().currsize)
numpy_only = static.compile(lambda x: x + 1, backend="numpy")
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRAPHMODE_CACHE_DIR": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["1", "1"]  # started at decoration, done before any call


def test_numpy_or_a_disabled_native_backend_starts_no_probe(tmp_path):
    code = """
import threading, static
static.compile(lambda x: x * 2, backend="numpy")
static.compile(lambda x: x * 2)  # "auto" with GRAPHMODE_NATIVE=0
print(sum(t.name == "graphmode-native-probe" for t in threading.enumerate()))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRAPHMODE_CACHE_DIR": str(tmp_path), "GRAPHMODE_NATIVE": "0"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0"]
