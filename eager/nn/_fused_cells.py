"""GRU and LSTM cells as one autograd node each, computed on the NumPy arrays.

Why: written with ops, a GRU cell is about 15 ops forward and 30 backward, each with eager's
per-op cost (dispatch, a graph node, its saved tensors: 10-20 us), on arrays of a few
thousand elements where the arithmetic itself takes 1-2 us. A GRU-cell training step was
2.4x PyTorch's time for that reason alone. Here the cell is one node: its forward is the
same arithmetic on the arrays (two products, the gates), its backward the gradient formulas
written out (four products, the gates' derivatives), a few dozen NumPy calls and no graph.

The op-by-op cell (nn/rnn.py) still runs wherever this cannot: a traced step (static records
ops), a dispatch mode, a CUDA or non-float tensor, unbatched or mixed-dtype input. A backward
that records a graph (create_graph=True) recomputes the op-by-op cell on the saved inputs and
differentiates that, so higher derivatives stay exact.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gmops import REGISTRY

from .. import _dispatch
from .._fused_node import attach
from .._grad_mode import STATE, enable_grad
from .._tensor import Tensor
from ..autograd.anomaly import capture_stack
from ..autograd.function import Function, FunctionCtx

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_sigmoid = REGISTRY["sigmoid"].forward  # the op's own forward: the same bits as the op-by-op cell
_tanh = REGISTRY["tanh"].forward


def eligible(x: Any, h: Any, *params: Any) -> bool:
    """Whether the fused cell may run: plain eager tensors over NumPy arrays of one float dtype,
    a batch of rows (2-d input and state), no dispatch mode and no trace."""
    if _dispatch._n_modes_pushed or type(x) is not Tensor or type(h) is not Tensor:
        return False
    xa = x._data
    if type(xa) is not np.ndarray or xa.ndim != 2 or xa.dtype not in _FLOATS:
        return False
    dt = xa.dtype
    ha = h._data
    if type(ha) is not np.ndarray or ha.ndim != 2 or ha.dtype is not dt:
        return False
    for p in params:
        if p is None:
            continue
        if not isinstance(p, Tensor) or type(p._data) is not np.ndarray or p._data.dtype is not dt:
            return False
    return True


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    out = x @ w.T
    if b is not None:
        out += b
    return out


def _linear_t(x: np.ndarray, w: Tensor, b: np.ndarray | None) -> np.ndarray:
    """x @ w.T (+ b), computed as (w @ x.T).T.

    Why: OpenBLAS multiplies `X @ W.T` with a batch of 32 rows 1.5-2x slower than the same
    product with neither operand transposed in memory; `W @ X.T` reads W as it lies (the
    small X is the transposed operand) and gives the result as a transposed view, which the
    elementwise gate arithmetic reads at no extra cost. (A transposed copy of W kept between
    calls would be faster still, but a write into the array that bypasses eager, such as
    gradcheck's perturbations, would leave it stale.)"""
    out = (w._data @ x.T).T
    if b is not None:
        out += b
    return out


_native_cells: Any = None


def _cell_kernels() -> Any:
    """gmnative.cell_kernels (the GRU gates' native passes), imported on first use; None where
    eager's native kernels are switched off or cannot be built (the NumPy code runs then)."""
    global _native_cells
    if _native_cells is None:
        try:
            import gmnative.cell_kernels as module  # noqa: PLC0415

            _native_cells = module
        except ImportError:  # a partial install: NumPy code only
            _native_cells = False
    return _native_cells if _native_cells and _native_cells._kernels.kernels() is not None else None


_split_matmul: Any = None


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for the cells' products, split by rows across the kernels' threads where that
    pays (gmnative.kernels.matmul: a product of 2**20 multiply-adds or more, two or more free
    cores, BLAS on one thread of its own), else NumPy's.

    Why: with default settings BLAS runs one thread here (gmbase.threads: the kernels own the
    parallelism), so a GRU cell's products (a 384 x 128 weight against a batch of 32: 1.6M
    multiply-adds, 40-60 us each, five of them a time step forward and back) ran on one core
    while PyTorch's run on both; they are most of a GRU-cell training step."""
    global _split_matmul
    split = _split_matmul
    if split is None:
        kernels = _cell_kernels()
        split = _split_matmul = kernels._kernels.matmul if kernels is not None else False
    if split:
        out = split(a, b)
        if out is not None:
            return out
    return a @ b


