"""Splitting a joint forward+backward graph, and rematerialization: the forward returns
the user's outputs and the residuals; the backward takes residuals and output cotangents
and returns the gradients.

Which values are residuals is chosen by a minimum cut (as AOTAutograd's partitioner
does): saving a value costs its bytes; cheap elementwise and shape values may instead be
recomputed in the backward from what is saved. Inputs are always available to save;
matmuls and reductions are never recomputed. With recomputation off, the cut saves
exactly the forward values the backward reads."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gmops import REGISTRY

from ..ir import Graph, Node, Value
from .rewrite import nbytes


@dataclass
class Split:
    forward: Graph  # inputs: primal inputs; outputs: user outputs, then residuals
    backward: Graph  # inputs: residuals, then seeds; outputs: gradients
    residuals: list  # the forward Values saved for the backward

INF = float("inf")
RECOMPUTABLE_KINDS = {"elementwise", "shape"}


class _FlowGraph:
    def __init__(self) -> None:
        self.cap: dict = {}
        self.adj: dict = {}

    def add(self, a, b, c) -> None:
        self.adj.setdefault(a, set()).add(b)
        self.adj.setdefault(b, set()).add(a)
        self.cap[(a, b)] = self.cap.get((a, b), 0) + c
        self.cap.setdefault((b, a), 0)

    def max_flow(self, s, t) -> float:
        flow: float = 0
        while True:
            parent = {s: None}
            q = deque([s])
            while q and t not in parent:
                u = q.popleft()
                for v in self.adj.get(u, ()):
                    if v not in parent and self.cap[(u, v)] > 0:
                        parent[v] = u
                        q.append(v)
            if t not in parent:
                return flow
            push, v = INF, t
            while parent[v] is not None:
                push = min(push, self.cap[(parent[v], v)])
                v = parent[v]
            if push == INF:
                raise ValueError("remat: no finite cut (a backward value cannot be saved or recomputed)")
            v = t
            while parent[v] is not None:
                u = parent[v]
                self.cap[(u, v)] -= push
                self.cap[(v, u)] += push
                v = u
            flow += push

    def reachable(self, s) -> set:
        seen, q = {s}, deque([s])
        while q:
            u = q.popleft()
            for v in self.adj.get(u, ()):
                if v not in seen and self.cap[(u, v)] > 0:
                    seen.add(v)
                    q.append(v)
        return seen



def _cut_cost(v: Value) -> int:
    """The bytes saving v costs, as the min-cut weighs it: a value of symbolic size
    (static.dynamic_shapes) at the size its symbolic entry was made at, so that the split is
    the same in both builds of the entry (each serves every size; only the choice is tuned)."""
    n = nbytes(v)
    return n.decision_value() if hasattr(n, "decision_value") else n

def _recomputable(node: Node) -> bool:
    """Cheap to compute again from saved values: a pure elementwise or shape op whose record
    does not say otherwise (`extra["recompute"] = False`: erf and exact gelu are a long
    series of passes each on NumPy, so saving their result beats recomputing it), or another
    pure op whose record asks for it (`True`: check_index_range, a pass over an index)."""
    if node.body is not None or len(node.outputs) != 1:
        return False
    op = REGISTRY[node.op]
    if "recompute" not in op.extra and op.kind == "shape" and not op.is_view and _expands(node):
        return False
    return op.pure and op.extra.get("recompute", op.kind in RECOMPUTABLE_KINDS)


def _expands(node: Node) -> bool:
    """A copy several times the size of what it reads (a convolution's `unfold`: kh*kw
    copies of each element): recomputing it in the backward is a pass writing the whole
    copy again, which the forward has already paid for; saving it costs memory only. W6's
    drop-in backward spent 0.5 ms (5% of it) on the second unfold of its 16-channel image.
    A view (expand: a broadcast of its operand) writes nothing and stays recomputable.
    (A backend running the convolution image by image recomputes the columns in cache
    instead: _image_columns.)"""
    try:
        out = nbytes(node.outputs[0])
        read = sum(nbytes(v) for v in node.input_values())
        return int(out) > 2 * int(read)
    except TypeError:  # a symbolic size: leave the choice to the byte costs
        return False


def _image_columns(nodes: list) -> set:
    """ids of the unfolds that are an image-by-image convolution's columns: unfold (C, kh,
    kw, N, OH, OW) of a 4-d float image -> reshape (K, N, L) -> permute (1, 0, 2), read by
    products (the forward's W @ cols[n], the weight gradient's G[n] @ cols[n]^T). A backend
    that runs these as kernels making each image's columns in cache (Capabilities.
    image_convolutions) never writes the columns in the forward nor reads them in the
    backward, so saving them (K times the image) is what costs and recomputing them is
    free: they are left recomputable, and the min-cut saves the image instead, as
    PyTorch's convolution saves its input and weight."""
    found = set()
    for node in nodes:
        if node.op != "unfold" or node.body is not None or len(node.attrs.get("kernel") or ()) != 2:
            continue
        x, cols = node.inputs[0], node.outputs[0]
        if (not isinstance(x, Value) or len(x.type.shape) != 4 or x.type.dtype.np.name not in ("float32", "float64")
                or any(type(d) is not int for d in x.type.shape)  # a symbolic size: no kernel takes it
                or float(node.attrs.get("pad_value", 0.0)) != 0.0):
            continue
        readers = _readers(cols)
        if len(readers) != 1 or readers[0].op != "reshape" or len(readers[0].outputs[0].type.shape) != 3:
            continue
        permutes = _readers(readers[0].outputs[0])
        if (len(permutes) != 1 or permutes[0].op != "permute"
                or tuple(int(d) for d in permutes[0].attrs.get("dims") or ()) != (1, 0, 2)):
            continue
        uses = _readers(permutes[0].outputs[0])
        if uses and all(u.op in ("matmul", "transpose") and u.body is None for u in uses):
            found.add(id(node))
    return found


