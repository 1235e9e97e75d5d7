"""A traced in-place op refuses the lossy casts eager refuses, with eager's message."""
import pytest

import eager
import static


def add_half(x):
    x.add_(0.5)
    return x


def test_float_result_into_int_tensor_is_refused_alike():
    x = eager.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        add_half(x.clone())
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        static.compile(add_half)(x.clone())


def test_same_kind_in_place_still_works():
    x = eager.tensor([1.0, 2.0], dtype=eager.float64)
    out = static.compile(lambda t: t.add_(eager.tensor([1.0, 1.0])))(x)
    assert out.dtype == eager.float64 and out.tolist() == [2.0, 3.0]
