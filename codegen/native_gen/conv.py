"""Convolution and pooling windows as native C functions of the generated module.

A convolution, a pooling and their gradients reach the IR as `unfold` (im2col), `fold`
(col2im), a reshape of the windows and `argmax`/`take_along` over them (max-pooling), and
`index_mask` + `where` scattering the pooled gradient back (its VJP). Run as library
calls, each is a NumPy pass of its own over an array kh*kw times the image (the padded copy,
the strided copy of the windows, the argmax, the gathered values, the boolean mask, the
masked gradient, the fold's kh*kw strided adds): about 40% of the compiled CNN step (W6)
outside its matrix products. Here each becomes one threaded C loop nest:

- `unfold` of a 2-d image: the windows written straight from the image (no padded copy);
- `fold` of 2-d windows: each output row gathered from the windows that cover it, in the
  library's order of additions (kernel offsets in order), so the sums are its bits;
- max-pooling (`unfold` with -inf padding, reshaped to (C, kh*kw, N, oh, ow), `argmax` over
  the window axis and `take_along` of its values): one pass over the image giving the index
  and the value of each window's first maximum (NaN wins, as NumPy's argmax), without the
  window array;
- its gradient (`fold` of `where(index_mask(idx), g, 0)`): the fold reads the index and the
  gradient and adds g where the window's index says so, without the mask or the masked
  array (adding the zeros the library adds: the same bits).

Batch norm's normalization and gradient with their neighbours (batchnorm.py) are planned
here too, through the same hook of the driver. What a pattern needs is checked on the graph
(each absorbed value read by nothing else, the shapes a window reshape has, float32/float64,
no symbolic size); anything else runs as it did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gmbase import settings
from static.ir import Graph, Node, Value

from ..render import c_literal, c_type
from . import conv_images
from .batchnorm import (
    CChannelGradient,
    CChannelNormalize,
    CChannelRegion,
    channel_gradient,
    channel_normalize,
    channel_region,
)
from .batchnorm import absorbed as bn_absorbed
from .batchnorm_grad import (
    CChannelRegionGradient,
    region_gradient,
    summed_batch_product,
    summed_product_line,
    transposed_products,
    weight_absorbed,
    weight_product,
)
from .conv_images import backward_lines, claim_images, forward_lines
from .conv_planes import PlaneLoops, _disjoint, _padded_extent, mask_rows
from .function import CFunction
from .indexing import _ints, _prod, _symbolic, contiguous_strides, strided_source
from .pool_fusion import fuse_pools

if TYPE_CHECKING:
    from .driver import NativeModule

FLOATS = ("float32", "float64")


def enabled() -> bool:
    """Whether these ops (and batch norm's, batchnorm.py, planned here too) run as the native
    module's own functions (GRAPHMODE_NATIVE_WINDOWS, on unless 0; off, they are library calls
    as before, for measuring one against the other): part of the native module's cache key
    (fingerprint), since the generated code differs."""
    return settings.switch("GRAPHMODE_NATIVE_WINDOWS")


def fingerprint() -> str:
    """The cache key's part for the switches that change what this module writes: the window
    functions, and where a convolution's dx comes from (conv_images', conv_images_split's
    DX_BY_KERNELS: a test or a measurement sets them in a running process)."""
    from . import conv_images_split  # noqa: PLC0415  (it imports conv_images' helpers)

    return ("" if enabled() else ";native_windows=0") + ("" if conv_images.DX_BY_KERNELS else ";images_dx=0") \
        + ("" if conv_images_split.DX_BY_KERNELS else ";split_dx=0")


@dataclass
class WindowPlan:
    """What the driver does with each node of the graph that this module runs: `emit` maps
    a node to the kind of C function written at it, `absorbed` holds nodes whose values a
    function written at a later node computes (or needs no more): the driver writes nothing
    for them."""
    emit: dict = field(default_factory=dict)  # id(node) -> (kind, node, parts)
    absorbed: set = field(default_factory=set)  # id(node)


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def _only_user(v: Value, graph_outputs: set) -> Node | None:
    """v's one reading node, when nothing else (no other node, no graph output) reads v."""
    users = _users(v)
    if len(users) != 1 or id(v) in graph_outputs:
        return None
    return users[0]


