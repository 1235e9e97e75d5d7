"""The dispatch fast path (plain float32/float64 NumPy tensors and Python numbers, one or two
operands) and the engine's direct path must give what the general paths give: these cases
sit at the edges of what the fast paths take or refuse, and each is checked against PyTorch
or finite differences."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from autograd_functions import FailingBackward

import eager
from eager import _dispatch
from eager.autograd import set_detect_anomaly

torch = pytest.importorskip("torch")


def _fd(f, x0: float, h: float = 1e-6) -> float:
    return (f(x0 + h) - f(x0 - h)) / (2 * h)


def _chain(lib, x, steps=5):
    for _ in range(steps):
        x = x * 1.0001 + 0.5 * lib.sin(x)
    return x


def test_the_w4_chain_gradient_matches_pytorch_and_finite_differences():
    x = eager.tensor(0.5, dtype=eager.float64, requires_grad=True)
    (g,) = eager.autograd.grad(_chain(eager, x), [x])
    xt = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(_chain(torch, xt), [xt])
    assert g.dtype == eager.float64 and g.shape == ()
    assert g.item() == pytest.approx(gt.item(), rel=1e-12)
    assert g.item() == pytest.approx(_fd(lambda v: float(_chain(np, np.float64(v))), 0.5), rel=1e-6)


def test_grad_runs_only_the_nodes_that_lead_to_the_inputs_asked_for():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    w = eager.tensor([3.0, 4.0], requires_grad=True)
    y = (x * x + FailingBackward.apply(w).sin()).sum()  # FailingBackward's backward raises: it must not run
    (gx,) = eager.autograd.grad(y, [x])
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    assert w.grad is None and x.grad is None


def test_grad_with_respect_to_a_non_leaf_and_a_leaf_matches_pytorch():
    def run(lib, t):
        x = t([0.3, -0.7], requires_grad=True)
        h = x.sin() * 2.0
        y = (h * h + x).sum()
        return lib.autograd.grad(y, [h, x])

    ge = run(eager, eager.tensor)
    gt = run(torch, torch.tensor)
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-6)


def test_backward_with_inputs_accumulates_only_into_those():
    x = eager.tensor(2.0, requires_grad=True)
    w = eager.tensor(3.0, requires_grad=True)
    (x * w).backward(inputs=[x])
    assert x.grad.item() == 3.0 and w.grad is None


def test_hooks_and_retain_grad_on_fast_path_results_run():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2.0)
    (h * h).sum().backward()
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(h.grad.numpy(), [12.0, 24.0])  # retain_grad sees the hook's result
    np.testing.assert_allclose(x.grad.numpy(), [36.0, 72.0])


def test_node_pre_hook_replaces_the_gradient():
    x = eager.tensor(1.5, requires_grad=True)
    y = x.sin()
    y.grad_fn.register_prehook(lambda grads: (grads[0] * 0.0 + 1.0,))
    (y * 5.0).backward()
    assert x.grad.item() == pytest.approx(np.cos(1.5))


def test_anomaly_mode_in_backward_reports_a_nan_from_a_fast_path_node():
    x = eager.tensor(0.0, requires_grad=True)
    y = x.sqrt()  # its gradient at 0 is inf; times 0 below: nan
    with set_detect_anomaly(True), pytest.raises(RuntimeError, match="returned nan values"):
        (y * 0.0).backward()


def test_mixed_dtypes_promote_as_pytorch_does():
    a = eager.tensor([1.0, 2.0], dtype=eager.float32, requires_grad=True)
    b = eager.tensor([0.5, 0.25], dtype=eager.float64, requires_grad=True)
    y = a * b
    assert y.dtype == eager.float64
    y.sum().backward()
    assert a.grad.dtype == eager.float32 and b.grad.dtype == eager.float64
    np.testing.assert_allclose(a.grad.numpy(), [0.5, 0.25])


def test_a_tensor_subclass_still_records_its_gradient():
    p = eager.nn.Parameter(eager.tensor([1.0, -2.0]))
    y = (p * p).sum()
    assert y.grad_fn is not None and y.grad_fn.name() == "SumBackward0"
    y.backward()
    np.testing.assert_allclose(p.grad.numpy(), [2.0, -4.0])


def test_a_dispatch_mode_still_sees_ops_on_plain_float_tensors():
    seen = []

    def mode(op, operands, attrs):
        seen.append(op.name)
        return NotImplemented

    x = eager.tensor([1.0, 2.0])
    with _dispatch.dispatch_mode(mode):
        (x * 2.0 + x).sin()
    assert seen == ["mul", "add", "sin"]


def test_float16_times_a_large_scalar_is_computed_in_float32():
    x = eager.tensor([1.0, 2.0], dtype=eager.float16)
    y = x / 100000
    yt = torch.tensor([1.0, 2.0], dtype=torch.float16) / 100000
    assert y.dtype == eager.float16
    np.testing.assert_array_equal(y.numpy(), yt.numpy())


def test_a_view_op_keeps_sharing_the_version_counter():
    x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = x.t()
    assert v._vc is x._vc


def test_no_warnings_and_the_users_error_state_is_left_alone():
    before = np.geterr()
    x = eager.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = (x.log() + 1.0 / x).sum()  # log(0), 1/0
        y.backward()  # 1/x**2 at 0
    assert np.geterr() == before
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        np.log(np.zeros(1))  # the user's own state still rules their NumPy calls


def test_a_shape_mismatch_on_the_fast_path_names_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"add.*\(3,\).*\(4,\)|add.*3.*4"):
        eager.ones(3) + eager.ones(4)


def test_a_comparison_of_float_tensors_gives_bool_that_requires_no_grad():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    m = x > 1.5
    assert m.dtype == eager.bool and not m.requires_grad and m.grad_fn is None


def test_no_grad_records_nothing_on_the_fast_path():
    x = eager.tensor(1.0, requires_grad=True)
    with eager.no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.grad_fn is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_float_operands_give_numpys_weak_scalar_results_bit_for_bit(dtype):
    """The fast path hands recurring Python floats to ufuncs as cached 0-d arrays: the values
    must be exactly those of the Python float (NumPy's weak-scalar rule), signed zeros,
    NaN, infinities, out-of-range and subnormal numbers included, and repeated calls too."""
    rng = np.random.default_rng(0)
    base = np.concatenate([rng.standard_normal(50) * 10.0 ** rng.integers(-40, 37, 50),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38]]).astype(dtype)
    scalars = [1.0001, 0.5, -0.0, 0.0, float("nan"), float("inf"), -1e300, 1e-320, 3.4e38, 2.0 ** -149]
    x = eager.tensor(base)
    with np.errstate(all="ignore"):
        for _ in range(2):  # the second round reads the cached arrays
            for s in scalars:
                for got, want in ((x + s, base + s), (s - x, s - base), (x * s, base * s),
                                  (s * x, s * base), (x / s, base / s), (s / x, s / base)):
                    assert got.dtype == eager.tensor(base).dtype
                    np.testing.assert_array_equal(got.numpy(), want)
                    assert np.array_equal(np.signbit(got.numpy()), np.signbit(want))


def test_the_scalar_cache_stays_small_and_its_arrays_read_only():
    x = eager.tensor([1.0])
    for k in range(1000):
        x * (1.0 + k / 7.0)
    assert len(_dispatch._F32_SCALARS) <= _dispatch._SCALAR_CACHE_SIZE
    a = _dispatch._scalar_array(1.25, np.dtype(np.float32))
    assert a.dtype == np.float32 and a.shape == () and not a.flags.writeable
