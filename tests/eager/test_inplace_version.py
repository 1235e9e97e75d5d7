"""Version counters and in-place ops: bumps, sharing with views, detection of modified saved
tensors, the leaf rule, and gradients through in-place updates."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager
from eager.autograd import grad

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."


def _f64(values, rg=True):
    return eager.tensor(np.asarray(values, dtype=np.float64), requires_grad=rg)


# -- version counters ------------------------------------------------------------------------------
def test_in_place_ops_bump_the_version():
    x = eager.zeros(3)
    assert x._version == 0
    x.add_(1)
    x.mul_(2)
    x.sub_(1)
    x.div_(2)
    assert x._version == 4
    x.zero_()
    x.fill_(3.0)
    x.copy_(eager.ones(3))
    x += 1
    x[0] = 5.0
    assert x._version == 9
    assert x.tolist() == [5.0, 2.0, 2.0]
    y = x + 1  # out of place: a new tensor at version 0, x untouched
    assert y._version == 0 and x._version == 9


def test_views_share_the_version_counter_and_memory():
    x = eager.zeros(2, 3)
    views = [x.view(6), x.reshape(3, 2), x.t(), x.transpose(0, 1), x[0], x[:, 1:], x.unsqueeze(0),
             x.T, x.permute(1, 0), x.detach()]
    x.add_(1)
    for v in views:
        assert v._version == 1
    views[0].mul_(3)
    assert x._version == 2 and x.tolist() == [[3.0] * 3] * 2
    x[1] = 7.0
    assert views[4]._version == 3 and views[2].tolist()[0] == [3.0, 7.0]
    c = x.clone()
    assert c._version == 0
    x.add_(1)
    assert c._version == 0 and c.tolist()[0] == [3.0, 3.0, 3.0]


def test_advanced_indexing_copies_and_has_its_own_counter():
    x = eager.zeros(4)
    y = x[eager.tensor([0, 2])]
    y.add_(1)
    assert x.tolist() == [0.0] * 4 and x._version == 0 and y._version == 1


# -- saved tensors modified in place --------------------------------------------------------------------
def test_modifying_a_saved_output_is_detected():
    x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 "
        "instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with torch.autograd.set_detect_anomaly(True).")
    assert x.grad is None


def test_modifying_a_saved_input_names_its_current_grad_fn():
    a = eager.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "[torch.FloatTensor [2]], which is output 0 of AddBackward0, is at version 1; expected version 0 "
            "instead.")):
        c.sum().backward()


def test_modifying_a_saved_leaf_under_no_grad_is_detected():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    x = eager.tensor([3.0, 4.0], requires_grad=True)
    y = (w * x).sum()
    with eager.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "modified by an inplace operation: [torch.FloatTensor [2]], is at version 1; expected version 0")):
        y.backward()


def test_modifying_a_saved_tensor_through_a_view_is_detected():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    s = x.sigmoid()
    with eager.no_grad():
        s.view(2, 1).mul_(2)
    with pytest.raises(RuntimeError, match="which is output 0 of SigmoidBackward0, is at version 1"):
        s.sum().backward()


def test_modifying_a_tensor_nobody_saved_is_fine():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x + 1  # add saves nothing
    y.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_anomaly_mode_changes_the_hint():
    x = eager.tensor([1.0], requires_grad=True)
    with eager.autograd.set_detect_anomaly(True):
        y = x.exp()
        y.add_(1)
        with pytest.raises(RuntimeError, match="Good luck!"):
            y.backward()
    assert not eager.autograd.anomaly.is_anomaly_enabled()


# -- the leaf rule -------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda w: w.add_(1), lambda w: w.mul_(2), lambda w: w.sub_(1), lambda w: w.div_(2), lambda w: w.zero_(),
    lambda w: w.fill_(1.0), lambda w: w.copy_(eager.ones(2)), lambda w: w.__iadd__(1),
    lambda w: w.__setitem__(0, 3.0), lambda w: w.exp_(),
])
def test_in_place_on_a_leaf_that_requires_grad_is_refused(op):
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        op(w)
    assert str(info.value) == LEAF
    assert w.tolist() == [1.0, 2.0] and w._version == 0 and w.is_leaf and w.requires_grad


def test_in_place_on_a_view_of_a_leaf_is_refused():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        w[0].mul_(2)
    assert w.tolist() == [1.0, 2.0] and w._version == 0


def test_optimizer_step_under_no_grad():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    lr = 0.1
    with eager.no_grad():
        w -= lr * w.grad
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert w._version == 1
    w.grad.zero_()
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.6, 3.2], rtol=1e-6)


def test_data_attribute_allows_in_place_updates_outside_autograd():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    w.data.mul_(3)
    assert w.tolist() == [3.0, 6.0] and w.requires_grad


# -- gradients through in-place ops --------------------------------------------------------------------
CASES = {
    "add_": (lambda y: y.add_(2.0), lambda y: y + 2.0),
    "add_tensor": (lambda y: y.add_(y.detach() * 0 + 1.5), lambda y: y + 1.5),
    "sub_": (lambda y: y.sub_(0.5), lambda y: y - 0.5),
    "mul_": (lambda y: y.mul_(3.0), lambda y: y * 3.0),
    "div_": (lambda y: y.div_(4.0), lambda y: y / 4.0),
    "iadd": (lambda y: y.__iadd__(1.0), lambda y: y + 1.0),
    "imul": (lambda y: y.__imul__(2.0), lambda y: y * 2.0),
    "isub": (lambda y: y.__isub__(2.0), lambda y: y - 2.0),
    "itruediv": (lambda y: y.__itruediv__(2.0), lambda y: y / 2.0),
    "zero_": (lambda y: y.zero_(), lambda y: y * 0.0),
    "fill_": (lambda y: y.fill_(7.0), lambda y: y * 0.0 + 7.0),
    "tanh_": (lambda y: y.tanh_(), lambda y: y.tanh()),
    "clamp_": (lambda y: y.clamp_(-0.5, 0.5), lambda y: y.clamp(-0.5, 0.5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_in_place_gradients_match_out_of_place(name):
    inplace, outplace = CASES[name]
    xs = [0.3, -1.2, 2.0]
    x1, x2 = _f64(xs), _f64(xs)
    y1 = x1 * x1
    r = inplace(y1)
    assert r is y1 and y1._version == 1
    z1 = (y1 * eager.tensor([1.0, 2.0, 3.0], dtype=eager.float64)).sum()
    z2 = (outplace(x2 * x2) * eager.tensor([1.0, 2.0, 3.0], dtype=eager.float64)).sum()
    assert z1.item() == pytest.approx(z2.item())
    z1.backward()
    z2.backward()
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy(), rtol=1e-12)


def test_in_place_result_takes_the_grad_fn():
    x = eager.tensor([1.0], requires_grad=True)
    y = x * 2
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0" and not y.is_leaf
    y.mul_(y.detach())
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "AddBackward0"


def test_copy_into_a_non_leaf_routes_gradient_to_the_source():
    x = _f64([1.0, 2.0])
    src = _f64([5.0, 6.0])
    y = x * 2
    y.copy_(src * 3)
    (y * y).sum().backward()
    assert x.grad is None or x.grad.tolist() == [0.0, 0.0]
    np.testing.assert_allclose(src.grad.numpy(), 2 * 3 * 3 * np.array([5.0, 6.0]))


def test_copy_into_a_plain_tensor_makes_it_require_grad():
    buf = eager.zeros(2)
    src = eager.tensor([1.0, 2.0], requires_grad=True)
    buf.copy_(src * 2)
    assert buf.requires_grad and buf.grad_fn.name() == "CopyBackwards"
    buf.sum().backward()
    assert src.grad.tolist() == [2.0, 2.0]


def test_setitem_on_a_non_leaf_gradients():
    x = _f64([1.0, 2.0, 3.0])
    v = _f64(10.0)
    y = x * 1.0
    y[1] = v * 2
    assert y.tolist() == [1.0, 20.0, 3.0] and y.grad_fn.name() == "CopySlices"
    (y * eager.tensor([1.0, 2.0, 3.0], dtype=eager.float64)).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 3.0]
    assert v.grad.item() == 4.0


def test_setitem_with_a_mask_and_an_index_tensor():
    x = _f64([1.0, -2.0, 3.0, -4.0])
    y = x * 1.0
    y[y < 0] = 0.0
    assert y.grad_fn.name() == "IndexPutBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0, 0.0]
    z = eager.zeros(4)
    z[eager.tensor([1, 3])] = eager.tensor([5.0, 6.0])
    assert z.tolist() == [0.0, 5.0, 0.0, 6.0]


def test_in_place_on_a_view_of_a_non_leaf_updates_base_and_gradients():
    x = _f64([[1.0, 2.0], [3.0, 4.0]])
    y = x * 1.0
    row = y[0]
    row.mul_(10)
    assert y.tolist() == [[10.0, 20.0], [3.0, 4.0]]
    assert y._version == 1 and row._version == 1
    assert y.grad_fn.name() == "CopySlices"
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[200.0, 400.0], [6.0, 8.0]])


def test_augmented_assignment_on_a_slice():
    x = _f64([1.0, 2.0, 3.0])
    y = x * 2.0
    y[1:] += 1
    y[:, None][0] *= 3
    np.testing.assert_allclose(y.detach().numpy(), [6.0, 5.0, 7.0])
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 6.0 * 6.0, 2 * 5.0 * 2.0, 2 * 7.0 * 2.0])


def test_in_place_gradients_against_finite_differences():
    def f(x):
        y = x * 1.0
        y.mul_(x)
        y[1:] += x[:-1] * 2
        y.sub_(x.sin())
        y.div_(2.0)
        return y

    x = eager.tensor(np.array([0.4, -0.7, 1.3]), requires_grad=True)
    assert eager.autograd.gradcheck(f, (x,))


def test_in_place_with_a_grad_requiring_operand_on_a_plain_tensor():
    acc = eager.zeros(2)
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    acc += w * w
    acc.add_(w)
    assert acc.requires_grad and not acc.is_leaf
    acc.sum().backward()
    assert w.grad.tolist() == [3.0, 5.0]


def test_in_place_int_into_float_and_bad_casts():
    x = eager.zeros(2)
    x.add_(eager.tensor([1, 2]))
    assert x.tolist() == [1.0, 2.0] and x.dtype is eager.float32
    i = eager.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.mul_(1.5)
    assert i.tolist() == [1, 2] and i._version == 0


def test_in_place_shape_must_not_grow():
    x = eager.zeros(3)
    with pytest.raises(RuntimeError, match=re.escape(
            "output with shape [3] doesn't match the broadcast shape [2, 3]")):
        x.add_(eager.ones(2, 3))
    assert x._version == 0


def test_in_place_grad_check_double_backward():
    x = eager.tensor(np.array([0.5, 1.5]), requires_grad=True)

    def f(x):
        y = x.sin()
        y.mul_(x)  # mul_ needs the old value of y: it is kept, as PyTorch keeps original_self
        return y

    assert eager.autograd.gradgradcheck(f, (x,))
    (g,) = grad(f(x).sum(), x)
    xs = np.array([0.5, 1.5])
    np.testing.assert_allclose(g.numpy(), np.cos(xs) * xs + np.sin(xs))


def test_in_place_on_an_output_that_its_op_saved_is_an_error_as_in_pytorch():
    x = eager.tensor([0.5], requires_grad=True)
    y = x.exp()
    y.mul_(x)
    with pytest.raises(RuntimeError, match="which is output 0 of ExpBackward0, is at version 1"):
        y.backward()


def test_writing_a_grad_requiring_value_into_a_slice_of_a_plain_buffer():
    buf = eager.zeros(4)
    src = eager.tensor([1.0, 2.0], requires_grad=True)
    buf[1:3] = src * 3
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    assert buf.tolist() == [0.0, 3.0, 6.0, 0.0]
    (buf * eager.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert src.grad.tolist() == [6.0, 9.0]
