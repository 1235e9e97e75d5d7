"""Batching rules: how each op runs on operands that carry an extra leading batch dimension
(what `eager.func.vmap` and `static.vmap` ask of the op record, `OpDef.batch_rule`).

A rule is `rule(args, batched, attrs, size) -> result`: `args` are the operands, the
batched ones with the batch as their dimension 0 (of `size`), the others as the op would
take them; it returns the op's result(s) batched along dimension 0, computed with ops (so
the same rule runs on eager tensors, on static's Tracers, and on an outer vmap's values).
It returns `NotImplemented` for a combination it does not handle (vmap then raises naming
the op).

Most rules come from the op's facts (`derive`):
- pointwise ops: broadcasting. A batched operand of lower logical rank gets size-1 axes
  after its batch axis, so that its batch lines up with the others';
- reductions and ops with `dims`/`dim` attributes along one operand: those attributes
  shifted past the batch axis (None, "all dimensions", becomes the logical ones).
Hand-written (`HAND`): the shape ops (reshape, expand, permute, transpose, squeeze,
unsqueeze, flip, cat, stack, split), matmul and einsum, indexing (index, with batched index
tensors too, gather, index_select, take_along, diagonal, embedding), unfold and fold
(convolutions, poolings: the batch merged into their N dimension), and the ops that already
treat leading dimensions as a batch (tril, triu, det, inv, layer_norm); scan, cond and
while_loop declare theirs (gmops/control_flow.py). Without a rule: the scatter family,
layer_norm_backward, index_put and the gradients of indexing, solve, embedding with a
batched weight, to_device, fill; vmap over them raises naming the op.
(`merged_rule`, the batch merged into an op's leading dimension, is kept for ops over
(N, ...) inputs; no op uses it yet.)"""
from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

from ._registry import REGISTRY, OpDef

BatchRule = Callable[[list, list, dict, int], Any]


def _lrank(x: Any, b: bool) -> int:
    n = len(getattr(x, "shape", ()))
    return n - 1 if b else n


def _pad(x: Any, size: int, rank: int) -> Any:
    """A batched x (batch at 0) with size-1 axes after the batch up to logical rank `rank`."""
    lr = len(x.shape) - 1
    if lr >= rank:
        return x
    return x.reshape((size,) + (1,) * (rank - lr) + tuple(x.shape[1:]))


def _to_batched(x: Any, size: int) -> Any:
    """An unbatched tensor operand given a batch axis (a broadcast view)."""
    return x.unsqueeze(0).expand((size,) + tuple(x.shape))


def _dim(d: int, rank: int) -> int:
    return (d % rank if rank else 0) + 1


def pointwise_rule(op: OpDef) -> BatchRule:
    def rule(args: list, batched: list, attrs: dict, size: int) -> Any:
        rank = max(_lrank(a, b) for a, b in zip(args, batched))
        return op(*[_pad(a, size, rank) if b else a for a, b in zip(args, batched)], **attrs)
    return rule


def dims_rule(op: OpDef, keys: tuple, leading: bool = False) -> BatchRule:
    """Operand 0 batched (the others not): its dims attributes shifted past the batch axis."""
    def rule(args: list, batched: list, attrs: dict, size: int) -> Any:
        tensors = [k for k, a in enumerate(args) if hasattr(a, "shape")]
        if len(tensors) > 1:  # every tensor operand batched alike (a gradient beside its input)
            ranks = {_lrank(args[k], batched[k]) for k in tensors}
            if len(ranks) != 1 or tensors[0] != 0:
                return NotImplemented
            args = list(args)
            for k in tensors:
                if not batched[k]:
                    args[k] = _to_batched(args[k], size)
        elif not batched[0]:
            return NotImplemented
        x = args[0]
        rank = len(x.shape) - 1
        new = dict(attrs)
        for k in keys:
            if k not in attrs:
                continue
            v = attrs[k]
            if v is None:
                if k == "dims":
                    if rank == 0:
                        x, new[k] = x.reshape(size, 1), (1,)
                        if "keepdim" in new:
                            new["keepdim"] = False
                    else:
                        new[k] = tuple(range(1, rank + 1))
                else:  # dim=None: over the flattened tensor
                    x = x.reshape(size, -1)
                    new[k] = 1
                    if new.get("keepdim"):
                        out = op(x, *args[1:], **new)
                        return out.reshape((size,) + (1,) * rank) if rank else out.reshape(size)
            elif isinstance(v, (tuple, list)):
                new[k] = tuple(_dim(d, rank) for d in v)
            else:
                if rank == 0:
                    x, new[k] = x.reshape(size, 1), 1
                    out = op(x, *args[1:], **new)
                    return out.reshape(size) if tuple(out.shape) == (size, 1) else out
                new[k] = _dim(v, rank)
        return op(x, *args[1:], **new)
    return rule


