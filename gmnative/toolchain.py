"""The C++ toolchain as a record (Toolchain: the compiler command, its version, OpenMP and
vector-math support, the flags it takes) and where it is found: `CXX`, else the usual names,
and the probe program compiled to learn what it can do (run by gmnative.build, once per
process, its result kept on disk).
"""
from __future__ import annotations

import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import warnings
from dataclasses import dataclass, field

from gmbase import settings

_X86_64 = platform.machine().lower() in ("x86_64", "amd64")


class NoCompiler(RuntimeError):
    """No usable C++ compiler: the native backend cannot run."""


class NativeCompileError(RuntimeError):
    """The C++ compiler rejected generated source (a codegen bug: please report it)."""


# -- the toolchain ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Toolchain:
    command: tuple  # the compiler and any arguments CXX carried
    version: str  # first line of `--version`
    openmp: bool
    vector_math: bool  # libmvec links: exp/tanh/... vectorize without fast-math
    isa: str  # fingerprint of the host's instruction set
    python_include: str | None  # where Python.h is (None: calls go through ctypes)
    notes: tuple = field(default=())
    gold: bool = False  # -fuse-ld=gold links: half the linker's time of the default ld.bfd

    def compile_flags(self, fast_math: bool = False, threads: bool = True) -> list:
        """threads=False: the source has no parallel region (uses_threads): only the `omp
        simd` pragmas are honoured (-fopenmp-simd), which skips OpenMP's outlining passes.
        The target is `-march=` gmbase.settings.native_arch() (GRAPHMODE_NATIVE_ARCH, default
        native), read at each call: the flags are part of every shared object's cache key
        (so_key), so a build for one instruction set is never loaded for another."""
        # -fno-trapping-math changes no result: it lets the compiler evaluate both sides of a
        # select (relu's `x > 0 || x != x`, a where) instead of branching around one, which
        # kept such loops scalar. The kernels never read the floating-point exception flags.
        flags = ["-std=c++17", "-O3", f"-march={settings.native_arch()}", "-fPIC", "-fno-math-errno",
                 "-fno-trapping-math", "-ffp-contract=off", "-Wno-unknown-pragmas"]
        if _X86_64:
            # no MMX registers: they are the x87 stack's, and gcc 12 tuning for a generic target
            # (x86-64-v2) moved a 64-bit value into an XMM register through %mm0 (movq2dq) with
            # no EMMS after it, leaving the x87 stack full: NumPy's float32 floor_divide then
            # gave NaN in the caller. The kernels use no MMX; the code is otherwise the same.
            flags.append("-mno-mmx")
        if self.openmp:
            flags.append("-fopenmp" if threads else "-fopenmp-simd")
        if fast_math:  # compile only: see the module docstring about linking
            flags += ["-ffast-math", "-fno-finite-math-only"]
        return flags

    def link_flags(self, threads: bool = True) -> list:
        flags = ["-shared"] + (["-fuse-ld=gold"] if self.gold else [])
        if self.openmp and threads:
            flags.append("-fopenmp")
        if self.vector_math:
            flags.append("-lmvec")
        return flags + ["-lm"]

    def fingerprint(self) -> str:
        return f"{self.version};omp={self.openmp};mvec={self.vector_math};isa={self.isa}"

    def describe(self) -> str:
        return (f"{self.command[0]} ({self.version}), OpenMP {'on' if self.openmp else 'off'}, vector math "
                f"{'libmvec' if self.vector_math else 'scalar libm calls'}, target -march={settings.native_arch()}")


def isa_fingerprint() -> str:
    """The host CPU's instruction-set features (Linux: /proc/cpuinfo's flags line)."""
    text = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features", "model name", "cpu model")):
                    text += line
                if line.strip() == "" and text:
                    break
    except OSError:
        pass
    # platform.machine() is os.uname(); platform.processor() would run `uname -p` in a
    # subprocess (5-100 ms in a large process), for nothing the flags do not already say
    text += f"|{platform.machine()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _find_compiler() -> tuple | None:
    env = os.environ.get("CXX", "").strip()
    if env:
        parts = shlex.split(env)
        return tuple(parts) if parts and shutil.which(parts[0]) else None
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            return (path,)
    return None


_PROBE = r"""
#include <math.h>
extern "C" { float tanhf(float) __attribute__((simd("notinbranch"))); }
extern "C" void gm_probe(const float* x, float* y, long long n) {
#pragma omp parallel for simd if(parallel: n >= 100000)
    for (long long i = 0; i < n; ++i) y[i] = tanhf(x[i]);
}
"""


def _try(cmd: list) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


