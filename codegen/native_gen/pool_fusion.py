"""Max-pooling taken into batch norm's normalization: the pooled maxima and their index
written in the normalization's second pass, from a plane on the thread's stack, instead of
the activation written out and read back by a pooling function of its own.

In a CNN block (conv, BatchNorm2d, ReLU, MaxPool2d) the compiled forward had the
normalization's second pass write the ReLU's output (the size of the image batch) and a
window function read it again to pool it: on W6's first block 1.6 MB written and read back,
and a pass of its own (0.23-0.29 ms of a 5 ms step). Here, where the pooling reads the
pointwise region's output and nothing else does (no graph output either), each image plane
of a channel is computed into a buffer of the thread's own (at most PLANE_BYTES), pooled there
while it is in L1, and never stored: the pass writes the quarter-size maxima and the index.

What it takes: a `max_pool` window entry (conv.plan) with no padding (its mask, where a
compiled forward saves it for its backward, is written here as the pooling function does),
whose input is an output of the pointwise region a `bn_norm` entry computes (batchnorm.py
`_pointwise_after`), of the normalization's shape, float32 or float64, static sizes. The
windows are CWindow's (the first maximum, NaN winning as NumPy's argmax), so the values and
indices are the pooling function's bits. Anything else keeps the two functions.
"""
from __future__ import annotations

from gmbase import dtypes
from static.ir import Node, Value

from ..render import c_literal, c_type
from .bn_recompute import drop_normalized
from .conv_planes import PLANE_BYTES, mask_rows
from .indexing import _ints, _prod, contiguous_strides, strided_source


def _users(v: Value) -> list[Node]:
    return list({id(n): n for n in v.users}.values())


def fuse_pools(emit: dict, absorbed: set, outs: set) -> None:
    """Move each max-pooling whose input a batch norm's pointwise region computes into that
    normalization's function (entry parts["pool"]): the pooling's own entry dropped, its
    argmax absorbed. `emit` and `absorbed` are a window plan's (conv.WindowPlan)."""
    regions = {}
    for kind, node, parts in list(emit.values()):
        if kind == "bn_norm" and parts.get("after") is not None and "pool" not in parts:
            regions[id(parts["after"]["node"])] = (node, parts)
    for key, (kind, unfold, parts) in list(emit.items()):
        if kind != "max_pool":
            continue
        reshape, argmax, take, mask = parts
        x = unfold.inputs[0]
        if any(int(p) for p in unfold.attrs["padding"]) or not isinstance(x, Value):
            continue
        found = regions.get(id(x.producer)) if x.producer is not None else None
        if found is None:
            continue
        norm, bn = found
        shape = _ints(norm.outputs[0].type.shape)
        if (len(shape) != 4 or _ints(x.type.shape) != shape or x.type.dtype != norm.outputs[0].type.dtype
                or _prod(shape[2:]) * x.type.dtype.np.itemsize > PLANE_BYTES):
            continue
        keep = id(x) in outs or any(u is not unfold for u in _users(x))
        bn["pool"] = {"value": x, "unfold": unfold, "argmax": argmax, "take": take, "mask": mask, "keep": keep}
        del emit[key]
        absorbed.add(id(argmax))
        del regions[id(x.producer)]  # one pooling a normalization
    fuse_pool_grads(emit, absorbed, outs)
    gate_masks(emit, outs)  # the ReLU's mask read as the pooled maximum's sign, not stored
    gate_regions(emit, absorbed, outs)  # the same gate written on the IR (static/passes/pool_masks.py)
    narrow_indices(emit, outs)  # the index as int8 where only the fused functions read it
    drop_normalized(emit, outs)  # xhat recomputed by its gradient, not stored (bn_recompute.py)


