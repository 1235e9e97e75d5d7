"""More math: bitwise and logical ops, float classification, rounding, scans (cumsum,
cumprod), argsort and einsum (integer-style division: gmops.division, re-exported here).
Forward on `xp`, abstract rule, VJP in ops."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from ._checks import broadcast_shapes, same_dtype, specs_of
from ._layout import like
from ._registry import VARIADIC, TensorSpec, defop
from .comparison import LOGICAL_AND as _LOGICAL_AND
from .comparison import LOGICAL_NOT as _LOGICAL_NOT
from .division import DIV_FLOOR, DIV_TRUNC, FLOOR_DIVIDE, FMOD, REMAINDER, _zeros_for  # noqa: F401  (their home before)
from .elementwise import RSQRT, WHERE
from .indexing import FLIP, TRIU
from .reductions import SUM
from .shape_ops import EXPAND, INDEX_PUT, RESHAPE, TRANSPOSE, UNSQUEEZE

# the Python surface eager generates from a record (eager._surface): eager.<name>, Tensor.<name>
# and the in-place Tensor.<name>_
_ALL = ("function", "method", "inplace")


def _elementwise(name, result_dtype=None, check=None):
    def abstract(*operands, **attrs):
        specs = specs_of(operands)
        if check is not None:
            for s in specs:
                check(name, s)
        shape = broadcast_shapes(name, *(s.shape for s in specs))
        return TensorSpec(shape, result_dtype or same_dtype(name, specs))

    return abstract


def _not_float(name, spec):
    if spec.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtypes.scalar_type_name(spec.dtype)}\'; '
                           "bitwise ops take integer or bool tensors")


# -- bitwise and logical ------------------------------------------------------------------------
def _bool_or_int_samples(rng):
    return [((rng.integers(0, 16, (3, 4)), rng.integers(0, 16, (4,))), {}),
            ((rng.standard_normal((3, 4)) > 0, rng.standard_normal((4,)) > 0), {})]


def _category(v) -> int:
    dt = getattr(v, "dtype", None)
    return dt.category if isinstance(dt, _dtypes.dtype) else _dtypes.scalar_category(v)


def _bitwise_arguments(on_bools: str, on_integers: str):
    """The argument mapping of bitwise_and/or/xor (and `&`, `|`, `^`): of two bool operands,
    the logical op (a bool result, one C expression: it fuses); of integers (or an integer
    with a bool), the bitwise record, whose abstract rule refuses floats with PyTorch's
    NotImplementedError."""
    def arguments(apply, input, other):
        op = on_bools if _category(input) == 0 and _category(other) == 0 else on_integers
        return apply(_BITWISE_OPS[op], (input, other), {})

    arguments.__name__ = arguments.__qualname__ = f"_{on_integers}_arguments"
    return arguments


def _bitwise(name: str, logical: str):
    return defop(name, arity=2, forward=lambda xp, a, b: getattr(xp, name)(a, b),
                 abstract=_elementwise(name, check=_not_float), promote="same", samples=_bool_or_int_samples,
                 c_expr=f"({{0}} {_C_BITWISE[name]} {{1}})",  # integers and bools (floats refused)
                 surface=(*_ALL, _bitwise_arguments(logical, name)),
                 doc=f"elementwise {name[8:].upper()} of the bits of integer tensors (the logical one of bools)")


_C_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
BITWISE_AND = _bitwise("bitwise_and", "logical_and")
BITWISE_OR = _bitwise("bitwise_or", "logical_or")
BITWISE_XOR = _bitwise("bitwise_xor", "logical_xor")


def _bitwise_not_arguments(apply, input):
    """bitwise_not: logical not of a bool tensor (one C expression), the bits inverted of an
    integer one; floats refused by the record's abstract rule (PyTorch's NotImplementedError)."""
    return apply(_LOGICAL_NOT if _category(input) == 0 else BITWISE_NOT, (input,), {})


BITWISE_NOT = defop(
    "bitwise_not", forward=lambda xp, a: xp.invert(a),
    abstract=lambda a: (_not_float("bitwise_not", a), a)[1],
    samples=lambda rng: [((rng.integers(-8, 16, (3, 4)),), {}), ((rng.standard_normal((3, 4)) > 0,), {})],
    # x ^ all-ones: ~x for integers (unsigned ones too, in their width) and !x for bools
    ufunc="invert", c_expr="(({T})({0} ^ ({T})-1))", surface=(*_ALL, _bitwise_not_arguments),
    doc="the bits of an integer tensor inverted (-x - 1), the logical not of a bool one",
)


# -- shifts ------------------------------------------------------------------------------------
def _shift_check(name: str, spec) -> None:
    """Shifts take integers only: of the promoted operands, floats and bool-with-bool are
    refused with PyTorch's NotImplementedError (a bool shifted by an int promotes to it)."""
    if spec.dtype.is_floating_point or spec.dtype == _dtypes.bool_:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtypes.scalar_type_name(spec.dtype)}\'; '
                                  "shifts take integer tensors (cast with .long() or .int())")


