"""What the pointwise records share: their abstract rules (a float unary op keeps its
operand's type; a broadcasting op gives the broadcast shape), the samples the registry-wide tests
draw, the builder of a unary float op and the VJP helper that skips unwanted gradients."""
from __future__ import annotations

from ._checks import broadcast_shapes, require_float, same_dtype, specs_of
from ._registry import OpDef, TensorSpec, defop


# -- abstract rules -------------------------------------------------------------------------
def _unary_float(name):
    def abstract(x, **attrs):
        require_float(name, x)
        return x

    return abstract


def _elementwise(name, result_dtype=None):
    def abstract(*operands, **attrs):
        specs = specs_of(operands)
        shape = broadcast_shapes(name, *(s.shape for s in specs))
        return TensorSpec(shape, result_dtype or same_dtype(name, specs))

    return abstract


# -- samples for the registry-wide tests (float64, broadcasting shapes) -----------------------
def _any(*shapes, **attrs):
    return lambda rng: [(tuple(rng.standard_normal(s) for s in shapes), attrs)]


def _positive(*shapes, **attrs):
    return lambda rng: [(tuple(rng.uniform(0.5, 2.0, s) for s in shapes), attrs)]


def _away_from_zero(*shapes, **attrs):
    def make(rng):
        arrays = []
        for s in shapes:
            a = rng.uniform(0.3, 1.5, s) * rng.choice([-1.0, 1.0], s)
            arrays.append(a)
        return [(tuple(arrays), attrs)]

    return make


# the Python surface eager generates from a record (eager._surface): eager.<name>, Tensor.<name>
# and the in-place Tensor.<name>_
_ALL = ("function", "method", "inplace")


def _unary(name, forward, vjp, grad_name, samples, save=(0,), save_output=False, doc="", **facts) -> OpDef:
    return defop(
        name, forward=forward, abstract=_unary_float(name), vjp=vjp, grad_name=grad_name,
        save=save, save_output=save_output, promote="float", samples=samples, doc=doc,
        batchable=True, **facts,
    )


# A VJP computes the gradient of operand i only when ctx.needs(i): a constant operand such
# as the 2.0 of `x * 2.0` then costs no backward op.
def _needs(ctx, i, make):
    """`make()` when operand i wants a gradient, else None."""
    return make() if ctx.needs(i) else None
