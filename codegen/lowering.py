"""The lowering table: for every op of the registry, how each backend spells it.

Two spellings per backend, because generated code uses ops in two ways:
- *pointwise* inside a fused region: NumPy writes each result into a buffer (`ufunc`
  with `out=`, or an `into` statement), and for 0-d values evaluates a Python expression
  on NumPy scalars (`scalar`); CuPy inlines a C expression (`expr`) into one kernel;
- a *library call* on whole arrays (`call`), for everything else.

Templates are `str.format` strings: `{0}`, `{1}`... are the operands (already rendered
as source), `{args}` all of them, `{out}` the destination buffer, `{shape}`/`{dtype}`
the result's static type, and every attribute by its name, rendered as a Python literal.
In C expressions `{T}` is the compute type (the operands' type) and `{R}` the result's.

An op missing here still runs (see `lowering_for`: it calls the op's own forward), but
the registry-wide test fails, so a new op gets a real lowering before it lands.
"""
from __future__ import annotations

from dataclasses import dataclass

from eager.ops import REGISTRY
from static.ir import Node, Value


@dataclass(frozen=True)
class NumpyLowering:
    call: str  # expression on whole arrays
    ufunc: str | None = None  # one NumPy ufunc over the operands (in `ufunc_args` order): supports out=
    ufunc_args: str | None = None
    into: str | None = None  # statement writing the result into the buffer {out}
    scalar: str | None = None  # Python expression on NumPy scalars (0-d values)
    alias: bool = False  # the result may share memory with operand 0 (views, identities)


@dataclass(frozen=True)
class CupyLowering:
    call: str  # expression on whole CuPy arrays
    expr: str | None = None  # C expression for a fused elementwise kernel
    helpers: tuple = ()  # device helper functions (see cuda_helpers.py) the expression uses


@dataclass(frozen=True)
class OpLowering:
    numpy: NumpyLowering
    cupy: CupyLowering
    pointwise: bool = False  # evaluable element by element inside a fused kernel
    reduction: "ReductionLowering | None" = None
    note: str = ""


@dataclass(frozen=True)
class ReductionLowering:
    """How a reduction is split into per-block partials and combined (NumPy), or run as
    a CuPy ReductionKernel (identity, reduce expression, post-map)."""

    partial: str  # NumPy: partial of a block, over axes {axis} with keepdims=True
    combine: str  # NumPy: the reduction of stacked partials along axis 0
    identity: str  # C: the identity, with {T}
    reduce: str  # C: combine a and b
    post: str = "a"  # C: the final value from the accumulator a ({count} = elements per output)
    divide_by_count: bool = False


TABLE: dict[str, OpLowering] = {}


def _add(name: str, numpy: NumpyLowering, cupy: CupyLowering, pointwise: bool = False,
         reduction: ReductionLowering | None = None, note: str = "") -> None:
    TABLE[name] = OpLowering(numpy, cupy, pointwise, reduction, note)


# -- pointwise ops ----------------------------------------------------------------------------
def _ufunc(name: str, np_ufunc: str, c_expr: str, scalar: str | None = None, cp_ufunc: str | None = None,
           order: str | None = None, helpers: tuple = ()) -> None:
    args = order or ", ".join(f"{{{i}}}" for i in range(_arity(np_ufunc, name)))
    _add(name,
         NumpyLowering(call=f"{np_ufunc}({args})", ufunc=np_ufunc, ufunc_args=order, scalar=scalar),
         CupyLowering(call=f"{cp_ufunc or np_ufunc.replace('np.', 'cp.')}({args})", expr=c_expr, helpers=helpers),
         pointwise=True)


_BINARY = {"add", "sub", "rsub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
           "logical_and"}


def _arity(_ufunc: str, name: str) -> int:
    return 2 if name in _BINARY else 1


for _name, _fn in [("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"), ("sqrt", "sqrt"),
                   ("sin", "sin"), ("cos", "cos"), ("tanh", "tanh")]:
    _ufunc(_name, f"np.{_fn}", f"{_fn}({{0}})")

