"""torch.utils.data.dataset: map-style and iterable datasets, and the ways to combine and
split them. `eager.utils.data` re-exports each name; this module is where it is defined."""
from __future__ import annotations

import bisect
import collections.abc
import math
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from ..._factories import Generator, default_generator, randperm
from ..._tensor import Tensor

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset",
           "StackDataset", "random_split"]


class Dataset(Generic[T]):
    """A map-style dataset: `__getitem__(i)` and (usually) `__len__`."""

    def __getitem__(self, index: Any) -> T:  # an int; some datasets take a list of them too (Subset passes it on)
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T]):
    """A dataset read by iterating it (`__iter__`), e.g. a stream."""

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


def _length(obj: object) -> int:
    """len() of a dataset or sampler whose type does not promise one (PyTorch's Dataset has no
    __len__, a stream or a plain iterable may have none): the TypeError len() raises, else the length."""
    if not isinstance(obj, collections.abc.Sized):
        raise TypeError(f"object of type '{type(obj).__name__}' has no len()")
    return len(obj)


class TensorDataset(Dataset):
    """Samples are tuples of the tensors' rows: `TensorDataset(X, y)[i] == (X[i], y[i])`."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise AssertionError(f"Size mismatch between tensors: first dims {[t.shape[0] for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = list(np.cumsum([_length(d) for d in self.datasets]))

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][idx - int(start)]


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator: Generator = default_generator) -> list:
    """Split into non-overlapping Subsets of the given lengths (or fractions summing to 1),
    shuffled by `generator`."""
    n = _length(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):  # the remainder, one each, round robin
            counts[i % len(counts)] += 1
    else:
        counts = []
        for k in lengths:
            if isinstance(k, float):
                raise TypeError(f"random_split: lengths must be ints, or fractions that sum to 1; got {list(lengths)}")
            counts.append(operator.index(k))
    if sum(counts) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for k in counts:
        out.append(Subset(dataset, order[start:start + k]))
        start += k
    return out




class ChainDataset(IterableDataset):
    """Iterable datasets one after another (chained lazily)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(_length(d) for d in self.datasets)


class StackDataset(Dataset):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of the datasets'
    samples at one index; every dataset must have the same length."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                             "but both types are given.")
        parts: list[Dataset] = list(args) or list(kwargs.values())
        if not parts:
            raise ValueError("At least one dataset should be passed")
        self._length = _length(parts[0])
        if any(_length(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: Any = args if args else kwargs

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length
