"""Moved to gmnative.kernels (the native layer, below eager and codegen). This name is the
same module object, not a copy, so that scripts and tests that import or patch
codegen.eager_kernels reach the real one; the package itself imports gmnative.kernels."""
import sys

from gmnative import kernels as _moved

sys.modules[__name__] = _moved
