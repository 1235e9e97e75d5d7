"""The `eager.*` functions and the Tensor methods that share them: argument handling as
PyTorch spells it (dim/keepdim, *sizes, negative axes), then one op call. The math lives
in eager.ops; nothing here computes on arrays."""
from __future__ import annotations

import builtins as _builtins
import math
from collections import namedtuple
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import _dtypes
from .autograd.graph import Node as _Node
from .autograd.graph import node_class as _node_class
from .ops import elementwise as E
from .ops import indexing as I
from .ops import linalg as L
from .ops import math_ops as M
from .ops import reductions as R
from .ops import shape_ops as S
from .ops._checks import norm_dim, norm_dims

if TYPE_CHECKING:
    from ._api import TensorAPI

_TA = TypeVar("_TA", bound="TensorAPI")  # an eager tensor or a tracer value: ops give back the same kind

# One entry of an index key: ("none",), ("ellipsis",), ("int", i), ("slice", start, stop, step)
# or ("tensor", position among the index operands).
IndexEntry = tuple[Any, ...]

return_types_max = namedtuple("max", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.max
return_types_min = namedtuple("min", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.min


def _sizes(args) -> tuple:
    """Accept f(2, 3), f((2, 3)) and f([2, 3]) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    # an int subclass stays as it is: a compiled trace's symbolic size (static.dynamic_shapes)
    return tuple(a if isinstance(a, int) and not isinstance(a, bool) else int(a) for a in args)


def _ndim(x) -> int:
    return len(x.shape)


# -- elementwise ------------------------------------------------------------------------------
def _is_one(factor) -> bool:
    """A Python 1 (no scaling needed). A tensor factor always scales: comparing it would need
    its data, which a traced value (a learning rate fed per call) does not have."""
    return isinstance(factor, (int, float)) and factor == 1


def add(input, other, *, alpha=1):
    """input + alpha * other, broadcast. Mirrors torch.add."""
    return E.ADD(input, other if _is_one(alpha) else other * alpha)


_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. "
             "Use the `^` or `logical_xor()` operator instead.")
_BOOL_SUB_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. "
                 "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(v) -> bool:
    return type(v) is bool or getattr(v, "dtype", None) is _dtypes.bool_


def check_sub(a, b) -> None:
    """PyTorch refuses `-` with a bool operand (NumPy would compute it as integers)."""
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(_BOOL_SUB if _is_bool(a) and _is_bool(b) else _BOOL_SUB_ONE)


def check_neg(a) -> None:
    """Refuse negation of a bool tensor, with PyTorch's message (shared by neg and unary minus)."""
    if _is_bool(a):
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def sub(input, other, *, alpha=1):
    """input - alpha * other, broadcast (bool operands are refused, as in PyTorch). Mirrors torch.sub."""
    check_sub(input, other)
    return E.SUB(input, other if _is_one(alpha) else other * alpha)


def rsub(input, other, *, alpha=1):
    """other - alpha * input, broadcast. Mirrors torch.rsub."""
    check_sub(input, other)
    return E.RSUB(input if _is_one(alpha) else input * alpha, other)


def mul(input, other):
    """input * other, elementwise and broadcast. Mirrors torch.mul."""
    return E.MUL(input, other)


def div(input, other, *, rounding_mode=None):
    """input / other, elementwise and broadcast; integers divide to a float result.

    `rounding_mode` 'trunc' or 'floor' rounds the quotient (keeping integer dtypes). Mirrors torch.div."""
    if rounding_mode is None:
        return E.DIV(input, other)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return _trunc_divide(input, other)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def true_divide(input, other):
    """input / other with true (float) division. Mirrors torch.true_divide."""
    return E.DIV(input, other)


def pow(input, exponent):
    """input raised to `exponent` (a tensor or a number), elementwise. Mirrors torch.pow."""
    return E.POW(input, exponent)


def neg(input):
    """-input, elementwise (not defined for bool). Mirrors torch.neg."""
    check_neg(input)
    return E.NEG(input)


def exp(input):
    """e ** input, elementwise. Mirrors torch.exp."""
    return E.EXP(input)


def log(input):
    """The natural logarithm, elementwise. Mirrors torch.log."""
    return E.LOG(input)


def log1p(input):
    """log(1 + input), accurate for small input. Mirrors torch.log1p."""
    return E.LOG1P(input)


def expm1(input):
    """exp(input) - 1, accurate for small input. Mirrors torch.expm1."""
    return E.EXPM1(input)


def sqrt(input):
    """The square root, elementwise. Mirrors torch.sqrt."""
    return E.SQRT(input)


def rsqrt(input):
    """1 / sqrt(input), elementwise. Mirrors torch.rsqrt."""
    return E.RSQRT(input)


def abs(input):
    """The absolute value, elementwise. Mirrors torch.abs."""
    return E.ABS(input)


def sign(input):
    """-1, 0 or 1 by the sign of each element. Mirrors torch.sign."""
    return E.SIGN(input)


def sin(input):
    """The sine, elementwise. Mirrors torch.sin."""
    return E.SIN(input)


def cos(input):
    """The cosine, elementwise. Mirrors torch.cos."""
    return E.COS(input)


def tanh(input):
    """The hyperbolic tangent, elementwise. Mirrors torch.tanh."""
    return E.TANH(input)


def sigmoid(input):
    """1 / (1 + exp(-input)), elementwise. Mirrors torch.sigmoid."""
    return E.SIGMOID(input)


def relu(input):
    """max(input, 0), elementwise. Mirrors torch.relu."""
    return E.RELU(input)


def erf(input):
    """The error function, elementwise. Mirrors torch.erf."""
    return E.ERF(input)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold.

    Mirrors torch.nn.functional.softplus."""
    return E.SOFTPLUS(input, beta=float(beta), threshold=float(threshold))


def gelu(input, approximate: str = "none"):
    """The Gaussian error linear unit; approximate='tanh' uses the tanh formula. Mirrors torch.nn.functional.gelu."""
    return E.GELU(input, approximate=approximate)


def square(input):
    """input * input, elementwise. Mirrors torch.square."""
    return E.MUL(input, input)


def maximum(input, other):
    """The larger of input and other, elementwise and broadcast (NaN propagates). Mirrors torch.maximum."""
    return E.MAXIMUM(input, other)


def minimum(input, other):
    """The smaller of input and other, elementwise and broadcast (NaN propagates). Mirrors torch.minimum."""
    return E.MINIMUM(input, other)


def where(condition, input=None, other=None):
    """Elements of `input` where `condition` is true, else of `other` (all broadcast together).

    Unlike PyTorch, the one-argument form where(condition) is not supported (use nonzero(as_tuple=True)).
    Mirrors torch.where."""
    if input is None and other is None:
        raise NotImplementedError("where(condition) with one argument (nonzero) is not supported; "
                                  "pass where(condition, input, other)")
    dt = getattr(condition, "dtype", None)
    if isinstance(dt, _dtypes.dtype) and dt is not _dtypes.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtypes.scalar_type_name(dt)}")
    return E.WHERE(condition, input, other)


def _bound(b):
    """A clamp bound as a plain Python number; an int stays an int (it keeps int tensors int)."""
    if b is None or isinstance(b, bool):
        return b
    if hasattr(b, "item"):
        b = b.item()
    return b if isinstance(b, int) else float(b)


def clamp(input, min=None, max=None):
    """Limit every element to [min, max] (either bound may be None or a tensor); `clip` is the same.

    Mirrors torch.clamp."""
    if hasattr(min, "shape") or hasattr(max, "shape"):
        return _clamp_to_tensors(input, min, max)
    return E.CLAMP(input, min=_bound(min), max=_bound(max))


def _clamp_to_tensors(input, min, max):
    """clamp with tensor bounds (PyTorch's clamp.Tensor): bounds broadcast and promote like
    operands and get their own gradients, where they win; max wins where min > max, as in
    PyTorch. Composed of where, so it traces and differentiates like any other ops."""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    out = input
    if min is not None:
        out = where(lt(out, min), min, out)
    if max is not None:
        out = where(gt(out, max), max, out)
    return _renamed(out, "ClampBackward0")


clip = clamp


def _comparison(record: Any, name: str, relation: str) -> Any:
    """torch's elementwise comparison `name`: `record` applied to both operands, which
    broadcast and promote as the record's forward does. One definition serves the six."""
    def compare(input, other):
        return record(input, other)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = f"{relation}, elementwise, as a bool tensor. Mirrors torch.{name}."
    return compare


eq = _comparison(E.EQ, "eq", "input == other")
ne = _comparison(E.NE, "ne", "input != other")
lt = _comparison(E.LT, "lt", "input < other")
le = _comparison(E.LE, "le", "input <= other")
gt = _comparison(E.GT, "gt", "input > other")
ge = _comparison(E.GE, "ge", "input >= other")


def logical_and(input, other):
    """Elementwise logical AND of the truth values, as a bool tensor. Mirrors torch.logical_and."""
    return E.LOGICAL_AND(input, other)


def logical_not(input):
    """Elementwise logical NOT of the truth values, as a bool tensor. Mirrors torch.logical_not."""
    return E.LOGICAL_NOT(input)


def _category(v) -> int:
    dt = getattr(v, "dtype", None)
    if isinstance(dt, _dtypes.dtype):
        return dt.category
    return _dtypes.scalar_category(v)


def bitwise_not(input):
    """`~x`: logical not of a bool tensor, two's complement not (-x - 1) of an integer one."""
    cat = _category(input)
    if cat == 0:
        return E.LOGICAL_NOT(input)
    if cat == 1:
        return E.SUB(E.NEG(input), 1)
    raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")


def bitwise_and(input, other):
    """`a & b`: logical and of bool operands, bit by bit for integers; floats are refused."""
    return _bitwise("bitwise_and", E.LOGICAL_AND, M.BITWISE_AND, input, other)


def clone(input: _TA, *, memory_format: Any = None) -> _TA:
    """A copy of input with its own memory, differentiable; dense layouts keep their strides
    unless `memory_format` asks for another (eager.contiguous_format, channels_last). Mirrors torch.clone."""
    if memory_format is None or getattr(memory_format, "name", None) == "preserve_format":
        return E.CLONE(input)
    from ._memory_format import format_name  # noqa: PLC0415

    return E.CLONE(input, memory_format=format_name(memory_format))


def to_dtype(input, dtype):
    """input converted to `dtype` (input itself if it already has it); differentiable between float dtypes.

    Mirrors torch.Tensor.to."""
    dt = _dtypes.as_dtype(dtype)
    return input if input.dtype is dt else E.TO_DTYPE(input, dtype=dt)


# -- reductions --------------------------------------------------------------------------------
def _reduce(op, input, dim, keepdim, name, **extra):
    dims = norm_dims(name, dim, _ndim(input))
    return op(input, dims=dims, keepdim=bool(keepdim), **extra)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over `dim` (all elements when None), optionally cast to `dtype` first. Mirrors torch.sum."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(R.SUM, input, dim, keepdim, "sum")


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean over `dim` (all elements when None); needs a floating dtype or `dtype=`. Mirrors torch.mean."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    _require_float_input(input, "mean(): could not infer output dtype. Input dtype must be either a floating "
                                "point or complex dtype. Got: {}")
    return _reduce(R.MEAN, input, dim, keepdim, "mean")


def _require_float_input(input, message: str) -> None:
    """NumPy would compute in float64 silently where PyTorch refuses an integer input."""
    dt = getattr(input, "dtype", None)
    if isinstance(dt, _dtypes.dtype) and not dt.is_floating_point:
        raise RuntimeError(message.format(_dtypes.scalar_type_name(dt)))


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product over `dim` (all elements when None). Mirrors torch.prod."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return _reduce(R.PROD, input, dim, keepdim, "prod")


def _spread(op, name, input, dim, unbiased, keepdim, correction):
    """var and std: `correction` (default 1, Bessel's) or the older `unbiased` flag sets the
    divisor N - correction; a second positional argument that is not a bool is the dim, as
    in torch.var(x, 0)."""
    if isinstance(unbiased, bool) is False and unbiased is not None and dim is None:
        dim, unbiased = unbiased, None
    if correction is None:
        correction = 1 if unbiased in (None, True) else 0
    return _reduce(op, input, dim, keepdim, name, correction=int(correction))


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over `dim` (all elements when None), divided by N - correction. Mirrors torch.var."""
    return _spread(R.VAR, "var", input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation over `dim` (all elements when None), divided by N - correction. Mirrors torch.std."""
    return _spread(R.STD, "std", input, dim, unbiased, keepdim, correction)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably. Mirrors torch.logsumexp."""
    return _reduce(R.LOGSUMEXP, input, dim, keepdim, "logsumexp")


def amax(input, dim=(), keepdim=False):
    """The maximum over `dim` (all dimensions when empty); the gradient is shared among ties. Mirrors torch.amax."""
    return _reduce(R.AMAX, input, None if dim == () else dim, keepdim, "amax")


def amin(input, dim=(), keepdim=False):
    """The minimum over `dim` (all dimensions when empty); the gradient is shared among ties. Mirrors torch.amin."""
    return _reduce(R.AMIN, input, None if dim == () else dim, keepdim, "amin")


def _max_min(input, dim, keepdim, is_max):
    """max(x): the largest value; max(x, dim): (values, indices); max(x, other): elementwise."""
    if dim is None:
        return (R.MAX_ALL if is_max else R.MIN_ALL)(input, dims=None, keepdim=False)
    if not isinstance(dim, int):
        return maximum(input, dim) if is_max else minimum(input, dim)
    d = norm_dim("max" if is_max else "min", dim, _ndim(input))
    if _ndim(input) == 0:  # PyTorch: a 0-d tensor is its own maximum, at index 0
        input, keepdim = S.RESHAPE(input, shape=(1,)), False
    index = (R.ARGMAX if is_max else R.ARGMIN)(input, dim=d, keepdim=bool(keepdim))
    values = R.TAKE_ALONG(input, index, dim=d, keepdim=bool(keepdim))
    return (return_types_max if is_max else return_types_min)(values, index)


def max(input, dim=None, keepdim=False):
    """The largest element; with `dim`, a (values, indices) named tuple; with a tensor second argument, maximum.

    Mirrors torch.max."""
    return _max_min(input, dim, keepdim, True)


def min(input, dim=None, keepdim=False):
    """The smallest element; with `dim`, a (values, indices) named tuple; with a tensor second argument, minimum.

    Mirrors torch.min."""
    return _max_min(input, dim, keepdim, False)


def argmax(input, dim=None, keepdim=False):
    """The index of the largest element (of the flattened input when `dim` is None). Mirrors torch.argmax."""
    d = None if dim is None else norm_dim("argmax", dim, _ndim(input))
    return R.ARGMAX(input, dim=d, keepdim=bool(keepdim))


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest element (of the flattened input when `dim` is None). Mirrors torch.argmin."""
    d = None if dim is None else norm_dim("argmin", dim, _ndim(input))
    return R.ARGMIN(input, dim=d, keepdim=bool(keepdim))


def all(input, dim=None, keepdim=False):
    """True where every element (along dim) is nonzero, as a bool tensor. Counted with ops
    (the zeros, summed) rather than read from the array, so it works on any tensor-like a
    tracer hands in, and an empty reduction is True."""
    zeros = logical_not(to_dtype(input, _dtypes.bool_))
    return eq(sum(zeros, dim, keepdim), 0)


def any(input, dim=None, keepdim=False):
    """True where some element (along dim) is nonzero, as a bool tensor (see `all`)."""
    return gt(sum(to_dtype(input, _dtypes.bool_), dim, keepdim), 0)


def norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The vector p-norm over `dim` (all elements when None), as PyTorch's torch.norm for
    p = 2 (or "fro"), 1, inf, -inf, 0 and any other positive p; its node is named
    LinalgVectorNormBackward0 whatever ops compose it, as PyTorch's. Mirrors torch.norm."""
    return _renamed(_vector_norm(input, p, dim, keepdim, dtype), "LinalgVectorNormBackward0")


def _vector_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """norm's value (see norm).

    Composed from ops, so gradients come from their rules. Where the norm is 0 the gradient
    is 0, as in PyTorch, rather than the NaN that d sqrt(s)/ds = inf at s = 0 would give:
    the root is taken of where(s == 0, 1, s) and its value replaced by 0 there."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    _require_float_input(input, "linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                "Got {}")
    if getattr(input, "dtype", None) is _dtypes.float16:
        # PyTorch accumulates a float16 norm in float32 (squares above 256 overflow float16)
        return to_dtype(norm(to_dtype(input, _dtypes.float32), p, dim, keepdim), _dtypes.float16)
    if p == "fro":
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise RuntimeError(f"norm: p={p!r} is not supported (use a number, inf, -inf or 'fro')")
    if p == math.inf:
        return amax(abs(input), () if dim is None else dim, keepdim)
    if p == -math.inf:
        return amin(abs(input), () if dim is None else dim, keepdim)
    if p == 0:
        return sum(to_dtype(ne(input, 0), input.dtype), dim, keepdim)
    if p == 1:
        return sum(abs(input), dim, keepdim)
    if p < 0:
        raise RuntimeError(f"norm: p={p} is not supported (negative p other than -inf)")
    if p == 2:
        total = sum(input * input, dim, keepdim)
    else:
        total = sum(pow(abs(input), p), dim, keepdim)
    is_zero = eq(total, 0)
    safe = where(is_zero, 1.0, total)
    root = sqrt(safe) if p == 2 else pow(safe, 1.0 / p)
    return where(is_zero, 0.0, root)


def softmax(input, dim, dtype=None):
    """exp(input) normalized to sum to 1 along `dim`, optionally cast to `dtype` first. Mirrors torch.softmax."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return R.SOFTMAX(input, dim=norm_dim("softmax", dim, _ndim(input)))


def log_softmax(input, dim, dtype=None):
    """log(softmax(input, dim)), computed stably. Mirrors torch.log_softmax."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return R.LOG_SOFTMAX(input, dim=norm_dim("log_softmax", dim, _ndim(input)))


# -- linear algebra -----------------------------------------------------------------------------
def matmul(input, other):
    """The matrix product with PyTorch's rules for 1-d operands and broadcast batch dimensions.

    Both operands must have the same dtype (no promotion, as in PyTorch). Mirrors torch.matmul."""
    _same_dtype_for_matmul(input, other)
    return L.MATMUL(input, other)


def _same_dtype_for_matmul(a, b) -> None:
    """matmul does not promote in PyTorch (NumPy would)."""
    da, db = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if isinstance(da, _dtypes.dtype) and isinstance(db, _dtypes.dtype) and da is not db:
        raise RuntimeError(f"matmul: expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtypes.cpp_type_name(da)} != {_dtypes.cpp_type_name(db)}")


def mm(input, mat2):
    """The product of two 2-d matrices (no broadcasting). Mirrors torch.mm."""
    _same_dtype_for_matmul(input, mat2)
    if _ndim(input) != 2 or _ndim(mat2) != 2:
        raise RuntimeError(f"mm: self must be a matrix (got shapes {tuple(input.shape)} and {tuple(mat2.shape)})")
    return L.MATMUL(input, mat2)


def dot(input, other):
    """The inner product of two 1-d tensors of the same length and dtype. Mirrors torch.dot."""
    _same_dtype_for_matmul(input, other)
    if _ndim(input) != 1 or _ndim(other) != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {_ndim(input)}D and {_ndim(other)}D tensors")
    return L.MATMUL(input, other)


# -- shapes ------------------------------------------------------------------------------------------
def _resolve_shape(shape: tuple, numel: int, name: str) -> tuple:
    if list(shape).count(-1) > 1:
        raise RuntimeError(f"{name}: only one dimension can be inferred")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or numel % known:
            raise RuntimeError(f"{name}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    return shape


def reshape(input, *shape):
    """Always a new tensor (a view when it can be), as in PyTorch, even for the same shape."""
    shape = _resolve_shape(_sizes(shape), _numel(input), "reshape")
    out = S.RESHAPE(input, shape=shape)
    data, source = getattr(out, "_data", None), getattr(input, "_data", None)
    if data is not None and source is not None and data.size and not np.may_share_memory(data, source):
        _renamed(out, "UnsafeViewBackward0")  # a layout that cannot be viewed was copied, as PyTorch names it
    return out


def _numel(x) -> int:
    n = 1
    for s in x.shape:
        n *= s
    return n


def flatten(input, start_dim=0, end_dim=-1):
    """input with dimensions start_dim..end_dim merged into one. Mirrors torch.flatten."""
    nd = _ndim(input)
    if nd == 0:
        return reshape(input, (1,))
    s, e = norm_dim("flatten", start_dim, nd), norm_dim("flatten", end_dim, nd)
    shape = tuple(input.shape)
    if s == e:
        return input  # PyTorch returns the tensor itself here
    mid = 1
    for n in shape[s:e + 1]:
        mid *= n
    return reshape(input, shape[:s] + (mid,) + shape[e + 1:])


def transpose(input, dim0, dim1):
    """input with dimensions dim0 and dim1 swapped (a view); `swapaxes` is the same. Mirrors torch.transpose."""
    nd = _ndim(input)
    d0, d1 = norm_dim("transpose", dim0, nd), norm_dim("transpose", dim1, nd)
    return S.TRANSPOSE(input, dim0=d0, dim1=d1)


swapaxes = transpose


def t(input):
    """The transpose of a tensor of at most 2 dimensions. Mirrors torch.t."""
    if _ndim(input) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {_ndim(input)}D")
    if _ndim(input) < 2:
        return input
    return _renamed(S.TRANSPOSE(input, dim0=0, dim1=1), "TBackward0")


def _row_major(out):
    """`out`, a result just made (a new buffer no one else holds), laid out row-major: for
    composites whose PyTorch kernel writes a contiguous result whatever its input's layout
    (masked_fill, log_sigmoid), where the ops composing it here keep the input's order."""
    data = getattr(out, "_data", None)
    if data is not None and not data.flags.c_contiguous:
        from ._device import xp_of_array  # noqa: PLC0415

        out._data = xp_of_array(data).ascontiguousarray(data)
    return out


def _renamed(out, grad_name: str):
    """PyTorch names some nodes after the method called, not the op run (t() -> TBackward0);
    the op is the same, so only the eager node's name changes."""
    node = getattr(out, "grad_fn", None)
    if node is not None and hasattr(node, "_name"):
        node._name = grad_name
        if isinstance(node, _Node):
            node.__class__ = _node_class(grad_name)  # its type is named as PyTorch's too
    return out


def permute(input, *dims):
    """input with its dimensions reordered to `dims` (a view). Mirrors torch.permute."""
    nd = _ndim(input)
    dims = tuple(norm_dim("permute", d, nd) for d in _sizes(dims))
    return S.PERMUTE(input, dims=dims)


def expand(input, *sizes):
    """A broadcast view of input to `sizes` (-1 keeps a dimension). Mirrors torch.Tensor.expand."""
    sizes = _sizes(sizes)
    lead = len(sizes) - _ndim(input)
    shape = tuple(input.shape[i - lead] if (n == -1 and i >= lead) else n for i, n in enumerate(sizes))
    return S.EXPAND(input, shape=shape)


def broadcast_to(input, size):
    """input broadcast to `size` (a view). Mirrors torch.broadcast_to."""
    return expand(input, *size)


def squeeze(input, dim=None):
    """input without its size-1 dimensions (only `dim`, or those in it, when given). Mirrors torch.squeeze."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return S.SQUEEZE(input, dims=())  # PyTorch: squeeze(x, ()) squeezes nothing
    dims = norm_dims("squeeze", dim, _ndim(input))
    return S.SQUEEZE(input, dims=dims)


def unsqueeze(input, dim):
    """input with a size-1 dimension inserted at `dim`. Mirrors torch.unsqueeze."""
    nd = _ndim(input) + 1
    return S.UNSQUEEZE(input, dim=norm_dim("unsqueeze", dim, nd))


def cat(tensors, dim=0):
    """The tensors joined along the existing dimension `dim`; `concat` and `concatenate` are the same.

    Mirrors torch.cat."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of Tensors")
    return S.CAT(*tensors, dim=norm_dim("cat", dim, _ndim(tensors[0])))


concat = concatenate = cat


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dimension `dim`. Mirrors torch.stack."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of Tensors")
    return S.STACK(*tensors, dim=norm_dim("stack", dim, _ndim(tensors[0]) + 1))


