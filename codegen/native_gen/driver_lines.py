"""The driver's own Python lines made fewer after generation: a view line that nothing reads
any more is dropped.

A compiled step runs its driver's lines cold, after kernels that have walked megabytes: a
line that costs 0.1-0.2 us in a loop of its own took 1-3 us there (W6's step, one thread).
Views of a region's operands are written for every IR node, but a kernel reads the flat
memory of a reshape's operand as it would the reshape (NativeModule.kernel_call passes the
operand), and a window function that took over a node's readers leaves the node's view
behind: those lines compute nothing the step uses.
"""
from __future__ import annotations

import re
from collections import Counter

_IDENT = re.compile(r"[A-Za-z_]\w*")
# a top-level line binding a view (or an alias) of one name: no side effect, nothing to raise
_VIEW_LINE = re.compile(r"^(\w+) = (?:(\w+)\.(?:reshape|swapaxes)\([\d(), -]*\)|np\.transpose\((\w+), \([\d, ]*\)\)|(\w+))$")


def drop_unread_views(body: list, returns: list) -> list:
    """body without the view lines whose name no other line (nor the returned list) reads;
    repeated, so a view read only by a dropped view goes too."""
    counts = Counter(t for line in body + returns for t in _IDENT.findall(line))
    keep = list(body)
    changed = True
    while changed:
        changed = False
        for j, line in enumerate(keep):
            found = _VIEW_LINE.match(line) if line is not None else None
            if found is None or counts[found.group(1)] != 1:
                continue
            for t in _IDENT.findall(line):
                counts[t] -= 1
            keep[j] = None
            changed = True
    return [line for line in keep if line is not None]
