"""quantile/nanquantile, nanmedian, mode, cov, corrcoef, histogram, gradient, matrix_exp and
the gamma family (polygamma, mvlgamma, zeta, igamma/igammac) against PyTorch: values,
dtypes, shapes, named tuples, errors, gradients (finite differences in float64), and a few
traced under static.compile."""
import warnings

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")
from torch_compare import E, raises_like, same  # noqa: E402

G = torch.Generator().manual_seed(0)
X = torch.randn(3, 5, 4, dtype=torch.float64, generator=G)
XN = X.clone()
XN[0, 1, 2] = XN[2, 0, 0] = XN[2, 3, 0] = float("nan")
XN[1, :, 3] = float("nan")
Q = torch.tensor([0.0, 0.3, 0.5, 1.0], dtype=torch.float64)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_modes_dims_and_nan(name, interpolation):
    fe, ft = getattr(eager, name), getattr(torch, name)
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            for q in (0.35, Q, Q[1]):
                qe = E(q) if hasattr(q, "shape") else q
                same(fe(E(XN), qe, dim, keepdim, interpolation=interpolation),
                     ft(XN, q, dim, keepdim, interpolation=interpolation))
    same(getattr(E(X.float()), name)(0.25, 1), getattr(X.float(), name)(0.25, 1))
    same(fe(E(torch.tensor(2.5, dtype=torch.float64)), 0.5), ft(torch.tensor(2.5, dtype=torch.float64), 0.5))


def test_quantile_gradient_and_errors():
    x = torch.randn(4, 6, dtype=torch.float64, generator=G)
    for interp in ("linear", "midpoint", "lower"):
        assert eager.autograd.gradcheck(lambda a, i=interp: eager.quantile(a, E(Q), 1, interpolation=i), (E(x, True),))
    assert eager.autograd.gradcheck(lambda a: eager.nanquantile(a, 0.4), (E(x, True),))
    x = torch.zeros(3, 4)
    for args, kw in [((x.long(), 0.5), {}), ((x, 1.5), {}), ((x, torch.tensor([0.5], dtype=torch.float64)), {}),
                     ((x, torch.tensor([[0.5]])), {}), ((x, 0.5), {"interpolation": "foo"}),
                     ((torch.zeros(0), 0.5), {}), ((x, torch.tensor([0.5, 1.5])), {})]:
        raises_like(lambda a=args, k=kw: eager.quantile(*[E(v) if hasattr(v, "shape") else v for v in a], **k),
                    lambda a=args, k=kw: torch.quantile(*a, **k))


def test_nanmedian():
    same(eager.nanmedian(E(XN)), torch.nanmedian(XN))
    for dim, keepdim in [(0, False), (1, True), (-1, False)]:
        got, want = eager.nanmedian(E(XN), dim, keepdim), torch.nanmedian(XN, dim, keepdim)
        assert type(got).__name__ == "nanmedian"
        same(got.values, want.values)
        same(got.indices, want.indices)
    same(eager.nanmedian(E(torch.zeros(0))), torch.nanmedian(torch.zeros(0)))
    raises_like(lambda: eager.nanmedian(E(torch.zeros(0, 3)), 0), lambda: torch.nanmedian(torch.zeros(0, 3), 0))
    x = torch.randn(3, 5, dtype=torch.float64, generator=G)
    assert eager.autograd.gradcheck(lambda a: eager.nanmedian(a, 1).values, (E(x, True),))


def test_mode():
    for t, dim in [(torch.tensor([[1, 2, 1, 2], [5, 5, 4, 4]]), 1), (torch.randint(0, 3, (4, 7), generator=G), 0),
                   (torch.tensor([3.0, 1, 1, 3, 2]), -1), (torch.tensor([1.0, float("nan"), float("nan"), 2]), 0),
                   (torch.tensor(7), 0)]:
        for keepdim in (False, True):
            got, want = eager.mode(E(t), dim, keepdim), torch.mode(t, dim, keepdim)
            assert type(got).__name__ == "mode"
            same(got.values, want.values)
            same(got.indices, want.indices)
    raises_like(lambda: eager.mode(E(torch.zeros(0))), lambda: torch.mode(torch.zeros(0)))
    x = torch.tensor([[1.0, 2, 2, 0], [3, 3, 1, 1]], dtype=torch.float64)
    xt, xe = x.clone().requires_grad_(), E(x, True)
    g = torch.tensor([2.0, -1.0], dtype=torch.float64)
    xt.mode(1).values.backward(g)
    xe.mode(1).values.backward(E(g))
    same(xe.grad, xt.grad)  # the picked (last) positions only


