"""Random tensors and the generators: eager's global random state (manual_seed), the draw
counter and hook that vmap and static's tracing read, rand/randn/randint/randperm,
`eager.Generator`, normal, multinomial and bernoulli."""
from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar, cast

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative import index_kernels as _index_kernels
from gmops._native import try_native

from .._device import CPU, xp_for
from .._tensor import Tensor
from .construction import _dev, _finish
from .filled import _like, _shape_args, _size_kw


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
    # whether `fn` would answer a draw on this thread now (a trace is active): static installs
    # fn for good at import, so a path that draws on its own asks this (draw_hook_answers)
    # rather than whether fn is set; None: assume it would
    active: Callable[[], bool] | None = None


DRAW_HOOK = _DrawHook()


def draw_hook_answers() -> bool:
    """Whether a draw on this thread goes to the draw hook now (a trace is active): a path that
    draws on its own, outside `_rng_array` (randint's common draw, F.dropout's native pass),
    runs only where it does not."""
    if DRAW_HOOK.fn is None:
        return False
    active = DRAW_HOOK.active
    return active is None or active()


class _VmapDraws(threading.local):
    """vmap's randomness rule (eager._vmap) while a vmapped function runs on this thread: the
    random factories below hand their call to `rule`, which raises (randomness="error"), draws
    once for the batch ("same") or draws a batch of numbers at once ("different": `lead` is
    the batch's shape, put in front of the next draws' shape). `stray` counts draws that did
    not come through a factory (an in-place fill), which vmap then runs example by example."""

    rule: Callable[..., Any] | None = None
    lead: tuple = ()
    stray = 0


VMAP_DRAWS = _VmapDraws()


_F = TypeVar("_F", bound=Callable[..., Any])


def _vmap_aware(fn: _F) -> _F:
    """A random factory that vmap's randomness rule answers while a vmap runs."""

    def factory(*args: Any, **kwargs: Any) -> Any:
        rule = VMAP_DRAWS.rule
        return fn(*args, **kwargs) if rule is None else rule(fn, args, kwargs)

    factory.__name__, factory.__qualname__, factory.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    factory.__wrapped__ = fn  # type: ignore[attr-defined]
    return cast(_F, factory)


def _rng_array(kind, shape, dt, dev, a=0.0, b=1.0, high=None, generator=None):
    """Random numbers drawn on the tensor's device from eager's seeded generators, or from
    `generator` (while a function is traced, the tracer's hook answers instead and replays
    the draw per call, from the same generator)."""
    if VMAP_DRAWS.rule is not None:
        VMAP_DRAWS.stray += 1
    elif VMAP_DRAWS.lead:
        shape = VMAP_DRAWS.lead + tuple(shape)
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


def _float_draw(kind: str, sizes: tuple, size: Any, dtype: Any, device: Any, requires_grad: bool,
                generator: Any) -> Tensor:
    """randn's and rand's tensor: `kind` ("normal" or "uniform") draws of the size given either
    way (positional sizes or size=), in dtype (default: the default float) on device."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.DEFAULT_FLOAT
    return _finish(_rng_array_gen(generator, kind, _shape_args(_size_kw(sizes, size)), dt, _dev(device)),
                   requires_grad)


@_vmap_aware
def randn(*sizes, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size drawn from the standard normal distribution.

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randn."""
    return _float_draw("normal", sizes, size, dtype, device, requires_grad, generator)


