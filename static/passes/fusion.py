"""Fusion: elementwise chains and siblings sharing inputs become one `fused` node whose
body holds them; elementwise producers fuse into the reductions that consume them, and
elementwise consumers of a reduction's result fuse after it (an epilogue).

Legality: every member iterates over one space (the elementwise shape, or a reduction's
input shape plus its reduced shape for the epilogue); the fused set stays convex (no
path leaves the set and comes back, which would make the fused node depend on itself);
a size cap bounds kernels. Each rejected candidate pair is reported with its reason.

With `rows` (for the native backend: static.executable.row_regions), a region may also read
the result of a reduction along its last axis back over the full space and reduce again: a
softmax, a log-softmax and their gradients become one row region each."""
from __future__ import annotations

from collections.abc import Callable

from gmops import REGISTRY

from ..ir import Graph, Node, Value
from .rewrite import Namer, replace_uses

MAX_FUSED_OPS = 64
# the most ops of one region of 0-d arithmetic on graph inputs (Fuser.merge_scalars): straight
# code, which compiles fast however long
MAX_SCALAR_OPS = 512
# the longest last axis a row region reduces along (see Fuser.rows): a row's values stay in
# the L1 cache between the passes over it
ROW_MAX = 2048


def _role(node: Node, inline: Callable | None = None) -> str | None:
    """"ew" for a fusible pointwise op the backend can inline (`inline(record)`, its declared
    capability: static.executable.Capabilities; None: every one), "red" for a fusible
    reduction, else None (the op record says which; a reduction with attributes beyond
    dims/keepdim is not fused)."""
    if node.body is not None or len(node.outputs) != 1:
        return None
    op = REGISTRY[node.op]
    if not op.fusible or not op.pure:
        return None
    if op.pointwise:
        return "ew" if inline is None or inline(op) else None
    if op.reduction is not None and set(node.attrs) <= {"dims", "keepdim"}:
        return "red"
    return None


def _is_reduction(node: Node) -> bool:
    return node.body is None and REGISTRY[node.op].reduction is not None


class Group:
    """A set of nodes that will become one fused node."""

    def __init__(self, node: Node, role: str) -> None:
        self.nodes = [node]
        if role == "ew":
            self.space = tuple(node.outputs[0].type.shape)
            self.reduce = None
        else:
            self.space = tuple(node.inputs[0].type.shape)
            self.reduce = (node.attrs.get("dims"), node.attrs.get("keepdim"), tuple(node.outputs[0].type.shape))

    @property
    def reduced_shape(self):
        return self.reduce[2] if self.reduce else None


def _describe(node: Node) -> str:
    return f"%{node.outputs[0].name} ({node.op})" if node.outputs else node.op


def along_rows(space: tuple, reduce: tuple | None) -> bool:
    """Whether a group's reduction signature reduces the last axis of `space` (not longer
    than ROW_MAX), keeping it: what a row region may hold."""
    if reduce is None or not space or not 0 < int(space[-1]) <= ROW_MAX:
        return False
    dims, keepdim, _ = reduce
    last = len(space) - 1
    return bool(keepdim) and dims is not None and [int(d) % len(space) for d in dims] == [last]


