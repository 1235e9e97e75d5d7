"""`index` and `index_grad` of a matrix by two integer index vectors (x[rows, cols] and its
gradient) as small C functions of the native module.

Why: a classifier's loss picks each row's log-probability at its label (`logp[arange(N),
target]`) and its gradient scatters one value per row back (zeros with g added at those
places). As NumPy lines they were a fancy-indexing gather and `np.zeros` + `np.add.at` (the
ufunc.at machinery), run cold after the step's large kernels. Here each is one pass in C:

- index:      out[i] = x[r(A[i]), r(L[i])]
- index_grad: out = 0; out[r(A[i]), r(L[i])] += g[i] for i in order

with r() NumPy's wrap of a negative index, each add in the operand's precision in the order
np.add.at adds (so repeated places accumulate with its bits: 0 + g is g, -0.0 becoming +0.0
as there). An index outside the axis (after the wrap) is not read or written: the function
sets a flag, and the driver then runs the op's NumPy lines, which raise NumPy's IndexError
with its message (the exception the NumPy backend gives). Nothing else differs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gmbase import dtypes as _dtypes
from gmops._registry import TensorSpec
from static.ir import Node, Value

from ..render import c_type
from .function import CFunction
from .indexing import _ints, _prod, _symbolic

if TYPE_CHECKING:
    from .driver import NativeModule

_PAIR_KEY = [["tensor", 0], ["tensor", 1]]


def _key_pair(node: Node) -> bool:
    key = node.attrs.get("key")
    return key is not None and [list(e) for e in key] == _PAIR_KEY and int(node.attrs.get("n_index", 0)) == 2


def pair_index(node: Node) -> str | None:
    """Why node is not a pair gather/scatter of a matrix here (None: it is)."""
    if node.body is not None or node.op not in ("index", "index_grad") or not _key_pair(node):
        return "not a matrix indexed by two index vectors"
    values = [v for v in node.inputs] + list(node.outputs)
    if not all(isinstance(v, Value) for v in values):
        return "a literal operand"
    data, a, b = node.inputs
    y = node.outputs[0]
    if any(_symbolic(d) for v in values for d in v.type.shape):
        return "a symbolic size"
    matrix = y if node.op == "index_grad" else data
    vector = data if node.op == "index_grad" else y
    if len(matrix.type.shape) != 2 or 0 in _ints(matrix.type.shape):
        return "not a non-empty matrix"
    n = _ints(vector.type.shape)
    if len(n) != 1 or _ints(a.type.shape) != n or _ints(b.type.shape) != n or n[0] == 0:
        return "the index vectors and the values are not one shape of one non-empty axis"
    if any(v.type.dtype.np.kind not in "iu" for v in (a, b)):
        return "not integer indices"
    if matrix.type.dtype.np.name not in ("float32", "float64") or vector.type.dtype is not matrix.type.dtype:
        return "not one float32/float64 dtype"
    return None


class CPairIndex(CFunction):
    """The gather (index) or the scatter-add into zeros (index_grad) of one node."""

    def emit(self) -> None:
        m, node = self.m, self.node
        assert node is not None
        data, a, b = node.inputs
        y = node.outputs[0]
        grad = node.op == "index_grad"
        rows, cols = _ints((y if grad else data).type.shape)
        n = _prod(a.type.shape)
        cd = self._param(data, m.contiguous(data), writable=False)
        ca = self._param(a, m.contiguous(a), writable=False)
        cb = self._param(b, m.contiguous(b), writable=False)
        cy = self._fresh_output(y)
        flag = m.names.fresh(f"{m.names(y)}_bad")
        self._fresh_array(flag, (), _dtypes.int64)
        cf = self._param(Value(flag, TensorSpec((), _dtypes.int64)), flag, writable=True)
        T = c_type(y.type.dtype)
        lines = [f"{{  // %{y.name} = {node.op}: {n} places of a {rows}x{cols} matrix",
                 "    long long gm_bad = 0;"]
        if grad:
            lines += [f"    for (long long j = 0; j < {rows * cols}LL; ++j) {cy}[j] = ({T})0;"]
        lines += [f"    for (long long i = 0; i < {n}LL; ++i) {{",
                  f"        long long r = (long long){ca}[i], c = (long long){cb}[i];",
                  f"        r += r < 0 ? {rows}LL : 0; c += c < 0 ? {cols}LL : 0;",
                  f"        if (r < 0 || r >= {rows}LL || c < 0 || c >= {cols}LL) {{ gm_bad = 1; continue; }}"]
        if grad:
            lines += [f"        {cy}[r * {cols}LL + c] = ({T})({cy}[r * {cols}LL + c] + {cd}[i]);"]
        else:
            lines += [f"        {cy}[i] = {cd}[r * {cols}LL + c];"]
        lines += ["    }", f"    {cf}[0] = gm_bad;", "}"]
        self.lines += lines
        self._call()
        call = m._last_call
        if call is not None and "at" in call:
            call["combinable"] = True  # no OpenMP team: combine.py may call it with its neighbours
        out = m.names(y)
        numpy_lines = m.call_line(node, [m.src(v) for v in node.inputs], [out])
        numpy_lines = numpy_lines if isinstance(numpy_lines, list) else [numpy_lines]
        m.body += [f"if {flag}:  # an index outside its axis: NumPy's lines raise NumPy's IndexError",
                   *("    " + line for line in numpy_lines)]


def emit_pair_index(m: "NativeModule", node: Node, at: str) -> bool:
    """Emit node as CPairIndex (True), or leave it to the NumPy lines (False)."""
    if pair_index(node) is not None:
        return False
    m._native_function(CPairIndex(m, f"gm_pick{len(m.functions)}", node), at)
    return True
