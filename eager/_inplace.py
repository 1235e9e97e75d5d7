"""In-place ops (`add_`, `x[i] = v`, `+=`, ...).

With no graph to record (no_grad, or nothing requires grad) the result is written into the
tensor's own buffer. Otherwise the op runs out of place on a snapshot of the tensor and
the result's history is moved onto the tensor ("rebasing"), so the tensor object the user
holds carries the new grad_fn, as in PyTorch. Version counters record every write.

Views share their base's memory, so a recorded write to the base (or through one of its
views) changes what every other view of it holds: those views are given the history of the
same view taken of the base after the write (`regenerate_views`), as PyTorch regenerates a
view's grad_fn. Values that cannot hold a float16 result (1e5) become inf silently, as in
PyTorch, rather than with NumPy's overflow warning."""
from __future__ import annotations

from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import device as _device_ops
from gmops import elementwise as E

from . import _dispatch, _tensor
from . import _functional as F
from ._device import cupy_module, is_writeable
from ._grad_mode import STATE, no_grad
from ._tensor import Tensor, ViewStep

_LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


# the records of a device move and a fill live with the others (gmops.device)
TO_DEVICE, FILL = _device_ops.TO_DEVICE, _device_ops.FILL
_VIEW_OF_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def _any_requires_grad(values) -> bool:
    return any(isinstance(v, Tensor) and v._requires_grad for v in values)


def _graph_view(self: Tensor) -> bool:
    """A view whose writes must be replayed onto its base's graph (PyTorch's CopySlices)."""
    return self._view is not None


def _check(self: Tensor, others) -> bool:
    """Whether this in-place op must be recorded; raises where PyTorch refuses it."""
    if not STATE.enabled:
        return False
    base = self._base if _graph_view(self) else None
    if not (self._requires_grad or _any_requires_grad(others) or (base is not None and base._requires_grad)):
        return False
    if self.grad_fn is None and self._requires_grad and base is None:
        raise RuntimeError(_LEAF_MSG)
    if base is not None and base.grad_fn is None and base._requires_grad:
        raise RuntimeError(_VIEW_OF_LEAF_MSG)
    return True


def validate(self: Tensor, arr, name: str) -> None:
    """Refuse a write PyTorch refuses (growing shape, lossy cast, overlapping memory) before
    anything changes."""
    data = self._data
    shape = tuple(getattr(arr, "shape", ()))
    if len(shape) > data.ndim or any(s not in (1, n) for s, n in zip(shape[::-1], data.shape[::-1])):
        raise RuntimeError(f"output with shape {list(data.shape)} doesn't match the broadcast shape "
                           f"{list(np.broadcast_shapes(shape, data.shape))}")
    src_dtype = getattr(arr, "dtype", None)
    if src_dtype is not None:
        check_result_cast(_dtypes.from_numpy(src_dtype), _dtypes.from_numpy(data.dtype))
    if not is_writeable(data):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def check_result_cast(result: _dtypes.dtype, target: _dtypes.dtype) -> None:
    """An in-place op may store its result only within its kind (float into int refused),
    as PyTorch decides; shared with static, whose traced in-place ops must refuse alike."""
    if not np.can_cast(result.np, target.np, "same_kind"):
        raise RuntimeError(f"result type {_dtypes.scalar_type_name(result)} can't be cast to the desired output "
                           f"type {_dtypes.scalar_type_name(target)}")


def write(self: Tensor, arr, name: str) -> None:
    """Copy arr into self's buffer (broadcasting, same-kind casting) and bump its version."""
    validate(self, arr, name)
    data = self._data
    if isinstance(data, np.ndarray):
        # a value beyond float16's range becomes inf silently, as in PyTorch (NumPy would warn)
        with np.errstate(over="ignore", invalid="ignore"):
            np.copyto(data, arr, casting="unsafe")
    else:
        cupy_module().copyto(data, arr, casting="unsafe")
    self._vc[0] += 1


