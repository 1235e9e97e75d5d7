"""`Tensor`: an array (NumPy or CuPy) plus the autograd state PyTorch users expect."""
from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from gmbase import dtypes as _dtypes

from . import _dispatch
from . import _functional as F
from ._api import TensorAPI
from ._device import CPU, device, may_share_memory, xp_for, xp_of_array
from ._dispatch import dispatch
from ._grad_mode import STATE
from ._memory_format import _FORMATS, format_name
from ._metadata_inplace import MetadataInPlace
from ._random_fills import RandomFills
from ._repr import tensor_repr
from ._tensor_metadata import TensorMetadata
from .autograd import backward as _autograd_backward  # (bound once: an import per call costs microseconds)
from .autograd.graph import AccumulateGrad, RemovableHandle

if TYPE_CHECKING:
    from gmops._registry import OpDef

    from .autograd.function import FunctionCtx
    from .autograd.graph import Node

# One step of a view's making from the tensor owning its memory: the view op, its
# attributes, and which of its outputs (None for a one-output op).
ViewStep = tuple["OpDef", dict[str, Any], "int | None"]

_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead."
)


METADATA_VERSION = [0]
"""Bumped by every change of an existing tensor's metadata made through eager's API: its
data rebound (`.data =`), requires_grad set (the setter, requires_grad_(), detach_(), an
in-place op that gives a leaf a history), each only when the value changes. A compiled entry
(static.entry) that found its captured tensors as traced at some version skips re-reading
their shapes, dtypes and requires_grad while the version has not moved. A fresh tensor
(an op's result, a factory's) does not bump it: no entry captured it yet. A new method that
changes a tensor's shape, dtype, storage or requires_grad in place (`t_`, `squeeze_`,
`resize_`, `set_`, ...) must bump it: tests/static/test_guard_versions.py holds each such
name to that rule."""


