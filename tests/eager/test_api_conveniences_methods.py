"""eager/_conveniences' Tensor-only methods against PyTorch: new tensors like this one, the
dtype shorthands, get_device/output_nr, equal, apply_/map_, hardshrink/prelu methods and
register_post_accumulate_grad_hook."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def test_new_empty_and_new():
    x, tx = eager.zeros(2, dtype=eager.float64), torch.zeros(2, dtype=torch.float64)
    for args in ((2, 3), ((2, 3),), ([0, 4],), ()):
        if not args:
            continue
        ours, theirs = x.new_empty(*args), tx.new_empty(*args)
        assert tuple(ours.shape) == tuple(theirs.shape) and _name(ours.dtype) == _name(theirs.dtype)
    ours = x.new_empty((3,), dtype=eager.int32, requires_grad=False)
    assert ours.dtype == eager.int32 and tuple(ours.shape) == (3,)
    assert x.new_empty(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError):
        x.new_empty(-1)
    # the legacy constructor: sizes, a Size, data, nothing
    assert tuple(x.new(2, 3).shape) == tuple(tx.new(2, 3).shape) and x.new(2, 3).dtype == eager.float64
    assert tuple(x.new(eager.Size([4])).shape) == (4,)
    np.testing.assert_array_equal(np.asarray(x.new([1, 2])), tx.new([1, 2]).numpy())
    assert x.new([1, 2]).dtype == eager.float64
    np.testing.assert_array_equal(np.asarray(x.new((5, 6))), tx.new((5, 6)).numpy())
    assert tuple(x.new().shape) == tuple(tx.new().shape) == (0,)
    same = eager.ones(3, dtype=eager.float64)
    assert x.new(same) is same
    with pytest.raises(TypeError):
        x.new(eager.ones(3, dtype=eager.int64))
    _raises = pytest.raises(TypeError)
    with pytest.raises(TypeError):
        tx.new(2.5)
    with _raises:
        x.new(2.5)


def test_new_empty_strided_honours_strides():
    x, tx = eager.zeros(1), torch.zeros(1)
    for size, stride in (((2, 3), (3, 1)), ((2, 3), (1, 2)), ((3, 2), (0, 1)), ((0, 2), (2, 1))):
        ours, theirs = x.new_empty_strided(size, stride), tx.new_empty_strided(size, stride)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert tuple(ours.stride()) == tuple(theirs.stride())
        assert ours.dtype == eager.float32
    transposed = x.new_empty_strided((2, 3), (1, 2), dtype=eager.float64)
    assert transposed.dtype == eager.float64 and not transposed.is_contiguous()
    transposed.fill_(1.5)
    np.testing.assert_array_equal(np.asarray(transposed), np.full((2, 3), 1.5))
    with pytest.raises(RuntimeError):
        x.new_empty_strided((2, 3), (1,))


def test_dtype_shorthands():
    x = eager.tensor([1.7, -2.2, 300.0])
    tx = torch.tensor([1.7, -2.2, 300.0])
    for name in ("char", "short"):
        ours, theirs = getattr(x, name)(), getattr(tx, name)()
        assert _name(ours.dtype) == _name(theirs.dtype)
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    small = eager.tensor([1.7, 2.2, 200.0])
    assert small.byte().dtype == eager.uint8
    np.testing.assert_array_equal(np.asarray(small.byte()), torch.tensor([1.7, 2.2, 200.0]).byte().numpy())
    b = x.byte()
    assert b.byte() is b
    with pytest.raises(TypeError, match="bfloat16"):
        x.bfloat16()


def test_get_device_output_nr_equal():
    x = eager.ones(2, 3, requires_grad=True)
    tx = torch.ones(2, 3, requires_grad=True)
    assert x.get_device() == tx.get_device() == -1
    assert x.output_nr == tx.output_nr == 0
    parts, tparts = x.split(1), tx.split(1)
    assert [p.output_nr for p in parts] == [p.output_nr for p in tparts]
    a, b = eager.tensor([1.0, 2.0]), eager.tensor([1.0, 2.0])
    assert a.equal(b) and eager.equal(a, b)
    assert not a.equal(eager.tensor([1.0, 3.0]))
    assert not a.equal(eager.tensor([[1.0, 2.0]]))
    assert eager.zeros(0).equal(eager.zeros(0))


def test_apply_and_map():
    x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.apply_(lambda v: v * v + 1) is x
    tx.apply_(lambda v: v * v + 1)
    np.testing.assert_array_equal(np.asarray(x), tx.numpy())
    y, ty = eager.tensor([10.0, 20.0]), torch.tensor([10.0, 20.0])
    assert x.map_(y, lambda a, b: a - b) is x
    tx.map_(ty, lambda a, b: a - b)
    np.testing.assert_array_equal(np.asarray(x), tx.numpy())
    ints = eager.tensor([1, 2, 3])
    ints.apply_(lambda v: v * 7)
    assert ints.dtype == eager.int64 and np.asarray(ints).tolist() == [7, 14, 21]
    view = x[0]
    view.apply_(lambda v: 0.0)
    assert np.asarray(x)[0].tolist() == [0.0, 0.0]
    leaf, tleaf = eager.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    for ours, theirs in ((lambda: leaf.apply_(abs), lambda: tleaf.apply_(abs)),
                         (lambda: x.map_(leaf, max), lambda: tx.map_(tleaf, max)),
                         (lambda: eager.ones(2, 3).map_(eager.ones(3, 2), max),
                          lambda: torch.ones(2, 3).map_(torch.ones(3, 2), max))):
        with pytest.raises(RuntimeError) as err:
            theirs()
        with pytest.raises(RuntimeError, match="requires grad" if "grad" in str(err.value) else "map_"):
            ours()


def test_hardshrink_prelu_methods():
    arr = np.array([[-1.0, -0.3, 0.2, 0.9], [2.0, -2.0, 0.5, -0.5]])
    x, tx = eager.tensor(arr), torch.tensor(arr)
    np.testing.assert_allclose(np.asarray(x.hardshrink()), tx.hardshrink().numpy())
    np.testing.assert_allclose(np.asarray(x.hardshrink(0.4)), tx.hardshrink(0.4).numpy())
    np.testing.assert_allclose(np.asarray(eager.hardshrink(x, 0.4)), torch.hardshrink(tx, 0.4).numpy())
    w, tw = eager.tensor([0.25], dtype=eager.float64), torch.tensor([0.25], dtype=torch.float64)
    np.testing.assert_allclose(np.asarray(x.prelu(w)), tx.prelu(tw).numpy())
    np.testing.assert_allclose(np.asarray(eager.prelu(x, w)), torch.prelu(tx, tw).numpy())


def test_post_accumulate_grad_hook():
    def run(lib):
        p = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        seen = []

        def hook(t):
            assert t is p
            seen.append(t.grad.clone())

        handle = p.register_post_accumulate_grad_hook(hook)
        (p * 2).sum().backward()
        (p * p).sum().backward()
        handle.remove()
        (p * 5).sum().backward()
        return [s.tolist() for s in seen], p.grad.tolist()

    assert run(eager) == run(torch)
    # the hook may act on the accumulated gradient (an optimizer step in backward)
    q = eager.tensor([1.0, 1.0], requires_grad=True)

    def step(t):
        with eager.no_grad():
            t -= 0.5 * t.grad
        t.grad = None

    q.register_post_accumulate_grad_hook(step)
    (q * 4).sum().backward()
    assert q.tolist() == [-1.0, -1.0] and q.grad is None
    nonleaf = q * 2
    with pytest.raises(RuntimeError):
        nonleaf.register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError):
        eager.ones(2).register_post_accumulate_grad_hook(lambda t: None)


@pytest.mark.parametrize("register", [
    lambda p: p.register_post_accumulate_grad_hook(lambda t: None),
    lambda p: p.register_hook(lambda g: g * 2),
], ids=["post_accumulate", "tensor_hook"])
def test_a_compiled_step_refuses_a_hooked_leaf(register):
    """A compiled training step does not run a leaf's hooks: it says so, not a silent .grad
    without them."""
    import static
    from static.errors import TraceError

    p = eager.ones(3, requires_grad=True)
    register(p)

    def step(x):
        loss = (p * x).sum()
        loss.backward()
        return loss

    with pytest.raises(TraceError, match="hooks"):
        static.compile(step)(eager.ones(3))
