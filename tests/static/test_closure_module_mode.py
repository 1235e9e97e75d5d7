"""A module reached through a closure or a global (not compiled itself) keeps eager's mode:
switching it to eval() or back to train() retraces, so dropout follows the mode as in eager."""
from __future__ import annotations

import numpy as np

import eager
import static


def _dropout_model():
    eager.manual_seed(0)
    return eager.nn.Sequential(eager.nn.Linear(4, 8), eager.nn.Dropout(0.5))


def test_a_closure_module_switched_to_eval_retraces_and_gives_eagers_values():
    model = _dropout_model()
    compiled = static.compile(lambda v: model(v))
    x = eager.ones(16, 4)
    model.train()
    assert (compiled(x).detach().numpy() == 0).any()  # dropout in train mode
    model.eval()
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    model.train()
    assert (compiled(x).detach().numpy() == 0).any()


GLOBAL_MODEL = _dropout_model()


def _through_a_global(v):
    return GLOBAL_MODEL(v)


def test_a_global_module_switched_to_eval_retraces():
    compiled = static.compile(_through_a_global)
    x = eager.ones(16, 4)
    GLOBAL_MODEL.train()
    compiled(x)
    GLOBAL_MODEL.eval()
    try:
        np.testing.assert_allclose(compiled(x).detach().numpy(), GLOBAL_MODEL(x).detach().numpy(), rtol=1e-6)
    finally:
        GLOBAL_MODEL.train()


def test_a_bound_forward_follows_the_mode():
    model = _dropout_model()
    compiled = static.compile(model.forward)
    x = eager.ones(16, 4)
    compiled(x)
    model.eval()
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