class Tensor(TensorMetadata, TensorAPI, MetadataInPlace, RandomFills):
    """A multi-dimensional array with autograd.

    `Tensor(3, 5)` / `Tensor([1., 2.])` are the legacy constructors (float32); prefer
    `eager.tensor(data)` and the factories. The operators and most methods are eager's
    `TensorAPI` (shared with static's tracer values); this class adds the data, the
    autograd state and the two hooks: ops run at once (`eager._dispatch.dispatch`) and
    in-place forms write the buffer (`eager._inplace.apply_inplace`)."""

    # _vc: the version counter, a one-element list shared with views of the same memory.
    # _base/_view: for a view, the tensor owning the memory and the view ops that lead from
    # it here (so an in-place write to the view can be replayed onto the base's graph).
    # Attributes most tensors never set are class-level defaults rather than slots, so that
    # making a tensor (once per op) assigns only what every tensor needs.
    __slots__ = ("_data", "_requires_grad", "grad_fn", "_vc", "_output_nr", "__weakref__", "__dict__")
    _data: Any  # a numpy.ndarray or a cupy.ndarray (CuPy has no type stubs)
    _requires_grad: bool
    grad_fn: Node | FunctionCtx | None
    _vc: list[int]
    _output_nr: int
    _grad: Tensor | None = None
    _base: Tensor | None = None
    _view: tuple[ViewStep, ...] | None = None
    _views: list[weakref.ref[Tensor]] | None = None  # on a base: its views made in grad mode (eager._dispatch)
    _retains_grad = False
    _acc: AccumulateGrad | None = None
    __array_priority__ = 1000  # ndarray <op> Tensor defers to Tensor's reflected operator
    _apply_op = staticmethod(dispatch)  # run the op now and record its backward (TensorAPI's hook)

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
        if self._requires_grad is not bool(value):
            METADATA_VERSION[0] += 1
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
        _autograd_backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)

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
        if self._requires_grad:
            METADATA_VERSION[0] += 1
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
        METADATA_VERSION[0] += 1

    # -- conversion ---------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shared, not copied) when the tensor is on the CPU and needs no gradient.

        `force=True` also detaches and copies a CUDA tensor to the host. Mirrors torch.Tensor.numpy."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if _dispatch.n_read_hooks:
            _dispatch.data_read(self, ".numpy()")
        if not isinstance(self._data, np.ndarray):
            if not force:
                raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
                                "the tensor to host memory first.")
            return self._data.get()
        # a new array object over the same memory, as PyTorch's: assigning its `shape` or
        # `dtype` must not change the tensor's (a compiled entry that captured the tensor
        # trusts METADATA_VERSION for those)
        return self._data.view()

    def __array__(self, dtype=None, copy=None):
        if _dispatch.n_read_hooks:
            _dispatch.data_read(self, "NumPy conversion")
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        arr = self._data.view() if isinstance(self._data, np.ndarray) else self._data.get()  # (as numpy())
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def item(self):
        """The value of a one-element tensor as a Python number. Mirrors torch.Tensor.item."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if _dispatch.n_read_hooks:  # (a trace reading a captured tensor: static guards or refuses it)
            _dispatch.data_read(self, ".item()")
        return self._data.item()  # (a one-element array of any shape: no reshape or element view)

    def tolist(self):
        """The data as (nested) Python lists of Python numbers. Mirrors torch.Tensor.tolist."""
        if _dispatch.n_read_hooks:
            _dispatch.data_read(self, ".tolist()")
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

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        # as PyTorch's: a 0-d plain tensor formats as its Python number (f"loss {loss}" prints
        # 0.6931471824645996), anything else as str() and only with an empty spec
        if self._data.ndim == 0 and type(self) is Tensor:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (np.asarray(self._data if isinstance(self._data, np.ndarray) else self._data.get()),
                           self._requires_grad))

    def to_sparse(self, sparse_dim: int | None = None, **kwargs: Any) -> Any:
        """The sparse COO form (eager.sparse.SparseTensor): the nonzero entries, or the nonzero
        slices over the first `sparse_dim` dims; differentiable. Mirrors torch.Tensor.to_sparse."""
        from .sparse import to_sparse  # noqa: PLC0415

        return to_sparse(self, sparse_dim)

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> "Tensor":
        """self for a dense tensor (a sparse one converts). Mirrors torch.Tensor.to_dense."""
        return self if dtype is None else self.to(dtype)

    def type(self, dtype: _dtypes.dtype | str | None = None) -> str | Tensor:
        """With no argument, the legacy type name ('torch.FloatTensor', ...); with a dtype, `self.to(dtype)`.

        Mirrors torch.Tensor.type (the names keep the 'torch.' prefix PyTorch programs compare against)."""
        if dtype is None:
            names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                     "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                     "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
            prefix = "torch.cuda." if self.is_cuda else "torch."
            return prefix + names[self.dtype.name]
        legacy = getattr(dtype, "_default_dtype", None)  # x.type(torch.LongTensor)
        if legacy is not None:
            return self.to(legacy)
        if isinstance(dtype, str) and dtype.endswith("Tensor"):  # x.type('torch.cuda.FloatTensor')
            by_name = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                       "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
                       "ByteTensor": "uint8", "BoolTensor": "bool"}
            name = dtype.rsplit(".", 1)[-1]
            if name not in by_name:
                raise ValueError(f"invalid type: '{dtype}'")
            return self.to(_dtypes.from_name(by_name[name]))
        return self.to(dtype)

    def to(self, *args, **kwargs) -> "Tensor":
        """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`; a new tensor only if needed."""
        dev, dt = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        for a in args:
            if isinstance(a, Tensor):
                dev, dt = a.device, a.dtype
            elif (isinstance(a, (_dtypes.dtype, _dtypes.UnsupportedDtype, type))
                  or (isinstance(a, str) and a.split(":")[0] not in ("cpu", "cuda"))):
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

    def contiguous(self, memory_format: Any = None) -> "Tensor":
        """This tensor if it is laid out row-major (or in `memory_format`), else a copy that is:
        `x.transpose(1, 2).contiguous().view(...)` then views the copy. Differentiable
        (CloneBackward0). Mirrors torch.Tensor.contiguous."""
        name = "contiguous_format" if memory_format is None else format_name(memory_format)
        if name == "preserve_format":
            raise RuntimeError("contiguous: preserve memory format is unsupported by the contiguous operator; "
                               "pass eager.contiguous_format or eager.channels_last")
        if self.is_contiguous(_FORMATS[name]):
            return self
        return F.clone(self, memory_format=_FORMATS[name])

    # -- in-place --------------------------------------------------------------------------------
    def _apply_inplace(self, fn: Callable[..., Any], others: tuple[Any, ...], name: str, saves_self: bool = True,
                       grad_name: str | None = None) -> Tensor:
        """TensorAPI's in-place hook: write `fn(self, *others)` into this tensor's buffer,
        rebasing its autograd history when the write is recorded (see eager._inplace)."""
        return _inplace.apply_inplace(self, fn, others, name, saves_self, grad_name)

    def fill_(self, value) -> "Tensor":
        """Set every element to `value` in place. Mirrors torch.Tensor.fill_."""
        return _inplace.fill(self, value)

    def zero_(self) -> "Tensor":
        """Set every element to zero in place. Mirrors torch.Tensor.zero_."""
        return _inplace.fill(self, 0, "ZeroBackward0")

    def copy_(self, src, non_blocking: bool = False) -> "Tensor":
        """Write `src` (broadcast, cast to this dtype, moved to this device) into this tensor.

        Differentiable with respect to `src`. Mirrors torch.Tensor.copy_."""
        return _inplace.copy(self, src)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> "Tensor":
        """Fill in place with draws uniform on [a, b). Mirrors torch.Tensor.uniform_."""
        return _inplace.draw(self, "uniform", a, b, generator)

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> "Tensor":
        """Fill in place with normal draws of mean `mean` and std `std`. Mirrors torch.Tensor.normal_."""
        return _inplace.draw(self, "normal", mean, std, generator)

    def __setitem__(self, index, value) -> None:
        if hasattr(type(value), "__graphmode_inplace__"):  # a traced value (static): the tracer records it
            _inplace.hand_over(self, F.put_at_index(self, index, value, _index_tensor))
            return
        if not isinstance(value, Tensor):
            from gmops.shape_ops import fit_put_value  # noqa: PLC0415

            value = fit_put_value(value, self.dtype)  # PyTorch's overflow error, not NumPy's wrap
            value = float(value) if self.is_floating_point() else value
        elif value.dtype is not self.dtype:
            value = F.to_dtype(value, self.dtype)
        _inplace.assign(self, (value,), lambda: F.put_at_index(self, index, value, _index_tensor),
               lambda: _setitem_raw(self, index, value), "index_put_")

    def view(self, *shape):
        """The same data in the given shape, sharing memory; raises if that needs a copy (use reshape).

        `view(dtype)` is not supported (use `.to(dtype)`). Mirrors torch.Tensor.view."""
        if len(shape) == 1 and isinstance(shape[0], (_dtypes.dtype, str)):
            raise NotImplementedError("view(dtype) is not supported; use .to(dtype)")
        out = F.reshape(self, *shape)
        if out is not self and not (out._data.size == 0 or may_share_memory(out._data, self._data)):
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")
        return out

    # -- random draws -----------------------------------------------------------------------------
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

        _inplace.check_fill_under_vmap()
        # compared as tensors, so a traced call compares the replayed draw, not the one of the trace
        draw = Tensor._make(_rng_array_gen(generator, "uniform", self.shape, self.dtype, self.device))
        return self.copy_((draw < p).to(self.dtype))

    def random_(self, *args, generator=None):
        """Fill this tensor in place with integers drawn uniformly from [0, to) or [from, to).

        Mirrors torch.Tensor.random_ (the bound(s) must be given)."""
        from ._factories import randint  # noqa: PLC0415

        low, high = (0, args[0]) if len(args) == 1 else args
        drawn = randint(low, high, tuple(self.shape), dtype=self.dtype, device=self.device, generator=generator)
        if _dispatch.current_modes():  # traced (static): the fill reads the draw each call makes
            return self.copy_(drawn)
        _inplace.write(self, drawn._data, "random_")
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        """Fill this tensor in place with draws from an exponential distribution of rate `lambd`.

        Mirrors torch.Tensor.exponential_."""
        from ._factories import _rng_array_gen  # noqa: PLC0415

        _inplace.check_fill_under_vmap()
        u = _rng_array_gen(generator, "uniform", self.shape, self.dtype, self.device)
        if _dispatch.current_modes():  # traced (static): computed from the draw each call makes
            return self.copy_(-(-Tensor._make(u)).log1p() / lambd)
        xp = xp_of_array(u)
        _inplace.write(self, (-xp.log1p(-u) / lambd).astype(self._data.dtype), "exponential_")
        return self


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
    if t._requires_grad is not bool(value):
        METADATA_VERSION[0] += 1
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
    return _inplace.TO_DEVICE(t, device=str(dev), source=str(t.device))


def _index_tensor(value) -> Tensor:
    from ._factories import index_tensor  # noqa: PLC0415

    return index_tensor(value)


def _setitem_raw(self: Tensor, index, value) -> None:
    key, operands = F.index_key(index, _index_tensor)
    from gmops.shape_ops import build_key  # noqa: PLC0415

    arr = value._data if isinstance(value, Tensor) else value
    self._data[build_key(key, [o._data for o in operands])] = arr


# In-place writes need Tensor (they make snapshots of it); its methods reach them at call time.
from . import _inplace  # noqa: E402
