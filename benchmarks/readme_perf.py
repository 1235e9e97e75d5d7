"""Re-measure every figure the README's Performance section cites, with default settings, and
write them as JSON and as the Markdown tables the README shows.

    python benchmarks/readme_perf.py                                  # everything, 3 processes per cell
    python benchmarks/readme_perf.py --only main,peers --runs 3
    python benchmarks/readme_perf.py --quick --out build/readme_perf-quick   # checks the driver, measures nothing
    python benchmarks/readme_perf.py --deadline 10:20      # UTC: stops in time, the tables it cut say so
    python benchmarks/readme_perf.py --render build/readme_perf/readme_perf.json --update-readme README.md

Why one driver: the section's tables came from separate runs, some with
`OPENBLAS_NUM_THREADS=1` exported, some on a machine at load 7-10, and were copied by hand.
Here every child process gets this process's environment with every thread variable removed
(OMP_*, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, GRAPHMODE_THREADS, ...: what a user who exported
nothing runs), each cell is measured in `--runs` fresh processes (median, min-max), each
library in a process of its own where the script allows it, and the host is described in
the output (CPU model, vector width, copy bandwidth as `native_bench.py --small` measures it,
the load average before and after each part, library versions). The README's tables sit
between `<!-- readme_perf:PART -->` and `<!-- /readme_perf:PART -->` markers, which
`--update-readme` rewrites from the JSON, so the README is regenerated rather than
hand-copied.

Parts (`--only`, comma-separated):
  main          `graphmode compare --backend numpy --repeat 11` on W1-W4 and the MLP step;
  peers         the same command with `--peers torch,jax` on W2, W3 and W4 (the graphmode
                columns from the same processes as the peers');
  threads       `threads_bench.py`: W3 native against hand NumPy, the W5 step against PyTorch,
                quiet and beside a busy process;
  eager-models  `eager_models_bench.py`: eager training steps against PyTorch eager;
  repeated      `native_bench.py`, `call_overhead_bench.py`, `training_step_bench.py`,
                `models_bench.py --no-steps` with their own `--runs`, and `eager_bench.py
                --only W4` in `--runs` fresh processes.

torch.compile's compile of W4's 400-op chain takes minutes per process, so W4's torch peer is
timed eager only (its own child process) unless `--w4-torch-compile` is given; the table says
so in that cell.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"
PARTS = ("main", "peers", "threads", "eager-models", "repeated")
SCHEMA = "graphmode-readme-perf/1"

# Every variable that sets a thread count or a wait policy (threads_bench's list): none
# reaches a child.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_DYNAMIC", "GOMP_SPINCOUNT",
                    "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "GRAPHMODE_THREADS", "GRAPHMODE_ADAPT_THREADS")

# (README label, workload file, sizes, quick sizes, what a size counts)
WORKLOADS = (
    ("W1 seed", "w1_seed.py", "1e2,1e4,1e6", "1e2,1e4", ""),
    ("W2 gelu", "w2_gelu.py", "1e4,1e6,8e6", "1e4", ""),
    ("W3 mlp", "w3_mlp.py", "32x64x64x10,256x784x512x10", "32x64x64x10", ""),
    ("W4 scalar", "w4_scalar.py", "100", "10", " steps"),
    ("MLP step", "mlp_step.py", "1e3,1e4", "1e3", " points"),
)
PEER_WORKLOADS = ("W2 gelu", "W3 mlp", "W4 scalar")
SLOW_PEER_CELL = ("W4 scalar", "torch")  # torch.compile of a 400-op chain: minutes per process
SLOW_CELL_NOTE = "not re-measured: compiling its 400-op chain takes minutes per process"

EAGER_MODELS = {"W5": "W5 tiny GPT (AdamW)", "W6": "W6 small CNN (SGD momentum)",
                "gru-cell": "GRU cell, 16 steps (Adam)", "seq2seq": "seq2seq GRU encoder-decoder (Adam)",
                "char-mlp": "character MLP (SGD)"}


# -- the environment and the host ------------------------------------------------------------------
def default_environ(base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (this process's environment) without any thread variable: what a user who
    exported nothing runs with."""
    env = dict(os.environ if base is None else base)
    return {k: v for k, v in env.items() if k not in THREAD_VARIABLES}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    """/proc/cpuinfo's model name (the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def copy_bandwidth_gbps(env: dict[str, str]) -> float | None:
    """The copy bandwidth (read + write, GB/s) as `native_bench.py --small` measures it, in a
    fresh process with the default environment; None where the native backend cannot build."""
    script = (f"import sys; sys.path.insert(0, {str(HERE)!r}); sys.path.insert(0, {str(ROOT)!r})\n"
              "import native_bench\nprint(native_bench.copy_bandwidth(32 << 20) / 1e9)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600, check=False)
    if res.returncode != 0:
        print(f"copy bandwidth: not measured ({(res.stderr.strip().splitlines() or ['?'])[-1]})", file=sys.stderr)
        return None
    return float(res.stdout.strip().splitlines()[-1])


def git_commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        res = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=False)
        return res.stdout.strip()
    return {"commit": git("rev-parse", "HEAD"), "short": git("rev-parse", "--short", "HEAD"),
            "subject": git("log", "-1", "--format=%s")[:120],
            "modified_files": [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]}


def host_facts(env: dict[str, str], bandwidth: bool = True) -> dict[str, Any]:
    """What a reader needs to read the ratios against this machine."""
    sys.path.insert(0, str(HERE))
    from common import compiler_vector_isa, host_vector_isa  # noqa: PLC0415

    isa, bits = host_vector_isa()
    target = compiler_vector_isa()
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "vector_isa": isa, "vector_bits": bits,
            "compiled_for": list(target) if target else None,
            "copy_bandwidth_GBps": copy_bandwidth_gbps(env) if bandwidth else None,
            "platform": platform.platform(), "python": platform.python_version(),
            "versions": {p: _version(p) for p in ("numpy", "torch", "jax", "jaxlib")},
            "thread_variables_removed": sorted(k for k in THREAD_VARIABLES if k in os.environ)}


# -- running children ------------------------------------------------------------------------------
class Runner:
    """Runs the children of one measurement with the default environment, logging each
    command's output under `out/logs`. With a `deadline` (seconds since the epoch), a command
    is not started after it and is stopped at it, its whole process group with it (a busy
    sibling or a peer child must not outlive the benchmark that started it)."""

    def __init__(self, out: Path, env: dict[str, str], deadline: float | None = None):
        self.out, self.env, self.deadline = out, env, deadline
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def __call__(self, cmd: Sequence[str], name: str, timeout: float = 3600) -> bool:
        self.count += 1
        log = self.logs / f"{self.count:03d}-{name}.log"
        shown = " ".join(str(c) if "\n" not in str(c) else "<script>" for c in cmd).replace(sys.executable, "python")
        if self.deadline is not None:
            left = self.deadline - time.time()
            if left < 5:
                print(f"  skipped (past the deadline): {shown}", file=sys.stderr, flush=True)
                return False
            timeout = min(timeout, left)
        print(f"  $ {shown}", flush=True)
        start = time.perf_counter()
        with open(log, "w", encoding="utf-8") as fh:
            fh.write(f"$ {shown}\n")
            fh.flush()
            proc = subprocess.Popen(list(cmd), stdout=fh, stderr=subprocess.STDOUT, env=self.env, cwd=ROOT,
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = -1
                fh.write(f"\nstopped after {timeout:.0f} s (the timeout or the deadline)\n")
            except BaseException:  # Ctrl-C: take the children down too
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
        took = time.perf_counter() - start
        if code != 0:
            print(f"    failed (exit status {code}) after {took:.0f} s: see {log}", file=sys.stderr, flush=True)
        else:
            print(f"    {took:.0f} s", flush=True)
        return code == 0


def parse_deadline(text: str, now: _dt.datetime | None = None) -> float:
    """HH:MM (UTC, today) as seconds since the epoch."""
    try:
        hours, minutes = (int(v) for v in text.split(":"))
        now = now or _dt.datetime.now(_dt.timezone.utc)
        return now.replace(hour=hours, minute=minutes, second=0, microsecond=0).timestamp()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--deadline wants HH:MM in UTC (e.g. 10:20), got {text!r}") from exc


def shown_command(cmd: Sequence[str]) -> str:
    """A command as the README shows it: `python`, paths from the repository root, no --json."""
    args, skip = [], False
    for c in cmd:
        if skip:
            skip = False
            continue
        if c == "--json":
            skip = True
            continue
        args.append("python" if c == sys.executable else str(c).replace(str(ROOT) + "/", ""))
    return " ".join(args)


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# -- part: main and peers (graphmode compare) -------------------------------------------------------
def compare_rows(payload: dict, label: str) -> list[dict]:
    """One run's rows of a `graphmode compare --json` file, in the driver's shape."""
    rows = []
    for r in payload["results"]:
        row: dict[str, Any] = {"workload": label, "size": r["size"], "eager_s": r["eager"]["median_s"],
                               "compiled_s": r["compiled"]["median_s"], "ratio": r["ratio"],
                               "cold_s": r["compile"]["cold_s"], "warm_s": r["compile"]["warm_s"],
                               "nodes_before": r["ir"]["nodes_before"], "nodes_after": r["ir"]["nodes_after"],
                               "fused": r["ir"]["fused_kernels"], "peak_bytes": r["peak_bytes"],
                               "max_rel_error": r["max_rel_error"], "peers": {}}
        for p in r.get("peers") or []:
            row["peers"][p["library"]] = {"eager_s": (p.get("eager") or {}).get("median_s"),
                                          "compiled_s": (p.get("compiled") or {}).get("median_s"),
                                          "compile_s": p.get("compile_s"), "note": p.get("note", "")}
        rows.append(row)
    return rows


def merge_runs(runs: list[list[dict]]) -> list[dict]:
    """Per (workload, size): every timing as the list over runs; the graph figures (IR nodes,
    fused kernels, peak memory) of the first run, which every run must repeat."""
    merged: dict[tuple[str, str], dict] = {}
    for run in runs:
        for row in run:
            key = (row["workload"], row["size"])
            m = merged.setdefault(key, {"workload": row["workload"], "size": row["size"], "eager_s": [],
                                        "compiled_s": [], "ratio": [], "cold_s": [], "warm_s": [],
                                        "max_rel_error": [], "nodes_before": row["nodes_before"],
                                        "nodes_after": row["nodes_after"], "fused": row["fused"],
                                        "peak_bytes": row["peak_bytes"], "peers": {}})
            graph = (row["nodes_before"], row["nodes_after"], row["fused"], row["peak_bytes"])
            if graph != (m["nodes_before"], m["nodes_after"], m["fused"], m["peak_bytes"]):
                m["graph_differs"] = True
            for k in ("eager_s", "compiled_s", "ratio", "cold_s", "warm_s", "max_rel_error"):
                m[k].append(row[k])
            for lib, p in row["peers"].items():
                mp = m["peers"].setdefault(lib, {"eager_s": [], "compiled_s": [], "compile_s": [], "notes": []})
                for k in ("eager_s", "compiled_s", "compile_s"):
                    if p.get(k) is not None:
                        mp[k].append(p[k])
                if p.get("note") and p["note"] not in mp["notes"]:
                    mp["notes"].append(p["note"])
    return list(merged.values())


_TORCH_EAGER_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from graphmode.peers import _torch_runners, steady_malloc
from graphmode.workload import load_workload, parse_size
from static.compare import time_interleaved
import eager, torch
steady_malloc()
workload = load_workload(sys.argv[2])
size = parse_size(sys.argv[3])
fn, args = workload.build(size, sys.argv[3])
diff = tuple(i for i, a in enumerate(args) if isinstance(a, eager.Tensor) and a.requires_grad)
run_eager, _compiled_later, _note = _torch_runners(torch, workload.peer("torch", size), args, diff)
timing, _ = time_interleaved(run_eager, run_eager, int(sys.argv[4]), 1)
with open(sys.argv[5], "w") as fh:
    json.dump(timing.median, fh)
"""


