"""Threads of the native kernels and of NumPy's BLAS, decided in one place.

Why one place: the kernels (OpenMP) and NumPy's BLAS (OpenBLAS's own pool) each start a
thread per core by default, and each pool's idle workers spin for a while before they
sleep. Left alone they fight: W3's compiled step took 24 ms with BLAS on its default two
threads against 2.8 ms with BLAS on one (two cores, a product right before a kernel each
time). PyTorch avoids it by owning both pools; here the kernels own the parallelism:

- kernel threads: `set_num_threads(n)` (torch.set_num_threads), else GRAPHMODE_THREADS,
  else OMP_NUM_THREADS (its first entry, as libgomp reads it), else the cores this process
  may use (its affinity mask, not the machine's count, and no more than a cgroup CPU quota allows);
- BLAS: one thread, set through the library itself (a ctypes call of the OpenBLAS NumPy's
  wheels bundle, else threadpoolctl for MKL, BLIS or another OpenBLAS) the first time the
  kernels' matmul asks (`blas_threads`); large products are then split by rows across the
  kernel threads, one single-threaded BLAS call per part (gmnative.kernels.gemm). A
  user who exported a BLAS variable (OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, ...) or limited
  BLAS with threadpoolctl before that keeps their choice: BLAS is then left alone and
  products are not split;
- contention (`available`): when other processes keep the cores busy, a kernel call runs on
  the cores that are free rather than on the configured count. A team larger than the free
  cores makes every parallel loop wait for its slowest, descheduled thread, and the idle
  team's spinning makes it worse (W5's compiled step: 9 ms quiet, 22 ms beside one busy
  process with two threads, 12 ms with one). The cores other processes keep busy (the
  busy time of this process's cores in /proc/stat less this process's own CPU time, over the
  interval since the last sample: `others_running`) are sampled at most every SAMPLE_SECONDS
  and smoothed; threads = min(configured, cores - others), at least
  one, shrinking at once and growing back only once the load has clearly gone (hysteresis,
  `_next_free`). GRAPHMODE_ADAPT_THREADS=0 turns this off (a fixed team, as OpenMP's default).
  The team's idle OpenMP workers then wait unwoken: no worker spins on a core another
  process needs (libgomp reads its spin count once, so shrinking the team is how spinning
  stops). Products are not split under contention either (codegen.runtime.matmul says why).
"""
from __future__ import annotations

import functools
import os
import time

# variables with which a user chooses BLAS's threads: set, BLAS is theirs to size
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS")


def _positive(text: str | None) -> int | None:
    """A positive int from an environment value ("4", or OMP's list form "4,2": its first
    entry); None when unset or not a number."""
    if not text:
        return None
    head = text.split(",")[0].strip()
    return int(head) if head.isdigit() and int(head) > 0 else None


