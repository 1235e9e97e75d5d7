"""Moved to static.jit.dynamic_shapes. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.dynamic_shapes reach the real one; the package imports static.jit.dynamic_shapes."""
import sys

from .jit import dynamic_shapes as _moved

sys.modules[__name__] = _moved