def _shift_abstract(name: str):
    def abstract(a, b):
        spec = _elementwise(name)(a, b)
        _shift_check(name, spec)
        return spec
    return abstract


def _shift_counts(name: str, xp, a, b):
    """(a, in range, the count where in range else 0) in the tensor operand's dtype (a Python
    number wraps into it, as PyTorch's scalar does): a count that is negative or at least the
    bit width is PyTorch's special case (C's shift is undefined there; CuPy's ufunc is C's)."""
    dt = (a if hasattr(a, "dtype") else b).dtype
    if dt.kind not in "iu":  # eager runs no abstract rule first: its message comes from the failure
        raise TypeError(f"{name}: shifts take integer tensors, not {dt}")
    a, b = xp.asarray(a).astype(dt, copy=False), xp.asarray(b).astype(dt, copy=False)
    bits = dt.itemsize * 8
    ok = (b < bits) if dt.kind == "u" else (b >= 0) & (b < bits)
    return a, ok, xp.where(ok, b, 0).astype(dt, copy=False)


def _left_shift(xp, a, b):
    a, ok, count = _shift_counts("bitwise_left_shift", xp, a, b)
    return xp.where(ok, xp.left_shift(a, count), 0).astype(a.dtype, copy=False)  # bits shifted out wrap


def _right_shift(xp, a, b):
    a, ok, count = _shift_counts("bitwise_right_shift", xp, a, b)
    beyond = xp.zeros_like(a) if a.dtype.kind == "u" else xp.right_shift(a, a.dtype.itemsize * 8 - 1)  # 0 / -1
    return xp.where(ok, xp.right_shift(a, count), beyond).astype(a.dtype, copy=False)


def _shift_samples(rng):
    return [((rng.integers(-40, 40, (3, 4)), rng.integers(-2, 70, (4,))), {}),
            ((rng.integers(0, 255, (3, 4)).astype(np.uint8), rng.integers(0, 10, (3, 4)).astype(np.uint8)), {})]


# the count guarded as PyTorch's: out of [0, bit width) the left shift is 0, the right one the
# sign (0 or -1); the left shift in unsigned long long (no signed overflow), truncated to T. Both
# hold when T is wider than the stored type: the low bits of a left shift by >= the narrow width
# are 0 and a right shift of a sign-extended value is its sign.
_SHIFT_OUT = "(({T}){1} < ({T})0 || ({T}){1} >= ({T})(8 * sizeof({T})))"
BITWISE_LEFT_SHIFT = defop(
    "bitwise_left_shift", arity=2, forward=_left_shift, abstract=_shift_abstract("lshift"), promote="same",
    samples=_shift_samples,
    c_expr=f"({_SHIFT_OUT} ? ({{T}})0 : ({{T}})((unsigned long long)({{T}}){{0}} << ({{T}}){{1}}))",
    surface=_ALL, doc="the bits of an integer tensor shifted left (`<<`), wrapping in its dtype")
BITWISE_RIGHT_SHIFT = defop(
    "bitwise_right_shift", arity=2, forward=_right_shift, abstract=_shift_abstract("rshift"), promote="same",
    samples=_shift_samples,
    c_expr=f"({_SHIFT_OUT} ? (({{T}}){{0}} < ({{T}})0 ? ({{T}})-1 : ({{T}})0) : ({{T}})(({{T}}){{0}} >> ({{T}}){{1}}))",
    surface=_ALL, doc="the bits of an integer tensor shifted right (`>>`, arithmetic for signed dtypes)")


