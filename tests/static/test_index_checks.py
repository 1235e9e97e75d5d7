"""Index values out of range raise in compiled code as in eager (issue 30, "never silently
wrong"): a negative class target must not wrap around to class C-k, a too-large one must not
surface as NumPy's raw error. Each op is run eagerly and compiled on both CPU backends with the
same good and bad indices: good ones give eager's values, bad ones the same exception and
message. The graph's `check_index_range` node also round-trips through the IR text and shows
in explain()."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from static.ir import format_graph, parse_ir, verify

X = eager.tensor(np.arange(20, dtype=np.float32).reshape(4, 5) / 7.0)
W = eager.tensor(np.arange(18, dtype=np.float32).reshape(6, 3) / 5.0)


def _t(v):
    return eager.tensor(np.array(v, dtype=np.int64))


# name -> (function of (x, index), good indices, bad indices)
CASES = {
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t), [[1, 0, 4, 2]], [[1, -2, 4, 2], [1, 0, 5, 2]]),
    "cross_entropy_sum": (lambda x, t: F.cross_entropy(x, t, reduction="sum"), [[0, 0, 4, 3]], [[-1, 0, 0, 0]]),
    "nll_loss_ignore": (lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, ignore_index=-1),
                        [[1, -1, 4, 2]], [[1, -2, 4, 2], [7, -1, 0, 0]]),
    "embedding": (lambda x, t: F.embedding(t, W), [[[1, 5], [0, 0]]], [[[1, 6]], [[-1, 0]]]),
    "nn.Embedding": (None, [[2, 3]], [[6], [-3]]),
    "gather": (lambda x, t: eager.gather(x, 1, t), [[[1], [0], [4], [2]]], [[[-1], [0], [1], [2]], [[5], [0], [1], [2]]]),
    "take_along_dim": (lambda x, t: eager.take_along_dim(x, t, 1), [[[4], [0], [1], [2]]], [[[-1], [0], [1], [2]]]),
    "index_select": (lambda x, t: eager.index_select(x, 1, t), [[4, 0, 4]], [[5], [-1]]),
    "advanced_index": (lambda x, t: x[t], [[3, -4, 0]], [[4], [-5]]),
    "one_hot": (lambda x, t: F.one_hot(t, 5), [[0, 4, 2]], [[5, 0], [-1, 2]]),
    "scatter": (lambda x, t: eager.scatter(x, 1, t, x[:, :1]), [[[4], [0], [1], [2]]],
                [[[-1], [0], [1], [2]], [[5], [0], [1], [2]]]),
    "scatter_add": (lambda x, t: eager.scatter_add(x, 1, t, x[:, :1]), [[[4], [0], [1], [2]]], [[[-1], [0], [1], [2]]]),
    "scatter_reduce": (lambda x, t: eager.scatter_reduce(x, 1, t, x[:, :1], "amax"), [[[4], [0], [1], [2]]],
                       [[[5], [0], [1], [2]]]),
    "index_add": (lambda x, t: eager.index_add(x, 0, t, x[:2]), [[3, 0]], [[-1, 0], [4, 0]]),
}


def _fn(name):
    f = CASES[name][0]
    if f is None:
        eager.manual_seed(0)
        emb = eager.nn.Embedding(6, 3)
        return lambda x, t: emb(t)
    return f


def _raised(f, *args):
    try:
        f(*args)
    except Exception as exc:  # noqa: BLE001  (the test compares whatever is raised)
        return type(exc), str(exc).split(" (traced at")[0]
    return None


@pytest.mark.parametrize("backend", ["numpy", "native"])
@pytest.mark.parametrize("name", list(CASES))
def test_bad_indices_raise_as_eager(name, backend):
    f = _fn(name)
    compiled = static.compile(f, backend=backend)
    for good in CASES[name][1]:
        t = _t(good)
        np.testing.assert_allclose(compiled(X, t).detach().numpy(), f(X, t).detach().numpy(), rtol=1e-6, atol=1e-6)
    for bad in CASES[name][2]:
        t = _t(bad)
        want = _raised(f, X, t)
        assert want is not None and want[0] in (IndexError, RuntimeError), (name, bad, want)
        got = _raised(compiled, X, t)
        assert got == want, (name, backend, bad, got, want)


def test_negative_target_does_not_wrap_in_compiled_code():
    """The defect itself: target -2 read class C-2 and returned a number."""
    f = static.compile(lambda x, t: F.cross_entropy(x, t), backend="numpy")
    f(X, _t([0, 1, 2, 3]))
    with pytest.raises(IndexError, match=r"Target out of bounds: class indices must lie in \[0, 5\)"):
        f(X, _t([0, 1, -2, 3]))


@pytest.mark.parametrize("name", ["gather", "scatter", "scatter_add", "scatter_reduce", "index_add"])
def test_along_ops_match_pytorch_exception(name):
    """Eager raises PyTorch's RuntimeError and message for a negative or too-large index
    (NumPy alone would wrap the negative one around)."""
    torch = pytest.importorskip("torch")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    calls = {"gather": lambda m, x, i: m.gather(x, 1, i), "scatter": lambda m, x, i: m.scatter(x, 1, i, x[:, :1]),
             "scatter_add": lambda m, x, i: m.scatter_add(x, 1, i, x[:, :1]),
             "scatter_reduce": lambda m, x, i: m.scatter_reduce(x, 1, i, x[:, :1], "sum"),
             "index_add": lambda m, x, i: m.index_add(x, 1, i[:, 0], x[:, :3])}
    for bad in ([[-1], [0], [1]], [[4], [0], [1]]):
        with pytest.raises(RuntimeError) as theirs:
            calls[name](torch, torch.tensor(x), torch.tensor(bad))
        with pytest.raises(RuntimeError) as ours:
            calls[name](eager, eager.tensor(x), _t(bad))
        assert str(ours.value) == str(theirs.value)


def test_check_node_round_trips_and_explains():
    f = static.compile(lambda x, t: F.cross_entropy(x, t), backend="numpy")
    t = _t([1, 0, 4, 2])
    text = f.lower(X, t).as_text()
    assert "check_index_range" in text
    g = parse_ir(text)
    verify(g)
    assert format_graph(g) == text
    assert "check_index_range" in f.explain(X, t)


def test_check_survives_when_only_the_loss_gradient_is_used():
    """A training-style graph (autodiff over the loss): the check stays, gets no gradient,
    and the gradient equals eager's."""
    def step(x, t):
        return static.grad(lambda x: F.cross_entropy(x, t))(x)

    g = static.compile(step, backend="numpy")
    t = _t([1, 0, 4, 2])
    x = X.clone().requires_grad_(True)
    F.cross_entropy(x, t).backward()
    np.testing.assert_allclose(g(X, t).numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError, match="Target out of bounds"):
        g(X, _t([1, 0, -1, 2]))


