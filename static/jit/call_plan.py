"""A cached signature's run as one generated function (`runner`): the graph's input arrays
read straight from the call's tensors and the captured ones, the executable run, the
write-back (bridge.writer), the outputs wrapped and built into the result's structure; no
loop, isinstance or attribute test per input or output.

A compiled training step's Python after its graph is cheap in a loop of its own (~5 us for
W6) but runs cold, after kernels that walked megabytes: input_arrays over W6's 43 inputs and
the output wrapping took ~20 us of a step there, one cache miss per Python object touched.
The function reads each object once. It checks that every argument and captured object is of
the type it had when the function was made; any other call takes call.run's general path.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eager._tensor import Tensor

from ..training.backward import with_freed_history
from .bridge import _unflattener, as_tensor, writer


def runner(entry, leaves: list, general: Callable) -> Callable | None:
    """`run(leaves)` for this entry (after its CallPrep ran), or None where the general path
    is needed every call: gradients recorded, replayed side effects, outputs aliasing inputs,
    arrays rather than tensors, a structure pytree walks, an argument or captured value that
    is not a tensor. `general(entry, leaves)` is what run calls where a check fails."""
    trace = entry.trace
    if (trace.replays is not None or entry.grad is not None or entry.plain_tuple_output or entry.single_output
            or entry.has_output_aliases or not entry.as_tensors):
        return None
    build = _unflattener(trace.out_tree)
    if build is None:
        return None
    write = None
    if trace.updates:
        write = entry.writer if entry.writer is not None else writer(
            trace, leaves, entry.fresh_grads, entry.fresh_grad_copies)
        if not write:
            return None
    env: dict[str, Any] = {"GENERAL": general, "ENTRY": entry, "Tensor": Tensor,
                           "WRITE": write, "AS_TENSOR": as_tensor, "FREED": with_freed_history, "BUILD": build}
    reads, checks, arrays = [], [], []
    for j, leaf_index in enumerate(trace.input_leaves):
        if type(leaves[leaf_index]) is not Tensor:
            return None
        reads.append(f"a{j} = leaves[{int(leaf_index)}]")
        checks.append(f"type(a{j}) is not Tensor")
        arrays.append(f"a{j}._data")
    for i, captured in enumerate(trace.captured):
        if not isinstance(captured[0], Tensor):
            return None
        env[f"C{i}"], env[f"CT{i}"] = captured, type(captured[0])
        reads.append(f"c{i} = C{i}[0]")  # (an entry may hold another tensor by now: read at each call)
        checks.append(f"type(c{i}) is not CT{i}")
        arrays.append(f"c{i}._data")
    lines = ["def run(leaves):", *(f"    {line}" for line in reads)]
    if checks:
        lines += [f"    if {' or '.join(checks)}:", "        return GENERAL(ENTRY, leaves)"]
    # (the executable's run looked up at each call: a wrapper set on it later, as the checks'
    # tests inject one, is called)
    lines.append(f"    results = ENTRY.forward.run([{', '.join(arrays)}])")
    lines += [f"    results[{i}] = results[{i}].copy()" for i in entry.fresh_copies]
    n_user = trace.n_outputs
    if write is not None:
        lines.append(f"    WRITE(leaves, results[{n_user}:])")
    items, k = [], 0
    freed = set(entry.freed_outputs)
    for position in range(n_user + len(trace.out_consts)):
        if position in trace.out_consts:
            env[f"K{position}"] = trace.out_consts[position]
            items.append(f"K{position}")
            continue
        item = f"AS_TENSOR(results[{k}])"
        items.append(f"FREED({item})" if k in freed else item)
        k += 1
    lines.append(f"    return BUILD([{', '.join(items)}{',' if len(items) == 1 else ''}])")
    exec(compile("\n".join(lines), f"<static.compile run of {trace.graph.name}>", "exec"), env)  # noqa: S102
    return env["run"]