def affinity_cores() -> int:
    """Cores in this process's affinity mask where the OS has one (`taskset` or a container's
    cpuset limit it below the machine's count), else os.cpu_count()."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def quota_from(cpu_max: str | None, cfs_quota: str | None, cfs_period: str | None) -> int | None:
    """Whole cores a cgroup CPU quota allows (rounded up), from cgroup v2's cpu.max ("200000
    100000", or "max 100000": none) or v1's cpu.cfs_quota_us and cpu.cfs_period_us (-1: none);
    None without a quota."""
    try:
        if cpu_max is not None:
            quota, period = cpu_max.split()[:2]
            return None if quota == "max" else max(1, -(-int(quota) // int(period)))
        if cfs_quota is not None and cfs_period is not None and int(cfs_quota) > 0:
            return max(1, -(-int(cfs_quota) // int(cfs_period)))
    except (ValueError, ZeroDivisionError):
        return None
    return None


@functools.lru_cache(maxsize=1)
def quota_cores() -> int | None:
    """Whole cores this process's cgroup CPU quota allows (a container started with --cpus=2
    on a larger host), None without one; read once per process."""
    return quota_from(_read("/sys/fs/cgroup/cpu.max"), _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                      _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def usable_cores() -> int:
    """Cores this process may use: its affinity mask, less where a cgroup CPU quota allows fewer
    (a team sized by the mask alone, 64 threads on a 64-core host for a container limited to 2
    cores' time, would have every parallel loop wait on throttled threads)."""
    quota = quota_cores()
    return min(affinity_cores(), quota) if quota is not None else affinity_cores()


def default_threads() -> int:
    """The kernels' thread count before any set_num_threads: GRAPHMODE_THREADS, else
    OMP_NUM_THREADS, else the usable cores."""
    for name in ("GRAPHMODE_THREADS", "OMP_NUM_THREADS"):
        found = _positive(os.environ.get(name))
        if found is not None:
            return found
    return usable_cores()


# -- the configured count -------------------------------------------------------------------------
_configured: list[int] = []  # set_num_threads' count; filled with default_threads() at the first read


def num_threads() -> int:
    """The kernels' configured thread count: what set_num_threads set, else default_threads()
    (read once, at the first ask). The native kernels, the products they split and compiled
    code's blocks all run on it (`available` trims it to the free cores). It lives in the base
    layer so that eager's set_num_threads, the native layer and codegen's runtime
    (`CONFIG.threads`) read and write one value without importing each other."""
    if not _configured:
        _configured.append(default_threads())
    return _configured[0]


def set_num_threads(n: int) -> None:
    """Set the configured count (torch.set_num_threads' rule: a positive int, else RuntimeError)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    _configured[:] = [n]


# -- BLAS ----------------------------------------------------------------------------------------
_blas: dict = {}  # "threads": what BLAS runs (None: unknown), "set_by_us": whether we chose it


@functools.lru_cache(maxsize=1)
def numpy_openblas() -> tuple:
    """The OpenBLAS libraries NumPy's wheels bundle (and NumPy has loaded), as ctypes
    libraries: none where NumPy was built against another BLAS. Looked up once per process
    by listing NumPy's library folder (`glob` compiled its pattern on every first call, a
    millisecond of a compiled function's first call from the disk cache)."""
    import ctypes  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    try:
        names = sorted(name for name in os.listdir(libs) if "openblas" in name)
    except OSError:
        return ()
    found = []
    for name in names:
        try:
            found.append(ctypes.CDLL(os.path.join(libs, name)))
        except OSError:
            continue
    return tuple(found)


def user_chose_blas_threads() -> bool:
    """Whether the environment names BLAS's thread count (then it is the user's choice)."""
    return any(_positive(os.environ.get(name)) is not None for name in BLAS_VARIABLES)


def _openblas_call(prefixes: tuple, suffixes: tuple, *args: int) -> int | None:
    """Call the first function found in NumPy's bundled OpenBLAS named prefix+suffix (None
    where there is none)."""
    import ctypes  # noqa: PLC0415

    for lib in numpy_openblas():
        for prefix in prefixes:
            for suffix in suffixes:
                fn = getattr(lib, prefix + suffix, None)
                if fn is not None:
                    fn.restype = ctypes.c_int if not args else None
                    result = fn(*(ctypes.c_int(a) for a in args))
                    return int(result) if not args else args[0]
    return None


_GET = (("scipy_openblas_get_num_threads", "openblas_get_num_threads"), ("64_", "_64_", ""))
_SET = (("scipy_openblas_set_num_threads", "openblas_set_num_threads"), ("64_", "_64_", ""))


def _threadpoolctl_blas(limit: int | None) -> int | None:
    """BLAS's threads through threadpoolctl (any BLAS it knows), set to `limit` first when
    given; None where threadpoolctl is not installed or finds no BLAS."""
    try:
        import threadpoolctl  # type: ignore[import-untyped]  # noqa: PLC0415  (no stubs)
    except ImportError:
        return None
    if limit is not None:
        threadpoolctl.threadpool_limits(limits=limit, user_api="blas")
    found = [info.get("num_threads") for info in threadpoolctl.threadpool_info() if info.get("user_api") == "blas"]
    return int(max(found)) if found else None


def query_blas_threads() -> int | None:
    """BLAS's current thread count as the library itself says (None when unknown)."""
    try:
        found = _openblas_call(*_GET)
    except (ImportError, OSError):
        found = None
    if found is None:
        found = _threadpoolctl_blas(None)
    if found is None:
        for name in BLAS_VARIABLES + ("OMP_NUM_THREADS",):
            value = _positive(os.environ.get(name))
            if value is not None:
                return value
    return found


def set_blas_threads(n: int) -> int | None:
    """Make NumPy's BLAS run `n` threads (the bundled OpenBLAS by a direct call, else any BLAS
    threadpoolctl finds); returns the count BLAS reports afterwards (None: no BLAS found)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_blas_threads expects a positive integer, got {n!r}")
    try:
        done = _openblas_call(*_SET, n)
    except (ImportError, OSError):
        done = None
    found = done if done is not None else _threadpoolctl_blas(n)
    _blas.update(threads=found, set_by_us=True)
    return found


def blas_threads() -> int | None:
    """BLAS's thread count as the kernels should assume it. The first call decides: unless the
    user chose (a BLAS variable exported, or BLAS already limited below the cores, e.g. by
    threadpoolctl), BLAS is set to one thread, and the kernels split large products among
    their own threads (see the module docstring)."""
    if "threads" not in _blas:
        if user_chose_blas_threads():
            _blas.update(threads=query_blas_threads(), set_by_us=False)
        else:
            current = query_blas_threads()
            if current is not None and current != 1 and current >= usable_cores():
                set_blas_threads(1)
            else:  # unknown BLAS, or already one thread / limited by the user
                _blas.update(threads=current, set_by_us=False)
    return _blas["threads"]


def blas_set_by_library() -> bool:
    """Whether this library chose BLAS's thread count (not the user)."""
    blas_threads()
    return bool(_blas.get("set_by_us"))


def forget_blas() -> None:
    """Forget the decision (tests, or after the user resized BLAS themselves): the next
    blas_threads() asks again."""
    _blas.clear()


# -- contention ----------------------------------------------------------------------------------
SAMPLE_SECONDS = 0.05  # at most one reading of the cores' busy time this often (~30 us a reading)
SMOOTHING = 0.5        # weight of the newest sample in the running estimate of busy cores
BUSY_ROUNDING = 0.5    # a core counts as taken once the estimate reaches half of one (see below)
FREE_ROUNDING = 0.7    # and as free again only once it falls below 0.3 (hysteresis, see `available`)
# Why half: the estimate is CPU time, and a team as large as the cores beside one spinning process
# shares them three ways, so the spinner shows as 2/3 of a core (W3 small's step kept its team of
# two for 17% of its calls beside it at 0.7); on a quiet machine the samples stayed under 0.32.

_load: dict = {"at": -1.0, "others": 0.0, "free": 1 << 30, "off": False, "pinned": False}


def adapt_enabled() -> bool:
    """Whether kernel calls shrink their team to the free cores: not under
    GRAPHMODE_ADAPT_THREADS=0, nor while use_deterministic_algorithms(True) is on (a
    reduction's partial sums follow the team, so its bits would follow the machine's load)."""
    if _load["pinned"]:
        return False
    return os.environ.get("GRAPHMODE_ADAPT_THREADS", "1").strip() not in ("0", "false", "no", "off")


def pin_team(pinned: bool) -> None:
    """Keep every kernel call on the configured team (use_deterministic_algorithms calls this)."""
    _load["pinned"] = bool(pinned)
    reset_adaptation()


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(512).decode("ascii", "replace")
    except OSError:
        return None


def _own_running() -> int:
    """This process's threads in state R (running or runnable) now: they are in the kernel's
    run-queue count too, and must not be taken for other processes' load."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 1
    running = 0
    for tid in tids:
        stat = _read(f"/proc/self/task/{tid}/stat")
        if stat is not None and stat[stat.rfind(")") + 2:stat.rfind(")") + 3] == "R":
            running += 1
    return max(running, 1)  # the caller at least


def _runnable_now() -> float | None:
    """Runnable tasks of other processes at this instant: the kernel's count of runnable tasks
    (/proc/loadavg) less this process's own; None where the OS does not say."""
    text = _read("/proc/loadavg")
    if text is None:
        return None
    try:
        running = int(text.split()[3].split("/")[0])
    except (IndexError, ValueError):
        return None
    return float(max(0, running - _own_running()))


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100
_cpu_reading: dict = {}  # the last reading: "wall", "busy" (CPU seconds of the usable cores), "own" (this process's)


def busy_ticks(stat: str, cores: set[int]) -> int:
    """Clock ticks the given cores have spent busy, from the text of /proc/stat: user, nice,
    system, irq, softirq and steal time of each `cpuN` line whose N is in `cores` (idle and
    iowait are not busy; guest time is inside user time)."""
    ticks = 0
    for line in stat.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        if not name[3:].isdigit() or int(name[3:]) not in cores or len(fields) < 8:
            continue
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
        ticks += user + nice + system + irq + softirq + steal
    return ticks


def _busy_seconds() -> float | None:
    """CPU seconds the cores this process may run on have spent busy since boot (busy_ticks of
    /proc/stat); None where the OS does not say."""
    try:
        with open("/proc/stat", "rb") as f:
            text = f.read(1 << 20).decode("ascii", "replace")
        cores = os.sched_getaffinity(0)
    except (OSError, AttributeError):
        return None
    return busy_ticks(text, cores) / _CLOCK_TICKS


def _take_reading() -> float | None:
    """Record the usable cores' busy seconds, this process's CPU seconds and the wall clock
    now (the next others_running takes its differences from here); the busy seconds, or None
    where the OS does not say."""
    busy, own, wall = _busy_seconds(), time.process_time(), time.monotonic()
    if busy is not None:
        _cpu_reading.update(wall=wall, busy=busy, own=own)
    return busy


def others_running() -> float | None:
    """Cores other processes kept busy since the previous call: the busy time of the cores
    this process may run on (/proc/stat) less this process's own CPU time, over the wall time
    between the two calls (the first reading is taken when this module is imported, so the
    first call already measures an interval); without a reading, or within a millisecond of
    the last, the runnable tasks of other processes at this instant (/proc/loadavg). Under a
    cgroup CPU quota smaller than the affinity mask, 0: the quota is this process's share
    whatever the host's other processes do (and /proc/stat speaks of the host). None where the
    OS does not say (not Linux).

    Why CPU time rather than a count of runnable tasks: a count is an instant, and any task
    that happens to be runnable then (a kernel worker, a daemon's tick, this process's own
    thread between two reads) counted as a busy core. On a quiet machine 40% of the samples of
    W5's compiled step counted one, and with the smoothing 15-60% of its kernel calls ran on a
    shrunk team (9.1 against 7.5 ms a step). Busy time over the interval counts a process that
    runs 6% of the time as 0.06 of a core, and a spinning one as a whole core."""
    quota = quota_cores()
    if quota is not None and quota < affinity_cores():
        return 0.0  # a quota is this process's own share: the host's other processes do not take it
    last = dict(_cpu_reading)
    busy = _take_reading()
    if busy is None or not last or _cpu_reading["wall"] - last["wall"] < 1e-3:
        return _runnable_now()
    own, wall = _cpu_reading["own"], _cpu_reading["wall"]
    others = (busy - last["busy"] - (own - last["own"])) / (wall - last["wall"])
    return max(0.0, others)


def available(configured: int) -> int:
    """The team size for a kernel call now: `configured`, less the cores other processes
    keep busy (sampled at most every SAMPLE_SECONDS), at least one."""
    if configured <= 1 or _load["off"] or _load["pinned"]:
        return configured
    now = time.monotonic()
    if now - _load["at"] >= SAMPLE_SECONDS:
        _load["at"] = now
        if not adapt_enabled():
            _load["off"] = True
            return configured
        sample = others_running()
        if sample is None:
            _load["off"] = True
            return configured
        first = _load["free"] == 1 << 30
        _load["others"] = others = sample if first else SMOOTHING * sample + (1 - SMOOTHING) * _load["others"]
        _load["free"] = _next_free(usable_cores(), others, None if first else _load["free"])
    return min(configured, _load["free"])


def _next_free(cores: int, others: float, free: int | None) -> int:
    """The free cores after a sample: fewer at once when the estimate of busy cores reaches
    half of one more (BUSY_ROUNDING), more only once it falls below 0.3 of one fewer
    (FREE_ROUNDING). Why the gap: a load that comes and goes (another process's short jobs,
    a sibling that sleeps now and then) gives samples of 1, 0, 1, 0 ..., whose running estimate
    crossed one threshold every other sample, so the team grew back to the configured count
    every 100 ms; each time, the woken workers spun (GOMP_SPINCOUNT) on a core that was busy
    half the time, and a parallel loop waited for a descheduled worker."""
    shrunk = max(1, cores - int(others + BUSY_ROUNDING))
    if free is None or shrunk < free:
        return shrunk
    return max(free, max(1, cores - int(others + FREE_ROUNDING)))


_take_reading()  # (the first kernel call then measures the interval since the import)


def reset_adaptation() -> None:
    """Start the contention estimate afresh (tests; after GRAPHMODE_ADAPT_THREADS changed)."""
    _load.update(at=-1.0, others=0.0, free=1 << 30, off=False)
    _cpu_reading.clear()
