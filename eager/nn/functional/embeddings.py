"""Embeddings of `eager.nn.functional` (lookup, bags, max-norm renormalisation) and one_hot."""
from __future__ import annotations

from gmops import indexing as _indexing
from gmops.index_checks import CHECK_INDEX_RANGE

from ... import _functional as _F
from ... import _index_fast
from ..._factories import arange
from ..._tensor import Tensor
from ...autograd.function import Function
from ._utils import _data_range


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; `padding_idx`'s row gets no gradient.

    With `max_norm`, each row the lookup reads whose `norm_type`-norm exceeds max_norm is first
    scaled in place to norm max_norm (by max_norm / (norm + 1e-7), as PyTorch), so `weight`
    changes: a weight saved for an earlier backward then fails its version check, as in PyTorch."""
    if max_norm is None and not scale_grad_by_freq:
        fast = _index_fast.embedding_rows(input, weight, padding_idx)  # the common lookup, or None
        if fast is not None:
            return fast
    if input.is_floating_point() or input.dtype.name == "bool":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype.name} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    span = _data_range(input)
    if span is not None:
        lo, hi = span
        if lo < 0 or hi >= n:
            raise IndexError(f"embedding: index out of range in self (indices span [{lo}, {hi}] for a weight of "
                             f"{n} rows); indices must lie in [0, {n})")
    if input.dtype.name != "int64":
        input = input.long()
    if max_norm is not None:
        _embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    if scale_grad_by_freq and weight.requires_grad:
        return _EmbeddingScaledByFreq.apply(weight, input, padding_idx)
    return _indexing.EMBEDDING(weight, input, padding_idx=padding_idx)


class _EmbeddingScaledByFreq(Function):
    """embedding with `scale_grad_by_freq`: each position's gradient is divided by how often
    its index occurs in this mini-batch before it is summed into the row (PyTorch's
    embedding_dense_backward). The counts are data, so this is eager's own node rather than
    a composition (a compiled graph sees the lookup and the count as separate ops)."""

    @staticmethod
    def forward(ctx, weight: Tensor, input: Tensor, padding_idx: int | None) -> Tensor:
        ctx.save_for_backward(input)
        ctx.padding_idx, ctx.rows = padding_idx, weight.shape[0]
        return _indexing.EMBEDDING(weight, input, padding_idx=padding_idx)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (input,) = ctx.saved_tensors
        flat = input.reshape(-1)
        counts = grad.new_zeros(ctx.rows).index_add(0, flat, grad.new_ones(flat.shape[0]))
        rows_grad = grad.reshape(flat.shape[0], -1) / counts[flat].unsqueeze(-1)
        if ctx.padding_idx is not None:
            rows_grad = rows_grad * (flat != ctx.padding_idx).to(grad.dtype).unsqueeze(-1)
        return grad.new_zeros(ctx.rows, rows_grad.shape[1]).index_add(0, flat, rows_grad), None, None


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of `weight` that `input` reads down to norm max_norm, in place and
    unrecorded (PyTorch's embedding_renorm_). Which rows is data: eager only."""
    from ..._grad_mode import no_grad  # noqa: PLC0415

    with no_grad():
        rows = input.reshape(-1).unique()
        picked = weight[rows]
        norms = picked.norm(norm_type, 1, True)
        scale = _F.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = picked * scale.to(weight.dtype)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows of class indices (num_classes=-1: one more than the largest index)."""
    if tensor.is_floating_point():
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    span = _data_range(tensor)
    if num_classes == -1:  # reads the data: eager only (a traced tensor needs num_classes)
        num_classes = int(tensor.max()) + 1 if span is None else (span[1] + 1 if tensor.numel() else 0)
    if span is not None and (span[0] < 0 or span[1] >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if span[0] >= 0
                           else "Class values must be non-negative.")
    if span is None and not isinstance(tensor, Tensor):  # traced: the compiled graph checks at run time
        tensor = CHECK_INDEX_RANGE(tensor, low=0, high=num_classes, error="RuntimeError",
                                   message="Class values must be smaller than num_classes.",
                                   below="Class values must be non-negative.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).long()


def _bags_from_offsets(input: Tensor, offsets: Tensor, include_last_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """A 1-D index list cut at `offsets` as a padded (bags, longest) index matrix, the flat
    position of each slot in input, and a mask of the real slots. Reads offsets' values, so
    it runs eagerly only (static's traced offsets raise a TraceError at the user's line)."""
    import numpy as np  # noqa: PLC0415

    from ..._factories import tensor  # noqa: PLC0415

    starts = _F._host(offsets).astype(np.int64).reshape(-1)
    n = input.shape[0]
    if include_last_offset:
        starts, ends = starts[:-1], starts[1:]
    else:
        ends = np.append(starts[1:], n)
    if starts.size and (starts[0] != 0 or np.any(np.diff(np.append(starts, ends[-1:])) < 0) or ends[-1] > n):
        raise ValueError(f"embedding_bag: offsets must start at 0, not decrease and not pass the input's length "
                         f"{n} (got offsets {starts.tolist()}); offsets[i] is where bag i begins in input")
    lengths = ends - starts
    longest = int(lengths.max()) if lengths.size else 0
    slot = np.arange(longest)
    mask = slot[None, :] < lengths[:, None]
    position = np.where(mask, starts[:, None] + slot[None, :], 0)
    device = input.device
    return (tensor(position, device=device), tensor(mask, device=device),
            tensor(position.reshape(-1), device=device))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of each bag of embedding rows, without materializing the bags'
    lookups one by one: a 2-D input is one bag per row; a 1-D input is cut into bags at
    `offsets`. Entries equal to `padding_idx` are left out of their bag; an empty bag gives
    zeros. `per_sample_weights` (mode "sum" only) scales each looked-up row. Built from
    embedding and reductions over a padded (bags, longest) layout, so gradients reach
    weight and per_sample_weights. Mirrors torch.nn.functional.embedding_bag."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max (got mode={mode!r})")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        index, valid, psw = input, None, per_sample_weights
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError(f"offsets has to be a 1D Tensor (got shape {tuple(offsets.shape)})")
        position, valid, flat_position = _bags_from_offsets(input, offsets, include_last_offset)
        index = _F.reshape(_F.index_select(input, 0, flat_position), *position.shape)
        psw = (None if per_sample_weights is None else
               _F.reshape(_F.index_select(per_sample_weights, 0, flat_position), *position.shape))
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
        kept = index != padding_idx
        valid = kept if valid is None else _F.logical_and(valid, kept)
    rows = embedding(index, weight, None, max_norm, norm_type)  # (bags, longest, dim)
    if mode == "max":
        if valid is None:
            return _F.amax(rows, 1)
        has = _F.any(valid, 1)  # an empty bag reduces zeros, then gives zeros (no -inf reaches amax's backward)
        picked = _F.where(_F.unsqueeze(valid, -1), rows, float("-inf"))
        safe = _F.where(_F.reshape(has, -1, 1, 1), picked, 0.0)
        return _F.where(_F.unsqueeze(has, -1), _F.amax(safe, 1), 0.0)
    scale = None if valid is None else valid.to(weight.dtype)
    if psw is not None:
        scale = psw if scale is None else scale * psw
    summed = _F.sum(rows if scale is None else rows * _F.unsqueeze(scale, -1), 1)
    if mode == "sum":
        return summed
    if valid is None:
        return summed / rows.shape[1] if rows.shape[1] else summed
    count = _F.clamp_min(_F.sum(valid, 1, keepdim=True), 1).to(weight.dtype)
    return summed / count
