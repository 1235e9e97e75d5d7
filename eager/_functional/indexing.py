"""Indexing of eager's functional surface: index keys for `x[...]` and its assignment, gather
and scatter, index_select/add/put, masks, nonzero and unique, and what gathers by computed indices
(repeat_interleave, combinations)."""
from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import elementwise as E
from gmops import indexing as I
from gmops import shape_ops as S
from gmops._checks import fit_scalar, norm_dim

from ._common import _host, _int_tensor, _ndim, _renamed, _row_major
from .elementwise import clone, to_dtype
from .shape_ops import broadcast_shape, expand, reshape, unsqueeze

# One entry of an index key: ("none",), ("ellipsis",), ("int", i), ("slice", start, stop, step)
# or ("tensor", position among the index operands).
IndexEntry = tuple[Any, ...]


def index_key(index, make_tensor):
    """Turn a Python index into (key, index operands) for the index ops."""
    if not isinstance(index, tuple):
        index = (index,)
    key: list[IndexEntry] = []
    operands: list[Any] = []  # the index tensors (eager tensors or tracer values), in key order
    for item in index:
        if item is None:
            key.append(("none",))
        elif item is Ellipsis:
            key.append(("ellipsis",))
        elif isinstance(item, bool):
            operands.append(make_tensor(item))
            key.append(("tensor", len(operands) - 1))
        elif isinstance(item, int) or (hasattr(item, "__index__") and not hasattr(item, "shape")):
            key.append(("int", int(item)))
        elif isinstance(item, slice):
            key.append(("slice", _opt_int(item.start), _opt_int(item.stop), _opt_int(item.step)))
        else:
            t = item if hasattr(item, "_data") or hasattr(item, "__graphmode_dispatch__") else make_tensor(item)
            if t.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            operands.append(t)
            key.append(("tensor", len(operands) - 1))
    return tuple(key), operands


def _opt_int(v):
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v  # an int subclass stays: a compiled trace's symbolic size (static.dynamic_shapes)
    return int(v)


_FULL = ("slice", None, None, None)
_ONE_TENSOR = (("tensor", 0),)  # the key of x[idx]


def _selects_first(key, operands):
    """PyTorch applies integer indices first (as selects), then the tensor indices; NumPy
    counts an int as one more advanced index, which moves the result's dims when the two are
    apart (x of shape (2, 3, 4): x[0, :, idx] is (3, 2) in PyTorch, (2, 3) in NumPy).
    Returns (basic key, advanced key), or None where both rules agree."""
    if not (_builtins.any(e[0] == "int" for e in key) and _builtins.any(e[0] == "tensor" for e in key)):
        return None
    basic, advanced = [], []
    for e in key:
        tag = e[0]
        if tag == "int":
            basic.append(e)
        elif tag == "tensor":
            t = operands[e[1]]
            if t.dtype is _dtypes.bool_:
                if not t.ndim:
                    return None  # x[True]: adds a dim; leave such keys to the one-step rule
                basic.extend([_FULL] * t.ndim)
            else:
                basic.append(_FULL)
            advanced.append(e)
        elif tag == "ellipsis":
            basic.append(e)
            advanced.append(e)
        else:  # a slice or None: applied by the basic step, kept whole by the advanced one
            basic.append(e)
            advanced.append(_FULL)
    return tuple(basic), tuple(advanced)


_NONE, _ELLIPSIS = ("none",), ("ellipsis",)


def _basic_key(items: tuple) -> tuple | None:
    """index_key's key for an index of Python ints, slices of ints (step > 0), None and
    Ellipsis only (x[0], x[:, t], x[..., :2], x[None]); None for anything else (tensors,
    lists, bools, NumPy integers, a step <= 0 whose error the general path raises)."""
    key: list[IndexEntry] = []
    for item in items:
        t = type(item)
        if t is int:
            key.append(("int", item))
        elif t is slice:
            start, stop, step = item.start, item.stop, item.step
            if not ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                    and (step is None or (type(step) is int and step > 0))):
                return None
            key.append(("slice", start, stop, step))
        elif item is None:
            key.append(_NONE)
        elif item is Ellipsis:
            key.append(_ELLIPSIS)
        else:
            return None
    return tuple(key)


_TAKE_ROWS: list = [None]


