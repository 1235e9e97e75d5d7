"""Where a fused max-pooling writes its pooled maxima and index: in the layout the IR gives
them (channel-major, (C, N, oh, ow), as argmax and take_along over the unfolded windows) or,
where every reader can take it, in the layout the graph permutes them to at once
(batch-major: a CNN's next convolution reads images, its head reads rows). pool_fusion.py
writes them; this module chooses the layout (batch_major_pools), says where a view of the
IR's layout lies in the array written (relaid), and binds the driver's names (pool_view_lines).
"""
from __future__ import annotations

import numpy as np

from static.ir import Node, Value

from .indexing import _ints, _prod, contiguous_strides, strided_source

# views a fused pooling's index is read through by the functions pool_fusion.py writes
INDEX_VIEWS = frozenset({"reshape", "permute", "transpose", "squeeze", "unsqueeze"})


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def batch_major_pools(emit: dict, outs: set) -> None:
    """Choose where a fused max-pooling writes its maxima and index batch-major (parts["pool"]
    ["layout"], the permutation its readers take): the normalization's pass has them channel by
    channel, (C, N, oh, ow) as the IR's argmax and take_along, and a CNN permutes the maxima to
    (N, C, oh, ow) at once for the next layer (a convolution's images, a linear head's rows).
    Written as that permute's layout, the permute is a view of a C-contiguous array, so neither
    the convolution's contiguous input nor the head's reshape copies it (W6's step: two
    copies, 13 and 9-22 us). Taken where every graph reader of the maxima is a permute by
    those dims (the spatial dims last, the row writes stay contiguous) and every reader of the
    index a fused gradient's scatter through views (it reads any strides: _input), the index
    no graph output. The maxima may be one (a split forward saves them for its backward): the
    output is then the IR's view, which the backward permutes back to the array written and
    its scatter reads through that permute (saved_input). The driver's name of each value
    stays its IR layout (a transposed view of the array written, pool_view_lines): a reader
    that is not told reads it as before, copied where a kernel needs it contiguous, so no
    reader sees the wrong layout."""
    scattered = {}  # index value -> the scatters' index operands (views of it) that read it
    for kind, _, parts in emit.values():
        pg = parts.get("pool_grad") if kind == "bn_region_grad" else None
        if pg is not None and not pg["mask"]:
            scattered[id(pg["index"])] = pg["index"]
    for kind, _, parts in emit.values():
        pool = parts.get("pool") if kind == "bn_norm" else None
        if pool is None or pool["take"] is None:
            continue
        maxima, index = pool["take"].outputs[0], pool["argmax"].outputs[0]
        readers = _users(maxima)
        dims = {tuple(int(d) for d in u.attrs["dims"]) if u.op == "permute" and u.body is None else None
                for u in readers}
        perm = dims.pop() if len(dims) == 1 else None
        if (perm is None or len(perm) != 4 or perm[2:] != (2, 3) or perm == (0, 1, 2, 3)
                or not _index_scattered(pool, index, outs, scattered, perm)):
            continue
        pool["layout"] = perm


def _index_scattered(pool: dict, index: Value, outs: set, scattered: dict, perm: tuple) -> bool:
    """Whether every reader of the pooling's index is the fused maxima, the mask, or a fused
    gradient's scatter through views that it can read in the layout `perm` (relaid)."""
    terminal = {id(pool["take"]), id(pool["mask"][0]) if pool["mask"] is not None else None}
    todo = [index]
    while todo:
        v = todo.pop()
        if id(v) in outs:
            return False
        if id(v) in scattered:
            view = strided_source(v) if v is not index else (index, contiguous_strides(_ints(v.type.shape)), 0)
            if view is None or view[0] is not index or relaid(_ints(index.type.shape), perm, *view[1:],
                                                              _ints(v.type.shape)) is None:
                return False
        for u in _users(v):
            if id(u) in terminal or (u.op == "index_mask" and id(v) in scattered):
                continue
            if u.op in INDEX_VIEWS and u.body is None and len(u.outputs) == 1 and u.inputs[0] is v:
                todo.append(u.outputs[0])
                continue
            return False
    return True


