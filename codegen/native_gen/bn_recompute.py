"""Batch norm's normalized output left unstored where its gradient region can do without it:
the affine weight's gradient sum(a * xhat) taken as rstd * (sum(a * d) - mean_d * sum(a))
from the input x the gradient reads anyway (d = x - x0, the gradient's shifted element;
mean_d, rstd the channel's statistics it computes from x), so the forward need not write
xhat nor the backward read it back.

Why: in a CNN's training step the normalization's output xhat (the size of the activation)
was written by the forward only for the backward's weight-gradient sum, and read there
again: on W6's first block 1.6 MB written and 1.6 MB read by passes that are memory bound
(the gradient region, 12% of the step's CPU time, reads x, xhat and the ReLU's mask).

Taken where a `bn_region_grad` entry (batchnorm_grad.region_gradient) reads the output of a
`normalize` of the same x as its normalize_backward (same eps) only as a factor of products
whose results are only summed over the channel; the forward then drops its store when no
other node reads xhat (its pointwise region runs in the normalization, from registers). The
sums are the same quantity in another form, equal to rounding (static.jit.check's bounds).
"""
from __future__ import annotations

from static.ir import Node, Value

from ..render import c_type
from .indexing import _ints


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def _products(p: Value, body_outputs: set) -> list | None:
    """[(mul node, the other factor, the sum node)] when every use of the body input p is
    `mul(p, a)` (a a value) whose result a channel sum alone reads; None otherwise."""
    found = []
    for u in _users(p):
        if u.op != "mul" or u.body is not None or len(u.inputs) != 2 or sum(1 for v in u.inputs if v is p) != 1:
            return None
        other = u.inputs[1] if u.inputs[0] is p else u.inputs[0]
        out = u.outputs[0]
        readers = _users(out)
        if (not isinstance(other, Value) or id(out) in body_outputs or len(readers) != 1 or readers[0].op != "sum"
                or readers[0].inputs[0] is not out or out.type.dtype != p.type.dtype):
            return None
        found.append((u, other, readers[0]))
    return found or None


def drop_normalized(emit: dict, outs: set) -> None:
    """Mark the gradient regions that recompute their xhat (parts["xhat"]: [{"outer", "param",
    "products"}]) and the normalizations whose xhat then nothing reads (parts["drop_y"])."""
    norms = {id(node.outputs[0]): (node, parts) for kind, node, parts in emit.values() if kind == "bn_norm"}
    readers_done: dict = {}
    for kind, region, parts in list(emit.values()):
        if kind != "bn_region_grad" or region.body is None:
            continue
        grad = parts["grad"]
        x = grad.inputs[1]
        body = region.body
        body_outputs = {id(v) for v in body.outputs}
        for p, outer in zip(body.inputs, region.inputs):
            found = norms.get(id(outer)) if isinstance(outer, Value) else None
            if found is None:
                continue
            norm = found[0]
            if (norm.inputs[0] is not x or float(norm.attrs["eps"]) != float(grad.attrs["eps"])
                    or _ints(p.type.shape) != _ints(outer.type.shape) or p.type.dtype != x.type.dtype
                    or sum(1 for v in region.inputs if v is outer) != 1):
                continue
            products = _products(p, body_outputs)
            if products is None:
                continue
            parts.setdefault("xhat", []).append({"outer": outer, "param": p, "products": products})
            readers_done.setdefault(id(outer), set()).add(id(region))
    for yid, (_, nparts) in norms.items():  # xhat read by the pointwise region alone (a split forward)
        if nparts.get("after") is not None and yid not in outs:
            readers_done.setdefault(yid, set())
    for yid, regions in readers_done.items():
        norm, nparts = norms[yid]
        after = nparts.get("after")
        skip = regions | ({id(after["node"])} if after is not None else set())
        if yid not in outs and all(id(u) in skip for u in _users(norm.outputs[0])):
            nparts["drop_y"] = True


def recomputed_sums(xhat: list, kb, reductions: list, sums: tuple, block: int) -> list[str]:
    """For each product a * xhat of `xhat` (a gradient region's parts["xhat"]) whose channel sum
    the region takes with xhat read as d = x - x0f (so the sum is of a * d): a second
    accumulator of a alone added to `sums` (_channel_sums' decls, stage, adds, accs, finals,
    extended in place), and that sum's store taken out of the finals. Returns the stores to
    write after channel_statistics: rstd * (sum(a d) - mean_d sum(a)), which is sum(a xhat)."""
    decls, stage, adds, accs, finals = sums
    late = []
    for h in xhat:
        for _, other, red in h["products"]:
            j = next(i for i, r in enumerate(reductions) if r is red)
            rt = c_type(red.inputs[0].type.dtype)
            # sum(a) is a channel sum the region takes already where one of its sums reads a
            # itself (batch norm's bias gradient beside its weight's): that one is reused, the
            # same values added in the same order (a second accumulator of it cost W6's first
            # gradient region a staged array and an add per element)
            same = next((i for i, r in enumerate(reductions) if r.inputs[0] is other
                         and c_type(r.inputs[0].type.dtype) == rt), None)
            alone = f"acc{same}" if same is not None else f"acca{j}"
            if same is None:
                decls.append(f"{rt} stagea{j}[{block}];")
                stage.append(f"stagea{j}[k - k0] = {kb.operand(other, rt)};")
                adds.append(f"pa{j} += stagea{j}[k];")
                accs.append((f"pa{j}", rt, f"acca{j}"))
            for i, line in enumerate(finals):
                if line.endswith(f")acc{j};"):
                    head, cast = line.split(" = (", 1)
                    late.append(f"{head} = ({cast.split(')', 1)[0]})(rstd * (acc{j} - mean_d * {alone}));"
                                "  // sum(a xhat) from sum(a d) (bn_recompute.py)")
                    del finals[i]
                    break
    return late