def torch_eager_only(runner: Runner, file: Path, size: str, repeat: int, out: Path) -> float | None:
    """PyTorch eager's time on one workload size, in a child of its own (the peer of
    `compare --peers torch` without its torch.compile half)."""
    log = out / f"torch-eager-{file.stem}-{size}.json"
    cmd = [sys.executable, "-c", _TORCH_EAGER_CHILD, str(ROOT), str(file), size, str(repeat), str(log)]
    if not runner(cmd, f"torch-eager-{file.stem}"):
        return None
    return float(json.loads(log.read_text(encoding="utf-8")))


def measure_compare(runner: Runner, out: Path, runs: int, quick: bool, main: bool, peers: bool,
                    w4_torch_compile: bool) -> list[dict]:
    """`graphmode compare` of every workload the tables show, `runs` rounds, each command a
    fresh process; rounds interleave the workloads so the machine's drift hits all alike."""
    repeat = 3 if quick else 11
    per_run: list[list[dict]] = []
    for r in range(runs):
        run_rows: list[dict] = []
        for label, file, sizes, quick_sizes, _unit in WORKLOADS:
            with_peers = peers and label in PEER_WORKLOADS
            if not (main or with_peers):
                continue
            path = ROOT / "examples" / "workloads" / file
            json_out = out / f"compare-{'peers' if peers else 'main'}-{Path(file).stem}-run{r + 1}.json"
            cmd = [sys.executable, "-m", "graphmode", "compare", str(path.relative_to(ROOT)), "--backend", "numpy",
                   "--sizes", quick_sizes if quick else sizes, "--repeat", str(repeat), "--json", str(json_out)]
            slow = with_peers and (label, "torch") == SLOW_PEER_CELL and not w4_torch_compile
            if with_peers:
                cmd += ["--peers", "jax" if slow else "torch,jax"]
            if not runner(cmd, f"compare-{Path(file).stem}") or not json_out.is_file():
                continue
            rows = compare_rows(_load_json(json_out), label)
            if slow:
                for row in rows:
                    t = torch_eager_only(runner, path, row["size"], repeat, out)
                    row["peers"]["torch"] = {"eager_s": t, "compiled_s": None, "compile_s": None,
                                             "note": SLOW_CELL_NOTE}
            run_rows += rows
        per_run.append(run_rows)
    return merge_runs(per_run)


