"""Reusable output buffers of generated modules (reuse): a large output of an earlier call
that nothing references any more is written again instead of faulting in fresh pages.
"""
from __future__ import annotations

import sys

import numpy as np

# -- output buffers ---------------------------------------------------------------------------
REUSE_MIN_BYTES = 1 << 16  # smaller buffers come from np.empty (cheaper than the check)
REUSE_SLOTS = 2  # buffers kept per allocation site: a training loop holds the previous step's


def _refcount_of_a_free_slot() -> int:
    slots = [object()]
    for a in slots:
        return sys.getrefcount(a)
    return 0


_FREE_REFS = _refcount_of_a_free_slot()  # the list, the loop variable, getrefcount's argument


def reuse(slots: list, shape: tuple, dtype):
    """An uninitialized C-contiguous array for an output written by a kernel: one kept in
    `slots` (the generated module's, one list per allocation site) that nothing outside the
    list references any more, else a fresh one (kept, up to REUSE_SLOTS). A large fresh
    array costs page faults on first touch - as much as the kernel at 1e6 elements - so a
    loop calling the same compiled function writes into the same memory each step.

    Sound in CPython because the reference count of a buffer counts every holder: the
    caller's results, eager tensors wrapping them, views (their base), residuals saved for a
    backward, a concurrent call that took it. Only a buffer referenced by the list alone is
    handed out again."""
    for a in slots:
        if sys.getrefcount(a) <= _FREE_REFS:
            return a
    a = np.empty(shape, dtype)
    if len(slots) < REUSE_SLOTS:
        slots.append(a)
    else:
        slots[len(slots) - 1] = a
    return a
