"""`torch._logging` here: `set_logs` with PyTorch's names, switching graphmode's compiler logs
(static.logs: GRAPHMODE_LOGS) that say the same things.

| torch's name | graphmode's log |
|---|---|
| graph_breaks | graph_breaks: each graph break, its user line and reason |
| recompiles, recompiles_verbose, guards, dynamic | recompiles: each new trace and why, symbolic entries and their guards |
| graph, graph_code, aot_graphs, post_grad_graphs | stages: the IR after each stage |
| output_code, kernel_code | source: where the generated source is |
| all (and dynamo/inductor set to a level) | every log |

Names with no counterpart (perf_hints, fusion, schedule, cudagraphs, ...) are accepted and
change nothing; a name PyTorch does not have is refused with TypeError."""
from __future__ import annotations

import importlib
import logging
from typing import Any

_MAP = {
    "graph_breaks": "graph_breaks",
    "recompiles": "recompiles", "recompiles_verbose": "recompiles", "guards": "recompiles", "dynamic": "recompiles",
    "graph": "stages", "graph_code": "stages", "aot_graphs": "stages", "post_grad_graphs": "stages",
    "aot_joint_graph": "stages", "graph_sizes": "stages",
    "output_code": "source", "kernel_code": "source",
}
_ACCEPTED = {"perf_hints", "fusion", "schedule", "cudagraphs", "bytecode", "trace_source", "trace_call",
             "trace_bytecode", "ddp_graphs", "onnx", "export", "overlap", "compiled_autograd",
             "compiled_autograd_verbose", "cudagraph_static_inputs", "benchmarking", "modules", "sym_node",
             "not_implemented", "autotuning", "graph_region_expansion", "inductor_metrics", "hierarchical_compile",
             "loop_ordering", "ir_pre_fusion", "ir_post_fusion", "distributed", "c10d", "fsdp", "dtensor",
             "aot", "dynamo", "inductor", "all", "cache"}


def set_logs(**kwargs: Any) -> None:
    """torch._logging.set_logs(graph_breaks=True, recompiles=True, ...): each call replaces
    the previous setting, as PyTorch's; a component given a logging level (dynamo=logging.DEBUG)
    or all=... switches every log on when the level is DEBUG or INFO."""
    chosen: set = set()
    for name, value in kwargs.items():
        if name not in _MAP and name not in _ACCEPTED:
            raise TypeError(f"set_logs() got an unexpected keyword argument {name!r}")
        on = bool(value) if isinstance(value, bool) or value is None else \
            (isinstance(value, int) and value <= logging.INFO)
        if not on:
            continue
        if name in _MAP:
            chosen.add(_MAP[name])
        elif name in ("all", "dynamo", "inductor", "aot"):
            chosen.add("all")
    logs = importlib.import_module("static.logs")  # (static builds on eager: looked up at run time)
    logs.set_logs(",".join(sorted(chosen)) or None)
