"""The pointwise op records, one module per job: `unary` (math of one operand: exp, log,
trigonometric, sigmoid, relu, erf, GELU, ...), `arithmetic` (add, sub, mul, div, pow, maximum,
minimum), `selection` (where, clamp), `comparison` (comparisons and logic, bool results) and
`casts` (to_dtype, clone). This module is the family's front: `from gmops import elementwise
as E; E.EXP` and `from gmops.elementwise import WHERE` read the records as before the split.
Registration order: comparison, selection, unary, arithmetic, casts (each imports what its
VJPs call)."""
from .arithmetic import *  # noqa: F403
from .casts import *  # noqa: F403
from .comparison import *  # noqa: F403
from .selection import *  # noqa: F403
from .selection import SELECT_BITS_MIN, _where  # noqa: F401  (private helpers tests call through this name)
from .unary import *  # noqa: F403
from .unary import _gelu, _gelu_grad  # noqa: F401
