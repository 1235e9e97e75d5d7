"""A compiled call's result rebuilt by a generated expression per structure
(static.jit.bridge._unflattener) equals pytree's walk: the same values, the same types, the
same dict order; structures with dataclasses keep the walk."""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import eager
import static
from static.jit.bridge import _unflattener
from static.tracing import pytree

Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class Box:
    value: object


@pytest.mark.parametrize("tree", [
    1, (1,), (), [], {}, None, [1, 2], (1, (2, 3, 4, 5)), ((),), ([1],),
    {"b": 1, "a": (2, None)}, Pair(1, [2, (3,)]), eager.Size([4, 5]), [{"x": Pair(1, 2)}, (None, 3)],
])
def test_the_generated_builder_equals_the_walk(tree):
    leaves, structure = pytree.flatten(tree, lambda x: isinstance(x, int))
    build = _unflattener(structure)
    assert build is not None
    got, want = build(leaves), pytree.unflatten(structure, leaves)
    assert got == want and type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
    assert _unflattener(structure) is build  # made once per structure


def test_a_structure_with_objects_keeps_the_walk():
    structure = ("tuple", (("leaf",), ("dataclass", Box, ("value",), (("leaf",),))))  # (1, Box(2)) of a trace
    assert _unflattener(structure) is None
    assert pytree.unflatten(structure, [1, 2]) == (1, Box(2))


def test_compiled_results_keep_their_structure():
    def f(x, y):
        return x.sum(), {"b": (x * 2, [y + 1]), "a": Pair(x - y, None)}

    x = eager.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = eager.tensor(np.ones((2, 3), np.float32))
    compiled = static.compile(f, backend="numpy")
    for _ in range(2):  # the first call traces, the second takes the cached entry's call path
        got, want = compiled(x, y), f(x, y)
        assert type(got) is tuple and set(got[1]) == {"a", "b"} and type(got[1]["a"]) is Pair
        assert got[1]["a"].second is None and type(got[1]["b"][1]) is list
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy())
        np.testing.assert_allclose(got[1]["b"][1][0].numpy(), want[1]["b"][1][0].numpy())
        np.testing.assert_allclose(got[1]["a"].first.numpy(), want[1]["a"].first.numpy())


def test_a_returned_dict_keeps_eagers_key_order_and_an_argument_dict_of_either_order_runs():
    """A compiled function's dict reads like the eager function's: keys in insertion order
    (pytree once sorted them); a dict argument given in another order is another structure,
    which retraces rather than mixing up its values."""
    import eager
    import static

    def f(d):
        return {"z": d["b"] * 2, "a": d["a"] + 1, "m": d["b"] - d["a"]}

    compiled = static.compile(f)
    x, y = eager.tensor([1.0, 2.0]), eager.tensor([5.0, 7.0])
    for arg in ({"a": x, "b": y}, {"b": y, "a": x}):
        got, want = compiled(arg), f(arg)
        assert list(got) == list(want) == ["z", "a", "m"]
        for k in want:
            assert got[k].tolist() == want[k].tolist(), k
