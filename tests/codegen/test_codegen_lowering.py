"""The lowering table covers the whole registry: an op without a NumPy and a CuPy
lowering (and, when pointwise, the forms fused kernels need) fails here."""
from __future__ import annotations

import pytest

from codegen.lowering import TABLE, lowering_for, missing_ops
from eager.ops import REGISTRY


def test_no_op_is_missing():
    assert missing_ops() == [], f"add lowerings to codegen/lowering.py for: {missing_ops()}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_op_has_both_lowerings(name):
    assert name in TABLE, f"{name} has no entry in codegen/lowering.py"
    low = TABLE[name]
    assert (low.numpy.call or low.numpy.body) and low.cupy.call, name
    if low.pointwise:
        assert low.cupy.expr, f"{name} is pointwise but has no C expression for fused CuPy kernels"
        assert low.numpy.ufunc or low.numpy.into, f"{name} is pointwise but cannot write into a buffer"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_elementwise_ops_are_fusable_unless_explained(name):
    """Ops the registry calls elementwise get scalar expressions; an exception says why."""
    low = TABLE[name]
    if REGISTRY[name].kind == "elementwise":
        assert low.pointwise or low.note, f"{name}: elementwise but not pointwise, and no note why"


def test_unknown_op_falls_back_to_its_forward():
    low = lowering_for("no_such_op")
    assert "_rt.forward('no_such_op'" in low.numpy.call and not low.pointwise


def test_table_is_keyed_by_op_records():
    """As JAX keys rules by the primitive object: every key is a registry record, names
    resolve through the registry, and no lowering can be registered for a name without one."""
    from codegen.lowering import CupyLowering, NumpyLowering, _add

    assert all(REGISTRY[op.name] is op for op in TABLE)
    assert TABLE["add"] is TABLE[REGISTRY["add"]] and "no_such_op" not in TABLE
    with pytest.raises(KeyError):
        _add("no_such_op", NumpyLowering(call="{0}"), CupyLowering(call="{0}"))
    with pytest.raises(TypeError, match="keyed by op records"):
        TABLE["add"] = TABLE["add"]
