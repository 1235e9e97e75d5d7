"""Linear and bilinear maps of `eager.nn.functional`."""
from __future__ import annotations

from ... import _functional as _F
from ..._tensor import Tensor
from .. import _fused_linear


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch.

    A batch of more than one leading dim is flattened to one matrix first: NumPy's matmul
    of a 3-D stack by a matrix loops over the stack (about 8x slower than one 2-D product).
    The nodes are named as PyTorch's: AddmmBackward0 for the product plus bias, then
    ViewBackward0 (UnsafeViewBackward0 without bias) for a batch reshaped back."""
    if input.ndim != 2 and weight.ndim == 2 and bias is not None:
        lead = tuple(input.shape[:-1])
        out = linear(input.reshape(-1, input.shape[-1]), weight, bias)
        return out.reshape(*lead, weight.shape[0])
    if input.ndim > 2 and weight.ndim == 2:
        lead = tuple(input.shape[:-1])
        out = linear(input.reshape(-1, input.shape[-1]), weight)
        return _F._renamed(out.reshape(*lead, weight.shape[0]), "UnsafeViewBackward0")
    if _fused_linear.eligible(input, weight, bias):  # one node, PyTorch's addmm (nn/_fused_linear.py)
        return _fused_linear.linear(input, weight, bias)
    out = _F.matmul(input, weight.t() if weight.ndim == 2 else weight)
    if bias is None:
        return out
    return _F._renamed(out + bias, "AddmmBackward0") if input.ndim == 2 and weight.ndim == 2 else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].
    Mirrors torch.nn.functional.bilinear."""
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: expected weight (out, {input1.shape[-1]}, {input2.shape[-1]}) for inputs "
                           f"of shapes {tuple(input1.shape)} and {tuple(input2.shape)}, got weight of shape "
                           f"{tuple(weight.shape)}")
    out = _F.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
