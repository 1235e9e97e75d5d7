"""GRAPHMODE_NATIVE_ARCH: the one knob for the instruction set every native compile targets.

An AVX-512 host must be able to build and test what an AVX2-only machine runs (CI, the next
laptop): the knob reaches every compile (one place chooses -march), is part of every cache
key (an AVX2 build never reuses an AVX-512 shared object, nor the reverse), and a target this
compiler or this CPU cannot take turns the kernels off with the reason instead of failing
deep in a build or with SIGILL."""
from __future__ import annotations

import ctypes
import platform
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gmbase import settings
from gmnative import build, so_cache, toolchain

ROOT = Path(__file__).resolve().parents[1]
X86 = platform.machine().lower() in ("x86_64", "amd64")
VAR = settings.NATIVE_ARCH_VARIABLE

# one small kernel: an elementwise map (exact on every target: sqrt is correctly rounded and
# contraction is off) and a sum (whose order follows the vector width: close, not equal)
_KERNEL = r"""
extern "C" float sqrtf(float);
extern "C" void gm_arch_probe(void* const* args, int threads) {
    const float* __restrict__ x = (const float*)args[0];
    float* __restrict__ y = (float*)args[1];
    float* __restrict__ total = (float*)args[2];
    const long long n = *(const long long*)args[3];
    float s = 0.0f;
    #pragma omp simd reduction(+:s)
    for (long long i = 0; i < n; ++i) {
        const float v = x[i] * 2.5f + sqrtf(x[i] < 0.0f ? -x[i] : x[i]);
        y[i] = v;
        s += v;
    }
    *total = s;
}
"""


def _toolchain() -> toolchain.Toolchain:
    found = build._probe()
    if isinstance(found, str):
        pytest.skip(f"no C++ compiler: {found}")
    return found


def _usable(arch: str) -> None:
    tc = _toolchain()
    if not X86:
        pytest.skip(f"-march={arch} is an x86-64 target; this host is {platform.machine()}")
    problem = toolchain.target_problem(tc.command, arch)
    if problem is not None:
        pytest.skip(f"the compiler or this CPU cannot take the target: {problem}")


def _run(lib: build.Library, x: np.ndarray) -> tuple[np.ndarray, float]:
    y = np.empty_like(x)
    total = np.zeros(1, np.float32)
    n = ctypes.c_longlong(x.size)
    args = (ctypes.c_void_p * 4)(x.ctypes.data, y.ctypes.data, total.ctypes.data, ctypes.addressof(n))
    lib.cdll.gm_arch_probe(args, ctypes.c_int(1))
    return y, float(total[0])


def _instructions(data: bytes, tmp_path: Path) -> str:
    if shutil.which("objdump") is None:
        pytest.skip("no objdump to disassemble the shared object")
    so = tmp_path / "kernel.so"
    so.write_bytes(data)
    run = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_target_is_native_unless_the_variable_names_one(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    assert settings.native_arch() == "native"
    monkeypatch.setenv(VAR, "  ")
    assert settings.native_arch() == "native"
    monkeypatch.setenv(VAR, "haswell")
    assert settings.native_arch() == "haswell"
    for bad in ("-O0", "haswell -mavx512f", "x;rm"):
        monkeypatch.setenv(VAR, bad)
        with pytest.raises(ValueError, match=f"{VAR}=.*is not a -march name.*'haswell'"):
            settings.native_arch()


def test_the_target_is_in_the_flags_and_in_every_cache_key(monkeypatch):
    tc = _toolchain()
    monkeypatch.delenv(VAR, raising=False)
    native_flags, native_key = tc.compile_flags(), so_cache.so_key(_KERNEL, tc)
    assert "-march=native" in native_flags and "target -march=native" in tc.describe()
    monkeypatch.setenv(VAR, "haswell")
    flags = tc.compile_flags()
    assert "-march=haswell" in flags and not any(f == "-march=native" for f in flags)
    assert so_cache.so_key(_KERNEL, tc) != native_key  # an AVX2 build never reuses the native one
    assert "target -march=haswell" in tc.describe()


def test_one_place_chooses_the_target():
    """-march is spelled only in Toolchain.compile_flags (and the probe's check that the
    compiler takes -march=native): every native compile (eager's kernels, the generated
    kernels, the call path, the tests that read the backend's flags) asks compile_flags."""
    spelled = []
    for package in ("gmbase", "gmnative", "gmops", "eager", "static", "codegen", "graphmode"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"""["']-march=|["']-m(avx|sse|fma|arch|tune|prefer-vector)""", line):
                    spelled.append(f"{path.relative_to(ROOT)}:{k}")
    assert all(s.startswith(("gmnative/toolchain.py", "gmnative/build.py")) for s in spelled), spelled
    build_lines = [s for s in spelled if s.startswith("gmnative/build.py")]
    probe = (ROOT / "gmnative/build.py").read_text(encoding="utf-8").splitlines()
    assert all("native" in probe[int(s.split(":")[1]) - 1] for s in build_lines), build_lines


@pytest.mark.parametrize("arch, wide", [("haswell", "ymm"), ("x86-64-v2", None)])
def test_a_kernel_built_for_an_older_target_loads_and_agrees_with_the_native_build(monkeypatch, tmp_path, arch, wide):
    """The kernel is compiled for the target (its shared object holds no AVX-512 register,
    and no 256-bit one for SSE4.2), loaded, and gives the native build's values."""
    _usable(arch)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1000).astype(np.float32)
    monkeypatch.delenv(VAR, raising=False)
    native = build.load_library(_KERNEL, "gm_arch_test")
    monkeypatch.setenv(VAR, arch)
    assert build.availability()[0] and build.target().startswith(arch)
    older = build.load_library(_KERNEL, "gm_arch_test")
    assert older is not native and older.origin.startswith("compiled")
    want_y, want_total = _run(native, x)
    got_y, got_total = _run(older, x)
    np.testing.assert_array_equal(got_y, want_y)
    assert got_total == pytest.approx(want_total, rel=1e-5)
    data = build.build_bytes(_KERNEL, "gm_arch_test")[0]
    text = _instructions(data, tmp_path)
    assert "gm_arch_probe" in text
    assert "zmm" not in text, f"-march={arch} built code with AVX-512 registers"
    if wide is None:
        assert "ymm" not in text, f"-march={arch} built code with 256-bit AVX registers"
    else:
        assert wide in text, f"-march={arch}: the loop was not vectorized with {wide} registers"


