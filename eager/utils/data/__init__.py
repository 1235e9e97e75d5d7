"""`eager.utils.data`: datasets, samplers and the DataLoader, as torch.utils.data.

Loading runs in the calling process: `num_workers`, `pin_memory` and the worker options
are accepted (scripts pass them) and change nothing but the batches' timing."""
from __future__ import annotations

import bisect
import collections.abc
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from ..._factories import Generator, default_generator, multinomial, randperm, tensor
from ..._functional import stack
from ..._tensor import Tensor

T = TypeVar("T")

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split",
           "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler",
           "WeightedRandomSampler",
           "default_collate", "get_worker_info"]


# -- datasets --------------------------------------------------------------------------------------
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


# -- samplers --------------------------------------------------------------------------------------
class Sampler(Generic[T]):
    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[T]:
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
    """A fresh permutation each epoch (or num_samples draws with replacement)."""

    def __init__(self, data_source: collections.abc.Sized | Dataset, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")

    @property
    def num_samples(self) -> int:
        return _length(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = _length(self.data_source)
        g = _epoch_generator(self.generator)
        if self.replacement:
            return iter(g._np.integers(0, n, self.num_samples).tolist())
        out: list[int] = []
        while len(out) < self.num_samples:
            out += randperm(n, generator=g).tolist()
        return iter(out[:self.num_samples])

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


# -- collation -------------------------------------------------------------------------------------
def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, recursing into tuples, lists, dicts and named
    tuples: tensors are stacked, NumPy arrays become stacked tensors, Python floats a float64
    tensor, ints an int64 tensor, bools a bool tensor; strings stay a list."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUS":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found an array of {elem.dtype}")
        return tensor(np.stack(batch))
    if isinstance(elem, np.generic):
        return tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, int):
        return tensor(batch, dtype=_int64())
    if isinstance(elem, float):
        return tensor(batch, dtype=_float64())
    if isinstance(elem, (str, bytes)):
        return batch  # as given: a list at the top, a tuple inside a collated sequence (PyTorch's)
    if isinstance(elem, collections.abc.Mapping):
        # the sample's own mapping type, built from a dict in the sample's key order (as PyTorch);
        # a constructor is no part of the Mapping protocol, so the type is called untyped
        mapping_type: Any = type(elem)
        return mapping_type({k: default_collate([d[k] for d in batch]) for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(s) for s in zip(*batch)]  # a list for tuples too, as PyTorch
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem).__name__}")


def _int64():
    from ... import _dtypes  # noqa: PLC0415

    return _dtypes.int64


def _float64():
    from ... import _dtypes  # noqa: PLC0415

    return _dtypes.float64


def default_convert(data: Any) -> Any:
    """What batch_size=None gives: NumPy arrays become tensors, the rest stays."""
    if isinstance(data, np.ndarray):
        return tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple):
        return tuple(default_convert(v) for v in data)
    if isinstance(data, list):
        return [default_convert(v) for v in data]
    return data


def get_worker_info() -> None:
    """None: loading always runs in the main process here."""
    return None


# -- the loader --------------------------------------------------------------------------------------
class DataLoader(Generic[T]):
    """Iterate a dataset in batches: `for x, y in DataLoader(ds, batch_size=32, shuffle=True)`.

    shuffle draws a new order every epoch from `generator` (reproducible with
    `generator=eager.Generator().manual_seed(0)`, or after `eager.manual_seed`)."""

    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset, self.num_workers, self.pin_memory = dataset, num_workers, pin_memory
        self.timeout, self.worker_init_fn, self.generator = timeout, worker_init_fn, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler/batch_sampler option")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if not self._iterable:
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if (batch_size is not None or batch_sampler is not None) else default_convert
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator[Any]:
        if self.worker_init_fn is not None and self.num_workers > 0:
            self.worker_init_fn(0)
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream(self.dataset)
            return
        if self.batch_sampler is None:
            assert self.sampler is not None  # __init__ gives every map-style dataset a sampler
            for idx in self.sampler:
                yield self.collate_fn(self.dataset[idx])
            return
        fetch_many = getattr(self.dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            samples = fetch_many(indices) if fetch_many is not None else [self.dataset[i] for i in indices]
            yield self.collate_fn(samples)

    def _iter_stream(self, stream: IterableDataset) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in stream:
                yield self.collate_fn(sample)
            return
        batch: list = []
        for sample in stream:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = _length(self.dataset)  # raises TypeError for streams without a length, as PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return _length(self.batch_sampler) if self.batch_sampler is not None else _length(self.sampler)
