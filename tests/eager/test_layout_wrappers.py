"""The layout rule around an op record's forward (gmops._layout.with_layout) takes the
forward's own parameters (gmbase.signatures), leaves a row-major result as it is and makes
any other one row-major (or column-major for "column_major")."""
from __future__ import annotations

import inspect

import numpy as np

from gmbase import signatures
from gmops import REGISTRY
from gmops._layout import with_layout


def _innermost(fn):
    while getattr(fn, "layout", None) is None and getattr(fn, "__wrapped__", None) is not None:
        fn = fn.__wrapped__
    return fn


def test_each_wrapped_forward_keeps_its_forwards_parameters():
    seen = 0
    for name, op in REGISTRY.items():
        if op.layout not in ("contiguous", "column_major"):
            continue
        wrapper = _innermost(op.forward)
        assert wrapper.layout == op.layout, name
        inner = inspect.signature(wrapper.__wrapped__, follow_wrapped=False)
        own = inspect.signature(wrapper, follow_wrapped=False)
        if "<rendered" in wrapper.__code__.co_filename:
            assert [(p.name, p.kind, p.default) for p in own.parameters.values()] == \
                [(p.name, p.kind, p.default) for p in inner.parameters.values()], name
            seen += 1
    assert seen > 30


def test_results_follow_the_layout_and_wrapping_twice_changes_nothing():
    def transposed(xp, a, *, k=1):
        return (a * k).T

    fn = with_layout(transposed, "contiguous")
    assert with_layout(fn, "contiguous") is fn
    a = np.arange(6.0).reshape(2, 3)
    out = fn(np, a, k=2)
    assert out.flags.c_contiguous and np.array_equal(out, (a * 2).T)
    col = with_layout(lambda xp, a: a.copy(), "column_major")(np, np.ones((3, 3)))
    assert col.flags.f_contiguous


def test_a_signature_that_cannot_be_spelled_falls_back():
    def clash(xp, _fn):  # a parameter named as the wrapper's own text names the function
        return _fn.T

    assert signatures.wrapper(clash, "w", "    return _fn({call})\n", {}, filename="w") is None
    fn = with_layout(clash, "contiguous")
    assert fn(np, np.ones((2, 3))).flags.c_contiguous and fn.__wrapped__ is clash
