"""Small region calls combined into one native call (codegen/native_gen/combine.py): a
training step's per-parameter optimizer updates run as one call, with the same bits as the
calls one by one; a region waits for a library call that reads its output, and one region
reading another's output in the same call gets its buffer."""
from __future__ import annotations

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

import codegen
import eager
import static
from codegen import native_build
from eager import nn
from static import trace_cache

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

COMBINED = "small regions as one call (codegen/native_gen/combine.py)"


def _mlp():
    return nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3))


def _loss(model, t):
    return model(t).square().mean()


def test_a_training_steps_small_updates_run_as_one_call_and_equal_eager():
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    src = compiled_step_source(_mlp, _loss, x, steps=3)  # (compares with eager's step)
    assert COMBINED in src
    assert src.count("runs in the combined call below") >= 4  # the four parameters' updates at least
    # the step's factors (learning rate, momentum), read by the updates alone: scratch of the C
    # function, not arrays the call makes and returns
    assert "unsigned char gm_scratch0[" in src


def _trained(combine: str, monkeypatch) -> list:
    monkeypatch.setenv("GRAPHMODE_NATIVE_COMBINE", combine)
    # the post-trace cache holds executables by traced graph, not by codegen's settings: the
    # compile below builds its module again (whose key has the setting)
    trace_cache._MEMORY.clear()
    eager.manual_seed(0)
    model = _mlp()
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)

    def step(t):
        opt.zero_grad()
        loss = _loss(model, t)
        loss.backward()
        opt.step()
        return loss
    f = static.compile(step, backend="native")
    x = eager.from_numpy(np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32))
    losses = [f(x).detach().numpy().copy() for _ in range(3)]
    src = f._entry_for((x,), {})[3].forward._loaded.source
    assert (COMBINED in src) == (combine == "1")
    return losses + [t.detach().numpy().copy() for t in model.state_dict().values()]


def test_combined_calls_give_the_bits_of_the_calls_one_by_one(monkeypatch):
    for a, b in zip(_trained("1", monkeypatch), _trained("0", monkeypatch)):
        np.testing.assert_array_equal(a, b)


def test_a_region_read_by_a_library_call_stays_above_it_and_the_others_meet_at_the_end():
    # u's region is read by the product: its call stays above it; the regions of r1, r2 and
    # w are read by nothing after them and run as one call at the end of the driver
    def f(a, c, d, m):
        u = a * 2.0 + 1.0
        p = u @ m
        r1 = (c - 3.0).exp()
        r2 = d * d + 1.0
        w = (p * 0.5).tanh()
        return p, w, r1, r2, u

    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (2, 5), (6,), (4, 5))]
    a, c, d, m = arrays
    f_c = static.compile(f, backend="native")
    tensors = [eager.from_numpy(t) for t in arrays]
    got = f_c(*tensors)
    p = (a * 2 + 1) @ m
    want = (p, np.tanh(p * 0.5), np.exp(c - 3), d * d + 1, a * 2 + 1)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-6)
    src = f_c.source(*tensors)
    driver = src[src.index("def forward("):]
    assert "3 small regions as one call" in driver
    assert driver.index("_call_new(_K0,") < driver.index("_rt.matmul(")  # u's region where it was


_RESHAPED_IR = """
func @reshaped(%x: f32[2,6], %w: f32[3,4]) -> (f32[3,4], f32[4,3]) {
  %1 = reshape %x {shape = [3, 4]} : f32[3,4]
  %2 = fused %1, %w : f32[3,4] {
    ^body(%a: f32[3,4], %b: f32[3,4]):
    %3 = mul %a, %b : f32[3,4]
    yield %3
  }
  %4 = permute %x {dims = [1, 0]} : f32[6,2]
  %5 = reshape %4 {shape = [4, 3]} : f32[4,3]
  %6 = fused %5 : f32[4,3] {
    ^body(%c: f32[4,3]):
    %7 = exp %c : f32[4,3]
    yield %7
  }
  return %2, %6
}"""


def test_a_kernel_reads_a_reshaped_input_as_the_input_and_the_view_line_goes():
    """A reshape of a graph input that a kernel reads: the input is passed (the same memory
    in the same order) and the reshape's line, read by nothing else, is not written; a
    reshape of a permuted view (a copy) is kept. Equal to NumPy for contiguous inputs and for
    inputs the call path converts first."""
    exe = codegen.build(static.parse_ir(_RESHAPED_IR), "native")
    forward = exe.source().split("def forward")[1]
    code = [line for line in forward.splitlines() if not line.strip().startswith("#")]
    assert not any("x.reshape(" in line for line in code), code
    assert any(".reshape((4, 3))" in line for line in code), code  # the permute's reshape copies: kept
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    for xs in (x, np.asfortranarray(x)):
        got = exe.run([xs, w])
        np.testing.assert_array_equal(got[0], x.reshape(3, 4) * w)
        np.testing.assert_allclose(got[1], np.exp(x.T.reshape(4, 3)), rtol=1e-6)