def _take_rows():
    """eager._index_fast.take_rows, imported at the first x[idx] (it imports eager's Tensor,
    which imports this module)."""
    from .._index_fast import take_rows  # noqa: PLC0415

    _TAKE_ROWS[0] = take_rows
    return take_rows


def getitem(input, index, make_tensor):
    """input[index] with PyTorch's basic and advanced indexing; `make_tensor` turns index lists into tensors.

    Backs Tensor.__getitem__. Mirrors torch.Tensor.__getitem__."""
    ti = type(index)
    if ti is tuple or ti is int or ti is slice:
        key = _basic_key(index if ti is tuple else (index,))
        if key is not None:  # ints, slices, None and Ellipsis: a view, no walk or two-step test
            return S.INDEX(input, key=key, n_index=0)
    data = getattr(index, "_data", None)
    if data is not None and type(data) is np.ndarray and data.dtype.kind in "ib":
        # x[idx] with one index tensor (a minibatch's rows, an embedding lookup C[xi]): on the
        # arrays where eager._index_fast applies, else the key index_key builds for it, without
        # its walk over a tuple or the two-step test
        take = _TAKE_ROWS[0] or _take_rows()
        out = take(input, index)
        return out if out is not None else S.INDEX(input, index, key=_ONE_TENSOR, n_index=1)
    key, operands = index_key(index, make_tensor)
    if _builtins.any(e[1:] and e[0] == "slice" and e[3] is not None and e[3] <= 0 for e in key):
        raise ValueError("step must be greater than zero")
    if _builtins.any(o.dtype is _dtypes.uint8 for o in operands):
        operands = _bytes_as_masks(operands)
    two_steps = _selects_first(key, operands)
    if two_steps is not None:
        basic, advanced = two_steps
        input, key = S.INDEX(input, key=basic, n_index=0), advanced
    return S.INDEX(input, *operands, key=key, n_index=len(operands))


def _bytes_as_masks(operands: list) -> list:
    """PyTorch reads a uint8 index tensor as a boolean mask (deprecated, with its warning),
    where NumPy would read its values as positions."""
    import warnings  # noqa: PLC0415

    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                  UserWarning, stacklevel=4)
    return [to_dtype(o, _dtypes.bool_) if o.dtype is _dtypes.uint8 else o for o in operands]


def put_at_index(input, index, value, make_tensor):
    """A copy of input with `value` written at input[index] (the differentiable form of item
    assignment). Backs Tensor.__setitem__ and index_put."""
    key, operands = index_key(index, make_tensor)
    return S.INDEX_PUT(input, value, *operands, key=key, n_index=len(operands))


def gather(input, dim, index, *, sparse_grad=False):
    """Values of input picked along `dim` at `index` (out[i][j] = input[index[i][j]][j] for dim 0).

    Mirrors torch.gather."""
    return I.GATHER(input, index, dim=norm_dim("gather", dim, _ndim(input)))


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of input with `src` (or the scalar `value`) written at `index` along `dim`.

    `reduce` 'add' or 'multiply' combines with the existing values instead. Mirrors torch.scatter."""
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
        source = src if src is not None else value
        if source is None:
            raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
        if hasattr(source, "shape"):
            import warnings  # noqa: PLC0415

            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
                          "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
                          "options.", UserWarning, stacklevel=2)
        else:  # a number: the same value at every index position
            from .._factories import full  # noqa: PLC0415

            source = full(tuple(index.shape), source, dtype=input.dtype, device=input.device)
        return scatter_reduce(input, dim, index, source, "sum" if reduce == "add" else "prod")
    source = src if src is not None else value
    if source is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    if not hasattr(source, "shape"):
        source = fit_scalar("scatter", source, input.dtype)  # PyTorch's overflow error, not NumPy's wrap
        source = float(source) if input.is_floating_point() else int(source)
    return I.SCATTER(input, index, source, dim=norm_dim("scatter", dim, _ndim(input)))


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with `src` combined in at `index` along `dim` by `reduce` ('sum',
    'prod', 'mean', 'amax' or 'amin'); include_self=False leaves input's own value out at the
    positions index reaches. Mirrors torch.scatter_reduce."""
    return I.SCATTER_REDUCE(input, index, src, dim=norm_dim("scatter_reduce", dim, _ndim(input)), reduce=reduce,
                            include_self=bool(include_self))