def fuse_pool_grads(emit: dict, absorbed: set, outs: set) -> None:
    """Move each max-pooling gradient (a `pool_grad` entry: the fold of the gradient where
    the index says) that a batch norm's gradient region (a `bn_region_grad` entry) alone
    reads into that region's function (parts["pool_grad"]): the region then scatters each
    image plane's pooled gradient into a plane on the thread's stack and reads it there; the
    full-size gradient (W6's first block: 1.6 MB) is never written nor read back. Windows that
    share no cell and lie in the image (no padding), float32/float64; the index form (the
    one-graph step) or the boolean mask (C, kh*kw, N, oh, ow) a split backward receives from
    its forward (a module compiled as a drop-in: W6's two folds of it were 0.3 ms of 4.3)."""
    regions = {}
    for kind, node, parts in list(emit.values()):
        if kind == "bn_region_grad" and "pool_grad" not in parts:
            regions[id(node)] = (node, parts)
    for key, (kind, fold, parts) in list(emit.items()):
        if kind != "pool_grad":
            continue
        _, index_mask, index, g = parts
        y = fold.outputs[0]
        users = _users(y)
        if len(users) != 1 or id(y) in outs or id(users[0]) not in regions:
            continue
        kh, kw = (int(k) for k in fold.attrs["kernel"])
        sh, sw = (int(s) for s in fold.attrs["stride"])
        if (any(int(p) for p in fold.attrs["padding"]) or sh < kh or sw < kw
                or any(int(d) != 1 for d in fold.attrs["dilation"])):
            continue
        region, bn = regions[id(users[0])]
        shape = _ints(y.type.shape)
        if (bn["region"]["shape"] != shape or len(shape) != 4 or sum(1 for v in region.inputs if v is y) != 1
                or _prod(shape[2:]) * y.type.dtype.np.itemsize > PLANE_BYTES):
            continue
        bn["pool_grad"] = {"value": y, "fold": fold, "index": index, "g": g, "mask": index_mask is None}
        del emit[key]
        absorbed.add(id(fold))
        del regions[id(region)]


def _at(values, v: Value) -> int | None:
    return next((i for i, o in enumerate(values) if o is v), None)


def gate_masks(emit: dict, outs: set) -> None:
    """Where a fused pooling's gradient (index form) meets the ReLU's mask in batch norm's
    gradient region as `where(mask, 0, g)`, the mask being `le(v, c)` of the very value v the
    normalization's pass pooled: g is nonzero only at each window's chosen cell, where v is the
    window's maximum, so the mask there is `maximum <= c`, read from the pooled maxima in the
    scatter (parts["pool_grad"]["gate"]) and the region's mask operand is false. The mask,
    a byte an element of the activation, is then stored by the forward only where something
    else reads it (bn parts["unstored"]): W6's two blocks wrote 0.6 MB of it and read it
    twice (its store alone 0.035 of the first normalization's 0.2 ms). The same values: where
    gives +0 where the mask is set, and the scatter +0 + +0 there."""
    pools = {}
    for kind, _, parts in emit.values():
        pool = parts.get("pool") if kind == "bn_norm" else None
        if pool is not None and pool["take"] is not None and parts.get("after") is not None:
            pools[id(pool["argmax"].outputs[0])] = parts
    gated: dict = {}
    for kind, region, parts in emit.values():
        pg = parts.get("pool_grad") if kind == "bn_region_grad" else None
        if pg is None or pg["mask"] or region.body is None:
            continue
        index = pg["index"]
        made = index.producer
        src = made.inputs[0] if made is not None and made.op == "reshape" and made.body is None else index
        bn = pools.get(id(src))
        if bn is None:
            continue
        after, pool = bn["after"]["node"], bn["pool"]
        p_y = next((p for p, o in zip(region.body.inputs, region.inputs) if o is pg["value"]), None)
        if p_y is None or len(_users(p_y)) != 1:  # the gated plane is what every reader of it would see
            continue
        i_v = _at(after.outputs, pool["value"])
        for p_m, m in zip(region.body.inputs, region.inputs):
            users = _users(p_m)
            i_m = _at(after.outputs, m) if isinstance(m, Value) else None  # m one of the forward region's outputs
            if i_m is None or i_v is None or len(users) != 1 or sum(1 for v in region.inputs if v is m) != 1:
                continue
            w, le = users[0], after.body.outputs[i_m].producer
            if (w.op != "where" or w.body is not None or len(w.inputs) != 3 or w.inputs[0] is not p_m
                    or w.inputs[2] is not p_y or p_y is None or isinstance(w.inputs[1], Value) or float(w.inputs[1]) != 0.0
                    or le is None or le.op != "le" or le.body is not None or le.inputs[0] is not after.body.outputs[i_v]
                    or isinstance(le.inputs[1], Value)):
                continue
            pg["gate"] = {"mask": m, "pooled": pool["take"].outputs[0], "bound": float(le.inputs[1])}
            gated.setdefault(id(m), (bn, m, set()))[2].add(id(region))
            break
    for bn, m, regions in gated.values():
        if id(m) not in outs and all(id(u) in regions or u is bn["after"]["node"] for u in _users(m)):
            bn.setdefault("unstored", set()).add(id(m))


