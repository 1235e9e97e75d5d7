"""Value.users is kept up to date by every change of a node's operands, by nodes leaving
their graph, and by replace_all_uses_with; the one renumber names values uniquely."""
import static
from static.passes import PASSES

TEXT = """func @f(%x: f32[4]) -> f32[4] {
  %0 = exp %x : f32[4]
  %1 = add %0, %0 : f32[4]
  %2 = sin %x : f32[4]
  %3 = mul %1, %2 : f32[4]
  return %3
}"""


def _ids(nodes):
    return [id(n) for n in nodes]


def test_users_follow_operand_changes():
    g = static.parse_ir(TEXT)
    x = g.inputs[0]
    exp, add, sin, mul = g.nodes
    assert _ids(x.users) == _ids([exp, sin])
    assert _ids(exp.outputs[0].users) == _ids([add, add])  # once per use
    mul.inputs = [add.outputs[0], x]
    assert _ids(x.users) == _ids([exp, sin, mul]) and sin.outputs[0].users == []


def test_replace_all_uses_with():
    g = static.parse_ir(TEXT)
    exp, add, sin, mul = g.nodes
    assert exp.outputs[0].replace_all_uses_with(sin.outputs[0]) == 1
    assert add.inputs == [sin.outputs[0], sin.outputs[0]] and exp.outputs[0].users == []
    assert _ids(sin.outputs[0].users) == _ids([mul, add, add])


def test_nodes_leaving_the_graph_drop_their_uses():
    g = static.parse_ir(TEXT)
    exp, add, sin, mul = g.nodes
    g.outputs = [sin.outputs[0]]
    PASSES["dce"](g)
    assert g.nodes == [sin] and _ids(g.inputs[0].users) == _ids([sin])


def test_graph_users_and_renumber_are_one_implementation():
    from static.passes import rewrite

    g = static.parse_ir(TEXT)
    assert rewrite.users(g) == g.users()
    assert rewrite.renumber is not None and rewrite.renumber(g) is g
    names = [o.name for n in g.nodes for o in n.outputs]
    assert names == ["0", "1", "2", "3"]
