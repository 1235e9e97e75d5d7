"""The C forms of a loop body's library calls (native_gen/loops.py): matrix products through
NumPy's own BLAS with the routine and arguments NumPy's matmul picks (numpy/_core/src/umath/
matmul.c.src: dot, gemv or gemm by the shapes and strides, a loop for one inner dimension),
concatenations as copies, and sums and means as np.add.reduce adds (from 0: slices in order
over leading axes, NumPy's pairwise summation over trailing runs, verified against NumPy in
tests/codegen/test_native_loops.py). Each writes C statements into the body's step.

Why NumPy's rules rather than the generator's own kernels: the Python-driven loop runs these
ops as NumPy calls, and the C loop must give its bits.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from gmnative.kernels import GEMM_SPLIT_MIN
from static.ir import Node, Value

from ..render import C_TYPES
from .indexing import _ints, _prod, contiguous_strides, storage_c_type, strided_source
from .matmul import CBatchedMatmul, small_batched_matmul

if TYPE_CHECKING:
    from .loops import _BodyModule as _Body


class NoCForm(Exception):
    """A node of a body that has no C form inside a loop."""


def _bytes(v: Value) -> int:
    return _prod(v.type.shape) * v.type.dtype.np.itemsize


# NumPy's BLAS routines a product calls, in the order of the loop's table of addresses, and the
# names NumPy's wheels export them under (scipy-openblas with 64-bit integers first)
_ROUTINES = ("sgemm", "dgemm", "sgemv", "dgemv", "sdot", "ddot")
_SPELLINGS = (("scipy_cblas_", "64_", True), ("cblas_", "64_", True), ("scipy_cblas_", "", False), ("cblas_", "", False))


@functools.lru_cache(maxsize=1)
def _blas() -> tuple[tuple, bool] | None:
    """(addresses of _ROUTINES, 64-bit integers) in the BLAS NumPy loaded, or None (then a
    product has no C form here and its loop runs in Python)."""
    import ctypes  # noqa: PLC0415

    from gmbase.threads import numpy_openblas  # noqa: PLC0415

    for lib in numpy_openblas():
        for head, tail, ilp64 in _SPELLINGS:
            fns = [getattr(lib, f"{head}{r}{tail}", None) for r in _ROUTINES]
            if all(f is not None for f in fns):
                return tuple(ctypes.cast(f, ctypes.c_void_p).value for f in fns if f is not None), ilp64
    return None


def blas_table() -> np.ndarray:
    """What the loop functions read of BLAS, one int64 each: the addresses of _ROUTINES, then
    the smallest product split by rows across the threads and whether BLAS runs one thread
    (the two conditions under which the Python-driven body splits a product: _rt.matmul,
    gmnative.kernels.matmul), read at each call as they are there, then the sgemm of
    products of GEMM_SPLIT_MIN multiply-adds and more (the project's own, gmnative.gemm,
    where the Python-driven body's products of that size run on it; NumPy's otherwise)."""
    from gmnative import build, gemm, kernels  # noqa: PLC0415

    found = _blas()
    assert found is not None, "blas_table is only called by modules generated where BLAS was found"
    table = _TABLE.get("t")
    if table is None:
        table = _TABLE["t"] = np.array(list(found[0]) + [0, 0, found[0][0]], np.int64)
    table[_SPLIT_AT] = kernels.split_min()
    table[_SPLIT_AT + 1] = build.blas_threads() == 1
    own = gemm.sgemm_address(found[1]) if gemm.own_sgemm() else None
    table[_LARGE_SGEMM_AT] = own if own is not None else found[0][0]
    return table


# the table's entries after the routines: the split's size, BLAS on one thread, large products' sgemm
_SPLIT_AT = len(_ROUTINES)
_LARGE_SGEMM_AT = len(_ROUTINES) + 2
TABLE_LEN = len(_ROUTINES) + 3


_TABLE: dict = {}


def _blasable2d(s1: int, s2: int, d2: int) -> bool:
    """NumPy's is_blasable2d (element strides): unit stride along the second axis, and the
    first stride at least the second axis's length."""
    return s2 == 1 and s1 >= d2


