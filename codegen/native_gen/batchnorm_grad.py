"""Batch norm's whole backward per channel as one C function: the fused region before the
normalization's gradient (the ReLU's mask applied to the incoming gradient, the affine
part's gradients as channel sums, the gradient times the weight) and the gradient itself
(`normalize_backward`, with its channel sum and its channels-first rows), when the region's
full output is read by the gradient alone.

Apart (CChannelRegion, the region as one function of its own, here too; then batchnorm.py's
CChannelGradient), the region writes the
weighted gradient (an array the size of the image batch) that the gradient function then
reads twice. Here the first pass evaluates the region per element, adds up its channel sums
and the four sums the gradient needs, and the second pass evaluates the region's gradient
element again (from the mask and the incoming gradient, in cache: one channel at a time)
and writes the result: the weighted gradient is never stored. The region's sums are staged
in floats and summed per block in floats, the blocks added in double, as the region's own
function does, so they are its values; the gradient's sums likewise, shifted by the
channel's first element, as CChannelGradient's."""
from __future__ import annotations

from typing import TYPE_CHECKING

from gmops import REGISTRY
from static.ir import Graph, Node, Value

from ..c_kernel import KernelBody
from ..lowering import lowering_for
from ..render import c_literal, c_type
from .bn_product import dot_chunk, dot_runs, muladd_macros
from .bn_recompute import recomputed_sums
from .function import CFunction, _parallel
from .indexing import _ints, _prod, _symbolic, load
from .pool_fusion import scatter_lines, scatter_pad

if TYPE_CHECKING:
    from .driver import NativeModule

FLOATS = ("float32", "float64")


def over_all_but_channels(dims, shape: tuple) -> bool:
    """Whether a reduction over `dims` (None: all) of an array of `shape` sums each channel
    (dim 1) whole: every other dim reduced, those of size 1 optional (the graph drops them:
    a batch of one sums over the spatial dims only), the channels not reduced unless there
    is one."""
    nd = len(shape)
    reduced = set(range(nd)) if dims is None else {int(d) % nd for d in dims}
    need = set(range(nd)) - {1}
    extra, missing = reduced - need, need - reduced
    return (not extra or (extra == {1} and shape[1] == 1)) and all(shape[i] == 1 for i in missing)


def channel_region(node: Node, outs: set) -> dict | None:
    """A fused region over (N, C, *spatial) whose reductions are all sums over every axis but
    the channels (batch norm's affine + ReLU gradient: g masked by the ReLU, its channel sum
    for the bias and its sum times x for the weight, and the masked g times the weight for
    the normalization's gradient), read as one function: per channel, each element's
    prologue computed once, its pointwise outputs stored and every sum added on the way.
    The region's own loops walk the array once per output (three passes here). None when
    the region is anything else: another reduction, a value read after a reduction, an
    operand neither the full array nor one value per channel, a symbolic size."""
    body = node.body
    if node.op != "fused" or body is None or not node.outputs:
        return None
    reductions = [n for n in body.nodes if n.op == "sum"]
    if not reductions:
        return None
    shape = _ints(reductions[0].inputs[0].type.shape) if isinstance(reductions[0].inputs[0], Value) else ()
    if len(shape) < 3 or any(_symbolic(d) for d in shape) or _prod(shape) == 0:
        return None
    dims = (0, *range(2, len(shape)))
    dtype = reductions[0].inputs[0].type.dtype
    if dtype.np.name not in FLOATS:
        return None
    sums = {id(n) for n in reductions}
    sum_outputs = {id(n.outputs[0]) for n in reductions}
    for n in reductions:
        x = n.inputs[0]
        if (n.body is not None or not isinstance(x, Value) or _ints(x.type.shape) != shape or x.type.dtype != dtype
                or not over_all_but_channels(n.attrs["dims"], shape)
                or n.outputs[0].type.dtype != dtype):
            return None
    for n in body.nodes:
        if id(n) in sums:
            continue
        op = REGISTRY.get(n.op)
        if (op is None or op.kind != "elementwise" or n.body is not None or len(n.outputs) != 1
                or any(isinstance(v, Value) and id(v) in sum_outputs for v in n.inputs)
                or lowering_for(n.op).cupy.expr is None):
            return None
    c = shape[1]
    for p, outer in zip(body.inputs, node.inputs):
        if not isinstance(outer, Value):
            continue
        s = _ints(p.type.shape)
        padded = (1,) * (len(shape) - len(s)) + s
        if len(s) > len(shape) or not (padded == shape or padded == (1, c) + (1,) * (len(shape) - 2)
                                       or all(d == 1 for d in padded)):
            return None
    produced = {id(o) for n in body.nodes for o in n.outputs}
    seen: set = set()
    for y in body.outputs:
        if not isinstance(y, Value) or id(y) not in produced or id(y) in seen:
            return None  # a region input yielded as it is, or a value yielded twice
        seen.add(id(y))
        if id(y) not in sum_outputs and _ints(y.type.shape) != shape:
            return None
    return {"shape": shape, "dims": dims}


