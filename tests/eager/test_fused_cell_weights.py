"""The fused GRU cell (nn/_fused_cells.py) reads its weights afresh at every call: every way
of changing a weight, through eager or (gradcheck's perturbations) into its array, is seen at
the next call. (A transposed copy kept between calls was tried: gradcheck's in-place
perturbations left it stale.)"""
import numpy as np
import pytest

import eager
from eager.nn import _fused_cells
from eager.nn.rnn import _gru_cell_ops


def _check(cell, x, h):
    got = cell(x, h)
    want = _gru_cell_ops(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def _edits(cell):
    def step():
        opt = eager.optim.SGD(cell.parameters(), lr=0.5)
        cell(eager.randn(4, 3), eager.randn(4, 5)).sum().backward()
        opt.step()

    def data_mul():
        cell.weight_ih.data.mul_(2.0)

    def copy():
        with eager.no_grad():
            cell.weight_hh.copy_(eager.randn(*cell.weight_hh.shape))

    def rebind():
        cell.weight_ih.data = eager.randn(*cell.weight_ih.shape)

    def load():
        state = {k: v * 0.5 for k, v in cell.state_dict().items()}
        cell.load_state_dict(state)

    def init():
        eager.nn.init.normal_(cell.weight_hh)

    return {"optimizer step": step, ".data.mul_": data_mul, "copy_": copy, ".data =": rebind,
            "load_state_dict": load, "init": init}


@pytest.mark.parametrize("edit", list(_edits(eager.nn.GRUCell(3, 5))))
def test_gru_cell_sees_each_weight_edit(edit):
    eager.manual_seed(0)
    cell = eager.nn.GRUCell(3, 5)
    x, h = eager.randn(4, 3), eager.randn(4, 5)
    assert _fused_cells.eligible(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    _check(cell, x, h)
    _edits(cell)[edit]()
    _check(cell, x, h)


def test_gru_cell_gradients_through_the_kept_weights():
    eager.manual_seed(1)
    cell = eager.nn.GRUCell(3, 4).double()
    x = eager.randn(2, 3, dtype=eager.float64, requires_grad=True)
    h = eager.randn(2, 4, dtype=eager.float64, requires_grad=True)
    args = (x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    assert eager.autograd.gradcheck(lambda *a: _fused_cells.node_apply(_fused_cells.GRUCellFunction, *a), args)
