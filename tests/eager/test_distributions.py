"""eager.distributions: formulas against PyTorch (where installed), gradients against finite
differences, the checks PyTorch makes, and a reparameterized loss compiled by static."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import static
from eager.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence

RNG = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def test_normal_log_prob_entropy_cdf_and_kl_against_formulas():
    loc, scale, v = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3), RNG.standard_normal((2, 3))
    d = Normal(eager.tensor(loc), eager.tensor(scale))
    np.testing.assert_allclose(_np(d.log_prob(eager.tensor(v))),
                               -(v - loc) ** 2 / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi), rtol=1e-12)
    np.testing.assert_allclose(_np(d.entropy()), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale), rtol=1e-12)
    q = Normal(eager.tensor(loc[::-1].copy()), eager.tensor(scale[::-1].copy()))
    kl = np.log(scale[::-1] / scale) + (scale ** 2 + (loc - loc[::-1]) ** 2) / (2 * scale[::-1] ** 2) - 0.5
    np.testing.assert_allclose(_np(kl_divergence(d, q)), kl, rtol=1e-10)


def test_rsample_differentiates_and_sample_does_not():
    loc, scale = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3)

    def loss(lo, sc, seed=3):
        eager.manual_seed(seed)
        return (Normal(lo, sc).rsample((4,)) ** 2).sum()

    tl, ts = eager.tensor(loc, requires_grad=True), eager.tensor(scale, requires_grad=True)
    loss(tl, ts).backward()
    as_float = lambda lo, sc: float(loss(eager.tensor(lo), eager.tensor(sc)))  # noqa: E731
    np.testing.assert_allclose(_np(tl.grad), central_difference_grad(lambda x: as_float(x, scale), loc), rtol=1e-6)
    np.testing.assert_allclose(_np(ts.grad), central_difference_grad(lambda x: as_float(loc, x), scale), rtol=1e-6)
    assert not Normal(tl, ts).sample((4,)).requires_grad
    assert tuple(Normal(tl, ts).sample((5, 2)).shape) == (5, 2, 3)


def test_categorical_and_bernoulli_against_formulas():
    logits = RNG.standard_normal((2, 4))
    d = Categorical(logits=eager.tensor(logits))
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    value = np.array([[3, 0], [1, 2]])
    np.testing.assert_allclose(_np(d.log_prob(eager.tensor(value))), np.take_along_axis(log_p, value.T, 1).T,
                               rtol=1e-12)
    np.testing.assert_allclose(_np(d.entropy()), -(np.exp(log_p) * log_p).sum(-1), rtol=1e-12)
    draws = d.sample((1000,)).numpy()
    assert draws.shape == (1000, 2) and draws.min() >= 0 and draws.max() <= 3
    p = RNG.uniform(0.1, 0.9, 3)
    b = Bernoulli(probs=eager.tensor(p))
    x = np.array([1.0, 0.0, 1.0])
    np.testing.assert_allclose(_np(b.log_prob(eager.tensor(x))), x * np.log(p) + (1 - x) * np.log1p(-p), rtol=1e-9)
    np.testing.assert_allclose(_np(b.entropy()), -(p * np.log(p) + (1 - p) * np.log1p(-p)), rtol=1e-9)
    assert set(np.unique(b.sample((200,)).numpy())) <= {0.0, 1.0}


def test_kl_is_inf_where_q_cannot_draw_what_p_can():
    p, q = Categorical(probs=eager.tensor([0.5, 0.5, 0.0])), Categorical(probs=eager.tensor([1.0, 0.0, 0.0]))
    assert kl_divergence(p, q).item() == np.inf
    assert kl_divergence(q, p).item() == pytest.approx(np.log(2.0))
    u, w = Uniform(0.0, 2.0), Uniform(0.5, 3.0)
    assert kl_divergence(u, w).item() == np.inf
    assert kl_divergence(w, Uniform(0.0, 4.0)).item() == pytest.approx(np.log(4.0 / 2.5))


@pytest.mark.parametrize("make, message", [
    (lambda: Normal(0.0, -1.0), "Expected parameter scale"),
    (lambda: Bernoulli(probs=eager.tensor(1.5)), "Expected parameter probs"),
    (lambda: Uniform(2.0, 1.0), "Expected parameter low"),
    (lambda: Categorical(probs=eager.tensor([0.5, -0.1])), "Expected parameter probs"),
    (lambda: Bernoulli(), "Either `probs` or `logits`"),
    (lambda: Categorical(probs=eager.ones(2), logits=eager.ones(2)), "Either `probs` or `logits`"),
    (lambda: Uniform(0.0, 1.0).log_prob(eager.tensor(1.5)), "within the support"),
    (lambda: Categorical(logits=eager.zeros(3)).log_prob(eager.tensor(3)), "within the support"),
    (lambda: Bernoulli(probs=eager.tensor(0.3)).log_prob(eager.tensor(0.5)), "within the support"),
])
def test_bad_parameters_and_values_raise_as_in_pytorch(make, message):
    with pytest.raises(ValueError, match=message):
        make()
    Normal(0.0, -1.0, validate_args=False)  # the checks can be turned off, as in PyTorch


def test_a_reparameterized_loss_compiles_to_eagers_numbers():
    """A VAE-style term: the compiled function draws the numbers eager draws for the seed."""
    mu, log_sigma = RNG.standard_normal(5), RNG.standard_normal(5) * 0.1

    def loss(m, s):
        q = Normal(m, eager.exp(s))
        z = q.rsample((3,))
        return (z ** 2).mean() + kl_divergence(q, Normal(eager.zeros(5), eager.ones(5))).sum()

    eager.manual_seed(7)
    value, grads = static.value_and_grad(loss, argnums=(0, 1))(mu, log_sigma)
    eager.manual_seed(7)
    tm, ts = eager.tensor(mu, requires_grad=True), eager.tensor(log_sigma, requires_grad=True)
    expected = loss(tm, ts)
    expected.backward()
    np.testing.assert_allclose(value, expected.item(), rtol=1e-10)
    np.testing.assert_allclose(grads[0], _np(tm.grad), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grads[1], _np(ts.grad), rtol=1e-9, atol=1e-12)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    loc, scale, v = RNG.standard_normal(3), RNG.uniform(0.5, 2.0, 3), RNG.standard_normal((2, 3))
    logits, probs = RNG.standard_normal((2, 4)), RNG.uniform(0.0, 1.0, (2, 4))
    pairs = [
        (Normal(eager.tensor(loc), eager.tensor(scale)), td.Normal(torch.tensor(loc), torch.tensor(scale)), v),
        (Categorical(logits=eager.tensor(logits)), td.Categorical(logits=torch.tensor(logits)),
         np.array([[0, 3], [1, 2]])),
        (Categorical(probs=eager.tensor(probs)), td.Categorical(probs=torch.tensor(probs)), np.array([2, 0])),
        (Bernoulli(logits=eager.tensor(loc)), td.Bernoulli(logits=torch.tensor(loc)), np.array([1.0, 0.0, 1.0])),
        (Uniform(eager.tensor(np.array([0.0, 1.0])), eager.tensor(np.array([2.0, 3.0]))),
         td.Uniform(torch.tensor([0.0, 1.0], dtype=torch.float64), torch.tensor([2.0, 3.0], dtype=torch.float64)),
         np.array([1.0, 2.5])),
    ]
    for e, t, value in pairs:
        np.testing.assert_allclose(_np(e.log_prob(eager.tensor(value))), t.log_prob(torch.tensor(value)).numpy(),
                                   rtol=1e-10)
        np.testing.assert_allclose(_np(e.entropy()), t.entropy().numpy(), rtol=1e-10)
        np.testing.assert_allclose(_np(e.mean), t.mean.numpy(), rtol=1e-10, equal_nan=True)
        np.testing.assert_allclose(_np(e.variance), t.variance.numpy(), rtol=1e-10, equal_nan=True)
        assert tuple(e.sample((6,)).shape) == tuple(t.sample((6,)).shape)
    for (e, t, _), (e2, t2, _) in zip(pairs, pairs[1:] + pairs[:1]):
        if type(e) is type(e2) and tuple(e.batch_shape) == tuple(e2.batch_shape):
            np.testing.assert_allclose(_np(kl_divergence(e, e2)), td.kl_divergence(t, t2).numpy(), rtol=1e-9)