_ufunc("neg", "np.negative", "(-{0})", scalar="(-{0})")
_ufunc("abs", "np.abs", "gm_abs({0})", helpers=("gm_abs",))
_ufunc("sign", "np.sign", "gm_sign({0})", helpers=("gm_sign",))
_ufunc("add", "np.add", "({0} + {1})", scalar="({0} + {1})")
_ufunc("sub", "np.subtract", "({0} - {1})", scalar="({0} - {1})")
_ufunc("rsub", "np.subtract", "({1} - {0})", scalar="({1} - {0})", order="{1}, {0}")
_ufunc("mul", "np.multiply", "({0} * {1})", scalar="({0} * {1})")
_ufunc("div", "np.true_divide", "({0} / {1})", scalar="({0} / {1})")
_ufunc("pow", "np.power", "pow({0}, {1})")
_ufunc("maximum", "np.maximum", "gm_max({0}, {1})", helpers=("gm_max",))
_ufunc("minimum", "np.minimum", "gm_min({0}, {1})", helpers=("gm_min",))
for _name, _fn, _op in [("eq", "equal", "=="), ("ne", "not_equal", "!="), ("lt", "less", "<"),
                        ("le", "less_equal", "<="), ("gt", "greater", ">"), ("ge", "greater_equal", ">=")]:
    _ufunc(_name, f"np.{_fn}", f"({{0}} {_op} {{1}})", scalar=f"({{0}} {_op} {{1}})")
_ufunc("logical_and", "np.logical_and", "({0} && {1})", scalar="({0} & {1})")
_ufunc("logical_not", "np.logical_not", "(!{0})", scalar="(~{0})")
_ufunc("relu", "np.maximum", "gm_relu({0})", order="{0}, 0", helpers=("gm_relu",))

# rsqrt is 1/sqrt(x) exactly as its forward computes it (not the hardware's rsqrt)
_add("rsqrt", NumpyLowering(call="np.true_divide(1.0, np.sqrt({0}))", into="_rt.rsqrt({0}, out={out})"),
     CupyLowering(call="1.0 / cp.sqrt({0})", expr="(({T})1 / sqrt({0}))"), pointwise=True)
_add("sigmoid", NumpyLowering(call="_rt.sigmoid({0})", into="_rt.sigmoid({0}, out={out})"),
     CupyLowering(call="_rt.forward('sigmoid', cp, {0})", expr="gm_sigmoid({0})", helpers=("gm_sigmoid",)), pointwise=True)
_add("erf", NumpyLowering(call="_rt.erf({0})", into="_rt.erf({0}, out={out})"),
     CupyLowering(call="_rt.forward('erf', cp, {0})", expr="erf({0})"), pointwise=True)
_add("softplus", NumpyLowering(call="_rt.softplus({0}, {beta}, {threshold})",
                               into="_rt.softplus({0}, {beta}, {threshold}, out={out})"),
     CupyLowering(call="_rt.forward('softplus', cp, {0}, beta={beta}, threshold={threshold})",
                  expr="gm_softplus({0}, ({T}){beta}, ({T}){threshold})", helpers=("gm_softplus",)),
     pointwise=True)
_add("gelu", NumpyLowering(call="_rt.gelu({0}, {approximate})", into="_rt.gelu({0}, {approximate}, out={out})"),
     CupyLowering(call="_rt.forward('gelu', cp, {0}, approximate={approximate})", expr="gm_gelu_{approximate_c}({0})",
                  helpers=("gm_gelu_none", "gm_gelu_tanh")), pointwise=True)
# the op's own forward for a standalone where: two Python-number branches give PyTorch's dtype
_add("where", NumpyLowering(call="_rt.forward('where', np, {0}, {1}, {2})", into="_rt.where({0}, {1}, {2}, out={out})",
                            scalar="({1} if {0} else {2})"),
     CupyLowering(call="_rt.forward('where', cp, {0}, {1}, {2})", expr="({0} ? {1} : {2})"), pointwise=True)
# a standalone clamp: the op's forward, which gives PyTorch's dtype (int tensor, float bounds: float32)
_add("clamp", NumpyLowering(call="_rt.forward('clamp', np, {0}, min={min}, max={max})",
                            into="np.clip({0}, {min}, {max}, out={out})"),
     CupyLowering(call="cp.clip({0}, {min}, {max})", expr="gm_clamp({0}, {min_c}, {max_c}, {has_min}, {has_max})",
                  helpers=("gm_clamp",)), pointwise=True)
_add("to_dtype", NumpyLowering(call="{0}.astype({dtype})", into="np.copyto({out}, {0}, casting='unsafe')",
                               scalar="{0}.astype({dtype})"),
     CupyLowering(call="{0}.astype({dtype})", expr="gm_cast<{R}>({0})", helpers=("gm_cast",)), pointwise=True)
_add("clone", NumpyLowering(call="np.array({0}, copy=True)", into="np.copyto({out}, {0})", scalar="{0}"),
     CupyLowering(call="cp.array({0}, copy=True)", expr="{0}"), pointwise=True)
_add("stop_gradient", NumpyLowering(call="{0}", into="np.copyto({out}, {0})", scalar="{0}", alias=True),
     CupyLowering(call="{0}", expr="{0}"), pointwise=True, note="identity; its output aliases its operand")
_add("full_like", NumpyLowering(call="np.full({shape}, {value}, {dtype})", into="{out}.fill({value})",
                                scalar="{const}"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})", expr="(({R}){value_c})"), pointwise=True,
     note="the operand's data is not read")
