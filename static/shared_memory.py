"""Moved to static.tracing.shared_memory. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.shared_memory reach the real one; the package imports static.tracing.shared_memory."""
import sys

from .tracing import shared_memory as _moved

sys.modules[__name__] = _moved
