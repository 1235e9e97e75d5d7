"""Products and matrix functions of eager's functional surface: matmul, mm, bmm, the add-products,
einsum, cdist, triangles and diagonals."""
from __future__ import annotations

import builtins as _builtins

from gmbase import dtypes as _dtypes
from gmops import indexing as I
from gmops import linalg as L
from gmops import math_ops as M
from gmops import reductions as R
from gmops import shape_ops as S
from gmops._checks import norm_dim
from gmops.elementwise import CLAMP_MIN as clamp_min  # the ops themselves (their functions are generated)
from gmops.elementwise import SQRT as sqrt

from ._common import _ndim, _renamed
from .elementwise import _is_one
from .reductions import norm, sum
from .shape_ops import transpose, unsqueeze


def matmul(input, other):
    """The matrix product with PyTorch's rules for 1-d operands and broadcast batch dimensions.

    Both operands must have the same dtype (no promotion, as in PyTorch). Mirrors torch.matmul."""
    _same_dtype_for_matmul(input, other)
    return L.MATMUL(input, other)


def _same_dtype_for_matmul(a, b) -> None:
    """matmul does not promote in PyTorch (NumPy would)."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if isinstance(da, _dtypes.dtype) and isinstance(db, _dtypes.dtype) and da is not db:
        raise RuntimeError(f"matmul: expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtypes.cpp_type_name(da)} != {_dtypes.cpp_type_name(db)}")


def mm(input, mat2):
    """The product of two 2-d matrices (no broadcasting). Mirrors torch.mm."""
    _same_dtype_for_matmul(input, mat2)
    if _ndim(input) != 2 or _ndim(mat2) != 2:
        raise RuntimeError(f"mm: self must be a matrix (got shapes {tuple(input.shape)} and {tuple(mat2.shape)})")
    return L.MATMUL(input, mat2)


def dot(input, other):
    """The inner product of two 1-d tensors of the same length and dtype. Mirrors torch.dot."""
    _same_dtype_for_matmul(input, other)
    if _ndim(input) != 1 or _ndim(other) != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {_ndim(input)}D and {_ndim(other)}D tensors")
    return L.MATMUL(input, other)


def outer(input, vec2):
    """The outer product of two 1-d tensors; `ger` is the same. Mirrors torch.outer."""
    if _ndim(input) != 1 or _ndim(vec2) != 1:
        raise RuntimeError(f"outer: expected 1-D vectors, got shapes {tuple(input.shape)} and {tuple(vec2.shape)}")
    return S.RESHAPE(input, shape=(input.shape[0], 1)) * S.RESHAPE(vec2, shape=(1, vec2.shape[0]))


ger = outer


CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    a (..., P, R) tensor. Mirrors torch.cdist, its two ways included: for p = 2 with more than
    25 rows on either side (or compute_mode="use_mm_for_euclid_dist") through a matmul,
    sqrt(clamp_min(|a|^2 + |b|^2 - 2 a.b, 1e-30)), which PyTorch uses too and which is less
    exact for near points; otherwise the norm of each difference. The gradient is 0 where a
    distance is 0, as in PyTorch."""
    if compute_mode not in CDIST_MODES:
        raise ValueError(f"cdist: {compute_mode} is not a valid value for compute_mode; use one of {CDIST_MODES}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if _ndim(x1) < 2 or _ndim(x2) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {_ndim(x1)}D, X2 got: {_ndim(x2)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and (rows1 > 25 or rows2 > 25)))
    if use_mm:
        sq1 = sum(x1 * x1, -1, keepdim=True)
        sq2 = unsqueeze(sum(x2 * x2, -1), -2)
        return sqrt(clamp_min(sq1 + sq2 - 2 * matmul(x1, transpose(x2, -1, -2)), 1e-30))
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, -1)


def bmm(input, mat2):
    """The batched product of two 3-d tensors (b, n, m) @ (b, m, p). Mirrors torch.bmm."""
    _same_dtype_for_matmul(input, mat2)
    if _ndim(input) != 3 or _ndim(mat2) != 3:
        raise RuntimeError(f"bmm: batch1 must be a 3D tensor (got shapes {tuple(input.shape)} and "
                           f"{tuple(mat2.shape)})")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return _renamed(L.MATMUL(input, mat2), "BmmBackward0")


