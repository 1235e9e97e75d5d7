"""Moved to static.tracing.state. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.trace_state reach the real one; the package imports static.tracing.state."""
import sys

from .tracing import state as _moved

sys.modules[__name__] = _moved
