"""An image-by-image convolution of the compiled step as eager's native kernels
(gmnative.conv_kernels.conv2d_images and its backward): each image's columns made in a
buffer of the thread's own and multiplied there, so the batch's columns (C*kh*kw times the
image) are never written out, read by the products and folded back.

A convolution traced image by image (eager's _conv2d_ops for K = C*kh*kw >= 64) reaches the
IR as `unfold` -> reshape (K, N, L) -> permute (N, K, L) -> matmul by the weight (O, K), and
its gradients as the batch's dW (matmul of the output gradient G by the columns' transpose,
summed over the images) and dx (W^T G, permuted back and folded). Compiled as library calls
and window functions that is the columns written (3.6 MB for W6's second layer), three
products reading them or their gradient, and the fold: W6's step spent 2.7-3.2 ms there
against 2.1-2.8 for the kernels (one thread, CPU time). The pattern is taken whole (forward
and both gradients, in the same graph, every intermediate read by nothing else) or not at
all; the input gradient comes from the same backward call (DX_BY_KERNELS, see there); each
call falls back to the library ops where the kernels cannot run (codegen.runtime).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from static.ir import Graph, Node, Value

from .indexing import _ints, _symbolic

if TYPE_CHECKING:
    from .driver import NativeModule

FLOATS = ("float32", "float64")
# Whether the input gradient runs in the kernels' backward too (W^T G[n] folded image by image
# in a buffer of the thread's own) or as the library product and the fold window function
# (the batch's dx columns, 3.6 MB for W6's second layer, written by BLAS and read back by the
# fold). With default settings (both cores) the kernels gained: W6's compiled step 2.97-3.02
# ms against 3.53-3.77 with the product and fold (eager/compiled 1.52 against 1.31-1.34,
# 3 alternated processes, wall time); on one thread in CPU time an earlier measure had found
# them even (8.49-8.55 ms against 8.55-8.80).
DX_BY_KERNELS = True


def _users(v: Value) -> list[Node]:
    return list({id(u): u for u in v.users}.values())


def _only(v: Value, outs: set) -> Node | None:
    """v's one reader, when v is read once in this graph and is not one of its outputs."""
    users = _users(v)
    return users[0] if len(users) == 1 and id(v) not in outs else None


def _made_by(v, op: str) -> Node | None:
    node = v.producer if isinstance(v, Value) else None
    return node if node is not None and node.op == op and node.body is None else None


def _dims(node: Node, key: str = "dims") -> tuple:
    return tuple(int(d) for d in node.attrs.get(key) or ())


def _transpose_of(node: Node) -> bool:
    """Whether node swaps the last two axes of a 2-d or 3-d value."""
    if node.op == "transpose":
        nd = len(node.inputs[0].type.shape)
        return {int(node.attrs["dim0"]) % nd, int(node.attrs["dim1"]) % nd} == {nd - 2, nd - 1}
    return False


def plan_images(graph: Graph, outs: set) -> list[dict]:
    """The convolutions of `graph` to run as the image-by-image kernels, each {"x", "w"
    (the (O, C, kh, kw) weight), "unfold", "product", "dw" (the summed product), "dx" (the
    fold, or None), "g", "first_grad" (the backward node the kernels' call is written at),
    "nodes" (every node the calls make unneeded)}."""
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    found = []
    for unfold in graph.nodes:
        parts = _one(unfold, outs, order)
        if parts is not None:
            found.append(parts)
    return found


def claim_images(emit: dict, absorbed: set, graph: Graph, outs: set) -> None:
    """Enter plan_images' convolutions in a window plan (conv.plan): the kernels' forward at the
    product, their backward at the first gradient node, every other node absorbed."""
    for conv in plan_images(graph, outs):
        emit[id(conv["product"])] = ("conv_images", conv["product"], conv)
        emit[id(conv["first_grad"])] = ("conv_images_grad", conv["first_grad"], conv)
        absorbed |= {id(n) for n in conv["nodes"] if n is not conv["first_grad"]}
    from .conv_images_split import claim_split  # noqa: PLC0415  (it reads this module's helpers)
    claim_split(emit, absorbed, graph, outs)  # a convolution's forward or weight gradient alone (a split graph)


