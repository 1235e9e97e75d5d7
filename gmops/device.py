"""Two records eager's tensors use for data movement, kept with the other records so that a
code generator finds them without loading eager: `to_device` (a copy between host and GPU
memory, `Tensor.to('cuda')`, whose gradient moves back) and `fill` (x's shape filled with a
value while staying on x's graph: `fill_`/`zero_` on a non-leaf)."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from ._checks import fit_scalar
from ._registry import OpDef, TensorSpec, defop


def cupy_module() -> Any:
    """CuPy if it imports and a CUDA device answers; None otherwise."""
    try:
        import cupy  # noqa: PLC0415

        return cupy if cupy.cuda.runtime.getDeviceCount() >= 1 else None
    except Exception:  # ImportError, or a CUDA runtime that cannot start
        return None


def _to_device_forward(xp: Any, x: Any, device: str, source: str) -> Any:
    if device == "cpu":
        return x if isinstance(x, np.ndarray) else x.get()
    cp = cupy_module()
    if cp is None:
        raise RuntimeError("Torch not compiled with CUDA enabled: eager's 'cuda' device needs CuPy and a GPU")
    with cp.cuda.Device(int(device.partition(":")[2] or 0)):
        return cp.asarray(x)


TO_DEVICE: OpDef = defop(
    "to_device", forward=_to_device_forward, abstract=lambda x, device, source: x,
    vjp=lambda ctx, g: (TO_DEVICE(g, device=ctx.attrs["source"], source=ctx.attrs["device"]),),
    grad_name="ToCopyBackward0", kind="other",
    aliases_operand=True,  # on its own device, the operand itself
    samples=lambda rng: [((rng.standard_normal((3,)),), {"device": "cpu", "source": "cpu"})],
)


def _fill_vjp(ctx: Any, g: Any) -> tuple:
    from .special import FULL_LIKE  # noqa: PLC0415

    return (FULL_LIKE(g, value=0.0),)


def _fill_abstract(x: TensorSpec, value: Any) -> TensorSpec:
    fit_scalar("fill_", value, x.dtype)  # a value x's dtype cannot hold raises at trace time too
    return x


FILL = defop(
    "fill", forward=lambda xp, x, value: xp.full_like(x, fit_scalar("fill_", value, _dtypes.from_numpy(x.dtype))),
    abstract=_fill_abstract,
    vjp=_fill_vjp, grad_name="FillBackward0", kind="other",
    samples=lambda rng: [((rng.standard_normal((3,)),), {"value": 2.5})],
    doc="x's shape filled with value, still connected to x's graph (fill_/zero_ on a non-leaf)",
)
