"""Ops that move, view or select elements: reshape, transpose, expand, indexing, cat..."""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative import index_kernels as _index_kernels

from . import _layout
from ._checks import fit_scalar, norm_dim, numel, same_dtype
from ._layout import copy_preserving
from ._registry import VARIADIC, OpDef, TensorSpec, defop


def _any(*shapes, **attrs):
    return lambda rng: [(tuple(rng.standard_normal(s) for s in shapes), attrs)]


# -- reshape and friends ---------------------------------------------------------------------
def _reshape_abstract(x, shape):
    if numel(shape) != numel(x.shape) or any(n < 0 for n in shape):
        raise RuntimeError(f"reshape: shape '{list(shape)}' is invalid for input of size {numel(x.shape)} "
                           f"(input shape {tuple(x.shape)})")
    return TensorSpec(tuple(shape), x.dtype)


RESHAPE: OpDef = defop(
    "reshape", forward=lambda xp, x, shape: xp.reshape(x, shape), abstract=_reshape_abstract,
    vjp=lambda ctx, g: (RESHAPE(g, shape=ctx.in_shape(0)),), grad_name="ViewBackward0",
    kind="shape", is_view=True, samples=_any((3, 4), shape=(2, 6)),
)


def _transpose_abstract(x, dim0, dim1):
    if x.ndim == 0:
        return x  # PyTorch: a 0-d tensor transposes (dims 0 / -1) to itself
    shape = list(x.shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return TensorSpec(tuple(shape), x.dtype)


TRANSPOSE: OpDef = defop(
    "transpose", forward=lambda xp, x, dim0, dim1: xp.swapaxes(x, dim0, dim1) if x.ndim else x[...],
    abstract=_transpose_abstract,
    vjp=lambda ctx, g: (TRANSPOSE(g, dim0=ctx.attrs["dim0"], dim1=ctx.attrs["dim1"]),),
    grad_name="TransposeBackward0", kind="shape", is_view=True,
    samples=_any((2, 3, 4), dim0=0, dim1=2),
)


def _permute_abstract(x, dims):
    if sorted(dims) != list(range(x.ndim)):
        raise RuntimeError(f"permute: number of dims don't match in permute (dims {tuple(dims)} "
                           f"for a tensor of shape {tuple(x.shape)})")
    return TensorSpec(tuple(x.shape[d] for d in dims), x.dtype)


def _inverse_permutation(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


PERMUTE: OpDef = defop(
    "permute", forward=lambda xp, x, dims: xp.transpose(x, dims), abstract=_permute_abstract,
    vjp=lambda ctx, g: (PERMUTE(g, dims=_inverse_permutation(ctx.attrs["dims"])),),
    grad_name="PermuteBackward0", kind="shape", is_view=True,
    samples=_any((2, 3, 4), dims=(2, 0, 1)),
)


def _expand_abstract(x, shape):
    lead = len(shape) - x.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to the "
            f"number of dimensions in the tensor ({x.ndim})")
    for i, n in enumerate(x.shape):
        if n != 1 and n != shape[lead + i]:
            raise RuntimeError(
                f"expand: The expanded size of the tensor ({shape[lead + i]}) must match the existing size "
                f"({n}) at non-singleton dimension {lead + i}.  Target sizes: {list(shape)}.  "
                f"Tensor sizes: {list(x.shape)}")
    return TensorSpec(tuple(shape), x.dtype)


EXPAND = defop(
    "expand", forward=lambda xp, x, shape: xp.broadcast_to(x, shape), abstract=_expand_abstract,
    vjp=lambda ctx, g: (g,),  # fit_grad sums the broadcast dimensions away
    grad_name="ExpandBackward0", kind="shape", is_view=True, samples=_any((3, 1), shape=(2, 3, 4)),
)


def _squeeze_abstract(x, dims=None):
    if dims is None:
        return TensorSpec(tuple(n for n in x.shape if n != 1), x.dtype)
    return TensorSpec(tuple(n for i, n in enumerate(x.shape) if not (i in dims and n == 1)), x.dtype)


def _squeeze(xp, x, dims=None):
    axes = tuple(i for i, n in enumerate(x.shape) if n == 1 and (dims is None or i in dims))
    return xp.squeeze(x, axis=axes) if axes else x.view() if hasattr(x, "view") else x


SQUEEZE = defop(
    "squeeze", forward=_squeeze, abstract=_squeeze_abstract,
    vjp=lambda ctx, g: (RESHAPE(g, shape=ctx.in_shape(0)),),
    grad_name=lambda operands, attrs: "SqueezeBackward0" if attrs.get("dims") is None else "SqueezeBackward1",
    kind="shape", is_view=True, samples=lambda rng: [((rng.standard_normal((3, 1, 4, 1)),), {"dims": None}),
                                                     ((rng.standard_normal((3, 1, 4, 1)),), {"dims": (1,)})],
)
UNSQUEEZE = defop(
    "unsqueeze", forward=lambda xp, x, dim: xp.expand_dims(x, dim),
    abstract=lambda x, dim: TensorSpec(x.shape[:dim] + (1,) + x.shape[dim:], x.dtype),
    vjp=lambda ctx, g: (RESHAPE(g, shape=ctx.in_shape(0)),),
    grad_name="UnsqueezeBackward0", kind="shape", is_view=True, samples=_any((3, 4), dim=1),
)


# -- indexing --------------------------------------------------------------------------------
# A key is a tuple of entries: ("int", i), ("slice", start, stop, step), ("none",),
# ("ellipsis",), or ("tensor", k) for the k-th index operand (integer or bool array).
def build_key(key, index_arrays):
    parts = []
    for entry in key:
        tag = entry[0]
        if tag == "int":
            parts.append(entry[1])
        elif tag == "slice":
            parts.append(slice(entry[1], entry[2], entry[3]))
        elif tag == "none":
            parts.append(None)
        elif tag == "ellipsis":
            parts.append(Ellipsis)
        else:
            parts.append(index_arrays[entry[1]])
    return tuple(parts)


def is_basic_key(key) -> bool:
    return all(entry[0] != "tensor" for entry in key)


def _is_symbolic(v) -> bool:
    return type(v) is not int and isinstance(v, int) and not isinstance(v, bool)


def _slice_length(start, stop, step, n):
    """len(range(n)[start:stop:step]). A prefix slice `[:stop]` where the size or the stop is
    a symbolic size (static's SymInt: a compiled function's dynamic dimension) keeps it a
    symbol; the comparison that picks it is then a guard of the compiled function."""
    if (_is_symbolic(stop) or _is_symbolic(n)) and step in (None, 1) and start in (None, 0) \
            and (stop is None or stop >= 0):
        if stop is None:
            return n
        if _is_symbolic(stop) and not _is_symbolic(n):  # x[:T] of a buffer of n rows: T while T <= n
            return stop if stop <= n else n
        return n if stop >= n else stop
    return len(range(*slice(start, stop, step).indices(n)))


def _index_abstract(x, *index_specs, key):
    _check_masks(x.shape, key, {i: s.shape for i, s in enumerate(index_specs) if s.dtype is _dtypes.bool_})
    for s in index_specs:
        if s.dtype is _dtypes.bool_:
            raise ValueError("index: a boolean mask gives a shape that depends on the data")
        if s.dtype.is_floating_point:
            raise IndexError("index: tensors used as indices must be long, int, byte or bool tensors")
    try:
        shape = index_shape(tuple(x.shape), key, [tuple(s.shape) for s in index_specs])
    except IndexError as e:
        raise IndexError(f"index: {e} (indexing a tensor of shape {tuple(x.shape)})") from None
    return TensorSpec(shape, x.dtype)


def index_shape(shape: tuple, key, index_shapes: list) -> tuple:
    """NumPy's result shape of `x[build_key(key, arrays)]` from shapes alone: an abstract
    rule must not materialize the (possibly huge) index arrays or result to learn it.
    Advanced indices (tensors, and ints when a tensor is present) broadcast together; their
    dims replace theirs in place when adjacent in the key, else they come first."""
    entries: list[tuple[Any, ...]] = []  # ('int', i), ('slice', start, stop, step), ('gap',), ...
    n_ellipsis = 0
    consuming = sum(1 for e in key if e[0] in ("int", "slice", "tensor"))
    if consuming > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {consuming} were indexed")
    for e in key:
        if e[0] == "ellipsis":
            n_ellipsis += 1
            if n_ellipsis > 1:
                raise IndexError("an index can only have a single ellipsis ('...')")
            entries.append(("gap",))  # even an empty ellipsis separates advanced indices
            entries += [("slice", None, None, None)] * (len(shape) - consuming)
        else:
            entries.append(e)
    if not n_ellipsis:
        entries += [("slice", None, None, None)] * (len(shape) - consuming)
    tensors = [index_shapes[e[1]] for e in entries if e[0] == "tensor"]
    try:
        advanced_shape = np.broadcast_shapes(*tensors) if tensors else ()
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(t) for t in tensors)) from None
    advanced_size = math.prod(advanced_shape)
    out, advanced_at, dim = [], [], 0
    for pos, e in enumerate(entries):
        tag = e[0]
        if tag == "gap":
            continue
        if tag == "none":
            out.append(1)
            continue
        n = shape[dim]
        if tag == "int":
            i = operator.index(e[1])
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            if tensors:
                advanced_at.append((pos, len(out)))
        elif tag == "slice":
            out.append(_slice_length(e[1], e[2], e[3], n))
        elif tag == "tensor":
            if n == 0 and (advanced_size or not index_shapes[e[1]]):  # a 0-d index is an int
                raise IndexError(f"index 0 is out of bounds for axis {dim} with size 0")
            advanced_at.append((pos, len(out)))
        else:
            raise IndexError(f"unknown index entry {e!r}")
        dim += 1
    if not tensors:
        return tuple(out)
    positions = [p for p, _ in advanced_at]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    at = advanced_at[0][1] if adjacent else 0
    return tuple(out[:at]) + tuple(advanced_shape) + tuple(out[at:])