def _logical_samples(rng):
    return [((rng.standard_normal((3, 4)) > 0, rng.standard_normal((4,)) > 0), {}),
            ((rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) > 0.5), {})]


LOGICAL_OR = defop("logical_or", arity=2, forward=lambda xp, a, b: xp.logical_or(a, b),
                   abstract=_elementwise("logical_or", result_dtype=_dtypes.bool_), samples=_logical_samples,
                   c_expr="({0} || {1})",  # any dtype's truth value (NaN is true, as NumPy's)
                   surface=_ALL, doc="elementwise logical OR of the truth values, as a bool tensor")
LOGICAL_XOR = defop("logical_xor", arity=2, forward=lambda xp, a, b: xp.logical_xor(a, b),
                    abstract=_elementwise("logical_xor", result_dtype=_dtypes.bool_), samples=_logical_samples,
                    c_expr="(({0} != ({T})0) != ({1} != ({T})0))",
                    surface=_ALL, doc="elementwise logical XOR of the truth values, as a bool tensor")


_BITWISE_OPS = {"bitwise_and": BITWISE_AND, "bitwise_or": BITWISE_OR, "bitwise_xor": BITWISE_XOR,
                "logical_and": _LOGICAL_AND, "logical_or": LOGICAL_OR, "logical_xor": LOGICAL_XOR}


# -- float classification ----------------------------------------------------------------------
def _specials(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1], x[1, 2], x[2, 0] = np.nan, np.inf, -np.inf
    return x


def _classify(name, fn, doc, c_expr):
    # a bool from any input dtype; the C expression holds for every type (gm_isinf: x - x is NaN
    # exactly for inf and NaN, 0 for integers)
    return defop(name, forward=lambda xp, x: getattr(xp, fn)(x), c_expr=c_expr,
                 abstract=lambda x: TensorSpec(x.shape, _dtypes.bool_),
                 samples=lambda rng: [((_specials(rng),), {}), ((rng.integers(0, 5, (3,)),), {})],
                 surface=(f"{name}(input)", "function", "method"), doc=doc)  # (PyTorch gives them no out=)


ISNAN = _classify("isnan", "isnan", "whether each element is NaN, as a bool tensor", "({0} != {0})")
ISINF = _classify("isinf", "isinf", "whether each element is +inf or -inf, as a bool tensor", "gm_isinf({0})")
ISFINITE = _classify("isfinite", "isfinite", "whether each element is neither infinite nor NaN, as a bool tensor",
                     "gm_isfinite({0})")


def _nan_to_num(xp, x, nan=0.0, posinf=None, neginf=None):
    return xp.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


NAN_TO_NUM = defop(
    "nan_to_num", forward=_nan_to_num, abstract=lambda x, nan=0.0, posinf=None, neginf=None: x,
    vjp=lambda ctx, g: (WHERE(ISFINITE(ctx.input(0)), g, 0.0),), grad_name="NanToNumBackward0", save=(0,),
    samples=lambda rng: [((_specials(rng),), {"nan": 0.0, "posinf": None, "neginf": None}),
                         ((_specials(rng),), {"nan": 1.5, "posinf": 9.0, "neginf": -9.0})],
    surface=("nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None)", *_ALL),
    c_expr="gm_nan_to_num({0}, {nan_c}, {posinf_c}, {neginf_c})",  # the literals: codegen's lowering fields
    doc="input with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the dtype's "
        "largest and smallest finite values)",
)


