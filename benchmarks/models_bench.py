"""Model building blocks and training steps, eager against PyTorch eager (CPU) when it is
installed: conv2d forward+backward, layer_norm and embedding forward+backward at GPT-like
sizes, and one training step of the W5 tiny GPT and of the W6 small CNN.

Each row runs both libraries on the same data and weights, interleaved in one process
(see common.py), and checks that they agree before timing. The whole measurement is
repeated `--runs` times (default 3); each cell reports the median over runs of the per-run
eager/PyTorch ratio (itself a ratio of medians of interleaved samples) and the min-max
spread of those ratios across runs. Without PyTorch only eager's column is filled.

    python benchmarks/models_bench.py            # full sizes, 3 runs
    python benchmarks/models_bench.py --quick --runs 1 --json models.json
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples" / "workloads"))

from common import format_table, repeats_for, sample_interleaved, steady_malloc, write_json  # noqa: E402

import eager  # noqa: E402
from eager.nn import functional as F  # noqa: E402

SIZES = {
    # name: (full, quick)
    "conv2d": (dict(n=32, c=3, hw=32, o=16, k=3), dict(n=4, c=3, hw=12, o=4, k=3)),
    "layer_norm": (dict(shape=(16, 256, 768)), dict(shape=(2, 8, 32))),
    "embedding": (dict(vocab=50257, dim=768, tokens=(16, 256)), dict(vocab=65, dim=16, tokens=(2, 8))),
}


def torch_or_none():
    """PyTorch with as many threads as NumPy's BLAS gets (OPENBLAS_NUM_THREADS when set, so
    `OPENBLAS_NUM_THREADS=1` compares one thread with one thread), or None when absent."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    torch.set_num_threads(int(threads) if threads and threads.isdigit() else max(1, torch.get_num_threads()))
    return torch


def _fwd_bwd(lib, fn, arrays, wants_grad):
    """A closure running fn on fresh leaf tensors of `arrays` and backward of a weighted sum."""
    tensors = [lib.tensor(a, requires_grad=g) if g else lib.tensor(a) for a, g in zip(arrays, wants_grad)]

    def run():
        for t in tensors:
            t.grad = None
        out = fn(*tensors)
        out.backward(lib.ones_like(out))
        return out, [t.grad for t in tensors if t.requires_grad]

    return run


def _agree(a, b) -> float:
    a = np.asarray(a.detach().numpy() if hasattr(a, "detach") else a, dtype=np.float64)
    b = np.asarray(b.detach().numpy() if hasattr(b, "detach") else b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / (np.max(np.abs(b)) + 1e-12))


def op_cases(quick: bool):
    """(name, arrays, grads wanted, eager fn, torch fn builder) for the op rows."""
    rng = np.random.default_rng(0)
    pick = 1 if quick else 0
    s = SIZES["conv2d"][pick]
    x = rng.standard_normal((s["n"], s["c"], s["hw"], s["hw"])).astype(np.float32)
    w = (rng.standard_normal((s["o"], s["c"], s["k"], s["k"])) * 0.2).astype(np.float32)
    b = rng.standard_normal(s["o"]).astype(np.float32)
    yield (f"conv2d f+b {x.shape} {s['o']}x{s['k']}x{s['k']}", [x, w, b], [True, True, True],
           lambda x, w, b: F.conv2d(x, w, b, padding=1),
           lambda torch: (lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1)))
    shape = SIZES["layer_norm"][pick]["shape"]
    h = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape[-1]).astype(np.float32)
    beta = rng.standard_normal(shape[-1]).astype(np.float32)
    yield (f"layer_norm f+b {shape}", [h, g, beta], [True, True, True],
           lambda h, g, beta: F.layer_norm(h, (shape[-1],), g, beta),
           lambda torch: (lambda h, g, beta: torch.nn.functional.layer_norm(h, (shape[-1],), g, beta)))
    e = SIZES["embedding"][pick]
    table = (rng.standard_normal((e["vocab"], e["dim"])) * 0.02).astype(np.float32)
    idx = rng.integers(0, e["vocab"], e["tokens"])
    yield (f"embedding f+b {e['vocab']}x{e['dim']} {e['tokens']}", [table, idx], [True, False],
           lambda t, i: F.embedding(i, t),
           lambda torch: (lambda t, i: torch.nn.functional.embedding(i, t)))


