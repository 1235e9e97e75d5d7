"""Peers: the same loss run by another library (PyTorch, JAX) next to ours, and the
allocator setting the measurements use. Only the `graphmode` command needs these: peers
run in a child process each (`graphmode _peer`), and the allocator setting changes the
whole process."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eager import Tensor
from static.compare import Timing, format_seconds, host_arrays, max_relative_error, time_interleaved, to_numpy


@dataclass
class PeerResult:
    """Another library's eager and compiled runs of the same workload (`--peers`)."""

    library: str
    available: bool
    note: str = ""
    eager: Timing | None = None
    compiled: Timing | None = None
    compile_s: float | None = None
    max_rel_error: float | None = None

    def to_dict(self) -> dict:
        return {"library": self.library, "available": self.available, "note": self.note,
                "eager": self.eager.to_dict() if self.eager else None,
                "compiled": self.compiled.to_dict() if self.compiled else None,
                "compile_s": self.compile_s, "max_rel_error": self.max_rel_error}

    @classmethod
    def from_dict(cls, data: dict) -> "PeerResult":
        """The inverse of to_dict (the command line measures peers in a child process)."""
        def timing(d):
            return Timing(list(d["samples_s"]), d["calls_per_sample"]) if d else None
        return cls(data["library"], data["available"], data.get("note", ""), timing(data.get("eager")),
                   timing(data.get("compiled")), data.get("compile_s"), data.get("max_rel_error"))



def describe_peer(p: PeerResult) -> str:
    """One line for a peer: its times and agreement, or why it was not measured."""
    if not p.available:
        return p.note
    parts = [f"eager {format_seconds(p.eager.median if p.eager else None)}"]
    if p.compiled is not None:
        parts.append(f"compiled {format_seconds(p.compiled.median)} (compile {format_seconds(p.compile_s)})")
    if p.max_rel_error is not None:
        parts.append(f"max error {p.max_rel_error:.1e}")
    if p.note:
        parts.append(p.note)
    return ", ".join(parts)



def steady_malloc() -> str:
    """Make glibc keep freed memory for reuse instead of returning it to the OS.

    By default glibc serves large arrays with fresh mmaps and trims its heap after big
    frees, so a new array can cost page faults, how many depending on the order of earlier
    allocations: interleaving eager and compiled runs then changes either's time by up to
    3x (W1 at n=1e4: compiled 37 us alone, 110-210 us after eager runs). With this setting
    both run at the steady state a training loop reaches. A process-wide change, so the
    `graphmode` command makes it (--malloc) and static.compare() does not. Returns what was
    set, or "default" where the call is unavailable (not glibc)."""
    import ctypes  # noqa: PLC0415
    import ctypes.util  # noqa: PLC0415

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return "default"
    m_trim_threshold, m_mmap_threshold = -1, -3
    ok = mallopt(m_mmap_threshold, 32 * 1024 * 1024) == 1 and mallopt(m_trim_threshold, 2 ** 31 - 1) == 1
    return "steady (glibc: mmap_threshold=32MiB, no trimming)" if ok else "default"



PEER_LIBRARIES = ("torch", "jax")


def measure_peer(library: str, peer_fn: Callable | None, args: tuple, diff: tuple, repeat: int, warmup: int,
                 reference: list[np.ndarray]) -> PeerResult:
    """Eager and compiled runs of `peer_fn` (the workload written for `library`) on copies of
    the same inputs, checked against our eager results. The library is imported only here,
    so a missing one is a note in the report, not an error."""
    if library not in PEER_LIBRARIES:
        return PeerResult(library, False, f"unknown peer (known: {', '.join(PEER_LIBRARIES)})")
    try:
        module = __import__(library)
    except ImportError:
        return PeerResult(library, False, f"not installed (pip install {library})")
    if peer_fn is None:
        return PeerResult(library, False, f"the workload has no {library} version (see its peer() function)")
    runner = _torch_runners if library == "torch" else _jax_runners
    try:
        run_eager, make_compiled, note = runner(module, peer_fn, args, diff)
        error = max_relative_error(reference, host_arrays(run_eager()))
        start = time.perf_counter()
        run_compiled = make_compiled()
        host_arrays(run_compiled())
        compile_s = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001  (a peer's failure is reported, ours go on)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return PeerResult(library, True, f"failed: {type(exc).__name__}: {first[:160]}")
    eager_t, compiled_t = time_interleaved(run_eager, run_compiled, repeat, warmup)
    return PeerResult(library, True, note, eager_t, compiled_t, compile_s, error)


def _torch_runners(torch, fn: Callable, args: tuple, diff: tuple):
    cuda = any(isinstance(a, Tensor) and a.device.type == "cuda" for a in args)
    if cuda and not torch.cuda.is_available():
        raise RuntimeError("this torch has no CUDA")
    dev = "cuda" if cuda else "cpu"
    targs = [torch.from_numpy(to_numpy(a).copy()).to(dev) if isinstance(a, Tensor) else a for a in args]
    for i in diff:
        targs[i].requires_grad_(True)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def runner(f: Callable) -> Callable:
        def run():
            for i in diff:
                targs[i].grad = None
            out = f(*targs)
            if diff:
                out.backward()
            sync()
            return out, [targs[i].grad for i in diff]
        return run

    return runner(fn), lambda: runner(torch.compile(fn)), "eager and torch.compile"


def _jax_runners(jax, fn: Callable, args: tuple, diff: tuple):
    jargs = [jax.numpy.asarray(to_numpy(a)) if isinstance(a, Tensor) else a for a in args]
    step = jax.value_and_grad(fn, argnums=diff) if diff else fn

    def runner(f: Callable) -> Callable:
        def run():
            out = jax.block_until_ready(f(*jargs))
            return out if diff else (out, [])
        return run

    return runner(step), lambda: runner(jax.jit(step)), "op by op and jax.jit"
