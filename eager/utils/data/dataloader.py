"""torch.utils.data.dataloader: the DataLoader, which reads a dataset in batches.
`eager.utils.data` re-exports each name; this module is where the loader is defined (and,
as in PyTorch, it also offers default_collate, default_convert and get_worker_info).

Loading runs in the calling process: with `num_workers > 0` the workers' parts are played
in turn here (see `_iter_workers`), `pin_memory` and `timeout` change nothing."""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from ..._factories import Generator, default_generator, from_numpy
from ._utils.collate import default_collate, default_convert
from ._utils.worker import WorkerInfo, get_worker_info, in_worker
from .dataset import Dataset, IterableDataset, TensorDataset, _length
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

T = TypeVar("T")

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


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
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else prefetch_factor
        self.persistent_workers = persistent_workers
        self.multiprocessing_context, self.pin_memory_device, self.in_order = \
            multiprocessing_context, pin_memory_device, in_order
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
        # PyTorch draws the workers' base seed from the loader's generator at every epoch's
        # start, with workers or not; drawing it here too keeps the shuffle independent of them
        g = self.generator if self.generator is not None else default_generator
        base_seed = int(g._np.integers(0, 2 ** 63 - 1))
        if self.num_workers > 0:
            yield from self._iter_workers(base_seed)
            return
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream(self.dataset)
            return
        yield from self._iter_map(self._index_batches())

    def _index_batches(self) -> Iterator[Any]:
        """What each fetch reads: a list of indices (batched) or one index (batch_size=None)."""
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        assert self.sampler is not None  # __init__ gives every map-style dataset a sampler
        return iter(self.sampler)

    def _fetch(self, what: Any) -> Any:
        if self.batch_sampler is None:
            return self.collate_fn(self.dataset[what])
        if type(self.dataset) is TensorDataset and self.collate_fn is default_collate and type(what) is list:
            # the rows of a batch gathered by one index per tensor: what stacking the samples
            # gives, without an indexing op per sample and per tensor (5x PyTorch's loop time)
            rows = np.asarray(what)
            if rows.dtype.kind in "iu" and rows.ndim == 1 and len(rows):
                index = from_numpy(rows.astype(np.int64, copy=False))
                return tuple(t[index] for t in self.dataset.tensors)
        fetch_many = getattr(self.dataset, "__getitems__", None)
        samples = fetch_many(what) if fetch_many is not None else [self.dataset[i] for i in what]
        return self.collate_fn(samples)

    def _iter_map(self, batches: Iterator[Any]) -> Iterator[Any]:
        for what in batches:
            yield self._fetch(what)

    def _iter_workers(self, base_seed: int) -> Iterator[Any]:
        """The num_workers workers' parts, played in turn in this process: each worker gets its
        seed, its `worker_init_fn` call and (for an iterable dataset) its own copy of the
        dataset to iterate; batches come round-robin from the workers, as PyTorch yields them,
        and get_worker_info() inside the dataset and the init function names the worker."""
        n = self.num_workers
        infos = [WorkerInfo(id=w, num_workers=n, seed=base_seed + w,
                            dataset=copy.copy(self.dataset) if self._iterable else self.dataset) for w in range(n)]
        for info in infos:
            with in_worker(info):
                if self.worker_init_fn is not None:
                    self.worker_init_fn(info.id)
        if not self._iterable:
            for k, what in enumerate(self._index_batches()):
                with in_worker(infos[k % n]):
                    batch = self._fetch(what)
                yield batch
            return
        streams: list[Iterator[Any] | None] = []
        for info in infos:
            with in_worker(info):
                streams.append(self._iter_stream(info.dataset))
        live = n
        while live:
            for w, stream in enumerate(streams):
                if stream is None:
                    continue
                with in_worker(infos[w]):
                    try:
                        batch = next(stream)
                    except StopIteration:
                        streams[w] = None
                        live -= 1
                        continue
                yield batch

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
