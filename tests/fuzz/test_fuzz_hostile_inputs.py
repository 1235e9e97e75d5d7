"""A fuzzing harness over everything graphmode reads from disk or from a user's text:
checkpoint loaders (PyTorch zip and legacy files, eager's own format), the IR parser, and
the code cache's reader. Hypothesis under the suite's derandomized profile (tests/conftest.py),
so every run draws the same cases; the whole file runs in well under a minute.

The contracts checked:
- eager.load: a result or a RuntimeError (damaged or hostile file; a weights_only refusal is
  also a pickle.UnpicklingError, as PyTorch raises it); never another type, never values from outside a storage, never
  more memory than the max_bytes bound (plus the file itself and a fixed slack);
- static.parse_ir: a Graph, or IRParseError / IRVerifyError (ValueErrors with a position);
- codegen.cache.read: the verified text or None (a damaged file is a miss), never an error;
  a garbage module file is regenerated and the right code runs."""
from __future__ import annotations

import base64
import io
import json
import os
import pickle
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eager
import static
from codegen import cache, loader

BOUND = 1 << 20  # max_bytes of every fuzzed load
SLACK = 6 << 20  # interpreter and zipfile overhead a load may add beyond the bound and the file


def _load(data: bytes, **kw):
    """eager.load(data) under the contract: (result or None, the exception)."""
    tracemalloc.start()
    try:
        try:
            result, error = eager.load(io.BytesIO(data), max_bytes=BOUND, **kw), None
        except RuntimeError as exc:  # (a weights_only refusal is one too, and a pickle.UnpicklingError)
            result, error = None, exc
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= BOUND + 3 * len(data) + SLACK, f"peak {peak} bytes for a {len(data)}-byte file"
    return result, error


# -- hand-built PyTorch files --------------------------------------------------------------------------
def frag(x) -> bytes:
    return pickle.dumps(x, protocol=2)[2:-1]


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def torch_file(pkl: bytes, storages: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", b"little")
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
    return buf.getvalue()


STORAGE_TYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
                 "IntStorage": np.int32, "HalfStorage": np.float16, "ByteStorage": np.uint8, "BoolStorage": np.bool_}
edge_ints = st.one_of(st.integers(-3, 40), st.sampled_from([2**31, 2**62, 2**63 - 1, 2**63, 2**64, -2**63, 10**30]))


@st.composite
def hostile_views(draw):
    """A file with one storage of `held` elements and one tensor view of it, every number
    drawn from small, edge and overflowing values (most views are out of bounds)."""
    storage = draw(st.sampled_from(sorted(STORAGE_TYPES)))
    dtype = np.dtype(STORAGE_TYPES[storage])
    held = draw(st.integers(0, 24))
    declared = draw(st.one_of(st.just(held), edge_ints))
    ndim = draw(st.integers(0, 4))
    size = tuple(draw(st.lists(edge_ints, min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(edge_ints, min_size=ndim, max_size=ndim)))
    if draw(st.booleans()):
        stride = stride[:-1] + (1,) if stride else stride
    offset = draw(edge_ints)
    values = (np.arange(held) + 1).astype(dtype) if dtype != np.bool_ else np.ones(held, np.bool_)
    pid = (b"(" + frag("storage") + glob("torch", storage) + frag("0") + frag("cpu") + frag(declared) + b"tQ")
    tensor = (glob("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + frag(offset) + frag(size) + frag(stride)
              + frag(False) + glob("collections", "OrderedDict") + b")Rt" + b"R")
    return torch_file(b"\x80\x02" + tensor + b".", {"0": values.tobytes()}), values, offset, size, stride


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_views())
def test_hostile_views_never_read_outside_their_storage(case):
    data, values, offset, size, stride = case
    result, error = _load(data)
    if error is not None:
        assert isinstance(error, RuntimeError), error
        assert "eager.load" in str(error)
        return
    arr = result.numpy()
    assert arr.shape == size
    if arr.size:  # every element is the storage's element at offset + sum(i * stride)
        flat = [offset + sum(i * s for i, s in zip(index, stride)) for index in np.ndindex(*size)]
        assert all(0 <= k < len(values) for k in flat)
        np.testing.assert_array_equal(arr.reshape(-1), values[np.array(flat, dtype=np.int64)])


OPCODE_PIECES = [
    b"(", b")", b"t", b"R", b"Q", b"}", b"]", b"e", b"u", b"s", b"b", b"a", b"0", b"2", b"N", b"\x88", b"\x89",
    b"\x85", b"\x86", b"\x87", b"\x81", b"\x94", b"\x8f", b"\x90", b"\x91", b"\x8c\x01a", b"K\x07", b"J\xff\xff\xff\xff",
    b"q\x00", b"h\x00", b"q\xff", b"h\xff", b"r\xff\xff\xff\x7f", b"j\x00\x00\x00\x00", b"r\x00\x00\x00\x01",
    b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80", b"\x8b\xff\xff\xff\x7f", b"C\xffxyz", b"B\xff\xff\xff\x7fxy",
    b"\x8e\xff\xff\xff\xff\xff\x00\x00\x00", b"\x95\xff\xff\xff\xff\x00\x00\x00\x00", b"X\x03\x00\x00\x00abc",
    glob("torch._utils", "_rebuild_tensor_v2"), glob("torch", "FloatStorage"), glob("collections", "OrderedDict"),
    glob("__builtin__", "set"), glob("builtins", "frozenset"), glob("_codecs", "encode"), glob("torch", "Size"),
    glob("copyreg", "_reconstructor"), glob("builtins", "object"), glob("os", "system"), glob("torch", "device"),
    frag("storage"), frag("0"), frag("cpu"), frag(6), frag((2, 3)), frag((3, 1)), frag(0), frag(10**20), frag(-1),
    frag(2.5), frag(None), frag("latin1"), frag(("x", "latin1")), b"\x80\x02", b".",
]


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(OPCODE_PIECES), min_size=1, max_size=40))
def test_opcode_soup_in_data_pkl(pieces):
    """Random opcode sequences as a PyTorch file's data.pkl: the restricted unpickler (and the
    opcode walk before it) returns something or raises the documented errors, within the bound."""
    _load(torch_file(b"\x80\x02" + b"".join(pieces) + b".", {"0": np.arange(6, dtype=np.float32).tobytes()}))