class Fuser:
    """Groups nodes into regions. With `rows`, a region may also read the result of a
    reduction over its last axis back over the full space, and reduce again (a softmax's
    max, exp(x - max), sum and division; a log-softmax; their gradients): one kernel per
    row instead of one per reduction, for backends that can run it (the native one:
    codegen.regions.analyze_rows)."""

    def __init__(self, graph: Graph, max_ops: int = MAX_FUSED_OPS, rows: bool = False,
                 inline: Callable | None = None) -> None:
        self.graph = graph
        self.max_ops = max_ops
        self.rows = rows
        self.inline = inline  # the backend's inline capability (see _role)
        self.pos = {id(n): i for i, n in enumerate(graph.nodes)}
        self.group_of: dict = {}
        self.rejections: list = []

    # -- legality ------------------------------------------------------------------------------
    def _space_ok(self, group: Group, node: Node, role: str):
        out_shape = tuple(node.outputs[0].type.shape)
        if role == "ew":
            if out_shape == group.space:
                from_group = [v for v in node.input_values() if self._in(v, group)]
                if group.reduce and any(tuple(v.type.shape) != group.space for v in from_group):
                    if not (self.rows and along_rows(group.space, group.reduce)):
                        return "it reads a reduced value at the full iteration shape"
                return None
            if group.reduce and out_shape == group.reduced_shape:
                return None
            return f"iteration spaces differ: {list(out_shape)} vs {list(group.space)}"
        in_shape = tuple(node.inputs[0].type.shape)
        if in_shape != group.space:
            return f"the reduction reads {list(in_shape)} but the group iterates over {list(group.space)}"
        signature = (node.attrs.get("dims"), node.attrs.get("keepdim"), out_shape)
        if group.reduce and group.reduce != signature:
            return "the group already reduces over other axes"
        if any(self._in(v, group) and tuple(v.type.shape) != group.space for v in node.input_values()):
            return "it reduces a value of the reduced shape"
        return None

    def _in(self, v, group: Group) -> bool:
        return isinstance(v, Value) and v.producer is not None and self.group_of.get(id(v.producer)) is group

    def _depends_on(self, start_values, members: set, low: int) -> Node | None:
        """A node outside `members` on a path from `members` to start_values (a cycle if
        merged). Other groups count as the single node they will become: reaching one
        member reaches the inputs of all, so two groups can never wait on each other."""
        stack = [v.producer for v in start_values if v.producer is not None and id(v.producer) not in members]
        seen = set()
        expanded = set()  # groups whose members are already on the stack
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            other = self.group_of.get(id(node))
            if other is not None and len(other.nodes) > 1 and id(other) not in expanded:
                expanded.add(id(other))
                stack.extend(n for n in other.nodes if id(n) not in seen and id(n) not in members)
            if self.pos.get(id(node), -1) < low:
                continue  # older than every member: its own operands cannot depend on them
            for v in node.input_values():
                p = v.producer
                if p is None:
                    continue
                if id(p) in members:
                    return node
                stack.append(p)
        return None

    def _convex(self, a: list, b: list, new_inputs_only: bool = False):
        """None if a and b together stay convex, else why not. With new_inputs_only, a is an
        existing (convex) group and only b's operands can close a cycle through it."""
        members = {id(n) for n in a} | {id(n) for n in b}
        low = min(self.pos[id(n)] for n in a + b)
        inputs = [v for n in (b if new_inputs_only else a + b) for v in n.input_values()]
        culprit = self._depends_on(inputs, members, low)
        return None if culprit is None else f"fusing would create a cycle through {_describe(culprit)}"

    # -- grouping --------------------------------------------------------------------------------
    def try_join(self, group: Group, node: Node, role: str, why_pair) -> bool:
        reason = None
        if len(group.nodes) >= self.max_ops:
            reason = f"size cap of {self.max_ops} ops reached"
        if reason is None:
            reason = self._space_ok(group, node, role)
        if reason is None:
            reason = self._convex(group.nodes, [node], new_inputs_only=True)
        if reason is not None:
            self.rejections.append(f"{_describe(why_pair)} -> {_describe(node)}: {reason}")
            return False
        group.nodes.append(node)
        if role == "red" and group.reduce is None:
            group.reduce = (node.attrs.get("dims"), node.attrs.get("keepdim"), tuple(node.outputs[0].type.shape))
        self.group_of[id(node)] = group
        return True

    def _reads_reduced_at_full_shape(self, nodes: list, space: tuple) -> bool:
        """A member reading a reduced value (shape != space) while itself iterating over the
        full space: that would need a second pass over the data inside one kernel."""
        ids = {id(n) for n in nodes}
        for n in nodes:
            if _is_reduction(n):
                continue
            if tuple(n.outputs[0].type.shape) != space:
                continue
            for v in n.input_values():
                if v.producer is not None and id(v.producer) in ids and tuple(v.type.shape) != space:
                    return True
        return False

    def try_merge(self, a: Group, b: Group, max_ops: int | None = None) -> bool:
        if a is b:
            return True
        if a.space != b.space or (a.reduce and b.reduce and a.reduce != b.reduce):
            return False
        if (a.reduce or b.reduce) and self._reads_reduced_at_full_shape(a.nodes + b.nodes, a.space):
            if not (self.rows and along_rows(a.space, a.reduce or b.reduce)):
                self.rejections.append(f"{_describe(a.nodes[-1])} + {_describe(b.nodes[-1])}: a member would read "
                                       "a reduced value at the full iteration shape")
                return False
        if len(a.nodes) + len(b.nodes) > (max_ops or self.max_ops) or self._convex(a.nodes, b.nodes):
            return False
        a.nodes.extend(b.nodes)
        a.reduce = a.reduce or b.reduce
        for n in b.nodes:
            self.group_of[id(n)] = a
        return True

    def run(self) -> list:
        users: dict = {}
        for node in self.graph.nodes:
            for v in node.input_values():
                users.setdefault(v, []).append(node)
        for node in self.graph.nodes:
            role = _role(node, self.inline)
            if role is None:
                for v in node.input_values():
                    p = v.producer
                    if p is not None and _role(p, self.inline) is not None and REGISTRY.get(node.op) is not None:
                        op = REGISTRY[node.op]
                        kind = op.kind if node.body is None else "fused"
                        why = ("is not inlined by this backend" if node.body is None and op.fusible
                               and op.pointwise and op.pure else "is not fusible")
                        self.rejections.append(f"{_describe(p)} -> {_describe(node)}: {node.op} ({kind}) {why}")
                continue
            joined = None
            producers = [v.producer for v in node.input_values() if v.producer is not None
                         and id(v.producer) in self.group_of]
            for p in producers:
                g = self.group_of[id(p)]
                if joined is None:
                    if self.try_join(g, node, role, p):
                        joined = g
                elif g is not joined:
                    self.try_merge(joined, g)
            if joined is None and role == "ew":
                # siblings: an earlier reader of one of our inputs over the same iteration space
                # (an elementwise chain, or a reduction of the input itself: batch norm's bias
                # gradient sum(g) beside the weight gradient's sum(g * xhat) and g * w, one pass)
                for v in node.input_values():
                    for s in users.get(v, []):
                        if s is node or id(s) not in self.group_of or self.pos[id(s)] > self.pos[id(node)]:
                            continue
                        g = self.group_of[id(s)]
                        if (g.reduce is None or (_role(s, self.inline) == "red" and tuple(v.type.shape) == g.space
                                                 and self._reduces_alike(node, g.reduce, users))) \
                                and g.space == tuple(node.outputs[0].type.shape) \
                                and self.try_join(g, node, role, s):
                            joined = g
                            break
                    if joined is not None:
                        break
            if joined is None:
                self.group_of[id(node)] = Group(node, role)
        seen, groups = set(), []
        for node in self.graph.nodes:
            g = self.group_of.get(id(node))
            if g is not None and id(g) not in seen:
                seen.add(id(g))
                groups.append(g)
        return self.merge_scalars(groups)

    def _reduces_alike(self, node: Node, reduce: tuple, users: dict) -> bool:
        """Whether every fusible reduction downstream of node through pointwise readers of
        its shape reduces as `reduce` does: joining a group that reduces otherwise would leave
        node's chain to be written out for a reduction of its own (six sums along alternating
        axes of one input became one kernel writing five full-size chains)."""
        todo, seen = [node], set()
        shape = tuple(node.outputs[0].type.shape)
        while todo:
            n = todo.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            for u in users.get(n.outputs[0], []):
                role = _role(u, self.inline)
                if role == "red":
                    if (u.attrs.get("dims"), u.attrs.get("keepdim"), tuple(u.outputs[0].type.shape)) != reduce:
                        return False
                elif role == "ew" and tuple(u.outputs[0].type.shape) == shape:
                    todo.append(u)
        return True

    def merge_scalars(self, groups: list) -> list:
        """Groups of 0-d pointwise ops that read only graph inputs and literals become one
        region (horizontal fusion): an optimizer's per-parameter step counts and bias
        corrections were one kernel call per parameter (30 a step in W5), and are one. Each op
        computes what it computed alone, so the values are the same bits."""
        inputs = set(self.graph.inputs)
        into, kept = None, []
        for g in groups:
            if g.space != () or g.reduce is not None or not self._reads_inputs_only(g, inputs):
                kept.append(g)
                continue
            if into is not None and self.try_merge(into, g, MAX_SCALAR_OPS):
                continue
            into = g
            kept.append(g)
        return kept

    @staticmethod
    def _reads_inputs_only(group: Group, inputs: set) -> bool:
        """Whether every value the group reads from outside itself is a graph input."""
        members = {id(n) for n in group.nodes}
        return all(v in inputs for n in group.nodes for v in n.input_values()
                   if v.producer is None or id(v.producer) not in members)