def leading_rule(op: OpDef) -> BatchRule:
    """Ops that already treat leading dimensions as a batch (operand 0 only)."""
    def rule(args: list, batched: list, attrs: dict, size: int) -> Any:
        if not batched[0] or any(batched[1:]):
            return NotImplemented
        return op(*args, **attrs)
    return rule


def merged_rule(op: OpDef) -> BatchRule:
    """Ops over (N, ...) inputs (unfold, fold): the batch merged into N and split again."""
    def rule(args: list, batched: list, attrs: dict, size: int) -> Any:
        if not batched[0] or any(batched[1:]) or len(args[0].shape) < 2:
            return NotImplemented
        x = args[0]
        n = x.shape[1]
        out = op(x.reshape((size * n,) + tuple(x.shape[2:])), *args[1:], **attrs)
        return out.reshape((size, n) + tuple(out.shape[1:]))
    return rule


def derive(op: OpDef) -> BatchRule | None:
    """The rule the op's facts give, None where they give none."""
    if op.random or op.stateful or op.data_dependent_shape:
        return None
    if op.pointwise:
        return pointwise_rule(op)
    if op.kind == "reduction":
        return dims_rule(op, ("dims", "dim"))
    return None


# -- hand-written rules --------------------------------------------------------------------------
def _all_batched(args: list, batched: list, size: int) -> list:
    return [a if b else _to_batched(a, size) for a, b in zip(args, batched)]


def _reshape(args: list, batched: list, attrs: dict, size: int) -> Any:
    return REGISTRY["reshape"](args[0], shape=(size,) + tuple(attrs["shape"]))


def _expand(args: list, batched: list, attrs: dict, size: int) -> Any:
    shape = tuple(attrs["shape"])
    x = _pad(args[0], size, len(shape))
    return REGISTRY["expand"](x, shape=(size,) + tuple(s if s != -1 else x.shape[1 + i] for i, s in enumerate(shape)))


