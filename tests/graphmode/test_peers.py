"""Peers: the same loss measured in PyTorch or JAX next to ours (graphmode compare --peers)."""
from __future__ import annotations

import sys
import types

import numpy as np

import eager
from graphmode.peers import measure_peer


def seed_loss(a, w1, w2, w3, w4):
    return (10 - (w3 * (w1 * a) + w4 * (w2 * a))).sum()


def seed_args(n: int = 8) -> list:
    rng = np.random.default_rng(0)
    return [eager.from_numpy(rng.standard_normal(n).astype(np.float32)).requires_grad_() for _ in range(5)]


def test_a_missing_peer_library_is_a_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    result = measure_peer("torch", seed_loss, tuple(seed_args()), (0,), 1, 1, reference=[])
    assert not result.available and "not installed" in result.note
    assert "unknown peer" in measure_peer("tensorflow", None, (), (), 1, 1, reference=[]).note


def test_a_failing_peer_is_reported_and_does_not_stop_the_comparison(monkeypatch):
    def broken(*_a, **_k):
        raise RuntimeError("no kernels for this build")

    fake = types.SimpleNamespace(from_numpy=broken, cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake)
    result = measure_peer("torch", seed_loss, tuple(seed_args()), (0,), 1, 1, reference=[])
    assert result.available and result.eager is None and "failed: RuntimeError: no kernels" in result.note