def gate_regions(emit: dict, absorbed: set, outs: set) -> None:
    """Where the pooled gradient a fused scatter reads is `where(le(p, c), 0, h)` of the
    pooled size, made by a fused region of its own that only the scatter reads (a split
    backward, whose joint graph had the ReLU's mask read from the pooled maxima p:
    static/passes/pool_masks.py), the scatter reads h and p and gates each window's term by
    `p <= c` itself (parts["pool_grad"]["gate"], as gate_masks' gate): the region's pass and
    its buffer (W6's two blocks, 0.12 ms of the backward) are dropped. The same bits: the
    where's +0 where the mask is set is the masked term's +0."""
    for kind, _, parts in emit.values():
        pg = parts.get("pool_grad") if kind == "bn_region_grad" else None
        if pg is None or pg.get("gate") is not None:
            continue
        g = pg["g"]
        pre = g.producer
        if (pre is None or pre.op != "fused" or pre.body is None or len(pre.outputs) != 1 or id(g) in outs
                or len(_users(g)) != 1 or len(pre.body.nodes) != 2):
            continue
        le, wh = pre.body.nodes
        if (le.op != "le" or wh.op != "where" or le.body is not None or wh.body is not None or len(wh.inputs) != 3
                or pre.body.outputs[0] is not wh.outputs[0] or wh.inputs[0] is not le.outputs[0]
                or isinstance(wh.inputs[1], Value) or float(wh.inputs[1]) != 0.0 or isinstance(le.inputs[1], Value)):
            continue
        outer = {id(b): o for b, o in zip(pre.body.inputs, pre.inputs)}
        p, h = outer.get(id(le.inputs[0])), outer.get(id(wh.inputs[2]))
        shape = _ints(g.type.shape)
        if (not isinstance(p, Value) or not isinstance(h, Value) or _ints(p.type.shape) != shape
                or _ints(h.type.shape) != shape or p.type.dtype != g.type.dtype or h.type.dtype != g.type.dtype):
            continue
        pg["g"] = h
        pg["gate"] = {"pooled": p, "bound": float(le.inputs[1])}
        absorbed.add(id(pre))


_INDEX_VIEWS = frozenset({"reshape", "permute", "transpose", "squeeze", "unsqueeze"})


def narrow_indices(emit: dict, outs: set) -> None:
    """Store a fused max-pooling's index as int8 (the window cell, 0..kh*kw-1) where its
    windows have at most 127 cells and nothing but the functions this module writes reads it:
    the pooled maxima and mask in the normalization's pass, the scatter in the gradient's
    (through views: reshapes, permutes). The index is written in the forward and read back
    in the backward: W6's two poolings wrote and read 1.2 MB of int64 for 150 KB of int8.
    The index value and its views are retyped in the graph (their only readers are C lines
    that convert the cell to long long); any other reader, or a graph output, keeps int64."""
    grads = set()  # the index values the gradient regions scatter by
    for kind, _, parts in emit.values():
        if kind == "bn_region_grad" and "pool_grad" in parts and not parts["pool_grad"]["mask"]:
            grads.add(id(parts["pool_grad"]["index"]))
    for kind, _, parts in list(emit.values()):
        pool = parts.get("pool") if kind == "bn_norm" else None
        if pool is None:
            continue
        kh, kw = (int(k) for k in pool["unfold"].attrs["kernel"])
        index = pool["argmax"].outputs[0]
        if kh * kw > 127 or index.type.dtype.np.name != "int64":
            continue
        terminal = {id(pool["take"]) if pool["take"] is not None else None,
                    id(pool["mask"][0]) if pool["mask"] is not None else None}
        chain, todo, ok = [index], [index], True
        while todo and ok:
            v = todo.pop()
            if id(v) in outs:
                ok = False
                break
            for u in _users(v):
                if id(u) in terminal:
                    continue
                if u.op == "index_mask" and id(v) in grads:
                    continue
                if u.op in _INDEX_VIEWS and u.body is None and len(u.outputs) == 1 and u.inputs[0] is v:
                    chain.append(u.outputs[0])
                    todo.append(u.outputs[0])
                    continue
                ok = False
                break
        if not ok:
            continue
        int8 = dtypes.int8
        for v in chain:
            v.type = v.type._replace(dtype=int8)


def _input(fn, v: Value) -> tuple[str, tuple, int]:
    """(C array, element strides, element offset) of input v of fn: the base array of a view
    read in place, else v itself (as CWindow._input)."""
    view = strided_source(v)
    if view is not None:
        base, strides, offset = view
        return fn._param(v, fn.m.names(base), writable=False, sized_by=base), strides, offset
    return fn._param(v, fn.m.contiguous(v), writable=False), contiguous_strides(_ints(v.type.shape)), 0


