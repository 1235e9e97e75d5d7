"""Tensor ops added for real PyTorch programs, checked without PyTorch: values against
NumPy, gradients against finite differences, dtypes, grad_fn names and errors as PyTorch
gives them (each stated in a comment where it is asserted)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck

RNG = np.random.default_rng(0)


def t64(shape, requires_grad=True):
    return eager.tensor(RNG.standard_normal(shape), requires_grad=requires_grad)


# -- division, bitwise, logical ----------------------------------------------------------------
def test_floor_divide_remainder_and_fmod_follow_python_and_c_rounding():
    a = np.array([7, -7, 7, -7])
    b = np.array([2, 2, -2, -2])
    # PyTorch: // and % round toward -inf like Python; fmod keeps the sign of the dividend
    assert (eager.tensor(a) // eager.tensor(b)).tolist() == (a // b).tolist()
    assert (eager.tensor(a) % eager.tensor(b)).tolist() == (a % b).tolist()
    assert eager.tensor(a).fmod(eager.tensor(b)).tolist() == np.fmod(a, b).tolist()
    assert eager.div(eager.tensor(a), eager.tensor(b), rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert (eager.tensor(a) // 2).dtype is eager.int64 and (7 // eager.tensor(b)).tolist() == (7 // b).tolist()
    with pytest.raises(RuntimeError, match="rounding_mode"):
        eager.div(eager.tensor(a), 2, rounding_mode="up")


def test_remainder_and_fmod_gradients():
    x = t64((3, 4))
    y = eager.tensor(RNG.uniform(0.5, 2.0, (4,)), requires_grad=True)
    assert gradcheck(lambda a, b: a % b, (x, y))
    assert gradcheck(lambda a, b: a.fmod(b), (x, y))


def test_bitwise_ops_on_ints_and_bools():
    a, b = np.array([12, 10, -3]), np.array([10, 6, 5])
    assert (eager.tensor(a) | eager.tensor(b)).tolist() == (a | b).tolist()
    assert (eager.tensor(a) ^ eager.tensor(b)).tolist() == (a ^ b).tolist()
    assert (eager.tensor(a) & eager.tensor(b)).tolist() == (a & b).tolist()
    m, n = eager.tensor([True, False, True]), eager.tensor([True, True, False])
    assert (m | n).tolist() == [True, True, True] and (m ^ n).tolist() == [False, True, True]
    assert (m | n).dtype is eager.bool
    # PyTorch 2.13: NotImplementedError "bitwise_or_cpu" not implemented for 'Float'
    with pytest.raises(NotImplementedError, match="bitwise_or"):
        eager.tensor([1.0]) | m
    assert eager.logical_or(eager.tensor([0.0, 2.0]), eager.tensor([0, 0])).tolist() == [False, True]
    assert eager.logical_xor(eager.tensor([1, 0]), eager.tensor([1, 1])).tolist() == [False, True]


def test_float_classification_and_nan_to_num():
    x = eager.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert eager.isnan(x).tolist() == [False, True, False, False]
    assert eager.isinf(x).tolist() == [False, False, True, True]
    assert eager.isfinite(x).tolist() == [True, False, False, False]
    big = float(np.finfo(np.float32).max)
    assert x.nan_to_num().tolist() == [1.0, 0.0, big, -big]
    assert x.nan_to_num(nan=2.0, posinf=9.0, neginf=-9.0).tolist() == [1.0, 2.0, 9.0, -9.0]
    y = eager.tensor([1.0, float("nan"), 3.0], requires_grad=True)
    y.nan_to_num().sum().backward()
    assert y.grad.tolist() == [1.0, 0.0, 1.0]  # the replaced elements get no gradient


# -- scans, sorting, selection -------------------------------------------------------------------
def test_cumsum_and_cumprod():
    x = t64((3, 4))
    np.testing.assert_allclose(x.cumsum(1).detach().numpy(), np.cumsum(x.detach().numpy(), 1))
    np.testing.assert_allclose(x.cumprod(-2).detach().numpy(), np.cumprod(x.detach().numpy(), 0))
    assert x.cumsum(0).grad_fn.name() == "CumsumBackward0"
    assert gradcheck(lambda a: a.cumsum(0), (x,)) and gradcheck(lambda a: a.cumprod(1), (x,))
    # PyTorch: integer (and bool) cumsum widens to int64
    assert eager.tensor([1, 2], dtype=eager.int32).cumsum(0).dtype is eager.int64


def test_sort_argsort_topk_kthvalue_median():
    data = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, 4.0, -1.0, 2.0]])
    x = eager.tensor(data, requires_grad=True)
    values, indices = x.sort(1)
    np.testing.assert_array_equal(values.detach().numpy(), np.sort(data, 1))
    np.testing.assert_array_equal(indices.numpy(), np.argsort(data, 1, kind="stable"))
    assert values.grad_fn.name() == "SortBackward0" and indices.dtype is eager.int64
    # a stable descending sort keeps equal elements in order: the two 1.0 at 1 then 3
    assert x.argsort(1, descending=True)[0].tolist() == [0, 2, 1, 3]
    top = x.topk(2, dim=1)
    assert top.values.tolist() == [[3.0, 2.0], [4.0, 2.0]] and top.indices.tolist() == [[0, 2], [1, 3]]
    assert x.kthvalue(2, 1).values.tolist() == [1.0, 0.5]
    # PyTorch's median of an even count is the lower of the two middle values
    assert x.median().item() == 1.0
    assert x.median(1).values.tolist() == [1.0, 0.5]
    x.topk(2, dim=1).values.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
    with pytest.raises(RuntimeError, match="topk"):
        x.topk(5, dim=1)


def test_gather_scatter_index_ops_values_and_gradients():
    x = t64((3, 4))
    idx = eager.tensor([[0, 3], [2, 2], [1, 0]])
    np.testing.assert_array_equal(x.gather(1, idx).detach().numpy(),
                                  np.take_along_axis(x.detach().numpy(), idx.numpy(), 1))
    src = t64((3, 2))
    out = x.scatter_add(1, idx, src).detach().numpy()
    ref = x.detach().numpy().copy()
    for i in range(3):
        for j in range(2):
            ref[i, idx.numpy()[i, j]] += src.detach().numpy()[i, j]
    np.testing.assert_allclose(out, ref)
    assert gradcheck(lambda a, s: a.scatter_add(1, idx, s), (x, src))
    assert gradcheck(lambda a: a.gather(1, idx), (x,))
    rows = eager.tensor([2, 0, 2])
    np.testing.assert_array_equal(x.index_select(0, rows).detach().numpy(), x.detach().numpy()[[2, 0, 2]])
    added = eager.zeros(3, 4, dtype=eager.float64).index_add(0, rows, eager.ones(3, 4, dtype=eager.float64))
    assert added[:, 0].tolist() == [1.0, 0.0, 2.0]
    assert x.gather(1, idx).grad_fn.name() == "GatherBackward0"
    with pytest.raises(RuntimeError, match="gather.*int64"):
        x.gather(1, idx.double())


def test_in_place_scatter_add_and_index_add_write_through():
    x = eager.zeros(2, 3)
    x.scatter_add_(1, eager.tensor([[0, 0], [2, 1]]), eager.ones(2, 2))
    assert x.tolist() == [[2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    y = eager.zeros(3, 2)
    y.index_add_(0, eager.tensor([1, 1]), eager.ones(2, 2), alpha=3)
    assert y.tolist() == [[0.0, 0.0], [6.0, 6.0], [0.0, 0.0]]


def test_data_dependent_ops_run_eagerly():
    x = eager.tensor([[0.0, 2.0], [-1.0, 0.0]], requires_grad=True)
    picked = x.masked_select(x != 0)
    assert picked.tolist() == [2.0, -1.0] and picked.grad_fn.name() == "MaskedSelectBackward0"
    picked.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert eager.tensor([[0, 1], [1, 0]]).nonzero().tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in eager.tensor([0, 3, 0, 4]).nonzero(as_tuple=True)] == [[1, 3]]
    values, inverse, counts = eager.unique(eager.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
    assert values.tolist() == [1, 2, 3] and inverse.tolist() == [2, 0, 2, 1] and counts.tolist() == [1, 1, 2]
    with pytest.raises(RuntimeError, match="BoolTensor"):
        x.masked_select(eager.tensor([1, 0]))


def test_data_dependent_ops_are_refused_by_static_at_the_users_line():
    static = pytest.importorskip("static")

    def f(x):
        return eager.unique(x)

    with pytest.raises(static.TraceError):
        static.trace(f, eager.ones(3))


def test_masked_fill_keeps_the_dtype_and_takes_a_0d_tensor():
    ints = eager.tensor([1, 2, 3])
    mask = eager.tensor([True, False, True])
    assert ints.masked_fill(mask, 0.7).dtype is eager.int64  # PyTorch casts the value to self's dtype
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x.masked_fill(eager.tensor([True, False]), eager.tensor(5.0))
    assert y.tolist() == [5.0, 2.0] and y.grad_fn.name() == "MaskedFillBackward0"
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(eager.tensor([1, 0]), 0.0)


def test_flip_roll_repeat_repeat_interleave():
    a = np.arange(12.0).reshape(3, 4)
    x = eager.tensor(a, requires_grad=True)
    np.testing.assert_array_equal(x.flip(0, 1).detach().numpy(), a[::-1, ::-1])
    np.testing.assert_array_equal(eager.flip(x, [1]).detach().numpy(), a[:, ::-1])
    np.testing.assert_array_equal(x.roll(1, 1).detach().numpy(), np.roll(a, 1, 1))
    np.testing.assert_array_equal(x.roll(5).detach().numpy(), np.roll(a, 5))
    np.testing.assert_array_equal(x.repeat(2, 1, 3).detach().numpy(), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(x.repeat_interleave(2, dim=0).detach().numpy(), np.repeat(a, 2, 0))
    np.testing.assert_array_equal(x.repeat_interleave(eager.tensor([0, 1, 2]), dim=0).detach().numpy(),
                                  np.repeat(a, [0, 1, 2], 0))
    assert x.repeat(2, 2).grad_fn.name() == "RepeatBackward0" and x.roll(1, 0).grad_fn.name() == "RollBackward0"
    x.repeat(2, 3).sum().backward()
    assert (x.grad.numpy() == 6.0).all()


def test_triangles_diagonals_trace():
    a = RNG.standard_normal((3, 4))
    x = eager.tensor(a, requires_grad=True)
    np.testing.assert_array_equal(x.tril(-1).detach().numpy(), np.tril(a, -1))
    np.testing.assert_array_equal(x.triu(1).detach().numpy(), np.triu(a, 1))
    np.testing.assert_array_equal(x.diagonal(1).detach().numpy(), np.diagonal(a, 1))
    np.testing.assert_array_equal(eager.diag(eager.tensor([1.0, 2.0]), 1).numpy(), np.diag([1.0, 2.0], 1))
    assert x.trace().item() == pytest.approx(np.trace(a)) and x.trace().grad_fn.name() == "TraceBackward0"
    assert gradcheck(lambda t: t.diagonal(-1), (x,)) and gradcheck(lambda t: eager.diag_embed(t), (x,))
    with pytest.raises(RuntimeError, match="tril"):
        eager.tril(eager.ones(3))


def test_products_einsum_and_friends():
    a, b = t64((2, 3, 4)), t64((2, 4, 5))
    np.testing.assert_allclose(eager.bmm(a, b).detach().numpy(), a.detach().numpy() @ b.detach().numpy())
    np.testing.assert_allclose(eager.einsum("bij,bjk->bik", a, b).detach().numpy(),
                               np.einsum("bij,bjk->bik", a.detach().numpy(), b.detach().numpy()))
    np.testing.assert_allclose(eager.einsum("...ij->...ji", a).detach().numpy(),
                               np.swapaxes(a.detach().numpy(), -1, -2))
    # implicit output: the letters used once, in alphabetical order ("ba" -> "ab" transposes)
    m = t64((3, 4))
    np.testing.assert_allclose(eager.einsum("ba", m).detach().numpy(), m.detach().numpy().T)
    assert gradcheck(lambda p, q: eager.einsum("bij,bjk->bik", p, q), (a, b))
    assert gradcheck(lambda p: eager.einsum("ijk->j", p), (a,))
    i, v = t64((3, 5)), t64((3,))
    assert gradcheck(lambda c, p, q: eager.addmm(c, p, q, beta=0.5, alpha=2.0), (i, m, t64((4, 5))))
    np.testing.assert_allclose(eager.outer(v, v).detach().numpy(), np.outer(v.detach().numpy(), v.detach().numpy()))
    with pytest.raises(RuntimeError, match="bmm"):
        eager.bmm(m, m)
    w = eager.lerp(eager.zeros(2, dtype=eager.float64), eager.ones(2, dtype=eager.float64), 0.25)
    assert w.tolist() == [0.25, 0.25]


def test_var_mean_std_mean_and_clamp_one_sided():
    x = t64((3, 4))
    var, mean = eager.var_mean(x, 1)
    np.testing.assert_allclose(var.detach().numpy(), np.var(x.detach().numpy(), 1, ddof=1))
    np.testing.assert_allclose(mean.detach().numpy(), np.mean(x.detach().numpy(), 1))
    std, _ = x.std_mean(0, correction=0)
    np.testing.assert_allclose(std.detach().numpy(), np.std(x.detach().numpy(), 0))
    assert x.clamp_min(0.0).min().item() >= 0.0 and x.clamp_max(0.0).max().item() <= 0.0


# -- random --------------------------------------------------------------------------------------
def test_generator_streams_are_reproducible_and_independent():
    g = eager.Generator().manual_seed(7)
    a = eager.randn(4, generator=g)
    b = eager.rand(3, generator=g)
    g.manual_seed(7)
    assert eager.equal(a, eager.randn(4, generator=g)) and eager.equal(b, eager.rand(3, generator=g))
    state = g.get_state()
    c = eager.randint(0, 10, (5,), generator=g)
    g.set_state(state)
    assert eager.equal(c, eager.randint(0, 10, (5,), generator=g))
    eager.manual_seed(0)
    first = eager.randn(3)
    eager.manual_seed(0)
    eager.randn(2, generator=eager.Generator().manual_seed(1))  # another stream: the global one is untouched
    assert eager.equal(first, eager.randn(3))
    assert eager.randperm(5, generator=eager.Generator().manual_seed(3)).sort().values.tolist() == [0, 1, 2, 3, 4]


def test_multinomial_frequencies_and_rules():
    g = eager.Generator().manual_seed(0)
    probs = eager.tensor([0.1, 0.0, 0.6, 0.3])
    draws = eager.multinomial(probs, 20000, replacement=True, generator=g)
    freq = np.bincount(draws.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.02)
    rows = eager.multinomial(eager.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]), 2, generator=g)
    assert rows.dtype is eager.int64 and rows.shape == (2, 2)
    assert sorted(rows[0].tolist()) == [0, 1] and sorted(rows[1].tolist()) == [1, 2]  # without replacement
    with pytest.raises(RuntimeError, match="n_sample"):
        eager.multinomial(probs, 5)
    with pytest.raises(RuntimeError, match="probability"):
        eager.multinomial(eager.tensor([0.5, -1.0]), 1)
    assert probs.multinomial(1, generator=g).item() in (0, 2, 3)


def test_set_default_dtype_and_device():
    try:
        eager.set_default_dtype(eager.float64)
        assert eager.get_default_dtype() is eager.float64
        assert eager.tensor([1.5]).dtype is eager.float64 and eager.zeros(2).dtype is eager.float64
    finally:
        eager.set_default_dtype(eager.float32)
    assert eager.tensor([1.5]).dtype is eager.float32
    with pytest.raises(TypeError):
        eager.set_default_dtype(eager.int64)
    eager.set_default_device("cpu")
    assert eager.get_default_device() == eager.device("cpu") and eager.ones(1).device == eager.device("cpu")
    assert isinstance(eager.accelerator.is_available(), bool)
    assert eager.accelerator.current_accelerator() in (None, eager.device("cuda"))
    assert eager.cuda.device_count() == (1 if eager.cuda.is_available() else 0) or eager.cuda.device_count() > 1


def test_cuda_device_queries_return_python_ints(monkeypatch):
    """In the eager namespace `int` is the int32 dtype (as torch.int): the device queries must
    convert with the builtin. A stand-in CuPy answers as a machine with two GPUs would."""
    import types  # noqa: PLC0415

    from eager import _device  # noqa: PLC0415

    runtime = types.SimpleNamespace(getDeviceCount=lambda: np.int64(2))
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Device=lambda: types.SimpleNamespace(id=1)))
    monkeypatch.setattr(_device, "cupy_module", lambda: fake)
    monkeypatch.setattr(_device, "cuda_is_available", lambda: True)
    count, current = eager.cuda.device_count(), eager.cuda.current_device()
    assert (count, type(count)) == (2, int)
    assert (current, type(current)) == (1, int)