def _rebase(t: Tensor, result: Tensor) -> None:
    t.grad_fn = result.grad_fn
    t._output_nr = result._output_nr
    if t._requires_grad != result._requires_grad:  # a compiled entry that captured t re-checks it
        _tensor.METADATA_VERSION[0] += 1
    t._requires_grad = result._requires_grad


def _commit(self: Tensor, result: Tensor, name: str) -> Tensor:
    """Store a recorded out-of-place result into self; self takes its history."""
    if _graph_view(self):
        return _commit_view(self, result, name)
    write(self, result._data, name)
    _rebase(self, result)
    if self._base is None:
        regenerate_views(self)
    return self


def _view_steps(view: tuple[ViewStep, ...]) -> tuple[tuple[str, tuple[tuple[str, Any], ...], int | None], ...]:
    """A view's steps from its base as replay_view takes them (op names, hashable attrs)."""
    return tuple((op.name, tuple(sorted(attrs.items())), k) for op, attrs, k in view)


def regenerate_views(base: Tensor, written: Tensor | None = None) -> None:
    """After a recorded write changed `base`'s history, give every live view of it (but the
    one written through, already rebased) the history of the same view taken of the base
    now: `y = x*1; z = y[1]; y.mul_(2)` then makes z's gradient flow through the mul, as
    PyTorch's regenerated grad_fn (AsStridedBackward0) does. Without this, z would keep the
    history it had before the write and its gradient would silently miss the write."""
    from gmops.views import replay_view  # noqa: PLC0415

    refs = base._views
    if not refs:
        return
    base._views = None  # the replays below register their temporary views here; dropped after
    live = []
    for ref in refs:
        view = ref()
        if view is None:
            continue
        live.append(ref)
        if view is written or view._view is None or view._base is not base:
            continue
        fresh = replay_view(base, _view_steps(view._view))
        F._renamed(fresh, "AsStridedBackward0")
        _rebase(view, fresh)
    base._views = live


def _commit_view(self: Tensor, result: Tensor, name: str) -> Tensor:
    """A write into a view: the base becomes `view_scatter(base, result)` (CopySlices) and the
    view is re-derived from the new base, so gradients flow through both, as in PyTorch."""
    from gmops.views import VIEW_SCATTER, replay_view  # noqa: PLC0415

    base, view = self._base, self._view
    if base is None or view is None:
        raise AssertionError("_commit_view: a view has a base and view steps")  # _commit's check
    _refuse_multi_output_view(view)
    validate(self, result._data, name)
    steps = _view_steps(view)
    new_base = VIEW_SCATTER(_snapshot(base, copy=False), result, steps=steps)
    write(self, result._data, name)
    _rebase(base, new_base)
    _rebase(self, replay_view(base, steps))
    regenerate_views(base, written=self)
    return self


def _refuse_multi_output_view(view: tuple[ViewStep, ...]) -> None:
    """PyTorch refuses a recorded in-place write into an output of an op that returns
    several views (split, chunk): their shared backward cannot take it. (unbind is made of
    selects here, so its outputs take writes as ordinary views.)"""
    for op, attrs, k in view:
        if k is not None:
            name = op.backward_name((), attrs).removesuffix("Backward0")
            raise RuntimeError(
                f"Output {k} of {name} is a view and is being modified inplace. This view is the output of a "
                "function that returns multiple views. Such functions do not allow the output views to be "
                "modified inplace. You should replace the inplace operation by an out-of-place one.")


def _snapshot(self: Tensor, copy: bool) -> Tensor:
    """The tensor as it is before the write, for the out-of-place op to read."""
    prev = Tensor._make(self._data.copy() if copy else self._data, self._requires_grad)
    prev.grad_fn = self.grad_fn
    prev._output_nr = self._output_nr
    if not copy:
        prev._vc = self._vc
    return prev