def _columns(unfold: Node, outs: set) -> dict | None:
    """{"x", "unfold", "permute" (the (N, K, L) columns), "nodes", "shape" (n, c, h, w, kh,
    kw, oh, ow)} when unfold is an image-by-image convolution's columns, read only through
    reshape (K, N, L) and permute (1, 0, 2), none of them returned by the graph."""
    if unfold.op != "unfold" or unfold.body is not None or len(unfold.attrs.get("kernel") or ()) != 2:
        return None
    if float(unfold.attrs.get("pad_value", 0.0)) != 0.0:
        return None
    x, cols = unfold.inputs[0], unfold.outputs[0]
    if not isinstance(x, Value) or x.type.dtype.np.name not in FLOATS or len(x.type.shape) != 4:
        return None
    if any(_symbolic(d) for d in x.type.shape):
        return None
    n, c, h, w_ = _ints(x.type.shape)
    _, kh, kw, _, oh, ow = _ints(cols.type.shape)
    r1 = _only(cols, outs)
    if r1 is None or r1.op != "reshape" or _ints(r1.outputs[0].type.shape) != (c * kh * kw, n, oh * ow):
        return None
    p1 = _only(r1.outputs[0], outs)
    if p1 is None or p1.op != "permute" or _dims(p1) != (1, 0, 2) or id(p1.outputs[0]) in outs or n < 2:
        return None
    return {"x": x, "unfold": unfold, "permute": p1, "nodes": [unfold, r1, p1],
            "shape": (n, c, h, w_, kh, kw, oh, ow)}


def _summed_product(t: Node, outs: set, dtype) -> tuple | None:
    """(product, sum, G) where the transposed columns t are read once, by matmul(G, t), and
    that product once, by its sum over the images (the batch's weight gradient), G a Value
    of `dtype`; None otherwise."""
    dwb = _only(t.outputs[0], outs)
    if dwb is None or dwb.op != "matmul" or dwb.body is not None or dwb.inputs[1] is not t.outputs[0]:
        return None
    g = dwb.inputs[0]
    dw = _only(dwb.outputs[0], outs)
    if (dw is None or dw.op != "sum" or dw.body is not None or _dims(dw) != (0,) or not isinstance(g, Value)
            or g.type.dtype != dtype):
        return None
    return dwb, dw, g