def cat(body: "_Body", node: Node) -> None:
    """np.concatenate: each operand's rows copied into the result's (a copy: exact)."""
    out = node.outputs[0]
    shape = _ints(out.type.shape)
    d = int(node.attrs["dim"]) % max(len(shape), 1)
    if not all(isinstance(v, Value) and v.type.dtype == out.type.dtype for v in node.inputs):
        raise NoCForm("cat of a literal or of mixed dtypes")
    c = body._slot(body.name(out), _bytes(out))
    outer = _prod(shape[:d])
    row = _prod(shape[d:]) * out.type.dtype.np.itemsize
    lines = [f"{{  // %{out.name} = cat along dim {d}: each operand's rows copied"]
    at = 0
    for v in node.inputs:
        part = _prod(_ints(v.type.shape)[d:]) * out.type.dtype.np.itemsize
        if part:
            src = body.pointer(body.name(v))
            lines.append(f"    for (long long gm_i = 0; gm_i < {outer}; ++gm_i) __builtin_memcpy({c} + gm_i * "
                         f"{row}LL + {at}, {src} + gm_i * {part}LL, {part});")
        at += part
    body.steps += lines + ["}"]


def reduce_sum(body: "_Body", node: Node) -> bool:
    """A float sum or mean as np.add.reduce computes it, so with its bits (True when
    written; other reductions have no C form here): the result starts at 0; over leading
    axes each slice is added in order (a bias's gradient: column sums of a batch), over
    trailing axes (or all) each contiguous run is added by NumPy's pairwise summation
    (8 partial sums, halves above 128 elements); a mean then divides in double."""
    from ..lowering import accumulate_dtype  # noqa: PLC0415

    x, out = node.inputs[0], node.outputs[0]
    if node.op not in ("sum", "mean") or not isinstance(x, Value):
        return False
    shape = _ints(x.type.shape)
    dims = node.attrs.get("dims")
    dims = set(range(len(shape))) if dims is None else {int(a) % max(len(shape), 1) for a in dims}
    if node.op == "sum" and x.type.dtype.np.kind in "biu" and out.type.dtype.np.name == "int64":
        return _integer_sum(body, x, out, shape, dims)
    if accumulate_dtype(node) is not None:
        return False
    dt = x.type.dtype.np.name
    if dt not in ("float32", "float64") or out.type.dtype != x.type.dtype or not dims:
        return False
    # the axes NumPy's iterator walks (those of size 1 take no part), reduced or kept, in order
    walked = [a in dims for a in range(len(shape)) if shape[a] != 1]
    count = _prod(shape[a] for a in dims)
    kept = _prod(shape) // max(count, 1) if count else _prod(shape[a] for a in range(len(shape)) if a not in dims)
    if count == 0:
        if node.op == "mean":
            return False
        body.steps.append(f"__builtin_memset({body._slot(body.name(out), _bytes(out))}, 0, {_bytes(out)});")
        return True
    k = walked.index(False) if False in walked else len(walked)
    leading = kept > 1 and k > 0 and not any(walked[k:])  # reduced axes, then kept ones
    trailing = kept == 1 or walked == sorted(walked)  # kept axes, then reduced ones (or all reduced)
    if not (leading or trailing):
        return False
    T = "float" if dt == "float32" else "double"
    src = body.pointer(body.name(x))
    c = body._slot(body.name(out), _bytes(out))
    finish = (f"gm_z[gm_j] = ({T})((double)gm_z[gm_j] / (double){count}LL);" if node.op == "mean" else "")
    how = "slice by slice, in order" if leading else "NumPy's pairwise summation of each run"
    lines = [f"{{  // %{out.name} = {node.op} as np.add.reduce adds: {how}",
             f"    const {T}* gm_x = (const {T}*)({src}); {T}* gm_z = ({T}*)({c});"]
    if leading:
        lines += [f"    for (long long gm_j = 0; gm_j < {kept}; ++gm_j) gm_z[gm_j] = ({T})0;",
                  f"    for (long long gm_i = 0; gm_i < {count}; ++gm_i)",
                  f"        for (long long gm_j = 0; gm_j < {kept}; ++gm_j) gm_z[gm_j] = gm_z[gm_j] + "
                  f"gm_x[gm_i * {kept}LL + gm_j];"]
    else:
        lines += [f"    struct gm_pw {{ static {T} sum(const {T}* a, long long n) {{",
                  f"        if (n < 8) {{ {T} res = ({T})0; for (long long i = 0; i < n; ++i) res += a[i]; return res; }}",
                  "        if (n <= 128) {",
                  f"            {T} r[8]; for (int j = 0; j < 8; ++j) r[j] = a[j];",
                  "            long long i = 8;",
                  "            for (; i < n - (n % 8); i += 8) for (int j = 0; j < 8; ++j) r[j] += a[i + j];",
                  f"            {T} res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));",
                  "            for (; i < n; ++i) res += a[i];",
                  "            return res;",
                  "        }",
                  "        long long n2 = n / 2; n2 -= n2 % 8;",
                  "        return sum(a, n2) + sum(a + n2, n - n2);",
                  "    } };",
                  f"    for (long long gm_j = 0; gm_j < {kept}; ++gm_j)",
                  f"        gm_z[gm_j] = ({T})0 + gm_pw::sum(gm_x + gm_j * {count}LL, {count}LL);"]
    if finish:
        lines.append(f"    for (long long gm_j = 0; gm_j < {kept}; ++gm_j) {finish}")
    body.steps += lines + ["}"]
    return True


