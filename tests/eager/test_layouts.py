"""Memory layouts against PyTorch: the strides (in elements) and `is_contiguous()` of every
registry op's outputs, for contiguous inputs and for inputs laid out transposed in memory,
and of the view and copy methods users chain (`transpose(1, 2).contiguous().view(...)`).

PyTorch's rules this pins: a view keeps its base's strides (transpose, permute, expand,
slices, narrow, unfold, diagonal, `.T`, `.mT`); `contiguous()` is row-major for any input
that is not; `clone()` keeps dense non-overlapping strides and makes anything else
row-major; elementwise ops follow their inputs' memory order; `view` of a layout that
cannot be viewed raises RuntimeError and `reshape` copies instead.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import eager
from eager.ops import REGISTRY
from tests.op_samples import OPS, outputs, sample_cases

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _key(k: tuple, idx: list) -> tuple:
    """An index op's key (eager.ops.shape_ops' tagged tuple) as a Python index."""
    parts: list[Any] = []
    for entry in k:
        tag = entry[0]
        parts.append(entry[1] if tag == "int" else slice(*entry[1:]) if tag == "slice" else None if tag == "none"
                     else Ellipsis if tag == "ellipsis" else idx[entry[1]])
    return tuple(parts)


def _red(name: str):
    def f(x, dims=None, keepdim=False, correction=None):
        fn = getattr(torch, name)
        extra = {} if correction is None else {"correction": correction}
        if dims is None:
            return fn(x, **extra) if name not in ("amax", "amin", "logsumexp") else fn(x, tuple(range(x.ndim)))
        if name in ("max", "min"):
            return getattr(torch, "a" + name)(x, dims, keepdim)
        if name == "prod":
            out = x
            for d in sorted(dims, reverse=True):
                out = out.prod(d, keepdim)
            return out
        return fn(x, dims, keepdim=keepdim, **extra)
    return f


def _index_put(x, v, *idx, key, n_index=0):
    y = x.clone()
    y[_key(key, list(idx))] = v
    return y


# What each registry op is in PyTorch: f(*operands, **attrs) -> tensor or tuple of tensors.
TORCH: dict[str, Any] = {
    "abs": torch.abs, "acos": torch.acos, "add": torch.add, "asin": torch.asin, "atan": torch.atan,
    "tan": torch.tan, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
    "frac": torch.frac, "erfc": torch.erfc, "i0": torch.i0, "i1": torch.special.i1, "positive": torch.positive,
    "i0e": torch.special.i0e, "i1e": torch.special.i1e,
    "heaviside": torch.heaviside, "float_power": torch.float_power, "ldexp": torch.ldexp,
    "nextafter": torch.nextafter,
    "atan2": torch.atan2, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift, "ceil": torch.ceil, "cos": torch.cos, "cosh": torch.cosh,
    "div": torch.div, "eq": torch.eq, "erf": torch.erf, "exp": torch.exp, "exp2": torch.exp2,
    "expm1": torch.expm1, "floor": torch.floor, "floor_divide": torch.floor_divide, "fmod": torch.fmod,
    "ge": torch.ge, "gt": torch.gt, "isfinite": torch.isfinite, "isinf": torch.isinf, "isnan": torch.isnan,
    "le": torch.le, "log": torch.log, "log10": torch.log10, "log1p": torch.log1p, "log2": torch.log2,
    "logical_and": torch.logical_and, "logical_not": torch.logical_not, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "lt": torch.lt, "maximum": torch.maximum, "minimum": torch.minimum,
    "mul": torch.mul, "ne": torch.ne, "neg": torch.neg, "pow": torch.pow, "relu": torch.relu,
    "reciprocal": torch.reciprocal, "remainder": torch.remainder, "round": torch.round, "rsqrt": torch.rsqrt,
    "sigmoid": torch.sigmoid,
    "sign": torch.sign, "sgn": torch.sgn, "sin": torch.sin, "sinh": torch.sinh, "sqrt": torch.sqrt, "sub": torch.sub,
    "tanh": torch.tanh, "trunc": torch.trunc, "where": torch.where, "clone": torch.clone,
    "rsub": lambda x, y: y - x,
    "clamp": lambda x, min=None, max=None: torch.clamp(x, min, max),
    "bitwise_not": torch.bitwise_not,
    "clamp_min_tensor": lambda x, b: torch.clamp(x, min=b), "clamp_max_tensor": lambda x, b: torch.clamp(x, max=b),
    "clamp_min": torch.clamp_min, "clamp_max": torch.clamp_max,
    "clamp_tensor": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "nan_to_num": lambda x, nan, posinf, neginf: torch.nan_to_num(x, nan, posinf, neginf),
    "gelu": lambda x, approximate: TF.gelu(x, approximate=approximate),
    "softplus": lambda x, beta, threshold: TF.softplus(x, beta, threshold),
    "to_dtype": lambda x, dtype: x.to(getattr(torch, dtype.name)),
    "to_device": lambda x, device, source: x.to(device),
    "fill": lambda x, value: torch.fill(x, value),
    "full": lambda shape, value, dtype: torch.full(shape, value, dtype=getattr(torch, dtype.name)),
    "full_like": lambda x, value, dtype=None: torch.full_like(x, value),
    "stop_gradient": lambda x: x.detach(),
    **{n: _red(n) for n in ("amax", "amin", "sum", "mean", "prod", "max", "min", "std", "var", "logsumexp")},
    "argmax": lambda x, dim, keepdim: torch.argmax(x, dim, keepdim),
    "argmin": lambda x, dim, keepdim: torch.argmin(x, dim, keepdim),
    "argsort": lambda x, dim, descending: torch.argsort(x, dim=dim, descending=descending),
    "cumsum": lambda x, dim: torch.cumsum(x, dim), "cumprod": lambda x, dim: torch.cumprod(x, dim),
    "softmax": lambda x, dim: torch.softmax(x, dim), "log_softmax": lambda x, dim: torch.log_softmax(x, dim),
    "layer_norm": lambda x, w, b, ndim, eps: TF.layer_norm(x, x.shape[x.ndim - ndim:], w, b, eps),
    "cat": lambda *xs, dim: torch.cat(xs, dim), "stack": lambda *xs, dim: torch.stack(xs, dim),
    "split": lambda x, sizes, dim: torch.split(x, list(sizes), dim),
    "det": torch.linalg.det, "inv": torch.linalg.inv, "solve": torch.linalg.solve, "matmul": torch.matmul,
    "einsum": lambda *xs, equation: torch.einsum(equation, *xs),
    "diagonal": lambda x, offset, dim1, dim2: torch.diagonal(x, offset, dim1, dim2),
    "expand": lambda x, shape: x.expand(shape), "flip": lambda x, dims: torch.flip(x, dims),
    "permute": lambda x, dims: x.permute(dims), "reshape": lambda x, shape: x.reshape(shape),
    "transpose": lambda x, dim0, dim1: x.transpose(dim0, dim1), "unsqueeze": lambda x, dim: x.unsqueeze(dim),
    "squeeze": lambda x, dims: x.squeeze() if dims is None else x.squeeze(dims),
    "tril": lambda x, diagonal: torch.tril(x, diagonal), "triu": lambda x, diagonal: torch.triu(x, diagonal),
    "embedding": lambda w, i, padding_idx: TF.embedding(i, w, padding_idx),
    "gather": lambda x, i, dim: torch.gather(x, dim, i),
    "index_select": lambda x, i, dim: torch.index_select(x, dim, i),
    "index_add": lambda x, i, s, dim, alpha: torch.index_add(x, dim, i, s, alpha=alpha),
    "scatter": lambda x, i, s, dim: torch.scatter(x, dim, i, s),
    "scatter_add": lambda x, i, s, dim: torch.scatter_add(x, dim, i, s),
    "scatter_reduce": lambda x, i, s, dim, reduce, include_self: torch.scatter_reduce(
        x, dim, i, s, reduce, include_self=include_self),
    "index": lambda x, *idx, key, n_index=0: x[_key(key, list(idx))],
    "windows": lambda x, dim, size, step: x.unfold(dim, size, step),
    "index_put": _index_put,
}
# Ops PyTorch has no public counterpart of (backward kernels, eager's internal pieces):
# their outputs are new row-major tensors, as PyTorch's backward kernels make them.
INTERNAL = {"cumprod_backward", "diagonal_grad", "embedding_backward", "gelu_grad", "index_grad", "index_mask",
            "layer_norm_backward", "normalize", "normalize_backward", "prod_except_self", "take_along",
            "view_scatter", "fold", "unfold",
            # eager's NCHW max-pooling and its gradient (padding as (top, bottom, left, right))
            "max_pool2d", "max_pool2d_backward", "batch_norm", "batch_norm_backward",
            # the compiled graph's index-range check: its result is its operand, unchanged
            "check_index_range"}
# Control-flow ops take functions, not tensors: their results are their bodies' results.
CONTROL_FLOW = {"cond", "scan", "while_loop"}


def test_every_registry_op_is_classified():
    """A new op gets a PyTorch counterpart here (or is named internal), so its layout is checked."""
    missing = sorted(set(OPS) - set(TORCH) - INTERNAL - CONTROL_FLOW)
    assert not missing, f"ops without a PyTorch counterpart in tests/eager/test_layouts.py: {missing}"


def _transposed_storage(a: np.ndarray) -> np.ndarray:
    """The same values, laid out with the last two dimensions swapped in memory."""
    if not isinstance(a, np.ndarray) or a.ndim < 2:
        return a
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)


def _strides(t: Any) -> tuple:
    """Strides of the dimensions longer than one (a length-1 dimension's stride is free)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def _layout_cases():
    for name in OPS:
        if name in CONTROL_FLOW:
            continue
        for k, _ in enumerate(sample_cases(name)):
            yield pytest.param(name, k, id=f"{name}-{k}")


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize(("name", "k"), list(_layout_cases()))
def test_op_output_layout_matches_pytorch(name, k, layout):
    arrays, attrs = sample_cases(name)[k]
    if layout == "transposed":
        arrays = tuple(_transposed_storage(a) for a in arrays)
        if not any(isinstance(a, np.ndarray) and a.ndim >= 2 for a in arrays):
            pytest.skip("no operand of two or more dimensions")
    ours = outputs(REGISTRY[name](*[eager.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays],
                                  **attrs))
    if name in INTERNAL:
        if layout == "contiguous":
            for o in ours:
                assert o.is_contiguous(), f"{name}: output strides {o.stride()} for shape {tuple(o.shape)}"
        return
    with torch.no_grad():
        theirs = outputs(TORCH[name](*[torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays],
                                     **attrs))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape), name
        assert (o.is_contiguous(), _strides(o)) == (t.is_contiguous(), _strides(t)), \
            f"{name} ({layout} inputs): ours strides {o.stride()}, PyTorch {t.stride()} for shape {tuple(t.shape)}"