_GRAD_NAMES: dict = {}  # (key, input shape) -> the node's name (a few patterns recur)


def _index_grad_name(operands, attrs):
    """PyTorch's name for x[key]'s node: that of the last step its indexing applies, left to
    right (an int selects, None unsqueezes, a slice slices unless it keeps the whole dim,
    which PyTorch skips; nothing applied is an alias); any tensor index makes it an index."""
    key = attrs["key"]
    shape = getattr(operands[0], "shape", None) if operands else None
    try:
        memo = (key, tuple(shape)) if shape is not None else None
        name = _GRAD_NAMES.get(memo) if memo is not None else None
    except TypeError:  # (an unhashable symbolic size)
        memo = name = None
    if name is None:
        name = _last_step_name(key, shape)
        if memo is not None and len(_GRAD_NAMES) < 4096:
            _GRAD_NAMES[memo] = name
    return name


def _last_step_name(key, shape) -> str:
    if any(e[0] == "tensor" for e in key):
        return "IndexBackward0"
    last = "AliasBackward0"
    consuming = sum(1 for e in key if e[0] in ("int", "slice"))
    dim = 0
    for e in key:
        tag = e[0]
        if tag == "int":
            last = "SelectBackward0"
            dim += 1
        elif tag == "slice":
            start, stop, step = e[1:]
            n = shape[dim] if shape is not None and dim < len(shape) else None
            # (PyTorch compares the start as given, the stop clamped to the size; a symbolic
            # size or bound is never compared here: a comparison would guard a compiled trace)
            whole = (type(n) is int and start in (None, 0) and type(start) is not bool and step in (None, 1)
                     and (stop is None or (type(stop) is int and stop >= n)))
            if not whole:
                last = "SliceBackward0"
            dim += 1
        elif tag == "none":
            last = "UnsqueezeBackward0"
        elif tag == "ellipsis" and shape is not None:
            dim += len(shape) - consuming
    return last