def _integer_sum(body: "_Body", x: Value, out: Value, shape: tuple, dims: set) -> bool:
    """A sum of integers or bools into int64: exact in any order (wrapping as NumPy's int64
    does), so one pass over x adding each element into its result."""
    kept = [a for a in range(len(shape)) if a not in dims]
    strides, out_strides = contiguous_strides(shape), contiguous_strides(tuple(shape[a] for a in kept))
    terms = [f"((gm_i / {strides[a]}LL) % {shape[a]}LL) * {out_strides[j]}LL" for j, a in enumerate(kept)
             if shape[a] != 1]
    ctype = storage_c_type(x.type.dtype)
    src = body.pointer(body.name(x))
    z = body._slot(body.name(out), _bytes(out))
    body.steps += [f"{{  // %{out.name} = sum into int64 (exact in any order)",
                   f"    const {ctype}* gm_x = (const {ctype}*)({src});",
                   "    unsigned long long* gm_z = (unsigned long long*)(" + z + ");",
                   f"    for (long long gm_j = 0; gm_j < {_prod(out.type.shape)}LL; ++gm_j) gm_z[gm_j] = 0;",
                   f"    for (long long gm_i = 0; gm_i < {_prod(shape)}LL; ++gm_i)",
                   f"        gm_z[{' + '.join(terms) or '0'}] += (unsigned long long)(long long)gm_x[gm_i];",
                   "}"]
    return True


def strides_of(body: "_Body", v: Value) -> tuple[str, tuple]:
    """(address, element strides) of a product operand of 1 or 2 dims: a transposed view
    of a C-contiguous matrix is read in place with its strides (NumPy passes it to BLAS
    as a transposed operand), anything else C-contiguous."""
    shape = _ints(v.type.shape)
    view = strided_source(v) if body.name(v) in body.views else None
    if view is not None and len(shape) == 2:
        base, strides, offset = view
        if offset == 0 and _ints(base.type.shape) == (shape[1], shape[0]) and tuple(strides) == (1, shape[0]):
            return body.pointer(body.name(base)), (1, shape[0])
    return body.pointer(body.name(v)), contiguous_strides(shape)


