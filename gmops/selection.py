"""Selection and clamping records: where (a bit-select fast path for large float arrays) and
clamp (PyTorch's dtype and bound rules)."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes

from ._checks import broadcast_shapes, fit_scalar, same_dtype
from ._pointwise import _any, _elementwise, _needs
from ._registry import OpDef, TensorSpec, defop
from .comparison import GE, GT, LE, LOGICAL_AND, LT


# -- selection and clamping -------------------------------------------------------------------
def _fit_where_scalars(a, b, dts: list) -> tuple:
    """a and b with a Python number among them checked and stored as the result's dtype does
    (gmops._checks.fit_scalar): PyTorch refuses where(c, int8_x, 300) and masked_fill's 300 into
    int8 where NumPy wraps it to 44."""
    numbers = [v for v in (a, b) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numbers or not dts or (all(d.is_floating_point for d in dts) and all(-65504.0 <= v <= 65504.0 for v in numbers)):
        return a, b  # (what every float16 to float64 result holds: the common case, checked quickly)
    dt = _dtypes.result_type(dts, [], numbers)
    if dt is _dtypes.float16:
        return a, b  # (PyTorch's where stores any number beyond float16's range as inf, unchecked)
    return tuple(fit_scalar("where", v, dt) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                 for v in (a, b))


def _where_abstract(cond, a, b):
    specs = [s for s in (a, b) if isinstance(s, TensorSpec)]
    if isinstance(cond, TensorSpec) and cond.dtype is not _dtypes.bool_:
        raise TypeError(f"where: expected condition to be a bool tensor, but got a tensor with dtype {cond.dtype.name}")
    shape = broadcast_shapes("where", *(s.shape for s in [cond, *specs] if isinstance(s, TensorSpec)))
    _fit_where_scalars(a, b, [s.dtype for s in specs])
    return TensorSpec(shape, same_dtype("where", specs) if specs else _dtypes.result_type([], [], [a, b]))


# float dtype -> the unsigned integer of its width, for selecting bits (_select_bits)
_BITS_OF: dict[np.dtype, np.dtype] = {np.dtype(np.float32): np.dtype(np.uint32), np.dtype(np.float64): np.dtype(np.uint64)}
SELECT_BITS_MIN = 1 << 14  # elements from which selecting bits beats np.where's loop


def _select_bits(c, a, b, invert: bool = False):
    """np.where(c, a, b) for a float array `a` of c's shape and `b` a number or an array of
    a's shape and dtype, by masking bits: NumPy's where branches per element, and a mask of
    unpredictable values (relu's, dropout's) made it 8x slower than a multiply (1.7 ms
    against 0.2 for 400K float32). Each result element is a's or b's bits, as where's.
    `invert`: np.where(~c, a, b), the mask made from c in the same single pass."""
    u = _BITS_OF[a.dtype]
    if invert:  # c - 1: zeros where c, all ones elsewhere
        mask = np.subtract(c.view(np.uint8), np.uint8(1), dtype=u)
    else:
        mask = np.negative(c.view(np.uint8), dtype=u)  # all ones where c, zeros elsewhere
    out = np.bitwise_and(a.view(u), mask)
    if isinstance(b, np.ndarray):
        np.bitwise_or(out, np.bitwise_and(b.view(u), np.bitwise_not(mask, out=mask), out=mask), out=out)
    else:
        bits = np.array(b, dtype=a.dtype).view(u)
        if bits:  # (+0.0: nothing to add where c is false)
            np.bitwise_or(out, np.bitwise_and(np.bitwise_not(mask, out=mask), bits, out=mask), out=out)
    return out.view(a.dtype)


def _select_number(c, number, b, invert: bool):
    """np.where(c, number, b) (`invert`: np.where(~c, number, b)) in one native pass
    (gmnative.conv_kernels.select_number), or None where it cannot run."""
    from .conv import conv_native  # noqa: PLC0415  (conv imports this module's records)

    native = conv_native()
    return None if native is None else native.select_number(c, number, b, invert)


_NO_DTYPE = np.dtype(object)  # (kind "O": not a float tensor)


def _tiled_mask(c, x, tile: bool = True):
    """c repeated over x's leading dims as a C-contiguous bool array of x's shape, where c is a
    bool mask of x's trailing shape (masked_fill's causal mask on attention scores and the
    gradient's where): the native select then runs on it instead of NumPy's broadcasting
    where (70 us against about 25 for the tile and the select on (16, 4, 32, 32) scores).
    tile=False: only whether c is such a mask (True/False); the native select with a number
    reads it untiled (about 12 us there)."""
    if (c.dtype == np.bool_ and x.dtype.kind == "f" and 0 < c.ndim < x.ndim
            and c.shape == x.shape[x.ndim - c.ndim:] and x.size >= SELECT_BITS_MIN):
        return np.broadcast_to(c, x.shape).copy() if tile else True
    return c if tile else False


def _where(xp, c, a, b):
    tb = type(b)
    if (tb is float or tb is int) and -65504.0 <= b <= 65504.0 and getattr(a, "dtype", _NO_DTYPE).kind == "f":
        pass  # a number every float dtype holds, with a float tensor (relu's gradient): nothing to check
    elif type(a) is int or type(a) is float or tb is int or tb is float:
        a, b = _fit_where_scalars(a, b, [_dtypes.from_numpy(v.dtype) for v in (a, b) if hasattr(v, "dtype")])
    if xp is np and type(c) is np.ndarray:  # a mask of the array's trailing dims and a number
        if type(a) is np.ndarray and (type(b) is float or type(b) is int) and c.shape != a.shape:
            # the native select reads such a mask in place; else it is tiled for the select
            found = _select_number(c, b, a, True) if _tiled_mask(c, a, tile=False) else None
            if found is not None:
                return found
            c = _tiled_mask(c, a)
        elif type(b) is np.ndarray and (type(a) is float or type(a) is int) and c.shape != b.shape:
            found = _select_number(c, a, b, False) if _tiled_mask(c, b, tile=False) else None
            if found is not None:
                return found
            c = _tiled_mask(c, b)
    if (xp is np and type(a) is np.ndarray and type(c) is np.ndarray and c.dtype == np.bool_
            and a.dtype in _BITS_OF and c.shape == a.shape and a.size >= SELECT_BITS_MIN
            and (type(b) is float or type(b) is int
                 or type(b) is np.ndarray and b.dtype == a.dtype and b.shape == a.shape)):
        found = _select_number(c, b, a, True) if type(b) is not np.ndarray else None
        return found if found is not None else _select_bits(c, a, b)
    if (xp is np and type(b) is np.ndarray and type(c) is np.ndarray and c.dtype == np.bool_
            and b.dtype in _BITS_OF and c.shape == b.shape and b.size >= SELECT_BITS_MIN
            and (type(a) is float or type(a) is int)):
        found = _select_number(c, a, b, False)  # relu's gradient: zero where the result is <= 0
        return found if found is not None else _select_bits(c, b, a, invert=True)
    out = xp.where(c, a, b)
    if not hasattr(a, "dtype") and not hasattr(b, "dtype"):
        # two Python numbers: PyTorch's dtype for them (float32 for floats), not NumPy's float64
        out = out.astype(_dtypes.result_type([], [], [a, b]).np, copy=False)
    return out


def _where_arguments(apply, condition, input=None, other=None):
    """torch.where(condition, input, other): the elements of input where condition holds,
    else of other (all broadcast); where(condition) alone is condition.nonzero(as_tuple=True),
    as PyTorch's; the condition must be a bool tensor, as PyTorch checks."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes a condition alone or a condition, input and other (got "
                        f"{'input' if other is None else 'other'} without the other one); pass both")
    dt = getattr(condition, "dtype", None)
    if isinstance(dt, _dtypes.dtype) and dt is not _dtypes.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtypes.scalar_type_name(dt)}; compare it first (condition != 0)")
    return apply(WHERE, (condition, input, other), {})


