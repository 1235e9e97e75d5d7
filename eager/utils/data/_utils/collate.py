"""torch.utils.data._utils.collate: how a DataLoader turns a list of samples into a batch
(default_collate) and converts a sample when batching is off (default_convert)."""
from __future__ import annotations

import collections.abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...._factories import tensor
from ...._functional import stack
from ...._tensor import Tensor

__all__ = ["default_collate", "default_convert"]


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, recursing into tuples, lists, dicts and named
    tuples: tensors are stacked, NumPy arrays become stacked tensors, Python floats a float64
    tensor, ints an int64 tensor (float32 if the batch mixes in floats, as PyTorch infers it
    from the batch), bools a bool tensor; strings stay a list."""
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
        return tensor(batch)  # PyTorch infers: int64, or the default float dtype if a float is among them
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


def _float64():
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    return _dtypes.float64


def default_convert(data: Any) -> Any:
    """What batch_size=None gives: NumPy arrays become tensors, tuples lists, the rest stays."""
    if isinstance(data, np.ndarray):
        return tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return [default_convert(v) for v in data]  # a list, as PyTorch's (for backward compatibility)
    if isinstance(data, list):
        return [default_convert(v) for v in data]
    return data
