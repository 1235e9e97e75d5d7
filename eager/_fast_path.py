"""The text of eager's per-op hot path, rendered once at import from one template.

Applying an op eagerly builds a result tensor and, when gradients are wanted, a backward
`Node` with one edge, one input record (shape, dtype) and possibly one saved value per
operand. That construction is written ONCE here, as snippets over an operand variable, and
rendered into three functions that eager._dispatch and eager._apply_run `exec` at import:

- `dispatch`'s fast path, one branch per arity (1 and 2 operands: a Tensor or a Python
  number each), with every per-operand step unrolled and the tensor and node built inline
  (no `_make_node`/`Node.__init__` call: the W4 benchmark's ops cost about 2 us, and each
  Python call saved is 3-5% of that);
- `make_node(op, operands, attrs)`, the general path's node for any number of operands,
  Tensor subclasses included (the same snippets inside a loop).

The rendered text is kept (`SOURCES`) and registered with `linecache` under the file name
its code carries (`eager/_fast_path.py <rendered NAME>`), so tracebacks and `inspect.getsource` show the
lines that ran. Change the behaviour here, never in a copy: `tests/eager/test_fast_path.py`
checks that the fast path and the general path build the same graph.
"""
from __future__ import annotations

import linecache
import os
import textwrap
from typing import Any

# -- the snippets ---------------------------------------------------------------------------------
# {o}: the operand's variable; {k}: a suffix naming this operand's locals; {is_tensor}: the
# test that {o} is a tensor (`type(o) is Tensor` where the caller has ruled subclasses out);
# {load}, {data}, {dtype}: how its array and dtype are read (the fast path has them already).
EDGE = """\
if {is_tensor}:
    {load}meta{k} = ({data}.shape, {dtype})
    if {o}._requires_grad:
        fn = {o}.grad_fn
        edge{k} = (fn, {o}._output_nr) if fn is not None else ({o}._acc or {o}._accumulator(), 0)
    else:
        edge{k} = _NO_EDGE
else:
    meta{k}, edge{k} = None, _NO_EDGE
"""

# What the VJP reads back: positions in op.save (an op may list positions of operands it is
# not always given); a tensor as a SavedTensor with its version (two stores, no __init__),
# a Python number as itself.
SAVE = """\
saved = {{}}
for i in op.save:
    if i >= {n}:
        continue
    o = {operands}[i]
    if {is_tensor_o}:
        st = _object_new(SavedTensor)
        st.tensor = o
        st.version = o._vc[0]
        saved[i] = st
    else:
        saved[i] = o
"""

# The node itself, once its edges, input records and saved values are known. The grad_fn
# class is resolved once per op record (`op.grad_class`, see grad_class), not per call, and
# carries the node's name (eager.autograd.graph.node_class).
NODE = """\
node = _object_new(op.grad_class or grad_class(op, {operands}, attrs))
node.op = op
node.attrs = attrs
node.next_functions = {edges}
node._in_meta = {metas}
node._saved = saved
if _ANOMALY_EVER[0] and STATE.anomaly:
    node._trace = capture_stack()
"""

# A one-output result: a tensor made without __init__ (as Tensor._make), then its node.
RESULT = """\
out = _object_new(Tensor)
out._data = result
out._vc = [0]
out._output_nr = 0
# a float input can give a non-float result (a comparison, a cast to an integer dtype),
# which never requires grad
if not (wants_grad and STATE.enabled and op.vjp is not None and (result.dtype is dt or result.dtype.kind in "fc")):
    out._requires_grad = False
    out.grad_fn = None
    return out
{edges}{save}{node}node._out_meta = ((result.shape, result.dtype),)
out._requires_grad = True
out.grad_fn = node
if op.save_output:
    node._saved_out = SavedTensor(out, is_output=True)
return out
"""