def apply_inplace(self: Tensor, fn, others, name: str, saves_self: bool = True, grad_name: str | None = None):
    """Run `fn(self_value, *others)` and store its result into self."""
    if _check(self, others):
        prev = _snapshot(self, copy=saves_self)
        result = fn(prev, *others)
        if not isinstance(result, Tensor):
            return hand_over(self, result)
        if grad_name is not None:
            F._renamed(result, grad_name)
        return _commit(self, result, name)
    with no_grad():
        result = fn(self, *others)
    if not isinstance(result, Tensor):
        return hand_over(self, result)
    write(self, result._data, name)
    return self


def hand_over(self: Tensor, result) -> Tensor:
    """The result is another tensor-like type (static's tracer, updating a tensor captured by
    a traced function): that type records the update; eager's buffer stays as it is."""
    handler = getattr(type(result), "__graphmode_inplace__", None)
    if handler is None:
        raise TypeError(f"in-place op produced {type(result).__name__}, not a Tensor")
    handler(self, result)
    return self


def assign(self: Tensor, others, recorded, raw, name: str) -> None:
    """`x[key] = v`: `recorded()` gives the functional result when the write is recorded;
    `raw()` writes directly otherwise."""
    if _check(self, others):
        result = recorded()
        if not isinstance(result, Tensor):
            hand_over(self, result)
            return
        _commit(self, result, name)
        return
    with np.errstate(over="ignore", invalid="ignore"):  # an out-of-range value casts silently
        raw()
    self._vc[0] += 1


def fill(self: Tensor, value, grad_name: str = "FillBackward0") -> Tensor:
    """Tensor.fill_ and zero_: set every element to `value` in place, still connected to the
    tensor's graph (the FILL op's gradient is zero)."""
    if isinstance(value, Tensor):  # a tensor's number is cast as a tensor (int8's 300 is 44), as PyTorch's
        value = value._data.astype(self._data.dtype).item() if type(value._data) is np.ndarray else value.item()
    return apply_inplace(self, lambda s: FILL(s, value=value), (), "fill_", saves_self=False, grad_name=grad_name)


def copy(self: Tensor, src) -> Tensor:
    """Tensor.copy_: write `src` (broadcast, cast to this dtype, moved to this device) into
    `self`, differentiably with respect to `src`."""
    if not isinstance(src, Tensor) and not hasattr(type(src), "__graphmode_inplace__"):  # (a traced value: recorded)
        from ._factories import tensor  # noqa: PLC0415

        src = tensor(src)
    if src.device != self.device:
        src = src.to(self.device)

    def value(s, source):
        out = F.expand(F.to_dtype(source, s.dtype), *s.shape)
        return E.CLONE(out) if out is source else out

    return apply_inplace(self, value, (src,), "copy_", saves_self=False, grad_name="CopyBackwards")


def check_fill_under_vmap() -> None:
    """Inside vmap an in-place fill of an unbatched tensor follows torch.func's randomness rule
    (eager._vmap.check_unbatched_fill); a batched tensor's fills are Batched's own methods."""
    from ._factories import random as _random  # noqa: PLC0415

    if _random.VMAP_DRAWS.rule is not None:
        from ._vmap import check_unbatched_fill  # noqa: PLC0415

        check_unbatched_fill()


def draw(self: Tensor, distribution: str, a: float, b: float, generator: Any = None) -> Tensor:
    """Tensor.uniform_ / normal_: fill in place with draws from `distribution` ("uniform" on
    [a, b), or "normal" of mean a and std b) of `generator` (eager.Generator; None: the default one);
    refused where PyTorch refuses a write."""
    from ._factories import _rng_array  # noqa: PLC0415

    _check(self, ())
    check_fill_under_vmap()
    drawn = _rng_array(distribution, self.shape, self.dtype, self.device, a, b, generator=generator)
    if _dispatch.current_modes():  # traced (static): the fill reads the draw, which each call makes anew
        return self.copy_(Tensor._make(drawn))
    write(self, drawn, f"{distribution}_")
    return self
