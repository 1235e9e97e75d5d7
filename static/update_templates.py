"""Moved to static.training.update_templates. This name is the same module object, not a copy, so
that scripts and tests that import or patch static.update_templates reach the real one; the
package imports static.training.update_templates."""
import sys

from .training import update_templates as _moved

sys.modules[__name__] = _moved
