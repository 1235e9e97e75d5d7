"""Consecutive fused regions over one iteration space run in one loop over row blocks: a
softmax's max, exp-sum and division compute
each block's rows one region after the other while they are in cache, with the values of
region-by-region execution, on one thread or several, with many blocks or one."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager
import static
from codegen import runtime

X = eager.tensor(np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32))
X3 = eager.tensor(np.random.default_rng(1).standard_normal((8, 16, 40)))

PROGRAMS = {  # program, input, regions in the loop
    "softmax": (lambda t: eager.softmax(t * 2.0, 1) + 1.0, X, 3),
    "masked_softmax": (lambda t: eager.softmax(t.masked_fill(t > 1.0, float("-inf")), -1), X3, 2),
    # the max made 0 where not finite, and the variance's rsqrt: epilogues on whole rows, in the blocks
    "log_softmax": (lambda t: eager.log_softmax(t, -1) * 3.0, X, 3),
}


def _loops(source: str) -> list:
    return re.findall(r"_rt\.run_blocks\((\w+),", source)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_regions_share_one_block_loop(name):
    fn, x, n_regions = PROGRAMS[name]
    compiled = static.compile(fn)
    np.testing.assert_array_equal(compiled(x).numpy(), fn(x).numpy())
    src = compiled.source(x)
    assert _loops(src) == ["_chain0"], _loops(src)
    assert len(re.findall(r"^def _region\d+\(", src, re.M)) == n_regions
    assert len(re.findall(r"^def _chain\d+\(", src, re.M)) == 1
    assert src.count("runs in the block loop of _chain0 below") == n_regions - 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_many_blocks_on_threads_keep_the_values(name, threads, monkeypatch):
    monkeypatch.setattr(runtime.CONFIG, "block_elems", 256)
    monkeypatch.setattr(runtime.CONFIG, "threads", threads)
    monkeypatch.setattr(runtime.CONFIG, "parallel_min_elems", 1)
    fn, x, _ = PROGRAMS[name]
    np.testing.assert_array_equal(static.compile(fn)(x).numpy(), fn(x).numpy())


def test_a_region_that_reads_a_whole_result_waits_for_its_loop():
    """Centering over the block axis (dim 0) needs every block's partial sums first: the
    mean's region and the subtraction's run in two loops."""
    def fn(t):
        return (t - t.mean(0, keepdim=True)).exp() * 2.0

    compiled = static.compile(fn)
    np.testing.assert_allclose(compiled(X).numpy(), fn(X).numpy(), rtol=1e-6)
    assert "_chain" not in compiled.source(X)