# -- the target instruction set (GRAPHMODE_NATIVE_ARCH) ---------------------------------------
# What a -march target promises, as the macros the compiler predefines for it, against the
# /proc/cpuinfo flag of the same extension: a shared object built for an extension the CPU
# lacks stops the process with SIGILL at its first such instruction, so it is refused before
# anything is compiled.
_X86_MACRO_FLAGS = (("__SSE3__", "pni"), ("__SSSE3__", "ssse3"), ("__SSE4_1__", "sse4_1"), ("__SSE4_2__", "sse4_2"),
                    ("__POPCNT__", "popcnt"), ("__AVX__", "avx"), ("__AVX2__", "avx2"), ("__FMA__", "fma"),
                    ("__F16C__", "f16c"), ("__BMI__", "bmi1"), ("__BMI2__", "bmi2"), ("__MOVBE__", "movbe"),
                    ("__AVX512F__", "avx512f"), ("__AVX512CD__", "avx512cd"), ("__AVX512BW__", "avx512bw"),
                    ("__AVX512DQ__", "avx512dq"), ("__AVX512VL__", "avx512vl"), ("__AVX512VNNI__", "avx512_vnni"),
                    ("__AVX512BF16__", "avx512_bf16"), ("__AVX512FP16__", "avx512_fp16"),
                    ("__AVXVNNI__", "avx_vnni"), ("__AMX_TILE__", "amx_tile"),
                    # (extensions the vectorizer emits: vpermb, vpcompressb, vpopcntd, gf2p8affine)
                    ("__AVX512VBMI__", "avx512vbmi"), ("__AVX512VBMI2__", "avx512_vbmi2"),
                    ("__AVX512IFMA__", "avx512ifma"), ("__AVX512BITALG__", "avx512_bitalg"),
                    ("__AVX512VPOPCNTDQ__", "avx512_vpopcntdq"), ("__GFNI__", "gfni"),
                    ("__AVX512ER__", "avx512er"), ("__AVX512PF__", "avx512pf"),
                    ("__SSE4A__", "sse4a"), ("__FMA4__", "fma4"), ("__XOP__", "xop"))
# the widest vector extension a target names: (macro, name, bits a register holds)
_VECTOR_MACROS = (("__AVX512F__", "AVX-512", 512), ("__AVX2__", "AVX2", 256), ("__AVX__", "AVX", 256),
                  ("__SSE4_2__", "SSE4.2", 128), ("__SSE2__", "SSE2", 128), ("__ARM_FEATURE_SVE", "SVE", 0),
                  ("__ARM_NEON", "NEON", 128))


def host_cpu_flags() -> frozenset | None:
    """The CPU's feature flags (/proc/cpuinfo's first flags line); None where the OS does not say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=16)
def target_macros(command: tuple, arch: str) -> frozenset | str:
    """The macros the compiler predefines for `-march=arch` (the instruction-set extensions it
    may use), or why it refused the flag. One preprocessor run (~20 ms) per compiler and target
    and process."""
    try:
        run = _try([*command, f"-march={arch}", "-dM", "-E", "-x", "c++", os.devnull])
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{command[0]} -march={arch} failed: {exc}"
    if run.returncode != 0:
        detail = run.stderr.strip().splitlines()
        return f"{command[0]} does not take -march={arch}: {detail[0] if detail else 'exit status ' + str(run.returncode)}"
    return frozenset(line.split()[1] for line in run.stdout.splitlines() if line.startswith("#define "))


def target_problem(command: tuple, arch: str) -> str | None:
    """Why the native kernels cannot be built for `-march=arch` and run on this CPU (None: they
    can). "native" is this CPU by definition (the probe compiled with it). Otherwise the
    compiler must take the name, and on x86-64 the extensions it enables must all be this
    CPU's: an AVX-512 target on an AVX2 host is refused here, not met as SIGILL later."""
    if arch == "native":
        return None
    prefix = f"{settings.NATIVE_ARCH_VARIABLE}={arch!r}: "
    macros = target_macros(tuple(command), arch)
    if isinstance(macros, str):
        return prefix + macros + " (use 'native', or a -march name this compiler knows: 'haswell', 'x86-64-v2', ...)"
    host = host_cpu_flags()
    if host is None or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    missing = [flag for macro, flag in _X86_MACRO_FLAGS if macro in macros and flag not in host]
    if missing:
        return (prefix + f"that target uses {', '.join(missing)}, which this CPU does not have (its code would stop "
                "with an illegal instruction); choose an older target or 'native'")
    return None


def target_vector_isa(command: tuple, arch: str) -> tuple[str, int] | None:
    """(name, register bits) of the widest vector extension `-march=arch` lets the compiler use
    ("AVX2", 256 for haswell); None where the compiler refuses the target or names none."""
    macros = target_macros(tuple(command), arch)
    if isinstance(macros, str):
        return None
    return next(((name, bits) for macro, name, bits in _VECTOR_MACROS if macro in macros), None)


_warned_targets: set = set()


def configured_target_problem(tc: Toolchain) -> str | None:
    """target_problem for the configured target (gmbase.settings.native_arch), warned once per
    reason (the kernels then stay off and NumPy code runs: a silent fallback would hide why);
    None when the kernels can be built for it here (always for 'native')."""
    try:
        problem = target_problem(tc.command, settings.native_arch())
    except ValueError as exc:  # not a -march name at all
        problem = str(exc)
    if problem is not None and problem not in _warned_targets:
        _warned_targets.add(problem)
        warnings.warn(f"native kernels off: {problem}; NumPy code runs instead", RuntimeWarning, stacklevel=4)
    return problem


def describe_target(tc: Toolchain | None) -> str:
    """The configured -march target with the widest vector extension it enables where the
    compiler says (tc None: no compiler to ask): "native (AVX-512, 512-bit)", "haswell (AVX2,
    256-bit)"."""
    try:
        arch = settings.native_arch()
    except ValueError as exc:
        return f"none ({exc})"
    if tc is not None and target_problem(tc.command, arch) is not None:
        return f"{arch} (refused here: the kernels are off)"
    isa = None if tc is None else target_vector_isa(tc.command, arch)
    return f"{arch} ({isa[0]}, {isa[1]}-bit)" if isa else arch