def _body_env(fn: CFunction, body: Graph, node: Node, shape: tuple, made: dict | None = None) -> dict:
    """The C operands of a channel region's body inputs (shape `shape`, (N, C, ...)): a literal
    for a constant, else the input read at the element (at + k), once per channel (cc) or once
    (0) by its broadcast shape; `made` maps id(input) to the C expression that makes it in the
    function instead (a pooling's gradient from its plane, pool_fusion.py; xhat's shifted
    input, bn_recompute.py)."""
    env: dict = {}
    made = made or {}
    for p, outer in zip(body.inputs, node.inputs):
        if not isinstance(outer, Value) or id(outer) in made:
            ctype = c_type(p.type.dtype)
            env[p] = (c_literal(outer, ctype), ctype) if not isinstance(outer, Value) else (made[id(outer)], ctype)
            continue
        cname = fn._param(p, fn.m.contiguous(outer), writable=False)
        s = _ints(p.type.shape)
        padded = (1,) * (len(shape) - len(s)) + s
        idx = "at + k" if padded == shape else ("0" if all(d == 1 for d in padded) else "cc")
        env[p] = load(cname, idx, p)
    return env


def _emit_body(fn: CFunction, body: Graph, node: Node, env: dict) -> tuple:
    """(the kernel body with the region's pointwise steps emitted, its channel sums, and the
    body's outputs by id to the region node's outputs)."""
    kb = KernelBody(fn.m.lines, env)
    for b in body.nodes:
        if b.op != "sum":
            kb.emit(b)
    reductions = [b for b in body.nodes if b.op == "sum"]
    return kb, reductions, dict(zip((id(y) for y in body.outputs), node.outputs))


# Elements of a channel's row staged and summed as one block (in place of the prelude's
# GM_STAGE, 256): a 28x28 image's 784 in one block, not 256 + 256 + 256 + 16, each block
# paying its reductions' horizontal sums and a short tail (W6's first batch norm gradient,
# whose second pass takes 9 dot products a block: 0.66 against 0.74 ms, one thread); four
# staged rows of 1024 floats stay in a 48 KiB L1.
BN_BLOCK = 1024
# A channel's pooled gradient planes kept from the first pass for the second when all of them
# fit in this many bytes of the thread's stack (W6's first block: 32 planes of 28x28, 100 KB):
# the scatter, scalar, cost a fifth of that gradient region made twice.
KEPT_PLANES_BYTES = 256 * 1024


def _staged_loops(n: int, c: int, hw: int) -> list[str]:
    """The loops' heads over channel cc's elements of an (n, c, hw) region in blocks of
    BN_BLOCK: image nn (its row at `at`), block [k0, k1), then element k (vectorized)."""
    return [
        f"        for (long long nn = 0; nn < {n}; ++nn) {{",
        f"            const long long at = (nn * {c} + cc) * {hw}LL;",
        f"            for (long long k0 = 0; k0 < {hw}; k0 += {BN_BLOCK}) {{",
        f"                const long long k1 = k0 + {BN_BLOCK} < {hw} ? k0 + {BN_BLOCK} : {hw};",
        "                #pragma omp simd",
        "                for (long long k = k0; k < k1; ++k) {",
    ]