def split(tensor, split_size_or_sections, dim=0):
    """input cut along `dim` into pieces of `split_size_or_sections` (an int: equal pieces, the last smaller;
    a list: those sizes), returned as a tuple of views. Mirrors torch.split."""
    d = norm_dim("split", dim, _ndim(tensor))
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise RuntimeError(f"split: split_size must be positive, got {step}")
        sizes = tuple(_builtins.min(step, n - i) for i in range(0, n, step)) or (0,)
        pieces = S.SPLIT(tensor, sizes=sizes, dim=d)
        return tuple(_renamed(p, "SplitBackward0") for p in pieces)  # PyTorch's node for equal pieces
    sizes = tuple(int(s) for s in split_size_or_sections)
    return S.SPLIT(tensor, sizes=sizes, dim=d)


def chunk(input, chunks, dim=0):
    """input cut along `dim` into at most `chunks` pieces of equal size (the last smaller). Mirrors torch.chunk."""
    d = norm_dim("chunk", dim, _ndim(input))
    n = input.shape[d]
    step = -(-n // chunks) if n else 1
    return split(input, step, d)


def unbind(input, dim=0):
    """The slices of input along `dim`, as a tuple, with that dimension removed. Mirrors torch.unbind."""
    d = norm_dim("unbind", dim, _ndim(input))
    return tuple(_renamed(select(input, d, i), "UnbindBackward0") for i in range(input.shape[d]))


def select(input, dim, index):
    """The slice of input at `index` along `dim`, with that dimension removed. Mirrors torch.select."""
    d = norm_dim("select", dim, _ndim(input))
    return S.INDEX(input, key=(("slice", None, None, None),) * d + (("int", index),), n_index=0)


def narrow(input, dim, start, length):
    """The slice input[start:start + length] along `dim` (a view). Mirrors torch.narrow."""
    d = norm_dim("narrow", dim, _ndim(input))
    return S.INDEX(input, key=(("slice", None, None, None),) * d + (("slice", start, start + length, None),),
                   n_index=0)


# -- indexing -------------------------------------------------------------------------------------
def index_key(index, make_tensor):
    """Turn a Python index into (key, index operands) for the index ops."""
    if not isinstance(index, tuple):
        index = (index,)
    key: list[IndexEntry] = []
    operands: list[Any] = []  # the index tensors (eager tensors or tracer values), in key order
    for item in index:
        if item is None:
            key.append(("none",))
        elif item is Ellipsis:
            key.append(("ellipsis",))
        elif isinstance(item, bool):
            operands.append(make_tensor(item))
            key.append(("tensor", len(operands) - 1))
        elif isinstance(item, int) or (hasattr(item, "__index__") and not hasattr(item, "shape")):
            key.append(("int", int(item)))
        elif isinstance(item, slice):
            key.append(("slice", _opt_int(item.start), _opt_int(item.stop), _opt_int(item.step)))
        else:
            t = item if hasattr(item, "_data") or hasattr(item, "__graphmode_dispatch__") else make_tensor(item)
            if t.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            operands.append(t)
            key.append(("tensor", len(operands) - 1))
    return tuple(key), operands


def _opt_int(v):
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v  # an int subclass stays: a compiled trace's symbolic size (static.dynamic_shapes)
    return int(v)


_FULL = ("slice", None, None, None)


def _selects_first(key, operands):
    """PyTorch applies integer indices first (as selects), then the tensor indices; NumPy
    counts an int as one more advanced index, which moves the result's dims when the two are
    apart (x of shape (2, 3, 4): x[0, :, idx] is (3, 2) in PyTorch, (2, 3) in NumPy).
    Returns (basic key, advanced key), or None where both rules agree."""
    if not (_builtins.any(e[0] == "int" for e in key) and _builtins.any(e[0] == "tensor" for e in key)):
        return None
    basic, advanced = [], []
    for e in key:
        tag = e[0]
        if tag == "int":
            basic.append(e)
        elif tag == "tensor":
            t = operands[e[1]]
            if t.dtype is _dtypes.bool_:
                if not t.ndim:
                    return None  # x[True]: adds a dim; leave such keys to the one-step rule
                basic.extend([_FULL] * t.ndim)
            else:
                basic.append(_FULL)
            advanced.append(e)
        elif tag == "ellipsis":
            basic.append(e)
            advanced.append(e)
        else:  # a slice or None: applied by the basic step, kept whole by the advanced one
            basic.append(e)
            advanced.append(_FULL)
    return tuple(basic), tuple(advanced)


def getitem(input, index, make_tensor):
    """input[index] with PyTorch's basic and advanced indexing; `make_tensor` turns index lists into tensors.

    Backs Tensor.__getitem__. Mirrors torch.Tensor.__getitem__."""
    key, operands = index_key(index, make_tensor)
    if _builtins.any(e[1:] and e[0] == "slice" and e[3] is not None and e[3] <= 0 for e in key):
        raise ValueError("step must be greater than zero")
    two_steps = _selects_first(key, operands)
    if two_steps is not None:
        basic, advanced = two_steps
        input, key = S.INDEX(input, key=basic, n_index=0), advanced
    return S.INDEX(input, *operands, key=key, n_index=len(operands))


def put_at_index(input, index, value, make_tensor):
    """A copy of input with `value` written at input[index] (the differentiable form of item
    assignment). Backs Tensor.__setitem__ and index_put."""
    key, operands = index_key(index, make_tensor)
    return S.INDEX_PUT(input, value, *operands, key=key, n_index=len(operands))


# == added with the PyTorch-programs surface ======================================================
return_types_sort = namedtuple("sort", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.sort
return_types_topk = namedtuple("topk", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.topk
return_types_kthvalue = namedtuple("kthvalue", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.kthvalue
return_types_median = namedtuple("median", ["values", "indices"])  # type: ignore[name-match]  # named as torch.return_types.median


def _numeric_category(name: str, cats) -> None:
    if 2 in cats:  # PyTorch 2.13 raises NotImplementedError here
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'Float\'; bitwise ops take integer or bool '
                                  "tensors")


_check_bitwise = _numeric_category


# -- division with rounding, bitwise, logical ------------------------------------------------------
def floor_divide(input, other):
    """a // b rounded toward -inf (PyTorch >= 1.13); no gradient flows through it."""
    return M.FLOOR_DIVIDE(input, other)


def _trunc_divide(input, other):
    """a / b rounded toward zero: (a - fmod(a, b)) is an exact multiple of b."""
    rest = M.FMOD(input, other)
    if _category(input) < 2 and _category(other) < 2:
        return M.FLOOR_DIVIDE(input - rest, other)
    from .ops.special import STOP_GRADIENT  # noqa: PLC0415

    return STOP_GRADIENT(E.DIV(input - rest, other))  # rounded: no gradient, as PyTorch


def remainder(input, other):
    """a % b with the sign of b, as Python's %."""
    return M.REMAINDER(input, other)


def fmod(input, other):
    """C's fmod: the remainder with the sign of a."""
    return M.FMOD(input, other)


def _bitwise(name, on_bools, on_integers, input, other):
    """`name` of two bool tensors is its logical form (a bool result); of integers (or an integer
    with a bool), the bitwise op; floats are refused with PyTorch's message."""
    cats = (_category(input), _category(other))
    if cats == (0, 0):
        return on_bools(input, other)
    _check_bitwise(name, cats)
    return on_integers(input, other)


def bitwise_or(input, other):
    """Elementwise bitwise OR of integer or bool tensors. Mirrors torch.bitwise_or."""
    return _bitwise("bitwise_or", M.LOGICAL_OR, M.BITWISE_OR, input, other)


def bitwise_xor(input, other):
    """Elementwise bitwise XOR of integer or bool tensors. Mirrors torch.bitwise_xor."""
    return _bitwise("bitwise_xor", M.LOGICAL_XOR, M.BITWISE_XOR, input, other)


def logical_or(input, other):
    """Elementwise logical OR of the truth values, as a bool tensor. Mirrors torch.logical_or."""
    return M.LOGICAL_OR(input, other)


def logical_xor(input, other):
    """Elementwise logical XOR of the truth values, as a bool tensor. Mirrors torch.logical_xor."""
    return M.LOGICAL_XOR(input, other)


# == rounding and more transcendental functions (ops in ops/math_ops.py) ==========================
def floor(input):
    """The largest integer not above each element (an integer tensor as it is). Mirrors torch.floor."""
    return M.FLOOR(input)


def ceil(input):
    """The smallest integer not below each element (an integer tensor as it is). Mirrors torch.ceil."""
    return M.CEIL(input)


def trunc(input):
    """Each element rounded toward zero (an integer tensor as it is). Mirrors torch.trunc."""
    return M.TRUNC(input)


def round(input, *, decimals: int = 0):  # noqa: A001  (torch's name)
    """Each element rounded to `decimals` places, halves to even. Mirrors torch.round."""
    return M.ROUND(input, decimals=int(decimals))


def log2(input):
    """The base-2 logarithm, elementwise. Mirrors torch.log2."""
    return M.LOG2(input)


def log10(input):
    """The base-10 logarithm, elementwise. Mirrors torch.log10."""
    return M.LOG10(input)


def sinh(input):
    """The hyperbolic sine, elementwise. Mirrors torch.sinh."""
    return M.SINH(input)


def cosh(input):
    """The hyperbolic cosine, elementwise. Mirrors torch.cosh."""
    return M.COSH(input)


def asin(input):
    """The arcsine, elementwise (NaN outside [-1, 1]). Mirrors torch.asin."""
    return M.ASIN(input)


def acos(input):
    """The arccosine, elementwise (NaN outside [-1, 1]). Mirrors torch.acos."""
    return M.ACOS(input)


def atan(input):
    """The arctangent, elementwise. Mirrors torch.atan."""
    return M.ATAN(input)


def atan2(input, other):
    """The angle of the point (other, input) in (-pi, pi], elementwise. Mirrors torch.atan2."""
    return M.ATAN2(input, other)


arcsin, arccos, arctan, arctan2, fix = asin, acos, atan, atan2, trunc


def isnan(input):
    """Whether each element is NaN, as a bool tensor. Mirrors torch.isnan."""
    return M.ISNAN(input)


def isinf(input):
    """Whether each element is +inf or -inf, as a bool tensor. Mirrors torch.isinf."""
    return M.ISINF(input)


def isfinite(input):
    """Whether each element is neither infinite nor NaN, as a bool tensor. Mirrors torch.isfinite."""
    return M.ISFINITE(input)


def nan_to_num(input, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    """input with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf`.

    The infinities default to the dtype's largest and smallest finite values. Mirrors torch.nan_to_num."""
    return M.NAN_TO_NUM(input, nan=float(nan), posinf=None if posinf is None else float(posinf),
                        neginf=None if neginf is None else float(neginf))


def clamp_min(input, min):
    """max(input, min), elementwise. Mirrors torch.clamp_min."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """min(input, max), elementwise. Mirrors torch.clamp_max."""
    return clamp(input, max=max)


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    out = input + weight * (end - input)
    return _renamed(out, "LerpBackward0" if not hasattr(weight, "shape") else "LerpBackward1")


# -- products -----------------------------------------------------------------------------------------
def outer(input, vec2):
    """The outer product of two 1-d tensors; `ger` is the same. Mirrors torch.outer."""
    if _ndim(input) != 1 or _ndim(vec2) != 1:
        raise RuntimeError(f"outer: expected 1-D vectors, got shapes {tuple(input.shape)} and {tuple(vec2.shape)}")
    return S.RESHAPE(input, shape=(input.shape[0], 1)) * S.RESHAPE(vec2, shape=(1, vec2.shape[0]))


ger = outer


CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    a (..., P, R) tensor. Mirrors torch.cdist, its two ways included: for p = 2 with more than
    25 rows on either side (or compute_mode="use_mm_for_euclid_dist") through a matmul,
    sqrt(clamp_min(|a|^2 + |b|^2 - 2 a.b, 1e-30)), which PyTorch uses too and which is less
    exact for near points; otherwise the norm of each difference. The gradient is 0 where a
    distance is 0, as in PyTorch."""
    if compute_mode not in CDIST_MODES:
        raise ValueError(f"cdist: {compute_mode} is not a valid value for compute_mode; use one of {CDIST_MODES}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if _ndim(x1) < 2 or _ndim(x2) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {_ndim(x1)}D, X2 got: {_ndim(x2)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and (rows1 > 25 or rows2 > 25)))
    if use_mm:
        sq1 = sum(x1 * x1, -1, keepdim=True)
        sq2 = unsqueeze(sum(x2 * x2, -1), -2)
        return sqrt(clamp_min(sq1 + sq2 - 2 * matmul(x1, transpose(x2, -1, -2)), 1e-30))
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, -1)


def bmm(input, mat2):
    """The batched product of two 3-d tensors (b, n, m) @ (b, m, p). Mirrors torch.bmm."""
    _same_dtype_for_matmul(input, mat2)
    if _ndim(input) != 3 or _ndim(mat2) != 3:
        raise RuntimeError(f"bmm: batch1 must be a 3D tensor (got shapes {tuple(input.shape)} and "
                           f"{tuple(mat2.shape)})")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"bmm: Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return _renamed(L.MATMUL(input, mat2), "BmmBackward0")


def _scaled_sum(input, product, beta, alpha, name):
    out = product if _is_one(alpha) else product * alpha
    if beta == 0:  # PyTorch ignores input then (nan and inf in it are not propagated)
        return _renamed(out, name)
    return _renamed((input if _is_one(beta) else input * beta) + out, name)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha, "AddmmBackward0")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha, "BaddbmmBackward0")


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec). Mirrors torch.addmv."""
    return _scaled_sum(input, matmul(mat, vec), beta, alpha, "AddmvBackward0")


def _explicit_einsum(equation: str, shapes: list) -> str:
    """An equation with '...' spelled out in spare letters and the output written out
    (implicit mode: the letters used once, alphabetically, after the ellipsis dims)."""
    import string  # noqa: PLC0415

    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise RuntimeError(f"einsum(): {len(ins)} operands in the equation {equation!r} but {len(shapes)} given")
    spare = [c for c in string.ascii_letters if c not in eq]
    n_ell = _builtins.max([len(s) - (len(sub) - 3) for sub, s in zip(ins, shapes) if "..." in sub] or [0])
    ell = "".join(spare[:n_ell])
    fixed = []
    for sub, s in zip(ins, shapes):
        if "..." in sub:
            n = len(s) - (len(sub) - 3)
            sub = sub.replace("...", ell[n_ell - n:] if n else "")
        fixed.append(sub)
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(fixed)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return ",".join(fixed) + "->" + out


def einsum(equation, *operands):
    """The Einstein-summation contraction of `operands` described by `equation`. Mirrors torch.einsum."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = _explicit_einsum(equation, [tuple(o.shape) for o in operands])
    return M.EINSUM(*operands, equation=eq)


# -- scans, sorting and selection -----------------------------------------------------------------
def cumsum(input, dim, *, dtype=None):
    """The running sum along `dim`. Mirrors torch.cumsum."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return M.CUMSUM(input, dim=norm_dim("cumsum", dim, _ndim(input)))


def cumprod(input, dim, *, dtype=None):
    """The running product along `dim`. Mirrors torch.cumprod."""
    if dtype is not None:
        input = to_dtype(input, dtype)
    return M.CUMPROD(input, dim=norm_dim("cumprod", dim, _ndim(input)))


def argsort(input, dim=-1, descending=False, stable=False):
    """Always stable here (a valid answer for stable=False too)."""
    return M.ARGSORT(input, dim=norm_dim("argsort", dim, _ndim(input)), descending=bool(descending))


def sort(input, dim=-1, descending=False, stable=False):
    """The values sorted along `dim` and their original indices, as a (values, indices) named tuple.

    Mirrors torch.sort."""
    d = norm_dim("sort", dim, _ndim(input))
    if _ndim(input) == 0:
        return return_types_sort(input * 1 if input.is_floating_point() else clone(input), M.ARGSORT(input, dim=0))
    index = M.ARGSORT(input, dim=d, descending=bool(descending))
    return return_types_sort(_renamed(I.GATHER(input, index, dim=d), "SortBackward0"), index)


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The `k` largest (or smallest) values along `dim` and their indices, as a (values, indices) named tuple.

    Mirrors torch.topk."""
    d = norm_dim("topk", dim, _ndim(input))
    n = input.shape[d] if _ndim(input) else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k ({k}) out of range for a dimension of size {n}")
    index = narrow(M.ARGSORT(input, dim=d, descending=bool(largest)), d, 0, k)
    return return_types_topk(_renamed(I.GATHER(input, index, dim=d), "TopkBackward0"), index)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element (k counts from 1) along dim, and its index."""
    d = norm_dim("kthvalue", dim, _ndim(input))
    n = input.shape[d]
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    index = narrow(M.ARGSORT(input, dim=d), d, k - 1, 1)
    values = _renamed(I.GATHER(input, index, dim=d), "KthvalueBackward0")
    if not keepdim:
        values, index = squeeze(values, d), squeeze(index, d)
    return return_types_kthvalue(values, index)


def median(input, dim=None, keepdim=False):
    """The lower median (of an even count, the smaller middle value), as PyTorch's."""
    if dim is None:
        flat = reshape(input, -1)
        out = kthvalue(flat, (flat.shape[0] - 1) // 2 + 1, 0).values
        return _renamed(out, "MedianBackward0")
    d = norm_dim("median", dim, _ndim(input))
    values, index = kthvalue(input, (input.shape[d] - 1) // 2 + 1, d, keepdim)
    return return_types_median(_renamed(values, "MedianBackward1"), index)


def gather(input, dim, index, *, sparse_grad=False):
    """Values of input picked along `dim` at `index` (out[i][j] = input[index[i][j]][j] for dim 0).

    Mirrors torch.gather."""
    return I.GATHER(input, index, dim=norm_dim("gather", dim, _ndim(input)))


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of input with `src` (or the scalar `value`) written at `index` along `dim`.

    `reduce` 'add' or 'multiply' combines with the existing values instead. Mirrors torch.scatter."""
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
        source = src if src is not None else value
        if source is None:
            raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
        if hasattr(source, "shape"):
            import warnings  # noqa: PLC0415

            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                          "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                          "options.", UserWarning, stacklevel=2)
        else:  # a number: the same value at every index position
            from ._factories import full  # noqa: PLC0415

            source = full(tuple(index.shape), source, dtype=input.dtype, device=input.device)
        return scatter_reduce(input, dim, index, source, "sum" if reduce == "add" else "prod")
    source = src if src is not None else value
    if source is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    if not hasattr(source, "shape"):
        source = float(source) if input.is_floating_point() else int(source)
    return I.SCATTER(input, index, source, dim=norm_dim("scatter", dim, _ndim(input)))


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with `src` combined in at `index` along `dim` by `reduce` ('sum',
    'prod', 'mean', 'amax' or 'amin'); include_self=False leaves input's own value out at the
    positions index reaches. Mirrors torch.scatter_reduce."""
    return I.SCATTER_REDUCE(input, index, src, dim=norm_dim("scatter_reduce", dim, _ndim(input)), reduce=reduce,
                            include_self=bool(include_self))


def scatter_add(input, dim, index, src):
    """A copy of input with `src` added at `index` along `dim`. Mirrors torch.scatter_add."""
    return I.SCATTER_ADD(input, index, src, dim=norm_dim("scatter_add", dim, _ndim(input)))


def index_select(input, dim, index):
    """The slices of input at the 1-d `index` along `dim`. Mirrors torch.index_select."""
    return I.INDEX_SELECT(input, index, dim=norm_dim("index_select", dim, _ndim(input)))


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * `source` added at the 1-d `index` along `dim`. Mirrors torch.index_add."""
    return I.INDEX_ADD(input, index, source, dim=norm_dim("index_add", dim, _ndim(input)), alpha=float(alpha))


def _host(x):
    """The values of x as a NumPy array. Reading them is what makes an op's output shape
    depend on the data: static's traced values refuse it with a TraceError at the user's line."""
    data = getattr(x, "_data", None)
    if data is None:
        import numpy as np  # noqa: PLC0415

        return np.asarray(x)
    return data if type(data).__module__.startswith("numpy") else data.get()


def _int_tensor(arr, like):
    from ._factories import tensor  # noqa: PLC0415

    return tensor(arr, dtype=_dtypes.int64, device=like.device)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements: (n, ndim) int64, or one index per dim with as_tuple.
    Its shape depends on the data, so it runs eagerly only (static raises a TraceError)."""
    import numpy as np  # noqa: PLC0415

    found = np.nonzero(np.atleast_1d(_host(input)))
    if as_tuple:
        return tuple(_int_tensor(f, input) for f in found)
    return _int_tensor(np.stack(found, axis=1) if found else np.zeros((0, 0), np.int64), input)


argwhere = nonzero


def masked_select(input, mask):
    """The elements of input where mask is True, as a 1-D tensor (data-dependent shape:
    eager only). Gradients flow back to the selected positions."""
    if getattr(mask, "dtype", None) is not _dtypes.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {getattr(mask, 'dtype', type(mask))}")
    shape = broadcast_shape(tuple(input.shape), tuple(mask.shape))
    x = input if tuple(input.shape) == shape else expand(input, shape)
    m = mask if tuple(mask.shape) == shape else expand(mask, shape)
    if not shape:
        x, m = reshape(x, 1), reshape(m, 1)
    index = nonzero(m, as_tuple=True)
    return _renamed(S.INDEX(x, *index, key=tuple(("tensor", k) for k in range(len(index))), n_index=len(index)),
                    "MaskedSelectBackward0")


def broadcast_shape(*shapes) -> tuple:
    """The shape the given shapes broadcast to, as a tuple; raises when they do not broadcast.

    Mirrors torch.broadcast_shapes."""
    from .ops._checks import broadcast_shapes  # noqa: PLC0415

    return broadcast_shapes("broadcast_shapes", *shapes)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with the inverse map and the counts
    (data-dependent shape: eager only)."""
    import numpy as np  # noqa: PLC0415

    from ._factories import tensor  # noqa: PLC0415

    arr = _host(input)
    if dim is None:
        values, inverse, counts = np.unique(arr.reshape(-1), return_inverse=True, return_counts=True)
        inverse = inverse.reshape(arr.shape)
    else:
        values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True,
                                            axis=norm_dim("unique", dim, arr.ndim))
        inverse = inverse.reshape(-1)
    out = [tensor(values, dtype=input.dtype, device=input.device)]
    if return_inverse:
        out.append(_int_tensor(inverse, input))
    if return_counts:
        out.append(_int_tensor(counts, input))
    return out[0] if len(out) == 1 else tuple(out)


def masked_fill(input, mask, value):
    """input with `value` where mask is True; keeps input's dtype (a 0-d tensor value too)."""
    if getattr(mask, "dtype", None) is not _dtypes.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(getattr(mask, 'dtype', None), 'name', type(mask).__name__)}")
    if hasattr(value, "shape"):
        if _ndim(value) != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{_ndim(value)} dimension(s).")
        value = to_dtype(value, input.dtype)
    elif input.dtype is _dtypes.bool_:
        value = bool(value)
    elif not input.dtype.is_floating_point:
        value = int(value)
    else:
        value = float(value)
    name = "MaskedFillBackward0"
    # PyTorch fills a row-major clone, so masked_fill(...).view(...) works on any input
    return _renamed(_row_major(E.WHERE(mask, value, input)), name)


# -- reorderings and repeats -------------------------------------------------------------------
def flip(input, *dims, **kwargs):
    """flip(x, (0, 1)), x.flip(0, 1) or flip(x, dims=...): reverse the order along dims."""
    dims = _sizes(dims) if dims else kwargs.pop("dims")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return I.FLIP(input, dims=tuple(norm_dim("flip", d, _ndim(input)) for d in dims))


def fliplr(input):
    """input with its dimension 1 reversed (left-right). Mirrors torch.fliplr."""
    return flip(input, (1,))


def flipud(input):
    """input with its dimension 0 reversed (up-down). Mirrors torch.flipud."""
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (two slices joined per dim)."""
    if dims is None:
        return _renamed(reshape(roll(reshape(input, -1), shifts, 0), *input.shape), "RollBackward0")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    out = input
    for shift, dim in zip(shifts, dims):
        d = norm_dim("roll", dim, _ndim(input))
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return _renamed(out if out is not input else clone(input), "RollBackward0")


def repeat(input, *sizes):
    """Tile input: each dim repeated sizes[i] times (leading new dims allowed)."""
    sizes = _sizes(sizes)
    nd = _ndim(input)
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = (1,) * (len(sizes) - nd) + tuple(input.shape)
    spread = []
    for n in shape:
        spread += [1, n]
    x = S.RESHAPE(input, shape=tuple(spread))
    target = []
    for r, n in zip(sizes, shape):
        target += [r, n]
    x = S.EXPAND(x, shape=tuple(target))
    out = S.RESHAPE(clone(x), shape=tuple(r * n for r, n in zip(sizes, shape)))
    return _renamed(out, "RepeatBackward0")


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated `repeats` times (an int, or one count per element along dim)."""
    if dim is None:
        input, dim = reshape(input, -1), 0
    d = norm_dim("repeat_interleave", dim, _ndim(input))
    if isinstance(repeats, int):
        shape = tuple(input.shape)
        x = unsqueeze(input, d + 1)
        x = expand(x, *(shape[:d + 1] + (repeats,) + shape[d + 1:]))
        return reshape(clone(x), *(shape[:d] + (shape[d] * repeats,) + shape[d + 1:]))
    import numpy as np  # noqa: PLC0415

    counts = _host(repeats).reshape(-1)
    n = input.shape[d]
    if counts.size == 1:
        counts = np.repeat(counts, n)
    if counts.size != n:
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size({d}) = {n}")
    return index_select(input, d, _int_tensor(np.repeat(np.arange(n), counts), input))


# -- triangles and diagonals ----------------------------------------------------------------------
def _check_matrix(name: str, input) -> None:
    if _ndim(input) < 2:  # NumPy would broadcast a vector to a matrix instead
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions (got shape {tuple(input.shape)})")


def tril(input, diagonal=0):
    """input with the elements above the `diagonal`-th diagonal zeroed. Mirrors torch.tril."""
    _check_matrix("tril", input)
    return I.TRIL(input, diagonal=int(diagonal))


def triu(input, diagonal=0):
    """input with the elements below the `diagonal`-th diagonal zeroed. Mirrors torch.triu."""
    _check_matrix("triu", input)
    return I.TRIU(input, diagonal=int(diagonal))


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal at `offset` of the dim1/dim2 planes, as the last dimension (a view). Mirrors torch.diagonal."""
    nd = _ndim(input)
    d1, d2 = norm_dim("diagonal", dim1, nd), norm_dim("diagonal", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return I.DIAGONAL(input, offset=int(offset), dim1=d1, dim2=d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose dim1/dim2 planes have input's last dimension on the `offset` diagonal. Mirrors torch.diag_embed."""
    n = input.shape[-1] + _builtins.abs(offset)
    nd = _ndim(input) + 1
    d1, d2 = norm_dim("diag_embed", dim1, nd), norm_dim("diag_embed", dim2, nd)
    shape = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return I.DIAGONAL_GRAD(input, shape=tuple(shape), offset=int(offset), dim1=d1, dim2=d2)


def diag(input, diagonal=0):
    """A 1-D input as the diagonal of a square matrix; a 2-D input's diagonal as 1-D."""
    if _ndim(input) == 1:
        n = input.shape[0] + _builtins.abs(diagonal)
        return I.DIAGONAL_GRAD(input, shape=(n, n), offset=int(diagonal), dim1=0, dim2=1)
    if _ndim(input) == 2:
        return I.DIAGONAL(input, offset=int(diagonal), dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {_ndim(input)}D")


def trace(input):
    """The sum of the main diagonal of a 2-d tensor. Mirrors torch.trace."""
    if _ndim(input) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {_ndim(input)}")
    return _renamed(R.SUM(I.DIAGONAL(input, offset=0, dim1=0, dim2=1), dims=None, keepdim=False), "TraceBackward0")


# -- statistics ---------------------------------------------------------------------------------
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance and the mean over `dim`, as a tuple (see var). Mirrors torch.var_mean."""
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation and the mean over `dim`, as a tuple (see std). Mirrors torch.std_mean."""
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


# -- closeness, grids, stacking and moving dims (compositions of the ops above) -----------------------
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise |input - other| <= atol + rtol * |other| (equal infinities are close; NaNs only
    with `equal_nan`). Written in ops, so static traces it. Mirrors torch.isclose."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype.name} did not match {other.dtype.name}; "
                           f"convert one operand with .to(other.dtype) first")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol and atol must be non-negative, but got rtol={rtol} and atol={atol}")
    close = eq(input, other)
    if input.dtype is _dtypes.bool_ or (rtol == 0 and atol == 0):
        return close
    if equal_nan and input.dtype.is_floating_point:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    if not input.dtype.is_floating_point:  # integers compare in the default float type, as PyTorch
        input, other = to_dtype(input, _dtypes.DEFAULT_FLOAT), to_dtype(other, _dtypes.DEFAULT_FLOAT)
    actual = abs(sub(input, other))
    allowed = add(abs(other) * rtol, atol)
    return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)))