# -- rounding and more transcendental functions ---------------------------------------------------
# Library calls (not fused): rounding keeps an integer input as it is (NumPy would give float64).
def _rounding(name: str, fn: str, surface: tuple = _ALL) -> Any:
    def refuse_bool():
        raise NotImplementedError(f'"{name}_vml_cpu" not implemented for \'Bool\'; cast with .float() first')

    def refuse_decimals(dt) -> None:
        # round(decimals=...) is PyTorch's round.decimals, which has no integer or bool kernel
        raise NotImplementedError(f'"round_cpu" not implemented for \'{_dtypes.scalar_type_name(dt)}\' '
                                  "(round with decimals); round an integer tensor without decimals, or convert "
                                  "it with .float() first")

    def forward(xp, x, decimals=None):
        if decimals is not None and x.dtype.kind in "biu":
            refuse_decimals(_dtypes.from_numpy(x.dtype))
        if x.dtype.kind == "b":
            refuse_bool()
        if x.dtype.kind in "iu":
            return x.copy()
        if decimals:
            return xp.round(x, decimals)
        return getattr(xp, fn)(x)

    def abstract(x, decimals=None):
        if decimals is not None and not x.dtype.is_floating_point:
            refuse_decimals(x.dtype)
        if x.dtype == _dtypes.bool_:
            refuse_bool()
        return x

    # PyTorch's node: RoundBackward1 when decimals is given (round.decimals), even 0
    def grad_name(operands, attrs):
        return f"{name.title()}Backward{0 if attrs.get('decimals') is None else 1}"

    return defop(name, forward=forward, abstract=abstract,
                 vjp=_zeros_for(1),  # PyTorch: a zero gradient (a step function), zeros_like(grad)
                 grad_name=grad_name,
                 samples=lambda rng: [((rng.uniform(-3, 3, (3, 4)) + 0.25,), {})],
                 doc=f"{name} of each element (an integer tensor is returned as it is); its gradient is zero",
                 surface=surface,  # gm_floor ... gm_round: integers kept, floats as NumPy's (gm_helpers.h)
                 c_expr="gm_round({0}, {decimals_c})" if name == "round" else f"gm_{name}({{0}})")


FLOOR = _rounding("floor", "floor")
CEIL = _rounding("ceil", "ceil")
TRUNC = _rounding("trunc", "trunc", (*_ALL, "alias fix"))
# half to even, as PyTorch; decimals=None when not given, so the node is named as PyTorch's (RoundBackward0)
ROUND = _rounding("round", "rint", ("round(input, *, decimals=None, out=None)", *_ALL))


def _float_unary(name: str, fn: str, vjp, samples, doc: str, surface: tuple = _ALL) -> Any:
    def abstract(x):
        return x if x.dtype.is_floating_point else TensorSpec(x.shape, _dtypes.DEFAULT_FLOAT)

    # the NumPy ufunc `fn`, and the C library's function of the op's name inlined by the native
    # and CUDA kernels (gmnative/c_helpers.py MATH; tests/codegen/test_c_expressions.py)
    return defop(name, forward=lambda xp, x: getattr(xp, fn)(x), abstract=abstract, vjp=vjp,
                 grad_name=name.title() + "Backward0", save=(0,), promote="float", samples=samples, doc=doc,
                 surface=surface, ufunc=fn, c_expr=f"{name}({{0}})")


def _in(lo: float, hi: float):
    return lambda rng: [((rng.uniform(lo, hi, (3, 4)),), {})]


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))
LOG2 = _float_unary("log2", "log2", lambda ctx, g: (g / (ctx.input(0) * _LN2),), _in(0.5, 3.0),
                    "the base-2 logarithm, elementwise")
LOG10 = _float_unary("log10", "log10", lambda ctx, g: (g / (ctx.input(0) * _LN10),), _in(0.5, 3.0),
                     "the base-10 logarithm, elementwise")
SINH = _float_unary("sinh", "sinh", lambda ctx, g: (g * COSH(ctx.input(0)),), _in(-2.0, 2.0),
                    "the hyperbolic sine, elementwise")
COSH: Any = _float_unary("cosh", "cosh", lambda ctx, g: (g * SINH(ctx.input(0)),), _in(-2.0, 2.0),
                         "the hyperbolic cosine, elementwise")
ASIN = _float_unary("asin", "arcsin", lambda ctx, g: (g * RSQRT(1.0 - ctx.input(0) * ctx.input(0)),), _in(-0.8, 0.8),
                    "the arcsine, elementwise (NaN outside [-1, 1])", (*_ALL, "alias arcsin"))
ACOS = _float_unary("acos", "arccos", lambda ctx, g: (-(g * RSQRT(1.0 - ctx.input(0) * ctx.input(0))),),
                    _in(-0.8, 0.8), "the arccosine, elementwise (NaN outside [-1, 1])", (*_ALL, "alias arccos"))
