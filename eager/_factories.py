"""Tensor creation: `tensor`, `zeros`, `randn`, ... and the global random generator."""
from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np

from . import _dtypes
from ._device import CPU, device, xp_for, xp_of_array
from ._tensor import Tensor, _as_device, _legacy_init, _set_requires_grad
from .ops import _layout
from .ops._native import try_native


class _RngState(TypedDict):
    """eager's global random state."""

    seed: int | None  # the last manual_seed, None before any
    numpy: np.random.Generator
    cupy: Any  # a cupy.random.RandomState made on first CUDA draw (CuPy has no type stubs)


_RNG: _RngState = {"seed": None, "numpy": np.random.default_rng(), "cupy": None}


def manual_seed(seed: int) -> np.random.Generator:
    """Seed eager's generators (CPU and, when present, CUDA) for reproducible runs."""
    _RNG["seed"] = int(seed)
    _RNG["numpy"] = np.random.default_rng(int(seed))
    _RNG["cupy"] = None
    return _RNG["numpy"]


seed = manual_seed


_DEFAULT_DEVICE = {"device": CPU}  # eager.set_default_device changes it


def _dev(dev) -> device:
    return _DEFAULT_DEVICE["device"] if dev is None else _as_device(dev)


class _Created(threading.local):
    log: list[Tensor] | None = None  # a list while static traces a function on this thread


_CREATED = _Created()


def log_created(log: list | None) -> list | None:
    """Collect the tensors the factories make on this thread into `log` (None stops); returns
    the previous log. static traces with a log: a tensor made inside the traced function is
    a constant of the trace, not state shared with the caller."""
    prev, _CREATED.log = _CREATED.log, log
    return prev


def _finish(arr, requires_grad: bool) -> Tensor:
    t = Tensor._make(arr)
    if _CREATED.log is not None:
        _CREATED.log.append(t)
    if requires_grad:
        _set_requires_grad(t, True)  # refuses non-float dtypes with PyTorch's message
    return t


_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _infer_dtype(data) -> _dtypes.dtype:
    """PyTorch's inference for tensor(data): each scalar has a dtype (a Python float the
    default float dtype, an int int64, a bool bool, a NumPy scalar or a tensor its own) and a
    sequence (list, tuple, range) takes the promotion of its elements': the highest category
    (bool < integer < floating) wins whatever the sizes, so [1, 2.5] is float32 and
    [True, 2] int64; within a category the wider type does."""
    found: dict[int, set] = {}

    def visit(x) -> None:
        if isinstance(x, (list, tuple, range)):
            for item in x:
                visit(item)
            return
        if isinstance(x, Tensor):
            dt = x._data.dtype
        elif isinstance(x, (bool, np.bool_)):
            dt = np.dtype(np.bool_)
        elif isinstance(x, np.generic):
            dt = x.dtype
        elif isinstance(x, int):
            dt = np.dtype(np.int64)
        elif isinstance(x, float):
            dt = _dtypes.DEFAULT_FLOAT.np
        elif isinstance(x, np.ndarray):
            dt = x.dtype
        else:
            name = type(x).__name__
            if isinstance(x, (str, bytes)) or hasattr(x, "__iter__") and not hasattr(x, "__len__"):
                raise TypeError(f"new(): invalid data type '{name}'") if isinstance(x, (str, bytes)) else \
                    RuntimeError(f"Could not infer dtype of {name}")
            raise RuntimeError(f"Could not infer dtype of {name}")
        found.setdefault(_KIND_RANK.get(dt.kind, 3), set()).add(dt)

    visit(data)
    if not found:
        return _dtypes.DEFAULT_FLOAT  # tensor([]) is float32, as PyTorch's
    return _dtypes.from_numpy(np.result_type(*found[max(found)]))