def _valid_files() -> dict:
    """Valid files of each format, as seeds for byte-level mutation."""
    obj = {"w": eager.arange(12.0).reshape(3, 4), "i": eager.tensor([1, 2, 3]), "b": eager.tensor([True]),
           "nested": [1, 2.5, "x", (None, eager.float16)], "od": {"k": eager.ones(2, dtype=eager.float64)}}
    obj["v"] = obj["w"][1]
    buf = io.BytesIO()
    eager.save(obj, buf)
    files = {"eager": buf.getvalue()}
    pkl = (b"\x80\x02}(" + frag("a") + glob("torch._utils", "_rebuild_tensor_v2") + b"(" + b"(" + frag("storage")
           + glob("torch", "FloatStorage") + frag("0") + frag("cpu") + frag(6) + b"tQ" + frag(0) + frag((2, 3))
           + frag((3, 1)) + frag(False) + glob("collections", "OrderedDict") + b")Rt" + b"R"
           + frag("s") + glob("__builtin__", "set") + b"(]" + b"(" + frag(1) + frag(2) + b"e" + b"tR" + b"u.")
    files["torch"] = torch_file(pkl, {"0": np.arange(6, dtype=np.float32).tobytes()})
    try:
        import torch  # noqa: PLC0415

        b = io.BytesIO()
        torch.save({"w": torch.arange(6.0).reshape(2, 3), "n": torch.tensor([1, 2])}, b,
                   _use_new_zipfile_serialization=False)
        files["legacy"] = b.getvalue()
    except ImportError:  # the legacy stream needs PyTorch to write a seed; the other formats still run
        pass
    return files


VALID = _valid_files()


@st.composite
def mutated(draw, data: bytes):
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 3))
        pos = draw(st.integers(0, max(len(out) - 1, 0)))
        if kind == 0 and out:
            out[pos] = draw(st.integers(0, 255))
        elif kind == 1:
            del out[pos:pos + draw(st.integers(1, 64))]
        elif kind == 2:
            out[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        else:  # a little-endian size field somewhere set to an edge value
            value = draw(st.sampled_from([0, 1, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF]))
            out[pos:pos + 4] = value.to_bytes(4, "little")
    return bytes(out)


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(VALID)).flatmap(lambda k: st.tuples(st.just(k), mutated(VALID[k]))))
def test_mutated_files_raise_only_the_documented_errors(case):
    _, data = case
    _load(data)
    _load(data, map_location=lambda storage, loc: storage)


