"""An image-by-image convolution whose forward and gradients are in different graphs (a
module compiled as a drop-in: the remat split puts the product in the forward graph and the
weight's gradient in the backward's), each half run as eager's native kernels alone.

conv_images.py takes the pattern whole (forward and both gradients in one graph). Split by
static.passes.remat, the forward graph holds `unfold` -> reshape (K, N, L) -> permute
(N, K, L) -> matmul by the weight, and the backward graph the weight's gradient, the sum over
the images of G[n] @ cols[n]^T, from the columns made again there from the saved input
(the split saves the image, not its K-times-larger columns, for a backend declaring
Capabilities.image_convolutions). Compiled as library calls that is the columns written in
the forward (3.6 MB for W6's second layer), read by the products, made again in the
backward and read twice more; here the forward is gmnative.conv_kernels.conv2d_images and
the weight's gradient conv2d_images_backward, each image's columns made in a buffer of the
thread's own. The input's gradient (W^T G folded) comes from the same call (DX_BY_KERNELS),
except where the backward reads it before the image is made (a fused region recomputing the
image's activation beside an earlier layer's gradient): there it stays the library product
and the fold window function. Each half is matched alone, so
each is valid alone: the forward's columns read by the product only, the backward's by the
weight gradient only (and by nothing the graph returns). Each call falls back to the
library ops where the kernels cannot run (codegen.runtime).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from static.ir import Graph, Node, Value

from .conv_images import _columns, _dims, _geometry_args, _made_by, _only, _summed_product, _transpose_of, _users
from .indexing import _ints, _symbolic

if TYPE_CHECKING:
    from .driver import NativeModule

# Whether the backward's input gradient runs in the kernels too (W^T G[n] folded image by
# image, in cache) or as the library product and the fold window function (the kernels,
# as in conv_images.py's one-graph step). In the split backward the kernels
# gained: W6's drop-in fwd+bwd eager/compiled 1.14-1.16 with the product and fold against
# 1.21-1.28 with the kernels (3 alternated processes each, CPU time, load 5-7).
DX_BY_KERNELS = True


def claim_split(emit: dict, absorbed: set, graph: Graph, outs: set) -> None:
    """Enter the forward-only and gradient-only convolutions of `graph` (those conv_images.
    claim_images did not take whole) in a window plan (conv.plan), under conv_images' kinds
    (conv.window_op writes them by its forward_lines and backward_lines, which hand the
    parts' own "lines" the work)."""
    taken = set(emit) | absorbed
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    for unfold in graph.nodes:
        if id(unfold) in taken:
            continue
        parts = _columns(unfold, outs)
        if parts is None:
            continue
        fwd = _forward(parts, outs)
        bwd = None if fwd is not None else _backward(parts, outs, order)
        for found, kind in ((fwd, "forward"), (bwd, "backward")):
            if found is None or any(id(n) in taken for n in found["nodes"]):
                continue
            found["kind"], found["lines"] = kind, split_lines
            emit[id(found["at"])] = ("conv_images" if kind == "forward" else "conv_images_grad", found["at"], found)
            absorbed |= {id(n) for n in found["nodes"] if n is not found["at"]}
            taken |= {id(n) for n in found["nodes"]}


def _forward(cols: dict, outs: set) -> dict | None:
    """The product W @ cols[n] as the columns' one reader, W the reshaped (O, C, kh, kw)
    weight: the kernels' forward, written at the product."""
    n, c, _, _, kh, kw, oh, ow = cols["shape"]
    mm = _only(cols["permute"].outputs[0], outs)
    if mm is None or mm.op != "matmul" or mm.body is not None or mm.inputs[1] is not cols["permute"].outputs[0]:
        return None
    w4 = _weight(mm.inputs[0], cols)
    if w4 is None:
        return None
    o = _ints(w4.type.shape)[0]
    if _ints(mm.outputs[0].type.shape) != (n, o, oh * ow):
        return None
    return {"x": cols["x"], "w": w4, "unfold": cols["unfold"], "product": mm, "at": mm,
            "nodes": cols["nodes"] + [mm], "geometry": (o, oh, ow)}


def _weight(wm, cols: dict) -> Value | None:
    """The (O, C, kh, kw) weight of the same dtype as the image whose reshape is wm (O, K)."""
    _, c, _, _, kh, kw, _, _ = cols["shape"]
    wr = _made_by(wm, "reshape")
    if wr is None:
        return None
    w4 = wr.inputs[0]
    if (not isinstance(w4, Value) or len(w4.type.shape) != 4 or w4.type.dtype != cols["x"].type.dtype
            or any(_symbolic(d) for d in w4.type.shape) or _ints(w4.type.shape)[1:] != (c, kh, kw)):
        return None
    return w4


def _backward(cols: dict, outs: set, order: dict) -> dict | None:
    """The weight's gradient sum_n G[n] @ cols[n]^T as the columns' one reader (transpose,
    batched product, sum over the images): the kernels' backward, written at the first of the
    gradient's nodes (each reads G: the columns' nodes, recomputed first, do not). The
    weight is the one whose transposed reshape multiplies the same G (the input's gradient)
    where the graph has it; without it the kernels need only its shape (no dx)."""
    n, c, h, w_, kh, kw, oh, ow = cols["shape"]
    t = _only(cols["permute"].outputs[0], outs)
    if t is None or not _transpose_of(t) or id(t.outputs[0]) in outs:
        return None
    summed = _summed_product(t, outs, cols["x"].type.dtype)
    if summed is None or len(summed[2].type.shape) != 3 or any(_symbolic(d) for d in summed[2].type.shape):
        return None
    dwb, dw, g = summed
    gn, o, el = _ints(g.type.shape)
    if (gn, el) != (n, oh * ow):
        return None
    nodes = cols["nodes"] + [t, dwb, dw]
    w4, fold = None, None
    for dcols in _users(g):  # the input's gradient: fold(reshape(permute(W^T @ G)))
        if dcols.op != "matmul" or dcols.body is not None or dcols.inputs[1] is not g:
            continue
        wt = dcols.inputs[0].producer if isinstance(dcols.inputs[0], Value) else None
        if wt is None or not _transpose_of(wt):
            continue
        found = _weight(wt.inputs[0], cols)
        if found is None or _ints(found.type.shape)[0] != o:
            continue
        w4 = found
        if DX_BY_KERNELS:
            fold = _fold_of(dcols, cols, outs)
            if fold is not None:
                nodes += fold
        break
    at = _place([cols["x"], g, w4], nodes[len(cols["nodes"]) + 1:], [dw] + (fold[-1:] if fold else []), order)
    if at is None and fold:  # the input's gradient is read before the image is made: dW alone
        nodes, fold = nodes[:-len(fold)], None
        at = _place([cols["x"], g, w4], nodes[len(cols["nodes"]) + 1:], [dw], order)
    if at is None:
        return None
    return {"x": cols["x"], "w": w4, "unfold": cols["unfold"], "g": g, "dw": dw, "at": at,
            "dx": fold[-1] if fold else None, "nodes": nodes, "geometry": (o, oh, ow),
            "weight_shape": (o, c, kh, kw), "image": (n, c, h, w_)}


def _place(inputs: list, claimed: list, results: list, order: dict) -> Node | None:
    """The claimed node to write the kernels' backward at: the first after every node making
    one of its inputs and not after a node whose value it gives (its readers follow that
    node). None where there is none: a fused region of the backward may make the image (a
    recomputed activation) together with something read before the gradient is taken."""
    lo = max((order.get(id(v.producer), -1) for v in inputs if isinstance(v, Value) and v.producer is not None),
             default=-1)
    hi = min(order[id(n)] for n in results)
    fits = [n for n in claimed if lo < order[id(n)] <= hi]
    return min(fits, key=lambda n: order[id(n)]) if fits else None


def _fold_of(dcols: Node, cols: dict, outs: set) -> list | None:
    """[dcols, permute, reshape, fold] when the product W^T G is read only by its fold to the
    image's gradient with the unfold's geometry."""
    dcp = _only(dcols.outputs[0], outs)
    if dcp is None or dcp.op != "permute" or _dims(dcp) != (1, 0, 2):
        return None
    dcr = _only(dcp.outputs[0], outs)
    if dcr is None or dcr.op != "reshape":
        return None
    fold = _only(dcr.outputs[0], outs)
    unfold = cols["unfold"]
    if (fold is None or fold.op != "fold" or _ints(fold.outputs[0].type.shape) != _ints(cols["x"].type.shape)
            or any(fold.attrs.get(a) != unfold.attrs.get(a) for a in ("kernel", "stride", "padding", "dilation"))):
        return None
    return [dcols, dcp, dcr, fold]


def split_lines(module: "NativeModule", parts: dict) -> list[str]:
    """The driver's lines for one half: the forward's product from the kernels' forward, or
    dW (and dx, when taken) from one call of their backward."""
    o, oh, ow = parts["geometry"]
    n = _ints(parts["x"].type.shape)[0]
    geometry = _geometry_args(parts["unfold"])
    if parts["kind"] == "forward":
        product = module.names(parts["product"].outputs[0])
        return [f"{product}_x = np.ascontiguousarray({module.names(parts['x'])})",
                f"{product} = _rt.conv_images({product}_x, np.ascontiguousarray({module.names(parts['w'])}), "
                f"{(oh, ow)}, {geometry}).reshape(({n}, {o}, {oh * ow}))"]
    dw = parts["dw"].outputs[0]
    name = module.names(dw)
    if parts["w"] is not None:
        weight = f"np.ascontiguousarray({module.names(parts['w'])})"
    else:  # read for dx only, which is not taken here: its shape is what the kernels need
        weight = f"np.zeros({parts['weight_shape']}, np.{parts['x'].type.dtype.np.name})"
    dx = module.names(parts["dx"].outputs[0]) if parts["dx"] is not None else "_"
    return [f"{name}_x = np.ascontiguousarray({module.names(parts['x'])})",
            f"{dx}, {name} = _rt.conv_images_backward(np.ascontiguousarray({module.names(parts['g'])}).reshape(("
            f"{n}, {o}, {oh}, {ow})), {name}_x, {weight}, {geometry}, {parts['dx'] is not None}, "
            f"{tuple(_ints(dw.type.shape))})"]
