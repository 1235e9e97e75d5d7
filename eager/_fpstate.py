"""Moved to gmbase.fpstate (the base layer, gmbase). This name is the same module object, not a copy,
so scripts, tests and pickles that import or patch the old name reach the real one."""
import sys

from gmbase import fpstate as _moved
from gmbase.fpstate import *  # noqa: F403  (the names, for type checkers; at run time this name is the module)

sys.modules[__name__] = _moved
