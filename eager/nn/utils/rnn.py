"""`eager.nn.utils.rnn`: batching sequences of different lengths, as torch.nn.utils.rnn."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from gmbase import dtypes as _dtypes

from ... import _functional as _F
from ..._factories import full
from ..._tensor import Tensor


def pad_sequence(sequences: Sequence[Tensor] | Tensor, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into one of (L_max, B, *), or (B, L_max, *) with
    batch_first, filling the missing steps with padding_value after each sequence (before
    it with padding_side="left"). Made of cat and stack, so gradients reach each sequence."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    for k, s in enumerate(seqs):
        if not isinstance(s, Tensor) or s.dim() < 1:
            raise TypeError(f"pad_sequence: sequence {k} must be a tensor of at least one dimension, got "
                            f"{type(s).__name__}{'' if not isinstance(s, Tensor) else ' of shape ' + str(tuple(s.shape))}")
        if tuple(s.shape[1:]) != tuple(seqs[0].shape[1:]) or s.dtype != seqs[0].dtype:
            raise RuntimeError(f"pad_sequence: sequence {k} has shape {tuple(s.shape)} and dtype {s.dtype}, but "
                               f"sequence 0 has {tuple(seqs[0].shape)} and {seqs[0].dtype}: the trailing "
                               "dimensions and the dtype must agree")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        missing = longest - s.shape[0]
        if missing:
            pad = full((missing, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = _F.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return _F.stack(padded, 0 if batch_first else 1)


class PackedSequence(NamedTuple):
    """Sequences of different lengths laid out step by step, as torch.nn.utils.rnn's: `data`
    holds step 0 of every sequence, then step 1 of those still running, ...; `batch_sizes[t]`
    (an int64 CPU tensor) counts the sequences at step t. The sequences are sorted longest
    first; `sorted_indices` gives that order, `unsorted_indices` its inverse (None when the
    input was already sorted). RNN, LSTM and GRU take one and return one."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data` moved or cast (the sizes and indices stay as they are)."""
        return self._replace(data=self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self._replace(data=self.data.cpu())

    def float(self) -> PackedSequence:
        return self._replace(data=self.data.float())

    def double(self) -> PackedSequence:
        return self._replace(data=self.data.double())

    @property
    def is_cuda(self) -> bool:
        return bool(self.data.is_cuda)

    def is_pinned(self) -> bool:
        return False


def _lengths_list(lengths: Any) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"pack_padded_sequence: lengths must be a 1D tensor, got shape {tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _invert(order: list[int]) -> list[int]:
    inverse = [0] * len(order)
    for pos, i in enumerate(order):
        inverse[i] = pos
    return inverse


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002  (PyTorch's name)
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) whose sequence b is
    `lengths[b]` steps long. With enforce_sorted=True the lengths must not increase (as
    PyTorch requires for ONNX export); otherwise the batch is sorted and the order kept in
    the result. Made of index_select, slices and cat, so gradients reach `input`."""
    from ..._factories import tensor  # noqa: PLC0415

    lens = _lengths_list(lengths)
    B = input.shape[0 if batch_first else 1]
    if len(lens) != B:
        raise RuntimeError(f"pack_padded_sequence: expected {B} lengths (the batch size of input of shape "
                           f"{tuple(input.shape)}), got {len(lens)}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = list(range(B))
    else:
        order = sorted(range(B), key=lambda i: -lens[i])
        sorted_indices = tensor(order, dtype=_dtypes.int64)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
        lens = [lens[i] for i in order]
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    T = input.shape[1 if batch_first else 0]
    if lens and lens[0] > T:
        raise RuntimeError(f"pack_padded_sequence: a length of {lens[0]} is longer than the {T} steps of input "
                           f"of shape {tuple(input.shape)}")
    if batch_first:
        input = input.transpose(0, 1)
    sizes = [sum(1 for n in lens if n > t) for t in range(lens[0] if lens else 0)]
    data = _F.cat([input[t, :bs] for t, bs in enumerate(sizes)], 0)
    unsorted = None if sorted_indices is None else tensor(_invert(order), dtype=_dtypes.int64)
    return PackedSequence(data, tensor(sizes, dtype=_dtypes.int64), sorted_indices, unsorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The padded batch (T, B, *) ((B, T, *) with batch_first) and the int64 lengths of a
    PackedSequence, in the order the sequences were packed from; `total_length` pads T
    further (DataParallel's idiom)."""
    from ..._factories import tensor  # noqa: PLC0415

    data, batch_sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    T = len(batch_sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
    B = batch_sizes[0] if batch_sizes else 0
    tail = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in batch_sizes:
        chunk = data[offset:offset + bs]
        offset += bs
        if bs < B:
            chunk = _F.cat([chunk, full((B - bs, *tail), padding_value, dtype=data.dtype, device=data.device)], 0)
        steps.append(chunk)
    for _ in range(T, total_length or T):
        steps.append(full((B, *tail), padding_value, dtype=data.dtype, device=data.device))
    padded = _F.stack(steps, 0)
    lens = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lens = [lens[i] for i in sequence.unsorted_indices.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lens, dtype=_dtypes.int64)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (pad_sequence, then pack_padded_sequence)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors a PackedSequence was packed from."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [padded[i, :n] for i, n in enumerate(lengths.tolist())]


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The list of tensors a padded batch holds, sequence b cut to lengths[b]."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]
