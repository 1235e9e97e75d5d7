"""Compiling and loading native C++ (the native backend's generated kernels and eager's own):
the toolchain probe, the on-disk cache of shared objects, and the call path from Python into
a kernel. The native layer: its thread count is gmbase.threads' (what set_num_threads sets),
and it reads codegen.runtime's pinned BLAS answer only where that module is already loaded
(sys.modules), never importing it, so eager can build and call its kernels without codegen's
generators.

- The compiler (`CXX`, else `c++`, `g++`, `clang++`) is found and probed once per process:
  its version, whether it takes `-fopenmp`, and whether the C library has vector math
  (libmvec) to link against.
- A shared object is cached under the codegen cache directory, keyed by the source, the
  flags, the compiler's version and the host's instruction set (`-march=native` alone does
  not name the CPU: a cache copied to another machine must miss, not crash with SIGILL).
  A cache file is a header naming its key and the SHA-256 of the bytes that follow, then the
  shared object. Files are written atomically; the directory and file must belong to this
  user and be writable by nobody else (else the cache is not used). Loading reads the file
  once through one descriptor, checks owner, mode and hash on those bytes, writes them to a
  private temporary file and loads that: nothing can change between the check and the load.
- Fast-math flags, when asked for, are compile flags only, never link flags: linking with
  -ffast-math pulls in start-up code that turns on flush-to-zero for the whole process.
- Kernels have one signature, `void k(void* const* args, int threads)`. A small CPython
  extension (built once, cached like the kernels) calls them: it checks each NumPy array
  (C-contiguous, aligned, its type, its byte size, writeable where written) and passes its
  data pointer, ~20 ns an argument; `call_new` also allocates the small outputs (in C, a
  fraction of np.empty's cost from Python) and returns them. Without Python headers a
  ctypes path does the same, slower.
- Large outputs (REUSE_MIN_BYTES and up) come from `reuse`: a buffer of an earlier call
  that nothing references any more is written again instead of faulting in fresh pages.
- A graph is one translation unit; a large one compiles as one part per core (the preamble
  and a run of whole kernels each, of about equal estimated compile time, compile_weight,
  compiled at once) linked into one shared object, and the
  call path's extension builds on a helper thread meanwhile (split_source, compile_shared).
  The probe's compiler runs go at once too, and static.compile starts the probe on a helper
  thread when a function is compiled for a backend that may be native (prefetch_probe).
- A translation unit without a parallel region (the generator emits one only for loops of
  PARALLEL_MIN_ELEMS elements and more) compiles with -fopenmp-simd and links without
  libgomp: OpenMP's outlining was half the compile time of a small graph.
- OpenMP: threads follow GRAPHMODE_THREADS (runtime.CONFIG.threads), one thread in a forked
  child (libgomp's pool does not survive fork), and a passive wait policy unless the user set
  one (spinning workers fight OpenBLAS's threads right after a matmul).

The toolchain's record and the compiler's discovery are `gmnative.toolchain`, the sealed
on-disk files `gmnative.so_cache`, the reusable output buffers `gmnative.buffers`; this
module runs the probe, the threads' settings and the compiler, and re-exports their names.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from gmbase import cache, settings
from gmbase.threads import available as _available
from gmbase.threads import blas_threads as _blas_threads
from gmbase.threads import num_threads as _num_threads

from .buffers import REUSE_MIN_BYTES, reuse  # noqa: F401  (re-exported: generated modules call build.reuse)
from .so_cache import (  # noqa: F401
    FORMAT,
    _private_copy,
    _private_dir_problem,
    _scratch,
    read_verified,
    seal,
    so_key,
    unseal,
    uses_threads,
)
from .toolchain import (
    _PROBE,
    NativeCompileError,
    NoCompiler,
    Toolchain,
    _find_compiler,
    _try,
    configured_target_problem,
    describe_target,
    isa_fingerprint,
)

PARALLEL_MIN_ELEMS = 1 << 15  # below this many elements a loop runs on the calling thread


_probe_lock = threading.Lock()
_probe_started = False


def prefetch_probe() -> None:
    """Probe the compiler on a helper thread (static.compile calls this when a function is
    compiled for a backend that may be native): the probe's compiler runs then overlap the
    first call's tracing and passes instead of adding to them."""
    global _probe_started
    if _probe_started:
        return
    _probe_started = True
    threading.Thread(target=_probe, name="graphmode-native-probe", daemon=True).start()