def step_cases(torch):
    """(name, eager step, torch step or None) for the W5 and W6 training steps, the same
    weights on both sides; eval mode for W5 (dropout's random masks differ between libraries)."""
    import w5_gpt  # noqa: PLC0415
    import w6_cnn  # noqa: PLC0415

    for name, mod, train_mode in (("W5 tiny GPT step (eval-mode dropout)", w5_gpt, False),
                                  ("W6 small CNN step", w6_cnn, True)):
        model = mod.make_model()
        model.train(train_mode)
        opt = mod.make_optimizer(model)
        batch = mod.make_batch(0)
        eager_step: Callable = lambda m=model, o=opt, b=batch, mod=mod: mod.train_step(m, o, b)  # noqa: E731
        if torch is None:
            yield name, eager_step, None
        else:
            tmodel = mod.peer_torch()()
            tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
            tmodel.train(train_mode)
            topt = (torch.optim.AdamW(tmodel.parameters(), lr=mod.LR, weight_decay=mod.WEIGHT_DECAY) if mod is w5_gpt
                    else torch.optim.SGD(tmodel.parameters(), lr=mod.LR, momentum=mod.MOMENTUM))
            tbatch = tuple(torch.from_numpy(t.numpy()) for t in batch)

            def torch_step(m=tmodel, o=topt, b=tbatch, torch=torch):
                o.zero_grad()
                logits = m(b[0])
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[1].reshape(-1))
                loss.backward()
                o.step()
                return loss.item()

            yield name, eager_step, torch_step


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="samples per candidate (default: by time)")
    ap.add_argument("--only", default=None, help="comma-separated row prefixes, e.g. conv2d,W5")
    ap.add_argument("--no-steps", action="store_true", help="skip the W5/W6 training steps")
    ap.add_argument("--malloc", choices=("steady", "default"), default="steady")
    ap.add_argument("--runs", type=int, default=None,
                    help="repeat the whole measurement; report median and spread (default 3, 1 with --quick)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.runs is None:
        args.runs = 1 if args.quick else 3
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    malloc = steady_malloc() if args.malloc == "steady" else "default"
    torch = torch_or_none()
    only = None if args.only is None else [p.strip() for p in args.only.split(",")]
    rows = []

    def wanted(name: str) -> bool:
        return only is None or any(name.startswith(p) for p in only)

    def record(name, eager_fn, torch_fn, agreement):
        import time  # noqa: PLC0415

        start = time.perf_counter()
        eager_fn()
        repeats = args.repeats or repeats_for(time.perf_counter() - start, budget=1.0 if args.quick else 4.0)
        fns = [eager_fn] + ([torch_fn] if torch_fn is not None else [])
        runs = [sample_interleaved(fns, repeats) for _ in range(args.runs)]
        eager_medians = [float(np.median(r[0])) for r in runs]
        row = {"case": name, "eager_s": float(np.median(eager_medians)), "repeats": repeats, "runs": args.runs,
               "eager_run_medians_s": eager_medians}
        if torch_fn is not None:
            torch_medians = [float(np.median(r[1])) for r in runs]
            ratios = [e / t for e, t in zip(eager_medians, torch_medians)]
            row.update(torch_s=float(np.median(torch_medians)), torch_run_medians_s=torch_medians,
                       ratio=float(np.median(ratios)), ratio_min=min(ratios), ratio_max=max(ratios),
                       run_ratios=ratios, max_rel_diff=agreement)
        rows.append(row)

    for name, arrays, grads, eager_fn, torch_builder in op_cases(args.quick):
        if not wanted(name):
            continue
        run_eager = _fwd_bwd(eager, eager_fn, arrays, grads)
        run_torch, agreement = None, None
        if torch is not None:
            run_torch = _fwd_bwd(torch, torch_builder(torch), arrays, grads)
            (oe, ge), (ot, gt) = run_eager(), run_torch()
            agreement = max([_agree(oe, ot)] + [_agree(a, b) for a, b in zip(ge, gt)])
            if agreement > 1e-3:
                raise AssertionError(f"{name}: eager and PyTorch disagree (max relative difference {agreement:.2e})")
        record(name, run_eager, run_torch, agreement)
    if not args.no_steps:
        for name, eager_step, torch_step in step_cases(torch):
            if not wanted(name):
                continue
            agreement = None
            if torch_step is not None:
                agreement = abs(eager_step() - torch_step())
            record(name, eager_step, torch_step, agreement)

    headers = ["case", "eager ms", "torch ms", "eager/torch (median)", "min-max over runs", "repeats x runs"]
    table = [[r["case"], r["eager_s"] * 1e3, r.get("torch_s", float("nan")) * 1e3, r.get("ratio", float("nan")),
              f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f}" if "ratio" in r else "",
              f"{r['repeats']} x {r['runs']}"] for r in rows]
    print(format_table(headers, table))
    if torch is None:
        print("PyTorch is not installed: only eager's column (pip install torch to compare)")
    print(f"malloc: {malloc}")
    if args.json:
        write_json(args.json, {"benchmark": "models", "quick": args.quick, "results": rows})
    return rows


if __name__ == "__main__":
    main()