def _check_masks(shape: tuple, key, masks: dict) -> None:
    """A boolean mask must match the dims it covers, or PyTorch raises IndexError (NumPy's
    message would not say which dims). `masks`: index operand position -> the mask's shape,
    for the boolean index operands."""
    if not masks:
        return
    consumed = [0 if e[0] in ("none", "ellipsis") else len(masks[e[1]]) if e[0] == "tensor" and e[1] in masks else 1
                for e in key]
    dim = 0
    for entry, n in zip(key, consumed):
        if entry[0] == "ellipsis":
            dim += len(shape) - sum(consumed)
            continue
        if entry[0] == "tensor" and entry[1] in masks:
            for j, m in enumerate(masks[entry[1]]):
                if dim + j < len(shape) and m != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(masks[entry[1]])} at index {j} does not match the "
                                     f"shape of the indexed tensor {list(shape)} at index {dim + j}")
        dim += n


_BASIC_KEYS: dict = {}  # a basic key -> its NumPy subscript (x[:, t] for each t of a loop recurs)


def _index_forward(xp, x, *index_arrays, key):
    if len(key) == 1 and key[0][0] == "tensor" and index_arrays[0].dtype.kind == "i" and x.flags.c_contiguous:
        # x[idx] with one integer array (minibatch rows, an embedding lookup): NumPy's result
        # is then laid out as PyTorch's (row-major); no masks to check, no key to build
        out = x[index_arrays[0]]
        return out if out.flags.c_contiguous else xp.ascontiguousarray(out)
    if not index_arrays:
        k = _BASIC_KEYS.get(key)
        if k is None:
            k = build_key(key, ())
            if Ellipsis not in k:
                k = k + (Ellipsis,)  # basic indexing then always gives a view, even of one element
            if len(_BASIC_KEYS) < 4096 and all(type(v) is int or v is None for e in key for v in e[1:]):
                _BASIC_KEYS[key] = k  # (a symbolic size is never kept)
        return x[k]
    _check_masks(x.shape, key, {i: a.shape for i, a in enumerate(index_arrays) if a.dtype.kind == "b"})
    k = build_key(key, index_arrays)
    # integer-array and mask indexing copy into a new tensor laid out as PyTorch's index
    # kernel lays it out (NumPy's result may take another order, e.g. x[..., idx])
    out = x[k]
    strides = None if x.flags.c_contiguous else _advanced_index_strides(x, key, index_arrays, out.shape)
    if strides is None:
        return out if out.flags.c_contiguous else xp.ascontiguousarray(out)
    laid = xp.lib.stride_tricks.as_strided(xp.empty(max(out.size, 1), dtype=out.dtype), out.shape,
                                           tuple(s * out.itemsize for s in strides))
    laid[...] = out
    return laid


