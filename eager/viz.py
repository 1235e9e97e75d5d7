"""`to_dot`: the backward graph behind a tensor as Graphviz DOT text.

Reading the graph autograd recorded is the quickest way to understand (and teach) what
`backward()` will do: which ops ran, what each one saved, and which leaves collect
gradients. The picture follows torchviz's conventions: grad_fn nodes are grey boxes named
as PyTorch names them, leaves (AccumulateGrad) are light blue with their shape, the
tensor(s) drawn from are green, and saved tensors are orange with their shapes."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._tensor import Tensor
from .autograd.graph import AccumulateGrad, SavedTensor

# Node styles shared by every graph picture of the project (the eager backward graph here,
# the compiled IR in the `graphmode` command), so that both read alike.
DOT_STYLE = {
    "op": 'shape=box, style=filled, fillcolor="lightgrey"',
    "leaf": 'shape=box, style=filled, fillcolor="lightblue"',
    "root": 'shape=box, style=filled, fillcolor="darkolivegreen1"',
    "saved": 'shape=box, style=filled, fillcolor="orange"',
}


def dot_quote(text: str) -> str:
    """A DOT double-quoted string; newlines become DOT's centered line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _shape(shape: Iterable[int]) -> str:
    return repr(tuple(int(s) for s in shape))


def _saved_items(node) -> list[tuple[str, str]]:
    """(label, shape or value) of what a node saved for backward; empty once freed."""
    items = []
    saved = getattr(node, "_saved", None)
    if isinstance(saved, dict):
        for index, value in sorted(saved.items()):
            if isinstance(value, SavedTensor):
                items.append((f"input {index}", _shape(value.tensor.shape)))
            else:
                items.append((f"input {index}", repr(value)))
    elif isinstance(saved, list):  # a custom Function's ctx.save_for_backward
        for index, value in enumerate(saved):
            if isinstance(value, SavedTensor):
                items.append((f"saved {index}", _shape(value.tensor.shape)))
    saved_out = getattr(node, "_saved_out", None)
    if isinstance(saved_out, SavedTensor):
        items.append(("result", _shape(saved_out.tensor.shape)))
    return items


def to_dot(tensors: Tensor | Iterable[Tensor], params: Mapping[str, Tensor] | None = None,
           show_saved: bool = True, name: str = "backward") -> str:
    """DOT text of the graph that `backward()` from `tensors` would walk.

    `params` names leaves (e.g. `dict(model.named_parameters())`); `show_saved=False`
    leaves out the saved-tensor boxes. Render with `dot -Tsvg` or any Graphviz viewer."""
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    names = {id(t): n for n, t in (params or {}).items()}
    ids: dict[int, str] = {}
    lines = [f"digraph {dot_quote(name)} {{",
             '  graph [rankdir=TB, fontname="monospace"];',
             '  node [fontname="monospace", fontsize=10];']

    def node_id(obj: object) -> str:
        if id(obj) not in ids:
            ids[id(obj)] = f"n{len(ids)}"
        return ids[id(obj)]

    def add_node(obj: object, label: str, style: str) -> str:
        nid = node_id(obj)
        lines.append(f"  {nid} [label={dot_quote(label)}, {DOT_STYLE[style]}];")
        return nid

    def leaf_label(var: Tensor) -> str:
        head = names.get(id(var), "")
        return (head + "\n" if head else "") + _shape(var.shape)

    visited: set[int] = set()
    stack = []
    for k, t in enumerate(roots):
        label = (f"output {k}\n" if len(roots) > 1 else "") + _shape(t.shape)
        root_id = add_node(t, label, "root")
        if t.grad_fn is not None:
            lines.append(f"  {node_id(t.grad_fn)} -> {root_id};")
            stack.append(t.grad_fn)
        elif t.requires_grad:
            lines.append(f"  {root_id} [label={dot_quote(leaf_label(t))}];")

    while stack:
        fn = stack.pop()
        if id(fn) in visited:
            continue
        visited.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            leaf = add_node(fn.variable, leaf_label(fn.variable), "leaf")
            # the AccumulateGrad node itself is drawn between the op and its leaf
            add_node(fn, "AccumulateGrad", "op")
            lines.append(f"  {leaf} -> {node_id(fn)};")
        else:
            add_node(fn, fn.name(), "op")
        if show_saved:
            for k, (label, value) in enumerate(_saved_items(fn)):
                saved_id = f"{node_id(fn)}_s{k}"
                lines.append(f"  {saved_id} [label={dot_quote(label + chr(10) + value)}, {DOT_STYLE['saved']}];")
                lines.append(f"  {saved_id} -> {node_id(fn)} [style=dashed, dir=none];")
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is None:
                continue
            lines.append(f"  {node_id(nxt)} -> {node_id(fn)};")
            stack.append(nxt)
    lines.append("}")
    return "\n".join(lines) + "\n"