def _tensor_list(name: str, tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-D (or 0-d) tensors: output i varies along dimension i ("ij", the
    default) or with the first two dimensions swapped ("xy", Cartesian). Each output is an
    expanded view. Mirrors torch.meshgrid."""
    given = _tensor_list("meshgrid", tensors)
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in given:
        if _ndim(t) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got shape "
                               f"{tuple(t.shape)}")
        if t.dtype is not given[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same dtype")
    flat = [reshape(t, -1) for t in given]
    order = list(range(len(flat)))
    if indexing == "xy" and len(flat) >= 2:
        order[0], order[1] = 1, 0  # output i's axis position
    sizes = [0] * len(flat)
    for i, t in enumerate(flat):
        sizes[order[i]] = t.shape[0]
    out = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[order[i]] = t.shape[0]
        out.append(expand(reshape(t, *view), *sizes))
    return tuple(out)


def atleast_1d(*tensors):
    """Each input with at least one dimension (a 0-d tensor becomes shape (1,)). Mirrors torch.atleast_1d."""
    out = [t if _ndim(t) >= 1 else reshape(t, 1) for t in (tensors[0] if len(tensors) == 1 and
                                                           isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def atleast_2d(*tensors):
    """Each input with at least two dimensions (shape (n,) becomes (1, n)). Mirrors torch.atleast_2d."""
    def one(t):
        return t if _ndim(t) >= 2 else reshape(t, 1, -1) if _ndim(t) == 1 else reshape(t, 1, 1)
    out = [one(t) for t in (tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def atleast_3d(*tensors):
    """Each input with at least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)).

    Mirrors torch.atleast_3d."""
    def one(t):
        nd = _ndim(t)
        if nd >= 3:
            return t
        if nd == 2:
            return unsqueeze(t, 2)
        return reshape(t, 1, -1, 1)
    out = [one(t) for t in (tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def _stack_seq(name: str, tensors) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors):
    """Tensors joined column-wise: along dim 0 for 1-D inputs, else along dim 1. Mirrors torch.hstack."""
    ts = [atleast_1d(t) for t in _stack_seq("hstack", tensors)]
    return cat(ts, 0 if _ndim(ts[0]) == 1 else 1)


def vstack(tensors):
    """Tensors joined row-wise (1-D inputs become rows first). Mirrors torch.vstack."""
    return cat([atleast_2d(t) for t in _stack_seq("vstack", tensors)], 0)


row_stack = vstack


def dstack(tensors):
    """Tensors joined depth-wise, along dim 2 after atleast_3d. Mirrors torch.dstack."""
    return cat([atleast_3d(t) for t in _stack_seq("dstack", tensors)], 2)


def column_stack(tensors):
    """Tensors as columns: 0-d and 1-d inputs become (n, 1) columns, then join along dim 1.

    Mirrors torch.column_stack."""
    ts = _stack_seq("column_stack", tensors)
    return cat([reshape(t, -1, 1) if _ndim(t) <= 1 else t for t in ts], 1)


def movedim(input, source, destination):
    """input with the dims `source` moved to positions `destination`, the others keeping their
    order (a view through permute). Mirrors torch.movedim."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    nd = _ndim(input)
    src = tuple(norm_dim("movedim", d, nd) for d in src)
    dst = tuple(norm_dim("movedim", d, nd) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source) if not isinstance(source, int) else source})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` "
                           f"({list(destination) if not isinstance(destination, int) else destination})")
    order: list = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return permute(input, perm)


moveaxis = movedim


def tile(input, dims):
    """input repeated `dims[i]` times along each dim; fewer dims than input's are padded with
    leading 1s (unlike repeat). Mirrors torch.tile."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    nd = _ndim(input)
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):
    """The n-th forward difference along dim (out[i] = x[i+1] - x[i], n times; xor for bool),
    after joining `prepend` and `append` along dim. Mirrors torch.diff."""
    if _ndim(input) == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim("diff", dim, _ndim(input))
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        if name is not None:
            if not hasattr(extra, "shape"):
                from ._factories import tensor  # noqa: PLC0415

                extra = tensor(extra, dtype=input.dtype, device=input.device)
            if _ndim(extra) == 0:
                shape = list(input.shape)
                shape[d] = 1
                extra = expand(reshape(extra, *([1] * len(shape))), *shape)
            if _ndim(extra) != _ndim(input):
                raise RuntimeError(f"diff expects prepend or append to be the same dimension as input "
                                   f"(input {tuple(input.shape)}, {name} {tuple(extra.shape)})")
        parts.append(extra)
    out = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = out.shape[d]
        if length == 0:
            break
        hi, lo = narrow(out, d, 1, length - 1), narrow(out, d, 0, length - 1)
        out = logical_xor(hi, lo) if out.dtype is _dtypes.bool_ else sub(hi, lo)
    return out


def count_nonzero(input, dim=None):
    """The number of nonzero elements over `dim` (an int, a tuple or all), as int64.

    Mirrors torch.count_nonzero."""
    nonzero_mask = ne(input, 0)
    if dim is None:
        return to_dtype(R.SUM(nonzero_mask, dims=None, keepdim=False), _dtypes.int64)
    return to_dtype(sum(nonzero_mask, dim), _dtypes.int64)


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcast. Mirrors torch.addcmul."""
    product = mul(tensor1, tensor2)
    return _renamed(add(input, product if _is_one(value) else product * value), "AddcmulBackward0")


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (true division; integer operands are refused, as PyTorch).

    Mirrors torch.addcdiv."""
    for t in (tensor1, tensor2):
        if hasattr(t, "dtype") and not t.dtype.is_floating_point:
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                               "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
                               "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
                               "float inputs. The future addcdiv behavior is just the latter implementation: "
                               "(input + value * tensor1 / tensor2), for all dtypes.")
    quotient = div(tensor1, tensor2)
    return _renamed(add(input, quotient if _is_one(value) else quotient * value), "AddcdivBackward0")


# -- index helpers: searching, products, windows -------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side: str | None = None,
                 sorter=None):
    """For each value, the index where it would be inserted into the sorted last dimension of
    sorted_sequence (the first such index; the last with right=True or side="right"); a 1-d
    sequence serves every value, an N-d one pairs its rows with input's. No gradient (indices).
    Mirrors torch.searchsorted."""
    from ._factories import tensor  # noqa: PLC0415

    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = _host(sorted_sequence)
    values = _host(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter), -1)
    how: Any = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=how)
    else:
        if seq.shape[:-1] != values.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
        flat_seq, flat_val = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(r, v, side=how) for r, v in zip(flat_seq, flat_val)]).reshape(values.shape)
    result = tensor(out.astype(np.int32 if out_int32 else np.int64))
    device = getattr(input, "device", None) or getattr(sorted_sequence, "device", None)
    return result if device is None or device.type == "cpu" else result.to(device)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The bucket of each value among the 1-d sorted boundaries: i with boundaries[i-1] < x <=
    boundaries[i] (boundaries[i-1] <= x < boundaries[i] with right=True). Mirrors torch.bucketize."""
    if _ndim(boundaries) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({_ndim(boundaries)})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows of a (N, k) tensor (the
    tensor itself for one). Mirrors torch.cartesian_prod."""
    for k, t in enumerate(tensors):
        if _ndim(t) != 1:
            raise RuntimeError(f"cartesian_prod: expect a 1D vector, but got shape {list(t.shape)} for tensor {k}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-r combinations of a 1-d tensor's elements, as rows (itertools' order), made
    with index_select so gradients reach the elements. Mirrors torch.combinations."""
    import itertools  # noqa: PLC0415

    from ._factories import tensor  # noqa: PLC0415

    if _ndim(input) != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input[:0].reshape(0, r)
    index = tensor(np.asarray(rows, dtype=np.int64).reshape(-1))
    return index_select(input, 0, index).reshape(len(rows), r)


def unfold_windows(input, dimension: int, size: int, step: int):
    """Tensor.unfold: every window of `size` elements, `step` apart, along dimension, as a new
    last dimension (the windows' count takes dimension's place): a view of input's memory, as
    PyTorch's, whose gradients add up where windows overlap. Mirrors torch.Tensor.unfold."""
    ndim = _ndim(input)
    d = norm_dim("unfold", dimension, _builtins.max(ndim, 1))
    length = input.shape[d] if ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if ndim == 0:
        return input.reshape(1)
    return S.WINDOWS(input, dim=d, size=int(size), step=int(step))


def index_put(input, indices, values, accumulate: bool = False):
    """A copy of input with values written at the positions the tuple of index tensors picks
    (advanced indexing of the leading dims); with accumulate, added there, duplicates summed.
    Mirrors torch.index_put."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put: indices must be a tuple of tensors, got {type(indices).__name__}")
    from ._factories import tensor  # noqa: PLC0415

    if not accumulate:
        return put_at_index(input, tuple(indices), values, tensor)

    k = len(indices)
    lead, rest = tuple(input.shape[:k]), tuple(input.shape[k:])
    positions = np.broadcast_arrays(*[_host(i) for i in indices])
    linear = tensor(np.ravel_multi_index(tuple(p.reshape(-1) for p in positions), lead).astype(np.int64))
    n = int(np.prod(lead)) if lead else 1
    if not hasattr(values, "shape"):
        values = tensor(values, dtype=input.dtype)
    source = values.expand(tuple(positions[0].shape) + rest).reshape((-1,) + rest)
    return index_add(input.reshape((n,) + rest), 0, linear, source).reshape(input.shape)


def histc(input, bins: int = 100, min: float = 0, max: float = 0):  # noqa: A002  (PyTorch's names)
    """Counts of the elements in `bins` equal-width bins over [min, max] (the data's range when
    both are 0; elements outside are not counted), as a tensor of input's dtype. No gradient.
    Mirrors torch.histc."""
    from ._factories import tensor  # noqa: PLC0415

    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    data = _host(input).astype(np.float64).reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min={lo} and max={hi}")
    counts, _ = np.histogram(data[(data >= lo) & (data <= hi)], bins=bins, range=(lo, hi))
    return tensor(counts.astype(input.dtype.np))
