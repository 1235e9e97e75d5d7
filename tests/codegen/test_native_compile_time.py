"""What keeps the native backend's compile time down without changing a kernel's results:
the parallel parts are balanced by estimated compiler time (native_build.compile_weight), a
function's consecutive parallel loops share one OpenMP team (native_gen.one_team), and a
region whose C code repeats an earlier one's calls that function (native_gen.same_code)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager
import static
from codegen import native_build, runtime
from codegen.native_gen.function import one_team, same_code

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")

_PREAMBLE = "#include <stdint.h>\n"
_PARALLEL = "    #pragma omp parallel for num_threads(gm_nt) schedule(static)"


def _heavy(k: int) -> str:
    """A kernel with two parallel loops (what costs the compiler most)."""
    loop = [_PARALLEL, "    for (int i = 0; i < 100000; ++i) {", "        #pragma omp simd",
            "        for (int j = 0; j < 4; ++j) out[i * 4 + j] = 1.0f;", "    }"]
    return (f'\nextern "C" void gm_region{k}(void* const* gm_args, int gm_nt) {{\n'
            "    float* out = (float*)gm_args[0];\n" + "\n".join(loop * 2) + "\n}\n")


def _light(k: int) -> str:
    """A kernel of long comments and one serial statement (cheap for the compiler, long in
    characters, like a backward's small kernels)."""
    notes = "".join(f"    // L{j}: a comment as long as the IR lines the generator cites, and longer\n"
                    for j in range(12))
    return (f'\nextern "C" void gm_region{k}(void* const* gm_args, int gm_nt) {{\n{notes}'
            "    float* out = (float*)gm_args[0];\n    out[0] = 1.0f;\n}\n")


def test_parts_are_balanced_by_compile_weight_not_characters(monkeypatch):
    monkeypatch.setattr(native_build, "SPLIT_MIN_WEIGHT", 0)
    kernels = [_heavy(k) for k in range(6)] + [_light(k) for k in range(6, 30)]
    source = _PREAMBLE + "".join(kernels)
    assert len("".join(kernels[6:])) > 2 * len("".join(kernels[:6]))  # most characters are light kernels

    def weight(part: str) -> float:
        return sum(native_build.compile_weight(k) for k in part[len(_PREAMBLE):].split('\nextern "C" void ')[1:])

    parts = native_build.split_source(source, parts=2)
    assert len(parts) == 2
    assert "".join(p[len(_PREAMBLE):] for p in parts) == source[len(_PREAMBLE):]  # every kernel once, in order
    heaviest = max(native_build.compile_weight(k) for k in kernels)
    assert abs(weight(parts[0]) - weight(parts[1])) <= heaviest
    assert parts[1].count("omp parallel") >= 2  # a split by characters put every parallel loop in part 0


def test_compile_weight_counts_code_not_comments():
    assert native_build.compile_weight(_light(0)) < native_build.compile_weight(_heavy(0)) / 3
    assert native_build.compile_weight("// x\n" * 100) == native_build.compile_weight("")


def _block(title: str, loop_pragma: str = _PARALLEL, after: str | None = None) -> list:
    lines = [f"{{  // {title}", "    const int n = 100000;", loop_pragma, "    for (int i = 0; i < n; ++i) {",
             "        out[i] = 1;", "    }"]
    return lines + ([after] if after else []) + ["}"]


def test_consecutive_parallel_loops_share_one_team():
    lines = _block("a") + _block("b") + _block("c", "    #pragma omp parallel for simd num_threads(gm_nt) "
                                                     "schedule(static)")
    out = one_team(lines)
    assert out[0].startswith("#pragma omp parallel num_threads(gm_nt)") and out[1] == "{" and out[-1] == "}"
    assert sum("omp parallel" in line for line in out) == 1
    assert out.count("    #pragma omp for schedule(static)") == 2
    assert out.count("    #pragma omp for simd schedule(static)") == 1


def test_a_loop_with_code_after_it_or_a_serial_loop_keeps_its_own_region():
    after = _block("a", after="    out[0] = 2;")  # every thread of a team would run the store
    serial = _block("s", "    // below GM_PARALLEL_MIN elements: the calling thread")
    for lines in (after + _block("b"), _block("a") + serial + _block("b")):
        assert one_team(lines) == lines
    assert one_team(["int x = 0;"] + _block("a") + _block("b"))[0] == "int x = 0;"  # not blocks: unchanged


def test_same_code_ignores_comments_and_the_names_of_temporaries():
    a = ["// L3: %5 = mul %4, 2.0", "float t_5 = (float)(in0[i] * 2.0f);", "out1[i] = t_5;  // stored"]
    b = ["// L9: %17 = mul %16, 2.0", "float t_17 = (float)(in0[i] * 2.0f);", "out1[i] = t_17;"]
    c = ["float t_17 = (float)(in0[i] * 3.0f);", "out1[i] = t_17;"]
    assert same_code(a) == same_code(b) != same_code(c)
    swapped = ["float t_1 = in0[i];", "float t_2 = in1[i];", "out2[i] = t_1 - t_2;"]
    other = ["float t_1 = in0[i];", "float t_2 = in1[i];", "out2[i] = t_2 - t_1;"]
    assert same_code(swapped) != same_code(other)


def _layers(x, w1, w2):
    """Two layers of the same shapes and constants, a matmul apart: two regions, one C function.
    Each layer's add, GELU, column max and normalization are big enough for parallel loops
    (a max along the rows would make each layer one row region: one loop, see test_native_rows)."""
    h = x @ w1
    h = eager.nn.functional.gelu(h + 0.5)
    h = h / h.amax(dim=0, keepdim=True)
    h = h @ w2
    h = eager.nn.functional.gelu(h + 0.5)
    return h / h.amax(dim=0, keepdim=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_repeated_layers_compile_one_function_and_give_the_numpy_backends_results(threads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 128)).astype(np.float32)
    w1, w2 = (rng.standard_normal((128, 128)).astype(np.float32) / 11 for _ in range(2))
    saved = runtime.CONFIG.threads
    runtime.CONFIG.threads = threads
    try:
        native = static.compile(_layers, backend="native")
        got = native(x, w1, w2)
        want = static.compile(_layers, backend="numpy")(x, w1, w2)
    finally:
        runtime.CONFIG.threads = saved
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)
    c = native.source(x, w1, w2)
    defined = re.findall(r'extern "C" void (gm_region\d+)\(', c)
    called = re.findall(r"LIBRARY\.address\('(gm_region\d+)'\)", c)
    assert len(called) > len(defined) == len(set(called))  # some function serves two regions
    assert "(also runs L" in c
    assert "one team for the" in c
