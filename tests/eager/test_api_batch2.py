"""torch.* spellings of functional ops and methods, the signal windows, frexp, the conjugate
transposes and the mode queries, checked against PyTorch (values, dtypes, shapes, errors)."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")
# NumPy code, not native kernels: a first native call compiles them into the test's private cache (seconds)
pytestmark = pytest.mark.usefixtures("numpy_eager_kernels")


def _pair(*shape: int, seed: int = 0) -> tuple:
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return eager.tensor(a), torch.tensor(a)


def _close(e: object, t: object, atol: float = 1e-5) -> None:
    ea, ta = np.asarray(e.detach().numpy()), t.detach().numpy()  # type: ignore[attr-defined]
    assert ea.shape == ta.shape and ea.dtype == ta.dtype, (ea.shape, ta.shape, ea.dtype, ta.dtype)
    np.testing.assert_allclose(ea, ta, atol=atol, rtol=1e-5)


def test_functional_spellings_match_torch() -> None:
    x, tx = _pair(2, 3, 8, 8)
    # the convolutions are F's functions themselves (tested with them; a first call builds native kernels)
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        assert getattr(eager, name) is getattr(eager.nn.functional, name)
    x1, tx1 = _pair(2, 3, 10)
    _close(eager.max_pool2d(x, 2), torch.max_pool2d(tx, 2))
    _close(eager.max_pool1d(x1, 3, 2), torch.max_pool1d(tx1, 3, 2))
    for e, t in zip(eager.max_pool1d_with_indices(x1, 2), torch.max_pool1d_with_indices(tx1, 2)):
        _close(e, t)
    for e, t in zip(eager.adaptive_max_pool1d(x1, 4), torch.adaptive_max_pool1d(tx1, 4)):
        _close(e, t)
    _close(eager.avg_pool1d(x1, 3), torch.avg_pool1d(tx1, 3))
    _close(eager.adaptive_avg_pool1d(x1, 5), torch.adaptive_avg_pool1d(tx1, 5))
    _close(eager.layer_norm(x, [8, 8]), torch.layer_norm(tx, [8, 8]))
    _close(eager.group_norm(x, 3), torch.group_norm(tx, 3))
    g, tg = _pair(3, seed=3)
    m, tm = eager.zeros(3), torch.zeros(3)
    v, tv = eager.ones(3), torch.ones(3)
    _close(eager.batch_norm(x, g, None, m, v, True, 0.1, 1e-5, False),
           torch.batch_norm(tx, tg, None, tm, tv, True, 0.1, 1e-5, False))
    _close(m, tm)
    _close(eager.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False),
           torch.instance_norm(tx, None, None, None, None, True, 0.1, 1e-5, False))
    table, ttable = _pair(10, 4, seed=4)
    idx = [[1, 2], [0, 9]]
    _close(eager.embedding(table, eager.tensor(idx)), torch.embedding(ttable, torch.tensor(idx)))
    _close(eager.constant_pad_nd(x1, [1, 2], 3.0), torch.constant_pad_nd(tx1, [1, 2], 3.0))
    assert eager.dropout(x, 0.5, False) is x or np.array_equal(eager.dropout(x, 0.5, False).numpy(), x.numpy())
    assert float((eager.dropout(x, 1.0, True) == 0).float().mean()) == 1.0


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_take_atens_integer_reduction(reduction: int) -> None:
    a, ta = _pair(4, 5)
    b, tb = _pair(4, 5, seed=1)
    y = np.sign(np.random.default_rng(2).standard_normal(4)).astype(np.float32)
    ey, ty = eager.tensor(y), torch.tensor(y)
    _close(eager.kl_div(a, b.softmax(-1), reduction), torch.kl_div(ta, tb.softmax(-1), reduction))
    _close(eager.binary_cross_entropy_with_logits(a, b.sigmoid(), None, None, reduction),
           torch.binary_cross_entropy_with_logits(ta, tb.sigmoid(), None, None, reduction))
    _close(eager.cosine_embedding_loss(a, b, ey, 0.1, reduction), torch.cosine_embedding_loss(ta, tb, ty, 0.1, reduction))
    _close(eager.hinge_embedding_loss(a, eager.sign(b), 1.0, reduction),
           torch.hinge_embedding_loss(ta, torch.sign(tb), 1.0, reduction))
    _close(eager.margin_ranking_loss(a[:, 0], b[:, 0], ey, 0.2, reduction),
           torch.margin_ranking_loss(ta[:, 0], tb[:, 0], ty, 0.2, reduction))
    _close(eager.cosine_similarity(a, b), torch.cosine_similarity(ta, tb))


def test_bad_integer_reduction_raises() -> None:
    a, _ = _pair(2, 2)
    with pytest.raises(RuntimeError, match="kl_div"):
        eager.kl_div(a, a, 5)


def test_inplace_function_spellings() -> None:
    for name, args in [("abs_", ()), ("exp_", ()), ("clamp_", (-0.5, 0.5)), ("clamp_min_", (0.0,)),
                       ("clamp_max_", (0.1,)), ("ceil_", ()), ("floor_", ()), ("sigmoid_", ()), ("tanh_", ()),
                       ("neg_", ()), ("square_", ()), ("trunc_", ()), ("zero_", ()), ("fill_", (2.5,))]:
        x, tx = _pair(3, 4)
        out = getattr(eager, name)(x, *args)
        tout = getattr(torch, name)(tx, *args)
        assert out is x
        _close(x, tx)
        _close(out, tout)
    x, tx = _pair(3, 4)
    _close(eager.fill(x, 1.5), torch.fill(tx, 1.5))
    _close(x, tx)  # fill is out of place


def test_predicates_and_detach() -> None:
    x, tx = _pair(2, 3)
    assert eager.is_same_size(x, x) and not eager.is_same_size(x, x[0])
    assert eager.is_signed(x) == torch.is_signed(tx)
    assert eager.is_signed(eager.tensor([1], dtype=eager.uint8)) is False
    assert eager.is_conj(x) is False and eager.is_neg(x) is False
    assert eager.is_nonzero(eager.tensor([1.0])) is True
    with pytest.raises(RuntimeError):
        eager.is_nonzero(x)
    y = x.clone().requires_grad_()
    assert not eager.detach(y).requires_grad


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name: str, n: int, periodic: bool) -> None:
    _close(getattr(eager, name)(n, periodic), getattr(torch, name)(n, periodic), atol=2e-6)
    _close(getattr(eager, name)(n, periodic, dtype=eager.float64), getattr(torch, name)(n, periodic, dtype=torch.float64))


def test_window_defaults_and_errors() -> None:
    _close(eager.hann_window(9), torch.hann_window(9))
    _close(eager.kaiser_window(9, True, 5.0), torch.kaiser_window(9, True, 5.0), atol=2e-6)
    _close(eager.hamming_window(9, False, 0.5, 0.5), torch.hamming_window(9, False, 0.5, 0.5))
    with pytest.raises(RuntimeError, match="floating point"):
        eager.hann_window(4, dtype=eager.int64)


def test_frexp_function_and_method() -> None:
    a = np.array([0.0, 1.0, -3.5, 1e-30, 1024.0, 0.3], dtype=np.float32)
    e_m, e_e = eager.frexp(eager.tensor(a))
    t_m, t_e = torch.frexp(torch.tensor(a))
    _close(e_m, t_m)
    _close(e_e, t_e)
    m2 = eager.tensor(a).frexp().mantissa
    _close(m2, t_m)
    with pytest.raises(RuntimeError, match="floating"):
        eager.frexp(eager.tensor([1, 2]))


def test_conjugate_transposes() -> None:
    x, tx = _pair(2, 3, 4)
    _close(x.mH, tx.mH)
    _close(x.adjoint(), tx.adjoint())
    _close(eager.adjoint(x), torch.adjoint(tx))
    m, tm = _pair(3, 4)
    _close(m.H, tm.H)
    with pytest.raises(RuntimeError):
        x.H  # noqa: B018
    with pytest.raises(RuntimeError):
        eager.ones(3).mH  # noqa: B018


def test_unsafe_splits_nonzero_static_resize() -> None:
    x, tx = _pair(6, 4)
    for e, t in zip(x.unsafe_chunk(3), tx.unsafe_chunk(3)):
        _close(e, t)
    for e, t in zip(eager.unsafe_split(x, 4), torch.unsafe_split(tx, 4)):
        _close(e, t)
    for e, t in zip(x.unsafe_split_with_sizes([1, 5]), tx.unsafe_split_with_sizes([1, 5])):
        _close(e, t)
    b = np.array([[0, 1, 0], [1, 1, 0]], dtype=np.float32)
    for size in (0, 2, 3, 6):
        _close(eager.tensor(b).nonzero_static(size=size), torch.tensor(b).nonzero_static(size=size))
    _close(eager.tensor(b).nonzero_static(size=5, fill_value=7), torch.tensor(b).nonzero_static(size=5, fill_value=7))
    with pytest.warns(UserWarning):
        _close(x.resize(3, 8), tx.resize(3, 8))
    with pytest.raises(RuntimeError), pytest.warns(UserWarning):
        x.resize(5)


def test_memory_placement_of_a_host_build() -> None:
    x = eager.zeros(2)
    with pytest.raises(RuntimeError):
        x.pin_memory()
    assert x.is_shared() is False
    assert x.share_memory_() is x and x.is_shared() is True


def test_factories() -> None:
    e = eager.empty_strided((2, 3), (1, 2))
    t = torch.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride() and e.dtype == eager.float32
    a = np.arange(6, dtype=np.float64)
    _close(eager.asarray(a), torch.asarray(a))
    _close(eager.asarray([1, 2, 3]), torch.asarray([1, 2, 3]))
    x = eager.ones(3)
    assert eager.asarray(x) is x
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    _close(eager.frombuffer(buf, dtype=eager.int32), torch.frombuffer(buf, dtype=torch.int32))
    _close(eager.frombuffer(buf, dtype=eager.int32, count=2, offset=4),
           torch.frombuffer(buf, dtype=torch.int32, count=2, offset=4))


def test_cumulative_trapezoid() -> None:
    y, ty = _pair(3, 6)
    _close(eager.cumulative_trapezoid(y), torch.cumulative_trapezoid(ty))
    _close(eager.cumulative_trapezoid(y, dx=0.5, dim=0), torch.cumulative_trapezoid(ty, dx=0.5, dim=0))
    xs = np.cumsum(np.random.default_rng(5).random(6)).astype(np.float32)
    _close(eager.cumulative_trapezoid(y, eager.tensor(xs)), torch.cumulative_trapezoid(ty, torch.tensor(xs)))
    g = eager.tensor(np.random.default_rng(6).standard_normal((2, 5)), dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(lambda t: eager.cumulative_trapezoid(t, dx=0.3), (g,))


def test_mode_queries() -> None:
    assert eager.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    with eager.autograd.detect_anomaly():
        assert eager.is_anomaly_enabled() is True and eager.is_anomaly_check_nan_enabled() is True
    assert eager.is_anomaly_enabled() is False
    assert eager.is_autocast_enabled() is torch.is_autocast_enabled() is False
    assert str(eager.get_autocast_dtype("cpu")).split(".")[-1] == str(torch.get_autocast_dtype("cpu")).split(".")[-1]
    assert eager.is_warn_always_enabled() is torch.is_warn_always_enabled()
    assert eager.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == 0
    assert eager.typename(eager.zeros(1)) == torch.typename(torch.zeros(1))
    assert eager.typename(3) == torch.typename(3)
    assert eager.has_lapack is True and isinstance(eager.has_openmp, bool)
    with pytest.raises(RuntimeError, match="linalg.matrix_rank"):
        eager.matrix_rank(eager.eye(3))


def test_histogramdd_matches_torch() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((50, 3)).astype(np.float32)
    w = rng.random(50).astype(np.float32)
    cases = [dict(bins=4), dict(bins=[2, 3, 4], weight=True), dict(bins=3, range=[-1.0, 1.0, -2.0, 0.0, 0.0, 3.0]),
             dict(bins=[2, 2, 5], density=True)]
    for kw in cases:
        ekw = {k: (eager.tensor(w) if k == "weight" else v) for k, v in kw.items()}
        tkw = {k: (torch.tensor(w) if k == "weight" else v) for k, v in kw.items()}
        eh, ee = eager.histogramdd(eager.tensor(a), **ekw)
        th, te = torch.histogramdd(torch.tensor(a), **tkw)
        _close(eh, th)
        for x, y in zip(ee, te):
            _close(x, y)
    edges = [torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.0, 3.0])]
    th, _ = torch.histogramdd(torch.tensor(a[:, :2]), bins=edges)
    eh, _ = eager.histogramdd(eager.tensor(a[:, :2]), bins=[eager.tensor(e.numpy()) for e in edges])
    _close(eh, th)
    with pytest.raises(RuntimeError):
        eager.histogramdd(eager.tensor(a), bins=[2, 2])


def test_spellings_gradcheck_and_inplace_dropout() -> None:
    rng = np.random.default_rng(8)
    x = eager.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    w = eager.tensor(rng.standard_normal(4), requires_grad=True)
    t = eager.tensor(rng.random((2, 3, 4)))
    gc = eager.autograd.gradcheck
    assert gc(lambda a, b: eager.layer_norm(a, [4], b, None, 1e-5, False), (x, w))
    assert gc(lambda a: eager.binary_cross_entropy_with_logits(a, t, None, None, 2), (x,))
    assert gc(lambda a: eager.constant_pad_nd(a, [1, 1, 2, 0], 0.5), (x,))
    assert gc(lambda a: eager.kl_div(a, t, 0), (x,))
    assert gc(lambda a: eager.cumulative_trapezoid(a, dim=1), (x,))
    y = eager.ones(100)
    assert eager.dropout_(y, 0.5, True) is y
    kept = y[y != 0]
    assert float((y == 0).float().sum()) > 0 and np.allclose(kept.numpy(), 2.0)
    assert eager.alpha_dropout(y, 0.5, False) is y or np.array_equal(eager.alpha_dropout(y, 0.5, False).numpy(),
                                                                       y.numpy())


def test_more_spellings() -> None:
    x, tx = _pair(2, 3, 4)
    _close(eager.rms_norm(x, [4]), torch.rms_norm(tx, [4]))
    rng = np.random.default_rng(9)
    lp = np.log(rng.dirichlet(np.ones(5), size=(6, 2))).astype(np.float32)
    tg = np.array([[1, 2], [3, 3]])
    for red in (0, 1, 2):
        _close(eager.ctc_loss(eager.tensor(lp), eager.tensor(tg), [6, 5], [2, 2], 0, red),
               torch.ctc_loss(torch.tensor(lp), torch.tensor(tg), [6, 5], [2, 2], 0, red), atol=1e-4)
    _close(eager.scalar_tensor(3), torch.scalar_tensor(3))
    r = eager.randint_like(eager.zeros(50), 2, 5)
    assert r.dtype == eager.float32 and float(r.min()) >= 2 and float(r.max()) < 5
    y = eager.feature_dropout(eager.ones(4, 6, 3), 0.5, True)
    per_map = y.numpy()
    assert all(np.all(m == m[0]) for m in per_map.reshape(24, 3)) and set(np.unique(per_map)) <= {0.0, 2.0}
    assert eager.feature_dropout(x, 0.5, False) is x


def test_as_subclass_keeps_data_and_graph() -> None:
    class Sub(eager.Tensor):
        pass

    x = eager.ones(3, requires_grad=True)
    y = x.as_subclass(Sub)
    assert type(y) is Sub
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    with pytest.raises(TypeError):
        x.as_subclass(int)


def test_autocast_state_round_trips_as_torch() -> None:
    for lib in (eager, torch):
        assert lib.is_autocast_enabled() is False and lib.is_autocast_enabled("cpu") is False
        lib.set_autocast_enabled("cpu", True)
        try:
            assert lib.is_autocast_enabled("cpu") is True and lib.is_autocast_cpu_enabled() is True
            assert lib.is_autocast_enabled() is False  # no device: cuda's
        finally:
            lib.set_autocast_enabled("cpu", False)
        assert lib.is_autocast_cpu_enabled() is False
        assert lib.autocast_increment_nesting() == 1 and lib.autocast_decrement_nesting() == 0