_add("full", NumpyLowering(call="np.full({shape}, {value}, {dtype})", into="{out}.fill({value})", scalar="{const}"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})", expr="(({R}){value_c})"), pointwise=True)

# -- shape ops: views and copies, library calls ------------------------------------------------
_add("reshape", NumpyLowering(call="np.reshape({0}, {shape})", alias=True),
     CupyLowering(call="cp.reshape({0}, {shape})"))
_add("transpose", NumpyLowering(call="np.swapaxes({0}, {dim0}, {dim1})", alias=True),
     CupyLowering(call="cp.swapaxes({0}, {dim0}, {dim1})"))
_add("permute", NumpyLowering(call="np.transpose({0}, {dims})", alias=True),
     CupyLowering(call="cp.transpose({0}, {dims})"))
_add("expand", NumpyLowering(call="np.broadcast_to({0}, {shape})", alias=True),
     CupyLowering(call="cp.broadcast_to({0}, {shape})"))
_add("squeeze", NumpyLowering(call="np.reshape({0}, {shape})", alias=True),
     CupyLowering(call="cp.reshape({0}, {shape})"), note="a squeeze is a reshape to the static result shape")
_add("unsqueeze", NumpyLowering(call="np.expand_dims({0}, {dim})", alias=True),
     CupyLowering(call="cp.expand_dims({0}, {dim})"))
_add("cat", NumpyLowering(call="np.concatenate(({args},), axis={dim})"),
     CupyLowering(call="cp.concatenate(({args},), axis={dim})"))
_add("stack", NumpyLowering(call="np.stack(({args},), axis={dim})"),
     CupyLowering(call="cp.stack(({args},), axis={dim})"))
_add("split", NumpyLowering(call="np.split({0}, {cuts}, axis={dim})", alias=True),
     CupyLowering(call="cp.split({0}, {cuts}, axis={dim})"))

# -- indexing ---------------------------------------------------------------------------------
_add("index", NumpyLowering(call="{0}[{key_src}]", alias=True), CupyLowering(call="{0}[{key_src}]"),
     note="the key is written as Python subscript syntax; basic keys give views")
_add("index_grad", NumpyLowering(call="_rt.forward('index_grad', np, {args}, **{attrs})"),
     CupyLowering(call="_rt.forward('index_grad', cp, {args}, **{attrs})"))
_add("index_put", NumpyLowering(call="_rt.forward('index_put', np, {args}, **{attrs})"),
     CupyLowering(call="_rt.forward('index_put', cp, {args}, **{attrs})"))
_add("view_scatter", NumpyLowering(call="_rt.forward('view_scatter', np, {args}, steps={steps})"),
     CupyLowering(call="_rt.forward('view_scatter', cp, {args}, steps={steps})"))
_add("take_along", NumpyLowering(call="_rt.forward('take_along', np, {args}, dim={dim}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('take_along', cp, {args}, dim={dim}, keepdim={keepdim})"))
_add("index_mask", NumpyLowering(call="_rt.forward('index_mask', np, {0}, dim={dim}, size={size})"),
     CupyLowering(call="_rt.forward('index_mask', cp, {0}, dim={dim}, size={size})"),
     note="compares positions along dim with an index: not pointwise in its operand")

# -- reductions -------------------------------------------------------------------------------
_SUM = ReductionLowering(partial="np.add.reduce({0}, axis={axis}, keepdims=True)", combine="np.add.reduce({0}, axis=0)",
                         identity="({T})0", reduce="a + b")
_MEAN = ReductionLowering(partial="np.add.reduce({0}, axis={axis}, keepdims=True)", combine="np.add.reduce({0}, axis=0)",
                          identity="({T})0", reduce="a + b", post="a / ({T}){count}", divide_by_count=True)
_MAX = ReductionLowering(partial="np.maximum.reduce({0}, axis={axis}, keepdims=True)", combine="np.maximum.reduce({0}, axis=0)",
                         identity="gm_lowest<{T}>()", reduce="gm_max(a, b)")
_MIN = ReductionLowering(partial="np.minimum.reduce({0}, axis={axis}, keepdims=True)", combine="np.minimum.reduce({0}, axis=0)",
                         identity="gm_highest<{T}>()", reduce="gm_min(a, b)")
_PROD = ReductionLowering(partial="np.multiply.reduce({0}, axis={axis}, keepdims=True)", combine="np.multiply.reduce({0}, axis=0)",
                          identity="({T})1", reduce="a * b")
