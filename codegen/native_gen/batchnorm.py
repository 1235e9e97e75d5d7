"""Batch norm's gradient (`normalize_backward` over every dim but the channels) as one C
function of the native module, together with what reads it in a convolution's backward.

In a CNN's backward the normalized gradient is read twice: summed per channel (the
convolution bias's gradient) and, permuted to channels first and reshaped to (C, N*H*W),
as the left operand of the weight gradient's product. As library calls that is eager's kernel
(two passes over x and g), a NumPy reduction over the result and a NumPy copy of it to
channels first: five passes over an array the size of the image batch. Here one pass per
channel gathers the four sums the gradient needs (of x - x0, its square, g and g (x - x0),
shifted by the channel's first element so that a large mean does not cancel the variance;
in the dtype over blocks of BN_BLOCK elements, the blocks added in double) and a second
writes the gradient straight in the layouts its readers want; the channel's sum of it comes
from the four sums (batchnorm_grad.channel_statistics). The values are eager's up to
rounding (sums in another order), within the tolerances compiled code is held to
(static.jit.check)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from gmops import REGISTRY
from static.ir import Node, Value

from ..c_kernel import KernelBody
from ..lowering import lowering_for
from ..render import c_literal, c_type
from .batchnorm_grad import (  # noqa: F401  (CChannelRegion, channel_region, over_all_but_channels: conv.py's)
    BN_BLOCK,
    CChannelRegion,
    channel_parallel,
    channel_region,
    channel_statistics,
    gradient_element,
    gradient_sums,
    over_all_but_channels,
)
from .bn_product import direct_product, weight_lines
from .bn_product import element as product
from .function import CFunction
from .indexing import _ints, _prod, _symbolic, load
from .pool_fusion import plane_pad, pool_lines

if TYPE_CHECKING:
    from .driver import NativeModule

FLOATS = ("float32", "float64")


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def channel_gradient(node: Node, outs: set) -> dict | None:
    """What a normalize_backward over batch norm's dims computes as one function: its readers
    absorbed (a per-channel `sum`, a channels-first `permute` and the `reshape` to rows after
    it) and whether its own array is still needed; None when it is not such a node."""
    if node.op != "normalize_backward" or node.body is not None or len(node.inputs) != 2:
        return None
    g, x = node.inputs
    y = node.outputs[0]
    if not (isinstance(g, Value) and isinstance(x, Value)) or x.type.dtype.np.name not in FLOATS:
        return None
    shape = _ints(x.type.shape)
    if (g.type.dtype != x.type.dtype or _ints(g.type.shape) != shape or len(shape) < 2
            or any(_symbolic(d) for d in shape) or _prod(shape) == 0
            or tuple(int(d) for d in node.attrs["dims"]) != (0, *range(2, len(shape)))):
        return None
    c = shape[1]
    rows = (c, _prod(shape) // c)
    parts: dict = {"sum": None, "permute": None, "rows": None, "keep": id(y) in outs}
    for user in _users(y):
        if (user.op == "sum" and user.body is None and parts["sum"] is None and user.inputs[0] is y
                and over_all_but_channels(user.attrs["dims"], shape)):
            parts["sum"] = user
            continue
        if (user.op == "permute" and user.body is None and parts["permute"] is None
                and tuple(int(d) for d in user.attrs["dims"]) == (1, 0, *range(2, len(shape)))
                and id(user.outputs[0]) not in outs):
            readers = _users(user.outputs[0])
            if (len(readers) == 1 and readers[0].op == "reshape" and readers[0].body is None
                    and _ints(readers[0].outputs[0].type.shape) == rows):
                parts["permute"], parts["rows"] = user, readers[0]
                continue
        parts["keep"] = True
    if parts["sum"] is None and parts["permute"] is None:
        return None  # nothing to gain over eager's kernel, which the library call runs
    return parts


def _blocks(n: int, c: int, hw: int, cx: str, cg: str | None, T: str) -> list[str]:
    """The loops' heads over channel cc's elements in blocks of BN_BLOCK (image nn, its rows
    xp of x and gp of the gradient, block [k0, k1)): each block's sums are taken in the
    dtype and added to the channel's double sums after it."""
    return [
        f"        for (long long nn = 0; nn < {n}; ++nn) {{",
        f"            const {T}* xp = {cx} + (nn * {c} + cc) * {hw}LL;",
        *([f"            const {T}* gp = {cg} + (nn * {c} + cc) * {hw}LL;"] if cg is not None else []),
        f"            for (long long k0 = 0; k0 < {hw}; k0 += {BN_BLOCK}) {{",
        f"                const long long k1 = k0 + {BN_BLOCK} < {hw} ? k0 + {BN_BLOCK} : {hw};",
    ]


