"""The C++ toolchain as a record (Toolchain: the compiler command, its version, OpenMP and
vector-math support, the flags it takes) and where it is found: `CXX`, else the usual names,
and the probe program compiled to learn what it can do (run by gmnative.build, once per
process, its result kept on disk).
"""
from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field


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
        simd` pragmas are honoured (-fopenmp-simd), which skips OpenMP's outlining passes."""
        # -fno-trapping-math changes no result: it lets the compiler evaluate both sides of a
        # select (relu's `x > 0 || x != x`, a where) instead of branching around one, which
        # kept such loops scalar. The kernels never read the floating-point exception flags.
        flags = ["-std=c++17", "-O3", "-march=native", "-fPIC", "-fno-math-errno", "-fno-trapping-math",
                 "-ffp-contract=off", "-Wno-unknown-pragmas"]
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
                f"{'libmvec' if self.vector_math else 'scalar libm calls'}")


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