def _permute(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["permute"](args[0], dims=(0,) + tuple(_dim(d, rank) for d in attrs["dims"]))


def _transpose(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["transpose"](args[0], dim0=_dim(attrs["dim0"], rank), dim1=_dim(attrs["dim1"], rank))


def _squeeze(args: list, batched: list, attrs: dict, size: int) -> Any:
    x = args[0]
    rank = len(x.shape) - 1
    dims = attrs.get("dims")
    if dims is None:
        dims = tuple(i for i, n in enumerate(x.shape[1:]) if n == 1)
    return REGISTRY["squeeze"](x, dims=tuple(_dim(d, rank) for d in dims))


def _unsqueeze(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["unsqueeze"](args[0], dim=attrs["dim"] % (rank + 1) + 1)


def _flip(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["flip"](args[0], dims=tuple(_dim(d, rank) for d in attrs["dims"]))


def _cat(args: list, batched: list, attrs: dict, size: int) -> Any:
    ranks = [_lrank(a, b) for a, b in zip(args, batched)]
    rank = max(ranks)
    # (cat skips 1-d empty tensors as PyTorch does; they stay unbatched-shaped)
    xs = _all_batched(args, batched, size)
    return REGISTRY["cat"](*xs, dim=_dim(attrs["dim"], rank))


def _stack(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = max(_lrank(a, b) for a, b in zip(args, batched))
    return REGISTRY["stack"](*_all_batched(args, batched, size), dim=attrs["dim"] % (rank + 1) + 1)


def _split(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["split"](args[0], **{**attrs, "dim": _dim(attrs["dim"], rank)})


def _matmul(args: list, batched: list, attrs: dict, size: int) -> Any:
    a, b = args
    ba, bb = batched
    ra, rb = _lrank(a, ba), _lrank(b, bb)
    if ra == 0 or rb == 0:
        return NotImplemented
    # a batched vector on the left is a row, on the right a column: matrices, squeezed after
    if ba and ra == 1:
        a = a.unsqueeze(1)
    if bb and rb == 1:
        b = b.unsqueeze(2)
    if not ba and ra == 1:
        a = a.unsqueeze(0)
    if not bb and rb == 1:
        b = b.unsqueeze(1)
    if ba and bb:  # both batched: their batch axes align when the logical ranks do
        rank = max(len(a.shape), len(b.shape)) - 1
        a, b = _pad(a, size, rank), _pad(b, size, rank)
    elif bb:  # b batched, a not: a broadcasts over b's leading axes when b has at least a's rank
        rank = max(len(a.shape), len(b.shape) - 1)
        b = _pad(b, size, rank)
    else:
        rank = max(len(a.shape) - 1, len(b.shape))
        a = _pad(a, size, rank)
    out = REGISTRY["matmul"](a, b)
    if rb == 1:
        out = out.squeeze(-1)
    if ra == 1:
        out = out.squeeze(-2) if rb != 1 else out.squeeze(-1)
    return out


def _einsum(args: list, batched: list, attrs: dict, size: int) -> Any:
    eq = attrs["equation"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not arrow:  # implicit output: the letters seen once, in order
        letters = "".join(terms).replace(".", "")
        rhs = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    free = next(c for c in string.ascii_letters if c not in eq)
    new_terms = [free + t if b else t for t, b in zip(terms, batched)]
    return REGISTRY["einsum"](*args, equation=",".join(new_terms) + "->" + free + rhs)


def _index(args: list, batched: list, attrs: dict, size: int) -> Any:
    if any(batched[1:]):
        return _index_batched_indices(args, batched, attrs, size)
    if not batched[0]:
        return NotImplemented
    key = tuple(attrs["key"])
    tensors = [k for k, e in enumerate(key) if e[0] == "tensor"]
    if tensors:
        if any(e[0] == "int" for e in key) or tensors != list(range(tensors[0], tensors[-1] + 1)):
            return NotImplemented  # NumPy would move the advanced-index axes to the front
    return REGISTRY["index"](*args, **{**attrs, "key": (("slice", None, None, None),) + key})


def _index_batched_indices(args: list, batched: list, attrs: dict, size: int) -> Any:
    """x[i, j] with batched index tensors (nll_loss's pred[arange(n), target]): one more
    integer index, arange(size), picks each example's slice; it broadcasts with the others.
    Handled when the tensor indices lead the key (NumPy keeps their axes in front)."""
    key = tuple(attrs["key"])
    n_t = sum(1 for e in key if e[0] == "tensor")
    if any(e[0] == "int" for e in key) or any(e[0] != "tensor" for e in key[:n_t]):
        return NotImplemented
    if any(getattr(a, "dtype", None) is not None and not a.dtype.is_floating_point and a.dtype.name == "bool"
           for a in args[1:]):
        return NotImplemented
    from eager._factories import arange  # noqa: PLC0415

    x = args[0] if batched[0] else _to_batched(args[0], size)
    idx = list(args[1:])
    rank = max(_lrank(a, b) for a, b in zip(idx, batched[1:]))
    idx = [_pad(a, size, rank) if b else a for a, b in zip(idx, batched[1:])]
    batch_index = arange(size).reshape((size,) + (1,) * rank)
    new_key = (("tensor", 0),) + tuple(("tensor", e[1] + 1) if e[0] == "tensor" else e for e in key)
    return REGISTRY["index"](x, batch_index, *idx, key=new_key, n_index=len(idx) + 1)


def _unfold(args: list, batched: list, attrs: dict, size: int) -> Any:
    """unfold of (N, C, *spatial) into (C, *kernel, N, *out): the batch merged into N."""
    if not batched[0] or any(batched[1:]):
        return NotImplemented
    x = args[0]
    d = len(attrs["kernel"])
    n = x.shape[1]
    out = REGISTRY["unfold"](x.reshape((size * n,) + tuple(x.shape[2:])), **attrs)
    shape = tuple(out.shape)
    out = out.reshape(shape[:1 + d] + (size, n) + shape[2 + d:])
    return out.movedim(1 + d, 0)


def _fold(args: list, batched: list, attrs: dict, size: int) -> Any:
    """fold of (C, *kernel, N, *out) columns into (N, C, *spatial): the batch merged into N."""
    if not batched[0] or any(batched[1:]):
        return NotImplemented
    d = len(attrs["kernel"])
    cols = args[0].movedim(0, 1 + d)  # (C, *kernel, B, N, *out)
    shape = tuple(cols.shape)
    n = shape[2 + d]
    out = REGISTRY["fold"](cols.reshape(shape[:1 + d] + (size * n,) + shape[3 + d:]), **attrs)
    return out.reshape((size, n) + tuple(out.shape[1:]))


def _take_along(args: list, batched: list, attrs: dict, size: int) -> Any:
    """Values picked along `dim` by an index (max-pooling's): both batched, dim shifted."""
    x, index = (a if b else _to_batched(a, size) for a, b in zip(args[:2], batched[:2]))
    rank = len(x.shape) - 1
    return REGISTRY["take_along"](x, index, **{**attrs, "dim": _dim(attrs["dim"], rank)})


def _embedding(args: list, batched: list, attrs: dict, size: int) -> Any:
    """Rows of an unbatched weight picked by batched indices: the batch is one more index axis."""
    if batched[0]:
        return NotImplemented
    return REGISTRY["embedding"](*args, **attrs)


def _along(name: str) -> BatchRule:
    def rule(args: list, batched: list, attrs: dict, size: int) -> Any:
        rank = max(_lrank(a, b) for a, b in zip(args[:2], batched[:2]))
        xs = [_pad(a, size, rank) for a in _all_batched(args[:2], batched[:2], size)] + list(args[2:])
        # gather/take_along read index shapes exactly: give both the full batch
        xs[:2] = [x.expand((size,) + tuple(x.shape[1:])) for x in xs[:2]]
        return REGISTRY[name](*xs, **{**attrs, "dim": _dim(attrs["dim"], rank)})
    return rule


def _index_select(args: list, batched: list, attrs: dict, size: int) -> Any:
    if not batched[0] or batched[1]:
        return NotImplemented
    rank = len(args[0].shape) - 1
    return REGISTRY["index_select"](args[0], args[1], dim=_dim(attrs["dim"], rank))


def _diagonal(args: list, batched: list, attrs: dict, size: int) -> Any:
    rank = len(args[0].shape) - 1
    return REGISTRY["diagonal"](args[0], **{**attrs, "dim1": _dim(attrs["dim1"], rank),
                                             "dim2": _dim(attrs["dim2"], rank)})


HAND: dict[str, Callable[[OpDef], BatchRule | None]] = {
    "reshape": lambda op: _reshape, "expand": lambda op: _expand, "permute": lambda op: _permute,
    "transpose": lambda op: _transpose, "squeeze": lambda op: _squeeze, "unsqueeze": lambda op: _unsqueeze,
    "flip": lambda op: _flip, "cat": lambda op: _cat, "stack": lambda op: _stack, "split": lambda op: _split,
    "matmul": lambda op: _matmul, "einsum": lambda op: _einsum, "index": lambda op: _index,
    "gather": lambda op: _along("gather"), "take_along": lambda op: _take_along, "embedding": lambda op: _embedding,
    "index_select": lambda op: _index_select, "diagonal": lambda op: _diagonal,
    "tril": leading_rule, "triu": leading_rule, "det": leading_rule, "inv": leading_rule,
    "layer_norm": leading_rule, "unfold": lambda op: _unfold, "fold": lambda op: _fold,
    "layer_norm_backward": lambda op: None,  # (its weight and input have other ranks)
}


def declare_all() -> None:
    """Give every op of the registry its rule: hand-written where listed, else from its facts."""
    for name, op in REGISTRY.items():
        if op.batch_rule is not None:
            continue
        make = HAND.get(name)
        op.batch_rule = make(op) if make is not None else derive(op)
