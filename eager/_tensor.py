"""`Tensor`: an array (NumPy or CuPy) plus the autograd state PyTorch users expect."""
from __future__ import annotations

import warnings

import numpy as np

from . import _dispatch, _dtypes
from . import _functional as F
from ._device import CPU, device, device_of_array, xp_for, xp_of_array
from ._grad_mode import STATE
from ._repr import tensor_repr
from .autograd.graph import AccumulateGrad, RemovableHandle
from .ops import elementwise as E

_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead."
)


class Size(tuple):
    """A shape; a tuple that prints as PyTorch's torch.Size does."""

    def __repr__(self) -> str:
        return f"eager.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class Tensor:
    """A multi-dimensional array with autograd.

    `Tensor(3, 5)` / `Tensor([1., 2.])` are the legacy constructors (float32); prefer
    `eager.tensor(data)` and the factories."""

    # _vc: the version counter, a one-element list shared with views of the same memory.
    # _base/_view: for a view, the tensor owning the memory and the view ops that lead from
    # it here (so an in-place write to the view can be replayed onto the base's graph).
    # Attributes most tensors never set are class-level defaults rather than slots, so that
    # making a tensor (once per op) assigns only what every tensor needs.
    __slots__ = ("_data", "_requires_grad", "grad_fn", "_vc", "_output_nr", "__weakref__", "__dict__")
    _grad = None
    _base = None
    _view = None
    _views = None  # on a base: weak references to its views made in grad mode (see eager._dispatch)
    _retains_grad = False
    _acc = None
    __array_priority__ = 1000  # ndarray <op> Tensor defers to Tensor's reflected operator

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, device=None) -> None:
        _legacy_init(self, args, device, _dtypes.float32)

    def _init(self, data, requires_grad=False) -> None:
        if type(data) is not np.ndarray and isinstance(data, np.generic):
            data = np.asarray(data)  # a tensor holds an array, never a NumPy scalar (see _make)
        self._data = data
        self._requires_grad = requires_grad
        self.grad_fn = None
        self._grad = None
        self._vc = [0]
        self._base = None
        self._view = None
        self._output_nr = 0
        self._retains_grad = False
        self._acc = None

    @classmethod
    def _make(cls, data, requires_grad: bool = False) -> "Tensor":
        """The one place every tensor's array is wrapped. NumPy hands back scalars
        (np.float32 ...) rather than 0-d arrays from many calls (a 0-d draw, a full
        reduction, `astype` of a scalar); a tensor always holds an array, so that its device,
        `.numpy()` and in-place writes work alike for every shape."""
        if type(data) is not np.ndarray and isinstance(data, np.generic):
            data = np.asarray(data)
        t = object.__new__(Tensor)
        t._data = data
        t._requires_grad = requires_grad
        t.grad_fn = None
        t._vc = [0]
        t._output_nr = 0
        return t

    # -- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The size of each dimension, as an eager.Size (a tuple). Mirrors torch.Tensor.shape."""
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape as an eager.Size, or the length of dimension `dim` (negative counts from the end).

        Mirrors torch.Tensor.size."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[F.norm_dim("size", dim, self._data.ndim)]

    @property
    def dtype(self) -> _dtypes.dtype:
        """The element type (an eager.dtype such as eager.float32). Mirrors torch.Tensor.dtype."""
        return _dtypes._BY_NP[self._data.dtype]

    @property
    def device(self) -> device:
        """Where the data lives: device('cpu') for NumPy, device('cuda', n) for CuPy. Mirrors torch.Tensor.device."""
        return device_of_array(self._data)

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a CUDA device (a CuPy array). Mirrors torch.Tensor.is_cuda."""
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        """The number of dimensions. Mirrors torch.Tensor.ndim."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions. Mirrors torch.Tensor.dim."""
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements (`nelement` is the same method). Mirrors torch.Tensor.numel."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes. Mirrors torch.Tensor.element_size."""
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one. Mirrors torch.Tensor.is_floating_point."""
        return self._data.dtype.kind == "f"

    def is_contiguous(self) -> bool:
        """Whether the data is laid out in row-major (C) order. Mirrors torch.Tensor.is_contiguous."""
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None):
        """The step in elements between neighbours along each dimension, or along `dim` only.

        Mirrors torch.Tensor.stride."""
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def type(self, dtype=None):
        """With no argument, the legacy type name ('torch.FloatTensor', ...); with a dtype, `self.to(dtype)`.

        Mirrors torch.Tensor.type (the names keep the 'torch.' prefix PyTorch programs compare against)."""
        if dtype is None:
            names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                     "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                     "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
            prefix = "torch.cuda." if self.is_cuda else "torch."
            return prefix + names[self.dtype.name]
        return self.to(dtype)

    @property
    def T(self) -> "Tensor":
        """The dimensions in reverse order (the transpose of a matrix). Mirrors torch.Tensor.T."""
        # self.ndim, not self._data: static's tracer values borrow Tensor methods like this one
        return F.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> "Tensor":
        """The last two dimensions swapped (a batch of matrices transposed); needs at least 2 dimensions.

        Mirrors torch.Tensor.mT."""
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
        return F.transpose(self, -2, -1)

    # -- autograd state -----------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor; settable on leaves of floating dtype only.

        Mirrors torch.Tensor.requires_grad."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        # PyTorch's Python setter: leaves only (whatever the value), lower-case message.
        if self.grad_fn is not None:
            raise RuntimeError(_leaf_only_message(bool(value)))
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """As torch's: turning it on for a non-leaf is a no-op; turning it off is an error."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(_leaf_only_message(False))
            return self
        _set_requires_grad(self, requires_grad)
        return self

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has seen (shared with its views)."""
        return self._vc[0]

    @_version.setter
    def _version(self, value) -> None:
        # Compatibility: a list shares that counter; an int sets this tensor's count.
        if isinstance(value, list):
            self._vc = value
        else:
            self._vc[0] = int(value)

    @property
    def is_leaf(self) -> bool:
        """True when no recorded operation made this tensor (grad_fn is None). Mirrors torch.Tensor.is_leaf."""
        return self.grad_fn is None

    @property
    def grad(self):
        """The gradient accumulated by backward() (a leaf's, or a non-leaf's after retain_grad()), or None.

        Reading it on a non-leaf that does not retain its gradient warns, as PyTorch does. Mirrors torch.Tensor.grad."""
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            handler = getattr(type(value), "__graphmode_grad_assign__", None)
            if handler is not None:  # a traced value (static): the tracer records the new .grad
                handler(self, value)
                return
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"assigned grad has data of a different size: {tuple(value.shape)} "
                                   f"vs the tensor's {tuple(self.shape)}")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        """Whether retain_grad() was called on this non-leaf. Mirrors torch.Tensor.retains_grad."""
        return self._retains_grad

    def _accumulator(self) -> AccumulateGrad:
        if self._acc is None:
            self._acc = AccumulateGrad(self)
        return self._acc

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in `.grad` (after its other hooks ran, as PyTorch does)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        target = self

        def keep(grad):
            if target._grad is None:
                target._grad = grad.clone() if STATE.enabled else grad.detach().clone()
            else:
                target._grad = target._grad + grad
            return None

        self.grad_fn._add_tensor_hook(self._output_nr, keep, retain=True)

    def register_hook(self, hook) -> RemovableHandle:
        """`hook(grad)` runs when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node = self.grad_fn if self.grad_fn is not None else self._accumulator()
        return node._add_tensor_hook(self._output_nr if self.grad_fn is not None else 0, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute the gradient of this tensor with respect to the graph leaves, accumulating into their `.grad`.

        `gradient` is required unless this tensor has one element; `retain_graph` keeps the graph for another
        backward pass, `create_graph` records the backward pass itself (for higher-order gradients) and
        `inputs` limits accumulation to those tensors. Mirrors torch.Tensor.backward."""
        from .autograd import backward  # noqa: PLC0415

        backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)

    def detach(self) -> "Tensor":
        """A new tensor sharing this one's data but cut from the autograd graph. Mirrors torch.Tensor.detach."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        t._base = self if self._base is None else self._base
        return t

    def detach_(self) -> "Tensor":
        """Cut this tensor from the autograd graph in place (not allowed on views). Mirrors torch.Tensor.detach_."""
        if self._view is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """A detached tensor sharing this one's data; assigning replaces the data without autograd noticing.

        Mirrors torch.Tensor.data."""
        return self.detach()

    @data.setter
    def data(self, value: "Tensor") -> None:
        handler = getattr(type(value), "__graphmode_inplace__", None)
        if handler is not None:  # a traced value (static): recorded as a write of this tensor
            handler(self, value)
            return
        self._data = value._data

    # -- conversion ---------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shared, not copied) when the tensor is on the CPU and needs no gradient.

        `force=True` also detaches and copies a CUDA tensor to the host. Mirrors torch.Tensor.numpy."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if not isinstance(self._data, np.ndarray):
            if not force:
                raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
                                "the tensor to host memory first.")
            return self._data.get()
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        arr = self._data if isinstance(self._data, np.ndarray) else self._data.get()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def item(self):
        """The value of a one-element tensor as a Python number. Mirrors torch.Tensor.item."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(-1)[0].item()

    def tolist(self):
        """The data as (nested) Python lists of Python numbers. Mirrors torch.Tensor.tolist."""
        return self._data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(F.unbind(self, 0))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (np.asarray(self._data if isinstance(self._data, np.ndarray) else self._data.get()),
                           self._requires_grad))

    def to(self, *args, **kwargs) -> "Tensor":
        """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`; a new tensor only if needed."""
        dev, dt = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        for a in args:
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif isinstance(a, (_dtypes.dtype, type)) or (isinstance(a, str) and a.split(":")[0] not in ("cpu", "cuda")):
                dt = a
            else:
                dev = a
        out = self
        if dev is not None:
            out = _to_device(out, _as_device(dev))
        if dt is not None:
            out = F.to_dtype(out, dt)
        return out

    def cpu(self) -> "Tensor":
        """This tensor on the CPU (itself if already there; the copy is differentiable). Mirrors torch.Tensor.cpu."""
        return _to_device(self, CPU)

    def cuda(self, device=None) -> "Tensor":
        """This tensor on a CUDA device (the current one unless given). Mirrors torch.Tensor.cuda."""
        return _to_device(self, _as_device("cuda" if device is None else device))

    def float(self):
        """This tensor as float32 (itself if it already is). Mirrors torch.Tensor.float."""
        return F.to_dtype(self, _dtypes.float32)

    def double(self):
        """This tensor as float64 (itself if it already is). Mirrors torch.Tensor.double."""
        return F.to_dtype(self, _dtypes.float64)

    def half(self):
        """This tensor as float16 (itself if it already is). Mirrors torch.Tensor.half."""
        return F.to_dtype(self, _dtypes.float16)

    def long(self):
        """This tensor as int64 (itself if it already is). Mirrors torch.Tensor.long."""
        return F.to_dtype(self, _dtypes.int64)

    def int(self):
        """This tensor as int32 (itself if it already is). Mirrors torch.Tensor.int."""
        return F.to_dtype(self, _dtypes.int32)

    def bool(self):
        """This tensor as bool (itself if it already is). Mirrors torch.Tensor.bool."""
        return F.to_dtype(self, _dtypes.bool_)

    def type_as(self, other):
        """This tensor converted to `other`'s dtype. Mirrors torch.Tensor.type_as."""
        return F.to_dtype(self, other.dtype)

    def contiguous(self):
        """This tensor if row-major contiguous, else a contiguous copy. Mirrors torch.Tensor.contiguous."""
        return self if self._data.flags.c_contiguous else F.clone(self)

    # -- operators ------------------------------------------------------------------------------
    def __add__(self, other):
        return _dispatch.dispatch(E.ADD, (self, other), {})

    def __radd__(self, other):
        return _dispatch.dispatch(E.ADD, (other, self), {})

    def __sub__(self, other):
        F.check_sub(self, other)
        return _dispatch.dispatch(E.SUB, (self, other), {})

    def __rsub__(self, other):
        F.check_sub(self, other)
        return _dispatch.dispatch(E.RSUB, (self, other), {})

    def __mul__(self, other):
        return _dispatch.dispatch(E.MUL, (self, other), {})

    def __rmul__(self, other):
        return _dispatch.dispatch(E.MUL, (other, self), {})

    def __truediv__(self, other):
        return _dispatch.dispatch(E.DIV, (self, other), {})

    def __rtruediv__(self, other):
        return _dispatch.dispatch(E.DIV, (other, self), {})

    def __pow__(self, other):
        return _dispatch.dispatch(E.POW, (self, other), {})

    def __rpow__(self, other):
        return _dispatch.dispatch(E.POW, (other, self), {})

    def __neg__(self):
        F.check_neg(self)
        return _dispatch.dispatch(E.NEG, (self,), {})

    def __pos__(self):
        return self

    def __abs__(self):
        return _dispatch.dispatch(E.ABS, (self,), {})

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __eq__(self, other):
        return _dispatch.dispatch(E.EQ, (self, other), {})

    def __ne__(self, other):
        return _dispatch.dispatch(E.NE, (self, other), {})

    def __lt__(self, other):
        return _dispatch.dispatch(E.LT, (self, other), {})

    def __le__(self, other):
        return _dispatch.dispatch(E.LE, (self, other), {})

    def __gt__(self, other):
        return _dispatch.dispatch(E.GT, (self, other), {})

    def __ge__(self, other):
        return _dispatch.dispatch(E.GE, (self, other), {})

    def __and__(self, other):
        return F.bitwise_and(self, other)

    def __rand__(self, other):
        return F.bitwise_and(self, other)

    def __invert__(self):
        return F.bitwise_not(self)

    def __getitem__(self, index):
        return F.getitem(self, index, _index_tensor)

    def __setitem__(self, index, value) -> None:
        if hasattr(type(value), "__graphmode_inplace__"):  # a traced value (static): the tracer records it
            from ._inplace import _hand_over  # noqa: PLC0415

            _hand_over(self, F.index_put(self, index, value, _index_tensor))
            return
        if not isinstance(value, Tensor):
            value = float(value) if self.is_floating_point() else value
        elif value.dtype is not self.dtype:
            value = F.to_dtype(value, self.dtype)
        from ._inplace import assign  # noqa: PLC0415

        assign(self, (value,), lambda: F.index_put(self, index, value, _index_tensor),
               lambda: _setitem_raw(self, index, value), "index_put_")

    # in-place arithmetic: see eager._inplace (installed below)

    # methods shared with the eager.* functions
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
    clone = F.clone
    sum = F.sum
    mean = F.mean
    prod = F.prod
    var = F.var
    std = F.std
    logsumexp = F.logsumexp
    amax = F.amax
    amin = F.amin
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

    def where(self, condition, other):
        """Elements of self where `condition` holds, else of `other`. Mirrors torch.Tensor.where."""
        return F.where(condition, self, other)

    def reshape(self, *shape):
        """The same elements in the given shape (a view when possible, else a copy). Mirrors torch.Tensor.reshape."""
        return F.reshape(self, *shape)

    def view(self, *shape):
        """The same data in the given shape, sharing memory; raises if that needs a copy (use reshape).

        `view(dtype)` is not supported (use `.to(dtype)`). Mirrors torch.Tensor.view."""
        if len(shape) == 1 and isinstance(shape[0], (_dtypes.dtype, str)):
            raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
        out = F.reshape(self, *shape)
        if out is not self and not (out._data.size == 0 or xp_of_array(self._data).may_share_memory(out._data, self._data)):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")
        return out

    def view_as(self, other):
        """`self.view(*other.shape)`. Mirrors torch.Tensor.view_as."""
        return self.view(*other.shape)

    def reshape_as(self, other):
        """`self.reshape(*other.shape)`. Mirrors torch.Tensor.reshape_as."""
        return F.reshape(self, *other.shape)

    def expand_as(self, other):
        """`self.expand(*other.shape)`. Mirrors torch.Tensor.expand_as."""
        return F.expand(self, *other.shape)

    def softplus(self, beta=1.0, threshold=20.0):
        """log(1 + exp(beta * x)) / beta, linear above `threshold`. Mirrors torch.nn.functional.softplus."""
        return F.softplus(self, beta, threshold)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        """A new tensor from `data`, with this tensor's dtype and device unless given.

        Mirrors torch.Tensor.new_tensor."""
        from ._factories import tensor  # noqa: PLC0415

        return tensor(data, dtype=dtype or self.dtype, device=self.device, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None):
        """Zeros of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_zeros."""
        from ._factories import zeros  # noqa: PLC0415

        return zeros(*size, dtype=dtype or self.dtype, device=self.device)

    def new_ones(self, *size, dtype=None):
        """Ones of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_ones."""
        from ._factories import ones  # noqa: PLC0415

        return ones(*size, dtype=dtype or self.dtype, device=self.device)

    def new_full(self, size, fill_value, dtype=None):
        """`fill_value` of the given size, with this tensor's dtype and device. Mirrors torch.Tensor.new_full."""
        from ._factories import full  # noqa: PLC0415

        return full(size, fill_value, dtype=dtype or self.dtype, device=self.device)

    # == methods added with the PyTorch-programs surface (kept together) ========================
    def __floordiv__(self, other):
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return F.floor_divide(other, self)

    def __mod__(self, other):
        return F.remainder(self, other)

    def __rmod__(self, other):
        return F.remainder(other, self)

    def __or__(self, other):
        return F.bitwise_or(self, other)

    def __ror__(self, other):
        return F.bitwise_or(other, self)

    def __xor__(self, other):
        return F.bitwise_xor(self, other)

    def __rxor__(self, other):
        return F.bitwise_xor(other, self)

    floor_divide = F.floor_divide
    remainder = F.remainder
    fmod = F.fmod
    bitwise_and = F.bitwise_and
    bitwise_or = F.bitwise_or
    bitwise_xor = F.bitwise_xor
    bitwise_not = F.bitwise_not
    logical_or = F.logical_or
    logical_xor = F.logical_xor
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

    def _write_back(self, name, fn, others):
        """An in-place form: the functional result written into this tensor."""
        from ._inplace import apply_inplace  # noqa: PLC0415

        return apply_inplace(self, fn, others, name, saves_self=False)

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """In-place scatter: write `src` (or `value`) at `index` along `dim`. Mirrors torch.Tensor.scatter_."""
        source = src if src is not None else value
        if isinstance(source, Tensor):
            return self._write_back("scatter_", lambda s, o: F.scatter(s, dim, index, o, reduce=reduce), (source,))
        return self._write_back("scatter_", lambda s: F.scatter(s, dim, index, value=source, reduce=reduce), ())

    def scatter_add_(self, dim, index, src):
        """In-place scatter_add: add `src` at `index` along `dim`. Mirrors torch.Tensor.scatter_add_."""
        return self._write_back("scatter_add_", lambda s, o: F.scatter_add(s, dim, index, o), (src,))

    def index_add_(self, dim, index, source, *, alpha=1):
        """In-place index_add: add `alpha * source` at `index` along `dim`. Mirrors torch.Tensor.index_add_."""
        return self._write_back("index_add_", lambda s, o: F.index_add(s, dim, index, o, alpha=alpha), (source,))

    def clamp_min_(self, min):
        """In-place clamp_min: raise every element below `min` to `min`. Mirrors torch.Tensor.clamp_min_."""
        return self._write_back("clamp_min_", lambda s: F.clamp_min(s, min), ())

    def clamp_max_(self, max):
        """In-place clamp_max: lower every element above `max` to `max`. Mirrors torch.Tensor.clamp_max_."""
        return self._write_back("clamp_max_", lambda s: F.clamp_max(s, max), ())

    def tril_(self, diagonal=0):
        """In-place tril: zero the elements above the `diagonal`-th diagonal. Mirrors torch.Tensor.tril_."""
        return self._write_back("tril_", lambda s: F.tril(s, diagonal), ())

    def triu_(self, diagonal=0):
        """In-place triu: zero the elements below the `diagonal`-th diagonal. Mirrors torch.Tensor.triu_."""
        return self._write_back("triu_", lambda s: F.triu(s, diagonal), ())

    def lerp_(self, end, weight):
        """In-place lerp: self + weight * (end - self). Mirrors torch.Tensor.lerp_."""
        return self._write_back("lerp_", lambda s, e: F.lerp(s, e, weight), (end,))

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        """In-place nan_to_num: replace NaN, +inf and -inf with finite values. Mirrors torch.Tensor.nan_to_num_."""
        return self._write_back("nan_to_num_", lambda s: F.nan_to_num(s, nan, posinf, neginf), ())

    def var_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The variance and the mean over `dim`, as a tuple. Mirrors torch.var_mean."""
        return F.var_mean(self, dim, unbiased, keepdim, correction=correction)

    def std_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The standard deviation and the mean over `dim`, as a tuple. Mirrors torch.std_mean."""
        return F.std_mean(self, dim, unbiased, keepdim, correction=correction)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        """Draw `num_samples` category indices per row, with probabilities proportional to this tensor's values.

        Mirrors torch.Tensor.multinomial."""
        from ._factories import multinomial  # noqa: PLC0415

        return multinomial(self, num_samples, replacement, generator=generator)

    def bernoulli(self, p=None, *, generator=None):
        """0/1 draws with this tensor's values (or `p`) as the probability of 1.

        Mirrors torch.Tensor.bernoulli."""
        from ._factories import bernoulli  # noqa: PLC0415

        return bernoulli(self, p, generator=generator)

    def bernoulli_(self, p=0.5, *, generator=None):
        """Fill this tensor in place with 0/1 draws that are 1 with probability `p`. Mirrors torch.Tensor.bernoulli_."""
        from ._factories import _rng_array_gen  # noqa: PLC0415

        # compared as tensors, so a traced call compares the replayed draw, not the one of the trace
        draw = Tensor._make(_rng_array_gen(generator, "uniform", self.shape, self.dtype, self.device))
        return self.copy_((draw < p).to(self.dtype))

    def random_(self, *args, generator=None):
        """Fill this tensor in place with integers drawn uniformly from [0, to) or [from, to).

        Mirrors torch.Tensor.random_ (the bound(s) must be given)."""
        from ._factories import randint  # noqa: PLC0415
        from ._inplace import write  # noqa: PLC0415

        low, high = (0, args[0]) if len(args) == 1 else args
        write(self, randint(low, high, tuple(self.shape), dtype=self.dtype, device=self.device,
                            generator=generator)._data, "random_")
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill this tensor in place with draws from an exponential distribution of rate `lambd`.

        Mirrors torch.Tensor.exponential_."""
        from ._factories import _rng_array_gen  # noqa: PLC0415
        from ._inplace import write  # noqa: PLC0415

        u = _rng_array_gen(generator, "uniform", self.shape, self.dtype, self.device)
        xp = xp_of_array(u)
        write(self, (-xp.log1p(-u) / lambd).astype(self._data.dtype), "exponential_")
        return self
    # == end of the methods added with the PyTorch-programs surface =============================


def _leaf_only_message(requires_grad: bool) -> str:
    msg = "you can only change requires_grad flags of leaf variables."
    if not requires_grad:
        msg += (" If you want to use a computed variable in a subgraph that doesn't require "
                "differentiation use var_no_grad = var.detach().")
    return msg


def _set_requires_grad(t: Tensor, value: bool) -> None:
    """The check of constructors and requires_grad_() (PyTorch's capitalised message)."""
    if value and t._data.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    t._requires_grad = bool(value)


def _legacy_init(t: Tensor, args, device, dt) -> None:
    """`Tensor(3, 5)` (zeros of that shape) or `Tensor([1., 2.])` (a copy), of dtype dt."""
    if len(args) == 1 and not isinstance(args[0], int):
        from ._factories import tensor  # noqa: PLC0415

        data = tensor(args[0], dtype=dt, device=device)._data
    else:
        shape = F._sizes(args) if args else (0,)  # Tensor() is an empty 1-d tensor
        data = xp_for(CPU if device is None else _as_device(device)).zeros(shape, dtype=dt.np)
    t._init(data)


def _rebuild(array, requires_grad):
    t = Tensor._make(array)
    t._requires_grad = requires_grad
    return t


def _as_device(dev) -> device:
    return dev if isinstance(dev, device) else device(dev) if isinstance(dev, str) else device("cuda", int(dev))


def _to_device(t: Tensor, dev: device) -> Tensor:
    if t.device == dev:
        return t
    from ._inplace import TO_DEVICE  # noqa: PLC0415

    return TO_DEVICE(t, device=str(dev), source=str(t.device))


def _index_tensor(value) -> Tensor:
    from ._factories import tensor  # noqa: PLC0415

    return tensor(value)


def _setitem_raw(self: Tensor, index, value) -> None:
    key, operands = F.index_key(index, _index_tensor)
    from .ops.shape_ops import build_key  # noqa: PLC0415

    arr = value._data if isinstance(value, Tensor) else value
    self._data[build_key(key, [o._data for o in operands])] = arr


_dispatch.Tensor = Tensor
_dispatch._new_tensor = Tensor._make
