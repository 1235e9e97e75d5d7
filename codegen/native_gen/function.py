"""A C function of the native module (`void name(void* const* gm_args, int gm_nt)`) and its
loops: which regions can be written (supported), when a loop runs in parallel, consecutive
parallel loops sharing one OpenMP team (one_team), a function identical to an earlier one
(same_code), and the double accumulators of reductions (init, update, NaN, the SIMD clause).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gmnative import build as native_build
from gmops import REGISTRY
from static.ir import Node, Value

from ..c_kernel import KernelBody
from ..lowering import ReductionLowering, lowering_for
from ..regions import Region
from ..render import C_TYPES, c_type, node_line
from .indexing import _ACC, _SIMD_REDUCTIONS, _prod, storage_c_type

if TYPE_CHECKING:
    from .driver import NativeModule


def supported(region: Region) -> str | None:
    """Why the region cannot be one C function (None: it can)."""
    if region.kind not in ("blocked", "rows"):
        return region.reason or "not a fusable region"
    allowed = set(region.body.inputs) | {o for n in region.reductions + region.epilogue for o in n.outputs}
    if not all(v in allowed for n in region.epilogue for v in n.input_values()):
        return "an epilogue reads a value computed before the reductions"
    if region.kind == "rows" and any(_extreme(red) is None and red.op not in _SIMD_REDUCTIONS
                                     for red in region.reductions):
        return "a row region's reduction has no OpenMP combiner"
    values = list(region.body.inputs) + [o for n in region.body.nodes for o in n.outputs]
    for v in values:
        if v.type.dtype.np.name not in C_TYPES:
            return f"%{v.name} has dtype {v.type.dtype.name}, which has no C type"
    for n in region.prologue + region.epilogue:
        if lowering_for(n.op).cupy.expr is None:
            return f"{n.op} has no C expression"
    return None


class CFunction:
    """One C function `void name(void* const* gm_args, int gm_nt)`: its array parameters
    (inputs, then outputs) and its statements."""

    def __init__(self, module: "NativeModule", name: str, node: Node | None = None) -> None:
        self.m, self.node, self.name = module, node, name  # node: the IR node it runs (none: the whole graph)
        self.reused = False  # _call() found an identical function: this one calls it
        self.params: list = []  # (C declaration, Python source of the buffer, byte size, writable)
        self.arrays: dict = {}  # value -> C array name
        self.dtypes: list = []  # NumPy dtype name of each parameter
        self.lines: list = []
        self.fused_multiply_add = False  # compiled with fused multiply-adds (the small products)

    def _param(self, v: Value, source: str, writable: bool, sized_by: Value | None = None) -> str:
        """A kernel parameter for v's array (`sized_by`: the value whose array is passed, when
        v is a view read through it)."""
        k = len(self.params)
        ctype = storage_c_type(v.type.dtype)
        cname = f"{'out' if writable else 'in'}{k}"
        const = "" if writable else "const "
        decl = f"{const}{ctype}* __restrict__ {cname} = ({const}{ctype}*)gm_args[{k}];"
        nbytes = _prod((sized_by or v).type.shape) * v.type.dtype.np.itemsize
        self.params.append((decl, source, nbytes, writable))
        self.dtypes.append(v.type.dtype.np.name)
        self.arrays[v] = cname
        return cname

    def _fresh_output(self, y: Value) -> str:
        """A kernel parameter for y's array, allocated fresh before the call (from the
        module's buffers when one is free, else made by the call itself)."""
        name = self.m.names(y)
        shape = tuple(d if isinstance(d, int) else int(d) for d in y.type.shape)  # a symbolic size kept
        self._fresh_array(name, shape, y.type.dtype)
        return self._param(y, name, writable=True)

    def _fresh_array(self, name: str, shape: tuple, dtype) -> None:
        """Array `name` of `shape` made fresh for this call: from the module's buffers when one
        is free, else by the call path itself (made_by_call); either way one nothing else holds."""
        m = self.m
        alloc = m.allocate(shape, dtype)
        if alloc is None:
            m.made_by_call[name] = shape
        else:
            m.body.append(f"{name} = {alloc}")
        m.fresh.add(name)

    def _symbol_param(self) -> None:
        """The sizes of the call as the first parameter, when the graph has symbolic sizes
        (static.dynamic_shapes): `const long long s0 = gm_syms[0];`, read by the loops."""
        names = self.m.symbols
        ix = getattr(self, "ix", "long long")  # a region's index type: int where its sizes fit
        decl = "const long long* __restrict__ gm_syms = (const long long*)gm_args[0];" + "".join(
            f" const {ix} {s} = ({ix})gm_syms[{i}];" for i, s in enumerate(names))
        self.params.append((decl, "_syms", 8 * len(names), False))
        self.dtypes.append("int64")

    def _call(self) -> None:
        """The driver's call of this function; a function whose code an earlier one has (a
        model's next layer) is not emitted again: the call runs the earlier one (reused)."""
        code = same_code([d for d, _, _, _ in self.params] + self.lines)
        self.reused = code in self.m.by_code
        self.name = self.m.by_code.setdefault(code, self.name)
        self.m.kernel_call(self.name, self.params, self.dtypes)

    def function(self) -> dict:
        """The function as the template renders it, titled with its node's IR line."""
        assert self.node is not None, "a function of the whole graph is rendered by _graph_function"
        title = f"L{self.m.lines.get(id(self.node), '?')}: {node_line(self.node)}"
        return {"name": self.name, "title": title, "head": title, "also": [],
                "decls": [d for d, _, _, _ in self.params], "lines": self.lines,
                "fused_multiply_add": self.fused_multiply_add}

    def _store(self, body: KernelBody, y: Value, i: str = "i") -> str:
        expr, ctype = body.env[y]
        want = c_type(y.type.dtype)
        value = expr if ctype == want else f"({want})({expr})"
        return f"{self.arrays[y]}[{i}] = {value};"


