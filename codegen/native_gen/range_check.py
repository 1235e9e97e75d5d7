"""`check_index_range` in the native module: one C pass over the index, writing a flag.

Why: a classifier's compiled step checks its labels right after the region that makes them
(cross-entropy's ignore mask). As a library call the check was the op's runtime function:
two NumPy reductions (min, max) and a Python comparison, run cold after the step's large
kernels (about 20 us of W6's step where it costs 2.4 us alone). Here it is a small C function
(the loop is one `|=` per element, no OpenMP team) that the combining pass (combine.py) calls
in the same C call as the region that wrote its operand; the driver then tests the flag, and
only when it is set runs the op's runtime function, which raises eager's exception with eager's
message (the same text, the same exception type: nothing about the error is produced here).

The check's result is its operand (the op aliases it), bound to the result's name after the
flag's test, so every reader of the checked index still comes after the check.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gmbase import dtypes as _dtypes
from gmops._registry import TensorSpec
from static.ir import Node, Value

from .function import CFunction
from .indexing import _prod, _symbolic

if TYPE_CHECKING:
    from .driver import NativeModule


def native_check(node: Node) -> str | None:
    """Why `node` (a check_index_range) is not one C pass here (None: it is)."""
    if node.op != "check_index_range" or node.body is not None:
        return "not a range check"
    x = node.inputs[0]
    if not isinstance(x, Value):
        return "a literal operand"
    if x.type.dtype.is_floating_point or x.type.dtype.np.kind not in "iu":
        return "not an integer index"
    if any(_symbolic(d) for d in x.type.shape) or _prod(x.type.shape) == 0:
        return "a symbolic or empty index (the op's forward checks it)"
    low, high = node.attrs.get("low"), node.attrs.get("high")
    if type(low) is not int or type(high) is not int:
        return "a bound that is a size of the call (the op's forward reads its value)"
    return None


class CRangeCheck(CFunction):
    """One pass over the index: flag = any value outside [low, high)."""

    def emit(self) -> None:
        m, node = self.m, self.node
        assert node is not None
        x, y = node.inputs[0], node.outputs[0]
        low, high = int(node.attrs["low"]), int(node.attrs["high"])
        cx = self._param(x, m.contiguous(x), writable=False)
        flag = m.names.fresh(f"{m.names(y)}_bad")
        self._fresh_array(flag, (), _dtypes.int64)
        cf = self._param(Value(flag, TensorSpec((), _dtypes.int64)), flag, writable=True)
        n = _prod(x.type.shape)
        self.lines += [
            f"{{  // %{y.name}: is every value of %{x.name} in [{low}, {high})?",
            "    long long gm_bad = 0;",
            f"    for (long long i = 0; i < {n}LL; ++i) {{",
            f"        const long long v = (long long){cx}[i];",
            f"        gm_bad |= (long long)((v < {low}LL) | (v >= {high}LL));",
            "    }",
            f"    {cf}[0] = gm_bad;",
            "}",
        ]
        self._call()
        call = m._last_call
        if call is not None and "at" in call:
            call["combinable"] = True  # no OpenMP team: combine.py may call it with its neighbours
        src, out = m.src(x), m.names(y)
        raising = m.call_line(node, [src], [out])  # the op's runtime function: eager's exception
        raising = raising if isinstance(raising, list) else [raising]
        m.body += [f"if {flag}:  # a value outside [{low}, {high}): the op's forward raises eager's error",
                   *("    " + line for line in raising), "else:", f"    {out} = {src}"]
        if src in m.fresh:
            m.fresh.add(out)


def emit_check(m: "NativeModule", node: Node, at: str) -> bool:
    """Emit node as CRangeCheck (True), or leave it to the library call (False)."""
    if native_check(node) is not None:
        return False
    m._native_function(CRangeCheck(m, f"gm_check{len(m.functions)}", node), at)
    return True
