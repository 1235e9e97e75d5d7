"""The matrix product, with NumPy's 1-D and batch-broadcasting rules."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative import stacked_gemm as _stacked_gemm
from gmnative.kernels import GEMM_SPLIT_MIN

from ._checks import broadcast_shapes, same_dtype
from ._native import try_native
from ._registry import TensorSpec, defop
from .reductions import SUM
from .shape_ops import RESHAPE, TRANSPOSE


# -- matrix product --------------------------------------------------------------------------
def _matmul_abstract(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        shape_a = a.shape if a.ndim > 1 else (1,) + a.shape
        raise RuntimeError(
            f"matmul: mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, shape_a[-2:]))} and "
            f"{'x'.join(map(str, b.shape[-2:] if b.ndim > 1 else b.shape + (1,)))}); "
            f"shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2:-1] if a.ndim > 1 else ()) + (b.shape[-1:] if b.ndim > 1 else ())
    return TensorSpec(shape, same_dtype("matmul", [a, b]))


def _matmul_grad_name(operands, attrs):
    na, nb = operands[0].ndim, operands[1].ndim
    if na == 1 and nb == 1:
        return "DotBackward0"
    if na == 2 and nb == 1:
        return "MvBackward0"
    if na == 2 and nb == 2:
        return "MmBackward0"
    # torch.matmul's other cases fold the batch into one product and view the result back
    # (torch.bmm names its own node: eager.bmm renames it)
    if na == 1 and nb == 2:
        return "SqueezeBackward4"
    if na == 2 and nb >= 3:
        return "CloneBackward0"
    return "UnsafeViewBackward0"


def _matmul_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = ctx.in_shape(0), ctx.in_shape(1)
    if len(sa) == 1 and len(sb) == 1:
        return (g * b if ctx.needs(0) else None, g * a if ctx.needs(1) else None)
    # Lift 1-D operands to matrices, as matmul itself does, and the gradient with them.
    A = RESHAPE(a, shape=(1,) + sa) if len(sa) == 1 else a
    B = RESHAPE(b, shape=sb + (1,)) if len(sb) == 1 else b
    gshape = tuple(g.shape)
    if len(sa) == 1:
        gshape = gshape[:-1] + (1,) + gshape[-1:] if len(sb) > 1 else gshape + (1,)
    if len(sb) == 1:
        gshape = gshape + (1,)
    G = RESHAPE(g, shape=gshape) if gshape != tuple(g.shape) else g
    ga = gb = None
    if ctx.needs(0):
        ga = MATMUL(G, TRANSPOSE(B, dim0=-1 % B.ndim, dim1=-2 % B.ndim))
        if len(sa) == 1:
            ga = RESHAPE(_sum_batch(ga), shape=sa)
    if ctx.needs(1):
        if A.ndim > 2 and len(sb) == 2 and G.ndim == A.ndim:
            # a stack by a matrix: the matrix's gradient is one product of all the rows
            # (A's rows^T @ G's rows), not a product per matrix of the stack summed after
            rows, k, n = math.prod(sa[:-1]), sa[-1], sb[-1]
            gb = MATMUL(TRANSPOSE(RESHAPE(A, shape=(rows, k)), dim0=1, dim1=0), RESHAPE(G, shape=(rows, n)))
        else:
            gb = MATMUL(TRANSPOSE(A, dim0=-1 % A.ndim, dim1=-2 % A.ndim), G)
        if len(sb) == 1:
            gb = RESHAPE(_sum_batch(gb), shape=sb)
    return ga, gb


def _sum_batch(x):
    """Collapse batch dims of a lifted 1-D operand's gradient: (..., 1, k) -> (1, k)."""
    lead = tuple(range(x.ndim - 2))
    return SUM(x, dims=lead, keepdim=False) if lead else x


# multiply-adds from which a NumPy product may be split across the native kernels' threads:
# below, one BLAS call costs less than handing a block to another thread even when it spins.
# Where the workers sleep between kernels the split starts higher (gmnative.kernels.
# split_min: 2**22, as waking a core costs 50-200 us). The native layer's number (imported above).


def _matmul_forward(xp, a, b):
    """xp.matmul; a large NumPy product with a 2-d right operand runs as one BLAS call per
    thread on blocks of rows where BLAS itself runs one thread (gmnative.kernels.matmul),
    as the compiled code's matmul does: the same bits in both modes. A large stack of
    products that is not one folded product (attention's q @ k^T, att @ v and their
    gradients: 3-d or 4-d views) is split across the kernels' threads by matrices, each the
    BLAS call NumPy's matmul makes (gmnative.stacked_gemm): np.matmul's bits."""
    if xp is np:
        ad, bd = getattr(a, "ndim", 0), getattr(b, "ndim", 0)
        if bd == 2 and ad >= 2 and a.size * b.shape[1] >= GEMM_SPLIT_MIN:
            out = try_native(xp, "matmul", a, b)
            if out is not None:
                return out
        if (ad > 2 or bd > 2) and ad >= 2 and bd >= 2 and a.size * b.shape[-1] >= GEMM_SPLIT_MIN and not (
                bd == 2 and a.flags.c_contiguous):
            out = _stacked_gemm.matmul(a, b)
            if out is not None:
                return out
    return fold_matmul(xp, a, b)


def fold_matmul(xp, a, b):
    """xp.matmul(a, b), a stack (3 or more dims, C-contiguous) by a matrix as ONE product of
    its rows: NumPy's matmul loops over the stack's matrices, one small BLAS call each (a
    (16, 32, 64) by (64, 192) product took 2x the time of the same rows as one (512, 64)
    matrix), where PyTorch folds the leading dims as this does. The same dot products, equal
    to rounding (BLAS may choose another kernel for another number of rows)."""
    if getattr(b, "ndim", 0) == 2 and getattr(a, "ndim", 0) > 2 and a.flags.c_contiguous and a.size:
        return xp.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[1],))
    return xp.matmul(a, b)