def _float(v) -> bool:
    return isinstance(v, Value) and v.type.dtype.np.name in FLOATS


def _static(*values: Value) -> bool:
    return all(not _symbolic(d) for v in values for d in v.type.shape)


def _geometry2d(node: Node) -> tuple | None:
    """(KH, KW, SH, SW, PT, PL, DH, DW) of a 2-d unfold/fold node; None for other dims."""
    kernel = tuple(node.attrs.get("kernel", ()))
    if len(kernel) != 2:
        return None
    (kh, kw), (sh, sw), (dh, dw) = kernel, tuple(node.attrs["stride"]), tuple(node.attrs["dilation"])
    pad = tuple(node.attrs["padding"])
    return int(kh), int(kw), int(sh), int(sw), int(pad[0]), int(pad[2]), int(dh), int(dw)


def _unfold_ok(node: Node) -> bool:
    x = node.inputs[0] if node.inputs else None
    return (node.op == "unfold" and node.body is None and isinstance(x, Value) and _float(x)
            and _geometry2d(node) is not None
            and len(x.type.shape) == 4 and _static(x, node.outputs[0]) and _prod(x.type.shape) > 0
            and _prod(node.outputs[0].type.shape) > 0)


def _fold_ok(node: Node) -> bool:
    cols = node.inputs[0] if node.inputs else None
    return (node.op == "fold" and node.body is None and isinstance(cols, Value) and _float(cols)
            and _geometry2d(node) is not None
            and len(cols.type.shape) == 6 and _static(cols, node.outputs[0]) and _prod(cols.type.shape) > 0)


def _max_pool(unfold: Node, outs: set) -> tuple | None:
    """(reshape, argmax, take_along or None) reading the windows of a -inf padded unfold, when
    those are all that read them."""
    if float(unfold.attrs.get("pad_value", 0.0)) != float("-inf"):
        return None
    reshape = _only_user(unfold.outputs[0], outs)
    if reshape is None or reshape.op != "reshape" or reshape.body is not None:
        return None
    c, kh, kw, n, oh, ow = _ints(unfold.outputs[0].type.shape)
    windows = reshape.outputs[0]
    if _ints(windows.type.shape) != (c, kh * kw, n, oh, ow) or id(windows) in outs:
        return None
    readers = _users(windows)
    arg = [r for r in readers if r.op == "argmax"]
    if len(arg) != 1 or len(readers) > 2:
        return None
    argmax = arg[0]
    if argmax.body is not None or int(argmax.attrs["dim"]) % 5 != 1 or argmax.attrs.get("keepdim") \
            or argmax.outputs[0].type.dtype.np.name not in ("int64", "int8"):
        return None
    take = None
    for r in readers:
        if r is argmax:
            continue
        if (r.op != "take_along" or r.body is not None or r.inputs[0] is not windows or r.inputs[1] is not argmax.outputs[0]
                or int(r.attrs["dim"]) % 5 != 1 or r.attrs.get("keepdim")):
            return None
        take = r
    return reshape, argmax, take


def _pool_grad(fold: Node, outs: set) -> tuple | None:
    """(where, index_mask or None, index or mask, gradient) when fold adds back `where(mask,
    g, 0)` reshaped to windows, read by nothing else: max-pooling's gradient. The mask is
    `index_mask(index)` (read as the index, the mask absorbed) or, where a compiled backward
    receives it from its forward, a boolean array (C, kh*kw, N, oh, ow) read as it is."""
    reshape = fold.inputs[0].producer
    if reshape is None or reshape.op != "reshape" or reshape.body is not None:
        return None
    masked = reshape.inputs[0]
    if not isinstance(masked, Value) or _only_user(masked, outs) is not reshape or id(fold.inputs[0]) in outs:
        return None
    where = masked.producer
    if where is None or where.op != "where" or where.body is not None or len(where.inputs) != 3:
        return None
    mask, g, zero = where.inputs
    if isinstance(zero, Value) or float(zero) != 0.0 or not isinstance(mask, Value) or not _float(g):
        return None
    c, kh, kw, n, oh, ow = _ints(fold.inputs[0].type.shape)
    if (_ints(g.type.shape) != (c, 1, n, oh, ow) or _ints(masked.type.shape) != (c, kh * kw, n, oh, ow)
            or g.type.dtype != fold.outputs[0].type.dtype or not _static(mask, g)):
        return None
    index_mask = mask.producer
    if index_mask is not None and index_mask.op == "index_mask" and _only_user(mask, outs) is where:
        index = index_mask.inputs[0]
        if (int(index_mask.attrs["dim"]) == 1 and int(index_mask.attrs["size"]) == kh * kw
                and isinstance(index, Value) and _ints(index.type.shape) == (c, 1, n, oh, ow)
                and index.type.dtype.np.name in ("int64", "int8")):
            return where, index_mask, index, g
    if mask.type.dtype.np.name == "bool" and _ints(mask.type.shape) == (c, kh * kw, n, oh, ow):
        return where, None, mask, g
    return None


