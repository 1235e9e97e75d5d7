"""Moved to static.tracing.guards. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.guards reach the real one; the package imports static.tracing.guards."""
import sys

from .tracing import guards as _moved

sys.modules[__name__] = _moved