# -- formatting ------------------------------------------------------------------------------------
def _unit(seconds: float) -> tuple[str, float]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return unit, scale
    return "ns", 1e-9


def _num(v: float) -> str:
    """3 significant digits, no exponent."""
    if v == 0:
        return "0"
    text = f"{v:.3g}"
    return f"{v:.0f}" if "e" in text else text


def time_cell(values: Sequence[float] | None, bold: bool = False) -> str:
    """'107 us (105-110)': the median with the min-max over runs, in the median's unit."""
    values = [v for v in values or [] if v is not None]
    if not values:
        return "-"
    med = statistics.median(values)
    unit, scale = _unit(med)
    head = f"{_num(med / scale)} {unit}"
    if bold:
        head = f"**{head}**"
    if len(values) == 1:
        return head
    return f"{head} ({_num(min(values) / scale)}-{_num(max(values) / scale)})"


def ratio_cell(values: Sequence[float] | None, bold: bool = False, suffix: str = "x") -> str:
    """'**5.43x** (5.21-5.6)': the median ratio with its min-max over runs, 3 significant digits."""
    values = [v for v in values or [] if v is not None]
    if not values:
        return "-"
    head = f"{_num(statistics.median(values))}{suffix}"
    if bold:
        head = f"**{head}**"
    if len(values) == 1:
        return head
    return f"{head} ({_num(min(values))}-{_num(max(values))})"


