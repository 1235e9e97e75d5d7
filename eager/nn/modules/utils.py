"""torch.nn.modules.utils: the argument helpers layer code imports (`_pair(3) == (3, 3)`)."""
from __future__ import annotations

import collections.abc
from itertools import repeat
from typing import Any


def _ntuple(n: int, name: str = "parse") -> Any:
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each element of t repeated n times, in reverse order (padding arguments for F.pad)."""
    return tuple(x for x in reversed(t) for _ in range(n))
