"""cdist and nn.utils.rnn.pad_sequence: values against NumPy references, gradients against
finite differences, both modes against each other, and PyTorch where it is installed."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import static
from eager.nn.utils.rnn import pad_sequence

RNG = np.random.default_rng(0)
MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _reference(a, b, p):
    d = a[..., :, None, :] - b[..., None, :, :]
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == np.inf:
        return np.abs(d).max(-1)
    return (np.abs(d) ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0, 1, 1.5, 2, 3, np.inf])
@pytest.mark.parametrize("rows", [(4, 5), (30, 3)])  # the second takes the matmul way for p = 2
def test_cdist_values(p, rows):
    a, b = RNG.standard_normal((2, rows[0], 3)), RNG.standard_normal((2, rows[1], 3))
    got = eager.cdist(eager.tensor(a), eager.tensor(b), p).numpy()
    np.testing.assert_allclose(got, _reference(a, b, p), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, np.inf])
@pytest.mark.parametrize("mode", MODES)
def test_cdist_gradients_match_finite_differences(p, mode):
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((4, 2))
    w = RNG.standard_normal((3, 4))

    def loss(x, y):
        return float((eager.cdist(eager.tensor(x), eager.tensor(y), p, mode) * eager.tensor(w)).sum())

    ta, tb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
    (eager.cdist(ta, tb, p, mode) * eager.tensor(w)).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), central_difference_grad(lambda x: loss(x, b), a), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(tb.grad.numpy(), central_difference_grad(lambda y: loss(a, y), b), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_cdist_gradient_is_zero_where_two_points_coincide(mode):
    a = eager.tensor([[1.0, 2.0], [0.0, 0.0]], requires_grad=True)
    b = eager.tensor([[1.0, 2.0]], requires_grad=True)
    eager.cdist(a, b, compute_mode=mode).sum().backward()
    assert np.isfinite(a.grad.numpy()).all() and np.isfinite(b.grad.numpy()).all()
    np.testing.assert_array_equal(a.grad.numpy()[0], [0.0, 0.0])


def test_cdist_compiles_to_the_same_numbers_and_gradients():
    a, b = RNG.standard_normal((30, 4)), RNG.standard_normal((6, 4))

    def f(x, y):
        return (eager.cdist(x, y) ** 2).sum() + eager.cdist(x[:5], y, 1).sum()

    value, grads = static.value_and_grad(f, argnums=(0, 1))(a, b)
    ta, tb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
    expected = f(ta, tb)
    expected.backward()
    np.testing.assert_allclose(value, expected.item(), rtol=1e-10)
    np.testing.assert_allclose(grads[0], ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads[1], tb.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"p": -1.0}, RuntimeError, "non-negative p"),
    ({"compute_mode": "fast"}, ValueError, "not a valid value for compute_mode"),
])
def test_cdist_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        eager.cdist(eager.ones(2, 3), eager.ones(4, 3), **kwargs)


def test_cdist_bad_shapes():
    with pytest.raises(RuntimeError, match="same number of columns. X1: 3 X2: 2"):
        eager.cdist(eager.ones(2, 3), eager.ones(4, 2))
    with pytest.raises(RuntimeError, match="at least 2D"):
        eager.cdist(eager.ones(3), eager.ones(4, 3))


def test_cdist_matches_pytorch():
    torch = pytest.importorskip("torch")
    a, b = RNG.standard_normal((2, 30, 3)), RNG.standard_normal((2, 7, 3))
    b[0, 0] = a[0, 1]
    for p in (1.0, 2.0, 3.0, float("inf")):
        for mode in MODES:
            ea, eb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
            ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
            e, t = eager.cdist(ea, eb, p, mode), torch.cdist(ta, tb, p, mode)
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-7, atol=1e-9)
            e.sum().backward()
            t.sum().backward()
            np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_values_and_gradients(batch_first, side):
    arrays = [RNG.standard_normal((n, 2)) for n in (2, 5, 3)]
    seqs = [eager.tensor(a, requires_grad=True) for a in arrays]
    out = pad_sequence(seqs, batch_first=batch_first, padding_value=-7.0, padding_side=side)
    expected = np.full((3, 5, 2), -7.0)
    for k, a in enumerate(arrays):
        if side == "right":
            expected[k, :len(a)] = a
        else:
            expected[k, 5 - len(a):] = a
    np.testing.assert_array_equal(out.detach().numpy(), expected if batch_first else expected.transpose(1, 0, 2))
    weights = RNG.standard_normal(out.shape)
    (out * eager.tensor(weights)).sum().backward()
    w = weights if batch_first else weights.transpose(1, 0, 2)
    for k, (a, s) in enumerate(zip(arrays, seqs)):
        rows = slice(0, len(a)) if side == "right" else slice(5 - len(a), 5)
        np.testing.assert_array_equal(s.grad.numpy(), w[k, rows])


def test_pad_sequence_refuses_what_cannot_be_stacked():
    with pytest.raises(RuntimeError, match="trailing dimensions and the dtype must agree"):
        pad_sequence([eager.ones(2, 3), eager.ones(2, 4)])
    with pytest.raises(RuntimeError, match="empty list"):
        pad_sequence([])
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right'"):
        pad_sequence([eager.ones(2)], padding_side="middle")
    with pytest.raises(TypeError, match="at least one dimension"):
        pad_sequence([eager.tensor(1.0)])


def test_pad_sequence_matches_pytorch():
    torch = pytest.importorskip("torch")
    arrays = [RNG.standard_normal((n, 3)) for n in (4, 1, 3)]
    for batch_first in (False, True):
        e = pad_sequence([eager.tensor(a) for a in arrays], batch_first=batch_first, padding_value=0.5)
        t = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], batch_first=batch_first,
                                            padding_value=0.5)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
