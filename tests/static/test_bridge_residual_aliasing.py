"""A compiled call's residuals that may share memory with the buffers it writes back (a
module's running statistics) are copied before the write (static.jit.bridge._aliasing):
told apart by the array owning their memory, asked NumPy's bounds check where they may."""
import numpy as np

from static.jit.bridge import _aliasing


def test_views_of_a_written_buffer_are_found_and_others_are_not():
    w1, w2 = np.zeros(16, np.float32), np.zeros(32, np.float32)
    big = np.zeros(100, np.float32)
    residuals = [np.ones(5), w1[2:4], w1.reshape(4, 4).T, np.zeros(16), w2, big[50:60], big[15:18]]
    assert _aliasing(residuals, [w1, w2]) == [1, 2, 4]
    # a written view of a larger array: its owner's other views, by their bounds
    assert _aliasing(residuals, [w1, big[10:20]]) == [1, 2, 6]


def test_memory_no_array_owns_is_asked_by_bounds():
    buf = bytearray(64)
    written = np.frombuffer(buf, np.float32)
    residual = np.frombuffer(buf, np.float32)[2:]
    assert _aliasing([residual, np.zeros(3)], [written]) == [0]
    assert _aliasing([residual, np.zeros(3)], [np.zeros(4)]) == []