ATAN = _float_unary("atan", "arctan", lambda ctx, g: (g / (ctx.input(0) * ctx.input(0) + 1.0),), _in(-2.0, 2.0),
                    "the arctangent, elementwise", (*_ALL, "alias arctan"))


def _atan2_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    denom = a * a + b * b
    return (g * b / denom if ctx.needs(0) else None, -(g * a) / denom if ctx.needs(1) else None)


ATAN2 = defop(
    "atan2", arity=2, forward=lambda xp, a, b: xp.arctan2(a, b), abstract=_elementwise("atan2"),
    vjp=_atan2_vjp, grad_name="Atan2Backward0", save=(0, 1), promote="float", ufunc="arctan2", c_expr="atan2({0}, {1})",
    samples=lambda rng: [((rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4)),
                           rng.uniform(0.5, 2.0, (4,)) * rng.choice([-1.0, 1.0], (4,))), {})],
    doc="the angle of (b, a) in (-pi, pi], elementwise", surface=(*_ALL, "alias arctan2"),
)


# -- scans -------------------------------------------------------------------------------------
_WIDEN = {_dtypes.bool_, _dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32}


def _scan_dtype(spec):
    return _dtypes.int64 if spec.dtype in _WIDEN else spec.dtype


def _scan(fn):
    def forward(xp, x, dim):
        dt = np.int64 if x.dtype.kind in "biu" else None
        if x.ndim == 0:
            return x.astype(dt or x.dtype)
        return getattr(xp, fn)(x, axis=dim, dtype=dt)

    return forward


def _scan_samples(rng):
    x = rng.standard_normal((3, 4))
    return [((x,), {"dim": 1}), ((x,), {"dim": 0})]


def _rev_cumsum(g, dim):
    return FLIP(CUMSUM(FLIP(g, dims=(dim,)), dim=dim), dims=(dim,))


CUMSUM = defop(
    "cumsum", forward=_scan("cumsum"), abstract=lambda x, dim: TensorSpec(x.shape, _scan_dtype(x)),
    vjp=lambda ctx, g: (_rev_cumsum(g, ctx.attrs["dim"]) if len(ctx.in_shape(0)) else g,),
    grad_name="CumsumBackward0", kind="reduction", samples=_scan_samples,
)


def _cumprod_vjp(ctx, g):
    if not len(ctx.in_shape(0)):
        return (g,)
    return (CUMPROD_BACKWARD(ctx.input(0), g, dim=ctx.attrs["dim"]),)


# zeros: none, one, two and three in a slice (the gradient and its own gradient are exact with any)
_CUMPROD_ZEROS = np.array([[0.7, 1.2, 1.3, -0.8, 0.9], [1.1, -0.9, 0.0, 0.6, 1.4], [0.0, 1.2, 0.6, 0.0, -1.1],
                           [0.0, 1.3, 0.0, 0.0, 0.8]])
CUMPROD = defop(
    "cumprod", forward=_scan("cumprod"), abstract=lambda x, dim: TensorSpec(x.shape, _scan_dtype(x)),
    vjp=_cumprod_vjp, grad_name="CumprodBackward0", save=(0,), kind="reduction",
    samples=lambda rng: [((rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4)),), {"dim": 1}),
                         ((_CUMPROD_ZEROS,), {"dim": 1}),
                         ((np.array([[0.0, 1.5], [0.9, 0.0], [1.2, -1.1]]),), {"dim": 0})],
)


def _rev_cumsum_array(xp, a):
    return xp.flip(xp.cumsum(xp.flip(a, -1), axis=-1), -1)


def _cumprod_backward(xp, x, g, dim):
    """The gradient of sum(g * cumprod(x, dim)) in x: d x_i = sum over j >= i of
    g_j * prod_{k <= j, k != i} x_k, in O(n) per slice and exact with any number of zeros
    (PyTorch's cumprod_backward): before a slice's first zero it is revcumsum(g * out)_i / x_i;
    at the first zero it is revcumsum(g * cumprod(x with that zero taken as 1))_i, since every
    other term holds the zero; after it, every product holds the first zero, so 0."""
    if x.ndim == 0:
        return g.astype(x.dtype, copy=True)
    xm, gm = xp.moveaxis(x, dim, -1), xp.moveaxis(g, dim, -1)
    zero = xm == 0
    first = zero & (xp.cumsum(zero, axis=-1) == 1)
    plain = _rev_cumsum_array(xp, gm * xp.cumprod(xm, axis=-1)) / xp.where(zero, 1, xm)
    at_first = _rev_cumsum_array(xp, gm * xp.cumprod(xp.where(first, 1, xm), axis=-1))
    out = xp.where(zero, xp.where(first, at_first, 0), plain).astype(x.dtype, copy=False)
    return xp.ascontiguousarray(xp.moveaxis(out, -1, dim))


