"""Gaps of the PyTorch surface closed late: cumprod's exact gradient at zero inputs, random
in-place fills taking `generator=`, scatter with a reduction and scatter_reduce,
Embedding(max_norm=), MultiheadAttention with kdim/vdim, and bicubic interpolation. Each is
checked against finite differences (float64) and, when PyTorch is installed, against it."""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import eager
from eager import nn
from eager.autograd.gradcheck import gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


# -- cumprod at zeros ---------------------------------------------------------------------------
CUMPROD_INPUTS = np.array([[0.7, 0.0, 1.3, -0.8, 1.1], [0.0, 0.6, 2.0, 1.0, 0.5], [1.5, -0.5, 2.0, 0.0, 1.0],
                           [1.2, 0.9, -1.1, 0.8, 1.3]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_gradient_at_zero_inputs_is_exact(dim):
    x = eager.tensor(CUMPROD_INPUTS, requires_grad=True)
    (x.cumprod(dim) * eager.tensor(np.arange(20.0).reshape(4, 5) + 1)).sum().backward()
    grad = x.grad.numpy()
    assert np.isfinite(grad).all()
    assert gradcheck(lambda a: a.cumprod(dim), (eager.tensor(CUMPROD_INPUTS, requires_grad=True),))
    assert gradgradcheck(lambda a: a.cumprod(dim), (eager.tensor(CUMPROD_INPUTS, requires_grad=True),))


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_at_zero_inputs_matches_pytorch(dim):
    torch = _torch()
    w = np.random.default_rng(0).standard_normal(CUMPROD_INPUTS.shape)
    xe, xt = eager.tensor(CUMPROD_INPUTS, requires_grad=True), torch.tensor(CUMPROD_INPUTS, requires_grad=True)
    (xe.cumprod(dim) * eager.tensor(w)).sum().backward()
    (xt.cumprod(dim) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_cumprod_gradient_with_several_zeros_in_a_slice_matches_pytorch():
    torch = _torch()
    x = np.array([[0.7, 0.0, 1.3, 0.0, 2.0], [0.0, 0.0, 2.0, 1.0, 0.5]])
    w = np.random.default_rng(1).standard_normal(x.shape)
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (xe.cumprod(1) * eager.tensor(w)).sum().backward()
    (xt.cumprod(1) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda a: a.cumprod(1), (eager.tensor(x, requires_grad=True),))


# -- generator= on in-place random fills and nn.init -------------------------------------------
FILLS = {
    "uniform_": lambda t, g: t.uniform_(-2.0, 3.0, generator=g),
    "normal_": lambda t, g: t.normal_(1.0, 0.5, generator=g),
    "bernoulli_": lambda t, g: t.bernoulli_(0.3, generator=g),
    "exponential_": lambda t, g: t.exponential_(2.0, generator=g),
    "random_": lambda t, g: t.random_(0, 7, generator=g),
    "init.uniform_": lambda t, g: nn.init.uniform_(t, -1.0, 1.0, generator=g),
    "init.normal_": lambda t, g: nn.init.normal_(t, 0.0, 2.0, generator=g),
    "init.xavier_uniform_": lambda t, g: nn.init.xavier_uniform_(t, generator=g),
    "init.kaiming_normal_": lambda t, g: nn.init.kaiming_normal_(t, generator=g),
    "init.trunc_normal_": lambda t, g: nn.init.trunc_normal_(t, std=0.5, generator=g),
    "init.orthogonal_": lambda t, g: nn.init.orthogonal_(t, generator=g),
    "init.sparse_": lambda t, g: nn.init.sparse_(t, 0.5, generator=g),
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_random_fills_draw_from_the_given_generator(name):
    """The same seed gives the same values whatever the global generator did in between, and
    the global generator is not advanced."""
    fill = FILLS[name]

    def draw(global_seed):
        eager.manual_seed(global_seed)
        t = eager.empty(6, 5)
        fill(t, eager.Generator().manual_seed(123))
        return t.numpy().copy(), eager.rand(3).numpy()

    (a, after_a), (b, _) = draw(0), draw(1)
    np.testing.assert_array_equal(a, b)
    eager.manual_seed(0)
    np.testing.assert_array_equal(after_a, eager.rand(3).numpy())  # the global stream untouched
    other = eager.empty(6, 5)
    fill(other, eager.Generator().manual_seed(124))
    assert not np.array_equal(a, other.numpy())


def test_uniform_and_normal_fills_keep_their_distribution_with_a_generator():
    g = eager.Generator().manual_seed(0)
    u = eager.empty(20000).uniform_(-2.0, 3.0, generator=g).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = eager.empty(20000, dtype=eager.float64).normal_(1.0, 0.5, generator=g).numpy()
    assert n.dtype == np.float64 and abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 0.5) < 0.02


# -- Embedding(max_norm=) -----------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm_renormalizes_the_rows_it_reads(norm_type):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((7, 4)) * 2.0
    emb = nn.Embedding(7, 4, max_norm=1.5, norm_type=norm_type, dtype=eager.float64)
    with eager.no_grad():
        emb.weight.copy_(eager.tensor(table))
    idx = eager.tensor([[0, 2, 2], [5, 0, 3]])
    out = emb(idx)
    w = emb.weight.detach().numpy()
    norms = np.linalg.norm(table, ord=norm_type, axis=1)
    for r in range(7):
        if r in (0, 2, 3, 5) and norms[r] > 1.5:
            np.testing.assert_allclose(np.linalg.norm(w[r], ord=norm_type), 1.5, rtol=1e-6)
            np.testing.assert_allclose(w[r], table[r] * 1.5 / (norms[r] + 1e-7))
        else:
            np.testing.assert_array_equal(w[r], table[r])
    np.testing.assert_array_equal(out.detach().numpy(), w[idx.numpy()])
    out.sum().backward()
    assert emb.weight.grad.numpy()[2].tolist() == [2.0] * 4 and emb.weight.grad.numpy()[1].tolist() == [0.0] * 4
    assert "max_norm=1.5" in repr(emb)


def test_embedding_max_norm_matches_pytorch():
    torch = _torch()
    rng = np.random.default_rng(1)
    table = (rng.standard_normal((10, 6)) * 1.5).astype(np.float32)
    idx = rng.integers(0, 10, (3, 5))
    e = nn.Embedding(10, 6, max_norm=1.0)
    t = torch.nn.Embedding(10, 6, max_norm=1.0)
    with eager.no_grad():
        e.weight.copy_(eager.tensor(table))
    with torch.no_grad():
        t.weight.copy_(torch.tensor(table))
    oe, ot = e(eager.tensor(idx)), t(torch.tensor(idx))
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    (oe * oe).sum().backward()
    (ot * ot).sum().backward()
    np.testing.assert_allclose(e.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


# -- MultiheadAttention with kdim / vdim ---------------------------------------------------------
def test_multihead_attention_kdim_vdim_has_pytorchs_parameters_and_gradients():
    mha = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True, dtype=eager.float64)
    names = {k: tuple(v.shape) for k, v in mha.state_dict().items()}
    assert names == {"q_proj_weight": (8, 8), "k_proj_weight": (8, 5), "v_proj_weight": (8, 3),
                     "in_proj_bias": (24,), "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    assert mha.in_proj_weight is None and repr(mha) == (  # (PyTorch prints no widths)
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n)")
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 6, 5)), rng.standard_normal((2, 6, 3))
    out, weights = mha(eager.tensor(q), eager.tensor(k), eager.tensor(v))
    assert tuple(out.shape) == (2, 4, 8) and tuple(weights.shape) == (2, 4, 6)
    params = [mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight]

    def f(qi, ki, vi):
        return mha(qi, ki, vi, need_weights=False)[0]

    assert gradcheck(f, tuple(eager.tensor(a, requires_grad=True) for a in (q, k, v)))
    f(eager.tensor(q), eager.tensor(k), eager.tensor(v)).sum().backward()
    assert all(p.grad is not None and tuple(p.grad.shape) == tuple(p.shape) for p in params)
    with pytest.raises(AssertionError, match="kdim/vdim"):
        mha(eager.tensor(q), eager.tensor(q), eager.tensor(v))


def test_multihead_attention_kdim_vdim_matches_pytorch():
    torch = _torch()
    eager.manual_seed(0)
    mine = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, dtype=eager.float64)
    theirs = torch.nn.MultiheadAttention(8, 2, kdim=5, vdim=3).double()
    assert set(mine.state_dict()) == set(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in mine.state_dict().items()})
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 5)), rng.standard_normal((6, 2, 3))
    pad = np.zeros((2, 6), bool)
    pad[0, 5:] = True
    out_e, w_e = mine(eager.tensor(q), eager.tensor(k), eager.tensor(v), key_padding_mask=eager.tensor(pad))
    out_t, w_t = theirs(torch.tensor(q), torch.tensor(k), torch.tensor(v), key_padding_mask=torch.tensor(pad))
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_e.detach().numpy(), w_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    out_e.sum().backward()
    out_t.sum().backward()
    for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias"):
        np.testing.assert_allclose(getattr(mine, name).grad.numpy(), getattr(theirs, name).grad.numpy(),
                                   rtol=1e-9, atol=1e-12)


