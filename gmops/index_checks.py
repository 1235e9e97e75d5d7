"""Range checks of index *values*: one op, `check_index_range`, and the rules of the ops
whose eager forward validates its indices (gather, the scatters, index_add, index_select,
embedding).

Why an op: an index out of range is a user error that eager reports at once, but a compiled
graph only sees shapes while it is traced. NumPy's `take` wraps a negative index around (a
target of -2 reads class C-2) and raises its own raw IndexError for a large one, so without a
check in the graph compiled code would be silently wrong. `check_index_range(index)` returns
its operand unchanged after one pass over it (min and max) and raises the same exception, with
the same message, as eager; its consumer reads its result, so no pass can drop it or move the
consumer before it. It is not fusible and not folded (an "index" op); it is pure, so CSE may
merge two checks of one value (the same check), and a compiled backward that reads the checked
index recomputes the check from the saved index (`extra["recompute"]`, static.passes.remat)
rather than saving a second copy of it: a pass over a small integer tensor. It has no gradient
(indices are integers).

An op whose forward checks its index operand declares a *rule* here (`RULES[name]`): from the
operand shapes and attributes, which operand, which range, which exception and message. Eager
runs the rule inside the op's forward (so the message is the same), and static's tracer
(`static.trace_record`) appends a `check_index_range` node before the op from the same rule.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ._registry import REGISTRY, TensorSpec, defop

ERRORS: dict[str, type[Exception]] = {"IndexError": IndexError, "RuntimeError": RuntimeError}


class IndexCheck(NamedTuple):
    """One range check: operand `position` must lie in [low, high); otherwise `error` (a
    name in ERRORS) with `message`, formatted with {value} (the first bound broken: the
    smallest value when it is below low, else the largest), {lo} and {hi} (min and max), {low}
    and {high} (the bounds: a dynamic size reads as its value at run time, not its symbol)."""

    position: int
    low: int
    high: int
    error: str
    message: str


def check_range(xp: Any, index: Any, low: int, high: int, error: str, message: str, below: str = "") -> None:
    """Raise ERRORS[error](message) when a value of `index` lies outside [low, high) (the
    message `below`, where given, when the bound broken is the low one)."""
    size = getattr(index, "size", 1)
    if not size:
        return
    lo, hi = int(xp.min(index)), int(xp.max(index))
    if lo < low or hi >= high:
        text = below if below and lo < low else message
        raise ERRORS[error](text.format(value=lo if lo < low else hi, lo=lo, hi=hi, low=low, high=high))


def _forward(xp: Any, index: Any, low: int, high: int, error: str, message: str, below: str = "") -> Any:
    check_range(xp, index, low, high, error, message, below)
    return index


def _abstract(index: TensorSpec, low: int, high: int, error: str, message: str, below: str = "") -> TensorSpec:
    if index.dtype.is_floating_point or index.dtype.name == "bool":
        raise TypeError(f"check_index_range: the index must be an integer tensor, got {index.dtype.name}")
    if error not in ERRORS:
        raise ValueError(f"check_index_range: error {error!r} is not one of {sorted(ERRORS)}")
    return TensorSpec(tuple(index.shape), index.dtype)


CHECK_INDEX_RANGE = defop(
    "check_index_range", arity=1, forward=_forward, abstract=_abstract,
    kind="index", fusible=False, aliases_operand=True, extra={"recompute": True},
    layout="view",
    # vmap: the batch axis is one more axis of the index; every value is checked alike
    batch_rule=lambda args, batched, attrs, size: REGISTRY["check_index_range"](args[0], **attrs),
    samples=lambda rng: [((rng.integers(0, 5, (3, 4)),),
                          {"low": 0, "high": 5, "error": "IndexError", "message": "index {value} out of range"})],
    doc="its index operand, after checking every value lies in [low, high) (raising `error` with `message`)",
)


def _dim_size(shape: tuple, dim: int) -> int:
    return shape[dim] if shape else 1


def _along_rule(x: Any, index: Any, *rest: Any, dim: int, **_: Any) -> list[IndexCheck]:
    """gather, scatter, scatter_add, scatter_reduce, index_add: operand 1 indexes x along dim
    (PyTorch: RuntimeError, where NumPy would wrap a negative index around)."""
    n = _dim_size(tuple(x.shape), dim)
    return [IndexCheck(1, 0, n, "RuntimeError", f"index {{value}} is out of bounds for dimension {dim} with size {{high}}")]


def _index_select_rule(x: Any, index: Any, dim: int) -> list[IndexCheck]:
    n = _dim_size(tuple(x.shape), dim)
    return [IndexCheck(1, 0, n, "IndexError", f"index_select(): index out of range in self (index {{value}} for "
                                              f"dimension {dim} of size {{high}}); indices must lie in [0, {{high}})")]


def embedding_message(n: int) -> str:
    """eager.nn.functional.embedding's message (a template of {lo} and {hi})."""
    return (f"embedding: index out of range in self (indices span [{{lo}}, {{hi}}] for a weight of {n} rows); "
            f"indices must lie in [0, {n})")


def _embedding_rule(weight: Any, indices: Any, padding_idx: Any = None) -> list[IndexCheck]:
    n = tuple(weight.shape)[0]
    return [IndexCheck(1, 0, n, "IndexError", embedding_message(n))]


def nll_target_message(n_classes: int) -> str:
    """eager.nn.functional.nll_loss's message for a target outside [0, C)."""
    return f"Target out of bounds: class indices must lie in [0, {n_classes})"


RULES: dict[str, Callable[..., list[IndexCheck]]] = {
    "gather": _along_rule, "scatter": _along_rule, "scatter_add": _along_rule, "scatter_reduce": _along_rule,
    "index_add": _along_rule, "index_select": _index_select_rule, "embedding": _embedding_rule,
}


def checks_of(name: str, operands: list | tuple, attrs: dict) -> list[IndexCheck]:
    """The checks op `name` makes on these operands (anything with `.shape`); [] for most ops."""
    rule = RULES.get(name)
    return [] if rule is None else rule(*operands, **attrs)


def _checked(name: str) -> None:
    """Run the op's rule inside its forward, before NumPy sees the indices."""
    op = REGISTRY[name]
    forward = op.forward

    def checked_forward(xp: Any, *operands: Any, **attrs: Any) -> Any:
        for c in checks_of(name, operands, attrs):
            check_range(xp, operands[c.position], c.low, c.high, c.error, c.message)
        return forward(xp, *operands, **attrs)

    checked_forward.__wrapped__ = forward  # type: ignore[attr-defined]
    op.forward = checked_forward
    op.extra["index_checks"] = RULES[name]


for _name in RULES:
    _checked(_name)

__all__ = ["CHECK_INDEX_RANGE", "ERRORS", "IndexCheck", "RULES", "check_range", "checks_of", "embedding_message",
           "nll_target_message"]
