"""Eager training steps of whole small models against PyTorch eager, each library in a
process of its own, default settings (no thread variable exported):

- W5: the tiny GPT of examples/workloads/w5_gpt.py (AdamW);
- W6: the small CNN of examples/workloads/w6_cnn.py (BatchNorm, max-pooling, SGD momentum);
- gru-cell: a GRUCell unrolled over 16 steps, a linear head on every step (Adam);
- seq2seq: an embedding, a GRU encoder and a GRU decoder fed the target (teacher forcing),
  a linear projection to the vocabulary (Adam, gradient clipping);
- char-mlp: a makemore-style character MLP (embedding of a 3-character context, tanh
  layer, 27-way softmax), its minibatch drawn with randint and indexed from the data set
  each step (SGD).

    python benchmarks/eager_models_bench.py [--runs 3] [--quick] [--only W5,gru-cell] [--json out.json]

Why processes of their own: PyTorch brings its own OpenMP runtime and BLAS; in one process
with graphmode's kernels the two runtimes' workers take the cores from each other. Why no
thread variables: a user exports none (each library's own defaults decide). Each
(library, model) is timed in `--runs` fresh processes, taking the median of that process's
samples after a warm-up; the table gives the median over processes with the min-max spread,
and the ratio eager/torch per round (median and spread). The model code is written once
against the torch API and run with `lib` = eager or torch (`import eager as torch` works).

On a shared machine absolute times are noise: read the ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import format_table, machine_info, write_json  # noqa: E402
from threads_bench import default_environ  # noqa: E402

MODELS = ("W5", "W6", "gru-cell", "seq2seq", "char-mlp")


# -- the models, written once against the torch API ----------------------------------------------
def gru_cell_step(lib, quick: bool) -> Callable[[], object]:
    nn = lib.nn
    lib.manual_seed(0)
    batch, steps, inp, hidden, classes = (4, 4, 8, 16, 5) if quick else (32, 16, 64, 128, 10)
    cell, head = nn.GRUCell(inp, hidden), nn.Linear(hidden, classes)
    params = list(cell.parameters()) + list(head.parameters())
    opt = lib.optim.Adam(params, lr=1e-3)
    x = lib.randn(steps, batch, inp)
    y = lib.randint(0, classes, (steps, batch))

    def step():
        opt.zero_grad()
        h = lib.zeros(batch, hidden)
        loss = 0.0
        for t in range(steps):
            h = cell(x[t], h)
            loss = loss + nn.functional.cross_entropy(head(h), y[t])
        loss = loss / steps
        loss.backward()
        opt.step()
        return loss
    return step


def seq2seq_step(lib, quick: bool) -> Callable[[], object]:
    nn = lib.nn
    lib.manual_seed(0)
    batch, src_len, tgt_len, vocab, emb, hidden = (4, 5, 4, 11, 8, 16) if quick else (32, 12, 10, 40, 64, 128)

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(vocab, emb)
            self.tgt_emb = nn.Embedding(vocab, emb)
            self.encoder = nn.GRU(emb, hidden, batch_first=True)
            self.decoder = nn.GRU(emb, hidden, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, src, tgt_in):
            _, h = self.encoder(self.src_emb(src))
            dec, _ = self.decoder(self.tgt_emb(tgt_in), h)
            return self.out(dec)

    model = Seq2Seq()
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    src = lib.randint(1, vocab, (batch, src_len))
    tgt = lib.randint(1, vocab, (batch, tgt_len + 1))
    loss_fn = nn.CrossEntropyLoss(ignore_index=0)

    def step():
        opt.zero_grad()
        logits = model(src, tgt[:, :-1])
        loss = loss_fn(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return step


def char_mlp_step(lib, quick: bool) -> Callable[[], object]:
    nn = lib.nn
    lib.manual_seed(0)
    words, context, emb, hidden, batch = (200, 3, 4, 16, 8) if quick else (20000, 3, 10, 200, 32)
    X = lib.randint(0, 27, (words, context))
    Y = lib.randint(0, 27, (words,))
    C = lib.randn(27, emb, requires_grad=True)
    model = nn.Sequential(nn.Linear(context * emb, hidden), nn.Tanh(), nn.Linear(hidden, 27))
    params = [C, *model.parameters()]
    opt = lib.optim.SGD(params, lr=0.1)

    def step():
        ix = lib.randint(0, X.shape[0], (batch,))
        e = C[X[ix]]
        logits = model(e.view(-1, context * emb))
        loss = nn.functional.cross_entropy(logits, Y[ix])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def _workload_step(name: str, lib, quick: bool) -> Callable[[], object]:
    """W5/W6 through training_step_bench's builders (the eager step, or PyTorch's peer)."""
    import training_step_bench as tsb  # noqa: PLC0415

    mod = tsb.WORKLOADS[name]
    if lib.__name__ == "torch":
        return tsb._torch_step(lib, mod, tsb._batch(mod, quick))
    return tsb.step_fns(mod, quick, "numpy")["eager"]


def build(name: str, lib, quick: bool) -> Callable[[], object]:
    if name in ("W5", "W6"):
        return _workload_step(name, lib, quick)
    return {"gru-cell": gru_cell_step, "seq2seq": seq2seq_step, "char-mlp": char_mlp_step}[name](lib, quick)


# -- one process per (library, model) ------------------------------------------------------------
def child(library: str, name: str, quick: bool, seconds: float, clock: str = "wall") -> float:
    """Median seconds per step of `name` under `library`, in this fresh process: wall-clock
    time, or (`clock="cpu"`) the process's CPU time, which on a loaded machine counts what the
    step computed rather than how long it waited for a core (every thread's time is summed:
    read it with --threads 1)."""
    timer = time.process_time if clock == "cpu" else time.perf_counter
    if library == "torch":
        import torch as lib  # noqa: PLC0415
    else:
        import eager as lib  # noqa: PLC0415
    step = build(name, lib, quick)
    for _ in range(3):
        step()
    start = time.perf_counter()
    step()
    per = max(time.perf_counter() - start, 1e-6)
    samples = []
    for _ in range(int(max(7, min(200, seconds / per)))):
        start = timer()
        step()
        samples.append(timer() - start)
    return statistics.median(samples)


def measure(library: str, name: str, quick: bool, seconds: float, threads: int | None = None,
            clock: str = "wall") -> float | None:
    script = (f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
              "import eager_models_bench as b\n"
              f"print(b.child({library!r}, {name!r}, {quick!r}, {seconds!r}, {clock!r}))\n")
    env = default_environ()
    if threads:  # both libraries read OMP_NUM_THREADS (torch for its intra-op pool)
        env["OMP_NUM_THREADS"] = str(threads)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    if res.returncode != 0:
        print(f"{library} {name}: failed\n{res.stderr[-3000:]}", file=sys.stderr)
        return None
    return float(res.stdout.strip().splitlines()[-1])


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per library and model (rounds)")
    ap.add_argument("--quick", action="store_true", help="tiny models, one round: check that it runs")
    ap.add_argument("--seconds", type=float, default=0.0, help="sampling time per process (0: by --quick)")
    ap.add_argument("--only", default=None, help="comma-separated models: " + ",".join(MODELS))
    ap.add_argument("--threads", type=int, default=None,
                    help="export OMP_NUM_THREADS=N to both libraries' processes (default: nothing exported)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time each step by the wall clock (default) or by the process's CPU time (a loaded "
                         "machine; with --threads 1)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    runs = 1 if args.quick else args.runs
    seconds = args.seconds or (0.2 if args.quick else 2.0)
    models = [m for m in MODELS if not args.only or m in args.only.split(",")]
    libraries = ["eager", "torch"] if _have_torch() else ["eager"]
    times: dict[str, dict[str, list[float]]] = {m: {lib: [] for lib in libraries} for m in models}
    ratios: dict[str, list[float]] = {m: [] for m in models}
    for _ in range(runs):
        for m in models:
            got = {lib: measure(lib, m, args.quick, seconds, args.threads, args.clock) for lib in libraries}
            for lib, t in got.items():
                if t is not None:
                    times[m][lib].append(t)
            if got.get("torch") and got.get("eager"):
                ratios[m].append(got["eager"] / got["torch"])  # type: ignore[operator]

    def cell(values: list[float]) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values) * 1e3:.2f} ({min(values) * 1e3:.2f}-{max(values) * 1e3:.2f})"

    rows = []
    for m in models:
        r = ratios[m]
        rows.append([m, *(cell(times[m][lib]) for lib in libraries),
                     f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})" if r else "-"])
    setting = f"OMP_NUM_THREADS={args.threads}" if args.threads else "default settings"
    setting += ", CPU time" if args.clock == "cpu" else ""
    print(f"eager training steps, {setting}, each library in its own process; {runs} round(s); "
          f"ms per step, median (min-max) over processes; {os.cpu_count()} cores, shared machine: times are noisy")
    print(format_table(["model", *(f"{lib} ms" for lib in libraries), "eager / torch"], rows))
    payload = {"machine": machine_info(), "runs": runs, "clock": args.clock, "times": times, "ratios": ratios}
    if args.json:
        write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