def _scaled_sum(input, product, beta, alpha, name):
    out = product if _is_one(alpha) else product * alpha
    if beta == 0:  # PyTorch ignores input then (nan and inf in it are not propagated)
        if getattr(input, "requires_grad", False):  # its gradient is still beta * grad: zeros, not None
            from .. import _functional as _F  # noqa: PLC0415  (the generated where/isfinite)

            out = out + _F.where(_F.isfinite(input), input * 0.0, 0.0)  # (0 at inf and nan too)
        return _renamed(out, name)
    return _renamed((input if _is_one(beta) else input * beta) + out, name)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha, "AddmmBackward0")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha, "BaddbmmBackward0")


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec). Mirrors torch.addmv."""
    return _scaled_sum(input, matmul(mat, vec), beta, alpha, "AddmvBackward0")


def _explicit_einsum(equation: str, shapes: list) -> str:
    """An equation with '...' spelled out in spare letters and the output written out
    (implicit mode: the letters used once, alphabetically, after the ellipsis dims)."""
    import string  # noqa: PLC0415

    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise RuntimeError(f"einsum(): {len(ins)} operands in the equation {equation!r} but {len(shapes)} given")
    spare = [c for c in string.ascii_letters if c not in eq]
    n_ell = _builtins.max([len(s) - (len(sub) - 3) for sub, s in zip(ins, shapes) if "..." in sub] or [0])
    ell = "".join(spare[:n_ell])
    fixed = []
    for sub, s in zip(ins, shapes):
        if "..." in sub:
            n = len(s) - (len(sub) - 3)
            sub = sub.replace("...", ell[n_ell - n:] if n else "")
        fixed.append(sub)
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(fixed)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return ",".join(fixed) + "->" + out


def einsum(equation, *operands):
    """The Einstein-summation contraction of `operands` described by `equation`; also in the
    sublist form einsum(op1, [0, 1], op2, [1, 2], [0, 2]). Mirrors torch.einsum."""
    if not isinstance(equation, str):  # the sublist form: operands and index lists alternating
        equation, operands = _einsum_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = _explicit_einsum(equation, [tuple(o.shape) for o in operands])
    return M.EINSUM(*operands, equation=eq)


def _einsum_sublists(args) -> tuple[str, tuple]:
    """(equation, operands) of einsum's sublist form: each index an int in [0, 52) (a letter)
    or Ellipsis; an odd count of arguments ends with the output's sublist."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def spell(sub) -> str:
        out = []
        for i in sub:
            if i is Ellipsis:
                out.append("...")
            elif isinstance(i, int) and 0 <= i < len(letters):
                out.append(letters[i])
            else:
                raise ValueError(f"einsum(): expected subscript to be within the range [0, 52), but got {i}")
        return "".join(out)

    operands = tuple(args[0:len(args) - len(args) % 2:2])
    inputs = ",".join(spell(sub) for sub in args[1:len(args) - len(args) % 2:2])
    return (inputs + "->" + spell(args[-1]) if len(args) % 2 else inputs), operands


def _check_matrix(name: str, input) -> None:
    if _ndim(input) < 2:  # NumPy would broadcast a vector to a matrix instead
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions (got shape {tuple(input.shape)})")


def tril(input, diagonal=0):
    """input with the elements above the `diagonal`-th diagonal zeroed. Mirrors torch.tril."""
    _check_matrix("tril", input)
    return I.TRIL(input, diagonal=int(diagonal))


def triu(input, diagonal=0):
    """input with the elements below the `diagonal`-th diagonal zeroed. Mirrors torch.triu."""
    _check_matrix("triu", input)
    return I.TRIU(input, diagonal=int(diagonal))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal at `offset` of the dim1/dim2 planes, as the last dimension (a view). Mirrors torch.diagonal."""
    nd = _ndim(input)
    d1, d2 = norm_dim("diagonal", dim1, nd), norm_dim("diagonal", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return I.DIAGONAL(input, offset=int(offset), dim1=d1, dim2=d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose dim1/dim2 planes have input's last dimension on the `offset` diagonal. Mirrors torch.diag_embed."""
    n = input.shape[-1] + _builtins.abs(offset)
    nd = _ndim(input) + 1
    d1, d2 = norm_dim("diag_embed", dim1, nd), norm_dim("diag_embed", dim2, nd)
    shape = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return I.DIAGONAL_GRAD(input, shape=tuple(shape), offset=int(offset), dim1=d1, dim2=d2)


def diag(input, diagonal=0):
    """A 1-D input as the diagonal of a square matrix; a 2-D input's diagonal as 1-D."""
    if _ndim(input) == 1:
        n = input.shape[0] + _builtins.abs(diagonal)
        return I.DIAGONAL_GRAD(input, shape=(n, n), offset=int(diagonal), dim1=0, dim2=1)
    if _ndim(input) == 2:
        return I.DIAGONAL(input, offset=int(diagonal), dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {_ndim(input)}D")


def trace(input):
    """The sum of the main diagonal of a 2-d tensor. Mirrors torch.trace."""
    if _ndim(input) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {_ndim(input)}")
    return _renamed(R.SUM(I.DIAGONAL(input, offset=0, dim1=0, dim2=1), dims=None, keepdim=False), "TraceBackward0")
