"""Dynamic dimensions (static.dynamic_shapes): a dimension that changes becomes a symbol, so
that ten batch sizes or twelve sequence lengths compile at most twice, with eager's values;
`dynamic=False` keeps one trace per size, `dynamic=True` and `mark_dynamic` make symbols from
the first call; a graph whose code would depend on the size is traced per size instead."""
import re

import numpy as np
import pytest

import eager
import eager.nn as nn
import eager.nn.functional as F
import static
from static import dynamic_shapes as ds
from static import symbolic

BACKENDS = ["numpy", "native"]


def _backend(name: str) -> str:
    if name == "native":
        from codegen import native_build  # noqa: PLC0415

        if not native_build.availability()[0]:
            pytest.skip("no C++ compiler")
    return name


def _mlp_step(seed: int = 0):
    eager.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, step


@pytest.mark.parametrize("backend", BACKENDS)
def test_ten_batch_sizes_compile_at_most_twice_with_eagers_values(backend):
    model, step = _mlp_step()
    ref_model, ref_step = _mlp_step()
    compiled = static.compile(step, backend=_backend(backend))
    rng = np.random.default_rng(0)
    for b in (8, 16, 24, 5, 33, 40, 7, 64, 12, 100):
        x = eager.tensor(rng.standard_normal((b, 12)).astype(np.float32))
        y = eager.tensor(rng.integers(0, 3, b))
        np.testing.assert_allclose(compiled(x, y).item(), ref_step(x, y).item(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert len(compiled.compile_seconds) <= 2, ds.describe(ds.policy_of(compiled))
    assert len(compiled.retraces) <= 1
    entry = ds.policy_of(compiled).entries[0].entry
    # the native backend's C functions take the sizes of the call: no NumPy stand-in
    assert type(entry.forward).__name__ == ("NativeGraph" if backend == "native" else "CompiledGraph")


class CharModel(nn.Module):
    def __init__(self, vocab: int = 11, width: int = 8) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.mix = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        h = self.emb(idx)  # (B, T, C)
        h = h + self.mix(h).tanh()
        return self.head(h)  # (B, T, vocab)


@pytest.mark.parametrize("backend", BACKENDS)
def test_twelve_sequence_lengths_of_a_char_model_compile_at_most_twice(backend):
    eager.manual_seed(1)
    model = CharModel()

    def loss_of(idx, targets):
        logits = model(idx)
        b, t, v = logits.shape
        return F.cross_entropy(logits.view(b * t, v), targets.view(b * t))

    compiled = static.compile(loss_of, backend=_backend(backend))
    rng = np.random.default_rng(1)
    for t in (3, 5, 8, 13, 4, 21, 9, 6, 17, 30, 2, 11):
        idx = eager.tensor(rng.integers(0, 11, (2, t)))
        tgt = eager.tensor(rng.integers(0, 11, (2, t)))
        got = compiled(idx, tgt)
        want = loss_of(idx, tgt)
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    assert len(compiled.compile_seconds) <= 2, ds.describe(ds.policy_of(compiled))


def test_the_partial_last_batch_costs_no_compile_after_the_first_epoch():
    model, step = _mlp_step()
    compiled = static.compile(step, backend="numpy")
    rng = np.random.default_rng(2)
    data = rng.standard_normal((100, 12)).astype(np.float32)
    labels = rng.integers(0, 3, 100)
    counts = []
    for _ in range(3):
        for i in range(0, 100, 32):  # 32, 32, 32, 4
            compiled(eager.tensor(data[i:i + 32]), eager.tensor(labels[i:i + 32]))
        counts.append(len(compiled.compile_seconds))
    assert counts[1] == counts[0] == counts[2] <= 2


def test_gradients_of_a_symbolic_entry_equal_eagers():
    def f(x, w):
        return (x @ w).tanh().mean(0).sum()

    compiled = static.compile(f, backend="numpy", dynamic=True)
    w = eager.randn(5, 3, requires_grad=True)
    for b in (4, 9, 6):
        x = eager.randn(b, 5, requires_grad=True)
        compiled(x, w).backward()
        gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
        x.grad = None
        w.grad = None
        f(x, w).backward()
        np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-5, atol=1e-7)
        w.grad = None
    assert len(compiled.compile_seconds) == 1  # dynamic=True: symbolic from the first call


def test_the_ir_shows_the_symbol_and_explain_says_why():
    f = static.compile(lambda x: (x * 2).sum(1), backend="numpy")
    f(eager.ones(4, 3))
    f(eager.ones(6, 3))
    assert "f32[s0,3]" in str(f.ir(eager.ones(7, 3)))
    text = f.explain(eager.ones(7, 3))
    assert "argument leaf 0, dimension 0: symbolic (changed size 4 -> 6" in text


def test_dynamic_false_traces_every_size():
    f = static.compile(lambda x: x * 2, backend="numpy", dynamic=False)
    for n in (2, 3, 4):
        f(eager.ones(n))
    assert len(f.compile_seconds) == 3


def test_a_branch_on_the_size_is_a_guard():
    def f(x):
        if x.shape[0] > 6:
            return x * 2
        return x * 3

    compiled = static.compile(f, backend="numpy", dynamic=True)
    for n in (3, 4, 8, 9, 5):
        np.testing.assert_allclose(compiled(eager.ones(n)).numpy(), f(eager.ones(n)).numpy())
    assert len(compiled.compile_seconds) == 2  # one symbolic entry per side of the branch


def test_a_size_read_as_a_number_is_traced_per_size_not_silently_wrong():
    def f(x):
        n = int(x.shape[0])  # the size as a plain number: the graph would hold it
        return x * float(n)

    compiled = static.compile(f, backend="numpy", dynamic=True)
    for n in (3, 4, 5):
        np.testing.assert_allclose(compiled(eager.ones(n)).numpy(), np.full(n, float(n)))
    policy = ds.policy_of(compiled)
    assert not policy.entries and policy.failed


def test_symbolic_sizes_compute_and_print_as_polynomials():
    s = ds.SymInt.symbol("s0", 8)
    t = s * 4 + 2
    assert int(t) == 34 and str(t) == "4*s0+2"
    assert str((s * 12) // 4) == "3*s0" and int((s * 12) // 4) == 24
    assert symbolic.evaluate(t, {"s0": 10}) == 42
    assert str(s - s) == "0" and type(s - s) is int
    # outside the user's code a size equals the same expression, not a number that happens to
    # be the traced call's (the code made serves every size)
    assert (s * 3) // 3 == s and s != 8 and s * 2 == s + s


def test_a_batch_equal_to_a_feature_size_does_not_merge_them():
    """W6's CNN at batch 16 has 16 channels too: its symbolic entry must not take one for the other."""
    eager.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 36, 16))

    def f(x):
        return model(x).relu().sum(1)

    compiled = static.compile(f, backend="numpy")
    for b in (12, 16, 7, 16, 30):
        x = eager.randn(b, 1, 6, 6)
        with eager.no_grad():
            np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-4, atol=1e-5)
    assert len(compiled.compile_seconds) <= 2, ds.describe(ds.policy_of(compiled))


