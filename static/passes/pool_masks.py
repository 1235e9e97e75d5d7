"""The ReLU's mask read from the pooled maxima in a joint graph's backward, before the split.

In a CNN block (..., ReLU, MaxPool2d) the backward of the pair is

    f = fold(where(index_mask(idx), g, 0))      # the pooling's gradient: g at each chosen cell
    out = where(le(r, c), 0, f)                  # the ReLU's gradient: r the ReLU's output

where the pooling's windows do not overlap and lie in the image, and idx is the argmax the
pooled maxima p = take_along(windows(r), idx) were read by. f is nonzero only at each window's
chosen cell, where r is the window's maximum p, so the mask there is `p <= c`, a value of the
pooled size: out = fold(where(index_mask(idx), where(le(p, c), 0, g), 0)). Written that way the
backward reads neither r nor what r is made of (batch norm's normalized output, its weight
and bias, recomputed or saved), only p, which the next layer's columns are made of anyway.

Why here: a module compiled as a drop-in runs forward and backward as two graphs, and the
min-cut (remat.partition) saves whatever the backward reads. Reading the mask through r made
the forward save the normalized output (W6's first block: 1.6 MB written each call, and read
back by the backward to compute relu(xhat * w + b) <= 0 again). The one-graph training step
reads the same mask from the pooled maxima in its generated code (codegen pool_fusion.
gate_masks); this is the same identity on the IR, so every backend and the split get it.

The same values: where gives +0 where the mask is set and the scatter adds it as +0; NaN
wins the window (argmax) and NaN <= c is false in both forms.
"""
from __future__ import annotations

from ..ir import Graph, Node, Value
from .rewrite import Namer, make_node


def _only_user(v: Value) -> Node | None:
    found = {id(n): n for n in v.users}
    return next(iter(found.values())) if len(found) == 1 else None


def _ints(xs) -> tuple:
    return tuple(int(x) for x in xs)


def _producer(v, op: str) -> Node | None:
    if not isinstance(v, Value) or v.producer is None:
        return None
    node = v.producer
    return node if node.op == op and node.body is None else None


def _match(node: Node) -> tuple | None:
    """(g, the pooling gradient's inner where, the pooled maxima, the bound c, f) when `node`
    is the ReLU-gradient where over a non-overlapping max-pooling's gradient; else None."""
    if node.op != "where" or node.body is not None or len(node.inputs) != 3:
        return None
    m, zero, f = node.inputs
    if isinstance(zero, Value) or float(zero) != 0.0:
        return None
    le = _producer(m, "le")
    fold = _producer(f, "fold")
    if le is None or fold is None or isinstance(le.inputs[1], Value) or _only_user(f) is not node:
        return None
    r, bound = le.inputs[0], float(le.inputs[1])
    six = _producer(fold.inputs[0], "reshape")
    if six is None or _only_user(fold.inputs[0]) is not fold:
        return None
    inner = _producer(six.inputs[0], "where")
    if inner is None or _only_user(six.inputs[0]) is not six or len(inner.inputs) != 3:
        return None
    mask, g, zero2 = inner.inputs
    if isinstance(zero2, Value) or float(zero2) != 0.0 or not isinstance(g, Value):
        return None
    im = _producer(mask, "index_mask")
    if im is None or int(im.attrs["dim"]) != 1:
        return None
    view = _producer(im.inputs[0], "reshape")
    idx = view.inputs[0] if view is not None else im.inputs[0]
    am = _producer(idx, "argmax")
    if am is None or int(am.attrs["dim"]) != 1 or am.attrs.get("keepdim"):
        return None
    windows = am.inputs[0]
    flat = _producer(windows, "reshape")
    unfold = _producer(flat.inputs[0], "unfold") if flat is not None else None
    if unfold is None or unfold.inputs[0] is not r:
        return None
    kernel, stride = _ints(unfold.attrs["kernel"]), _ints(unfold.attrs["stride"])
    if (len(kernel) != 2 or any(int(p) for p in unfold.attrs["padding"])
            or any(int(d) != 1 for d in unfold.attrs["dilation"]) or any(s < k for s, k in zip(stride, kernel))
            or _ints(fold.attrs["kernel"]) != kernel or _ints(fold.attrs["stride"]) != stride
            or any(int(p) for p in fold.attrs["padding"]) or any(int(d) != 1 for d in fold.attrs["dilation"])
            or int(im.attrs["size"]) != kernel[0] * kernel[1]
            or _ints(f.type.shape) != _ints(r.type.shape) or f.type.dtype != r.type.dtype):
        return None
    takes = [u for u in {id(n): n for n in windows.users}.values()
             if u.op == "take_along" and u.body is None and u.inputs[1] is idx
             and int(u.attrs["dim"]) == 1 and not u.attrs.get("keepdim")]
    if not takes:
        return None
    pooled = takes[0].outputs[0]
    g_shape = _ints(g.type.shape)
    p_shape = _ints(pooled.type.shape)
    if (len(g_shape) != len(p_shape) + 1 or g_shape[1] != 1 or g_shape[:1] + g_shape[2:] != p_shape
            or pooled.type.dtype != g.type.dtype):
        return None
    return g, inner, pooled, bound, f


def gate_pool_masks(graph: Graph) -> int:
    """Rewrite each ReLU-gradient where over a max-pooling's gradient (module docstring) in
    place; returns how many. The old where and the mask it read are left for DCE (or for the
    split, which keeps only what the outputs need)."""
    namer = Namer(graph)
    count = 0
    for node in list(graph.nodes):
        try:
            found = _match(node)
        except (KeyError, TypeError, ValueError):  # a symbolic size or an unexpected attribute: leave it
            found = None
        if found is None:
            continue
        g, inner, pooled, bound, f = found
        shaped = make_node("reshape", [pooled], {"shape": list(_ints(g.type.shape))}, namer, loc=node.loc)
        mask = make_node("le", [shaped.outputs[0], bound], {}, namer, loc=node.loc)
        gated = make_node("where", [mask.outputs[0], 0.0, g], {}, namer, loc=node.loc)
        at = graph.nodes.index(inner)
        graph.nodes[at:at] = [shaped, mask, gated]
        inner.inputs = [inner.inputs[0], gated.outputs[0], inner.inputs[2]]
        out = node.outputs[0]
        for reader in list({id(n): n for n in out.users}.values()):
            reader.inputs = [f if v is out else v for v in reader.inputs]
        graph.outputs = [f if v is out else v for v in graph.outputs]
        graph.nodes.remove(node)
        node.drop()
        count += 1
    return count
