"""F.gumbel_softmax and utils.data.WeightedRandomSampler."""
import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager.utils.data import DataLoader, TensorDataset, WeightedRandomSampler


def test_gumbel_softmax_soft_and_hard():
    eager.manual_seed(0)
    logits = eager.randn(64, 5, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0, rtol=1e-6)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    (hard * eager.arange(5.0)).sum().backward()  # straight through: the soft sample's gradient
    assert np.abs(logits.grad.numpy()).sum() > 0


def test_gumbel_softmax_samples_follow_the_softmax_of_the_logits():
    eager.manual_seed(1)
    logits = eager.tensor([[1.0, 0.0, -1.0]]).expand(20000, 3)
    picks = F.gumbel_softmax(logits, hard=True).numpy().argmax(-1)
    freq = np.bincount(picks, minlength=3) / picks.size
    np.testing.assert_allclose(freq, np.exp([1.0, 0.0, -1.0]) / np.exp([1.0, 0.0, -1.0]).sum(), atol=0.015)


def test_gumbel_softmax_compiles_to_eagers_draws():
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)

    def f(v):
        return (F.gumbel_softmax(v, 0.5, hard=True) * eager.arange(5.0)).sum()

    eager.manual_seed(3)
    value, grad = static.value_and_grad(f)(x)
    eager.manual_seed(3)
    t = eager.tensor(x, requires_grad=True)
    expected = f(t)
    expected.backward()
    assert value == pytest.approx(expected.item())
    np.testing.assert_allclose(grad, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_weighted_random_sampler():
    sampler = WeightedRandomSampler([0.1, 0.0, 0.9], 20000, generator=eager.Generator().manual_seed(0))
    counts = np.bincount(np.array(list(sampler)), minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.1, 0.0, 0.9], atol=0.01)
    assert len(sampler) == 20000
    assert sorted(WeightedRandomSampler([1, 1, 1, 5], 4, replacement=False)) == [0, 1, 2, 3]
    loader = DataLoader(TensorDataset(eager.arange(4.0)), batch_size=2, sampler=WeightedRandomSampler([0, 0, 1, 1], 4))
    assert all(v in (2.0, 3.0) for batch in loader for v in batch[0].tolist())
    again = [list(WeightedRandomSampler([1, 2, 3], 5, generator=eager.Generator().manual_seed(7))) for _ in range(2)]
    assert again[0] == again[1]  # a seeded generator repeats
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)