def channel_parallel(size: int) -> str:
    """The pragma that spreads a per-channel loop over `size` elements across the threads, or
    the comment saying the calling thread runs it (little work)."""
    return ("#pragma omp parallel for num_threads(gm_nt) schedule(static)" if _parallel(size)
            else "// little work: the calling thread")


def _pointwise_stores(fn: CFunction, kb: KernelBody, body: Graph, outputs: dict, skip: Value | None) -> list[str]:
    """The stores of a region body's pointwise outputs at the element (at + k), cast to each
    output's dtype; the channel sums and `skip` (an output kept in registers) are left out."""
    stores = []
    for y in body.outputs:
        if (y.producer is not None and y.producer.op == "sum") or y is skip:
            continue
        cname = fn._fresh_output(outputs[id(y)])
        expr, ctype = kb.env[y]
        want = c_type(y.type.dtype)
        stores.append(f"{cname}[at + k] = {expr if ctype == want else f'({want})({expr})'};")
    return stores


def _channel_sums(fn: CFunction, kb: KernelBody, reductions: list, outputs: dict) -> tuple:
    """(stage declarations, stage stores, adds, block partials, final stores) of a region's
    channel sums: each operand staged per block of BN_BLOCK elements, summed over the block
    in its own dtype (partials p<j>, one SIMD reduction), each block's sum then added to the
    channel's double acc<j> (block_sums). Summing the block in double cost a conversion and
    two double lanes' adds per element: W6's first batch norm gradient took 1.03 against
    0.69 ms with its gradient sums also in floats per block (one thread)."""
    decls, stage, adds, accs, finals = [], [], [], [], []
    for j, red in enumerate(reductions):
        RT = c_type(red.inputs[0].type.dtype)
        decls.append(f"{RT} stage{j}[{BN_BLOCK}];")
        stage.append(f"stage{j}[k - k0] = {kb.operand(red.inputs[0], RT)};")
        adds.append(f"p{j} += stage{j}[k];")
        accs.append((f"p{j}", RT, f"acc{j}"))
        y = red.outputs[0]
        if id(y) in outputs:
            finals.append(f"{fn._fresh_output(outputs[id(y)])}[cc] = ({c_type(y.type.dtype)})acc{j};")
    return decls, stage, adds, accs, finals


def block_partials(partials: list) -> tuple[list[str], list[str]]:
    """(declarations before a block's reduction loop, adds after it) of block partials given
    as (name, C type, the double accumulator it is added to)."""
    return ([f"{T} {p} = ({T})0;" for p, T, _ in partials], [f"{acc} += (double){p};" for p, _, acc in partials])


def gradient_sums(T: str, x: str, g: str) -> tuple[list[str], str, list[str]]:
    """(declarations, loop body, adds) of batch norm's gradient sums over a block of a
    channel's elements x and g (C expressions at element k): d = x - x0f, summed as sx, sxx,
    sg, sgx in the dtype T over the block (partials f*), each block's partial added to the
    channel's double sums after its loop. The shift x0f (the channel's first element) keeps
    a large mean from cancelling; in double per element the sums cost a conversion and two
    double lanes per operand, most of the gradient's time on AVX-512."""
    return ([f"{T} fx = ({T})0, fxx = ({T})0, fg = ({T})0, fgx = ({T})0;"],
            f"const {T} d = ({x}) - x0f, gv = ({g}); fx += d; fxx += d * d; fg += gv; fgx += gv * d;",
            ["sx += (double)fx; sxx += (double)fxx; sg += (double)fg; sgx += (double)fgx;"])


def gradient_element(g: str, x: str) -> str:
    """The gradient of one element from its incoming gradient g and input x (C expressions),
    with channel_statistics' constants: rstd g + (xa ((x - x0f) - mean_d) + c1), in the
    dtype: x - x0f is exact for x near the shift, and mean_d (the mean less the shift) is
    rounded relative to the spread, not to the mean (a float mean of 1000 would have cost
    x - mean 3e-5 of its bits)."""
    return f"ga_t * ({g}) + (xa_t * ((({x}) - x0f) - md_t) + c1_t)"


