"""Moved to static.jit.stages. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.stages reach the real one; the package imports static.jit.stages."""
import sys

from .jit import stages as _moved

sys.modules[__name__] = _moved
