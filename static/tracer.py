"""Moved to static.tracing.tracer. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.tracer reach the real one; the package imports static.tracing.tracer."""
import sys

from .tracing import tracer as _moved

sys.modules[__name__] = _moved