_PARALLEL_LOOPS = {  # a loop's own parallel region -> the same loop shared by an enclosing team
    "    #pragma omp parallel for num_threads(gm_nt) schedule(static)": "    #pragma omp for schedule(static)",
    "    #pragma omp parallel for simd num_threads(gm_nt) schedule(static)": "    #pragma omp for simd schedule(static)",
}


def _blocks(lines: list) -> list | None:
    """A function's lines as its top-level blocks (`{` ... `}`); None when anything stands
    between them."""
    blocks: list = []
    for line in lines:
        if line.startswith("{"):
            blocks.append([line])
        elif not blocks or blocks[-1][-1] == "}":
            return None
        else:
            blocks[-1].append(line)
    return blocks if blocks and blocks[-1][-1] == "}" else None


def _one_loop(block: list) -> bool:
    """Whether a block is constants, then one parallel loop, and nothing after it: every
    thread of a team can run it (the constants are its own, the loop shared out)."""
    inner = block[1:-1]
    at = [k for k, line in enumerate(inner) if line in _PARALLEL_LOOPS]
    if len(at) != 1 or sum("omp parallel" in line for line in inner) != 1:
        return False
    head, loop = inner[:at[0]], inner[at[0] + 1:]
    return (all(line.startswith("    const ") or line.startswith("    //") for line in head)
            and len(loop) >= 2 and loop[0].startswith("    for (") and loop[0].endswith("{") and loop[-1] == "    }"
            and all(line.startswith("        ") or not line.strip() for line in loop[1:-1]))


_TEMPORARY = re.compile(r"\b(?:t|r|buf)_\w+")  # locals named after IR values: KernelBody's t_, a row region's r_ and buf_
_COMMENT = re.compile(r"\s*//.*$")


def same_code(lines: list) -> str:
    """A C function's text as far as the compiler sees it: comments dropped and the locals
    named after IR values renamed in order of appearance. Two regions with the same text
    compute the same thing from their arguments (shapes are constants in the text, and each
    call checks its own arrays' sizes and types), so the second calls the first's function: a
    transformer's layers then compile once, not once per layer (W5's step: 35 functions for
    82 regions, 44% less compile time)."""
    names: dict = {}
    code = [_COMMENT.sub("", line) for line in lines]
    return "\n".join(_TEMPORARY.sub(lambda m: names.setdefault(m.group(0), f"t_{len(names)}"), line)
                     for line in code if line.strip())


