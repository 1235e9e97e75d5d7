"""One direction of an nn.GRU layer over a whole sequence as one autograd node.

Why: nn.GRU ran its time loop as T fused cell nodes (nn/_fused_cells.py), each step also
selecting x[t] (a view node, whose backward scatters into a zero array the size of the whole
sequence) and stacking the T states at the end (another node): about 60-80 us of eager's
per-op machinery a step around a cell whose arithmetic takes 100-200 us. Here the input
products of every step are one batched product, the steps run the GRU cell's native gate
pass (gmnative.cell_kernels) on the arrays, and the backward walks the steps in reverse with
the native gradient pass, the weight and input gradients again as batched products: one node
for the sequence, as PyTorch's CPU GRU computes the input products of the layer at once.

It runs where the fused cell runs (plain eager tensors over NumPy float32/float64 arrays of
one dtype, no dispatch mode or trace) with eager's native kernels available, for a (T, N, E)
sequence; anything else takes the step-by-step loop. A backward that records a graph
(create_graph=True) recomputes the steps op by op and differentiates them (higher
derivatives stay exact).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dispatch
from .. import _functional as _F
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function
from ._fused_cells import _cell_kernels, _grads_by_recompute, _mm

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def eligible(x: Any, h: Any, *params: Any) -> bool:
    """Whether the fused GRU layer may run on the sequence x (T, N, E) from the state h (N, K)."""
    if _dispatch._n_modes_pushed or type(x) is not Tensor or type(h) is not Tensor:
        return False
    xa, ha = x._data, h._data
    if type(xa) is not np.ndarray or type(ha) is not np.ndarray or xa.ndim != 3 or ha.ndim != 2:
        return False
    dt = xa.dtype
    if dt not in _FLOATS or ha.dtype != dt or xa.shape[0] == 0 or xa.shape[1] == 0:
        return False
    for p in params:
        if p is not None and (not isinstance(p, Tensor) or type(p._data) is not np.ndarray or p._data.dtype != dt):
            return False
    return _cell_kernels() is not None


def _steps_ops(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
               reverse: bool) -> tuple:
    """The layer op by op (what a graph-recording backward differentiates): (states, last)."""
    from .rnn import _gru_cell_ops  # noqa: PLC0415

    seq: list = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h = _gru_cell_ops(x[t], h, w_ih, w_hh, b_ih, b_hh)
        seq[t] = h
    return _F.stack(seq, 0), h


class GRULayerFunction(Function):
    """(states (T, N, K), last state (N, K)) of one GRU direction over x (T, N, E) from h0;
    `reverse` runs the steps from the last."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, h0: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                b_hh: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor]:
        native = _cell_kernels()
        X = np.ascontiguousarray(x._data)
        H0 = np.ascontiguousarray(h0._data)
        Wi, Wh = w_ih._data, w_hh._data
        steps, n, k = X.shape[0], X.shape[1], Wh.shape[1]
        zero = None if b_ih is not None and b_hh is not None else np.zeros(3 * k, X.dtype)
        Bi = zero if b_ih is None else np.ascontiguousarray(b_ih._data)
        Bh = zero if b_hh is None else np.ascontiguousarray(b_hh._data)
        gi = np.matmul(Wi, X.transpose(0, 2, 1))  # (T, 3K, N): every step's input product at once
        states = np.empty((steps, n, k), X.dtype)
        saved: list = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        h = H0
        for t in order:
            done = native.gru_cell(gi[t], _mm(Wh, h.T), Bi, Bh, h)
            if done is None:
                raise RuntimeError(f"GRU: the fused layer's native gate pass could not run on {X.dtype} arrays "
                                   f"(batch {n}, hidden {k}); check `eligible` first")
            states[t] = done[0]
            saved[t] = done[1]
            h = states[t]
        ctx.save_for_backward(x, h0, w_ih, w_hh, b_ih, b_hh)
        ctx.arrays = (X, H0, states, saved, order)
        ctx.reverse = reverse
        last = states[order[-1]]
        return Tensor._make(states.copy()), Tensor._make(last.copy())  # (the outputs are the caller's)

    @staticmethod
    def backward(ctx: Any, g_states: Tensor, g_last: Tensor) -> tuple:
        if STATE.enabled:
            def steps_ops(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                          b_hh: Tensor | None) -> tuple:
                return _steps_ops(x, h, w_ih, w_hh, b_ih, b_hh, ctx.reverse)

            return _grads_by_recompute(ctx, steps_ops, (g_states, g_last)) + (None,)
        native = _cell_kernels()
        _, _, w_ih, w_hh, b_ih, b_hh = ctx.saved_tensors
        X, H0, states, saved, order = ctx.arrays
        Wi, Wh = w_ih._data, w_hh._data
        G = g_states._data
        dh = np.array(g_last._data, dtype=X.dtype, copy=True)
        steps, n, k = X.shape[0], X.shape[1], Wh.shape[1]
        # every step's pre-activation gradients, (3K, T, N): the weight and input gradients are
        # then one product each over all the steps (T * N rows deep) instead of T small ones
        # and their sums
        dgi = np.empty((3 * k, steps, n), X.dtype)
        dgh = np.empty((3 * k, steps, n), X.dtype)
        h_prev_all = np.empty((steps, n, k), X.dtype)  # the state each step started from
        dbi = np.zeros(3 * k, X.dtype)
        dbh = np.zeros(3 * k, X.dtype)
        previous = {t: (order[i - 1] if i else None) for i, t in enumerate(order)}
        for t in reversed(order):
            before = previous[t]
            h_prev = H0 if before is None else states[before]
            got = native.gru_cell_backward(np.ascontiguousarray(G[t] + dh), h_prev, saved[t])
            dgi_t, dgh_t, gz, dbi_t, dbh_t = got
            dgi[:, t] = dgi_t
            dgh[:, t] = dgh_t
            h_prev_all[t] = h_prev
            dbi += dbi_t
            dbh += dbh_t
            dh = _mm(dgh_t.T, Wh)
            dh += gz
        needs = ctx.needs_input_grad
        rows = steps * n
        dgi2 = dgi.reshape(3 * k, rows)
        return (Tensor._make(_mm(dgi2.T, Wi).reshape(X.shape)) if needs[0] else None,
                Tensor._make(dh) if needs[1] else None,
                Tensor._make(_mm(dgi2, X.reshape(rows, X.shape[2]))) if needs[2] else None,
                Tensor._make(_mm(dgh.reshape(3 * k, rows), h_prev_all.reshape(rows, k))) if needs[3] else None,
                Tensor._make(dbi) if b_ih is not None and needs[4] else None,
                Tensor._make(dbh) if b_hh is not None and needs[5] else None,
                None)


def gru_layer(x: Tensor, h0: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
              reverse: bool) -> tuple[Tensor, Tensor]:
    """(states, last state) of one GRU direction (call only when `eligible`)."""
    return GRULayerFunction.apply(x, h0, w_ih, w_hh, b_ih, b_hh, reverse)
