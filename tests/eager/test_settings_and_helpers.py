"""The process-wide settings scripts make in their first lines (threads, determinism, print
options, backends flags, dtype limits), eager.testing.assert_close and eager.linalg's norms."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
from eager._repr import PRINT_OPTIONS, PrintOptions


@pytest.fixture
def restore_settings():
    threads, printing = eager.get_num_threads(), PrintOptions(**vars(PRINT_OPTIONS))
    deterministic = (eager.are_deterministic_algorithms_enabled(),
                     eager.is_deterministic_algorithms_warn_only_enabled())
    yield
    eager.set_num_threads(threads)
    for name, value in vars(printing).items():
        setattr(PRINT_OPTIONS, name, value)
    eager.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])


def test_threads_reach_the_native_kernels_setting(restore_settings):
    from codegen import runtime

    eager.set_num_threads(1)
    assert eager.get_num_threads() == 1 == runtime.CONFIG.threads
    x = eager.randn(300, 200)  # a layer_norm big enough for the native kernel, on one thread now
    np.testing.assert_allclose(eager.nn.functional.layer_norm(x, (200,)).numpy().mean(1), 0.0, atol=1e-5)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(RuntimeError, match="positive integer"):
            eager.set_num_threads(bad)


def test_determinism_flags_are_recorded(restore_settings):
    eager.use_deterministic_algorithms(True, warn_only=True)
    assert eager.are_deterministic_algorithms_enabled() and eager.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(TypeError, match="expects a bool"):
        eager.use_deterministic_algorithms("yes")


def test_print_options(restore_settings):
    t = eager.tensor([1.23456, 2.0])
    eager.set_printoptions(precision=2)
    assert repr(t) == "tensor([1.23, 2.00])"
    eager.set_printoptions(sci_mode=True)
    assert repr(t) == "tensor([1.23e+00, 2.00e+00])"
    eager.set_printoptions(profile="default")
    assert repr(t) == "tensor([1.2346, 2.0000])"
    eager.set_printoptions(threshold=5, edgeitems=1)
    assert repr(eager.arange(10.0)) == "tensor([0.,  ..., 9.])"  # (PyTorch's " ..." element)
    eager.set_printoptions(profile="full")
    assert "..." not in repr(eager.arange(2000.0))
    with pytest.raises(ValueError, match="profile must be one of"):
        eager.set_printoptions(profile="long")


def test_backends_flags_scripts_set():
    eager.backends.cudnn.deterministic = True
    eager.backends.cudnn.benchmark = False
    eager.backends.cuda.matmul.allow_tf32 = False
    assert eager.backends.mps.is_available() is False and eager.backends.mps.is_built() is False
    assert eager.backends.cudnn.is_available() is False


def test_dtype_limits_and_predicates_match_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("float16", "float32", "float64"):
        e, t = eager.finfo(getattr(eager, name)), torch.finfo(getattr(torch, name))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(e, field) == getattr(t, field), (name, field)
    for name in ("int8", "int16", "int32", "int64", "uint8"):
        e, t = eager.iinfo(getattr(eager, name)), torch.iinfo(getattr(torch, name))
        assert (e.bits, e.min, e.max) == (t.bits, t.min, t.max)
    assert eager.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match="not a floating point dtype"):
        eager.finfo(eager.int32)
    with pytest.raises(TypeError, match="not an integer dtype"):
        eager.iinfo(eager.float32)
    assert eager.is_floating_point(eager.ones(1)) and not eager.is_floating_point(eager.ones(1, dtype=eager.int64))
    x = eager.tensor([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(eager.sgn(x).numpy(), torch.sgn(torch.tensor(x.numpy())).numpy())


def test_assert_close():
    eager.testing.assert_close(eager.ones(3), eager.ones(3) + 1e-7)
    eager.testing.assert_close({"a": [eager.ones(2), 1.0]}, {"a": [eager.ones(2), 1.0]})
    with pytest.raises(AssertionError, match=r"Mismatched elements: 1 / 3 \(33.3%\)"):
        eager.testing.assert_close(eager.ones(3), eager.tensor([1.0, 1.1, 1.0]))
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match"):  # (PyTorch's words)
        eager.testing.assert_close(eager.ones(2), eager.ones(2, dtype=eager.float64))
    eager.testing.assert_close(eager.ones(2), eager.ones(2, dtype=eager.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="The values for attribute 'shape' do not match"):
        eager.testing.assert_close(eager.ones(2), eager.ones(3))
    nan = eager.tensor([float("nan")])
    with pytest.raises(AssertionError):
        eager.testing.assert_close(nan, nan)
    eager.testing.assert_close(nan, nan, equal_nan=True)
    eager.testing.assert_close(eager.tensor([1.0]), eager.tensor([1.5]), rtol=0.0, atol=0.5)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        eager.testing.assert_close(eager.ones(1), eager.ones(1), rtol=1e-3)


@pytest.mark.parametrize("call", [
    lambda la, x: la.norm(x), lambda la, x: la.norm(x, dim=1), lambda la, x: la.norm(x, 1, dim=0),
    lambda la, x: la.norm(x, float("inf"), dim=1, keepdim=True), lambda la, x: la.norm(x, "fro"),
    lambda la, x: la.vector_norm(x, 3), lambda la, x: la.vector_norm(x, 0.5, dim=(0, 1)),
    lambda la, x: la.matrix_norm(x),
])
def test_linalg_norms_against_pytorch_and_finite_differences(call):
    a = np.random.default_rng(0).standard_normal((3, 4))
    x = eager.tensor(a, requires_grad=True)
    out = call(eager.linalg, x)
    out.sum().backward()
    fd = central_difference_grad(lambda v: float(call(eager.linalg, eager.tensor(v)).sum()), a)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-7)
    try:
        import torch
    except ImportError:
        return
    np.testing.assert_allclose(out.detach().numpy(), call(torch.linalg, torch.tensor(a)).numpy(), rtol=1e-12)


def test_linalg_matrix_norms_of_every_order():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((2, 3, 4))
    for order in ("fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")):
        for dim in ((-2, -1), (0, 2), (2, 1)):
            got = eager.linalg.matrix_norm(eager.tensor(a), order, dim, True)
            want = torch.linalg.matrix_norm(torch.tensor(a), order, dim, True)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        np.testing.assert_allclose(eager.linalg.norm(eager.tensor(a[0]), order).numpy(),
                                   torch.linalg.norm(torch.tensor(a[0]), order).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        eager.linalg.matrix_norm(eager.ones(2, 2), 3)


@pytest.fixture
def flush_off():
    yield
    eager.set_flush_denormal(False)


def test_set_flush_denormal_flushes_in_numpy_and_in_the_kernels_threads(flush_off, restore_settings):
    """As torch.set_flush_denormal: subnormal operands read as zero and subnormal results
    written as zero, in the calling thread (NumPy) and in the native kernels' workers (a GELU
    large enough to run on the team); off again, subnormals are kept."""
    eager.set_num_threads(2)
    tiny64 = eager.tensor([1e-323], dtype=eager.float64)
    big = eager.full((1 << 17,), 1e-39)  # float32 subnormals, enough for the native kernel's threads
    if not eager.set_flush_denormal(True):
        pytest.skip("no native kernels here (or not x86): the mode cannot be set")
    assert (tiny64 * 1.0).item() == 0.0
    assert not np.any(eager.nn.functional.gelu(big).numpy())
    eager.set_num_threads(3)  # a larger team's new workers get the mode too
    assert not np.any(eager.nn.functional.gelu(big).numpy())
    assert eager.set_flush_denormal(False) is True
    assert (tiny64 * 1.0).item() == 1e-323
    assert np.all(eager.nn.functional.gelu(big).numpy() > 0)


def test_set_flush_denormal_takes_a_bool_only():
    for bad in (1, None, "yes"):
        with pytest.raises(RuntimeError, match="set_flush_denormal expects a bool"):
            eager.set_flush_denormal(bad)