def one_team(lines: list) -> list:
    """A function whose loops each opened their own parallel region (`omp parallel for`),
    rewritten so that consecutive such loops share one (`omp parallel` around `omp for`
    loops): the same iterations on the same threads (a static schedule over a team of the
    same size), in the same order (each `omp for` ends with a barrier), with one outlined
    function and one fork and join instead of one per loop. Each outlined region cost gcc
    about 10 ms, the largest part of a kernel's compile time (native_build.compile_weight)."""
    blocks = _blocks(lines)
    if blocks is None:
        return lines
    out: list = []
    k = 0
    while k < len(blocks):
        run = k
        while run < len(blocks) and _one_loop(blocks[run]):
            run += 1
        if run - k < 2:
            out += blocks[k]
            k += 1
            continue
        out.append(f"#pragma omp parallel num_threads(gm_nt)  // one team for the {run - k} loops below")
        out.append("{")
        for block in blocks[k:run]:
            out += [_PARALLEL_LOOPS.get(line, line) for line in block]
        out.append("}")
        k = run
    return out


def _parallel(work: int) -> bool:
    """Whether a loop over `work` elements runs on the OpenMP threads. Shapes are static, so
    this is decided here: a small loop gets no parallel region at all, and a translation unit
    without one compiles without OpenMP's outlining (about half the compile time) and links
    without libgomp (native_build.uses_threads)."""
    # a symbolic size: decided at the size the symbolic entry was made at (static.dynamic_shapes)
    work = work.decision_value() if hasattr(work, "decision_value") else work
    return work >= native_build.PARALLEL_MIN_ELEMS


def _parallel_for(work: int) -> str:
    if _parallel(work):
        return "    #pragma omp parallel for num_threads(gm_nt) schedule(static)"
    return "    // below GM_PARALLEL_MIN elements: the calling thread"


def _reduce_step(template: str, acc: str, x: str) -> str:
    """The lowering's `reduce` expression (in a and b) combining accumulator acc with x."""
    return re.sub(r"\bb\b", x, re.sub(r"\ba\b", acc, template))


def _post_expr(low, acc: str, count: int) -> str:
    return re.sub(r"\ba\b", acc, low.post.format(T=_ACC, count=count))


def _simd_clause(accs: list) -> str | None:
    """The `omp simd` clause for a loop updating these accumulators (None: no simd pragma,
    for a combine that is no OpenMP reduction operator). A max/min reduction is OpenMP's
    max/min over the values that are not NaN plus an or-reduced flag of whether a NaN was
    seen (see _acc_update)."""
    clauses = []
    for red, acc, _ in accs:
        extreme = _extreme(red)
        if extreme is not None:
            clauses.append(f" reduction({extreme[0]}:{acc}) reduction(|:{acc}_nan)")
            continue
        op = _SIMD_REDUCTIONS.get(red.op)
        if op is None:
            return None
        clauses.append(f" reduction({op}:{acc})")
    return "".join(clauses)


_EXTREMES = {"maximum": ("max", ">"), "minimum": ("min", "<")}  # combiner -> (OpenMP operator, C comparison)


def _extreme(red: Node) -> tuple[str, str] | None:
    """(OpenMP reduction operator, comparison) of a max/min reduction (amax, amin); None else."""
    facts = REGISTRY[red.op].reduction
    return _EXTREMES.get(facts.combiner) if facts is not None else None


def _acc_init(red: Node, acc: str, low: ReductionLowering) -> list[str]:
    """Declarations of accumulator `acc` (and, for max/min, its NaN flag)."""
    lines = [f"double {acc} = {low.identity.format(T=_ACC)};"]
    if _extreme(red) is not None:
        lines.append(f"int {acc}_nan = 0;  // a NaN was seen: the result is NaN")
    return lines


def _acc_update(red: Node, acc: str, low: ReductionLowering, x: str) -> list[str]:
    """Statements adding element `x` to accumulator `acc`. The NaN-propagating max/min
    helpers (gm_max, gm_min) are no reduction the vectorizer knows, which left every loop
    with an amax scalar (5x slower than a vector max): a max/min keeps the larger of the
    values that are not NaN (a comparison that is false for a NaN keeps acc), which OpenMP's
    max/min reduction vectorizes, and a flag records a NaN (_acc_nan turns it into the
    result). Tied values of either sign of zero may give either zero."""
    extreme = _extreme(red)
    if extreme is None:
        return [f"{acc} = {_reduce_step(low.reduce, acc, x)};"]
    return [f"const double {acc}_x = {x};", f"{acc} = {acc}_x {extreme[1]} {acc} ? {acc}_x : {acc};",
            f"{acc}_nan |= {acc}_x != {acc}_x;"]


def _acc_nan(red: Node, acc: str) -> list[str]:
    """After a max/min loop: NaN when one was seen."""
    return [f"if ({acc}_nan) {acc} = gm_nan<double>();"] if _extreme(red) is not None else []
