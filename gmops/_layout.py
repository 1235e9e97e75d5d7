"""Memory layouts as PyTorch makes them: which strides an op's result has.

PyTorch users read layouts back (`is_contiguous()`, `stride()`) and depend on them: the
attention idiom `y.transpose(1, 2).contiguous().view(B, T, C)` works only when
`contiguous()` is row-major and `view` sees it. NumPy's choices differ (a copy keeps the
source's 'K' order, advanced indexing and some kernels pick other orders), so the op record
says which rule its result follows (`OpDef.layout`) and the registry applies it once:

- "view": the result aliases operand 0 with the strides the view implies (transpose, slices);
- "elementwise": the result follows its operands' memory order (NumPy's ufuncs already do,
  as PyTorch's TensorIterator does); forwards that are not one ufunc use `like`;
- "contiguous": a new row-major tensor (cat, stack, scans, softmax, gather, scatter,
  advanced indexing, einsum: PyTorch allocates these with the default contiguous format);
- "preserve": the first operand's memory order (flip);
- "column_major": LAPACK's order of the last two dims (inv, solve), as torch.linalg returns them.

`tests/eager/test_layouts.py` compares every registry op's result strides with PyTorch's.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gmbase import signatures

LAYOUTS = ("view", "elementwise", "contiguous", "preserve", "column_major")


def is_dense(a: Any) -> bool:
    """Whether `a` covers its memory exactly once with no gaps (some permutation of its dims
    is row-major): PyTorch's "non-overlapping and dense", which clone and empty_like keep."""
    flags = a.flags
    if flags.c_contiguous or flags.f_contiguous:
        return True
    dims = sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for stride, n in dims:
        if stride != expected:
            return False
        expected *= n
    return True


def dense_strides_like(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a dense tensor of `shape` whose dims are ordered as `strides`
    order them: PyTorch's infer_dense_strides (what empty_like and clone give a layout that
    is not dense). A stride-0 (expanded) dim compares with nothing, so it keeps its place
    in row-major order, where NumPy's 'K' order moves it innermost."""
    return strides_like(shape, [strides])


