"""A fused max-pooling's maxima and index written batch-major (native_gen/pool_layout.py):
where the graph permutes the pooled maxima (C, N, oh, ow) to (N, C, oh, ow) at once for the
next convolution or the head's rows, and every other reader is a fused gradient's scatter
(which reads any strides), the normalization's pass writes that layout, the permute is the
array written and nothing copies it. Checked on training steps against eager (check=True),
on the driver's source (no transposing copy of the pooled values), against the views NumPy
makes (relaid), and in the cases that keep the IR's layout."""
from __future__ import annotations

import re

import numpy as np
import pytest
from cnn_step_compare import compiled_step_source  # (tests/codegen's shared check)

from codegen import native_build
from codegen.native_gen.pool_layout import relaid
from eager import nn

native = pytest.mark.skipif(not native_build.availability()[0],
                            reason=f"no C++ compiler: {native_build.availability()[1]}")


def _two_blocks(c_in: int, side: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(c_in, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * (side // 4) ** 2, 5))


def _laid(text: str) -> list[str]:
    """The arrays the module writes in a layout of their own."""
    return sorted(set(re.findall(r"\b(\w+_laid)\b", text)))


@native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pooled_values_are_written_batch_major_and_the_step_equals_eager(dtype):
    x = np.random.default_rng(3).standard_normal((3, 2, 12, 12)).astype(dtype)
    text = compiled_step_source(lambda: _two_blocks(2, 12), lambda model, t: model(t).square().mean(), x, steps=3)
    laid = _laid(text)
    assert len(laid) == 4, laid  # both poolings: maxima and index
    body = [line for line in text[text.index("def forward("):].splitlines() if not line.lstrip().startswith("#")]
    # no transposing copy of the pooled values: the head's rows a reshape of the array written
    # (the permute is that array), the second convolution's windows read it in place
    assert any(re.fullmatch(r"\s*\w+ = \w+_laid", line) for line in body)
    assert not any("np.transpose(" in line or "np.ascontiguousarray(" in line for line in body)
    for name in laid:  # neither the array written nor the IR's view of it converted for a call
        ir_name = name[:-len("_laid")]
        assert not any(f"_c({name}," in line or f"_c({ir_name}," in line for line in body)


@native
def test_the_pooled_batch_returned_by_the_step_equals_eager():
    x = np.random.default_rng(4).standard_normal((2, 1, 8, 8)).astype(np.float32)

    def loss(model, t):
        pooled = model[:4](t)
        return model[4:](pooled).square().mean(), pooled
    text = compiled_step_source(lambda: _two_blocks(1, 8), loss, x, steps=2)
    assert _laid(text)


@native
def test_an_index_read_by_an_unfused_gradient_keeps_the_irs_layout():
    # overlapping windows: the gradient is the fold's own function, which reads the index
    x = np.random.default_rng(5).standard_normal((2, 1, 9, 9)).astype(np.float32)
    text = compiled_step_source(
        lambda: nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                              nn.MaxPool2d(3, stride=2), nn.Flatten(), nn.Linear(48, 2)),
        lambda model, t: model(t).square().mean(), x, steps=2)
    assert "in the normalization's pass" in text
    assert not _laid(text)


@pytest.mark.parametrize("view", [
    lambda a: a.reshape(a.shape[0], 1, *a.shape[1:]),  # the scatter's (C, 1, N, oh, ow)
    lambda a: a,
    lambda a: a.transpose(1, 0, 2, 3),
    lambda a: a[:, 1:, ::2],
])
def test_relaid_strides_read_the_same_elements_as_numpy(view):
    shape, perm = (3, 4, 5, 6), (1, 0, 2, 3)
    ir = np.arange(np.prod(shape)).reshape(shape) * 7 + 1
    written = np.ascontiguousarray(np.transpose(ir, perm)).ravel()  # the memory as written
    v = view(np.arange(np.prod(shape)).reshape(shape))  # element numbers of the IR's contiguous layout
    strides = tuple(s // v.itemsize for s in v.strides)
    offset = int(v.ravel()[0]) if v.size else 0
    found = relaid(shape, perm, strides, offset, v.shape)
    assert found is not None
    st, first = found
    got = np.lib.stride_tricks.as_strided(written[first:], v.shape, tuple(s * written.itemsize for s in st))
    np.testing.assert_array_equal(got, view(ir))


def test_relaid_refuses_a_view_that_is_not_one_strided_array():
    # a reshape merging the permuted dims: contiguous in the IR's layout, not in the one written
    assert relaid((2, 3, 4), (1, 0, 2), (1,), 0, (24,)) is None


def _driver(src: str) -> list[str]:
    return [line for line in src[src.index("def forward("):].splitlines() if not line.lstrip().startswith("#")]


@native
def test_a_drop_in_model_saves_the_maxima_batch_major_and_its_backward_reads_them_in_place():
    # forward and backward as two graphs (static.compile(model)): the forward saves the IR's
    # view of the maxima written batch-major; the backward's permute of it is that array, which
    # the convolution's gradient and the scatter's ReLU gate read without a copy
    import eager
    import static

    x = np.random.default_rng(6).standard_normal((3, 2, 8, 8)).astype(np.float32)

    def grads(compiled: bool) -> tuple:
        eager.manual_seed(0)
        model = _two_blocks(2, 8)
        f = static.compile(model, backend="native") if compiled else model
        out = []
        for k in range(2):
            model.zero_grad()
            (f(eager.from_numpy(x * (k + 1))) ** 2).mean().backward()
            out.append([p.grad.numpy().copy() for p in model.parameters()])
        return out, f
    want, _ = grads(False)
    got, f = grads(True)
    for gs, ws in zip(got, want):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    entry = f._entry_for((eager.from_numpy(x),), {})[3]
    forward, backward = _driver(entry.forward._loaded.source), _driver(entry.grad.backward._loaded.source)
    laid = _laid("\n".join(forward))  # the second pooling's maxima (the first one's are read by a mask too)
    assert laid
    permutes = {view: saved for view, saved in re.findall(r"^\s*(\w+) = np\.transpose\((\w+), \(1, 0, 2, 3\)\)$",
                                                          "\n".join(backward), re.M) if f"{saved}_laid" in laid}
    assert permutes, backward
    calls = [line for line in backward if "_call_new(" in line and "_c(" not in line]
    for view, saved in permutes.items():  # the scatter reads the permute (the array written), not the saved view
        assert any(re.search(rf"\b{view}\b", line) for line in calls)
        assert not any(re.search(rf"\b{saved}\b", line) for line in calls)