# NumPy: the ufuncs' own reduce (np.sum & co. are Python wrappers around it, ~1 us a call)
_NP_REDUCE = {"sum": "np.add.reduce", "mean": "np.mean", "amax": "np.maximum.reduce",
              "amin": "np.minimum.reduce", "prod": "np.multiply.reduce"}
for _name, _fn, _red in [("sum", "sum", _SUM), ("mean", "mean", _MEAN), ("amax", "amax", _MAX),
                         ("amin", "amin", _MIN), ("max", "amax", _MAX), ("min", "amin", _MIN),
                         ("prod", "prod", _PROD)]:
    _add(_name, NumpyLowering(call=f"{_NP_REDUCE[_fn]}({{0}}, axis={{dims}}, keepdims={{keepdim}})"),
         CupyLowering(call=f"cp.{_fn}({{0}}, axis={{dims}}, keepdims={{keepdim}})"), reduction=_red)
_add("prod_except_self", NumpyLowering(call="_rt.forward('prod_except_self', np, {0}, dims={dims})"),
     CupyLowering(call="_rt.forward('prod_except_self', cp, {0}, dims={dims})"))
_add("argmax", NumpyLowering(call="_rt.forward('argmax', np, {0}, dim={dim}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('argmax', cp, {0}, dim={dim}, keepdim={keepdim})"))
_add("argmin", NumpyLowering(call="_rt.forward('argmin', np, {0}, dim={dim}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('argmin', cp, {0}, dim={dim}, keepdim={keepdim})"))
# var/std through the op's forward: it accumulates float32 in float64 as PyTorch's CPU kernel does
_add("var", NumpyLowering(call="_rt.forward('var', np, {0}, dims={dims}, correction={correction}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('var', cp, {0}, dims={dims}, correction={correction}, keepdim={keepdim})"))
_add("std", NumpyLowering(call="_rt.forward('std', np, {0}, dims={dims}, correction={correction}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('std', cp, {0}, dims={dims}, correction={correction}, keepdim={keepdim})"))
_add("logsumexp", NumpyLowering(call="_rt.forward('logsumexp', np, {0}, dims={dims}, keepdim={keepdim})"),
     CupyLowering(call="_rt.forward('logsumexp', cp, {0}, dims={dims}, keepdim={keepdim})"))
_add("softmax", NumpyLowering(call="_rt.forward('softmax', np, {0}, dim={dim})"),
     CupyLowering(call="_rt.forward('softmax', cp, {0}, dim={dim})"))
_add("log_softmax", NumpyLowering(call="_rt.forward('log_softmax', np, {0}, dim={dim})"),
     CupyLowering(call="_rt.forward('log_softmax', cp, {0}, dim={dim})"))

# -- linear algebra and the rest --------------------------------------------------------------
_add("matmul", NumpyLowering(call="np.matmul({0}, {1})"), CupyLowering(call="cp.matmul({0}, {1})"),
     note="BLAS through NumPy; cuBLAS through CuPy")
_add("to_device", NumpyLowering(call="_rt.forward('to_device', np, {0}, device={device}, source={source})",
                                alias=True),
     CupyLowering(call="_rt.forward('to_device', cp, {0}, device={device}, source={source})"))
_add("fill", NumpyLowering(call="np.full({shape}, {value}, {dtype})"),
     CupyLowering(call="cp.full({shape}, {value}, {dtype})"), note="x's shape filled with value")


def _fallback(name: str) -> OpLowering:
    """For an op the table does not know yet: call its registry forward (correct, unfused)."""
    call = f"_rt.forward({name!r}, {{xp}}, {{args}}, **{{attrs}})"
    return OpLowering(NumpyLowering(call=call.replace("{xp}", "np"), alias=True),
                      CupyLowering(call=call.replace("{xp}", "cp")), note="generic: the op's own forward")


def lowering_for(op: str) -> OpLowering:
    """The lowering of `op`; a generic call of the op's forward if the table lacks it."""
    found = TABLE.get(op)
    return found if found is not None else _fallback(op)


def small_power(node: Node) -> int | None:
    """2 or 3 when node is x ** 2 or x ** 3 with a literal exponent: multiplied out (one or
    two roundings instead of powf's slow general path; NumPy squares `x ** 2` itself)."""
    if node.op != "pow" or not isinstance(node.inputs[0], Value) or isinstance(node.inputs[1], (Value, bool)):
        return None
    if not node.inputs[0].type.dtype.is_floating_point:
        return None
    return int(node.inputs[1]) if node.inputs[1] in (2, 3) else None


def missing_ops() -> list[str]:
    """Registry ops without an entry in the table (the registry-wide test wants none)."""
    return sorted(set(REGISTRY) - set(TABLE))


__all__ = ["TABLE", "OpLowering", "NumpyLowering", "CupyLowering", "ReductionLowering", "lowering_for",
           "missing_ops", "small_power"]
