"""Generate the CuPy module for a graph. Needs no CuPy to run: the source is text.

- A fused region's pointwise values that leave it become one `cupy.ElementwiseKernel`
  per output shape: typed parameters, one C statement per IR op (commented with its IR
  line), every literal and every operand of another type cast explicitly to the type
  the op computes in (a Python float becomes a double, then that type: NumPy's rule).
- Each reduction of the region becomes one `cupy.ReductionKernel` whose map expression
  is a device function recomputing its pointwise prologue from the region's inputs (no
  intermediate array), with mean's division in the post-map; the epilogue on reduced
  values is one more ElementwiseKernel. CuPy gives such a kernel one thread block per
  output element, so a reduction of several inputs into few outputs (a loss) first maps
  into a temporary array and then reduces that one array, which CuPy runs through CUB.
- Everything else is a CuPy library call (matmul goes to cuBLAS).
Kernel objects are module globals: built once per module, compiled by CuPy on first use.
"""
from __future__ import annotations

import re

import numpy as np

from static.ir import Graph, Node, Value

from .c_kernel import Driver, KernelBody, closure, reduction_lowering, yielded_by
from .cuda_helpers import PREAMBLE
from .lowering import half_in_float32, lowering_for
from .regions import Region, analyze, bind_symbols
from .render import (C_TYPES, CUPY_PARAM_TYPES, Names, c_literal, c_type, compute_c_type, entry_name, fields, fill,
                     line_numbers, node_line, np_dtype, py_literal)
from .templates import render