# -- scatter with a reduction, scatter_reduce -------------------------------------------------------
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def _scatter_case(reduce: str):
    """float64 self, index (with repeats) and src; amax/amin with ties, prod with zeros."""
    x = np.array([[1.0, -2.0, 0.5, 3.0], [0.7, 1.5, -1.0, 2.0], [2.5, 0.3, 1.2, -0.4]])
    index = np.array([[0, 1, 2, 0], [1, 1, 0, 2], [0, 2, 0, 2]])
    src = np.array([[0.9, -1.1, 1.7, 3.0], [1.5, 2.5, -0.6, 0.8], [-1.3, 0.4, 2.2, 1.1]])
    if reduce in ("amax", "amin"):
        src[2, 0] = src[0, 0] = 3.0  # two values tie for the result at (0, 0)
        x[0, 0] = 3.0 if reduce == "amax" else -5.0
    if reduce == "prod":
        src[0, 1] = 0.0  # one zero scattered to (1, 1)
        x[2, 3] = 0.0
    return x, index, src


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_values_and_gradients_match_pytorch(reduce, include_self):
    torch = _torch()
    x, index, src = _scatter_case(reduce)
    w = np.random.default_rng(0).standard_normal(x.shape)
    xe, se = eager.tensor(x, requires_grad=True), eager.tensor(src, requires_grad=True)
    xt, st = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    oe = eager.scatter_reduce(xe, 0, eager.tensor(index), se, reduce, include_self=include_self)
    ot = torch.scatter_reduce(xt, 0, torch.tensor(index), st, reduce, include_self=include_self)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert oe.grad_fn.name() == ot.grad_fn.name()
    (oe * eager.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(se.grad.numpy(), st.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
def test_scatter_reduce_gradients_against_finite_differences(reduce, include_self):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (3, 4))
    src = rng.uniform(0.5, 1.5, (4, 3))
    index = eager.tensor(rng.integers(0, 4, (3, 2)))  # smaller than src: the rest of src is not read

    def f(a, b):
        return eager.scatter_reduce(a, 1, index, b, reduce, include_self=include_self)

    leaves = (eager.tensor(x, requires_grad=True), eager.tensor(src, requires_grad=True))
    assert gradcheck(f, leaves) and gradgradcheck(f, leaves)


def test_scatter_reduce_integers_and_bad_input():
    x = eager.tensor([[1, 2], [3, 4]])
    idx = eager.tensor([[1, 1], [1, 0]])
    src = eager.tensor([[5, 6], [7, 8]])
    assert eager.scatter_reduce(x, 0, idx, src, "mean").tolist() == [[1, 5], [5, 5]]
    assert eager.scatter_reduce(x, 0, idx, src - 20, "mean").tolist() == [[1, -5], [-9, -5]]  # floored
    assert eager.scatter_reduce(x, 0, idx, src, "amin", include_self=False).tolist() == [[1, 8], [5, 6]]
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        eager.scatter_reduce(x, 0, idx, src, "max")
    with pytest.raises(RuntimeError, match="scatter_reduce"):
        eager.scatter_reduce(x.double(), 0, idx, src, "sum")


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_matches_pytorch(reduce):
    torch = _torch()
    x, index, src = _scatter_case("sum")
    for source_e, source_t in ((eager.tensor(src), torch.tensor(src)), (2.5, 2.5)):
        tensor_src = not isinstance(source_e, float)  # PyTorch deprecates reduce= with a tensor src
        with pytest.warns(UserWarning, match="deprecated") if tensor_src else contextlib.nullcontext():
            oe = eager.tensor(x).scatter(0, eager.tensor(index), source_e, reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ot = torch.tensor(x).scatter(0, torch.tensor(index), source_t, reduce=reduce)
        np.testing.assert_allclose(oe.numpy(), ot.numpy(), rtol=1e-12)
        inplace = eager.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inplace.scatter_(0, eager.tensor(index), source_e, reduce=reduce)
        np.testing.assert_allclose(inplace.numpy(), ot.numpy(), rtol=1e-12)


def test_softmax_of_a_0d_and_a_float16_tensor():
    """The in-place softmax kernel keeps PyTorch's results on its edge cases."""
    assert eager.softmax(eager.tensor(2.0), 0).item() == 1.0
    half = eager.softmax(eager.tensor([1.0, 2.0], dtype=eager.float16), 0)
    assert half.dtype == eager.float16
    np.testing.assert_allclose(half.numpy().astype(np.float64), [0.2689, 0.7311], atol=1e-3)


# -- bicubic interpolation -----------------------------------------------------------------------
BICUBIC = [dict(size=(9, 4)), dict(scale_factor=2.0), dict(scale_factor=(0.5, 1.7)),
           dict(size=(8, 11), align_corners=True), dict(size=(3, 2), align_corners=False),
           dict(scale_factor=1.5, recompute_scale_factor=True), dict(size=(1, 1), align_corners=True)]


@pytest.mark.parametrize("kw", BICUBIC, ids=[str(k) for k in BICUBIC])
def test_bicubic_interpolation_matches_pytorch(kw):
    torch = _torch()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7))
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oe = nn.functional.interpolate(xe, mode="bicubic", **kw)
    ot = torch.nn.functional.interpolate(xt, mode="bicubic", **kw)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = rng.standard_normal(tuple(ot.shape))
    (oe * eager.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    f32 = nn.functional.interpolate(eager.tensor(x.astype(np.float32)), mode="bicubic", **kw)
    assert f32.dtype == eager.float32
    np.testing.assert_allclose(f32.numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_bicubic_interpolation_against_finite_differences_and_its_checks():
    x = eager.tensor(np.random.default_rng(1).standard_normal((1, 2, 4, 3)), requires_grad=True)
    for align in (False, True):
        def f(t, align=align):
            return nn.functional.interpolate(t, size=(6, 5), mode="bicubic", align_corners=align)

        assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    up = nn.Upsample(scale_factor=2, mode="bicubic")
    assert tuple(up(x).shape) == (1, 2, 8, 6)
    # a constant image stays constant (the four weights sum to 1)
    const = nn.functional.interpolate(eager.full((1, 1, 3, 3), 2.5), size=(7, 5), mode="bicubic")
    np.testing.assert_allclose(const.numpy(), 2.5, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="4D input"):
        nn.functional.interpolate(eager.ones(1, 2, 5), size=7, mode="bicubic")
    with pytest.raises(NotImplementedError, match="antialias"):
        nn.functional.interpolate(x, size=(2, 2), mode="bicubic", antialias=True)


# -- rounding and more transcendental functions ----------------------------------------------------
UNARY = ["floor", "ceil", "trunc", "round", "log2", "log10", "sinh", "cosh", "asin", "acos", "atan"]


@pytest.mark.parametrize("name", UNARY)
def test_more_math_matches_pytorch(name):
    torch = _torch()
    rng = np.random.default_rng(0)
    x = rng.uniform(0.1, 0.9, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4)) * (4.0 if name in ("floor", "ceil", "trunc",
                                                                                          "round") else 1.0)
    if name in ("log2", "log10"):
        x = np.abs(x)
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oe, ot = getattr(eager, name)(xe), getattr(torch, name)(xt)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-14)
    assert oe.grad_fn.name() == ot.grad_fn.name()
    oe.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    for ints in (np.array([3, -2, 7]), np.array([1, 8, 100])):
        if name in ("log2", "log10") and ints.min() <= 0:
            continue
        got, want = getattr(eager, name)(eager.tensor(ints)), getattr(torch, name)(torch.tensor(ints))
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_round_decimals_atan2_and_aliases():
    torch = _torch()
    x = np.array([1.2345, 2.675, -0.5, 0.5, 1.5, 2.5])
    np.testing.assert_allclose(eager.round(eager.tensor(x), decimals=2).numpy(),
                               torch.round(torch.tensor(x), decimals=2).numpy())
    a, b = np.array([1.0, -2.0, 0.5, -0.3]), np.array([-1.5, -0.5, 2.0, 0.7])
    ae, be = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    eager.atan2(ae, be).sum().backward()
    torch.atan2(at, bt).sum().backward()
    np.testing.assert_allclose(eager.arctan2(ae, be).detach().numpy(), torch.atan2(at, bt).detach().numpy())
    np.testing.assert_allclose(ae.grad.numpy(), at.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(be.grad.numpy(), bt.grad.numpy(), rtol=1e-12)
    # aliases are PyTorch's: their own names (torch.fix is not torch.trunc), the same op
    v = eager.tensor([-0.5, 0.25, 0.9])
    for alias, name in (("fix", "trunc"), ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan")):
        assert getattr(eager, alias).__name__ == alias and getattr(eager, alias)(v).tolist() == getattr(eager, name)(v).tolist()
    with pytest.raises(NotImplementedError, match="floor_vml_cpu.*Bool"):
        eager.floor(eager.tensor([True]))


@pytest.mark.parametrize("name", ["sinh", "cosh", "asin", "acos", "atan", "log2", "log10"])
def test_more_math_second_order(name):
    x = eager.tensor(np.random.default_rng(2).uniform(0.2, 0.7, (5,)), requires_grad=True)
    fn = getattr(eager, name)
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


# -- weightless layers: activations, padding, pixel shuffle, upsampling, distances ----------------------
LAYERS = {
    "Threshold": (lambda m: m.Threshold(0.1, 20.0), (2, 3, 4)),
    "Hardshrink": (lambda m: m.Hardshrink(0.3), (2, 3, 4)),
    "Softshrink": (lambda m: m.Softshrink(0.3), (2, 3, 4)),
    "Softmax2d": (lambda m: m.Softmax2d(), (2, 3, 4, 5)),
    "ConstantPad1d": (lambda m: m.ConstantPad1d((2, 1), 3.5), (2, 3, 4)),
    "ConstantPad2d": (lambda m: m.ConstantPad2d(1, -1.0), (2, 3, 4, 5)),
    "ConstantPad3d": (lambda m: m.ConstantPad3d((1, 0, 0, 2, 1, 1), 0.5), (1, 2, 3, 4, 5)),
    "ZeroPad2d": (lambda m: m.ZeroPad2d((1, 2, 0, 1)), (2, 3, 4, 5)),
    "ReflectionPad1d": (lambda m: m.ReflectionPad1d(2), (2, 3, 5)),
    "ReflectionPad2d": (lambda m: m.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 5)),
    "ReplicationPad1d": (lambda m: m.ReplicationPad1d((3, 1)), (2, 3, 4)),
    "ReplicationPad2d": (lambda m: m.ReplicationPad2d(2), (2, 3, 4, 5)),
    "CircularPad1d": (lambda m: m.CircularPad1d(2), (2, 3, 4)),
    "PixelShuffle": (lambda m: m.PixelShuffle(2), (2, 8, 3, 4)),
    "PixelUnshuffle": (lambda m: m.PixelUnshuffle(2), (2, 3, 4, 6)),
    "UpsamplingNearest2d": (lambda m: m.UpsamplingNearest2d(scale_factor=2), (1, 2, 3, 4)),
    "UpsamplingBilinear2d": (lambda m: m.UpsamplingBilinear2d(size=(5, 7)), (1, 2, 3, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_weightless_layers_match_pytorch(name):
    torch = _torch()
    make, shape = LAYERS[name]
    x = np.random.default_rng(0).standard_normal(shape)
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oe, ot = make(nn)(xe), make(torch.nn)(xt)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ot.shape))
    (oe * eager.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert repr(make(nn)).split("(")[0] == repr(make(torch.nn)).split("(")[0]


@pytest.mark.parametrize("channels", [1, 3])
def test_prelu_matches_pytorch(channels):
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    me, mt = nn.PReLU(channels, dtype=eager.float64), torch.nn.PReLU(channels).double()
    xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    oe, ot = me(xe), mt(xt)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-12)
    oe.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(me.weight.grad.numpy(), mt.weight.grad.numpy(), rtol=1e-12)
    assert set(me.state_dict()) == set(mt.state_dict()) == {"weight"}


def test_distance_modules_match_pytorch_and_layers_check_their_input():
    torch = _torch()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    np.testing.assert_allclose(nn.CosineSimilarity(dim=1)(eager.tensor(a), eager.tensor(b)).numpy(),
                               torch.nn.CosineSimilarity(dim=1)(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(nn.PairwiseDistance(p=1.0)(eager.tensor(a), eager.tensor(b)).numpy(),
                               torch.nn.PairwiseDistance(p=1.0)(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="divisible"):
        nn.PixelShuffle(2)(eager.ones(1, 3, 2, 2))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        nn.PReLU(4)(eager.ones(2, 3, 5))
    with pytest.raises(ValueError, match="expected 3D or 4D"):
        nn.ReflectionPad2d(1)(eager.ones(2, 2, 2, 2, 2))


# -- nn.Transformer ----------------------------------------------------------------------------------
def test_transformer_matches_pytorch_with_the_same_weights():
    torch = _torch()
    eager.manual_seed(0)
    mine = nn.Transformer(16, 2, 2, 1, 32, dropout=0.0, batch_first=True, dtype=eager.float64)
    theirs = torch.nn.Transformer(16, 2, 2, 1, 32, dropout=0.0, batch_first=True).double()
    assert set(mine.state_dict()) == set(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in mine.state_dict().items()})
    rng = np.random.default_rng(0)
    src, tgt = rng.standard_normal((2, 5, 16)), rng.standard_normal((2, 4, 16))
    mask_e = nn.Transformer.generate_square_subsequent_mask(4, dtype=eager.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(mask_e.numpy(), mask_t.numpy())
    se, te = eager.tensor(src, requires_grad=True), eager.tensor(tgt)
    st, tt = torch.tensor(src, requires_grad=True), torch.tensor(tgt)
    oe = mine(se, te, tgt_mask=mask_e, tgt_is_causal=True)
    ot = theirs(st, tt, tgt_mask=mask_t, tgt_is_causal=True)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
    oe.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(se.grad.numpy(), st.grad.numpy(), rtol=1e-8, atol=1e-10)
    with pytest.raises(RuntimeError, match="d_model"):
        mine(eager.ones(2, 5, 8, dtype=eager.float64), eager.ones(2, 4, 8, dtype=eager.float64))