WHERE: OpDef = defop(
    "where", forward=_where, abstract=_where_abstract,
    vjp=lambda ctx, g: (
        None,
        _needs(ctx, 1, lambda: WHERE(ctx.input(0), g, 0.0)),
        _needs(ctx, 2, lambda: WHERE(ctx.input(0), 0.0, g)),
    ),
    grad_name="WhereBackward0", save=(0,), promote="same",
    samples=lambda rng: [((rng.standard_normal((3, 4)) > 0, rng.standard_normal((3, 4)),
                           rng.standard_normal((4,))), {})],
    arity=3, mask_operands=(0,), c_expr="gm_select({0}, {1}, {2})",
    # (PyTorch's docs write input and other required; its parser also takes where(condition))
    surface=("function", "method", "where(condition, input=None, other=None, *, out=None)", "self input",
             _where_arguments),
    doc="the elements of input where condition holds, else of other (broadcast together)",
)


def _clamp_dtype(dt, min, max):
    """PyTorch's: the bounds promote like Python scalars (an int tensor clamped to 0.5
    gives float32)."""
    return _dtypes.result_type([dt], [], [b for b in (min, max) if b is not None])


def _check_bounds_fit(dt, min, max) -> tuple:
    """(min, max) as the result dtype stores them; a finite bound beyond its range is refused,
    as PyTorch does (NumPy would clip to the bound rounded to inf, or raise OverflowError for an
    integer tensor). An integer dtype's bounds go through fit_scalar: uint8's -128 is 128."""
    if not dt.is_floating_point:
        return fit_scalar("clamp", min, dt), fit_scalar("clamp", max, dt)
    top = float(np.finfo(dt.np).max)
    for b in (min, max):
        if b is not None and math.isfinite(b) and abs(b) > top:
            raise RuntimeError(f"clamp: value cannot be converted to type {_dtypes.cpp_type_name(dt)} without "
                               f"overflow (bound {b}); pass a bound within the tensor's dtype range")
    return min, max


