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

from gmbase.errors import UncapturedHigherOrderOpError

from ._tensor import Tensor

__all__ = ["cond", "scan", "while_loop"]


class ControlFlowTypeError(TypeError, UncapturedHigherOrderOpError):
    """Functions of torch.cond / while_loop / scan whose results break the operator's rules
    (a body changing its carry's types, branches of different types). PyTorch raises
    torch._dynamo.exc.UncapturedHigherOrderOpError; static's loops raise JAX's TypeError with
    the user's line: this is both, with static's message, in eager mode and traced."""


def _checks() -> Any:
    """static.control_flow's carry and branch checks (imported at the first loop: static's
    checks are the one definition of the rule, and eager imports nothing of static before)."""
    import static.control_flow as cf  # noqa: PLC0415

    return cf


def _rethrown(exc: TypeError) -> TypeError:
    """static's TypeError for a broken rule (static.control_flow.body.RuleTypeError) as
    ControlFlowTypeError, the same message; any other TypeError (one the user's function
    raised) as it was."""
    rule = getattr(sys.modules.get("static.control_flow.body"), "RuleTypeError", None)
    if isinstance(exc, ControlFlowTypeError) or rule is None or not isinstance(exc, rule):
        return exc
    return ControlFlowTypeError(str(exc))


def _static_cf() -> Any:
    """static.control_flow when a trace is active on this thread, else None."""
    tracer = sys.modules.get("static.tracing.tracer")
    if tracer is None or not tracer.ACTIVE.stack:
        return None
    import static.control_flow as cf  # noqa: PLC0415  (static is loaded: a trace is running)

    return cf


def _truth(pred: Any, where: str) -> bool:
    """pred as torch takes it: a Python number, or a tensor of one element (any dtype)."""
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred!r}. ({where}: "
                               f"a tensor of shape {tuple(pred.shape)})")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
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
    try:
        if cf is not None:
            return cf.cond(pred, true_fn, false_fn, *ops)
        if getattr(type(pred), "__graphmode_batched__", False):  # under vmap: both branches, then a select
            return _checks().cond(pred, true_fn, false_fn, *ops)
        chosen = _truth(pred, "torch.cond")
        return _checks().cond(chosen, true_fn, false_fn, *ops)  # (checks both branches' types once)
    except TypeError as exc:
        raise _rethrown(exc) from None


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
        try:
            out = cf.while_loop(lambda c: cond_fn(*c, *extra), lambda c: tuple(_as_tuple(body_fn(*c, *extra))),
                                carried)
        except TypeError as exc:
            raise _rethrown(exc) from None
        return tuple(out)
    checks = _checks()
    check = checks.body.StepChecker("while_loop body", checks.body.user_location())
    while _truth(cond_fn(*carried, *extra), "while_loop"):
        new = _as_tuple(body_fn(*carried, *extra))
        try:
            check(carried, new)
        except TypeError as exc:
            raise _rethrown(exc) from None
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

    leaves = _leaves(xs)
    if not leaves:
        raise RuntimeError("scan: xs must have at least one tensor to scan over (torch's scan takes its length from xs)")
    if any(not hasattr(x, "shape") or len(x.shape) <= dim or int(x.shape[dim]) == 0 for x in leaves):
        raise RuntimeError("All xs leaves must at least have 'dim' number of dimensions and scan dimension > 0 "
                           f"(scan over dim={dim} of xs of shapes {[tuple(getattr(x, 'shape', ())) for x in leaves]})")
    sizes = {int(x.shape[dim]) for x in leaves}
    if len(sizes) != 1:
        raise RuntimeError(f"scan: all xs leaves must have the same size along dim={dim}, got sizes {sorted(sizes)}")
    cf = _static_cf()
    if cf is not None:
        lead = [movedim(x, dim, 0) if dim != 0 else x for x in leaves]
        try:
            carry, traced_ys = cf.scan(fn, init, _rebuild(xs, lead), reverse=reverse)
        except TypeError as exc:
            raise _rethrown(exc) from None
        return carry, _rebuild(traced_ys, [movedim(y, 0, dim) if dim != 0 else y for y in _leaves(traced_ys)])
    n = sizes.pop()
    checks = _checks()
    check = checks.body.StepChecker("scan body", checks.body.user_location())
    carry = init
    ys: list = [None] * n
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        res = fn(carry, _rebuild(xs, [x.select(dim, t) for x in leaves]))
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise RuntimeError(f"scan: combine_fn must return a pair (next carry, y), got {type(res).__name__}")
        try:
            check(carry, res[0])
        except TypeError as exc:
            raise _rethrown(exc) from None
        carry, ys[t] = res
    per_step = [_leaves(y) for y in ys]
    stacked = [stack([per_step[t][k] for t in range(n)], dim=dim) for k in range(len(per_step[0]))]
    return carry, _rebuild(ys[0], stacked)
