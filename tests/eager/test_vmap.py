"""vmap (eager.func.vmap and static.vmap) and the Jacobians composed from it: every op that
declares a batching rule agrees with a Python loop over the batch; ops without one raise
naming the op; per-example gradients, nesting, in_dims/out_dims, chunk_size and
randomness as torch.func.vmap has them, checked against PyTorch where it is installed."""
from __future__ import annotations

import numpy as np
import pytest
from op_samples import OPS

import eager
import static
from eager.func import grad, hessian, jacfwd, jacrev, vmap
from eager.ops import REGISTRY

BATCH = 3


def _batched_cases(name):
    """(operands, attrs, batched positions) per sample: each float operand batched in turn,
    then all of them (three examples: the sample and two perturbations of it)."""
    rng = np.random.default_rng(1)
    for arrays, attrs in REGISTRY[name].samples(np.random.default_rng(0)):
        floats = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        others = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.dtype.kind != "f" and a.ndim]
        if not floats:  # integer or boolean operands only: the examples are the sample rolled
            floats, others = others, []
        # each operand batched alone (integer indices too: rolled), then every float operand
        for chosen in [[i] for i in floats + others] + ([floats] if len(floats) > 1 else []):
            ops = list(arrays)
            for i in chosen:
                a = arrays[i]
                more = [a + 0.1 * rng.standard_normal(a.shape) if a.dtype.kind == "f" else np.roll(a, k + 1)
                        for k in range(BATCH - 1)]
                ops[i] = np.stack([a] + more)
            yield ops, attrs, chosen


def _tensor(a):
    return eager.tensor(a) if isinstance(a, np.ndarray) else a


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


RULED = [n for n in OPS if REGISTRY[n].batch_rule is not None and REGISTRY[n].arity != 0]  # (full: no operand)


@pytest.mark.parametrize("name", RULED)
def test_vmap_agrees_with_a_python_loop_for_every_op_with_a_batching_rule(name):
    op = REGISTRY[name]
    checked = 0
    for ops, attrs, chosen in _batched_cases(name):
        def f(*xs, _ops=ops, _chosen=chosen, _attrs=attrs):
            full = [_tensor(o) for o in _ops]
            for i, x in zip(_chosen, xs):
                full[i] = x
            return op(*full, **_attrs)

        xs = [eager.tensor(ops[i]) for i in chosen]
        try:
            got = vmap(f)(*xs)
        except RuntimeError as exc:
            assert f"vmap: {name} has no batching rule for these operands" in str(exc)
            continue
        per = [_outs(f(*[x[b] for x in xs])) for b in range(BATCH)]
        for k, g in enumerate(_outs(got)):
            want = np.stack([np.asarray(p[k].numpy()) for p in per])
            assert tuple(g.shape) == want.shape, (name, attrs, chosen)
            np.testing.assert_allclose(g.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=f"{name} {attrs} {chosen}")
        checked += 1
    assert checked, f"no sample of {name} could be batched"


def test_ops_without_a_batching_rule_raise_naming_the_op():
    without = [n for n in OPS if REGISTRY[n].batch_rule is None]
    assert "scatter_add" in without and "add" not in without
    x, idx, src = eager.zeros(BATCH, 4), eager.tensor([0, 1, 1]), eager.ones(BATCH, 3)
    with pytest.raises(RuntimeError, match="vmap: scatter_add has no batching rule"):
        vmap(lambda s: REGISTRY["scatter_add"](eager.zeros(4), idx, s, dim=0))(src)
    del x


def test_in_dims_out_dims_nesting_and_chunks():
    rng = np.random.default_rng(2)
    a, b = eager.tensor(rng.standard_normal((4, 3))), eager.tensor(rng.standard_normal((3, 5)))
    out = vmap(lambda u, v: u @ v, in_dims=(1, None), out_dims=1)(a.T, b)
    np.testing.assert_allclose(out.numpy(), (a @ b).numpy().T, rtol=1e-12)
    assert tuple(out.shape) == (5, 4)
    outer = vmap(vmap(lambda u, v: (u * v).sum()), in_dims=(0, None))(a, a[0])
    np.testing.assert_allclose(outer.numpy(), a.numpy() * a.numpy()[0], rtol=1e-12)
    dicts = vmap(lambda d: {"s": d["x"].sum(), "m": d["x"] * d["y"]}, in_dims=({"x": 0, "y": None},))(
        {"x": a, "y": eager.tensor(2.0, dtype=a.dtype)})
    np.testing.assert_allclose(dicts["s"].numpy(), a.numpy().sum(1))
    chunked = vmap(lambda u: eager.softmax(u, -1), chunk_size=3)(a)
    np.testing.assert_allclose(chunked.numpy(), eager.softmax(a, -1).numpy(), rtol=1e-12)
    const = vmap(lambda u: eager.ones(2))(a)  # an output that ignores the batch is broadcast
    assert tuple(const.shape) == (4, 2)


