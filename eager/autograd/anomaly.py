"""Anomaly mode: when on, every node remembers the forward stack that created it, a failing
backward names that node and shows where it came from, and a NaN produced in backward is
an error naming the node."""
from __future__ import annotations


from .._grad_mode import STATE


class set_detect_anomaly:
    """`set_detect_anomaly(True)` switches anomaly mode on now; as a context it restores."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = STATE.anomaly
        STATE.anomaly = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        STATE.anomaly = self._prev
        return False


class detect_anomaly(set_detect_anomaly):
    """Context manager (and decorator) enabling anomaly mode."""

    def __init__(self, check_nan: bool = True) -> None:
        self._prev = STATE.anomaly
        self._check = check_nan

    def __enter__(self):
        STATE.anomaly = True
        return self

    def __call__(self, fn):
        import functools  # noqa: PLC0415

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly():
                return fn(*a, **k)

        return wrapper


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def _forward_trace(node) -> str:
    return "".join(node._trace[-6:]) if node._trace else "(created before anomaly mode was enabled)"


def annotate(exc: BaseException, node) -> None:
    note = (f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            + _forward_trace(node))
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (exc.args[0] + "\n" + note,) + exc.args[1:]


def check_nan(node, grads) -> None:
    for i, g in enumerate(grads):
        if g is None:
            continue
        arr = g._data
        xp_isnan = getattr(type(arr), "__module__", "numpy").startswith("cupy")
        has_nan = bool((arr != arr).any()) if not xp_isnan else bool((arr != arr).any().get())
        if has_nan:
            err = RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
            annotate(err, node)
            raise err
