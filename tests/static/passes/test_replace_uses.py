"""static.passes.rewrite.replace_uses rewrites only the nodes that read a replaced value (their
use lists say which), follows chains of replacements, and updates the graph's outputs."""
import static
from static.passes.rewrite import replace_uses

TEXT = """func @f(%x: f32[4], %y: f32[4]) -> (f32[4], f32[4]) {
  %0 = mul %x, %x : f32[4]
  %1 = tanh %0 : f32[4]
  %2 = mul %y, %y : f32[4]
  %3 = tanh %2 : f32[4]
  %4 = add %1, %3 : f32[4]
  %5 = exp %2 : f32[4]
  return %4, %1
}"""


def test_only_the_readers_of_a_replaced_value_are_rewritten():
    g = static.parse_ir(TEXT)
    n = {o.name: node for node in g.nodes for o in node.outputs}
    before = {name: node.inputs for name, node in n.items()}
    replace_uses(g, {n["1"].outputs[0]: n["3"].outputs[0]})
    changed = {name for name, node in n.items() if node.inputs is not before[name]}
    assert changed == {"4"}  # the one reader of %1; no other node's operands were reassigned
    assert [v.name for v in n["4"].inputs] == ["3", "3"]
    assert [v.name for v in g.outputs] == ["4", "3"]
    assert n["4"] in n["3"].outputs[0].users and not n["1"].outputs[0].users  # use lists follow


def test_chains_and_literals_are_followed():
    g = static.parse_ir(TEXT)
    n = {o.name: node for node in g.nodes for o in node.outputs}
    v0, v2 = n["0"].outputs[0], n["2"].outputs[0]
    replace_uses(g, {v0: v2, v2: 2.0})
    assert n["1"].inputs == [2.0] and n["3"].inputs == [2.0] and n["5"].inputs == [2.0]


def test_a_rule_round_skips_nodes_an_earlier_round_left_dead():
    """A node replaced by an earlier round stays for DCE; a later round does not rewrite it
    again (its rewrite would be dead too), and the result is the same."""
    from static.passes.algebraic import algebraic
    from static.passes.simplify import dce

    g = static.parse_ir("""func @f(%x: f32[3,4]) -> f32[3,4] {
  %0 = transpose %x {dim0 = 0, dim1 = 1} : f32[4,3]
  %1 = transpose %0 {dim0 = 0, dim1 = 1} : f32[3,4]
  %2 = tanh %1 : f32[3,4]
  return %2
}""")
    assert algebraic(g)["rewritten"] == 1  # transpose of a transpose: %x
    assert algebraic(g)["rewritten"] == 0  # the replaced %1 is dead: not rewritten again
    dce(g)
    assert [n.op for n in g.nodes] == ["tanh"] and g.nodes[0].inputs[0] is g.inputs[0]
