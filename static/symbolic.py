"""Moved to static.tracing.symbolic. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.symbolic reach the real one; the package imports static.tracing.symbolic."""
import sys

from .tracing import symbolic as _moved

sys.modules[__name__] = _moved