class CChannelGradient(CFunction):
    """normalize_backward(g, x) over all dims but 1, with its per-channel sum and its
    channels-first rows, each written where a reader was found."""

    def __init__(self, module: "NativeModule", node: Node, name: str, parts: dict) -> None:
        super().__init__(module, name, node)
        self.parts = parts

    def emit(self) -> None:
        node, parts = self.node, self.parts
        assert node is not None
        g, x = node.inputs
        shape = _ints(x.type.shape)
        n, c = shape[0], shape[1]
        hw = _prod(shape[2:])
        T = c_type(x.type.dtype)
        eps = float(node.attrs["eps"])
        cg = self._param(g, self.m.contiguous(g), writable=False)
        cx = self._param(x, self.m.contiguous(x), writable=False)
        stores, finals = [], []
        if parts["keep"]:
            full = self._fresh_output(node.outputs[0])
            stores.append(f"{full}[(nn * {c} + cc) * {hw}LL + k] = o;")
        if parts["rows"] is not None:
            rows = self._fresh_output(parts["rows"].outputs[0])
            stores.append(f"{rows}[cc * {n * hw}LL + nn * {hw}LL + k] = o;")
        if parts["sum"] is not None:
            total = self._fresh_output(parts["sum"].outputs[0])
            finals.append(f"{total}[cc] = ({T})so;")
        par = channel_parallel(n * c * hw)
        count = n * hw
        gdecls, gbody, gadds = gradient_sums(T, "xp[k]", "gp[k]")
        self.lines += [
            f"{{  // %{node.outputs[0].name} = batch norm's gradient over ({n}, {c}, {hw}) per channel"
            + (", its channel sums" if parts["sum"] is not None else "")
            + (", channels first" if parts["rows"] is not None else ""),
            f"    {par}",
            f"    for (long long cc = 0; cc < {c}; ++cc) {{",
            f"        const {T} x0f = {cx}[cc * {hw}LL];  // the shift: a large mean cancels nothing",
            "        const double x0 = (double)x0f;",
            "        double sx = 0.0, sxx = 0.0, sg = 0.0, sgx = 0.0;",
            *_blocks(n, c, hw, cx, cg, T),
            *(f"                {d}" for d in gdecls),
            "                #pragma omp simd reduction(+:fx, fxx, fg, fgx)",
            "                for (long long k = k0; k < k1; ++k) {",
            f"                    {gbody}",
            "                }",
            *(f"                {a}" for a in gadds),
            "            }",
            "        }",
            *channel_statistics(count, eps, T),
            *_blocks(n, c, hw, cx, cg, T),
            "                #pragma omp simd",
            "                for (long long k = k0; k < k1; ++k) {",
            f"                    const {T} o = {gradient_element('gp[k]', 'xp[k]')};",
            *(f"                    {line}" for line in stores),
            "                }",
            "            }",
            "        }",
            *(f"        {line}" for line in finals),
            "        (void)so;",
            "    }",
            "}",
        ]
        self._call()


def channel_normalize(node: Node, outs: set, order: dict) -> dict | None:
    """What a normalize over batch norm's dims computes as one function: the variances of
    its input over the same dims that are read after it (batch norm's running variance, of
    the input or of its stop_gradient), absorbed; None when there is none to take."""
    if node.op != "normalize" or node.body is not None or len(node.inputs) != 1:
        return None
    x = node.inputs[0]
    if not isinstance(x, Value) or x.type.dtype.np.name not in FLOATS:
        return None
    shape = _ints(x.type.shape)
    dims = (0, *range(2, len(shape)))
    if (len(shape) < 2 or any(_symbolic(d) for d in shape) or _prod(shape) == 0
            or tuple(int(d) for d in node.attrs["dims"]) != dims):
        return None
    sources = [x] + [u.outputs[0] for u in _users(x) if u.op == "stop_gradient" and u.body is None]
    variances = [u for v in sources for u in _users(v)
                 if u.op == "var" and u.body is None and u.inputs[0] is v and order.get(id(u), -1) > order[id(node)]
                 and over_all_but_channels(u.attrs["dims"], shape)
                 and u.outputs[0].type.dtype == x.type.dtype]
    after = _pointwise_after(node, outs, order)
    before = _bias_add_before(node, order)
    if before is not None:  # a narrow product computed in the first pass itself (bn_product.py)
        before["direct"] = direct_product(before, outs, order, order[id(node)])
    means = [u for v in sources for u in _users(v) if order.get(id(u), -1) > order[id(node)]
             and _channel_mean(u, v, shape)]
    if not variances and after is None and before is None and not means:
        # a split backward's recomputed xhat (static.passes.remat._channel_normalizations):
        # taken where only fused regions read it, so that bn_recompute.drop_normalized can
        # let their gradient recompute it and nothing be written (parts["bare"])
        readers = _users(node.outputs[0])
        if id(node.outputs[0]) in outs or not readers or any(u.op != "fused" or u.body is None for u in readers):
            return None
        return {"var": [], "after": None, "before": None, "means": [], "bare": True}
    return {"var": variances, "after": after, "before": before, "means": means}


