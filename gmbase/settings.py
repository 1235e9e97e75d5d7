"""Generator knobs that change the generated source (so they are part of the cache key).
Kept apart from the generators so that a cache hit need not import them. Also the native
kernels' target instruction set (native_arch, GRAPHMODE_NATIVE_ARCH), part of every native
build's flags and so of its cache key."""
import os

# A fused region of at most this many elements runs its ops one by one at the top level:
# the block machinery (slicing, scratch buffers, partial reductions) costs ~1.5 us per
# region, more than one pass over arrays this small saves (W3 at 32x64x64x10 ran 20%
# slower blocked).
INLINE_MAX_ELEMS = 4096

# Independent 0-d calls of one ufunc are batched into one array call from this many on
# (batching.py): packing and unpacking cost ~30 ns an element plus ~0.5 us a batch, a
# call on one NumPy scalar ~100 ns.
MIN_BATCH = 8


def fingerprint(backend: str) -> str:
    return f";inline<={INLINE_MAX_ELEMS};batch>={MIN_BATCH}" if backend == "numpy" else ""


def switch(variable: str) -> bool:
    """An on/off environment switch, on unless set to 0, off, no or false (any case): the
    generators' and the call path's escape hatches read this, so one spelling holds for all."""
    return os.environ.get(variable, "1").strip().lower() not in ("0", "off", "no", "false")


# -- the instruction set the native kernels are compiled for -----------------------------------
NATIVE_ARCH_VARIABLE = "GRAPHMODE_NATIVE_ARCH"
_ARCH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_+")


def native_arch() -> str:
    """The target every native compile asks for as `-march=<this>`: "native" (the default:
    whatever this CPU runs, AVX-512 where it has it) or a GCC/Clang -march name from
    GRAPHMODE_NATIVE_ARCH ("haswell" for AVX2 with FMA, "x86-64-v2" for SSE4.2, ...).

    Read here alone, at each compile (not once at import), so that the eager kernels, the
    generated kernels and the tests that compile with the backend's flags agree, and a
    change of the variable within a process makes new cache keys rather than reusing a
    shared object built for another instruction set. Why a knob at all: an AVX-512 host can
    build and test what an AVX2-only machine (CI, a user's laptop) will run."""
    value = os.environ.get(NATIVE_ARCH_VARIABLE, "").strip()
    if not value:
        return "native"
    if not set(value) <= _ARCH_CHARS or value.startswith("-"):
        raise ValueError(f"{NATIVE_ARCH_VARIABLE}={value!r} is not a -march name: use 'native' (the default) or "
                         "the name a GCC -march= takes, such as 'haswell' (AVX2 and FMA) or 'x86-64-v2' (SSE4.2)")
    return value


# -- which single-precision matrix product the native kernels call -----------------------------
NATIVE_GEMM_VARIABLE = "GRAPHMODE_NATIVE_GEMM"


def native_gemm() -> bool:
    """Whether float32 products of 2**20 multiply-adds and more (eager's and the generated
    code's, split across the threads or not, and the generated C loops' through their gm_blas
    table) call the project's own sgemm (gmnative/csrc/gm_gemm.h, gmnative.gemm):
    the default. GRAPHMODE_NATIVE_GEMM=0 (or false, no, off) gives them NumPy's OpenBLAS
    sgemm again, everywhere at once (read when the routine tables are first made in a
    process). Why a switch: an escape hatch should a host's BLAS be faster, or to compare."""
    return switch(NATIVE_GEMM_VARIABLE)


def native_gemm_forced() -> bool:
    """Whether GRAPHMODE_NATIVE_GEMM is set to 1 (on, yes or true): the own sgemm then runs
    whatever vector width the host has; left unset, only where it measured faster than
    OpenBLAS (AVX-512 builds: gmnative.gemm.sgemm_address)."""
    return os.environ.get(NATIVE_GEMM_VARIABLE, "").strip().lower() in ("1", "on", "yes", "true")
