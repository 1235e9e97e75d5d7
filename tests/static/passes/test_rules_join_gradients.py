"""The gradient of split/chunk: index_grads of adjacent slabs added together become one cat
(no zero-filled buffers, no adds), and cats of cats one cat; values unchanged."""
import numpy as np
import pytest

import eager
import static
from static.passes import PASSES
from static.passes.algebraic import RULE_TABLE
from static.passes.rules import apply_rules

SLAB = ('%{n} = index_grad %{src} {{key = [["slice", none, none, none], ["slice", {a}, {b}, none]], n_index = 0, '
        'shape = [3, 12]}} : f64[3,12]')


def _graph(order):
    lines = [SLAB.format(n=f"g{i}", src=f"p{i}", a=4 * i, b=4 * i + 4) for i in range(3)]
    lines.append(f"%s0 = add %g{order[0]}, %g{order[1]} : f64[3,12]")
    lines.append(f"%s1 = add %s0, %g{order[2]} : f64[3,12]")
    return static.parse_ir("func @f(%p0: f64[3,4], %p1: f64[3,4], %p2: f64[3,4]) -> f64[3,12] {\n  "
                           + "\n  ".join(lines) + "\n  return %s1\n}")


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_adjacent_slabs_join_into_one_cat(order):
    g = _graph(order)
    xs = [np.random.default_rng(i).standard_normal((3, 4)) for i in range(3)]
    expected = static.run_graph(g, xs)[0]
    for _ in range(2):  # the pipeline runs the rules to a fixed point
        apply_rules(g, [RULE_TABLE["join_index_grads"], RULE_TABLE["cat_of_cat"]])
    PASSES["dce"](g)
    static.verify(g)
    assert [n.op for n in g.nodes] == ["cat"] and len(g.nodes[0].inputs) == 3
    np.testing.assert_array_equal(static.run_graph(g, xs)[0], expected)


def test_slabs_with_a_gap_stay():
    g = _graph((0, 2, 1))  # slabs 0 and 2 are not adjacent: that add stays
    apply_rules(g, [RULE_TABLE["join_index_grads"]])
    assert "add" in [n.op for n in g.nodes if n.outputs[0].name == "s0"]


def test_split_gradient_compiles_to_one_cat_and_equals_eager():
    x = eager.tensor(np.random.default_rng(0).standard_normal((4, 6, 12)), requires_grad=True)

    def f(x):
        a, b, c = x.split(4, dim=2)
        return (a * 2 + b.exp() + c.sin()).sum()

    compiled = static.compile(f)
    got = eager.autograd.grad(compiled(x), x)[0].numpy()
    np.testing.assert_allclose(got, eager.autograd.grad(f(x), x)[0].numpy(), rtol=1e-14)
    ops = [n.op for n in compiled.autograd_graphs(x).backward.nodes]
    assert "index_grad" not in ops and ops.count("cat") == 1, ops