def _advanced_index_strides(x, key, index_arrays, out_shape):
    """The result strides PyTorch's index kernel gives x[key] for a non-contiguous x: its
    TensorIterator orders the result's dims by x's strides (the dims the indices replace count
    as stride 0 there), then by the index tensors'. Keys of slices, an ellipsis and integer
    tensors are handled; any other (ints, None, masks) gives None (row-major)."""
    entries = list(key)
    if any(e[0] not in ("slice", "ellipsis", "tensor") for e in entries):
        return None
    if any(index_arrays[e[1]].dtype.kind == "b" for e in entries if e[0] == "tensor"):
        return None
    if sum(e[0] == "ellipsis" for e in entries) > 1:
        return None
    n_explicit = sum(e[0] != "ellipsis" for e in entries)
    full = []
    for e in entries:
        if e[0] == "ellipsis":
            full += [("slice", None, None, None)] * (x.ndim - n_explicit)
        else:
            full.append(e)
    full += [("slice", None, None, None)] * (x.ndim - len(full))
    advanced = [d for d, e in enumerate(full) if e[0] == "tensor"]
    block = np.broadcast_shapes(*(index_arrays[full[d][1]].shape for d in advanced))
    sliced = x[tuple(slice(*e[1:]) if e[0] == "slice" else slice(None) for e in full)]
    rest = [d for d in range(x.ndim) if d not in advanced]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    at = advanced[0] if adjacent else 0
    self_strides = [sliced.strides[d] // x.itemsize for d in rest]
    self_strides[at:at] = [0] * len(block)
    index_strides = [0] * len(rest)
    block_strides: list[int] = []
    step = 1
    for n in reversed(block):
        block_strides.insert(0, step)
        step *= max(n, 1)
    index_strides[at:at] = block_strides
    if len(self_strides) != len(out_shape):
        return None
    return _layout.strides_like(tuple(out_shape), [tuple(self_strides), tuple(index_strides)])


def _index_vjp(ctx, g):
    idx = [ctx.input(k) for k in range(1, 1 + ctx.attrs["n_index"])]
    # n_index: INDEX_GRAD's own VJP (double backward) reads the index operands back with it
    return (INDEX_GRAD(g, *idx, key=ctx.attrs["key"], shape=ctx.in_shape(0), n_index=len(idx)),) + (None,) * len(idx)


INDEX = defop(
    "index", forward=lambda xp, x, *idx, key, n_index=0: _index_forward(xp, x, *idx, key=key),
    abstract=lambda x, *idx, key, n_index=0: _index_abstract(x, *idx, key=key),
    vjp=_index_vjp, grad_name=_index_grad_name, kind="index",
    is_view=True,  # basic indexing aliases its operand; integer-array and mask indexing copy
    save=(1, 2, 3, 4, 5, 6, 7, 8),
    samples=lambda rng: [
        ((rng.standard_normal((4, 5)),), {"key": (("int", 1),), "n_index": 0}),
        ((rng.standard_normal((4, 5)),), {"key": (("slice", 1, None, 2), ("none",), ("int", -1)), "n_index": 0}),
        ((rng.standard_normal((4, 5)), np.array([0, 2, 2])), {"key": (("ellipsis",), ("tensor", 0)), "n_index": 1}),
    ],
    arity=VARIADIC,
)


def _index_grad(xp, g, *index_arrays, key, shape, n_index=0):
    if len(key) == 1 and key[0][0] == "tensor" and index_arrays[0].dtype.kind == "i" and index_arrays[0].ndim:
        # x[idx]'s gradient (minibatch rows, C[xi]): rows of g summed into the rows they were
        # read from, in one native pass (embedding's kernel: add.at's order, far cheaper)
        found = _rows_grad(xp, g, index_arrays[0], shape)
        if found is not None:
            return found
    out = xp.zeros(shape, dtype=g.dtype)
    k = build_key(key, index_arrays)
    if index_arrays:
        if xp is np:
            np.add.at(out, k, g)
        else:
            import cupyx  # noqa: PLC0415

            cupyx.scatter_add(out, k, g)
    else:
        out[k] = g
    return out


def _rows_grad(xp, g, idx, shape):
    """g's rows (one per index, each of shape[1:]) added into zeros of `shape` at the rows
    `idx` names (negative ones counted from the end), by gmnative's row kernel; None where it
    does not run (and for an index out of range: the NumPy code raises)."""
    if xp is not np or type(g) is not np.ndarray or not g.size:
        return None
    rows = np.ascontiguousarray(g.reshape(idx.size, -1))  # (a broadcast gradient, x.sum()'s: copied)
    found = _index_kernels.rows_add(rows, idx.reshape(-1), shape[0]) if rows.shape[1] else None
    return None if found is None else found.reshape(shape)


INDEX_GRAD = defop(
    "index_grad", forward=_index_grad,
    abstract=lambda g, *idx, key, shape, n_index=0: TensorSpec(tuple(shape), g.dtype),
    vjp=lambda ctx, g: (INDEX(g, *[ctx.input(k) for k in range(1, 1 + ctx.attrs.get("n_index", 0))],
                              key=ctx.attrs["key"], n_index=ctx.attrs.get("n_index", 0)),)
    + (None,) * ctx.attrs.get("n_index", 0),
    grad_name="IndexBackwardBackward0", kind="index", save=(1, 2, 3, 4, 5, 6, 7, 8),
    samples=lambda rng: [((rng.standard_normal((3,)), np.array([0, 2, 2])),
                          {"key": (("tensor", 0),), "shape": (4,), "n_index": 1})],
    doc="scatter-add of an index's gradient into zeros of the indexed tensor's shape",
    arity=VARIADIC,
)


def _index_put(xp, x, v, *index_arrays, key, n_index=0):
    out = copy_preserving(xp, x)  # x's memory order, as PyTorch's index_put (a clone, then a write)
    out[build_key(key, index_arrays)] = v if hasattr(v, "dtype") else fit_put_value(v, _dtypes.from_numpy(out.dtype))
    return out


def fit_put_value(v: Any, dt: _dtypes.dtype) -> Any:
    """A number written by x[key] = v as x's dtype stores it, or PyTorch's overflow error
    (fit_scalar); a float16 tensor takes any number unchecked, inf beyond its range, as PyTorch's."""
    return v if dt is _dtypes.float16 else fit_scalar("index_put", v, dt)


def _index_put_abstract(x, v, *idx, key, n_index=0):
    if not isinstance(v, TensorSpec):
        fit_put_value(v, x.dtype)  # a number x's dtype cannot hold raises at trace time too
    return TensorSpec(x.shape, x.dtype)


def _index_put_vjp(ctx, g):
    n = ctx.attrs["n_index"]
    idx = [ctx.input(k) for k in range(2, 2 + n)]
    key = ctx.attrs["key"]
    gx = INDEX_PUT(g, 0.0, *idx, key=key, n_index=n) if ctx.needs(0) else None
    gv = INDEX(g, *idx, key=key, n_index=n) if ctx.needs(1) else None
    return (gx, gv) + (None,) * n


INDEX_PUT = defop(
    "index_put", forward=_index_put,
    abstract=_index_put_abstract,
    vjp=_index_put_vjp, kind="index", layout="preserve",
    grad_name=lambda operands, attrs: "CopySlices" if is_basic_key(attrs["key"]) else "IndexPutBackward0",
    save=(2, 3, 4, 5, 6, 7, 8, 9),
    samples=lambda rng: [
        ((rng.standard_normal((4, 5)), rng.standard_normal((5,))), {"key": (("int", 1),), "n_index": 0}),
        ((rng.standard_normal((4, 5)), rng.standard_normal((2, 1)), np.array([3, 0])),
         {"key": (("tensor", 0), ("slice", 1, 3, None)), "n_index": 1}),
    ],
    doc="functional `x[key] = v`: a copy of x with v written at key",
    arity=VARIADIC,
)


# -- joining and splitting -------------------------------------------------------------------
def _cat_abstract(*xs, dim):
    if not xs:
        raise RuntimeError("cat: expected a non-empty list of Tensors")
    nd = xs[0].ndim
    d = norm_dim("cat", dim, nd)
    for s in xs[1:]:
        if s.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(s.shape, xs[0].shape)) if i != d):
            raise RuntimeError(
                f"cat: Sizes of tensors must match except in dimension {d}. "
                f"Got shapes {tuple(xs[0].shape)} and {tuple(s.shape)}")
    shape = list(xs[0].shape)
    shape[d] = sum(s.shape[d] for s in xs)
    return TensorSpec(tuple(shape), same_dtype("cat", list(xs)))