def _pool_mask(argmax: Node, outs: set) -> tuple | None:
    """(reshape, index_mask) when the pooling's index is read as `index_mask(reshape(index))`
    (a compiled forward whose backward receives the mask): the pooling writes the mask."""
    for user in _users(argmax.outputs[0]):
        if user.op != "reshape" or user.body is not None:
            continue
        c, n, oh, ow = _ints(argmax.outputs[0].type.shape)
        r = user.outputs[0]
        readers = _users(r)
        if (_ints(r.type.shape) != (c, 1, n, oh, ow) or id(r) in outs or len(readers) != 1
                or readers[0].op != "index_mask" or readers[0].body is not None
                or int(readers[0].attrs["dim"]) != 1):
            continue
        return user, readers[0]
    return None


def plan(graph: Graph) -> WindowPlan:
    """Which nodes of the graph run as the window functions of this module."""
    p = WindowPlan()
    outs = {id(v) for v in graph.outputs if isinstance(v, Value)}
    grads = {id(node): _pool_grad(node, outs) for node in graph.nodes if _fold_ok(node)}
    # index masks a gradient's fold reads as the index: no pooling writes those
    read_as_index = {id(g[1]) for g in grads.values() if g is not None and g[1] is not None}
    order = {id(node): k for k, node in enumerate(graph.nodes)}
    claim_images(p.emit, p.absorbed, graph, outs)  # image-by-image convolutions as eager's kernels
    for node in graph.nodes:
        if id(node) in p.emit or id(node) in p.absorbed:
            continue
        if _unfold_ok(node):
            pool = _max_pool(node, outs)
            if pool is not None:
                reshape, argmax, take = pool
                p.absorbed |= {id(node), id(reshape)} | ({id(take)} if take is not None else set())
                mask = _pool_mask(argmax, outs)
                if mask is not None and id(mask[1]) not in read_as_index and int(mask[1].attrs["size"]) == int(
                        node.attrs["kernel"][0]) * int(node.attrs["kernel"][1]):
                    p.absorbed |= {id(mask[0]), id(mask[1])}
                else:
                    mask = None
                p.emit[id(argmax)] = ("max_pool", node, (reshape, argmax, take, mask))
            else:
                p.emit[id(node)] = ("unfold", node, None)
        elif node.op == "normalize" and (bn := channel_normalize(node, outs, order)) is not None:
            p.absorbed |= bn_absorbed(bn)
            p.emit[id(node)] = ("bn_norm", node, bn)
        elif node.op == "fused" and (bn := channel_region(node, outs)) is not None:
            p.emit[id(node)] = ("bn_region", node, bn)
        elif node.op == "normalize_backward" and (bn := channel_gradient(node, outs)) is not None:
            p.absorbed |= bn_absorbed(bn)
            region = node.inputs[0].producer
            entry = p.emit.get(id(region)) if region is not None else None
            both = (region_gradient(region, entry[2], node, bn, outs, order)
                    if entry is not None and entry[0] == "bn_region" else None)
            if both is not None:  # the whole backward where the region runs (batchnorm_grad.py)
                weight_product(both, outs, order)
                p.absorbed |= {id(node)} | weight_absorbed(both)
                p.emit[id(region)] = ("bn_region_grad", region, both)
            else:
                p.emit[id(node)] = ("bn_grad", node, bn)
            rows = bn["rows"].outputs[0] if bn["rows"] is not None else None
            if rows is not None and (both is None or both.get("weight") is None):
                for product, src in transposed_products(rows, outs):
                    p.emit[id(product)] = ("weight_t", product, (rows, src))
        elif node.op == "sum" and (product := summed_batch_product(node, outs)) is not None:
            p.absorbed.add(id(product))
            p.emit[id(node)] = ("summed_product", node, product)
        elif _fold_ok(node):
            grad = grads[id(node)]
            if grad is not None:
                where, index_mask, _, _ = grad
                p.absorbed |= {id(where), id(node.inputs[0].producer)} | (
                    {id(index_mask)} if index_mask is not None else set())
                p.emit[id(node)] = ("pool_grad", node, grad)
            else:
                p.emit[id(node)] = ("fold", node, None)
    fuse_pools(p.emit, p.absorbed, outs)  # poolings of a batch norm's output in its function (pool_fusion.py)
    return p