def _build_fused(group: Group, position: dict, namer: Namer, outside_users: dict, graph_outputs: set):
    """The fused node of a group (members in program order: `position` maps id(node) to its
    index in the graph) and the map from members' exported results to its results."""
    members = {id(n) for n in group.nodes}
    order = sorted(group.nodes, key=lambda n: position[id(n)])
    ext_inputs: list = []
    for n in order:
        for v in n.input_values():
            if (v.producer is None or id(v.producer) not in members) and v not in ext_inputs:
                ext_inputs.append(v)
    body = Graph(name="body")
    remap = {}
    for v in ext_inputs:
        p = Value(namer(), v.type)
        body.inputs.append(p)
        remap[v] = p
    exported = []
    for n in order:
        copy = Node(op=n.op, inputs=[remap.get(v, v) if isinstance(v, Value) else v for v in n.inputs],
                    attrs=dict(n.attrs), loc=n.loc)
        copy.outputs = [Value(namer(), o.type, copy, i) for i, o in enumerate(n.outputs)]
        for o, c in zip(n.outputs, copy.outputs):
            remap[o] = c
            if o in graph_outputs or any(id(u) not in members for u in outside_users.get(o, [])):
                exported.append(o)
        body.nodes.append(copy)
    body.outputs = [remap[o] for o in exported]
    fused = Node(op="fused", inputs=list(ext_inputs), attrs={}, body=body, loc=order[-1].loc)
    fused.outputs = [Value(namer(), o.type, fused, i) for i, o in enumerate(exported)]
    return fused, dict(zip(exported, fused.outputs))