def _cat_vjp(ctx, g):
    dim = ctx.attrs["dim"]
    grads, start = [], 0
    for i in range(ctx.n_inputs):
        n = ctx.in_shape(i)[dim]
        key = (("slice", None, None, None),) * dim + (("slice", start, start + n, None),)
        grads.append(INDEX(g, key=key, n_index=0) if ctx.needs(i) else None)
        start += n
    return tuple(grads)


CAT = defop(
    "cat", forward=lambda xp, *xs, dim: xp.concatenate(xs, axis=dim), abstract=_cat_abstract,
    vjp=_cat_vjp, grad_name="CatBackward0", kind="shape", promote="same",
    samples=_any((2, 3), (4, 3), dim=0),
    arity=VARIADIC,
)


def _stack_abstract(*xs, dim):
    if not xs:
        raise RuntimeError("stack: expected a non-empty list of Tensors")
    for s in xs[1:]:
        if s.shape != xs[0].shape:
            raise RuntimeError(f"stack: stack expects each tensor to be equal size, but got "
                               f"{list(xs[0].shape)} at entry 0 and {list(s.shape)} at another entry")
    shape = xs[0].shape[:dim] + (len(xs),) + xs[0].shape[dim:]
    return TensorSpec(shape, same_dtype("stack", list(xs)))


