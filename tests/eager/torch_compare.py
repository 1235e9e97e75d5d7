"""Helpers of the API tests that compare an eager call with PyTorch's: a PyTorch tensor's
values as an eager tensor, equality of values, shape and dtype, and the same exception
(type and first message line) from both libraries."""
from __future__ import annotations

import numpy as np
import pytest

import eager


def E(t, grad=False):  # noqa: N802  (short: it wraps every PyTorch input of a comparison)
    """The PyTorch tensor t's values as an eager tensor (requiring grad as asked)."""
    return eager.tensor(t.detach().numpy().copy(), requires_grad=grad)


def same(got, want, tol=1e-12):
    """got (eager, or an array) equals PyTorch's want in shape, dtype and values (NaN equal to NaN)."""
    got = got.detach().numpy() if hasattr(got, "detach") else np.asarray(got)
    want = want.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def raises_like(fe, ft):
    """fe() raises what ft() raises in PyTorch: the same type and first message line."""
    with pytest.raises(Exception) as want:
        ft()
    with pytest.raises(type(want.value)) as got:
        fe()
    assert str(got.value) == str(want.value).split("\n")[0]