def test_a_symbolic_graph_runs_on_the_cupy_host_stand_in_at_every_size():
    from codegen import native_build  # noqa: PLC0415

    if not native_build.availability()[0]:
        pytest.skip("no host C++ compiler for the CuPy stand-in")
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    import codegen  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
    from cuda_host import HostCupy  # noqa: PLC0415

    def f(x, w):
        return ((x @ w).tanh() * 2 + 1).sum(1)

    compiled = static.compile(f, backend="numpy", dynamic=True)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    compiled(rng.standard_normal((5, 4)).astype(np.float32), w)
    graph = compiled.ir(rng.standard_normal((9, 4)).astype(np.float32), w)
    assert "%x: f32[s0,s1]" in str(graph)  # dynamic=True: every dimension a symbol
    cp = HostCupy()
    namespace = cp.load(codegen.generate_source(graph, "cupy")[0], "gm_symbolic_on_host")
    cp.compile_pending()
    for n in (3, 8, 17):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        got = np.asarray(namespace["forward"](x, w)[0])
        np.testing.assert_allclose(got, f(eager.tensor(x), eager.tensor(w)).numpy(), rtol=1e-5, atol=1e-5)


def test_a_size_inside_a_cupy_kernel_is_refused_with_the_reason():
    x = eager.randn(6, 3, requires_grad=True)
    compiled = static.compile(lambda x: x.tanh().mean(), backend="numpy", dynamic=True)
    compiled(x)
    backward = compiled.autograd_graphs(x).backward
    assert re.search(r"div %\d+, s0\*s1", str(backward))  # the mean's count, read at run time by NumPy's code
    reason = ds._size_in_kernel(backward)  # CuPy: traced per size instead
    assert reason is not None and reason.endswith("reads s0*s1")