def _toposort(nodes: list) -> list:
    """Order nodes so operands come first, keeping the original order where free."""
    import heapq  # noqa: PLC0415

    index = {id(n): i for i, n in enumerate(nodes)}
    producer = {}
    for n in nodes:
        for o in n.outputs:
            producer[o] = n
    deps = {id(n): 0 for n in nodes}
    children: dict = {}
    for n in nodes:
        for v in set(n.input_values()):
            p = producer.get(v)
            if p is not None:
                deps[id(n)] += 1
                children.setdefault(id(p), []).append(n)
    ready = [(index[id(n)], n) for n in nodes if deps[id(n)] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for c in children.get(id(n), []):
            deps[id(c)] -= 1
            if deps[id(c)] == 0:
                heapq.heappush(ready, (index[id(c)], c))
    if len(out) != len(nodes):
        raise AssertionError("fusion produced a cycle; the convexity check has a bug")
    return out


def fuse(graph: Graph, max_ops: int | None = None, rows: bool = False, backend: str | None = None, **_) -> dict:
    """Group fusible nodes into `fused` regions of at most max_ops ops (MAX_FUSED_OPS); with
    `rows`, also row regions (see Fuser). Pointwise ops join a region where `backend` can
    inline them (its declared capabilities, static.executable.capabilities)."""
    from ..jit.executable import inline_predicate  # noqa: PLC0415  (executable imports the passes' users)

    inline = inline_predicate(backend)
    broadcast = _broadcast_expands(graph, inline)
    fuser = Fuser(graph, MAX_FUSED_OPS if max_ops is None else max_ops, rows, inline)
    groups = fuser.run()
    namer = Namer(graph)
    outside: dict = {}
    for node in graph.nodes:
        for v in node.input_values():
            outside.setdefault(v, []).append(node)
    graph_outputs = {v for v in graph.outputs if isinstance(v, Value)}
    mapping: dict = {}
    fused_ids: set = set()
    new_nodes = []
    regions = 0
    fused_ops = 0
    replaced = {}
    for g in groups:
        if len(g.nodes) < 2:
            continue
        fused, out_map = _build_fused(g, fuser.pos, namer, outside, graph_outputs)
        if not fused.outputs:  # nothing outside reads the group (dead code, when DCE did not run)
            fused_ids.update(id(n) for n in g.nodes)
            continue
        mapping.update(out_map)
        for n in g.nodes:
            fused_ids.add(id(n))
        replaced[id(g.nodes[0])] = fused
        regions += 1
        fused_ops += len(g.nodes)
    for node in graph.nodes:
        if id(node) in replaced:
            new_nodes.append(replaced[id(node)])
        elif id(node) not in fused_ids:
            new_nodes.append(node)
    graph.nodes = new_nodes
    replace_uses(graph, mapping)
    graph.nodes = _toposort(graph.nodes)
    stats = {"regions": regions, "fused_ops": fused_ops, "why_not_fused": fuser.rejections}
    if broadcast:
        stats["expands_broadcast"] = broadcast
    return stats


def _broadcast_expands(graph: Graph, inline: Callable | None) -> int:
    """Read `expand(x)` as x where every reader is a pointwise op the region will inline,
    of the expand's shape, with another operand of that shape: broadcasting gives each
    element the same x, so the expanded copy (a driver line of its own, np.broadcast_to: W6's
    cross-entropy gradient expands its 0-d seed to the batch) is never made. Returns how many."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "expand" or node.body is not None or len(node.outputs) != 1:
            continue
        x, y = node.inputs[0], node.outputs[0]
        if (not isinstance(x, Value) or x.type.dtype != y.type.dtype
                or any(type(d) is not int for d in (*x.type.shape, *y.type.shape))):  # static sizes only
            continue
        _sink_expand(graph, node, inline)
        x, y = node.inputs[0], node.outputs[0]
        if any(v is y for v in graph.outputs) or x.type.dtype != y.type.dtype:
            continue
        shape = tuple(y.type.shape)
        readers = list({id(u): u for u in y.users}.values())
        if not readers or len(tuple(x.type.shape)) > len(shape) or any(
                _role(u, inline) != "ew" or tuple(u.outputs[0].type.shape) != shape
                or not any(isinstance(v, Value) and v is not y and tuple(v.type.shape) == shape for v in u.inputs)
                for u in readers):
            continue
        for u in readers:
            u.inputs = [x if v is y else v for v in u.inputs]
        graph.nodes.remove(node)  # read by nothing now (fusion runs after DCE)
        node.drop()
        count += 1
    return count


def _sink_expand(graph: Graph, expand: Node, inline: Callable | None) -> None:
    """expand(x) read by one one-operand pointwise op u alone, repeatedly: u(expand(x)) is
    expand(u(x)), so u runs on x's elements and the expand moves after it, where a binary
    reader of the full shape may take it as a broadcast (W6: the cross-entropy gradient's
    neg(expand(1/n)) * p)."""
    while True:
        x, y = expand.inputs[0], expand.outputs[0]
        readers = list({id(u): u for u in y.users}.values())
        if len(readers) != 1:
            return
        u = readers[0]
        if (_role(u, inline) != "ew" or [v for v in u.inputs if isinstance(v, Value)] != [y]
                or tuple(u.outputs[0].type.shape) != tuple(y.type.shape) or u.outputs[0].type.dtype != y.type.dtype):
            return
        o = u.outputs[0]
        u.inputs = [x if v is y else v for v in u.inputs]
        o.type = o.type._replace(shape=x.type.shape)
        for r in list({id(n): n for n in o.users}.values()):
            if r is not u:
                r.inputs = [y if v is o else v for v in r.inputs]
        graph.outputs = [y if v is o else v for v in graph.outputs]
        expand.inputs = [o if v is x else v for v in expand.inputs]
        graph.nodes.remove(u)
        graph.nodes.insert(graph.nodes.index(expand), u)