def _probe() -> Toolchain | str:
    """The toolchain, or why there is none; probed once, by whichever thread asks first (the
    others wait for it)."""
    global _probe_started
    _probe_started = True
    with _probe_lock:
        return _probe_once()


def _reset_probe_lock_in_child() -> None:
    global _probe_lock
    _probe_lock = threading.Lock()  # a fork while the helper thread probed must not deadlock the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_probe_lock_in_child)


@functools.lru_cache(maxsize=1)
def _probe_once() -> Toolchain | str:
    """The toolchain, or why there is none. Once per process; a probe's result is kept in the
    cache directory, keyed by the compiler binary (path, size, mtime) and the host's ISA,
    because running the compiler three times costs ~0.3-1 s."""
    command = _find_compiler()
    if command is None:
        return ("no C++ compiler found (set CXX, or install g++ or clang++)"
                if not os.environ.get("CXX") else f"CXX={os.environ['CXX']!r} is not an executable")
    record = _probe_record_path(command)
    if record is not None:
        known = _read_probe(record)
        if known is not None:
            return known
    found = _run_probe(command)
    if record is not None and isinstance(found, Toolchain):
        try:
            # the record names its own file: one copied over another compiler's name is not trusted
            cache.write_atomic(record, json.dumps({**dataclasses.asdict(found), "_key": record.name}).encode())
        except OSError:
            pass
    return found


def _probe_record_path(command: tuple) -> Path | None:
    if not cache.enabled():
        return None
    try:
        binary = Path(shutil.which(command[0]) or command[0]).resolve()
        st = binary.stat()
        directory = cache.directory()
    except OSError:
        return None
    if directory is None or _private_dir_problem(directory):  # None: the cache refused its directory
        return None
    ident = "\0".join([FORMAT, " ".join(command), str(binary), str(st.st_size), str(st.st_mtime_ns), isa_fingerprint(),
                       sysconfig.get_paths().get("include") or ""])
    return directory / f"gm_native_probe_{hashlib.sha256(ident.encode()).hexdigest()[:32]}.json"