def _stack_vjp(ctx, g):
    dim = ctx.attrs["dim"]
    return tuple(
        INDEX(g, key=(("slice", None, None, None),) * dim + (("int", i),), n_index=0) if ctx.needs(i) else None
        for i in range(ctx.n_inputs)
    )


STACK = defop(
    "stack", forward=lambda xp, *xs, dim: xp.stack(xs, axis=dim), abstract=_stack_abstract,
    vjp=_stack_vjp, grad_name="StackBackward0", kind="shape", promote="same", samples=_any((2, 3), (2, 3), dim=1),
    arity=VARIADIC,
)


def _split_abstract(x, sizes, dim):
    if sum(sizes) != x.shape[dim]:
        raise RuntimeError(f"split: split sizes {list(sizes)} do not add up to the size {x.shape[dim]} "
                           f"of dimension {dim} (shape {tuple(x.shape)})")
    return tuple(TensorSpec(x.shape[:dim] + (n,) + x.shape[dim + 1:], x.dtype) for n in sizes)


def _split(xp, x, sizes, dim):
    if sum(sizes) != x.shape[dim]:  # (eager runs the forward alone: PyTorch raises here, not np.split)
        _split_abstract(x, sizes, dim)
    cuts = np.cumsum(sizes)[:-1].tolist()
    return tuple(xp.split(x, cuts, axis=dim))


