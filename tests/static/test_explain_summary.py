"""explain() opens with a one-screen summary: kernels, fused ops, saved bytes, recomputed
ops, the backend and where its code came from, breaks and guards; the stages follow."""
from __future__ import annotations

import eager
import static
from static.explain_summary import SUMMARY_TITLE

SCALE = 2.0


def loss(x, w):
    return (eager.tanh(x * x) * w * SCALE).sum()


def _summary(text: str) -> str:
    return text.split("\n\n", 1)[0]


def test_the_summary_comes_first_and_fits_a_screen():
    f = static.compile(loss, backend="numpy")
    x, w = eager.ones(64), eager.ones(64, requires_grad=True)
    text = f.explain(x, w)
    head = _summary(text)
    assert text.startswith(SUMMARY_TITLE + "\n") and len(head.splitlines()) <= 24
    assert all(len(line) <= 110 for line in head.splitlines())
    rest = text.split("\n\n", 1)[1]
    assert rest.startswith("== traced ==")
    # what the summary says is what the stages and graphs say
    graphs = f.autograd_graphs(x, w)
    kernels = sum(1 for g in (graphs.forward, graphs.backward) for n in g.nodes if n.op == "fused")
    fused_ops = sum(len(n.body.nodes) for g in (graphs.forward, graphs.backward) for n in g.nodes if n.op == "fused")
    assert f"  kernels      {kernels} fused kernel{'s' if kernels != 1 else ''} running {fused_ops} ops" in head
    partition = next(line for line in text.splitlines() if line.startswith("== partition"))
    recomputed = int(partition.split("recomputed_ops: ")[1].split(")")[0].split(",")[0])
    assert f"  recomputed   {recomputed} op(s)" in head
    assert f"  saved        {graphs.n_saved} value(s)" in head
    assert "backend numpy" in head and "backward     backend numpy" in head
    assert "breaks       none" in head
    assert "global 'SCALE'" in " ".join(head.split())  # the Python value the trace read is a guard


def test_the_summary_of_a_forward_only_call_has_no_backward_lines():
    f = static.compile(loss, backend="interpret")
    head = _summary(f.explain(eager.ones(8), eager.ones(8)))
    assert "no separate backward" in head and "saved" not in head and "recomputed" not in head
    assert "backend interpret" in head and "the interpreter runs the IR" in head


def test_stages_log_says_why_it_is_silent_when_the_graphs_come_from_the_disk_cache(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "step.py"
    script.write_text("import eager, static\n\n"
                      "@static.compile\n"
                      "def f(x, w):\n"
                      "    return (eager.tanh(x * x) * w).sum()\n\n"
                      "f(eager.randn(64), eager.randn(64, requires_grad=True))\n")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, GRAPHMODE_CACHE_DIR=str(tmp_path / "cache"), GRAPHMODE_LOGS="stages",
               GRAPHMODE_NATIVE="0", PYTHONPATH=str(root))
    for name in ("GRAPHMODE_CACHE", "GRAPHMODE_VERIFY"):
        env.pop(name, None)
    def run() -> str:
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                              check=True).stderr

    assert "after joint: dce" in run()  # the first process runs the passes and logs each stage
    # a later one finds the graphs on disk (the cache is keyed by the sources' hash: in a tree
    # being edited meanwhile, a run may miss once more)
    later = next((err for err in (run() for _ in range(3)) if "loaded from the disk cache" in err), None)
    assert later is not None and "after joint: dce" not in later
