"""A mutation fuzzer for the IR parser's contract: whatever the text, `parse_ir` returns a
verified Graph or raises IRParseError / IRVerifyError (ValueErrors) carrying a line and a
column; no other exception type, no hang. Valid texts are mutated a few thousand times with
a fixed seed, so the run is the same every time and takes a few seconds."""
from __future__ import annotations

import random
import time

import pytest
from ir_texts import LITERALS, LOSS

import static
from static import IRParseError, IRVerifyError

SEEDS = [
    LOSS,
    LITERALS,
    """func @fused(%x: f32[4,5], %b: f32[5]) -> (f32[4,5], f32[4]) {
  %0 = fused %x, %b : f32[4,5] {
    ^body(%p: f32[4,5], %q: f32[5]):
    %1 = add %p, %q : f32[4,5]
    %2 = gelu %1 {approximate = "tanh"} : f32[4,5]
    yield %2
  }
  %3 = amax %0 {dims = [1], keepdim = false} : f32[4]
  %4 = to_dtype %3 {dtype = f32} : f32[4]
  return %0, %4
}""",
    """func @shapes(%x: f32[2,3,4], %i: i64[2,2]) -> (f32[4,3,2], f32[2,2,3,4], f32[6,4], f32[2,3,4]) {
  %0 = permute %x {dims = [2, 1, 0]} : f32[4,3,2]
  %1 = index %x, %i {key = [["tensor", 0], ["ellipsis"]], n_index = 1} : f32[2,2,3,4]
  %2 = reshape %x {shape = [6, 4]} : f32[6,4]
  %3 = full {dtype = f32, shape = [2, 3, 4], value = 0.5} : f32[2,3,4]
  %4 = gt %x, 0.0 : bool[2,3,4]
  %5 = where %4, %3, nan : f32[2,3,4]
  return %0, %1, %2, %5
}""",
]

# pieces a mutation may insert: syntax, literals at the edges of what the parser reads, names
PIECES = ["[", "]", "{", "}", "(", ")", ",", ":", "=", "%", "@", "^body", "yield", "return", "fused",
          '"', "\\", '"\\q"', '"\\u12"', "9" * 200, "-" + "9" * 30, "1e20", "1e999", "-0.0", "nan", "inf",
          "none", "true", "f16", "u8", "i64[]", "f32[100000000000,100000000000]", "[" * 80 + "]" * 80,
          "%0", "%x", "%i", "%999", "add", "index", "full", "sum", "reshape", "\n", "//c\n", "#", "\x00", "é",
          "{dims = 3}", "{dtype = 3}", "{key = 1}", "{key = [[\"int\", 99]]}", "{shape = [-1]}",
          '{value = "x"}', ", none", ', "abc"', ", [1, 2]", "{n_index = -1}"]


def _mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        pos = rng.randrange(len(text) + 1)
        kind = rng.randrange(6)
        if kind == 0 and text:  # delete a span
            text = text[:pos] + text[pos + rng.randint(1, 8):]
        elif kind == 1:  # insert a piece
            text = text[:pos] + rng.choice(PIECES) + text[pos:]
        elif kind == 2 and text:  # duplicate a span elsewhere
            start = rng.randrange(len(text))
            text = text[:pos] + text[start:start + rng.randint(1, 40)] + text[pos:]
        elif kind == 3:  # replace a token-ish run of characters by a piece
            end = pos + rng.randint(1, 6)
            text = text[:pos] + rng.choice(PIECES) + text[end:]
        elif kind == 4 and text:  # flip one character to a random printable one
            text = text[:pos] + chr(rng.randint(32, 126)) + text[pos + 1:]
        else:  # splice with the tail of another seed
            other = rng.choice(SEEDS)
            text = text[:pos] + other[rng.randrange(len(other)):]
    return text


def test_the_seeds_are_valid():
    for text in SEEDS:
        assert str(static.parse_ir(text)) == text


@pytest.mark.parametrize("seed", range(3))
def test_mutated_texts_only_raise_value_errors_with_a_position(seed):
    rng = random.Random(seed)
    outcomes = {"parsed": 0, "IRParseError": 0, "IRVerifyError": 0}
    start = time.perf_counter()
    for _ in range(700):
        text = _mutate(rng.choice(SEEDS), rng)
        try:
            graph = static.parse_ir(text)
        except (IRParseError, IRVerifyError) as exc:
            outcomes[type(exc).__name__] += 1
            assert exc.line is not None and exc.column is not None, (text, str(exc))
            assert str(exc).startswith(f"line {exc.line}"), (text, str(exc))
            continue
        except BaseException as exc:  # noqa: BLE001 - the contract is broken: show the text
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- text ---\n{text}") from exc
        outcomes["parsed"] += 1
        assert str(static.parse_ir(str(graph))) == str(graph)  # what parses prints back the same
    assert all(outcomes.values()), outcomes  # the mutations reach the parser, the verifier and success
    assert time.perf_counter() - start < 60  # bounded: no mutation makes the parser crawl