def _read_probe(path: Path) -> Toolchain | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (hasattr(os, "getuid") and st.st_uid != os.getuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = json.loads(fh.read().decode())
        if data.pop("_key", None) != path.name:  # another probe's record under this name
            return None
        data["command"], data["notes"] = tuple(data["command"]), tuple(data["notes"])
        return Toolchain(**data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    finally:
        os.close(fd)


def _run_probe(command: tuple) -> Toolchain | str:
    """Ask the compiler for its version and build the probe with the flags most compilers take
    (OpenMP, libmvec, -march=native, and again linked with gold), the three at once; other
    flag sets are tried one by one only when that fails."""
    notes = []
    with tempfile.TemporaryDirectory(prefix="graphmode-probe-") as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text(_PROBE)
        out = str(Path(tmp) / "probe.so")
        base = [*command, "-std=c++17", "-O2", "-fPIC", "-Wno-unknown-pragmas", "-shared", str(src), "-o", out]
        first = base + ["-fopenmp", "-lmvec", "-lm", "-march=native"]
        try:
            version_run, run, gold_run = _run_all([[*command, "--version"], first,
                                                   first[:-1] + ["-o", out + ".gold.so", "-fuse-ld=gold"]])
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{command[0]} --version failed: {exc}"
        version = version_run.stdout.strip().splitlines()
        version_line = version[0] if version else "unknown version"
        openmp = vector_math = gold = False
        if run.returncode == 0:
            openmp = vector_math = True
            gold = gold_run.returncode == 0
        else:
            for omp, mvec in ((True, True), (True, False), (False, True), (False, False)):
                cmd = base + (["-fopenmp"] if omp else []) + (["-lmvec"] if mvec else []) + ["-lm"]
                try:
                    run = _try(cmd + ["-march=native"])
                    if run.returncode != 0:
                        run = _try(cmd)
                        if run.returncode == 0:
                            notes.append("the compiler does not take -march=native")
                except (OSError, subprocess.SubprocessError) as exc:
                    return f"{command[0]} cannot compile: {exc}"
                if run.returncode == 0:
                    openmp, vector_math = omp, mvec
                    break
            else:
                return f"{command[0]} cannot build a shared library: {run.stderr.strip()[-500:]}"
            try:
                gold = _try(run.args + ["-fuse-ld=gold"]).returncode == 0
            except (OSError, subprocess.SubprocessError):
                gold = False
    if not openmp:
        notes.append("no OpenMP: kernels run on one thread")
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").is_file():
        include = None
        notes.append("no Python headers: kernels are called through ctypes (slower calls)")
    return Toolchain(tuple(command), version_line, openmp, vector_math, isa_fingerprint(), include, tuple(notes),
                     gold)


def availability() -> tuple[bool, str]:
    """(whether the native backend can run here, a sentence saying what it would use or why not).
    A target the compiler or this CPU cannot take (GRAPHMODE_NATIVE_ARCH) makes it unavailable,
    with one warning: "auto" and eager's kernels then run NumPy code, as without a compiler."""
    found = _probe()
    if isinstance(found, str):
        return False, found
    problem = configured_target_problem(found)
    if problem is not None:
        return False, problem
    return True, found.describe()


def toolchain() -> Toolchain:
    """The probed toolchain; NoCompiler with the reason when there is none, or when the target
    instruction set (GRAPHMODE_NATIVE_ARCH) cannot be built or run here."""
    found = _probe()
    if isinstance(found, str):
        raise NoCompiler(f"backend='native' needs a C++ compiler: {found}. Use backend='numpy' (or 'auto', "
                         "which runs NumPy code when no compiler is found).")
    problem = configured_target_problem(found)
    if problem is not None:
        raise NoCompiler(f"the native backend cannot build here: {problem}. Unset {settings.NATIVE_ARCH_VARIABLE} "
                         "(or set it to 'native') to compile for this CPU.")
    return found


def target() -> str:
    """The -march target of every native compile with the widest vector extension it enables,
    e.g. "haswell (AVX2, 256-bit)": what reports print beside the host's width."""
    found = _probe()
    return describe_target(None if isinstance(found, str) else found)


# -- threads ----------------------------------------------------------------------------------
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def threads() -> int:
    """OpenMP threads for a kernel call: the configured count (gmbase.threads.num_threads:
    set_num_threads, GRAPHMODE_THREADS, OMP_NUM_THREADS or the usable cores) less the cores
    other processes keep busy now (gmbase.threads.available); one in a process forked from
    one that ran kernels (libgomp's thread pool does not survive fork)."""
    if _forked:
        return 1
    return _available(_num_threads())


def blas_threads() -> int | None:
    """Threads of NumPy's BLAS as the kernels assume them (gmbase.threads.blas_threads), through
    codegen.runtime's where that module is loaded (tests pin an answer there)."""
    runtime = sys.modules.get("codegen.runtime")
    return _blas_threads() if runtime is None else runtime.blas_threads()


# GOMP_SPINCOUNT the backend sets when BLAS runs one thread: the workers spin this many
# pause instructions (under a millisecond) before they sleep, enough to bridge the Python
# between one kernel and the next. Measured on W5's compiled step (two cores, BLAS on one
# thread, 3 runs each): sleeping workers (OMP_WAIT_POLICY=PASSIVE) 15.1 ms, 30000 spins 9.1
# ms, one thread 11.8 ms: waking an idle core costs 50-200 us a parallel region here, so
# sleeping between kernels made two threads slower than one. The price: with the other core
# busy with another process, spinning took 22.5 ms against sleeping's 13.8 (README, "Threads").
WAIT_SPIN = 30000
# the OpenMP variables this process set itself (not the user): benchmarks give peers the
# user's environment, not the backend's choice for its own pool
wait_policy_set: dict[str, str] = {}


def _set_wait_policy() -> None:
    """Choose how libgomp's idle workers wait, before anything loads libgomp, unless the user
    chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set). Briefly spinning where BLAS runs one
    thread; sleeping (PASSIVE) where BLAS runs its own threads, whose spinning workers would
    fight ours for the cores right after every matmul (a kernel after a matmul took 10x)."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    name, value = ("GOMP_SPINCOUNT", str(WAIT_SPIN)) if blas_threads() == 1 else ("OMP_WAIT_POLICY", "PASSIVE")
    os.environ[name] = value
    wait_policy_set[name] = value


def workers_spin() -> bool:
    """Whether libgomp's idle workers spin before they sleep in this process (its default
    and the backend's choice where BLAS runs one thread), as the environment says when
    libgomp loads: not under OMP_WAIT_POLICY=PASSIVE or GOMP_SPINCOUNT=0."""
    return (os.environ.get("OMP_WAIT_POLICY", "").strip().upper() != "PASSIVE"
            and os.environ.get("GOMP_SPINCOUNT", "").strip() != "0")


def environ_for_peers() -> dict[str, str]:
    """This process's environment less the OpenMP wait the backend chose for its own pool:
    for child processes that time another runtime (a peer runs with its runtime's default)."""
    return {k: v for k, v in os.environ.items() if k not in wait_policy_set}


# -- compiling --------------------------------------------------------------------------------
# A large translation unit is compiled as several object files at once, one per core (up to
# MAX_PARTS), then linked into one shared object: gcc spends ~0.2 ms a line on kernels with
# OpenMP regions, so a training step's 5000 lines take ~1 s on one core. Each part repeats
# the preamble (includes, declarations and static inline helpers, which cost little) and
# takes a run of whole kernels. Below SPLIT_MIN_WEIGHT of kernels, one compiler call
# (compile and link together) is cheaper than starting several. Measured with gcc 12 on two
# cores: W3's kernels (weight ~190) take 245 ms as one unit and 165 ms as two parts plus a
# link; near half that the two ways cost the same (~145 ms).
SPLIT_MIN_WEIGHT = 100
MAX_PARTS = 4
_KERNEL = '\nextern "C" void '


def compile_weight(kernel: str) -> float:
    """The compiler's time on one kernel's text, roughly in milliseconds (gcc 12, -O3, OpenMP):
    mostly each outlined parallel region and each vectorized loop, then the lines of code;
    comments cost nothing. Fitted on the kernels of a training step and an MLP step (W5, W3)
    timed in runs of five (R^2 0.95). Characters were a poor measure: the backward's kernels
    carry long comments and no parallel region, and a split by characters left one part of
    W5 three times the other's time."""
    code = sum(1 for line in kernel.splitlines() if line.strip() and not line.lstrip().startswith("//"))
    return 1.0 + 10.0 * kernel.count("#pragma omp parallel") + 3.5 * kernel.count("#pragma omp simd") + 0.25 * code


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split_source(source: str, parts: int | None = None) -> list:
    """`source` as translation units that compile separately and link into the same shared
    object: the preamble (everything before the first kernel) followed by a run of whole
    kernels (`extern "C" void ...` definitions at the start of a line) each, the runs of
    about equal compile_weight (the parts compile at once: the heaviest decides the time);
    `[source]` when the kernels are too light to be worth it or there is one core."""
    parts = min(MAX_PARTS, _cores()) if parts is None else parts
    first = source.find(_KERNEL)
    if parts < 2 or first < 0:
        return [source]
    starts = []
    at = first
    while at >= 0:
        starts.append(at)
        at = source.find(_KERNEL, at + 1)
    if len(starts) < 2:
        return [source]
    ends = starts[1:] + [len(source)]
    cumulative = [0.0]  # weight of the kernels before each one
    for a, b in zip(starts, ends):
        cumulative.append(cumulative[-1] + compile_weight(source[a:b]))
    total = cumulative[-1]
    if total < SPLIT_MIN_WEIGHT:
        return [source]
    cuts = [0]  # kernel indices where a part starts
    for k in range(1, min(parts, len(starts))):
        target = total * k / parts
        best = min(range(cuts[-1] + 1, len(starts)), key=lambda i: abs(cumulative[i] - target), default=None)
        if best is None:  # (fewer kernels than parts)
            break
        cuts.append(best)
    bounds = [starts[i] for i in cuts] + [len(source)]
    preamble = source[:first]
    return [preamble + source[a:b] for a, b in zip(bounds, bounds[1:])]


def _run_all(cmds: list) -> list:
    """Run the commands at once (each a compiler call); their CompletedProcess, in order."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cmd in cmds]
    out = []
    for cmd, proc in zip(cmds, procs):
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out.append(subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr))
    return out


def _checked(runs: list, src_path: Path) -> None:
    for run in runs:
        if run.returncode != 0:
            raise NativeCompileError(
                f"native backend: the C++ compiler rejected the generated source {src_path}\n"
                f"command: {shlex.join(run.args)}\n{run.stderr.strip()[-6000:]}")


def compile_shared(source: str, tc: Toolchain, src_path: Path, fast_math: bool = False,
                   extra: tuple = ()) -> bytes:
    """Compile `source` (already written at src_path) to a shared object; its bytes. A large
    source compiles as parallel parts (split_source) linked together."""
    out = _scratch() / (src_path.stem + f"-{os.getpid()}-{threading.get_ident()}.so")
    units = split_source(source)
    threads = uses_threads(source)
    lflags = tc.link_flags(threads)
    objects: list = []
    try:
        try:
            if len(units) == 1 and not fast_math:
                _checked([_try([*tc.command, *tc.compile_flags(fast_math, threads), *extra, str(src_path), "-o",
                                str(out), *lflags])], src_path)
                return out.read_bytes()
            # compile, then link: a driver that sees -ffast-math while linking adds crtfastmath.o, whose
            # start-up code turns on flush-to-zero for the whole process
            inputs = [src_path] if len(units) == 1 else []
            for k, unit in enumerate(units if len(units) > 1 else []):
                part = _scratch() / f"{out.stem}-part{k}.cpp"
                part.write_text(unit)
                inputs.append(part)
            objects = [p.with_suffix(".o") for p in inputs]
            runs = _run_all([[*tc.command, *tc.compile_flags(fast_math, uses_threads(unit)), *extra, "-c", str(src),
                              "-o", str(obj)] for unit, src, obj in zip(units, inputs, objects)])
            try:
                _checked(runs, src_path)
                _checked([_try([*tc.command, *map(str, objects), "-o", str(out), *lflags])], src_path)
            except NativeCompileError:
                if len(units) == 1:
                    raise
                # the parts did not build apart (a helper defined between kernels): as one unit
                objects.append(out.with_suffix(".o"))
                _checked(_run_all([[*tc.command, *tc.compile_flags(fast_math, threads), *extra, "-c", str(src_path),
                                    "-o", str(objects[-1])]]), src_path)
                _checked([_try([*tc.command, str(objects[-1]), "-o", str(out), *lflags])], src_path)
        except (OSError, subprocess.SubprocessError) as exc:
            raise NativeCompileError(f"native backend: running the C++ compiler failed ({exc}); generated "
                                     f"source: {src_path}") from None
        return out.read_bytes()
    finally:
        out.unlink(missing_ok=True)
        for obj in objects:
            obj.unlink(missing_ok=True)
            if obj.with_suffix(".cpp") != src_path:
                obj.with_suffix(".cpp").unlink(missing_ok=True)


@dataclass
class Library:
    """A loaded shared object: kernel addresses by name, and where it came from."""

    cdll: ctypes.CDLL
    path: Path | None  # the cache file (None: not cached)
    source_path: Path  # the generated C++ file
    origin: str  # "compiled", "disk cache"

    def address(self, name: str) -> int:
        address = ctypes.cast(getattr(self.cdll, name), ctypes.c_void_p).value
        if address is None:
            raise RuntimeError(f"native kernel {name!r} has a null address in {self.path}")
        return address


_libraries: dict = {}
_locks: dict = {}
_guard = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    with _guard:
        return _locks.setdefault(key, threading.Lock())


def _cache_paths(key: str, suffix: str) -> tuple[Path | None, str | None]:
    """(cache directory, or None with the reason it is not used)."""
    if not cache.enabled():
        return None, "GRAPHMODE_CACHE=0"
    directory = cache.directory()
    if directory is None:  # refused (unusable or unsafe; gmbase.cache warned once)
        return None, "the cache directory is not used"
    problem = _private_dir_problem(directory)
    return (None, problem) if problem else (directory, None)


def build_bytes(source: str, stem: str, fast_math: bool = False,
                extra: tuple = ()) -> tuple[bytes, Path, Path | None, str]:
    """(shared object bytes, source path, cache path, origin) for source, from the disk cache
    or the compiler."""
    tc = toolchain()
    key = so_key(source + "\0" + " ".join(extra), tc, fast_math)
    directory, why_not = _cache_paths(key, ".so")
    with _lock_for(key):
        if directory is not None:
            cached = directory / f"{stem}_{key[:40]}.so.sealed"
            src_path = directory / f"{stem}_{key[:40]}.cpp"
            data = read_verified(cached, key)
            if data is not None:
                return data, src_path, cached, "disk cache"
            cache.write_atomic(src_path, source.encode())
            _prefetch_caller_for(tc)
            data = compile_shared(source, tc, src_path, fast_math, extra)
            cache.write_atomic(cached, seal(key, data))
            cache.evict(directory, keep=(cached, src_path))  # the bound counts shared objects and sources too
            return data, src_path, cached, "compiled"
        src_path = _scratch() / f"{stem}_{key[:40]}.cpp"
        src_path.write_text(source)
        _prefetch_caller_for(tc)
        return compile_shared(source, tc, src_path, fast_math, extra), src_path, None, f"compiled ({why_not})"


def _prefetch_caller_for(tc: Toolchain) -> None:
    """Before a compile: build the call-path extension meanwhile (the generated module calls
    the kernels through it next). Not on a cache hit: there the extension loads from the
    cache in a millisecond, and a helper thread only made the loading thread wait for the
    interpreter lock (about 2 ms of W3's first call from the disk cache)."""
    if tc.python_include is not None:
        prefetch_caller()


def load_library(source: str, stem: str = "gm_native", fast_math: bool = False) -> Library:
    """Compile (or find in the cache) and load one translation unit; memoized per process."""
    tc = toolchain()
    key = so_key(source, tc, fast_math)
    found = _libraries.get(key)
    if found is not None:
        return found
    data, src_path, cached, origin = build_bytes(source, stem, fast_math)
    if tc.openmp and uses_threads(source):
        _set_wait_policy()
    tmp = _private_copy(data)
    try:
        cdll = ctypes.CDLL(tmp, mode=getattr(os, "RTLD_LOCAL", 0))
    finally:
        os.unlink(tmp)  # the mapping stays; nobody can swap the file under a later load
    lib = Library(cdll, cached, src_path, origin)
    _libraries[key] = lib
    return lib


# -- the call path (gmnative.caller), under the names generated modules and tests use --------------
# (_ctypes_call and _ctypes_call_new: the ctypes path, which tests call straight)
from .caller import _ctypes_call, _ctypes_call_new, caller, caller_new, formats, loaded_copy_pairs, prefetch_caller  # noqa: E402,F401,E501

__all__ = ["NoCompiler", "NativeCompileError", "Toolchain", "Library", "availability", "toolchain", "threads",
           "blas_threads",
           "prefetch_probe", "prefetch_caller", "target", "split_source", "compile_weight",
           "load_library", "caller", "caller_new", "loaded_copy_pairs",
           "formats", "isa_fingerprint", "read_verified", "seal", "unseal", "so_key",
           "uses_threads", "reuse", "REUSE_MIN_BYTES",
           "PARALLEL_MIN_ELEMS"]