def scatter_lines(fn, pool_grad: dict) -> list[str]:
    """The C lines, inside a channel region's loop over images `nn` of channel `cc`, that
    write image nn's pooled gradient into `gplane` (zeros but at each window's chosen cell,
    where the window's gradient goes: the fold's +0 + g, its bits); the index and the
    gradient are fn's parameters (views read in place through their strides). Windows two
    cells wide tiling the rows in float32 write whole rows as vectors (_paired_rows)."""
    fold = pool_grad["fold"]
    y = pool_grad["value"]
    T = c_type(y.type.dtype)
    c, kh, kw, n, oh, ow = _ints(fold.inputs[0].type.shape)
    h, w = _ints(y.type.shape)[2:]
    sh, sw = (int(s) for s in fold.attrs["stride"])
    ci, si, oi = _input(fn, pool_grad["index"])
    cg, sg, og = _input(fn, pool_grad["g"])
    gate = pool_grad.get("gate")
    gm = _input(fn, gate["pooled"]) if gate is not None else None

    def grad_at(oy: str, ox: str) -> str:
        grad = f"{cg}[{og}LL + cc * {sg[0]}LL + nn * {sg[2]}LL + {oy} * {sg[3]}LL + {ox} * {sg[4]}LL]"
        if gate is None or gm is None:
            return grad
        # the ReLU's mask at the chosen cell, from the window's maximum (gate_masks)
        cm, sm, om = gm
        sm = (sm[0], *sm[2:]) if len(sm) == 5 else sm  # the maxima as (C, N, oh, ow) or (C, 1, N, oh, ow)
        gbits = "unsigned int" if T == "float" else "unsigned long long"
        return (f"({{ {T} g_ = {grad}; {gbits} b_; __builtin_memcpy(&b_, &g_, sizeof b_); b_ &= ({gbits})0 - "
                f"({gbits})!({cm}[{om}LL + cc * {sm[0]}LL + nn * {sm[1]}LL + {oy} * {sm[2]}LL + {ox} * {sm[3]}LL] <= "
                f"{c_literal(gate['bound'], T)}); __builtin_memcpy(&g_, &b_, sizeof g_); g_; }})")

    at = f"{oi}LL + cc * {si[0]}LL + nn * {si[2]}LL + oy * {si[3]}LL + ox * {si[4]}LL"
    grad = grad_at("oy", "ox")
    if pool_grad.get("mask"):
        # the mask (C, kh*kw, N, oh, ow): each offset's term, g where its mask is set, else +0
        # (g's bits masked, no branch: as the fold's own function), added to its own cell
        bits = "unsigned int" if T == "float" else "unsigned long long"
        body = [f"        const {T} g = {grad};",
                f"        {bits} gb; __builtin_memcpy(&gb, &g, sizeof gb);",
                f"        for (long long kk = 0; kk < {kh * kw}; ++kk) {{",
                f"            {bits} b = gb & (({bits})0 - ({bits})({ci}[{at} + kk * {si[1]}LL] != 0));",
                f"            {T} t; __builtin_memcpy(&t, &b, sizeof t);",
                f"            gplane[(oy * {sh} + kk / {kw}) * {w}LL + ox * {sw} + kk % {kw}] += t;",
                "        }"]
    else:
        body = [f"        const long long kk = (long long){ci}[{at}];",
                f"        if (kk < 0 || kk >= {kh * kw}) continue;  // an index outside the window chooses nothing",
                f"        gplane[(oy * {sh} + kk / {kw}) * {w}LL + ox * {sw} + kk % {kw}] += {grad};"]
    gated = ["// the ReLU's mask at each chosen cell from the window's maximum (gate_masks)"] \
        if gate is not None else []
    scalar = [
        f"for (long long e = 0; e < {h * w}LL; ++e) gplane[e] = ({T})0;",
        f"for (long long oy = 0; oy < {oh}; ++oy) {{",
        f"    for (long long ox = 0; ox < {ow}; ++ox) {{",
        *body,
        "    }",
        "}",
    ]
    rows_contiguous = all(st[-2] == ow * st[-1] for st in (si, sg, *((gm[1],) if gm is not None else ())))
    paired = (not pool_grad.get("mask") and T == "float" and kw == 2 and sw == 2 and kh == sh and w == 2 * ow
              and rows_contiguous)
    return [
        f"// %{y.name} = max-pooling's gradient, image nn's plane: each window's gradient to its chosen cell",
        *gated,
        *(_paired_rows(ci, f"{oi}LL + cc * {si[0]}LL + nn * {si[2]}LL + j * {si[4]}LL", grad_at("0", "j"), scalar,
                       kh, h, w, oh, ow) if paired else scalar),
    ]