def _cumprod_backward_vjp(ctx, v):
    """Exact to any order, with any zeros: the gradient is written as
    d x_i = sum_{j >= i} g_j R[i, j] with R = cumprod along the rows of the n x n matrix whose
    row i is the slice with x_i set to 1, so R[i, j] = prod_{k <= j, k != i} x_k. Then
    grad g_j = sum_{i <= j} v_i R[i, j], and x's gradient flows into R through cumprod's own
    gradient (this op again, one dimension up) and out of each row but its diagonal.
    O(n^2) per slice: it runs only where a second derivative is asked for."""
    x, g = ctx.input(0), ctx.input(1)
    shape = tuple(ctx.in_shape(0))
    nd, dim = len(shape), ctx.attrs["dim"]
    if nd == 0:
        return None, v
    last = nd - 1
    if dim != last:
        x, g, v = (TRANSPOSE(t, dim0=dim, dim1=last) for t in (x, g, v))
    swapped = list(shape)
    swapped[dim], swapped[last] = swapped[last], swapped[dim]
    lead, n = tuple(swapped[:-1]), shape[dim]
    square, flat = lead + (n, n), lead + (n * n,)
    diagonal = (("ellipsis",), ("slice", None, None, n + 1))
    spread = RESHAPE(EXPAND(UNSQUEEZE(x, dim=last), shape=square), shape=flat)
    rows = RESHAPE(INDEX_PUT(spread, 1.0, key=diagonal, n_index=0), shape=square)
    products = CUMPROD(rows, dim=nd)  # R[i, j]
    gx = gg = None
    if ctx.needs(1):
        gg = SUM(TRIU(products * UNSQUEEZE(v, dim=nd), diagonal=0), dims=(last,), keepdim=False)
    if ctx.needs(0):
        weights = TRIU(UNSQUEEZE(v, dim=nd) * UNSQUEEZE(g, dim=last), diagonal=0)  # v_i g_j for j >= i
        grad_rows = RESHAPE(CUMPROD_BACKWARD(rows, weights, dim=nd), shape=flat)
        off_diagonal = RESHAPE(INDEX_PUT(grad_rows, 0.0, key=diagonal, n_index=0), shape=square)
        gx = SUM(off_diagonal, dims=(last,), keepdim=False)
    if dim != last:
        gx, gg = (None if t is None else TRANSPOSE(t, dim0=dim, dim1=last) for t in (gx, gg))
    return gx, gg


def _cumprod_backward_samples(rng):
    g = rng.standard_normal(_CUMPROD_ZEROS.shape)
    return [((_CUMPROD_ZEROS, g), {"dim": 1}), ((_CUMPROD_ZEROS.T.copy(), g.T.copy()), {"dim": 0}),
            ((rng.uniform(0.5, 1.5, (2, 3)), rng.standard_normal((2, 3))), {"dim": 1})]


CUMPROD_BACKWARD = defop(
    "cumprod_backward", arity=2, forward=_cumprod_backward,
    abstract=lambda x, g, dim: TensorSpec(x.shape, x.dtype), vjp=_cumprod_backward_vjp, save=(0, 1),
    kind="reduction", samples=_cumprod_backward_samples,
    doc="helper of cumprod's VJP: the gradient of sum(g * cumprod(x, dim)) in x, exact with zeros; "
        "differentiable again (cumprod's second and later derivatives go through it)",
)