def _split_vjp(ctx, grads):
    dim, sizes = ctx.attrs["dim"], ctx.attrs["sizes"]
    if len(grads) > 1 and all(g is not None for g in grads):
        # every part has a gradient: one concatenation, as PyTorch's split backward (cat); a
        # buffer of zeros of the whole input per part, then their sums, cost 20x (a GPT's
        # q, k, v split of a (16, 32, 192) projection: 390 against 20 us) and turned a -0.0
        # gradient element into +0.0
        return (CAT(*grads, dim=dim),)
    like = {n: g for g, n in zip(grads, sizes) if g is not None}  # a present part's gradient per size
    if sum(g is not None for g in grads) > 1 and all(g is not None or n in like for g, n in zip(grads, sizes)):
        # the parts without one as zeros of a present part's shape (equal parts: q, k, v), then
        # one cat, as PyTorch; the sums below cost an array a part and turn -0.0 into +0.0
        from .special import FULL_LIKE  # noqa: PLC0415  (special's records load after these)

        return (CAT(*(g if g is not None else FULL_LIKE(like[n], value=0.0) for g, n in zip(grads, sizes)),
                    dim=dim),)
    shape = ctx.in_shape(0)
    total, start = None, 0
    for g, n in zip(grads, sizes):
        if g is not None:
            key = (("slice", None, None, None),) * dim + (("slice", start, start + n, None),)
            part = INDEX_GRAD(g, key=key, shape=shape, n_index=0)
            total = part if total is None else total + part
        start += n
    return (total,)


SPLIT = defop(
    "split", forward=_split, abstract=_split_abstract, vjp=_split_vjp,
    grad_name="SplitWithSizesBackward0", kind="shape", is_view=True, multi_output=True,
    samples=_any((5, 3), sizes=(2, 3), dim=0),
)