def ms_cell(values: Sequence[float] | None) -> str:
    """Seconds as milliseconds, 3 significant digits: median (min-max)."""
    values = [v for v in values or [] if v is not None]
    if not values:
        return "-"
    ms = [v * 1e3 for v in values]
    med = statistics.median(ms)
    return _num(med) if len(ms) == 1 else f"{_num(med)} ({_num(min(ms))}-{_num(max(ms))})"


def _spread_of(summary: dict) -> str:
    """A {median, min, max} summary of seconds (what native_bench writes) as a time cell."""
    med = summary["median"]
    unit, scale = _unit(med)
    return f"{_num(med / scale)} {unit} ({_num(summary['min'] / scale)}-{_num(summary['max'] / scale)})"


def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _size_label(workload: str, size: str) -> str:
    unit = next((w[4] for w in WORKLOADS if w[0] == workload), "")
    return f"{size}{unit}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_main(rows: list[dict]) -> str:
    """The README's main table: eager and compiled fwd+bwd, the speedup, compile cold / warm
    (medians), the graph figures tests/test_readme.py checks against the tree, the largest
    error over the runs."""
    out = []
    for r in rows:
        compile_cell = f"{time_cell([statistics.median(r['cold_s'])])} / {time_cell([statistics.median(r['warm_s'])])}"
        out.append([r["workload"], _size_label(r["workload"], r["size"]), time_cell(r["eager_s"]),
                    time_cell(r["compiled_s"]), ratio_cell(r["ratio"], bold=True), compile_cell,
                    f"{r['nodes_before']} → {r['nodes_after']}", str(r["fused"]), _bytes(r["peak_bytes"]),
                    f"{max(r['max_rel_error']):.1e}"])
    return _table(["workload", "size", "eager", "compiled", "speedup", "compile cold / warm", "IR nodes", "fused",
                   "peak mem", "max rel err"], out)


def _peer_cell(rows_peer: dict | None, key: str) -> str:
    if not rows_peer:
        return "not measured"
    if not rows_peer.get(key):  # say why, where the peer said (a failure, a cell not re-measured)
        why = [n for n in rows_peer.get("notes") or [] if n.startswith(("failed", "not ", "the workload"))]
        if SLOW_CELL_NOTE in why:
            return "not re-measured (*)"
        return "; ".join(why) or "-"
    return time_cell(rows_peer[key])


def render_peers(rows: list[dict]) -> str:
    """graphmode (NumPy backend) eager and compiled against PyTorch and JAX, each peer in a
    process of its own."""
    out = []
    for r in rows:
        if r["workload"] not in PEER_WORKLOADS or not r["peers"]:
            continue
        torch, jax = r["peers"].get("torch"), r["peers"].get("jax")
        out.append([r["workload"], _size_label(r["workload"], r["size"]), time_cell(r["eager_s"]),
                    time_cell(r["compiled_s"], bold=True), _peer_cell(torch, "eager_s"),
                    _peer_cell(torch, "compiled_s"), _peer_cell(jax, "eager_s"), _peer_cell(jax, "compiled_s")])
    return _table(["workload", "size", "graphmode eager", "graphmode compiled", "torch eager", "torch.compile",
                   "jax op by op", "jax.jit"], out)