def index_tensor(value) -> Tensor:
    """A list, tuple or range used as an index, as a tensor: an integer index (int64 even when
    empty, as PyTorch reads `x[[]]`) or a boolean mask."""
    if isinstance(value, (list, tuple, range)) and len(value) == 0:
        return tensor([], dtype=_dtypes.int64)
    return tensor(value)


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a number, nested lists, an array or a tensor)."""
    if isinstance(data, Tensor):
        arr = data._data
        dt = _dtypes.as_dtype(dtype) if dtype is not None else data.dtype
        dev = _dev(device) if device is not None else data.device
        xp = xp_for(dev)
        out = xp.array(arr if dev == data.device else (arr.get() if dev == CPU else arr), dtype=dt.np, copy=True)
        return _finish(out, requires_grad)
    dev = _dev(device)
    xp = xp_for(dev)
    if isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"):
        src = data.get() if (dev == CPU and not isinstance(data, np.ndarray)) else data
        dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.from_numpy(data.dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # beyond the dtype's range: inf, silently
            return _finish(xp.array(src, dtype=dt.np, copy=True), requires_grad)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    if isinstance(data, np.generic):
        data = data.item()
    elif isinstance(data, range):
        data = list(data)
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # 1e5 as float16 is inf, silently (PyTorch)
            arr = np.array(data, dtype=dt.np)
    except ValueError as exc:
        _check_rectangular(data, 0)
        raise TypeError(f"tensor(): could not build a {dt.name} tensor from {type(data).__name__}: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"tensor(): could not build a {dt.name} tensor from {type(data).__name__}: {exc}") from None
    if arr.dtype == object:
        raise TypeError(f"tensor(): nested sequences must be rectangular lists of numbers, got {data!r}")
    return _finish(arr if xp is np else xp.asarray(arr), requires_grad)


def _check_rectangular(data, dim: int) -> None:
    """PyTorch's error for ragged nested lists: the first length that differs, and where."""
    if not isinstance(data, (list, tuple)) or not data:
        return
    first = data[0]
    n = len(first) if isinstance(first, (list, tuple)) else None
    for item in data:
        m = len(item) if isinstance(item, (list, tuple)) else None
        if m != n:
            raise ValueError(f"expected sequence of length {n} at dim {dim + 1} (got {m})")
    for item in data:
        _check_rectangular(item, dim + 1)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` as a tensor, sharing memory when possible: a tensor or a NumPy array of the right dtype is not copied.

    Mirrors torch.as_tensor."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and device is None and (dtype is None or _dtypes.as_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtypes.from_numpy(array.dtype)
    return Tensor._make(array)


def _shape_args(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"expected a sequence of integers for the size, got {type(s).__name__} ({s!r})")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    # an int subclass stays: a compiled trace's symbolic size (static.dynamic_shapes)
    return tuple(s if isinstance(s, int) else int(s) for s in size)


def _size_kw(sizes: tuple, size) -> tuple:
    """The size given positionally or as size= (torch.zeros(size=(2, 3)))."""
    if size is None:
        return sizes
    if sizes:
        raise TypeError("size given both positionally and as size=")
    return (size,)


def _filled(fn_name, size, dtype, device, requires_grad, value=None):
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    xp = xp_for(_dev(device))
    shape = _shape_args(size)
    if fn_name in ("zeros", "ones", "full") and any(type(d) is not int for d in shape):
        # a symbolic size (a compiled function's dynamic dimension): a `full` node of the trace,
        # not a constant of the traced call's size
        from .ops.special import FULL  # noqa: PLC0415

        fill = {"zeros": 0, "ones": 1}.get(fn_name, value)
        out = FULL(shape=shape, value=fill, dtype=dt)
        return out.requires_grad_() if requires_grad else out
    if fn_name == "full":
        with np.errstate(over="ignore", invalid="ignore"):  # a value beyond the dtype's range: inf
            arr = xp.full(shape, value, dtype=dt.np)
    else:
        arr = getattr(xp, fn_name)(shape, dtype=dt.np)
    return _finish(arr, requires_grad)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of the given size (ints, one sequence, or size=). Mirrors torch.zeros."""
    return _filled("zeros", _size_kw(sizes, size), dtype, device, requires_grad)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of the given size (ints, one sequence, or size=). Mirrors torch.ones."""
    return _filled("ones", _size_kw(sizes, size), dtype, device, requires_grad)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size whose values are not to be relied on.

    Unlike PyTorch, the memory is zeroed (no uninitialized reads). Mirrors torch.empty."""
    return _filled("zeros", _size_kw(sizes, size), dtype, device, requires_grad)  # zeroed: no uninitialized reads


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of the given size filled with `fill_value` (dtype inferred from it unless given). Mirrors torch.full."""
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    return _filled("full", (size,) if isinstance(size, int) else tuple(size), dtype, device, requires_grad, fill_value)


def _like(make: Callable[..., Tensor], input, dtype, device, requires_grad: bool) -> Tensor:
    """`make(size, ...)` (zeros, ones, randn, rand) with input's shape, and its dtype and device
    unless given: what every `*_like` factory means. The result is laid out in input's memory
    order (PyTorch's preserve_format), so `zeros_like(x.t())` is transposed too."""
    out = make(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
               requires_grad=requires_grad)
    return _in_layout_of(out, input)


def _in_layout_of(out: Tensor, input) -> Tensor:
    data = getattr(input, "_data", None)
    if data is None or data.ndim < 2 or data.flags.c_contiguous or type(data) is not type(out._data):
        return out
    laid = _layout.empty_like(xp_of_array(out._data), data, out._data.dtype)
    laid[...] = out._data
    out._data = laid
    return out


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros with input's shape, and its dtype and device unless given. Mirrors torch.zeros_like."""
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with input's shape, and its dtype and device unless given. Mirrors torch.ones_like."""
    return _like(ones, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialized-by-contract tensor with input's shape (zeroed here, see empty). Mirrors torch.empty_like."""
    return zeros_like(input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`fill_value` with input's shape, and its dtype and device unless given. Mirrors torch.full_like."""
    return _in_layout_of(full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                              device=device or input.device, requires_grad=requires_grad), input)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from `start` (default 0) up to, not including, `end` in steps of `step`, as a 1-d tensor.

    int64 when all of them are ints, else the default float dtype. Mirrors torch.arange."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _dtypes.int64 if all(isinstance(v, int) for v in (start, end, step)) else _dtypes.DEFAULT_FLOAT
    dt = _dtypes.as_dtype(dtype)
    if step == 1 and any(type(v) is not int and isinstance(v, int) for v in (start, end)):
        return _symbolic_arange(start, end, dt, requires_grad)
    return _finish(xp_for(_dev(device)).arange(start, end, step, dtype=dt.np), requires_grad)


def _symbolic_arange(start, end, dt, requires_grad: bool) -> Tensor:
    """arange over a symbolic size (a compiled function's dynamic dimension: static's SymInt):
    made with ops, a cumulative sum of ones, so that the graph reads the size at run time
    rather than holding the traced call's values as a constant."""
    from .ops.math_ops import CUMSUM  # noqa: PLC0415
    from .ops.special import FULL  # noqa: PLC0415

    ones = FULL(shape=(end - start,), value=1, dtype=_dtypes.int64)
    out = CUMSUM(ones, dim=0) + (start - 1)
    out = out if dt is _dtypes.int64 else out.to(dt)
    return out.requires_grad_() if requires_grad else out


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive, as a 1-d tensor. Mirrors torch.linspace."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(xp_for(_dev(device)).linspace(start, end, steps, dtype=dt.np), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`steps` values from base**start to base**end inclusive, evenly spaced in the exponent
    (computed in float64, then rounded to the dtype). Mirrors torch.logspace."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    values = np.power(float(base), np.linspace(start, end, steps, dtype=np.float64))
    return _finish(xp_for(_dev(device)).asarray(values.astype(dt.np)), requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An n x m (n x n by default) matrix with ones on the diagonal and zeros elsewhere. Mirrors torch.eye."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(xp_for(_dev(device)).eye(n, m, dtype=dt.np), requires_grad)


class _Draws(threading.local):
    count = 0


_DRAWS = _Draws()


def draws_on_this_thread() -> int:
    """How many random draws this thread has made: static compares it before and after a
    trace to refuse functions whose random numbers would be frozen into the graph (per thread,
    so another thread drawing meanwhile is not mistaken for the traced function)."""
    return _DRAWS.count


class _DrawHook:
    # static's tracer: while a trace is active on a thread, a draw there becomes a graph input
    fn: Callable[..., Any] | None = None


DRAW_HOOK = _DrawHook()


def _rng_array(kind, shape, dt, dev, a=0.0, b=1.0, high=None, generator=None):
    """Random numbers drawn on the tensor's device from eager's seeded generators, or from
    `generator` (while a function is traced, the tracer's hook answers instead and replays
    the draw per call, from the same generator)."""
    if DRAW_HOOK.fn is not None:
        out = DRAW_HOOK.fn(kind, tuple(shape), dt, dev, a, b, high, generator)
        if out is not NotImplemented:
            return out
    return draw_array(kind, shape, dt, dev, a, b, high, generator)


def draw_array(kind, shape, dt, dev, a=0.0, b=1.0, high=None, generator=None):
    """Draw from eager's generators (or `generator`) now: what `_rng_array` does outside a trace."""
    if generator is not None:
        return _draw_from(generator, kind, shape, dt, dev, a, b, high)
    _DRAWS.count += 1
    shape = tuple(shape)
    if kind == "perm":  # always NumPy's generator, then moved: the same permutation on every device
        arr = _RNG["numpy"].permutation(shape[0]).astype(dt.np)
        return arr if dev == CPU else xp_for(dev).asarray(arr)
    if dev.type == "cuda":
        if _RNG["cupy"] is None:
            _RNG["cupy"] = xp_for(dev).random.RandomState(_RNG["seed"])
        g = _RNG["cupy"]
        integers = g.randint  # CuPy's RandomState: NumPy's Generator calls it `integers`
    else:
        g = _RNG["numpy"]
        integers = g.integers
    if kind == "normal":
        return (g.standard_normal(shape) * b + a).astype(dt.np)
    if kind == "uniform":
        return _uniform(g, a, b, shape, dt.np)
    return integers(a, high, shape).astype(dt.np)


def draw_uniform_run(shapes: list, dt) -> list:
    """Uniform draws on [0, 1) of eager's NumPy generator for each shape, in order, as one
    draw of all their numbers (the same stream: a float32 draw carries NumPy's half-used
    64-bit output over to the next, a float64 draw takes whole ones), cut into C-contiguous
    views: what draw_array("uniform", shape, dt, CPU) for each shape in turn makes, with one
    round trip of the generator's state instead of one a shape (a compiled training step
    replays its dropout masks so)."""
    _DRAWS.count += len(shapes)
    sizes = [math.prod(int(d) for d in shape) for shape in shapes]  # (np.prod: 5 us a shape)
    u = _uniform(_RNG["numpy"], 0.0, 1.0, (sum(sizes),), dt.np)
    out, at = [], 0
    for shape, size in zip(shapes, sizes):
        out.append(u[at:at + size].reshape(shape))
        at += size
    return out


def _uniform(g, a: float, b: float, shape: tuple, np_dtype) -> Any:
    """Uniform draws on [a, b) of NumPy's Generator or CuPy's RandomState, made in the
    result's own precision: a float64 draw rounded to float32 is 1.0 about once in 2**25
    draws (outside rand's [0, 1); a dropout layer draws 10**5 a step), and a float32 draw
    costs the generator half the work. A narrower float takes a float32 draw cut to its own
    grid of 2**-digits steps, so it cannot round up to 1 either."""
    draw = g.random if isinstance(g, np.random.Generator) else g.random_sample  # (CuPy: random_sample)
    if np_dtype == np.float32 or np_dtype == np.float64:
        # a large draw of NumPy's PCG64 runs on the native kernels' threads: the same numbers
        # and the same generator state, 2-3x sooner (gmnative.kernels.uniform)
        u = try_native(np, "uniform", g, shape, np_dtype) if isinstance(g, np.random.Generator) else None
        if u is None:
            u = draw(shape, dtype=np_dtype)
    else:
        digits = np.finfo(np_dtype).nmant + 1 if np.issubdtype(np_dtype, np.floating) else 24
        u = (np.floor(draw(shape, dtype=np.float32) * 2.0 ** digits) * 2.0 ** -digits).astype(np_dtype)
    if a == 0.0 and b == 1.0:
        return u
    return (u * (b - a) + a).astype(np_dtype, copy=False)


def randn(*sizes, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size drawn from the standard normal distribution.

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randn."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(_rng_array_gen(generator, "normal", _shape_args(_size_kw(sizes, size)), dt, _dev(device)),
                   requires_grad)


def rand(*sizes, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size drawn uniformly from [0, 1).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.rand."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(_rng_array_gen(generator, "uniform", _shape_args(_size_kw(sizes, size)), dt, _dev(device)),
                   requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size of integers drawn uniformly from [low, high) (low defaults to 0).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randint."""
    if size is None:
        low, high, size = 0, low, high
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.int64
    return _finish(_rng_array_gen(generator, "int", _shape_args(tuple(size)), dt, _dev(device), low, high=high),
                   requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal draws with input's shape, and its dtype and device unless given. Mirrors torch.randn_like."""
    return _like(randn, input, dtype, device, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform [0, 1) draws with input's shape, and its dtype and device unless given. Mirrors torch.rand_like."""
    return _like(rand, input, dtype, device, requires_grad)


def randperm(n, dtype=None, device=None, generator=None) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randperm."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.int64
    return _finish(_rng_array("perm", (n,), dt, _dev(device), generator=generator), False)


class _LegacyTensor(Tensor):
    """Base of FloatTensor & co.: constructing one gives a plain Tensor of that dtype."""

    _default_dtype: _dtypes.dtype  # set by each subclass (see _legacy)

    def __new__(cls, *args, device=None):
        t = object.__new__(Tensor)
        _legacy_init(t, args, device, cls._default_dtype)
        return t

    def __init__(self, *args, **kwargs) -> None:
        pass


def _legacy(name: str, dt: _dtypes.dtype):
    return type(name, (_LegacyTensor,), {"_default_dtype": dt, "__doc__": f"Legacy constructor of {dt.name} tensors."})


FloatTensor = _legacy("FloatTensor", _dtypes.float32)
DoubleTensor = _legacy("DoubleTensor", _dtypes.float64)
HalfTensor = _legacy("HalfTensor", _dtypes.float16)
LongTensor = _legacy("LongTensor", _dtypes.int64)
IntTensor = _legacy("IntTensor", _dtypes.int32)
BoolTensor = _legacy("BoolTensor", _dtypes.bool_)
ByteTensor = _legacy("ByteTensor", _dtypes.uint8)


# == torch.Generator and the random functions added with the PyTorch-programs surface ==========
def _fresh_seed() -> int:
    """A seed from the operating system's entropy, within int64 as PyTorch's seeds are."""
    entropy = np.random.SeedSequence().entropy
    if not isinstance(entropy, int):
        raise TypeError(f"SeedSequence gave entropy of type {type(entropy).__name__}, expected an int")
    return entropy % (2 ** 63)


class Generator:
    """`eager.Generator()`: an independent random stream for the functions that take
    `generator=` (randn, rand, randint, randperm, multinomial, bernoulli, dropout masks through
    DataLoader shuffling...). Its state is a NumPy `Generator` (PCG64), a value compiled code
    can thread through a step as well."""

    def __init__(self, device="cpu") -> None:
        self.device = _dev(device)
        self._seed = _fresh_seed()
        self._np = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._np = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        self._seed = _fresh_seed()
        self._np = np.random.default_rng(self._seed)
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (its bytes are the bit generator's state as JSON)."""
        import json  # noqa: PLC0415

        raw = json.dumps(self._np.bit_generator.state).encode()
        return Tensor._make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state: Tensor) -> "Generator":
        import json  # noqa: PLC0415

        if not isinstance(new_state, Tensor) or new_state.dtype is not _dtypes.uint8:
            raise TypeError("Generator.set_state: expected a uint8 tensor from get_state()")
        state = json.loads(bytes(np.asarray(new_state._data)).decode())
        bitgen = getattr(np.random, state["bit_generator"])()
        bitgen.state = state
        self._np = np.random.Generator(bitgen)
        return self

    def __repr__(self) -> str:
        return f"<eager.Generator object on {self.device}>"


class _DefaultGenerator(Generator):
    """The global generator: `eager.manual_seed` reseeds it (the module state stays the source)."""

    def __init__(self) -> None:
        self.device = CPU

    @property
    def _np(self) -> np.random.Generator:
        return _RNG["numpy"]

    @_np.setter
    def _np(self, value: np.random.Generator) -> None:
        _RNG["numpy"] = value

    @property  # type: ignore[override]  # None until manual_seed: the module state
    def _seed(self) -> int | None:
        return _RNG["seed"]

    @_seed.setter
    def _seed(self, value: int | None) -> None:
        _RNG["seed"] = value

    def manual_seed(self, seed: int) -> "Generator":
        manual_seed(seed)
        return self


default_generator = _DefaultGenerator()


def initial_seed() -> int:
    """The seed last given to manual_seed (0 if none was). Mirrors torch.initial_seed."""
    return _RNG["seed"] if _RNG["seed"] is not None else 0


def get_rng_state() -> Tensor:
    """The default generator's state, as a tensor to pass to set_rng_state. Mirrors torch.get_rng_state."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from get_rng_state's tensor. Mirrors torch.set_rng_state."""
    default_generator.set_state(new_state)


def _numpy_rng(generator: object) -> np.random.Generator:
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an eager.Generator, got {type(generator).__name__}")
    return generator._np


def _rng_array_gen(generator, kind, shape, dt, dev, a=0.0, b=1.0, high=None):
    """_rng_array from `generator` when one is given (drawn on the host, then moved)."""
    return _rng_array(kind, shape, dt, dev, a, b, high, generator)


def _draw_from(generator, kind, shape, dt, dev, a=0.0, b=1.0, high=None):
    """Draw from a user's `Generator` now (on the host, then moved to the device)."""
    _DRAWS.count += 1
    g = _numpy_rng(generator)
    shape = tuple(shape)
    if kind == "perm":
        arr = g.permutation(shape[0]).astype(dt.np)
    elif kind == "normal":
        arr = (g.standard_normal(shape) * b + a).astype(dt.np)
    elif kind == "uniform":
        arr = _uniform(g, a, b, shape, dt.np)
    else:
        arr = g.integers(a, high, shape).astype(dt.np)
    return arr if dev == CPU else xp_for(dev).asarray(arr)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Normal samples: of `size` for number arguments; of the broadcast shape for tensor ones."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        z = Tensor._make(_rng_array_gen(generator, "normal", shape, like.dtype, like.device))
        return z * std + mean
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(_rng_array_gen(generator, "normal", _shape_args(tuple(size)), dt, _dev(device), mean, std),
                   requires_grad)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    """Draw category indices with probabilities proportional to the rows of `input` (1-D or
    2-D of non-negative weights, not necessarily normalized), as int64."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {tuple(input.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}")
    probs = np.asarray(input.detach().cpu().numpy(), dtype=np.float64)  # a traced input: TraceError
    rows = probs.reshape(-1, probs.shape[-1])
    n_cat = rows.shape[1]
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(rows.sum(axis=1) <= 0):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {n_cat})")
    g = _RNG["numpy"] if generator is None else _numpy_rng(generator)
    _DRAWS.count += 1
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, p in enumerate(rows / rows.sum(axis=1, keepdims=True)):
        if replacement:
            out[i] = np.searchsorted(np.cumsum(p), g.random(num_samples) * p.sum(), side="right").clip(0, n_cat - 1)
        else:
            # Gumbel top-k: sampling without replacement in proportion to p
            with np.errstate(divide="ignore"):
                keys = np.log(p) - np.log(-np.log(g.random(n_cat)))
            out[i] = np.argsort(-keys, kind="stable")[:num_samples]
    drawn = out.reshape(probs.shape[:-1] + (num_samples,))
    return _finish(drawn if input.device == CPU else xp_for(input.device).asarray(drawn), False)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """1 with probability input (or p), else 0, in input's dtype."""
    # compared as tensors, so a traced call compares the replayed draw, not the one of the trace
    u = Tensor._make(_rng_array_gen(generator, "uniform", tuple(input.shape), input.dtype, input.device))
    return (u < (input.detach() if p is None else p)).to(input.dtype)


def set_default_device(device) -> None:
    """Where factories (zeros, randn, tensor, ...) put tensors when no device is given."""
    _DEFAULT_DEVICE["device"] = CPU if device is None else _as_device(device)


def get_default_device() -> device:
    """The device factories use when none is given (see set_default_device). Mirrors torch.get_default_device."""
    return _DEFAULT_DEVICE["device"]