def window_op(module: "NativeModule", node: Node, at: str) -> bool:
    """Whether node runs (or was run) as one of this module's C functions; the driver then
    writes nothing else for it."""
    if not enabled():
        return False
    p = getattr(module, "_window_plan", None)
    if p is None:
        p = plan(module.graph)
        setattr(module, "_window_plan", p)  # noqa: B010  (once per module: the driver holds no field for it)
    if id(node) in p.absorbed:
        module.body.append("# computed by the window function written below (codegen/native_gen/conv.py)")
        return True
    entry = p.emit.get(id(node))
    if entry is None:
        return False
    kind, anchor, parts = entry
    if kind == "weight_t":  # rows @ S^T as (S @ rows^T)^T (batchnorm_grad.transposed_products)
        rows, src = parts
        module.body.append(f"{module.names(node.outputs[0])} = np.ascontiguousarray(_rt.matmul("
                           f"{module.names(src)}, {module.names(rows)}.swapaxes(0, 1)).swapaxes(0, 1))")
        return True
    if kind in ("conv_images", "conv_images_grad"):  # eager's image-by-image kernels (conv_images.py)
        module.body += forward_lines(module, parts) if kind == "conv_images" else backward_lines(module, parts)
        return True
    if kind == "summed_product":  # sum_n a[n] @ b[n] as one product (batchnorm_grad.summed_batch_product)
        module.body.append(summed_product_line(module, node, parts))
        return True
    if kind == "bn_norm" and parts.get("bare") and parts.get("drop_y"):  # nothing reads xhat (bn_recompute.py)
        module.body.append(f"# %{node.outputs[0].name}: recomputed by its gradient's region, not stored (bn_recompute.py)")
        return True
    fn: CFunction
    if kind == "bn_grad":
        fn = CChannelGradient(module, node, f"gm_channels{len(module.functions)}", parts)
    elif kind == "bn_region_grad":
        fn = CChannelRegionGradient(module, node, f"gm_channels{len(module.functions)}", parts)
    elif kind == "bn_region":
        fn = CChannelRegion(module, node, f"gm_channels{len(module.functions)}", parts)
    elif kind == "bn_norm":
        fn = CChannelNormalize(module, node, f"gm_channels{len(module.functions)}", parts)
    else:
        fn = CWindow(module, node, f"gm_window{len(module.functions)}", kind, anchor, parts)
    module._native_function(fn, at)
    return True


