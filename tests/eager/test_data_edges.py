"""DataLoader, samplers and collation at the edges PyTorch defines, against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.utils.data import DataLoader, IterableDataset, RandomSampler, TensorDataset, default_collate, get_worker_info

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("batch", [[1, 2.5], [1.5, 2], [1, 2], [True, False], [np.float32(1), np.float32(2)],
                                   [(1, 2.0), (3, 4.0)], [{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5}]])
def test_default_collate_dtypes_match_pytorch(batch):
    ours = default_collate(batch)
    theirs = torch.utils.data.default_collate(batch)

    def check(o, t):
        if isinstance(t, torch.Tensor):
            assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_array_equal(o.numpy(), t.numpy())
        elif isinstance(t, dict):
            for k in t:
                check(o[k], t[k])
        else:
            assert type(o) is type(t)
            for a, b in zip(o, t):
                check(a, b)

    check(ours, theirs)


def test_batch_size_none_returns_what_pytorch_returns():
    samples = [(1, 2.0), (3, 4.0)]
    assert list(DataLoader(samples, batch_size=None)) == list(torch.utils.data.DataLoader(samples, batch_size=None))
    ours = list(DataLoader(TensorDataset(eager.arange(3)), batch_size=None))
    assert all(type(b) is list and len(b) == 1 for b in ours)


@pytest.mark.parametrize("kwargs", [{"persistent_workers": True}, {"prefetch_factor": 2}])
def test_worker_options_without_workers_raise_value_error(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader([1, 2], **kwargs)
    with pytest.raises(ValueError) as ours:
        DataLoader([1, 2], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_worker_init_fn_and_get_worker_info_only_inside_workers():
    seen = []
    DataLoader(list(range(4)), batch_size=2, worker_init_fn=lambda w: seen.append(w))
    list(DataLoader(list(range(4)), batch_size=2, worker_init_fn=lambda w: seen.append(w)))
    assert seen == []  # num_workers=0: the main process loads, no worker starts
    assert get_worker_info() is None

    class Stream(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, 8, step))

    inits = []

    def init(worker_id):
        info = get_worker_info()
        inits.append((worker_id, info.id, info.num_workers))

    ours = [b.tolist() for b in DataLoader(Stream(), batch_size=2, num_workers=2, worker_init_fn=init)]
    # PyTorch's order (its worker processes are not started here): each worker's batches of its
    # own shard, taken from the workers in turn
    assert ours == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert inits == [(0, 0, 2), (1, 1, 2)]
    assert get_worker_info() is None


def test_random_sampler_with_replacement_draws_lazily():
    s = RandomSampler(range(10), replacement=True, num_samples=10 ** 10)
    assert len(s) == 10 ** 10
    it = iter(s)
    first = [next(it) for _ in range(100)]
    assert all(0 <= i < 10 for i in first)
    g = eager.Generator().manual_seed(0)
    a = list(RandomSampler(range(7), generator=g))
    assert sorted(a) == list(range(7))
    b = list(RandomSampler(range(5), num_samples=12, generator=eager.Generator().manual_seed(1)))
    assert len(b) == 12 and sorted(b[:5]) == list(range(5)) and sorted(b[5:10]) == list(range(5))
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(3), num_samples=0)