def _channel_normalizations(nodes: list) -> set:
    """ids of batch norm's normalizations (normalize over every dim but 1, of a float 4-d
    or wider input of static sizes) for a backend that runs their gradient as one region
    recomputing xhat from the input it reads anyway (Capabilities.image_convolutions, the
    native backend's codegen/native_gen/bn_recompute.py): the backward's normalize_backward
    reads x, so saving x and recomputing xhat costs the cut nothing, and the forward no longer
    writes the normalized output (W6's first block: 1.6 MB a call) for the backward to read
    back; the one-graph training step already keeps x alone."""
    found = set()
    for node in nodes:
        if node.op != "normalize" or node.body is not None or len(node.inputs) != 1:
            continue
        x = node.inputs[0]
        if (not isinstance(x, Value) or len(x.type.shape) < 3 or x.type.dtype.np.name not in ("float32", "float64")
                or any(type(d) is not int for d in x.type.shape)):
            continue
        if tuple(int(d) for d in node.attrs.get("dims") or ()) == (0, *range(2, len(x.type.shape))):
            found.add(id(node))
    return found


def _readers(v: Value) -> list:
    return list({id(u): u for u in v.users}.values())


def _needed_by(nodes: list, values: list) -> list:
    want = set(values)
    out = []
    for n in reversed(nodes):
        if any(o in want for o in n.outputs):
            out.append(n)
            want.update(n.input_values())
    out.reverse()
    return out


