"""A batch of small matrix products as one C loop nest (CBatchedMatmul), not one BLAS call per
product: the accumulators of a few rows of C kept in registers through the k loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from static.ir import Node, Value

from ..render import c_type
from .function import CFunction, _parallel
from .indexing import _ints, _prod, _symbolic, contiguous_strides, strided_index, strided_source

if TYPE_CHECKING:
    from .driver import NativeModule


# A batch of small products (attention's scores and weighted values: 64 products of 32x16 by
# 16x32 in W5) as one C loop nest, not one BLAS call per product: each product costs BLAS
# about a microsecond of calling and packing whatever its size, which was 70-110 us per batch
# in W5's step, four times the arithmetic. Products of at most this many multiply-adds:
SMALL_PRODUCT_MAX = 1 << 16
SMALL_PRODUCT_N_MAX = 256  # the widest product row kept in registers and L1
SMALL_TILE_MAX = 1 << 14  # elements of the packed B tile (on each thread's stack)


def small_batched_matmul(node: Node) -> str | None:
    """Why a matmul is not a batch of small products this module computes itself (None: it is)."""
    if node.op != "matmul" or node.body is not None:
        return "not a matmul"
    a, b = node.inputs
    out = node.outputs[0]
    if not (isinstance(a, Value) and isinstance(b, Value)) or len(a.type.shape) < 2 or len(b.type.shape) < 2:
        return "a vector operand"
    if len(out.type.shape) < 3 or _prod(out.type.shape[:-2]) < 2:
        return "not a batch of products"
    if not (a.type.dtype == b.type.dtype == out.type.dtype) or out.type.dtype.np.name not in ("float32", "float64"):
        return "not one float dtype"
    if any(_symbolic(d) for v in (a, b, out) for d in v.type.shape):
        return "a symbolic size (its tiles are sized at compile time)"  # BLAS takes it per call
    m, k = (int(d) for d in a.type.shape[-2:])
    n = int(b.type.shape[-1])
    if m * n * k > SMALL_PRODUCT_MAX or n > SMALL_PRODUCT_N_MAX or k * n > SMALL_TILE_MAX or 0 in (m, n, k):
        return "products large enough for BLAS"
    return None


def _swapped_for_reader(y: Value) -> tuple[int, int] | None:
    """(d0, d1) when y's one reader transposes axes d0 and d1 of it, neither its last: y is
    then best written in that order (the transpose of the written array is C-contiguous)."""
    users = {id(n): n for n in y.users}
    if len(users) != 1:
        return None
    (user,) = users.values()
    if user.op != "transpose" or user.body is not None:
        return None
    n = len(y.type.shape)
    d0, d1 = sorted((int(user.attrs["dim0"]) % n, int(user.attrs["dim1"]) % n))
    return (d0, d1) if d1 < n - 1 and d0 != d1 else None


# Rows of C computed together by _product_rows: the accumulators of R rows by V vectors of a
# row stay in registers through the k loop, one broadcast of a's element and V loads of B's
# row a step. R * V at most the registers given (of AVX2's 16 vector registers: B's row and the
# broadcast need the rest). Measured on W5's products (64 of 32x16 by 16x32 and of 32x32 by
# 32x16, 2 threads): 31 and 35 us, against 45 and 51 for accumulator arrays the compiler kept
# partly in memory, with the multiply-add fused (below). AVX-512 builds take a variant of 64-byte
# vectors and twice the accumulators (its 32 registers), chosen by the compiler's own macro so the
# generated text is the same on every host: W5's attention products (64 of 32x16 by 16x32, then
# of 32x32 by 32x16) compiled as one function, on one thread, 76-78 against 84-86 us a call.
PRODUCT_REGISTERS = 8
PRODUCT_VECTOR_BYTES = 32
WIDE_PRODUCT_REGISTERS = 16
WIDE_PRODUCT_VECTOR_BYTES = 64


def _register_blocked(T: str, rows: int, depth: int, cols: int, a_row: str, a_k: str, c_row: str,
                      vector_bytes: int, registers: int) -> list[str] | None:
    """The register-blocked loops of _product_rows for vectors of `vector_bytes` and at most
    `registers` accumulators; None where a row of C is not whole vectors of that size."""
    lanes = vector_bytes // (4 if T == "float" else 8)
    if cols % lanes != 0 or cols // lanes > registers:
        return None
    v = cols // lanes
    r = 1
    while r * 2 * v <= registers and rows % (r * 2) == 0:
        r *= 2
    acc = [[f"c{q}_{k}" for k in range(v)] for q in range(r)]
    lines = [f"typedef {T} gm_vec __attribute__((vector_size({vector_bytes})));",
             f"for (int i0 = 0; i0 < {rows}; i0 += {r}) {{  // {r} row(s) of C by {v} vector(s), in registers",
             "    gm_vec " + ", ".join(f"{name} = {{}}" for row in acc for name in row) + ";",
             f"    for (int k = 0; k < {depth}; ++k) {{",
             *(f"        gm_vec b{k}; __builtin_memcpy(&b{k}, &tile[k][{k * lanes}], sizeof b{k});" for k in range(v))]
    for q in range(r):
        lines.append(f"        {{ const gm_vec s = (gm_vec){{}} + a[(i0 + {q}) * {a_row} + k * {a_k}];  // broadcast")
        lines += [f"          {acc[q][k]} += s * b{k};" for k in range(v)]
        lines.append("        }")
    lines.append("    }")
    lines += [f"    __builtin_memcpy(&c[(i0 + {q}) * {c_row} + {k * lanes}], &{acc[q][k]}, sizeof {acc[q][k]});"
              for q in range(r) for k in range(v)]
    return lines + ["}"]


def _product_rows(T: str, rows: int, depth: int, cols: int, a_row: str, a_k: str, c_row: str) -> list[str]:
    """The loops computing c = a @ tile for one product: register-blocked vector code where a
    row of C is whole vectors, else a vector loop along the row over a few rows at once. Each
    element of C accumulates over k in order; the multiply-adds are fused (one rounding each,
    as BLAS computes: the products' bits are not NumPy's either way), so either vector width
    gives the same bits."""
    narrow = _register_blocked(T, rows, depth, cols, a_row, a_k, c_row, PRODUCT_VECTOR_BYTES, PRODUCT_REGISTERS)
    if narrow is not None:
        wide = _register_blocked(T, rows, depth, cols, a_row, a_k, c_row, WIDE_PRODUCT_VECTOR_BYTES,
                                 WIDE_PRODUCT_REGISTERS)
        return narrow if wide is None else ["#if defined(__AVX512F__)", *wide, "#else", *narrow, "#endif"]
    lanes = PRODUCT_VECTOR_BYTES // (4 if T == "float" else 8)
    block = 1  # rows of C accumulated together: each k step has `block` independent vector chains
    while block < 8 and rows % (block * 2) == 0 and block * 2 * cols <= 16 * lanes:
        block *= 2
    return [
        f"for (int i0 = 0; i0 < {rows}; i0 += {block}) {{  // {block} row(s) of C at once",
        f"    {T} acc[{block}][{cols}];",
        f"    for (int q = 0; q < {block}; ++q)",
        "        #pragma omp simd",
        f"        for (int j = 0; j < {cols}; ++j) acc[q][j] = ({T})0;",
        f"    for (int k = 0; k < {depth}; ++k) {{",
        f"        for (int q = 0; q < {block}; ++q) {{",
        f"            const {T} aik = a[(i0 + q) * {a_row} + k * {a_k}];",
        "            #pragma omp simd",
        f"            for (int j = 0; j < {cols}; ++j) acc[q][j] = acc[q][j] + aik * tile[k][j];",
        "        }",
        "    }",
        f"    for (int q = 0; q < {block}; ++q)",
        "        #pragma omp simd",
        f"        for (int j = 0; j < {cols}; ++j) c[(i0 + q) * {c_row} + j] = acc[q][j];",
        "}",
    ]


class CBatchedMatmul(CFunction):
    """A batch of small products C[t] = A[t] @ B[t] as one C function: the batch shared out
    among the threads; per product, B packed into a row-major tile (any layout: a view's
    strides are read in place) and each element of C accumulated over k in the operands'
    precision, k in order (a vector loop along a row, a few rows at once)."""

    node: Node

    def __init__(self, module: "NativeModule", node: Node, name: str) -> None:
        super().__init__(module, name, node)
        self.fused_multiply_add = True

    def _operand(self, v: Value) -> tuple[str, tuple, int]:
        """(C array name, v's element strides in it, offset) of operand v: the base of a view
        read in place, else v itself (C-contiguous, as the call checks)."""
        view = strided_source(v)
        if view is not None:
            base, strides, offset = view
            return self._param(v, self.m.names(base), writable=False, sized_by=base), strides, offset
        strides = contiguous_strides(_ints(v.type.shape))
        return self._param(v, self.m.contiguous(v), writable=False), strides, 0

    def emit(self) -> None:
        m, node = self.m, self.node
        a, b = node.inputs
        y = node.outputs[0]
        ca, sa, oa = self._operand(a)
        cb, sb, ob = self._operand(b)
        shape = _ints(y.type.shape)
        swap = _swapped_for_reader(y)
        # the product is written in the layout its reader wants: attention's heads, transposed
        # back beside each other and reshaped to rows of the model's width, were a NumPy copy
        # each (8 a step in W5); written so, the transpose is C-contiguous, the reshape a view
        layout = list(range(len(shape)))
        if swap is not None:
            layout[swap[0]], layout[swap[1]] = layout[swap[1]], layout[swap[0]]
        stored = tuple(shape[d] for d in layout)
        name = m.names(y) if swap is None else m.names.fresh(f"{m.names(y)}_t")
        self._fresh_array(name, stored, y.type.dtype)
        cy = self._param(y, name, writable=True)
        contiguous = contiguous_strides(stored)
        strides = [0] * len(shape)
        for j, d in enumerate(layout):
            strides[d] = contiguous[j]
        batch, (rows, cols) = shape[:-2], shape[-2:]
        depth = int(a.type.shape[-1])
        T = c_type(y.type.dtype)
        count = _prod(batch)
        sfx = "LL"

        def at(v: Value, strides: tuple, offset: int) -> str:
            vb = _ints(v.type.shape[:-2])
            index = strided_index(vb, strides[:-2], batch, "t", sfx) if vb else "0"
            return f"{offset}{sfx} + {index}" if offset else index

        par = "#pragma omp parallel for num_threads(gm_nt) schedule(static)" \
            if _parallel(count * rows * cols * depth // 16) else "// little work: the calling thread"
        a_row, a_k, b_k, b_j, c_row = (f"{x}{sfx}" for x in (sa[-2], sa[-1], sb[-2], sb[-1], strides[-2]))
        self.lines += [
            f"{{  // %{y.name} = matmul: {count} products of {rows}x{depth} by {depth}x{cols}",
            f"    {par}",
            f"    for (long long t = 0; t < {count}{sfx}; ++t) {{",
            f"        const {T}* a = {ca} + ({at(a, sa, oa)});",
            f"        const {T}* b = {cb} + ({at(b, sb, ob)});",
            f"        {T}* c = {cy} + ({strided_index(batch, tuple(strides[:-2]), batch, 't', sfx) if batch else '0'});",
            f"        {T} tile[{depth}][{cols}] __attribute__((aligned(32)));  // B, row-major",
            f"        for (int k = 0; k < {depth}; ++k)",
            "            #pragma omp simd",
            f"            for (int j = 0; j < {cols}; ++j) tile[k][j] = b[k * {b_k} + j * {b_j}];",
            *("        " + line for line in _product_rows(T, rows, depth, cols, a_row, a_k, c_row)),
            "    }",
            "}",
        ]
        self._call()
        if swap is not None:  # the product itself: a view of what was written
            m.body.append(f"{m.names(y)} = np.swapaxes({name}, {swap[0]}, {swap[1]})")