def relaid(base: tuple, perm: tuple, strides: tuple, offset: int, shape: tuple) -> tuple[tuple, int] | None:
    """(element strides, offset) of a view (`strides`, `offset` into a C-contiguous array of
    shape `base`, strided_source's) when that array is instead stored as
    np.transpose(array, perm) made contiguous; None where the view is not then one strided
    array. Found by running the view on the physical offsets themselves and checking that
    they are affine in the view's index."""
    phys = np.arange(_prod(base), dtype=np.int64).reshape(tuple(base[p] for p in perm))
    at = np.ascontiguousarray(np.transpose(phys, tuple(np.argsort(perm)))).ravel()  # IR element -> offset
    if _prod(shape) == 0:
        return None
    view = np.lib.stride_tricks.as_strided(at[offset:], shape, tuple(s * at.itemsize for s in strides))
    first = int(view[(0,) * len(shape)])
    st = tuple(int(view[tuple(1 if j == k else 0 for j in range(len(shape)))]) - first if d > 1 else 0
               for k, d in enumerate(shape))
    grid = np.indices(shape, dtype=np.int64)
    want = first + sum((grid[k] * st[k] for k in range(len(shape))), np.zeros(shape, np.int64))
    return (st, first) if np.array_equal(view, want) else None


def pool_view_lines(fn, pool: dict) -> list[str]:
    """The driver's lines after the normalization's call binding each value written in a
    layout of its own (batch_major_pools) to its IR layout, a view of the array written."""
    inverse = tuple(int(i) for i in np.argsort(pool["layout"])) if pool.get("layout") else ()
    laid = pool.get("laid", ())
    # (a view no line reads is dropped: driver_lines.drop_unread_views)
    return [*(["# the pooled values as the IR lays them out: views of the arrays written batch-major"] if laid else []),
            *(f"{fn.m.names(y)} = {phys}.transpose({inverse})" for y, phys in laid)]


def read_in_place(fn, v: Value) -> tuple[str, tuple, int] | None:
    """(the driver's name of the array, v's element strides in it, offset) where C function fn
    reads v in place: a view of another value (strided_source), or a value written in a
    layout of its own (batch_major_pools) or a view of one, read in the array written; None:
    v is read as the C-contiguous array of its own name (the call copies a view it is given:
    a view of a laid-out value that is not one strided array of the array written)."""
    view = strided_source(v)
    laid = fn.m.layouts.get(id(view[0] if view is not None else v))
    if laid is not None:
        base, strides, offset = view if view is not None else (v, contiguous_strides(_ints(v.type.shape)), 0)
        found = relaid(_ints(base.type.shape), laid[0], strides, offset, _ints(v.type.shape))
        return None if found is None else (laid[1], *found)
    return None if view is None else (fn.m.names(view[0]), view[1], view[2])


def saved_input(fn, v: Value) -> tuple[str, tuple, int] | None:
    """(the driver's name, element strides, offset) where scatter function fn reads graph input
    v, a split backward's saved pooled maxima, through a permute of it the driver makes before
    fn's call (spatial dims last): the forward wrote them in that permute's layout
    (batch_major_pools) and saved the IR's view of it, so the permute is that array, read in
    place. Should v come in another layout, the call copies the permute's view to C order
    first, read by the same strides. None where there is no such permute."""
    view = strided_source(v)  # (the scatter's (C, 1, N, oh, ow) reshape of the input)
    base, strides, offset = view if view is not None else (v, contiguous_strides(_ints(v.type.shape)), 0)
    if (base.producer is not None or id(base) in fn.m.layouts or fn.node is None
            or not any(base is i for i in fn.m.graph.inputs)):
        return None
    at = {id(n): i for i, n in enumerate(fn.m.graph.nodes)}
    plan = getattr(fn.m, "_window_plan", None)  # (a permute a window function takes has no driver line)
    taken = (plan.absorbed | set(plan.emit)) if plan is not None else set()
    shape = _ints(base.type.shape)
    for u in _users(base):
        perm = tuple(int(d) for d in u.attrs["dims"]) if u.op == "permute" and u.body is None else ()
        if (len(perm) == 4 and len(shape) == 4 and perm[2:] == (2, 3) and perm != (0, 1, 2, 3) and id(u) not in taken
                and at.get(id(u), len(at)) < at.get(id(fn.node), -1)):
            found = relaid(shape, perm, strides, offset, _ints(v.type.shape))
            if found is not None:
                return fn._param(v, fn.m.names(u.outputs[0]), writable=False, sized_by=base), *found
    return None