def _channel_mean(region: Node, x: Value, shape: tuple) -> bool:
    """Whether `region` (a fused node) reads x alone and computes its per-channel mean and
    then pointwise ops of that mean and numbers (batch norm's running-mean term, `mean(x) *
    momentum`): the normalization has the sum it needs."""
    body = region.body
    if region.op != "fused" or body is None or len(region.inputs) != 1 or region.inputs[0] is not x:
        return False
    first = body.nodes[0] if body.nodes else None
    if (first is None or first.op != "mean" or first.body is not None or first.inputs[0] is not body.inputs[0]
            or first.attrs.get("keepdim") or not over_all_but_channels(first.attrs["dims"], shape)
            or first.outputs[0].type.dtype != x.type.dtype):
        return False
    c = shape[1]
    for b in body.nodes[1:]:
        op = REGISTRY.get(b.op)
        if (op is None or op.kind != "elementwise" or b.body is not None or len(b.outputs) != 1
                or lowering_for(b.op).cupy.expr is None or _prod(_ints(b.outputs[0].type.shape)) != c
                or any(isinstance(v, Value) and v is body.inputs[0] for v in b.inputs)):
            return False
    return all(isinstance(o, Value) and o.producer is not None and _prod(_ints(o.type.shape)) == c
               for o in body.outputs)


def _bias_add_before(node: Node, order: dict) -> dict | None:
    """The convolution's bias add that makes the normalization's input, `permute(reshape(M))
    + b` with M the product's (C, N*H*W) result, or `reshape(M) + b` with M the image-by-image
    product's (N, C, H*W) (layout "batch_major"), and b one value per channel, when nothing
    reads its result before the normalization: the normalization's first pass then reads M
    and b and writes the sum itself (the add's own pass over the product, gone). None
    otherwise."""
    x = node.inputs[0]
    add = x.producer
    if add is None or add.op != "add" or add.body is not None or len(add.inputs) != 2:
        return None
    at = order[id(node)]
    # (a user outside this graph, as a backward graph's normalize_backward reading the
    # forward's saved input, reads it after this graph has run)
    if any(u is not node and id(u) in order and order[id(u)] <= at for u in _users(x)):
        return None
    shape = _ints(x.type.shape)
    nd, c = len(shape), shape[1]
    for perm_v, bias in (add.inputs, add.inputs[::-1]):
        if not (isinstance(perm_v, Value) and isinstance(bias, Value)):
            continue
        perm = perm_v.producer
        if perm is not None and perm.op == "reshape" and perm.body is None and isinstance(perm.inputs[0], Value):
            # reshape(M) + b, M the image-by-image product (N, C, H*W): x's own order
            m, layout = perm.inputs[0], "batch_major"
            if _prod(_ints(m.type.shape)) != _prod(shape) or m.producer is None or m.producer.op != "matmul":
                continue
        else:
            if (perm is None or perm.op != "permute" or perm.body is not None
                    or tuple(int(d) for d in perm.attrs["dims"]) != (1, 0, *range(2, nd))
                    or _ints(perm.inputs[0].type.shape) != (c, shape[0], *shape[2:])):
                continue
            reshape = perm.inputs[0].producer if isinstance(perm.inputs[0], Value) else None
            if reshape is None or reshape.op != "reshape" or reshape.body is not None:
                continue
            m, layout = reshape.inputs[0], "channel_major"
        bs = _ints(bias.type.shape)
        padded = (1,) * (nd - len(bs)) + bs
        source = _available(bias, at, order)
        if (not isinstance(m, Value) or m.type.dtype != x.type.dtype or bias.type.dtype != x.type.dtype
                or len(bs) > nd or padded != (1, c) + (1,) * (nd - 2) or source is None
                or (m.producer is not None and order.get(id(m.producer), at) >= order[id(add)])):
            continue
        return {"add": add, "product": m, "bias": source, "layout": layout}
    return None