def peer_compile_note(rows: list[dict]) -> str:
    """What follows the peers' table: each peer's compile time (the first call, median over
    runs) as its range over the shapes, and which cells were not re-measured."""
    lines = []
    spans = []
    for lib, name in (("torch", "torch.compile"), ("jax", "jax.jit")):
        times = [statistics.median(r["peers"][lib]["compile_s"]) for r in rows
                 if r["peers"].get(lib) and r["peers"][lib].get("compile_s")]
        if times:
            spans.append(f"{name} {time_cell([min(times)])}" + (f" to {time_cell([max(times)])}" if len(times) > 1 else ""))
    if spans:
        lines.append(f"Compile time of a peer's first call, per shape (median): {', '.join(spans)}.")
    if any(SLOW_CELL_NOTE in (r["peers"].get("torch") or {}).get("notes", []) for r in rows):
        lines.append(f"(*) torch.compile on W4: {SLOW_CELL_NOTE} (`--w4-torch-compile` measures it).")
    return " ".join(lines)


def render_threads(data: dict) -> str:
    """threads_bench's candidates: quiet and beside a busy process, each over its peer of the
    same round and condition; busy / quiet in wall time and (where the script reports it) in
    the process's CPU time, which the other process inflates far less."""
    results, peers, cpu = data["results"], data["peers"], data.get("cpu")
    out = []
    for cand, cond_times in results.items():
        peer = peers.get(cand)
        row = [cand]
        for cond in ("quiet", "busy"):
            row.append(ms_cell(cond_times[cond]))
            theirs = results.get(peer, {}).get(cond, []) if peer else []
            ratios = [a / b for a, b in zip(cond_times[cond], theirs)]
            row.append(ratio_cell(ratios) if peer else "-")
        q, b = cond_times["quiet"], cond_times["busy"]
        row.append(f"{statistics.median(b) / statistics.median(q):.2f}x" if q and b else "-")
        if cpu is not None:
            cq, cb = cpu.get(cand, {}).get("quiet"), cpu.get(cand, {}).get("busy")
            row.append(f"{statistics.median(cb) / statistics.median(cq):.2f}x" if cq and cb else "-")
        row.append(peer or "")
        out.append(row)
    headers = ["candidate", "quiet ms", "/ peer", "beside a busy process, ms", "/ peer", "busy / quiet"]
    headers += ["busy / quiet, CPU time"] if cpu is not None else []
    return _table([*headers, "peer"], out)


def render_eager_models(data: dict) -> str:
    times, ratios = data["times"], data["ratios"]
    out = []
    for model, per_lib in times.items():
        out.append([EAGER_MODELS.get(model, model), ms_cell(per_lib.get("eager")), ms_cell(per_lib.get("torch")),
                    ratio_cell(ratios.get(model))])
    return _table(["step", "eager ms", "PyTorch eager ms", "eager / PyTorch"], out)


# -- part: repeated (the scripts with their own --runs, and eager_bench in fresh processes) -----------
NATIVE_PEERS = (("numpy (hand)", "hand NumPy"), ("numpy backend", "NumPy backend"),
                ("torch.compile", "torch.compile"), ("jax.jit", "JAX jit"), ("floor", "memory floor"))


def render_native(native: dict) -> str:
    """native_bench's rows: the native backend's time per call and its ratio to each peer
    (below 1: native is faster), median (min-max) over the runs."""
    out = []
    for row in native["rows"]:
        runs = row["runs"]
        cells = [row["case"], time_cell([s["native"] for s in runs if "native" in s])]
        for key, _name in NATIVE_PEERS:
            cells.append(ratio_cell([s[f"native / {key}"] for s in runs if f"native / {key}" in s], suffix=""))
        out.append(cells)
    return _table(["case", "native per call", *(f"native / {name}" for _key, name in NATIVE_PEERS)], out)


