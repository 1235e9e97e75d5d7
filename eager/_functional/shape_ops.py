"""Shape functions of eager's functional surface: views and reshapes, joins and splits, flips,
rolls and repeats, stacking helpers, grids and moving dims."""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from gmbase import dtypes as _dtypes
from gmops import indexing as I
from gmops import shape_ops as S
from gmops import views as V
from gmops._checks import norm_dim, norm_dims
from gmops.arithmetic import SUB
from gmops.math_ops import LOGICAL_XOR as logical_xor  # the op itself (its function is generated)

from ._common import _ndim, _numel, _renamed, _sizes
from .elementwise import clone


def _resolve_shape(shape: tuple, numel: int, name: str) -> tuple:
    if list(shape).count(-1) > 1:
        raise RuntimeError(f"{name}: only one dimension can be inferred")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or numel % known:
            raise RuntimeError(f"{name}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    return shape


def reshape(input, *shape):
    """Always a new tensor (a view when it can be), as in PyTorch, even for the same shape."""
    shape = _resolve_shape(_sizes(shape), _numel(input), "reshape")
    out = S.RESHAPE(input, shape=shape)
    data, source = getattr(out, "_data", None), getattr(input, "_data", None)
    if data is not None and source is not None and data.size and not np.may_share_memory(data, source):
        _renamed(out, "UnsafeViewBackward0")  # a layout that cannot be viewed was copied, as PyTorch names it
    return out


def flatten(input, start_dim=0, end_dim=-1):
    """input with dimensions start_dim..end_dim merged into one. Mirrors torch.flatten."""
    nd = _ndim(input)
    if nd == 0:
        return reshape(input, (1,))
    s, e = norm_dim("flatten", start_dim, nd), norm_dim("flatten", end_dim, nd)
    shape = tuple(input.shape)
    if s == e:
        return input  # PyTorch returns the tensor itself here
    mid = 1
    for n in shape[s:e + 1]:
        mid *= n
    return reshape(input, shape[:s] + (mid,) + shape[e + 1:])


def transpose(input, dim0, dim1):
    """input with dimensions dim0 and dim1 swapped (a view); `swapaxes` is the same. Mirrors torch.transpose."""
    nd = _ndim(input)
    d0, d1 = norm_dim("transpose", dim0, nd), norm_dim("transpose", dim1, nd)
    return S.TRANSPOSE(input, dim0=d0, dim1=d1)


swapaxes = transpose


def t(input):
    """The transpose of a tensor of at most 2 dimensions. Mirrors torch.t."""
    if _ndim(input) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {_ndim(input)}D")
    if _ndim(input) < 2:
        return input
    return _renamed(S.TRANSPOSE(input, dim0=0, dim1=1), "TBackward0")


def permute(input, *dims):
    """input with its dimensions reordered to `dims` (a view). Mirrors torch.permute."""
    nd = _ndim(input)
    dims = tuple(norm_dim("permute", d, nd) for d in _sizes(dims))
    return S.PERMUTE(input, dims=dims)


def expand(input, *sizes):
    """A broadcast view of input to `sizes` (-1 keeps a dimension). Mirrors torch.Tensor.expand."""
    sizes = _sizes(sizes)
    lead = len(sizes) - _ndim(input)
    shape = tuple(input.shape[i - lead] if (n == -1 and i >= lead) else n for i, n in enumerate(sizes))
    return S.EXPAND(input, shape=shape)


def broadcast_to(input, size):
    """input broadcast to `size` (a view). Mirrors torch.broadcast_to."""
    return expand(input, *size)


def squeeze(input, dim=None):
    """input without its size-1 dimensions (only `dim`, or those in it, when given). Mirrors torch.squeeze."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        return S.SQUEEZE(input, dims=())  # PyTorch: squeeze(x, ()) squeezes nothing
    dims = norm_dims("squeeze", dim, _ndim(input))
    return S.SQUEEZE(input, dims=dims)


def unsqueeze(input, dim):
    """input with a size-1 dimension inserted at `dim`. Mirrors torch.unsqueeze."""
    nd = _ndim(input) + 1
    return S.UNSQUEEZE(input, dim=norm_dim("unsqueeze", dim, nd))


def cat(tensors, dim=0):
    """The tensors joined along the existing dimension `dim`; `concat` and `concatenate` are the same.

    Mirrors torch.cat."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of Tensors")
    return S.CAT(*tensors, dim=norm_dim("cat", dim, _ndim(tensors[0])))


concat = concatenate = cat


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dimension `dim`. Mirrors torch.stack."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of Tensors")
    return S.STACK(*tensors, dim=norm_dim("stack", dim, _ndim(tensors[0]) + 1))


