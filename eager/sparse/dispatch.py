"""The dispatch of eager ops on sparse operands: which ops keep the result sparse (add, mul,
the zero-preserving unary ops), which densify, and the error that names the rest."""
from __future__ import annotations

from typing import Any

from .._functional import cat as _cat
from .._tensor import Tensor
from .products import mm, sum
from .tensor import _LINEAR_UNARY, _TO_DENSE, _UNARY_ON_VALUES, SparseTensor, _unsupported


def _same_size(name: str, a: Any, b: Any) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{name}: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a.shape)} while other has size {list(b.shape)} (sparse operands do not broadcast)")


def _dense_at(d: Tensor, s: SparseTensor) -> Tensor:
    """d's entries (or slices) at s's nonzeros: shape (nnz, *dense_shape)."""
    sd = s.sparse_dim()
    return d[tuple(s._i[k] for k in range(sd))] if sd else d.unsqueeze(0)


def _add(a: Any, b: Any, sign: float) -> Any:
    name = "add" if sign > 0 else "sub"
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        raise RuntimeError(f"{name}: a sparse tensor and a number are not supported here; {_TO_DENSE}")
    _same_size(name, a, b)
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        if a.sparse_dim() != b.sparse_dim():
            raise RuntimeError(f"{name}: sparse tensors with different sparse_dim ({a.sparse_dim()} and "
                               f"{b.sparse_dim()}) are not supported")
        vals = _cat([a._v, b._v if sign > 0 else -b._v], 0)
        out = SparseTensor._build(_cat([a._i, b._i], 1), vals, a._size, False)
        return out.coalesce() if a._coalesced and b._coalesced else out
    if isinstance(a, SparseTensor):  # PyTorch refuses sparse + dense (the result would be dense, named after self)
        raise RuntimeError(f"{name}(sparse, dense) is not supported. Use {name}(dense, sparse) instead.")
    return a + b.to_dense() if sign > 0 else a - b.to_dense()


def _mul(a: Any, b: Any) -> SparseTensor:
    s, other = (a, b) if isinstance(a, SparseTensor) else (b, a)
    if isinstance(other, SparseTensor):
        other = other.to_dense()
    if isinstance(other, Tensor) and other.ndim:
        _same_size("mul", s, other)
        factor = _dense_at(other, s)
    else:
        factor = other
    return SparseTensor._build(s._i, s._v * factor, s._size, s._coalesced)


def _dispatch(op: Any, operands: tuple, attrs: dict) -> Any:
    name = op.name
    first = operands[0]
    if name in _UNARY_ON_VALUES and isinstance(first, SparseTensor) and len(operands) == 1:
        if name not in _LINEAR_UNARY:  # f(a) + f(b) != f(a + b): duplicates are summed first
            first = first.coalesce()
        vals = Tensor._apply_op(op, (first._v,), attrs)
        return SparseTensor._build(first._i, vals, first._size, first._coalesced)
    if name == "add":
        return _add(operands[0], operands[1], 1.0)
    if name == "sub":
        return _add(operands[0], operands[1], -1.0)
    if name == "rsub":
        return _add(operands[1], operands[0], -1.0)
    if name == "mul":
        return _mul(operands[0], operands[1])
    if name == "div" and isinstance(first, SparseTensor) and not isinstance(operands[1], SparseTensor):
        other = operands[1]
        if isinstance(other, Tensor) and other.ndim:
            raise _unsupported("div by a non-scalar dense tensor")
        return SparseTensor._build(first._i, first._v / other, first._size, first._coalesced)
    if name == "pow" and isinstance(first, SparseTensor) and isinstance(operands[1], (int, float)) and operands[1] > 0:
        return SparseTensor._build(first._i, first._v ** operands[1], first._size, first._coalesced)
    if name == "matmul":
        a, b = operands
        if a.ndim == 2 and b.ndim == 2:
            return mm(a, b)
        if isinstance(a, SparseTensor) and a.ndim == 2 and b.ndim == 1:
            return mm(a, b.unsqueeze(1)).squeeze(1)
        raise _unsupported(f"matmul of shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if name == "transpose" and isinstance(first, SparseTensor):
        return first.transpose(attrs["dim0"], attrs["dim1"])
    if name == "sum" and isinstance(first, SparseTensor) and not attrs.get("dim"):
        return sum(first)
    raise _unsupported(name)
