"""Running an op eagerly: promote dtypes, call its forward, wrap the result and, when
gradients are wanted, record a backward `Node`. Other tensor-like types (static's tracer
values) take over an op by defining `__graphmode_dispatch__`."""
from __future__ import annotations

import numpy as np

from . import _dtypes
from ._grad_mode import STATE
from .autograd.graph import Node, SavedTensor

_SCALARS = (int, float, bool)
Tensor = None  # set by eager._tensor (a cycle at import time otherwise)


def dispatch(op, operands, attrs):
    for o in operands:
        handler = getattr(type(o), "__graphmode_dispatch__", None)
        if handler is not None:
            return handler(op, operands, attrs)
    return apply(op, operands, attrs)


def _as_operand(o):
    if isinstance(o, Tensor) or isinstance(o, _SCALARS):
        return o
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, (list, tuple, np.ndarray)) or hasattr(o, "__cuda_array_interface__"):
        from ._factories import tensor  # noqa: PLC0415

        return tensor(o)
    raise TypeError(f"expected a Tensor or a number as an operand, got {type(o).__name__}")


def _promote(op, operands):
    """Cast tensor operands to the op's result dtype by PyTorch's rules (Python scalars stay
    weak: 2.0 never makes a float32 tensor float64)."""
    start = 1 if op.name == "where" else 0
    dims, zero, scalars = [], [], []
    for o in operands[start:]:
        if isinstance(o, Tensor):
            (dims if o._data.ndim else zero).append(o.dtype)
        else:
            scalars.append(o)
    target = _dtypes.result_type(dims, zero, scalars)
    if op.promote == "float" and not target.is_floating_point:
        target = _dtypes.DEFAULT_FLOAT
    if all(o.dtype is target for o in operands[start:] if isinstance(o, Tensor)):
        return operands
    from .ops.elementwise import TO_DTYPE  # noqa: PLC0415

    out = list(operands)
    for i in range(start, len(out)):
        if isinstance(out[i], Tensor) and out[i].dtype is not target:
            out[i] = TO_DTYPE(out[i], dtype=target)
        elif isinstance(out[i], bool) and target.category:
            out[i] = int(out[i])
    return tuple(out)


def _check_devices(op, operands):
    first = None
    for o in operands:
        if isinstance(o, Tensor):
            if first is None:
                first = o
            elif type(o._data) is not type(first._data) or (
                not isinstance(o._data, np.ndarray) and o._data.device != first._data.device
            ):
                raise RuntimeError(
                    f"{op.name}: Expected all tensors to be on the same device, but found at least two "
                    f"devices, {first.device} and {o.device}! Move them with .to(device) first."
                )
    return first


def _explain_failure(op, operands, attrs, exc):
    """Re-raise a failed forward with the op's abstract rule, which names the op and shapes."""
    from .ops import TensorSpec  # noqa: PLC0415

    specs = [TensorSpec(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else o for o in operands]
    op.abstract(*specs, **attrs)  # raises the readable error when the inputs are at fault
    raise exc


def apply(op, operands, attrs):
    operands = tuple(_as_operand(o) for o in operands)
    first = _check_devices(op, operands)
    if op.promote is not None:
        operands = _promote(op, operands)
    from ._device import xp_of_array  # noqa: PLC0415

    xp = xp_of_array(first._data) if first is not None else np
    arrays = [o._data if isinstance(o, Tensor) else o for o in operands]
    try:
        result = op.forward(xp, *arrays, **attrs)
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, operands, attrs, exc)

    record = (
        STATE.enabled and op.vjp is not None
        and any(isinstance(o, Tensor) and o.requires_grad for o in operands)
    )
    if op.multi_output:
        outs = tuple(_wrap(r) for r in result)
    else:
        outs = (_wrap(result),)
    if op.is_view and first is not None:
        _mark_views(op, attrs, first, outs, xp)
    if record:
        _record(op, operands, attrs, outs)
    return outs if op.multi_output else outs[0]


def _mark_views(op, attrs, first, outs, xp):
    """Outputs that alias `first`'s memory share its version counter and remember the view
    steps from the memory's owner (eager._inplace replays them for writes into a view)."""
    for k, t in enumerate(outs):
        if xp.may_share_memory(t._data, first._data):
            step = (op, attrs, k if op.multi_output else None)
            if first._base is None:
                t._base, t._view = first, (step,)
            else:
                t._base = first._base
                t._view = None if first._view is None else first._view + (step,)
            t._vc = first._vc


def _wrap(arr):
    if type(arr) is not np.ndarray and isinstance(arr, np.generic):
        arr = np.asarray(arr)
    return Tensor._make(arr)


def _record(op, operands, attrs, outs):
    edges, needs = [], []
    for o in operands:
        if isinstance(o, Tensor) and o.requires_grad:
            edges.append((o.grad_fn, o._output_nr) if o.grad_fn is not None else (o._accumulator(), 0))
            needs.append(True)
        else:
            edges.append((None, 0))
            needs.append(False)
    node = Node(op, attrs, operands, tuple(edges), needs, op.backward_name(operands, attrs))
    node._out_meta = [(t.shape, t.dtype) for t in outs]
    for nr, t in enumerate(outs):
        if t._data.dtype.kind in "fc":
            t.requires_grad = True
            t.grad_fn = node
            t._output_nr = nr
    if op.save_output:
        node._saved_out = SavedTensor(outs[0], is_output=True)
