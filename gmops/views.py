"""Views with a record of their own: Tensor.unfold's sliding windows, and writing through a view
(`view_scatter`, with `replay_view` remaking a view from its steps)."""
from __future__ import annotations

import numpy as np

from ._registry import VARIADIC, OpDef, TensorSpec, defop
from .shape_ops import INDEX, INDEX_GRAD


# -- Tensor.unfold: sliding windows as a view ----------------------------------------------------
def _windows_abstract(x, dim, size, step):
    length = x.shape[dim]
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (length - size) // step + 1
    return TensorSpec(tuple(x.shape[:dim]) + (count,) + tuple(x.shape[dim + 1:]) + (size,), x.dtype)


def _windows(xp, x, dim, size, step):
    """The windows as strides over x's memory (PyTorch's unfold is a view: a window step
    apart along dim, its elements along a new last dim), writable where x is."""
    shape = _windows_abstract(x, dim, size, step).shape
    strides = x.strides[:dim] + (x.strides[dim] * step,) + x.strides[dim + 1:] + (x.strides[dim],)
    if xp is np:
        return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=x.flags.writeable)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


def _windows_vjp(ctx, g):
    """Each window element k sends its gradient back to positions k, k + step, ...: one
    strided write per element of a window, summed (overlapping windows add up)."""
    dim, size, step = ctx.attrs["dim"], ctx.attrs["size"], ctx.attrs["step"]
    shape = ctx.in_shape(0)
    count = g.shape[dim]
    total = None
    for k in range(size):
        part = INDEX(g, key=(("ellipsis",), ("int", k)), n_index=0)
        key = (("slice", None, None, None),) * dim + (("slice", k, k + step * (count - 1) + 1, step),)
        spread = INDEX_GRAD(part, key=key, shape=shape, n_index=0)
        total = spread if total is None else total + spread
    return (total,)


WINDOWS: OpDef = defop(
    "windows", forward=_windows, abstract=_windows_abstract, vjp=_windows_vjp, grad_name="UnfoldBackward0",
    kind="shape", is_view=True,
    samples=lambda rng: [((rng.standard_normal((7, 3)),), {"dim": 0, "size": 3, "step": 2}),
                         ((rng.standard_normal((2, 5)),), {"dim": 1, "size": 2, "step": 1})],
    doc="Tensor.unfold: every window of size elements, step apart along dim, as a new last dim (a view)",
)


# -- writing through a view --------------------------------------------------------------------
# A view is described by the steps that made it from the tensor owning the memory:
# ((op name, attrs as sorted items, output index or None), ...). In-place writes to a view
# of a tensor in the graph become `view_scatter` of the new view value into its base.
def _replay_array(xp, arr, steps):
    from ._registry import REGISTRY  # noqa: PLC0415

    for name, attrs, k in steps:
        arr = REGISTRY[name].forward(xp, arr, **dict(attrs))
        if k is not None:
            arr = arr[k]
    return arr


def replay_view(x, steps):
    """The view of x that `steps` describe, made with ops (so it is recorded)."""
    from ._registry import REGISTRY  # noqa: PLC0415

    for name, attrs, k in steps:
        x = REGISTRY[name](x, **dict(attrs))
        if k is not None:
            x = x[k]
    return x


def _view_scatter(xp, base, value, steps):
    out = xp.array(base, copy=True)
    _replay_array(xp, out, steps)[...] = value
    return out


def _view_scatter_vjp(ctx, g):
    steps = ctx.attrs["steps"]
    g_base = VIEW_SCATTER(g, 0.0, steps=steps) if ctx.needs(0) else None
    g_value = replay_view(g, steps) if ctx.needs(1) else None
    return g_base, g_value


VIEW_SCATTER = defop(
    "view_scatter", forward=_view_scatter,
    abstract=lambda base, value, steps: TensorSpec(base.shape, base.dtype),
    vjp=_view_scatter_vjp, grad_name="CopySlices", kind="index",
    samples=lambda rng: [
        ((rng.standard_normal((4, 5)), rng.standard_normal((5,))),
         {"steps": (("index", (("key", (("int", 1),)), ("n_index", 0)), None),)}),
        ((rng.standard_normal((2, 3)), rng.standard_normal((2,))),
         {"steps": (("transpose", (("dim0", 0), ("dim1", 1)), None),
                    ("index", (("key", (("slice", 1, None, None),)), ("n_index", 0)), None))}),
    ],
    doc="a copy of base with `value` written into the view of it that `steps` make (CopySlices)",
    arity=VARIADIC,
)
