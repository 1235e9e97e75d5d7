"""torch.utils.data.sampler: the orders in which a DataLoader reads a map-style dataset.
`eager.utils.data` re-exports each name; this module is where it is defined."""
from __future__ import annotations

import collections.abc
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from ..._factories import Generator, default_generator, multinomial, randperm, tensor
from ..._tensor import Tensor
from .dataset import Dataset, _length

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler(Generic[T_co]):
    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    def __init__(self, data_source: collections.abc.Sized | Dataset) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(_length(self.data_source)))

    def __len__(self) -> int:
        return _length(self.data_source)


def _epoch_generator(generator: Generator | None) -> Generator:
    """PyTorch seeds a fresh generator from the global one each epoch when none is given."""
    if generator is not None:
        return generator
    seed = int(default_generator._np.integers(0, 2 ** 63 - 1))
    return Generator().manual_seed(seed)


class RandomSampler(Sampler[int]):
    """A fresh permutation each epoch (or num_samples draws with replacement).

    Indices are drawn as they are consumed: with replacement in chunks of 32 (as PyTorch
    draws them), without it one permutation of the data at a time, so `num_samples=10**10`
    costs no memory up front."""

    def __init__(self, data_source: collections.abc.Sized | Dataset, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples

    @property
    def num_samples(self) -> int:
        return _length(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = _length(self.data_source)
        g = _epoch_generator(self.generator)
        left = self.num_samples
        if self.replacement:
            while left > 0:
                chunk = min(32, left)
                yield from g._np.integers(0, n, chunk).tolist()
                left -= chunk
            return
        while left > 0:
            perm = randperm(n, generator=g).tolist()
            yield from perm[:left]
            left -= len(perm[:left])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        g = _epoch_generator(self.generator)
        return iter([self.indices[i] for i in randperm(len(self.indices), generator=g).tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """num_samples indices drawn with probability proportional to weights (with replacement
    by default), from a generator seeded afresh each epoch as RandomSampler's is."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        values = weights.detach().numpy() if isinstance(weights, Tensor) else weights
        w = np.asarray(values, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = tensor(w)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        g = _epoch_generator(self.generator)
        return iter(multinomial(self.weights, self.num_samples, self.replacement, generator=g).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups a sampler's indices into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list]:
        batch: list = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = _length(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