# Views and copies users chain, each written once for both libraries: f(lib, x) for x of shape (2, 3, 4, 5).
VIEWS = {
    "transpose": lambda T, x: x.transpose(1, 2),
    "permute": lambda T, x: x.permute(3, 1, 0, 2),
    "T": lambda T, x: x[0, 0].T,
    "mT": lambda T, x: x.mT,
    "t": lambda T, x: x[0, 0].t(),
    "slice_step": lambda T, x: x[:, ::2, 1:],
    "slice_last": lambda T, x: x[..., 1:4],
    "select": lambda T, x: x[:, 1],
    "narrow": lambda T, x: x.narrow(3, 1, 3),
    "expand": lambda T, x: x[:, :1].expand(2, 4, 4, 5),
    "expand_new": lambda T, x: x[0, 0, 0].expand(3, 5),
    "unsqueeze": lambda T, x: x.transpose(0, 3).unsqueeze(1),
    "squeeze": lambda T, x: x[:, :1].transpose(0, 3).squeeze(2),
    "diagonal": lambda T, x: x.diagonal(0, 1, 2),
    "diagonal_offset": lambda T, x: x.diagonal(1, -1, -2),
    "movedim": lambda T, x: x.movedim(1, -1),
    "chunk": lambda T, x: x.chunk(2, dim=3)[1],
    "split": lambda T, x: x.split([1, 2], dim=1)[1],
    "unbind": lambda T, x: x.unbind(2)[1],
    "view_flat_tail": lambda T, x: x.view(2, 3, 20),
    "reshape_copy": lambda T, x: x.transpose(1, 2).reshape(2, 12, 5),
    "reshape_view": lambda T, x: x[:, 1:].reshape(2, 2, 20),
    "flatten_transposed": lambda T, x: x.transpose(2, 3).flatten(1),
    "detach": lambda T, x: x.transpose(0, 1).detach(),
    "unfold": lambda T, x: x.unfold(3, 2, 1),
    "unfold_step": lambda T, x: x.transpose(1, 3).unfold(1, 3, 2),
}
COPIES = {
    "contiguous": lambda T, y: y.contiguous(),
    "clone": lambda T, y: y.clone(),
    "clone_contiguous": lambda T, y: y.clone(memory_format=T.contiguous_format),
    "exp": lambda T, y: y.exp(),
    "mul_scalar": lambda T, y: y * 2,
    "add_self": lambda T, y: y + y,
    "zeros_like": lambda T, y: T.zeros_like(y),
    "full_like": lambda T, y: T.full_like(y, 3.0),
    "flip": lambda T, y: y.flip(0),
    "softmax": lambda T, y: y.softmax(-1),
    "cumsum": lambda T, y: y.cumsum(0),
    "argsort": lambda T, y: y.argsort(-1),
    "index_list": lambda T, y: y[[0, 1, 0]],
    "index_tensor_last": lambda T, y: y[..., T.tensor([1, 0, 1])],
    "index_two_tensors": lambda T, y: y[T.tensor([0, 1]), ..., T.tensor([1, 0])],
    "masked": lambda T, y: y[y > 0],
    "where": lambda T, y: T.where(y > 0, y, 0.0),
    "masked_fill": lambda T, y: y.masked_fill(y > 0, 0.0),
    "logsigmoid": lambda T, y: T.nn.functional.logsigmoid(y),
    "softplus": lambda T, y: T.nn.functional.softplus(y),
    "silu": lambda T, y: T.nn.functional.silu(y),
}