def repeated_rows(data: dict) -> list[list[str]]:
    """(what, median (min-max), command) rows from the scripts of the `repeated` part other
    than native_bench's table."""
    out: list[list[str]] = []
    native = data.get("native_bench")
    if native:
        for key, v in (native.get("compile_w3_seconds") or {}).items():
            if key.endswith(": compile"):
                out.append([f"W3 large compile (native), {key[:-len(': compile')]}", _spread_of(v),
                            "`native_bench.py --runs N`"])
    overhead = data.get("call_overhead_bench")
    if overhead:
        for backend, per in overhead["backends"].items():
            out.append([f"compiled call at n=1, {backend}: call / generated code alone / overhead",
                        " / ".join(time_cell(per[k]) for k in ("compiled call", "generated code", "overhead")),
                        "`call_overhead_bench.py --runs N`"])
    steps = data.get("training_step_bench")
    if steps:
        cmd = "`training_step_bench.py --runs N`"
        for case in steps["cases"]:
            per = case["seconds_per_run"]
            cells = [f"eager / compiled {ratio_cell(case['speedup_per_run'], suffix='')}"]
            for peer in ("torch eager", "torch.compile"):
                if per.get(peer):
                    ratios = [t / c for t, c in zip(per[peer], per["compiled"])]
                    cells.append(f"{peer} / compiled {ratio_cell(ratios, suffix='')}")
            out.append([f"{case['name']} (native): compiled {time_cell(per['compiled'])}", "; ".join(cells), cmd])
        for label, values in (steps.get("compile_seconds") or {}).items():
            out.append([f"W5 step compile (native), {label}", time_cell(values), cmd])
    models = data.get("models_bench")
    if models:
        for r in models["results"]:
            if "run_ratios" in r:
                out.append([f"eager / PyTorch eager: {r['case']}", ratio_cell(r["run_ratios"], suffix=""),
                            "`models_bench.py --no-steps --runs N`"])
    w4 = data.get("eager_bench")
    if w4:
        ratios = [r["eager_vs_torch_fwd_bwd"] for run in w4["runs"] for r in run if "eager_vs_torch_fwd_bwd" in r]
        per_op = [r["eager_us_per_op_fwd_bwd"] for run in w4["runs"] for r in run if "eager_us_per_op_fwd_bwd" in r]
        if ratios:
            out.append([f"eager / PyTorch eager: W4 per op (forward + backward), eager "
                        f"{time_cell([u * 1e-6 for u in per_op])} per op", ratio_cell(ratios, suffix=""),
                        "`eager_bench.py --only W4`, N fresh processes"])
    return out


def render_repeated(data: dict) -> str:
    """native_bench's table, then one row per other figure."""
    tables = [render_native(data["native_bench"])] if data.get("native_bench") else []
    tables.append(_table(["what", "median (min-max) over runs", "command"], repeated_rows(data)))
    return "\n\n".join(tables)


def measure_repeated(runner: Runner, out: Path, runs: int, quick: bool, compile_times: bool,
                     progress: Callable[[dict], None] = lambda _data: None) -> dict:
    """The scripts of the `repeated` part in turn (`progress` gets what is done after each)."""
    py = sys.executable
    data: dict[str, Any] = {}
    small = ["--small"] if quick else []
    q = ["--quick"] if quick else []
    # the short scripts first: a measurement cut short keeps the most rows
    jobs: list[tuple[str, list[str]]] = [
        ("call_overhead_bench", [str(HERE / "call_overhead_bench.py"), "--runs", str(runs), *q]),
        ("eager_bench", [str(HERE / "eager_bench.py"), "--only", "W4", *q]),
        ("native_bench", [str(HERE / "native_bench.py"), "--runs", str(runs), *small,
                          *([] if compile_times else ["--no-compile-times"])]),
        ("training_step_bench", [str(HERE / "training_step_bench.py"), "--runs", str(runs), "--backend", "native", *q,
                                 *([] if compile_times else ["--no-compile-times"])]),
        ("models_bench", [str(HERE / "models_bench.py"), "--no-steps", "--runs", str(runs), *q]),
    ]
    for name, args in jobs:
        if name == "eager_bench":  # no --runs of its own: `runs` fresh processes
            eager_runs = []
            for r in range(runs):
                target = out / f"eager_bench-W4-run{r + 1}.json"
                if runner([py, *args, "--json", str(target)], name) and target.is_file():
                    eager_runs.append(_load_json(target)["results"])
            if eager_runs:
                data[name] = {"runs": eager_runs}
        else:
            target = out / f"{name}.json"
            if runner([py, *args, "--json", str(target)], name) and target.is_file():
                data[name] = _load_json(target)
        progress(data)
    return data


# -- the whole measurement -------------------------------------------------------------------------
def _loadavg() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return []


def run_part(name: str, measure: Callable[[], Any], commands: list[str]) -> dict:
    before, start = _loadavg(), time.perf_counter()
    print(f"== {name} (load average {before})", flush=True)
    data = measure()
    return {"commands": commands, "load_before": before, "load_after": _loadavg(),
            "seconds": round(time.perf_counter() - start, 1), "data": data}