class CupyModule(Driver):
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.lines = line_numbers(graph)
        self.names = Names(taken={"cp"})
        self.kernels: list = []
        self.body: list = []
        self.stats = {"elementwise": 0, "reduction": 0, "unfused": 0}
        self.notes: list = []
        self.prefix = "gm_" + re.sub(r"\W", "_", graph.name)

    def call_line(self, node: Node, operands: list, outs: list) -> str:
        """A CuPy library call (float16 with a number: in float32, rounded once, as eager)."""
        low = lowering_for(node.op).cupy
        half = half_in_float32(node)
        if half:
            operands = [f"{o}.astype(cp.float32)" if isinstance(v, Value) else o for o, v in zip(operands, node.inputs)]
        call = fill(low.call, operands, fields(node, operands, module='cp'))
        target = self.targets(node, outs)
        return f"{target} = {call}.astype(cp.float16)" if half else f"{target} = {call}"

    def source(self) -> str:
        g = self.graph
        params = [self.names(v) for v in g.inputs]
        entry = [f"{p} = cp.asarray({p})" for p in params]
        entry += bind_symbols(g, self.names)  # symbolic sizes (static.dynamic_shapes), read from the inputs
        for node in g.nodes:
            self.comment(node)
            if node.body is None:
                self.call(node)
            else:
                self.region(node)
        returns = [self.src(v) for v in g.outputs]
        return render("cupy_module.py.j2", entry_fn=entry_name(g), graph_name=g.name, description=self.describe(), ir_text=str(g),
                      preamble=PREAMBLE, kernels=self.kernels, params=params, entry=entry, body=self.body,
                      returns=returns)

    def describe(self) -> str:
        s = self.stats
        text = (f"Runs {s['elementwise']} cupy.ElementwiseKernel(s) and {s['reduction']} cupy.ReductionKernel(s) "
                f"for fused regions; other ops are CuPy library calls (matmul through cuBLAS).")
        if s["unfused"]:
            text += f" {s['unfused']} region(s) op by op: " + "; ".join(self.notes) + "."
        return text

    # -- fused regions ---------------------------------------------------------------------
    def region(self, node: Node) -> None:
        region = analyze(node, scalar_code=False)
        outer = {p: self.src(v) for p, v in region.binding.items()}
        if region.kind != "blocked" or not self._kernelizable(region):
            reason = region.reason or "an epilogue reads a value computed before the reductions"
            self.stats["unfused"] += 1
            self.notes.append(f"%{node.outputs[0].name}: {reason}")
            self.op_by_op(node, f"# not one kernel: {reason}; its ops run one by one")
            return
        rid = len(self.kernels)
        env_src = dict(outer)  # body value -> Python source of its array, once computed
        yielded = yielded_by(node)
        # prologue outputs: one elementwise kernel per output shape
        pro_out = [y for y in yielded if isinstance(y, Value) and y.producer in region.prologue]
        by_shape: dict = {}
        for y in pro_out:
            by_shape.setdefault(tuple(y.type.shape), []).append(y)
        for shape, values in by_shape.items():
            self._elementwise(region, region.prologue, values, env_src, yielded, f"k{rid}_{len(self.kernels)}")
        for red in region.reductions:
            self._reduction(region, red, env_src, yielded, f"r{rid}_{len(self.kernels)}")
        epi_out = [y for y in yielded if isinstance(y, Value) and y.producer in region.epilogue]
        by_shape = {}
        for y in epi_out:
            by_shape.setdefault(tuple(y.type.shape), []).append(y)
        for shape, values in by_shape.items():
            self._elementwise(region, region.epilogue, values, env_src, yielded, f"e{rid}_{len(self.kernels)}")
        self.bind_yielded(yielded, env_src.get)

    @staticmethod
    def _kernelizable(region: Region) -> bool:
        """Epilogue kernels read reduced values and the region's inputs, nothing else."""
        allowed = set(region.body.inputs) | {o for n in region.reductions + region.epilogue for o in n.outputs}
        return all(v in allowed for n in region.epilogue for v in n.input_values())

    def _params(self, region: Region, reads: set, env_src: dict, exclude: set) -> tuple:
        """Kernel inputs: region inputs bound to arrays, and reduced values, that the chain reads."""
        names: list = []
        types: list = []
        args: list = []
        env: dict = {}
        literal_inputs = {p: v for p, v in region.binding.items() if not isinstance(v, Value)}
        candidates = [p for p in region.body.inputs if p in reads] + \
                     [o for n in region.reductions + region.epilogue for o in n.outputs if o in reads and o not in exclude]
        for v in candidates:
            if v in literal_inputs:
                env[v] = (c_literal(literal_inputs[v], c_type(v.type.dtype)), c_type(v.type.dtype))
                continue
            name = f"in{len(names)}"
            names.append(name)
            types.append(f"{CUPY_PARAM_TYPES[v.type.dtype.np.name]} {name}")
            args.append(env_src[v])
            env[v] = (name, c_type(v.type.dtype))
        return names, types, args, env

    def _elementwise(self, region: Region, phase: list, values: list, env_src: dict, yielded: dict, tag: str):
        chain, reads = closure(phase, values)
        produced = {o for n in chain for o in n.outputs}
        _, in_types, args, env = self._params(region, reads - produced, env_src, produced)
        body = KernelBody(self.lines, env)
        for n in chain:
            body.emit(n)
        out_types, outs = [], []
        for k, y in enumerate(values):
            name = self.names(yielded[y][0])
            out_types.append(f"{CUPY_PARAM_TYPES[y.type.dtype.np.name]} out{k}")
            body.lines.append(f"out{k} = {body.env[y][0]};")
            self.body.append(f"{name} = cp.empty({py_literal(tuple(y.type.shape))}, {np_dtype(y.type.dtype, 'cp')})")
            outs.append(name)
            env_src[y] = name
        kname = f"_{tag}"
        self.body.append(f"{kname}({', '.join(args + outs)})")
        self.kernels.append({
            "kind": "elementwise", "name": kname, "kernel_name": f"{self.prefix}_{tag}",
            "title": f"L{self.lines.get(id(region.node), '?')}: {node_line(region.node)} ({len(chain)} ops)",
            "in_params": ", ".join(in_types), "out_params": ", ".join(out_types), "body": body.lines,
        })
        self.stats["elementwise"] += 1

    def _reduction(self, region: Region, red: Node, env_src: dict, yielded: dict, tag: str):
        x = red.inputs[0]
        chain, reads = closure(region.prologue, [x])
        produced = {o for n in chain for o in n.outputs}
        _, in_types, args, env = self._params(region, (reads - produced) | ({x} if not chain else set()),
                                              env_src, produced)
        body = KernelBody(self.lines, env)
        for n in chain:
            body.emit(n)
        T = compute_c_type(x.type.dtype)
        count = 1
        for a in region.reduce_axes(red):
            count *= region.space[a]
        n_out = max(1, int(np.prod(region.space, dtype=np.int64)) // max(count, 1))
        low = reduction_lowering(red)
        out = red.outputs[0]
        outer = yielded.get(out)
        name = self.names(outer[0]) if outer else self.names.fresh(f"red_{out.name}")
        env_src[out] = name
        title = f"L{self.lines.get(id(red), '?')}: {node_line(red)} (with {len(chain)} prologue ops)"
        if len(in_types) > 1 and count >= SPLIT_MIN_REDUCED and n_out <= SPLIT_MAX_OUTPUTS:
            # Map into a temporary first; the reduction of that one array may then run as CuPy's
            # CUB reduction. A ReductionKernel of several inputs gets one thread block per
            # output element: a full sum of 8e6 products ran 50x slower than this.
            mapped = self.names.fresh(f"map_{out.name}")
            self.body.append(f"{mapped} = cp.empty({py_literal(tuple(region.space))}, "
                             f"cp.{NP_OF_C[T]})  # the mapped values of {node_line(red).split(' = ')[0]}")
            self.body.append(f"_{tag}_map({', '.join(args)}, {mapped})")
            self.kernels.append({
                "kind": "elementwise", "name": f"_{tag}_map", "kernel_name": f"{self.prefix}_{tag}_map",
                "title": f"{title}: the mapped values",
                "in_params": ", ".join(in_types), "out_params": f"{NP_OF_C[T]} mapped",
                "body": body.lines + [f"mapped = ({T})({body.env[x][0]});"],
            })
            self.stats["elementwise"] += 1
            in_types, args, map_expr, map_function = [f"{NP_OF_C[T]} in0"], [mapped], "in0", []
        else:
            fn = f"{self.prefix}_{tag}_map"
            sig = ", ".join(f"{c_type_of_param(t.split()[0])} {t.split()[1]}" for t in in_types)
            map_function = [f"__device__ __forceinline__ {T} {fn}({sig}) {{"]
            map_function += [f"    {line}" for line in body.lines]
            map_function += [f"    return ({T})({body.env[x][0]});", "}"]
            map_expr = f"{fn}({', '.join(t.split()[1] for t in in_types)})"
        post = low.post.format(T=T, count=count)
        R = c_type(out.type.dtype)
        kname = f"_{tag}"
        axis = None if region.is_full_reduction(red) else region.reduce_axes(red)
        self.body.append(f"{name} = {kname}({', '.join(args)}, axis={py_literal(axis)}, "
                         f"keepdims={bool(red.attrs.get('keepdim', False))!r})  # {node_line(red)}")
        self.kernels.append({
            "kind": "reduction", "name": kname, "kernel_name": f"{self.prefix}_{tag}", "title": title,
            "in_params": ", ".join(in_types), "out_params": f"{CUPY_PARAM_TYPES[out.type.dtype.np.name]} {REDUCTION_OUT}",
            "map_expr": map_expr, "reduce_expr": low.reduce, "post_map_expr": f"{REDUCTION_OUT} = ({R})({post})",
            "identity": low.identity.format(T=T), "reduce_type": T, "map_function": map_function,
        })
        self.stats["reduction"] += 1


# A reduction of several inputs over at least this many elements per output, into at most
# this many outputs, maps into a temporary array and reduces that (see _reduction).
SPLIT_MIN_REDUCED = 1 << 16
SPLIT_MAX_OUTPUTS = 1024
NP_OF_C = {c: n for n, c in C_TYPES.items() if n != "float16"}  # "float" -> "float32"

# The output of every ReductionKernel. Not CuPy's usual "out0": for a kernel of one input and
# one output CuPy may run its CUB reduction, whose template names the arrays in0/out0 and
# takes their C types from the kernel's type map; it renames (and types) them itself only
# when the kernel's own names differ, and a kernel named in0/out0 with explicit dtypes
# fails to compile there ("type_in0_raw is undefined").
REDUCTION_OUT = "red_out"


def c_type_of_param(param_type: str) -> str:
    """C type of a CuPy parameter type name ("float32" -> "float")."""
    for k, v in CUPY_PARAM_TYPES.items():
        if v == param_type:
            from .render import C_TYPES  # noqa: PLC0415

            return C_TYPES[k]
    raise KeyError(param_type)


def generate(graph: Graph) -> tuple[str, str]:
    module = CupyModule(graph)
    src = module.source()
    return src, module.describe()