def _both(f):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    return f(eager, eager.from_numpy(x)), f(torch, torch.from_numpy(x))


def _assert_same_layout(ours, theirs, what):
    assert tuple(ours.shape) == tuple(theirs.shape), what
    assert (ours.is_contiguous(), _strides(ours)) == (theirs.is_contiguous(), _strides(theirs)), \
        f"{what}: ours strides {ours.stride()}, PyTorch {theirs.stride()} for shape {tuple(theirs.shape)}"
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_view_strides_match_pytorch(view):
    ours, theirs = _both(lambda T, x: VIEWS[view](T, x))
    _assert_same_layout(ours, theirs, view)
    assert ours.storage_offset() == theirs.storage_offset(), view


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_results_of_views_have_pytorchs_layout(view):
    """Each copy or computation of the view (one test per view: the pairs are many and cheap)."""
    for copy in sorted(COPIES):
        ours, theirs = _both(lambda T, x, c=COPIES[copy]: c(T, VIEWS[view](T, x)))
        _assert_same_layout(ours, theirs, f"{view} then {copy}")


def test_contiguous_is_row_major_and_views_after_it():
    x = eager.randn(2, 5, 3, 4, requires_grad=True)
    y = x.transpose(1, 2)
    assert not y.is_contiguous()
    c = y.contiguous()
    assert c.is_contiguous() and c.stride() == (60, 20, 4, 1)
    assert c.grad_fn.name() == "CloneBackward0"
    out = c.view(2, 3, 20)  # the attention idiom
    assert out.grad_fn.name() == "ViewBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 5, 3, 4)))
    assert x.contiguous() is x