def channel_statistics(count: int, eps: float, T: str = "double") -> list[str]:
    """The C lines from a channel's shifted sums (sx, sxx of d = x - x0; sg, sgx of g and g d
    over `count` elements) to batch norm's gradient as o = ga g + xa (x - mean) + c1
    (gradient_element, the constants rounded to T once: the element's arithmetic in T), and
    so for its sum: one text for the gradient kernel and the regions that absorb it.
    mean(g * xhat) = rstd * (E[g d] - E[d] E[g]); o = rstd (g - mg - xhat mgx) with
    xhat = (x - x0 - mean_d) rstd, as one multiply-add per operand.
    The sum is taken from the channel's sums, not from the elements: sum_k o_k =
    rstd (sg - count mg) + xa (sx - count mean_d), zero but for the double sums' rounding.
    The elements are computed in the dtype (gradient_element); summed as stored, their
    roundings (an ulp of rstd g each, the terms cancelling to a small o) added up to 1e-4
    on W6's first layer against the 1e-6 of eager's double arithmetic, on the
    gradient of the convolution bias before a batch norm, which is zero."""
    return [
        f"        const double mean_d = sx / {count}.0, mg = sg / {count}.0;",
        f"        double var = sxx / {count}.0 - mean_d * mean_d;",
        "        if (var < 0.0) var = 0.0;",
        f"        const double rstd = 1.0 / sqrt(var + {eps!r});",
        f"        const double mgx = rstd * (sgx / {count}.0 - mean_d * mg);",
        "        const double xa = -rstd * rstd * mgx;",
        f"        const {T} ga_t = ({T})rstd, xa_t = ({T})xa, c1_t = ({T})(-rstd * mg), md_t = ({T})mean_d;",
        f"        const double so = rstd * (sg - {count}.0 * mg) + xa * (sx - {count}.0 * mean_d);",
    ]


class CChannelRegion(CFunction):
    """A fused region whose reductions are channel sums, as one pass per channel
    (channel_region). The elements are staged in floats and summed in a second SIMD loop
    (per block in the dtype, the blocks added in double): a float comparison and a double
    accumulator in one loop kept it scalar."""

    def __init__(self, module: "NativeModule", node: Node, name: str, parts: dict) -> None:
        super().__init__(module, name, node)
        self.parts = parts

    def emit(self) -> None:
        node = self.node
        assert node is not None and node.body is not None
        body = node.body
        shape = self.parts["shape"]
        n, c = shape[0], shape[1]
        hw = _prod(shape[2:])
        kb, reductions, outputs = _emit_body(self, body, node, _body_env(self, body, node, shape))
        stores = _pointwise_stores(self, kb, body, outputs, None)
        stage_decls, stage_stores, adds, accs, finals = _channel_sums(self, kb, reductions, outputs)
        pdecls, padds = block_partials(accs)
        par = channel_parallel(n * c * hw)
        self.lines += [
            f"{{  // the region over ({n}, {c}, {hw}) per channel: {len(stores)} pointwise output(s) and "
            f"{len(reductions)} channel sum(s) in one pass",
            f"    {par}",
            f"    for (long long cc = 0; cc < {c}; ++cc) {{",
            "        double " + ", ".join(f"{a} = 0.0" for _, _, a in accs) + ";",
            *(f"        {d}" for d in stage_decls),
            *_staged_loops(n, c, hw),
            *(f"                    {s}" for s in kb.lines),
            *(f"                    {s}" for s in stores),
            *(f"                    {s}" for s in stage_stores),
            "                }",
            *(f"                {d}" for d in pdecls),
            f"                #pragma omp simd reduction(+:{', '.join(p for p, _, _ in accs)})",
            "                for (long long k = 0; k < k1 - k0; ++k) {",
            *(f"                    {a}" for a in adds),
            "                }",
            *(f"                {a}" for a in padds),
            "            }",
            "        }",
            *(f"        {f}" for f in finals),
            "    }",
            "}",
        ]
        self._call()