def partition(joint: Graph, primal: list, seeds: list, n_forward_outputs: int,
              recompute: bool = True, image_columns: bool = False) -> tuple[Split, dict]:
    """Split `joint` into forward and backward (see the module's docstring). `image_columns`:
    the backend runs image-by-image convolutions as kernels (Capabilities.image_convolutions),
    so their columns are recomputed in the backward rather than saved (_image_columns), and
    batch norm's normalized output with them (_channel_normalizations)."""
    from_seed = set(seeds)
    fwd_nodes, bwd_nodes = [], []
    for node in joint.nodes:
        if any(v in from_seed for v in node.input_values()):
            bwd_nodes.append(node)
            from_seed.update(node.outputs)
        else:
            fwd_nodes.append(node)
    grads = joint.outputs[n_forward_outputs:]
    bwd_nodes = _needed_by(bwd_nodes, [g for g in grads if isinstance(g, Value)])
    bwd_defined = set(seeds) | {o for n in bwd_nodes for o in n.outputs}
    needed = []
    for v in [v for n in bwd_nodes for v in n.input_values()] + [g for g in grads if isinstance(g, Value)]:
        if v not in bwd_defined and v not in needed:
            needed.append(v)
    baseline = sum(nbytes(v) for v in needed)

    # the flow network over forward values: v_in -> v_out costs bytes(v) to cut (save v)
    fg = _FlowGraph()
    relevant = _needed_by(fwd_nodes, needed)
    columns = (_image_columns(relevant) | _channel_normalizations(relevant)) if recompute and image_columns else set()
    for v in primal:
        fg.add("source", ("in", v), INF)
        fg.add(("in", v), ("out", v), _cut_cost(v))
    for node in relevant:
        for o in node.outputs:
            fg.add(("in", o), ("out", o), _cut_cost(o))
            if not (recompute and (_recomputable(node) or id(node) in columns)):
                fg.add("source", ("in", o), INF)
            for v in node.input_values():
                fg.add(("out", v), ("in", o), INF)
    for v in needed:
        fg.add(("out", v), "sink", INF)
    fg.max_flow("source", "sink")
    side = fg.reachable("source")
    saved = [v for v in list(primal) + [o for n in relevant for o in n.outputs]
             if ("in", v) in side and ("out", v) not in side]

    recomputed = _needed_by([n for n in relevant if not any(o in saved for o in n.outputs)],
                            [v for v in needed if v not in saved])
    recomputed = [n for n in recomputed if all(o not in saved for o in n.outputs)]
    fwd_outputs = list(joint.outputs[:n_forward_outputs])
    forward_nodes = _needed_by(fwd_nodes, fwd_outputs + saved)
    forward = Graph(name=joint.name + "_forward", inputs=list(primal), nodes=forward_nodes,
                    outputs=fwd_outputs + saved)
    # the backward has its own Values and nodes: graphs never share objects, so renaming
    # or rewriting one half leaves the other intact
    mapping: dict = {v: Value(v.name, v.type) for v in list(saved) + list(seeds)}
    copies = []
    for n in recomputed:
        c = Node(op=n.op, inputs=[mapping.get(v, v) if isinstance(v, Value) else v for v in n.inputs],
                 attrs=dict(n.attrs), loc=n.loc)
        c.outputs = [Value(o.name, o.type, c, i) for i, o in enumerate(n.outputs)]
        mapping.update(zip(n.outputs, c.outputs))
        copies.append(c)
    back_nodes = []
    for n in bwd_nodes:
        c = Node(op=n.op, inputs=[mapping.get(v, v) if isinstance(v, Value) else v for v in n.inputs],
                 attrs=dict(n.attrs), loc=n.loc, body=n.body)
        c.outputs = [Value(o.name, o.type, c, i) for i, o in enumerate(n.outputs)]
        mapping.update(zip(n.outputs, c.outputs))
        back_nodes.append(c)
    backward = Graph(name=joint.name + "_backward", inputs=[mapping[v] for v in list(saved) + list(seeds)],
                     nodes=copies + back_nodes,
                     outputs=[mapping.get(g, g) for g in grads])
    # the joint is consumed: its nodes the forward does not run (the backward runs copies)
    # stop listing themselves among the forward's readers, so that the passes and code
    # generators reading `users` on the forward see its own nodes only (a convolution's
    # columns read by the product alone there, not by the weight gradient's stale transpose)
    kept = {id(n) for n in forward_nodes}
    for n in joint.nodes:
        if id(n) not in kept:
            n.drop()
    stats = {
        "saved_values": len(saved),
        "saved_bytes": int(sum(_cut_cost(v) for v in saved)),
        "saved_bytes_without_remat": int(baseline),
        "recomputed_ops": len(copies),
    }
    return Split(forward, backward, saved), stats
