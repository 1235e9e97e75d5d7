"""The verifier after every pass is asked for (GRAPHMODE_VERIFY=each, as the test suite sets,
or while explain records stages); a compile otherwise verifies the traced graph and each
pipeline's result, which still catches a pass that breaks a graph."""
from dataclasses import dataclass
from typing import ClassVar

import pytest

import static
from static.ir import Graph
from static.passes import Pipeline, run_pipeline
from static.passes.manager import PASSES, GraphPass, verify_each_pass

TEXT = """func @f(%x: f32[4]) -> f32[4] {
  %0 = mul %x, %x : f32[4]
  %1 = tanh %0 : f32[4]
  return %1
}"""


@dataclass(frozen=True)
class _Breaks(GraphPass):
    """Retypes a node's result: the verifier's type check fails."""

    name: ClassVar[str] = "breaks"

    def apply(self, graph: Graph) -> dict:
        out = graph.nodes[0].outputs[0]
        out.type = static.parse_ir("func @g(%y: f64[4]) -> f64[4] {\n  return %y\n}").inputs[0].type
        return {}


def test_each_pass_is_verified_when_asked(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_VERIFY", "each")
    assert verify_each_pass()
    with pytest.raises(static.IRVerifyError):
        Pipeline([_Breaks()]).run(static.parse_ir(TEXT))


def test_without_it_the_pipeline_result_is_still_verified(monkeypatch):
    monkeypatch.delenv("GRAPHMODE_VERIFY", raising=False)
    assert not verify_each_pass()
    Pipeline([_Breaks()]).run(static.parse_ir(TEXT))  # not checked pass by pass
    monkeypatch.setitem(PASSES, "dce", _Breaks())
    with pytest.raises(static.IRVerifyError):  # but the pipeline's result is
        run_pipeline(static.parse_ir(TEXT), [], opt_level=1, passes=["dce"])