def split(tensor, split_size_or_sections, dim=0):
    """input cut along `dim` into pieces of `split_size_or_sections` (an int: equal pieces, the last smaller;
    a list: those sizes), returned as a tuple of views. Mirrors torch.split."""
    d = norm_dim("split", dim, _ndim(tensor))
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise RuntimeError(f"split: split_size must be positive, got {step}")
        sizes = tuple(_builtins.min(step, n - i) for i in range(0, n, step)) or (0,)
        pieces = S.SPLIT(tensor, sizes=sizes, dim=d)
        return tuple(_renamed(p, "SplitBackward0") for p in pieces)  # PyTorch's node for equal pieces
    sizes = tuple(int(s) for s in split_size_or_sections)
    return S.SPLIT(tensor, sizes=sizes, dim=d)


def chunk(input, chunks, dim=0):
    """input cut along `dim` into at most `chunks` pieces of equal size (the last smaller). Mirrors torch.chunk."""
    d = norm_dim("chunk", dim, _ndim(input))
    n = input.shape[d]
    step = -(-n // chunks) if n else 1
    return split(input, step, d)


def unbind(input, dim=0):
    """The slices of input along `dim`, as a tuple, with that dimension removed. Mirrors torch.unbind."""
    d = norm_dim("unbind", dim, _ndim(input))
    return tuple(_renamed(select(input, d, i), "UnbindBackward0") for i in range(input.shape[d]))


def select(input, dim, index):
    """The slice of input at `index` along `dim`, with that dimension removed. Mirrors torch.select."""
    d = norm_dim("select", dim, _ndim(input))
    return S.INDEX(input, key=(("slice", None, None, None),) * d + (("int", index),), n_index=0)


def narrow(input, dim, start, length):
    """The slice input[start:start + length] along `dim` (a view). Mirrors torch.narrow."""
    d = norm_dim("narrow", dim, _ndim(input))
    return S.INDEX(input, key=(("slice", None, None, None),) * d + (("slice", start, start + length, None),),
                   n_index=0)


def broadcast_shape(*shapes) -> tuple:
    """The shape the given shapes broadcast to, as a tuple; raises when they do not broadcast.

    Mirrors torch.broadcast_shapes."""
    from gmops._checks import broadcast_shapes  # noqa: PLC0415

    return broadcast_shapes("broadcast_shapes", *shapes)


def flip(input, *dims, **kwargs):
    """flip(x, (0, 1)), x.flip(0, 1) or flip(x, dims=...): reverse the order along dims."""
    dims = _sizes(dims) if dims else kwargs.pop("dims")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return I.FLIP(input, dims=tuple(norm_dim("flip", d, _ndim(input)) for d in dims))


def fliplr(input):
    """input with its dimension 1 reversed (left-right). Mirrors torch.fliplr."""
    return flip(input, (1,))


def flipud(input):
    """input with its dimension 0 reversed (up-down). Mirrors torch.flipud."""
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (two slices joined per dim)."""
    if dims is None:
        return _renamed(reshape(roll(reshape(input, -1), shifts, 0), *input.shape), "RollBackward0")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    out = input
    for shift, dim in zip(shifts, dims):
        d = norm_dim("roll", dim, _ndim(input))
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return _renamed(out if out is not input else clone(input), "RollBackward0")


def repeat(input, *sizes):
    """Tile input: each dim repeated sizes[i] times (leading new dims allowed)."""
    sizes = _sizes(sizes)
    nd = _ndim(input)
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = (1,) * (len(sizes) - nd) + tuple(input.shape)
    spread = []
    for n in shape:
        spread += [1, n]
    x = S.RESHAPE(input, shape=tuple(spread))
    target = []
    for r, n in zip(sizes, shape):
        target += [r, n]
    x = S.EXPAND(x, shape=tuple(target))
    out = S.RESHAPE(clone(x), shape=tuple(r * n for r, n in zip(sizes, shape)))
    return _renamed(out, "RepeatBackward0")


def _tensor_list(name: str, tensors) -> list:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids from 1-D (or 0-d) tensors: output i varies along dimension i ("ij", the
    default) or with the first two dimensions swapped ("xy", Cartesian). Each output is an
    expanded view. Mirrors torch.meshgrid."""
    given = _tensor_list("meshgrid", tensors)
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in given:
        if _ndim(t) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got shape "
                               f"{tuple(t.shape)}")
        if t.dtype is not given[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same dtype")
    flat = [reshape(t, -1) for t in given]
    order = list(range(len(flat)))
    if indexing == "xy" and len(flat) >= 2:
        order[0], order[1] = 1, 0  # output i's axis position
    sizes = [0] * len(flat)
    for i, t in enumerate(flat):
        sizes[order[i]] = t.shape[0]
    out = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[order[i]] = t.shape[0]
        out.append(expand(reshape(t, *view), *sizes))
    return tuple(out)


def atleast_1d(*tensors):
    """Each input with at least one dimension (a 0-d tensor becomes shape (1,)). Mirrors torch.atleast_1d."""
    out = [t if _ndim(t) >= 1 else reshape(t, 1) for t in (tensors[0] if len(tensors) == 1 and
                                                           isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def atleast_2d(*tensors):
    """Each input with at least two dimensions (shape (n,) becomes (1, n)). Mirrors torch.atleast_2d."""
    def one(t):
        return t if _ndim(t) >= 2 else reshape(t, 1, -1) if _ndim(t) == 1 else reshape(t, 1, 1)
    out = [one(t) for t in (tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def atleast_3d(*tensors):
    """Each input with at least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)).

    Mirrors torch.atleast_3d."""
    def one(t):
        nd = _ndim(t)
        if nd >= 3:
            return t
        if nd == 2:
            return unsqueeze(t, 2)
        return reshape(t, 1, -1, 1)
    out = [one(t) for t in (tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors)]
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def _stack_seq(name: str, tensors) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors):
    """Tensors joined column-wise: along dim 0 for 1-D inputs, else along dim 1. Mirrors torch.hstack."""
    ts = [atleast_1d(t) for t in _stack_seq("hstack", tensors)]
    return cat(ts, 0 if _ndim(ts[0]) == 1 else 1)


def vstack(tensors):
    """Tensors joined row-wise (1-D inputs become rows first). Mirrors torch.vstack."""
    return cat([atleast_2d(t) for t in _stack_seq("vstack", tensors)], 0)


row_stack = vstack


def dstack(tensors):
    """Tensors joined depth-wise, along dim 2 after atleast_3d. Mirrors torch.dstack."""
    return cat([atleast_3d(t) for t in _stack_seq("dstack", tensors)], 2)


def column_stack(tensors):
    """Tensors as columns: 0-d and 1-d inputs become (n, 1) columns, then join along dim 1.

    Mirrors torch.column_stack."""
    ts = _stack_seq("column_stack", tensors)
    return cat([reshape(t, -1, 1) if _ndim(t) <= 1 else t for t in ts], 1)


def movedim(input, source, destination):
    """input with the dims `source` moved to positions `destination`, the others keeping their
    order (a view through permute). Mirrors torch.movedim."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    nd = _ndim(input)
    src = tuple(norm_dim("movedim", d, nd) for d in src)
    dst = tuple(norm_dim("movedim", d, nd) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source) if not isinstance(source, int) else source})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` "
                           f"({list(destination) if not isinstance(destination, int) else destination})")
    order: list = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return permute(input, perm)


moveaxis = movedim


def tile(input, dims):
    """input repeated `dims[i]` times along each dim; fewer dims than input's are padded with
    leading 1s (unlike repeat). Mirrors torch.tile."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    nd = _ndim(input)
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):
    """The n-th forward difference along dim (out[i] = x[i+1] - x[i], n times; xor for bool),
    after joining `prepend` and `append` along dim. Mirrors torch.diff."""
    if _ndim(input) == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim("diff", dim, _ndim(input))
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        if name is not None:
            if not hasattr(extra, "shape"):
                from .._factories import tensor  # noqa: PLC0415

                extra = tensor(extra, dtype=input.dtype, device=input.device)
            if _ndim(extra) == 0:
                shape = list(input.shape)
                shape[d] = 1
                extra = expand(reshape(extra, *([1] * len(shape))), *shape)
            if _ndim(extra) != _ndim(input):
                raise RuntimeError(f"diff expects prepend or append to be the same dimension as input "
                                   f"(input {tuple(input.shape)}, {name} {tuple(extra.shape)})")
        parts.append(extra)
    out = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = out.shape[d]
        if length == 0:
            break
        hi, lo = narrow(out, d, 1, length - 1), narrow(out, d, 0, length - 1)
        out = logical_xor(hi, lo) if out.dtype is _dtypes.bool_ else SUB(hi, lo)
    return out


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows of a (N, k) tensor (the
    tensor itself for one). Mirrors torch.cartesian_prod."""
    for k, t in enumerate(tensors):
        if _ndim(t) != 1:
            raise RuntimeError(f"cartesian_prod: expect a 1D vector, but got shape {list(t.shape)} for tensor {k}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def unfold_windows(input, dimension: int, size: int, step: int):
    """Tensor.unfold: every window of `size` elements, `step` apart, along dimension, as a new
    last dimension (the windows' count takes dimension's place): a view of input's memory, as
    PyTorch's, whose gradients add up where windows overlap. Mirrors torch.Tensor.unfold."""
    ndim = _ndim(input)
    d = norm_dim("unfold", dimension, _builtins.max(ndim, 1))
    length = input.shape[d] if ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if ndim == 0:
        return input.reshape(1)
    return V.WINDOWS(input, dim=d, size=int(size), step=int(step))
