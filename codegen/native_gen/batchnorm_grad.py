"""Batch norm's whole backward per channel as one C function: the fused region before the
normalization's gradient (the ReLU's mask applied to the incoming gradient, the affine
part's gradients as channel sums, the gradient times the weight) and the gradient itself
(`normalize_backward`, with its channel sum and its channels-first rows), when the region's
full output is read by the gradient alone.

Apart (batchnorm.py's CChannelRegion, then CChannelGradient), the region writes the
weighted gradient (an array the size of the image batch) that the gradient function then
reads twice. Here the first pass evaluates the region per element, adds up its channel sums
and the four sums the gradient needs, and the second pass evaluates the region's gradient
element again (from the mask and the incoming gradient, in cache: one channel at a time)
and writes the result: the weighted gradient is never stored. The region's sums are staged
in floats and added in double as the region's own function does, so they are its values;
the gradient's sums are in double, shifted by the channel's first element, as
CChannelGradient's."""
from __future__ import annotations

from typing import TYPE_CHECKING

from static.ir import Node, Value

from ..c_kernel import KernelBody
from ..render import c_literal, c_type
from .function import CFunction, _parallel
from .indexing import _ints, _prod, load

if TYPE_CHECKING:
    from .driver import NativeModule


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
    return {"region": region_parts, "grad": grad, "grad_parts": grad_parts, "g": g}


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
        env: dict = {}
        for p, outer in zip(body.inputs, node.inputs):
            if not isinstance(outer, Value):
                ctype = c_type(p.type.dtype)
                env[p] = (c_literal(outer, ctype), ctype)
                continue
            cname = self._param(p, self.m.contiguous(outer), writable=False)
            s = _ints(p.type.shape)
            padded = (1,) * (len(shape) - len(s)) + s
            idx = "at + k" if padded == shape else ("0" if all(d == 1 for d in padded) else "cc")
            env[p] = load(cname, idx, p)
        cx = self._param(x, self.m.contiguous(x), writable=False)
        kb = KernelBody(self.m.lines, env)
        for b in body.nodes:
            if b.op != "sum":
                kb.emit(b)
        reductions = [b for b in body.nodes if b.op == "sum"]
        outputs = dict(zip((id(y) for y in body.outputs), node.outputs))
        g_inner = next(y for y, o in zip(body.outputs, node.outputs) if o is parts["g"])
        stores, finals, decls, stage, adds, accs = [], [], [], [], [], []
        for y in body.outputs:
            if (y.producer is not None and y.producer.op == "sum") or y is g_inner:
                continue
            cname = self._fresh_output(outputs[id(y)])
            expr, ctype = kb.env[y]
            want = c_type(y.type.dtype)
            stores.append(f"{cname}[at + k] = {expr if ctype == want else f'({want})({expr})'};")
        # the full arrays first, the per-channel sums last (the call path makes small
        # outputs itself, as the last parameters)
        out_stores, grad_final = [], []
        if gp["keep"]:
            full = self._fresh_output(grad.outputs[0])
            out_stores.append(f"{full}[at + k] = o;")
        if gp["rows"] is not None:
            rows = self._fresh_output(gp["rows"].outputs[0])
            out_stores.append(f"{rows}[cc * {count}LL + nn * {hw}LL + k] = o;")
        for j, red in enumerate(reductions):
            RT = c_type(red.inputs[0].type.dtype)
            decls.append(f"{RT} stage{j}[GM_STAGE];")
            stage.append(f"stage{j}[k - k0] = {kb.operand(red.inputs[0], RT)};")
            adds.append(f"acc{j} += (double)stage{j}[k];")
            accs.append(f"acc{j}")
            y = red.outputs[0]
            if id(y) in outputs:
                finals.append(f"{self._fresh_output(outputs[id(y)])}[cc] = ({c_type(y.type.dtype)})acc{j};")
        if gp["sum"] is not None:
            total = self._fresh_output(gp["sum"].outputs[0])
            grad_final.append(f"{total}[cc] = ({T})so;")
        g_expr = kb.operand(g_inner, T)
        par = ("#pragma omp parallel for num_threads(gm_nt) schedule(static)" if _parallel(n * c * hw)
               else "// little work: the calling thread")
        sums = ", ".join(accs + ["sx", "sxx", "sg", "sgx"])
        self.lines += [
            f"{{  // the region over ({n}, {c}, {hw}) per channel with batch norm's gradient of its output "
            f"%{parts['g'].name} (never stored): {len(reductions)} channel sum(s)"
            + (", the gradient's channel sums" if gp["sum"] is not None else "")
            + (", channels first" if gp["rows"] is not None else ""),
            f"    {par}",
            f"    for (long long cc = 0; cc < {c}; ++cc) {{",
            f"        const double x0 = (double){cx}[cc * {hw}LL];  // the shift: a large mean cancels nothing",
            "        double " + ", ".join(f"{a} = 0.0" for a in accs + ["sx", "sxx", "sg", "sgx"]) + ";",
            *(f"        {d}" for d in decls),
            f"        {T} gstage[GM_STAGE];",
            f"        for (long long nn = 0; nn < {n}; ++nn) {{",
            f"            const long long at = (nn * {c} + cc) * {hw}LL;",
            f"            for (long long k0 = 0; k0 < {hw}; k0 += GM_STAGE) {{",
            f"                const long long k1 = k0 + GM_STAGE < {hw} ? k0 + GM_STAGE : {hw};",
            "                #pragma omp simd",
            "                for (long long k = k0; k < k1; ++k) {",
            *(f"                    {s}" for s in kb.lines),
            *(f"                    {s}" for s in stores),
            *(f"                    {s}" for s in stage),
            f"                    gstage[k - k0] = {g_expr};",
            "                }",
            f"                #pragma omp simd reduction(+:{sums})",
            "                for (long long k = 0; k < k1 - k0; ++k) {",
            *(f"                    {a}" for a in adds),
            "                    const double d = (double)" + cx + "[at + k0 + k] - x0, gv = (double)gstage[k];",
            "                    sx += d; sxx += d * d; sg += gv; sgx += gv * d;",
            "                }",
            "            }",
            "        }",
            *(f"        {f}" for f in finals),
            f"        const double mean_d = sx / {count}.0, mg = sg / {count}.0;",
            f"        double var = sxx / {count}.0 - mean_d * mean_d;",
            "        if (var < 0.0) var = 0.0;",
            f"        const double rstd = 1.0 / sqrt(var + {eps!r});",
            f"        const double mgx = rstd * (sgx / {count}.0 - mean_d * mg);",
            "        double so = 0.0;",
            f"        for (long long nn = 0; nn < {n}; ++nn) {{",
            f"            const long long at = (nn * {c} + cc) * {hw}LL;",
            "            #pragma omp simd reduction(+:so)",
            f"            for (long long k = 0; k < {hw}; ++k) {{",
            *(f"                {s}" for s in kb.lines),
            f"                const double xhat = ((double){cx}[at + k] - x0 - mean_d) * rstd;",
            f"                const {T} o = ({T})(rstd * ((double)({g_expr}) - mg - xhat * mgx));",
            *(f"                {s}" for s in out_stores),
            "                so += (double)o;",
            "            }",
            "        }",
            *(f"        {f}" for f in grad_final),
            "        (void)so;",
            "    }",
            "}",
        ]
        self._call()