def _available(v: Value, at: int, order: dict) -> Value | None:
    """The value whose array holds v's elements in order that exists before position `at`
    of the graph: v itself (a graph input or a value made earlier) or, for v a reshape made
    later, the reshaped value when that one exists (a batch norm's weight reshaped to (1, C,
    1, 1) right before its use); None otherwise."""
    made = v.producer
    if made is None or order.get(id(made), at) < at:
        return v
    if made.op == "reshape" and made.body is None and isinstance(made.inputs[0], Value):
        src = made.inputs[0]
        if src.producer is None or order.get(id(src.producer), at) < at:
            return src
    return None


def _pointwise_after(node: Node, outs: set, order: dict) -> dict | None:
    """The fused pointwise region that reads the normalization's result (batch norm's affine
    part and activation: `relu(y * w + b)` and the ReLU's mask for the backward), computed
    in the normalization's second pass while each element is in a register: its operands
    are the normalized array, one value per channel or one number, each of which exists
    where the normalization runs. None when no such region reads it."""
    y = node.outputs[0]
    shape = _ints(y.type.shape)
    c = shape[1]
    at = order[id(node)]
    for user in _users(y):
        body = user.body
        if user.op != "fused" or body is None or not user.outputs or order.get(id(user), -1) <= at:
            continue
        if any(REGISTRY.get(b.op) is None or REGISTRY[b.op].kind != "elementwise" or b.body is not None
               or len(b.outputs) != 1 or lowering_for(b.op).cupy.expr is None for b in body.nodes):
            continue
        operands: dict = {}
        for p, outer in zip(body.inputs, user.inputs):
            if not isinstance(outer, Value):
                continue
            if outer is y and _ints(p.type.shape) == shape:
                operands[id(p)] = ("y", None)
                continue
            ps = _ints(p.type.shape)
            padded = (1,) * (len(shape) - len(ps)) + ps
            source = _available(outer, at, order)
            if (len(ps) > len(shape) or source is None or _prod(ps) not in (1, c)
                    or not (padded == (1, c) + (1,) * (len(shape) - 2) or all(d == 1 for d in padded))):
                operands = {}
                break
            operands[id(p)] = ("channel" if _prod(ps) == c and c != 1 else "number", source)
        if not operands or not any(kind == "y" for kind, _ in operands.values()):
            continue
        produced = {id(o) for b in body.nodes for o in b.outputs}
        if all(isinstance(o, Value) and id(o) in produced and _ints(o.type.shape) == shape for o in body.outputs) \
                and len({id(o) for o in body.outputs}) == len(body.outputs):
            return {"node": user, "operands": operands}
    return None


