"""The pipeline on the design's workloads: structure asserted, options honoured, and
every stage visible in explain()."""
import numpy as np
import pytest

import eager
import static


def w1(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return (10 - d).sum()


def w2(x, w):
    y = 0.5 * x * (1 + eager.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    return (y * w).sum()


def w3(X, W1, b1, W2, b2, y):
    h = eager.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    return -eager.log_softmax(logits, 1)[eager.arange(X.shape[0]), y].mean()


def _ops(graph):
    return [n.op for n in graph.nodes]


def test_w1_joint_graph_is_one_fused_region():
    args = [eager.randn(1000) for _ in range(5)]
    g = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4)).ir(*args)
    assert _ops(g).count("fused") == 1
    assert [op for op in _ops(g) if op != "fused"] == ["full"] or [op for op in _ops(g) if op != "fused"] == []


def test_w2_joint_graph_structure():
    x, w = eager.randn(4096), eager.randn(4096)
    g = static.value_and_grad(w2, argnums=(0, 1)).ir(x, w)
    fused = [n for n in g.nodes if n.op == "fused"]
    assert len(fused) == 1, str(g)
    assert len(g.nodes) - len(fused) <= 1  # at most the constant seed outside
    assert fused[0].body.count_nodes() >= 20  # forward, reduction and backward in one kernel


def test_w2_saved_bytes_with_eager_autograd():
    f = static.compile(w2)
    x = eager.randn(4096, requires_grad=True)
    w = eager.randn(4096, requires_grad=True)
    f(x, w).backward()
    text = f.explain(x, w)
    assert "saved_bytes: 32768" in text  # x and w only: everything else is recomputed
    assert "why not fused" not in text or "backward" in text


def test_w3_structure_and_saved_bytes():
    B, D, H, C = 32, 64, 64, 10
    args = (eager.randn(B, D), eager.randn(D, H, requires_grad=True), eager.zeros(H, requires_grad=True),
            eager.randn(H, C, requires_grad=True), eager.zeros(C, requires_grad=True), eager.randint(0, C, (B,)))
    f = static.compile(w3)
    loss = f(*args)
    loss.backward()
    text = f.explain(*args)
    assert "partition (min-cut remat)" in text
    g = static.value_and_grad(w3, argnums=(1, 2, 3, 4)).ir(*args)
    ops = _ops(g)
    assert ops.count("matmul") == 5  # 2 forward, 3 backward (X needs no gradient)
    assert ops.count("fused") >= 3
    assert "tanh" not in ops  # fused with its bias add and its derivative


@pytest.mark.parametrize("opt_level,expect_fused", [(0, False), (1, False), (2, True)])
def test_opt_levels(opt_level, expect_fused):
    x, w = eager.randn(64), eager.randn(64)
    g = static.compile(w2, opt_level=opt_level).ir(x, w)
    assert any(n.op == "fused" for n in g.nodes) == expect_fused
    assert np.allclose(static.compile(w2, opt_level=opt_level)(x, w).item(), w2(x, w).item(), rtol=1e-5)


def test_passes_switched_off_by_name():
    x, w = eager.randn(64), eager.randn(64)
    g = static.compile(w2, passes={"fuse": False}).ir(x, w)
    assert not any(n.op == "fused" for n in g.nodes)
    g = static.compile(w2, passes=["dce", "cse"]).ir(x, w)
    assert not any(n.op == "fused" for n in g.nodes)
    with pytest.raises(ValueError, match="unknown pass"):
        static.compile(w2, passes={"fusee": False}).ir(x, w)


def test_explain_shows_every_pass_with_counts():
    x, w = eager.randn(64), eager.randn(64)
    text = static.compile(w2).explain(x, w)
    for stage in ("== traced ==", "== dce ==", "== cse ==", "== fold ==", "== algebraic ==", "== stability ==",
                  "== fuse ==", "== memory =="):
        assert stage in text
    assert "regions: 1" in text
    assert "peak_bytes" in text


def test_w3_saved_values_are_the_min_cut():
    """Under eager autograd, W3's forward keeps X, the labels, W2, the pre-activation and the
    log-probabilities (plus 0-d scalars); tanh(pre-activation) is recomputed, not saved."""
    def loss(X, labels, W1, b1, W2, b2):
        h = eager.tanh(X @ W1 + b1)
        return eager.nn.functional.cross_entropy(h @ W2 + b2, labels)

    B, D, H, C = 32, 64, 64, 10
    args = [eager.randn(B, D), eager.randint(0, C, (B,)), eager.randn(D, H, requires_grad=True),
            eager.zeros(H, requires_grad=True), eager.randn(H, C, requires_grad=True), eager.zeros(C, requires_grad=True)]
    graphs = static.compile(loss).autograd_graphs(*args)
    saved = graphs.forward.outputs[-graphs.n_saved:]
    shapes = sorted(tuple(v.type.shape) for v in saved if v.type.shape)
    assert shapes == sorted([(B, D), (B,), (H, C), (B,), (B, H), (B, C)])
    saved_bytes = sum(v.type.dtype.itemsize * int(np.prod(v.type.shape)) for v in saved)
    assert saved_bytes <= 4 * (2 * B * D + H * C + B * C) + 2 * 8 * B + 8
    assert "tanh" in [n.op for n in graphs.backward.nodes] + [m.op for n in graphs.backward.nodes if n.body
                                                            for m in n.body.nodes]


def test_passes_are_objects_with_a_name_and_typed_options():
    import dataclasses

    from static.passes import PASSES, GraphPass
    from static.passes.manager import Algebraic, Fuse

    assert all(isinstance(p, GraphPass) and p.name == name for name, p in PASSES.items())
    assert {f.name: f.type for f in dataclasses.fields(Algebraic)} == {"fast_math": "bool"}
    assert Algebraic().with_options(fast_math=True, unrelated=1) == Algebraic(fast_math=True)
    assert Fuse(max_ops=2).max_ops == 2


def test_fuse_option_caps_region_size():
    from static.passes import Pipeline
    from static.passes.manager import Fuse

    text = """func @f(%x: f32[8]) -> f32[8] {
  %0 = exp %x : f32[8]
  %1 = sin %0 : f32[8]
  %2 = cos %1 : f32[8]
  %3 = tanh %2 : f32[8]
  return %3
}"""
    capped, free = static.parse_ir(text), static.parse_ir(text)
    Pipeline([Fuse(max_ops=2)]).run(capped)
    Pipeline([Fuse()]).run(free)
    assert [len(n.body.nodes) for n in capped.nodes if n.body is not None] == [2, 2]
    assert [len(n.body.nodes) for n in free.nodes if n.body is not None] == [4]


def test_pipeline_reports_every_stage_to_its_instrument():
    """The instrumentation callback sees each pass's label, graph and stats, in order,
    without any thread-local switch."""
    from static.passes import run_pipeline

    seen = []

    def instrument(stage, graph, stats):
        seen.append((stage, graph.count_nodes(), dict(stats)))

    g = static.parse_ir("""func @f(%x: f32[4]) -> f32[4] {
  %0 = mul %x, 1 : f32[4]
  %1 = exp %0 : f32[4]
  %2 = exp %0 : f32[4]
  %3 = add %1, %2 : f32[4]
  return %3
}""")
    run_pipeline(g, [], instrument=instrument)
    names = [s for s, _, _ in seen]
    assert names == ["dce", "cse", "fold", "algebraic", "stability", "fold", "algebraic", "cse", "dce", "decompose", "fuse",
                     "memory"]
    assert seen[1][2] == {"merged": 1}
    assert seen[3][2]["rules"] == {"mul_by_one": 1}
