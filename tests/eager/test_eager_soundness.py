"""Soundness of eager against PyTorch 2.13: values, gradients, dtypes and error types that
used to be wrong or to crash. Expected values are PyTorch's (or exact by hand, or finite
differences); torch itself is not needed."""
import math
import warnings

import numpy as np
import pytest

import eager as torch
from eager.autograd.functional import hessian


@pytest.fixture
def no_warnings():
    """Every warning raised inside the test is an error (PyTorch is silent there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# -- tensors hold arrays, never NumPy scalars ---------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: torch.randn(()),
    lambda: torch.rand(()),
    lambda: torch.randn_like(torch.tensor(1.0)),
    lambda: torch.rand_like(torch.tensor(1.0)),
    lambda: torch.randint(0, 5, ()),
    lambda: torch.zeros(()),
    lambda: torch.tensor(np.float32(2.0)),
    lambda: torch.from_numpy(np.array(2.0)),
    lambda: torch.tensor([1.0, 2.0]).sum(),
    lambda: torch.tensor([[1.0, 2.0]])[0, 1],
    lambda: torch.tensor(3.0).to(torch.float16),
])
def test_a_0d_tensor_holds_a_0d_array(make):
    t = make()
    assert type(t._data) is np.ndarray and t.shape == ()
    assert t.device == torch.device("cpu")
    assert isinstance(t.numpy(), np.ndarray)
    # ops with other tensors see one device
    assert (t + torch.ones(3)).shape == (3,)
    assert (torch.ones(2) * t).shape == (2,)


def test_a_0d_random_tensor_takes_in_place_writes():
    t = torch.randn(())
    t.add_(1.0)
    t.zero_()
    assert t.item() == 0.0 and t._version == 2


# -- NumPy's floating-point warnings do not leak ------------------------------------------------
@pytest.mark.parametrize("compute", [
    lambda: torch.log(torch.tensor([0.0, -1.0])),
    lambda: torch.sqrt(torch.tensor([-1.0])),
    lambda: torch.tensor([0.0, 1.0]) / 0,
    lambda: torch.tensor([0.0]) / torch.tensor([0.0]),
    lambda: torch.exp(torch.tensor([1000.0])),
    lambda: torch.tensor([1e30], dtype=torch.float32) * 1e30,
    lambda: torch.tensor([1e5]).half(),
    lambda: torch.tensor([float("inf")]) - float("inf"),
    lambda: torch.tensor([3e38, 3e38]).sum(),
    lambda: torch.zeros(0).mean(),
    lambda: torch.log(torch.tensor([[0.0, 1.0]], dtype=torch.float64)).sum(1),
    lambda: torch.tensor([1e5], dtype=torch.float16),
    lambda: torch.tensor(np.array([1e5]), dtype=torch.float16),
    lambda: torch.tensor([1e40]),
    lambda: torch.zeros(0, 3).var(0),
    lambda: torch.tensor([1.0]).std(),
])
def test_forwards_do_not_warn(no_warnings, compute):
    compute()


def test_a_fill_value_a_float16_tensor_cannot_hold_raises_as_pytorch(no_warnings):
    """full() stores the number itself: PyTorch refuses a finite value beyond float16's range
    (`value cannot be converted to type c10::Half without overflow`) rather than warn or give inf."""
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full((2,), 1e5, dtype=torch.float16)


def test_in_place_writes_do_not_warn(no_warnings):
    x = torch.ones(3, dtype=torch.float16)
    x.add_(1e5)
    x[0] = 1e6
    assert math.isinf(x[0].item())


def test_backward_through_log_of_zero_does_not_warn(no_warnings):
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    torch.log(x).sum().backward()
    assert math.isinf(x.grad[0].item())


def test_printing_float16_does_not_warn(no_warnings):
    assert "6.0000e+04" in repr(torch.tensor([1.0, 2.0, 6e4], dtype=torch.float16))  # (as PyTorch prints it)
    repr(torch.tensor([1e-5, 6e4], dtype=torch.float16))


def test_the_users_numpy_error_state_is_untouched():
    before = np.geterr()
    torch.log(torch.tensor([0.0]))
    assert np.geterr() == before
    with np.errstate(divide="raise"):
        torch.log(torch.tensor([0.0]))  # eager is still silent...
        with pytest.raises(FloatingPointError):
            np.log(np.array([0.0]))  # ...while the user's own NumPy raises as asked


# -- a view's history follows in-place writes to its base (PyTorch regenerates its grad_fn) --------
def _x():
    return torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)


def test_a_view_taken_before_an_in_place_write_to_its_base_sees_the_write():
    x = _x()
    y = x * 1
    z = y[1]
    y.mul_(2)
    assert z.grad_fn.name() == "AsStridedBackward0"
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [10, 10]])  # PyTorch 2.13


def test_a_view_sees_a_write_through_a_sibling_view_and_an_index_assignment():
    x = _x()
    y = x * 1
    z = y[1]
    w = y[0]
    w.mul_(2)
    y[1] = 0
    assert z.tolist() == [0.0, 0.0]
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [0, 0]])  # PyTorch 2.13


@pytest.mark.parametrize("view, expected", [
    (lambda y: y[1].expand(3, 2), [[0, 0], [30, 30]]),
    (lambda y: y.t(), [[10, 10], [10, 10]]),
    (lambda y: y.reshape(4)[2:], [[0, 0], [10, 10]]),
])
def test_views_of_views_follow_the_write(view, expected):
    x = _x()
    y = x * 1
    z = view(y)
    y.mul_(2)
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), expected)  # PyTorch 2.13


def test_an_in_place_write_into_an_output_of_split_is_refused_as_in_pytorch():
    x = _x()
    y = x * 1
    _, b = y.split(1)
    message = (r"Output 1 of SplitWithSizes is a view and is being modified inplace. This view is the output of a "
               r"function that returns multiple views")
    with pytest.raises(RuntimeError, match=message):
        b.mul_(2)
    with pytest.raises(RuntimeError, match=message):
        b[0] = 1.0
    with pytest.raises(RuntimeError, match=message):
        y.chunk(2)[1][0].add_(1)
    with torch.no_grad():
        b.mul_(2)  # nothing recorded: allowed, as in PyTorch
    plain = torch.ones(2, 2)
    plain.split(1)[1].mul_(2)
    assert plain.tolist() == [[1, 1], [2, 2]]


def test_a_copy_made_by_advanced_indexing_keeps_its_history():
    x = _x()
    y = x * 1
    z = y[[1]]  # a copy, not a view
    y.mul_(2)
    (z * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [5, 5]])  # PyTorch 2.13


def test_results_computed_before_the_write_keep_their_history():
    x = _x()
    y = x * 1
    z = y[1]
    y.mul_(2)
    z2 = z * 5
    y.mul_(3)
    z2.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [10, 10]])  # PyTorch 2.13


def test_a_view_of_a_plain_tensor_requires_grad_after_a_write_that_requires_grad():
    x = _x()
    y = torch.zeros(2, 2)
    z = y[1]
    y.add_(x)
    assert z.requires_grad and z.grad_fn.name() == "AsStridedBackward0"
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [1, 1]])


def test_views_of_a_weight_are_not_tracked_and_dead_views_are_dropped():
    w = torch.ones(3, 3, requires_grad=True)
    for _ in range(100):
        w.t()
    assert w._views is None  # a leaf requiring grad never takes a recorded write
    y = w * 1
    for _ in range(1000):
        y.t()
    assert len(y._views) < 64


# -- second (and third) derivatives through prod ---------------------------------------------------
def _prod_hessian(v):
    """The exact hessian of prod(v): entry (i, k), i != k, is the product of the others."""
    n = len(v)
    h = np.zeros((n, n))
    for i in range(n):
        for k in range(n):
            if i != k:
                h[i, k] = np.prod([v[j] for j in range(n) if j not in (i, k)])
    return h


@pytest.mark.parametrize("values", [[1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [1.5, -2.0, 0.5, 4.0], [2.0]])
def test_hessian_of_prod_is_exact_with_and_without_zeros(values):
    x = torch.tensor(values, dtype=torch.float64)
    h = hessian(lambda t: t.prod(), x)
    np.testing.assert_allclose(h.numpy(), _prod_hessian(values), atol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda t: t.prod(1).sum(),
    lambda t: (t.prod(dim=0, keepdim=True) * t).sum(),
    lambda t: t.prod(),
])
def test_prod_second_and_third_derivatives_match_finite_differences(fn):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    a[1, 2] = 0.0  # a zero in a group: no division by it anywhere
    x = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(fn, (x,))

    v = torch.tensor(rng.standard_normal((3, 4)))

    def hessian_times_v(t):
        with torch.enable_grad():
            (g,) = torch.autograd.grad(fn(t), t, create_graph=True)
            (hv,) = torch.autograd.grad((g * v).sum(), t, create_graph=True)
        return hv

    assert torch.autograd.gradcheck(hessian_times_v, (x,))  # third order


def test_prod_except_self_is_differentiable():
    x = torch.tensor(np.random.default_rng(1).standard_normal((2, 3, 2)), requires_grad=True, dtype=torch.float64)
    from eager.ops.reductions import PROD_EXCEPT_SELF

    assert torch.autograd.gradcheck(lambda t: PROD_EXCEPT_SELF(t, dims=(0, 2)), (x,))
    assert torch.autograd.gradgradcheck(lambda t: PROD_EXCEPT_SELF(t, dims=None), (x,))


# -- float16: numbers beyond its range, reductions accumulated in float32 ----------------------------
def test_a_number_beyond_float16_range_takes_part_as_itself(no_warnings):
    x = torch.tensor([1.0, 2.0, 6e4], dtype=torch.float16, requires_grad=True)
    y = x / 100000
    assert y.dtype == torch.float16
    # PyTorch 2.13: tensor([1.0014e-05, 2.0027e-05, 6.0010e-01], dtype=torch.float16)
    np.testing.assert_array_equal(y.detach().numpy(), np.array([1.0014e-05, 2.0027e-05, 6.0010e-01], np.float16))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 1e-5, np.float16))
    assert (torch.tensor([3.0], dtype=torch.float16) < 70000).item()
    assert (torch.tensor([100.0], dtype=torch.float16) * 1e-6).item() == pytest.approx(1e-4, rel=1e-3)
    assert math.isinf((torch.tensor([65504.0], dtype=torch.float16) * 2).item())


def test_float16_scalars_round_as_in_pytorch():
    x = torch.tensor([1000.0], dtype=torch.float16)
    exact = np.float16(1e-3)  # 1000 * 1e-6 rounded once; 1e-6 rounded to float16 first gives 0.0010128
    # PyTorch 2.13: mul and div take a number or a 0-d tensor at float32 precision...
    for y in (x * 1e-6, x / 1e6, x * torch.tensor(1e-6), x / torch.tensor(1e6, dtype=torch.float64)):
        assert y.dtype == torch.float16 and y.item() == exact
    assert (torch.tensor([1.0], dtype=torch.float16) / torch.tensor(100000)).item() == np.float16(1e-5)
    # ...while add and comparisons round it to float16 first, as PyTorch does
    assert math.isinf((torch.tensor([60000.0], dtype=torch.float16) + (-1e5)).item())
    assert (torch.tensor([2048.0], dtype=torch.float16) == 2049).item()
    w = torch.tensor([1000.0], dtype=torch.float16, requires_grad=True)
    s = torch.tensor(1e-6, requires_grad=True)
    (w * s).backward()
    assert s.grad.dtype == torch.float32 and s.grad.item() == 1000.0


@pytest.mark.parametrize("compute, expected", [
    (lambda: torch.full((100000,), 0.1, dtype=torch.float16).sum(), 10000.0),
    (lambda: torch.full((100000, 2), 0.1, dtype=torch.float16).sum(0)[0], 10000.0),  # float16 adds stall at 256
    (lambda: torch.full((1000,), 300.0, dtype=torch.float16).var(), 0.0),  # squares overflow float16
    (lambda: (torch.arange(1000).to(torch.float16) * 60).std(), 17328.0),
    (lambda: torch.full((4,), 300.0, dtype=torch.float16).norm(), 600.0),
    (lambda: torch.full((1000,), 300.0, dtype=torch.float16).mean(), 300.0),
    (lambda: torch.logsumexp(torch.full((3,), 20.0, dtype=torch.float16), 0), 21.0986),
])
def test_float16_reductions_accumulate_in_float32(no_warnings, compute, expected):
    out = compute()
    assert out.dtype == torch.float16
    assert out.item() == pytest.approx(expected, rel=1e-3)  # PyTorch 2.13's values


def test_float16_softmax_is_computed_in_float32():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
    s = torch.softmax(x, 0)
    assert s.dtype == torch.float16
    # PyTorch 2.13: [0.0900, 0.2448, 0.6650]; float16 arithmetic throughout gives 0.6655
    np.testing.assert_array_equal(s.numpy(), np.array([0.0900, 0.2448, 0.6650], np.float16))
    big = torch.softmax(torch.tensor([0.0, 12.0], dtype=torch.float16), 0)  # exp(12) overflows float16
    np.testing.assert_allclose(big.numpy().astype(float), [6.1e-6, 1.0], rtol=1e-2)


# -- smaller numerics ---------------------------------------------------------------------------------
def test_gradient_of_pow_at_zero_with_a_zero_tensor_exponent_is_zero():
    x = torch.tensor([0.0, 1.0, 0.0], requires_grad=True)
    e = torch.tensor([0.0, 2.0, 3.0])
    (x ** e).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 0.0])  # PyTorch 2.13


def test_std_of_large_finite_float32_values_is_finite(no_warnings):
    s = torch.tensor([3e38, -3e38, 1e38]).std()
    assert s.dtype == torch.float32
    assert s.item() == pytest.approx(3.0551e38, rel=1e-4)  # PyTorch 2.13
    assert torch.tensor([3e38, -3e38]).var().item() == float("inf")  # the variance itself overflows


@pytest.mark.parametrize("dt", [torch.float16, torch.float32, torch.float64])
def test_var_and_std_of_a_0d_tensor(dt):
    x = torch.tensor(2.0, dtype=dt)
    assert math.isnan(x.var().item()) and math.isnan(x.std().item())  # PyTorch 2.13: one element
    assert x.var(correction=0).item() == 0.0 and x.var().dtype == dt


def test_float32_var_matches_float64_reference():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((5, 7)) * 1e3 + 1e4).astype(np.float32)
    got = torch.tensor(a).var(1, keepdim=True).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64).var(1, ddof=1, keepdims=True), rtol=1e-6)


# -- valid programs that used to crash ------------------------------------------------------------------
@pytest.mark.parametrize("index", [
    lambda: [0, 2, 2],
    lambda: torch.tensor([0, 2, 2]),
    lambda: torch.tensor([True, False, True]),
    lambda: (slice(None), torch.tensor([1, 1])),
])
def test_double_backward_through_advanced_indexing(index):
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    idx = index()
    assert torch.autograd.gradgradcheck(lambda t: t[idx] ** 3, (x,))


def test_double_backward_through_an_index_matches_hand_values():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = torch.autograd.grad((x[[0, 2, 2]] ** 2).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [2.0, 0.0, 12.0])
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 4.0])


@pytest.mark.parametrize("dt", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.bool])
def test_integer_sum_and_prod_are_int64(dt):
    x = torch.tensor([1, 1, 1] if dt is torch.bool else [100, 3, 1], dtype=dt)
    for r in (x.sum(), x.prod(), x.sum(0, keepdim=True)):
        assert r.dtype == torch.int64
        repr(r)
        assert (r + 1).dtype == torch.int64
    if dt is torch.uint8:
        assert torch.tensor([200, 100], dtype=dt).sum().item() == 300
        assert torch.tensor([200, 100], dtype=dt).prod().item() == 20000


def test_cat_and_stack_promote_like_operands():
    i, f = torch.tensor([1, 2]), torch.tensor([1.5, 2.5])
    assert torch.cat([i, f]).dtype == torch.float32
    assert torch.stack([i, f]).dtype == torch.float32
    assert torch.cat([f.half(), i.to(torch.uint8)]).dtype == torch.float16
    assert torch.cat([torch.tensor([True]), i]).dtype == torch.int64
    assert torch.cat([f.double(), f]).dtype == torch.float64
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.cat([x, i])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_softmax_and_logsumexp_over_an_empty_dim(no_warnings):
    x = torch.zeros(3, 0, requires_grad=True)
    assert torch.softmax(x, 1).shape == (3, 0)
    assert torch.log_softmax(x, 1).shape == (3, 0)
    lse = torch.logsumexp(x, 1)
    assert lse.tolist() == [float("-inf")] * 3  # PyTorch 2.13
    (torch.softmax(x, 1).sum() + torch.log_softmax(x, 1).sum()).backward()
    assert x.grad.shape == (3, 0)
    assert torch.softmax(torch.zeros(0, 3), 1).shape == (0, 3)


def test_var_of_an_empty_dim_and_its_backward(no_warnings):
    x = torch.zeros(0, 3, requires_grad=True)
    v = x.var(0)
    assert all(math.isnan(a) for a in v.tolist())  # PyTorch 2.13: nan
    v.sum().backward()
    assert x.grad.shape == (0, 3)
    assert math.isnan(torch.zeros(0).mean().item())
    y = torch.tensor([2.0], requires_grad=True)
    y.var().backward()
    assert math.isnan(y.grad.item())  # PyTorch 2.13: one element, no degrees of freedom


# -- error types and messages as PyTorch's ---------------------------------------------------------------
def test_clamp_takes_tensor_bounds_with_their_gradients():
    x = torch.tensor([1.0, 5.0, 2.0], requires_grad=True)
    lo = torch.tensor([2.0, 2.0, 2.0], requires_grad=True)
    hi = torch.tensor([3.0, 3.0, 3.0], requires_grad=True)
    r = torch.clamp(x, lo, hi)
    assert r.tolist() == [2.0, 3.0, 2.0] and r.grad_fn.name() == "ClampBackward0"
    r.sum().backward()
    assert x.grad.tolist() == [0, 0, 1] and lo.grad.tolist() == [1, 0, 0] and hi.grad.tolist() == [0, 1, 0]
    # PyTorch 2.13: max wins where min > max; an int tensor clamped to float bounds is float32
    assert torch.clamp(torch.tensor([1.0, 5.0]), torch.tensor([4.0, 4.0]), torch.tensor([3.0, 3.0])).tolist() == [3, 3]
    assert torch.clamp(torch.tensor([1, 5]), torch.tensor([2.0, 2.0])).dtype == torch.float32
    assert torch.tensor([1.0, 5.0]).clamp(min=torch.tensor(2.0), max=4).tolist() == [2, 4]
    assert torch.tensor([1.0, 5.0]).clamp(max=torch.tensor([[0.0], [9.0]])).shape == (2, 2)


def test_integer_to_a_negative_integer_power_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        torch.tensor([2, 3]) ** -1
    assert (torch.tensor([2]) ** -1.0).tolist() == [0.5]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        torch.tensor([2], dtype=torch.uint8) ** -1
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        torch.tensor([3], dtype=torch.int8) ** 1000
    assert (torch.tensor([3], dtype=torch.int8) ** 3).tolist() == [27]
    # PyTorch 2.13: a negative exponent inside a tensor gives the integer part of a**b
    assert (torch.tensor([2, 3, 1, -1]) ** torch.tensor([1, -1, -2, -3])).tolist() == [2, 0, 1, -1]
    assert (2 ** torch.tensor([-1, 2])).tolist() == [0, 4]


@pytest.mark.parametrize("compute, error, message", [
    (lambda: torch.zeros(0, 3).amax(), RuntimeError, r"amax\(\): Expected reduction dim to be specified for "
                                                      r"input.numel\(\) == 0"),
    (lambda: torch.zeros(0, 3).amin(0), IndexError, r"amin\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda: torch.zeros(0, 3).max(), RuntimeError, r"max\(\): Expected reduction dim to be specified"),
    (lambda: torch.zeros(3, 0).max(1), IndexError, r"Expected reduction dim 1 to have non-zero size"),
    (lambda: torch.zeros(0, 3).argmin(), IndexError, r"argmin\(\): Expected reduction dim to be specified"),
    (lambda: torch.tensor([1, 2]).var(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: torch.tensor([1, 2]).std(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda: torch.tensor([1, 2]).softmax(0), NotImplementedError, "not implemented for 'Long'"),
    (lambda: torch.tensor([1, 2]).log_softmax(0), NotImplementedError, "not implemented for 'Long'"),
    (lambda: torch.ones(2, dtype=torch.float16).clamp(min=1e5), RuntimeError,
     "value cannot be converted to type c10::Half without overflow"),
    (lambda: torch.ones(2).clamp(max=-1e40), RuntimeError, "value cannot be converted to type float without overflow"),
    (lambda: torch.ones(2).mT, RuntimeError, "tensor.mT is only supported on matrices or batches of matrices. Got 1-D"),
    (lambda: torch.tensor([True]).abs(), NotImplementedError, "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda: torch.tensor([True]).relu(), RuntimeError, "Boolean inputs not supported for relu"),
    (lambda: torch.tensor([True]).argmax(), RuntimeError, r"argmax\(\): does not support bool input"),
])
def test_errors_as_pytorch(compute, error, message):
    with pytest.raises(error, match=message):
        compute()


def test_sign_of_bools_is_themselves():
    s = torch.tensor([True, False]).sign()
    assert s.dtype == torch.bool and s.tolist() == [True, False]  # PyTorch 2.13


def test_empty_extremes_along_a_non_empty_dim_and_integer_logsumexp():
    assert torch.zeros(0, 3).amax(1).shape == (0,)
    assert torch.zeros(0, 3).argmax(1).shape == (0,)
    lse = torch.logsumexp(torch.tensor([1, 2], dtype=torch.int32), 0)
    assert lse.dtype == torch.float32 and lse.item() == pytest.approx(2.3133, abs=1e-4)  # PyTorch 2.13
    assert torch.ones(2, dtype=torch.float16).clamp(max=float("inf")).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("index, message", [
    (lambda: torch.tensor([True, False]), r"The shape of the mask \[2\] at index 0 does not match the shape of the "
                                          r"indexed tensor \[1, 3\] at index 0"),
    (lambda: (slice(None), torch.tensor([True, False])), r"mask \[2\] at index 0 .* tensor \[1, 3\] at index 1"),
    (lambda: torch.tensor([[True, False]]), r"mask \[1, 2\] at index 1 .* tensor \[1, 3\] at index 1"),
])
def test_a_wrong_size_boolean_mask_is_an_index_error(index, message):
    with pytest.raises(IndexError, match=message):
        torch.tensor([[1.0, 2.0, 3.0]])[index()]


def test_transpose_of_a_0d_tensor():
    x = torch.tensor(1.0, requires_grad=True)
    y = x.transpose(0, -1)
    assert y.shape == () and y.item() == 1.0
    y.backward()
    assert x.grad.item() == 1.0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        x.transpose(0, 1)


# -- every differentiable op has a differentiable VJP ------------------------------------------------
from eager.ops import REGISTRY  # noqa: E402

_TWICE = [n for n in sorted(REGISTRY) if REGISTRY[n].vjp is not None and REGISTRY[n].differentiable_order > 0
          and n not in ("to_device", "to_dtype", "sign")]  # a device move; a cast; a constant gradient


@pytest.mark.parametrize("name", _TWICE)
def test_second_order_of_every_op_matches_finite_differences(name):
    """The registry tests check second order for elementwise ops; shape, index, reduction
    and linalg ops are used inside VJPs too, so a double backward reaches them (advanced
    indexing used to raise IndexError there, prod gave zero)."""
    op = REGISTRY[name]
    for arrays, attrs in op.samples(np.random.default_rng(0)):
        operands = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
        for o in operands:
            if isinstance(o, torch.Tensor) and o.is_floating_point():
                o.requires_grad_(True)
        wrt = [o for o in operands if isinstance(o, torch.Tensor) and o.requires_grad]

        def fn(*xs, _ops=operands, _attrs=attrs):
            it = iter(xs)
            args = [next(it) if (isinstance(o, torch.Tensor) and o.requires_grad) else o for o in _ops]
            out = op(*args, **_attrs)
            return tuple(o for o in out if o.is_floating_point()) if isinstance(out, tuple) else out

        assert torch.autograd.gradgradcheck(fn, tuple(wrt)), (name, attrs)


def test_gradients_of_several_outputs_of_one_node():
    x = torch.tensor(np.arange(15.0).reshape(5, 3), requires_grad=True)
    a, b = torch.split(x, [2, 3])
    (g,) = torch.autograd.grad([a, b], [x], [torch.ones(2, 3), torch.full((3, 3), 2.0)])
    np.testing.assert_array_equal(g.numpy(), [[1] * 3] * 2 + [[2] * 3] * 3)
    torch.autograd.backward([a, b], [torch.ones(2, 3), torch.full((3, 3), 2.0)])
    np.testing.assert_array_equal(x.grad.numpy(), g.numpy())


def test_python_ints_beyond_an_integer_dtype_wrap_as_in_pytorch():
    x = torch.tensor([1, 2], dtype=torch.int8)
    # PyTorch 2.13 casts the number to int8 first (1000 -> -24), for arithmetic and comparisons
    assert (x + 1000).tolist() == [-23, -22] and (x + 1000).dtype == torch.int8
    assert (x * 1000).tolist() == [-24, -48]
    assert (x < 1000).tolist() == [False, False]
    assert (torch.tensor([1], dtype=torch.uint8) + (-1)).tolist() == [0]
    assert (x.float() + 1000).tolist() == [1001.0, 1002.0]
    with pytest.raises(OverflowError):
        x + 2 ** 70


def test_a_numpy_without_the_error_state_variable_falls_back_to_errstate():
    """NumPy before 2.0 has no error-state context variable: eager uses np.errstate then."""
    import subprocess
    import sys

    code = (
        "import numpy._core.umath as u\n"
        "del u._extobj_contextvar\n"
        "import eager, eager._fpstate as f\n"
        "assert type(f.FP_STATE).__name__ == '_ErrstateVar'\n"
        "assert eager.log(eager.tensor([0.0])).item() == float('-inf')\n"
        "assert (eager.tensor([1.0, 2.0], dtype=eager.float16) / 100000)[0].item() > 0\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
