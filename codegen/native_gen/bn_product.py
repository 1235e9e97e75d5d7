"""A narrow convolution's product taken into batch norm's first pass: where the
normalization's input is `permute(reshape(W @ cols)) + b` (batchnorm._bias_add_before, the
channel-major product of a first layer: W (C, K), cols (K, N*H*W), K = C_in*kh*kw small),
the first pass computes each element of row cc of the product from the K weights of the
channel and the K columns as it goes, instead of reading the product a library call wrote.

Why: W6's first convolution (16 x 9 x 25088) as a BLAS call ran at a fraction of BLAS's rate
(K = 9: 0.25 ms of a 5 ms step) and wrote 1.6 MB that the normalization read straight back;
its nine multiply-adds an element cost the first pass little (the columns, 0.9 MB, stay in
cache across the channels). The sums are in another order than BLAS's (q = 0..K-1, multiply-
adds), within the rounding compiled code is held to (static.jit.check).

Taken where the product's value, its reshape and the permute are read by nothing else, the
weight and the columns exist before the normalization runs, K <= MAX_K, the dtypes agree
and no size is symbolic; otherwise the product runs as before.
"""
from __future__ import annotations

from static.ir import Node, Value

from .indexing import _ints, _symbolic

MAX_K = 27  # at most 3 input channels of a 3x3 kernel: the multiply-adds stay cheaper than the product


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def direct_product(before: dict, outs: set, order: dict, at: int) -> dict | None:
    """{"w", "cols", "nodes"} when before["product"] (channel-major) is `W @ cols` that the
    first pass can compute itself (see the module's docstring); None otherwise."""
    m = before["product"]
    mm = m.producer if isinstance(m, Value) else None
    if (before.get("layout") != "channel_major" or mm is None or mm.op != "matmul" or mm.body is not None
            or len(mm.inputs) != 2 or id(m) in outs):
        return None
    w, cols = mm.inputs
    if not (isinstance(w, Value) and isinstance(cols, Value)) or len(w.type.shape) != 2 or len(cols.type.shape) != 2:
        return None
    if any(_symbolic(d) for v in (w, cols) for d in v.type.shape):
        return None
    (_, k), (k2, count) = _ints(w.type.shape), _ints(cols.type.shape)
    if k != k2 or k > MAX_K or w.type.dtype != m.type.dtype or cols.type.dtype != m.type.dtype:
        return None
    for v in (w, cols):
        if v.producer is not None and order.get(id(v.producer), at) >= order[id(mm)]:
            return None
    # the chain M -> reshape -> permute -> add, each read once
    nodes = [mm]
    v = m
    for op in ("reshape", "permute"):
        users = _users(v)
        if len(users) != 1 or users[0].op != op or users[0].body is not None or id(users[0].outputs[0]) in outs:
            return None
        nodes.append(users[0])
        v = users[0].outputs[0]
    if _users(v) != [before["add"]]:
        return None
    return {"w": w, "cols": cols, "k": k, "count": count, "nodes": nodes}


def element(direct: dict, ccols: str, index: str) -> str:
    """The C expression of row cc's element `index` of the product: the K multiply-adds of
    the channel's weights (w<q>, read once per channel: weight_lines) and the columns."""
    k, count = direct["k"], direct["count"]
    return "(" + " + ".join(f"w{q} * {ccols}[{q * count}LL + {index}]" for q in range(k)) + ")"


def weight_lines(direct: dict, cw: str, T: str) -> list[str]:
    """The channel's K weights as constants of the channel's loop."""
    k = direct["k"]
    return [f"// the product's row cc made here: {k} multiply-adds an element (bn_product.py)",
            f"const {T} " + ", ".join(f"w{q} = {cw}[cc * {k} + {q}]" for q in range(k)) + ";"]
