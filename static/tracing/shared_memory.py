"""Captured tensors that share memory: one functionalized value per piece of memory.

A traced function reaches eager tensors from outside (parameters, their `.grad`, optimizer
state, globals) and the tracer makes each an implicit input, updated in place by recording a
new value for it (`TraceState.latest`). Eager aliases of such a tensor are other Python
objects over the same memory: `p.grad.detach()`, `p.data`, a view taken before the call.
Keyed by object identity, each alias would become an input of its own, read from its own
buffer: a write through one would not be seen through another (`clip_grad_norm_` scales
`p.grad` by a norm read through `p.grad.detach()`), and the alias would even read the
buffer the trace saw rather than the one the call finds.

So an eager tensor about to be captured is first matched against the captured tensors
over the same memory (the root of its array's `.base` chain):
- the same layout (start, shape, strides, dtype): it *is* that tensor; it reads and writes
  that tensor's latest value and is never an input of its own;
- an eager view of a captured tensor (its view steps are known, `Tensor._view`): it reads
  the view made again from that tensor's latest value, and a write into it is a
  `view_scatter` into that tensor (PyTorch's CopySlices);
- any other overlap (a view whose steps are lost, two views of a tensor the function never
  reads, two leaves requiring grad over one buffer, each with its own gradient): it stays
  an input of its own while nothing in that memory is written; a write into such memory,
  or a read of such an alias after a write, is refused with a TraceError, never traced
  into a stale read."""
from __future__ import annotations

from typing import Any

import numpy as np

from eager._device import may_share_memory, xp_of_array
from eager._inplace import _view_steps
from eager._tensor import Tensor

from ..errors import TraceError


def _array(obj):
    return obj._data if isinstance(obj, Tensor) else obj


def root_array(data: Any) -> Any:
    """The array owning the memory of `data` (NumPy's and CuPy's `.base` chain)."""
    base = getattr(data, "base", None)
    while base is not None and type(base) is type(data):
        data, base = base, getattr(base, "base", None)
    return data


def layout(data: Any) -> tuple:
    """Where `data` starts, its shape, strides and dtype: equal layouts are the same tensor."""
    if hasattr(data, "__array_interface__"):
        return (data.__array_interface__["data"][0], data.shape, data.strides, data.dtype)
    return (data.data.ptr, data.shape, data.strides, data.dtype)


def _overlaps(a, b) -> bool:
    """Whether two arrays have an element in common (not just overlapping bounds: the columns
    of one matrix are disjoint). A case too hard to decide counts as overlapping."""
    if not may_share_memory(a, b):
        return False
    xp = xp_of_array(a)
    exact = getattr(xp, "shares_memory", None)
    if exact is None:
        return True
    try:
        return bool(exact(a, b, max_work=10_000))
    except Exception:  # noqa: BLE001  (numpy.exceptions.TooHardError: undecided within max_work)
        return True


class SharedMemory:
    """The aliasing bookkeeping of one trace (kept on its TraceState)."""

    __slots__ = ("members", "aliases", "by_target", "mixed", "written", "getters")

    def __init__(self) -> None:
        self.members: dict[int, list] = {}  # id(root array) -> captured inputs over that memory
        self.aliases: dict[int, tuple] = {}  # id(alias) -> (alias, tensor it views, view steps; () = all of it)
        self.by_target: dict[int, list] = {}  # id(tensor) -> the aliases that view it directly
        self.mixed: set[int] = set()  # roots holding captured inputs that overlap without a known relation
        self.written: set[int] = set()  # roots the trace wrote into
        self.getters: dict[int, Any] = {}  # id(tensor) -> how the user's code reads it (a name it owns)

    # -- reads --------------------------------------------------------------------------------
    def alias_entry(self, state, obj) -> tuple | None:
        """(alias, tensor it views, steps) when `obj` is to be read as a view of another captured
        tensor, else None (it is then captured as an input of its own; `note_captured`)."""
        entry = self.aliases.get(id(obj))
        if entry is not None or not _is_array(obj) or _grad_leaf(obj):  # a leaf requiring grad has its own .grad
            return entry
        data = _array(obj)
        target = None
        steps: tuple = ()
        base = obj._base if isinstance(obj, Tensor) else None
        if base is not None and layout(_array(base)) == layout(data):
            target = base  # a detach()/.data alias: the tensor it was made from is the caller's own
        else:
            root = root_array(data)
            members = self.members.get(id(root), ())
            for c in members:
                found = _steps_between(c, obj)
                if found is not None:
                    target, steps = c, found
                    break
            if target is None and base is not None and obj._view is not None and self.canonical(state, base):
                target, steps = base, _view_steps(obj._view)
            if target is None:
                if id(root) in self.written and any(_overlaps(_array(c), data) for c in members):
                    raise _unfollowable("reads")
                return None
        entry = (obj, target, steps)
        self._add_alias(state, entry)
        return entry

    def _add_alias(self, state, entry: tuple) -> None:
        obj, target = entry[0], entry[1]
        self.aliases[id(obj)] = entry
        self.by_target.setdefault(id(target), []).append(obj)
        named, target_named = self.getters.get(id(obj)), self.getters.get(id(target))
        if named is not None or target_named is not None:  # names the caller may rebind between calls
            state.guards.append(AliasGuard(obj, named, target, target_named, entry[2]))

    def canonical(self, state, obj) -> tuple | None:
        """(captured input, steps from it) that `obj` is a view of, or None when neither `obj`
        nor what it aliases is captured (yet)."""
        steps: tuple = ()
        entry = self.aliases.get(id(obj))
        while entry is not None:
            obj, steps = entry[1], entry[2] + steps
            entry = self.aliases.get(id(obj))
        return (obj, steps) if id(obj) in state.latest else None

    def note_captured(self, state, obj) -> None:
        """`obj` became an input of its own: remember the memory it covers. A captured input
        that is a known view of it is read through it from now on (it was not written: the
        values agree so far)."""
        if not _is_array(obj):
            return
        data = _array(obj)
        root = root_array(data)
        members = self.members.setdefault(id(root), [])
        for c in list(members):
            if not _overlaps(_array(c), data):
                continue
            if id(root) in self.written:
                raise _unfollowable("reads")
            found = None if _grad_leaf(c) else _steps_between(obj, c)
            if found is None:
                self.mixed.add(id(root))
                continue
            members.remove(c)
            self._add_alias(state, (c, obj, found))
        members.append(obj)  # (its array keeps the root alive: the root's id names it for the whole trace)

    # -- writes -------------------------------------------------------------------------------
    def before_write(self, obj) -> None:
        """A write into captured `obj` (after canonical()): refused where other objects over the
        same memory would not see it."""
        if not _is_array(obj):
            return
        root = id(root_array(_array(obj)))
        if root in self.mixed:
            raise _unfollowable("writes")
        self.written.add(root)

    def sharing(self, obj) -> list:
        """Every alias resolved to `obj`, directly or through another (their views must be made
        again after a write into `obj`)."""
        out: list = []
        todo = [obj]
        while todo:
            direct = self.by_target.get(id(todo.pop()), ())
            out += direct
            todo += direct
        return out