def _one(unfold: Node, outs: set, order: dict) -> dict | None:
    parts = _columns(unfold, outs)
    if parts is None:
        return None
    x, p1 = parts["x"], parts["permute"]
    r1 = parts["nodes"][1]
    n, c, h, w_, kh, kw, oh, ow = parts["shape"]
    k, el = c * kh * kw, oh * ow
    readers = _users(p1.outputs[0])
    mm = next((u for u in readers if u.op == "matmul" and u.body is None and u.inputs[1] is p1.outputs[0]), None)
    t = next((u for u in readers if _transpose_of(u)), None)
    if mm is None or t is None or len(readers) != 2 or n < 2:
        return None
    wr = _made_by(mm.inputs[0], "reshape")
    if wr is None:
        return None
    w4 = wr.inputs[0]
    if (not isinstance(w4, Value) or len(w4.type.shape) != 4 or w4.type.dtype != x.type.dtype
            or _ints(w4.type.shape)[1:] != (c, kh, kw) or _ints(wr.outputs[0].type.shape)[1] != k):
        return None
    o = _ints(w4.type.shape)[0]
    if _ints(mm.outputs[0].type.shape) != (n, o, el):
        return None
    # the weight's gradient: sum over the images of matmul(G, t)
    summed = _summed_product(t, outs, x.type.dtype)
    if summed is None or _ints(summed[2].type.shape) != (n, o, el):
        return None
    dwb, dw, g = summed
    nodes = [unfold, r1, p1, t, dwb, dw]
    # the input's gradient, when taken: fold(reshape(permute(matmul(transpose(wr), G))))
    fold = None
    wt = next((u for u in _users(wr.outputs[0]) if u is not mm), None)
    if wt is not None:
        if not _transpose_of(wt) or len(_users(wr.outputs[0])) != 2 or id(wt.outputs[0]) in outs:
            return None
        dcols = _only(wt.outputs[0], outs)
        if dcols is None or dcols.op != "matmul" or dcols.inputs[1] is not g:
            return None
        dcp = _only(dcols.outputs[0], outs)
        if dcp is None or dcp.op != "permute" or _dims(dcp) != (1, 0, 2):
            return None
        dcr = _only(dcp.outputs[0], outs)
        if dcr is None or dcr.op != "reshape":
            return None
        fold = _only(dcr.outputs[0], outs)
        if (fold is None or fold.op != "fold" or _ints(fold.outputs[0].type.shape) != (n, c, h, w_)
                or any(fold.attrs.get(a) != unfold.attrs.get(a) for a in ("kernel", "stride", "padding", "dilation"))):
            return None
        if DX_BY_KERNELS:
            nodes += [wt, dcols, dcp, dcr, fold]
        else:
            fold = None
    elif len(_users(wr.outputs[0])) != 1:
        return None
    first = min(nodes[4:], key=lambda v: order[id(v)])
    if order[id(first)] < order[id(mm)] or (g.producer is not None and order[id(g.producer)] > order[id(first)]):
        return None
    return {"x": x, "w": w4, "unfold": unfold, "product": mm, "dw": dw, "dx": fold, "g": g, "first_grad": first,
            "nodes": nodes, "geometry": (o, oh, ow)}


def _geometry_args(unfold: Node) -> str:
    pad = [int(p) for p in unfold.attrs["padding"]]
    stride = tuple(int(s) for s in unfold.attrs["stride"])
    dilation = tuple(int(d) for d in unfold.attrs["dilation"])
    return f"{stride}, {(pad[0], pad[2])}, {dilation}, {tuple(pad)}"


def forward_lines(module: "NativeModule", parts: dict) -> list[str]:
    """The driver's lines at the product: the input made contiguous once (the backward reads
    it too) and the kernels' forward, as the product's (N, O, L) value."""
    if "lines" in parts:  # a forward alone (conv_images_split.py)
        return parts["lines"](module, parts)
    x, cx = module.names(parts["x"]), _contiguous_name(module, parts)
    o, oh, ow = parts["geometry"]
    n = _ints(parts["x"].type.shape)[0]
    return [f"{cx} = np.ascontiguousarray({x})",
            f"{module.names(parts['product'].outputs[0])} = _rt.conv_images({cx}, {module.names(parts['w'])}, "
            f"{(oh, ow)}, {_geometry_args(parts['unfold'])}).reshape(({n}, {o}, {oh * ow}))"]


def backward_lines(module: "NativeModule", parts: dict) -> list[str]:
    """The driver's lines at the first gradient node: dx (the fold's value) and dW (the
    summed product's) from one call of the kernels' backward."""
    if "lines" in parts:  # a weight gradient alone (conv_images_split.py)
        return parts["lines"](module, parts)
    o, oh, ow = parts["geometry"]
    n = _ints(parts["x"].type.shape)[0]
    dw = parts["dw"].outputs[0]
    dx = module.names(parts["dx"].outputs[0]) if parts["dx"] is not None else "_"
    return [f"{dx}, {module.names(dw)} = _rt.conv_images_backward({module.names(parts['g'])}.reshape(({n}, {o}, {oh}, "
            f"{ow})), {_contiguous_name(module, parts)}, {module.names(parts['w'])}, "
            f"{_geometry_args(parts['unfold'])}, {parts['dx'] is not None}, {tuple(_ints(dw.type.shape))})"]


def _contiguous_name(module: "NativeModule", parts: dict) -> str:
    return f"{module.names(parts['product'].outputs[0])}_x"
