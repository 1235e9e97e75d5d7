"""`eager.nn.utils.rnn`: batching sequences of different lengths, as torch.nn.utils.rnn."""
from __future__ import annotations

from collections.abc import Sequence

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