def _paired_rows(ci: str, index_at: str, grad: str, scalar: list, kh: int, h: int, w: int, oh: int,
                 ow: int) -> list[str]:
    """The scatter of windows one plane row apart and two cells wide (kw == sw == 2, kh == sh,
    float32, w == 2 * ow, the index and gradient rows contiguous): each window's two cells
    of a row are one 64-bit word, the +0 + g's bits shifted to the chosen cell's half where
    the index picks that row, else 0, so every row is written whole by vector stores: no
    branch, no read-modify-write, no zeroing pass. The index and gradient are first read
    into ints over the whole plane (int8 and 64-bit words in one loop do not vectorize).
    W6's first gradient region spent a quarter of its time in the scalar scatter (0.51 ->
    0.46 ms on one thread). Little-endian targets (the low half the lower address); others
    keep the scalar lines."""
    n_win, owp = oh * ow, padded_row(ow)
    lines = [
        "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__",
        "{",
        "    typedef unsigned long long gm_pair __attribute__((may_alias));  // a window's two cells of a row",
        f"    int kr[{n_win + owp}]; unsigned int gr[{n_win + owp}];",
        "    #pragma omp simd",
        f"    for (long long j = 0; j < {n_win}; ++j) kr[j] = (int){ci}[{index_at}];",
        "    #pragma omp simd",
        f"    for (long long j = 0; j < {n_win}; ++j) {{",
        f"        const float g = (float)0 + {grad};",
        "        __builtin_memcpy(&gr[j], &g, sizeof g);",
        "    }",
        f"    for (long long j = {n_win}; j < {n_win + owp}; ++j) {{ kr[j] = -1; gr[j] = 0u; }}  // the last row's lanes over",
        f"    for (long long oy = 0; oy < {oh}; ++oy) {{",
    ]
    # each plane row by a loop of its own: its lanes past the row (owp of them, scatter_pad)
    # write the next row's first cells, which that row's loop then writes
    for dy in range(kh):
        lines += [
            f"        gm_pair* r{dy} = (gm_pair*)(gplane + (oy * {kh} + {dy}) * {w}LL);",
            "        #pragma omp simd",
            f"        for (long long ox = 0; ox < {owp}; ++ox) {{",
            f"            const long long kk = kr[oy * {ow} + ox];  // an index outside the window picks no row",
            f"            const unsigned long long v = (unsigned long long)gr[oy * {ow} + ox]"
            " << ((unsigned long long)(kk & 1) << 5);  // the +0 + g's bits in the chosen cell's half",
            f"            r{dy}[ox] = (kk >> 1) == {dy} ? v : 0ULL;",
            "        }",
        ]
    lines.append("    }")
    if h > kh * oh:  # rows below the last window
        lines.append(f"    for (long long e = {kh * oh * w}LL; e < {h * w}LL; ++e) gplane[e] = (float)0;")
    return [*lines, "}", "#else", *scalar, "#endif"]


def scatter_pad(pool_grad: dict) -> int:
    """Elements the gradient's plane needs past its end for _paired_rows' last row (its lanes
    past the row, POOL_LANES a vector): 2 * (padded_row(ow) - ow)."""
    ow = _ints(pool_grad["fold"].inputs[0].type.shape)[5]
    return 2 * (padded_row(ow) - ow)


def _output(fn, y: Value) -> str:
    """y as an output parameter of fn after its others: made by the call path (returned by
    it) where an earlier output already is, since those are the function's last parameters
    (NativeModule.kernel_call); else from the module's buffers as any fresh output."""
    if not any(w and src in fn.m.made_by_call for _, src, _, w in fn.params):
        return fn._fresh_output(y)
    name = fn.m.names(y)
    fn.m.made_by_call[name] = _ints(y.type.shape)
    fn.m.fresh.add(name)
    return fn._param(y, name, writable=True)