# Running the forward on the operands' arrays (x, and y for two operands): NumPy's reports
# off (unless the backward pass has them off already), an elementwise op on a large broadcast
# gradient computed once per distinct element inside a backward that records nothing, two
# numbers by NumPy's scalar arithmetic (see eager._scalar_form).
COMPUTE = """\
if _COMPACT_PASSES and STATE.compact_broadcasts:
    token = None
    if op.kind == "elementwise":
        first = {first_array}
        if first.size >= _COMPACT_MIN_ELEMS:
            compact = _on_broadcast_base(op, operands, attrs)
            if compact is not None:
                return _new_tensor(compact)  # nothing to record: the pass makes no graph
else:
    token = _quiet_fp(_FP_QUIET) if op.quiet_fp else None
result: Any = None
{scalar}if result is None:
    try:
        if attrs:
            result = op.forward(np, {arrays}, **attrs)
        else:  # (a call without `**{{}}` skips building the keyword dict)
            result = op.forward(np, {arrays})
    except (ValueError, IndexError, TypeError) as exc:
        _explain_failure(op, operands, attrs, exc)
    finally:
        if token is not None:
            _restore_fp(token)
    if type(result) is not _ndarray and isinstance(result, np.generic):
        result = _asarray(result)  # a tensor holds an array, never a NumPy scalar
elif token is not None:
    _restore_fp(token)
"""

SCALAR_UNARY = """\
if not x.ndim and not attrs:
    # one number: the op's ufunc on NumPy's scalar (the same loop on one element), which
    # skips the 0-d array's wrapping
    form = op.scalar_form
    if form is None:
        form = op.scalar_form = _scalar_form(op)
    if form:
        a0 = x[()]
        r = form(a0)
        if type(r) is type(a0) and r == r:  # (a NaN: the ufunc's own bits)
            result = _asarray(r)
"""

SCALAR_BINARY = """\
if op.scalar_as_array:
    if type(y) is float:
        cached = (_F32_SCALARS if dt is _F32 else _F64_SCALARS).get(y)
        y = _scalar_array(y, dt) if cached is None else cached
    elif type(x) is float:
        cached = (_F32_SCALARS if dt is _F32 else _F64_SCALARS).get(x)
        x = _scalar_array(x, dt) if cached is None else cached
    if type(x) is _ndarray and type(y) is _ndarray and not x.ndim and not y.ndim and not attrs:
        # two numbers: NumPy's scalar arithmetic, bit for bit the ufunc's
        form = op.scalar_form
        if form is None:
            form = op.scalar_form = _scalar_form(op)
        if form:
            a0 = x[()]
            try:
                r = form(a0, y[()])
            except Exception:  # noqa: BLE001  (not computable this way: the ufunc computes it)
                r = None
                op.scalar_form = False
            if type(r) is type(a0) and r == r:  # (a NaN: the ufunc's own bits)
                result = _asarray(r)
"""

# Which operands the fast path takes: a plain NumPy tensor of float32/float64 (two tensors:
# of one dtype) or a Python float/int beside one; anything else goes to the scan.
ACCEPT_UNARY = """\
a = operands[0]
if type(a) is not Tensor:
    return _dispatch_scan(op, operands, attrs)
x = a._data
dt = x.dtype
if type(x) is not _ndarray or (dt is not _F32 and dt is not _F64):
    return _dispatch_scan(op, operands, attrs)
wants_grad = a._requires_grad
"""

ACCEPT_BINARY = """\
a, b = operands
ta = type(a)
if ta is Tensor:
    x = a._data
    dt = x.dtype
    if type(x) is not _ndarray or (dt is not _F32 and dt is not _F64):
        return _dispatch_scan(op, operands, attrs)
    tb = type(b)
    if tb is Tensor:
        y = b._data
        if type(y) is not _ndarray or y.dtype is not dt:
            return _dispatch_scan(op, operands, attrs)
        wants_grad = a._requires_grad or b._requires_grad
    elif tb is float or tb is int:
        y = b
        wants_grad = a._requires_grad
    else:
        return _dispatch_scan(op, operands, attrs)
elif (ta is float or ta is int) and type(b) is Tensor:
    y = b._data
    dt = y.dtype
    if type(y) is not _ndarray or (dt is not _F32 and dt is not _F64):
        return _dispatch_scan(op, operands, attrs)
    x = a
    wants_grad = b._requires_grad
else:
    return _dispatch_scan(op, operands, attrs)
"""

