"""The native multi-tensor optimizer updates (gmnative/optim_kernels.py) against the NumPy
updates they replace (which run where no compiler is found, or GRAPHMODE_EAGER_NATIVE=0):
the same bits, for every option of Adam/AdamW and SGD, float32 and float64, over several
steps; states made by the native path read back by the NumPy path and the other way round."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.optim import optimizer as _optimizer
from gmnative import build as native_build
from gmnative import optim_kernels

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

SHAPES = [(7, 5), (5,), (3, 4, 2), (1,)]


def _params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [eager.nn.Parameter(eager.tensor(rng.standard_normal(s).astype(dtype))) for s in SHAPES]


def _run(make, dtype, native: bool, monkeypatch, steps=3, native_steps=None):
    params = _params(dtype)
    opt = make(params)
    rng = np.random.default_rng(1)
    for i in range(steps):
        use = native if native_steps is None else i in native_steps
        for p in params:
            p.grad = eager.tensor((rng.standard_normal(p.shape) * 3).astype(dtype))
        with monkeypatch.context() as m:
            if not use:
                m.setattr(_optimizer, "_native", False)
                assert _optimizer.native_updates() is None
            else:
                assert _optimizer.native_updates() is not None
            opt.step()
    state = [{k: (v.numpy().copy() if isinstance(v, eager.Tensor) else v) for k, v in opt.state.get(p, {}).items()}
             for p in params]
    return [p.detach().numpy().copy() for p in params], state


def _same(a, b):
    (pa, sa), (pb, sb) = a, b
    for x, y in zip(pa, pb):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)
    for x, y in zip(sa, sb):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


ADAMS = {
    "adam": lambda ps: eager.optim.Adam(ps, lr=1e-2),
    "adam wd": lambda ps: eager.optim.Adam(ps, lr=1e-2, weight_decay=0.1),
    "adamw": lambda ps: eager.optim.AdamW(ps, lr=1e-2, weight_decay=0.05),
    "amsgrad": lambda ps: eager.optim.Adam(ps, lr=1e-2, amsgrad=True, betas=(0.8, 0.9)),
    "amsgrad adamw maximize": lambda ps: eager.optim.AdamW(ps, lr=1e-2, amsgrad=True, maximize=True),
    "adam one at a time": lambda ps: eager.optim.Adam(ps, lr=1e-2, foreach=False, eps=1e-3),
}
SGDS = {
    "sgd": lambda ps: eager.optim.SGD(ps, lr=0.1),
    "sgd maximize": lambda ps: eager.optim.SGD(ps, lr=0.1, maximize=True),
    "momentum": lambda ps: eager.optim.SGD(ps, lr=0.1, momentum=0.9),
    "momentum wd dampening": lambda ps: eager.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01),
    "nesterov maximize": lambda ps: eager.optim.SGD(ps, lr=0.1, momentum=0.5, nesterov=True, maximize=True),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(ADAMS) + list(SGDS))
def test_native_update_has_the_numpy_updates_bits(monkeypatch, dtype, name):
    make = {**ADAMS, **SGDS}[name]
    _same(_run(make, dtype, True, monkeypatch), _run(make, dtype, False, monkeypatch))


@pytest.mark.parametrize("name", ["adamw", "amsgrad", "momentum"])
def test_paths_take_over_each_others_state(monkeypatch, name):
    """A native first step, then NumPy steps (and the reverse): the same as NumPy throughout."""
    make = {**ADAMS, **SGDS}[name]
    want = _run(make, np.float32, False, monkeypatch)
    _same(_run(make, np.float32, False, monkeypatch, native_steps={0}), want)
    _same(_run(make, np.float32, False, monkeypatch, native_steps={1, 2}), want)


def _one_step(opt, params, native: bool, monkeypatch) -> tuple:
    """One step of opt, native or (native=False) the NumPy update; the parameters after, in
    _same's form."""
    with monkeypatch.context() as m:
        if not native:
            m.setattr(_optimizer, "_native", False)
        opt.step()
    return [p.detach().numpy().copy() for p in params], []


def test_a_non_contiguous_gradient_takes_the_numpy_update(monkeypatch):
    def run(native):
        params = _params(np.float32)
        opt = eager.optim.Adam(params, lr=1e-2)
        for p in params:
            wide = np.random.default_rng(2).standard_normal(p.shape + (2,)).astype(np.float32)
            p.grad = eager.tensor(wide)[..., 0]  # a strided view
        return _one_step(opt, params, native, monkeypatch)

    _same(run(True), run(False))


def test_the_kernel_refuses_arrays_it_cannot_update():
    p, g = np.zeros(4, np.float32), np.ones(4, np.float32)
    m, v = np.zeros(4, np.float32), np.zeros(4, np.float32)
    kw = dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False, maximize=False, step=1)
    assert optim_kernels.adam([p], [g.astype(np.float64)], [m], [v], None, **kw) is False  # mixed dtypes
    assert optim_kernels.adam([p], [g[:3]], [m], [v], None, **kw) is False  # sizes differ
    assert np.all(p == 0)
    assert optim_kernels.adam([p], [g], [m], [v], None, **kw) is True
    assert np.all(p < 0)


def test_many_parameters_are_updated_in_several_calls(monkeypatch):
    """More arrays than one native call takes (the caller's limit): every parameter updated."""
    def run(native):
        rng = np.random.default_rng(5)
        params = [eager.nn.Parameter(eager.tensor(rng.standard_normal(3).astype(np.float32))) for _ in range(150)]
        opt = eager.optim.Adam(params, lr=1e-2, amsgrad=True)
        for p in params:
            p.grad = eager.tensor(rng.standard_normal(3).astype(np.float32))
        return _one_step(opt, params, native, monkeypatch)

    _same(run(True), run(False))
