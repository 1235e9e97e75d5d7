"""Linear-algebra conveniences PyTorch programs call: mv, inner, vdot, addr, addbmm, dist,
renorm, diagflat, vander (torch's and torch.linalg's), chain_matmul.

Each is written in eager's differentiable functions (matmul, outer, vector_norm, cumprod,
...), so gradients, static tracing and the code generators come from those."""
from __future__ import annotations

import warnings
from typing import Any

from gmbase import dtypes as _dtypes

from .. import _functional as _F
from .._functional.linalg import _scaled_sum


def _dims(t: Any) -> int:
    return len(t.shape)


def mv(input: Any, vec: Any) -> Any:  # noqa: A002  (PyTorch's parameter names)
    """The product of a matrix (n, m) and a vector (m,): a vector (n,). Mirrors torch.mv."""
    if _dims(input) != 2 or _dims(vec) != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {_dims(input)}, {_dims(vec)}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
                           f"vec ({vec.shape[0]})")
    return _F.matmul(input, vec)


def inner(input: Any, other: Any) -> Any:  # noqa: A002
    """The sum of products over the last dimension of both: shape input.shape[:-1] +
    other.shape[:-1]; a 0-d operand multiplies. Mirrors torch.inner."""
    if _dims(input) == 0 or _dims(other) == 0:
        return _F.mul(input, other)
    k = input.shape[-1]
    if other.shape[-1] != k:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    a = _F.reshape(input, (-1, k))
    b = _F.reshape(other, (-1, k))
    return _F.reshape(_F.matmul(a, _F.transpose(b, 0, 1)), tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def vdot(input: Any, other: Any) -> Any:  # noqa: A002
    """The dot product of two 1-d tensors, the first conjugated (a no-op for real dtypes).
    Mirrors torch.vdot."""
    if _dims(input) != 1 or _dims(other) != 1:
        raise RuntimeError(f"1D tensors expected, but got {_dims(input)}D and {_dims(other)}D tensors")
    if input.dtype != other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{_dtypes.scalar_type_name(input.dtype)} and {_dtypes.scalar_type_name(other.dtype)}")
    if input.shape[0] != other.shape[0]:
        n, m = input.shape[0], other.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    return _F.dot(input, other)


def _broadcast_result(input: Any, out: Any, beta: Any) -> Any:
    """With beta = 0 the input is not read but its shape still broadcasts the result."""
    if beta == 0 and tuple(input.shape) != tuple(out.shape):
        shape = _F.broadcast_shape(tuple(input.shape), tuple(out.shape))
        return _F.broadcast_to(out, shape)
    return out


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """beta * input + alpha * outer(vec1, vec2) (input not read when beta is 0). Mirrors torch.addr."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if _dims(v) != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {_dims(v)}-D")
    return _broadcast_result(input, _scaled_sum(input, _F.outer(vec1, vec2), beta, alpha, "AddrBackward0"), beta)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:  # noqa: A002
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]. Mirrors torch.addbmm."""
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if _dims(b) != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    product = _F.sum(_F.bmm(batch1, batch2), 0)
    return _broadcast_result(input, _scaled_sum(input, product, beta, alpha, "AddbmmBackward0"), beta)


def dist(input: Any, other: Any, p: Any = 2) -> Any:  # noqa: A002
    """The p-norm of input - other (broadcast), a 0-d tensor. Mirrors torch.dist."""
    from ..linalg import vector_norm  # noqa: PLC0415

    diff = _F.sub(input, other)
    out = vector_norm(diff, float(p))
    if float(p) == 0.0 and getattr(diff, "requires_grad", False) and not getattr(out, "requires_grad", True):
        # the count of non-zeros has a zero gradient, but PyTorch's result is still in the graph
        out = out + _F.sum(_F.where(_F.isfinite(diff), diff - diff.detach(), 0.0))
    return out


def renorm(input: Any, p: Any, dim: int, maxnorm: Any) -> Any:  # noqa: A002
    """Each slice along `dim` whose p-norm exceeds maxnorm scaled down to norm maxnorm (by
    maxnorm / (norm + 1e-7), as PyTorch); the others unchanged. Mirrors torch.renorm."""
    from ..linalg import vector_norm  # noqa: PLC0415

    n = _dims(input)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"renorm" not implemented for \'{_dtypes.scalar_type_name(input.dtype)}\'')
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if n <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {n} dimensions")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim % n
    others = tuple(i for i in range(n) if i != d)
    norm = vector_norm(input, float(p), dim=others, keepdim=True)
    factor = _F.where(_F.gt(norm, maxnorm), maxnorm / (norm + 1e-7), 1.0)
    return _F.mul(input, _F.to_dtype(factor, input.dtype))


def diagflat(input: Any, offset: int = 0) -> Any:  # noqa: A002
    """The flattened input as the `offset`-th diagonal of a square matrix. Mirrors torch.diagflat."""
    return _F.diag(_F.reshape(input, (-1,)), offset)


def _powers(x: Any, n: int) -> Any:
    """x[..., None] ** [0, 1, ..., n-1] as a running product (cumprod: differentiable, and
    exact for integers), of PyTorch's dtype for a Vandermonde matrix (at least int64)."""
    d = _dtypes.promote(x.dtype, _dtypes.int64)
    x = _F.to_dtype(x, d)
    column = _F.unsqueeze(x, -1)
    if n == 0:
        return _F.mul(_F.expand(column, *x.shape, 0), 0)
    ones = _F.mul(column, 0) + 1
    if n == 1:
        return ones
    reps = (1,) * (_dims(x)) + (n - 1,)
    return _F.cumprod(_F.cat([ones, _F.repeat(column, *reps)], -1), -1)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803
    """The Vandermonde matrix of a 1-d x: columns x^(N-1), ..., x^0 (x^0 first with
    increasing), N = len(x) by default. Mirrors torch.vander."""
    if _dims(x) != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    out = _powers(x, n)
    return out if increasing else _F.flip(out, (-1,))


def linalg_vander(x: Any, *, N: int | None = None) -> Any:  # noqa: N803
    """x[..., None] ** [0, ..., N-1] (increasing powers, batched over x's leading dims; N =
    x.shape[-1] by default). Mirrors torch.linalg.vander."""
    if _dims(x) == 0:  # (PyTorch's: a 0-d x is one point, a row of one)
        x = _F.reshape(x, (1,))
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x, n)


_CHAIN_WARNED = [False]


def chain_matmul(*matrices: Any, out: Any = None) -> Any:
    """The product of 2-d matrices in the cheapest order (deprecated in PyTorch for
    torch.linalg.multi_dot, with its warning, once). Mirrors torch.chain_matmul."""
    if not _CHAIN_WARNED[0]:
        _CHAIN_WARNED[0] = True
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                      "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                      "multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if _dims(m) != 2:
            raise RuntimeError(f"Tensor dimension is {_dims(m)}, expected 2 instead.")
    if len(matrices) == 1:
        result = _F.clone(matrices[0])
    else:
        from ..linalg import multi_dot  # noqa: PLC0415

        result = multi_dot(list(matrices))
    if out is not None:
        out.copy_(result)
        return out
    return result


def matrix_power(input: Any, n: int) -> Any:  # noqa: A002
    """input multiplied by itself n times (torch.matrix_power is torch.linalg.matrix_power)."""
    from ..linalg import matrix_power as _mp  # noqa: PLC0415

    return _mp(input, n)



