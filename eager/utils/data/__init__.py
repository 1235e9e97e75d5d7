"""`eager.utils.data`: datasets, samplers and the DataLoader, as torch.utils.data.

Each name is defined once, in the module PyTorch defines it in (`dataset`, `sampler`,
`dataloader`, `distributed`, `_utils.collate`, `_utils.worker`), and re-exported here, so
`torch.utils.data.dataloader.DataLoader` and `torch.utils.data.DataLoader` are one class."""
from __future__ import annotations

from . import _utils, dataloader, dataset, distributed, sampler  # noqa: F401
from ._utils.collate import default_collate, default_convert
from ._utils.worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "StackDataset",
           "random_split", "DataLoader", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "BatchSampler", "WeightedRandomSampler", "DistributedSampler", "default_collate", "default_convert",
           "get_worker_info", "WorkerInfo"]