def test_cov_and_corrcoef():
    z = torch.randn(3, 6, dtype=torch.float64, generator=G)
    fw = torch.randint(0, 3, (6,), generator=G)
    aw = torch.rand(6, dtype=torch.float64, generator=G)
    for kw in [{}, {"correction": 0}, {"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw, "correction": 2}]:
        ke = {k: E(v) if hasattr(v, "shape") else v for k, v in kw.items()}
        same(eager.cov(E(z), **ke), torch.cov(z, **kw))
    same(E(z[0]).cov(), z[0].cov())
    same(eager.cov(E(torch.tensor([1, 2, 4]))), torch.cov(torch.tensor([1, 2, 4])))
    same(eager.corrcoef(E(z)), torch.corrcoef(z))
    same(E(z[1]).corrcoef(), z[1].corrcoef())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same(eager.cov(E(torch.tensor([1.0, 2])), correction=3), torch.cov(torch.tensor([1.0, 2]), correction=3))
    assert any("degrees of freedom is <= 0" in str(w.message) for w in caught)
    assert eager.autograd.gradcheck(lambda a: eager.cov(a, aweights=E(aw)), (E(z, True),))
    assert eager.autograd.gradcheck(eager.corrcoef, (E(z, True),))
    x = torch.zeros(3, 4)
    for kw in [{"fweights": torch.ones(4)}, {"fweights": torch.ones(3, dtype=torch.long)},
               {"fweights": -torch.ones(4, dtype=torch.long)}, {"aweights": torch.ones(4, dtype=torch.long)},
               {"aweights": -torch.ones(4)}, {"fweights": torch.ones(2, 2, dtype=torch.long)}]:
        raises_like(lambda k=kw: eager.cov(E(x), **{n: E(v) for n, v in k.items()}), lambda k=kw: torch.cov(x, **k))
    raises_like(lambda: eager.cov(E(torch.zeros(2, 2, 2))), lambda: torch.cov(torch.zeros(2, 2, 2)))
    raises_like(lambda: eager.cov(E(torch.tensor([True, False]))), lambda: torch.cov(torch.tensor([True, False])))


def test_histogram():
    h = torch.randn(100, generator=G)
    w = torch.rand(100, generator=G)
    for args, kw in [((10,), {}), ((5,), {"range": (-1.0, 1.0), "density": True}),
                     ((torch.tensor([-1.0, 0, 0.5, 2]),), {"weight": w}), ((4,), {"weight": w, "density": True})]:
        got = eager.histogram(E(h), *[E(a) if hasattr(a, "shape") else a for a in args],
                              **{k: E(v) if hasattr(v, "shape") else v for k, v in kw.items()})
        want = torch.histogram(h, *args, **kw)
        assert type(got).__name__ == "histogram"
        same(got.hist, want.hist, 1e-6)
        same(got.bin_edges, want.bin_edges, 1e-6)
    for t in (torch.ones(3, dtype=torch.float64), torch.zeros(0)):
        got, want = E(t).histogram(4), t.histogram(4)
        same(got.hist, want.hist)
        same(got.bin_edges, want.bin_edges)
    raises_like(lambda: eager.histogram(E(h), -1), lambda: torch.histogram(h, -1))
    raises_like(lambda: eager.histogram(E(h), 4, range=(3.0, 1.0)), lambda: torch.histogram(h, 4, range=(3.0, 1.0)))
    raises_like(lambda: eager.histogram(E(h), 4, weight=E(w.double())), lambda: torch.histogram(h, 4, weight=w.double()))
    raises_like(lambda: eager.histogram(E(h.long()), 3), lambda: torch.histogram(h.long(), 3))


def test_gradient():
    x = torch.randn(4, 5, 6, dtype=torch.float64, generator=G)
    coords = torch.tensor([0.0, 1, 3, 4.5], dtype=torch.float64)
    for kw in [{}, {"spacing": 2.0}, {"dim": 1}, {"dim": [0, -1], "spacing": [1.0, 3.0]}, {"edge_order": 2},
               {"spacing": [coords], "dim": 0}, {"spacing": [coords], "dim": 0, "edge_order": 2}]:
        ke = {k: [E(u) if hasattr(u, "shape") else u for u in v] if isinstance(v, list) else v for k, v in kw.items()}
        got, want = eager.gradient(E(x), **ke), torch.gradient(x, **kw)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    same(eager.gradient(E(torch.arange(5)), spacing=2)[0], torch.gradient(torch.arange(5), spacing=2)[0])
    assert eager.autograd.gradcheck(lambda a: eager.gradient(a, spacing=[E(coords)], dim=0, edge_order=2)[0],
                                    (E(x, True),))
    for kw in [{"edge_order": 3}, {"spacing": [1.0, 2.0]}]:
        raises_like(lambda k=kw: eager.gradient(E(x[0, 0]), **k), lambda k=kw: torch.gradient(x[0, 0], **k))
    raises_like(lambda: eager.gradient(E(torch.ones(2)), edge_order=2), lambda: torch.gradient(torch.ones(2), edge_order=2))


def test_matrix_exp():
    a = torch.randn(2, 3, 3, dtype=torch.float64, generator=G) * 0.5
    same(eager.matrix_exp(E(a)), torch.matrix_exp(a), 1e-10)
    same(E(a).matrix_exp(), a.matrix_exp(), 1e-10)
    assert eager.autograd.gradcheck(eager.matrix_exp, (E(a, True),))


def test_gamma_family():
    xs = torch.tensor([-1.5, 0.0, 2.0, 0.3, 7.5, 30.0], dtype=torch.float64)
    for n in range(5):
        same(eager.polygamma(n, E(xs)), torch.polygamma(n, xs), 1e-8)
        same(eager.special.polygamma(n, E(xs)), torch.special.polygamma(n, xs), 1e-8)
    same(E(xs.float()).polygamma(2), xs.float().polygamma(2), 1e-5)
    same(eager.polygamma(1, E(torch.tensor([1, 2]))), torch.polygamma(1, torch.tensor([1, 2])), 1e-6)
    assert eager.autograd.gradcheck(lambda a: eager.polygamma(2, a), (E(xs[2:], True),))
    raises_like(lambda: eager.polygamma(-1, E(xs)), lambda: torch.polygamma(-1, xs))
    q = torch.tensor([1.0, 2.0, 3.0, 0.3, 7.0, -1.5], dtype=torch.float64)
    s = torch.tensor([2.0, 0.5, 1.0, 3.5, 20.0, 2.0], dtype=torch.float64)
    same(eager.special.zeta(E(s), E(q)), torch.special.zeta(s, q), 1e-10)
    same(eager.special.zeta(2.0, E(q)), torch.special.zeta(2.0, q), 1e-10)
    same(eager.mvlgamma(E(xs[3:]), 3), torch.mvlgamma(xs[3:], 3), 1e-10)
    raises_like(lambda: eager.mvlgamma(E(xs), 0), lambda: torch.mvlgamma(xs, 0))
    a = torch.tensor([0.5, 1.0, 2.0, 5.0, 30.0, 100.0, 0.0, 1.0, -1.0], dtype=torch.float64)
    z = torch.tensor([0.3, 1.0, 5.0, 2.0, 25.0, 110.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    for fe, ft in [(eager.igamma, torch.igamma), (eager.igammac, torch.igammac),
                   (eager.special.gammainc, torch.special.gammainc), (eager.special.gammaincc, torch.special.gammaincc)]:
        same(fe(E(a), E(z)), ft(a, z), 1e-8)  # (PyTorch's own large-a expansion is good to about 1e-9)
    same(E(a).igamma(E(z)), a.igamma(z), 1e-8)
    assert eager.autograd.gradcheck(lambda t: eager.igammac(E(a[:6]).reshape(6, 1), t), (E(z[:6], True),))
    at = E(a[:3], True)
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        eager.igamma(at, E(z[:3])).sum().backward()
    raises_like(lambda: eager.igamma(E(torch.tensor([1])), E(torch.tensor([2]))),
                lambda: torch.igamma(torch.tensor([1]), torch.tensor([2])))


def test_statistics_trace_under_static_compile():
    x = E(torch.randn(4, 6, dtype=torch.float64, generator=G))
    q = E(Q)

    def f(a):
        return (eager.quantile(a, q, 1).sum() + eager.nanquantile(a, 0.3) + eager.cov(a).sum()
                + eager.gradient(a, dim=1)[0].sum() + eager.nanmedian(a, 0).values.sum())

    np.testing.assert_allclose(static.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-12)


def test_host_functions_refuse_tracing_by_name():
    x = E(torch.rand(3, dtype=torch.float64, generator=G) + 1)
    with pytest.raises(static.TraceError, match="polygamma runs eagerly only"):
        static.compile(lambda a: eager.polygamma(1, a))(x)
    with pytest.raises(static.TraceError, match="igamma runs eagerly only"):
        static.compile(lambda a: eager.igammac(a, a))(x)
    with pytest.raises(static.TraceError):
        static.compile(lambda a: eager.mode(a).values)(x)  # mode reads the values: eager only


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogram_edges_and_counts_as_pytorch(dtype):
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        h = (torch.randn(50, generator=gen) * 3).to(dtype)
        bins = int(torch.randint(1, 40, (1,), generator=gen))
        for kw in ({}, {"range": (-1.3, 2.7)}):
            got, want = eager.histogram(E(h), bins, **kw), torch.histogram(h, bins, **kw)
            # (bit for bit where PyTorch's kernel uses fused multiply-adds, as on AVX2 and AVX-512
            # hosts; a build without them may round an edge 1 ulp apart)
            np.testing.assert_array_max_ulp(got.bin_edges.numpy(), want.bin_edges.numpy(), maxulp=1)
            np.testing.assert_array_equal(got.hist.numpy(), want.hist.numpy())


def test_float32_quantile_rounds_as_pytorch():
    gen = torch.Generator().manual_seed(2)
    for _ in range(10):
        x, q = torch.randn(5, 17, generator=gen), torch.rand(6, generator=gen)
        for interp in ("linear", "midpoint", "nearest"):
            np.testing.assert_array_max_ulp(eager.quantile(E(x), E(q), 1, interpolation=interp).numpy(),
                                            torch.quantile(x, q, 1, interpolation=interp).numpy(), maxulp=1)