def _arrays(*tensors: Any) -> list:
    return [None if t is None else t._data for t in tensors]


def _grads_by_recompute(ctx: Any, cell: Any, grads: tuple) -> tuple:
    """create_graph=True: differentiate the op-by-op cell on the saved inputs (so the
    gradients are themselves differentiable)."""
    from .. import autograd  # noqa: PLC0415

    inputs = ctx.saved_tensors
    with enable_grad():
        out = cell(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        wanted = [i for i, t in enumerate(inputs) if t is not None and ctx.needs_input_grad[i]]
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        got = autograd.grad([o for o, _ in pairs], [inputs[i] for i in wanted], [g for _, g in pairs],
                            create_graph=True, allow_unused=True)
    result: list = [None] * len(inputs)
    for i, g in zip(wanted, got):
        result[i] = g
    return tuple(result)


class FusedCtx(FunctionCtx):
    """The backward node of a fused Function (the cells, the loss's log_softmax and nll): a
    FunctionCtx with the same attributes and behaviour, made and run with less per-node work.

    Why: a GRU-cell training step runs some fifty such nodes (the cell, log_softmax and the
    loss at each of 16 time steps); FunctionCtx's general construction (a generator per
    input, a Size per shape) and apply (gradient materialization, count and shape checks of
    what an arbitrary user backward returns) cost 6-8 us a node, a tenth of the step's Python.
    These backwards return one gradient per input, of its shape, by construction; a node of
    several outputs, or one reached with no gradient, takes FunctionCtx.apply as before."""

    def __init__(self, fn_cls: Any, inputs: tuple) -> None:
        self._cls = fn_cls
        needs: list[bool] = []
        meta: list[tuple[tuple[Any, ...], Any] | None] = []
        for i in inputs:
            data = getattr(i, "_data", None)
            if data is None:
                needs.append(False)
                meta.append(None)
            else:
                needs.append(bool(i._requires_grad))
                meta.append((data.shape, i.dtype))
        self.needs_input_grad = tuple(needs)
        self._in_meta = meta
        self._saved = None
        self._freed = False
        self._non_diff = set()
        self.next_functions = ()
        self._hooks = None
        self._out_meta = []
        self._trace = capture_stack() if STATE.anomaly else None
        self.materialize_grads = True

    def apply(self, grads: list) -> list:
        if len(grads) != 1 or grads[0] is None:
            return FunctionCtx.apply(self, grads)
        result = self._cls.backward(self, grads[0])
        needs = self.needs_input_grad
        return [g if needs[i] else None for i, g in enumerate(result)]


def node_apply(fn: Any, *args: Any) -> Tensor:
    """`fn.apply(*args)` for a fused Function whose forward computes one float output on the
    arrays and builds it with Tensor._make: the same node (its ctx class, next_functions,
    output metadata), without apply's general machinery (no no_grad block, no re-wrapping or
    re-saving of the output), about half the cost of a small forward. Its callers run it on
    plain eager tensors only (a tracer value takes the op path), as the ops would run."""
    ctx_cls = fn.__dict__.get("_ctx_class")
    if ctx_cls is None:  # the class apply would make (and cache) for this Function
        ctx_cls = type(f"{fn.__name__}Backward", (FusedCtx,), {"__module__": fn.__module__})
        fn._ctx_class = ctx_cls
    ctx = ctx_cls(fn, args)
    record = STATE.enabled and True in ctx.needs_input_grad  # (what the ctx read: no second pass)
    out = fn.forward(ctx, *args)
    return attach(out, ctx, args, out._data.shape) if record else out


def _bias_grad(d: np.ndarray, b: Any, needed: bool) -> Tensor | None:
    return Tensor._make(d.sum(0)) if b is not None and needed else None


class GRUCellFunction(Function):
    """h' = (1 - z) * n + z * h with PyTorch's gates r, z, n (see nn.GRUCell)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                b_hh: Tensor | None) -> Tensor:
        X, H, Bi, Bh = _arrays(x, h, b_ih, b_hh)
        ctx.save_for_backward(x, h, w_ih, w_hh, b_ih, b_hh)
        native = _cell_kernels()
        if native is not None:  # the products transposed (see _linear_t), the gates in one native pass
            gi, gh = _mm(w_ih._data, X.T), _mm(w_hh._data, H.T)
            zero = None if Bi is not None and Bh is not None else np.zeros(gi.shape[0], gi.dtype)
            done = native.gru_cell(gi, gh, zero if Bi is None else Bi, zero if Bh is None else Bh, H)
            if done is not None:
                ctx.gates = None
                ctx.native_gates = done[1]
                return Tensor._make(done[0])
            gi, gh = gi.T, gh.T
            if Bi is not None:
                gi = gi + Bi
            if Bh is not None:
                gh = gh + Bh
        else:
            gi, gh = _linear_t(X, w_ih, Bi), _linear_t(H, w_hh, Bh)
        k = H.shape[1]
        rz = _sigmoid(np, gi[:, :2 * k] + gh[:, :2 * k])  # both gates in one call (elementwise: the same bits)
        r, z = rz[:, :k], rz[:, k:]
        hn = gh[:, 2 * k:]
        n = _tanh(np, gi[:, 2 * k:] + r * hn)
        out = (1.0 - z) * n + z * H
        ctx.gates = (r, z, n, hn)
        return Tensor._make(out.astype(X.dtype, copy=False))

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        if STATE.enabled:
            from .rnn import _gru_cell_ops  # noqa: PLC0415

            return _grads_by_recompute(ctx, _gru_cell_ops, (g,))
        x, h, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        X, H, Wi, Wh = _arrays(x, h, w_ih, w_hh)
        needs = ctx.needs_input_grad
        if ctx.gates is None:  # the forward's native pass: its gradients in one more
            got = _cell_kernels().gru_cell_backward(np.ascontiguousarray(g._data), H, ctx.native_gates)
            if got is not None:
                dgi_t, dgh_t, gz, dbi, dbh = got  # (3K, B): the products' operands read transposed
                dh_arr = None
                if needs[1]:
                    dh_arr = _mm(dgh_t.T, Wh)
                    dh_arr += gz
                return (Tensor._make(_mm(dgi_t.T, Wi)) if needs[0] else None,
                        None if dh_arr is None else Tensor._make(dh_arr),
                        Tensor._make(_mm(dgi_t, X)) if needs[2] else None,
                        Tensor._make(_mm(dgh_t, H)) if needs[3] else None,
                        Tensor._make(dbi) if b_ih is not None and needs[4] else None,
                        Tensor._make(dbh) if b_hh is not None and needs[5] else None)
            r, z, n, hn = np.moveaxis(ctx.native_gates, 2, 1)
        else:
            r, z, n, hn = ctx.gates
        G = g._data
        k = H.shape[1]
        # the gates' gradients written straight into their columns of dgi (no concatenation)
        dgi = np.empty((G.shape[0], 3 * k), np.result_type(G, n))
        dpre_r, dpre_z, dpre_n = dgi[:, :k], dgi[:, k:2 * k], dgi[:, 2 * k:]
        np.multiply(G * (1.0 - z), 1.0 - n * n, out=dpre_n)
        np.multiply(G * (H - n), z * (1.0 - z), out=dpre_z)
        np.multiply(dpre_n * hn, r * (1.0 - r), out=dpre_r)
        dgh = dgi.copy()
        np.multiply(dpre_n, r, out=dgh[:, 2 * k:])
        dx = Tensor._make(dgi @ Wi) if needs[0] else None
        dh = Tensor._make(dgh @ Wh + G * z) if needs[1] else None
        dwi = Tensor._make(dgi.T @ X) if needs[2] else None
        dwh = Tensor._make(dgh.T @ H) if needs[3] else None
        return dx, dh, dwi, dwh, _bias_grad(dgi, b_ih, needs[4]), _bias_grad(dgh, b_hh, needs[5])


class LSTMCellFunction(Function):
    """(h', c') with PyTorch's gates i, f, g, o (see nn.LSTMCell)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
        X, H, C, Wi, Wh, Bi, Bh = _arrays(x, h, c, w_ih, w_hh, b_ih, b_hh)
        ctx.save_for_backward(x, h, c, w_ih, w_hh, b_ih, b_hh)
        native = _cell_kernels()
        if native is not None:  # the products transposed, the gates in one native pass (as the GRU's)
            gi, gh = _mm(Wi, X.T), _mm(Wh, H.T)
            zero = None if Bi is not None and Bh is not None else np.zeros(gi.shape[0], gi.dtype)
            done = native.lstm_cell(gi, gh, zero if Bi is None else Bi, zero if Bh is None else Bh, C)
            if done is not None:
                ctx.gates = None
                ctx.native_gates = done[2]
                return Tensor._make(done[0]), Tensor._make(done[1])
        gates = _linear(X, Wi, Bi) + _linear(H, Wh, Bh)
        k = H.shape[1]
        i = _sigmoid(np, gates[:, :k])
        f = _sigmoid(np, gates[:, k:2 * k])
        gg = _tanh(np, gates[:, 2 * k:3 * k])
        o = _sigmoid(np, gates[:, 3 * k:])
        c2 = f * C + i * gg
        tc = _tanh(np, c2)
        h2 = o * tc
        ctx.gates = (i, f, gg, o, tc)
        return Tensor._make(h2), Tensor._make(c2)

    @staticmethod
    def backward(ctx: Any, gh: Tensor, gc: Tensor) -> tuple:
        if STATE.enabled:
            from .rnn import _lstm_cell_flat  # noqa: PLC0415

            return _grads_by_recompute(ctx, _lstm_cell_flat, (gh, gc))
        x, h, c, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        X, H, C, Wi, Wh = _arrays(x, h, c, w_ih, w_hh)
        needs = ctx.needs_input_grad
        if ctx.gates is None:  # the forward's native pass: its gradients in one more
            got = _cell_kernels().lstm_cell_backward(np.ascontiguousarray(gh._data), np.ascontiguousarray(gc._data),
                                                     C, ctx.native_gates)
            if got is not None:
                dg_t, dcp_arr, db = got  # (4K, B): the products' operands read transposed
                return (Tensor._make(_mm(dg_t.T, Wi)) if needs[0] else None,
                        Tensor._make(_mm(dg_t.T, Wh)) if needs[1] else None,
                        Tensor._make(dcp_arr) if needs[2] else None,
                        Tensor._make(_mm(dg_t, X)) if needs[3] else None,
                        Tensor._make(_mm(dg_t, H)) if needs[4] else None,
                        Tensor._make(db) if b_ih is not None and needs[5] else None,
                        Tensor._make(db.copy()) if b_hh is not None and needs[6] else None)
            i, f, gg, o, tc = np.moveaxis(ctx.native_gates, 2, 1)
        else:
            i, f, gg, o, tc = ctx.gates
        GH, GC = gh._data, gc._data
        dc = GC + GH * o * (1.0 - tc * tc)
        dgates = np.concatenate((dc * gg * (i * (1.0 - i)), dc * C * (f * (1.0 - f)), dc * i * (1.0 - gg * gg),
                                 GH * tc * (o * (1.0 - o))), axis=1)
        dx = Tensor._make(dgates @ Wi) if needs[0] else None
        dh = Tensor._make(dgates @ Wh) if needs[1] else None
        dcp = Tensor._make(dc * f) if needs[2] else None
        dwi = Tensor._make(dgates.T @ X) if needs[3] else None
        dwh = Tensor._make(dgates.T @ H) if needs[4] else None
        return (dx, dh, dcp, dwi, dwh, _bias_grad(dgates, b_ih, needs[5]), _bias_grad(dgates, b_hh, needs[6]))
