"""nn.functional.multi_head_attention_forward against PyTorch: masks, bias_k/bias_v, add_zero_attn,
separate projection weights, unbatched inputs, per-head weights, and the gradient by finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as EF

torch = pytest.importorskip("torch")
# NumPy code, not native kernels: a first native call compiles them into the test's private cache (seconds)
pytestmark = pytest.mark.usefixtures("numpy_eager_kernels")
TF = torch.nn.functional

L, S, N, E, H = 4, 5, 2, 8, 2
_rng = np.random.default_rng(0)


def _p(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


Q, K, V = _p(L, N, E), _p(S, N, E), _p(S, N, E)
IPW, IPB, OPW, OPB, BK, BV = _p(3 * E, E), _p(3 * E), _p(E, E), _p(E), _p(1, 1, E), _p(1, 1, E)
QW, KW, VW = _p(E, E), _p(E, E), _p(E, E)
AM = np.triu(np.ones((L, S), bool), 1)
KPM = np.zeros((N, S), bool)
KPM[1, -1] = True


def _run(lib: object, F: object, kw: dict, unbatched: bool = False) -> tuple:
    def t(a: object) -> object:
        return None if a is None else lib.tensor(a)  # type: ignore[attr-defined]
    q, k, v = (Q[:, 0], K[:, 0], V[:, 0]) if unbatched else (Q, K, V)
    kpm = kw.get("kpm")
    if unbatched and kpm is not None:
        kpm = kpm[0]
    sep = kw.get("sep", False)
    return F.multi_head_attention_forward(  # type: ignore[attr-defined]
        t(q), t(k), t(v), E, H, None if sep else t(IPW), t(IPB), t(BK) if kw.get("bias") else None,
        t(BV) if kw.get("bias") else None, kw.get("zero", False), 0.0, t(OPW), t(OPB),
        key_padding_mask=t(kpm), attn_mask=t(kw.get("am")), average_attn_weights=kw.get("avg", True),
        use_separate_proj_weight=sep, q_proj_weight=t(QW) if sep else None, k_proj_weight=t(KW) if sep else None,
        v_proj_weight=t(VW) if sep else None)


@pytest.mark.parametrize("kw", [{}, {"am": AM}, {"kpm": KPM}, {"bias": True}, {"zero": True, "am": AM, "kpm": KPM},
                                {"bias": True, "zero": True, "kpm": KPM}, {"avg": False}, {"sep": True, "am": AM}])
@pytest.mark.parametrize("unbatched", [False, True])
def test_matches_torch(kw: dict, unbatched: bool) -> None:
    t_out, t_w = _run(torch, TF, kw, unbatched)
    e_out, e_w = _run(eager, EF, kw, unbatched)
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), atol=2e-5)
    np.testing.assert_allclose(e_w.numpy(), t_w.numpy(), atol=2e-6)


def test_module_weights_give_the_module_output() -> None:
    mha = eager.nn.MultiheadAttention(E, H)
    q = eager.tensor(Q)
    out, w = mha(q, q, q)
    f_out, f_w = EF.multi_head_attention_forward(q, q, q, E, H, mha.in_proj_weight, mha.in_proj_bias, None, None,
                                                 False, 0.0, mha.out_proj.weight, mha.out_proj.bias)
    np.testing.assert_allclose(f_out.detach().numpy(), out.detach().numpy(), atol=1e-6)


def test_gradient_and_errors() -> None:
    rng = np.random.default_rng(1)
    q = eager.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    w = eager.tensor(rng.standard_normal((12, 4)), requires_grad=True)
    ow = eager.tensor(rng.standard_normal((4, 4)))

    def f(a: object, b: object) -> object:
        return EF.multi_head_attention_forward(a, a, a, 4, 2, b, None, None, None, False, 0.0, ow, None)[0]
    assert eager.autograd.gradcheck(f, (q, w))
    with pytest.raises(AssertionError):
        EF.multi_head_attention_forward(q, q, q, 6, 2, w, None, None, None, False, 0.0, ow, None)
    with pytest.raises(RuntimeError, match="attn_mask"):
        EF.multi_head_attention_forward(q, q, q, 4, 2, w, None, None, None, False, 0.0, ow, None, is_causal=True)