def test_symbolic_types_print_parse_and_verify():
    f = static.compile(lambda x, w: (x @ w).tanh().sum(1), backend="numpy", dynamic=True)
    x, w = eager.randn(5, 3), eager.randn(3, 4)
    f(x, w)
    text = str(f.ir(x, w))
    assert "%x: f32[s0,s1], %w: f32[s1,s2]" in text
    assert str(static.parse_ir(text)) == text
    g = static.parse_ir("func @f(%x: f32[B,784], %y: f32[2*B,4]) -> f32[B,8] {\n"
                        "  %0 = reshape %y {shape = [B, 8]} : f32[B,8]\n  return %0\n}")
    assert str(g.outputs[0].type.shape[0]) == "B"
    with pytest.raises(ValueError, match=r"declared f32\[101,4\] but mul gives f32\[B,4\]"):
        static.parse_ir("func @f(%x: f32[B,4]) -> f32[101,4] {\n  %0 = mul %x, 2.0 : f32[101,4]\n  return %0\n}")
    with pytest.raises(ValueError, match="bad symbolic size"):
        static.parse_ir("func @f(%x: f32[B**2]) -> f32[B**2] {\n  return %x\n}")


def test_a_gpt_sampling_at_twelve_lengths_compiles_twice():
    """W5's GPT (token and position embeddings: arange(T); a causal mask sliced [:T, :T]) in
    eval mode, as a character model samples: one symbolic trace for every length."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).parents[2] / "examples" / "workloads"))
    import w5_gpt  # noqa: PLC0415

    model = w5_gpt.make_model(seed=0)
    model.eval()
    compiled = static.compile(model, backend="numpy")
    rng = np.random.default_rng(0)
    with eager.no_grad():
        for t in (3, 5, 8, 13, 4, 21, 9, 6, 17, 30, 2, 11):
            idx = eager.tensor(rng.integers(0, 65, (1, t)))
            np.testing.assert_allclose(compiled(idx).numpy(), model(idx).numpy(), rtol=1e-4, atol=1e-5)
    assert len(compiled.compile_seconds) <= 2, ds.describe(ds.policy_of(compiled))


def test_dropout_over_a_dynamic_batch_draws_eagers_numbers_at_every_size():
    def make():
        eager.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))
        opt = eager.optim.SGD(model.parameters(), lr=0.05)

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        return step

    compiled, ref = static.compile(make(), backend="numpy"), make()
    rng = np.random.default_rng(4)
    data = [(rng.standard_normal((b, 6)).astype(np.float32), rng.standard_normal((b, 2)).astype(np.float32))
            for b in (8, 12, 5, 20, 9, 12)]
    eager.manual_seed(1)
    got = [compiled(eager.tensor(x), eager.tensor(y)).item() for x, y in data]
    eager.manual_seed(1)
    want = [ref(eager.tensor(x), eager.tensor(y)).item() for x, y in data]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert len(compiled.compile_seconds) <= 2, ds.describe(ds.policy_of(compiled))
    assert ds.policy_of(compiled).entries


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_threads_calling_one_symbolic_entry_at_two_sizes_get_their_own(backend):
    import threading  # noqa: PLC0415

    def f(x):
        return (x.tanh() * 2 + 1).softmax(1).sum(1)

    compiled = static.compile(f, backend=_backend(backend), dynamic=True)
    rng = np.random.default_rng(6)
    xs = {n: rng.standard_normal((n, 128)).astype(np.float32) for n in (64, 96)}
    for x in xs.values():
        compiled(x)  # (the symbolic entry made once, before the threads)
    assert len(compiled.compile_seconds) == 1
    want = {n: f(eager.tensor(x)).numpy() for n, x in xs.items()}
    errors: list = []

    def work(n):
        for _ in range(30):
            got = compiled(xs[n])
            if got.shape != want[n].shape or not np.allclose(got, want[n], rtol=1e-5, atol=1e-6):
                errors.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_divisibility_and_equality_the_user_code_tests_are_guards():
    def f(x, y):
        if x.shape[0] % 2 == 0:
            out = x * 2
        else:
            out = x * 3
        if x.shape[0] == y.shape[0]:
            return out + y
        return out

    compiled = static.compile(f, backend="numpy", dynamic=True)
    for a, b in ((4, 4), (6, 6), (5, 5), (7, 7), (8, 3), (10, 2), (9, 4)):
        x, y = eager.ones(a), eager.ones(b)
        np.testing.assert_allclose(compiled(x, y).numpy(), f(x, y).numpy())
    # even/odd and equal/unequal: four symbolic entries, their guards shown by explain
    assert len(compiled.compile_seconds) == 4, ds.describe(ds.policy_of(compiled))
    text = ds.describe(ds.policy_of(compiled))
    assert "s0%2==0" in text and "s0%2!=0" in text and "s0!=s1" in text