DISPATCH = '''\
def dispatch(op, operands, attrs):
    """Run `op` eagerly, unless an operand's type or a dispatch mode takes it over (rendered
    by eager._fast_path: the one-output op on one or two plain float32/float64 NumPy tensors
    or Python numbers, with no mode pushed, runs here with its tensor and node built inline;
    one-tensor views go to `_view_of`; everything else to `_dispatch_scan`)."""
    if not op.simple or _n_modes_pushed:
        if op.is_view and not _n_modes_pushed and not op.multi_output and len(operands) == 1:
            a = operands[0]
            if type(a) is Tensor and type(a._data) is _ndarray:
                return _view_of(op, a, attrs)
        return _dispatch_scan(op, operands, attrs)
    n = len(operands)
    if n == 2:
{binary}
    if n != 1:
        return _dispatch_scan(op, operands, attrs)
{unary}'''

MAKE_NODE = '''\
def make_node(op, operands, attrs):
    """The backward node of `op` applied to `operands`: its edges, the operands' shapes and
    dtypes, and what its VJP reads back (`op.save`), in one pass over the operands (rendered
    by eager._fast_path from the fast path's own snippets)."""
    edges = []
    metas = []
    for o in operands:
{edge}        edges.append(edge)
        metas.append(meta)
    n = len(operands)
{save}{node}    return node
'''


def _indent(text: str, levels: int) -> str:
    return textwrap.indent(text, "    " * levels)


def _arity_branch(n: int) -> str:
    """The fast path's body for `n` operands (1 or 2): accept, compute, result and node."""
    names = ("a", "b")[:n]
    accept = ACCEPT_UNARY if n == 1 else ACCEPT_BINARY
    compute = COMPUTE.format(first_array="x" if n == 1 else "x if type(x) is _ndarray else y",
                             arrays="x" if n == 1 else "x, y",
                             scalar=SCALAR_UNARY if n == 1 else SCALAR_BINARY)
    # (a tensor operand's array is x or y: only a number operand is replaced by a 0-d array)
    edges = "".join(EDGE.format(o=o, k=f"_{o}", is_tensor=f"type({o}) is Tensor", load="", data=arr, dtype="dt")
                    for o, arr in zip(names, ("x", "y")))
    save = SAVE.format(n=n, operands="operands", is_tensor_o="type(o) is Tensor")
    node = NODE.format(operands="operands", edges="(" + "".join(f"edge_{o}, " for o in names) + ")",
                       metas="[" + ", ".join(f"meta_{o}" for o in names) + "]")
    # (the operands' own names are read again for the edges: a and b still hold them)
    return accept + compute + RESULT.format(edges=edges, save=save, node=node)


def render_dispatch() -> str:
    """The source of `dispatch` (see the module docstring)."""
    return DISPATCH.format(binary=_indent(_arity_branch(2), 2), unary=_indent(_arity_branch(1), 1))


def render_make_node() -> str:
    """The source of `make_node` (see the module docstring)."""
    edge = _indent(EDGE.format(o="o", k="", is_tensor="isinstance(o, Tensor)", load="data = o._data\n    ",
                               data="data", dtype="data.dtype"), 2)
    save = _indent(SAVE.format(n="n", operands="operands", is_tensor_o="isinstance(o, Tensor)"), 1)
    node = _indent(NODE.format(operands="operands", edges="tuple(edges)", metas="metas"), 1)
    return MAKE_NODE.format(edge=edge, save=save, node=node)


SOURCES: dict[str, str] = {}


def define(name: str, source: str, namespace: dict[str, Any], label: str | None = None) -> Any:
    """Compile and run `source` (one `def name`) in `namespace` (the module globals the code
    reads, as if written there) and return the function; the text stays readable by
    linecache for tracebacks. `label` (default `name`) names the text in SOURCES and in the
    file name (`Node.apply`: the backward engine's renderings, eager.autograd.graph)."""
    # (a name under eager/ that is no file: static's user_location and warnings' stacklevel
    # count the frame as graphmode's, and linecache serves the text)
    label = label or name
    filename = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"_fast_path.py <rendered {label}>")
    SOURCES[label] = source
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102  (our own template, no outside text)
    return namespace[name]