def matmul(body: "_Body", node: Node) -> None:
    """A product as NumPy's matmul computes it (numpy/_core/src/umath/matmul.c.src), so
    with its bits: a stack by a matrix folded into one product (fold_matmul), then dot,
    gemv (either side a vector) or gemm by the same rules, with the same arguments; a
    product with one inner dimension is NumPy's own loop."""
    a, b = node.inputs
    out = node.outputs[0]
    if not (isinstance(a, Value) and isinstance(b, Value)):
        raise NoCForm("matmul of a literal")
    if small_batched_matmul(node) is None:
        body.m._native_function(CBatchedMatmul(body.m, node, f"gm_matmul{len(body.m.functions)}"), "loop")
        return
    dt = out.type.dtype.np.name
    ra, rb = len(a.type.shape), len(b.type.shape)
    if (_blas() is None or dt not in ("float32", "float64") or a.type.dtype != out.type.dtype
            or b.type.dtype != out.type.dtype or rb > 2 or (ra > 2 and rb != 2)):
        raise NoCForm("matmul other than a float product by one matrix or vector")
    found = _blas()
    assert found is not None
    T = "float" if dt == "float32" else "double"
    idx = "long long" if found[1] else "int"
    f = 0 if dt == "float32" else 1  # the table: gemm, gemv, dot, each float then double
    k_ = int(a.type.shape[-1])
    m_ = _prod(a.type.shape[:-1]) if ra > 1 else 1
    n_ = int(b.type.shape[-1]) if rb == 2 else 1
    if ra > 2:
        pa, sa = body.pointer(body.name(a)), (k_, 1)
    elif ra == 2:
        pa, sa = strides_of(body, a)
    else:
        pa, sa = body.pointer(body.name(a)), (0, 1)
    if rb == 2:
        pb, sb = strides_of(body, b)
    else:
        pb, sb = body.pointer(body.name(b)), (1, 0)
    c = body._slot(body.name(out), _bytes(out))
    cast = f"(const {T}*)"
    head = f"{{  // %{out.name} = matmul ({m_}x{k_} by {k_}x{n_}) as NumPy's matmul calls BLAS"
    if m_ == 0 or n_ == 0:
        return
    if k_ == 0:
        body.steps.append(f"__builtin_memset({c}, 0, {_bytes(out)});  // %{out.name}: an empty sum")
        return
    gemv = (f"typedef void (*gm_gemv_t)(int, int, {idx}, {idx}, {T}, const {T}*, {idx}, const {T}*, {idx}, "
            f"{T}, {T}*, {idx});")
    body.gemm = True
    if m_ == 1 and n_ == 1:  # dot: 0 + the BLAS dot product
        body.steps += [head, f"    typedef {T} (*gm_dot_t)({idx}, const {T}*, {idx}, const {T}*, {idx});",
                       f"    {T} gm_sum = ({T})0;",
                       f"    gm_sum += ((gm_dot_t)gm_blas[{4 + f}])({k_}, {cast}({pa}), {sa[1]}, {cast}({pb}), "
                       f"{sb[0]});", f"    *({T}*)({c}) = gm_sum;", "}"]
    elif k_ == 1:  # NumPy's own loop: each element 0 + a * b
        body.steps += [head, f"    const {T}* gm_x = {cast}({pa}); const {T}* gm_y = {cast}({pb});",
                       f"    {T}* gm_z = ({T}*)({c});",
                       f"    for (long long gm_i = 0; gm_i < {m_}; ++gm_i)",
                       f"        for (long long gm_j = 0; gm_j < {n_}; ++gm_j)",
                       f"            gm_z[gm_i * {n_} + gm_j] = ({T})0 + gm_x[gm_i * {sa[0]}] * gm_y[gm_j * {sb[1]}];",
                       "}"]
    elif m_ == 1 or n_ == 1:  # gemv: a vector by a matrix, or a matrix by a vector
        if m_ == 1:  # gemv(B, is2_p, is2_n, A, is1_n, out, 1, m=N, n=K)
            mat, s_m, s_n, vec, inc, rows = pb, sb[1], sb[0], pa, sa[1], n_
        else:  # gemv(A, is1_m, is1_n, B, is2_n, out, 1, m=M, n=K)
            mat, s_m, s_n, vec, inc, rows = pa, sa[0], sa[1], pb, sb[0], m_
        order, lda = (102, s_m) if _blasable2d(s_m, s_n, k_) else (101, s_n)
        body.steps += [head, f"    {gemv}",
                       f"    ((gm_gemv_t)gm_blas[{2 + f}])({order}, 112, {k_}, {rows}, ({T})1, {cast}({mat}), "
                       f"{lda}, {cast}({vec}), {inc}, ({T})0, ({T}*)({c}), 1);", "}"]
    else:  # gemm, each operand transposed where it is not blasable as it lies
        entry = _LARGE_SGEMM_AT if f == 0 and m_ * n_ * k_ >= GEMM_SPLIT_MIN else f
        ta, lda = (111, sa[0]) if _blasable2d(sa[0], sa[1], k_) else (112, sa[1])
        tb, ldb = (111, sb[0]) if _blasable2d(sb[0], sb[1], n_) else (112, sb[1])
        if pa == pb and m_ == n_ and sa == (sb[1], sb[0]) and ta != tb:
            raise NoCForm("matmul of a matrix by its own transpose (NumPy calls syrk)")
        body.steps += [head,
                       f"    typedef void (*gm_gemm_t)(int, int, int, {idx}, {idx}, {idx}, {T}, const {T}*, {idx}, "
                       f"const {T}*, {idx}, {T}, {T}*, {idx});",
                       # (a float32 product of GEMM_SPLIT_MIN or more: the sgemm the Python-driven body's
                       # product of that size runs on, gmnative.kernels.matmul's: its bits)
                       f"    const gm_gemm_t gm_gemm = (gm_gemm_t)gm_blas[{entry}];"]
        if m_ >= 2 and m_ * n_ * k_ >= GEMM_SPLIT_MIN and (found[1] or max(m_, n_, k_) < 1 << 31):
            # the Python-driven body splits such a product by rows across the threads, each part one
            # BLAS call (gmnative's gemm_rows), where BLAS runs one thread: so does the loop
            a_rows = f"{cast}({pa}) + gm_lo" if ta == 112 else f"{cast}({pa}) + gm_lo * {lda}LL"
            body.steps += [
                f"    if (gm_nt >= 2 && gm_blas[{_SPLIT_AT + 1}] != 0 && {m_ * n_ * k_}LL >= gm_blas[{_SPLIT_AT}]) {{",
                f"        const long long gm_parts = gm_nt < {m_} ? gm_nt : {m_};",
                "        #pragma omp parallel for num_threads(gm_nt) schedule(static)",
                "        for (long long gm_p = 0; gm_p < gm_parts; ++gm_p) {",
                f"            const long long gm_lo = {m_}LL * gm_p / gm_parts, gm_hi = {m_}LL * (gm_p + 1) / gm_parts;",
                f"            if (gm_hi > gm_lo) gm_gemm(101, {ta}, {tb}, ({idx})(gm_hi - gm_lo), {n_}, {k_}, ({T})1, {a_rows}, "
                f"{lda}, {cast}({pb}), {ldb}, ({T})0, ({T}*)({c}) + gm_lo * {n_}LL, {n_});",
                "        }",
                "    } else"]
        body.steps += [f"    gm_gemm(101, {ta}, {tb}, {m_}, {n_}, {k_}, ({T})1, {cast}({pa}), {lda}, {cast}({pb}), {ldb}, "
                       f"({T})0, ({T}*)({c}), {n_});", "}"]