def _rezip(original: bytes, member_filter, transform) -> bytes:
    """The archive with the members `member_filter` picks replaced by transform(bytes): a valid
    zip (right CRCs) around a damaged member, to reach the unpickler and manifest reader."""
    src = zipfile.ZipFile(io.BytesIO(original))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for info in src.infolist():
            data = src.read(info.filename)
            z.writestr(info.filename, transform(data) if member_filter(info.filename) else data)
    return buf.getvalue()


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_pickles_and_npy_members_inside_valid_archives(data):
    which = data.draw(st.sampled_from(["torch-pkl", "torch-storage", "eager-npy"]))
    if which == "torch-pkl":
        original, pick = VALID["torch"], (lambda n: n.endswith("data.pkl"))
    elif which == "torch-storage":
        original, pick = VALID["torch"], (lambda n: "/data/" in n)
    else:
        original, pick = VALID["eager"], (lambda n: n.endswith(".npy"))
    member = zipfile.ZipFile(io.BytesIO(original))
    name = next(n for n in member.namelist() if pick(n))
    damaged = data.draw(mutated(member.read(name)))
    _load(_rezip(original, lambda n: n == name, lambda _: damaged))


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=8),
              st.sampled_from(["float32", "int64", "bool", "cpu", "cuda", "data/0.npy", "objects/0.pkl", "inf"])),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(["tensor", "storage", "offset", "shape", "stride",
                                                                "dtype", "dict", "list", "tuple", "file", "numel",
                                                                "pickle", "refs", "device", "ndarray", "float",
                                                                "requires_grad", "parameter", "ordered"]),
                                               children, max_size=6)),
    max_leaves=20)


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hostile_eager_manifests(data):
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(VALID["eager"])).read("manifest.json"))
    path = data.draw(st.lists(st.integers(0, 10), max_size=5))
    node, parent, key = manifest, None, None
    for step in path:  # walk to a random node, then replace it
        if isinstance(node, dict) and node:
            parent, key = node, sorted(node)[step % len(node)]
        elif isinstance(node, list) and node:
            parent, key = node, step % len(node)
        else:
            break
        node = parent[key]
    replacement = data.draw(json_values)
    if parent is None:
        manifest = replacement
    else:
        parent[key] = replacement
    damaged = _rezip(VALID["eager"], lambda n: n == "manifest.json", lambda _: json.dumps(manifest).encode())
    _load(damaged)
    _load(damaged, weights_only=False)


# -- the IR parser ---------------------------------------------------------------------------------------
IR_PIECES = ["func", "@f", "(", ")", "%x", "%0", "%1", ":", "f32", "i64", "bool", "[", "]", "3", "0", "-1",
             "99999999999999999999", "9223372036854775808", "->", "{", "}", "=", "add", "index", "reshape", "full",
             "sum", "transpose", "cat", "fused", "^body", "yield", "return", ",", "key", "shape", "dims", "dim",
             "value", "dtype", "n_index", '"slice"', '"int"', '"tensor"', "none", "true", "nan", "-inf", "1.5",
             "\n", " ", '"\\q"', "//c\n"]
BASE_IR = """func @f(%x: f32[4,3]) -> f32[3] {
  %0 = index %x {key = [["slice", 1, 3, none]], n_index = 0} : f32[2,3]
  %1 = sum %0 {dims = [0], keepdim = false} : f32[3]
  return %1
}"""


@st.composite
def ir_texts(draw):
    if draw(st.booleans()):
        return "".join(draw(st.lists(st.sampled_from(IR_PIECES), max_size=60)))
    text = BASE_IR
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 6))
        text = text[:pos] + draw(st.sampled_from(IR_PIECES)) + text[pos + cut:]
    return text


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(ir_texts())
def test_ir_parser_raises_only_its_value_errors(text):
    try:
        graph = static.parse_ir(text)
    except (static.IRParseError, static.IRVerifyError) as exc:
        assert exc.line is not None and exc.column is not None, str(exc)
        return
    assert str(static.parse_ir(str(graph))) == str(graph)


# -- the code cache's reader -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cache_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-cache")
    d.chmod(0o700)
    return d / "gm_fuzz_module.py"


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=300),
                 st.sampled_from([cache.seal("x = 1\n", "k"), cache.seal("x = 1\n", "other"), cache.seal("x = 1\n")])
                 .flatmap(lambda t: mutated(t.encode()))))
def test_cache_reader_returns_verified_text_or_none(cache_file, blob):
    cache_file.write_bytes(blob)
    cache_file.chmod(0o600)
    text = cache.read(cache_file, "k")
    if text is not None:  # only a file sealed for key k, whole
        assert cache.unseal(text, "k") is not None and blob.startswith(cache.HEADER.encode())