def test_the_compiler_is_asked_for_the_target(monkeypatch):
    """What tests of instruction names must read: the macros the backend's own flags define."""
    _usable("haswell")
    tc = _toolchain()
    monkeypatch.setenv(VAR, "haswell")
    run = subprocess.run([*tc.command, *tc.compile_flags(), "-dM", "-E", "-x", "c++", "/dev/null"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "#define __AVX2__ 1" in run.stdout and "#define __FMA__ 1" in run.stdout
    assert "__AVX512F__" not in run.stdout
    assert build.target() == "haswell (AVX2, 256-bit)"


def test_a_target_the_compiler_refuses_turns_the_kernels_off_with_the_reason(monkeypatch):
    _toolchain()
    monkeypatch.setattr(toolchain, "_warned_targets", set())
    monkeypatch.setenv(VAR, "no-such-cpu-1")
    with pytest.warns(RuntimeWarning, match="native kernels off: GRAPHMODE_NATIVE_ARCH='no-such-cpu-1'"):
        ok, why = build.availability()
    assert not ok and "does not take -march=no-such-cpu-1" in why
    with pytest.raises(build.NoCompiler, match=f"no-such-cpu-1.*Unset {VAR}"):
        build.toolchain()
    monkeypatch.setenv(VAR, "-mavx512f")
    with pytest.warns(RuntimeWarning, match="is not a -march name"):
        ok, why = build.availability()
    assert not ok and "is not a -march name" in why
    assert "refused" in build.target() or "none" in build.target()


def test_a_target_wider_than_this_cpu_is_refused_before_anything_runs(monkeypatch):
    """An AVX-512 target on an AVX2 host would stop the process with an illegal instruction:
    refused by comparing what the target enables with the CPU's flags."""
    tc = _toolchain()
    if not X86:
        pytest.skip("the CPU-flag check is x86-64's")
    if isinstance(toolchain.target_macros(tc.command, "skylake-avx512"), str):
        pytest.skip("the compiler does not know skylake-avx512")
    haswell_host = frozenset("fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt avx avx2 fma f16c bmi1 bmi2 movbe".split())
    monkeypatch.setattr(toolchain, "host_cpu_flags", lambda: haswell_host)
    monkeypatch.setattr(toolchain, "_warned_targets", set())
    problem = toolchain.target_problem(tc.command, "skylake-avx512")
    assert problem is not None and "avx512f" in problem and "illegal instruction" in problem
    if not isinstance(toolchain.target_macros(tc.command, "haswell"), str):
        assert toolchain.target_problem(tc.command, "haswell") is None
    monkeypatch.setenv(VAR, "skylake-avx512")
    with pytest.warns(RuntimeWarning, match="avx512f"):
        assert not build.availability()[0]
    assert toolchain.target_problem(tc.command, "native") is None  # this CPU by definition


_ROW_MAX_IR = """
func @f(%x: f32[6,5]) -> f32[6,5] {
  %1 = fused %x : f32[6,5] {
    ^body(%a: f32[6,5]):
    %4 = exp %a : f32[6,5]
    %2 = amax %4 {dims = [1], keepdim = true} : f32[6,1]
    %3 = sub %4, %2 : f32[6,5]
    yield %3
  }
  return %1
}"""


def test_kernels_leave_the_x87_stack_empty_on_a_generic_target(monkeypatch, tmp_path):
    """gcc 12 tuning for x86-64-v2 moved a value into an XMM register through an MMX one
    (movq2dq) without EMMS: the x87 stack stayed full, and NumPy's float32 floor_divide gave
    NaN in the same process afterwards. The kernels are compiled with -mno-mmx."""
    import codegen  # noqa: PLC0415
    import static  # noqa: PLC0415

    _usable("x86-64-v2")
    monkeypatch.setenv(VAR, "x86-64-v2")
    assert "-mno-mmx" in _toolchain().compile_flags()
    x = np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32)
    exe = codegen.build(static.parse_ir(_ROW_MAX_IR), "native")
    got = exe.run([x])[0]
    np.testing.assert_allclose(got, np.exp(x) - np.exp(x).max(axis=1, keepdims=True), rtol=1e-6, atol=1e-6)
    with np.errstate(invalid="raise"):
        q = np.floor_divide(np.float32([0.37719065, 7.0]), np.float32([-1.7861065, 2.0]))
    np.testing.assert_array_equal(q, np.float32([-1.0, 3.0]))
    data = build.build_bytes(exe.c_source(), "gm_native_f")[0]  # (the module's own stem: a cache hit)
    assert not re.search(r"%mm[0-7]\b", _instructions(data, tmp_path))
