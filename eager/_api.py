"""`TensorAPI`: the Tensor API users write (operators, methods, in-place forms), written once
for every tensor-like type.

Eager's `Tensor` and static's `Tracer` both inherit it, so the same user source runs in
both modes and a method added here exists in both. Everything here is expressed in ops
(through `eager._functional` or the op records), never in arrays; what differs between
the two types is behind two hooks, as JAX's tracers implement one array API over
`bind` and tinygrad's `ElementwiseMixin` over `_apply_uop`:

- `_apply_op(op, operands, attrs)`: apply an op record. Eager runs it and records its
  backward node (`eager._dispatch.dispatch`); the tracer appends an IR node
  (`static.tracer.record`). The operators call it directly (one call per operator: this
  is eager's hot path).
- `_apply_inplace(fn, others, name, ...)`: store `fn(self, *others)` into this tensor. Eager
  writes the buffer and rebases the autograd history (`eager._inplace.apply_inplace`);
  the tracer makes the tensor name the new value (functionalization).

Only metadata (`shape`, `dtype`, `ndim`, `device`) and what needs data or memory
(`item`, `numpy`, `view`'s sharing check, `__setitem__`, fills) stay on each type.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any, TypeVar

from . import _dtypes
from . import _functional as F
from .ops import elementwise as E

if TYPE_CHECKING:
    from ._device import device
    from .ops._registry import OpDef

_T = TypeVar("_T", bound="TensorAPI")


def _index_tensor(value: Any) -> Any:
    """An index given as a list, range or array becomes an eager tensor (an integer or mask index)."""
    from ._factories import index_tensor  # noqa: PLC0415  (the factories import Tensor, which imports this)

    return index_tensor(value)


class _InPlace:
    """An in-place method that stores its out-of-place function's result into the tensor
    (`x.add_(y)` is `x = add(x, y)` written back), through the type's `_apply_inplace` hook.

    `saves_self`: the function's backward reads its first operand, so eager must keep a
    copy of the old value when the write is recorded. The attribute's name (set when the
    class is made) is the method's name in messages; an alias (`__iadd__ = add_`) keeps it."""

    def __init__(self, fn: Callable[..., Any], saves_self: bool) -> None:
        self.fn = fn
        self.saves_self = saves_self
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        if not self.name:
            self.name = self.__name__ = name
            self.__qualname__ = f"{owner.__qualname__}.{name}"
            self.__doc__ = f"In-place {name[:-1]}: writes the result into this tensor. Mirrors torch.Tensor.{name}."

    def __get__(self, obj: TensorAPI | None, owner: type | None = None) -> Any:
        return self if obj is None else MethodType(self, obj)

    def __call__(self, tensor: TensorAPI, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        if kwargs:
            return tensor._apply_inplace(lambda s, *o: fn(s, *o, **kwargs), args, self.name, self.saves_self)
        return tensor._apply_inplace(fn, args, self.name, self.saves_self)


def _masked_fill(input: Any, mask: Any, value: Any) -> Any:
    return F.where(mask, value, input)


class TensorAPI:
    """The Tensor API shared by eager tensors and static's tracer values (see the module
    docstring for the two hooks a subclass defines)."""

    __slots__ = ()

    # -- the hooks ------------------------------------------------------------------------------
    @staticmethod
    def _apply_op(op: OpDef, operands: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        """Apply an op record to operands of this type (and Python numbers, other tensors)."""
        raise NotImplementedError

    def _apply_inplace(self: _T, fn: Callable[..., Any], others: tuple[Any, ...], name: str,
                       saves_self: builtins.bool = True, grad_name: str | None = None) -> _T:
        """Store `fn(self, *others)` into this tensor and return it; `grad_name` renames the
        recorded backward node (PyTorch's name of the in-place op's node)."""
        raise NotImplementedError

    # what every type provides (properties or methods of its own)
    if TYPE_CHECKING:
        @property
        def shape(self) -> tuple[builtins.int, ...]: ...
        @property
        def dtype(self) -> _dtypes.dtype: ...
        @property
        def ndim(self) -> builtins.int: ...
        @property
        def device(self) -> device: ...
        def view(self, *shape: Any) -> Any: ...

    def __hash__(self) -> builtins.int:
        return id(self)

    # -- operators --------------------------------------------------------------------------------
    def __add__(self, other: Any) -> Any:
        return self._apply_op(E.ADD, (self, other), {})

    def __radd__(self, other: Any) -> Any:
        return self._apply_op(E.ADD, (other, self), {})

    def __sub__(self, other: Any) -> Any:
        F.check_sub(self, other)
        return self._apply_op(E.SUB, (self, other), {})

    def __rsub__(self, other: Any) -> Any:
        F.check_sub(self, other)
        return self._apply_op(E.RSUB, (self, other), {})

    def __mul__(self, other: Any) -> Any:
        return self._apply_op(E.MUL, (self, other), {})

    def __rmul__(self, other: Any) -> Any:
        return self._apply_op(E.MUL, (other, self), {})

    def __truediv__(self, other: Any) -> Any:
        return self._apply_op(E.DIV, (self, other), {})

    def __rtruediv__(self, other: Any) -> Any:
        return self._apply_op(E.DIV, (other, self), {})

    def __pow__(self, other: Any) -> Any:
        return self._apply_op(E.POW, (self, other), {})

    def __rpow__(self, other: Any) -> Any:
        return self._apply_op(E.POW, (other, self), {})

    def __neg__(self) -> Any:
        F.check_neg(self)
        return self._apply_op(E.NEG, (self,), {})

    def __pos__(self: _T) -> _T:
        return self

    def __abs__(self) -> Any:
        return self._apply_op(E.ABS, (self,), {})

    def __matmul__(self, other: Any) -> Any:
        return F.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return F.matmul(other, self)

    def __eq__(self, other: Any) -> Any:  # elementwise, as in PyTorch
        return self._apply_op(E.EQ, (self, other), {})

    def __ne__(self, other: Any) -> Any:
        return self._apply_op(E.NE, (self, other), {})

    def __lt__(self, other: Any) -> Any:
        return self._apply_op(E.LT, (self, other), {})

    def __le__(self, other: Any) -> Any:
        return self._apply_op(E.LE, (self, other), {})

    def __gt__(self, other: Any) -> Any:
        return self._apply_op(E.GT, (self, other), {})

    def __ge__(self, other: Any) -> Any:
        return self._apply_op(E.GE, (self, other), {})

    def __and__(self, other: Any) -> Any:
        return F.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Any:
        return F.bitwise_and(self, other)

    def __or__(self, other: Any) -> Any:
        return F.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Any:
        return F.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Any:
        return F.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Any:
        return F.bitwise_xor(other, self)

    def __invert__(self) -> Any:
        return F.bitwise_not(self)

    def __floordiv__(self, other: Any) -> Any:
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return F.floor_divide(other, self)

    def __mod__(self, other: Any) -> Any:
        return F.remainder(self, other)

    def __rmod__(self, other: Any) -> Any:
        return F.remainder(other, self)

    def __getitem__(self, index: Any) -> Any:
        return F.getitem(self, index, _index_tensor)

    # -- methods that are the eager.* functions ----------------------------------------------------
    add = F.add
    sub = F.sub
    mul = F.mul
    div = F.div
    true_divide = F.true_divide
    pow = F.pow
    neg = F.neg
    exp = F.exp
    log = F.log
    log1p = F.log1p
    expm1 = F.expm1
    sqrt = F.sqrt
    rsqrt = F.rsqrt
    abs = F.abs
    sign = F.sign
    sin = F.sin
    cos = F.cos
    tanh = F.tanh
    sigmoid = F.sigmoid
    relu = F.relu
    erf = F.erf
    square = F.square
    maximum = F.maximum
    minimum = F.minimum
    clamp = F.clamp
    clip = F.clamp
    eq = F.eq
    ne = F.ne
    lt = F.lt
    le = F.le
    gt = F.gt
    ge = F.ge
    logical_and = F.logical_and
    logical_not = F.logical_not
    logical_or = F.logical_or
    logical_xor = F.logical_xor
    clone = F.clone
    sum = F.sum
    mean = F.mean
    prod = F.prod
    var = F.var
    std = F.std
    logsumexp = F.logsumexp
    amax = F.amax
    amin = F.amin
    floor = F.floor
    ceil = F.ceil
    trunc = F.trunc
    round = F.round
    log2 = F.log2
    log10 = F.log10
    sinh = F.sinh
    cosh = F.cosh
    asin = F.asin
    acos = F.acos
    atan = F.atan
    atan2 = F.atan2
    arcsin = F.asin
    arccos = F.acos
    arctan = F.atan
    arctan2 = F.atan2
    scatter_reduce = F.scatter_reduce
    max = F.max
    min = F.min
    argmax = F.argmax
    argmin = F.argmin
    all = F.all
    any = F.any
    norm = F.norm
    softmax = F.softmax
    log_softmax = F.log_softmax
    matmul = F.matmul
    mm = F.mm
    dot = F.dot
    flatten = F.flatten
    transpose = F.transpose
    swapaxes = F.transpose
    t = F.t
    permute = F.permute
    expand = F.expand
    broadcast_to = F.broadcast_to
    squeeze = F.squeeze
    unsqueeze = F.unsqueeze
    split = F.split
    chunk = F.chunk
    unbind = F.unbind
    select = F.select
    narrow = F.narrow
    floor_divide = F.floor_divide
    remainder = F.remainder
    fmod = F.fmod
    bitwise_and = F.bitwise_and
    bitwise_or = F.bitwise_or
    bitwise_xor = F.bitwise_xor
    bitwise_not = F.bitwise_not
    isnan = F.isnan
    isinf = F.isinf
    isfinite = F.isfinite
    nan_to_num = F.nan_to_num
    clamp_min = F.clamp_min
    clamp_max = F.clamp_max
    lerp = F.lerp
    outer = F.outer
    ger = F.outer
    bmm = F.bmm
    addmm = F.addmm
    baddbmm = F.baddbmm
    addmv = F.addmv
    cumsum = F.cumsum
    cumprod = F.cumprod
    argsort = F.argsort
    sort = F.sort
    topk = F.topk
    kthvalue = F.kthvalue
    median = F.median
    gather = F.gather
    scatter = F.scatter
    scatter_add = F.scatter_add
    index_select = F.index_select
    index_add = F.index_add
    nonzero = F.nonzero
    argwhere = F.nonzero
    masked_select = F.masked_select
    masked_fill = F.masked_fill
    unique = F.unique
    flip = F.flip
    fliplr = F.fliplr
    flipud = F.flipud
    roll = F.roll
    repeat = F.repeat
    repeat_interleave = F.repeat_interleave
    tril = F.tril
    triu = F.triu
    diagonal = F.diagonal
    diag = F.diag
    diag_embed = F.diag_embed
    trace = F.trace
    isclose = F.isclose
    movedim = F.movedim
    moveaxis = F.movedim
    tile = F.tile
    diff = F.diff
    count_nonzero = F.count_nonzero
    addcmul = F.addcmul
    addcdiv = F.addcdiv

    # -- methods whose argument order differs from the function's ----------------------------------
    @property
    def T(self) -> Any:
        """The dimensions in reverse order (the transpose of a matrix). Mirrors torch.Tensor.T."""
        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Any:
        """The last two dimensions swapped (a batch of matrices transposed); needs at least 2 dimensions.

        Mirrors torch.Tensor.mT."""
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
        return F.transpose(self, -2, -1)

    def allclose(self, other: Any, rtol: builtins.float = 1e-05, atol: builtins.float = 1e-08,
                 equal_nan: builtins.bool = False) -> builtins.bool:
        """Whether every element is close to `other` (see isclose). Mirrors torch.Tensor.allclose."""
        return builtins.bool(F.all(F.isclose(self, other, rtol, atol, equal_nan)))

    def where(self, condition: Any, other: Any) -> Any:
        """Elements of self where `condition` holds, else of `other`. Mirrors torch.Tensor.where."""
        return F.where(condition, self, other)

    def reshape(self, *shape: Any) -> Any:
        """The same elements in the given shape (a view when possible, else a copy). Mirrors torch.Tensor.reshape."""
        return F.reshape(self, *shape)

    def view_as(self, other: Any) -> Any:
        """`self.view(*other.shape)`. Mirrors torch.Tensor.view_as."""
        return self.view(*other.shape)

    def reshape_as(self, other: Any) -> Any:
        """`self.reshape(*other.shape)`. Mirrors torch.Tensor.reshape_as."""
        return F.reshape(self, *other.shape)

    def expand_as(self, other: Any) -> Any:
        """`self.expand(*other.shape)`. Mirrors torch.Tensor.expand_as."""
        return F.expand(self, *other.shape)

    def inverse(self) -> Any:
        """The matrix inverse of the last two dims. Mirrors torch.Tensor.inverse."""
        from .ops.linalg import INV  # noqa: PLC0415

        return INV(self)

    def det(self) -> Any:
        """The determinant of the last two dims. Mirrors torch.Tensor.det."""
        from .ops.linalg import DET  # noqa: PLC0415

        return DET(self)

    def unfold(self, dimension: builtins.int, size: builtins.int, step: builtins.int) -> Any:
        """Every window of `size` elements `step` apart along dimension, as a new last dimension.
        Mirrors torch.Tensor.unfold (a copy here, not a view)."""
        return F.unfold_windows(self, dimension, size, step)

    def softplus(self, beta: builtins.float = 1.0, threshold: builtins.float = 20.0) -> Any:
        """log(1 + exp(beta * x)) / beta, linear above `threshold`. Mirrors torch.nn.functional.softplus."""
        return F.softplus(self, beta, threshold)

    def logit(self, eps: builtins.float | None = None) -> Any:
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given. Mirrors torch.Tensor.logit."""
        from .special import logit  # noqa: PLC0415  (composed of ops: eager and traced values alike)

        return logit(self, eps)

    def var_mean(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
                 correction: builtins.float | None = None) -> Any:
        """The variance and the mean over `dim`, as a tuple. Mirrors torch.var_mean."""
        return F.var_mean(self, dim, unbiased, keepdim, correction=correction)

    def std_mean(self, dim: Any = None, unbiased: builtins.bool | None = None, keepdim: builtins.bool = False, *,
                 correction: builtins.float | None = None) -> Any:
        """The standard deviation and the mean over `dim`, as a tuple. Mirrors torch.std_mean."""
        return F.std_mean(self, dim, unbiased, keepdim, correction=correction)

    # -- dtype conversions ---------------------------------------------------------------------------
    def float(self) -> Any:
        """This tensor as float32 (itself if it already is). Mirrors torch.Tensor.float."""
        return F.to_dtype(self, _dtypes.float32)

    def double(self) -> Any:
        """This tensor as float64 (itself if it already is). Mirrors torch.Tensor.double."""
        return F.to_dtype(self, _dtypes.float64)

    def half(self) -> Any:
        """This tensor as float16 (itself if it already is). Mirrors torch.Tensor.half."""
        return F.to_dtype(self, _dtypes.float16)

    def long(self) -> Any:
        """This tensor as int64 (itself if it already is). Mirrors torch.Tensor.long."""
        return F.to_dtype(self, _dtypes.int64)

    def int(self) -> Any:
        """This tensor as int32 (itself if it already is). Mirrors torch.Tensor.int."""
        return F.to_dtype(self, _dtypes.int32)

    def bool(self) -> Any:
        """This tensor as bool (itself if it already is). Mirrors torch.Tensor.bool."""
        return F.to_dtype(self, _dtypes.bool_)

    def type_as(self, other: Any) -> Any:
        """This tensor converted to `other`'s dtype. Mirrors torch.Tensor.type_as."""
        return F.to_dtype(self, other.dtype)

    # -- new tensors like this one -------------------------------------------------------------------
    def new_tensor(self, data: Any, dtype: Any = None, requires_grad: builtins.bool = False) -> Any:
        """A new tensor from `data`, with this tensor's dtype and device unless given.

        Mirrors torch.Tensor.new_tensor."""
        from ._factories import tensor  # noqa: PLC0415

        return tensor(data, dtype=dtype or self.dtype, device=self.device, requires_grad=requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None) -> Any:
        """Zeros of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_zeros."""
        from ._factories import zeros  # noqa: PLC0415

        return zeros(*size, dtype=dtype or self.dtype, device=self.device)

    def new_ones(self, *size: Any, dtype: Any = None) -> Any:
        """Ones of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_ones."""
        from ._factories import ones  # noqa: PLC0415

        return ones(*size, dtype=dtype or self.dtype, device=self.device)

    def new_full(self, size: Any, fill_value: Any, dtype: Any = None) -> Any:
        """`fill_value` of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_full."""
        from ._factories import full  # noqa: PLC0415

        return full(size, fill_value, dtype=dtype or self.dtype, device=self.device)

    # -- in-place forms: the one table (each is its function written back through `_apply_inplace`) ---------
    add_ = _InPlace(F.add, saves_self=False)
    sub_ = _InPlace(F.sub, saves_self=False)
    mul_ = _InPlace(F.mul, saves_self=True)
    div_ = _InPlace(F.div, saves_self=True)
    pow_ = _InPlace(F.pow, saves_self=True)
    neg_ = _InPlace(F.neg, saves_self=False)
    exp_ = _InPlace(F.exp, saves_self=False)
    log_ = _InPlace(F.log, saves_self=True)
    sqrt_ = _InPlace(F.sqrt, saves_self=False)
    tanh_ = _InPlace(F.tanh, saves_self=False)
    sigmoid_ = _InPlace(F.sigmoid, saves_self=False)
    relu_ = _InPlace(F.relu, saves_self=False)
    abs_ = _InPlace(F.abs, saves_self=True)
    clamp_ = _InPlace(F.clamp, saves_self=True)
    clip_ = _InPlace(F.clamp, saves_self=True)
    sin_ = _InPlace(F.sin, saves_self=True)
    cos_ = _InPlace(F.cos, saves_self=True)
    masked_fill_ = _InPlace(_masked_fill, saves_self=False)
    floor_ = _InPlace(F.floor, saves_self=False)
    ceil_ = _InPlace(F.ceil, saves_self=False)
    trunc_ = _InPlace(F.trunc, saves_self=False)
    round_ = _InPlace(F.round, saves_self=False)
    log2_ = _InPlace(F.log2, saves_self=True)
    log10_ = _InPlace(F.log10, saves_self=True)
    sinh_ = _InPlace(F.sinh, saves_self=True)
    cosh_ = _InPlace(F.cosh, saves_self=True)
    asin_ = _InPlace(F.asin, saves_self=True)
    acos_ = _InPlace(F.acos, saves_self=True)
    atan_ = _InPlace(F.atan, saves_self=True)
    atan2_ = _InPlace(F.atan2, saves_self=True)
    scatter_reduce_ = _InPlace(F.scatter_reduce, saves_self=True)
    addcmul_ = _InPlace(F.addcmul, saves_self=False)
    addcdiv_ = _InPlace(F.addcdiv, saves_self=False)
    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_
    __ipow__ = pow_

    def scatter_(self: _T, dim: builtins.int, index: Any, src: Any = None, value: Any = None, *,
                 reduce: str | None = None) -> _T:
        """In-place scatter: write `src` (or `value`) at `index` along `dim`. Mirrors torch.Tensor.scatter_."""
        source = src if src is not None else value
        if isinstance(source, TensorAPI):
            return self._apply_inplace(lambda s, o: F.scatter(s, dim, index, o, reduce=reduce), (source,), "scatter_",
                                 saves_self=False)
        return self._apply_inplace(lambda s: F.scatter(s, dim, index, value=source, reduce=reduce), (), "scatter_",
                             saves_self=False)

    def scatter_add_(self: _T, dim: builtins.int, index: Any, src: Any) -> _T:
        """In-place scatter_add: add `src` at `index` along `dim`. Mirrors torch.Tensor.scatter_add_."""
        return self._apply_inplace(lambda s, o: F.scatter_add(s, dim, index, o), (src,), "scatter_add_", saves_self=False)

    def index_add_(self: _T, dim: builtins.int, index: Any, source: Any, *, alpha: Any = 1) -> _T:
        """In-place index_add: add `alpha * source` at `index` along `dim`. Mirrors torch.Tensor.index_add_."""
        return self._apply_inplace(lambda s, o: F.index_add(s, dim, index, o, alpha=alpha), (source,), "index_add_",
                             saves_self=False)

    def index_put_(self: _T, indices: Any, values: Any, accumulate: builtins.bool = False) -> _T:
        """In-place index_put: write (or with accumulate, add) values at the positions the
        tuple of index tensors picks. Mirrors torch.Tensor.index_put_."""
        return self._apply_inplace(lambda s, v: F.index_put(s, indices, v, accumulate), (values,), "index_put_",
                                   saves_self=False)

    def index_put(self, indices: Any, values: Any, accumulate: builtins.bool = False) -> Any:
        """A copy with values written (added, with accumulate) at the indexed positions.
        Mirrors torch.Tensor.index_put."""
        return F.index_put(self, indices, values, accumulate)

    def histc(self, bins: builtins.int = 100, min: Any = 0, max: Any = 0) -> Any:  # noqa: A002
        """Counts in equal-width bins over [min, max]. Mirrors torch.Tensor.histc."""
        return F.histc(self, bins, min, max)

    def clamp_min_(self: _T, min: Any) -> _T:
        """In-place clamp_min: raise every element below `min` to `min`. Mirrors torch.Tensor.clamp_min_."""
        return self._apply_inplace(lambda s: F.clamp_min(s, min), (), "clamp_min_", saves_self=False)

    def clamp_max_(self: _T, max: Any) -> _T:
        """In-place clamp_max: lower every element above `max` to `max`. Mirrors torch.Tensor.clamp_max_."""
        return self._apply_inplace(lambda s: F.clamp_max(s, max), (), "clamp_max_", saves_self=False)

    def tril_(self: _T, diagonal: builtins.int = 0) -> _T:
        """In-place tril: zero the elements above the `diagonal`-th diagonal. Mirrors torch.Tensor.tril_."""
        return self._apply_inplace(lambda s: F.tril(s, diagonal), (), "tril_", saves_self=False)

    def triu_(self: _T, diagonal: builtins.int = 0) -> _T:
        """In-place triu: zero the elements below the `diagonal`-th diagonal. Mirrors torch.Tensor.triu_."""
        return self._apply_inplace(lambda s: F.triu(s, diagonal), (), "triu_", saves_self=False)

    def lerp_(self: _T, end: Any, weight: Any) -> _T:
        """In-place lerp: self + weight * (end - self). Mirrors torch.Tensor.lerp_."""
        return self._apply_inplace(lambda s, e: F.lerp(s, e, weight), (end,), "lerp_", saves_self=False)

    def nan_to_num_(self: _T, nan: builtins.float = 0.0, posinf: builtins.float | None = None,
                    neginf: builtins.float | None = None) -> _T:
        """In-place nan_to_num: replace NaN, +inf and -inf with finite values. Mirrors torch.Tensor.nan_to_num_."""
        return self._apply_inplace(lambda s: F.nan_to_num(s, nan, posinf, neginf), (), "nan_to_num_", saves_self=False)


def inplace_methods() -> dict[str, _InPlace]:
    """The in-place forms that are a function written back (name -> entry), for tests and
    tools that go over all of them."""
    return {name: v for name, v in vars(TensorAPI).items() if isinstance(v, _InPlace) and v.name == name}


# the methods and in-place forms of ops whose record declares them (eager._surface)
from ._surface import install_methods as _install_methods  # noqa: E402

_install_methods(TensorAPI, _InPlace)