def strides_like(shape: tuple[int, ...], operands: list[tuple[int, ...]]) -> tuple[int, ...]:
    """Dense element strides for a result of `shape` computed from operands with these
    strides (each as long as shape, 0 where an operand does not vary along a dim): the dims
    ordered as PyTorch's TensorIterator orders them, asking the operands in turn and the
    next one where a stride is 0 (ambiguous)."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))  # perm[0]: the innermost dim

    def should_swap(d0: int, d1: int) -> int:
        for strides in operands:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = [0] * ndim
    step = 1
    for d in perm:
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


def empty_like(xp: Any, a: Any, dtype: Any = None) -> Any:
    """An uninitialised array of `a`'s shape in PyTorch's preserve_format: a dense layout
    keeps its strides; any other (gaps, expanded dims) gets dense strides in `a`'s order."""
    dtype = a.dtype if dtype is None else dtype
    if a.flags.c_contiguous or a.ndim < 2:
        return xp.empty(a.shape, dtype=dtype)
    if is_dense(a) and all(s > 0 for s in a.strides):
        return xp.empty_like(a, dtype=dtype)  # 'K': the same strides
    itemsize = np.dtype(dtype).itemsize
    strides = dense_strides_like(a.shape, tuple(s // a.itemsize for s in a.strides))
    flat = xp.empty(max(a.size, 1), dtype=dtype)
    return xp.lib.stride_tricks.as_strided(flat, shape=a.shape, strides=tuple(s * itemsize for s in strides))


def copy_preserving(xp: Any, a: Any) -> Any:
    """A copy with PyTorch's preserve_format (clone, full_like): see empty_like."""
    if a.flags.c_contiguous or a.ndim < 2:
        return xp.array(a, copy=True)
    out = empty_like(xp, a)
    out[...] = a
    return out


def channels_last_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of (N, C, *spatial) with C innermost (torch.channels_last for 4-D,
    channels_last_3d for 5-D)."""
    strides = [0] * len(shape)
    step = 1
    for d in [1, *range(len(shape) - 1, 1, -1), 0]:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def has_strides(a: Any, strides: tuple[int, ...]) -> bool:
    """Whether `a` has these element strides on every dim longer than one (PyTorch's
    contiguity checks skip length-1 dims, whose stride never matters)."""
    return all(n <= 1 or s == e * a.itemsize for s, e, n in zip(a.strides, strides, a.shape))


def copy_as(xp: Any, a: Any, memory_format: str | None = None) -> Any:
    """A copy of `a` in the given layout: "preserve_format" (clone's default), "contiguous_format",
    "channels_last" (4-D) or "channels_last_3d" (5-D)."""
    if memory_format in (None, "preserve_format"):
        return copy_preserving(xp, a)
    if memory_format == "contiguous_format":
        return xp.array(a, copy=True, order="C")
    want = {"channels_last": 4, "channels_last_3d": 5}.get(memory_format)
    if want is None:
        raise ValueError(f"unknown memory format {memory_format!r}")
    if a.ndim != want:
        raise RuntimeError(f"required rank {want} tensor to use {memory_format} format (got shape {tuple(a.shape)})")
    out = xp.lib.stride_tricks.as_strided(xp.empty(max(a.size, 1), dtype=a.dtype), shape=a.shape,
                                          strides=tuple(s * a.itemsize for s in channels_last_strides(a.shape)))
    out[...] = a
    return out


def contiguous(xp: Any, a: Any) -> Any:
    """`a` itself when row-major, else a row-major copy."""
    return a if a.flags.c_contiguous else xp.ascontiguousarray(a)


def like(xp: Any, x: Any, out: Any) -> Any:
    """`out` (computed by a kernel that writes row-major) laid out in `x`'s memory order, as
    an elementwise op's result is in PyTorch; `out` itself when that is already the case."""
    if x.flags.c_contiguous or out.shape != x.shape or not hasattr(out, "flags") or x.ndim < 2:
        return out
    if sorted(range(x.ndim), key=lambda d: -abs(x.strides[d])) == sorted(range(out.ndim),
                                                                          key=lambda d: -abs(out.strides[d])):
        return out
    dense = empty_like(xp, x, out.dtype)
    dense[...] = out
    return dense


def _column_major(xp: Any, a: Any) -> Any:
    if a.ndim < 2 or a.flags.f_contiguous and a.ndim == 2:
        return a
    return xp.ascontiguousarray(xp.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def _each(fix: Callable[[Any, Any], Any], xp: Any, out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(_each(fix, xp, o) for o in out)
    if isinstance(out, list):
        return [_each(fix, xp, o) for o in out]
    return fix(xp, out) if hasattr(out, "flags") else out


_CONTIGUOUS_BODY = """\
    out = _fn({call})
    if type(out) is _ndarray and out.flags.c_contiguous:
        return out
    return _each(contiguous, {first}, out)
"""

_COLUMN_MAJOR_BODY = """\
    return _each(_column_major, {first}, _fn({call}))
"""


def with_layout(forward: Callable[..., Any], layout: str) -> Callable[..., Any]:
    """`forward` whose results follow `layout` ("contiguous" or "column_major"); the other
    layouts are the forward's own job and return it unchanged. The wrapper takes the
    forward's own parameters (gmbase.signatures: no `*args, **kwargs` packing per call, and a
    row-major NumPy result, the common case, returns after one type and one flag test)."""
    if getattr(forward, "layout", None) == layout:  # (a record made again from one, dataclasses.replace)
        return forward
    if layout in ("contiguous", "column_major"):
        body = _CONTIGUOUS_BODY if layout == "contiguous" else _COLUMN_MAJOR_BODY
        name = f"{layout}_forward"
        namespace: dict[str, Any] = {"_ndarray": np.ndarray, "_each": _each, "contiguous": contiguous,
                                     "_column_major": _column_major}
        wrapped = signatures.wrapper(forward, name, body, namespace, filename=signatures.code_name(__file__, name))
        if wrapped is None:
            wrapped = _generic_layout(forward, layout)
        wrapped.__wrapped__ = forward  # type: ignore[attr-defined]
        wrapped.layout = layout  # type: ignore[attr-defined]
        return wrapped
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: expected one of {LAYOUTS}")
    return forward


def _generic_layout(forward: Callable[..., Any], layout: str) -> Callable[..., Any]:
    """with_layout's wrapper for a forward whose parameters cannot be spelled again."""
    if layout == "contiguous":
        def contiguous_forward(xp: Any, *operands: Any, **attrs: Any) -> Any:
            out = forward(xp, *operands, **attrs)
            flags = getattr(out, "flags", None)
            if flags is not None and flags.c_contiguous:
                return out
            return _each(contiguous, xp, out)

        return contiguous_forward

    def column_major_forward(xp: Any, *operands: Any, **attrs: Any) -> Any:
        return _each(_column_major, xp, forward(xp, *operands, **attrs))

    return column_major_forward