def test_view_of_a_layout_that_cannot_be_viewed_raises_like_pytorch():
    x = eager.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible.*Use .reshape"):
        x.transpose(0, 1).view(6, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x[:, :2].view(-1)
    assert x[:, :, ::2].view(-1).shape == (12,)  # strides that merge: a view, as in PyTorch
    t = torch.randn(2, 3, 4)
    for bad in (lambda: t.transpose(0, 1).view(6, 4), lambda: t[:, :2].view(-1)):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            bad()
    # what can be viewed is a view (shared memory), as in PyTorch
    v = x.transpose(1, 2).view(2, 4, 3)
    assert v.data_ptr() == x.data_ptr()
    r = x.transpose(0, 1).reshape(6, 4)
    assert r.is_contiguous() and r.data_ptr() != x.data_ptr()


def test_channels_last():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5))
    ours = eager.from_numpy(x).contiguous(memory_format=eager.channels_last)
    theirs = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous(memory_format=eager.channels_last)
    assert not ours.is_contiguous()
    assert ours.clone().stride() == theirs.clone().stride()
    assert ours.is_non_overlapping_and_dense()
    with pytest.raises(RuntimeError, match="rank 4"):
        eager.randn(2, 3).contiguous(memory_format=eager.channels_last)


VIEW_RULES = {
    "expanded_merge": lambda T: T.zeros(3, 1).expand(3, 4).view(12),
    "expanded_split": lambda T: T.zeros(3, 1).expand(3, 4).view(3, 2, 2),
    "expanded_unsqueeze": lambda T: T.zeros(1, 4).expand(3, 4).view(3, 4, 1),
    "transposed_same": lambda T: T.zeros(3, 4).t().view(4, 3),
    "transposed_unsqueeze": lambda T: T.zeros(3, 4).t().view(4, 1, 3),
    "slice_split": lambda T: T.zeros(4, 6)[:, 1:5].view(4, 2, 2),
    "slice_merge": lambda T: T.zeros(4, 6)[:, 1:5].view(16),
    "permuted_merge": lambda T: T.zeros(2, 3, 4).permute(1, 0, 2).view(3, 8),
    "permuted_split": lambda T: T.zeros(2, 3, 4).permute(1, 0, 2).view(3, 2, 2, 2),
    "empty": lambda T: T.zeros(0, 3).t().view(0),
    "scalar": lambda T: T.zeros(()).view(1, 1),
}


@pytest.mark.parametrize("case", sorted(VIEW_RULES))
def test_view_succeeds_and_fails_where_pytorchs_does(case):
    """view succeeds exactly when the strides allow it, with PyTorch's strides (size-1 dims
    included), and raises RuntimeError where PyTorch's does."""
    outcomes = []
    for T in (torch, eager):
        try:
            out = VIEW_RULES[case](T)
            outcomes.append((tuple(out.shape), tuple(out.stride())))
        except RuntimeError:
            outcomes.append("RuntimeError")
    assert outcomes[0] == outcomes[1], case