def test_a_garbage_module_file_is_regenerated(tmp_path, monkeypatch):
    import codegen  # noqa: PLC0415

    d = tmp_path / "cache"
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(d))
    loader.forget()
    text = "func @g(%x: f32[3]) -> f32[3] {\n  %0 = exp %x : f32[3]\n  return %0\n}"
    codegen.build(static.parse_ir(text), "numpy")
    (path,) = d.glob("gm_numpy_*.py")
    x = np.array([0.0, 1.0, 2.0], np.float32)
    for garbage in (b"", b"\x00" * 50, path.read_bytes()[:-3], b"# graphmode-codegen sha256=00 key=1\nraise SystemExit"):
        path.write_bytes(garbage)
        loader.forget()
        exe = codegen.build(static.parse_ir(text), "numpy")
        np.testing.assert_allclose(exe.run([x])[0], np.exp(x), rtol=1e-6)
    loader.forget()


@pytest.fixture(scope="module")
def trace_record(tmp_path_factory):
    """A post-trace record written by a real compile: (cache directory, record path, its bytes)."""
    d = tmp_path_factory.mktemp("fuzz-trace-cache")
    saved = os.environ.get("GRAPHMODE_CACHE_DIR")
    os.environ["GRAPHMODE_CACHE_DIR"] = str(d)
    try:
        static.compile(_traced, backend="numpy")(eager.tensor(X3))
    finally:
        if saved is None:
            os.environ.pop("GRAPHMODE_CACHE_DIR", None)
        else:
            os.environ["GRAPHMODE_CACHE_DIR"] = saved
    records = sorted(d.glob("gm_trace_*.py"))
    if not records:
        pytest.skip("the post-trace cache kept no record here")
    return d, records[0], records[0].read_bytes()


X3 = np.array([0.5, -1.0, 2.0], np.float32)


def _traced(x):
    return eager.tanh(x) * 3.0 + 1.0


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_trace_records_are_rebuilt(trace_record, monkeypatch, data):
    from static import trace_cache  # noqa: PLC0415

    directory, record, original = trace_record
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(directory))
    if data.draw(st.booleans()):
        damaged = data.draw(mutated(original))
    else:  # whole by its hash, but its body is garbage (as only the owner could write it)
        text = original.decode()
        key = cache._fields(text.partition("\n")[0][len(cache.HEADER):])[1]
        body = data.draw(st.one_of(st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
                                   st.text(max_size=40)))
        damaged = cache.seal(body, key).encode()
    record.write_bytes(damaged)
    record.chmod(0o600)
    trace_cache.clear_memory()
    loader.forget()
    got = static.compile(_traced, backend="numpy")(eager.tensor(X3))
    np.testing.assert_allclose(got.numpy(), np.tanh(X3) * 3.0 + 1.0, rtol=1e-6)
    record.write_bytes(original)


def _one(line: str, result: str = "f32[2]") -> str:
    return f"func @f(%x: f32[4], %i: i64[2]) -> {result} {{\n  {line}\n  return %0\n}}"


@pytest.mark.parametrize("text", [
    _one('%0 = index %x {key = [["slice", 0, 99999999999999999999, 1]], n_index = 0} : f32[2]'),
    _one('%0 = index %x {key = [["slice", 0, 2, 9223372036854775808]], n_index = 0} : f32[2]'),
    _one('%0 = index %x {key = [["int", 9223372036854775808]], n_index = 0} : f32[]', "f32[]"),
    _one("%0 = reshape %x {shape = [9223372036854775808]} : f32[2]"),
    _one("%0 = add %x, %x {alpha = %x} : f32[4]", "f32[4]"),
    _one("%0 = sum %x {dims = %i, keepdim = false} : f32[]", "f32[]"),
    _one("%0 = cat %x, 1.0 {dim = 0} : f32[5]", "f32[5]"),
    _one("%0 = matmul 2.0, %x : f32[4]", "f32[4]"),
    _one('%0 = index %x, %i {key = [["tensor"]], n_index = 2} : f32[2]'),
    _one('%0 = index %x {key = [["tensor"]], n_index = 0} : f32[2]'),
    _one("%0 = full {dtype = f32, shape = [9223372036854775807, 9223372036854775807], value = 0.0} : f32[2]"),
    "func @f(%x: f32[99999999999999999999]) -> f32[1] {\n  return %x\n}",
])
def test_named_parser_escapes_are_value_errors(text):
    """Bounds beyond int64, values where attributes go, literals where tensors go: the
    parser's ValueErrors with a position (a slice bound beyond int64 that only clamps, as
    PyTorch truncates it, is valid and covered by the fuzzer above)."""
    with pytest.raises((static.IRParseError, static.IRVerifyError)) as info:
        static.parse_ir(text)
    assert isinstance(info.value, ValueError) and info.value.line is not None
