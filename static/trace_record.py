"""Moved to static.tracing.record. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.trace_record reach the real one; the package imports static.tracing.record."""
import sys

from .tracing import record as _moved

sys.modules[__name__] = _moved
