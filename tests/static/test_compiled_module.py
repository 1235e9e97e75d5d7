"""static.compile(module) behaves like the module it wraps."""
import warnings

import numpy as np
import pytest

import eager
import eager.nn as nn
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = 2.0

    def forward(self, x, *, shift=0.0):
        return self.fc(x) * self.scale + shift


def test_the_compiled_module_exposes_the_modules_api():
    eager.manual_seed(0)
    model = Net()
    cm = static.compile(model)
    assert [n for n, _ in cm.named_parameters()] == ["fc.weight", "fc.bias"]
    assert all(a is b for a, b in zip(cm.parameters(), model.parameters()))
    assert cm.fc is model.fc and cm.scale == 2.0
    cm.eval()
    assert not model.training
    cm.train()
    assert model.training
    np.testing.assert_allclose(cm(X, shift=1.0).detach().numpy(), model(X, shift=1.0).detach().numpy(), rtol=1e-6)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cm.nope  # noqa: B018


def test_state_dict_round_trip_through_a_compiled_module():
    eager.manual_seed(0)
    a = static.compile(Net())
    eager.manual_seed(1)
    b = static.compile(Net())
    b(X)  # traced with b's own values; loading new ones must be seen
    b.load_state_dict(a.state_dict())
    np.testing.assert_allclose(b(X).detach().numpy(), a(X).detach().numpy(), rtol=1e-6)
    assert set(a.state_dict()) == {"fc.weight", "fc.bias"}


def test_a_changing_batch_size_names_the_dimension_in_the_recompile_limit_warning():
    cm = static.compile(Net(), max_retraces=2, dynamic=False)  # (automatic: one symbolic trace, no warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (6, 5, 4, 3):
            cm(X[:n])
    messages = [str(w.message) for w in caught if "retraced" in str(w.message)]
    assert messages and "dimension 0: 4 -> 3" in messages[0]