def pool_lines(fn, pool: dict, windows) -> list[str]:
    """The C lines, inside the normalization's loop over images `nn` of channel `cc`, that
    pool the plane `gm_plane` (the pooling input's elements of that image and channel, row
    by row) into the index and maxima arrays ((C, N, oh, ow), as argmax and take_along give
    them). `fn` is the normalization's CFunction (for its outputs), `windows` CWindow's
    window loop (conv.CWindow._unpadded_windows)."""
    unfold, argmax, take, mask = pool["unfold"], pool["argmax"], pool["take"], pool["mask"]
    x = pool["value"]
    T = c_type(x.type.dtype)
    kh, kw = (int(k) for k in unfold.attrs["kernel"])
    sh, sw = (int(s) for s in unfold.attrs["stride"])
    dh, dw = (int(d) for d in unfold.attrs["dilation"])
    n, c, h, w = _ints(x.type.shape)
    oh, ow = _ints(unfold.outputs[0].type.shape)[4:]
    index = argmax.outputs[0]
    # the index is written unless only the maxima and the mask read it (as CWindow's pooling)
    absorbed_readers = {id(take), id(mask[0]) if mask is not None else None}
    keep_index = (any(id(u) not in absorbed_readers for u in _users(index))
                  or any(v is index for v in fn.m.graph.outputs))
    store = []
    # the maxima's parameter first: an index small enough for the call path to make it (int8,
    # narrow_indices) would otherwise take the maxima after it there, made each call
    maxima = _output(fn, take.outputs[0]) if take is not None else None
    row_index = []
    if keep_index and index.type.dtype.np.itemsize == 1:
        # a byte index: the row's cells gathered in ints, stored after the row's windows
        out_k = _output(fn, index)
        store.append("            cells[ox] = (int)best_k;")
        row_index = [f"        for (long long ox = 0; ox < {ow}; ++ox) {out_k}[pat + ox] = (signed char)cells[ox];"]
    elif keep_index:
        store.append(f"            {_output(fn, index)}[pat + ox] = best_k;")
    if maxima is not None:
        store.append(f"            {maxima}[pat + ox] = best;")
    row_mask = []
    if mask is not None:  # (C, kh*kw, N, oh, ow): each offset's row written contiguously
        out_m = _output(fn, mask[1].outputs[0])
        store.append("            chosen[ox] = (int)best_k;")
        row_mask = mask_rows(out_m, kh, kw, n, oh, ow)
    owp = padded_row(ow)
    if owp != ow:  # the row's windows as owp lanes (pool["plane_pad"]), the first ow of them stored
        body = ["            bests[ox] = best;", "            keys[ox] = best_i;", "        }",
                f"        for (long long ox = 0; ox < {ow}; ++ox) {{",
                f"            const {T} best = bests[ox];",
                "            const long long best_k = keys[ox];", *store]
    else:
        body = store
    return [
        "{  // " + f"%{index.name} = max-pooling: first maximum of each {kh}x{kw} window of the plane (NaN wins), "
        "in the normalization's pass",
        f"    const {T}* src = gm_plane;",
        f"    for (long long oy = 0; oy < {oh}; ++oy) {{",
        f"        const long long pat = ((cc * {n} + nn) * {oh} + oy) * {ow}LL;",
        *([f"        int chosen[{ow}];"] if row_mask else []),
        *([f"        int cells[{ow}];"] if row_index else []),
        *([f"        alignas(64) {T} bests[{owp}]; alignas(64) int keys[{owp}];"] if owp != ow else []),
        "        #pragma omp simd",
        f"        for (long long ox = 0; ox < {owp}; ++ox) {{",
        *windows(T, kh, kw, sh, sw, dh, dw, w, 1),
        *body,
        "        }",
        *row_index,
        *row_mask,
        "    }",
        "}",
    ]


# A row's windows are pooled as a multiple of this many lanes (the lanes past the row read
# the plane's next cells or its zeroed tail, plane_pad, and are dropped): a row of 7 windows
# as 7 made a loop of vector prologue and tail, W6's second normalization 0.137 against
# 0.097 ms with 8 (one thread, same bits).
POOL_LANES = 8


def padded_row(ow: int) -> int:
    """The lanes of a row of ow windows in pool_lines' window loop."""
    return -(-ow // POOL_LANES) * POOL_LANES


def plane_pad(pool: dict) -> int:
    """Elements the plane needs past its end for pool_lines' padded rows: the last row's
    extra lanes read up to (lanes - ow) * stride cells further."""
    ow = _ints(pool["unfold"].outputs[0].type.shape)[5]
    sw = int(pool["unfold"].attrs["stride"][1])
    return (padded_row(ow) - ow) * sw
