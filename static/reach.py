"""Moved to static.tracing.reach. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.reach reach the real one; the package imports static.tracing.reach."""
import sys

from .tracing import reach as _moved

sys.modules[__name__] = _moved