def test_cupy_source_checks_the_index():
    """The CuPy generator spells the check too (text only: this needs no GPU): the op's
    forward on the device array (one min/max reduction) before the gather that reads it."""
    from codegen import cupy_gen

    g = parse_ir("""
func @f(%x: f32[4,5], %t: i64[4,1]) -> (f32[4,1]) {
  %1 = check_index_range %t {error = "RuntimeError", high = 5, low = 0, message = "index {value} is out of bounds"} : i64[4,1]
  %2 = gather %x, %1 {dim = 1} : f32[4,1]
  return %2
}""")
    verify(g)
    src = cupy_gen.generate(g)[0]
    assert "_rt.forward('check_index_range', cp" in src
    assert src.index("check_index_range") < src.index("take_along_axis")


def test_dynamic_size_is_checked_and_named_by_its_value():
    """Along a dynamic dimension the bound is the call's size, and the message says it."""
    f = static.compile(lambda x, t: eager.gather(x, 0, t), dynamic=True, backend="numpy")
    for n in (4, 6, 8):
        x = eager.randn(n, 3)
        t = _t([[n - 1, 0, 1]])
        np.testing.assert_array_equal(f(x, t).numpy(), eager.gather(x, 0, t).numpy())
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 0 with size 5$"):
        f(eager.randn(5, 3), _t([[5, 0, 0]]))


def test_vmap_checks_every_batch_member():
    """Under vmap the target is a batched value (no data): the check node's batch rule checks
    the whole batch, eagerly and compiled."""
    x = eager.tensor(np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 30.0)
    good, bad = _t([[1, 0, 4, 2], [0, 0, 0, 0], [4, 4, 1, 1]]), _t([[1, 0, 4, 2], [0, 0, -1, 0], [4, 4, 1, 1]])

    def f(x, t):
        return F.cross_entropy(x, t)

    compiled = static.compile(lambda x, t: eager.vmap(f)(x, t), backend="numpy")
    want = eager.stack([f(x[i], good[i]) for i in range(3)]).numpy()
    np.testing.assert_allclose(eager.vmap(f)(x, good).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(compiled(x, good).numpy(), want, rtol=1e-6)
    for run in (eager.vmap(f), compiled):
        with pytest.raises(IndexError, match="Target out of bounds"):
            run(x, bad)
