"""Wrap the kernels of a generated CuPy module (read from its source with `ast`, no CuPy
needed) in a plain CUDA translation unit, so `nvcc -c` can check they compile."""
from __future__ import annotations

import ast

C_OF = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
        "int64": "long long", "float16": "float16", "float32": "float", "float64": "double"}


def _const(node, consts):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return consts[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _const(node.left, consts) + _const(node.right, consts)
    raise ValueError(ast.dump(node))


def kernels(source: str) -> list:
    """[(kind, dict of the constructor's arguments)] for every cp.*Kernel in the module."""
    tree = ast.parse(source)
    consts, found = {}, []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
            consts[stmt.targets[0].id] = stmt.value.value
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            fn = stmt.value.func
            if isinstance(fn, ast.Attribute) and fn.attr in ("ElementwiseKernel", "ReductionKernel"):
                args = [_const(a, consts) for a in stmt.value.args]
                kw = {k.arg: _const(k.value, consts) for k in stmt.value.keywords}
                found.append((fn.attr, args, kw))
    return found


def _params(text: str) -> list:
    return [tuple(p.split()) for p in text.split(",") if p.strip()]


def _elementwise(args, kw) -> str:
    in_params, out_params, body, name = args[:4]
    ins, outs = _params(in_params), _params(out_params)
    sig = [f"const {C_OF[t]}* __restrict__ {n}_ptr" for t, n in ins] + [f"{C_OF[t]}* {n}_ptr" for t, n in outs]
    lines = [kw.get("preamble", ""), f'__global__ void {name}({", ".join(sig + ["long long n"])}) {{',
             "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;", "    if (i >= n) return;"]
    lines += [f"    const {C_OF[t]} {n} = {n}_ptr[i];" for t, n in ins]
    lines += [f"    {C_OF[t]} {n};" for t, n in outs]
    lines += ["    {", body, "    }"]
    lines += [f"    {n}_ptr[i] = {n};" for t, n in outs]
    lines.append("}")
    return "\n".join(lines)


def _reduction(args, kw) -> str:
    in_params, out_params, map_expr, reduce_expr, post_map, identity, name = args[:7]
    ins, outs = _params(in_params), _params(out_params)
    red = kw["reduce_type"] if "reduce_type" in kw else C_OF[outs[0][0]]  # CuPy: a C type name
    sig = [f"const {C_OF[t]}* __restrict__ {n}_ptr" for t, n in ins] + [f"{C_OF[t]}* {n}_ptr" for t, n in outs]
    lines = [kw.get("preamble", ""), f"#define REDUCE(a, b) ({reduce_expr})", f"#define POST_MAP(a) ({post_map})",
             f'__global__ void {name}({", ".join(sig + ["long long n"])}) {{',
             f"    typedef {red} _type_reduce;", f"    _type_reduce _s = _type_reduce({identity});",
             "    for (long long i = 0; i < n; ++i) {"]
    lines += [f"        const {C_OF[t]} {n} = {n}_ptr[i];" for t, n in ins]
    lines += [f"        _type_reduce _a = static_cast<_type_reduce>({map_expr});", "        _s = REDUCE(_s, _a);",
              "    }"]
    lines += [f"    {C_OF[t]} {n};" for t, n in outs] + ["    POST_MAP(_s);"]
    lines += [f"    {n}_ptr[0] = {n};" for t, n in outs]
    lines += ["}", "#undef REDUCE", "#undef POST_MAP"]
    return "\n".join(lines)


def translation_unit(sources: dict) -> str:
    """One .cu file: each module's kernels in a namespace of their own."""
    parts = ["#include <cuda_fp16.h>", "typedef __half float16;  // stands in for CuPy's float16"]
    for label, source in sources.items():
        parts.append(f"namespace {label} {{")
        for k, (kind, args, kw) in enumerate(kernels(source)):
            body = _elementwise(args, kw) if kind == "ElementwiseKernel" else _reduction(args, kw)
            parts.append(f"namespace kernel{k} {{\n{body}\n}}")
        parts.append(f"}}  // namespace {label}")
    return "\n".join(parts) + "\n"