def test_vmap_errors_as_torch_func():
    x = eager.ones(3, 2)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(x, eager.ones(4, 2))
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        vmap(lambda a, b: a + b, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda a: a * 2 if a.sum() > 0 else a)(x)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(lambda a: a + eager.rand(2))(x)
    same = vmap(lambda a: a * 0 + eager.rand(2), randomness="same")(x)
    assert np.allclose(same.numpy(), same.numpy()[0])
    eager.manual_seed(0)
    diff = vmap(lambda a: a * 0 + eager.rand(2), randomness="different")(x)
    assert not np.allclose(diff.numpy(), diff.numpy()[0])
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="sometimes")


def _loss(w, b, x, y):
    return ((eager.tanh(x @ w + b) - y) ** 2).mean()


def test_per_example_gradients_eager_and_static_agree_with_a_loop():
    rng = np.random.default_rng(3)
    w, b = eager.tensor(rng.standard_normal((4, 2))), eager.tensor(rng.standard_normal(2))
    x, y = eager.tensor(rng.standard_normal((6, 4))), eager.tensor(rng.standard_normal((6, 2)))
    gw, gb = vmap(grad(_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(w, b, x, y)
    sw, sb = static.vmap(static.grad(_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(w, b, x, y)
    for i in range(6):
        rw, rb = grad(_loss, argnums=(0, 1))(w, b, x[i], y[i])
        np.testing.assert_allclose(gw[i].numpy(), rw.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gb[i].numpy(), rb.numpy(), rtol=1e-12)
        np.testing.assert_allclose(sw[i].numpy(), rw.numpy(), rtol=1e-10)
        np.testing.assert_allclose(sb[i].numpy(), rb.numpy(), rtol=1e-10)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (torch.func imports torch.jit)
def test_against_torch_func():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    w, b = rng.standard_normal((4, 2)), rng.standard_normal(2)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 2))

    def tloss(w, b, x, y):
        return ((torch.tanh(x @ w + b) - y) ** 2).mean()

    T = [torch.tensor(a) for a in (w, b, x, y)]
    E = [eager.tensor(a) for a in (w, b, x, y)]
    want = torch.func.vmap(torch.func.grad(tloss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(*T)
    got = vmap(grad(_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(*E)
    for g, t in zip(got, want):
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-10)

    def f(v):
        return eager.sin(v) * v.sum() + v.prod()

    def tf(v):
        return torch.sin(v) * v.sum() + v.prod()

    v = rng.standard_normal(4)
    for ours, theirs in ((jacrev, torch.func.jacrev), (jacfwd, torch.func.jacfwd), (hessian, torch.func.hessian)):
        np.testing.assert_allclose(ours(f)(eager.tensor(v)).numpy(), theirs(tf)(torch.tensor(v)).numpy(),
                                   rtol=1e-10, atol=1e-12)
    for ours, theirs in ((static.jacrev, torch.func.jacrev), (static.jacfwd, torch.func.jacfwd),
                         (static.hessian, torch.func.hessian)):
        np.testing.assert_allclose(ours(f)(eager.tensor(v)).numpy(), theirs(tf)(torch.tensor(v)).numpy(),
                                   rtol=1e-10, atol=1e-12)
    m = rng.standard_normal((3, 4, 5))
    np.testing.assert_allclose(
        vmap(lambda a: a.sum(0) @ a.T, in_dims=2, out_dims=1)(eager.tensor(m)).numpy(),
        torch.func.vmap(lambda a: a.sum(0) @ a.T, in_dims=2, out_dims=1)(torch.tensor(m)).numpy(), rtol=1e-12)


def test_jacobian_shapes_and_argnums():
    rng = np.random.default_rng(5)
    a, b = eager.tensor(rng.standard_normal((2, 3))), eager.tensor(rng.standard_normal(3))
    ja, jb = jacrev(lambda a, b: a * b, argnums=(0, 1))(a, b)
    assert tuple(ja.shape) == (2, 3, 2, 3) and tuple(jb.shape) == (2, 3, 3)
    np.testing.assert_allclose(jb.numpy()[1, :, :], np.diag(a.numpy()[1]))
    sa = static.jacrev(lambda a, b: a * b, argnums=1)(a, b)
    np.testing.assert_allclose(sa.numpy(), jb.numpy())


def test_per_sample_gradients_of_a_cnn_as_pytorchs_tutorial_writes_them():
    """torch.func's per-sample-gradients tutorial: functional_call of a module with
    convolution, max-pooling and nll_loss (unfold/fold, take_along, index with a batched
    target) under vmap(grad(...))."""
    from eager import nn
    from eager.func import functional_call
    from eager.nn import functional as F

    eager.manual_seed(0)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3, 1)
            self.fc = nn.Linear(3 * 3 * 3, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            return F.log_softmax(self.fc(eager.flatten(x, 1)), dim=1)

    model = CNN()
    data, targets = eager.randn(4, 1, 8, 8), eager.randint(5, (4,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def compute_loss(params, sample, target):
        predictions = functional_call(model, params, (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))

    per_sample = vmap(grad(compute_loss), in_dims=(None, 0, 0))(params, data, targets)
    for i in range(4):
        one = grad(compute_loss)(params, data[i], targets[i])
        for k in params:
            np.testing.assert_allclose(per_sample[k][i].numpy(), one[k].numpy(), rtol=1e-5, atol=1e-6)


_COMPOSITES = {
    "softmax_mm": lambda m, a, b: m.softmax(a @ b, -1),
    "norm": lambda m, a, b: (a - a.mean(-1, keepdim=True)) / (a.std(-1, keepdim=True) + 1) * b.sum(),
    "cat_t": lambda m, a, b: m.cat([a, b.t()], 0).sum(0),
    "stack_max": lambda m, a, b: m.stack([a, a * 2], -1).amax(-1) + b.t().flip(0),
    "index": lambda m, a, b: a[1:, ::2] * b[0].unsqueeze(-1)[:2],
    "einsum": lambda m, a, b: m.einsum("ij,jk->ik", a, b).relu(),
    "where": lambda m, a, b: m.where(a > 0, a, b.t()).cumsum(0),
    "logsumexp": lambda m, a, b: m.logsumexp(a, 1) - b.var(0),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (torch.func imports torch.jit)
@pytest.mark.parametrize("name", sorted(_COMPOSITES))
def test_randomized_in_dims_and_out_dims_agree_with_torch_func_vmap(name):
    torch = pytest.importorskip("torch")
    f = _COMPOSITES[name]
    rng = np.random.default_rng(sorted(_COMPOSITES).index(name))
    for _ in range(4):
        size = int(rng.integers(1, 4))
        dims, ins = [], []
        for base in (rng.standard_normal((3, 4)), rng.standard_normal((4, 3))):
            d = int(rng.integers(0, 3))  # 2: not mapped
            dims.append(None if d == 2 else d)
            ins.append(base if d == 2 else np.stack([base + 0.1 * k for k in range(size)], axis=d))
        if dims == [None, None]:
            dims[0], ins[0] = 0, ins[0][None]
        out_dim = int(rng.integers(0, 2))
        want = torch.func.vmap(lambda x, y: f(torch, x, y), in_dims=tuple(dims), out_dims=out_dim)(
            *[torch.tensor(i) for i in ins]).numpy()
        got = vmap(lambda x, y: f(eager, x, y), in_dims=tuple(dims), out_dims=out_dim)(*[eager.tensor(i) for i in ins])
        assert tuple(got.shape) == want.shape, (name, dims, out_dim)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=f"{name} {dims} {out_dim}")


def test_grad_under_nested_vmaps_and_per_example_jacobians():
    rng = np.random.default_rng(6)
    xx, w = rng.standard_normal((2, 3, 4)), eager.tensor(rng.standard_normal(4))

    def f(w, a):
        return eager.sin(a * w).sum()

    want = np.cos(xx * w.numpy()) * xx
    got = vmap(vmap(grad(f), in_dims=(None, 0)), in_dims=(None, 0))(w, eager.tensor(xx))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got_s = static.vmap(static.vmap(static.grad(f), in_dims=(None, 0)), in_dims=(None, 0))(w, eager.tensor(xx))
    np.testing.assert_allclose(got_s.numpy(), want, rtol=1e-12)
    x = eager.tensor(xx[0])
    per_jac = vmap(jacrev(lambda v: eager.sin(v) * v.sum()))(x)
    for i in range(3):
        np.testing.assert_allclose(per_jac[i].numpy(), jacrev(lambda v: eager.sin(v) * v.sum())(x[i]).numpy(),
                                   rtol=1e-12)
    per_hess = vmap(hessian(lambda v: (eager.sin(v) * v.sum()).sum()))(x)
    np.testing.assert_allclose(per_hess[1].numpy(), hessian(lambda v: (eager.sin(v) * v.sum()).sum())(x[1]).numpy(),
                               rtol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (torch.func imports torch.jit)
def test_jacobian_structures_agree_with_torch_func():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(3), rng.standard_normal(2)
    hess = hessian(lambda x, y: eager.sin(x).sum() * (y * y).sum(), argnums=(0, 1))(eager.tensor(a), eager.tensor(b))
    want = torch.func.hessian(lambda x, y: torch.sin(x).sum() * (y * y).sum(), argnums=(0, 1))(
        torch.tensor(a), torch.tensor(b))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(hess[i][j].numpy(), want[i][j].numpy(), rtol=1e-12, atol=1e-14)
    for ours, theirs in ((jacrev, torch.func.jacrev), (jacfwd, torch.func.jacfwd)):
        got = ours(lambda x: (eager.sin(x), x * 2))(eager.tensor(a))
        exp = theirs(lambda x: (torch.sin(x), x * 2))(torch.tensor(a))
        assert isinstance(got, tuple) and len(got) == 2
        for g, e in zip(got, exp):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    jac, aux = jacrev(lambda x: (eager.sin(x), x.sum()), has_aux=True)(eager.tensor(a))
    assert tuple(jac.shape) == (3, 3) and float(aux) == pytest.approx(a.sum())


def test_randomness_different_draws_the_batch_at_once_and_same_draws_once():
    """torch.func.vmap's randomness: "different" gives each example its own numbers from ONE
    batched draw (the function runs once, not per example), nested levels each get their own
    axis; "same" shares one draw (dropout masks too); both in eager and compiled."""
    x = eager.ones(4, 3)
    calls = []

    def noisy(a):
        calls.append(1)
        return (a + eager.rand(3), eager.nn.functional.dropout(a, 0.5), eager.bernoulli(a * 0.5),
                eager.normal(a, 1.0), eager.randn_like(a))

    eager.manual_seed(1)
    for mode in ("different", "same"):
        calls.clear()
        outs = vmap(noisy, randomness=mode)(x)
        assert len(calls) == 1  # one batched call, no loop over the examples
        for out in outs:
            assert tuple(out.shape) == (4, 3)
            rows_equal = all(np.array_equal(out.numpy()[0], out.numpy()[i]) for i in range(4))
            assert rows_equal == (mode == "same"), (mode, out)
    nested = vmap(vmap(lambda a: a + eager.randn(()), randomness="different"), randomness="different")(eager.zeros(3, 5))
    assert len(np.unique(nested.numpy())) == 15
    inner_same = vmap(vmap(lambda a: a + eager.randn(()), randomness="same"), randomness="different")(eager.zeros(3, 5))
    assert all(len(np.unique(row)) == 1 for row in inner_same.numpy()) and len(np.unique(inner_same.numpy())) == 3
    # an in-place fill of an unbatched tensor cannot differ per example: torch.func refuses it
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an unbatched tensor"):
        vmap(lambda a: eager.empty(3).uniform_() + a, randomness="different")(x)
    # a batched one's fill is one draw for the batch, each example its own numbers
    calls.clear()
    filled = vmap(lambda a: calls.append(1) or eager.empty_like(a).uniform_() + a, randomness="different")(x)
    assert len(calls) == 1 and not np.array_equal(filled.numpy()[0], filled.numpy()[1])
    compiled = static.vmap(lambda a: a + eager.rand(3), randomness="different")
    first = compiled(x)
    assert not np.array_equal(first.numpy()[0], first.numpy()[1])
    assert not np.array_equal(compiled(x).numpy(), first.numpy())  # drawn anew each call
    shared = static.vmap(lambda a: a + eager.rand(3), randomness="same")(x)
    assert all(np.array_equal(shared.numpy()[0], shared.numpy()[i]) for i in range(4))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: eager.nn.functional.dropout(a, 0.5))(x)
    outer_same = vmap(vmap(lambda a: a + eager.randn(()), randomness="different"), randomness="same")(eager.zeros(3, 5))
    assert all(np.array_equal(outer_same.numpy()[0], row) for row in outer_same.numpy())
    assert len(np.unique(outer_same.numpy())) == 5
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(vmap(lambda a: a + eager.randn(()), randomness="same"))(eager.zeros(3, 5))


# -- in-place random fills under vmap: torch.func's randomness rule, one draw for the batch ---------
_FILLS = {"uniform_": lambda t: t.uniform_(), "normal_": lambda t: t.normal_(), "bernoulli_": lambda t: t.bernoulli_(0.5),
          "exponential_": lambda t: t.exponential_(), "uniform_ab": lambda t: t.uniform_(2.0, 3.0)}


@pytest.mark.parametrize("fill", sorted(_FILLS))
def test_inplace_random_fill_of_a_batched_tensor_follows_randomness(fill):
    import eager.func as ef

    def f(x):
        return _FILLS[fill](x.clone())

    x = eager.zeros(6, 40)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ef.vmap(f)(x)
    from eager import _factories

    before = _factories.draws_on_this_thread()
    same = ef.vmap(f, randomness="same")(x).numpy()
    assert _factories.draws_on_this_thread() - before == 1  # one draw for the batch, not one per example
    assert same.shape == (6, 40) and (same == same[0]).all() and not (same[0] == same[0, 0]).all()
    before = _factories.draws_on_this_thread()
    diff = ef.vmap(f, randomness="different")(x).numpy()
    assert _factories.draws_on_this_thread() - before == 1
    assert diff.shape == (6, 40) and not (diff[1:] == diff[0]).all(axis=1).any()
    if fill == "uniform_ab":
        assert ((diff >= 2.0) & (diff < 3.0)).all()
    if fill == "bernoulli_":
        assert set(np.unique(diff)) <= {0.0, 1.0}


@pytest.mark.parametrize("fill", ["uniform_", "normal_", "bernoulli_", "exponential_"])
def test_inplace_random_fill_of_an_unbatched_tensor_under_vmap_is_torchs(fill):
    import eager.func as ef

    def f(x):
        return _FILLS[fill](eager.zeros(5)) + x

    with pytest.raises(RuntimeError, match="randomness error mode"):
        ef.vmap(f)(eager.zeros(3, 5))
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an unbatched tensor"):
        ef.vmap(f, randomness="different")(eager.zeros(3, 5))
    same = ef.vmap(f, randomness="same")(eager.zeros(3, 5)).numpy()
    assert (same == same[0]).all()


def test_inplace_random_fill_under_vmap_matches_torch_semantics():
    torch = pytest.importorskip("torch")
    from torch.func import vmap as tvmap

    import eager.func as ef

    for ns, vm in ((torch, tvmap), (eager, ef.vmap)):
        with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness"):
            vm(lambda x, ns=ns: ns.zeros(3).uniform_() + x, randomness="different")(ns.zeros(2, 3))
        out = vm(lambda x: x.clone().normal_(), randomness="different")(ns.zeros(2, 3))
        assert not bool((out[0] == out[1]).all())
        out = vm(lambda x: x.clone().normal_(), randomness="same")(ns.zeros(2, 3))
        assert bool((out[0] == out[1]).all())


def test_inplace_random_fill_under_static_vmap():
    import static

    for randomness, rows_equal in (("same", True), ("different", False)):
        f = static.vmap(lambda x: x.clone().uniform_() + x, randomness=randomness)
        a, b = f(eager.zeros(4, 3)).numpy(), f(eager.zeros(4, 3)).numpy()
        assert bool((a[0] == a[1]).all()) == rows_equal
        assert not (a == b).all()  # each call draws anew


def test_like_factories_of_a_batched_value_are_batched():
    """torch.func: zeros_like / ones_like / empty_like / full_like of a batched tensor are
    batched, so the common `empty_like(x).normal_()` noise is each example's own."""
    x = eager.arange(6.0).reshape(2, 3)
    out = vmap(lambda a: (eager.zeros_like(a) + 1, eager.ones_like(a) * a, eager.full_like(a, 2.0)))(x)
    np.testing.assert_array_equal(out[0].numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out[1].numpy(), x.numpy())
    np.testing.assert_array_equal(out[2].numpy(), np.full((2, 3), 2.0, np.float32))
    noise = vmap(lambda a: eager.empty_like(a).normal_(), randomness="different")(x).numpy()
    assert noise.shape == (2, 3) and not np.array_equal(noise[0], noise[1])