def save(result: dict, out: Path) -> None:
    """The results so far, as JSON and Markdown: written after every part, so a measurement
    cut short keeps what it finished."""
    (out / "readme_perf.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "readme_perf.md").write_text(markdown(result), encoding="utf-8")


def measure_all(parts: Sequence[str], runs: int, quick: bool, out: Path, w4_torch_compile: bool,
                compile_times: bool, threads_torch_compile: bool, deadline: float | None = None) -> dict:
    env = default_environ()
    runner = Runner(out, env, deadline)
    started = _dt.datetime.now(_dt.timezone.utc)
    result: dict[str, Any] = {"schema": SCHEMA, "started": started.isoformat(timespec="seconds"), "quick": quick,
                              "runs": runs, "git": git_commit(), "requested": list(parts), "parts": {}}
    print(f"host: measuring the copy bandwidth (load average {_loadavg()})", flush=True)
    result["host"] = host_facts(env)
    py = "python"

    def compare_part(part: str) -> None:
        with_peers = part == "peers"
        commands = [f"{py} -m graphmode compare examples/workloads/{w[1]} --backend numpy --sizes {w[3] if quick else w[2]} "
                    f"--repeat {3 if quick else 11}" + (" --peers torch,jax" if with_peers else "")
                    for w in WORKLOADS if not with_peers or w[0] in PEER_WORKLOADS]
        result["parts"][part] = run_part(part, lambda: measure_compare(runner, out, runs, quick, not with_peers,
                                                                       with_peers, w4_torch_compile), commands)
        save(result, out)

    # the parts in the order that keeps the most if the deadline cuts the measurement short: the
    # main table first (tests/test_readme.py checks its graph figures), the slow peers late
    if "main" in parts:
        compare_part("main")
    if "eager-models" in parts:
        target = out / "eager_models_bench.json"
        cmd = [sys.executable, str(HERE / "eager_models_bench.py"), "--runs", str(runs),
               *(["--quick"] if quick else []), "--json", str(target)]
        result["parts"]["eager-models"] = run_part(
            "eager-models",
            lambda: _load_json(target) if runner(cmd, "eager_models_bench") and target.is_file() else None,
            [shown_command(cmd)])
        save(result, out)
    if "threads" in parts:
        target = out / "threads_bench.json"
        cmd = [sys.executable, str(HERE / "threads_bench.py"), "--runs", str(runs), *(["--quick"] if quick else []),
               *([] if threads_torch_compile else ["--no-torch-compile"]), "--json", str(target)]
        result["parts"]["threads"] = run_part(
            "threads", lambda: _load_json(target) if runner(cmd, "threads_bench") and target.is_file() else None,
            [shown_command(cmd)])
        save(result, out)
    if "peers" in parts:
        compare_part("peers")
    if "repeated" in parts:
        commands = [f"benchmarks/call_overhead_bench.py --runs {runs}",
                    f"benchmarks/eager_bench.py --only W4 ({runs} fresh processes)",
                    f"benchmarks/native_bench.py --runs {runs}", f"benchmarks/training_step_bench.py --runs {runs} "
                    "--backend native", f"benchmarks/models_bench.py --no-steps --runs {runs}"]
        before = _loadavg()

        def progress(data: dict) -> None:  # a part cut short keeps the scripts it finished
            result["parts"]["repeated"] = {"commands": commands, "load_before": before, "load_after": _loadavg(),
                                           "data": data, "partial": True}
            save(result, out)

        result["parts"]["repeated"] = run_part(
            "repeated", lambda: measure_repeated(runner, out, runs, quick, compile_times, progress), commands)
    result["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    save(result, out)
    return result


# -- rendering and the README ----------------------------------------------------------------------
def describe_host(result: dict, part: str) -> str:
    """The line above a table: when, where, with what, under which load."""
    host, info = result["host"], result["parts"][part]
    bw = host.get("copy_bandwidth_GBps")
    versions = host.get("versions", {})
    libs = ", ".join(f"{name} {versions[key]}" for key, name in (("numpy", "NumPy"), ("torch", "PyTorch"),
                                                                   ("jax", "JAX")) if versions.get(key))
    load = f"load average {info['load_before'][0]:.2f} before, {info['load_after'][0]:.2f} after" \
        if info.get("load_before") and info.get("load_after") else "load average not known"
    quick = " (`--quick`: a check of the driver, not a measurement)" if result.get("quick") else ""
    changed = [f for f in result["git"].get("modified_files", []) if not f.endswith(".md")]
    dirty = f" (with uncommitted changes to {len(changed)} file{'s' if len(changed) != 1 else ''})" if changed else ""
    return (f"Measured{quick} by `python benchmarks/readme_perf.py --only {part}` at commit "
            f"`{result['git']['short']}`{dirty} on {result['started'][:10]}: {host['cpu_model']}, {host['cores']} cores "
            f"(shared), {host['vector_isa']} ({host['vector_bits']}-bit vectors), copy bandwidth "
            f"{f'{bw:.1f} GB/s' if bw else 'not measured'} as `benchmarks/native_bench.py --small` measures it; "
            f"{load}; Python {host['python']}, {libs}; no thread variable set; every cell the median (min-max) "
            f"of {result['runs']} fresh process{'es' if result['runs'] != 1 else ''}.")


RENDERERS: dict[str, Callable[[Any], str]] = {
    "main": render_main,
    "peers": render_peers,
    "threads": render_threads,
    "eager-models": render_eager_models,
    "repeated": render_repeated,
}


REPEATED_SCRIPTS = ("native_bench", "training_step_bench", "call_overhead_bench", "models_bench", "eager_bench")


def render(result: dict) -> dict[str, str]:
    """Per part asked for: the host line and the table, as the README shows them. A part asked
    for that did not finish (cut short, or its script failed) gets a block saying so, so that
    no earlier figure stays in the README as if re-measured; parts not asked for get none."""
    blocks = {}
    for part in result.get("requested", list(result["parts"])):
        info = result["parts"].get(part)
        if info is None or not info.get("data"):  # nothing finished (the repeated part's data: {})
            blocks[part] = (f"Not re-measured at commit `{result['git']['short']}` on {result['started'][:10]}: the "
                            f"measurement did not finish (`python benchmarks/readme_perf.py --only {part}` measures "
                            "it; the logs of its commands are in the results folder's logs/).")
            continue
        text = describe_host(result, part) + "\n\n" + RENDERERS[part](info["data"])
        if part == "peers":
            note = peer_compile_note(info["data"])
            if note:
                text += f"\n\n{note}"
        if part in ("main", "peers"):
            short = [f"{r['workload']} {r['size']}" for r in info["data"] if len(r["eager_s"]) < result["runs"]]
            if short:
                text += (f"\n\nFewer than {result['runs']} runs (the measurement was cut short, or a run failed): "
                         f"{', '.join(short)}.")
        if part == "repeated":
            missing = [f"`{name}.py`" for name in REPEATED_SCRIPTS if name not in info["data"]]
            if missing:
                text += f"\n\nNot re-measured in this run (cut short, or the script failed): {', '.join(missing)}."
        blocks[part] = text
    return blocks


def begin_marker(part: str) -> str:
    return f"<!-- readme_perf:{part} (generated by benchmarks/readme_perf.py --update-readme) -->"


def end_marker(part: str) -> str:
    return f"<!-- /readme_perf:{part} -->"


def update_readme(text: str, blocks: dict[str, str]) -> tuple[str, list[str]]:
    """`text` with each part's marked region replaced by its block; returns the new text and
    the parts it had no markers for."""
    missing = []
    for part, block in blocks.items():
        begin, end = begin_marker(part), end_marker(part)
        i = text.find(begin)
        j = text.find(end, i + 1) if i != -1 else -1
        if i == -1 or j == -1:
            missing.append(part)
            continue
        text = text[:i + len(begin)] + "\n" + block + "\n\n" + text[j:]
    return text, missing


def markdown(result: dict) -> str:
    blocks = render(result)
    return "\n\n".join(f"### {part}\n\n{block}" for part, block in blocks.items()) + "\n"


def parse_parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown part {unknown[0]!r}: choose from {', '.join(PARTS)}")
    return parts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", type=parse_parts, default=list(PARTS), help="comma-separated parts: " + ",".join(PARTS))
    ap.add_argument("--runs", type=int, default=None, help="fresh processes per cell (default 3, 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small sizes, one run, few samples: checks the driver")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default build/readme_perf[-quick])")
    ap.add_argument("--w4-torch-compile", action="store_true",
                    help="also time torch.compile on W4 (its compile takes minutes per process)")
    ap.add_argument("--no-compile-times", action="store_true",
                    help="leave out the cold-compile measurements of native_bench and training_step_bench")
    ap.add_argument("--no-threads-torch-compile", action="store_true",
                    help="threads: PyTorch's W5 step eager only (torch.compile compiles in every process)")
    ap.add_argument("--deadline", type=parse_deadline, default=None, metavar="HH:MM",
                    help="UTC time by which to stop: no command starts after it, a running one is stopped at it, "
                         "and the parts it cut say so in the tables")
    ap.add_argument("--render", type=Path, default=None, metavar="JSON",
                    help="measure nothing: render the tables of this results file")
    ap.add_argument("--update-readme", type=Path, default=None, metavar="README",
                    help="rewrite the marked tables of this file from the results")
    args = ap.parse_args(argv)
    if args.render is not None:
        result = _load_json(args.render)
        if result.get("schema") != SCHEMA:
            ap.error(f"--render {args.render}: not a readme_perf results file (schema {result.get('schema')!r})")
    else:
        runs = args.runs if args.runs is not None else (1 if args.quick else 3)
        if runs < 1:
            ap.error(f"--runs must be at least 1, got {runs}")
        out = (args.out or ROOT / "build" / ("readme_perf-quick" if args.quick else "readme_perf")).resolve()
        out.mkdir(parents=True, exist_ok=True)
        result = measure_all(args.only, runs, args.quick, out, args.w4_torch_compile, not args.no_compile_times,
                             not args.no_threads_torch_compile, args.deadline)
        print(f"wrote {out / 'readme_perf.json'} and {out / 'readme_perf.md'}")
    if args.update_readme is not None:
        text, missing = update_readme(args.update_readme.read_text(encoding="utf-8"), render(result))
        args.update_readme.write_text(text, encoding="utf-8")
        if missing:
            print(f"{args.update_readme}: no markers for {', '.join(missing)}", file=sys.stderr)
            return 1
        print(f"updated {args.update_readme}")
    elif args.render is not None:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