# -- sorting -----------------------------------------------------------------------------------
def _argsort(xp, x, dim, descending=False):
    if x.ndim == 0:
        return xp.zeros((), dtype=np.int64)
    if descending:
        # a stable sort of the negated keys keeps equal elements in their original order
        key = -x.astype(np.int64) if x.dtype.kind in "bu" else -x
        if x.dtype.kind == "f":
            nan = xp.isnan(x)
            if bool(nan.any()):  # NaN ranks largest, as in PyTorch (first when descending, topk's pick)
                return like(xp, x, xp.lexsort((xp.where(nan, 0, key), ~nan), axis=dim))
        return like(xp, x, xp.argsort(key, axis=dim, kind="stable"))
    return like(xp, x, xp.argsort(x, axis=dim, kind="stable"))  # x's memory order, as PyTorch's sort


ARGSORT = defop(
    "argsort", forward=_argsort, abstract=lambda x, dim, descending=False: TensorSpec(x.shape, _dtypes.int64),
    kind="reduction", layout="preserve",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dim": 1, "descending": False}),
                         ((rng.integers(0, 3, (4, 3)),), {"dim": 0, "descending": True})],
    doc="the stable sorting permutation along dim (equal keys keep their order)",
)


# -- einsum ------------------------------------------------------------------------------------
def parse_einsum(equation: str) -> tuple[list[str], str]:
    """('ij,jk', 'ik') style: explicit subscripts of each operand and of the output."""
    lhs, _, out = equation.replace(" ", "").partition("->")
    return lhs.split(","), out


def _einsum_abstract(*xs, equation):
    ins, out = parse_einsum(equation)
    if len(ins) != len(xs):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation "
                           f"({len(xs)} operands for {equation!r})")
    sizes: dict = {}
    for subs, x in zip(ins, xs):
        if len(subs) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(subs)}) does not match "
                               f"the number of dimensions ({x.ndim}) for operand of shape {tuple(x.shape)}")
        for letter, n in zip(subs, x.shape):
            if sizes.get(letter, n) != n and 1 not in (n, sizes[letter]):
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (subscript "
                                   f"{letter!r} has sizes {sizes[letter]} and {n})")
            sizes[letter] = max(n, sizes.get(letter, n))
    return TensorSpec(tuple(sizes[c] for c in out), same_dtype("einsum", list(xs)))


def _einsum_vjp(ctx, g):
    ins, out = parse_einsum(ctx.attrs["equation"])
    grads: list[Any] = []  # one array per operand, None where no gradient is needed
    for i, subs in enumerate(ins):
        if not ctx.needs(i):
            grads.append(None)
            continue
        if len(set(subs)) != len(subs):
            raise NotImplementedError(f"einsum: the gradient of an operand with a repeated subscript ({subs!r}) "
                                      "is not supported; take the diagonal with torch.diagonal first")
        others = [(ins[j], ctx.input(j)) for j in range(len(ins)) if j != i]
        present = set(out).union(*[set(s) for s, _ in others]) if others else set(out)
        keep = "".join(c for c in subs if c in present)
        eq = ",".join([out] + [s for s, _ in others]) + "->" + keep
        gi = EINSUM(g, *[t for _, t in others], equation=eq)
        shape = ctx.in_shape(i)
        if keep != subs:  # letters summed away within this operand alone: broadcast back
            gi = RESHAPE(gi, shape=tuple(n if c in present else 1 for c, n in zip(subs, shape)))
            gi = EXPAND(gi, shape=tuple(shape))
        grads.append(gi)
    return tuple(grads)


EINSUM = defop(
    "einsum", arity=VARIADIC, forward=lambda xp, *xs, equation: xp.einsum(equation, *xs, optimize=len(xs) > 2),
    abstract=_einsum_abstract, vjp=_einsum_vjp, grad_name="EinsumBackward0", save=tuple(range(8)),
    promote="same", kind="linalg",
    samples=lambda rng: [((rng.standard_normal((3, 4)), rng.standard_normal((4, 2))), {"equation": "ij,jk->ik"}),
                         ((rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4))), {"equation": "bij,bj->bi"}),
                         ((rng.standard_normal((3, 4)),), {"equation": "ij->j"}),
                         ((rng.standard_normal((3,)), rng.standard_normal((4,))), {"equation": "i,j->ij"})],
    doc="numpy.einsum with explicit subscripts (the public einsum expands '...' and the implicit output)",
)
