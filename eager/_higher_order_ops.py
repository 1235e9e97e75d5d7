"""PyTorch's control-flow operators (`torch.cond`, `torch._higher_order_ops.while_loop` and
`scan`), with their signatures, for code that runs both ways.

Run eagerly they are the Python loop or the plain branch on eager tensors, so gradients flow
through whatever the functions compute. While `static` traces (under `static.compile`, or
`eager.compile`), they hand over to `static.control_flow`, which records one loop node
whose body is traced once: a 1000-step loop compiles as fast as one step. `static` is
imported only when a trace is active (eager imports nothing of static)."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from ._tensor import Tensor

__all__ = ["cond", "scan", "while_loop"]


def _static_cf() -> Any:
    """static.control_flow when a trace is active on this thread, else None."""
    tracer = sys.modules.get("static.tracing.tracer")
    if tracer is None or not tracer.ACTIVE.stack:
        return None
    import static.control_flow as cf  # noqa: PLC0415  (static is loaded: a trace is running)

    return cf


def _truth(pred: Any, where: str) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"{where}: expected pred to be bool or single-element tensor, but got a tensor of "
                               f"shape {tuple(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int)):
        return bool(pred)
    raise RuntimeError(f"{where}: expected pred to be bool or a boolean tensor with a single item, but got "
                       f"{type(pred).__name__}")


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: Sequence[Any] | Any = ()) -> Any:
    """torch.cond: `true_fn(*operands)` if pred else `false_fn(*operands)`. Traced, both
    branches are traced, must return results of identical types, and only the chosen one
    runs (static.control_flow.cond)."""
    ops = _as_tuple(operands)
    cf = _static_cf()
    if cf is not None:
        return cf.cond(pred, true_fn, false_fn, *ops)
    if getattr(type(pred), "__graphmode_batched__", False):  # under vmap: both branches, then a select
        from ._functional import where  # noqa: PLC0415
        from .func import _leaves, _rebuild  # noqa: PLC0415

        t, f = true_fn(*ops), false_fn(*ops)
        return _rebuild(t, [where(pred, a, b) for a, b in zip(_leaves(t), _leaves(f))])
    return true_fn(*ops) if _truth(pred, "torch.cond") else false_fn(*ops)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: Sequence[Any],
               additional_inputs: Sequence[Any] | None = None) -> tuple:
    """torch._higher_order_ops.while_loop: while `cond_fn(*carried, *additional)`:
    `carried = body_fn(*carried, *additional)`; returns the final carried values (a tuple)."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}")
    extra = _as_tuple(additional_inputs)
    carried = tuple(carried_inputs)
    cf = _static_cf()
    if cf is not None:
        out = cf.while_loop(lambda c: cond_fn(*c, *extra), lambda c: tuple(_as_tuple(body_fn(*c, *extra))), carried)
        return tuple(out)
    while _truth(cond_fn(*carried, *extra), "while_loop"):
        new = _as_tuple(body_fn(*carried, *extra))
        if len(new) != len(carried):
            raise RuntimeError(f"while_loop: body_fn returned {len(new)} values for {len(carried)} carried inputs; "
                               "it must return one value per carried input")
        carried = new
    return carried


def scan(combine_fn: Callable, init: Any, xs: Any, *, dim: int = 0, reverse: bool = False,
         additional_inputs: Sequence[Any] | None = None) -> tuple:
    """torch._higher_order_ops.scan: `carry, y = combine_fn(carry, x)` over slices of `xs`
    along `dim`; returns (final carry, the ys stacked along `dim`)."""
    extra = _as_tuple(additional_inputs)
    fn = (lambda c, x: combine_fn(c, x, *extra)) if extra else combine_fn
    from ._functional import movedim, stack  # noqa: PLC0415
    from .func import _leaves, _rebuild  # noqa: PLC0415

    cf = _static_cf()
    if cf is not None:
        lead = [movedim(x, dim, 0) if dim != 0 else x for x in _leaves(xs)]
        carry, traced_ys = cf.scan(fn, init, _rebuild(xs, lead), reverse=reverse)
        return carry, _rebuild(traced_ys, [movedim(y, 0, dim) if dim != 0 else y for y in _leaves(traced_ys)])
    leaves = _leaves(xs)
    sizes = {int(x.shape[dim]) for x in leaves}
    if len(sizes) != 1:
        raise RuntimeError(f"scan: all xs leaves must have the same size along dim={dim}, got sizes {sorted(sizes)}")
    n = sizes.pop()
    carry = init
    ys: list = [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        carry, ys[t] = fn(carry, _rebuild(xs, [x.select(dim, t) for x in leaves]))
    if n == 0:
        return carry, None
    per_step = [_leaves(y) for y in ys]
    stacked = [stack([per_step[t][k] for t in range(n)], dim=dim) for k in range(len(per_step[0]))]
    return carry, _rebuild(ys[0], stacked)