@_vmap_aware
def rand(*sizes, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size drawn uniformly from [0, 1).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.rand."""
    return _float_draw("uniform", sizes, size, dtype, device, requires_grad, generator)


@_vmap_aware
def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """A tensor of the given size of integers drawn uniformly from [low, high) (low defaults to 0).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randint."""
    if size is None:
        low, high, size = 0, low, high
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if (generator is None and dtype is None and not requires_grad and type(size) is tuple
            and not VMAP_DRAWS.lead and not draw_hook_answers() and _dev(device).type == "cpu"):
        # the common draw (a minibatch's indices each step): int64 on the CPU from eager's
        # generator, what draw_array does, without its layers (each a call and a check)
        n = 1
        for s in size:
            if type(s) is not int or s < 0:
                break  # (a bool, a symbolic size, a nested size: the general path checks them)
            n *= s
        else:
            _DRAWS.count += 1
            g = _RNG["numpy"]
            # NumPy's own algorithm on the generator's bit generator, in one native call (the
            # same numbers and state as g.integers, a third of its cost for a minibatch's indices)
            drawn = _index_kernels.bounded_int64(g, low, high, n) if type(low) is int and type(high) is int else None
            return _finish(g.integers(low, high, size) if drawn is None else drawn.reshape(size), False)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.int64
    return _finish(_rng_array_gen(generator, "int", _shape_args(tuple(size)), dt, _dev(device), low, high=high),
                   requires_grad)


@_vmap_aware
def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal draws with input's shape, and its dtype and device unless given. Mirrors torch.randn_like."""
    return _like(randn, input, dtype, device, requires_grad)


@_vmap_aware
def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform [0, 1) draws with input's shape, and its dtype and device unless given. Mirrors torch.rand_like."""
    return _like(rand, input, dtype, device, requires_grad)


@_vmap_aware
def randperm(n, dtype=None, device=None, generator=None) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default).

    A seed gives other numbers than PyTorch's generator would (the draws come from NumPy or CuPy).
    Mirrors torch.randperm."""
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.int64
    return _finish(_rng_array("perm", (n,), dt, _dev(device), generator=generator), False)


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


@_vmap_aware
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


@_vmap_aware
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    """Draw category indices with probabilities proportional to the rows of `input` (1-D or
    2-D of non-negative weights, not necessarily normalized), as int64."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {tuple(input.shape)}")
    if not input.is_floating_point():
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}")
    data = getattr(input, "_data", None)
    if type(data) is not np.ndarray or (data.dtype.kind == "f" and data.dtype.itemsize < 4):
        data = input.detach().cpu().numpy()  # a traced input: TraceError; float16: through float32
    probs = data.astype(np.float64)  # (a copy the division below may not write through)
    rows = probs.reshape(-1, probs.shape[-1])
    n_cat = rows.shape[1]
    # one sum a row tells inf and nan apart from finite rows (in float64 no float32 row overflows)
    totals = np.add.reduce(rows, axis=1, keepdims=True)
    if not np.isfinite(totals).all() or rows.min(initial=0.0) < 0:
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if (totals <= 0).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {n_cat})")
    g = _RNG["numpy"] if generator is None else _numpy_rng(generator)
    _DRAWS.count += 1
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    rows /= totals
    for i, p in enumerate(rows):
        if replacement:
            # (searchsorted's positions are >= 0: only the top is clipped, a draw of u * total = total)
            np.minimum(np.cumsum(p).searchsorted(g.random(num_samples) * np.add.reduce(p), side="right"),
                       n_cat - 1, out=out[i])
        else:
            # Gumbel top-k: sampling without replacement in proportion to p
            with np.errstate(divide="ignore"):
                keys = np.log(p) - np.log(-np.log(g.random(n_cat)))
            out[i] = np.argsort(-keys, kind="stable")[:num_samples]
    drawn = out.reshape(probs.shape[:-1] + (num_samples,))
    return _finish(drawn if type(input._data) is np.ndarray else xp_for(input.device).asarray(drawn), False)


@_vmap_aware
def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """1 with probability input (or p), else 0, in input's dtype."""
    # compared as tensors, so a traced call compares the replayed draw, not the one of the trace
    u = Tensor._make(_rng_array_gen(generator, "uniform", tuple(input.shape), input.dtype, input.device))
    return (u < (input.detach() if p is None else p)).to(input.dtype)