def region_gradient(region: Node, region_parts: dict, grad: Node, grad_parts: dict, outs: set,
                    order: dict) -> dict | None:
    """The parts of the combined function when `grad` (a normalize_backward that
    channel_gradient takes) reads as its gradient a full output of `region` (a channel region)
    that nothing else reads, over the same shape, and its input exists before the region
    runs; None otherwise."""
    g, x = grad.inputs
    if not isinstance(g, Value) or g.producer is not region or id(g) in outs:
        return None
    if len({id(n) for n in g.users}) != 1 or _ints(g.type.shape) != region_parts["shape"]:
        return None
    made = x.producer if isinstance(x, Value) else None
    if made is not None and order.get(id(made), len(order)) >= order[id(region)]:
        return None
    if sum(1 for o in region.outputs if o is g) != 1:
        return None
    return {"region": region_parts, "grad": grad, "grad_parts": grad_parts, "g": g, "region_node": region}


# the most rows of the other operand of a weight gradient computed in the gradient's pass
WEIGHT_ROWS = 32


def weight_product(parts: dict, outs: set, order: dict) -> None:
    """Adds to `parts` (region_gradient's) the product that reads the gradient's channels-first
    rows as `rows @ S^T` with S (K, N*H*W) of at most WEIGHT_ROWS rows that exists before the
    region runs: a convolution's weight gradient where the columns are few (the first layer
    of a CNN: K = C_in * kh * kw = 9 for one channel in). Its K dot products per channel are
    then taken in the gradient's second pass from the values in registers, and the rows are
    not stored when nothing else reads them. The product as a library call read the rows
    back and ran a (16, 25088) x (25088, 9) product at a quarter of the rate BLAS reaches on
    W6's wider products (13 against 55 GFLOP/s on one thread)."""
    gp = parts["grad_parts"]
    rows = gp["rows"]
    if rows is None or rows.outputs[0].type.dtype.np.name not in ("float32", "float64"):
        return
    r = rows.outputs[0]
    users = list({id(n): n for n in r.users}.values())
    products = [u for u in users if u.op == "matmul" and u.body is None and u.inputs[0] is r
                and isinstance(u.inputs[1], Value) and id(u.inputs[1]) != id(r)]
    if len(products) != 1:
        return
    product = products[0]
    t = product.inputs[1]
    tp = t.producer
    if tp is None or tp.op != "transpose" or tp.body is not None or not isinstance(tp.inputs[0], Value):
        return
    src = tp.inputs[0]
    c, count = _ints(r.type.shape)
    shape = _ints(src.type.shape)
    if (len(shape) != 2 or shape[1] != count or shape[0] > WEIGHT_ROWS or src.type.dtype != r.type.dtype
            or _ints(product.outputs[0].type.shape) != (c, shape[0])):
        return
    made = src.producer
    if made is not None and order.get(id(made), len(order)) >= order[id(parts["region_node"])]:
        return
    parts["weight"] = {"product": product, "transpose": tp, "src": src,
                       "rows_read": len(users) > 1 or id(r) in outs,
                       "transpose_read": len({id(n) for n in t.users}) > 1 or id(t) in outs}


def transposed_products(rows: Value, outs: set) -> list:
    """(product, S) for each `rows @ transpose(S)` reading a normalization gradient's
    channels-first rows (C, N*H*W) with S (K, N*H*W) of more rows than C: a convolution's
    weight gradient. The driver computes it as `(S @ rows^T)^T` (conv.window_op), the
    operand BLAS reads fastest: OpenBLAS took 1.0 ms for W6's (32, 6272) x (6272, 144)^T
    against 0.7 for (144, 6272) x (32, 6272)^T on one thread."""
    found = []
    c, count = _ints(rows.type.shape)
    for u in {id(n): n for n in rows.users}.values():
        t = u.inputs[1] if u.op == "matmul" and u.body is None and u.inputs[0] is rows else None
        tp = t.producer if isinstance(t, Value) else None
        if tp is None or tp.op != "transpose" or tp.body is not None or not isinstance(tp.inputs[0], Value):
            continue
        src = tp.inputs[0]
        shape = _ints(src.type.shape)
        if len(shape) == 2 and shape[1] == count and shape[0] > c and src.type.dtype == rows.type.dtype:
            found.append((u, src))
    return found