def _grad_leaf(obj) -> bool:
    """A leaf requiring grad (a Parameter): autograd tells it apart from another tensor over
    the same memory (`nn.Parameter(w.data)` gets its own gradient), so it is never read as an
    alias of one; two of them overlapping make the memory unfollowable for writes."""
    return isinstance(obj, Tensor) and obj._requires_grad and obj.grad_fn is None


def _steps_between(owner, obj) -> tuple | None:
    """The view steps that make `obj` from `owner` when eager recorded them (() when they
    are the same memory in the same layout), else None."""
    if layout(_array(owner)) == layout(_array(obj)):
        return ()
    if not isinstance(obj, Tensor) or obj._view is None or obj._base is None:
        return None
    steps = _view_steps(obj._view)
    if obj._base is owner:
        return steps
    if isinstance(owner, Tensor) and owner._base is obj._base and owner._view is not None:
        prefix = _view_steps(owner._view)  # two views of one base: obj a view of owner
        if steps[:len(prefix)] == prefix:
            return steps[len(prefix):]
    return None


def _is_array(obj) -> bool:
    data = _array(obj)
    if type(data) is np.ndarray:  # the common case, without hasattr's lookups
        return True
    return hasattr(data, "__array_interface__") or hasattr(data, "__cuda_array_interface__")


def _unfollowable(what: str) -> TraceError:
    from .state import user_location  # noqa: PLC0415

    return TraceError(
        f"{user_location()}: the function {what} a tensor that shares memory with another tensor it also uses "
        "(two views of one buffer made outside the function, or a detach() of a view), after or through an "
        "in-place write; static cannot tell which elements both see, so the result would be stale. Clone one "
        "of them before the call, or take the view inside the function.")


class AliasGuard:
    """An alias resolved to a captured tensor where the function reads either by a name (a
    global `g = w.detach()`): the graph reads the captured tensor in its place, so a call must
    find the two still aliased the same way; otherwise it retraces."""

    def __init__(self, alias, alias_read, target, target_read, steps: tuple) -> None:
        self.alias, self.alias_read = alias, alias_read
        self.target, self.target_read = target, target_read
        self.steps = steps
        self.what = "a tensor sharing memory with another captured tensor"

    def changed(self) -> str | None:
        try:
            alias = self.alias if self.alias_read is None else self.alias_read()
            target = self.target if self.target_read is None else self.target_read()
        except Exception:  # noqa: BLE001  (a name went away)
            return f"{self.what} is no longer bound"
        if not (_is_array(alias) and _is_array(target)):
            return f"{self.what} is no longer a tensor"
        a, t = _array(alias), _array(target)
        if self.steps:
            from gmops.views import _replay_array  # noqa: PLC0415

            try:
                t = _replay_array(xp_of_array(t), t, self.steps)
            except Exception:  # noqa: BLE001  (the other tensor changed shape: not the same view)
                return f"{self.what} no longer shares it"
        if layout(a) == layout(t):
            return None
        return f"{self.what} no longer shares it (one of them was rebound)"
