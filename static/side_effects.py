"""Moved to static.tracing.side_effects. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.side_effects reach the real one; the package imports static.tracing.side_effects."""
import sys

from .tracing import side_effects as _moved

sys.modules[__name__] = _moved
