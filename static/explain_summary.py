"""Moved to static.jit.explain_summary. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.explain_summary reach the real one; the package imports static.jit.explain_summary."""
import sys

from .jit import explain_summary as _moved

sys.modules[__name__] = _moved
