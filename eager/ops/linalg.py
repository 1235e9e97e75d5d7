"""The matrix product, with NumPy's 1-D and batch-broadcasting rules."""
from __future__ import annotations

from ._checks import broadcast_shapes, same_dtype
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
    return "BmmBackward0" if na == nb == 3 else "MatmulBackward0"


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
        gb = MATMUL(TRANSPOSE(A, dim0=-1 % A.ndim, dim1=-2 % A.ndim), G)
        if len(sb) == 1:
            gb = RESHAPE(_sum_batch(gb), shape=sb)
    return ga, gb


def _sum_batch(x):
    """Collapse batch dims of a lifted 1-D operand's gradient: (..., 1, k) -> (1, k)."""
    lead = tuple(range(x.ndim - 2))
    return SUM(x, dims=lead, keepdim=False) if lead else x


MATMUL = defop(
    "matmul", forward=lambda xp, a, b: xp.matmul(a, b), abstract=_matmul_abstract, vjp=_matmul_vjp,
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