def _clamp(xp, x, min=None, max=None):
    out = _clamp_dtype(_dtypes.from_numpy(x.dtype), min, max)
    min, max = _check_bounds_fit(out, min, max)
    return xp.clip(x, min, max).astype(out.np, copy=False)


def _clamp_abstract(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    out = _clamp_dtype(x.dtype, min, max)
    _check_bounds_fit(out, min, max)
    return TensorSpec(x.shape, out)


def _clamp_vjp(ctx, g):
    x, lo, hi = ctx.input(0), ctx.attrs["min"], ctx.attrs["max"]
    keep = None
    if lo is not None:
        keep = GE(x, lo)
    if hi is not None:
        below = LE(x, hi)
        keep = below if keep is None else LOGICAL_AND(keep, below)
    return (WHERE(keep, g, 0.0),)


def _bound(b):
    """A number bound of clamp as a plain Python number; an int stays an int (it keeps int
    tensors int), a bool stays a bool."""
    if b is None or isinstance(b, (bool, int)):
        return b
    return float(b)


def _item(b):
    return b.item() if hasattr(b, "shape") else b


def clamp_arguments(apply, input, min=None, max=None):
    """torch.clamp(input, min=None, max=None): number bounds are the clamp op's attributes
    (ClampBackward1); tensor bounds (PyTorch's clamp.Tensor) are operands of clamp_tensor (both)
    or clamp_min_tensor / clamp_max_tensor (one), broadcast and promoted like any, with their own
    gradient where they win
    (ClampBackward0); where min > max, max wins, as in PyTorch."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if hasattr(min, "shape") or hasattr(max, "shape"):
        if not all(b is None or hasattr(b, "shape") for b in (min, max)):
            if all(not hasattr(b, "shape") or tuple(b.shape) == () for b in (min, max)):  # a 0-d tensor
                return apply(CLAMP, (input,), {"min": _bound(_item(min)), "max": _bound(_item(max))})  # is a number
            raise TypeError(f"clamp(): min and max must both be tensors or both numbers (got "
                            f"{type(min).__name__} and {type(max).__name__}), as PyTorch's overloads; "
                            "wrap the number with tensor(...)")
        if min is not None and max is not None:
            return apply(CLAMP_TENSOR, (input, min, max), {})
        return apply(CLAMP_MIN_TENSOR, (input, min), {}) if max is None else apply(CLAMP_MAX_TENSOR, (input, max), {})
    return apply(CLAMP, (input,), {"min": _bound(min), "max": _bound(max)})


CLAMP = defop(
    "clamp", forward=_clamp, abstract=_clamp_abstract, vjp=_clamp_vjp, grad_name="ClampBackward1",
    save=(0,), samples=_any((3, 4), min=-0.5, max=0.7),
    surface=("function", "method", "inplace", "clamp(input, min=None, max=None, *, out=None)", "alias clip",
             clamp_arguments),
    doc="every element limited to [min, max] (either bound None, a number or a tensor)",
)


def _bound_vjp(is_min: bool):
    """The gradient of max(x, bound) (is_min) / min(x, bound), PyTorch's: x keeps it where it
    is within the bound, a tie included (x >= min), the bound takes it only where it wins
    (x < min), and a NaN on either side gives neither (both comparisons are false), as
    PyTorch's ClampMinBackward/ClampBackward0 (not maximum's tie split in half)."""

    def vjp(ctx, g):
        x, b = ctx.input(0), ctx.input(1)
        gx = WHERE(GE(x, b) if is_min else LE(x, b), g, 0.0) if ctx.needs(0) else None
        gb = WHERE(LT(x, b) if is_min else GT(x, b), g, 0.0) if ctx.needs(1) else None
        return gx, gb

    return vjp


def _bound_op(is_min: bool) -> OpDef:
    """clamp's tensor-bound halves: max(x, lo) / min(x, hi) in value (NaN propagates, as
    maximum/minimum), but the gradient goes to x at a tie (x within its bounds keeps it) and
    to the bound only where it wins, as PyTorch's ClampBackward0 (not maximum's half split)."""
    name, ufunc = ("clamp_min_tensor", "maximum") if is_min else ("clamp_max_tensor", "minimum")
    return defop(
        name, forward=lambda xp, x, b: getattr(xp, ufunc)(x, b), abstract=_elementwise(name),
        vjp=_bound_vjp(is_min), grad_name="ClampBackward0", save=(0, 1), promote="same", samples=_any((3, 4), (4,)),
        arity=2, ufunc=ufunc, c_expr=f"gm_{ufunc[:3]}({{0}}, {{1}})",
        doc=f"clamp's tensor {'min' if is_min else 'max'} bound: {ufunc}(input, bound), the gradient to input at a tie",
    )


CLAMP_MIN_TENSOR = _bound_op(True)
CLAMP_MAX_TENSOR = _bound_op(False)


def _clamp_tensor_vjp(ctx, g):
    """PyTorch's clamp_backward and clamp_backward_min_max with both bounds: input keeps the
    gradient within [min, max] (ties included); min takes it where input is below it and
    min < max; max where input is above it or max < min (max wins then, whatever input is,
    NaN included). A NaN bound or input otherwise gives no one a gradient."""
    x, lo, hi = ctx.input(0), ctx.input(1), ctx.input(2)
    gx = WHERE(LOGICAL_AND(GE(x, lo), LE(x, hi)), g, 0.0) if ctx.needs(0) else None
    glo = WHERE(LOGICAL_AND(LT(x, lo), LT(lo, hi)), g, 0.0) if ctx.needs(1) else None
    ghi = WHERE(GT(x, hi), g, WHERE(LT(hi, lo), g, 0.0)) if ctx.needs(2) else None
    return gx, glo, ghi


# clamp(input, min, max) with two tensor bounds: one node, as PyTorch's clamp.Tensor (its
# gradient at min >= max is not the chain of clamp_min_tensor and clamp_max_tensor's)
CLAMP_TENSOR = defop(
    "clamp_tensor", forward=lambda xp, x, lo, hi: xp.minimum(xp.maximum(x, lo), hi),
    abstract=_elementwise("clamp_tensor"), vjp=_clamp_tensor_vjp, grad_name="ClampBackward0", save=(0, 1, 2),
    promote="same", samples=_any((3, 4), (4,), (3, 1)), arity=3, c_expr="gm_min(gm_max({0}, {1}), {2})",
    doc="clamp with tensor bounds: min(max(input, min), max), broadcast (max wins where min > max; NaN propagates)",
)


def _check_one_bound(name: str, bound_name: str, x, b):
    """torch.clamp_min/clamp_max's refusals: no bound (its two overloads take a tensor or a
    number), a complex or non-numeric bound, a number bound of a bool tensor (PyTorch has no
    such kernel) or beyond the result dtype's range. Returns the bound as the dtype stores it
    (uint8's -128 is 128)."""
    if not hasattr(x, "shape"):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}; "
                        "pass input as a tensor (eager.tensor(...))")
    if hasattr(b, "shape"):
        return b
    if b is None or not isinstance(b, (bool, int, float)):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, {type(b).__name__}), "
                        f"but expected one of:\n * (Tensor input, Tensor {bound_name}, *, Tensor out = None)\n"
                        f" * (Tensor input, Number {bound_name}, *, Tensor out = None)\n"
                        f"pass a number or a tensor as {bound_name}" + (" (torch.clamp takes None for a missing "
                                                                        "bound)" if b is None else ""))
    dt = x.dtype if isinstance(x.dtype, _dtypes.dtype) else _dtypes.from_numpy(x.dtype)
    if dt is _dtypes.bool_:
        raise NotImplementedError(f'"{name}_scalar_cpu" not implemented for \'Bool\' ({name} of a bool tensor by '
                                  "a number); pass the bound as a bool tensor, or convert the input with .int()")
    return _check_bounds_fit(_clamp_dtype(dt, b, None), b, None)[0]


