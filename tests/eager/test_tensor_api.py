"""The Tensor API is written once (eager._api.TensorAPI) for eager tensors and static's
tracer values: the hooks each type supplies, the one in-place table and the one promotion."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from eager import _dtypes
from eager._api import TensorAPI, inplace_methods
from eager._tensor import Tensor
from eager.ops import elementwise as E
from static.tracer import Tracer


class _Probe(TensorAPI):
    """A tensor-like type with recording hooks: what TensorAPI asks of a subclass."""

    __slots__ = ("calls",)
    ndim = 2
    dtype = _dtypes.float32

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    @staticmethod
    def _apply_op(op, operands, attrs):
        probe = next(o for o in operands if isinstance(o, _Probe))
        probe.calls.append((op, operands, attrs))
        return "result"

    def _apply_inplace(self, fn, others, name, saves_self=True, grad_name=None):
        self.calls.append(("inplace", name, saves_self, others))
        return self


def _probe() -> _Probe:
    return _Probe()


def test_operators_go_through_the_types_apply_op_hook_with_operands_in_order():
    p = _probe()
    assert p + 1 == "result" and 2 * p == "result" and 3 - p == "result" and -p == "result"
    ops = [(c[0], c[1]) for c in p.calls]
    assert ops == [(E.ADD, (p, 1)), (E.MUL, (2, p)), (E.RSUB, (p, 3)), (E.NEG, (p,))]


def test_in_place_forms_go_through_the_types_in_place_hook_with_their_names():
    p = _probe()
    p.add_(1)
    p += 2
    p.mul_(3)
    p.masked_fill_("mask", 0.0)
    assert [c[1:3] for c in p.calls] == [("add_", False), ("add_", False), ("mul_", True), ("masked_fill_", False)]
    assert [c[3] for c in p.calls] == [(1,), (2,), (3,), ("mask", 0.0)]


def test_tensor_and_tracer_inherit_one_implementation_nothing_is_copied_between_them():
    api = [c for c in TensorAPI.__mro__ if c is not object]  # TensorAPI and its parts (eager._api, by job)
    shared = {n for c in api for n, v in vars(c).items() if callable(v) or isinstance(v, property)}
    assert len(shared) > 150
    for name in ("__add__", "__rpow__", "__getitem__", "reshape", "float", "mT", "add_", "__iadd__", "scatter_"):
        assert any(name in vars(c) for c in api) and name not in vars(Tracer) and name not in vars(Tensor), name
    # no Tracer attribute is a function of eager's Tensor module (the old copying by name lists)
    for name, v in vars(Tracer).items():
        assert getattr(v, "__module__", None) != "eager._tensor", name


def test_the_in_place_table_is_complete_and_each_entry_is_eagers_function_written_back():
    x = eager.tensor([[0.5, -1.5], [2.0, 3.0]])
    args = {"add_": [2.0], "sub_": [2.0], "mul_": [2.0], "div_": [2.0], "pow_": [2.0], "clamp_": [0.0, 1.0],
            "clip_": [0.0, 1.0], "clamp_min_": [1.0], "clamp_max_": [1.0],
            "masked_fill_": [eager.tensor([[True, False], [False, True]]), -1.0],
            "atan2_": [2.0], "addcmul_": [x, x], "addcdiv_": [x, x + 4.0],
            "scatter_reduce_": [1, eager.tensor([[1, 1], [0, 0]]), eager.tensor([[2.0, 3.0], [4.0, 5.0]]), "sum"],
            "heaviside_": [eager.tensor(0.5)], "ldexp_": [eager.tensor(2.0)], "nextafter_": [eager.tensor(0.0)],
            **{f"{op}_": [2.0] for op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                                          "logical_xor", "remainder", "fmod", "floor_divide", "arctan2", "not_equal", "less",
                                          "less_equal", "greater", "greater_equal", "multiply", "divide", "subtract",
                                          "true_divide")},
            **{f"bitwise_{op}_": [6] for op in ("and", "or", "xor")},
            "bitwise_left_shift_": [3], "bitwise_right_shift_": [1]}
    args.update({"cumsum_": [1], "cumprod_": [0], "hypot_": [2.0], "copysign_": [-1.0], "xlogy_": [2.0],
                 "gcd_": [eager.tensor(6)], "lcm_": [eager.tensor(4)], "renorm_": [2, 0, 1.0],
                 "addr_": [x[0], x[1]], "addmm_": [x, x],
                 "addmv_": [x, x[0]], "addbmm_": [eager.ones(3, 2, 2), eager.ones(3, 2, 2)]})  # (eager._conveniences')
    source = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    args.update({"index_copy_": [0, eager.tensor([1, 0]), source],
                 "index_reduce_": [0, eager.tensor([1, 0]), source, "prod"],
                 "masked_scatter_": [eager.tensor([[True, False], [False, True]]), source],
                 "put_": [eager.tensor([0, 3]), eager.tensor([9.0, 8.0])]})  # (eager/_functional/scatters.py)
    integers = eager.tensor([[5, -3], [12, 0]])
    table = inplace_methods()
    assert {"add_", "sub_", "mul_", "div_", "pow_", "exp_", "sigmoid_", "clamp_", "masked_fill_"} <= set(table)
    for name, entry in table.items():
        if name == "float_power_":  # its result is float64, which a float32 tensor cannot hold (PyTorch refuses too)
            continue
        base = integers if name.startswith(("bitwise_", "gcd_", "lcm_")) else x  # (integer ops, as PyTorch's)
        if name == "baddbmm_":  # (a batch of matrices written back: covered in test_api_conveniences_linalg)
            continue
        y = base.clone()
        assert getattr(y, name)(*args.get(name, [])) is y
        np.testing.assert_allclose(y.numpy(), entry.fn(base, *args.get(name, [])).numpy(), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("fn", [
    lambda t: t // 2,
    lambda t: 7.0 // t,
    lambda t: t % 3,
    lambda t: 5 % t,
    lambda t: (t > 1) | (t < -1),
    lambda t: (t > 1) ^ (t > 0),
    lambda t: t.clone().tril_(),
    lambda t: t.clone().clamp_min_(0.5),
    lambda t: t.clone().nan_to_num_(),
    lambda t: t.clone().scatter_(1, eager.tensor([[1, 0], [0, 1]]), eager.tensor([[9.0, 8.0], [7.0, 6.0]])),
    lambda t: t.var_mean(dim=1)[0],
], ids=["floordiv", "rfloordiv", "mod", "rmod", "or", "xor", "tril_", "clamp_min_", "nan_to_num_", "scatter_",
        "var_mean"])
def test_methods_eager_had_alone_now_trace_too(fn):
    """Operators and in-place forms that only Tensor defined before the API was shared: a
    compiled function using them gives eager's values."""
    x = eager.tensor([[0.5, -1.5], [2.0, 3.0]])
    got = static.compile(fn, backend="interpret")(x)
    want = fn(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_tracer_in_place_write_through_the_shared_table_is_differentiable():
    def f(w):
        y = w * 1
        y.mul_(w)  # y = w * w, written in place
        return y.sum()

    w0 = np.array([0.5, -2.0, 3.0])
    g = static.grad(f)(eager.tensor(w0, requires_grad=True))
    eps = 1e-6
    fd = [(f(eager.tensor(w0 + eps * e)).item() - f(eager.tensor(w0 - eps * e)).item()) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(g.detach().numpy(), fd, rtol=1e-6)


# -- the one promotion -----------------------------------------------------------------------------
def _describe(o):
    if isinstance(o, tuple):  # (dtype, standing): a tensor stand-in
        return o
    return None


def _cast(o, target):
    return (target, o[1])


def test_promote_operands_leaves_the_operands_alone_when_nothing_changes():
    ops = ((_dtypes.float32, _dtypes.DIMENSIONED), 2.0)
    assert _dtypes.promote_operands("same", (), ops, _describe, _cast) is ops


@pytest.mark.parametrize("operands, expected", [
    (((_dtypes.int32, _dtypes.DIMENSIONED), 2.5), _dtypes.float32),  # a Python float: the default float
    (((_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.ZERO_DIM)), _dtypes.float16),
    (((_dtypes.int8, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.ZERO_DIM)), _dtypes.float64),
    (((_dtypes.int8, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.WEAK)), _dtypes.float32),  # weak: as 1.0
    (((_dtypes.bool_, _dtypes.DIMENSIONED), (_dtypes.int64, _dtypes.WEAK)), _dtypes.int64),
])
def test_promote_operands_casts_every_tensor_to_pytorchs_result_dtype(operands, expected):
    out = _dtypes.promote_operands("same", (), operands, _describe, _cast)
    for o in out:
        if isinstance(o, tuple):
            assert o[0] is expected


def test_promote_operands_skips_conditions_and_turns_bools_into_ints_for_number_results():
    cond = (_dtypes.bool_, _dtypes.DIMENSIONED)
    out = _dtypes.promote_operands("same", (0,), (cond, (_dtypes.int32, _dtypes.DIMENSIONED), True),
                                   _describe, _cast)
    assert out[0] is cond and out[1][0] is _dtypes.int32 and out[2] == 1 and type(out[2]) is int


def test_promote_operands_float_rule_makes_integer_results_float():
    out = _dtypes.promote_operands("float", (), ((_dtypes.int64, _dtypes.DIMENSIONED),), _describe, _cast)
    assert out[0][0] is _dtypes.DEFAULT_FLOAT


@pytest.mark.parametrize("a, b", [("int32", 2.5), ("int8", "float64_0d"), ("float16", 3), ("bool", True),
                                  ("uint8", "int8")])
def test_eager_and_traced_promotion_agree_with_pytorch(a, b):
    torch = pytest.importorskip("torch")
    x = eager.ones(3, dtype=getattr(eager, a if a != "bool" else "bool"))
    if b == "float64_0d":
        other, t_other = eager.tensor(2.0, dtype=eager.float64), torch.tensor(2.0, dtype=torch.float64)
    elif b == "int8":
        other, t_other = eager.ones(3, dtype=eager.int8), torch.ones(3, dtype=torch.int8)
    else:
        other, t_other = b, b
    want = (torch.ones(3, dtype=getattr(torch, a)) + t_other).dtype
    eager_dt = (x + other).dtype
    traced_dt = static.compile(lambda u, v: u + v, backend="interpret")(x, other).dtype
    assert str(want).removeprefix("torch.") == eager_dt.name == traced_dt.name


@pytest.mark.parametrize("described, expected", [
    ([(_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.ZERO_DIM)], True),
    ([(_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.int64, _dtypes.ZERO_DIM), None], True),
    ([(_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.bool_, _dtypes.ZERO_DIM)], False),
    ([(_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.float16, _dtypes.ZERO_DIM)], False),
    ([(_dtypes.float16, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.WEAK)], False),
    ([(_dtypes.float32, _dtypes.DIMENSIONED), (_dtypes.float64, _dtypes.ZERO_DIM)], False),
])
def test_the_one_float16_opmath_rule(described, expected):
    assert _dtypes.half_beside_0d(described) is expected


@pytest.mark.parametrize("compiled", [False, True])
def test_float16_divided_by_a_large_0d_tensor_is_computed_at_float32_precision(compiled):
    def divide(t, d):
        return t / d

    x = eager.tensor([1000.0, 2000.0], dtype=eager.float16)
    fn = static.compile(divide, backend="interpret") if compiled else divide
    out = fn(x, eager.tensor(1e5, dtype=eager.float64))
    assert out.dtype is eager.float16
    np.testing.assert_allclose(out.numpy().astype(np.float64), [0.01, 0.02], rtol=1e-3)


@pytest.mark.parametrize("name,fn", [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc), ("round", np.round),
                                     ("log2", np.log2), ("log10", np.log10), ("sinh", np.sinh), ("cosh", np.cosh),
                                     ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan)])
def test_math_methods_and_their_in_place_forms(name, fn):
    data = np.array([0.1, 0.45, 0.8], dtype=np.float64)
    x = eager.tensor(data)
    np.testing.assert_allclose(getattr(x, name)().numpy(), fn(data))
    y = eager.tensor(data.copy())
    assert getattr(y, name + "_")() is y
    np.testing.assert_allclose(y.numpy(), fn(data))


def test_atan2_and_scatter_reduce_methods():
    a, b = eager.tensor([1.0, -2.0]), eager.tensor([3.0, 0.5])
    np.testing.assert_allclose(a.atan2(b).numpy(), np.arctan2([1.0, -2.0], [3.0, 0.5]))
    out = eager.zeros(3).scatter_reduce(0, eager.tensor([0, 0, 2]), eager.tensor([1.0, 2.0, 5.0]), "sum")
    np.testing.assert_allclose(out.numpy(), [3.0, 0.0, 5.0])
    z = eager.ones(3)
    assert z.scatter_reduce_(0, eager.tensor([1, 1]), eager.tensor([2.0, 3.0]), "prod") is z
    np.testing.assert_allclose(z.numpy(), [1.0, 6.0, 1.0])