class CWindow(PlaneLoops, CFunction):
    """One window function: unfold, fold, max-pooling (index and value) or its gradient."""

    def __init__(self, module: "NativeModule", node: Node, name: str, kind: str, anchor: Node, parts) -> None:
        super().__init__(module, name, node)
        self.kind, self.anchor, self.parts = kind, anchor, parts

    def _input(self, v: Value) -> tuple[str, tuple, int]:
        """(C array, element strides, element offset) of input v: the base array of a view
        read in place, else v itself (C-contiguous, as the call checks or converts)."""
        view = strided_source(v)
        if view is not None:
            base, strides, offset = view
            return self._param(v, self.m.names(base), writable=False, sized_by=base), strides, offset
        return self._param(v, self.m.contiguous(v), writable=False), contiguous_strides(_ints(v.type.shape)), 0

    def emit(self) -> None:
        getattr(self, f"_{self.kind}")()
        self._call()

    def _geometry(self) -> tuple:
        """The anchor's 2-d window geometry (the plan only takes 2-d windows)."""
        geometry = _geometry2d(self.anchor)
        assert geometry is not None, "a 2-d window op"
        return geometry

    def _unfold(self) -> None:
        node = self.anchor
        x, y = node.inputs[0], node.outputs[0]
        T = c_type(y.type.dtype)
        kh, kw, sh, sw, pt, pl, dh, dw = _geometry2d(node)  # type: ignore[misc]
        n, c, h, w = _ints(x.type.shape)
        oh, ow = _ints(y.type.shape)[4:]
        cx, (sn, sc, sy, sx), off = self._input(x)
        out = self._fresh_output(y)
        pad = c_literal(float(node.attrs.get("pad_value", 0.0)), T)
        rows = c * kh * kw * n
        if _padded_extent((kh, kw, sh, sw, pt, pl, dh, dw), oh, ow, T) is not None:
            self._unfold_padded(T, (kh, kw, sh, sw, pt, pl, dh, dw), n, c, h, w, oh, ow, cx, (sy, sx),
                                f"{off}LL + nn * {sn}LL + cc * {sc}LL", out, pad, y.name)
            return
        self.lines += [
            f"{{  // %{y.name} = unfold: {rows} window rows of {oh}x{ow} from ({n}, {c}, {h}, {w})",
            f"    {self._par(rows * oh * ow)}",
            # one image plane at a time (read from cache kh*kw times), each window offset (i, j)
            # one row of the columns: the reads stream through the image
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"    for (long long ij = 0; ij < {kh * kw}LL; ++ij) {{",
            f"        const long long nn = p / {c}, cc = p % {c}, i = ij / {kw}, j = ij % {kw};",
            f"        const long long r = (cc * {kh * kw} + ij) * {n} + nn;  // the row of the columns",
            f"        const {T}* src = {cx} + {off}LL + nn * {sn}LL + cc * {sc}LL;",
            f"        {T}* dst = {out} + r * {oh * ow}LL;",
            # the columns ox whose xx = ox * sw - pl + j * dw lies in the row: [lo, hi)
            f"        const long long a = {pl} - j * {dw};",
            f"        const long long lo = a <= 0 ? 0 : (a + {sw} - 1) / {sw};",
            f"        const long long top = {w} - 1 + a;",
            f"        const long long hi = top < 0 ? 0 : (top / {sw} + 1 < {ow} ? top / {sw} + 1 : {ow});",
            f"        for (long long oy = 0; oy < {oh}; ++oy) {{",
            f"            const long long yy = oy * {sh} - {pt} + i * {dh};",
            f"            {T}* d = dst + oy * {ow};",
            f"            if (yy < 0 || yy >= {h}) {{ for (long long ox = 0; ox < {ow}; ++ox) d[ox] = {pad}; continue; }}",
            f"            const {T}* s = src + yy * {sy}LL;",
            f"            for (long long ox = 0; ox < lo; ++ox) d[ox] = {pad};",
            f"            for (long long ox = lo; ox < hi; ++ox) d[ox] = s[ox * {sw * sx}LL - a * {sx}LL];",
            f"            for (long long ox = hi > lo ? hi : lo; ox < {ow}; ++ox) d[ox] = {pad};",
            "        }",
            "    }",
            "    }",
            "}",
        ]

    def _fold_rows(self, T: str, geometry: tuple, n: int, c: int, h: int, w: int, oh: int, ow: int, out: str,
                   term: str, what: str, row_base: str | None = None) -> None:
        """The loops of a fold: per output plane (image, channel), zeroed in cache, then each
        kernel offset (i, j) in order adds its window rows onto the rows they cover: every
        output element receives its addends in the library's order (offsets in order), so the
        sums are its bits. `term` is the C expression of the addend at window row `src` (an
        offset), column `ox`, offset k (`at`: the window's row in (C, N, oh, ow) order).

        Per plane rather than per output row: a row gathered from kh*kw window rows paid the
        loop's bounds and branches for each short row (W6's 3x3 input gradient: 0.7 ms on one
        thread); here the plane stays in L1 while the windows stream past once."""
        kh, kw, sh, sw, pt, pl, dh, dw = geometry
        self.lines += [
            f"{{  // %{self.anchor.outputs[0].name} = {what}: ({n}, {c}, {h}, {w}) from {kh}x{kw} windows of {oh}x{ow}",
            f"    {self._par(n * c * h * w * kh * kw)}",
            f"    for (long long p = 0; p < {n * c}LL; ++p) {{",
            f"        const long long nn = p / {c}, cc = p % {c};",
            f"        {T}* plane = {out} + p * {h * w}LL;",
            f"        for (long long e = 0; e < {h * w}LL; ++e) plane[e] = ({T})0;",
            f"        for (long long i = 0; i < {kh}; ++i) {{",
            # the window rows oy whose yy = oy * sh - pt + i * dh lies in the image: [ylo, yhi)
            f"            const long long b = {pt} - i * {dh};  // yy = oy * {sh} - b",
            f"            const long long ylo = b <= 0 ? 0 : (b + {sh} - 1) / {sh};",
            f"            const long long ytop = {h} - 1 + b;",
            f"            const long long yhi = ytop < 0 ? 0 : (ytop / {sh} + 1 < {oh} ? ytop / {sh} + 1 : {oh});",
            f"            for (long long j = 0; j < {kw}; ++j) {{",
            f"                const long long a = {pl} - j * {dw};  // x = ox * {sw} - a",
            f"                const long long lo = a <= 0 ? 0 : (a + {sw} - 1) / {sw};",
            f"                const long long top = {w} - 1 + a;",
            f"                const long long hi = top < 0 ? 0 : (top / {sw} + 1 < {ow} ? top / {sw} + 1 : {ow});",
            f"                const long long k = i * {kw} + j;",
            f"                const long long base = {row_base or f'(((cc * {kh} + i) * {kw} + j) * {n} + nn) * {oh * ow}LL'};",
            "                (void)k;",
            "                for (long long oy = ylo; oy < yhi; ++oy) {",
            f"                    {T}* row = plane + (oy * {sh} - b) * {w}LL;",
            f"                    const long long src = base + oy * {ow};",
            f"                    const long long at = ((cc * {n} + nn) * {oh} + oy) * {ow};",
            "                    (void)src; (void)at;",
            *self._add_loop(sw, term),
            "                }",
            "            }",
            "        }",
            "    }",
            "}",
        ]

    @staticmethod
    def _add_loop(sw: int, term: str) -> list[str]:
        """The innermost loop adding window row `src` (columns lo..hi) into the output row.
        With a stride of 1 it runs over the output's columns x (ox = x + a), a form gcc 12
        vectorizes correctly for AVX-512: its masked vector form of the loop over ox writing
        row[ox - a] gave wrong sums for some offsets (kernel 2, dilation 2)."""
        pad = "                    "
        if sw == 1:
            return [f"{pad}for (long long x = lo - a; x < hi - a; ++x) {{",
                    f"{pad}    const long long ox = x + a;",
                    f"{pad}    row[x] += {term};",
                    f"{pad}}}"]
        return [f"{pad}for (long long ox = lo; ox < hi; ++ox) row[ox * {sw} - a] += {term};"]

    def _fold(self) -> None:
        node = self.anchor
        cols, y = node.inputs[0], node.outputs[0]
        T = c_type(y.type.dtype)
        c, kh, kw, n, oh, ow = _ints(cols.type.shape)
        h, w = _ints(y.type.shape)[2:]
        # a view whose window rows are contiguous (the batch-major (N, K, L) columns of an
        # image-by-image product, permuted back to (K, N, L)) is read in place: each row's
        # start from the view's strides, no copy of the columns first
        view = strided_source(cols)
        row_base = None
        if view is not None and view[1][4] == ow and view[1][5] == 1:
            cc = self._param(cols, self.m.names(view[0]), writable=False, sized_by=view[0])
            st = view[1]
            row_base = f"(cc * {st[0]}LL + i * {st[1]}LL + j * {st[2]}LL + nn * {st[3]}LL + {view[2]}LL)"
        else:
            cc = self._param(cols, self.m.contiguous(cols), writable=False)
        out = self._fresh_output(y)
        geometry = self._geometry()
        if _padded_extent(geometry, oh, ow, T) is not None:
            self._fold_padded(T, geometry, n, c, h, w, oh, ow, cc, out, row_base)
            return
        self._fold_rows(T, geometry, n, c, h, w, oh, ow, out, f"{cc}[src + ox]", "fold", row_base)

    def _pool_grad(self) -> None:
        node = self.anchor
        _, index_mask, index, g = self.parts
        y = node.outputs[0]
        T = c_type(y.type.dtype)
        c, kh, kw, n, oh, ow = _ints(node.inputs[0].type.shape)
        h, w = _ints(y.type.shape)[2:]
        ci, si, oi = self._input(index)
        cg, sg, og = self._input(g)
        out = self._fresh_output(y)
        # element (cc, k, nn, oy, ox) of the index or mask and the gradient, through their strides
        at = f"{oi}LL + cc * {si[0]}LL + nn * {si[2]}LL + oy * {si[3]}LL + ox * {si[4]}LL"
        chosen = f"{ci}[{at}] == k" if index_mask is not None else f"{ci}[{at} + k * {si[1]}LL] != 0"
        grad = f"{cg}[{og}LL + cc * {sg[0]}LL + nn * {sg[2]}LL + oy * {sg[3]}LL + ox * {sg[4]}LL]"
        # g where chosen, else +0: g's bits masked by the comparison (a select of floats was a
        # branch, mispredicted on real indices), the very values `where(mask, g, 0)` gives
        bits = "unsigned int" if T == "float" else "unsigned long long"
        term = (f"({{ {T} g_ = {grad}; {bits} b_; __builtin_memcpy(&b_, &g_, sizeof b_); "
                f"b_ &= ({bits})0 - ({bits})({chosen}); __builtin_memcpy(&g_, &b_, sizeof g_); g_; }})")
        geometry = self._geometry()
        if _disjoint(geometry):
            self._pool_scatter(T, geometry, n, c, h, w, oh, ow, out, grad,
                               f"{ci}[{at}]" if index_mask is not None else None, term)
            return
        self._fold_rows(T, geometry, n, c, h, w, oh, ow, out, term,
                        "max-pooling's gradient (fold of the gradient where each window's maximum is)")

    def _max_pool(self) -> None:
        unfold = self.anchor
        _, argmax, take, mask = self.parts
        x = unfold.inputs[0]
        T = c_type(x.type.dtype)
        kh, kw, sh, sw, pt, pl, dh, dw = _geometry2d(unfold)  # type: ignore[misc]
        n, c, h, w = _ints(x.type.shape)
        oh, ow = _ints(unfold.outputs[0].type.shape)[4:]
        cx, (sn, sc, sy, sx), off = self._input(x)
        index = argmax.outputs[0]
        # the index is written unless what reads it is written here instead: the gathered
        # maxima (take_along) and the mask (a compiled forward saving the mask for its
        # backward wrote an int64 array nothing read: 8 bytes a window)
        absorbed_readers = {id(take)} if take is not None else set()
        if mask is not None:
            absorbed_readers.add(id(mask[0]))
        keep_index = (any(id(u) not in absorbed_readers for u in _users(index))
                      or any(v is index for v in self.m.graph.outputs))
        out_i = self._fresh_output(index) if keep_index else None
        out_v = self._fresh_output(take.outputs[0]) if take is not None else None
        out_m = self._fresh_output(mask[1].outputs[0]) if mask is not None else None
        store = [f"            {out_i}[at + ox] = best_k;"] if out_i is not None else []
        if out_v is not None:
            store.append(f"            {out_v}[at + ox] = best;")
        row_mask = []
        if out_m is not None:  # (C, kh*kw, N, oh, ow): window offset k of output (cc, nn, oy, ox)
            # the row's offsets kept, then each offset's mask row written contiguously: the
            # kh*kw stores a window, each to another plane, took 0.85 ms of W6's first pooling
            store.append("            chosen[ox] = (int)best_k;")
            row_mask = mask_rows(out_m, kh, kw, n, oh, ow)
        neg_inf = c_literal(float("-inf"), T)
        self.lines += [
            f"{{  // %{argmax.outputs[0].name} = max-pooling: first maximum of each {kh}x{kw} window of "
            f"({n}, {c}, {h}, {w}) (-inf padding, NaN wins)",
            f"    {self._par(c * n * oh * ow * kh * kw)}",
            # rows in the image's order (image, channel, row): the reads stream through memory
            # (in the results' order they jumped a whole image each row: 7x slower on W6)
            f"    for (long long r = 0; r < {c * n * oh}LL; ++r) {{",
            f"        const long long nn = r / {c * oh}, cc = (r / {oh}) % {c}, oy = r % {oh};",
            f"        const {T}* src = {cx} + {off}LL + nn * {sn}LL + cc * {sc}LL;",
            f"        const long long at = ((cc * {n} + nn) * {oh} + oy) * {ow}LL;",
            *([f"        int chosen[{ow}];"] if row_mask else []),
            "        #pragma omp simd",
            f"        for (long long ox = 0; ox < {ow}; ++ox) {{",
            *(self._unpadded_windows(T, kh, kw, sh, sw, dh, dw, sy, sx) if not any(int(p) for p in unfold.attrs["padding"])
              else self._padded_windows(T, kh, kw, sh, sw, pt, pl, dh, dw, h, w, sy, sx, neg_inf)),
            *store,
            "        }",
            *row_mask,
            "    }",
            "}",
        ]

    @staticmethod
    def _unpadded_windows(T: str, kh: int, kw: int, sh: int, sw: int, dh: int, dw: int, sy: int, sx: int) -> list:
        """A max-pooling's window loop without padding (no bounds checks): each cell taken where
        it beats the best so far or is the window's first NaN (nothing beats a NaN best): the
        first maximum, the first NaN winning (NumPy's argmax). Selects only, so the loop over a
        row's windows vectorizes (branches mispredicted on ReLU outputs made W6's first pooling
        6x slower, 1.17 against 0.19 ms; the scalar selects cost a third of its normalization)."""
        reads = []
        for i in range(kh):
            for j in range(kw):
                k = i * kw + j
                at = f"src[(oy * {sh} + {i * dh}) * {sy}LL + (ox * {sw} + {j * dw}) * {sx}LL]"
                reads += ([f"            {T} best = {at};", "            int best_i = 0;"] if k == 0 else [
                    f"            {{ const {T} v = {at}; const bool t = v > best || (v != v && best == best);",
                    f"              best_i = t ? {k} : best_i; best = t ? v : best; }}"])
        return reads + ["            const long long best_k = best_i;"]

    @staticmethod
    def _padded_windows(T: str, kh: int, kw: int, sh: int, sw: int, pt: int, pl: int, dh: int, dw: int, h: int,
                        w: int, sy: int, sx: int, neg_inf: str) -> list:
        """The window loop of a padded max-pooling: the positions inside the image only. A
        padded position is -inf: it never beats the start (-inf, index 0), which is what the
        window's argmax gives when no element of the image exceeds -inf."""
        return [
            f"            {T} best = {neg_inf};",
            "            long long best_k = 0;",
            f"            for (long long i = 0; i < {kh}; ++i) {{",
            f"                const long long yy = oy * {sh} - {pt} + i * {dh};",
            f"                if (yy < 0 || yy >= {h}) continue;",
            f"                for (long long j = 0; j < {kw}; ++j) {{",
            f"                    const long long xx = ox * {sw} - {pl} + j * {dw};",
            f"                    if (xx < 0 || xx >= {w}) continue;",
            f"                    const {T} v = src[yy * {sy}LL + xx * {sx}LL];",
            "                    if (best == best && (v > best || v != v)) { best = v; best_k = i * " + str(kw) + " + j; }",
            "                }",
            "            }",
        ]
