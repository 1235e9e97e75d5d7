"""Module.parameters() walks the modules without building names: the same parameters in
the same order as named_parameters (PyTorch's), shared modules and parameters once, a
module reached twice walked once, recurse=False the module's own; a subclass that redefines
named_parameters still decides what parameters() yields (as in PyTorch)."""
from __future__ import annotations

import eager
from eager import nn


def _ids(it) -> list[int]:
    return [id(p) for p in it]


def _models() -> list:
    shared = nn.Linear(3, 3)
    tied = nn.Sequential(shared, nn.Sequential(shared, nn.Linear(3, 3)), shared)
    tied.again = tied[1]  # a module reached by two names
    other = nn.Linear(3, 3)
    other.weight = shared.weight  # a parameter shared across modules
    tied.other = other
    nested = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.LayerNorm(4)) for _ in range(3)])
    return [tied, nested, nn.GRU(4, 5, num_layers=2, bidirectional=True), nn.Linear(2, 2, bias=False)]


def test_parameters_follow_named_parameters():
    for model in _models():
        assert _ids(model.parameters()) == _ids(p for _, p in model.named_parameters())
        assert _ids(model.parameters(recurse=False)) == _ids(p for _, p in model.named_parameters(recurse=False))


def test_shared_parameters_counted_once():
    tied = _models()[0]
    params = list(tied.parameters())
    assert len(params) == len({id(p) for p in params}) == 5  # shared w, b; inner linear w, b; other's bias


def test_a_subclass_redefining_named_parameters_decides():
    class OnlyWeights(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(2, 2)

        def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
            for name, p in super().named_parameters(prefix, recurse, remove_duplicate):
                if name.endswith("weight"):
                    yield name, p

    m = OnlyWeights()
    assert _ids(m.parameters()) == [id(m.a.weight)]


def test_optimizer_sees_the_same_parameters():
    model = _models()[1]
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    assert _ids(opt.param_groups[0]["params"]) == _ids(p for _, p in model.named_parameters())