def _elementwise_operand(body: "_Body", v, out: Value, ctype: str) -> str | None:
    """The C expression of operand v at flat index gm_i of out: a literal, a 0-d value, or a
    value of out's shape (C-contiguous); None for other broadcasts."""
    if not isinstance(v, Value):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        return f"(({ctype}){v!r})"
    if v.type.dtype != out.type.dtype:
        return None
    p = body.pointer(body.name(v))
    if not v.type.shape:
        return f"(*(const {ctype}*)({p}))"
    if _ints(v.type.shape) == _ints(out.type.shape):
        return f"((const {ctype}*)({p}))[gm_i]"
    return None


def divmod_op(body: "_Body", node: Node) -> bool:
    """remainder and floor_divide (Python's floor semantics, NumPy's spelling of them) on
    integers, and remainder on floats as PyTorch computes it (fmod, plus the divisor where
    the signs differ; a zero keeps the dividend's sign): True when written. NumPy gives 0 for
    an integer division by zero."""
    out = node.outputs[0]
    dt = out.type.dtype.np
    if node.op not in ("remainder", "floor_divide") or len(node.inputs) != 2 or dt.kind not in "iuf":
        return False
    if dt.kind == "f" and node.op != "remainder":
        return False
    T = C_TYPES.get(dt.name, "")
    if dt.kind == "u" and dt.name != "uint8" or not T:
        return False
    a, b = (_elementwise_operand(body, v, out, T) for v in node.inputs)
    if a is None or b is None:
        return False
    z = body._slot(body.name(out), _bytes(out))
    if dt.kind == "f":
        fmod = "fmodf" if T == "float" else "fmod"
        value = [f"{T} gm_m = __builtin_{fmod}(gm_a, gm_b);",
                 # (a zero keeps fmod's sign, the dividend's, as PyTorch's: gmops.division._remainder)
                 "if (gm_b != 0 && gm_m != 0 && ((gm_b < 0) != (gm_m < 0))) gm_m += gm_b;",
                 "gm_z[gm_i] = gm_m;"]
    elif node.op == "remainder":  # (x % -1 is 0: the C expression would overflow at the minimum)
        minus_one = f"gm_b == ({T})-1 ? ({T})0 : " if dt.kind == "i" else ""
        value = ["if (gm_b == 0) { gm_z[gm_i] = 0; continue; }",
                 f"{T} gm_m = ({T})({minus_one}gm_a % gm_b);",
                 "if (gm_m != 0 && ((gm_m < 0) != (gm_b < 0))) gm_m += gm_b;",
                 "gm_z[gm_i] = gm_m;"]
    else:  # (x // -1 is -x, wrapping at the minimum as NumPy's does)
        minus_one = (f"if (gm_b == ({T})-1) {{ gm_z[gm_i] = ({T})(0ULL - (unsigned long long)gm_a); continue; }}"
                     if dt.kind == "i" else "")
        value = ["if (gm_b == 0) { gm_z[gm_i] = 0; continue; }", minus_one,
                 f"{T} gm_q = ({T})(gm_a / gm_b);",
                 "if ((gm_a % gm_b != 0) && ((gm_a < 0) != (gm_b < 0))) gm_q -= 1;",
                 "gm_z[gm_i] = gm_q;"]
    body.steps += [f"{{  // %{out.name} = {node.op}, as NumPy computes it",
                   f"    {T}* gm_z = ({T}*)({z});",
                   f"    for (long long gm_i = 0; gm_i < {_prod(out.type.shape)}LL; ++gm_i) {{",
                   f"        const {T} gm_a = {a}; const {T} gm_b = {b};"]
    body.steps += ["        " + line for line in value] + ["    }", "}"]
    return True