def summed_batch_product(node: Node, outs: set) -> Node | None:
    """The matmul of (N, M, L) by (N, L, K) that `node` sums over its batch axis (a weight's
    gradient through an image-by-image product: a convolution's dW), read by nothing else;
    None for any other sum."""
    x = node.inputs[0] if len(node.inputs) == 1 else None
    if not isinstance(x, Value):
        return None
    mm = x.producer
    if (mm is None or node.body is not None or list(node.attrs.get("dims") or ()) != [0] or mm.op != "matmul"
            or mm.body is not None or len(mm.inputs) != 2 or id(x) in outs
            or any(u is not node for u in x.users)):
        return None
    a, b = mm.inputs
    if not (isinstance(a, Value) and isinstance(b, Value) and a.type.dtype.np.name in ("float32", "float64")
            and b.type.dtype == a.type.dtype and x.type.dtype == a.type.dtype
            and len(a.type.shape) == 3 and len(b.type.shape) == 3
            and not any(_symbolic(d) for v in (a, b) for d in v.type.shape)):
        return None
    (n, _, el), (nb, lb, _) = _ints(a.type.shape), _ints(b.type.shape)
    return mm if n == nb and el == lb and n > 1 else None


def summed_product_line(module: "NativeModule", node: Node, product: Node) -> str:
    """The driver's line for summed_batch_product's sum: sum_n a[n] @ b[n] as one product over
    the rows of all images, (K, N*L) @ (N*L, M) transposed. b stacked is a view of the
    columns' transpose and a's rows are made contiguous (N*L, M) once, the operands BLAS reads
    fastest (W6's 3x3 layer: 32 products of (32, 196) x (196, 144)^T and their sum took 1.3 ms,
    this 0.8 on one thread); the same sums over images and positions, in another order."""
    a, b = (module.names(v) for v in product.inputs)
    n, m, el = _ints(product.inputs[0].type.shape)
    k = _ints(product.inputs[1].type.shape)[2]
    return (f"{module.names(node.outputs[0])} = np.ascontiguousarray(_rt.matmul("
            f"{b}.reshape(({n * el}, {k})).swapaxes(0, 1), np.ascontiguousarray("
            f"{a}.swapaxes(1, 2)).reshape(({n * el}, {m}))).swapaxes(0, 1)).reshape("
            f"{tuple(_ints(node.outputs[0].type.shape))})")


def weight_absorbed(parts: dict) -> set:
    """The nodes the combined function computes or makes unneeded (besides the gradient)."""
    w = parts.get("weight")
    if w is None:
        return set()
    return {id(w["product"])} | (set() if w["transpose_read"] else {id(w["transpose"])})


