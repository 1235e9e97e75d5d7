"""F.layer_norm with weight and bias is one fused op (layer_norm) whose gradient is one op
(layer_norm_backward): values and gradients as PyTorch's, double backward and static autodiff
against finite differences."""
import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import eager.nn.functional as F
import static
from eager.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")


def _inputs(shape, nshape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(nshape).astype(dtype)
    b = rng.standard_normal(nshape).astype(dtype)
    return x, w, b


def test_layer_norm_with_affine_parameters_is_one_op_with_one_gradient_op():
    x, w, b = (eager.tensor(a, requires_grad=True) for a in _inputs((2, 3, 4), (4,)))
    out = F.layer_norm(x, (4,), w, b)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    assert out.grad_fn.next_functions[0][0] is not None


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12), (np.float16, 2e-3)])
@pytest.mark.parametrize("shape,nshape", [((4, 6, 16), (16,)), ((3, 5, 7), (5, 7))])
def test_layer_norm_values_and_gradients_match_pytorch(dtype, tol, shape, nshape):
    arrays = _inputs(shape, nshape, dtype)
    g = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    ours = [eager.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = F.layer_norm(ours[0], nshape, ours[1], ours[2], eps=1e-5)
    ref = torch.nn.functional.layer_norm(theirs[0], nshape, theirs[1], theirs[2], eps=1e-5)
    assert out.dtype == getattr(eager, str(ref.dtype).split(".")[1])
    np.testing.assert_allclose(out.detach().numpy().astype(np.float64), ref.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol * 10)
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        scale = max(1.0, float(np.abs(t.grad.numpy().astype(np.float64)).max()))
        np.testing.assert_allclose(o.grad.numpy().astype(np.float64), t.grad.numpy().astype(np.float64),
                                   rtol=tol * 10, atol=tol * 10 * scale)


def test_layer_norm_gradients_and_second_order_against_finite_differences():
    x, w, b = (eager.tensor(a, requires_grad=True) for a in _inputs((3, 2, 5), (2, 5)))
    fn = lambda x, w, b: F.layer_norm(x, (2, 5), w, b, eps=1e-3)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_layer_norm_backward_of_a_non_contiguous_input():
    x, w, b = _inputs((5, 4), (5,))
    xt = eager.tensor(x, requires_grad=True)
    assert gradcheck(lambda x: F.layer_norm(x.t(), (5,), eager.tensor(w), eager.tensor(b)), (xt,))


def test_static_grad_of_layer_norm_and_its_second_order_match_finite_differences():
    x, w, b = _inputs((3, 6), (6,), seed=3)
    c = np.random.default_rng(4).standard_normal((3, 6))

    def loss(x, w, b):
        return (F.layer_norm(x, (6,), w, b) ** 3 * eager.tensor(c)).sum()

    def value(xa):
        return float(loss(eager.tensor(xa), eager.tensor(w), eager.tensor(b)))

    gx, gw, gb = static.grad(loss, argnums=(0, 1, 2))(eager.tensor(x), eager.tensor(w), eager.tensor(b))
    np.testing.assert_allclose(gx.numpy(), central_difference_grad(value, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), central_difference_grad(
        lambda wa: float(loss(eager.tensor(x), eager.tensor(wa), eager.tensor(b))), w), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb.numpy(), central_difference_grad(
        lambda ba: float(loss(eager.tensor(x), eager.tensor(w), eager.tensor(ba))), b), rtol=1e-6, atol=1e-7)

    # second order: the gradient of sum(d loss / dx * v) with respect to x
    v = np.random.default_rng(5).standard_normal((3, 6))

    def directional(x):
        g = static.grad(loss)(x, eager.tensor(w), eager.tensor(b))
        return (g * eager.tensor(v)).sum()

    hv = static.grad(directional)(eager.tensor(x))
    expected = central_difference_grad(lambda xa: float(directional(eager.tensor(xa))), x, eps=1e-5)
    np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_layer_norm_refuses_a_weight_of_the_wrong_shape():
    x, w, b = (eager.tensor(a) for a in _inputs((2, 5), (5,)))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(x, (5,), eager.tensor(np.ones(1)), b)
