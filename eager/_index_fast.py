"""`x[idx]` with one integer index tensor on dim 0 (a minibatch's rows `X[ix]`, an embedding
lookup `C[xi]`), run on the arrays without the op dispatch's general path.

Why: that path (operand scan, device check, promotion test, view marking) cost about 4 us of
the 5.5 us an `X[ix]` took, where PyTorch takes 2.5; a character-model step makes three such
lookups. Here the forward is NumPy's `take` along dim 0 (a third of fancy indexing's cost
for row gathers), and the backward node is the `index` op's own (`_record`, the same node,
edges, saved index and version as the general path's), so gradients, double backward and
`grad_fn` are unchanged.

It runs for plain eager tensors only: a C-contiguous NumPy array of at least one dim indexed
by a NumPy integer array of at least one dim, no dispatch mode pushed. A 0-d index (PyTorch
reads it as an int), a bool or uint8 mask, a non-contiguous source (whose result layout
follows PyTorch's index kernel), a device array, a subclass or a tracer: the op path.
An index out of range raises PyTorch's IndexError ("index 5 is out of bounds for dimension 0
with size 4"), negative indices count from the end, as both libraries do.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmops import shape_ops as _S

from . import _dispatch
from ._apply_run import _record
from ._grad_mode import STATE
from ._tensor import Tensor

_KEY = (("tensor", 0),)
_ndarray = np.ndarray


def out_of_bounds(index: np.ndarray, size: int, dim: int = 0) -> IndexError:
    """PyTorch's error for the first index of `index` outside [-size, size)."""
    flat = index.reshape(-1)
    bad = np.flatnonzero((flat < -size) | (flat >= size))
    value = int(flat[bad[0]]) if bad.size else int(flat[0])
    return IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")


def take_rows(input: Any, index: Any) -> Tensor | None:
    """input[index] for the case above, or None where the op path must run."""
    if type(input) is not Tensor or type(index) is not Tensor or _dispatch._n_modes_pushed:
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