def _one_bound_op(is_min: bool) -> OpDef:
    """torch.clamp_min / clamp_max: max(input, min) / min(input, max) with one bound, a number
    (ClampMinBackward0: the bound promotes like a Python scalar, an int tensor clamped to 0.5
    gives float32) or a tensor (ClampMinBackward1: broadcast and promoted like an operand, with
    its own gradient where it wins). NaN propagates from either side, as PyTorch's."""
    name, ufunc, bound = ("clamp_min", "maximum", "min") if is_min else ("clamp_max", "minimum", "max")
    fn = getattr(np, ufunc)
    title = "ClampMin" if is_min else "ClampMax"

    def forward(xp, x, b):
        b = _check_one_bound(name, bound, x, b)
        return (fn if xp is np else getattr(xp, ufunc))(x, b)

    def abstract(x, b):
        _check_one_bound(name, bound, x, b)
        return _elementwise(name)(x, b)

    return defop(
        name, forward=forward, abstract=abstract, vjp=_bound_vjp(is_min),
        grad_name=lambda operands, attrs: f"{title}Backward{1 if hasattr(operands[1], 'shape') else 0}",
        save=(0, 1), promote="same",
        samples=lambda rng: [((rng.standard_normal((3, 4)), rng.standard_normal((4,))), {}),
                             ((rng.standard_normal((3, 4)), 0.25), {})],
        arity=2, ufunc=ufunc, c_expr=f"gm_{ufunc[:3]}({{0}}, {{1}})",
        surface=("function", "method", "inplace", f"{name}(input, {bound}, *, out=None)"),
        doc=f"every element {'raised to at least' if is_min else 'lowered to at most'} `{bound}` (a number or a "
            f"tensor, broadcast): {ufunc}(input, {bound}), the gradient to input at a tie",
    )


CLAMP_MIN = _one_bound_op(True)
CLAMP_MAX = _one_bound_op(False)
