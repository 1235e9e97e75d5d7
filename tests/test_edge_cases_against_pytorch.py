"""Edge cases of the native paths and the module registry: inputs a fast path could get
wrong (large logits, aliased outputs, attribute kinds, CPU targets), each checked against
PyTorch (or NumPy) and against the other mode."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")


# log_softmax is (x - m) - log(sum(exp(x - m))) as PyTorch's kernel computes it: adding the
# maximum back to the log-sum first (x - (lse + m)) lost the log-sum against a large maximum
# (float32 logits of 1000: an error of ulp(1000) = 6e-5; of 1e30: log(2) lost altogether,
# and the gradient from exp(y) wrong with it).
LARGE = np.array([[1e30, 1e30, -1e30], [1000.0, 1000.0, 999.0], [-3e4, -3e4 + 1.5, -3e4 - 2.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [-1, 0])  # (the fused rows path, and the op's)
def test_log_softmax_of_large_logits_is_pytorchs(dtype, dim):
    x = LARGE.astype(dtype) if dim == -1 else np.ascontiguousarray(LARGE.T.astype(dtype))
    g = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    t = eager.tensor(x, requires_grad=True)
    y = eager.nn.functional.log_softmax(t, dim=dim)
    y.backward(eager.tensor(g))
    tt = torch.tensor(x, requires_grad=True)
    yt = torch.log_softmax(tt, dim=dim)
    yt.backward(torch.tensor(g))
    tol = dict(rtol=2e-7, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), **tol)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_compiled_log_softmax_and_cross_entropy_of_large_logits(backend):
    x = LARGE.astype(np.float32)
    target = np.array([0, 2, 1])

    def fn(t, k):
        return eager.nn.functional.log_softmax(t, dim=-1), eager.nn.functional.cross_entropy(t, k)
    try:
        got = static.compile(fn, backend=backend)(eager.tensor(x), eager.tensor(target))
    except static.BackendError:
        pytest.skip("no C++ compiler")
    want = (torch.log_softmax(torch.tensor(x), -1), torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(target)))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-7, atol=1e-7)


# register_parameter, register_buffer and add_module refuse a name that another kind of
# attribute already holds, with PyTorch's KeyError: replacing it silently dropped a parameter
# from the module (register_buffer("c") over parameter c: c gone from parameters()).
@pytest.mark.parametrize("register", [
    lambda m, L: m.register_buffer("c", L.ones(1)),  # c a parameter
    lambda m, L: m.add_module("c", L.nn.ReLU()),
    lambda m, L: m.register_parameter("a", L.nn.Parameter(L.ones(1))),  # a a submodule
    lambda m, L: m.register_buffer("plain", L.ones(1)),  # a plain attribute
    lambda m, L: m.register_parameter("b", None),  # b a buffer
    lambda m, L: m.register_buffer("forward", L.ones(1)),  # a method
])
def test_registering_over_another_attribute_raises_pytorchs_keyerror(register):
    def build(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = L.nn.Linear(1, 1)
                self.register_buffer("b", L.ones(1))
                self.c = L.nn.Parameter(L.ones(1))
                self.plain = 3
        return M()
    want = build(torch)
    with pytest.raises(KeyError) as info:
        register(want, torch)
    got = build(eager)
    with pytest.raises(KeyError, match=str(info.value).strip("'\"").replace("'", ".")):
        register(got, eager)
    assert list(got.state_dict()) == list(want.state_dict())
    assert [n for n, _ in got.named_parameters()] == [n for n, _ in want.named_parameters()]


def test_re_registering_the_same_kind_keeps_its_place():
    for L in (eager, torch):
        m = L.nn.BatchNorm2d(2)
        m.register_buffer("running_mean", L.zeros(2), persistent=False)
        m.register_buffer("running_mean", L.zeros(2))
        m.register_parameter("weight", L.nn.Parameter(L.zeros(2)))
        m.add_module("sub", L.nn.ReLU())
        m.add_module("sub", L.nn.Tanh())
        assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
        assert type(m.sub).__name__ == "Tanh"


# GRAPHMODE_NATIVE_ARCH: a target is refused where it enables an extension this CPU lacks.
# The AVX-512 extensions after Skylake's (VBMI, VBMI2, IFMA, BITALG, VPOPCNTDQ; GFNI), which
# gcc's vectorizer emits (vpermb, vpcompressb, vpopcntd), were not compared: icelake-server
# on a Skylake-X host was taken, and its kernels could stop with an illegal instruction.
def test_a_target_beyond_skylake_avx512_is_refused_on_a_skylake_host(monkeypatch):
    import platform

    from gmnative import build, toolchain

    found = build._probe()
    if isinstance(found, str) or platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("needs a C++ compiler on x86-64")
    if isinstance(toolchain.target_macros(found.command, "icelake-server"), str):
        pytest.skip("the compiler does not know icelake-server")
    skylake_x = frozenset("fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt avx avx2 fma f16c bmi1 bmi2 movbe abm "
                          "avx512f avx512cd avx512bw avx512dq avx512vl".split())
    monkeypatch.setattr(toolchain, "host_cpu_flags", lambda: skylake_x)
    problem = toolchain.target_problem(found.command, "icelake-server")
    assert problem is not None and "avx512vbmi" in problem and "illegal instruction" in problem
    assert toolchain.target_problem(found.command, "skylake-avx512") is None


# A compiled module's returned output that its backward also reads (one value in the compiled
# graph: the trace merges equal expressions, so h.mean() returned and h.mean() fed to a layer
# are one array) was saved as is: an in-place change of the output before backward (eager's
# separate tensors: no effect) reached the compiled gradient (the Linear's weight gradient 2x).
@pytest.mark.parametrize("outputs", ["mean_twice", "exp_sum_twice"])
def test_an_output_changed_in_place_before_backward_leaves_the_compiled_gradient(outputs):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

    class Two(eager.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = eager.nn.Linear(3, 2)

        def forward(self, t):
            if outputs == "mean_twice":
                return t.mean(2), self.lin(t.mean(2))
            return t.exp().sum(2), self.lin(t.exp().sum(2))
    grads = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = Two()
        f = static.compile(model, backend="numpy") if compiled else model
        for k in range(2):
            model.zero_grad()
            a, b = f(eager.tensor(x * (k + 1)))
            loss = b.sum()
            a.mul_(2)
            loss.backward()
            grads.append(model.lin.weight.grad.numpy().copy())
    for got, want in zip(grads[2:], grads[:2]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
