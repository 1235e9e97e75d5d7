"""static.vjp and static.jvp: JAX's conventions (a tuple of cotangents per primal, pytrees,
has_aux, its error types), checked against finite differences, static.grad, eager's
autograd and torch.func when PyTorch is installed; inside a trace they record into it."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from static import entry as entry_module

RNG = np.random.default_rng(0)
X = RNG.standard_normal(4)
Y = RNG.standard_normal(4)


def f(x, y):
    """A non-scalar function of two arguments (R^4 x R^4 -> R^3)."""
    z = eager.tanh(x) * y + x * x
    return eager.stack([z.sum(), (z * y).sum(), eager.sin(x[:2]).prod()])


def _jacobian_fd(fn, args, i, eps=1e-6):
    """d fn / d args[i] by central differences, as a (numel out, numel in) matrix."""
    base = np.asarray(fn(*args), np.float64).ravel()
    cols = []
    for k in range(args[i].size):
        step = np.zeros_like(args[i])
        step.flat[k] = eps
        hi = [a + step if j == i else a for j, a in enumerate(args)]
        lo = [a - step if j == i else a for j, a in enumerate(args)]
        cols.append((np.asarray(fn(*hi)).ravel() - np.asarray(fn(*lo)).ravel()) / (2 * eps))
    return np.stack(cols, axis=1).reshape(base.size, -1)


def _eager_f(*arrays):
    return f(*(eager.tensor(a) for a in arrays)).numpy()


# -- values ---------------------------------------------------------------------------------------

def test_vjp_returns_the_value_and_a_tuple_of_cotangents_matching_finite_differences():
    out, vjp_fn = static.vjp(f, X, Y)
    np.testing.assert_allclose(out, _eager_f(X, Y), rtol=1e-12)
    u = np.array([0.3, -1.2, 2.0])
    cts = vjp_fn(u)
    assert isinstance(cts, tuple) and len(cts) == 2
    for i in range(2):
        np.testing.assert_allclose(cts[i], u @ _jacobian_fd(_eager_f, [X, Y], i), rtol=1e-6, atol=1e-8)


def test_jvp_matches_finite_differences_and_agrees_with_vjp():
    tx, ty = RNG.standard_normal(4), RNG.standard_normal(4)
    out, tangent = static.jvp(f, (X, Y), (tx, ty))
    np.testing.assert_allclose(out, _eager_f(X, Y), rtol=1e-12)
    expected = _jacobian_fd(_eager_f, [X, Y], 0) @ tx + _jacobian_fd(_eager_f, [X, Y], 1) @ ty
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)
    # <J t, u> == <t, J^T u>: forward and reverse mode are transposes of each other
    u = RNG.standard_normal(3)
    gx, gy = static.vjp(f, X, Y)[1](u)
    assert float(tangent @ u) == pytest.approx(float(tx @ gx + ty @ gy), rel=1e-12)


def test_vjp_of_a_scalar_function_with_cotangent_one_is_static_grad():
    def loss(x, y):
        return (eager.tanh(x) * y).sum()

    _, vjp_fn = static.vjp(loss, X, Y)
    gx, gy = vjp_fn(1.0)
    ref = static.grad(loss, argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, ref[0], rtol=1e-14)
    np.testing.assert_allclose(gy, ref[1], rtol=1e-14)


def test_vjp_and_jvp_equal_eager_autograd():
    x = eager.tensor(X, requires_grad=True)
    y = eager.tensor(Y, requires_grad=True)
    u = eager.tensor([0.5, -2.0, 1.5], dtype=eager.float64)
    ex, ey = eager.autograd.grad(f(x, y), (x, y), grad_outputs=u)
    out, vjp_fn = static.vjp(f, eager.tensor(X), eager.tensor(Y))
    assert isinstance(out, eager.Tensor)
    gx, gy = vjp_fn(u)
    assert isinstance(gx, eager.Tensor) and gx.dtype is eager.float64
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), ey.numpy(), rtol=1e-12)
    # the jvp along a basis vector is a column of the Jacobian: eager's grads of each output
    e0 = np.eye(4)[0]
    _, col = static.jvp(f, (eager.tensor(X), eager.tensor(Y)), (eager.tensor(e0), eager.zeros(4, dtype=eager.float64)))
    rows = [eager.autograd.grad(f(x, y)[k], x)[0].numpy()[0] for k in range(3)]
    np.testing.assert_allclose(col.numpy(), rows, rtol=1e-12)


def test_float32_results_keep_float32():
    x32, t32 = X.astype(np.float32), np.ones(4, np.float32)
    out, tangent = static.jvp(lambda a: eager.exp(a) * a, (x32,), (t32,))
    assert out.dtype == np.float32 and tangent.dtype == np.float32
    np.testing.assert_allclose(tangent, np.exp(x32) * (x32 + 1), rtol=1e-5)
    (g,) = static.vjp(lambda a: eager.exp(a).sum(), x32)[1](np.float32(2.0))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.exp(x32), rtol=1e-5)


# -- pytrees and has_aux --------------------------------------------------------------------------

def test_pytree_primals_and_outputs():
    def model(params, x):
        h = eager.tanh(x @ params["w"] + params["b"][0])
        return {"h": h, "total": h.sum()}

    params = {"w": RNG.standard_normal((4, 3)), "b": [RNG.standard_normal(3)]}
    out, vjp_fn = static.vjp(model, params, X)
    assert set(out) == {"h", "total"}
    ct = {"h": np.ones(3), "total": 2.0}
    g_params, g_x = vjp_fn(ct)
    assert set(g_params) == {"w", "b"} and isinstance(g_params["b"], list) and g_x.shape == (4,)
    # the same through eager
    w = eager.tensor(params["w"], requires_grad=True)
    b = eager.tensor(params["b"][0], requires_grad=True)
    x = eager.tensor(X, requires_grad=True)
    r = model({"w": w, "b": [b]}, x)
    (r["h"].sum() + 2.0 * r["total"]).backward()
    np.testing.assert_allclose(g_params["w"], w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_params["b"][0], b.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g_x, x.grad.numpy(), rtol=1e-12)
    # jvp: tangents structured like the primals, the tangent out like the output
    t_params = {"w": np.zeros((4, 3)), "b": [np.zeros(3)]}
    _, t_out = static.jvp(model, (params, X), (t_params, np.eye(4)[1]))
    assert set(t_out) == {"h", "total"}
    np.testing.assert_allclose(t_out["total"], g_x[1] / 3, rtol=1e-12)  # d total/dx1 = (d h/dx1).sum(); g_x = 3x that


def test_has_aux():
    def fn(x):
        y = eager.sin(x)
        return y * 2, {"mean": y.mean(), "tag": "aux"}

    out, vjp_fn, aux = static.vjp(fn, X, has_aux=True)
    np.testing.assert_allclose(out, 2 * np.sin(X))
    assert aux["tag"] == "aux" and float(aux["mean"]) == pytest.approx(np.sin(X).mean())
    (g,) = vjp_fn(np.ones(4))
    np.testing.assert_allclose(g, 2 * np.cos(X))
    out2, tangent, aux2 = static.jvp(fn, (X,), (np.ones(4),), has_aux=True)
    np.testing.assert_allclose(tangent, 2 * np.cos(X))
    assert aux2["tag"] == "aux"


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"static.vjp\(has_aux=True\): <lambda> must return a pair"):
        static.vjp(lambda x: x * 2, X, has_aux=True)
    with pytest.raises(TypeError, match=r"static.jvp\(has_aux=True\)"):
        static.jvp(lambda x: x * 2, (X,), (X,), has_aux=True)


def test_python_float_primals_and_cotangents():
    out, vjp_fn = static.vjp(lambda a, b: a * a * b, 3.0, 2.0)
    assert float(out) == 18.0
    ga, gb = vjp_fn(1.0)
    assert (float(ga), float(gb)) == (12.0, 9.0)
    _, t = static.jvp(lambda a: a ** 3, (2.0,), (1.0,))
    assert float(t) == 12.0


# -- JAX's semantics where identity matters -------------------------------------------------------

def test_a_primal_passed_twice_is_two_inputs():
    def h(a, b):
        return (a * b * b).sum()

    ga, gb = static.vjp(h, X, X)[1](1.0)
    np.testing.assert_allclose(ga, X * X)  # d/da, not d/da + d/db
    np.testing.assert_allclose(gb, 2 * X * X)
    _, t = static.jvp(h, (X, X), (np.ones(4), np.zeros(4)))
    assert float(t) == pytest.approx(float((X * X).sum()))


def test_inside_a_trace_a_closed_over_value_is_a_constant():
    @static.compile
    def g(x):
        _, vjp_fn = static.vjp(lambda y: y * x, x)  # x in the closure is not differentiated
        (ct,) = vjp_fn(eager.ones_like(x))
        _, t = static.jvp(lambda y: y * x, (x,), (eager.ones_like(x),))
        return ct, t

    ct, t = g(eager.tensor(X))
    np.testing.assert_allclose(ct.numpy(), X)
    np.testing.assert_allclose(t.numpy(), X)


def test_hessian_vector_product_by_jvp_of_grad():
    def loss(x):
        return (eager.sin(x) * x * x).sum()

    v = RNG.standard_normal(4)
    _, hv = static.jvp(static.grad(loss), (X,), (v,))
    eps = 1e-6
    grad = static.grad(loss)
    fd = (np.asarray(grad(X + eps * v)) - np.asarray(grad(X - eps * v))) / (2 * eps)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)


def test_a_compiled_function_lends_its_options_and_repeated_calls_trace_once(monkeypatch):
    traced = []
    trace_function = entry_module.trace_function

    def counting(fn, *args, **kwargs):  # counts traces (an append inside fn is replayed at every call)
        traced.append(1)
        return trace_function(fn, *args, **kwargs)

    monkeypatch.setattr(entry_module, "trace_function", counting)

    @static.compile(backend="interpret")
    def fn(x):
        return eager.exp(x) * 3

    for _ in range(3):
        out, vjp_fn = static.vjp(fn, X)
        vjp_fn(np.ones(4))
        static.jvp(fn, (X,), (np.ones(4),))
    assert len(traced) == 3  # the forward, the pullback and the jvp, each once
    np.testing.assert_allclose(out, 3 * np.exp(X))


def test_a_vjp_function_made_inside_a_trace_cannot_run_outside_it():
    escaped = []

    @static.compile
    def g(x):
        out, vjp_fn = static.vjp(eager.sin, x)
        escaped.append(vjp_fn)
        return out

    g(eager.tensor(X))
    with pytest.raises(static.TraceError, match="called outside it"):
        escaped[0](eager.ones(4, dtype=eager.float64))


# -- bad input: JAX's error types -----------------------------------------------------------------

def test_vjp_fn_takes_one_argument():
    _, vjp_fn = static.vjp(lambda x: (x * 2, x * 3), X)
    with pytest.raises(TypeError, match=r"called with 2 arguments, but it takes a single argument"):
        vjp_fn(np.ones(4), np.ones(4))


def test_vjp_fn_checks_the_cotangent_structure_shape_and_dtype():
    _, vjp_fn = static.vjp(lambda x: (x * 2, x.sum()), X)
    with pytest.raises(ValueError, match=r"tree structure .* got \(\*,\), but expected \(\*, \*\)"):
        vjp_fn((np.ones(4),))
    with pytest.raises(ValueError, match=r"got float64\[3\], but expected float64\[4\] because the corresponding "
                                         r"output 0 of <lambda> had type float64\[4\]"):
        vjp_fn((np.ones(3), 1.0))
    with pytest.raises(ValueError, match=r"got float32\[4\], but expected float64\[4\]"):
        vjp_fn((np.ones(4, np.float32), 1.0))


def test_jvp_checks_its_arguments_as_jax_does():
    fn = eager.sin
    with pytest.raises(TypeError, match="must be tuples or lists; found ndarray and ndarray"):
        static.jvp(fn, X, X)
    with pytest.raises(TypeError, match=r"same tree structure; primals have tree structure \(\*,\) whereas "
                                        r"tangents have tree structure \(\*, \*\)"):
        static.jvp(fn, (X,), (X, X))
    with pytest.raises(TypeError, match="dtypes must be equal.*primal dtype float64.*tangent dtype float32"):
        static.jvp(fn, (X,), (X.astype(np.float32),))
    with pytest.raises(ValueError, match=r"different primal and tangent shapes; got primal shape \(4,\) and "
                                         r"tangent shape \(2,\)"):
        static.jvp(fn, (X,), (X[:2],))


@pytest.mark.parametrize("transform", ["vjp", "jvp"])
def test_integer_primals_and_outputs_are_refused_with_a_type_error(transform):
    ints = np.arange(4)

    def call(fn, x):
        return static.vjp(fn, x) if transform == "vjp" else static.jvp(fn, (x,), (x,))

    with pytest.raises(TypeError, match=rf"static.{transform}: primal 0 of <lambda> holds a value of type "
                                        r"int64\[4\]; only floating point values can be differentiated"):
        call(lambda i: i * 2.0, ints)
    with pytest.raises(TypeError, match=rf"static.{transform}: output 0 of <lambda> has type int64\[4\]"):
        call(lambda x: x.argsort(), X)


def test_bad_callables_and_options():
    with pytest.raises(TypeError, match="static.vjp: expected a callable value, got int"):
        static.vjp(3, X)
    with pytest.raises(TypeError, match="static.jvp got an unexpected option 'jit'; valid options: backend"):
        static.jvp(eager.sin, (X,), (X,), jit=True)


# -- PyTorch's torch.func as the oracle -----------------------------------------------------------

# torch.func's transforms script helpers with torch.jit.script, which PyTorch 2.13 deprecates
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_against_torch_func():
    torch = pytest.importorskip("torch")

    def fn(lib, x, y):
        return lib.tanh(x) * y.sum() + lib.exp(x * 0.5) * y

    u, tx, ty = RNG.standard_normal(4), RNG.standard_normal(4), RNG.standard_normal(4)
    T = [torch.tensor(a) for a in (X, Y, u, tx, ty)]
    t_out, t_vjp = torch.func.vjp(lambda x, y: fn(torch, x, y), T[0], T[1])
    out, vjp_fn = static.vjp(lambda x, y: fn(eager, x, y), X, Y)
    np.testing.assert_allclose(out, t_out.numpy(), rtol=1e-12)
    for mine, theirs in zip(vjp_fn(u), t_vjp(T[2])):
        np.testing.assert_allclose(mine, theirs.numpy(), rtol=1e-12)
    _, t_tangent = torch.func.jvp(lambda x, y: fn(torch, x, y), (T[0], T[1]), (T[3], T[4]))
    _, tangent = static.jvp(lambda x, y: fn(eager, x, y), (X, Y), (tx, ty))
    np.testing.assert_allclose(tangent, t_tangent.numpy(), rtol=1e-12)


def test_results_for_tensors_that_require_grad_differentiate_again_in_eager():
    """vjp's cotangents carry a grad_fn, so eager's backward gives the second derivative."""
    x = eager.tensor(X, requires_grad=True)
    _, vjp_fn = static.vjp(lambda a: eager.sin(a) * a, x)
    (g,) = vjp_fn(eager.ones(4, dtype=eager.float64))
    np.testing.assert_allclose(g.detach().numpy(), np.cos(X) * X + np.sin(X), rtol=1e-12)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(X) - X * np.sin(X), rtol=1e-12)


def test_a_module_and_its_parameters():
    lin = eager.nn.Linear(4, 3).double()
    _, vjp_fn = static.vjp(lin, eager.tensor(X))
    (g,) = vjp_fn(eager.ones(3, dtype=eager.float64))
    np.testing.assert_allclose(g.detach().numpy(), lin.weight.detach().numpy().sum(0), rtol=1e-12)
    _, t = static.jvp(lin, (eager.tensor(X),), (eager.ones(4, dtype=eager.float64),))
    np.testing.assert_allclose(t.detach().numpy(), lin.weight.detach().numpy().sum(1), rtol=1e-12)


def test_a_modules_training_mode_is_part_of_what_is_compiled():
    model = eager.nn.Sequential(eager.nn.Linear(4, 64), eager.nn.Dropout(0.5))
    x = eager.ones(2, 4)
    model.eval()
    first, _ = static.vjp(model, x)
    model.train()
    dropped, _ = static.vjp(model, x)
    _, t_dropped = static.jvp(model, (x,), (eager.ones(2, 4),))
    model.eval()
    again, _ = static.vjp(model, x)
    assert (first == 0).sum().item() == 0 and eager.equal(first, again)
    assert (dropped == 0).sum().item() > 10 and (t_dropped == 0).sum().item() > 10  # dropout ran in train mode
