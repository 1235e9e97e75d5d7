"""The PyTorch functions built as compositions of eager's ops (eager/_compositions/):
values, dtypes and shapes against PyTorch where it is installed, gradients against PyTorch
and central finite differences, edge cases (inf, NaN, empty tensors, negative and bad
dims) and, for a representative half of the differentiable ones, the compiled mode
(static) against eager."""
from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import static

INF, NAN = float("inf"), float("nan")


def _torch():
    return pytest.importorskip("torch")


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _np(t) -> np.ndarray:
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _flat(out) -> list:
    """The tensors of a result (a tensor, a tuple or a named tuple of them)."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check_against_torch(name: str, arrays: list[np.ndarray], *args, differentiable: bool = True,
                         rtol: float = 1e-12, atol: float = 1e-12, **kwargs) -> None:
    """eager.<name> and torch.<name> on the same float64 inputs: equal values, dtypes and
    shapes, and (differentiable) equal gradients of a weighted sum of the outputs."""
    torch = _torch()
    xe = [eager.tensor(a, requires_grad=differentiable and a.dtype.kind == "f") for a in arrays]
    xt = [torch.tensor(a, requires_grad=differentiable and a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        got = _flat(getattr(eager, name)(*xe, *args, **kwargs))
        want = _flat(getattr(torch, name)(*xt, *args, **kwargs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape), name
        assert g.dtype.name == str(w.dtype).replace("torch.", ""), name
        np.testing.assert_allclose(_np(g), _np(w), rtol=rtol, atol=atol, err_msg=name)
    if not differentiable:
        return
    rng = _rng(7)
    loss_e, loss_t = 0.0, 0.0
    for g, w in zip(got, want):
        if g.dtype.is_floating_point:
            weight = rng.standard_normal(tuple(g.shape))
            loss_e = loss_e + (g * eager.tensor(weight)).sum()
            loss_t = loss_t + (w * torch.tensor(weight)).sum()
    loss_e.backward()
    loss_t.backward()
    for ge, gt in zip(xe, xt):
        if gt.requires_grad:  # an input the result does not depend on has no gradient here, zeros in PyTorch
            got_grad = np.zeros(ge.shape) if ge.grad is None else ge.grad.numpy()
            np.testing.assert_allclose(got_grad, gt.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def _check_finite_differences(fn: Callable, arrays: list[np.ndarray], rtol: float = 1e-6, atol: float = 1e-8) -> None:
    """Gradients of sum(fn(*xs) * w) against central differences, for every float64 input."""
    weight_rng = _rng(3)
    out = _flat(fn(*[eager.tensor(a) for a in arrays]))
    weights = [weight_rng.standard_normal(tuple(o.shape)) for o in out]

    def loss(*xs):
        return sum((o * eager.tensor(w)).sum() for o, w in zip(_flat(fn(*xs)), weights)
                   if o.dtype.is_floating_point)

    tensors = [eager.tensor(a, requires_grad=True) for a in arrays]
    loss(*tensors).backward()
    for k, a in enumerate(arrays):
        if tensors[k].grad is None:  # the result does not depend on this input
            np.testing.assert_allclose(central_difference_grad(lambda v, k=k: float(loss(*[
                eager.tensor(v if j == k else b) for j, b in enumerate(arrays)])), a), 0.0, atol=atol)
            continue

        def scalar(v, k=k):
            xs = [eager.tensor(v if j == k else b) for j, b in enumerate(arrays)]
            return float(loss(*xs))

        np.testing.assert_allclose(tensors[k].grad.numpy(), central_difference_grad(scalar, a), rtol=rtol, atol=atol)


def _check_compiled(fn: Callable, arrays: list[np.ndarray]) -> None:
    """static.compile of fn gives eager's values, and value_and_grad eager's gradients."""
    inputs = [eager.tensor(a) for a in arrays]
    want = _flat(fn(*inputs))
    got = _flat(static.compile(fn)(*inputs))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12, atol=1e-14)
    weights = [_rng(5).standard_normal(tuple(o.shape)) for o in want]

    def loss(*xs):
        return sum((o * eager.tensor(w)).sum() for o, w in zip(_flat(fn(*xs)), weights)
                   if o.dtype.is_floating_point)

    tensors = [eager.tensor(a, requires_grad=True) for a in arrays]
    expected = loss(*tensors)
    expected.backward()
    value, grads = static.value_and_grad(loss, argnums=tuple(range(len(arrays))))(*arrays)
    np.testing.assert_allclose(value, float(expected), rtol=1e-12)
    for g, t in zip(grads, tensors):
        np.testing.assert_allclose(_np(g), t.grad.numpy(), rtol=1e-10, atol=1e-13)


A = _rng(1).standard_normal((3, 4))
B = _rng(2).standard_normal((3, 4))
POSITIVE = np.abs(B) + 0.1

# -- elementwise ------------------------------------------------------------------------------------
BINARY = ["logaddexp", "logaddexp2", "hypot", "xlogy", "copysign"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_values_and_gradients_match_pytorch(name):
    other = POSITIVE if name == "xlogy" else B
    _check_against_torch(name, [A, other])
    _check_against_torch(name, [A, other[0]])  # broadcast


@pytest.mark.parametrize("name", ["sinc", "deg2rad", "rad2deg"])
def test_unary_values_and_gradients_match_pytorch(name):
    _check_against_torch(name, [np.concatenate([A.ravel(), [0.0, 1.0, -2.0]])])


@pytest.mark.parametrize("name", BINARY + ["sinc", "deg2rad", "rad2deg", "nansum", "nanmean"])
def test_gradients_match_finite_differences(name):
    fn = getattr(eager, name)
    arrays = [A] if name in ("sinc", "deg2rad", "rad2deg", "nansum", "nanmean") else \
        [A, POSITIVE if name == "xlogy" else B]
    _check_finite_differences(fn, arrays)


def test_logaddexp_is_stable_and_handles_infinities_and_nan():
    torch = _torch()
    a = np.array([INF, -INF, NAN, INF, -INF, 1000.0, -1000.0, 0.0, 1.0, 3.0])
    b = np.array([INF, -INF, 1.0, -INF, 2.0, 1000.0, -1000.5, 1e-300, NAN, 3.0])
    for name in ("logaddexp", "logaddexp2"):
        got = getattr(eager, name)(eager.tensor(a), eager.tensor(b)).numpy()
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-14)
    big = eager.tensor([1000.0], dtype=eager.float64)
    assert eager.logaddexp(big, big).item() == pytest.approx(1000 + np.log(2), rel=1e-15)


def test_float_only_functions_refuse_integers_like_pytorch():
    ints = eager.tensor([1, 2])
    for name in ("logaddexp", "logaddexp2", "hypot"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(eager, name)(ints, ints)
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        eager.logcumsumexp(ints, 0)
    with pytest.raises(RuntimeError, match="nanmean"):
        eager.nanmean(ints)
    # a float operand beside an integer one promotes, as in PyTorch
    assert eager.logaddexp(eager.tensor([1.0]), ints).dtype is eager.float32


def test_hypot_neither_overflows_nor_underflows():
    torch = _torch()
    a = np.array([1e200, 1e-200, 3.0, 0.0, INF, NAN, -INF, 0.0])
    b = np.array([1e200, 1e-200, -4.0, 0.0, NAN, INF, 2.0, -5.0])
    got = eager.hypot(eager.tensor(a), eager.tensor(b)).numpy()
    np.testing.assert_allclose(got, torch.hypot(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-15)
    assert np.isfinite(got[0]) and got[1] > 0


def test_xlogy_zero_cases_and_scalars():
    torch = _torch()
    x = np.array([0.0, 0.0, 0.0, 1.0, 2.0, NAN, 0.0, 3.0])
    y = np.array([0.0, INF, NAN, 0.0, -1.0, 0.0, 2.0, INF])
    with np.errstate(all="ignore"):
        got = eager.xlogy(eager.tensor(x), eager.tensor(y)).numpy()
    np.testing.assert_array_equal(got, torch.xlogy(torch.tensor(x), torch.tensor(y)).numpy())
    for args_e, args_t in (((2, eager.tensor([3.0])), (2, torch.tensor([3.0]))),
                           ((eager.tensor([3.0]), 2), (torch.tensor([3.0]), 2)),
                           ((eager.tensor([1, 0]), eager.tensor([2, 0])), (torch.tensor([1, 0]), torch.tensor([2, 0])))):
        got_t, want_t = eager.xlogy(*args_e), torch.xlogy(*args_t)
        assert got_t.dtype.name == str(want_t.dtype).replace("torch.", "")
        np.testing.assert_allclose(got_t.numpy(), want_t.numpy(), rtol=1e-6)
    # the gradient where input is 0 is 0 for input (PyTorch's xlogy(input != 0, other)), not NaN
    xt = eager.tensor([0.0, 2.0], requires_grad=True)
    eager.xlogy(xt, eager.tensor([0.0, 3.0])).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), [0.0, np.log(3.0)])


def test_signbit_copysign_sinc_edges_match_pytorch():
    torch = _torch()
    v = np.array([-0.0, 0.0, -1.5, 2.0, INF, -INF, 1e-320, -1e-320])
    np.testing.assert_array_equal(eager.signbit(eager.tensor(v)).numpy(), torch.signbit(torch.tensor(v)).numpy())
    ints = np.array([-2, 0, 3])
    np.testing.assert_array_equal(eager.signbit(eager.tensor(ints)).numpy(), torch.signbit(torch.tensor(ints)).numpy())
    assert eager.signbit(eager.tensor(v)).dtype is eager.bool
    mags = np.array([1.0, -2.0, 3.0, -4.0, 0.0, NAN, INF, 5.0])
    np.testing.assert_array_equal(eager.copysign(eager.tensor(mags), eager.tensor(v)).numpy(),
                                  torch.copysign(torch.tensor(mags), torch.tensor(v)).numpy())
    np.testing.assert_array_equal(eager.copysign(eager.tensor(mags), -1.0).numpy(),
                                  torch.copysign(torch.tensor(mags), -1.0).numpy())
    got_int = eager.copysign(eager.tensor([1, -2]), eager.tensor([-1, 1]))
    assert got_int.dtype is eager.float32
    np.testing.assert_array_equal(got_int.numpy(), [-1.0, 2.0])
    s = np.array([0.0, 1e-20, INF, NAN, 0.5, -3.0])
    np.testing.assert_allclose(eager.sinc(eager.tensor(s)).numpy(), torch.sinc(torch.tensor(s)).numpy(), rtol=1e-15)
    z = eager.tensor([0.0], requires_grad=True)
    eager.sinc(z).sum().backward()
    assert z.grad.item() == 0.0
    for name in ("sinc", "deg2rad", "rad2deg"):
        got, want = getattr(eager, name)(eager.tensor([180, 0])), getattr(torch, name)(torch.tensor([180, 0]))
        assert got.dtype is eager.float32 and str(want.dtype) == "torch.float32"
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_elementwise_functions_on_empty_tensors():
    empty = eager.zeros(0, 3, dtype=eager.float64)
    for name in ("logaddexp", "logaddexp2", "hypot", "xlogy", "copysign"):
        assert tuple(getattr(eager, name)(empty, empty).shape) == (0, 3)
    for name in ("sinc", "deg2rad", "rad2deg", "signbit"):
        assert tuple(getattr(eager, name)(empty).shape) == (0, 3)


# -- NaN-ignoring reductions ----------------------------------------------------------------------
WITH_NAN = A.copy()
WITH_NAN[0, 1] = WITH_NAN[2, 3] = NAN
WITH_NAN[1, 1:] = NAN
ALL_NAN_ROW = WITH_NAN.copy()
ALL_NAN_ROW[1, 0] = NAN


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize("args", [(), (0,), (1, True), (-1,), ((0, 1),)])
def test_nan_reductions_match_pytorch(name, args):
    _check_against_torch(name, [WITH_NAN], *args)


def test_nanmean_of_a_slice_of_nans_only():
    torch = _torch()
    got = eager.nanmean(eager.tensor(ALL_NAN_ROW, requires_grad=True), 1)
    want = torch.nanmean(torch.tensor(ALL_NAN_ROW), 1)
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-14)
    assert np.isnan(got[1].item())
    x = eager.tensor(ALL_NAN_ROW, requires_grad=True)
    eager.nanmean(x, 1)[[0, 2]].sum().backward()
    assert np.isfinite(x.grad.numpy()).all() and (x.grad.numpy()[1] == 0).all()  # PyTorch gives NaN in row 1 here


def test_nan_reductions_dtype_and_errors():
    torch = _torch()
    got = eager.nansum(eager.tensor(WITH_NAN, dtype=eager.float32), 1, keepdim=True, dtype=eager.float64)
    want = torch.nansum(torch.tensor(WITH_NAN, dtype=torch.float32), 1, keepdim=True, dtype=torch.float64)
    assert got.dtype is eager.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert eager.nansum(eager.tensor([1, 2])).item() == 3 and eager.nansum(eager.tensor([1, 2])).dtype is eager.int64
    assert np.isnan(eager.nanmean(eager.tensor([NAN])).item())
    assert eager.nanmean(eager.tensor([1, 2]), dtype=eager.float64).item() == 1.5
    with pytest.raises(IndexError):
        eager.nansum(eager.tensor(A), 2)
    with pytest.raises(IndexError):
        eager.nanmean(eager.tensor(A), -3)
    assert eager.nansum(eager.zeros(0)).item() == 0.0
    assert eager.tensor(WITH_NAN).nanmean(0).shape == (4,)


# -- products -----------------------------------------------------------------------------------------
C3 = _rng(4).standard_normal((2, 3, 4))
D3 = _rng(5).standard_normal((4, 3, 5))


@pytest.mark.parametrize("arrays,dims", [
    ((A, B.T), 1), ((C3, D3), ([1, 2], [1, 0])), ((A, B), 2), ((A, B), 0), ((C3, D3), ([2], [0])),
    ((C3, D3), ([-1, 1], [0, -2])),
])
def test_tensordot_matches_pytorch(arrays, dims):
    _check_against_torch("tensordot", list(arrays), dims=dims)


def test_tensordot_errors():
    a, b = eager.ones(3, 2), eager.ones(3, 3)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        eager.tensordot(a, b, dims=([1], [1]))
    with pytest.raises(RuntimeError, match="dims >= 0"):
        eager.tensordot(a, b, dims=-1)
    with pytest.raises(RuntimeError, match="dims < ndim_a or ndim_b"):
        eager.tensordot(a, b, dims=3)
    with pytest.raises(RuntimeError, match="same dtype"):
        eager.tensordot(a, eager.ones(2, 3, dtype=eager.float64), dims=1)
    with pytest.raises(IndexError):
        eager.tensordot(a, b, dims=([2], [0]))


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 2), (3, 2)), ((), (3,)), ((0, 2), (2, 2))])
def test_kron_matches_pytorch(shapes):
    rng = _rng(8)
    _check_against_torch("kron", [rng.standard_normal(s) for s in shapes])


@pytest.mark.parametrize("shapes,dim", [(((3,), (3,)), None), (((4, 3), (4, 3)), 1), (((3, 4), (3, 4)), None),
                                         (((3, 5), (3, 1)), 0), (((2, 4, 3), (2, 1, 3)), -1)])
def test_cross_matches_pytorch(shapes, dim):
    rng = _rng(9)
    _check_against_torch("cross", [rng.standard_normal(s) for s in shapes], dim=dim)


def test_cross_errors_and_linalg_cross():
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        eager.cross(eager.ones(4, 2), eager.ones(4, 2))
    with pytest.raises(RuntimeError, match="must have length 3"):
        eager.cross(eager.ones(3, 2), eager.ones(3, 2), dim=1)
    with pytest.raises(IndexError):
        eager.cross(eager.ones(3, 2), eager.ones(3, 2), dim=5)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        eager.cross(eager.ones(3), eager.ones(2, 3), dim=-1)
    with pytest.raises(RuntimeError, match="must have length 3"):  # the cross dim itself does not broadcast
        eager.cross(eager.ones(3, 5), eager.ones(1, 5), dim=0)
    with pytest.warns(UserWarning, match="without specifying the dim"):
        eager.cross(eager.ones(3), eager.ones(3))
    with pytest.raises(RuntimeError, match="must have length 3"):
        eager.linalg.cross(eager.ones(3, 2), eager.ones(3, 2))
    torch = _torch()
    a, b = _rng(10).standard_normal((2, 3, 3)), _rng(11).standard_normal((2, 3, 3))
    np.testing.assert_allclose(eager.linalg.cross(eager.tensor(a), eager.tensor(b)).numpy(),
                               torch.linalg.cross(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-14)
    np.testing.assert_allclose(eager.linalg.cross(eager.tensor(a), eager.tensor(b), dim=1).numpy(),
                               torch.linalg.cross(torch.tensor(a), torch.tensor(b), dim=1).numpy(), rtol=1e-14)


@pytest.mark.parametrize("name,arrays,kwargs", [
    ("tensordot", [C3, D3], {"dims": ([1, 2], [1, 0])}),
    ("kron", [A, B[:2, :2]], {}),
    ("cross", [_rng(12).standard_normal((4, 3)), _rng(13).standard_normal((4, 3))], {"dim": 1}),
])
def test_product_gradients_match_finite_differences(name, arrays, kwargs):
    _check_finite_differences(lambda *xs: getattr(eager, name)(*xs, **kwargs), arrays)


# -- building and splitting ---------------------------------------------------------------------------
def test_block_diag_matches_pytorch():
    rng = _rng(14)
    _check_against_torch("block_diag", [rng.standard_normal(()), rng.standard_normal(2), rng.standard_normal((2, 3)),
                                        rng.standard_normal((0, 2))])
    torch = _torch()
    got = eager.block_diag(eager.tensor(1), eager.ones(2), eager.ones(2, 3, dtype=eager.int64))
    want = torch.block_diag(torch.tensor(1), torch.ones(2), torch.ones(2, 3, dtype=torch.int64))
    assert got.dtype is eager.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert tuple(eager.block_diag().shape) == tuple(torch.block_diag().shape) == (1, 0)
    mixed = (torch.tensor(1.0, dtype=torch.float64), torch.ones(2, 2), torch.tensor(2, dtype=torch.int64))
    got = eager.block_diag(*[eager.tensor(t.numpy()) for t in mixed])
    assert got.dtype.name == str(torch.block_diag(*mixed).dtype).replace("torch.", "")  # 0-d blocks promote as 0-d


def test_block_diag_layout_and_errors():
    got = eager.block_diag(eager.tensor(5.0), eager.tensor([[1.0, 2.0]]), eager.ones(0, 1))
    np.testing.assert_array_equal(got.numpy(), [[5.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 0.0]])
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        eager.block_diag(eager.ones(2, 2, 2))


def test_block_diag_gradient_matches_finite_differences():
    _check_finite_differences(lambda a, b: eager.block_diag(a, b), [A, B[:2]])


def test_broadcast_tensors():
    with pytest.raises(RuntimeError, match="must match"):
        eager.broadcast_tensors(eager.ones(3), eager.ones(2))
    assert [tuple(t.shape) for t in eager.broadcast_tensors(eager.ones(3, 1), eager.ones(4))] == [(3, 4), (3, 4)]
    torch = _torch()
    shapes = [(3, 1), (4,), (1, 1)]
    rng = _rng(15)
    _check_against_torch("broadcast_tensors", [rng.standard_normal(s) for s in shapes])
    assert len(eager.broadcast_tensors(eager.ones(2))) == len(torch.broadcast_tensors(torch.ones(2))) == 1


@pytest.mark.parametrize("index,dim", [
    (np.array([[0, 3, 3], [1, 0, 2], [2, 2, 2]]), 1),
    (np.array([[2, 0, 1, 1]]), 0),
    (np.array([[0], [3], [1]]), -1),
    (np.array([5, 0, 11, 5]), None),
])
def test_take_along_dim_matches_pytorch(index, dim):
    _check_against_torch("take_along_dim", [A, index], dim)
    _check_finite_differences(lambda x: eager.take_along_dim(x, eager.tensor(index), dim), [A])


def test_take_along_dim_errors():
    x = eager.tensor(A)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        eager.take_along_dim(x, eager.tensor([0, 1]), 1)
    with pytest.raises(RuntimeError, match="should be Long"):
        eager.take_along_dim(x, eager.tensor([[0.0, 1.0]]), 1)
    with pytest.raises(IndexError):
        eager.take_along_dim(x, eager.tensor([[0]]), 2)
    with pytest.raises(RuntimeError, match="must match"):
        eager.take_along_dim(x, eager.zeros(2, 1, dtype=eager.int64), 1)


@pytest.mark.parametrize("split,dim", [(3, 0), (3, 1), (5, 1), ([1, 3], 1), ([-2, 9], 1), ([3, 1], -1), (1, 0)])
def test_tensor_split_matches_pytorch(split, dim):
    _check_against_torch("tensor_split", [A], split, dim)


def test_tensor_split_with_tensor_argument_and_errors():
    seven = eager.arange(7)
    assert [p.tolist() for p in eager.tensor_split(seven, eager.tensor([1, 5, 3]))] == [[0], [1, 2, 3, 4], [], [3, 4, 5, 6]]
    assert [p.tolist() for p in eager.tensor_split(seven, eager.tensor(3))] == [[0, 1, 2], [3, 4], [5, 6]]
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        eager.tensor_split(eager.ones(4), 0)
    with pytest.raises(RuntimeError, match="at least a 1-dimensional"):
        eager.tensor_split(eager.tensor(1.0), 1)
    with pytest.raises(RuntimeError, match="integer dtype"):
        eager.tensor_split(eager.ones(4), eager.tensor([1.0]))
    with pytest.raises(IndexError):
        eager.tensor_split(eager.ones(4), 2, dim=1)
    torch = _torch()
    for arg in (3, [1, 5, 3]):
        got = eager.tensor_split(seven, eager.tensor(arg))
        want = torch.tensor_split(torch.arange(7), torch.tensor(arg))
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


def test_hsplit_vsplit_match_pytorch():
    data = _rng(16).standard_normal((4, 6, 2))
    for name, arg in (("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("vsplit", [3])):
        _check_against_torch(name, [data], arg)
    _check_against_torch("hsplit", [np.arange(6.0)], 2)
    with pytest.raises(RuntimeError, match="not divisible"):
        eager.hsplit(eager.ones(3, 4), 3)
    with pytest.raises(RuntimeError, match="at least 2 dimension"):
        eager.vsplit(eager.ones(4), 2)
    with pytest.raises(RuntimeError, match="at least 1 dimension"):
        eager.hsplit(eager.tensor(1.0), 1)
    assert [tuple(p.shape) for p in eager.tensor(data).vsplit(2)] == [(2, 6, 2), (2, 6, 2)]


@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 3, 4, 6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, 2), (-1, -3)])
def test_rot90_matches_pytorch(k, dims):
    _check_against_torch("rot90", [C3], k, dims)


def test_rot90_errors_and_gradient():
    with pytest.raises(RuntimeError, match="rotation dims to be different"):
        eager.rot90(eager.ones(2, 3), 1, [0, 0])
    with pytest.raises(RuntimeError, match="total dims >= 2"):
        eager.rot90(eager.ones(2), 1)
    with pytest.raises(RuntimeError, match="rotation dims == 2"):
        eager.rot90(eager.ones(2, 3), 1, [0, 1, 1])
    with pytest.raises(IndexError):
        eager.rot90(eager.ones(2, 3), 1, [0, 5])
    _check_finite_differences(lambda x: eager.rot90(x, 1), [A])


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("args", [(3, 4), (3, 4, -1), (4, 3, 1), (5, 5, 10), (0, 4), (3, 3, -7)])
def test_tri_indices_match_pytorch(name, args):
    torch = _torch()
    got, want = getattr(eager, name)(*args), getattr(torch, name)(*args)
    assert got.dtype is eager.int64 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tri_indices_dtype_and_errors():
    assert eager.tril_indices(3, 3, dtype=eager.int32).dtype is eager.int32
    np.testing.assert_array_equal(eager.tril_indices(3, 4, -1).numpy(), [[1, 2, 2], [0, 0, 1]])
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        eager.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative"):
        eager.triu_indices(3, -1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        eager.tril_indices(3, 3, dtype=eager.float32)


# -- counting -----------------------------------------------------------------------------------------
def test_bincount_values_and_dtypes():
    values = np.array([1, 3, 3, 0, 7, 3])
    np.testing.assert_array_equal(eager.bincount(eager.tensor(values)).numpy(), np.bincount(values))
    assert eager.bincount(eager.tensor(values)).dtype is eager.int64
    assert eager.tensor(values).bincount(minlength=10).shape == (10,)
    assert eager.bincount(eager.tensor([], dtype=eager.int64), minlength=3).tolist() == [0, 0, 0]
    assert eager.bincount(eager.tensor([], dtype=eager.int64)).shape == (0,)
    weights = np.linspace(0.5, 3.0, 6)
    got = eager.bincount(eager.tensor(values), eager.tensor(weights, dtype=eager.float32))
    assert got.dtype is eager.float32
    np.testing.assert_allclose(got.numpy(), np.bincount(values, weights), rtol=1e-6)
    assert eager.bincount(eager.tensor(values), eager.tensor(values)).dtype is eager.float64


def test_bincount_matches_pytorch():
    torch = _torch()
    values = _rng(17).integers(0, 6, 20)
    weights = _rng(18).standard_normal(20)
    for w_dtype in ("float32", "float64", "int64"):
        w = weights.astype(w_dtype) if w_dtype != "int64" else (weights * 10).astype(np.int64)
        got = eager.bincount(eager.tensor(values), eager.tensor(w), minlength=8)
        want = torch.bincount(torch.tensor(values), torch.tensor(w), minlength=8)
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(eager.bincount(eager.tensor(values)).numpy(),
                                  torch.bincount(torch.tensor(values)).numpy())


def test_bincount_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        eager.bincount(eager.tensor([-1]))
    with pytest.raises(RuntimeError, match="1-d"):
        eager.bincount(eager.ones(2, 2, dtype=eager.int64))
    with pytest.raises(NotImplementedError, match="Float"):
        eager.bincount(eager.tensor([1.0]))
    with pytest.raises(RuntimeError, match="same length"):
        eager.bincount(eager.tensor([1, 2]), eager.tensor([1.0]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        eager.bincount(eager.tensor([1, 2]), minlength=-1)


def test_bincount_is_eager_only_and_refused_while_tracing():
    with pytest.raises(static.TraceError):
        static.compile(lambda x: eager.bincount(x))(eager.tensor([1, 2, 2]))
    with pytest.raises(static.TraceError):
        static.compile(lambda x, w: eager.bincount(eager.tensor([0, 1]), w))(eager.tensor([1, 2]),
                                                                              eager.tensor([0.5, 1.0]))


# -- scans --------------------------------------------------------------------------------------------
SCAN = _rng(19).standard_normal((3, 7))
SCAN_TIES = np.array([[1.0, 1.0, NAN, 2.0, NAN, 3.0, 0.0], [3.0, 3.0, 1.0, 1.0, -INF, INF, INF],
                      [0.0, -1.0, -1.0, 2.0, 2.0, -1.0, 5.0]])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_match_pytorch(name, dim):
    _check_against_torch(name, [SCAN], dim)
    _check_against_torch(name, [SCAN_TIES], dim, differentiable=False)
    _check_against_torch(name, [SCAN_TIES[np.isfinite(SCAN_TIES).all(1)]], dim)  # gradients with ties
    ints = np.array([[3, 3, 1, 1, 4], [0, 2, 2, -1, 2]])
    _check_against_torch(name, [ints], dim, differentiable=False)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_named_tuple_edges_and_errors(name):
    out = getattr(eager, name)(eager.tensor(SCAN), 1)
    assert type(out).__name__ == name and out.values is out[0] and out.indices is out[1]
    assert out.indices.dtype is eager.int64
    scalar = getattr(eager.tensor(3.0), name)(0)
    assert scalar.values.item() == 3.0 and scalar.indices.item() == 0 and scalar.indices.shape == ()
    empty = getattr(eager, name)(eager.zeros(0, 2), 0)
    assert tuple(empty.values.shape) == (0, 2) and empty.indices.dtype is eager.int64
    with pytest.raises(IndexError):
        getattr(eager, name)(eager.ones(2), 2)
    with pytest.raises(IndexError):
        getattr(eager, name)(eager.tensor(1.0), 1)
    _check_finite_differences(lambda x: getattr(eager, name)(x, 1).values, [SCAN])
    torch = _torch()
    bools = getattr(eager, name)(eager.tensor([True, False, True]), 0)
    want = getattr(torch, name)(torch.tensor([True, False, True]), 0)
    assert bools.values.tolist() == want.values.tolist() and bools.indices.tolist() == want.indices.tolist()


def test_cummax_ties_take_the_later_index_and_nan_wins():
    out = eager.cummax(eager.tensor([1.0, 1.0, NAN, 2.0, NAN, 3.0]), 0)
    assert out.indices.tolist() == [0, 1, 2, 2, 4, 4]
    assert eager.cummin(eager.tensor([3, 3, 1, 1]), 0).indices.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_matches_pytorch(dim):
    _check_against_torch("logcumsumexp", [SCAN], dim)
    _check_against_torch("logcumsumexp", [SCAN * 300], dim, rtol=1e-13)  # exp would overflow
    _check_finite_differences(lambda x: eager.logcumsumexp(x, dim), [SCAN])


def test_logcumsumexp_edges():
    assert eager.logcumsumexp(eager.tensor(2.0), 0).item() == 2.0
    assert tuple(eager.logcumsumexp(eager.zeros(0, 3), 0).shape) == (0, 3)
    with pytest.raises(IndexError):
        eager.logcumsumexp(eager.tensor(3.0), 1)
    with pytest.raises(IndexError):
        eager.tensor(SCAN).logcumsumexp(2)
    small = eager.logcumsumexp(eager.tensor([-1000.0, -999.0], dtype=eager.float64), 0)
    np.testing.assert_allclose(small.numpy(), [-1000.0, -999.0 + np.log1p(np.exp(-1.0))], rtol=1e-15)
    torch = _torch()
    v = np.array([-1000.0, 0.0, -INF, 1000.0, -INF, NAN, 1.0])
    np.testing.assert_allclose(eager.logcumsumexp(eager.tensor(v), 0).numpy(),
                               torch.logcumsumexp(torch.tensor(v), 0).numpy(), rtol=1e-15)
    small = np.array([-1000.0, -999.0])  # a single global shift would give -inf for the first
    np.testing.assert_allclose(eager.logcumsumexp(eager.tensor(small), 0).numpy(),
                               torch.logcumsumexp(torch.tensor(small), 0).numpy(), rtol=1e-15)


@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dx": 0.5}, {"dx": 2.0, "dim": 0}])
def test_trapezoid_matches_pytorch(kwargs):
    _check_against_torch("trapezoid", [SCAN], **kwargs)
    _check_finite_differences(lambda y: eager.trapezoid(y, **kwargs), [SCAN])


def test_trapezoid_with_sample_points():
    x1 = np.cumsum(np.abs(_rng(20).standard_normal(7)))
    _check_against_torch("trapezoid", [SCAN, x1])
    x2 = np.cumsum(np.abs(_rng(21).standard_normal((3, 7))), 1)
    _check_against_torch("trapezoid", [SCAN, x2])
    x3 = np.cumsum(np.abs(_rng(22).standard_normal(3)))
    _check_against_torch("trapezoid", [SCAN, x3], dim=0)
    _check_finite_differences(lambda y, x: eager.trapezoid(y, x), [SCAN, x1])


def test_trapezoid_edges():
    got = eager.trapezoid(eager.tensor([1, 2, 3]))
    assert got.dtype is eager.float32 and got.item() == 4.0
    assert eager.trapezoid(eager.ones(3, 0)).tolist() == [0.0, 0.0, 0.0]
    assert eager.trapezoid(eager.ones(3, 1)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        eager.trapezoid(eager.ones(3, 4), eager.arange(3.0))
    with pytest.raises(IndexError):
        eager.trapezoid(eager.ones(3, 4), dim=2)
    with pytest.raises(TypeError):
        eager.trapezoid(eager.ones(3), eager.ones(3), dx=1.0)


# -- Tensor methods -------------------------------------------------------------------------------------
METHODS = ["logaddexp", "logaddexp2", "hypot", "xlogy", "copysign", "sinc", "deg2rad", "rad2deg", "signbit", "nansum",
           "nanmean", "kron", "cross", "take_along_dim", "tensor_split", "hsplit", "vsplit", "rot90", "bincount",
           "cummax", "cummin", "logcumsumexp"]


def test_tensor_methods_are_the_functions():
    import inspect

    for name in METHODS:  # (eager.<name> is the method given out= by eager._out: one definition under both)
        assert getattr(eager.Tensor, name) is inspect.unwrap(getattr(eager, name)), name
    x, y = eager.tensor(A), eager.tensor(B)
    np.testing.assert_array_equal(x.logaddexp(y).numpy(), eager.logaddexp(x, y).numpy())
    np.testing.assert_array_equal(x.cummax(1).indices.numpy(), eager.cummax(x, 1).indices.numpy())
    assert [tuple(p.shape) for p in x.tensor_split(2, 1)] == [(3, 2), (3, 2)]


def test_tensor_methods_exist_in_pytorch():
    torch = _torch()
    for name in METHODS:
        assert hasattr(torch.Tensor, name), name
    for name in ("tensordot", "block_diag", "broadcast_tensors", "tril_indices", "triu_indices", "trapezoid"):
        assert not hasattr(torch.Tensor, name) and not hasattr(eager.Tensor, name), name


# -- compiled mode ------------------------------------------------------------------------------------
COMPILED = {
    "logaddexp": (lambda a, b: eager.logaddexp(a, b), [A, B]),
    "hypot": (lambda a, b: a.hypot(b), [A, B]),
    "xlogy": (lambda a, b: eager.xlogy(a, b), [np.where(A > 0.5, 0.0, A), POSITIVE]),
    "sinc": (lambda a: eager.sinc(a), [np.where(A > 1.0, 0.0, A)]),
    "nanmean": (lambda a: eager.nanmean(a * 1.0, 1), [WITH_NAN]),
    "tensordot": (lambda a, b: eager.tensordot(a, b, dims=([1, 2], [1, 0])), [C3, D3]),
    "kron": (lambda a, b: eager.kron(a, b), [A, B[:2, :2]]),
    "cross": (lambda a, b: eager.cross(a, b, dim=0), [A[:, :3], B[:, :3]]),
    "take_along_dim": (lambda a: eager.take_along_dim(a, eager.tensor([[3, 0], [1, 1], [2, 0]]), 1), [A]),
    "rot90": (lambda a: eager.rot90(a, 3), [A]),
    "cummax": (lambda a: eager.cummax(a, 1), [SCAN]),
    "logcumsumexp": (lambda a: a.logcumsumexp(-1), [SCAN]),
    "trapezoid": (lambda y, x: eager.trapezoid(y, x, dim=0), [SCAN, np.array([0.0, 0.5, 2.0])]),
    "block_diag": (lambda a, b: eager.block_diag(a, b), [A, B[:2]]),
}


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_compiled_matches_eager(name):
    fn, arrays = COMPILED[name]
    if name == "nanmean":  # a NaN's gradient is 0 in both modes; value_and_grad compares finite sums
        fn, arrays = (lambda a: eager.nansum(a, 1)), [WITH_NAN]
    _check_compiled(fn, arrays)


def test_compiled_nanmean_values_match_eager():
    fn, arrays = COMPILED["nanmean"]
    x = eager.tensor(arrays[0])
    np.testing.assert_allclose(static.compile(fn)(x).numpy(), fn(x).numpy(), rtol=1e-14)