MATMUL = defop(
    "matmul", forward=_matmul_forward, abstract=_matmul_abstract, vjp=_matmul_vjp,
    grad_name=_matmul_grad_name, save=(0, 1), kind="linalg",
    samples=lambda rng: [
        ((rng.standard_normal((3, 4)), rng.standard_normal((4, 2))), {}),
        ((rng.standard_normal((4,)), rng.standard_normal((4,))), {}),
        ((rng.standard_normal((3, 4)), rng.standard_normal((4,))), {}),
        ((rng.standard_normal((4,)), rng.standard_normal((2, 4, 3))), {}),
        ((rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((5, 4, 2))), {}),
    ],
    arity=2,
)


# -- inverse, solve, determinant (LAPACK through the array library) ---------------------------
def _square(name: str, a) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point tensor as input. Got {a.dtype.name}")


def _square_spec(name: str, a, shape: tuple) -> TensorSpec:
    """The result's spec, once `a` is checked to be batches of square float matrices."""
    _square(name, a)
    return TensorSpec(shape, a.dtype)


def _m_t(x):
    """The transpose of the last two dims (batched matrices)."""
    return TRANSPOSE(x, dim0=x.ndim - 1, dim1=x.ndim - 2)


def _lapack(name: str, xp, fn, *arrays):
    """fn(*arrays) with a singular matrix reported as PyTorch reports it (a RuntimeError naming
    the op), on NumPy and on CuPy (which returns NaN unless asked to raise). The shape and
    dtype are checked first, as the abstract rule checks them (LAPACK's own errors for those
    would read as a singular matrix)."""
    a = arrays[0]
    _square(name, TensorSpec(tuple(a.shape), _dtypes.from_numpy(a.dtype)))
    try:
        if xp.__name__ == "cupy":
            import cupyx  # noqa: PLC0415

            with cupyx.errstate(linalg="raise"):
                return fn(*arrays)
        return fn(*arrays)
    except xp.linalg.LinAlgError as exc:
        raise RuntimeError(f"linalg.{name}: the input matrix is singular, so it cannot be inverted or solved "
                           f"({exc}); shape {tuple(arrays[0].shape)}") from None


def _well_conditioned(rng, shape):
    """Samples far from singular: a random matrix plus 3 I (finite differences stay accurate)."""
    return rng.standard_normal(shape) + 3.0 * np.eye(shape[-1])


INV = defop(
    "inv", forward=lambda xp, a: _lapack("inv", xp, xp.linalg.inv, a),
    abstract=lambda a: _square_spec("inv", a, tuple(a.shape)),
    vjp=lambda ctx, g: (-MATMUL(MATMUL(_m_t(ctx.out), g), _m_t(ctx.out)),),
    grad_name="LinalgInvExBackward0", save=(), save_output=True, kind="linalg", arity=1,
    layout="column_major",  # LAPACK's order, as torch.linalg.inv returns it
    samples=lambda rng: [((_well_conditioned(rng, (3, 3)),), {}), ((_well_conditioned(rng, (2, 4, 4)),), {})],
    doc="the matrix inverse of the last two dims (LAPACK's gesv through the array library)",
)


def _solve_abstract(a, b):
    _square("solve", a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({'x'.join(map(str, a.shape[-2:]))} and {'x'.join(map(str, b.shape[-2:]))})")
    batch = broadcast_shapes("linalg.solve", a.shape[:-2], b.shape[:-2])
    return TensorSpec(batch + tuple(b.shape[-2:]), same_dtype("linalg.solve", [a, b]))


def _solve_vjp(ctx, g):
    """X = A^-1 B: gB = A^-T g, gA = -gB X^T (summed over broadcast batch dims by fit_grad)."""
    gb = SOLVE(_m_t(ctx.input(0)), g)
    ga = -MATMUL(gb, _m_t(ctx.out)) if ctx.needs(0) else None
    return ga, (gb if ctx.needs(1) else None)


SOLVE = defop(
    "solve", forward=lambda xp, a, b: _lapack("solve", xp, xp.linalg.solve, a, b), abstract=_solve_abstract,
    vjp=_solve_vjp, grad_name="LinalgSolveExBackward0", save=(0,), save_output=True, kind="linalg", arity=2,
    layout="column_major",  # LAPACK's order, as torch.linalg.solve returns it
    samples=lambda rng: [((_well_conditioned(rng, (3, 3)), rng.standard_normal((3, 2))), {}),
                         ((_well_conditioned(rng, (2, 3, 3)), rng.standard_normal((3, 1))), {})],
    doc="X with A X = B for square A (..., n, n) and B (..., n, k), batch dims broadcast",
)


def _det_vjp(ctx, g):
    """d det(A) = det(A) A^-T: it needs A invertible (a singular A raises INV's error)."""
    scale = RESHAPE(g * ctx.out, shape=tuple(ctx.out.shape) + (1, 1))
    return (scale * _m_t(INV(ctx.input(0))),)


DET = defop(
    "det", forward=lambda xp, a: _lapack("det", xp, xp.linalg.det, a),
    abstract=lambda a: _square_spec("det", a, tuple(a.shape[:-2])),
    vjp=_det_vjp, grad_name="LinalgDetBackward0", save=(0,), save_output=True, kind="linalg", arity=1,
    samples=lambda rng: [((_well_conditioned(rng, (3, 3)),), {}), ((_well_conditioned(rng, (2, 2, 2)),), {})],
    doc="the determinant of the last two dims",
)
