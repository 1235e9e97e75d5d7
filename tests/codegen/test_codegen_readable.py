"""Generated code reads like a product: it cites the user's file:line next to each IR line,
names module constants after their value, counts each region once in its docstring, writes
inline region results straight into their names, calls the backward entry `backward`, and
the backward's saved inputs keep their forward names."""
from __future__ import annotations

import re

import numpy as np

import eager
import static
from codegen import CompiledGraph
from static.passes import optimize_joint


def _user_fn(x):
    y = x * 2.0  # a line the generated code cites
    return (y + 1.0).sin()


def test_statements_cite_the_users_file_and_line():
    x = eager.tensor(np.ones((3, 4), np.float32))
    compiled = static.compile(_user_fn)
    compiled(x)
    locs = {m.loc for n in compiled.ir(x).nodes for m in (n.body.nodes if n.body is not None else [n])}
    assert locs and None not in locs
    src = compiled.source(x)
    for loc in locs:
        assert re.search(r"# L\d+: .*  \(" + re.escape(loc) + r"\)", src), src


def test_constants_are_named_after_their_value():
    x = eager.tensor(np.float32(1.5))
    compiled = static.compile(lambda t: (t * 0.5 + 2.0).sin() * 0.5)
    compiled(x)
    src = compiled.source(x)
    assert "_FLOAT32_0_5 = np.float32(0.5)" in src and "_FLOAT32_2_0 = np.float32(2.0)" in src
    assert "_K0" not in src


def test_small_regions_are_counted_once_in_the_module_docstring(monkeypatch):
    from codegen import settings

    monkeypatch.setattr(settings, "INLINE_MAX_ELEMS", 4096)
    x = eager.tensor(np.ones((4, 4), np.float32))
    compiled = static.compile(lambda t: (t.exp() * 2.0 + 1.0).sin())
    compiled(x)
    doc = compiled.source(x).split('"""')[1]
    assert "0 fused region(s) as blocked kernels" in doc and "1 small region(s)" in doc


def test_inline_region_results_are_written_directly(monkeypatch):
    from codegen import settings

    monkeypatch.setattr(settings, "INLINE_MAX_ELEMS", 4096)
    x = eager.tensor(np.ones((4, 4), np.float32))
    compiled = static.compile(lambda t: (t.exp() * 2.0 + 1.0).sin())
    compiled(x)
    body = compiled.source(x).split("def forward", 1)[1]
    plain_aliases = [line for line in body.splitlines() if re.fullmatch(r"\s*\w+ = \w+", line)]
    assert plain_aliases == []


def test_backward_entry_is_called_backward_and_residuals_keep_forward_names():
    def f(x, w):
        return ((x @ w).tanh() * 3.0).sum()

    rng = np.random.default_rng(0)
    args = [rng.standard_normal((4, 5)), rng.standard_normal((5, 3))]
    joint = static.trace(static.value_and_grad(f, argnums=(0, 1)), *args)
    primal, seeds = list(joint.inputs), []
    split, _ = optimize_joint(joint, primal, seeds, 1, [])
    saved = [v.name for v in split.forward.outputs[1:]]
    assert saved and [v.name for v in split.backward.inputs[:len(saved)]] == saved
    backward = CompiledGraph(split.backward, "numpy")
    assert "def backward(" in backward.source() and "def forward(" not in backward.source()
    forward = CompiledGraph(split.forward, "numpy")
    assert "def forward(" in forward.source()


def test_blocked_region_results_are_written_directly():
    """Reductions combined and epilogue ops computed straight into the region's results."""
    x = eager.tensor(np.random.default_rng(0).standard_normal((64, 30)).astype(np.float32))
    for fn in (lambda t: ((t * 2).exp().sum() + 1.0).sqrt(), lambda t: (t * 2).exp().sum(0),
               lambda t: (t - t.mean(1, keepdim=True)).exp().sum(1).log() * 2.0):
        compiled = static.compile(fn)
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-5)
        body = compiled.source(x).split("def forward", 1)[1]
        assert "def _region" in compiled.source(x)
        assert [line for line in body.splitlines() if re.fullmatch(r"\s*\w+ = \w+", line)] == []