class CChannelNormalize(CFunction):
    """normalize(x) over all dims but 1, with the variances of x read after it."""

    def __init__(self, module: "NativeModule", node: Node, name: str, parts: dict) -> None:
        super().__init__(module, name, node)
        self.parts = parts

    def emit(self) -> None:
        node = self.node
        assert node is not None
        x = node.inputs[0]
        shape = _ints(x.type.shape)
        n, c = shape[0], shape[1]
        hw = _prod(shape[2:])
        count = n * hw
        T = c_type(x.type.dtype)
        eps = float(node.attrs["eps"])
        before = self.parts.get("before")
        direct = None
        cw = ccols = cm = ""  # (the product's parameters, as the first pass reads them)
        if before is None:
            cx = self._param(x, self.m.contiguous(x), writable=False)
        else:  # x = permute(M) + b: M (C, N*H*W) and b read, x written in the first pass
            direct = before["direct"]
            if direct is None:
                cm = self._param(before["product"], self.m.contiguous(before["product"]), writable=False)
            else:  # M = W @ cols made here: W (C, K) and cols (K, N*H*W) read
                cw = self._param(direct["w"], self.m.contiguous(direct["w"]), writable=False)
                ccols = self._param(direct["cols"], self.m.contiguous(direct["cols"]), writable=False)
            cb = self._param(before["bias"], self.m.contiguous(before["bias"]), writable=False,
                             sized_by=before["bias"])
        env = self._after_inputs(T) if self.parts.get("after") is not None else None  # inputs before outputs
        if before is not None:
            cx = self._fresh_output(x)
        keep_y = not self.parts.get("drop_y")  # xhat unstored where its gradient recomputes it (bn_recompute.py)
        out = self._fresh_output(node.outputs[0]) if keep_y else ""
        pool = self.parts.get("pool")  # a max-pooling of the region's output, done here (pool_fusion.py)
        after_lines = self._after(env, pool) if env is not None else []
        pool_lines = self._pool(pool) if pool is not None else []
        finals = self._means(T, count)
        for v in self.parts["var"]:
            dof = max(count - int(v.attrs["correction"]), 0)
            finals.append(f"{self._fresh_output(v.outputs[0])}[cc] = ({T})(m2 / {dof}.0);  // var, correction "
                          f"{int(v.attrs['correction'])}")
        par = channel_parallel(n * c * hw)
        def row(nn: str) -> str:  # where the product's row (image nn, channel cc) starts
            if before is not None and before["layout"] == "batch_major":
                return f"({nn} * {c} + cc) * {hw}LL"
            return f"cc * {count}LL + {nn} * {hw}LL"
        # the sums of d = x - x0f over each block of BN_BLOCK elements in the dtype, added to
        # double sums after it (in double per element they cost W6's first normalization
        # about a third of its time)
        block_sums = [
            f"                {T} fx = ({T})0, fxx = ({T})0;",
            "                #pragma omp simd reduction(+:fx, fxx)",
            "                for (long long k = k0; k < k1; ++k) {",
        ]
        block_end = ["                }", "                sx += (double)fx; sxx += (double)fxx;", "            }", "        }"]
        first_m = product(direct, ccols, "0") if direct is not None else f"{cm}[{row('0')}]"  # M's first element
        first_pass = [] if before is None else [
            f"        const {T} bias = {cb}[cc];",
            *([f"        {line}" for line in weight_lines(direct, cw, T)] if direct is not None else []),
            f"        const {T} x0f = ({T})({first_m} + bias);  // the shift: a large mean cancels nothing",
            "        double sx = 0.0, sxx = 0.0;",
            f"        for (long long nn = 0; nn < {n}; ++nn) {{",
            *([f"            const {T}* mp = {cm} + {row('nn')};"] if direct is None else []),
            f"            {T}* xp = {cx} + (nn * {c} + cc) * {hw}LL;",
            f"            for (long long k0 = 0; k0 < {hw}; k0 += {BN_BLOCK}) {{",
            f"                const long long k1 = k0 + {BN_BLOCK} < {hw} ? k0 + {BN_BLOCK} : {hw};",
            *block_sums,
            f"                    const {T} v = ({T})("
            + (product(direct, ccols, f"nn * {hw}LL + k") if direct is not None else "mp[k]")
            + " + bias);  // the bias add",
            "                    xp[k] = v;",
            f"                    const {T} d = v - x0f; fx += d; fxx += d * d;",
            *block_end,
        ]
        self.lines += [
            f"{{  // %{node.outputs[0].name} = batch norm's normalization over ({n}, {c}, {hw}) per channel, "
            "with the variance of its input"
            + (f" and the bias add making it (%{x.name})" if before is not None else ""),
            f"    {par}",
            f"    for (long long cc = 0; cc < {c}; ++cc) {{",
            *(first_pass if before is not None else [
                f"        const {T} x0f = {cx}[cc * {hw}LL];  // the shift: a large mean cancels nothing",
                "        double sx = 0.0, sxx = 0.0;",
                *_blocks(n, c, hw, cx, None, T),
                *block_sums,
                f"                    const {T} d = xp[k] - x0f; fx += d; fxx += d * d;",
                *block_end]),
            "        const double x0 = (double)x0f;",
            f"        const double mean_d = sx / {count}.0;",
            "        double m2 = sxx - sx * mean_d;  // the sum of squared deviations",
            "        if (m2 < 0.0) m2 = 0.0;",
            f"        const double rstd = 1.0 / sqrt(m2 / {count}.0 + {eps!r});",
            # y = (x - x0f) rstd - mean_d rstd in the dtype: x - x0f exact near the shift, the
            # mean less the shift rounded relative to the spread
            f"        const {T} rstd_t = ({T})rstd, shift_t = ({T})(-mean_d * rstd);",
            *([f"        alignas(64) {T} gm_plane[{hw + plane_pad(pool)}] = {{}};  // the pooled plane (pool_fusion.py)"]
              if pool_lines and pool is not None else []),
            f"        for (long long nn = 0; nn < {n}; ++nn) {{",
            f"            const {T}* xp = {cx} + (nn * {c} + cc) * {hw}LL;",
            *([f"            {T}* yp = {out} + (nn * {c} + cc) * {hw}LL;"] if keep_y else []),
            f"            const long long at = (nn * {c} + cc) * {hw}LL;",
            "            (void)at;",
            "            #pragma omp simd",
            f"            for (long long k = 0; k < {hw}; ++k) {{",
            f"                const {T} yv = (xp[k] - x0f) * rstd_t + shift_t;",
            *(["                yp[k] = yv;"] if keep_y else []),
            *(f"                {line}" for line in after_lines),
            "            }",
            *(f"            {line}" for line in pool_lines),
            "        }",
            *(f"        {line}" for line in finals),
            "    }",
            "}",
        ]
        self._call()

    def _means(self, T: str, count: int) -> list[str]:
        """The channel-mean regions read after the normalization (_channel_mean): the mean
        from the first pass's sums (as the region's float of a double mean), its pointwise
        ops, each output stored at [cc]."""
        lines: list[str] = []
        for region in self.parts.get("means", ()):
            body = region.body
            mean = body.nodes[0].outputs[0]
            kb = KernelBody(self.m.lines, {mean: (f"(({T})(x0 + sx / {count}.0))", T)})
            for b in body.nodes[1:]:
                kb.emit(b)
            lines += ["{  // " + f"%{', %'.join(o.name for o in region.outputs)}: the channel mean's region", *kb.lines]
            for y, outer in zip(body.outputs, region.outputs):
                expr, ctype = kb.env[y]
                want = c_type(y.type.dtype)
                lines.append(f"{self._fresh_output(outer)}[cc] = {expr if ctype == want else f'({want})({expr})'};")
            lines.append("}")
        return lines

    def _after_inputs(self, T: str) -> dict:
        """The C operands of the pointwise region after the normalization (_pointwise_after):
        its per-channel and number arrays as parameters, `yv` (the normalized element as
        stored) for the normalized array."""
        after = self.parts["after"]
        region, operands = after["node"], after["operands"]
        env: dict = {}
        for p, outer in zip(region.body.inputs, region.inputs):
            if not isinstance(outer, Value):
                ctype = c_type(p.type.dtype)
                env[p] = (c_literal(outer, ctype), ctype)
                continue
            kind, source = operands[id(p)]
            if kind == "y":
                env[p] = ("yv", T)
                continue
            cname = self._param(p, self.m.contiguous(source), writable=False, sized_by=source)
            env[p] = load(cname, "cc" if kind == "channel" else "0", p)
        return env

    def _after(self, env: dict, pool: dict | None = None) -> list[str]:
        """The region's statements for element k of channel cc and the stores of its outputs
        at `at + k`; the pooled output (pool_fusion.py) into the plane `gm_plane[k]`, and into
        its array too only where something else reads it."""
        region = self.parts["after"]["node"]
        kb = KernelBody(self.m.lines, env)
        for b in region.body.nodes:
            kb.emit(b)
        stores = []
        for y, outer in zip(region.body.outputs, region.outputs):
            expr, ctype = kb.env[y]
            want = c_type(y.type.dtype)
            value = expr if ctype == want else f"({want})({expr})"
            if pool is not None and outer is pool["value"]:
                stores.append(f"gm_plane[k] = {value};")
                if not pool["keep"]:
                    continue
            if id(outer) not in self.parts.get("unstored", ()):  # (pool_fusion.gate_masks)
                stores.append(f"{self._fresh_output(outer)}[at + k] = {value};")
        return list(kb.lines) + stores

    def _pool(self, pool: dict) -> list[str]:
        from .conv import CWindow  # noqa: PLC0415  (conv.py imports this module)

        return pool_lines(self, pool, CWindow._unpadded_windows)


def absorbed(parts: dict) -> set:
    """The nodes whose values the function writes (or makes unneeded)."""
    if "var" in parts:
        return ({id(n) for n in parts["var"]} | {id(n) for n in parts.get("means", ())}
                | ({id(parts["after"]["node"])} if parts.get("after") else set())
                | ({id(parts["before"]["add"])} if parts.get("before") else set())
                | {id(n) for n in ((parts.get("before") or {}).get("direct") or {}).get("nodes", ())})
    if "dims" in parts:  # a channel region: itself only
        return set()
    return {id(n) for n in (parts["sum"], parts["permute"], parts["rows"]) if n is not None}
