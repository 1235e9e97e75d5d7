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


def muladd_macros() -> list[str]:
    """GM_MULADD_F / GM_MULADD_D (a * b + c): one fused multiply-add where the target has
    them (__FMA__: x86-64-v3 and up), else a multiply and an add (x86-64-v2 builds). The unit
    is compiled with -ffp-contract=off (pointwise code rounds as NumPy does), so the sums the
    generator orders itself (a product's K terms, a weight gradient's dot products) say where
    they fuse; W6's first layer spends half its forward and backward regions in them. The
    lines go inside a function (defined once per unit, the #ifndef)."""
    return ["#ifndef GM_MULADD_F",
            "#ifdef __FMA__",
            "#define GM_MULADD_F(a, b, c) __builtin_fmaf((a), (b), (c))",
            "#define GM_MULADD_D(a, b, c) __builtin_fma((a), (b), (c))",
            "#else",
            "#define GM_MULADD_F(a, b, c) ((a) * (b) + (c))",
            "#define GM_MULADD_D(a, b, c) ((a) * (b) + (c))",
            "#endif",
            "#endif"]


def muladd(T: str) -> str:
    """The macro of muladd_macros for C type T (float or double)."""
    return "GM_MULADD_F" if T == "float" else "GM_MULADD_D"


def element(direct: dict, ccols: str, index: str) -> str:
    """The C expression of row cc's element `index` of the product: the K multiply-adds of
    the channel's weights (w<q>, read once per channel: weight_lines) and the columns, in the
    order q = 0..K-1, each fused where the target can (muladd_macros)."""
    k, count = direct["k"], direct["count"]
    fma = muladd("float" if direct["w"].type.dtype.np.itemsize == 4 else "double")
    expr = f"w0 * {ccols}[{index}]"
    for q in range(1, k):
        expr = f"{fma}(w{q}, {ccols}[{q * count}LL + {index}], {expr})"
    return "(" + expr + ")"


def weight_lines(direct: dict, cw: str, T: str) -> list[str]:
    """The channel's K weights as constants of the channel's loop."""
    k = direct["k"]
    return [*muladd_macros(),
            f"// the product's row cc made here: {k} multiply-adds an element (bn_product.py)",
            f"const {T} " + ", ".join(f"w{q} = {cw}[cc * {k} + {q}]" for q in range(k)) + ";"]


# Elements of a channel's gradient one run of the weight gradient's dot products covers
# (across images) before its sums in the dtype go to double: a lane sums DOT_RUN / 16 products.
DOT_RUN = 8192


def dot_runs(T: str, cs: str, count: int, kw: int, kept: str) -> list[str]:
    """The K dot products of a channel's gradient values (`kept`, all count of them, on the
    thread's stack) with the K rows of S (cs, (K, count)), after the gradient's pass: runs of
    DOT_RUN elements across images, each run's K sums in the dtype (fused multiply-adds where
    the target has them), added to the double sums dwq. Per image (784 elements) the
    reduction's per-lane sums were paid 32 times a channel; with the fused multiply-adds
    W6's first gradient region took 0.51 against 0.55 ms on one thread."""
    fma = muladd(T)
    names = ", ".join(f"d{q}" for q in range(kw))
    return [
        f"        for (long long t0 = 0; t0 < {count}LL; t0 += {DOT_RUN}LL) {{",
        f"            const long long n_ = t0 + {DOT_RUN}LL < {count}LL ? {DOT_RUN}LL : {count}LL - t0;",
        f"            const {T}* o_ = {kept} + t0;",
        "            " + " ".join(f"{T} d{q} = ({T})0;" for q in range(kw)),
        f"            #pragma omp simd reduction(+:{names})",
        "            for (long long k = 0; k < n_; ++k) {",
        f"                const {T} o = o_[k];",
        *(f"                d{q} = {fma}(o, {cs}[{q * count}LL + t0 + k], d{q});" for q in range(kw)),
        "            }",
        "            " + " ".join(f"dwq[{q}] += (double)d{q};" for q in range(kw)),
        "        }",
    ]


def dot_chunk(T: str, cs: str, count: int, hw: int, kw: int) -> list[str]:
    """The K dot products of one staged chunk (ostage, elements k0..k1 of image nn) with the
    rows of S, inside the gradient's pass (values that do not fit on the stack): K
    accumulators, each row of S streamed once, added to the channel's double sums."""
    fma = muladd(T)
    return [
        "                {",
        *(f"                    const {T}* s{q} = {cs} + {q * count}LL + nn * {hw}LL + k0;" for q in range(kw)),
        "                    " + " ".join(f"{T} d{q} = ({T})0;" for q in range(kw)),
        f"                    #pragma omp simd reduction(+:{', '.join(f'd{q}' for q in range(kw))})",
        "                    for (long long k = 0; k < k1 - k0; ++k) {",
        f"                        const {T} o = ostage[k];",
        *(f"                        d{q} = {fma}(o, s{q}[k], d{q});" for q in range(kw)),
        "                    }",
        "                    " + " ".join(f"dwq[{q}] += (double)d{q};" for q in range(kw)),
        "                }",
    ]