def scatter_add(input, dim, index, src):
    """A copy of input with `src` added at `index` along `dim`. Mirrors torch.scatter_add."""
    return I.SCATTER_ADD(input, index, src, dim=norm_dim("scatter_add", dim, _ndim(input)))


def index_select(input, dim, index):
    """The slices of input at the 1-d `index` along `dim`. Mirrors torch.index_select."""
    return I.INDEX_SELECT(input, index, dim=norm_dim("index_select", dim, _ndim(input)))


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * `source` added at the 1-d `index` along `dim`. Mirrors torch.index_add."""
    return I.INDEX_ADD(input, index, source, dim=norm_dim("index_add", dim, _ndim(input)), alpha=float(alpha))


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements: (n, ndim) int64, or one index per dim with as_tuple.
    Its shape depends on the data, so it runs eagerly only (static raises a TraceError)."""
    import numpy as np  # noqa: PLC0415

    found = np.nonzero(np.atleast_1d(_host(input)))
    if as_tuple:
        return tuple(_int_tensor(f, input) for f in found)
    return _int_tensor(np.stack(found, axis=1) if found else np.zeros((0, 0), np.int64), input)


argwhere = nonzero


def masked_select(input, mask):
    """The elements of input where mask is True, as a 1-D tensor (data-dependent shape:
    eager only). Gradients flow back to the selected positions."""
    if getattr(mask, "dtype", None) is not _dtypes.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {getattr(mask, 'dtype', type(mask))}")
    shape = broadcast_shape(tuple(input.shape), tuple(mask.shape))
    x = input if tuple(input.shape) == shape else expand(input, shape)
    m = mask if tuple(mask.shape) == shape else expand(mask, shape)
    if not shape:
        x, m = reshape(x, 1), reshape(m, 1)
    index = nonzero(m, as_tuple=True)
    return _renamed(S.INDEX(x, *index, key=tuple(("tensor", k) for k in range(len(index))), n_index=len(index)),
                    "MaskedSelectBackward0")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with the inverse map and the counts
    (data-dependent shape: eager only)."""
    import numpy as np  # noqa: PLC0415

    from .._factories import tensor  # noqa: PLC0415

    arr = _host(input)
    if dim is None:
        values, inverse, counts = np.unique(arr.reshape(-1), return_inverse=True, return_counts=True)
        inverse = inverse.reshape(arr.shape)
    else:
        values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True,
                                            axis=norm_dim("unique", dim, arr.ndim))
        inverse = inverse.reshape(-1)
    out = [tensor(values, dtype=input.dtype, device=input.device)]
    if return_inverse:
        out.append(_int_tensor(inverse, input))
    if return_counts:
        out.append(_int_tensor(counts, input))
    return out[0] if len(out) == 1 else tuple(out)


def masked_fill(input, mask, value):
    """input with `value` where mask is True; keeps input's dtype (a 0-d tensor value too)."""
    if getattr(mask, "dtype", None) is not _dtypes.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(getattr(mask, 'dtype', None), 'name', type(mask).__name__)}")
    if hasattr(value, "shape"):
        if _ndim(value) != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{_ndim(value)} dimension(s).")
        if type(getattr(value, "_data", None)) is np.ndarray:  # PyTorch checks the value's number as a scalar's
            fit_scalar("masked_fill", value._data.item(), input.dtype)
        value = to_dtype(value, input.dtype)
    elif input.dtype is _dtypes.bool_:
        value = bool(value)
    else:
        value = fit_scalar("masked_fill", value, input.dtype)  # PyTorch's overflow error, not NumPy's wrap
        value = float(value) if input.dtype.is_floating_point else int(value)
    name = "MaskedFillBackward0"
    # PyTorch fills a row-major clone, so masked_fill(...).view(...) works on any input
    return _renamed(_row_major(E.WHERE(mask, value, input)), name)


def _index_mask(op: str, input, dim: int, index):
    """A bool tensor True at the positions `index` (0-d or 1-d int64, negative counting from
    the end) picks along `dim` of input, shaped to broadcast against it. Built by comparing
    with arange, so a trace records it; concrete indices are checked first (PyTorch's
    IndexError for one out of range)."""
    if getattr(index, "dtype", None) is not _dtypes.int64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if _ndim(index) > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    n = input.shape[dim] if _ndim(input) else 1
    data = getattr(index, "_data", None)
    if data is not None and type(data).__module__.split(".")[0] in ("numpy", "cupy"):
        bad = [int(i) for i in _host(index).reshape(-1) if not -n <= int(i) < n]
        if bad:
            raise IndexError(f"index {bad[0]} is out of bounds for dimension {dim} with size {n}")
    from .._factories import arange  # noqa: PLC0415

    flat = reshape(index, -1, 1)
    flat = E.WHERE(E.LT(flat, 0), E.ADD(flat, n), flat)
    hit = (arange(n, device=input.device) == flat).any(0)
    return reshape(hit, *([1] * dim + [n] + [1] * (_ndim(input) - dim - 1))) if _ndim(input) else reshape(hit, ())


