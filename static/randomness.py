"""Moved to static.tracing.randomness. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.randomness reach the real one; the package imports static.tracing.randomness."""
import sys

from .tracing import randomness as _moved

sys.modules[__name__] = _moved
