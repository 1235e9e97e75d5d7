"""The model workloads W5 (tiny GPT, AdamW) and W6 (small CNN, SGD with momentum), eager
against compiled, in one process with the candidates interleaved:

- fwd+bwd: the model's forward, the loss and its backward, with the model eager and with
  `static.compile(model)` as a drop-in (the loss and backward stay eager code);
- step: the whole PyTorch-style training step (zero_grad, forward, backward, optimizer
  step) eager and under `@static.compile`, with PyTorch's step as a peer when torch is
  installed, eager and under torch.compile (the model compiled, and the optimizer step
  compiled as PyTorch's tutorials do; `--no-torch-compile` skips it, whose first call takes
  tens of seconds), both timed interleaved in a process of their own (see `torch_runs`);
- compile: the W5 step's compile time in fresh processes: the first on a machine (empty
  cache directory: the compiler probe, the call path's extension and eager's native kernels
  are built too), cold (those machine-level builds kept) and from the disk caches. Two
  measures each: the time in the compiler (`compile_seconds`: trace, then the post-trace
  cache or autodiff, passes and code generation), and the time to a steady loop (the first
  two calls less two steady calls), which also counts what a fresh process pays at its first
  step whatever runs it (memory first touched, kernel libraries and threads started).

    python benchmarks/training_step_bench.py [--runs 3] [--quick] [--json out.json]

Each run samples every candidate interleaved and takes medians; the table gives the median
over runs and the min-max spread of the run medians (and of the ratios). Ratios measured in
one run are what to read: absolute times on a shared machine are noise.

`--malloc steady` (the default, as for the other benchmarks and `graphmode compare`) makes
glibc keep freed memory (graphmode.peers.steady_malloc), in this process and PyTorch's: with
the allocator's defaults, whether a large array costs page faults depends on what the other
candidate allocated and freed just before, and the eager step's time moved by 15-30% with
changes to the compiled step's allocations alone (measured on W5: a compiled step that reused
its buffers made the interleaved eager step slower, not itself faster).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "workloads"))

import w5_gpt  # noqa: E402
import w6_cnn  # noqa: E402
from common import MACHINE_ONCE, format_table, sample_interleaved, steady_malloc, write_json  # noqa: E402

import eager  # noqa: E402
import static  # noqa: E402

WORKLOADS = {"W5": w5_gpt, "W6": w6_cnn}


def _torch():
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    return torch


def _batch(mod, quick: bool):
    if not quick:
        return mod.make_batch(seed=0)
    return mod.make_batch(seed=0, batch=4)


def fwd_bwd_fns(mod, quick: bool, backend: str) -> tuple[Callable, Callable]:
    """(eager, compiled) forward + loss + backward of the model (gradients zeroed each time)."""
    batch = _batch(mod, quick)
    fns = []
    for compiled in (False, True):
        model = mod.make_model(seed=0)
        target = static.compile(model, backend=backend) if compiled else model

        def run(model=model, target=target):
            model.zero_grad()
            mod.loss_fn(target, batch).backward()
        fns.append(run)
    return fns[0], fns[1]


def windows_off(fn: Callable) -> Callable:
    """fn (a compiled candidate) built with the native backend's window functions off
    (GRAPHMODE_NATIVE_WINDOWS=0: convolution and pooling windows as library calls): the
    variable is read when a module is generated, at the first calls, so it is set around
    them only, and the other candidates of the run keep the functions. The cache key holds
    the setting, so each variant gets its own module."""
    saved = os.environ.get("GRAPHMODE_NATIVE_WINDOWS")
    os.environ["GRAPHMODE_NATIVE_WINDOWS"] = "0"
    _forget_built()  # the process's memory of built graphs is keyed by the traced graph alone
    try:
        fn()
        fn()
    finally:
        if saved is None:
            os.environ.pop("GRAPHMODE_NATIVE_WINDOWS", None)
        else:
            os.environ["GRAPHMODE_NATIVE_WINDOWS"] = saved
        _forget_built()  # so that the other candidates build their own (the disk caches key on the setting)
    return fn


def _forget_built() -> None:
    """Drop the process's memory of what was built from traced graphs (static's post-trace
    cache, whose key does not hold the generator's switches), as a new process starts."""
    try:
        from static.jit import trace_cache  # noqa: PLC0415
    except ImportError:
        return
    trace_cache.clear_memory()


def step_fns(mod, quick: bool, backend: str) -> dict[str, Callable]:
    """The training step: graphmode eager, compiled, and PyTorch eager (when installed)."""
    batch = _batch(mod, quick)
    out = {}
    for label in ("eager", "compiled"):
        model = mod.make_model(seed=0)
        opt = mod.make_optimizer(model)

        def step(x, y, model=model, opt=opt):
            opt.zero_grad()
            loss = mod.loss_fn(model, (x, y))
            loss.backward()
            opt.step()
            return loss
        fn = static.compile(step, backend=backend) if label == "compiled" else step
        out[label] = (lambda fn=fn: fn(*batch))  # (driver_profile reads the compiled step from the default)
    return out


