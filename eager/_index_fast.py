"""`x[idx]` with one integer index tensor on dim 0 (a minibatch's rows `X[ix]`, an embedding
lookup `C[xi]`) and `F.embedding`, run on the arrays without the op dispatch's general path.

Why: that path (operand scan, device check, promotion test, view marking) cost about 4 us of
the 5.5 us an `X[ix]` took, where PyTorch takes 2.5; a character-model step makes three such
lookups. Here the forward is NumPy's `take` along dim 0 (a third of fancy indexing's cost
for row gathers), and the backward node is the `index` op's own (`_record`, the same node,
edges, saved index and version as the general path's), so gradients, double backward and
`grad_fn` are unchanged.

It runs for plain eager tensors (and nn.Parameter) only: a C-contiguous NumPy array of at least one dim indexed
by a NumPy integer array of at least one dim, no dispatch mode pushed. A 0-d index (PyTorch
reads it as an int), a bool or uint8 mask, a non-contiguous source (whose result layout
follows PyTorch's index kernel), a device array, a subclass or a tracer: the op path.
An index out of range raises the op path's IndexError ("index 5 is out of bounds for axis 0
with size 4", the message compiled code gives too), negative indices count from the end.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmops import indexing as _I
from gmops import shape_ops as _S

from . import _dispatch
from ._apply_run import _record
from ._grad_mode import STATE
from ._tensor import Tensor

_KEY = (("tensor", 0),)
_ndarray = np.ndarray
_I64 = np.dtype(np.int64)


def out_of_bounds(index: np.ndarray, size: int, dim: int = 0) -> IndexError:
    """The op path's error (NumPy's indexing message, which compiled code raises too) for the
    first index of `index` outside [-size, size); `take` would say less for an empty dim."""
    flat = index.reshape(-1)
    bad = np.flatnonzero((flat < -size) | (flat >= size))
    value = int(flat[bad[0]]) if bad.size else int(flat[0])
    return IndexError(f"index {value} is out of bounds for axis {dim} with size {size}")


def _plain(t: Any) -> bool:
    """A Tensor, or a subclass that does not take ops over (nn.Parameter), as the dispatch reads them."""
    tt = type(t)
    return tt is Tensor or (isinstance(t, Tensor) and getattr(tt, "__graphmode_dispatch__", None) is None)


def take_rows(input: Any, index: Any) -> Tensor | None:
    """input[index] for the case above, or None where the op path must run."""
    if not (_plain(input) and _plain(index)) or _dispatch._n_modes_pushed:
        return None
    x, i = input._data, index._data
    if type(x) is not _ndarray or type(i) is not _ndarray or i.dtype.kind != "i" or not i.ndim \
            or not x.ndim or not x.flags.c_contiguous:
        return None
    try:
        out = x.take(i, axis=0)
    except IndexError:
        raise out_of_bounds(i, x.shape[0]) from None
    result = Tensor._make(out)
    if input._requires_grad and STATE.enabled:
        _record(_S.INDEX, (input, index), {"key": _KEY, "n_index": 1}, (result,))
    return result


def embedding_rows(input: Any, weight: Any, padding_idx: int | None) -> Tensor | None:
    """F.embedding(input, weight, padding_idx) for plain eager tensors of NumPy arrays, int64
    indices all in [0, rows) and a 2-d weight: the `embedding` op's forward (take along dim
    0) and its own node, without the dispatch's general path; None for anything else (the op
    path then checks and raises as it does)."""
    if not (_plain(input) and _plain(weight)) or _dispatch._n_modes_pushed:
        return None
    i, w = input._data, weight._data
    if type(i) is not _ndarray or type(w) is not _ndarray or i.dtype != _I64 or w.ndim != 2 or not i.size:
        return None
    n = w.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            return None
        padding_idx %= n
    if i.min() < 0:
        return None
    try:
        out = w.take(i, axis=0)
    except IndexError:
        return None
    result = Tensor._make(out)
    if weight._requires_grad and STATE.enabled:
        _record(_I.EMBEDDING, (weight, input), {"padding_idx": padding_idx}, (result,))
    return result