class CChannelRegionGradient(CFunction):
    """A channel region and the normalize_backward reading its output, in two passes per
    channel (region_gradient)."""

    def __init__(self, module: "NativeModule", node: Node, name: str, parts: dict) -> None:
        super().__init__(module, name, node)
        self.parts = parts

    def emit(self) -> None:
        node, parts = self.node, self.parts
        assert node is not None and node.body is not None
        body, grad, gp = node.body, parts["grad"], parts["grad_parts"]
        shape = parts["region"]["shape"]
        n, c = shape[0], shape[1]
        hw = _prod(shape[2:])
        count = n * hw
        x = grad.inputs[1]
        T = c_type(x.type.dtype)
        eps = float(grad.attrs["eps"])
        pool_grad = parts.get("pool_grad")  # the pooling's gradient made here per image (pool_fusion.py)
        xhat = parts.get("xhat") or []  # xhat read as x - x0f, its sums corrected (bn_recompute.py)
        cx = self._param(x, self.m.contiguous(x), writable=False)
        made = {id(h["outer"]): f"(({cx}[at + k]) - x0f)" for h in xhat}
        if pool_grad is not None:
            made[id(pool_grad["value"])] = "gplane[k]"
            if (pool_grad.get("gate") or {}).get("mask") is not None:  # the ReLU's mask applied in the scatter
                # (pool_fusion.gate_masks)
                made[id(pool_grad["gate"]["mask"])] = "false"
        env = _body_env(self, body, node, shape, made)
        scatter = scatter_lines(self, pool_grad) if pool_grad is not None else []
        weight = parts.get("weight")
        cs = self._param(weight["src"], self.m.contiguous(weight["src"]), writable=False) if weight else None
        kb, reductions, outputs = _emit_body(self, body, node, env)
        g_inner = next(y for y, o in zip(body.outputs, node.outputs) if o is parts["g"])
        stores = _pointwise_stores(self, kb, body, outputs, g_inner)
        # the full arrays first, the per-channel sums last (the call path makes small
        # outputs itself, as the last parameters)
        out_stores, grad_final = [], []
        if gp["keep"]:
            full = self._fresh_output(grad.outputs[0])
            out_stores.append(f"{full}[at + k] = o;")
        if gp["rows"] is not None and (weight is None or weight["rows_read"]):
            rows = self._fresh_output(gp["rows"].outputs[0])
            out_stores.append(f"{rows}[cc * {count}LL + nn * {hw}LL + k] = o;")
        decls, stage, adds, accs, finals = _channel_sums(self, kb, reductions, outputs)
        late = recomputed_sums(xhat, kb, reductions, (decls, stage, adds, accs, finals), BN_BLOCK)
        if gp["sum"] is not None:
            total = self._fresh_output(gp["sum"].outputs[0])
            grad_final.append(f"{total}[cc] = ({T})so;")
        kw_ = 0
        if weight is not None:
            kw_ = _ints(weight["src"].type.shape)[0]
            dw = self._fresh_output(weight["product"].outputs[0])
            grad_final.append(f"for (long long q = 0; q < {kw_}; ++q) {dw}[cc * {kw_} + q] = ({T})dwq[q];")
        g_expr = kb.operand(g_inner, T)
        # the channel's gradient values kept for the dot products (_second_pass) where they
        # fit: in the pooled gradient's planes (read once per element, overwritten in place)
        # or an array of their own
        kept = None
        if weight is not None and n * hw * x.type.dtype.np.itemsize <= KEPT_PLANES_BYTES:
            kept = "gplanes" if scatter else "oplanes"
        par = channel_parallel(n * c * hw)
        pdecls, padds = block_partials(accs)
        gdecls, gbody, gadds = gradient_sums(T, f"{cx}[at + k]", g_expr)
        sums = ", ".join([p for p, _, _ in accs] + ["fx", "fxx", "fg", "fgx"])
        # each sum's operand a local of the one loop that computes and adds it (an array
        # staged by a loop of its own and summed by a second cost W6's first gradient region
        # 0.025 of its 0.45 ms on one thread)
        types = {d.split("[")[0].split()[-1]: d.split()[0] for d in decls}
        stage = [f"const {types[line.split('[')[0]]} {line.split('[')[0]}_v = {line.split(' = ', 1)[1]}" for line in stage]
        adds = [line.replace("[k];", "_v;") for line in adds]
        planes_at = f"        // channel cc's sums over its {n} images"
        self.lines += [
            f"{{  // the region over ({n}, {c}, {hw}) per channel with batch norm's gradient of its output "
            f"%{parts['g'].name} (never stored): {len(reductions)} channel sum(s)"
            + (", the gradient's channel sums" if gp["sum"] is not None else "")
            + (", channels first" if gp["rows"] is not None else ""),
            f"    {par}",
            f"    for (long long cc = 0; cc < {c}; ++cc) {{",
            f"        const {T} x0f = {cx}[cc * {hw}LL];  // the shift: a large mean cancels nothing",
            "        const double x0 = (double)x0f;",
            "        double " + ", ".join(f"{a} = 0.0" for a in [a for _, _, a in accs] + ["sx", "sxx", "sg", "sgx"]) + ";",
            planes_at,
            *([f"        alignas(64) {T} oplanes[{n * hw}];  // the gradient's values, image by image"]
              if kept == "oplanes" else []),
            *_staged_loops(n, c, hw)[:-2],
            *(f"                {d}" for d in pdecls + gdecls),
            f"                #pragma omp simd reduction(+:{sums})",
            "                for (long long k = k0; k < k1; ++k) {",
            *(f"                    {s}" for s in kb.lines),
            *(f"                    {s}" for s in stores),
            *(f"                    {s}" for s in stage),
            *(f"                    {a}" for a in adds),
            f"                    {gbody}",
            "                }",
            *(f"                {a}" for a in padds + gadds),
            "            }",
            "        }",
            *(f"        {f}" for f in finals),
            *channel_statistics(count, eps, T),
            *(f"        {f}" for f in late),
            *(self._second_pass(T, kb, cx, cs, g_expr, out_stores, n, c, hw, kw_, kept) if weight is not None else [
                *_staged_loops(n, c, hw)[:-2],
                "                #pragma omp simd",
                "                for (long long k = k0; k < k1; ++k) {",
                *(f"                    {s}" for s in kb.lines),
                f"                    const {T} o = {gradient_element(g_expr, f'{cx}[at + k]')};",
                *(f"                    {s}" for s in out_stores),
                "                }",
                "            }",
                "        }"]),
            *(f"        {f}" for f in grad_final),
            "        (void)so;",
            "    }",
            "}",
        ]
        if scatter:  # each image's plane filled at its start in both passes, or kept from the first
            head = f"            const long long at = (nn * {c} + cc) * {hw}LL;"
            keep = kept == "gplanes" or (self.lines.count(head) == 2
                                          and n * hw * x.type.dtype.np.itemsize <= KEPT_PLANES_BYTES)
            lines, seen = [], 0
            for line in self.lines:
                lines.append(line)
                if line == planes_at:
                    over = scatter_pad(pool_grad) if pool_grad is not None else 0  # the last row's lanes over
                    lines.append(f"        alignas(64) {T} gplanes[{n * hw + over}];  // the channel's pooled gradient, "
                                 "image by image" if keep else
                                 f"        alignas(64) {T} gplane[{hw + over}];  // an image's pooled gradient")
                elif line == head:
                    seen += 1
                    if keep:
                        lines.append(f"            {'' if seen == 1 else 'const '}{T}* gplane = gplanes + nn * {hw}LL;")
                    if not keep or seen == 1:
                        lines += [f"            {s}" for s in scatter]
            self.lines = lines
        self._call()

    @staticmethod
    def _second_pass(T: str, kb: KernelBody, cx: str, cs: str | None, g_expr: str, out_stores: list, n: int, c: int,
                     hw: int, kw: int, kept: str | None = None) -> list[str]:
        """The gradient's second pass with the weight gradient's dot products (weight_product):
        where the channel's values are kept (`kept`, the array they go to), the dot products
        after the pass over runs across images, else over each staged chunk (bn_product.py)."""
        assert cs is not None
        return [
            f"        double dwq[{kw}] = {{0.0}};  // the weight gradient's {kw} dot products of this channel",
            *([f"        {T} ostage[{BN_BLOCK}];"] if kept is None else []),
            *(f"        {line}" for line in muladd_macros()),
            *_staged_loops(n, c, hw),
            *(f"                    {s}" for s in kb.lines),
            f"                    const {T} o = {gradient_element(g_expr, f'{cx}[at + k]')};",
            *(f"                    {s}" for s in out_stores),
            "                    " + (f"{kept}[nn * {hw}LL + k] = o;" if kept is not None else "ostage[k - k0] = o;"),
            "                }",
            *(dot_chunk(T, cs, n * hw, hw, kw) if kept is None else []),
            "            }",
            "        }",
            *(dot_runs(T, cs, n * hw, kw, kept) if kept is not None else []),
        ]
