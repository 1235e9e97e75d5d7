"""The `out=` keyword of torch-level functions (`torch.matmul(a, b, out=c)`, the tensors
tutorial's spelling): the function runs as usual and its result is written into `out`,
which is returned. As PyTorch's: `out` is resized (with PyTorch's warning when it held
elements), the result is cast to out's dtype where that is a safe cast (float into an
integer `out` is refused), and autograd is refused when anything needs a gradient.
Only the `eager.<name>` op functions take it; Tensor methods are the unwrapped ones."""
from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable
from typing import Any

from gmbase import signatures

from . import _surface
from ._grad_mode import STATE, no_grad
from ._tensor import Tensor

_KIND = {"b": 0, "u": 1, "i": 1, "f": 2}


def _write(name: str, result: Any, out: Any) -> Any:
    if isinstance(out, (tuple, list)):  # (values, indices) results
        if not isinstance(result, tuple) or len(result) != len(out):
            raise TypeError(f"{name}(): out= must be a tuple of {len(result) if isinstance(result, tuple) else 1} tensors")
        for r, o in zip(result, out):
            _write(name, r, o)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}(): got out=, but the result is a {type(result).__name__}, not a tensor")
    if _KIND[result.dtype.np.kind] > _KIND[out.dtype.np.kind]:
        raise RuntimeError(f"result type {result.dtype.name.capitalize()} can't be cast to the desired output type "
                           f"{out.dtype.name.capitalize()}")
    with no_grad():
        if tuple(out.shape) != tuple(result.shape):
            if out.numel() != 0:
                warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                              f"which does not match the required output shape {list(result.shape)}. This behavior is "
                              "deprecated, and in a future PyTorch release outputs will not be resized unless they "
                              "have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
                              "to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
            out.data = result.to(out.dtype)
        else:
            out.copy_(result)
    return out


def _slow_path(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
    """A call given `out=`: refused under autograd, else the result written into `out`."""
    if STATE.enabled:
        needs = any(isinstance(a, Tensor) and a.requires_grad for a in (*args, *kwargs.values()))
        if needs or any(isinstance(o, Tensor) and o.requires_grad
                        for o in (out if isinstance(out, (tuple, list)) else (out,))):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
    return _write(name, fn(*args, **kwargs), out)


def _generic(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """The wrapper for a function whose own signature cannot be spelled again (a builtin)."""

    def function(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        return _slow_path(name, fn, args, kwargs, out)

    return function


def _exact(fn: Callable[..., Any], name: str) -> Callable[..., Any] | None:
    """A wrapper with `fn`'s own parameters plus a keyword-only `out=None`
    (gmbase.signatures), so that a call without `out` passes its arguments straight on
    rather than through `*args, **kwargs` (about 0.3 us of an eager op's 1-2); None when
    the parameters cannot be spelled again."""
    body = ("    if out is None:\n"
            "        return _fn({call})\n"
            "    return _slow_path(_name, _fn, {args}, {kwargs}, out)\n")
    return signatures.wrapper(fn, name, body, {"_slow_path": _slow_path, "_name": name}, keyword_only="out",
                              filename=signatures.code_name(__file__, name))


def with_out(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` also taking `out=`: a call without it is `fn`'s own call with one Python frame
    more (see _exact)."""
    name = getattr(fn, "__name__", "function")
    if not name.isidentifier():
        name = "function"
    function = _exact(fn, name) or _generic(fn, name)
    return functools.update_wrapper(function, fn)


def install(namespace: dict[str, Any]) -> None:
    """Give `out=` to each op function of `namespace` (eager's module globals): the public
    functions of the functional surface (eager._functional, eager._compositions and the ones
    op records make, eager._surface), where
    PyTorch's ops take it. Functions with a parameter of that name already are left alone."""
    made: dict[int, Callable[..., Any]] = {}  # one wrapper per function: aliases stay one object (fix is trunc)
    for name, fn in list(namespace.items()):
        if name.startswith("_") or not isinstance(fn, types.FunctionType):
            continue
        made_by_surface = fn.__code__.co_filename == _surface.__file__  # (named "eager" by their record)
        if not (fn.__module__.startswith(_OP_MODULES) or made_by_surface) or "out" in inspect.signature(fn).parameters:
            continue
        wrapped = made.get(id(fn))
        if wrapped is None:
            wrapped = made[id(fn)] = with_out(fn)
        namespace[name] = wrapped


_OP_MODULES = ("eager._functional", "eager._compositions", "eager._conveniences")
