"""F.dropout's one-pass native path (eager/nn/_fused_dropout.py, gm_eager_uniform_dropout_*)
against the op-by-op path it replaces: the same output, gradient, node name and generator
state afterwards, bit for bit, from the same seed; gradcheck and a double backward."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck
from eager.nn import _fused_dropout
from eager.nn import functional as F
from gmnative import build as native_build
from gmnative import dropout_kernels

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


def _run(fused: bool, shape: tuple, dtype, p: float, monkeypatch, transpose: bool = False) -> tuple:
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(_fused_dropout, "dropout", lambda *args: None)
        eager.manual_seed(7)
        data = np.random.default_rng(1).standard_normal(shape).astype(dtype)
        x = eager.tensor(data.T if transpose else data, requires_grad=True)
        first = F.dropout(x, p)
        second = F.dropout(x * 2.0, p)  # a second draw: the carried half of a float32 output
        ((first * first).sum() + second.sum()).backward()
        after = eager.rand(5, dtype=x.dtype).numpy()  # the generator's state afterwards
    return first.detach().numpy(), second.detach().numpy(), x.grad.numpy(), after, first.grad_fn.name()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (5, 7), (16, 4, 32, 32), (9999,)])
def test_the_same_bits_as_the_op_path(dtype, shape, monkeypatch):
    fused = _run(True, shape, dtype, 0.3, monkeypatch)
    ops = _run(False, shape, dtype, 0.3, monkeypatch)
    for a, b in zip(fused[:4], ops[:4]):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    assert fused[4] == ops[4] == "MulBackward0"


def test_a_transposed_input_draws_in_its_logical_order(monkeypatch):
    fused = _run(True, (40, 30), np.float32, 0.5, monkeypatch, transpose=True)
    ops = _run(False, (40, 30), np.float32, 0.5, monkeypatch, transpose=True)
    for a, b in zip(fused[:4], ops[:4]):
        np.testing.assert_array_equal(a, b)


def test_the_kernel_ran_and_draws_the_comparisons_rounding():
    # p rounds up in float32 (the comparison's precision): the threshold follows it
    p = 1677722.05 / 2 ** 24
    assert dropout_kernels.threshold(p, np.dtype(np.float32)) == 1677722
    assert dropout_kernels.threshold(p, np.dtype(np.float64)) == int(np.ceil(p * 2.0 ** 53))
    g = np.random.default_rng(3)
    x = np.ones(1000, np.float32)
    found = dropout_kernels.dropout(g, x, 0.25, 1 / 0.75, True)
    assert found is not None
    y, s = found
    u = np.random.default_rng(3).random(1000, dtype=np.float32)
    np.testing.assert_array_equal(s, (u >= np.float32(0.25)) * np.float32(1 / 0.75))
    np.testing.assert_array_equal(y, s)
    assert 650 < np.count_nonzero(y) < 850


def test_non_finite_inputs_keep_the_products_rule():
    eager.manual_seed(0)
    x = eager.tensor(np.full(64, np.inf, np.float32))
    y = F.dropout(x, 0.5).numpy()
    assert np.isnan(y).any() and np.isinf(y).any()  # inf * 0 is nan, as input * mask gives


def test_gradcheck_and_double_backward():
    x = eager.tensor(np.random.default_rng(2).standard_normal((6, 5)), requires_grad=True)

    def f(t):
        eager.manual_seed(11)  # the same mask every call
        return F.dropout(t, 0.4)

    assert gradcheck(f, (x,))
    y = f(x)
    (g,) = eager.autograd.grad((y * y).sum(), x, create_graph=True)
    (gg,) = eager.autograd.grad(g.sum(), x)
    s = (f(eager.ones(6, 5, dtype=eager.float64))).numpy()  # the mask times the scale
    np.testing.assert_allclose(gg.numpy(), 2 * s * s)


def test_eval_mode_and_no_grad_paths():
    x = eager.randn(8, 8)
    assert F.dropout(x, 0.5, training=False) is x
    with eager.no_grad():
        eager.manual_seed(1)
        y = F.dropout(x.requires_grad_(), 0.5)
    assert y.grad_fn is None and not y.requires_grad


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_masks_do_not_depend_on_the_thread_count(threads, dtype, monkeypatch):
    """Each thread jumps the generator to its first output and runs its blocks from there:
    the masks and the final state are NumPy's whatever the team (sizes past one block of
    outputs a thread, with a half carried in from an earlier float32 draw)."""
    from gmnative import kernels as eager_kernels

    k = eager_kernels.kernels()
    assert k is not None
    monkeypatch.setattr(k, "threads", lambda: threads)
    n = 3 * 8192 * 2 + 5
    mine, numpy = np.random.default_rng(5), np.random.default_rng(5)
    mine.random(3, dtype=np.float32)
    numpy.random(3, dtype=np.float32)
    x = np.random.default_rng(6).standard_normal(n).astype(dtype)
    found = dropout_kernels.dropout(mine, x, 0.2, 1 / 0.8, True)
    assert found is not None
    keep = numpy.random(n, dtype=dtype) >= dtype(0.2)
    np.testing.assert_array_equal(found[1], keep * dtype(1 / 0.8))
    np.testing.assert_array_equal(found[0], x * (keep * dtype(1 / 0.8)))
    assert mine.bit_generator.state == numpy.bit_generator.state


def test_inplace_dropout_writes_the_input_as_pytorch():
    """F.dropout(inplace=True) and nn.Dropout(inplace=True) return the input itself, written
    (p = 1: zeros); a leaf requiring grad refuses, a non-leaf records MulBackward0."""
    x = eager.randn(6, 6)
    before = x.numpy().copy()
    eager.manual_seed(4)
    y = F.dropout(x, 0.5, True, True)
    assert y is x
    kept = before != 0
    got = x.numpy()
    assert ((got == 0) | np.isclose(got, before * 2.0)).all() and (got[kept] == 0).any()
    assert eager.nn.Dropout(0.5, inplace=True)(x) is x
    z = eager.randn(3, 3)
    assert F.dropout(z, 1.0, True, True) is z and not z.numpy().any()
    leaf = eager.randn(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.dropout(leaf, 0.5, True, True)
    h = leaf * 1.0
    out = F.dropout(h, 0.5, True, True)
    assert out is h and out.grad_fn.name() == "MulBackward0"
    out.sum().backward()
    assert set(np.unique(leaf.grad.numpy())) <= {0.0, 2.0}
    assert F.dropout(leaf, 0.5, False, True) is leaf  # eval: nothing written