def index_fill(input, dim, index, value):
    """A copy of input with `value` (a number or a 0-d tensor) at every position whose index
    along `dim` is in `index` (0-d or 1-d int64). Mirrors torch.index_fill; gradients reach
    input (zero where filled) and a tensor value (the sum of the filled positions' gradient)."""
    d = norm_dim("index_fill", dim, _ndim(input))
    if hasattr(value, "shape") and _ndim(value) != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{_ndim(value)} dimension(s).")
    if not hasattr(value, "shape") and input.dtype is not _dtypes.bool_ and not input.dtype.is_floating_point \
            and not getattr(input.dtype, "is_complex", False):
        value = int(value)  # PyTorch truncates a float value into an integer tensor
    out = masked_fill(input, _index_mask("index_fill_", input, d, index), value)
    return _renamed(out, "IndexFillBackward1" if hasattr(value, "shape") else "IndexFillBackward0")


def diagonal_mask(op: str, shape: tuple, wrap: bool):
    """The bool array True on the main diagonal of `shape` (fill_diagonal_'s cells: all dims
    equal beyond 2-d; a tall 2-d matrix restarts the diagonal every cols + 1 rows with wrap),
    NumPy's fill_diagonal rule, which is PyTorch's."""
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, bool)
    np.fill_diagonal(mask, True, wrap=bool(wrap))
    return mask


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated `repeats` times (an int, or one count per element along dim)."""
    if dim is None:
        input, dim = reshape(input, -1), 0
    d = norm_dim("repeat_interleave", dim, _ndim(input))
    if isinstance(repeats, int):
        shape = tuple(input.shape)
        x = unsqueeze(input, d + 1)
        x = expand(x, *(shape[:d + 1] + (repeats,) + shape[d + 1:]))
        return reshape(clone(x), *(shape[:d] + (shape[d] * repeats,) + shape[d + 1:]))
    import numpy as np  # noqa: PLC0415

    counts = _host(repeats).reshape(-1)
    n = input.shape[d]
    if counts.size == 1:
        counts = np.repeat(counts, n)
    if counts.size != n:
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size({d}) = {n}")
    return index_select(input, d, _int_tensor(np.repeat(np.arange(n), counts), input))


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-r combinations of a 1-d tensor's elements, as rows (itertools' order), made
    with index_select so gradients reach the elements. Mirrors torch.combinations."""
    import itertools  # noqa: PLC0415

    from .._factories import tensor  # noqa: PLC0415

    if _ndim(input) != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input[:0].reshape(0, r)
    index = tensor(np.asarray(rows, dtype=np.int64).reshape(-1))
    return index_select(input, 0, index).reshape(len(rows), r)


def index_put(input, indices, values, accumulate: bool = False):
    """A copy of input with values written at the positions the tuple of index tensors picks
    (advanced indexing of the leading dims); with accumulate, added there, duplicates summed.
    Mirrors torch.index_put."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put: indices must be a tuple of tensors, got {type(indices).__name__}")
    from .._factories import tensor  # noqa: PLC0415

    if not accumulate:
        return put_at_index(input, tuple(indices), values, tensor)

    k = len(indices)
    lead, rest = tuple(input.shape[:k]), tuple(input.shape[k:])
    positions = np.broadcast_arrays(*[_host(i) for i in indices])
    linear = tensor(np.ravel_multi_index(tuple(p.reshape(-1) for p in positions), lead).astype(np.int64))
    n = int(np.prod(lead)) if lead else 1
    if not hasattr(values, "shape"):
        values = tensor(values, dtype=input.dtype)
    source = values.expand(tuple(positions[0].shape) + rest).reshape((-1,) + rest)
    return index_add(input.reshape((n,) + rest), 0, linear, source).reshape(input.shape)