def torch_runs(name: str, quick: bool, runs: int, repeats: int, compiled: bool,
               malloc: str = "steady", cpu: bool = False) -> dict[str, list[float]] | None:
    """PyTorch's step, eager and (`compiled`) under torch.compile, per-run medians, measured
    in a process of its own: with torch loaded, two OpenMP runtimes share the process and slow
    the native backend several times (measured), which would make the comparison unfair to
    both. The child gets the user's environment, not the OpenMP wait the native backend chose
    for its own pool (a peer runs with its runtime's default). None without torch."""
    from codegen import native_build  # noqa: PLC0415

    script = (f"import sys, json; sys.argv = ['x']; sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
              "import training_step_bench as b\n"
              + ("b.steady_malloc()\n" if malloc == "steady" else "")
              + f"print(json.dumps(b._torch_child({name!r}, {quick!r}, {runs}, {repeats}, {compiled!r}, {cpu!r})))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=native_build.environ_for_peers())
    if res.returncode != 0:
        return None
    value = json.loads(res.stdout.strip().splitlines()[-1])
    return None if value is None else {k: [float(v) for v in vs] for k, vs in value.items()}


def _torch_child(name: str, quick: bool, runs: int, repeats: int, compiled: bool,
                 cpu: bool = False) -> dict[str, list[float]] | None:
    torch = _torch()
    if torch is None:
        return None
    mod = WORKLOADS[name]
    fns = {"torch eager": _torch_step(torch, mod, _batch(mod, quick))}
    if compiled:
        fns["torch.compile"] = _torch_step(torch, mod, _batch(mod, quick), compiled=True)
    return runs_of(fns, runs, repeats, time.process_time if cpu else time.perf_counter)


def _torch_step(torch, mod, batch, compiled: bool = False) -> Callable:
    model = mod.make_model(seed=0)
    build = mod.peer_torch()
    tmodel = build()
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    topt = (torch.optim.AdamW(tmodel.parameters(), lr=mod.LR, weight_decay=mod.WEIGHT_DECAY) if mod is w5_gpt
            else torch.optim.SGD(tmodel.parameters(), lr=mod.LR, momentum=mod.MOMENTUM))
    x, y = (torch.from_numpy(t.numpy()) for t in batch)
    forward = torch.compile(tmodel) if compiled else tmodel
    update = torch.compile(topt.step) if compiled else topt.step

    def step():
        topt.zero_grad()
        logits = forward(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        update()
        return loss
    return step


def runs_of(fns: dict[str, Callable], runs: int, repeats: int,
            clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """Per candidate, the median seconds of each run (interleaved samples within a run)."""
    names = list(fns)
    out: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(runs):
        samples = sample_interleaved([fns[n] for n in names], repeats, warmup=2, clock=clock)
        for n, s in zip(names, samples):
            out[n].append(statistics.median(s))
    return out


def _instrument(executable, tag: str, acc: dict, clock: Callable[[], float]) -> bool:
    """Re-run a generated native driver's `forward` with a clock read at each IR line's
    comment ("# L<n>: ..."), so that each line's statements (a kernel call, a library call,
    a view) add their time to acc[(tag, line)]. False where the executable has no such
    driver (another backend)."""
    import re  # noqa: PLC0415

    loaded = getattr(executable, "_loaded", None)
    text = getattr(loaded, "source", None)
    if not isinstance(text, str) or "\ndef forward(" not in text:
        return False
    body = text[text.index("\ndef forward("):]
    end = body.find("\ndef ", 1)
    lines = []
    for line in (body if end < 0 else body[:end]).split("\n"):
        found = re.match(r"^(\s+)# (L\d+): (.*)$", line)
        if found:
            indent, label, rest = found.groups()
            lines.append(f"{indent}_PROFILE_MARK({(label + ' ' + rest[:72])!r})")
        if line.startswith("    return "):
            lines.append("    _PROFILE_MARK(None)")
        lines.append(line)
        if line.strip().startswith('"""Run'):
            lines.append("    _PROFILE_MARK('(driver entry)')")
    state: dict = {"label": None, "at": 0.0}

    def mark(label):
        now = clock()
        if state["label"] is not None:
            acc.setdefault((tag, state["label"]), []).append(now - state["at"])
        state["label"], state["at"] = label, now
    namespace = dict(loaded.module.__dict__, _PROFILE_MARK=mark)
    exec(compile("\n".join(lines), f"<profiled {tag}>", "exec"), namespace)  # noqa: S102
    executable._forward = namespace["forward"]
    return True


def driver_profile(mod, quick: bool, backend: str, repeats: int, top: int,
                   clock: Callable[[], float] = time.process_time) -> None:
    """Prints, for the compiled fwd+bwd and step, the median time of each IR line of the
    generated drivers (forward and backward), largest first: where the compiled time goes."""
    batch = _batch(mod, quick)
    model = mod.make_model(seed=0)
    compiled_model = static.compile(model, backend=backend)

    def fwd_bwd():
        model.zero_grad()
        mod.loss_fn(compiled_model, batch).backward()
    step = step_fns(mod, quick, backend)["compiled"]
    step_fn = step.__defaults__[0] if step.__defaults__ else None
    for case, run, target, args in (("fwd+bwd", fwd_bwd, compiled_model, (batch[0],)),
                                    ("step", step, step_fn, batch)):
        run()
        run()
        acc: dict = {}
        entry = target._entry_for(args, {})[3] if target is not None else None
        parts = [] if entry is None else [("fwd", entry.forward)] + (
            [("bwd", entry.grad.backward)] if entry.grad is not None else [])
        if not parts or not all(_instrument(exe, tag, acc, clock) for tag, exe in parts):
            print(f"{case}: no native driver to profile (backend {backend!r})")
            continue
        totals = []
        for _ in range(repeats):
            t0 = clock()
            run()
            totals.append(clock() - t0)
        rows = sorted(((statistics.median(v) * 1e3, tag, label) for (tag, label), v in acc.items()), reverse=True)
        print(f"{mod.__name__} {case}: {statistics.median(totals) * 1e3:.2f} ms a call, "
              f"{sum(r[0] for r in rows):.2f} ms in the drivers' lines; the {top} largest:")
        for ms, tag, label in rows[:top]:
            print(f"  {ms:7.3f} ms  {tag} {label}")


def _spread(values: list[float], scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(min(values) * scale)}-{fmt.format(max(values) * scale)}"


_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/examples/workloads")
import static, w5_gpt as mod
quick, backend = sys.argv[2] == "1", sys.argv[3]
model = mod.make_model(seed=0)
opt = mod.make_optimizer(model)
batch = mod.make_batch(seed=0, batch=4) if quick else mod.make_batch(seed=0)

def step(x, y):
    opt.zero_grad()
    loss = mod.loss_fn(model, (x, y))
    loss.backward()
    opt.step()
    return loss

f = static.compile(step, backend=backend)
t0 = time.perf_counter(); f(*batch); f(*batch); first = time.perf_counter() - t0
runs = []
for _ in range(5):
    t0 = time.perf_counter(); f(*batch); runs.append(time.perf_counter() - t0)
print(sum(f.compile_seconds), first - 2 * sorted(runs)[2])
"""




def compile_times(runs: int, quick: bool, backend: str) -> dict[str, list[float]]:
    """Seconds to compile the W5 step, each run in fresh processes: the first on a machine
    (empty cache directory), cold (the machine-level builds of MACHINE_ONCE kept, as
    native_bench's "cold (probed)"), then from the disk caches it left. Per case two
    measures: in the compiler (the sum of `compile_seconds`) and to a steady loop (the first
    two calls less two steady calls)."""
    labels = ("first on this machine", "cold", "disk cache")
    out: dict[str, list[float]] = {f"{label}{measure}": [] for label in labels
                                   for measure in ("", ", to a steady loop")}
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="graphmode-bench-") as cache:
            env = {**os.environ, "GRAPHMODE_CACHE_DIR": cache, "GRAPHMODE_CACHE": "1"}
            for label in labels:
                if label == "cold":
                    for path in Path(cache).iterdir():
                        if not any(part in path.name for part in MACHINE_ONCE):
                            path.unlink()
                res = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), "1" if quick else "0", backend],
                                     env=env, check=True, capture_output=True, text=True)
                in_compiler, to_steady = (float(v) for v in res.stdout.split()[-2:])
                out[label].append(in_compiler)
                out[f"{label}, to a steady loop"].append(to_steady)
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=None,
                        help="independent runs; medians and min-max are reported (default 3, 1 with --quick)")
    parser.add_argument("--repeats", type=int, default=0, help="samples per candidate per run (0: by workload)")
    parser.add_argument("--quick", action="store_true", help="batch 4 and few samples, to check the script runs")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--workloads", default="W5,W6")
    parser.add_argument("--no-compile-times", action="store_true")
    parser.add_argument("--no-torch-compile", action="store_true", help="time PyTorch's step eager only")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    parser.add_argument("--malloc", choices=("steady", "default"), default="steady",
                        help="glibc keeps freed memory (steady, the default) or its own defaults")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time (the default) or the process's CPU time, all threads (on a machine "
                             "shared with busy processes the wall time of threaded code is mostly waiting)")
    parser.add_argument("--windows-off", action="store_true",
                        help="also time the compiled candidates with the native window functions off "
                             "(GRAPHMODE_NATIVE_WINDOWS=0), interleaved with the others")
    parser.add_argument("--profile", type=int, default=0, metavar="TOP",
                        help="print the TOP costliest IR lines of the compiled drivers (fwd+bwd and step), "
                             "timed on the chosen clock, and exit")
    args = parser.parse_args(argv)
    if args.profile:
        for name in args.workloads.split(","):
            driver_profile(WORKLOADS[name.strip().upper()], args.quick, args.backend, args.repeats or 30,
                           args.profile, time.process_time if args.clock == "cpu" else time.perf_counter)
        return {}
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    if args.quick:  # a check that it runs: torch.compile's first call and cold compiles in fresh processes are minutes
        args.no_torch_compile = args.no_compile_times = True
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    malloc = steady_malloc() if args.malloc == "steady" else "default"
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"malloc: {malloc}; clock: {args.clock}")
    repeats = args.repeats or (3 if args.quick else 15)
    rows, payload = [], {"runs": args.runs, "repeats": repeats, "backend": args.backend, "malloc": malloc,
                         "clock": args.clock, "cases": []}
    for name in args.workloads.split(","):
        mod = WORKLOADS[name.strip().upper()]
        cases = [("fwd+bwd", dict(zip(("eager", "compiled"), fwd_bwd_fns(mod, args.quick, args.backend)))),
                 ("step", step_fns(mod, args.quick, args.backend))]
        if args.windows_off:
            cases[0][1]["compiled, windows off"] = windows_off(fwd_bwd_fns(mod, args.quick, args.backend)[1])
            cases[1][1]["compiled, windows off"] = windows_off(step_fns(mod, args.quick, args.backend)["compiled"])
        for case, fns in cases:
            eager.manual_seed(0)
            per_run = runs_of(fns, args.runs, repeats, clock)
            off = per_run.pop("compiled, windows off", None)
            if off is not None:
                gains = [o / c for o, c in zip(off, per_run["compiled"])]
                print(f"{name} {case}: compiled with the window functions off {statistics.median(off) * 1e3:.2f} ms, "
                      f"on {statistics.median(per_run['compiled']) * 1e3:.2f} ms: off/on median "
                      f"{statistics.median(gains):.2f} (runs {_spread(gains)})")
                payload.setdefault("windows_off", {})[f"{name} {case}"] = {"seconds_per_run": off,
                                                                             "off_over_on_per_run": gains}
            if case == "step":
                peer_runs = torch_runs(name.strip().upper(), args.quick, args.runs, repeats, not args.no_torch_compile,
                                       args.malloc, args.clock == "cpu")
                per_run.update(peer_runs or {})
            ratios = [e / c for e, c in zip(per_run["eager"], per_run["compiled"])]
            row = [f"{name} {case}", statistics.median(per_run["eager"]) * 1e3, _spread(per_run["eager"], 1e3, '{:.1f}'),
                   statistics.median(per_run["compiled"]) * 1e3, _spread(per_run["compiled"], 1e3, '{:.1f}'),
                   statistics.median(ratios), _spread(ratios)]
            for peer_name in ("torch eager", "torch.compile"):
                peer = per_run.get(peer_name)
                if peer is not None:  # not interleaved with ours: another process, run after this one
                    peer_ratios = [t / c for t, c in zip(peer, per_run["compiled"])]
                    row += [statistics.median(peer) * 1e3, statistics.median(peer_ratios), _spread(peer_ratios)]
                else:
                    row += ["-", "-", "-"]
            rows.append(row)
            payload["cases"].append({"name": f"{name} {case}", "seconds_per_run": per_run, "speedup_per_run": ratios})
    print(format_table(["case", "eager ms", "spread", "compiled ms", "spread", "speedup", "spread",
                        "torch ms", "vs torch", "spread", "torch.compile ms", "vs torch.compile", "spread"], rows))
    print("speedup = graphmode eager / compiled; vs torch = PyTorch eager / compiled, vs torch.compile = "
          "torch.compile / compiled (above 1: graphmode's compiled step is faster)")
    if not args.no_compile_times:
        times = compile_times(args.runs, args.quick, args.backend)
        payload["compile_seconds"] = times
        for label, values in times.items():
            print(f"W5 step compile, {label}: median {statistics.median(values) * 1e3:.0f} ms "
                  f"(runs {_spread(values, 1e3, '{:.0f}')} ms)")
    if args.json:
        write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
